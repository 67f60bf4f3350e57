// bf16emu attention: the one place where attention calls the tensor-core model.
//
// tc_dot(model, a, b, c, k): D = sum_k a[k]*b[k] + c on the chosen generation, as an MMA
// chain: instructions of `inst_k` products in increasing k, each split into blocks of L
// products (docs/tensor-cores.md), each block's FP32 result the next block's c. A k that is
// not a multiple of inst_k is padded with zero products, as a kernel pads a partial tile.
// With a ledger, each block is filed under one site with error = d - exact block value
// (binary64, from the model's block trace).
#pragma once

#include <cstddef>

#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"
#include "bf16emu/tc/block.hpp"

namespace bf16emu::attention {

struct tc_model {
  tc::block_params block;
  int inst_k = 16; // products per mma instruction (bf16 m16n8k16)
};

// Block parameters per generation for BF16 inputs and FP32 output (docs/tensor-cores.md).
inline tc_model tc_for(tc_arch a) {
  tc_model m;
  m.inst_k = 16;
  switch (a) {
  case tc_arch::sm70: m.block = {4, 23, -131, 23, tc::out_round::truncate}; break; // (V100 has no BF16)
  case tc_arch::sm80:
  case tc_arch::sm89: m.block = {8, 24, -132, 23, tc::out_round::truncate}; break;
  case tc_arch::sm90:
  case tc_arch::sm100: m.block = {16, 25, -133, 23, tc::out_round::truncate}; break;
  }
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

// track_p1: tag a block's event as a P-bar = 1 event when some a[i] of the block is 1.
template <class Obs, class Step = no_block_step>
f32 tc_dot(const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b, std::ptrdiff_t sb, int k,
           f32 c, Obs &obs, site s, bool track_p1, Step step = Step{}) {
  const int L = m.block.L;
  const int kpad = (k + m.inst_k - 1) / m.inst_k * m.inst_k;
  int bi = 0;
  for (int k0 = 0; k0 < kpad; k0 += L, ++bi) {
    const int n = k - k0 < 0 ? 0 : (k - k0 < L ? k - k0 : L);
    if constexpr (Obs::enabled) {
      bool p1 = false;
      if (track_p1)
        for (int i = 0; i < n; ++i)
          p1 |= a[(k0 + i) * sa].bits == 0x3f80;
      auto tr = tc::make_block_tracer([&](const tc::block_trace &t) {
        if (t.special) return;
        double lost = 0;
        for (int i = 0; i <= t.n_products; ++i)
          lost += t.terms[i].lost;
        obs.record(s, t.trunc_err - lost, false, p1);
      });
      c = tc::block_fdpa<bfloat16, binary32>(m.block, a + k0 * sa, sa, b + k0 * sb, sb, n, c, tr, bi, k0);
    } else {
      tc::no_block_trace tr;
      c = tc::block_fdpa<bfloat16, binary32>(m.block, a + k0 * sa, sa, b + k0 * sb, sb, n, c, tr, bi, k0);
    }
    if constexpr (Step::enabled)
      if (n > 0) step(k0 + n, c);
  }
  return c;
}

} // namespace bf16emu::attention
