// The SM clock under Tensor Core load: kernels that keep every SM's tensor pipe busy to a chosen share (mma.sync
// m16n8k16 f16 -> f32, independent accumulators, interleaved with FFMA chains) for a chosen time, to be profiled
// with Nsight Compute (`--clock-control none`), which reads the clock each launch met
// (`sm__cycles_elapsed.avg.per_second`). See tensor_clock_h200.py.
//
// Build: nvcc -arch=sm_90 -O3 -o tensor_clock tensor_clock.cu
// Run:   ./tensor_clock MMAS FFMAS ITERS   (per loop iteration and warp: MMAS mma.sync, FFMAS FFMA per lane)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(2); } } while (0)

template <int MMAS, int FFMAS>
__global__ void __launch_bounds__(256) tensor_load(float* out, int iters, float s) {
  unsigned a0 = threadIdx.x * 0x00010001u, a1 = a0 ^ 0x3c003c00u, a2 = a0 + 7u, a3 = a1 + 11u;
  unsigned b0 = a0 ^ 0x38003800u, b1 = a1 + 3u;
  float d[4][4] = {};  // four independent accumulators: the pipe, not one chain's latency, bounds the mmas
  float f[4] = {s, s + 1.f, s + 2.f, s + 3.f};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int m = 0; m < MMAS; ++m) {
      float* c = d[m & 3];
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
#pragma unroll
    for (int k = 0; k < FFMAS; ++k) f[k & 3] = fmaf(f[k & 3], 0.999f, 0.5f);
  }
  float acc = f[0] + f[1] + f[2] + f[3];
#pragma unroll
  for (int m = 0; m < 4; ++m) acc += d[m][0] + d[m][1] + d[m][2] + d[m][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // keeps every result live
}

template <int MMAS, int FFMAS>
static void launch(float* out, int blocks, int iters) {
  tensor_load<MMAS, FFMAS><<<blocks, 256>>>(out, iters, 0.25f);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s MMAS FFMAS ITERS\n", argv[0]); return 1; }
  int mmas = atoi(argv[1]), ffmas = atoi(argv[2]), iters = atoi(argv[3]);
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int blocks = sms * 8;  // 64 warps per SM: every scheduler has 16 to pick from
  float* out;
  CHECK(cudaMalloc(&out, sizeof(float) * blocks * 256));
  // the (MMAS, FFMAS) mixes the runner asks for; the tensor pipe's share falls as FFMAS grows
  if (mmas == 8 && ffmas == 0) launch<8, 0>(out, blocks, iters);
  else if (mmas == 8 && ffmas == 16) launch<8, 16>(out, blocks, iters);
  else if (mmas == 8 && ffmas == 64) launch<8, 64>(out, blocks, iters);
  else if (mmas == 4 && ffmas == 128) launch<4, 128>(out, blocks, iters);
  else if (mmas == 1 && ffmas == 128) launch<1, 128>(out, blocks, iters);
  else if (mmas == 0 && ffmas == 64) launch<0, 64>(out, blocks, iters);
  else { fprintf(stderr, "no such mix: %d %d\n", mmas, ffmas); return 1; }
  printf("{\"mmas\":%d,\"ffmas\":%d,\"iters\":%d,\"blocks\":%d}\n", mmas, ffmas, iters, blocks);
  CHECK(cudaFree(out));
  return 0;
}
