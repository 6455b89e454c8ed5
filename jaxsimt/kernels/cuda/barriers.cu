// barriers.cu - kernels that use the block's named barriers (PTX bar.sync a, b / bar.arrive a, b).
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo barriers.cu -o barriers   (PTX: kernels/ptx/barriers.ptx)
//
// The emulator's checks (tests/test_barriers.py): outputs equal numpy in both execution modes, zero findings
// under every sanitizer check.
//   bar_pipeline     grid 2, block 128: warps 0-1 produce, warps 2-3 consume, through two shared buffers.
//                    Barrier 1 + b ("full") says buffer b holds data (producers arrive, consumers wait),
//                    barrier 3 + b ("empty") says it was read (consumers arrive, producers wait); 128
//                    threads each. out[i] = 2 * in[i] + 1 over `rounds` rounds of 64 elements per block.
//   bar_subset       grid 1, block 256: warps 0-1 exchange through shared memory behind barrier 1 for 64
//                    threads while warps 2-7 work alone; a whole-block barrier at the end. Barrier id and
//                    count come through registers ("r" operands), as library code passes them.
#include <cstdint>

__device__ __forceinline__ void named_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void named_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

extern "C" __global__ void bar_pipeline(const float* in, float* out, int rounds) {
  __shared__ float buf[2][64];
  const int t = threadIdx.x;
  const bool producer = t < 64;
  const int i = t & 63;
  const float* src = in + blockIdx.x * rounds * 64;
  float* dst = out + blockIdx.x * rounds * 64;
  for (int r = 0; r < rounds; ++r) {
    const int b = r & 1;
    if (producer) {
      if (r >= 2) {  // wait until buffer b was read
        if (b) asm volatile("bar.sync 4, 128;" ::: "memory");
        else asm volatile("bar.sync 3, 128;" ::: "memory");
      }
      buf[b][i] = 2.0f * src[r * 64 + i];
      if (b) asm volatile("bar.arrive 2, 128;" ::: "memory");
      else asm volatile("bar.arrive 1, 128;" ::: "memory");
    } else {
      if (b) asm volatile("bar.sync 2, 128;" ::: "memory");
      else asm volatile("bar.sync 1, 128;" ::: "memory");
      dst[r * 64 + i] = buf[b][i] + 1.0f;
      if (b) asm volatile("bar.arrive 4, 128;" ::: "memory");
      else asm volatile("bar.arrive 3, 128;" ::: "memory");
    }
  }
}

extern "C" __global__ void bar_subset(const int* in, int* out) {
  __shared__ int s[64];
  const int t = threadIdx.x;
  int v = in[t];
  if (t < 64) {
    s[t] = v * 3;
    named_sync(1, 64);
    v = s[63 - t] + t;
  } else {
    for (int k = 0; k < (t & 7); ++k) v = v * 5 + k;
  }
  __syncthreads();
  out[t] = v;
}
