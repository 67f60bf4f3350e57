// bf16emu io: gnuplot rendering. See plot.hpp.
#include "io/plot.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/error.hpp"
#include "io/files.hpp"

extern char **environ;

namespace bf16emu::io {

namespace {

// An existing regular file at `path` must begin with the PNG signature (png) or hold no NUL in
// its first 4 KiB (text); a missing or empty file, or a device, is fine.
void check_kind(const char *option, const std::string &path, bool png) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return; // a device is written in place
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return;
  unsigned char head[4096];
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == 0) return;
  static const unsigned char magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (png && (n < 8 || std::memcmp(head, magic, 8) != 0))
    path_error(path, option, "exists and is not a PNG image; refusing to overwrite it");
  if (!png && std::memchr(head, 0, n) != nullptr)
    path_error(path, option, "exists and is not a text file; refusing to overwrite it");
}

// Runs gnuplot with the script on its standard input; true when it exited 0.
bool run_gnuplot(const std::string &script) {
  std::FILE *in = std::tmpfile();
  if (in == nullptr)
    throw std::runtime_error(std::string("gnuplot: no temporary file: ") + std::strerror(errno));
  const bool written = std::fwrite(script.data(), 1, script.size(), in) == script.size() &&
                       std::fflush(in) == 0 && std::fseek(in, 0, SEEK_SET) == 0;
  if (!written) {
    std::fclose(in);
    throw std::runtime_error("gnuplot: cannot write its script to a temporary file");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char name[] = "gnuplot";
  char *argv[] = {name, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  std::fclose(in);
  if (rc != 0) {
    if (rc == ENOENT)
      throw std::runtime_error("gnuplot is not installed (Debian: apt-get install gnuplot-nox)");
    throw std::runtime_error(std::string("cannot start gnuplot: ") + std::strerror(rc));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string preamble(const figure &f, const std::string &png, const char *terminal) {
  return std::string("set terminal ") + terminal + " size " + std::to_string(f.width) + "," +
         std::to_string(f.height) + "\nset termoption " + (f.enhanced ? "enhanced" : "noenhanced") +
         "\nset output " + gnuplot_path(png) + "\nset datafile separator ','\nset title " +
         gnuplot_quote(f.title) + "\n";
}

} // namespace

std::string gnuplot_quote(const std::string &text) {
  std::string q = "'";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw input_error("a control character cannot go into a plot: '" + shorten(text, 200) + "'");
    q += c;
    if (c == '\'') q += '\'';
  }
  return q + "'";
}

std::string gnuplot_path(const std::string &path) {
  return gnuplot_quote(!path.empty() && path[0] == '/' ? path : "./" + path);
}

plot_paths plot_paths_for(const std::string &name, const char *option, const std::string &csv_override) {
  if (name.empty()) path_error(name, option, "empty path");
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    path_error(name, option, "is a directory, not a file");
  const std::string png = replace_extension(name, ".png");
  if (png != name && png != name + ".png")
    path_error(name, option, "must name a .png file, or have no extension (the CSV and script go beside it)");
  plot_paths p{png, csv_override.empty() ? replace_extension(png, ".csv") : csv_override,
               replace_extension(png, ".gp")};
  for (const std::string *path : {&p.png, &p.csv, &p.script})
    check_output_path(*path, option);
  check_kind(option, p.png, true);
  check_kind(option, p.csv, false);
  check_kind(option, p.script, false);
  for (const std::string *path : {&p.png, &p.csv, &p.script})
    gnuplot_quote(*path); // a control character fails now, before the run
  return p;
}

void render_plot(const plot_paths &p, const figure &f) {
  output_file png(p.png, "plot");
  const std::string drawn = png.temp_path();
  bool ok = run_gnuplot(preamble(f, drawn, "pngcairo") + f.body);
  const char *terminal = "pngcairo";
  if (!ok) { // pngcairo may be missing: the plain png terminal
    terminal = "png";
    ok = run_gnuplot(preamble(f, drawn, terminal) + f.body);
  }
  if (!ok) throw std::runtime_error("gnuplot failed drawing " + shorten(p.png, 200));
  png.commit();
  if (f.keep_script) write_file(p.script, "plot script", preamble(f, p.png, terminal) + f.body);
}

void check_distinct_files(const std::vector<std::pair<std::string, const char *>> &outputs,
                          const std::vector<std::pair<std::string, const char *>> &inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].first.empty()) continue;
    for (std::size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[j].first.empty() && same_file(outputs[i].first, outputs[j].first))
        throw input_error(std::string(outputs[i].second) + " and " + outputs[j].second +
                          " name the same file '" + shorten(outputs[i].first, 200) + "'");
    for (const auto &in : inputs)
      if (!in.first.empty() && same_file(outputs[i].first, in.first))
        throw input_error(std::string(outputs[i].second) + " and " + in.second + " name the same file '" +
                          shorten(outputs[i].first, 200) + "'; refusing to overwrite an input");
  }
}

} // namespace bf16emu::io
