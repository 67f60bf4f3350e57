// Differential harness: mul in every format mix, rounding mode and environment, core vs oracle.
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t fa = r.u8(), fb = r.u8(), fo = r.u8();
  const fuzz::decoded_env e = fuzz::environment(r);
  fuzz::with_binary(r, fa, fb, fo, [&](auto a, auto b, auto O) {
    using FO = decltype(O);
    bf16emu::last_event tr;
    const auto got = bf16emu::mul_to<FO>(a, b, e.core, tr);
    const auto oo = fuzz::oracle_format<FO>();
    const auto want = oracle::mul(fuzz::ref(a), fuzz::ref(b), oo, e.ref);
    const auto err = oracle::exact_error(oracle::op::mul, fuzz::ref(a), fuzz::ref(b), fuzz::ref(b), oo,
                                         got.value.bits, e.ref);
    fuzz::compare("mul " + fuzz::describe(a) + ", " + fuzz::describe(b), e.core, got, tr, want, err);
  });
  return 0;
}
