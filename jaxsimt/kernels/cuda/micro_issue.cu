// micro_issue.cu - micro-benchmarks of what slows a warp scheduler's issue beyond the pipes' rates and the
// idle latencies (micro_timing.cu): register-bank conflicts, instruction-cache misses, and memory latency
// under load.
//
// regbank: one block per SM, 4*W warps (W per scheduler), each running a loop of independent FFMAs whose
//   operands ptxas places in register banks of its choosing. Variants (outer products a[i]*b[j] + acc[i][j],
//   independent triples x[i]*y[i] + acc[i], one shared factor x[i]*y + acc[i]) give loops with different
//   numbers of same-bank operand reads; the SASS (kept beside the results) says which, and the cycles per
//   loop instruction say what they cost.
// icache: the same SM layout, a loop whose body is N independent FFMAs with reused operands (no bank
//   conflicts), N from 128 to 32768 (2 KiB to 512 KiB of SASS). Cycles per instruction against the loop's
//   code size show the instruction caches' capacities and what a miss costs.
// loaded: every SM runs W warps, each of L lanes chasing its own pointer chain (ld.global.cg, one 128-byte
//   line per link) through an 8 MiB (L2) or 1 GiB (DRAM) random cycle: the latency of a load against the
//   number of loads in flight.
//
// Timing: each warp reads clock64() around its loop; an SM's cycles are its warps' last end minus their
// first start (one block per SM, so one clock), the figure is the median over the SMs.
// Output: one JSON line per measurement on stdout.
// Build: nvcc -arch=sm_90 -O3 -lineinfo -std=c++17 micro_issue.cu -o micro_issue
// Options: --only GROUP (repeatable: regbank, icache, loaded).
#include "common.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>


static int g_sms = 0;
static double g_clock_ghz = 0;

// ------------------------------------------------------------------------------------------------
// Per-warp clocks
// ------------------------------------------------------------------------------------------------

__device__ __forceinline__ void record(long long* clk, long long t0, long long t1) {
  if ((threadIdx.x & 31) == 0) {
    int w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    clk[2 * w] = t0;
    clk[2 * w + 1] = t1;
  }
}

// median over blocks of (last end - first start) of the block's warps
// a loop's K registers from in[lane], in[lane + 1], ...
template <int K>
__device__ __forceinline__ void load_regs(float (&x)[K], const float* in, int lane) {
#pragma unroll
  for (int i = 0; i < K; ++i) x[i] = in[lane + i];
}

// keeps a loop's K registers live: their sum, stored only if it is a value it never is
template <int K>
__device__ __forceinline__ void keep(const float (&x)[K], float* out) {
  float s = 0;
#pragma unroll
  for (int i = 0; i < K; ++i) s += x[i];
  if (s == 1234.5f) out[0] = s;
}

static double sm_cycles(const std::vector<long long>& clk, int blocks, int warps) {
  std::vector<double> per;
  for (int b = 0; b < blocks; ++b) {
    long long lo = clk[2 * (b * warps)], hi = clk[2 * (b * warps) + 1];
    for (int w = 0; w < warps; ++w) {
      lo = std::min(lo, clk[2 * (b * warps + w)]);
      hi = std::max(hi, clk[2 * (b * warps + w) + 1]);
    }
    per.push_back(double(hi - lo));
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

// ------------------------------------------------------------------------------------------------
// Register banks
// ------------------------------------------------------------------------------------------------

// acc[i][j] += a[i] * b[j]: the operands of a register-tiled GEMM's inner product
template <int TM, int TN>
__global__ void rb_outer(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float a[TM], b[TN], acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) a[i] = in[lane + i];
#pragma unroll
  for (int j = 0; j < TN; ++j) b[j] = in[64 + lane + j];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = in[128 + lane + i * TN + j];
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
  long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) s += acc[i][j];
  if (s == 1234.5f) out[0] = s;
  record(clk, t0, t1);
}

