// bf16emu CUDA twin: line-format reader (see lines.hpp).
#include "lines.hpp"

#include <istream>
#include <vector>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/number.hpp"
#include "io/tokens.hpp"

namespace bf16emu::gpu {
namespace {

bool skip(const std::string &line) {
  const auto p = line.find_first_not_of(" \t\r");
  return p == std::string::npos || line[p] == '#';
}

bool value(const std::string &tok, format_id f, std::uint64_t &bits, std::string &why) {
  try {
    const io::operand op = io::parse_operand(tok, f);
    if (!op.exact || op.overflow) {
      // Built in place: GCC 12 at -O3 reports a false -Wrestrict for "'" + std::string + "...".
      why = io::shorten(tok);
      why.insert(why.begin(), '\'');
      why += "' is not exact in its format";
      return false;
    }
    bits = std::uint64_t(op.bits);
    return true;
  } catch (const io::input_error &e) {
    why = e.what();
    return false;
  }
}

// The next line (at most io::max_mma_line characters, CRLF read as LF), numbered; false at the end
// of input, and false with "line N: ..." in err for a longer line or a read error.
bool next_line(std::istream &is, std::string &line, long &number, std::string &err) {
  try {
    if (!io::read_line(is, line, io::max_mma_line, "vector file", std::uint64_t(number) + 1)) return false;
  } catch (const io::input_error &e) {
    err = e.what();
    return false;
  }
  ++number;
  return true;
}

} // namespace

bool read_lines(std::istream &is, vec_set &v, std::string &err) {
  err.clear();
  std::string line, why;
  long number = 0;
  const std::size_t K = std::size_t(v.k), S = std::size_t(v.scales()); // S: scale factors of A, of B
  while (next_line(is, line, number, err)) {
    if (skip(line)) continue;
    const auto tok = io::split_tokens(line);
    if (tok.size() != 2 * K + 2 * S + 1) {
      err = "line " + std::to_string(number) + ": " + std::to_string(tok.size()) + " values, expected " +
            std::to_string(2 * K + 2 * S + 1) + " (K = " + std::to_string(K) +
            (S ? ", " + std::to_string(S) + " scale factors of A and of B" : std::string()) + ")";
      return false;
    }
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < 2 * K; ++i) {
      if (!value(tok[i], i < K ? v.in : v.b_format(), bits, why)) {
        err = "line " + std::to_string(number) + ": " + why;
        return false;
      }
      (i < K ? v.a : v.b).push_back(bits);
    }
    for (std::size_t i = 2 * K; i < 2 * K + 2 * S; ++i) {
      std::uint8_t sc = 0;
      if (!parse_scale(tok[i], sc)) {
        err = "line " + std::to_string(number) + ": scale factor '" + io::shorten(tok[i]) + "' is not a " +
              tc::to_string(v.scale) + " bit pattern (0x00..0xff)";
        return false;
      }
      (i < 2 * K + S ? v.sa : v.sb).push_back(sc);
    }
    if (!value(tok[2 * K + 2 * S], v.c_format(), bits, why)) {
      err = "line " + std::to_string(number) + ": " + why;
      return false;
    }
    v.c.push_back(bits);
    v.notes.emplace_back();
  }
  return err.empty();
}

bool read_outputs(std::istream &is, format_id f, std::vector<std::uint64_t> &d, std::string &err) {
  err.clear();
  std::string line, why;
  long number = 0;
  while (next_line(is, line, number, err)) {
    if (skip(line)) continue;
    const auto tok = io::split_tokens(line);
    std::uint64_t bits = 0;
    if (tok.size() != 1 || !value(tok[0], f, bits, why)) {
      err =
          "line " + std::to_string(number) + ": expected one output value" + (why.empty() ? "" : ": " + why);
      return false;
    }
    d.push_back(bits);
  }
  return err.empty();
}

bool read_outputs(std::istream &is, format_id f, std::vector<std::uint32_t> &d, std::string &err) {
  std::vector<std::uint64_t> wide;
  const bool ok = read_outputs(is, f, wide, err);
  d.insert(d.end(), wide.begin(), wide.end());
  return ok;
}

} // namespace bf16emu::gpu
