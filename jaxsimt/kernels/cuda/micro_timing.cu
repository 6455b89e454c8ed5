// micro_timing.cu - micro-benchmarks of the latencies, rates and overheads the cycle-level timing model
// (jaxsimt/timing.py, jaxsimt.arch.Timing) uses, one measurement per model parameter where one exists.
//
// Latencies: one thread runs a chain of dependent instructions between two clock64() reads; the chain's
// cycles over its length are the latency of one link (the loop's own instructions are unrolled away:
// UNROLL links per iteration). Memory latencies are pointer chases (each load's address is the previous
// load's value) over a footprint that fits the level measured: shared memory, L1 (16 KiB, warmed, ld.ca),
// L2 (8 MiB, ld.cg bypasses L1), DRAM (1 GiB, a random cycle of 128-byte lines, so neither cache helps).
// Rates: enough warps per SM to fill every pipe, timed with CUDA events over the whole chip; per-SM
// figures divide by the SM count and the SM clock (read from the device, printed with the results).
// Launch overhead: an empty kernel at growing grid sizes, each launch timed alone with events (median of
// REPS); the slope over blocks per SM is the block-dispatch cost, the intercept the launch overhead.
//
// Output: one JSON line per measurement on stdout:
//   {"name":..., "value":..., "unit":..., "param": the Timing field it measures or "", "detail":...}
// Build: nvcc -arch=sm_90 -O3 -lineinfo -std=c++17 micro_timing.cu -o micro_timing
// Options: --list (the groups), --only GROUP (repeatable: latencies, throughputs, atomics, launches),
//          --launch-reps N (timed repeats of each empty-kernel launch; 1 under ncu).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__,  \
              cudaGetErrorString(e_));                                                           \
      exit(2);                                                                                   \
    }                                                                                            \
  } while (0)

constexpr int UNROLL = 64;     // links per loop iteration of a latency chain
constexpr int CHAIN_ITERS = 64; // iterations: 4096 links per chain
constexpr int REPS = 21;        // repeats of every timed launch (median)
static int g_launch_reps = 51;  // repeats of each empty-kernel launch (--launch-reps; 1 under a profiler)

static int g_sms = 0;
static double g_clock_ghz = 0;  // SM clock the driver reports (cudaDevAttrClockRate)

static void emit(const char* name, double value, const char* unit, const char* param, const std::string& detail) {
  printf("{\"name\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",\"param\":\"%s\",\"detail\":\"%s\"}\n", name, value, unit,
         param, detail.c_str());
  fflush(stdout);
}

// ------------------------------------------------------------------------------------------------
// Latency chains (one thread)
// ------------------------------------------------------------------------------------------------

// out[0] = cycles of the timed chain, out[1] = its result (keeps the chain live)
__global__ void lat_iadd(long long* out, unsigned a, unsigned b) {
  unsigned x = a;
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) asm volatile("xor.b32 %0, %0, %1;" : "+r"(x) : "r"(b + j));
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = x;
}

__global__ void lat_ffma(long long* out, float a, float b) {
  float x = a;
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) x = fmaf(x, a, b);
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = __float_as_int(x);
}

__global__ void lat_mufu(long long* out, float a) {
  float x = a;
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x));
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = __float_as_int(x);
}

// one warp: a chain of mma.sync m16n8k16 (f16 inputs, f32 accumulate), each accumulating into the last
__global__ void lat_mma(long long* out, unsigned a0) {
  unsigned a[4] = {a0, a0, a0, a0}, b[2] = {a0, a0};
  float c[4] = {0, 0, 0, 0};
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int j = 0; j < UNROLL / 4; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  long long t1 = clock64();
  if (threadIdx.x == 0) {
    out[0] = (t1 - t0) * 4;  // UNROLL / 4 links per iteration: scale to UNROLL for the common divisor
    out[1] = __float_as_int(c[0] + c[1] + c[2] + c[3]);
  }
}

