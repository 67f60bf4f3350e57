// bf16emu io: opening the user's files. A path that is a directory, does not exist or cannot
// be read (or written) is bad input: io::input_error naming the path and the reason, never a
// stream that silently reads nothing or a library exception such as "basic_filebuf::underflow".
//
// Output never goes straight to the user's path. output_file writes a temporary file in the
// same folder and commit() checks every byte reached the disk (flush and close both checked)
// before renaming it into place, so a failed or interrupted run leaves the previous file
// intact. A target that is not a regular file (/dev/full, a FIFO, /dev/stdout) is written in
// place, and its write errors are still checked.
#pragma once

#include <cstdint>
#include <fstream>
#include <ostream>
#include <streambuf>
#include <string>

namespace bf16emu::io {

// The one form of a bad path's message: input_error "WHAT: WHY: 'PATH'" (PATH cut by shorten).
[[noreturn]] void path_error(const std::string &path, const char *what, const std::string &why);

// `what` names the option or role in the message ("--q", "merge state file").
std::ifstream open_input(const std::string &path, const char *what, bool binary = false);

// Line limits, one per kind of line input (docs/testing.md, "What bad input gets").
inline constexpr std::size_t max_testfloat_line = 4096; // bf16emu testfloat: TestFloat lines
inline constexpr std::size_t max_mma_line = 1 << 20;    // bf16emu mma: one line of K + K + 1 values
inline constexpr std::size_t max_state_line = 1 << 16;  // bias state files (bf16emu merge)

// Reads one line of at most `max` characters, without its '\n' and without a trailing '\r'
// (CRLF files read as LF files). False at the end of input. A longer line is input_error
// "NAME:LINENO: a line longer than MAX characters" before more than max + 1 characters were
// read; a failed read (EIO, a directory) is input_error "NAME: read error", never end of input.
bool read_line(std::istream &in, std::string &line, std::size_t max, const std::string &name,
               std::uint64_t lineno);

// Refuses a standard input that cannot be read as text: a directory. `what` names the input.
void check_stdin(const char *what);

// A stream buffer that writes to a file descriptor and keeps the first write error's errno, so
// a failed write is reported as what it was (ENOSPC, EDQUOT, EIO), not as a bare stream failure.
class fd_writer : public std::streambuf {
public:
  explicit fd_writer(int fd = -1) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  void reset(int fd) noexcept { fd_ = fd; }
  int error() const noexcept { return err_; } // 0 while every write succeeded
  int fd() const noexcept { return fd_; }

protected:
  int_type overflow(int_type c) override;
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char *s, std::streamsize n) override;

private:
  bool drain() noexcept;
  bool write_all(const char *p, std::size_t n) noexcept;
  int fd_ = -1, err_ = 0;
  char buf_[1 << 16];
};

class output_file {
public:
  output_file(const std::string &path, const char *what);
  output_file(output_file &&) = delete;
  ~output_file(); // removes the temporary file when commit() was not reached
  std::ostream &stream() noexcept { return out_; }
  template <class T> output_file &operator<<(const T &v) {
    out_ << v;
    return *this;
  }
  // Flushes, closes and renames into place; throws input_error naming the path and the OS
  // error (ENOSPC, EROFS, ...) when any write failed. Call once.
  void commit();
  const std::string &path() const noexcept { return path_; }
  // Where the bytes go until commit(): the temporary file, or the path itself when it is not a
  // regular file. For a writer of its own (gnuplot) that opens the file by name.
  const std::string &temp_path() const noexcept { return tmp_.empty() ? path_ : tmp_; }

private:
  std::string path_, target_, tmp_, what_;
  fd_writer buf_;
  std::ostream out_{&buf_};
  bool committed_ = false;
};

// The whole of `text` (or `size` bytes at `data`) to path, through output_file.
void write_file(const std::string &path, const char *what, const std::string &text);
void write_file(const std::string &path, const char *what, const void *data, std::size_t size);

// Refuses a path for writing before any work is done: empty, a directory, a folder that does
// not exist. Commands call it on every output path as they parse, so a bad --ledger fails in a
// second, not after an hour's run.
void check_output_path(const std::string &path, const char *what);

// Standard output: fails (input_error, exit 2) when the flush or the close of stdout reported an
// error; main() calls it last. check_stdout_open() at start: a closed stdout is refused before any
// work, and fds 0-2 are kept occupied so no output file can take their numbers.
void finish_stdout();
void check_stdout_open();

// Removes the temporary files of unfinished outputs; async-signal-safe (main's SIGINT/SIGTERM
// handler calls it before dying).
void remove_unfinished_outputs() noexcept;

// "plot.png" -> "plot" + ext; a path without an extension gets ext appended.
std::string replace_extension(const std::string &path, const std::string &ext);

// Same file (device and inode) when both exist; the same normalized name otherwise.
bool same_file(const std::string &a, const std::string &b);

// At most `limit` characters of a user's token for an error message, with the total length
// when it was cut: "0x1234..." (10485760 characters). Control characters (a newline, a tab, an
// escape) are written as \n, \t, \x1b, so a message stays on one line.
std::string shorten(const std::string &token, std::size_t limit = 80);

} // namespace bf16emu::io
