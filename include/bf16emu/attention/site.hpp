// bf16emu attention: the rounding sites of an attention run (where in the algorithm a
// rounding happens). The ledger (ledger.hpp) counts events per site; a kernel_policy
// (policy.hpp) can promote the precision of any site (site_prec).
#pragma once

#include <cstdint>

namespace bf16emu::attention {

enum class site : std::uint8_t {
  input,      // inputs converted to the policy's input format
  qk,         // S = Q K^T: dot-product roundings (FP32 steps, tensor-core blocks, or to BF16)
  scale,      // S * softmax_scale (paper policy)
  row_max,    // max handling that rounds: m*c (fa2/fp32), beta*r_m (stabilized)
  exp_arg,    // the exp argument: S - m (paper) or S*c - m*c (fa2/fp32)
  exp,        // exp / exp2 results
  row_sum,    // row sums of P (and l = alpha*l + rowsum in the paper policy)
  p_to_bf16,  // P -> BF16 before P V (fa2)
  pv,         // P-bar V accumulation (FP32 steps or tensor-core blocks)
  pv_to_bf16, // the P-bar V block product rounded to BF16 (paper)
  o_update,   // O + (P-bar V) in BF16 (paper)
  rescale,    // alpha = exp(m_old - m_new) and O*alpha, l*alpha
  normalize,  // O / l or O * (1/l)
  o_to_bf16,  // final O -> BF16
  lse,        // log-sum-exp
  delta,      // delta = rowsum(dO o O)
  backward,   // dP, dS, dQ, dK, dV roundings of the reference (non-tiled) backward
  // The tiled FlashAttention-2 backward (backward_fa2.hpp); delta above is shared.
  bwd_qk,        // S = Q_i K_j^T recomputed
  bwd_exp_arg,   // L*log2(e) and the exp2 argument S*c - L*log2(e)
  bwd_exp,       // P = exp2(...) recomputed
  bwd_p_to_bf16, // P -> BF16 before dV += P^T dO (fa2)
  dp,            // dP = dO_i V_j^T
  ds,            // dS = P o (dP - delta): the subtraction and the product
  ds_to_bf16,    // dS -> BF16 before dK and dQ (fa2)
  dv_acc,        // dV_j += P^T dO_i (accumulator steps or tensor-core blocks)
  dk_acc,        // dK_j += dS^T Q_i
  dq_acc,        // dQ_ij = dS K_j, the block's product
  dq_add,        // dQ_i += dQ_ij across KV blocks (FP32 adds: FlashAttention-2's atomicAdd)
  grad_scale,    // dK*scale, dQ*scale at the end
  grad_to_bf16,  // dQ, dK, dV -> BF16 once at the end (fa2)
  count_
};
inline constexpr int site_count = int(site::count_);

inline const char *to_string(site s) {
  constexpr const char *names[] = {"input",         "qk",       "scale",     "row_max",     "exp_arg",
                                   "exp",           "row_sum",  "p_to_bf16", "pv",          "pv_to_bf16",
                                   "o_update",      "rescale",  "normalize", "o_to_bf16",   "lse",
                                   "delta",         "backward", "bwd_qk",    "bwd_exp_arg", "bwd_exp",
                                   "bwd_p_to_bf16", "dp",       "ds",        "ds_to_bf16",  "dv_acc",
                                   "dk_acc",        "dq_acc",   "dq_add",    "grad_scale",  "grad_to_bf16"};
  static_assert(sizeof(names) / sizeof(names[0]) == site_count);
  return names[int(s)];
}

} // namespace bf16emu::attention