// pointer chase in shared memory: s holds byte offsets (the next link's), so each load's address is the
// previous load's value with no arithmetic between them (LDS [R] -> R)
__global__ void lat_shared(long long* out, const unsigned* next, int n) {
  __shared__ unsigned s[4096];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = next[i];
  __syncthreads();
  if (threadIdx.x != 0) return;
  const char* base = reinterpret_cast<const char*>(s);
  unsigned j = 0;
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) j = *reinterpret_cast<const unsigned*>(base + j);
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = j;
}

// pointer chase in global memory: p holds the next link's address (LDG [R.64] -> R.64, no arithmetic);
// mode 0 ld.ca (L1), 1 ld.cg (L2 only). `warm` untimed links first (warms the level measured; for DRAM,
// none: its footprint is larger than the L2).
template <int MODE>
__global__ void lat_global(long long* out, const unsigned long long* p, long long warm) {
  const unsigned long long* j = p;
  for (long long i = 0; i < warm; ++i)
    j = reinterpret_cast<const unsigned long long*>(MODE == 0 ? __ldca(j) : __ldcg(j));
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      j = reinterpret_cast<const unsigned long long*>(MODE == 0 ? __ldca(j) : __ldcg(j));
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = reinterpret_cast<long long>(j);
}

// barrier latency: nwarps warps of one block pass UNROLL * CHAIN_ITERS barriers in a row
__global__ void lat_barrier(long long* out) {
  long long t0 = clock64();
  for (int i = 0; i < CHAIN_ITERS; ++i) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) __syncthreads();
  }
  long long t1 = clock64();
  if (threadIdx.x == 0) {
    out[0] = t1 - t0;
    out[1] = 0;
  }
}

// the clock read itself: two clock64() back to back
__global__ void lat_clock(long long* out) {
  long long t0 = clock64();
  long long t1 = clock64();
  out[0] = t1 - t0;
  out[1] = 0;
}

