// bf16emu attention: the forward pass (standard, FlashAttention-2, stabilized) under the
// exact / fp32 / paper / fa2 policies, for one head: the FlashAttention-2 form
// (forward_fa2.hpp) or the paper's (forward_paper.hpp). See docs/attention.md.
#pragma once

#include "bf16emu/attention/forward_common.hpp"
#include "bf16emu/attention/forward_fa2.hpp"
#include "bf16emu/attention/forward_paper.hpp"

namespace bf16emu::attention {

// One head, any policy.
template <class Obs> forward_result forward_head(const forward_config &cfg, const head_view &h, Obs &obs) {
  forward_result r;
  if (cfg.pol.kind == policy_kind::paper)
    forward_paper(cfg, h, r, obs);
  else
    forward_fa2_form(cfg, h, r, obs);
  return r;
}

} // namespace bf16emu::attention
