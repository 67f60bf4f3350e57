// bf16emu attention: the arithmetic policies and the parameters that describe a kernel exactly.
//
// A `kernel_policy` fixes every choice that changes the bits of a FlashAttention-2 style
// forward: the tensor-core model, the tile sizes, the order of KV blocks, the exp
// implementation, the reduction orders, FMA contraction, the normalisation and the optional
// stabilized max (Algorithm 1 of Qiu & Yao, arXiv 2510.04212). The CUDA twin (cuda/)
// implements the preset `fa2_twin()`; docs/attention.md ("Kernel contract") spells out the
// exact sequence of operations.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "bf16emu/attention/site.hpp"
#include "bf16emu/tc/presets.hpp"

namespace bf16emu::attention {

// Arithmetic of a run.
enum class policy_kind : std::uint8_t {
  exact, // binary64 throughout: the high-precision reference
  fp32,  // IEEE FP32 throughout (sequential FMA dot products), output FP32
  paper, // the paper's attention.py (matmul = FP32 dot rounded to BF16), dtypes: paper_dtypes
  fa2,   // FlashAttention-2 rounding points on the tensor-core model of `kernel_policy::arch`
};

// Precision of one rounding site (site.hpp), overriding the policy there (--site-precision).
//   policy: the policy's own rounding;
//   fp32:   every rounding to BF16 filed under the site rounds to FP32 instead (FP32 roundings
//           stay; a tensor-core block stays as the model computes it);
//   exact:  no rounding at the site: its operations are carried out in binary64 (as under the
//           exact policy; "exact" means binary64, not infinitely precise).
// The override acts in the arithmetic layer (f32_ops, rn_f32, exp2_f32 in arith.hpp; tc_dot_at
// in tc_adapter.hpp). A value that an exact site leaves in binary64 enters a later FP32
// operation rounded to FP32 (the operation's inputs are FP32), without a ledger event, as the
// constants of the kernels do.
enum class site_prec : std::uint8_t { policy, fp32, exact };

inline const char *to_string(site_prec p) {
  return p == site_prec::policy ? "policy" : p == site_prec::fp32 ? "fp32" : "exact";
}

// Whose dtypes the paper policy follows (ucker/why-low-precision-training-fails, attention.py).
enum class paper_dtypes : std::uint8_t {
  bf16,     // paper:bf16 (alias `paper`): every attention tensor BF16, each op FP32 then BF16
  autocast, // paper:autocast: attention.py under torch.amp.autocast(bfloat16), as the authors
            // trained (train.py): exp, log, sum FP32; P to BF16 only inside the P-bar V einsum
};

enum class kv_order : std::uint8_t { forward, reverse };

enum class exp_impl : std::uint8_t {
  rn_f32,    // exp2 (fa2) or exp (paper) evaluated in binary64, rounded once to FP32 by the core
  poly_exp2, // exp2_poly (exp2_poly.hpp): FMA-only, fixed rounding sequence (CUDA-twinnable)
};

// Order of a row reduction (row max, row sum) over the columns of a block.
enum class reduce_order : std::uint8_t {
  sequential,   // one accumulator, columns in increasing order
  quad_shuffle, // SM80 m16n8k16 accumulator layout: column j belongs to lane q = (j mod 8) / 2
                // of a quad; each lane accumulates its columns in increasing order (kept across
                // KV blocks for the row sum), then the quad reduces with shuffle offsets 2, 1:
                // total = (acc0 + acc2) + (acc1 + acc3)
};

enum class normalize_mode : std::uint8_t {
  reciprocal, // inv = RN(1 / l) (IEEE division), o = RN(o * inv)
  divide,     // o = RN(o / l)
};

struct kernel_policy {
  policy_kind kind = policy_kind::fa2;
  tc::arch arch = tc::arch::sm80; // tensor cores of S = Q K^T and O += P V (docs/tensor-cores.md)
  int block_m = 64;               // Br: query rows per tile
  int block_n = 64;               // Bc: keys per tile (a multiple of 16 for the tensor-core k chunks)
  kv_order kv = kv_order::reverse;
  exp_impl exp = exp_impl::poly_exp2;
  reduce_order max_order = reduce_order::quad_shuffle; // exact either way (max does not round)
  reduce_order sum_order = reduce_order::quad_shuffle;
  bool fma_contract = true; // exp2 argument as one FMA; delta products fused into the sum
  normalize_mode normalize = normalize_mode::reciprocal;
  // Stabilized max (Algorithm 1): per row and block, r_m = max, r_s = #entries with
  // s >= r_m - tie_tol; if r_s > 1: m = beta*r_m when r_m > 0, m = 0 when r_m < 0.
  bool stabilized = false;
  double beta = 2.0;
  double tie_tol = 1e-3;
  // Softmax scale; <= 0 means 1/sqrt(d) (rounded to FP32 once).
  double softmax_scale = 0.0;
  // Per-site precision override (all `policy` by default).
  site_prec site_precision[site_count] = {};
  // kind == paper: whose dtypes; paper_alias: parsed as `paper`, the name policy_name() keeps
  // for it (the ledgers of `paper` read as before; `paper:bf16` is the same arithmetic).
  paper_dtypes paper_arith = paper_dtypes::bf16;
  bool paper_alias = false;
};

// True when some site's precision is overridden.
inline bool has_site_override(const kernel_policy &p) {
  for (const site_prec s : p.site_precision)
    if (s != site_prec::policy) return true;
  return false;
}

// The override table for f32_ops (arith.hpp): nullptr when no site is overridden, so that the
// arithmetic's per-operation check is one predictable null test.
inline const site_prec *site_override(const kernel_policy &p) {
  return has_site_override(p) ? p.site_precision : nullptr;
}

// The preset the CUDA kernel implements bit for bit (docs/attention.md, "Kernel contract").
inline kernel_policy fa2_twin() {
  kernel_policy p;
  p.kind = policy_kind::fa2;
  p.arch = tc::arch::sm80;
  p.block_m = 64;
  p.block_n = 64;
  p.kv = kv_order::reverse;
  p.exp = exp_impl::poly_exp2;
  p.max_order = reduce_order::quad_shuffle;
  p.sum_order = reduce_order::quad_shuffle;
  p.fma_contract = true;
  p.normalize = normalize_mode::reciprocal;
  return p;
}

inline const char *to_string(policy_kind k) {
  switch (k) {
  case policy_kind::exact: return "exact";
  case policy_kind::fp32: return "fp32";
  case policy_kind::paper: return "paper";
  default: return "fa2";
  }
}

// Parses "exact", "fp32", "paper:bf16" (alias "paper"), "paper:autocast" (which also sets the
// authors' 512 x 512 tiles in forward key order, model.py), "fa2_twin" and "fa2:ARCH" for every
// canonical arch name (tc::to_string) with a BF16 model: fa2:sm80, fa2:sm86, fa2:sm89, fa2:sm90,
// fa2:sm100. Returns false for an unknown name (p is left unchanged).
inline bool parse_policy(std::string_view s, kernel_policy &p) {
  if (s == "exact" || s == "fp32") {
    p.kind = s == "exact" ? policy_kind::exact : policy_kind::fp32;
    return true;
  }
  if (s == "paper" || s == "paper:bf16") {
    p.kind = policy_kind::paper;
    p.paper_arith = paper_dtypes::bf16;
    p.paper_alias = s == "paper";
    return true;
  }
  if (s == "paper:autocast") {
    p.kind = policy_kind::paper;
    p.paper_arith = paper_dtypes::autocast;
    p.paper_alias = false;
    p.block_m = p.block_n = 512;
    p.kv = kv_order::forward;
    return true;
  }
  if (s == "fa2_twin") {
    p = fa2_twin();
    return true;
  }
  if (s.substr(0, 4) != "fa2:") return false;
  const std::string_view a = s.substr(4);
  tc::arch arch{};
  // Canonical names only (no "ampere" or "sm90a"): a policy has one spelling in the ledgers.
  if (!tc::parse_arch(a, arch) || a != tc::to_string(arch) || !tc::bf16_preset(arch)) return false;
  p.kind = policy_kind::fa2;
  p.arch = arch;
  return true;
}

inline std::string policy_name(const kernel_policy &p) {
  if (p.kind == policy_kind::paper)
    return p.paper_arith == paper_dtypes::autocast ? "paper:autocast"
           : p.paper_alias                         ? "paper"
                                                   : "paper:bf16";
  if (p.kind != policy_kind::fa2) return to_string(p.kind);
  return std::string("fa2:") + to_string(p.arch);
}

} // namespace bf16emu::attention