static long long run_chain(const std::function<void(long long*)>& launch) {
  long long* d;
  CK(cudaMalloc(&d, 2 * sizeof(long long)));
  std::vector<long long> v;
  for (int r = 0; r < 5; ++r) {  // the first launch loads the module and warms the instruction cache
    launch(d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    long long h[2];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(h[0]);
  }
  CK(cudaFree(d));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static double per_link(long long cycles) { return double(cycles) / (double(UNROLL) * CHAIN_ITERS); }

// a random cyclic permutation of n slots `stride` bytes apart: slot order[i] holds the byte offset of
// order[i + 1] (one cycle through all of them, starting at slot 0)
static std::vector<size_t> chase_offsets(size_t n, size_t stride, unsigned seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin() + 1, order.end(), rng);
  std::vector<size_t> next(n);
  for (size_t i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n] * stride;
  return next;  // next[slot] = byte offset of the slot after it
}

static void latencies() {
  long long clk = run_chain([](long long* d) { lat_clock<<<1, 1>>>(d); });
  emit("clock_read", double(clk), "cycles", "", "two clock64() reads back to back");
  emit("alu_latency", per_link(run_chain([](long long* d) { lat_iadd<<<1, 1>>>(d, 1u, 3u); })), "cycles",
       "alu_latency", "dependent LOP3 (xor) chain, one thread");
  emit("fma_latency", per_link(run_chain([](long long* d) { lat_ffma<<<1, 1>>>(d, 0.999f, 1e-3f); })), "cycles",
       "fma_latency", "dependent FFMA chain, one thread");
  emit("sfu_latency", per_link(run_chain([](long long* d) { lat_mufu<<<1, 1>>>(d, 2.0f); })), "cycles",
       "sfu_latency", "dependent MUFU.RSQ chain, one thread");
  emit("tensor_latency", per_link(run_chain([](long long* d) { lat_mma<<<1, 32>>>(d, 0x3c003c00u); })), "cycles",
       "tensor_latency", "dependent mma.sync m16n8k16 f16->f32 chain (accumulator), one warp");
  {
    const int n = 4096;  // words of the shared array; one link per 128-byte row, all in one bank, one thread
    auto next = chase_offsets(n / 32, 128, 1);
    std::vector<unsigned> p(n, 0);
    for (size_t i = 0; i < next.size(); ++i) p[i * 32] = unsigned(next[i]);
    unsigned* d;
    CK(cudaMalloc(&d, n * 4));
    CK(cudaMemcpy(d, p.data(), n * 4, cudaMemcpyHostToDevice));
    emit("shared_latency", per_link(run_chain([&](long long* o) { lat_shared<<<1, 32>>>(o, d, n); })), "cycles",
         "shared_latency", "pointer chase in shared memory (LDS, the loaded byte offset is the next address), one thread");
    CK(cudaFree(d));
  }
  struct Level { const char* name; size_t bytes; int mode; const char* detail; };
  const Level levels[] = {
      {"l1_latency", 16 << 10, 0, "pointer chase, 16 KiB footprint (warmed), ld.global.ca, one link per 128-byte line"},
      {"l2_latency", 8 << 20, 1, "pointer chase, 8 MiB footprint (warmed), ld.global.cg, one link per 128-byte line"},
      {"dram_latency", size_t(1) << 30, 1, "pointer chase, 1 GiB footprint (cold), ld.global.cg, one link per 128-byte line"},
  };
  for (const Level& lv : levels) {
    size_t n = lv.bytes / 128;
    unsigned long long* d;
    CK(cudaMalloc(&d, lv.bytes));
    auto next = chase_offsets(n, 128, 7);
    std::vector<unsigned long long> p(lv.bytes / 8, 0);
    const unsigned long long base = reinterpret_cast<unsigned long long>(d);
    for (size_t i = 0; i < n; ++i) p[i * 16] = base + next[i];
    CK(cudaMemcpy(d, p.data(), lv.bytes, cudaMemcpyHostToDevice));
    const bool cold = lv.bytes > (size_t(64) << 20);
    long long warm = cold ? 0 : (long long)n;
    int mode = lv.mode, run = 0;
    double v = per_link(run_chain([&](long long* o) {
      // cold: every launch starts elsewhere on the cycle, so no launch finds the lines an earlier one loaded
      const unsigned long long* start = d + (cold ? (size_t(run++) * 1000003 % n) * 16 : 0);
      if (mode == 0) lat_global<0><<<1, 1>>>(o, start, warm);
      else lat_global<1><<<1, 1>>>(o, start, warm);
    }));
    emit(lv.name, v, "cycles", lv.name, lv.detail);
    CK(cudaFree(d));
  }
  for (int warps : {1, 4, 32}) {
    double v = per_link(run_chain([&](long long* o) { lat_barrier<<<1, 32 * warps>>>(o); }));
    std::string name = "barrier_latency_" + std::to_string(warps) + "w";
    emit(name.c_str(), v, "cycles", warps == 4 ? "barrier_latency" : "",
         "back-to-back __syncthreads() of one block of " + std::to_string(warps) + " warp(s), cycles per barrier");
  }
}

// ------------------------------------------------------------------------------------------------
// Throughput (whole chip, CUDA events)
// ------------------------------------------------------------------------------------------------

constexpr int TP_ITERS = 2048;

__global__ void tp_ffma(float* out, float a, float b) {
  float x0 = a, x1 = a + 1, x2 = a + 2, x3 = a + 3, x4 = a + 4, x5 = a + 5, x6 = a + 6, x7 = a + 7;
  for (int i = 0; i < TP_ITERS; ++i) {
    x0 = fmaf(x0, b, a); x1 = fmaf(x1, b, a); x2 = fmaf(x2, b, a); x3 = fmaf(x3, b, a);
    x4 = fmaf(x4, b, a); x5 = fmaf(x5, b, a); x6 = fmaf(x6, b, a); x7 = fmaf(x7, b, a);
  }
  float s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  if (s == 12345.f) out[0] = s;
}

__global__ void tp_lop(unsigned* out, unsigned a, unsigned b) {
  unsigned x0 = a, x1 = a + 1, x2 = a + 2, x3 = a + 3, x4 = a + 4, x5 = a + 5, x6 = a + 6, x7 = a + 7;
  for (int i = 0; i < TP_ITERS; ++i) {
    const unsigned c = b + i;  // varies per iteration: x ^ b ^ b of an unrolled loop would cancel
#define X(v) asm volatile("xor.b32 %0, %0, %1;" : "+r"(v) : "r"(c))
    X(x0); X(x1); X(x2); X(x3); X(x4); X(x5); X(x6); X(x7);
#undef X
  }
  unsigned s = x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7;
  if (s == 12345u) out[0] = s;
}

__global__ void tp_mufu(float* out, float a) {
  float x0 = a, x1 = a + 1, x2 = a + 2, x3 = a + 3, x4 = a + 4, x5 = a + 5, x6 = a + 6, x7 = a + 7;
  for (int i = 0; i < TP_ITERS / 8; ++i) {
#define X(v) asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(v))
    X(x0); X(x1); X(x2); X(x3); X(x4); X(x5); X(x6); X(x7);
#undef X
  }
  float s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  if (s == 12345.f) out[0] = s;
}

// conflict-free 32-bit shared loads: one wavefront per warp instruction
__global__ void tp_shared(float* out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  float acc = 0;
  unsigned i = threadIdx.x;
  for (int k = 0; k < TP_ITERS / 4; ++k) {
    // the index depends on k: loads that do not are hoisted out of the loop (the H200 collection of
    // 2026-12-01 ran a version whose loads did, so its shared_cycles_per_wavefront is not a measurement)
#pragma unroll
    for (int u = 0; u < 8; ++u) acc += s[(i + (k * 8 + u) * 32) & 1023];
  }
  if (acc == 12345.f) out[0] = acc;
}

// 32-way bank-conflicted 32-bit shared loads: lane l reads word 32 l + c, all in bank c, so each warp LDS is 32
// wavefronts and its few integer instructions do not bound the rate: the shared data pipe's cycles per
// wavefront. The volatile asm keeps every load in the loop (its address depends on k).
__global__ void tp_shared_conflict(unsigned* out) {
  __shared__ unsigned s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  unsigned acc = 0;
  const unsigned base = (threadIdx.x & 31) * 32;
#pragma unroll 1  // one iteration per k: loads of an unrolled loop with repeating addresses would be merged
  for (int k = 0; k < TP_ITERS / 8; ++k) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      unsigned v;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"((unsigned)(((base + ((k * 4 + u) & 31)) & 1023) * 4 +
                                                            (unsigned)__cvta_generic_to_shared(s))));
      acc ^= v;
    }
  }
  if (acc == 12345u) out[0] = acc;
}

