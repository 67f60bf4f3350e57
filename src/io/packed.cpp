// bf16emu io: fp4 codes packed two to a byte. See packed.hpp.
#include "io/packed.hpp"

#include <cstdint>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/names.hpp"

namespace bf16emu::io {

fp4_packing packing_for(bool packed, format_id a, format_id b) {
  if (!packed) return {};
  const fp4_packing p{a == format_id::e2m1, b == format_id::e2m1};
  if (!p.a && !p.b)
    throw input_error(std::string("--packed: two e2m1 (fp4) codes per byte, but A is ") + name(a) +
                      " and B is " + name(b) + "; give their values one per token");
  return p;
}

bool hex_byte(const std::string &tok, std::uint8_t &v) noexcept {
  const bool hex = tok.size() >= 3 && tok.size() <= 4 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X') &&
                   tok.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
  if (!hex) return false;
  unsigned r = 0;
  for (std::size_t i = 2; i < tok.size(); ++i) {
    const char c = tok[i];
    r = r * 16 + unsigned(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  v = static_cast<std::uint8_t>(r);
  return true;
}

int operand_tokens(int K, bool packed) noexcept { return packed ? (K + 1) / 2 : K; }

std::string operand_counts(int K, fp4_packing p) {
  auto one = [K](bool packed, const char *who) {
    if (!packed) return std::to_string(K) + " of " + who;
    return std::to_string(operand_tokens(K, true)) + " bytes of " + who + " (" + std::to_string(K) +
           " e2m1 codes, packed)";
  };
  return one(p.a, "A") + ", " + one(p.b, "B");
}

namespace {

// One packed byte, or input_error naming it.
std::uint8_t byte_of(const std::string &tok, int line, const char *who, int index) {
  std::uint8_t v = 0;
  if (!hex_byte(tok, v))
    throw input_error("line " + std::to_string(line) + ": packed byte " + std::to_string(index) + " of " +
                      who + " '" + shorten(tok) + "' is not a byte 0x00..0xff (two e2m1 codes, element " +
                      std::to_string(2 * index) + " in the low nibble)");
  return v;
}

std::string code(unsigned v) {
  static const char digits[] = "0123456789abcdef";
  return std::string("0x") + digits[v & 0xFu];
}

// Appends the K codes of `bytes` packed tokens starting at tok[at] to out.
void expand(const std::vector<std::string> &tok, std::size_t at, int K, int line, const char *who,
            std::vector<std::string> &out) {
  for (int i = 0; i < (K + 1) / 2; ++i) {
    const std::uint8_t v = byte_of(tok[at + std::size_t(i)], line, who, i);
    out.push_back(code(v));
    if (2 * i + 1 < K)
      out.push_back(code(v >> 4u));
    else if ((v >> 4u) != 0)
      throw input_error("line " + std::to_string(line) + ": packed byte " + std::to_string(i) + " of " + who +
                        " '" + shorten(tok[at + std::size_t(i)]) + "' holds element " +
                        std::to_string(2 * i) + " of an odd count (" + std::to_string(K) +
                        "); its high nibble pads and must be 0");
  }
}

} // namespace

void unpack_fp4(std::vector<std::string> &tok, int K, fp4_packing p, int line) {
  if (!p.a && !p.b) return;
  const std::size_t na = std::size_t(operand_tokens(K, p.a)), nb = std::size_t(operand_tokens(K, p.b));
  std::vector<std::string> out;
  out.reserve(tok.size() + std::size_t(K));
  if (p.a)
    expand(tok, 0, K, line, "A", out);
  else
    out.insert(out.end(), tok.begin(), tok.begin() + std::ptrdiff_t(na));
  if (p.b)
    expand(tok, na, K, line, "B", out);
  else
    out.insert(out.end(), tok.begin() + std::ptrdiff_t(na), tok.begin() + std::ptrdiff_t(na + nb));
  out.insert(out.end(), tok.begin() + std::ptrdiff_t(na + nb), tok.end());
  tok.swap(out);
}

} // namespace bf16emu::io
