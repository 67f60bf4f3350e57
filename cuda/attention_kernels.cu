// bf16emu CUDA twin: FlashAttention-2-style forward (BF16, mma.sync.m16n8k16, online softmax)
// and the backward's delta = rowsum(dO * O).
//
// The forward implements attention::fa2_twin() of include/bf16emu/attention/policy.hpp, step by
// step as docs/attention.md ("Kernel contract") numbers them; the step numbers appear below.
// Everything that rounds is an explicit IEEE intrinsic (__fmaf_rn, __fmul_rn, __fadd_rn,
// __fsub_rn, __fdiv_rn, __float2bfloat16_rn), the file is compiled with -fmad=false -ftz=false
// -prec-div=true, and exp2 is attention::exp2_poly on attention::native_f32_backend. With
// BF16EMU_GPU_FAST_EXP the exp2 is the MUFU instruction ex2.approx.f32 instead: that build is
// NOT bit-exact and is compared by tolerance only.
//
// Layout (cuda/README.md, "Forward kernel"): a CTA of 4 warps owns Br = 64 query rows of one
// head; warp w owns rows 16w..16w+15; lane (g = lane/4, t = lane%4) holds rows g and g+8 and,
// of every 8-key group, keys 2t and 2t+1 (so lane t is the contract's quad lane q = t). KV
// blocks of Bc = 64 keys are visited in reverse order, double-buffered in shared memory with
// cp.async (rows padded by 8 elements).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "bf16emu/attention/exp2_poly.hpp"
#include "kernels.hpp"

namespace bf16emu::gpu {
namespace {

constexpr int kBr = 64, kBc = 64, kThreads = 128;

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t smem_addr(const void *p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void cp_async16(void *s, const void *g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(s)), "l"(g));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// exp2 of the contract (or the MUFU approximation in the fast build).
__device__ __forceinline__ float exp2_dev(float x) {
#if defined(BF16EMU_GPU_FAST_EXP)
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  attention::native_f32_backend b;
  return attention::exp2_poly(b, x);
#endif
}

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const std::uint32_t l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const std::uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return l | (h << 16);
}

constexpr float kNegInf = -__builtin_huge_valf();

template <int D, bool Causal, bool Stab>
__global__ void __launch_bounds__(kThreads)
    fa2_forward(const std::uint16_t *__restrict__ Q, const std::uint16_t *__restrict__ K,
                const std::uint16_t *__restrict__ V, std::uint16_t *__restrict__ O, float *__restrict__ Mrow,
                float *__restrict__ Lrow, int N, float c, float beta, double tie_tol) {
  constexpr int S = D + 8; // padded row of a K/V tile, in elements
  extern __shared__ __align__(16) std::uint16_t smem[];
  std::uint16_t *Ks = smem;               // [2][kBc][S]
  std::uint16_t *Vs = smem + 2 * kBc * S; // [2][kBc][S]

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int q0 = blockIdx.x * kBr;
  const std::size_t head = std::size_t(blockIdx.y) * N * D;
  Q += head, K += head, V += head, O += head;
  Mrow += std::size_t(blockIdx.y) * N, Lrow += std::size_t(blockIdx.y) * N;
  const int row0 = q0 + 16 * warp + g; // this lane's rows: row0 (h = 0) and row0 + 8 (h = 1)

  // Q fragments, d/16 k-chunks (A operand of S = Q K^T).
  std::uint32_t qf[D / 16][4];
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const std::uint16_t *p = Q + std::size_t(row0) * D + 16 * kd + 2 * t;
    qf[kd][0] = *reinterpret_cast<const std::uint32_t *>(p);
    qf[kd][1] = *reinterpret_cast<const std::uint32_t *>(p + 8 * D);
    qf[kd][2] = *reinterpret_cast<const std::uint32_t *>(p + 8);
    qf[kd][3] = *reinterpret_cast<const std::uint32_t *>(p + 8 * D + 8);
  }

  auto load_kv = [&](int b, int buf) {
    constexpr int chunks = kBc * D / 8; // 16-byte chunks per tile
#pragma unroll
    for (int i = tid; i < chunks; i += kThreads) {
      const int r = i / (D / 8), col = (i % (D / 8)) * 8;
      const std::size_t src = std::size_t(b * kBc + r) * D + col;
      cp_async16(Ks + (buf * kBc + r) * S + col, K + src);
      cp_async16(Vs + (buf * kBc + r) * S + col, V + src);
    }
  };

