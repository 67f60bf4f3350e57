// bf16emu io: opening the user's files. See files.hpp.
#include "io/files.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "io/error.hpp"

namespace bf16emu::io {

void path_error(const std::string &path, const char *what, const std::string &why) {
  throw input_error(std::string(what) + ": " + why + ": '" + shorten(path, 200) + "'");
}

namespace {
[[noreturn]] void fail(const std::string &path, const char *what, const std::string &why) {
  path_error(path, what, why);
}

std::string os_error(int err, const char *otherwise) { return err != 0 ? std::strerror(err) : otherwise; }

std::string dir_of(const std::string &path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Temporary files of outputs not yet committed, for the signal handler: fixed storage, no
// allocation, so remove_unfinished_outputs() is async-signal-safe.
constexpr int pending_slots = 32;
std::array<std::array<char, PATH_MAX>, pending_slots> pending_path;
std::array<std::atomic<int>, pending_slots> pending_used{};

int remember(const std::string &tmp) {
  if (tmp.size() >= PATH_MAX) return -1;
  for (int i = 0; i < pending_slots; ++i) {
    int expected = 0;
    if (pending_used[i].compare_exchange_strong(expected, 2)) { // 2: being written
      std::memcpy(pending_path[i].data(), tmp.c_str(), tmp.size() + 1);
      pending_used[i].store(1);
      return i;
    }
  }
  return -1;
}

void forget(const std::string &tmp) {
  for (int i = 0; i < pending_slots; ++i)
    if (pending_used[i].load() == 1 && tmp == pending_path[i].data()) pending_used[i].store(0);
}

mode_t default_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}
} // namespace

std::ifstream open_input(const std::string &path, const char *what, bool binary) {
  if (path.empty()) fail(path, what, "empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, what, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, what, "is a directory, not a file");
  std::ifstream in(path, binary ? std::ios::binary | std::ios::in : std::ios::in);
  if (!in) fail(path, what, "cannot be read");
  return in;
}

bool read_line(std::istream &in, std::string &line, std::size_t max, const std::string &name,
               std::uint64_t lineno) {
  line.resize(max + 2);
  errno = 0;
  in.getline(line.data(), std::streamsize(max + 2));
  const auto got = std::size_t(in.gcount());
  if (in.bad()) throw input_error(name + ": read error (" + os_error(errno, "I/O error") + ")");
  if ((in.fail() && !in.eof()) || got > max + (in.eof() ? 0 : 1)) // max + 1 characters and no newline yet
    throw input_error(name + ":" + std::to_string(lineno) + ": a line longer than " + std::to_string(max) +
                      " characters");
  if (got == 0 && in.eof()) {
    line.clear();
    return false;
  }
  line.resize(in.eof() ? got : got - 1); // the newline was extracted, not stored
  if (!line.empty() && line.back() == '\r') line.pop_back();
  in.clear(in.rdstate() & std::ios::eofbit); // a last line without a newline: the next call ends
  return true;
}

void check_stdin(const char *what) {
  struct stat st {};
  if (::fstat(0, &st) == 0 && S_ISDIR(st.st_mode))
    throw input_error(std::string(what) + ": standard input is a directory, not a file");
}

void check_output_path(const std::string &path, const char *what) {
  if (path.empty()) fail(path, what, "empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(path, what, "is a directory, not a file");
    return;
  }
  const std::string dir = dir_of(path);
  if (::stat(dir.c_str(), &st) != 0) fail(path, what, "its folder " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) fail(path, what, "its folder " + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) fail(path, what, "its folder " + dir + ": " + std::strerror(errno));
}

fd_writer::int_type fd_writer::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

std::streamsize fd_writer::xsputn(const char *s, std::streamsize n) {
  if (n <= epptr() - pptr()) {
    std::memcpy(pptr(), s, std::size_t(n));
    pbump(int(n));
    return n;
  }
  return drain() && write_all(s, std::size_t(n)) ? n : 0;
}

bool fd_writer::drain() noexcept {
  const bool ok = write_all(pbase(), std::size_t(pptr() - pbase()));
  setp(buf_, buf_ + sizeof buf_);
  return ok;
}

bool fd_writer::write_all(const char *p, std::size_t n) noexcept {
  if (err_ != 0) return false;
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err_ = w < 0 ? errno : EIO;
      return false;
    }
    p += w, n -= std::size_t(w);
  }
  return true;
}