// acc[i] += x[i] * y[i]: three distinct operands an instruction, none shared with its neighbours
template <int N>
__global__ void rb_indep(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[N], y[N], acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    x[i] = in[lane + i];
    y[i] = in[64 + lane + i];
    acc[i] = in[128 + lane + i];
  }
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = fmaf(x[i], y[i], acc[i]);
  }
  long long t1 = clock64();
  keep(acc, out);
  record(clk, t0, t1);
}

// acc[i] += x[i] * y: one operand shared by every instruction (the reuse cache holds it)
template <int N>
__global__ void rb_shared(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[N], acc[N];
  const float y = in[200 + lane];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    x[i] = in[lane + i];
    acc[i] = in[128 + lane + i];
  }
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = fmaf(x[i], y, acc[i]);
  }
  long long t1 = clock64();
  keep(acc, out);
  record(clk, t0, t1);
}

// acc[i] += x[i] * x[(i + S) % N]: two operands from one array, their banks fixed by ptxas's layout
template <int N, int S>
__global__ void rb_pair(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[N], acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    x[i] = in[lane + i];
    acc[i] = in[128 + lane + i];
  }
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = fmaf(x[i], x[(i + S) % N], acc[i]);
  }
  long long t1 = clock64();
  keep(acc, out);
  record(clk, t0, t1);
}

using RbKernel = void (*)(const float*, float*, int, long long*);

struct RbCase { const char* name; RbKernel k; int ffma_per_iter; };

static const RbCase kRb[] = {
    {"rb_outer<1,8>", rb_outer<1, 8>, 8},     {"rb_outer<2,2>", rb_outer<2, 2>, 4},
    {"rb_outer<2,4>", rb_outer<2, 4>, 8},     {"rb_outer<2,8>", rb_outer<2, 8>, 16},
    {"rb_outer<3,3>", rb_outer<3, 3>, 9},     {"rb_outer<3,5>", rb_outer<3, 5>, 15},
    {"rb_outer<4,4>", rb_outer<4, 4>, 16},    {"rb_outer<4,6>", rb_outer<4, 6>, 24},
    {"rb_outer<4,8>", rb_outer<4, 8>, 32},    {"rb_outer<5,5>", rb_outer<5, 5>, 25},
    {"rb_outer<6,6>", rb_outer<6, 6>, 36},    {"rb_outer<8,4>", rb_outer<8, 4>, 32},
    {"rb_outer<8,8>", rb_outer<8, 8>, 64},    {"rb_indep<4>", rb_indep<4>, 4},
    {"rb_indep<6>", rb_indep<6>, 6},          {"rb_indep<8>", rb_indep<8>, 8},
    {"rb_indep<12>", rb_indep<12>, 12},       {"rb_indep<16>", rb_indep<16>, 16},
    {"rb_indep<24>", rb_indep<24>, 24},       {"rb_shared<8>", rb_shared<8>, 8},
    {"rb_shared<16>", rb_shared<16>, 16},     {"rb_shared<24>", rb_shared<24>, 24},
    {"rb_pair<8,1>", rb_pair<8, 1>, 8},       {"rb_pair<8,2>", rb_pair<8, 2>, 8},
    {"rb_pair<12,3>", rb_pair<12, 3>, 12},    {"rb_pair<16,1>", rb_pair<16, 1>, 16},
    {"rb_pair<16,4>", rb_pair<16, 4>, 16},    {"rb_pair<16,5>", rb_pair<16, 5>, 16},
};

static int max_threads(RbKernel k) {
  cudaFuncAttributes a;
  CK(cudaFuncGetAttributes(&a, k));
  return a.maxThreadsPerBlock;
}

static void emit_run(const char* group, const std::string& kernel, int warps_per_scheduler, int iters,
                     int per_iter, double cycles, const std::string& extra = "") {
  printf("{\"group\":\"%s\",\"kernel\":\"%s\",\"warps_per_scheduler\":%d,\"iters\":%d,\"per_iter\":%d,"
         "\"sm_cycles\":%.1f%s}\n",
         group, kernel.c_str(), warps_per_scheduler, iters, per_iter, cycles, extra.c_str());
  fflush(stdout);
}

