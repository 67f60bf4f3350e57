// bf16emu cpu-probe: cpuid detection and the real x86 BF16 instructions (see x86.hpp).
#include "x86.hpp"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace bf16emu::cli::cpu_probe {

#if defined(__x86_64__)

namespace {
std::uint64_t xgetbv0() {
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t(hi) << 32) | lo;
}
bool bit(std::uint32_t word, int b) { return ((word >> b) & 1u) != 0; }
} // namespace

cpu_info detect() {
  cpu_info c;
  c.x86_64 = true;
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  const unsigned max_leaf = a;
  char v[13] = {};
  std::memcpy(v, &b, 4);
  std::memcpy(v + 4, &d, 4);
  std::memcpy(v + 8, &cx, 4);
  c.vendor = v;
  __get_cpuid(1, &a, &b, &cx, &d);
  const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  c.family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
  c.model = (base_family == 0x6 || base_family == 0xF) ? (((a >> 16) & 0xF) << 4) | base_model : base_model;
  c.stepping = a & 0xF;
  const bool osxsave = bit(cx, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  c.os_ymm = (xcr0 & 0x6) == 0x6;
  c.os_zmm = (xcr0 & 0xE6) == 0xE6;
  c.os_amx = (xcr0 & 0x60000) == 0x60000;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &cx, &d);
    const unsigned max_sub = a;
    c.avx512f = bit(b, 16);
    c.avx512vl = bit(b, 31);
    c.leaf7_0_edx = d;
    c.amx_bf16 = bit(d, 22);
    c.amx_tile = bit(d, 24);
    if (max_sub >= 1) {
      __get_cpuid_count(7, 1, &a, &b, &cx, &d);
      c.leaf7_1_eax = a;
      c.leaf7_1_edx = d;
      c.avx512_bf16 = bit(a, 5);
      c.avx_ne_convert = bit(d, 5);
    }
  }
  unsigned ext = 0;
  __get_cpuid(0x80000000u, &ext, &b, &cx, &d);
  if (ext >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002u + i, &a, &b, &cx, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &cx, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    c.brand = brand;
    while (!c.brand.empty() && c.brand.back() == ' ')
      c.brand.pop_back();
  }
  return c;
}

// Out of line, with a memory clobber, so no instruction of a run_* call moves across it.
__attribute__((noinline)) std::uint32_t swap_mxcsr(std::uint32_t v) {
  std::uint32_t old = 0;
  __asm__ volatile("stmxcsr %0" : "=m"(old) : : "memory");
  __asm__ volatile("ldmxcsr %0" : : "m"(v) : "memory");
  return old;
}

bool request_amx() {
#if defined(__linux__)
  constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
#else
  return false;
#endif
}

__attribute__((target("avx512f,avx512bf16"))) void
run_vdpbf16ps(const std::uint16_t *a, const std::uint16_t *b, std::uint32_t *acc, std::size_t lanes) {
  for (std::size_t i = 0; i < lanes; i += 16) {
    __m512 c = _mm512_loadu_ps(acc + i);
    const __m512i va = _mm512_loadu_si512(a + 2 * i), vb = _mm512_loadu_si512(b + 2 * i);
    // Intel order VDPBF16PS zmm1, zmm2, zmm3 (src1 = a, src2 = b); AT&T lists it reversed.
    __asm__("vdpbf16ps %[b], %[a], %[c]" : [c] "+v"(c) : [a] "v"(va), [b] "v"(vb));
    _mm512_storeu_ps(acc + i, c);
  }
}

__attribute__((target("avx512f,avx512bf16"))) void run_vcvtneps2bf16(const std::uint32_t *x,
                                                                     std::uint16_t *out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    __m256i r;
    __asm__("vcvtneps2bf16 %[v], %[r]" : [r] "=v"(r) : [v] "v"(v));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), r);
  }
}

