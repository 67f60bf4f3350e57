// Configure-time probe (cuda/CMakeLists.txt): does attention::exp2_poly compile for the device?
#include "bf16emu/attention/exp2_poly.hpp"

__global__ void probe(float *x) {
  bf16emu::attention::native_f32_backend b;
  x[threadIdx.x] = bf16emu::attention::exp2_poly(b, x[threadIdx.x]);
}

int main() { return 0; }
