// The worked example of Qiu & Yao (arXiv 2510.04212), using the bf16emu core directly.
//
// An FP32 running sum s = -2.4071154594421387 (0xC01A0E2E) receives -2.296875. The FP32
// addition is exact (0xC0968717 = -4.703990459442139); storing the sum in BF16 then rounds
// it: guard bit 1, sticky bit 1, so nearest-even rounds the magnitude up to -4.71875 and the
// stored value is off by -0.014759540557861328125. With -2.40625 instead the sum is exactly
// halfway between two BF16 neighbours and ties-to-even rounds down to -4.6875.
//
// Build: cmake --build build --target bf16emu_example_paper_case
// Run:   build/examples/bf16emu_example_paper_case
#include <bf16emu/core.hpp>

#include <cstdio>
#include <cstdlib>

using namespace bf16emu;

namespace {

// Shortest "%.*g" text that reads back as the same double (what Python's repr prints).
const char *shortest(double x, char (&buf)[64]) {
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

// glibc's printf prints the exact decimal expansion of a double when asked for enough
// digits; %g then drops the trailing zeros. Every value printed here has < 40 digits.
void print_case(const char *title, f32 running_sum, f32 addend) {
  env e; // nearest_even, IEEE
  last_event add_trace, round_trace;
  result<binary32> s = add(running_sum, addend, e, add_trace);
  result<bfloat16> r = convert<bfloat16>(s.value, e, round_trace);
  const rounding_event &ev = round_trace.event;

  std::printf("%s\n", title);
  char buf[64];
  std::printf("  fp32 sum   0x%08X = %s (%s)\n", unsigned(s.bits()), shortest(double(to_float(s.value)), buf),
              add_trace.event.dec == decision::exact ? "exact" : "rounded");
  std::printf("  bf16 kept  ");
  for (int i = bfloat16::precision - 1; i >= 0; --i)
    std::printf(i == bfloat16::precision - 2 ? ".%d" : "%d", int(ev.kept >> i & 1));
  std::printf(" x 2^%d (kept significand 0x%02llX, last kept bit 2^%d)\n", int(ev.exponent),
              (unsigned long long)ev.kept, int(ev.lsb_exp));
  std::printf("  guard %d  round %d  sticky %d  ->  decision %s\n", int(ev.guard), int(ev.round),
              int(ev.sticky), to_string(ev.dec));
  std::printf("  bf16       0x%04X = %s\n", unsigned(r.bits()), shortest(to_double(r.value), buf));
  // The error is err_hi + err_lo exactly; err_lo is 0 whenever the error fits one double.
  if (ev.err_lo == 0)
    std::printf("  error      %.40g%s\n\n", ev.err_hi, ev.err_exact ? "" : " (approximate)");
  else
    std::printf("  error      %.40g + %.40g\n\n", ev.err_hi, ev.err_lo);
}

} // namespace

int main() {
  print_case("Paper case: -2.4071154594421387 + -2.296875, FP32 sum stored as BF16 (nearest even)",
             f32::from_bits(0xC01A0E2E), from_float(-2.296875f));
  print_case("Tie variant: -2.40625 + -2.296875", from_float(-2.40625f), from_float(-2.296875f));
  return 0;
}
