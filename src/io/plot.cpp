// bf16emu io: gnuplot rendering. See plot.hpp.
#include "io/plot.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "io/files.hpp"

namespace bf16emu::io {

std::string gnuplot_preamble(const std::string &png, const std::string &title, int width, int height) {
  return "set terminal pngcairo size " + std::to_string(width) + "," + std::to_string(height) +
         "\nset termoption noenhanced\nset output '" + png + "'\nset datafile separator ','\nset title \"" +
         title + "\"\n";
}

void run_gnuplot(const std::string &script_path, std::string script, bool keep_script) {
  auto render = [&] {
    open_output(script_path, "gnuplot script") << script;
    const std::string cmd = "gnuplot '" + script_path + "' 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
  };
  bool ok = render();
  if (!ok) { // pngcairo may be missing: the plain png terminal
    const auto at = script.find("pngcairo");
    if (at != std::string::npos) {
      script.replace(at, 8, "png");
      ok = render();
    }
  }
  if (!keep_script) std::remove(script_path.c_str());
  if (!ok) throw std::runtime_error("gnuplot failed (is gnuplot installed?) on " + script_path);
}

} // namespace bf16emu::io
