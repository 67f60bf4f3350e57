// bf16emu io: the one plotting helper. Every PNG that bf16emu draws is a CSV (the data, kept
// beside the picture) plus a gnuplot script rendered here, so the figure can be redrawn or
// restyled without bf16emu.
//
// No shell is involved: gnuplot is started with posix_spawnp and an argument vector of its
// name alone, and reads the script on its standard input. Paths and titles enter the script
// only through gnuplot_quote (single-quoted, where gnuplot does no backquote substitution and
// no escapes; control characters are refused). The PNG is drawn under a temporary name in its
// folder and renamed into place when gnuplot succeeded.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bf16emu::io {

// The files of one figure, derived from the user's --plot NAME: NAME ending in .png, or NAME
// with no extension (".png" is added); the data beside it as NAME.csv, the script as NAME.gp.
struct plot_paths {
  std::string png, csv, script;
};

// Refuses, as input_error naming `option`: an empty name, another extension (--plot t.csv would
// draw over its own data), a directory, a folder that does not exist, an existing .png that is
// not a PNG, an existing .csv or .gp that is not text. csv_override: the data file when the
// command was given one (attention --trace-csv). A derived name that is also an input or
// another output is check_distinct_files' to refuse.
plot_paths plot_paths_for(const std::string &name, const char *option, const std::string &csv_override = {});

// 'text' for a gnuplot script, with ' written as ''; throws input_error on a control character.
std::string gnuplot_quote(const std::string &text);
// A file name for a gnuplot script: quoted as above, and a relative name starts with "./", so
// that gnuplot never reads it as a command ('<cmd' pipes from a shell, '|cmd' pipes to one) or a
// datablock ('$name').
std::string gnuplot_path(const std::string &path);

struct figure {
  figure(std::string t, int w, int h) : title(std::move(t)), width(w), height(h) {}
  std::string title;
  int width = 900, height = 600;
  bool enhanced = false; // gnuplot's enhanced text (2^{%L} tick labels); off: '_' prints as is
  std::string body;      // everything after the preamble (terminal, output, separator, title)
  bool keep_script = false;
};

// Writes f.body under the preamble to gnuplot and renames the PNG into place; keeps the script as
// p.script when f.keep_script. Throws std::runtime_error when gnuplot fails or is not installed.
// When pngcairo is missing the script is retried with the plain png terminal.
void render_plot(const plot_paths &p, const figure &f);

// Output paths of one command, each with its option: throws input_error when two name the same
// file, or when one is also an input ("--out-o and --q name the same file 'x.npy'").
void check_distinct_files(const std::vector<std::pair<std::string, const char *>> &outputs,
                          const std::vector<std::pair<std::string, const char *>> &inputs = {});

} // namespace bf16emu::io
