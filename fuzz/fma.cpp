// Differential harness: fma a*b+c, core vs oracle. a and b share a format (as in every
// widening product the library models); c and the result take any format.
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t fab = r.u8(), fc = r.u8(), fo = r.u8();
  const fuzz::decoded_env e = fuzz::environment(r);
  fuzz::visit_arith(fab, [&](auto A) {
    using FA = decltype(A);
    const auto a = fuzz::operand<FA>(r);
    const auto b = fuzz::operand<FA>(r);
    fuzz::visit_arith(fc, [&](auto C) {
      using FC = decltype(C);
      const auto c = fuzz::operand<FC>(r);
      fuzz::visit_arith(fo, [&](auto O) {
        using FO = decltype(O);
        bf16emu::last_event tr;
        const auto got = bf16emu::fma_to<FO>(a, b, c, e.core, tr);
        const auto oo = fuzz::oracle_format<FO>();
        const auto want = oracle::fma(fuzz::ref(a), fuzz::ref(b), fuzz::ref(c), oo, e.ref);
        const auto err = oracle::exact_error(oracle::op::fma, fuzz::ref(a), fuzz::ref(b), fuzz::ref(c), oo,
                                             got.value.bits, e.ref);
        fuzz::compare("fma " + fuzz::describe(a) + " * " + fuzz::hex(b.bits) + " + " + fuzz::describe(c),
                      e.core, got, tr, want, err);
      });
    });
  });
  return 0;
}