// Runs every case with 1, 2, 4, 8 warps per scheduler (fewer where its registers do not fit), `ffmas` FFMAs a
// warp, and prints one line each: the median over 4 launches after a warm-up (instruction fetch from DRAM).
template <size_t N>
static void run_loops(const char* group, const RbCase (&cases)[N], int ffmas, int min_iters) {
  float *in, *out;
  long long* clk;
  CK(cudaMalloc(&in, 4096 * 4));
  CK(cudaMalloc(&out, 64));
  std::vector<float> h(4096);
  for (int i = 0; i < 4096; ++i) h[i] = 0.999f + 1e-6f * float(i % 97);
  CK(cudaMemcpy(in, h.data(), 4096 * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&clk, size_t(g_sms) * 64 * 2 * 8));
  std::vector<long long> hc(size_t(g_sms) * 64 * 2);
  for (const RbCase& c : cases) {
    for (int w : {1, 2, 4, 8}) {
      const int warps = 4 * w, iters = std::max(min_iters, ffmas / c.ffma_per_iter);
      if (32 * warps > max_threads(c.k)) continue;
      std::vector<double> reps;
      for (int r = 0; r < 5; ++r) {
        c.k<<<g_sms, 32 * warps>>>(in, out, iters, clk);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hc.data(), clk, size_t(g_sms) * warps * 2 * 8, cudaMemcpyDeviceToHost));
        if (r) reps.push_back(sm_cycles(hc, g_sms, warps));
      }
      std::sort(reps.begin(), reps.end());
      emit_run(group, c.name, w, iters, c.ffma_per_iter, reps[reps.size() / 2]);
    }
  }
  CK(cudaFree(in));
  CK(cudaFree(out));
  CK(cudaFree(clk));
}

// ------------------------------------------------------------------------------------------------
// Instruction cache
// ------------------------------------------------------------------------------------------------

// N independent FFMAs a loop iteration over 16 accumulators; b and c are reused, so no bank conflicts
template <int N>
__global__ void ic_body(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[16];
  const float b = in[200 + lane], c = in[300 + lane];
  load_regs(x, in, lane);
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < N; ++k) x[k % 16] = fmaf(x[k % 16], b, c);
  }
  long long t1 = clock64();
  keep(x, out);
  record(clk, t0, t1);
}

static const RbCase kIc[] = {
    {"ic_body<128>", ic_body<128>, 128},       {"ic_body<256>", ic_body<256>, 256},
    {"ic_body<512>", ic_body<512>, 512},       {"ic_body<1024>", ic_body<1024>, 1024},
    {"ic_body<2048>", ic_body<2048>, 2048},    {"ic_body<3072>", ic_body<3072>, 3072},
    {"ic_body<4096>", ic_body<4096>, 4096},    {"ic_body<6144>", ic_body<6144>, 6144},
    {"ic_body<8192>", ic_body<8192>, 8192},    {"ic_body<12288>", ic_body<12288>, 12288},
    {"ic_body<16384>", ic_body<16384>, 16384}, {"ic_body<32768>", ic_body<32768>, 32768},
};

// ------------------------------------------------------------------------------------------------
// Branches and the MIO issue rate
// ------------------------------------------------------------------------------------------------

// N independent FFMAs, then the loop's counter, compare and branch: one taken branch an iteration (not
// unrolled), so with one warp a scheduler an iteration's cycles less its instructions' are the branch's cost
template <int N>
__global__ void br_loop(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[8];
  const float b = in[200 + lane], c = in[300 + lane];
  load_regs(x, in, lane);
  long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < N; ++k) x[k % 8] = fmaf(x[k % 8], b, c);
  }
  long long t1 = clock64();
  keep(x, out);
  record(clk, t0, t1);
}

// N independent shuffles an iteration (8 registers): the rate a scheduler issues into the MIO queue with no
// shared-memory data stage behind it
template <int N>
__global__ void mio_shfl(const float* in, float* out, int iters, long long* clk) {
  const int lane = threadIdx.x & 31;
  float x[8];
  load_regs(x, in, lane);
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < N; ++k) x[k % 8] = __shfl_xor_sync(0xffffffffu, x[k % 8], 1 + (k % 31));
  }
  long long t1 = clock64();
  keep(x, out);
  record(clk, t0, t1);
}