  float m[2] = {kNegInf, kNegInf}; // running max (the shift), per row
  float l[2] = {0.0f, 0.0f};       // this lane's partial row sums l_q (q = t)
  float o[D / 8][4];               // O_acc: D/8 tiles of m16n8
#pragma unroll
  for (int i = 0; i < D / 8; ++i)
    o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;

  const int n_blocks = Causal ? (min(N, q0 + kBr) + kBc - 1) / kBc : (N + kBc - 1) / kBc;
  load_kv(n_blocks - 1, 0);
  cp_async_commit();
  for (int it = 0; it < n_blocks; ++it) {
    const int b = n_blocks - 1 - it, buf = it & 1; // KV blocks in reverse order
    if (it + 1 < n_blocks) load_kv(b - 1, buf ^ 1);
    cp_async_commit();
    cp_async_wait1();
    __syncthreads();
    const std::uint16_t *Kb = Ks + buf * kBc * S, *Vb = Vs + buf * kBc * S;

    // 1. S = Q K^T: per element one accumulator from +0, k-chunks of 16 in increasing order.
    float s[kBc / 8][4];
#pragma unroll
    for (int i = 0; i < kBc / 8; ++i)
      s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
#pragma unroll
      for (int np = 0; np < kBc / 16; ++np) {
        const int mat = lane >> 3, r = lane & 7;
        std::uint32_t kf[4];
        ldmatrix_x4(kf, Kb + (16 * np + r + 8 * (mat >> 1)) * S + 16 * kd + 8 * (mat & 1));
        mma_bf16(s[2 * np], qf[kd], kf[0], kf[1]);
        mma_bf16(s[2 * np + 1], qf[kd], kf[2], kf[3]);
      }
    }
    // 2. Mask.
    if constexpr (Causal) {
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = b * kBc + 8 * nt + 2 * t + (e & 1), r = row0 + 8 * (e >> 1);
          if (j > r) s[nt][e] = kNegInf;
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // 3. Row max over the block (exact), quad shuffle offsets 2 then 1.
      float mb = kNegInf;
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt)
        mb = fmaxf(mb, fmaxf(s[nt][2 * h], s[nt][2 * h + 1]));
      mb = fmaxf(mb, __shfl_xor_sync(0xffffffffu, mb, 2));
      mb = fmaxf(mb, __shfl_xor_sync(0xffffffffu, mb, 1));
      if constexpr (Stab) {
        // (The shuffles stay outside any row-dependent branch: every lane of the warp takes them.)
        const float rm = mb;
        const double thr = double(rm) - tie_tol;
        int cnt = 0;
#pragma unroll
        for (int nt = 0; nt < kBc / 8; ++nt)
          cnt += (double(s[nt][2 * h]) >= thr) + (double(s[nt][2 * h + 1]) >= thr);
        cnt += __shfl_xor_sync(0xffffffffu, cnt, 2);
        cnt += __shfl_xor_sync(0xffffffffu, cnt, 1);
        if (rm != kNegInf && cnt > 1) {
          if (rm > 0)
            mb = __fmul_rn(beta, rm);
          else if (rm < 0)
            mb = 0.0f;
        }
      }
      const float m_new = fmaxf(m[h], mb);
      // 4. Rescale (not on the first block).
      if (it > 0) {
        const float mp = m_new == kNegInf ? 0.0f : m_new;
        const float alpha = exp2_dev(__fmul_rn(__fsub_rn(m[h], mp), c));
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          o[dt][2 * h] = __fmul_rn(o[dt][2 * h], alpha);
          o[dt][2 * h + 1] = __fmul_rn(o[dt][2 * h + 1], alpha);
        }
        l[h] = __fmul_rn(l[h], alpha);
      }
      m[h] = m_new;
      // 5. exp, 6. row sum (this lane's columns in increasing j).
      const float mc = m[h] == kNegInf ? 0.0f : __fmul_rn(m[h], c);
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
#if defined(BF16EMU_GPU_FAST_EXP)
          const float p = exp2_dev(__fmaf_rn(s[nt][e], c, -mc));
#else
          attention::native_f32_backend nb;
          const float p = exp2_dev(attention::exp2_arg(nb, s[nt][e], c, mc, true));
