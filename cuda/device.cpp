// bf16emu CUDA twin: device discovery and the host half of the attention launcher.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "host_model.hpp"
#include "kernels.hpp"

namespace bf16emu::gpu {

bool find_device(device_info &info) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError(); // clear the sticky "no device" error
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return false;
  std::snprintf(info.name, sizeof info.name, "%s", prop.name);
  info.cc_major = prop.major, info.cc_minor = prop.minor, info.sms = prop.multiProcessorCount;
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  return true;
}

const char *error_string(int err) { return cudaGetErrorString(cudaError_t(err)); }

int run_attention(attention_job &job) {
  const float c = contract_c(job.d);
  return job.fast_exp ? run_attention_fast_exp(job, c) : run_attention_exact(job, c);
}

} // namespace bf16emu::gpu
