// bf16emu io: PTX instruction strings -> preset fields. See ptx.hpp.
#include "io/ptx.hpp"

#include <cstddef>
#include <ostream>
#include <vector>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/names.hpp"

namespace bf16emu::io {

namespace {

// The PTX type names of the formats the presets take.
constexpr const char *ptx_types[] = {"f16",  "bf16", "tf32", "f32",  "f64",
                                     "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"};
constexpr const char *type_list = "f16, bf16, tf32, f32, f64, e4m3, e5m2, e3m2, e2m3, e2m1";

bool is_mx(std::string_view kind) { return kind == "mxf8f6f4" || kind == "mxf4" || kind == "mxf4nvf4"; }

// The dense K of a tcgen05 kind (PTX ISA, tcgen05.mma: the K dimension per kind).
int tcgen05_k(std::string_view kind) {
  if (kind == "f16") return 16;
  if (kind == "tf32") return 8;
  if (kind == "mxf4" || kind == "mxf4nvf4") return 64;
  return 32; // f8f6f4, mxf8f6f4
}

// The qualifiers of one string, read left to right.
struct cursor {
  std::string_view text;
  std::vector<std::string_view> tok;
  std::size_t i = 0;

  bool done() const { return i >= tok.size(); }
  std::string_view peek() const { return done() ? std::string_view{} : tok[i]; }

