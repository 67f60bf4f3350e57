// io::unpack_fp4 and friends (src/io/packed.hpp): e2m1 codes two to a byte, element 2i in the
// low nibble (MMA-Sim, CUTLASS, PyTorch float4_e2m1fn_x2). Expected tokens by hand.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/error.hpp"
#include "io/packed.hpp"

namespace {

using namespace bf16emu;
using tokens = std::vector<std::string>;

TEST(Packed, WhichOperands) {
  EXPECT_FALSE(io::packing_for(false, format_id::e2m1, format_id::e2m1).a);
  const io::fp4_packing both = io::packing_for(true, format_id::e2m1, format_id::e2m1);
  EXPECT_TRUE(both.a && both.b);
  const io::fp4_packing b_only = io::packing_for(true, format_id::e4m3, format_id::e2m1);
  EXPECT_TRUE(!b_only.a && b_only.b);
  try {
    io::packing_for(true, format_id::e4m3, format_id::e5m2);
    ADD_FAILURE() << "a packed byte for fp8 operands was accepted";
  } catch (const io::input_error &e) {
    EXPECT_NE(std::string(e.what()).find("but A is e4m3 and B is e5m2"), std::string::npos) << e.what();
  }
}

TEST(Packed, EvenCount) {
  // K = 4: A bytes 0x21 0x43 -> codes 1 2 3 4; B unpacked; then C.
  tokens t{"0x21", "0x43", "0x7", "0x6", "0x5", "0x4", "0"};
  io::unpack_fp4(t, 4, {true, false}, 1);
  EXPECT_EQ(t, (tokens{"0x1", "0x2", "0x3", "0x4", "0x7", "0x6", "0x5", "0x4", "0"}));
  EXPECT_EQ(io::operand_counts(4, {true, false}), "2 bytes of A (4 e2m1 codes, packed), 4 of B");
}

TEST(Packed, OddCount) {
  // K = 3: A bytes 0xf0 0x07 -> 0 0xf 7 (the last high nibble pads); B bytes 0x12 0x03 -> 2 1 3.
  tokens t{"0xf0", "0x07", "0x12", "0x3", "0x3c00"};
  io::unpack_fp4(t, 3, {true, true}, 1);
  EXPECT_EQ(t, (tokens{"0x0", "0xf", "0x7", "0x2", "0x1", "0x3", "0x3c00"}));
  EXPECT_EQ(io::operand_tokens(3, true), 2);
  EXPECT_EQ(io::operand_tokens(3, false), 3);
  tokens bad{"0x71", "0x17", "0x0", "0x0", "0"}; // A's pad nibble (byte 1, high) is 1
  try {
    io::unpack_fp4(bad, 3, {true, true}, 7);
    ADD_FAILURE() << "a nonzero pad nibble was accepted";
  } catch (const io::input_error &e) {
    EXPECT_NE(std::string(e.what()).find("line 7: packed byte 1 of A '0x17' holds element 2 of an odd count"),
              std::string::npos)
        << e.what();
  }
}

TEST(Packed, NotAByte) {
  for (const char *tok : {"0x1ff", "17", "0x", "1.5", "0xg1"}) {
    tokens t{"0x1", "0x2", tok, "0"};
    try {
      io::unpack_fp4(t, 2, {false, true}, 3);
      ADD_FAILURE() << tok << " was accepted";
    } catch (const io::input_error &e) {
      EXPECT_NE(std::string(e.what()).find(std::string("line 3: packed byte 0 of B '") + tok + "'"),
                std::string::npos)
          << e.what();
    }
  }
  std::uint8_t v = 0;
  EXPECT_TRUE(io::hex_byte("0xA5", v));
  EXPECT_EQ(v, 0xA5);
  EXPECT_TRUE(io::hex_byte("0x7", v));
  EXPECT_EQ(v, 7);
}

} // namespace
