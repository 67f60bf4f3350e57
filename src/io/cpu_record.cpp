// bf16emu io: recorded real-CPU BF16 outputs. See cpu_record.hpp.
#include "io/cpu_record.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <ostream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <bf16emu/cpu.hpp>

#include "io/error.hpp"
#include "io/files.hpp"

namespace bf16emu::io {

namespace {

void put_hex(std::ostream &out, std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", digits, unsigned(v));
  out << buf;
}

// A hex token of at most `digits` digits; false for anything else.
bool read_hex(const std::string &tok, int digits, std::uint32_t &v) {
  if (tok.empty() || int(tok.size()) > digits) return false;
  std::uint32_t r = 0;
  for (const char c : tok) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return false;
    r = r * 16 + std::uint32_t(d);
  }
  v = r;
  return true;
}

// The entries of a directory other than . and ..; -1 when it cannot be read.
long entries(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (const dirent *e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  ::closedir(d);
  return n;
}

} // namespace

const record_layout &layout_of(recorded what) noexcept {
  for (const record_layout &l : record_layouts)
    if (l.what == what) return l;
  return record_layouts[0];
}

std::uint32_t model_output(recorded what, const std::vector<std::uint32_t> &in) {
  auto h = [&](std::size_t i) { return std::uint16_t(in[i]); };
  switch (what) {
  case recorded::vdpbf16ps: return cpu::vdpbf16ps(in[4], h(0), h(1), h(2), h(3));
  case recorded::tdpbf16ps: {
    std::uint16_t a[8], b[8];
    for (std::size_t i = 0; i < 8; ++i)
      a[i] = h(i), b[i] = h(8 + i);
    return cpu::tdpbf16ps(in[16], a, b, 4);
  }
  case recorded::vcvtneebf162ps:
  case recorded::vcvtneobf162ps:
  case recorded::vbcstnebf162ps: return cpu::ne_bf16_to_fp32(h(0));
  case recorded::vcvtneeph2ps:
  case recorded::vcvtneoph2ps:
  case recorded::vbcstnesh2ps: return cpu::ne_fp16_to_fp32(h(0));
  default: return cpu::cvtneps2bf16(in[0]); // VCVTNEPS2BF16 (EVEX and VEX), VCVTNE2PS2BF16
  }
}

void write_record(std::ostream &out, const record_table &t) {
  const record_layout &l = layout_of(t.what);
  for (std::size_t r = 0; r < t.in.size(); ++r) {
    for (int i = 0; i < l.inputs; ++i) {
      if (i) out << ' ';
      put_hex(out, t.in[r][std::size_t(i)], i >= l.wide_from ? 8 : 4);
    }
    for (int j = 0; j < 3; ++j) {
      out << ' ';
      if (j > 0 && t.out[r][std::size_t(j)] == t.out[r][std::size_t(j - 1)])
        out << '=';
      else
        put_hex(out, t.out[r][std::size_t(j)], l.out_digits);
    }
    out << '\n';
  }
}

record_table read_record(const std::string &dir, recorded what) {
  const record_layout &l = layout_of(what);
  const std::string path = dir + "/" + l.file;
  std::ifstream in = open_input(path, l.instruction);
  record_table t;
  t.what = what;
  std::string line;
  std::uint64_t lineno = 0;
  while (read_line(in, line, 4096, path, lineno + 1)) {
    ++lineno;
    auto bad = [&](const std::string &why) {
      throw input_error(shorten(path, 200) + ":" + std::to_string(lineno) + ": " + why);
    };
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;)
      f.push_back(w);
    if (int(f.size()) != l.inputs + 3)
      bad("expected " + std::to_string(l.inputs + 3) + " fields (" + l.columns + ", then 3 results), got " +
          std::to_string(f.size()));
    std::vector<std::uint32_t> v(std::size_t(l.inputs));
    for (int i = 0; i < l.inputs; ++i) {
      const int digits = i >= l.wide_from ? 8 : 4;
      if (!read_hex(f[std::size_t(i)], digits, v[std::size_t(i)]))
        bad("input " + std::to_string(i + 1) + " '" + shorten(f[std::size_t(i)]) +
            "' is not hex of at most " + std::to_string(digits) + " digits");
    }
    std::array<std::uint32_t, 3> o{};
    for (int j = 0; j < 3; ++j) {
      const std::string &s = f[std::size_t(l.inputs + j)];
      if (s == "=" && j > 0)
        o[std::size_t(j)] = o[std::size_t(j - 1)];
      else if (!read_hex(s, l.out_digits, o[std::size_t(j)]))
        bad("result " + std::to_string(j + 1) + " '" + shorten(s) + "' is not hex of at most " +
            std::to_string(l.out_digits) + " digits" + (s == "=" ? " (the first result cannot be '=')" : ""));
    }
    t.in.push_back(std::move(v));
    t.out.push_back(o);
  }
  if (t.in.empty()) throw input_error(shorten(path, 200) + ": no lines");
  return t;
}

