// .npy reader/writer: round trips, and one clear message per kind of bad file. The bad files
// are written byte by byte here, following the NumPy format description (magic \x93NUMPY,
// version, little-endian header length, a Python dict literal padded with spaces and '\n').
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "io/error.hpp"
#include "io/npy.hpp"

namespace npy = bf16emu::npy;

namespace {

std::string tmp(const std::string &name) { return std::string(BF16EMU_TEST_TMP) + "/" + name; }

std::string image(const std::string &dict, const std::string &body, unsigned char major = 1) {
  std::string h = dict;
  std::size_t pre = major == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += char(major);
  s += char(0);
  s += char(h.size() & 0xFF);
  s += char(h.size() >> 8);
  if (major != 1) s += std::string(2, '\0');
  return s + h + body;
}

void put(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string error_of(const std::string &path, const npy::expect &want = {}) {
  try {
    npy::read(path, want);
  } catch (const bf16emu::io::input_error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Npy, RoundTripAllDtypes) {
  const float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, -0.0f, 1e-45f};
  npy::write(tmp("f.npy"), npy::dtype::f32, {2, 3}, f);
  npy::array a = npy::read(tmp("f.npy"), {npy::dtype::f32, {-1, 3}});
  ASSERT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(a.f32[i], f[i]);

  const double d[2] = {0.1, -4.703990459442138671875};
  npy::write(tmp("d.npy"), npy::dtype::f64, {2}, d);
  npy::array b = npy::read(tmp("d.npy"));
  EXPECT_EQ(b.type, npy::dtype::f64);
  EXPECT_EQ(b.value(1), d[1]);

  npy::array c;
  c.type = npy::dtype::u16;
  c.shape = {1, 2, 2};
  c.u16 = {0xC097, 0x3F80, 0x7FC0, 0x0001};
  npy::write(tmp("u.npy"), c);
  npy::array c2 = npy::read(tmp("u.npy"), npy::dtype::u16);
  EXPECT_EQ(c2.u16, c.u16);
  EXPECT_EQ(c2.size(), 4u);

  npy::write(tmp("scalar.npy"), npy::dtype::f32, {}, f);
  EXPECT_EQ(npy::read(tmp("scalar.npy")).size(), 1u);
  // The data starts on a 64-byte boundary and the header is a version 1.0 dict.
  auto bytes = npy::serialize(npy::dtype::u16, {3}, c.u16.data());
  EXPECT_EQ((bytes.size() - 6) % 64, 0u);
  EXPECT_EQ(std::string(bytes.begin() + 10, bytes.begin() + 60),
            "{'descr': '<u2', 'fortran_order': False, 'shape': ");
}

TEST(Npy, ReadsHandWrittenFiles) {
  put(tmp("v2.npy"),
      image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0'), 2));
  EXPECT_EQ(npy::read(tmp("v2.npy")).size(), 2u);
  // Python 2 wrote "shape": (3L,) and double quotes.
  put(tmp("py2.npy"),
      image("{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (3L,)}", std::string(6, 'x')));
  EXPECT_EQ(npy::read(tmp("py2.npy")).size(), 3u);
}

TEST(Npy, ClearErrors) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  put(tmp("magic.npy"), "hello world, not numpy");
  EXPECT_NE(error_of(tmp("magic.npy")).find("magic.npy: not a .npy file (wrong magic"), std::string::npos);
  put(tmp("version.npy"), image(ok, std::string(24, '\0'), 4));
  EXPECT_NE(error_of(tmp("version.npy")).find("unsupported .npy version 4.0"), std::string::npos);
  put(tmp("header.npy"),
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3 }", std::string(24, '\0')));
  EXPECT_NE(error_of(tmp("header.npy")).find("header.npy: bad header"), std::string::npos);
  put(tmp("dtype.npy"),
      image("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\0')));
  EXPECT_NE(error_of(tmp("dtype.npy")).find("unsupported dtype '<i4'"), std::string::npos);
  put(tmp("bigendian.npy"),
      image("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\0')));
  EXPECT_NE(error_of(tmp("bigendian.npy")).find("'>f4'"), std::string::npos);
  put(tmp("fortran.npy"),
      image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", std::string(24, '\0')));
  EXPECT_NE(error_of(tmp("fortran.npy")).find("fortran_order"), std::string::npos);
  put(tmp("trunc.npy"), image(ok, std::string(23, '\0')));
  EXPECT_NE(error_of(tmp("trunc.npy")).find("truncated data: shape (2, 3) needs 24 bytes, file has 23"),
            std::string::npos);
  put(tmp("shape.npy"), image(ok, std::string(24, '\0')));
  EXPECT_NE(error_of(tmp("shape.npy"), {npy::dtype::f32, {2, 4}})
                .find("shape mismatch: file has (2, 3), expected (2, 4)"),
            std::string::npos);
  EXPECT_NE(error_of(tmp("shape.npy"), npy::dtype::u16).find("dtype is '<f4', expected '<u2'"),
            std::string::npos);
  EXPECT_NE(error_of(tmp("missing.npy")).find("missing.npy: cannot open"), std::string::npos);
  put(tmp("short.npy"), std::string("\x93NUMPY\x01\x00\xff\x00{", 11));
  EXPECT_NE(error_of(tmp("short.npy")).find("truncated header"), std::string::npos);
}

// Strict headers: each key once, and nothing but the padding spaces and the final newline after
// the dict. NumPy itself writes exactly that; anything else is a damaged or forged file.
TEST(Npy, RejectsDuplicateKeys) {
  const std::string body(24, '\0');
  put(tmp("dup_shape.npy"),
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,), }", body));
  const std::string e = error_of(tmp("dup_shape.npy"));
  EXPECT_NE(e.find("dup_shape.npy: bad header (duplicate key 'shape')"), std::string::npos) << e;
  put(tmp("dup_descr.npy"),
      image("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}", body));
  EXPECT_NE(error_of(tmp("dup_descr.npy")).find("duplicate key 'descr'"), std::string::npos);
  put(tmp("dup_order.npy"),
      image("{'fortran_order': False, 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", body));
  EXPECT_NE(error_of(tmp("dup_order.npy")).find("duplicate key 'fortran_order'"), std::string::npos);
}

TEST(Npy, RejectsTrailingJunk) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string body(24, '\0');
  // image() pads with spaces and ends with '\n'; what follows the '}' here is the junk.
  const char *junk[] = {" x", "}", ",", "\n", "\t", "{}", "\r"};
  for (const char *j : junk) {
    put(tmp("junk.npy"), image(ok + j, body));
    const std::string e = error_of(tmp("junk.npy"));
    EXPECT_NE(e.find("junk.npy: bad header (unexpected characters after the dict"), std::string::npos)
        << "junk " << std::string(j) << ": " << e;
  }
  // The junk 'x' is at byte 60 of the header (the dict is 59 bytes, then a space): named.
  put(tmp("junk.npy"), image(ok + " x", body));
  EXPECT_NE(error_of(tmp("junk.npy")).find("at byte 60 of the header"), std::string::npos);
  // Spaces and the final newline are the padding: accepted.
  put(tmp("padded.npy"), image(ok, body));
  EXPECT_EQ(npy::read(tmp("padded.npy")).size(), 6u);
}
