// bf16emu io: tensor-core values and block traces as `bf16emu mma` and `bf16emu explain-gemm`
// print them (docs/tensor-cores.md, the line format and --trace).
//
//   mma_hex(format_id::bf16, 0x3f80)   "0x3f80"   (lower case, the format's full width)
//   hexfloat(0.375)                    "0x1.8p-2" (C99 %a)
#pragma once

#include <cstdint>
#include <string>

#include <bf16emu/core/format.hpp>
#include <bf16emu/tc/block.hpp>

#include "io/json.hpp"

namespace bf16emu::io {

std::string mma_hex(format_id f, std::uint64_t bits);
std::string hexfloat(double x);

// The members of one traced block, written into an object the caller has begun: block, k0,
// special, c and d (in acc, the accumulator's format) and, unless the block took the NaN/Inf
// path, max_exp, lsb_exp, aligned_sum, sum_value, trunc_err and terms (one per product, then C:
// k or "term": "c", zero, exp, shift, lost).
void write_block_members(json_writer &w, const tc::block_trace &t, format_id acc);

} // namespace bf16emu::io