static const RbCase kBr[] = {
    {"br_loop<1>", br_loop<1>, 1},   {"br_loop<2>", br_loop<2>, 2},   {"br_loop<4>", br_loop<4>, 4},
    {"br_loop<8>", br_loop<8>, 8},   {"br_loop<16>", br_loop<16>, 16},
};

static const RbCase kMio[] = {
    {"mio_shfl<8>", mio_shfl<8>, 8}, {"mio_shfl<32>", mio_shfl<32>, 32},
};

// ------------------------------------------------------------------------------------------------
// Memory latency under load
// ------------------------------------------------------------------------------------------------

// each of the first `lanes` lanes of every warp chases its own start on one random cycle of 128-byte lines
__global__ void chase_loaded(const unsigned long long* p, unsigned long long n_lines, int lanes, int steps,
                             unsigned long long salt, long long* clk, unsigned long long* sink) {
  const int lane = threadIdx.x & 31;
  const unsigned long long g = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * 32ull + lane;
  const unsigned long long* j = p + ((g * 1000003ull + salt) % n_lines) * 16;
  __syncwarp();
  long long t0 = clock64();
  if (lane < lanes) {
    for (int s = 0; s < steps; ++s) j = reinterpret_cast<const unsigned long long*>(__ldcg(j));
  }
  __syncwarp();
  long long t1 = clock64();
  if (reinterpret_cast<unsigned long long>(j) == 1ull) sink[0] = g;
  record(clk, t0, t1);
}

static std::vector<size_t> chase_next(size_t n, unsigned seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<size_t> next(n);
  for (size_t i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n];
  return next;
}

struct Level { const char* name; size_t bytes; int steps; };
static const Level kLevels[] = {{"l2", size_t(8) << 20, 256}, {"dram", size_t(1) << 30, 128}};

// a random cycle through the level's 128-byte lines, each line's first word the next line's address (pointers)
// or index
static unsigned long long* chase_buffer(const Level& lv, bool pointers) {
  const size_t n = lv.bytes / 128;
  unsigned long long* d;
  CK(cudaMalloc(&d, lv.bytes));
  auto next = chase_next(n, 11);
  std::vector<unsigned long long> h(lv.bytes / 8, 0);
  const unsigned long long base = pointers ? reinterpret_cast<unsigned long long>(d) : 0;
  for (size_t i = 0; i < n; ++i) h[i * 16] = pointers ? base + next[i] * 128 : next[i];
  CK(cudaMemcpy(d, h.data(), lv.bytes, cudaMemcpyHostToDevice));
  return d;
}

// the median busiest-SM cycles of launch(salt) over 3 repeats after a first (which warms the L2 for the 8 MiB
// cycle); each repeat starts elsewhere on the cycle, so the 1 GiB one finds no line an earlier repeat loaded
template <class Launch>
static double chase_cycles(Launch launch, int warps, long long* clk, std::vector<long long>& hc) {
  std::vector<double> reps;
  for (int r = 0; r < 4; ++r) {
    launch(17 + 7777777ull * r);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hc.data(), clk, size_t(g_sms) * warps * 2 * 8, cudaMemcpyDeviceToHost));
    if (r) reps.push_back(sm_cycles(hc, g_sms, warps));
  }
  std::sort(reps.begin(), reps.end());
  return reps[reps.size() / 2];
}

static std::string level_fields(const Level& lv, int lanes) {
  return ",\"level\":\"" + std::string(lv.name) + "\",\"lanes\":" + std::to_string(lanes);
}

