// bf16emu io: fp4 (e2m1) operands on `bf16emu mma` lines as two codes packed in a byte
// (`--packed`). Element 2i sits in the low nibble, element 2i+1 in the high nibble, as MMA-Sim,
// CUTLASS (cutlass::float_e2m1_t arrays) and PyTorch (torch.float4_e2m1fn_x2) store them
// (docs/tensor-cores.md, "fp4 operands packed two to a byte"). An odd count ends in a byte whose
// high nibble pads and must be 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <bf16emu/core/format.hpp>

namespace bf16emu::io {

// A byte as a bit pattern, "0x00".."0xff" (one or two hex digits); false for anything else.
// Packed fp4 bytes and the scale factors of the block-scaled kinds.
bool hex_byte(const std::string &tok, std::uint8_t &v) noexcept;

// Which of A and B a line gives packed.
struct fp4_packing {
  bool a = false, b = false;
};

// Under --packed (packed true) the e2m1 operands of A x B; input_error naming the formats when
// neither is e2m1. {} when packed is false.
fp4_packing packing_for(bool packed, format_id a, format_id b);

// The tokens one operand of K values takes: K, or (K + 1) / 2 bytes when packed.
int operand_tokens(int K, bool packed) noexcept;

// "K of A, K of B" for a line's count message, naming the bytes of a packed operand:
// "3 bytes of A (5 e2m1 codes, packed), 5 of B".
std::string operand_counts(int K, fp4_packing p);

// Expands the packed bytes of A (the first tokens of tok) and of B (after A) into one token per
// code ("0x7"), in place; the rest of the line is kept. input_error "line N: ..." naming a token
// that is not a byte 0x00..0xff, or an odd count's pad nibble that is not 0.
void unpack_fp4(std::vector<std::string> &tok, int K, fp4_packing p, int line);

} // namespace bf16emu::io
