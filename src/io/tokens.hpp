// bf16emu io: splitting a line of the tensor-core vector format into tokens.
// Separators are blanks, tabs, commas and a stray carriage return; a line whose first
// non-blank character is '#' is a comment (`bf16emu mma`, the CUDA probe runner).
#pragma once

#include <string>
#include <vector>

namespace bf16emu::io {

inline std::vector<std::string> split_tokens(const std::string &line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == ' ' || ch == '\t' || ch == ',' || ch == '\r') {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

} // namespace bf16emu::io
