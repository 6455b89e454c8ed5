// The L1TEX throughput for global loads that hit L1, per SM and cycle, by access shape, 64 warps per SM:
//   coalesced_v4 : LDG.128, a warp reads 512 contiguous bytes (16 sectors, 4 lines) per request (a 64 KiB window)
//   coalesced_32 : LDG.32, a warp reads 128 contiguous bytes (4 sectors, 1 line) per request
//   scattered_32 : LDG.32, each lane its own 32-byte sector (32 sectors, 8 lines) per request
//   lines_L_S    : LDG.32, L lines of S sectors each per request (lanes spread over them; L x S <= 32), which
//                  tells a cost per line from a cost per sector and per request
// The loads are volatile with a memory clobber and their addresses change with the pass, so the compiler keeps
// every one in the loop; a pass computes its few addresses once for 16 loads, so the load path, not the issue of
// index arithmetic, should bound the rate. Each block reads a 16 KiB window again and again (ld.ca), which
// stays in L1 after its first pass. Prints one CSV line per shape (best of 7 launches, CUDA events): sectors per
// request, requests, ms, and sectors and requests per SM-cycle at the clock given on the command line (GHz).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                                               \
  do {                                                                                                      \
    cudaError_t e = (x);                                                                                    \
    if (e != cudaSuccess) { printf("error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } \
  } while (0)

__device__ __forceinline__ float ld_ca(const float* q) {
  float v;
  asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(v) : "l"(q) : "memory");
  return v;
}
__device__ __forceinline__ float ld_ca4(const float4* q) {
  float4 v;
  asm volatile("ld.global.ca.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(q) : "memory");
  return (v.x + v.y) + (v.z + v.w);
}

constexpr int ITERS = 256;   // passes over the unrolled body
constexpr int UNROLL = 16;   // loads per pass
constexpr int WINDOW = 4096; // floats per block: 16 KiB

__global__ void coalesced_v4(const float4* __restrict__ p, float* out) {
  // every block reads the same 64 KiB (16 distinct requests of its 8 warps per pass; the L1 holds it)
  const float4* base = p + (threadIdx.x & 255);
  float acc = 0;
  for (int k = 0; k < ITERS; ++k) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += ld_ca4(base + ((u + k) & 15) * 256);
  }
  if (acc == 12345.f) out[0] = acc;
}

__global__ void coalesced_32(const float* __restrict__ p, float* out) {
  const float* base = p + (blockIdx.x % 64) * WINDOW + (threadIdx.x & 255);
  float acc = 0;
  for (int k = 0; k < ITERS; ++k) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += ld_ca(base + ((u + k) & 15) * 256);
  }
  if (acc == 12345.f) out[0] = acc;
}

__global__ void scattered_32(const float* __restrict__ p, float* out) {
  // lane l reads within its own sector (8 floats from 8 l); 16 KiB = 512 sectors, 32 per request
  const float* base = p + (blockIdx.x % 64) * WINDOW + (threadIdx.x & 31) * 8 + ((threadIdx.x >> 5) & 3) * 256;
  float acc = 0;
  for (int k = 0; k < ITERS; ++k) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += ld_ca(base + ((u + k) & 7) + (u >> 3) * 1024);
  }
  if (acc == 12345.f) out[0] = acc;
}

template <int NL, int SPL>
__global__ void lines(const float* __restrict__ p, float* out, int half) {
  // lane l reads line l % NL, its sector (l / NL) % SPL; the 16 loads of a pass take 4 sets of 32 lines (the 16
  // KiB window) and 4 words of the sector, and the pass's parity the sector's other 4 words: every load of a
  // pass has its own address, with no index arithmetic per load. The parity comes through `half` (1 at run
  // time), so that ptxas cannot see the passes' addresses repeat and hoist the loads out of the loop.
  const int l = threadIdx.x & 31;
  const float* base = p + (blockIdx.x % 64) * WINDOW + (l % NL) * 32 + ((l / NL) % SPL) * 8;
  float acc = 0;
  for (int k = 0; k < ITERS; ++k) {
    const float* b = base + 4 * (k & half);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += ld_ca(b + (u & 3) * 1024 + (u >> 2));
  }
  if (acc == 12345.f) out[0] = acc;
}

template <class F>
float time_ms(F launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  launch();  // warm: fills L1 and the instruction cache
  CK(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    best = ms < best ? ms : best;
  }
  CK(cudaGetLastError());
  return best;
}

int main(int argc, char** argv) {
  double ghz = argc > 1 ? atof(argv[1]) : 1.98;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int threads = 256, blocks = sms * 8 * 4;  // 8 blocks of 8 warps resident per SM, 4 waves
  float* p;
  float* out;
  CK(cudaMalloc(&p, 64 * WINDOW * sizeof(float)));
  CK(cudaMemset(p, 0, 64 * WINDOW * sizeof(float)));
  CK(cudaMalloc(&out, 4));
  const int half = argc > 2 ? atoi(argv[2]) : 1;  // see `lines`
  double requests = double(blocks) * (threads / 32) * ITERS * UNROLL;
  struct { const char* name; int sectors; float ms; } rows[] = {
      {"coalesced_v4", 16, time_ms([&] { coalesced_v4<<<blocks, threads>>>(reinterpret_cast<float4*>(p), out); })},
      {"coalesced_32", 4, time_ms([&] { coalesced_32<<<blocks, threads>>>(p, out); })},
      {"scattered_32", 32, time_ms([&] { scattered_32<<<blocks, threads>>>(p, out); })},
      {"lines_1_1", 1, time_ms([&] { lines<1, 1><<<blocks, threads>>>(p, out, half); })},
      {"lines_1_4", 4, time_ms([&] { lines<1, 4><<<blocks, threads>>>(p, out, half); })},
      {"lines_2_1", 2, time_ms([&] { lines<2, 1><<<blocks, threads>>>(p, out, half); })},
      {"lines_4_1", 4, time_ms([&] { lines<4, 1><<<blocks, threads>>>(p, out, half); })},
      {"lines_8_1", 8, time_ms([&] { lines<8, 1><<<blocks, threads>>>(p, out, half); })},
      {"lines_8_4", 32, time_ms([&] { lines<8, 4><<<blocks, threads>>>(p, out, half); })},
      {"lines_16_1", 16, time_ms([&] { lines<16, 1><<<blocks, threads>>>(p, out, half); })},
      {"lines_16_2", 32, time_ms([&] { lines<16, 2><<<blocks, threads>>>(p, out, half); })},
      {"lines_32_1", 32, time_ms([&] { lines<32, 1><<<blocks, threads>>>(p, out, half); })}};
  printf("shape,sectors_per_request,requests,ms,sectors_per_sm_cycle,requests_per_sm_cycle\n");
  for (auto& r : rows) {
    double cyc = r.ms * 1e-3 * ghz * 1e9 * sms;
    printf("%s,%d,%.0f,%.4f,%.4f,%.4f\n", r.name, r.sectors, requests, r.ms, requests * r.sectors / cyc,
           requests / cyc);
  }
  return 0;
}