__attribute__((target("avx512f,avx512bf16"))) void
run_vcvtne2ps2bf16(const std::uint32_t *src1, const std::uint32_t *src2, std::uint16_t *out) {
  const __m512 s1 = _mm512_loadu_ps(src1), s2 = _mm512_loadu_ps(src2);
  __m512i r;
  __asm__("vcvtne2ps2bf16 %[s2], %[s1], %[r]" : [r] "=v"(r) : [s1] "v"(s1), [s2] "v"(s2));
  _mm512_storeu_si512(out, r);
}

// The instruction (its bytes, memory operand (%rax), destination ymm0), then ymm0 to out.
#define BF16EMU_NE_LOAD(bytes)                                                                               \
  __asm__ volatile(".byte " bytes "\n\tvmovdqu %%ymm0, (%1)\n\tvzeroupper"                                   \
                   :                                                                                         \
                   : "a"(x), "r"(out)                                                                        \
                   : "xmm0", "memory")

void run_ne_load(ne_load op, const std::uint16_t *x, std::uint32_t *out) {
  switch (op) {
  case ne_load::even_bf16: // vcvtneebf162ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7e, 0xb0, 0x00");
    break;
  case ne_load::odd_bf16: // vcvtneobf162ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7f, 0xb0, 0x00");
    break;
  case ne_load::bcst_bf16: // vbcstnebf162ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7e, 0xb1, 0x00");
    break;
  case ne_load::even_fp16: // vcvtneeph2ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7d, 0xb0, 0x00");
    break;
  case ne_load::odd_fp16: // vcvtneoph2ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7c, 0xb0, 0x00");
    break;
  case ne_load::bcst_fp16: // vbcstnesh2ps (%rax), %ymm0
    BF16EMU_NE_LOAD("0xc4, 0xe2, 0x7d, 0xb1, 0x00");
    break;
  }
}
#undef BF16EMU_NE_LOAD

void run_vcvtneps2bf16_vex(const std::uint32_t *x, std::uint16_t *out) {
  // vmovdqu (%rax), %ymm1; {vex} vcvtneps2bf16 %ymm1, %xmm0 (c4 e2 7e 72 c1); xmm0 to out
  __asm__ volatile(
      "vmovdqu (%0), %%ymm1\n\t.byte 0xc4, 0xe2, 0x7e, 0x72, 0xc1\n\tvmovdqu %%xmm0, (%1)\n\tvzeroupper"
      :
      : "a"(x), "r"(out)
      : "xmm0", "xmm1", "memory");
}

namespace {
struct alignas(64) tile_config {
  std::uint8_t palette_id = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
} // namespace

__attribute__((target("amx-tile,amx-bf16"))) void run_tdpbf16ps(const std::uint16_t *a,
                                                                const std::uint16_t *b, std::uint32_t *c) {
  tile_config cfg;
  cfg.colsb[0] = 64; // C: 16 rows x 16 FP32
  cfg.rows[0] = 16;
  cfg.colsb[1] = 16; // A: 16 rows x 4 BF16 pairs
  cfg.rows[1] = 16;
  cfg.colsb[2] = 64; // B: 4 rows (pairs) x 16 columns
  cfg.rows[2] = 4;
  _tile_loadconfig(&cfg);
  _tile_loadd(0, c, 64);
  _tile_loadd(1, a, 16);
  _tile_loadd(2, b, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
}

#else // not x86-64: nothing to detect, nothing to run

cpu_info detect() { return {}; }
std::uint32_t swap_mxcsr(std::uint32_t) { return 0; }
bool request_amx() { return false; }
void run_vdpbf16ps(const std::uint16_t *, const std::uint16_t *, std::uint32_t *, std::size_t) {}
void run_vcvtneps2bf16(const std::uint32_t *, std::uint16_t *, std::size_t) {}
void run_vcvtne2ps2bf16(const std::uint32_t *, const std::uint32_t *, std::uint16_t *) {}
void run_tdpbf16ps(const std::uint16_t *, const std::uint16_t *, std::uint32_t *) {}
void run_ne_load(ne_load, const std::uint16_t *, std::uint32_t *) {}
void run_vcvtneps2bf16_vex(const std::uint32_t *, std::uint16_t *) {}

#endif

} // namespace bf16emu::cli::cpu_probe
