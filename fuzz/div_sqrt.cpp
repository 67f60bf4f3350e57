// Differential harness: div (any format mix) and sqrt, core vs oracle.
#include <cstdlib>

#include "common.hpp"

// Known open core issue (reported, docs/fuzzing.md): stochastic rounding of div/sqrt uses a
// quotient/root window too short for floor(f * 2^32). With BF16EMU_FUZZ_KNOWN_SR_DIVSQRT set
// in the environment, stochastic inputs are run in nearest_even instead so that campaigns can
// go on past it. Unset (the default), the harness reports it.
static bool skip_known_sr() {
  static const bool skip = [] {
    const char *v = std::getenv("BF16EMU_FUZZ_KNOWN_SR_DIVSQRT");
    return v != nullptr && *v != 0;
  }();
  return skip;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t op = r.u8();
  const std::uint8_t fa = r.u8(), fb = r.u8(), fo = r.u8();
  fuzz::decoded_env e = fuzz::environment(r);
  if (skip_known_sr() && e.core.mode == bf16emu::round_mode::stochastic) {
    e.core.mode = bf16emu::round_mode::nearest_even;
    e.ref.mode = oracle::rounding::nearest_even;
  }
  const bool is_sqrt = op & 1;
  fuzz::visit_arith(fa, [&](auto A) {
    using FA = decltype(A);
    const auto a = fuzz::operand<FA>(r);
    fuzz::visit_arith(fb, [&](auto B) {
      using FB = decltype(B);
      const auto b = fuzz::operand<FB>(r);
      fuzz::visit_arith(fo, [&](auto O) {
        using FO = decltype(O);
        bf16emu::last_event tr;
        const auto oo = fuzz::oracle_format<FO>();
        if (is_sqrt) {
          const auto got = bf16emu::sqrt_to<FO>(a, e.core, tr);
          const auto want = oracle::sqrt(fuzz::ref(a), oo, e.ref);
          const auto err = oracle::exact_error(oracle::op::sqrt, fuzz::ref(a), fuzz::ref(a), fuzz::ref(a), oo,
                                               got.value.bits, e.ref);
          fuzz::compare(std::string("sqrt ") + bf16emu::format_name<FA>() + " " + fuzz::hex(a.bits), e.core,
                        got, tr, want, err);
        } else {
          const auto got = bf16emu::div_to<FO>(a, b, e.core, tr);
          const auto want = oracle::div(fuzz::ref(a), fuzz::ref(b), oo, e.ref);
          const auto err = oracle::exact_error(oracle::op::div, fuzz::ref(a), fuzz::ref(b), fuzz::ref(b), oo,
                                               got.value.bits, e.ref);
          fuzz::compare(std::string("div ") + bf16emu::format_name<FA>() + " " + fuzz::hex(a.bits) + ", " +
                            bf16emu::format_name<FB>() + " " + fuzz::hex(b.bits),
                        e.core, got, tr, want, err);
        }
      });
    });
  });
  return 0;
}
