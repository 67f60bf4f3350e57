// bf16emu cpu-probe: the real x86 BF16 instructions, for the bit-for-bit cross-check against the
// models (include/bf16emu/cpu). Detection by cpuid and xgetbv; the instructions are compiled with
// function target attributes only (x86.cpp), so the rest of the build stays x86-64 baseline.
// Call a run_* function only when detect() says the instruction and its OS state are there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bf16emu::cli::cpu_probe {

struct cpu_info {
  bool x86_64 = false;
  std::string vendor, brand;
  unsigned family = 0, model = 0, stepping = 0;
  std::uint32_t leaf7_1_eax = 0, leaf7_1_edx = 0, leaf7_0_edx = 0; // raw words, for the messages
  bool avx512f = false, avx512vl = false, avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false, avx_ne_convert = false;
  bool os_ymm = false; // XCR0: SSE and AVX (YMM) state enabled
  bool os_zmm = false; // XCR0: opmask, ZMM_Hi256, Hi16_ZMM (and SSE, AVX) enabled
  bool os_amx = false; // XCR0: XTILECFG and XTILEDATA enabled
};

cpu_info detect();

// Asks Linux for the AMX tile-data state (arch_prctl ARCH_REQ_XCOMP_PERM); false if refused.
bool request_amx();

// Sets MXCSR to v and returns the value it had (this thread only); 0 where not x86-64.
std::uint32_t swap_mxcsr(std::uint32_t v);

// VDPBF16PS zmm: lanes (a multiple of 16) FP32 lanes; a, b hold 2 * lanes BF16 (memory order).
void run_vdpbf16ps(const std::uint16_t *a, const std::uint16_t *b, std::uint32_t *acc, std::size_t lanes);
// VCVTNEPS2BF16 zmm -> ymm: n (a multiple of 16) values.
void run_vcvtneps2bf16(const std::uint32_t *x, std::uint16_t *out, std::size_t n);
// VCVTNE2PS2BF16 zmm: one instruction: out[0..15] from src2, out[16..31] from src1 (SDM order).
void run_vcvtne2ps2bf16(const std::uint32_t *src1, const std::uint32_t *src2, std::uint16_t *out);
// AVX-NE-CONVERT, written as raw encodings (the mnemonics need binutils 2.40; clang 14's assembler
// lacks them), each checked against binutils 2.40's `as` + objdump:
//   even_bf16 VCVTNEEBF162PS ymm, m256: BF16 elements 0, 2, ..., 14 of x[0..15] -> out[0..7] FP32
//   odd_bf16  VCVTNEOBF162PS ymm, m256: elements 1, 3, ..., 15
//   bcst_bf16 VBCSTNEBF162PS ymm, m16:  x[0] -> out[0..7]
//   even_fp16, odd_fp16, bcst_fp16: VCVTNEEPH2PS, VCVTNEOPH2PS, VBCSTNESH2PS, the same for FP16.
enum class ne_load : std::uint8_t { even_bf16, odd_bf16, bcst_bf16, even_fp16, odd_fp16, bcst_fp16 };
void run_ne_load(ne_load op, const std::uint16_t *x, std::uint32_t *out);
// VCVTNEPS2BF16 xmm, ymm with a VEX encoding (AVX-NE-CONVERT): x[0..7] FP32 -> out[0..7] BF16.
void run_vcvtneps2bf16_vex(const std::uint32_t *x, std::uint16_t *out);

// TDPBF16PS on one 16 x 16 FP32 tile C += A B with 4 BF16 pairs: A is 16 rows x 8 BF16,
// B is 4 rows x 32 BF16 (row k holds the pairs (b[2n], b[2n+1]) of column n), C 16 x 16 FP32.
void run_tdpbf16ps(const std::uint16_t *a, const std::uint16_t *b, std::uint32_t *c);

} // namespace bf16emu::cli::cpu_probe
