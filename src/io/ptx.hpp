// bf16emu io: PTX tensor-core instruction strings as written
// ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
// "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "tcgen05.mma.cta_group::1.kind::f16")
// -> the arch-independent fields that pick a preset (tc/presets.hpp, tc/scaled.hpp): instruction
// family, shape, kind, block scaling, operand and accumulator formats. Pure text -> struct; the
// GPU generation comes from elsewhere (`mma --arch`). docs/tensor-cores.md, "PTX strings".
//
// Accepted (every form the presets cover, PTX ISA 9.7.14.5 mma, 9.7.15 wgmma, tcgen05.mma):
//   mma.sync.aligned.mMnNkK.ALAYOUT.BLAYOUT[.kind::KIND[.block_scale[.scale_vec::NX]]]
//       .DTYPE.ATYPE.BTYPE.CTYPE[.STYPE]        (.row.col; m8n8k4 f16 takes .row/.col either way)
//   wgmma.mma_async.sync.aligned.m64nNkK.DTYPE.ATYPE.BTYPE      (N = 8, 16, ..., 256; C is D)
//   tcgen05.mma.cta_group::1.kind::KIND[.block_scale[.scale_vec::NX | .block16 | .block32]]
//       [.collector::a::fill|use|lastuse|discard]
// A trailing ';' and surrounding blanks are ignored. tcgen05 strings carry no operand types (the
// instruction descriptor holds them): a/b/c/d are set only where the kind fixes them.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include <bf16emu/core/format.hpp>
#include <bf16emu/tc/presets.hpp>

namespace bf16emu::io {

struct ptx_mma {
  tc::instr_kind instr = tc::instr_kind::mma;
  int m = 0, n = 0, k = 0;  // the shape; 0 where the string has none (tcgen05: the descriptor's)
  std::string kind;         // "f16", "tf32", "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"; "" none
  bool block_scale = false; // .block_scale
  int scale_vec = 0;        // k-elements per scale factor (scale_vec::2X on k64: 32); 0 not given
  std::string scale_format; // "ue8m0" or "ue4m3" (mma.sync .stype); "" not given
  std::optional<format_id> a, b, c, d;
};

// Parses one instruction string. Anything else is input_error "'TEXT': 'TOKEN' ..." naming the
// first token that does not fit and what would.
ptx_mma parse_ptx(std::string_view text);

// The `bf16emu mma` options that pick a model, as text ("" or 0: not given).
struct mma_selection {
  std::string instr, a_format, b_format, c_format, out, kind, scale_format;
  unsigned shape_k = 0, scale_vec = 0;
};

// Puts what `p` (parsed from `text`) says into s, as the options it stands for. An option the
// user gave that says otherwise is input_error naming both; the formats a tcgen05 string cannot
// say are taken from s (--a-format etc.), and their absence is input_error saying which to give.
void apply_ptx(const ptx_mma &p, std::string_view text, mma_selection &s);

// The row of the preset table that the string names among those equal to *p but for the shape
// (mma.sync m8n8k4 and m16n8k4 f64 share k and formats on sm90): the one with the string's m and n
// (wgmma: m; its n does not select a row). p itself when the string has no shape or no row matches.
const tc::preset *same_shape(const tc::preset *p, const ptx_mma &x) noexcept;

class json_writer;

// The line `mma --ptx` writes before its results, naming the preset the string maps to:
// "# ptx TEXT on ARCH -> SUMMARY" (a comment line of the line format), or with json one object
// {"ptx": TEXT, "arch": ARCH, "preset": {members}}.
void write_ptx_mapping(std::ostream &out, bool json, std::string_view text, const char *arch,
                       const std::string &summary, const std::function<void(json_writer &)> &members);

} // namespace bf16emu::io
