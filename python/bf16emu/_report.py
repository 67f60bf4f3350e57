"""The report of a ProductMode run (issue 43 item 3): per op kind and per module.

Differences of an emulated product: the mode's output against the host's FP32 result of the
same call (the aten op on the same operands, each cast to FP32, computed by the host).
- differing: elements whose values differ (two NaNs count as equal);
- differing_after_rounding: the same against the host result rounded (RNE) to the output's dtype
  (bf16/fp16 under autocast): what the tensor-core model changes beyond the output rounding;
- max_rel_diff: the largest |emu - host| / |host| over the elements with host != 0 and both
  finite; elements with host == 0 that differ are counted in host_zero_differing instead (their
  relative difference has no finite value), non-finite mismatches in nonfinite_differing.
Module names come from model.named_modules() through forward pre/post hooks (the innermost
module running the op; "(root)" for the model itself); an op run inside a backward pass is
filed under "(backward)" (autograd does not say which module a backward op belongs to), and an
op outside both under "(outside)".
"""

from __future__ import annotations

import torch


class Report:
    def __init__(self, gpu, dtype, autocast):
        self.gpu, self.dtype, self.autocast = gpu, dtype, autocast
        self.ops = {}  # (kind, op) -> dict of counters
        self.modules = {}  # module -> {op: dict of counters}
        self.not_emulated = {}  # op -> {"calls", "reason"}

    def add(self, kind, op, module, seconds, macs=0, diff=None):
        for d in (self.ops.setdefault(kind, {}), self.modules.setdefault(module, {})):
            s = d.setdefault(op, {"calls": 0, "macs": 0, "seconds": 0.0})
            if d is self.modules[module]:
                s.setdefault("how", kind)
            s["calls"] += 1
            s["macs"] += int(macs)
            s["seconds"] += seconds
            if diff is not None:
                for key in ("outputs", "differing", "differing_after_rounding", "host_zero_differing",
                            "nonfinite_differing"):
                    s[key] = s.get(key, 0) + diff[key]
                s["max_rel_diff"] = max(s.get("max_rel_diff", 0.0), diff["max_rel_diff"])

    def host(self, op, reason, module, seconds):
        e = self.not_emulated.setdefault(op, {"calls": 0, "reason": reason})
        e["calls"] += 1
        self.add("not_emulated", op, module, seconds)

    def as_dict(self):
        return {"gpu": self.gpu, "dtype": self.dtype, "autocast": self.autocast,
                "emulated": self.ops.get("emulated", {}),
                "host_products": self.ops.get("host_products", {}),
                "fp32": self.ops.get("fp32", {}), "rounded": self.ops.get("rounded", {}),
                "not_emulated": self.not_emulated, "modules": self.modules}

    def text(self):
        d = self.as_dict()
        lines = [f"products on {self.gpu}, operands {self.dtype}, FP32 accumulation; autocast "
                 f"{'on' if self.autocast else 'off'}",
                 f"{'kind':14s} {'op':36s} {'calls':>7s} {'MACs':>14s} {'seconds':>9s} {'differing':>16s} "
                 f"{'max rel diff':>12s}"]
        for kind in ("emulated", "host_products", "fp32", "rounded", "not_emulated"):
            for op, s in sorted(self.ops.get(kind, {}).items()):
                dif = f"{s['differing']}/{s['outputs']}" if "outputs" in s else ""
                rel = f"{s['max_rel_diff']:.3g}" if "max_rel_diff" in s else ""
                lines.append(f"{kind:14s} aten.{op:31s} {s['calls']:7d} {s['macs']:14d} {s['seconds']:9.3f} "
                             f"{dif:>16s} {rel:>12s}")
        if self.not_emulated:
            lines.append("not emulated (host arithmetic):")
            for op, e in sorted(d["not_emulated"].items()):
                lines.append(f"  aten.{op} x{e['calls']}: {e['reason']}")
        lines.append("per module:")
        for mod, ops in sorted(self.modules.items()):
            parts = ", ".join(f"{op} x{s['calls']} ({s['how']})" for op, s in sorted(ops.items()))
            lines.append(f"  {mod}: {parts}")
        return "\n".join(lines)


def difference(emu, host):
    """The counters of one product's output against the host's FP32 result."""
    e, h = emu.detach().to(torch.float32), host.detach().to(torch.float32)
    both_nan = torch.isnan(e) & torch.isnan(h)
    differ = (e != h) & ~both_nan
    hr = host.detach().to(emu.dtype).to(torch.float32)
    after = (e != hr) & ~(torch.isnan(e) & torch.isnan(hr))
    finite = torch.isfinite(e) & torch.isfinite(h)
    zero = h == 0
    rel_ok = differ & finite & ~zero
    rel = ((e - h).abs() / h.abs())[rel_ok]
    return {"outputs": int(e.numel()), "differing": int(differ.sum()), "differing_after_rounding": int(after.sum()),
            "host_zero_differing": int((differ & finite & zero).sum()),
            "nonfinite_differing": int((differ & ~finite).sum()),
            "max_rel_diff": float(rel.max()) if rel.numel() else 0.0}
