// bf16emu io: the one field list of an attention run's results. The error summaries
// (output_error, delta_error, grad_error's dq/dk/dv) and the ledger (sites, p_equals_one) are
// visited field by field, with their names; the JSON writer (io/attention.cpp) and the Python
// module's dicts (python/src/attention.cpp) both walk this list, so the two carry the same keys
// and values (tests/python/test_cli.py checks it).
#pragma once

#include <cstdint>
#include <string_view>

#include <bf16emu/attention.hpp>

namespace bf16emu::io {

namespace at = bf16emu::attention;

// What a front end does with each field. begin/end bracket a nested object named `name`.
class field_visitor {
public:
  virtual ~field_visitor() = default;
  virtual void begin(std::string_view name) = 0;
  virtual void end() = 0;
  virtual void u64(std::string_view name, std::uint64_t v) = 0;
  virtual void i64(std::string_view name, std::int64_t v) = 0;
  virtual void real(std::string_view name, double v) = 0; // non-finite: JSON null, Python nan/inf
  virtual void text(std::string_view name, std::string_view v) = 0;
  // One entry of an integer-keyed histogram (ulp_hist): JSON writes the key as a string,
  // Python keeps it an int.
  virtual void entry(int key, std::uint64_t v) = 0;
};

// The counts of one site (count, positive, ..., sum_rel), inside the caller's object.
void visit_counts(field_visitor &v, const at::sign_counts &c);
// An error summary (n, nonfinite, ..., ulp_hist), inside the caller's object.
void visit_summary(field_visitor &v, const at::error_summary &e);
// The ledger: "sites" (each site with events: its counts and "p_equals_one", the counts of the
// events that involved P-bar = 1) and "p_equals_one" (entries, ones, row_blocks_with_one,
// row_blocks_tied, and "sites": the P-bar = 1 counts of the sites that have any).
void visit_ledger(field_visitor &v, const at::ledger &led);

} // namespace bf16emu::io
