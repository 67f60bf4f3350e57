// bf16emu io: the one plotting helper. Every PNG that bf16emu draws is a CSV (the data, kept
// beside the picture) plus a gnuplot script rendered here, so the figure can be redrawn or
// restyled without bf16emu.
#pragma once

#include <string>

namespace bf16emu::io {

// The preamble of every script: PNG terminal (pngcairo) of the given size, output path, CSV
// separator, no enhanced text (so '_' in titles prints as is), the title.
std::string gnuplot_preamble(const std::string &png, const std::string &title, int width, int height);

// Writes `script` to script_path and runs gnuplot on it. When pngcairo is missing the script is
// retried with the plain png terminal. Throws std::runtime_error when gnuplot fails or is not
// installed. The script is removed afterwards unless keep_script.
void run_gnuplot(const std::string &script_path, std::string script, bool keep_script);

} // namespace bf16emu::io