record_check check_record(const record_table &t) {
  const record_layout &l = layout_of(t.what);
  record_check r;
  for (std::size_t i = 0; i < t.in.size(); ++i) {
    const std::uint32_t want = model_output(t.what, t.in[i]);
    ++r.lines;
    for (int j = 0; j < 3; ++j) {
      ++r.outputs;
      if (t.out[i][std::size_t(j)] == want) continue;
      ++r.mismatches[j];
      if (r.first.size() < 5) {
        std::ostringstream s;
        s << l.file << " line " << i + 1 << " MXCSR 0x" << std::hex << record_mxcsr[j] << ": recorded 0x"
          << t.out[i][std::size_t(j)] << ", model 0x" << want;
        r.first.push_back(s.str());
      }
    }
  }
  return r;
}

void check_record_dir(const std::string &dir, bool force) {
  const char *what = "cpu-probe --save";
  if (dir.empty()) path_error(dir, what, "empty path");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) path_error(dir, what, "exists and is not a directory");
    const long n = entries(dir);
    if (n < 0) path_error(dir, what, std::string("cannot be read (") + std::strerror(errno) + ")");
    if (n > 0 && !force)
      path_error(dir, what,
                 "is not empty (" + std::to_string(n) +
                     " entries); --force writes into it, replacing files of the same names");
    if (::access(dir.c_str(), W_OK) != 0) path_error(dir, what, "cannot be written");
    return;
  }
  if (errno != ENOENT) path_error(dir, what, std::strerror(errno));
  const auto slash = dir.find_last_not_of('/') == std::string::npos
                         ? std::string::npos
                         : dir.rfind('/', dir.find_last_not_of('/'));
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    path_error(dir, what, "its parent folder does not exist");
  if (::access(parent.c_str(), W_OK) != 0) path_error(dir, what, "its parent folder cannot be written");
}

std::vector<std::string> save_records(const std::string &dir, const std::vector<record_table> &tables,
                                      const std::string &readme, bool force) {
  check_record_dir(dir, force);
  bool created = false;
  if (::mkdir(dir.c_str(), 0777) == 0)
    created = true;
  else if (errno != EEXIST)
    path_error(dir, "cpu-probe --save", std::string("cannot be created (") + std::strerror(errno) + ")");
  const bool was_empty = created || entries(dir) == 0; // else --force: keep what is written
  std::vector<std::string> written;
  try {
    for (const record_table &t : tables) {
      std::ostringstream text;
      write_record(text, t);
      const std::string path = dir + "/" + layout_of(t.what).file;
      write_file(path, "cpu-probe --save", text.str());
      written.push_back(path);
    }
    write_file(dir + "/README.md", "cpu-probe --save", readme);
    written.push_back(dir + "/README.md");
  } catch (...) {
    if (was_empty)
      for (const std::string &p : written)
        ::unlink(p.c_str());
    if (created) ::rmdir(dir.c_str());
    throw;
  }
  return written;
}

} // namespace bf16emu::io