#endif
          s[nt][e] = p;
          l[h] = __fadd_rn(l[h], p);
        }
    }
    // 7. P -> BF16 (RN), 8. O_acc += P V: k-chunks of 16 keys in increasing order.
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      const std::uint32_t pa[4] = {
          pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
          pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        const int mat = lane >> 3, r = lane & 7;
        std::uint32_t vf[4];
        ldmatrix_x4_trans(vf, Vb + (16 * kk + r + 8 * (mat & 1)) * S + 16 * dp + 8 * (mat >> 1));
        mma_bf16(o[2 * dp], pa, vf[0], vf[1]);
        mma_bf16(o[2 * dp + 1], pa, vf[2], vf[3]);
      }
    }
    __syncthreads(); // the buffer is refilled two iterations later
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // 9. l = (l_0 + l_2) + (l_1 + l_3).
    float x = __fadd_rn(l[h], __shfl_xor_sync(0xffffffffu, l[h], 2));
    x = __fadd_rn(x, __shfl_xor_sync(0xffffffffu, x, 1));
    // 10. Normalize: inv = RN(1/l) (IEEE division), o = RN(O_acc * inv); 11. O -> BF16 (RN).
    const float inv = (x == 0.0f || x != x) ? 1.0f : __fdiv_rn(1.0f, x);
    const int r = row0 + 8 * h;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const std::uint32_t v = pack_bf16(__fmul_rn(o[dt][2 * h], inv), __fmul_rn(o[dt][2 * h + 1], inv));
      *reinterpret_cast<std::uint32_t *>(O + std::size_t(r) * D + 8 * dt + 2 * t) = v;
    }
    if (t == 0) Mrow[r] = m[h], Lrow[r] = x;
  }
}

// delta[r] = sum_i dO[r][i] * O[r][i] (backward preprocessing), the reference's order
// (include/bf16emu/attention/backward.hpp, fma_contract = true): one thread per row,
// acc = fma(dO[r][i], O[r][i], acc) for i = 0, 1, ..., d-1 from acc = +0. (FlashAttention-2 itself
// splits a row over 8 lanes and ends with a butterfly; that order is not the contract's.)
template <int D>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const std::uint16_t *__restrict__ Ob, const std::uint16_t *__restrict__ dOb,
                 float *__restrict__ delta, int rows) {
  const int row = blockIdx.x * kThreads + threadIdx.x;
  if (row >= rows) return;
  const uint4 *o4 = reinterpret_cast<const uint4 *>(Ob + std::size_t(row) * D);
  const uint4 *d4 = reinterpret_cast<const uint4 *>(dOb + std::size_t(row) * D);
  float acc = 0.0f;
#pragma unroll 4
  for (int c = 0; c < D / 8; ++c) {
    const uint4 ov = o4[c], dv = d4[c];
    const std::uint32_t ow[4] = {ov.x, ov.y, ov.z, ov.w}, dw[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float of = __uint_as_float((e & 1 ? ow[e / 2] >> 16 : ow[e / 2] & 0xffffu) << 16);
      const float df = __uint_as_float((e & 1 ? dw[e / 2] >> 16 : dw[e / 2] & 0xffffu) << 16);
      acc = __fmaf_rn(df, of, acc);
    }
  }
  delta[row] = acc;
}

template <int D>
cudaError_t launch_forward_d(const attention_job &job, const std::uint16_t *q, const std::uint16_t *k,
                             const std::uint16_t *v, std::uint16_t *o, float *m, float *l, float c) {
  const int smem = 4 * kBc * (D + 8) * 2; // K and V, two buffers each
  void (*fn)(const std::uint16_t *, const std::uint16_t *, const std::uint16_t *, std::uint16_t *, float *,
             float *, int, float, float, double) = nullptr;
  if (job.causal)
    fn = job.stabilized ? &fa2_forward<D, true, true> : &fa2_forward<D, true, false>;
  else
    fn = job.stabilized ? &fa2_forward<D, false, true> : &fa2_forward<D, false, false>;
  cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const dim3 grid(unsigned(job.n / kBr), unsigned(job.heads));
  // tie_tol 1e-3 in scaled-score units, divided by scale = RN32(1/sqrt(D)) for the unscaled S
  // (attention::unscaled_tie_tol, docs/attention.md kernel contract step 3).
  const double tie_tol = 1e-3 / double(float(1.0 / std::sqrt(double(D))));
  fn<<<grid, kThreads, smem>>>(q, k, v, o, m, l, job.n, c, job.beta, tie_tol);
  return cudaGetLastError();
}

} // namespace

#if defined(BF16EMU_GPU_FAST_EXP)
#define BF16EMU_FWD_NAME run_attention_fast_exp
#else
#define BF16EMU_FWD_NAME run_attention_exact
#endif

