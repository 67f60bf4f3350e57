// bf16emu attention: the one place where attention calls the tensor-core model.
//
// tc_dot(model, a, b, c, k): D = sum_k a[k]*b[k] + c on the chosen generation, as the MMA
// chain of tc::dot (instructions of k products in increasing k, blocks of L inside, each
// block's FP32 result the next block's c, a partial instruction padded with zero products).
// With a ledger, each block is filed under one site with error = d - exact block value
// (binary64, from the model's block trace: trunc_err - sum of the alignment losses).
#pragma once

#include <cstddef>

#include "bf16emu/attention/arith.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"
#include "bf16emu/tc.hpp"

namespace bf16emu::attention {

struct tc_model {
  tc::block_params block;
  int inst_k = 16; // products per mma instruction (bf16 m16n8k16)
  bool valid = false;
};

// The tensor-core model's preset for BF16 inputs and FP32 accumulation on `a`
// (include/bf16emu/tc/presets.hpp). sm70 and sm75 have no BF16 tensor cores: valid = false.
inline tc_model tc_for(tc::arch a) {
  tc_model m;
  const tc::preset *p = tc::bf16_preset(a);
  if (p) m.block = p->block, m.inst_k = p->k, m.valid = true;
  return m;
}

// Called after each block with (index one past the block's last real product, D so far).
struct no_block_step {
  static constexpr bool enabled = false;
  void operator()(int, f32) const {}
};

// Wraps a callable (int k_end, f32 d) as an enabled block step.
template <class Fn> struct block_step {
  static constexpr bool enabled = true;
  Fn fn;
  void operator()(int k_end, f32 d) { fn(k_end, d); }
};

// D = sum a[k*sa]*b[k*sb] + c on the model (tc::dot). With an enabled observer each block
// is filed under `s`; track_p1 tags a block as a P-bar = 1 event when one of its a[i] is 1.
template <class Obs, class Step = no_block_step>
f32 tc_dot(const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b, std::ptrdiff_t sb, int k,
           f32 c, Obs &obs, site s, bool track_p1, Step step = Step{}) {
  if constexpr (Obs::enabled || Step::enabled) {
    auto tr = tc::make_block_tracer([&](const tc::block_trace &t) {
      if constexpr (Obs::enabled) {
        if (!t.special) {
          bool p1 = false;
          if (track_p1)
            for (int i = 0; i < t.n_real; ++i)
              p1 |= a[(t.k0 + i) * sa].bits == 0x3f80;
          double lost = 0;
          for (int i = 0; i <= t.n_products; ++i)
            lost += t.terms[i].lost;
          const double err = t.trunc_err - lost;
          const double d = double(to_float(f32::from_bits(t.d_bits)));
          obs.record(s, err, false, p1, (t.d_bits >> 31) != 0, std::fabs(d - err));
        }
      }
      if constexpr (Step::enabled)
        if (t.n_real > 0) step(t.k0 + t.n_real, f32::from_bits(t.d_bits));
    });
    return tc::dot<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, k, c, tr);
  } else {
    return tc::dot<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, k, c);
  }
}

// tc_dot under the site precision override of `o` (policy.hpp): at a site promoted to exact,
// the binary64 sum c + a[0]*b[0] + ... in increasing k (as the exact policy), nothing filed
// and no block steps; otherwise tc_dot (a promotion to fp32 leaves the model's blocks as they
// are: they round to FP32 already). The operands are BF16 either way: a caller whose operands
// a promoted site left in FP32 or binary64 uses FP32 (f32_ops::fma) dot products instead.
template <class Obs, class Step = no_block_step>
double tc_dot_at(const f32_ops<Obs> &o, const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b,
                 std::ptrdiff_t sb, int k, double c, site s, bool track_p1, Step step = Step{}) {
  if (o.exact_at(s)) {
    for (int i = 0; i < k; ++i)
      c += of(a[i * sa]) * of(b[i * sb]);
    return c;
  }
  return of(tc_dot(m, a, sa, b, sb, k, as_f32(c), *o.obs, s, track_p1, step));
}

} // namespace bf16emu::attention
