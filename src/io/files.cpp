// bf16emu io: opening the user's files. See files.hpp.
#include "io/files.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "io/error.hpp"

namespace bf16emu::io {

namespace {
[[noreturn]] void fail(const std::string &path, const char *what, const std::string &why) {
  throw input_error(std::string(what) + ": " + why + ": '" + shorten(path, 200) + "'");
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

std::ofstream open_output(const std::string &path, const char *what, bool binary) {
  if (path.empty()) fail(path, what, "empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(path, what, "is a directory, not a file");
  std::ofstream out(path, binary ? std::ios::binary | std::ios::out : std::ios::out);
  if (!out) fail(path, what, "cannot be written");
  return out;
}

std::string replace_extension(const std::string &path, const std::string &ext) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_ext ? path.substr(0, dot) : path) + ext;
}

std::string shorten(const std::string &token, std::size_t limit) {
  if (token.size() <= limit) return token;
  return token.substr(0, limit) + "... (" + std::to_string(token.size()) + " characters)";
}

} // namespace bf16emu::io
