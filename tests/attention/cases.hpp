// Small attention inputs shared by the attention tests, whose every rounding can be followed by
// hand (the derivations are in the tests that use them).
#pragma once

#include <cmath>

#include "bf16emu/attention.hpp"

namespace attention_cases {

// n = 2, d = 16: Q rows = K rows = e0 (1 at index 0), V row 0 = (1, 0, ..., 0), V row 1 =
// (2^-8, 0, ..., 0), dO = e0 in both rows. Every score is 1, so each row's maximum is repeated:
// P-bar = (1, 1), l = 2, and the exact O[r][0] = (1 + 2^-8)/2 = 0.5 + 2^-9, O[r][i > 0] = 0.
inline bf16emu::attention::attention_inputs two_keys() {
  bf16emu::attention::attention_inputs in;
  in.n = 2, in.d = 16;
  in.q.assign(32, 0.0), in.k.assign(32, 0.0), in.v.assign(32, 0.0), in.dout.assign(32, 0.0);
  in.q[0] = in.q[16] = in.k[0] = in.k[16] = 1.0;
  in.v[0] = 1.0, in.v[16] = std::ldexp(1.0, -8);
  in.dout[0] = in.dout[16] = 1.0;
  return in;
}

} // namespace attention_cases
