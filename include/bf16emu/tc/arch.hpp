// bf16emu tensor-core model: the GPU generations the presets cover, one type for all layers
// (the presets, attention's kernel_policy, the CLI and the CUDA runner).
//
// Names: the canonical "smNN" (to_string), plus, when parsing, the arch-specific "sm90a" and
// "sm100a" and the generation names, which map to the data-centre part the sources measured:
// volta sm70, turing sm75, ampere sm80, ada sm89, hopper sm90, blackwell sm100, and
// rtx-blackwell sm120 (GeForce RTX 50 / RTX PRO Blackwell: mma.sync only, no tcgen05).
//
// constexpr, host+device, allocation- and exception-free: parse reports failure by its result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bf16emu/core/config.hpp"

namespace bf16emu::tc {

enum class arch : std::uint8_t { sm70, sm75, sm80, sm86, sm89, sm90, sm100, sm120 };

// Every arch, in increasing order (for host-side listings).
inline constexpr arch all_archs[] = {arch::sm70, arch::sm75, arch::sm80,  arch::sm86,
                                     arch::sm89, arch::sm90, arch::sm100, arch::sm120};
inline constexpr int arch_count = int(sizeof(all_archs) / sizeof(all_archs[0]));

BF16EMU_CXHD const char *to_string(arch a) noexcept {
  switch (a) {
  case arch::sm70: return "sm70";
  case arch::sm75: return "sm75";
  case arch::sm80: return "sm80";
  case arch::sm86: return "sm86";
  case arch::sm89: return "sm89";
  case arch::sm90: return "sm90";
  case arch::sm100: return "sm100";
  default: return "sm120";
  }
}

// The generation name that maps to `a` ("ampere" for sm80); nullptr for sm86, which has none.
BF16EMU_CXHD const char *generation_name(arch a) noexcept {
  switch (a) {
  case arch::sm70: return "volta";
  case arch::sm75: return "turing";
  case arch::sm80: return "ampere";
  case arch::sm89: return "ada";
  case arch::sm90: return "hopper";
  case arch::sm100: return "blackwell";
  case arch::sm120: return "rtx-blackwell";
  default: return nullptr;
  }
}

// The arch-specific target name accepted for `a` ("sm90a"); nullptr when there is none.
BF16EMU_CXHD const char *suffixed_name(arch a) noexcept {
  switch (a) {
  case arch::sm90: return "sm90a";
  case arch::sm100: return "sm100a";
  case arch::sm120: return "sm120a";
  default: return nullptr;
  }
}

namespace detail {
BF16EMU_CXHD bool name_is(std::string_view s, const char *name) noexcept {
  if (name == nullptr) return false;
  std::size_t i = 0;
  for (; name[i] != '\0'; ++i)
    if (i >= s.size() || s[i] != name[i]) return false;
  return i == s.size();
}
} // namespace detail

// "sm80", "sm90a", "ampere", ... -> out; false (out unchanged) for an unknown name. Case-sensitive.
BF16EMU_CXHD bool parse_arch(std::string_view name, arch &out) noexcept {
  for (int i = 0; i <= int(arch::sm120); ++i) {
    const arch a = arch(i);
    if (detail::name_is(name, to_string(a)) || detail::name_is(name, generation_name(a)) ||
        detail::name_is(name, suffixed_name(a)))
      return out = a, true;
  }
  return false;
}

} // namespace bf16emu::tc
