// bf16emu io: opening the user's files. A path that is a directory, does not exist or cannot
// be read (or written) is bad input: io::input_error naming the path and the reason, never a
// stream that silently reads nothing or a library exception such as "basic_filebuf::underflow".
#pragma once

#include <fstream>
#include <string>

namespace bf16emu::io {

// `what` names the option or role in the message ("--q", "merge state file").
std::ifstream open_input(const std::string &path, const char *what, bool binary = false);
std::ofstream open_output(const std::string &path, const char *what, bool binary = false);

// "plot.png" -> "plot" + ext; a path without an extension gets ext appended.
std::string replace_extension(const std::string &path, const std::string &ext);

// At most `limit` characters of a user's token for an error message, with the total length
// when it was cut: "0x1234..." (10485760 characters).
std::string shorten(const std::string &token, std::size_t limit = 80);

} // namespace bf16emu::io