output_file::output_file(const std::string &path, const char *what) : path_(path), what_(what) {
  if (path.empty()) fail(path, what, "empty path");
  struct stat st {};
  target_ = path;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(path, what, "is a directory, not a file");
    if (!S_ISREG(st.st_mode)) { // a device or a FIFO: written in place, errors still checked
      const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd < 0) fail(path, what, os_error(errno, "cannot be written"));
      buf_.reset(fd);
      return;
    }
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) != nullptr) target_ = real; // a link: replace what it names
  }
  std::string tmpl = dir_of(target_) + "/." + base_of(target_) + ".tmp-XXXXXX";
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) fail(path, what, os_error(errno, "cannot be written"));
  ::fchmod(fd, default_file_mode());
  tmp_ = tmpl;
  remember(tmp_);
  buf_.reset(fd);
}

output_file::~output_file() {
  if (buf_.fd() >= 0) ::close(buf_.fd());
  if (committed_ || tmp_.empty()) return;
  ::unlink(tmp_.c_str());
  forget(tmp_);
}

void output_file::commit() {
  out_.flush();
  const int fd = buf_.fd();
  buf_.reset(-1);
  int err = buf_.error();
  if (err == 0 && !out_.good()) err = EIO;
  if (err == 0 && !tmp_.empty() && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0) fail(path_, what_.c_str(), "write failed (" + os_error(err, "I/O error") + ")");
  if (!tmp_.empty()) {
    if (::rename(tmp_.c_str(), target_.c_str()) != 0)
      fail(path_, what_.c_str(), "cannot be renamed into place (" + os_error(errno, "I/O error") + ")");
    forget(tmp_);
  }
  committed_ = true;
}

void write_file(const std::string &path, const char *what, const std::string &text) {
  write_file(path, what, text.data(), text.size());
}

void write_file(const std::string &path, const char *what, const void *data, std::size_t size) {
  output_file f(path, what);
  f.stream().write(static_cast<const char *>(data), std::streamsize(size));
  f.commit();
}

void check_stdout_open() {
  bool stdout_closed = false;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == 1) stdout_closed = true;
    // Keep the number taken, so that no output file is opened as fd 0, 1 or 2.
    const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got >= 0 && got != fd) {
      ::dup2(got, fd);
      ::close(got);
    }
  }
  if (stdout_closed)
    throw input_error("standard output is closed; redirect it to a file, or to /dev/null to discard it");
}

void finish_stdout() {
  errno = 0;
  std::cout.flush();
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = flush_failed ? errno : 0; // an earlier failed write leaves only ferror()
  if (flush_failed || std::cout.fail() || std::ferror(stdout))
    throw input_error(std::string("standard output: write failed") +
                      (err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string()) +
                      "; the output is lost");
  if (std::fclose(stdout) != 0)
    throw input_error("standard output: close failed (" + os_error(errno, "I/O error") +
                      "); the output is lost");
}

void remove_unfinished_outputs() noexcept {
  for (int i = 0; i < pending_slots; ++i)
    if (pending_used[i].load() == 1) ::unlink(pending_path[i].data());
}

std::string replace_extension(const std::string &path, const std::string &ext) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_ext ? path.substr(0, dot) : path) + ext;
}

bool same_file(const std::string &a, const std::string &b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  auto norm = [](const std::string &p) {
    char real[PATH_MAX];
    const std::string dir = dir_of(p);
    return (::realpath(dir.c_str(), real) != nullptr ? std::string(real) : dir) + "/" + base_of(p);
  };
  return norm(a) == norm(b);
}

std::string shorten(const std::string &token, std::size_t limit) {
  std::string out;
  const std::size_t n = std::min(token.size(), limit);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else
      out += char(c);
  }
  if (token.size() > limit) out += "... (" + std::to_string(token.size()) + " characters)";
  return out;
}

} // namespace bf16emu::io