// conflict-free 128-bit shared loads (LDS.128: 4 wavefronts per warp instruction)
__global__ void tp_shared_v4(unsigned* out) {
  __shared__ uint4 s[256];
  if (threadIdx.x < 256) s[threadIdx.x] = make_uint4(threadIdx.x, 1, 2, 3);
  __syncthreads();
  unsigned acc = 0;
#pragma unroll 1  // one iteration per k: loads of an unrolled loop with repeating addresses would be merged
  for (int k = 0; k < TP_ITERS / 8; ++k) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      unsigned a, b, c, d;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                   : "r"((unsigned)((((threadIdx.x & 31) + (k * 4 + u) * 32) & 255) * 16 +
                                    (unsigned)__cvta_generic_to_shared(s))));
      acc ^= a ^ b ^ c ^ d;
    }
  }
  if (acc == 12345u) out[0] = acc;
}

// coalesced 32-bit global loads from a per-block 16 KiB window (L1 hits after the first pass):
// 4 sectors per request
__global__ void tp_l1(const float* __restrict__ p, float* out) {
  const float* base = p + (blockIdx.x % 64) * 4096;
  float acc = 0;
  unsigned i = threadIdx.x;
  for (int k = 0; k < TP_ITERS / 8; ++k) {
#pragma unroll
    for (int u = 0; u < 8; ++u) acc += __ldca(base + ((i + (k * 8 + u) * 128) & 4095));
  }
  if (acc == 12345.f) out[0] = acc;
}

// float4 loads that skip L1 (ld.cg) over an 8 MiB buffer, which stays in the 60 MiB L2
__global__ void tp_l2(const float4* __restrict__ p, float* out, unsigned n4) {
  float acc = 0;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned step = gridDim.x * blockDim.x;
  for (int k = 0; k < 64; ++k) {
    float4 v = __ldcg(p + (i % n4));
    acc += v.x + v.y + v.z + v.w;
    i += step;
  }
  if (acc == 12345.f) out[0] = acc;
}

