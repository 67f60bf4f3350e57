// bf16emu io: the one field list of an attention run's results. See attention_fields.hpp.
#include "io/attention_fields.hpp"

namespace bf16emu::io {

void visit_counts(field_visitor &v, const at::sign_counts &c) {
  v.u64("count", c.count);
  v.u64("positive", c.pos);
  v.u64("negative", c.neg);
  v.u64("zero", c.zero);
  v.u64("ties", c.ties);
  v.u64("away_from_zero", c.away);
  v.u64("toward_zero", c.toward);
  v.real("sum", c.sum.value());
  v.real("mean", c.mean());
  v.real("sum_abs", c.sum_abs.value());
  v.real("sum_rel", c.sum_rel.value());
}

void visit_summary(field_visitor &v, const at::error_summary &e) {
  v.u64("n", e.n);
  v.u64("nonfinite", e.nonfinite);
  v.i64("first_nonfinite", std::int64_t(e.first_nonfinite));
  // z and z_rows test "is the mean error of this input nonzero" (the text output's "z (one
  // input)"); z_heads is over independent heads, the statistic of a bias ("z (heads)").
  v.real("mean_signed", e.mean_signed);
  v.real("stderr_signed", e.stderr_signed);
  v.real("z", e.z());
  v.text("z_scope", "one input");
  v.real("stderr_rows", e.stderr_rows);
  v.real("z_rows", e.z_rows());
  v.text("z_rows_scope", "one input");
  v.real("stderr_heads", e.stderr_heads);
  v.real("z_heads", e.z_heads());
  v.text("z_heads_scope", "heads");
  v.real("mean_abs", e.mean_abs);
  v.real("max_abs", e.max_abs);
  v.real("rel_fro", e.rel_fro);
  v.u64("positive", e.positive);
  v.u64("negative", e.negative);
  v.u64("zero", e.zero);
  v.begin("ulp_hist");
  for (const auto &[k, n] : e.ulp_hist)
    v.entry(k, n);
  v.end();
}

void visit_ledger(field_visitor &v, const at::ledger &led) {
  v.begin("sites");
  for (int i = 0; i < at::site_count; ++i) {
    const at::site_stats &st = led.sites[i];
    if (st.all.count == 0) continue;
    v.begin(at::to_string(at::site(i)));
    visit_counts(v, st.all);
    v.begin("p_equals_one");
    visit_counts(v, st.p_one);
    v.end();
    v.end();
  }
  v.end();
  v.begin("p_equals_one");
  v.u64("entries", led.p_entries);
  v.u64("ones", led.p_one_entries);
  v.u64("row_blocks_with_one", led.rows_with_p_one);
  v.u64("row_blocks_tied", led.rows_tied);
  v.begin("sites");
  for (int i = 0; i < at::site_count; ++i) {
    const at::site_stats &st = led.sites[i];
    if (st.p_one.count == 0) continue;
    v.begin(at::to_string(at::site(i)));
    visit_counts(v, st.p_one);
    v.end();
  }
  v.end();
  v.end();
}

} // namespace bf16emu::io
