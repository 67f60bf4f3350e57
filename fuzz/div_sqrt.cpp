// Differential harness: div (any format mix) and sqrt, core vs oracle.
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t op = r.u8();
  const std::uint8_t fa = r.u8(), fb = r.u8(), fo = r.u8();
  const fuzz::decoded_env e = fuzz::environment(r);
  const bool is_sqrt = op & 1;
  fuzz::with_binary(r, fa, fb, fo, [&](auto a, auto b, auto O) {
    using FO = decltype(O);
    bf16emu::last_event tr;
    const auto oo = fuzz::oracle_format<FO>();
    if (is_sqrt) {
      const auto got = bf16emu::sqrt_to<FO>(a, e.core, tr);
      const auto want = oracle::sqrt(fuzz::ref(a), oo, e.ref);
      const auto err = oracle::exact_error(oracle::op::sqrt, fuzz::ref(a), fuzz::ref(a), fuzz::ref(a), oo,
                                           got.value.bits, e.ref);
      fuzz::compare("sqrt " + fuzz::describe(a), e.core, got, tr, want, err);
    } else {
      const auto got = bf16emu::div_to<FO>(a, b, e.core, tr);
      const auto want = oracle::div(fuzz::ref(a), fuzz::ref(b), oo, e.ref);
      const auto err = oracle::exact_error(oracle::op::div, fuzz::ref(a), fuzz::ref(b), fuzz::ref(b), oo,
                                           got.value.bits, e.ref);
      fuzz::compare("div " + fuzz::describe(a) + ", " + fuzz::describe(b), e.core, got, tr, want, err);
    }
  });
  return 0;
}