static void loaded() {
  long long* clk;
  unsigned long long* sink;
  CK(cudaMalloc(&clk, size_t(g_sms) * 64 * 2 * 8));
  CK(cudaMalloc(&sink, 64));
  std::vector<long long> hc(size_t(g_sms) * 64 * 2);
  for (const Level& lv : kLevels) {
    const size_t n = lv.bytes / 128;
    unsigned long long* d = chase_buffer(lv, true);
    for (int lanes : {1, 4, 32}) {
      for (int w : {1, 2, 4, 8, 16, 32}) {
        auto launch = [&](unsigned long long salt) {
          chase_loaded<<<g_sms, 32 * w>>>(d, n, lanes, lv.steps, salt, clk, sink);
        };
        emit_run("loaded", std::string("chase_loaded_") + lv.name, 0, lv.steps, 1, chase_cycles(launch, w, clk, hc),
                 level_fields(lv, lanes) + ",\"warps_per_sm\":" + std::to_string(w));
      }
    }
    CK(cudaFree(d));
  }
  CK(cudaFree(clk));
  CK(cudaFree(sink));
}

// a warp's 32 lanes load lines spread over a span: lane i the line `i * stride` after the step's first (stride 0:
// each lane a random line of the buffer); the warp's next first line is lane 0's loaded value, shuffled to all,
// so each step waits for the whole request. lanes = 1: lane 0 alone, the same instructions
__global__ void chase_span(const unsigned long long* p, unsigned long long n_lines, int lanes, int stride,
                           int steps, unsigned long long salt, long long* clk, unsigned long long* sink) {
  const int lane = threadIdx.x & 31;
  const unsigned long long g = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  unsigned long long j = (g * 1000003ull + salt) % n_lines;
  const unsigned long long off = stride ? (unsigned long long)(lane * stride)
                                        : ((lane + 1) * 2654435761ull) % n_lines;
  unsigned long long v = 0;
  __syncwarp();
  long long t0 = clock64();
  for (int s = 0; s < steps; ++s) {
    if (lane < lanes) v = __ldcg(p + ((j + (lane ? off : 0)) % n_lines) * 16);
    j = __shfl_sync(0xffffffffu, v, 0);
  }
  __syncwarp();
  long long t1 = clock64();
  if (v == 1ull) sink[0] = g;
  record(clk, t0, t1);
}

static void span() {
  long long* clk;
  unsigned long long* sink;
  CK(cudaMalloc(&clk, size_t(g_sms) * 64 * 2 * 8));
  CK(cudaMalloc(&sink, 64));
  std::vector<long long> hc(size_t(g_sms) * 64 * 2);
  for (const Level& lv : kLevels) {
    const size_t n = lv.bytes / 128;
    unsigned long long* d = chase_buffer(lv, false);
    for (int lanes : {1, 32}) {
      for (int stride : {1, 2, 4, 8, 16, 64, 512, 0}) {
        if (lanes == 1 && stride != 1) continue;
        for (int w : {1, 4}) {
          auto launch = [&](unsigned long long salt) {
            chase_span<<<g_sms, 32 * w>>>(d, n, lanes, stride, lv.steps, salt, clk, sink);
          };
          emit_run("span", std::string("chase_span_") + lv.name, 0, lv.steps, 1, chase_cycles(launch, w, clk, hc),
                   level_fields(lv, lanes) + ",\"stride_lines\":" + std::to_string(stride) +
                       ",\"warps_per_sm\":" + std::to_string(w));
        }
      }
    }
    CK(cudaFree(d));
  }
  CK(cudaFree(clk));
  CK(cudaFree(sink));
}

int main(int argc, char** argv) {
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], "--only") && i + 1 < argc) only.push_back(argv[++i]);
  auto want = [&](const char* s) { return only.empty() || std::find(only.begin(), only.end(), s) != only.end(); };
  int khz = 0;
  CK(cudaSetDevice(0));
  CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  g_clock_ghz = khz * 1e-6;
  printf("{\"group\":\"device\",\"sms\":%d,\"clock_ghz\":%.3f}\n", g_sms, g_clock_ghz);
  if (want("regbank")) run_loops("regbank", kRb, 1 << 18, 1);
  if (want("icache")) run_loops("icache", kIc, 1 << 19, 2);
  if (want("loaded")) loaded();
  if (want("span")) span();
  if (want("branch")) run_loops("branch", kBr, 1 << 16, 1);
  if (want("mio")) run_loops("mio", kMio, 1 << 16, 1);
  return 0;
}
