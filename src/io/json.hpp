// bf16emu io: a small streaming JSON writer (no dependency): the one JSON writer of the
// project, so that every --json output quotes, escapes, indents and prints numbers the same way.
//
//   json_writer j(std::cout);
//   j.begin_object();
//   j.kv("bits", "0xC097").kv("exact", false).kv("count", 3);
//   j.key("flags").begin_array().value("inexact").end_array();
//   j.end_object();   // writes a final newline when the outermost value closes
//
// Numbers: integers as JSON numbers; doubles as the shortest round-trip decimal, and as
// null when not finite (JSON has no Inf/NaN). Values that must stay exact (bit patterns,
// exact decimals) are best written as strings.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace bf16emu::io {

class json_writer {
public:
  explicit json_writer(std::ostream &out, bool pretty = true) : out_(out), pretty_(pretty) {}

  json_writer &begin_object();
  json_writer &end_object();
  json_writer &begin_array();
  json_writer &end_array();
  json_writer &key(std::string_view k);

  json_writer &value(std::string_view s);
  json_writer &value(const char *s) { return value(std::string_view(s)); }
  json_writer &value(const std::string &s) { return value(std::string_view(s)); }
  json_writer &value(bool b);
  json_writer &value(std::int64_t v);
  json_writer &value(std::uint64_t v);
  json_writer &value(int v) { return value(std::int64_t(v)); }
  json_writer &value(unsigned v) { return value(std::uint64_t(v)); }
  json_writer &value(double v);
  json_writer &null();

  template <class T> json_writer &kv(std::string_view k, const T &v) {
    key(k);
    return value(v);
  }

  // JSON string literal for s, quotes included.
  static std::string quote(std::string_view s);

private:
  void before_value();
  void newline();
  std::ostream &out_;
  bool pretty_;
  struct level {
    bool array;
    bool empty;
  };
  std::vector<level> stack_;
  bool after_key_ = false;
};

} // namespace bf16emu::io