// a streaming copy of a buffer far larger than L2: DRAM read + write bandwidth
__global__ void tp_copy(const float4* __restrict__ src, float4* __restrict__ dst, size_t n4) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = __ldcs(src + i);
}

static float time_ms(const std::function<void()>& launch, int reps = REPS) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> v;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    v.push_back(ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void throughputs() {
  float* fo;
  CK(cudaMalloc(&fo, 64));
  const int blocks = g_sms * 2, threads = 1024;  // 64 warps per SM: every scheduler has 16
  const double warps = double(blocks) * threads / 32;
  auto per_sm_cycle = [&](double count, float ms) { return count / (ms * 1e-3 * g_clock_ghz * 1e9 * g_sms); };
  {
    float ms = time_ms([&] { tp_ffma<<<blocks, threads>>>(fo, 1.0f, 0.999f); });
    double wi = per_sm_cycle(warps * TP_ITERS * 8, ms);  // warp FFMAs per SM-cycle
    emit("fp32_warp_inst_per_sm_cycle", wi, "warp inst/cycle", "", "independent FFMAs, 64 warps per SM");
    emit("fp32_issue", 4.0 / wi, "cycles", "fp32_issue", "cycles per warp FFMA on one scheduler (4 per SM)");
  }
  {
    float ms = time_ms([&] { tp_lop<<<blocks, threads>>>((unsigned*)fo, 1u, 3u); });
    double wi = per_sm_cycle(warps * TP_ITERS * 8, ms);
    emit("alu_warp_inst_per_sm_cycle", wi, "warp inst/cycle", "", "independent LOP3s, 64 warps per SM");
    emit("alu_issue", 4.0 / wi, "cycles", "alu_issue", "cycles per warp LOP3 on one scheduler");
  }
  {
    float ms = time_ms([&] { tp_mufu<<<blocks, threads>>>(fo, 2.0f); });
    double wi = per_sm_cycle(warps * TP_ITERS, ms);
    emit("sfu_warp_inst_per_sm_cycle", wi, "warp inst/cycle", "", "independent MUFU.RSQ, 64 warps per SM");
    emit("sfu_issue", 4.0 / wi, "cycles", "sfu_issue", "cycles per warp MUFU on one scheduler");
  }
  {
    float ms = time_ms([&] { tp_shared<<<blocks, threads>>>(fo); });
    double wf = per_sm_cycle(warps * (TP_ITERS / 4) * 8, ms);  // one wavefront per load
    emit("shared_wavefronts_per_sm_cycle", wf, "wavefronts/cycle", "", "conflict-free LDS.32, 64 warps per SM");
  }
  {
    float ms = time_ms([&] { tp_shared_conflict<<<blocks, threads>>>(reinterpret_cast<unsigned*>(fo)); });
    double wf = per_sm_cycle(warps * (TP_ITERS / 8) * 4 * 32.0, ms);  // 32 wavefronts per load
    emit("shared_wavefronts_per_sm_cycle_conflict32", wf, "wavefronts/cycle", "",
         "32-way bank-conflicted LDS.32 (32 wavefronts each), 64 warps per SM");
    emit("shared_cycles_per_wavefront", 1.0 / wf, "cycles", "shared_cycles_per_wavefront",
         "SM-wide, from the 32-way conflicted loads (their few integer instructions do not bound the rate)");
  }
  {
    float ms = time_ms([&] { tp_shared_v4<<<blocks, threads>>>(reinterpret_cast<unsigned*>(fo)); });
    double wf = per_sm_cycle(warps * (TP_ITERS / 8) * 4 * 4.0, ms);  // 4 wavefronts per LDS.128
    emit("shared_wavefronts_per_sm_cycle_v4", wf, "wavefronts/cycle", "",
         "conflict-free LDS.128 (4 wavefronts each), 64 warps per SM");
  }
  {
    float* p;
    CK(cudaMalloc(&p, 64 * 4096 * 4));
    CK(cudaMemset(p, 0, 64 * 4096 * 4));
    float ms = time_ms([&] { tp_l1<<<blocks, threads>>>(p, fo); });
    double sec = per_sm_cycle(warps * (TP_ITERS / 8) * 8 * 4, ms);  // 4 sectors per coalesced 128 B request
    // one-line requests: this is their request rate (the sector rate and the cost per request: l1_rate.cu)
    emit("l1_coalesced32_sectors_per_cycle", sec, "sectors/cycle", "",
         "coalesced LDG.32 hitting L1 (16 KiB per block), 64 warps per SM");
    CK(cudaFree(p));
  }
  {
    size_t bytes = 8 << 20;
    float4* p;
    CK(cudaMalloc(&p, bytes));
    CK(cudaMemset(p, 0, bytes));
    int g = g_sms * 8;
    float ms = time_ms([&] { tp_l2<<<g, 256>>>(p, fo, unsigned(bytes / 16)); });
    double bpc = double(g) * 256 * 64 * 16 / (ms * 1e-3 * g_clock_ghz * 1e9);
    emit("l2_bytes_per_cycle", bpc, "bytes/cycle", "l2_bytes_per_cycle", "LDG.128.cg over 8 MiB (L2 hits), whole chip");
    CK(cudaFree(p));
  }
  {
    size_t bytes = size_t(2) << 30;
    float4 *s, *d;
    CK(cudaMalloc(&s, bytes));
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemset(s, 0, bytes));
    float ms = time_ms([&] { tp_copy<<<g_sms * 16, 256>>>(s, d, bytes / 16); }, 7);
    emit("dram_gbytes_per_s", 2.0 * bytes / (ms * 1e-3) / 1e9, "GB/s", "dram_gbytes_per_s",
         "2 GiB device copy, bytes read + written");
    CK(cudaFree(s));
    CK(cudaFree(d));
  }
  CK(cudaFree(fo));
}

