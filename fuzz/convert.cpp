// Differential harness: convert from any format (fp64 included) to any format, core vs oracle.
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t fi = r.u8(), fo = r.u8();
  const fuzz::decoded_env e = fuzz::environment(r);
  auto run = [&](auto I) {
    using FI = decltype(I);
    const auto a = fuzz::operand<FI>(r);
    auto to = [&](auto O) {
      using FO = decltype(O);
      bf16emu::last_event tr;
      const auto got = bf16emu::convert<FO>(a, e.core, tr);
      const auto oo = fuzz::oracle_format<FO>();
      const auto want = oracle::convert(fuzz::ref(a), oo, e.ref);
      const auto err = oracle::exact_error(oracle::op::convert, fuzz::ref(a), fuzz::ref(a), fuzz::ref(a), oo,
                                           got.value.bits, e.ref);
      fuzz::compare("convert " + fuzz::describe(a), e.core, got, tr, want, err);
    };
    if (fo % 7 == 6)
      to(bf16emu::binary64{});
    else
      fuzz::visit_arith(fo, to);
  };
  if (fi % 7 == 6)
    run(bf16emu::binary64{});
  else
    fuzz::visit_arith(fi, run);
  return 0;
}
