// bf16emu io: recorded outputs of a real CPU's BF16 instructions, in the format of
// tests/cpu/data (README there): one input per line, hex without "0x", zero-padded to the
// operand's width (bf16 4 digits, fp32 8), then the results under MXCSR 0x1f80, 0x7f80 and
// 0x9fc0, a result equal to the one before it written "=". `bf16emu cpu-probe --save DIR` writes
// them (with a README.md naming the CPU), tests/cpu/check_recorded.cpp reads them, and both
// compare them with the models through model_output.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace bf16emu::io {

// The MXCSR values each input runs under, in the order of the result columns.
inline constexpr std::uint32_t record_mxcsr[3] = {0x1f80, 0x7f80, 0x9fc0};

enum class recorded : std::uint8_t {
  vdpbf16ps,
  vcvtneps2bf16,
  vcvtne2ps2bf16,
  tdpbf16ps,
  vcvtneps2bf16_vex, // AVX-NE-CONVERT from here on
  vcvtneebf162ps,
  vcvtneobf162ps,
  vbcstnebf162ps,
  vcvtneeph2ps,
  vcvtneoph2ps,
  vbcstnesh2ps,
};

struct record_layout {
  recorded what;
  const char *file;        // "vdpbf16ps.txt"
  const char *instruction; // "VDPBF16PS zmm, zmm, zmm"
  const char *columns;     // "a0 a1 b0 b1 c", the inputs of a line
  int inputs;              // inputs per line
  int wide_from;           // inputs [wide_from, inputs) are fp32 (8 digits), the others bf16 (4)
  int out_digits;          // 8 (fp32 result) or 4 (bf16)
};

// Every file a recording can hold.
inline constexpr record_layout record_layouts[] = {
    {recorded::vdpbf16ps, "vdpbf16ps.txt", "VDPBF16PS zmm, zmm, zmm", "a0 a1 b0 b1 c", 5, 4, 8},
    {recorded::vcvtneps2bf16, "vcvtneps2bf16.txt", "VCVTNEPS2BF16 ymm, zmm", "x", 1, 0, 4},
    {recorded::vcvtne2ps2bf16, "vcvtne2ps2bf16.txt", "VCVTNE2PS2BF16 zmm, zmm, zmm", "x", 1, 0, 4},
    {recorded::tdpbf16ps, "tdpbf16ps.txt", "TDPBF16PS tmm, tmm, tmm (4 BF16 pairs)",
     "a0 a1 a2 a3 a4 a5 a6 a7 b0 b1 b2 b3 b4 b5 b6 b7 c", 17, 16, 8},
    {recorded::vcvtneps2bf16_vex, "vcvtneps2bf16_vex.txt", "VCVTNEPS2BF16 xmm, ymm (VEX, AVX-NE-CONVERT)",
     "x", 1, 0, 4},
    {recorded::vcvtneebf162ps, "vcvtneebf162ps.txt", "VCVTNEEBF162PS ymm, m256 (even elements)", "x", 1, 1,
     8},
    {recorded::vcvtneobf162ps, "vcvtneobf162ps.txt", "VCVTNEOBF162PS ymm, m256 (odd elements)", "x", 1, 1, 8},
    {recorded::vbcstnebf162ps, "vbcstnebf162ps.txt", "VBCSTNEBF162PS ymm, m16", "x", 1, 1, 8},
    {recorded::vcvtneeph2ps, "vcvtneeph2ps.txt", "VCVTNEEPH2PS ymm, m256 (even elements)", "x", 1, 1, 8},
    {recorded::vcvtneoph2ps, "vcvtneoph2ps.txt", "VCVTNEOPH2PS ymm, m256 (odd elements)", "x", 1, 1, 8},
    {recorded::vbcstnesh2ps, "vbcstnesh2ps.txt", "VBCSTNESH2PS ymm, m16", "x", 1, 1, 8},
};

const record_layout &layout_of(recorded what) noexcept;

// One file: rows of inputs and the three results.
struct record_table {
  recorded what = recorded::vdpbf16ps;
  std::vector<std::vector<std::uint32_t>> in;
  std::vector<std::array<std::uint32_t, 3>> out;
};

// The model's result for one line's inputs (include/bf16emu/cpu): VDPBF16PS
// cpu::vdpbf16ps(c, a0, a1, b0, b1); the conversions to BF16 cpu::cvtneps2bf16(x) (VCVTNE2PS2BF16
// and the VEX form convert each element alike); TDPBF16PS cpu::tdpbf16ps(c, a, b, 4); the
// AVX-NE-CONVERT loads cpu::ne_bf16_to_fp32(x) and cpu::ne_fp16_to_fp32(x). No model takes MXCSR.
std::uint32_t model_output(recorded what, const std::vector<std::uint32_t> &in);

// Writes the lines of t.
void write_record(std::ostream &out, const record_table &t);
// Reads DIR/<file of what>; input_error "PATH:LINE: ..." naming a malformed line (a wrong count,
// a token that is not hex of its width, "=" in the first result), a missing or empty file.
record_table read_record(const std::string &dir, recorded what);

// The comparison of a table with the model: lines, outputs, mismatches per MXCSR column, and the
// first few mismatching lines as text.
struct record_check {
  long lines = 0, outputs = 0, mismatches[3] = {0, 0, 0};
  std::vector<std::string> first;
  bool ok() const noexcept { return lines > 0 && mismatches[0] + mismatches[1] + mismatches[2] == 0; }
};
record_check check_record(const record_table &t);

// Refuses DIR for --save before any work: a path that exists and is not a directory, or a
// non-empty directory unless force; a missing parent. input_error naming the path.
void check_record_dir(const std::string &dir, bool force);

// Writes the tables and then DIR/README.md (readme) into DIR, creating DIR if it does not exist.
// Each file goes through output_file (a temporary file renamed into place), so none is ever
// partial; if a write fails, the files this call wrote are removed again (and DIR when this call
// created it) and input_error names the path. Returns the paths written.
std::vector<std::string> save_records(const std::string &dir, const std::vector<record_table> &tables,
                                      const std::string &readme, bool force);

} // namespace bf16emu::io