// ------------------------------------------------------------------------------------------------
// Global atomics (whole chip, CUDA events)
// ------------------------------------------------------------------------------------------------
// Operations on one word serialize where the word lives (its L2 slice); operations on distinct words of a
// request proceed together. ptxas aggregates a warp's associative atomics on one address into one operation
// (VOTE + POPC / REDUX, then a single lane's RED: the SASS shows it), so the per-operation rate on one
// word is measured with atomicInc and a wrap limit known only at run time, which it cannot aggregate (the
// wrap makes it non-associative; with the limit 0xffffffff written in, ptxas turns it into an add).

constexpr int ATOM_ITERS = 16;

// `lanes` lanes of every warp apply atomicInc to the same word, ATOM_ITERS times
__global__ void tp_inc_same(unsigned* p, int lanes, unsigned limit) {
  if (int(threadIdx.x & 31) >= lanes) return;
  for (int i = 0; i < ATOM_ITERS; ++i) atomicInc(p, limit);
}

// every lane adds 1 to the same word, result unused: ptxas aggregates this into one RED per warp
__global__ void tp_add_same(int* p) {
  for (int i = 0; i < ATOM_ITERS; ++i) atomicAdd(p, 1);
}

// every lane of every warp applies atomicInc to word (i mod words) * stride of p at its i-th step: a warp's
// requests cycle through `words` words, `stride` words apart (1: one sector; 32: a 128-byte line each)
__global__ void tp_inc_words(unsigned* p, int words, int stride, unsigned limit) {
  for (int i = 0; i < ATOM_ITERS; ++i) atomicInc(p + (i % words) * stride, limit);
}

// every thread adds to its own word: one request of 32 distinct words per warp instruction
__global__ void tp_add_distinct(int* p) {
  int* q = p + blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < ATOM_ITERS; ++i) atomicAdd(q, 1);
}

