#include "io/preset_lookup.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <bf16emu/tc/scaled.hpp>

#include "io/names.hpp"

namespace bf16emu::io {

std::string arch_names(const char *sep) {
  std::string canonical, generations;
  for (const tc::arch a : tc::all_archs) {
    canonical += std::string(canonical.empty() ? "" : " ") + tc::to_string(a);
    if (const char *g = tc::generation_name(a))
      generations += std::string(generations.empty() ? "" : " ") + g;
  }
  return canonical + sep + generations;
}

std::string in_column(const tc::preset &p) {
  return std::string(name(p.in)) + (p.b != p.in ? std::string("x") + name(p.b) : "");
}
std::string out_column(const tc::preset &p) {
  return std::string(name(p.out)) + (p.c != p.out ? std::string("<") + name(p.c) : "");
}

namespace {

// One changed option as `fe` writes it: "--instr mma" / "kind='mma'"; empty where `fe` has no
// such option (Python's gemm has no shape k, and its C is D's format).
std::string word(front_end fe, const char *cli, const std::string &value) {
  if (fe == front_end::cli) return std::string("--") + cli + " " + value;
  static constexpr std::pair<const char *, const char *> python[] = {{"instr", "kind"},
                                                                     {"out", "c_format"},
                                                                     {"kind", "kind"},
                                                                     {"scale-format", "scale_format"},
                                                                     {"arch", "arch"}};
  for (const auto &[c, py] : python)
    if (std::string_view(cli) == c) return std::string(py) + "='" + value + "'";
  return {};
}

// The options that work where `r` has no preset: the presets (plain and scaled kinds) of the
// same arch whose A and B formats are r's, each written as the options that differ from r; where
// the arch has none, the archs with exactly r's instruction and formats. Fewest changes first.
std::vector<std::string> working_options(const preset_request &r, front_end fe) {
  std::vector<std::vector<std::string>> opts;
  auto add = [&](const std::vector<std::string> &o) {
    if (o.empty() || std::find(o.begin(), o.end(), std::string()) != o.end()) return; // fe lacks one
    if (std::find(opts.begin(), opts.end(), o) == opts.end()) opts.push_back(o);
  };
  for (const tc::preset &p : tc::presets) {
    if (p.arch != r.arch || p.in != r.a || p.b != r.b) continue;
    std::vector<std::string> o;
    if (p.kind != r.instr) o.push_back(word(fe, "instr", tc::to_string(p.kind)));
    if (p.out != r.out) o.push_back(word(fe, "out", name(p.out)));
    if (p.c != (r.c_given ? r.c : p.out)) o.push_back(word(fe, "c-format", name(p.c)));
    const bool first = tc::find_preset(p.arch, p.kind, p.in, p.b, p.c, p.out) == &p;
    if (r.shape_k != 0 ? p.k != r.shape_k : !first) o.push_back(word(fe, "shape-k", std::to_string(p.k)));
    add(o);
  }
  for (const tc::scaled_preset &P : tc::scaled_presets) {
    if (P.arch != r.arch || !tc::takes_formats(P, r.a, r.b)) continue;
    std::vector<std::string> o{word(fe, "kind", P.kind)};
    if (P.instr != r.instr) o.push_back(word(fe, "instr", tc::to_string(P.instr)));
    if (P.out != r.out) o.push_back(word(fe, "out", name(P.out)));
    const tc::scale_kind by_default = std::string(P.kind) == "f8f6f4"     ? tc::scale_kind::none
                                      : std::string(P.kind) == "mxf4nvf4" ? tc::scale_kind::ue4m3
                                                                          : tc::scale_kind::ue8m0;
    if (P.params.scale != by_default) o.push_back(word(fe, "scale-format", tc::to_string(P.params.scale)));
    if (P.params.scale != tc::scale_kind::none && !o.empty())
      o.back() += fe == front_end::cli ? " (scale factors on each line)" : " (with scale_a, scale_b)";
    add(o);
  }
  if (opts.empty())
    for (const tc::preset &p : tc::presets)
      if (p.kind == r.instr && p.in == r.a && p.b == r.b && p.out == r.out && p.c == r.c)
        add({word(fe, "arch", tc::to_string(p.arch))});
  std::stable_sort(opts.begin(), opts.end(),
                   [](const auto &x, const auto &y) { return x.size() < y.size(); });
  std::vector<std::string> text;
  for (const auto &o : opts) {
    std::string t;
    for (const std::string &w : o)
      t += (t.empty() ? "" : fe == front_end::cli ? " " : ", ") + w;
    text.push_back(t);
  }
  return text;
}

} // namespace

std::string no_preset_message(const preset_request &r, front_end fe) {
  std::string have;
  for (const tc::preset &p : tc::presets)
    if (p.arch == r.arch) {
      have += std::string(" ") + tc::to_string(p.kind) + ":" + in_column(p) + "->" + out_column(p);
      if (tc::find_preset(p.arch, p.kind, p.in, p.b, p.c, p.out) != &p)
        have += "(k" + std::to_string(p.k) + ")";
    }
  const std::string b_part = r.b != r.a ? std::string(" x ") + name(r.b) : "";
  const std::string c_part = r.c != r.out ? std::string(" (C ") + name(r.c) + ")" : "";
  const std::string k_part = r.shape_k > 0 ? " k" + std::to_string(r.shape_k) : "";
  std::string hint;
  for (const std::string &o : working_options(r, fe))
    hint += (hint.empty() ? "; these work instead: " : fe == front_end::cli ? ", " : "; ") + o;
  if (!hint.empty()) hint += " (docs/tensor-cores.md)";
  return std::string("no preset for ") + tc::to_string(r.arch) + " " + tc::to_string(r.instr) + " " +
         name(r.a) + b_part + " -> " + name(r.out) + c_part + k_part +
         " (the sources leave it open or the GPU lacks it)" + hint + "; " + tc::to_string(r.arch) +
         " has:" + have;
}

} // namespace bf16emu::io
