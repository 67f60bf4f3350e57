// bf16emu io: JSON writer. See json.hpp.
#include "io/json.hpp"

#include <cmath>

#include "io/decimal.hpp"

namespace bf16emu::io {

std::string json_writer::quote(std::string_view s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"': r += "\\\""; break;
    case '\\': r += "\\\\"; break;
    case '\n': r += "\\n"; break;
    case '\r': r += "\\r"; break;
    case '\t': r += "\\t"; break;
    default:
      if (c < 0x20) {
        static const char hex[] = "0123456789abcdef";
        r += "\\u00";
        r += hex[c >> 4];
        r += hex[c & 15];
      } else {
        r += char(c);
      }
    }
  }
  return r + "\"";
}

void json_writer::newline() {
  if (!pretty_) return;
  out_ << '\n';
  for (std::size_t i = 0; i < stack_.size(); ++i)
    out_ << "  ";
}

void json_writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (!stack_.back().empty) out_ << ',';
    stack_.back().empty = false;
    newline();
  }
}

json_writer &json_writer::key(std::string_view k) {
  before_value();
  out_ << quote(k) << (pretty_ ? ": " : ":");
  after_key_ = true;
  return *this;
}

json_writer &json_writer::begin_object() {
  before_value();
  out_ << '{';
  stack_.push_back({false, true});
  return *this;
}

json_writer &json_writer::begin_array() {
  before_value();
  out_ << '[';
  stack_.push_back({true, true});
  return *this;
}

json_writer &json_writer::end_object() {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_ << '}';
  if (stack_.empty()) out_ << '\n';
  return *this;
}

json_writer &json_writer::end_array() {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_ << ']';
  if (stack_.empty()) out_ << '\n';
  return *this;
}

json_writer &json_writer::value(std::string_view s) {
  before_value();
  out_ << quote(s);
  return *this;
}

json_writer &json_writer::value(bool b) {
  before_value();
  out_ << (b ? "true" : "false");
  return *this;
}

json_writer &json_writer::value(std::int64_t v) {
  before_value();
  out_ << v;
  return *this;
}

json_writer &json_writer::value(std::uint64_t v) {
  before_value();
  out_ << v;
  return *this;
}

json_writer &json_writer::value(double v) {
  if (!std::isfinite(v)) return null();
  before_value();
  out_ << shortest_decimal(v);
  return *this;
}

json_writer &json_writer::null() {
  before_value();
  out_ << "null";
  return *this;
}

} // namespace bf16emu::io
