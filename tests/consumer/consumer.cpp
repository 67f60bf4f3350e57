// A program outside the bf16emu tree that uses the installed (or add_subdirectory'd)
// library: the paper's case must come out as published (Qiu & Yao, arXiv 2510.04212):
// FP32 sum 0xC0968717, BF16 0xC097 after rounding up with guard 1 and sticky 1.
#include <bf16emu/core.hpp>

#include <cstdio>

int main() {
  using namespace bf16emu;
  last_event t;
  auto s = add(f32::from_bits(0xC01A0E2E), from_float(-2.296875f));
  auto r = convert<bfloat16>(s.value, env{}, t);
  std::printf("fp32 0x%08X bf16 0x%04X guard %d sticky %d\n", unsigned(s.bits()), unsigned(r.bits()),
              int(t.event.guard), int(t.event.sticky));
  return s.bits() == 0xC0968717u && r.bits() == 0xC097u && t.event.guard && t.event.sticky ? 0 : 1;
}
