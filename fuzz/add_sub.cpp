// Differential harness: add/sub in every format mix (a, b, result), rounding mode and
// environment, core vs oracle. Input bytes: op, formats, env, operands (see common.hpp).
#include "common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::reader r{data, size};
  const std::uint8_t op = r.u8();
  const std::uint8_t fa = r.u8(), fb = r.u8(), fo = r.u8();
  const fuzz::decoded_env e = fuzz::environment(r);
  const bool subtract = op & 1;
  fuzz::with_binary(r, fa, fb, fo, [&](auto a, auto b, auto O) {
    using FO = decltype(O);
    bf16emu::last_event tr;
    const auto got = subtract ? bf16emu::sub_to<FO>(a, b, e.core, tr) : bf16emu::add_to<FO>(a, b, e.core, tr);
    const auto oo = fuzz::oracle_format<FO>();
    const auto want = subtract ? oracle::sub(fuzz::ref(a), fuzz::ref(b), oo, e.ref)
                               : oracle::add(fuzz::ref(a), fuzz::ref(b), oo, e.ref);
    const auto err = oracle::exact_error(subtract ? oracle::op::sub : oracle::op::add, fuzz::ref(a),
                                         fuzz::ref(b), fuzz::ref(b), oo, got.value.bits, e.ref);
    fuzz::compare(std::string(subtract ? "sub " : "add ") + fuzz::describe(a) + ", " + fuzz::describe(b),
                  e.core, got, tr, want, err);
  });
  return 0;
}