static void atomics() {
  const int blocks = g_sms * 4, threads = 256;
  const double warps = double(blocks) * threads / 32;
  int* p;
  CK(cudaMalloc(&p, size_t(blocks) * threads * 4));
  CK(cudaMemset(p, 0, size_t(blocks) * threads * 4));
  auto cycles = [&](float ms) { return ms * 1e-3 * g_clock_ghz * 1e9; };
  for (int lanes : {1, 8, 32}) {
    float ms = time_ms([&] { tp_inc_same<<<blocks, threads>>>((unsigned*)p, lanes, 0x7fffffffu); });
    double ops = warps * lanes * ATOM_ITERS;
    std::string name = "atomic_same_word_inc_lanes" + std::to_string(lanes);
    // all 32 lanes on one word keep its slice's atomic unit busiest: the rate the model's parameter is
    emit(name.c_str(), cycles(ms) / ops, "cycles/op", lanes == 32 ? "atomic_cycles_per_op" : "",
         "atomicInc on one word, " + std::to_string(lanes) +
         " lanes of each of " + std::to_string(int(warps)) + " warps, " + std::to_string(ATOM_ITERS) +
         " each; SM clock cycles per operation, whole chip");
  }
  for (int stride : {1, 32}) {
    for (int words : {2, 8}) {
      float ms = time_ms([&] { tp_inc_words<<<blocks, threads>>>((unsigned*)p, words, stride, 0x7fffffffu); });
      std::string name = "atomic_words" + std::to_string(words) + "_stride" + std::to_string(stride * 4) + "B";
      emit(name.c_str(), cycles(ms) / (warps * ATOM_ITERS), "cycles/warp op", "",
           "atomicInc by all 32 lanes on one word per warp instruction, cycling through " + std::to_string(words) +
           " words " + std::to_string(stride * 4) + " bytes apart; cycles per warp instruction, whole chip");
    }
  }
  {
    float ms = time_ms([&] { tp_add_same<<<blocks, threads>>>(p); });
    emit("atomic_same_word_add_aggregated", cycles(ms) / (warps * ATOM_ITERS), "cycles/warp op", "",
         "atomicAdd(p, 1) by all 32 lanes (ptxas: one RED per warp); cycles per warp instruction, whole chip");
  }
  {
    float ms = time_ms([&] { tp_add_distinct<<<blocks, threads>>>(p); });
    emit("atomic_distinct_words_add", warps * ATOM_ITERS * 32 / cycles(ms), "ops/cycle", "",
         "atomicAdd to each thread's own word (coalesced, 32 words per request); operations per cycle, whole chip");
  }
  CK(cudaFree(p));
}

// ------------------------------------------------------------------------------------------------
// Launch overhead and block dispatch vs grid size
// ------------------------------------------------------------------------------------------------

__global__ void empty_kernel() {}

static void launches() {
  for (int threads : {128, 1024}) {
    for (int per_sm : {0, 1, 4, 16, 64, 256}) {
      int grid = per_sm == 0 ? 1 : per_sm * g_sms;
      float ms = time_ms([&] { empty_kernel<<<grid, threads>>>(); }, g_launch_reps);
      std::string name = "empty_grid" + std::to_string(grid) + "_block" + std::to_string(threads);
      emit(name.c_str(), ms * 1e3, "us", "", "one launch of an empty kernel, CUDA events (median of " +
           std::to_string(g_launch_reps) + ")");
    }
  }
}

int main(int argc, char** argv) {
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--list")) {
      printf("latencies\nthroughputs\natomics\nlaunches\n");
      return 0;
    }
    if (!strcmp(argv[i], "--only") && i + 1 < argc) only.push_back(argv[++i]);
    if (!strcmp(argv[i], "--launch-reps") && i + 1 < argc) g_launch_reps = std::max(1, atoi(argv[++i]));
  }
  auto want = [&](const char* s) { return only.empty() || std::find(only.begin(), only.end(), s) != only.end(); };
  int dev = 0, khz = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  g_clock_ghz = khz * 1e-6;
  emit("sms", g_sms, "", "", "cudaDevAttrMultiProcessorCount");
  emit("clock_ghz", g_clock_ghz, "GHz", "clock_ghz", "cudaDevAttrClockRate (the per-SM rates divide by it)");
  if (want("latencies")) latencies();
  if (want("throughputs")) throughputs();
  if (want("atomics")) atomics();
  if (want("launches")) launches();
  return 0;
}
