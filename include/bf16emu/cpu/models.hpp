// bf16emu CPU models: the named list and the one-lane entry point the line interface uses
// (`bf16emu mma --arch NAME`, one FP32 lane per line: a[0..k-1] b[0..k-1] c, BF16 operands,
// FP32 accumulator, in memory order).
#pragma once

#include <cstdint>

#include "bf16emu/cpu/arm.hpp"
#include "bf16emu/cpu/x86.hpp"

namespace bf16emu::cpu {

enum class model_id : std::uint8_t {
  avx512bf16, // VDPBF16PS
  amx_bf16,   // TDPBF16PS
  arm_bfdot,
  arm_bfdot_ebf,
  arm_bfmmla,
  arm_bfmmla_ebf,
  arm_bfmlalb,
  arm_bfmlalt,
};

struct model_info {
  model_id id;
  const char *name;
  int k; // BF16 products per lane; 0: any even k (AMX: k/2 BF16 pairs)
  const char *isa;
  const char *description;
};

inline constexpr model_info models[] = {
    {model_id::avx512bf16, "avx512bf16", 2, "x86 AVX512_BF16",
     "VDPBF16PS lane: c + a1*b1 then + a0*b0, two FP32 FMAs, DAZ/FTZ, RNE, NaN indefinite 0xFFC00000"},
    {model_id::amx_bf16, "amx-bf16", 0, "x86 AMX-BF16",
     "TDPBF16PS element: per pair c + a[2k]*b[2k] then + a[2k+1]*b[2k+1], FP32 FMAs, DAZ/FTZ, RNE"},
    {model_id::arm_bfdot, "arm-bfdot", 2, "Arm FEAT_BF16",
     "BFDOT, FPCR.EBF=0: products and sums rounded to FP32 with round-to-odd, FZ, default NaN"},
    {model_id::arm_bfdot_ebf, "arm-bfdot-ebf", 2, "Arm FEAT_EBF16",
     "BFDOT, FPCR.EBF=1: a0*b0 + a1*b1 rounded once (RNE), then + c (RNE), denormals kept"},
    {model_id::arm_bfmmla, "arm-bfmmla", 4, "Arm FEAT_BF16",
     "BFMMLA element: two BFDOT steps (EBF=0), pairs (a0,a1) then (a2,a3)"},
    {model_id::arm_bfmmla_ebf, "arm-bfmmla-ebf", 4, "Arm FEAT_EBF16",
     "BFMMLA element: two BFDOT steps (EBF=1)"},
    {model_id::arm_bfmlalb, "arm-bfmlalb", 1, "Arm FEAT_BF16",
     "BFMLALB/BFMLALT lane: c + a*b, one FP32 FMA under FPCR (RNE, no flush)"},
    {model_id::arm_bfmlalt, "arm-bfmlalt", 1, "Arm FEAT_BF16",
     "same arithmetic as arm-bfmlalb (odd elements)"},
};
inline constexpr int model_count = int(sizeof(models) / sizeof(models[0]));

// The model called `name`, or nullptr.
BF16EMU_CXHD const model_info *find_model(const char *name) noexcept {
  for (const model_info &m : models) {
    const char *p = m.name, *q = name;
    while (*p != 0 && *p == *q) {
      ++p;
      ++q;
    }
    if (*p == 0 && *q == 0) return &m;
  }
  return nullptr;
}

// Whether the model takes k products per lane.
BF16EMU_CXHD bool accepts_k(const model_info &m, int k) noexcept {
  return m.k == 0 ? (k >= 2 && k % 2 == 0) : k == m.k;
}

// One lane: a[0..k-1], b[0..k-1] (BF16 patterns in memory order), c (FP32 pattern) -> FP32 result
// pattern. Precondition: accepts_k(info, k). The tracer sees every rounding step in order.
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t run_lane(model_id id, const std::uint16_t *a, const std::uint16_t *b, int k,
                                    std::uint32_t c, Tr &&tr = Tr{}) noexcept {
  arm_fpcr ebf{};
  ebf.ebf = true;
  switch (id) {
  case model_id::avx512bf16: return vdpbf16ps(c, a[0], a[1], b[0], b[1], tr);
  case model_id::amx_bf16: return tdpbf16ps(c, a, b, k / 2, tr);
  case model_id::arm_bfdot: return bfdot(c, a[0], a[1], b[0], b[1], arm_fpcr{}, tr);
  case model_id::arm_bfdot_ebf: return bfdot(c, a[0], a[1], b[0], b[1], ebf, tr);
  case model_id::arm_bfmmla: return bfmmla(c, a, b, arm_fpcr{}, tr);
  case model_id::arm_bfmmla_ebf: return bfmmla(c, a, b, ebf, tr);
  default: return bfmlal(c, a[0], b[0], arm_fpcr{}, tr);
  }
}

// A tracer that keeps the first `capacity` rounding steps (no allocation).
struct step_log {
  static constexpr bool enabled = true;
  static constexpr int capacity = 16;
  rounding_event steps[capacity]{};
  int count = 0;
  BF16EMU_CXHD void operator()(const rounding_event &e) noexcept {
    if (count < capacity) steps[count] = e;
    ++count;
  }
};

} // namespace bf16emu::cpu