  [[noreturn]] void fail_at(std::string_view token, const std::string &why) const {
    throw input_error("'" + shorten(std::string(text)) + "': '" + shorten(std::string(token)) + "' " + why);
  }
  // At the current token; at the end of the string, "ends after 'X': " + what was wanted.
  [[noreturn]] void fail(const std::string &why) const {
    if (!done()) fail_at(peek(), why);
    throw input_error("'" + shorten(std::string(text)) + "': ends after '" +
                      shorten(std::string(tok.empty() ? std::string_view{} : tok.back())) + "'; expected " +
                      why);
  }
  std::string_view next(const std::string &wanted) {
    if (done()) fail(wanted);
    return tok[i++];
  }
  void expect(std::string_view word, const std::string &why) {
    if (peek() != word) fail(why);
    ++i;
  }
  bool accept(std::string_view word) {
    if (done() || tok[i] != word) return false;
    ++i;
    return true;
  }
  // The type of operand `who` ("A", "D", ...).
  format_id type(const char *who) {
    const std::string_view t = next(std::string("the type of ") + who + " (" + type_list + ")");
    for (const char *name : ptx_types)
      if (t == name) return parse_format(t);
    fail_at(t, std::string("is not a type the presets cover for ") + who + " (" + type_list + ")");
  }
  void finish() {
    if (!done()) fail("follows a complete instruction");
  }
};

// "m16n8k32" -> m, n, k; false for anything else.
bool parse_shape(std::string_view s, int &m, int &n, int &k) {
  int *dst[3] = {&m, &n, &k};
  const char letters[3] = {'m', 'n', 'k'};
  std::size_t i = 0;
  for (int f = 0; f < 3; ++f) {
    if (i >= s.size() || s[i] != letters[f]) return false;
    ++i;
    const std::size_t start = i;
    int v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 4)
      v = v * 10 + (s[i++] - '0');
    if (i == start || (i < s.size() && s[i] >= '0' && s[i] <= '9')) return false;
    *dst[f] = v;
  }
  return i == s.size();
}

// ".scale_vec::NX" (k / N elements per scale), ".block16", ".block32"; 0 when none follows.
int scale_vec(cursor &c, int k) {
  const std::string_view t = c.peek();
  int n = 0;
  if (t == "scale_vec::1X") n = 1;
  if (t == "scale_vec::2X") n = 2;
  if (t == "scale_vec::4X") n = 4;
  if (n != 0) return ++c.i, k / n;
  if (t == "block16" || t == "block32") return ++c.i, t == "block16" ? 16 : 32;
  if (t.substr(0, 11) == "scale_vec::") c.fail("is not a scale vector size (scale_vec::1X, ::2X, ::4X)");
  return 0;
}

void parse_kind(cursor &c, ptx_mma &p, bool tcgen05) {
  const std::string_view t = c.peek();
  if (t.substr(0, 6) != "kind::") return;
  const std::string_view kind = t.substr(6);
  const bool known = tcgen05 ? kind == "f16" || kind == "tf32" || kind == "f8f6f4" || is_mx(kind)
                             : kind == "f8f6f4" || is_mx(kind);
  if (!known)
    c.fail(tcgen05 ? "is not a kind the presets cover (kind::f16, kind::tf32, kind::f8f6f4, kind::mxf8f6f4, "
                     "kind::mxf4, kind::mxf4nvf4)"
                   : "is not an mma.sync kind the presets cover (kind::f8f6f4, kind::mxf8f6f4, kind::mxf4, "
                     "kind::mxf4nvf4)");
  ++c.i;
  p.kind = std::string(kind);
  if (is_mx(kind)) {
    c.expect("block_scale", "kind::" + p.kind + " needs .block_scale");
    p.block_scale = true;
    p.scale_vec = scale_vec(c, tcgen05 ? tcgen05_k(kind) : p.k);
  } else if (c.peek() == "block_scale") {
    c.fail("needs kind::mxf8f6f4, kind::mxf4 or kind::mxf4nvf4");
  }
}

void parse_mma_sync(cursor &c, ptx_mma &p) {
  c.expect("sync", "after 'mma': the presets model mma.sync.aligned");
  c.expect("aligned", "after 'mma.sync': PTX requires .aligned");
  const std::string_view shape = c.next("a shape (m16n8k16, ...)");
  const bool covered =
      parse_shape(shape, p.m, p.n, p.k) &&
      ((p.m == 8 && p.n == 8 && p.k == 4) ||
       (p.m == 16 && p.n == 8 && (p.k == 4 || p.k == 8 || p.k == 16 || p.k == 32 || p.k == 64)));
  if (!covered)
    c.fail_at(shape,
              "is not an mma.sync shape the presets cover (m8n8k4, m16n8k4, m16n8k8, m16n8k16, m16n8k32, "
              "m16n8k64)");
  const std::size_t layout_at = c.i;
  for (const char *who : {"A", "B"}) {
    const std::string_view l = c.next(std::string("the layout of ") + who + " (row, col)");
    if (l != "row" && l != "col") c.fail_at(l, std::string("is not a layout of ") + who + " (row, col)");
  }
  parse_kind(c, p, false);
  p.d = c.type("D");
  p.a = c.type("A");
  p.b = c.type("B");
  p.c = c.type("C");
  if (p.block_scale) {
    const std::string_view s = c.next("the scale type (ue8m0, ue4m3)");
    if (s != "ue8m0" && s != "ue4m3") c.fail_at(s, "is not a scale type (ue8m0, ue4m3)");
    p.scale_format = std::string(s);
  }
  c.finish();
  const bool any_layout = p.m == 8 && p.k == 4 && *p.a == format_id::fp16;
  if (!any_layout && (c.tok[layout_at] != "row" || c.tok[layout_at + 1] != "col"))
    c.fail_at(std::string(c.tok[layout_at]) + "." + std::string(c.tok[layout_at + 1]),
              "is not a layout of this shape: mma.sync m" + std::to_string(p.m) + "n" + std::to_string(p.n) +
                  "k" + std::to_string(p.k) + " takes .row.col");
}

void parse_wgmma(cursor &c, ptx_mma &p) {
  if (c.peek() == "mma_async" && c.i + 1 < c.tok.size() && c.tok[c.i + 1] == "sp")
    c.fail_at("sp", "(sparse wgmma) is not modelled");
  c.expect("mma_async", "after 'wgmma': the presets model wgmma.mma_async.sync.aligned");
  c.expect("sync", "after 'wgmma.mma_async': PTX requires .sync.aligned");
  c.expect("aligned", "after 'wgmma.mma_async.sync': PTX requires .aligned");
  const std::string_view shape = c.next("a shape (m64nNk16, ...)");
  if (!parse_shape(shape, p.m, p.n, p.k) || p.m != 64 || p.n < 8 || p.n > 256 || p.n % 8 != 0 ||
      (p.k != 8 && p.k != 16 && p.k != 32))
    c.fail_at(shape,
              "is not a wgmma shape the presets cover (m64nNk8, m64nNk16, m64nNk32; N = 8, 16, ..., 256)");
  p.d = c.type("D");
  p.a = c.type("A");
  p.b = c.type("B");
  p.c = p.d; // wgmma accumulates into D
  c.finish();
}

void parse_tcgen05(cursor &c, ptx_mma &p) {
  c.expect("mma", "after 'tcgen05': the presets model tcgen05.mma");
  if (c.peek() == "ws") c.fail("(weight-stationary tcgen05.mma.ws) is not modelled");
  if (c.peek() == "sp") c.fail("(sparse tcgen05.mma.sp) is not modelled");
  if (c.peek() == "cta_group::2")
    c.fail("is not modelled: the presets are cta_group::1 (a CTA pair may sum otherwise; no source says)");
  c.expect("cta_group::1", "after 'tcgen05.mma': cta_group::1");
  if (c.peek().substr(0, 6) != "kind::") c.fail("kind::f16, kind::tf32, kind::f8f6f4, kind::mxf8f6f4, ...");
  parse_kind(c, p, true);
  const std::string_view t = c.peek();
  if (t == "collector::a::fill" || t == "collector::a::use" || t == "collector::a::lastuse" ||
      t == "collector::a::discard")
    ++c.i; // where A is buffered: no effect on the sum
  c.finish();
  p.k = tcgen05_k(p.kind);
  if (p.kind == "tf32") p.a = p.b = format_id::tf32;
  if (p.kind == "mxf4" || p.kind == "mxf4nvf4") p.a = p.b = format_id::e2m1;
  if (p.kind == "tf32" || is_mx(p.kind)) p.c = p.d = format_id::fp32;
}

// Sets `given` to `value` when empty; otherwise they must agree (same()).
template <class Same>
void put(std::string_view text, const char *option, std::string &given, const std::string &value, Same same) {
  if (given.empty()) {
    given = value;
    return;
  }
  if (!same())
    throw input_error("--ptx '" + shorten(std::string(text)) + "' means " + option + " " + value + ", but " +
                      option + " " + shorten(given) + " was given");
}

void put_format(std::string_view text, const char *option, std::string &given,
                const std::optional<format_id> &f) {
  if (f) put(text, option, given, name(*f), [&] { return parse_format(given) == *f; });
}

void put_count(std::string_view text, const char *option, unsigned &given, int value) {
  if (value == 0) return;
  if (given == 0) given = unsigned(value);
  if (given != unsigned(value))
    throw input_error("--ptx '" + shorten(std::string(text)) + "' means " + option + " " +
                      std::to_string(value) + ", but " + option + " " + std::to_string(given) + " was given");
}

} // namespace