// c = RN32(scale * log2(e)) of the contract, computed by the caller (run_attention).
int BF16EMU_FWD_NAME(attention_job &job, float c) {
  if (job.n % kBr || (job.d != 64 && job.d != 128) || job.heads <= 0) return int(cudaErrorInvalidValue);
  const std::size_t nqkv = std::size_t(job.heads) * job.n * job.d, nrow = std::size_t(job.heads) * job.n;
  std::uint16_t *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *m = nullptr, *l = nullptr;
  int err = 0;
  auto ok = [&](cudaError_t e) {
    if (e != cudaSuccess && err == 0) err = int(e);
    return err == 0;
  };
  auto launch = [&] {
    return job.d == 64 ? launch_forward_d<64>(job, q, k, v, o, m, l, c)
                       : launch_forward_d<128>(job, q, k, v, o, m, l, c);
  };
  if (ok(cudaMalloc(&q, nqkv * 2)) && ok(cudaMalloc(&k, nqkv * 2)) && ok(cudaMalloc(&v, nqkv * 2)) &&
      ok(cudaMalloc(&o, nqkv * 2)) && ok(cudaMalloc(&m, nrow * 4)) && ok(cudaMalloc(&l, nrow * 4)) &&
      ok(cudaMemcpy(q, job.q, nqkv * 2, cudaMemcpyHostToDevice)) &&
      ok(cudaMemcpy(k, job.k, nqkv * 2, cudaMemcpyHostToDevice)) &&
      ok(cudaMemcpy(v, job.v, nqkv * 2, cudaMemcpyHostToDevice)) && ok(cudaMemset(o, 0xff, nqkv * 2)) &&
      ok(launch()) && ok(cudaDeviceSynchronize())) {
    if (job.repeats > 0) {
      cudaEvent_t a, b;
      cudaEventCreate(&a), cudaEventCreate(&b);
      std::vector<float> times;
      for (int r = 0; r < job.repeats && err == 0; ++r) {
        cudaEventRecord(a);
        ok(launch());
        cudaEventRecord(b);
        float ms = 0;
        if (ok(cudaEventSynchronize(b)) && ok(cudaEventElapsedTime(&ms, a, b))) times.push_back(ms);
      }
      cudaEventDestroy(a), cudaEventDestroy(b);
      std::sort(times.begin(), times.end());
      job.ms = times.empty() ? 0 : times[times.size() / 2];
    }
    if (err == 0 && ok(cudaMemcpy(job.o, o, nqkv * 2, cudaMemcpyDeviceToHost)) &&
        ok(cudaMemcpy(job.row_m, m, nrow * 4, cudaMemcpyDeviceToHost)))
      ok(cudaMemcpy(job.row_l, l, nrow * 4, cudaMemcpyDeviceToHost));
  }
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(m), cudaFree(l);
  return err;
}

#if !defined(BF16EMU_GPU_FAST_EXP)
int run_delta(delta_job &job) {
  if (job.d != 64 && job.d != 128) return int(cudaErrorInvalidValue);
  const std::size_t n = std::size_t(job.rows) * job.d;
  std::uint16_t *o = nullptr, *dout = nullptr;
  float *delta = nullptr;
  int err = 0;
  auto ok = [&](cudaError_t e) {
    if (e != cudaSuccess && err == 0) err = int(e);
    return err == 0;
  };
  if (ok(cudaMalloc(&o, n * 2)) && ok(cudaMalloc(&dout, n * 2)) &&
      ok(cudaMalloc(&delta, std::size_t(job.rows) * 4)) &&
      ok(cudaMemcpy(o, job.o, n * 2, cudaMemcpyHostToDevice)) &&
      ok(cudaMemcpy(dout, job.dout, n * 2, cudaMemcpyHostToDevice))) {
    const unsigned blocks = unsigned((job.rows + kThreads - 1) / kThreads);
    if (job.d == 64)
      delta_kernel<64><<<blocks, kThreads>>>(o, dout, delta, job.rows);
    else
      delta_kernel<128><<<blocks, kThreads>>>(o, dout, delta, job.rows);
    if (ok(cudaGetLastError()) && ok(cudaDeviceSynchronize()))
      ok(cudaMemcpy(job.delta, delta, std::size_t(job.rows) * 4, cudaMemcpyDeviceToHost));
  }
  cudaFree(o), cudaFree(dout), cudaFree(delta);
  return err;
}
#endif

} // namespace bf16emu::gpu
