// bf16emu CUDA twin: the probe kernel table (see probe_table.hpp).
#include "probe_table.hpp"

#include "host_model.hpp"
#include "io/files.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/tokens.hpp"

#include <algorithm>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <ostream>

namespace bf16emu::gpu {
namespace {

using F = format_id;
using K = tc::instr_kind;
constexpr int kAny = 1000; // no upper compute-capability bound (PTX of compute_80 JITs forward)

probe_kernel plain(const char *name, K kind, F a, F b, F out, int k, const char *ptx, int cc_min, int cc_max,
                   instr op, in_type ta, in_type tb, out_type to) {
  return {name,
          kind,
          "",
          a,
          b,
          out,
          k,
          ptx,
          cc_min,
          cc_max,
          false,
          false,
          op,
          ta,
          tb,
          to,
          probe16_op::f64,
          mma_family::none};
}
// tcgen05 kind::f8f6f4 with fp8 operands (sm_100a), modelled by tc::scaled_presets.
probe_kernel tc5_f8(const char *name, F a, F b, F out, const char *ptx, in_type ta, in_type tb, out_type to) {
  return {name,
          K::tcgen05,
          "f8f6f4",
          a,
          b,
          out,
          32,
          ptx,
          100,
          100,
          false,
          true,
          instr::tcgen05,
          ta,
          tb,
          to,
          probe16_op::f64,
          mma_family::none};
}
probe_kernel p16(const char *name, const char *opt_kind, F a, F b, F out, int k, const char *ptx, int cc_min,
                 int cc_max, probe16_op op) {
  return {name,
          K::mma,
          opt_kind,
          a,
          b,
          out,
          k,
          ptx,
          cc_min,
          cc_max,
          true,
          false,
          instr::mma_sync,
          in_type::bf16,
          in_type::bf16,
          out_type::fp32,
          op,
          mma_family::none};
}

// The formats column of a kernel name: A, or AxB for two formats ("e4m3xe5m2").
std::string ab_name(F a, F b) {
  return std::string(io::name(a)) + (b != a ? std::string("x") + io::name(b) : "");
}

// A name or instruction text made at run time, kept for the table's lifetime (a deque: the
// pointers stay valid).
const char *keep(std::string s) {
  static std::deque<std::string> strings;
  strings.push_back(std::move(s));
  return strings.back().c_str();
}

// An mma.sync row of the issue-16 kernels (run_mma, or with sop the block-scaled run_probe_scaled),
// its name and instruction text made at run time; `scaled`: the host model is tc::scaled_presets.
probe_kernel issue16_row(const std::string &name, const std::string &ptx, const char *opt_kind, F a, F b,
                         F out, int k, int cc_min, int cc_max, mma_family f, bool scaled = false,
                         scaled_op sop = scaled_op::none, K kind = K::mma) {
  return {keep(name),
          kind,
          opt_kind,
          a,
          b,
          out,
          k,
          keep(ptx),
          cc_min,
          cc_max,
          false,
          scaled,
          kind == K::tcgen05 ? instr::tcgen05 : instr::mma_sync,
          in_type::bf16,
          in_type::bf16,
          out_type::fp32,
          probe16_op::f64,
          f,
          sop};
}

// Issue 16, second batch: sm120 kind::f8f6f4 with fp6/fp4 operands, fp8 m16n8k16, tf32 m16n8k4,
// bf16 m16n8k8, sm90 f64 m16n8k8 / m16n8k16 (kernels.hpp mma_family). The m16n8k4 f64 shape is
// not issued: it has the formats and k of m8n8k4 (mma_fp64_fp64), which the options select.
void add_second_batch(std::vector<probe_kernel> &t) {
  const auto oname = [](F o) { return std::string(o == F::fp16 ? "fp16" : "fp32"); };
  const auto ptx_out = [](F o) { return std::string(o == F::fp16 ? "f16" : "f32"); };
  for (F o : {F::fp32, F::fp16}) {
#define BF16EMU_ROW(A, B)                                                                                    \
  t.push_back(issue16_row("mma_f8f6f4_" + ab_name(F::A, F::B) + "_" + oname(o),                              \
                          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4." + ptx_out(o) +                   \
                              "." #A "." #B "." + ptx_out(o),                                                \
                          "f8f6f4", F::A, F::B, o, 32, 120, 120, mma_family::f8f6f4_k32));
    BF16EMU_F8F6F4_FP6FP4_PAIRS(BF16EMU_ROW)
#undef BF16EMU_ROW
  }
  for (F o : {F::fp32, F::fp16}) {
#define BF16EMU_ROW(A, B)                                                                                    \
  t.push_back(                                                                                               \
      issue16_row("mma_" + ab_name(F::A, F::B) + "_" + oname(o) + "_k16",                                    \
                  "mma.sync.aligned.m16n8k16.row.col." + ptx_out(o) + "." #A "." #B "." + ptx_out(o), "",    \
                  F::A, F::B, o, 16, 120, 120, mma_family::fp8_k16));                                        \
  t.back().cc_also = 89;
    BF16EMU_FP8_PAIRS(BF16EMU_ROW)
#undef BF16EMU_ROW
  }
  t.push_back(issue16_row("mma_tf32_fp32_k4", "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", "",
                          F::tf32, F::tf32, F::fp32, 4, 80, kAny, mma_family::tf32_k4));
  t.push_back(issue16_row("mma_bf16_fp32_k8", "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "",
                          F::bf16, F::bf16, F::fp32, 8, 80, kAny, mma_family::bf16_k8));
  t.push_back(issue16_row("mma_fp64_fp64_k8", "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", "", F::fp64,
                          F::fp64, F::fp64, 8, 90, 90, mma_family::f64_k8));
  // m8n8k4 (the sm_75 code) with C and D of one format, and with C fp16, D fp32 (the first
  // instruction of a line takes C in f16, the next ones the f32 D before them); ptxas rejects D f16
  // with C f32 (find_probe_kernel says so).
  t.push_back(issue16_row("mma_fp16_fp32_m8n8k4", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", "",
                          F::fp16, F::fp16, F::fp32, 4, 75, 75, mma_family::m8n8k4));
  t.push_back(issue16_row("mma_fp16_fp16_m8n8k4", "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16", "",
                          F::fp16, F::fp16, F::fp16, 4, 75, 75, mma_family::m8n8k4));
  t.push_back(issue16_row("mma_fp16_fp32_c16_m8n8k4", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", "",
                          F::fp16, F::fp16, F::fp32, 4, 75, 75, mma_family::m8n8k4));
  t.back().c = F::fp16;
  t.push_back(issue16_row("mma_fp64_fp64_k16", "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", "",
                          F::fp64, F::fp64, F::fp64, 16, 90, 90, mma_family::f64_k16));
  // tcgen05 kind::f8f6f4 with fp6/fp4 operands (sm_100a; the block-scaled kernel of scaled_probe.cu
  // without scale factors), modelled by tc::scaled_presets as the fp8 rows.
  for (F o : {F::fp32, F::fp16}) {
#define BF16EMU_ROW(A, B)                                                                                    \
  t.push_back(issue16_row(                                                                                   \
      "tcgen05_f8f6f4_" + ab_name(F::A, F::B) + "_" + oname(o),                                              \
      std::string("tcgen05.mma.cta_group::1.kind::f8f6f4 (") + ptx_out(o) + " acc), k32", "f8f6f4", F::A,    \
      F::B, o, 32, 100, 100, mma_family::none, true, scaled_op::f8f6f4, K::tcgen05));
    BF16EMU_F8F6F4_FP6FP4_PAIRS(BF16EMU_ROW)
#undef BF16EMU_ROW
  }
}

std::vector<probe_kernel> make_table() {
  const instr M = instr::mma_sync, W = instr::wgmma, T5 = instr::tcgen05;
  const in_type bf = in_type::bf16, h = in_type::fp16, tf = in_type::tf32, e4 = in_type::e4m3,
                e5 = in_type::e5m2;
  const out_type o32 = out_type::fp32, o16 = out_type::fp16;
  // tc::scaled_presets' instruction text for tcgen05 kind::f8f6f4.
  const char *kF8 = "tcgen05.mma.cta_group::1.kind::f8f6f4 (f32 acc), k32",
             *kF8h = "tcgen05.mma.cta_group::1.kind::f8f6f4 (f16 acc), k32";
  // The build carries sm_80 code (with compute_80 PTX, which later devices JIT), sm_90a code (runs
  // on 9.0 only) and sm_120a code (12.0 only): cuda/CMakeLists.txt.
  std::vector<probe_kernel> t{
      // mma.sync, one input format (the first probes).
      plain("mma_bf16_fp32", K::mma, F::bf16, F::bf16, F::fp32, 16,
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 80, kAny, M, bf, bf, o32),
      plain("mma_fp16_fp32", K::mma, F::fp16, F::fp16, F::fp32, 16,
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 80, kAny, M, h, h, o32),
      plain("mma_fp16_fp16", K::mma, F::fp16, F::fp16, F::fp16, 16,
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 80, kAny, M, h, h, o16),
      plain("mma_tf32_fp32", K::mma, F::tf32, F::tf32, F::fp32, 8,
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 80, kAny, M, tf, tf, o32),
      plain("mma_e4m3_fp32", K::mma, F::e4m3, F::e4m3, F::fp32, 32,
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 89, 90, M, e4, e4, o32),
      plain("mma_e5m2_fp32", K::mma, F::e5m2, F::e5m2, F::fp32, 32,
            "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 89, 90, M, e5, e5, o32),
      plain("mma_e4m3_fp16", K::mma, F::e4m3, F::e4m3, F::fp16, 32,
            "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", 89, 90, M, e4, e4, o16),
      plain("mma_e5m2_fp16", K::mma, F::e5m2, F::e5m2, F::fp16, 32,
            "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", 89, 90, M, e5, e5, o16),
      // Issue 16: m16n8k8 fp16, the fp8 mixes, kind::f8f6f4, f64.
      p16("mma_fp16_fp32_k8", "", F::fp16, F::fp16, F::fp32, 8,
          "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 75, kAny, probe16_op::fp16_k8_f32),
      p16("mma_fp16_fp16_k8", "", F::fp16, F::fp16, F::fp16, 8,
          "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 75, kAny, probe16_op::fp16_k8_f16),
      p16("mma_e4m3xe5m2_fp32", "", F::e4m3, F::e5m2, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", 89, 90, probe16_op::e4m3_e5m2),
      p16("mma_e5m2xe4m3_fp32", "", F::e5m2, F::e4m3, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32", 89, 90, probe16_op::e5m2_e4m3),
      p16("mma_e4m3xe5m2_fp16", "", F::e4m3, F::e5m2, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16", 89, 90, probe16_op::e4m3_e5m2_f16),
      p16("mma_e5m2xe4m3_fp16", "", F::e5m2, F::e4m3, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16", 89, 90, probe16_op::e5m2_e4m3_f16),
      p16("mma_f8f6f4_e4m3_fp32", "f8f6f4", F::e4m3, F::e4m3, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32", 120, 120,
          probe16_op::f8f6f4_e4m3_e4m3),
      p16("mma_f8f6f4_e4m3xe5m2_fp32", "f8f6f4", F::e4m3, F::e5m2, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e5m2.f32", 120, 120,
          probe16_op::f8f6f4_e4m3_e5m2),
      p16("mma_f8f6f4_e5m2xe4m3_fp32", "f8f6f4", F::e5m2, F::e4m3, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e4m3.f32", 120, 120,
          probe16_op::f8f6f4_e5m2_e4m3),
      p16("mma_f8f6f4_e5m2_fp32", "f8f6f4", F::e5m2, F::e5m2, F::fp32, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e5m2.f32", 120, 120,
          probe16_op::f8f6f4_e5m2_e5m2),
      p16("mma_f8f6f4_e4m3_fp16", "f8f6f4", F::e4m3, F::e4m3, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e4m3.f16", 120, 120,
          probe16_op::f8f6f4_e4m3_e4m3_f16),
      p16("mma_f8f6f4_e4m3xe5m2_fp16", "f8f6f4", F::e4m3, F::e5m2, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e5m2.f16", 120, 120,
          probe16_op::f8f6f4_e4m3_e5m2_f16),
      p16("mma_f8f6f4_e5m2xe4m3_fp16", "f8f6f4", F::e5m2, F::e4m3, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e4m3.f16", 120, 120,
          probe16_op::f8f6f4_e5m2_e4m3_f16),
      p16("mma_f8f6f4_e5m2_fp16", "f8f6f4", F::e5m2, F::e5m2, F::fp16, 32,
          "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e5m2.f16", 120, 120,
          probe16_op::f8f6f4_e5m2_e5m2_f16),
      p16("mma_fp64_fp64", "", F::fp64, F::fp64, F::fp64, 4,
          "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 80, kAny, probe16_op::f64),
      // wgmma (sm_90a): the first probes, then the issue-16 fp8 mixes.
      plain("wgmma_bf16_fp32", K::wgmma, F::bf16, F::bf16, F::fp32, 16,
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", 90, 90, W, bf, bf, o32),
      plain("wgmma_fp16_fp32", K::wgmma, F::fp16, F::fp16, F::fp32, 16,
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", 90, 90, W, h, h, o32),
      plain("wgmma_fp16_fp16", K::wgmma, F::fp16, F::fp16, F::fp16, 16,
            "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16", 90, 90, W, h, h, o16),
      plain("wgmma_tf32_fp32", K::wgmma, F::tf32, F::tf32, F::fp32, 8,
            "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", 90, 90, W, tf, tf, o32),
      plain("wgmma_e4m3_fp32", K::wgmma, F::e4m3, F::e4m3, F::fp32, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", 90, 90, W, e4, e4, o32),
      plain("wgmma_e5m2_fp32", K::wgmma, F::e5m2, F::e5m2, F::fp32, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2", 90, 90, W, e5, e5, o32),
      plain("wgmma_e4m3_fp16", K::wgmma, F::e4m3, F::e4m3, F::fp16, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3", 90, 90, W, e4, e4, o16),
      plain("wgmma_e5m2_fp16", K::wgmma, F::e5m2, F::e5m2, F::fp16, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e5m2", 90, 90, W, e5, e5, o16),
      plain("wgmma_e4m3xe5m2_fp32", K::wgmma, F::e4m3, F::e5m2, F::fp32, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2", 90, 90, W, e4, e5, o32),
      plain("wgmma_e5m2xe4m3_fp32", K::wgmma, F::e5m2, F::e4m3, F::fp32, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3", 90, 90, W, e5, e4, o32),
      plain("wgmma_e4m3xe5m2_fp16", K::wgmma, F::e4m3, F::e5m2, F::fp16, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e5m2", 90, 90, W, e4, e5, o16),
      plain("wgmma_e5m2xe4m3_fp16", K::wgmma, F::e5m2, F::e4m3, F::fp16, 32,
            "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e4m3", 90, 90, W, e5, e4, o16),
      // tcgen05 (sm_100a), M128 N128; the instruction text is the preset's (tc/presets.hpp).
      plain("tcgen05_bf16_fp32", K::tcgen05, F::bf16, F::bf16, F::fp32, 16,
            "tcgen05.mma.cta_group::1.kind::f16 (bf16 in, f32 acc), k16", 100, 100, T5, bf, bf, o32),
      plain("tcgen05_fp16_fp32", K::tcgen05, F::fp16, F::fp16, F::fp32, 16,
            "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f32 acc), k16", 100, 100, T5, h, h, o32),
      plain("tcgen05_fp16_fp16", K::tcgen05, F::fp16, F::fp16, F::fp16, 16,
            "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f16 acc), k16", 100, 100, T5, h, h, o16),
      plain("tcgen05_tf32_fp32", K::tcgen05, F::tf32, F::tf32, F::fp32, 8,
            "tcgen05.mma.cta_group::1.kind::tf32, k8", 100, 100, T5, tf, tf, o32),
      tc5_f8("tcgen05_f8f6f4_e4m3_fp32", F::e4m3, F::e4m3, F::fp32, kF8, e4, e4, o32),
      tc5_f8("tcgen05_f8f6f4_e4m3xe5m2_fp32", F::e4m3, F::e5m2, F::fp32, kF8, e4, e5, o32),
      tc5_f8("tcgen05_f8f6f4_e5m2xe4m3_fp32", F::e5m2, F::e4m3, F::fp32, kF8, e5, e4, o32),
      tc5_f8("tcgen05_f8f6f4_e5m2_fp32", F::e5m2, F::e5m2, F::fp32, kF8, e5, e5, o32),
      tc5_f8("tcgen05_f8f6f4_e4m3_fp16", F::e4m3, F::e4m3, F::fp16, kF8h, e4, e4, o16),
      tc5_f8("tcgen05_f8f6f4_e4m3xe5m2_fp16", F::e4m3, F::e5m2, F::fp16, kF8h, e4, e5, o16),
      tc5_f8("tcgen05_f8f6f4_e5m2xe4m3_fp16", F::e5m2, F::e4m3, F::fp16, kF8h, e5, e4, o16),
      tc5_f8("tcgen05_f8f6f4_e5m2_fp16", F::e5m2, F::e5m2, F::fp16, kF8h, e5, e5, o16),
  };
  add_second_batch(t);
  return t;
}

// The block-scaled kernels (cuda/scaled_probe.cu, f32 out), after the others: kind::mxf8f6f4 with A
// and B any of the five f8f6f4 formats, kind::mxf4, kind::mxf4nvf4; mma.sync on sm_120a (no
// mxf4nvf4 with ue8m0 factors: ptxas refuses its scale_vec::4X form), then tcgen05 on sm_100a
// (mxf4nvf4 with both factor formats: the descriptor, not the instruction text, names it). The
// tcgen05 instruction text is the preset's (tc/scaled.hpp).
std::vector<probe_kernel> with_block_scaled(std::vector<probe_kernel> t) {
  for (const K kind : {K::mma, K::tcgen05}) {
    const bool t5 = kind == K::tcgen05;
    const std::string unit = t5 ? "tcgen05" : "mma";
    const int cc = t5 ? 100 : 120;
    auto row = [&](const std::string &stem, const char *opt, F a, F b, int k, const std::string &ptx,
                   scaled_op op) {
      t.push_back(issue16_row(unit + "_" + stem + "_fp32", ptx, opt, a, b, F::fp32, k, cc, cc,
                              mma_family::none, true, op, kind));
    };
    for (const F a : tc::f8f6f4_formats)
      for (const F b : tc::f8f6f4_formats)
        row("mxf8f6f4_" + ab_name(a, b), "mxf8f6f4", a, b, 32,
            t5 ? "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X, k32"
               : std::string(
                     "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.") +
                     io::name(a) + "." + io::name(b) + ".f32.ue8m0",
            scaled_op::mxf8f6f4);
    row("mxf4_e2m1", "mxf4", F::e2m1, F::e2m1, 64,
        t5 ? "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X, k64"
           : "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0",
        scaled_op::mxf4);
    if (t5)
      row("mxf4nvf4_ue8m0", "mxf4nvf4", F::e2m1, F::e2m1, 64,
          "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X (ue8m0), k64",
          scaled_op::mxf4nvf4_ue8m0);
    row("mxf4nvf4_ue4m3", "mxf4nvf4", F::e2m1, F::e2m1, 64,
        t5 ? "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X (ue4m3), k64"
           : "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32."
             "ue4m3",
        scaled_op::mxf4nvf4_ue4m3);
  }
  return t;
}

bool block_scaled_kind(const std::string &kind) {
  return kind == "mxf8f6f4" || kind == "mxf4" || kind == "mxf4nvf4";
}

bool parse_named(const std::string &s, bool (*parse)(const std::string &, format_id &), format_id &f,
                 const char *opt, std::string &why) {
  if (parse(s, f)) return true;
  why = std::string("bad ") + opt + " '" + io::shorten(s) + "'";
  return false;
}

} // namespace

const std::vector<probe_kernel> &probe_kernels() {
  static const std::vector<probe_kernel> table = with_block_scaled(make_table());
  return table;
}

tc::scale_kind kernel_scale(const probe_kernel &p) {
  return !block_scaled(p.sop)                 ? tc::scale_kind::none
         : p.sop == scaled_op::mxf4nvf4_ue4m3 ? tc::scale_kind::ue4m3
                                              : tc::scale_kind::ue8m0;
}

int kernel_vec(const probe_kernel &p) {
  return !block_scaled(p.sop)                                                       ? 0
         : p.sop == scaled_op::mxf4nvf4_ue4m3 || p.sop == scaled_op::mxf4nvf4_ue8m0 ? 16
                                                                                    : 32;
}

std::string in_column(const probe_kernel &p) { return ab_name(p.a, p.b); }

bool kernel_runs_on(const probe_kernel &p, int cc) {
  return (cc >= p.cc_min && cc <= p.cc_max) || (p.cc_also != 0 && cc == p.cc_also);
}

std::string kernel_ccs(const probe_kernel &p) {
  const auto cc = [](int c) { return std::to_string(c / 10) + "." + std::to_string(c % 10); };
  std::string s = "cc " + (p.cc_also != 0 && p.cc_also < p.cc_min ? cc(p.cc_also) + ", " : std::string());
  s += cc(p.cc_min) + (p.cc_max == p.cc_min ? "" : p.cc_max == p.cc_min + 1 ? ", " + cc(p.cc_max) : "+");
  if (p.cc_also > p.cc_max) s += ", " + cc(p.cc_also);
  return s;
}

probe_request kernel_request(const probe_kernel &p) {
  probe_request r;
  r.instr = tc::to_string(p.kind), r.kind = p.opt_kind, r.a = io::name(p.a), r.b = io::name(p.b);
  r.out = io::name(p.out), r.shape_k = p.k;
  if (p.c) r.c = io::name(*p.c);
  if (block_scaled(p.sop))
    r.scale_format = tc::to_string(kernel_scale(p)), r.scale_vec = unsigned(kernel_vec(p));
  return r;
}

const probe_kernel *find_probe_kernel(const probe_request &r, std::string &why) {
  if (!r.name.empty()) {
    if (!r.instr.empty() || !r.kind.empty() || !r.a.empty() || !r.b.empty() || !r.c.empty() ||
        !r.out.empty() || !r.scale_format.empty() || r.scale_vec || r.shape_k) {
      why = "--kernel names the kernel: give no other kernel option with it";
      return nullptr;
    }
    for (const probe_kernel &p : probe_kernels())
      if (r.name == p.name) return &p;
    why = "unknown --kernel '" + io::shorten(r.name) + "' (probe --list prints the kernels)";
    return nullptr;
  }
  tc::instr_kind kind = tc::instr_kind::mma;
  if (!r.instr.empty() && !tc::parse_instr(r.instr, kind)) {
    why = "bad --instr '" + io::shorten(r.instr) + "' (mma, wgmma, tcgen05)";
    return nullptr;
  }
  const bool scaled = block_scaled_kind(r.kind);
  if (!r.kind.empty() && r.kind != "f8f6f4" && !scaled) {
    why = "bad --kind '" + io::shorten(r.kind) + "' (f8f6f4, mxf8f6f4, mxf4, mxf4nvf4)";
    return nullptr;
  }
  // The scale factors: the kind's default (as `bf16emu mma`: ue4m3 for mxf4nvf4, else ue8m0).
  tc::scale_kind scale = !scaled                ? tc::scale_kind::none
                         : r.kind == "mxf4nvf4" ? tc::scale_kind::ue4m3
                                                : tc::scale_kind::ue8m0;
  if ((!r.scale_format.empty() || r.scale_vec) && !scaled) {
    why = "--scale-format / --scale-vec need a block-scaled --kind (mxf8f6f4, mxf4, mxf4nvf4)";
    return nullptr;
  }
  if (!r.scale_format.empty()) {
    if (r.scale_format != "ue8m0" && r.scale_format != "ue4m3") {
      why = "bad --scale-format '" + io::shorten(r.scale_format) + "' (ue8m0, ue4m3)";
      return nullptr;
    }
    scale = r.scale_format == "ue8m0" ? tc::scale_kind::ue8m0 : tc::scale_kind::ue4m3;
  }
  if (r.scale_vec && r.scale_vec != 16 && r.scale_vec != 32) {
    why = "bad --scale-vec " + std::to_string(r.scale_vec) + " (16, 32)";
    return nullptr;
  }
  format_id a = scaled && r.kind != "mxf8f6f4" ? format_id::e2m1 : format_id::bf16, b, out, c;
  if (!r.a.empty() && !parse_named(r.a, parse_in_format, a, "--format", why)) return nullptr;
  b = a;
  if (!r.b.empty() && !parse_named(r.b, parse_in_format, b, "--b-format", why)) return nullptr;
  out = a == format_id::fp64 ? format_id::fp64 : format_id::fp32;
  if (!r.out.empty() && !parse_named(r.out, parse_out_format, out, "--out", why)) return nullptr;
  c = out;
  if (!r.c.empty() && !parse_named(r.c, parse_out_format, c, "--c-format", why)) return nullptr;
  for (const probe_kernel &p : probe_kernels())
    if (p.kind == kind && r.kind == p.opt_kind && p.a == a && p.b == b && p.out == out &&
        p.c.value_or(p.out) == c && (r.shape_k == 0 || r.shape_k == p.k) && kernel_scale(p) == scale &&
        (r.scale_vec == 0 || int(r.scale_vec) == kernel_vec(p)))
      return &p;
  if (c != out) {
    why = "--c-format " + std::string(io::name(c)) + " --out " + io::name(out) +
          ": no probe kernel issues this C/D format mix (the one kernel with a C format of its own is m8n8k4 "
          "with C fp16 and D fp32, `--format fp16 --shape-k 4`; ptxas rejects D f16 with C f32, \".dtype "
          "must be '.f32' when .ctype is '.f32'\"; the host model has both: `bf16emu mma --c-format`)";
    return nullptr;
  }
  // The kernels of this instruction with A's format (all of them when none has it).
  std::string have, all;
  for (const probe_kernel &p : probe_kernels())
    if (p.kind == kind) {
      all += std::string(" ") + p.name;
      if (p.a == a) have += std::string(" ") + p.name;
    }
  if (have.empty()) have = all;
  const auto fp6fp4 = [](format_id f) {
    return f == format_id::e3m2 || f == format_id::e2m3 || f == format_id::e2m1;
  };
  if (r.kind.empty() && (fp6fp4(a) || fp6fp4(b))) have += " (fp6/fp4 operands: --kind f8f6f4)";
  why = std::string("no probe kernel for ") + tc::to_string(kind) +
        (r.kind.empty() ? "" : " kind::" + r.kind) + " " + io::name(a) +
        (b != a ? std::string(" x ") + io::name(b) : std::string()) + " -> " + io::name(out) +
        (r.shape_k ? " k" + std::to_string(r.shape_k) : std::string()) +
        (scaled ? std::string(" scale ") + tc::to_string(scale) +
                      (r.scale_vec ? " vec " + std::to_string(r.scale_vec) : std::string())
                : std::string()) +
        (r.kind == "mxf4nvf4" && scale == tc::scale_kind::ue8m0 && kind == tc::instr_kind::mma
             ? " (mxf4nvf4 with ue8m0 factors: ptxas refuses mma.sync scale_vec::4X, the model's sm120 "
               "preset; no mma kernel issues it, --instr tcgen05 does)"
             : "") +
        "; " + tc::to_string(kind) + " kernels:" + have +
        (kind == tc::instr_kind::tcgen05 ? " (fp8 operands: --kind f8f6f4; block-scaled: --kind mxf8f6f4, "
                                           "mxf4, mxf4nvf4)"
                                         : "");
  return nullptr;
}

kernel_model kernel_preset(const probe_kernel &p, tc::arch arch, std::string &why) {
  kernel_model m;
  if (!p.scaled) {
    m.block = model_preset(arch, p.kind, p.a, p.b, p.c.value_or(p.out), p.out, p.k, why);
    return m;
  }
  m.scaled = tc::find_scaled_preset(arch, p.kind, p.opt_kind, kernel_scale(p), kernel_vec(p), p.out);
  if (m.scaled && !tc::takes_formats(*m.scaled, p.a, p.b)) m.scaled = nullptr;
  if (!m.scaled)
    why = std::string("the model has no kind::") + p.opt_kind + " preset for arch " + tc::to_string(arch) +
          ", " + in_column(p) + " -> " + io::name(p.out);
  return m;
}

void model_kernel_lines(const kernel_model &m, const vec_set &v, std::vector<std::uint64_t> &d, int threads) {
  if (m.block)
    model_lines(v, *m.block, d, threads);
  else if (m.scaled)
    model_lines(v, *m.scaled, d, threads);
}

void trace_kernel_line(std::ostream &os, const kernel_model &m, const vec_set &v, std::size_t line) {
  if (m.block)
    trace_line(os, v, line, *m.block);
  else if (m.scaled)
    os << "# model " << m.scaled->ptx << " (tc::scaled_dot, F " << m.scaled->params.F
       << "): no block trace; `bf16emu mma --kind " << m.scaled->kind << "` gives its result\n";
}

vec_set kernel_vectors(const probe_kernel &p, int K) {
  vec_set v;
  v.in = p.a, v.out = p.out, v.k = K;
  if (p.b != p.a) v.in_b = p.b;
  v.in_c = p.c;
  v.scale = kernel_scale(p), v.vec = kernel_vec(p);
  return v;
}

std::string probe_header(const probe_kernel &p, const std::string &arch, int K) {
  std::string h = "#! arch=" + arch + " instr=" + tc::to_string(p.kind) + " in=" + io::name(p.a) +
                  " out=" + io::name(p.out) + " k=" + std::to_string(K);
  if (p.b != p.a) h += std::string(" b=") + io::name(p.b);
  if (p.c) h += std::string(" c=") + io::name(*p.c);
  if (*p.opt_kind) h += std::string(" kind=") + p.opt_kind;
  if (block_scaled(p.sop))
    h += std::string(" scale=") + tc::to_string(kernel_scale(p)) + " vec=" + std::to_string(kernel_vec(p));
  // The kernel the header selects without shape_k= is the first of these formats.
  probe_request r = kernel_request(p);
  r.shape_k = 0;
  std::string why;
  if (find_probe_kernel(r, why) != &p) h += " shape_k=" + std::to_string(p.k);
  return h;
}

bool parse_probe_header(const std::string &text, probe_header_fields &h, std::string &why) {
  std::map<std::string, std::string> kv;
  for (const std::string &tok : io::split_tokens(text)) {
    const auto eq = tok.find('=');
    const std::string key = tok.substr(0, eq);
    static const char *const keys[] = {"arch", "instr", "in",    "out", "k",      "b",
                                       "c",    "kind",  "scale", "vec", "shape_k"};
    if (eq == std::string::npos || std::find(std::begin(keys), std::end(keys), key) == std::end(keys)) {
      why = "unknown header key '" + io::shorten(tok) +
            "' (arch= instr= in= out= k= [b= c= kind= scale= vec= shape_k=])";
      return false;
    }
    if (!kv.emplace(key, tok.substr(eq + 1)).second) {
      why = "header key " + key + "= given twice";
      return false;
    }
  }
  for (const char *key : {"arch", "instr", "in", "out", "k"})
    if (!kv.count(key)) {
      why = std::string("header without ") + key +
            "= (arch= instr= in= out= k= [b= c= kind= scale= vec= shape_k=])";
      return false;
    }
  auto bad = [&](const char *key) {
    why = std::string("bad header value ") + key + "='" + io::shorten(kv.at(key)) + "'";
    return false;
  };
  tc::instr_kind kind{};
  format_id f{};
  if (!tc::parse_arch(kv.at("arch"), h.arch)) return bad("arch");
  if (!tc::parse_instr(kv.at("instr"), kind)) return bad("instr");
  if (!parse_in_format(kv.at("in"), f)) return bad("in");
  if (kv.count("b") && !parse_in_format(kv.at("b"), f)) return bad("b");
  if (!parse_out_format(kv.at("out"), f)) return bad("out");
  if (kv.count("c") && !parse_out_format(kv.at("c"), f)) return bad("c");
  probe_request &r = h.request;
  r = probe_request{};
  r.instr = kv.at("instr"), r.a = kv.at("in"), r.out = kv.at("out");
  if (kv.count("b")) r.b = kv.at("b");
  if (kv.count("c")) r.c = kv.at("c");
  if (kv.count("kind")) r.kind = kv.at("kind");
  if (kv.count("scale")) {
    r.scale_format = kv.at("scale");
    if (r.scale_format != "ue8m0" && r.scale_format != "ue4m3") return bad("scale");
  }
  try {
    h.k = int(io::parse_uint(kv.at("k"), 1u << 20, "header k="));
    if (kv.count("shape_k")) r.shape_k = int(io::parse_uint(kv.at("shape_k"), 256, "header shape_k="));
    if (kv.count("vec")) r.scale_vec = unsigned(io::parse_uint(kv.at("vec"), 64, "header vec="));
  } catch (const std::exception &e) {
    why = e.what();
    return false;
  }
  if (h.k == 0) return bad("k");
  if (kv.count("shape_k") && r.shape_k == 0) return bad("shape_k");
  if (kv.count("vec") && r.scale_vec != 16 && r.scale_vec != 32) return bad("vec");
  return true;
}

} // namespace bf16emu::gpu
