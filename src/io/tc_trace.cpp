// bf16emu io: tensor-core values and block traces. See tc_trace.hpp.
#include "io/tc_trace.hpp"

#include <cstdio>

#include "io/names.hpp"

namespace bf16emu::io {

std::string mma_hex(format_id f, std::uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", (describe(f).width + 3) / 4,
                static_cast<unsigned long long>(bits));
  return buf;
}

std::string hexfloat(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

void write_block_members(json_writer &w, const tc::block_trace &t, format_id acc) {
  w.kv("block", t.block).kv("k0", t.k0).kv("special", t.special);
  w.kv("c", mma_hex(acc, t.c_bits)).kv("d", mma_hex(acc, t.d_bits));
  if (t.special) return;
  w.kv("max_exp", t.max_exp).kv("lsb_exp", t.lsb_exp).kv("aligned_sum", std::int64_t(t.aligned_sum));
  w.kv("sum_value", hexfloat(t.sum_value)).kv("trunc_err", hexfloat(t.trunc_err));
  w.key("terms").begin_array();
  for (int i = 0; i <= t.n_products; ++i) {
    const tc::term_trace &tt = t.terms[i];
    w.begin_object();
    if (i < t.n_products)
      w.kv("k", t.k0 + i);
    else
      w.kv("term", "c");
    w.kv("zero", tt.zero).kv("exp", tt.exp).kv("shift", tt.shift).kv("lost", hexfloat(tt.lost));
    w.end_object();
  }
  w.end_array();
}

} // namespace bf16emu::io
