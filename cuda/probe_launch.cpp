// bf16emu CUDA twin: the device half of the probe kernel table (see probe_table.hpp): whether a
// device runs a kernel, and running it. Only bf16emu-gpu links it (the table, the selection and
// the host model, in probe_table.cpp, need no CUDA).
#include "kernels.hpp"
#include "probe_table.hpp"

namespace bf16emu::gpu {
namespace {

probe_job job_of(const probe_kernel &p, int K) {
  probe_job j;
  j.op = p.op, j.type = p.ta, j.type_b = p.tb, j.out = p.to, j.k = K;
  return j;
}

// The kernel-side element type of an operand format (run_mma, run_probe_scaled).
mma_elem elem_of(format_id f) {
  switch (f) {
  case format_id::e4m3: return mma_elem::e4m3;
  case format_id::e5m2: return mma_elem::e5m2;
  case format_id::e3m2: return mma_elem::e3m2;
  case format_id::e2m3: return mma_elem::e2m3;
  case format_id::tf32: return mma_elem::tf32;
  case format_id::bf16: return mma_elem::bf16;
  case format_id::fp16: return mma_elem::f16;
  case format_id::fp64: return mma_elem::f64;
  default: return mma_elem::e2m1;
  }
}

// The block-scaled job of kernel p, K values per line.
probe_scaled_job scaled_job_of(const probe_kernel &p, int K) {
  probe_scaled_job j;
  j.op = p.sop, j.unit = p.op, j.out16 = p.out == format_id::fp16, j.ta = elem_of(p.a), j.tb = elem_of(p.b);
  j.k = K;
  return j;
}

mma_job mma_job_of(const probe_kernel &p, int K) {
  mma_job j;
  j.fam = p.fam, j.a = elem_of(p.a), j.b = elem_of(p.b), j.out16 = p.out == format_id::fp16, j.k = K;
  j.c16 = !j.out16 && p.c == format_id::fp16;
  return j;
}

} // namespace

int kernel_instr_k(const probe_kernel &p) {
  return p.fam != mma_family::none  ? mma_family_k(p.fam)
         : p.sop != scaled_op::none ? scaled_instr_k(p.sop)
         : p.p16                    ? probe16_instr_k(p.op16)
                                    : instr_k(p.ta);
}

bool kernel_supported(const probe_kernel &p, int K, int cc_major, int cc_minor) {
  if (p.fam != mma_family::none) return mma_supported(mma_job_of(p, K), cc_major, cc_minor);
  if (p.sop != scaled_op::none) return probe_scaled_supported(scaled_job_of(p, K), cc_major, cc_minor);
  if (p.p16) {
    probe16_job j;
    j.op = p.op16, j.k = K;
    return probe16_supported(j, cc_major, cc_minor);
  }
  return supported(job_of(p, K), cc_major, cc_minor);
}

int run_kernel(const probe_kernel &p, const vec_set &v, std::vector<std::uint64_t> &d) {
  d.assign(v.lines(), 0);
  if (p.fam != mma_family::none) {
    mma_job j = mma_job_of(p, v.k);
    j.lines = v.lines(), j.ab = v.a.data(), j.bb = v.b.data(), j.c = v.c.data(), j.d = d.data();
    return run_mma(j);
  }
  if (p.sop != scaled_op::none) {
    probe_scaled_job j = scaled_job_of(p, v.k);
    j.lines = v.lines(), j.a = v.a.data(), j.b = v.b.data(), j.c = v.c.data(), j.d = d.data();
    j.sa = v.sa.data(), j.sb = v.sb.data();
    return run_probe_scaled(j);
  }
  if (p.p16) {
    probe16_job j;
    j.op = p.op16, j.k = v.k, j.lines = v.lines();
    j.a = v.a.data(), j.b = v.b.data(), j.c = v.c.data(), j.d = d.data();
    return run_probe16(j);
  }
  // run_probe takes 32-bit patterns (every format it issues fits).
  const std::vector<std::uint32_t> a(v.a.begin(), v.a.end()), b(v.b.begin(), v.b.end()),
      c(v.c.begin(), v.c.end());
  std::vector<std::uint32_t> d32(v.lines());
  probe_job j = job_of(p, v.k);
  j.lines = v.lines(), j.a = a.data(), j.b = b.data(), j.c = c.data(), j.d = d32.data();
  const int err = run_probe(j);
  d.assign(d32.begin(), d32.end());
  return err;
}

} // namespace bf16emu::gpu
