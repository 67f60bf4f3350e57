// bf16emu io: extra sections of `bf16emu paper`, registered from other files so that
// the paper command (src/cmd_paper.cpp) need not change when an area adds its summary.
//
// In your .cpp (e.g. src/cmd_attention.cpp):
//   #include "io/paper_sections.hpp"
//   static void ledger_text(std::ostream &out) { out << "..."; }
//   static void ledger_json(bf16emu::io::json_writer &w) { w.begin_object(); ...; w.end_object(); }
//   BF16EMU_PAPER_SECTION(10, "attention_ledger", "Attention error ledger", ledger_text, ledger_json);
// `paper` prints each section after the worked example, in `order`, under its title; with
// --json, the json function writes exactly one JSON value under the key.
#pragma once

#include <ostream>
#include <vector>

#include "io/json.hpp"

namespace bf16emu::io {

struct paper_section {
  int order;
  const char *key;   // JSON key, e.g. "attention_ledger"
  const char *title; // text heading
  void (*text)(std::ostream &);
  void (*json)(json_writer &);
};

std::vector<paper_section> &paper_sections();

struct paper_section_registrar {
  explicit paper_section_registrar(const paper_section &s) { paper_sections().push_back(s); }
};

} // namespace bf16emu::io

#define BF16EMU_PAPER_CAT2(a, b) a##b
#define BF16EMU_PAPER_CAT(a, b) BF16EMU_PAPER_CAT2(a, b)
#define BF16EMU_PAPER_SECTION(order, key, title, text_fn, json_fn)                                           \
  static ::bf16emu::io::paper_section_registrar BF16EMU_PAPER_CAT(bf16emu_paper_sec_, __LINE__)(             \
      ::bf16emu::io::paper_section{order, key, title, text_fn, json_fn})