ptx_mma parse_ptx(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == ';'))
    text.remove_suffix(1);
  cursor c{text, {}};
  if (text.empty())
    throw input_error("an empty PTX string (mma.sync..., wgmma.mma_async..., tcgen05.mma...)");
  if (text.find_first_of(" \t,") != std::string_view::npos)
    c.fail_at(text.substr(text.find_first_of(" \t,")), "follows the instruction: give it without operands");
  for (std::size_t start = 0;;) {
    const std::size_t dot = text.find('.', start);
    c.tok.push_back(text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (c.tok.back().empty()) c.fail_at(text, "has an empty qualifier ('..' or a '.' at an end)");
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  ptx_mma p;
  const std::string_view head = c.next("an instruction");
  if (head == "mma") {
    p.instr = tc::instr_kind::mma;
    parse_mma_sync(c, p);
  } else if (head == "wgmma") {
    p.instr = tc::instr_kind::wgmma;
    parse_wgmma(c, p);
  } else if (head == "tcgen05") {
    p.instr = tc::instr_kind::tcgen05;
    parse_tcgen05(c, p);
  } else {
    c.fail_at(head,
              "is not a tensor-core instruction the presets cover (mma.sync, wgmma.mma_async, tcgen05.mma)");
  }
  return p;
}

void apply_ptx(const ptx_mma &p, std::string_view text, mma_selection &s) {
  const std::string instr = tc::to_string(p.instr);
  put(text, "--instr", s.instr, instr, [&] {
    tc::instr_kind k{};
    return tc::parse_instr(s.instr, k) && k == p.instr;
  });
  // The kinds that run through --kind (tc/scaled.hpp); mma.sync kind::f8f6f4 and tcgen05
  // kind::f16 / kind::tf32 are rows of the plain preset table.
  const bool scaled_kind = is_mx(p.kind) || (p.kind == "f8f6f4" && p.instr == tc::instr_kind::tcgen05);
  const bool plain_f8f6f4 = p.kind == "f8f6f4" && !scaled_kind;
  if (scaled_kind)
    put(text, "--kind", s.kind, p.kind, [&] { return s.kind == p.kind; });
  else if (!s.kind.empty() && !(plain_f8f6f4 && s.kind == p.kind))
    throw input_error(
        "--ptx '" + shorten(std::string(text)) + "' is " +
        (p.kind.empty() ? std::string("no --kind instruction") : "kind::" + p.kind + ", a plain preset") +
        ", but --kind " + shorten(s.kind) + " was given");
  if (!p.scale_format.empty())
    put(text, "--scale-format", s.scale_format, p.scale_format,
        [&] { return s.scale_format == p.scale_format; });
  put_count(text, "--scale-vec", s.scale_vec, p.scale_vec);
  if (!scaled_kind) put_count(text, "--shape-k", s.shape_k, p.k);
  put_format(text, "--a-format", s.a_format, p.a);
  put_format(text, "--b-format", s.b_format, p.b);
  put_format(text, "--c-format", s.c_format, p.c);
  put_format(text, "--out", s.out, p.d);
  if (s.a_format.empty())
    throw input_error(
        "--ptx '" + shorten(std::string(text)) +
        "': a tcgen05 string carries no operand types (the instruction descriptor holds them): give "
        "--a-format (" +
        (p.kind == "f16" ? "fp16 or bf16" : "e4m3, e5m2, e3m2, e2m3 or e2m1") +
        "), and --b-format and --out where they differ from A's and fp32");
}

const tc::preset *same_shape(const tc::preset *p, const ptx_mma &x) noexcept {
  if (p == nullptr || x.m == 0) return p;
  for (const tc::preset &q : tc::presets)
    if (q.arch == p->arch && q.kind == p->kind && q.in == p->in && q.b == p->b && q.c == p->c &&
        q.out == p->out && q.k == p->k && q.m == x.m && (x.instr == tc::instr_kind::wgmma || q.n == x.n))
      return &q;
  return p;
}

void write_ptx_mapping(std::ostream &out, bool json, std::string_view text, const char *arch,
                       const std::string &summary, const std::function<void(json_writer &)> &members) {
  if (!json) {
    out << "# ptx " << text << " on " << arch << " -> " << summary << '\n';
  } else {
    json_writer w(out, false);
    w.begin_object().kv("ptx", std::string(text)).kv("arch", arch);
    w.key("preset").begin_object();
    members(w);
    w.end_object().end_object();
  }
  out.flush();
}

} // namespace bf16emu::io
