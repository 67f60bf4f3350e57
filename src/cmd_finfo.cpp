// bf16emu CLI: `bf16emu finfo FORMAT...`: the facts of formats (compile-time or named at run
// time: io/names.hpp's grammar), as text or JSON. The facts come from the core's description of
// each format (io/finfo.cpp).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "io/error.hpp"
#include "io/finfo.hpp"
#include "io/json.hpp"
#include "io/names.hpp"

namespace bf16emu::cli {

namespace {

struct finfo_cli {
  std::vector<std::string> formats;
  bool json = false;
};

void run(const finfo_cli &o) {
  io::rethrow_as<bad_input>([&] {
    std::vector<io::format_facts> all;
    for (const auto &t : o.formats)
      all.push_back(io::facts(io::parse_format_spec(t)));
    if (o.json) {
      io::json_writer w(std::cout);
      w.begin_array();
      for (const auto &f : all)
        io::write_facts_json(w, f);
      w.end_array();
      std::cout << "\n";
    } else {
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (i) std::cout << "\n";
        io::print_facts(std::cout, all[i]);
      }
    }
  });
}

void register_finfo(CLI::App &app) {
  auto o = std::make_shared<finfo_cli>();
  CLI::App *sub =
      app.add_subcommand("finfo", "facts of formats: bits, bias, emin/emax, max, min, NaN/Inf encodings");
  sub->add_option("formats", o->formats,
                  "format names (" + io::format_names() + "; " + io::runtime_format_names() + ")")
      ->required()
      ->expected(-1);
  sub->add_flag("--json", o->json, "machine-readable output (a JSON array, one object per format)");
  sub->footer("Formats by name or by fields (docs/formats.md):\n"
              "  bf16emu finfo bf16 e4m3fnuz p3109:p4 e8m0\n"
              "  bf16emu finfo fp:e=5,m=4,bias=15,enc=ieee\n"
              "  bf16emu finfo fp:e=4,m=3,bias=8,enc=fnuz --json");
  sub->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(12, register_finfo);

} // namespace bf16emu::cli
