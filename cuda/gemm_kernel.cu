// bf16emu CUDA twin: BF16 GEMM with an FP32 accumulator on mma.sync.m16n8k16, and the device's
// dense BF16 rate through cuBLAS for comparison.
//
// k order (the contract with the CPU reference tc::gemm): every D[m][n] is one accumulator that
// starts at +0 and takes one mma.sync per 16 values of k, k0 = 0, 16, 32, ... in increasing
// order; within an instruction the hardware's own block order applies (the tensor-core model).
//
// Tiling: a CTA of 4 warps computes a 64x64 tile of D; warp (wy, wx) owns rows 32*wy..+31 and
// columns 32*wx..+31 (2 x 4 instructions of m16n8). A and Bt tiles of 32 k values are staged in
// shared memory (rows padded to 40 elements: conflict-free 32-bit fragment loads).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(BF16EMU_GPU_HAVE_CUBLAS)
#include <cublas_v2.h>
#endif

#include "kernels.hpp"

namespace bf16emu::gpu {
namespace {

constexpr int kTile = 64, kK = 32, kPad = 40;

__device__ __forceinline__ void mma_bf16(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(128)
    gemm_bf16(const std::uint16_t *__restrict__ A, const std::uint16_t *__restrict__ Bt,
              float *__restrict__ D, int M, int N, int K) {
  __shared__ alignas(16) std::uint16_t sa[kTile * kPad];
  __shared__ alignas(16) std::uint16_t sb[kTile * kPad];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wy = warp >> 1, wx = warp & 1;
  const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[i][j][r] = 0.0f; // +0
  for (int k0 = 0; k0 < K; k0 += kK) {
    // Stage 64 x 32 of A and of Bt: 256 16-byte chunks each, 2 per thread.
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int chunk = tid + 128 * c, row = chunk >> 2, col = (chunk & 3) * 8;
      uint4 va = make_uint4(0, 0, 0, 0), vb = make_uint4(0, 0, 0, 0);
      if (k0 + col < K) {
        va = *reinterpret_cast<const uint4 *>(A + std::size_t(m0 + row) * K + k0 + col);
        vb = *reinterpret_cast<const uint4 *>(Bt + std::size_t(n0 + row) * K + k0 + col);
      }
      *reinterpret_cast<uint4 *>(sa + row * kPad + col) = va;
      *reinterpret_cast<uint4 *>(sb + row * kPad + col) = vb;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kK; kk += 16) {
      if (k0 + kk >= K) break; // K is a multiple of 16
      std::uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const std::uint16_t *p = sa + (32 * wy + 16 * i + g) * kPad + kk + 2 * t;
        af[i][0] = *reinterpret_cast<const std::uint32_t *>(p);
        af[i][1] = *reinterpret_cast<const std::uint32_t *>(p + 8 * kPad);
        af[i][2] = *reinterpret_cast<const std::uint32_t *>(p + 8);
        af[i][3] = *reinterpret_cast<const std::uint32_t *>(p + 8 * kPad + 8);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const std::uint16_t *p = sb + (32 * wx + 8 * j + g) * kPad + kk + 2 * t;
        bf[j][0] = *reinterpret_cast<const std::uint32_t *>(p);
        bf[j][1] = *reinterpret_cast<const std::uint32_t *>(p + 8);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma_bf16(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bf[j][0], bf[j][1]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + 32 * wy + 16 * i + g, col = n0 + 32 * wx + 8 * j + 2 * t;
      D[std::size_t(row) * N + col] = acc[i][j][0];
      D[std::size_t(row) * N + col + 1] = acc[i][j][1];
      D[std::size_t(row + 8) * N + col] = acc[i][j][2];
      D[std::size_t(row + 8) * N + col + 1] = acc[i][j][3];
    }
}

__global__ void fill_bf16(std::uint16_t *p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint64_t z = seed + i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    // Uniform in [-1, 1): a normal bf16 with a random fraction and exponent in [-8, -1].
    const std::uint32_t e = 127 - 1 - std::uint32_t(z % 8), frac = std::uint32_t(z >> 8) & 0x7f;
    p[i] = std::uint16_t(((z >> 20) & 1) << 15 | e << 7 | frac);
  }
}

struct event_timer {
  cudaEvent_t a{}, b{};
  event_timer() { cudaEventCreate(&a), cudaEventCreate(&b); }
  ~event_timer() { cudaEventDestroy(a), cudaEventDestroy(b); }
};

double median(std::vector<float> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int run_gemm(gemm_job &job) {
  if (job.m % kTile || job.n % kTile || job.k % 16 || job.k <= 0) return int(cudaErrorInvalidValue);
  const std::size_t na = std::size_t(job.m) * job.k, nb = std::size_t(job.n) * job.k,
                    nd = std::size_t(job.m) * job.n;
  std::uint16_t *da = nullptr, *db = nullptr;
  float *dd = nullptr;
  int err = 0;
  auto ok = [&](cudaError_t e) {
    if (e != cudaSuccess && err == 0) err = int(e);
    return err == 0;
  };
  // K is padded by the kernel's staging to a multiple of 32 with zeros read past the end only
  // when K % 32 == 16: allocate 16 extra values per row to keep the loads in bounds.
  if (ok(cudaMalloc(&da, (na + 32) * 2)) && ok(cudaMalloc(&db, (nb + 32) * 2)) &&
      ok(cudaMalloc(&dd, nd * 4)) && ok(cudaMemcpy(da, job.a, na * 2, cudaMemcpyHostToDevice)) &&
      ok(cudaMemcpy(db, job.bt, nb * 2, cudaMemcpyHostToDevice)) && ok(cudaMemset(dd, 0xff, nd * 4))) {
    const dim3 grid(unsigned(job.n / kTile), unsigned(job.m / kTile));
    gemm_bf16<<<grid, 128>>>(da, db, dd, job.m, job.n, job.k);
    if (ok(cudaGetLastError()) && ok(cudaDeviceSynchronize()) && job.repeats > 0) {
      event_timer ev;
      std::vector<float> times;
      for (int r = 0; r < job.repeats && err == 0; ++r) {
        cudaEventRecord(ev.a);
        gemm_bf16<<<grid, 128>>>(da, db, dd, job.m, job.n, job.k);
        cudaEventRecord(ev.b);
        float ms = 0;
        if (ok(cudaEventSynchronize(ev.b)) && ok(cudaEventElapsedTime(&ms, ev.a, ev.b))) times.push_back(ms);
      }
      job.ms = median(times);
    }
    if (err == 0) ok(cudaMemcpy(job.d, dd, nd * 4, cudaMemcpyDeviceToHost));
  }
  cudaFree(da), cudaFree(db), cudaFree(dd);
  return err;
}

double cublas_bf16_tflops(int n, int repeats) {
#if defined(BF16EMU_GPU_HAVE_CUBLAS)
  const std::size_t nn = std::size_t(n) * n;
  std::uint16_t *a = nullptr, *b = nullptr, *c = nullptr;
  double result = -2;
  cublasHandle_t h = nullptr;
  if (cudaMalloc(&a, nn * 2) == cudaSuccess && cudaMalloc(&b, nn * 2) == cudaSuccess &&
      cudaMalloc(&c, nn * 2) == cudaSuccess && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
    fill_bf16<<<1024, 256>>>(a, nn, 1);
    fill_bf16<<<1024, 256>>>(b, nn, 2);
    const float alpha = 1, beta = 0;
    auto gemm = [&] {
      return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n,
                          &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    bool good = true;
    for (int w = 0; w < 3 && good; ++w)
      good = gemm() == CUBLAS_STATUS_SUCCESS;
    good = good && cudaDeviceSynchronize() == cudaSuccess;
    event_timer ev;
    std::vector<float> times;
    for (int r = 0; r < repeats && good; ++r) {
      cudaEventRecord(ev.a);
      good = gemm() == CUBLAS_STATUS_SUCCESS;
      cudaEventRecord(ev.b);
      float ms = 0;
      good = good && cudaEventSynchronize(ev.b) == cudaSuccess &&
             cudaEventElapsedTime(&ms, ev.a, ev.b) == cudaSuccess;
      times.push_back(ms);
    }
    if (good) result = 2.0 * double(n) * n * n / (median(times) * 1e-3) / 1e12;
  }
  if (h) cublasDestroy(h);
  cudaFree(a), cudaFree(b), cudaFree(c);
  return result;
#else
  (void)n, (void)repeats;
  return -1;
#endif
}

} // namespace bf16emu::gpu
