// micro_divergence.cu - branch divergence patterns inside a warp.
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo micro_divergence.cu -o micro_divergence
// Run:    ./micro_divergence [--list] [--kernel NAME]...
//
// Launch configurations (FIXED): grid 2, block 128 (256 threads, 8 warps), kernel argument iters = 4
// (a run-time trip count, loops kept rolled with #pragma unroll 1), 32-bit unsigned arithmetic only,
// so the host reference is exact. Each thread loads in[gtid] and stores out[gtid] (coalesced).
//   div_none          every lane runs the same loop (no divergence)
//   div_halfwarp      if (lane < 16) { loop A } else { loop B }
//   div_nested        if (lane < 16) { if (lane < 8) { loop A } else { loop B } } else { loop C }; then loop D
//   div_loop          lane-dependent trip count: for (i = 0; i < lane % 8 + 1; ++i) step A
//   div_early_return  n = 200: if (gtid >= n) return; loop A  (warps 0-5 full, warp 6 has 8 lanes, warp 7 none)
#include "common.cuh"

static const char* PROGRAM = "micro_divergence";

__host__ __device__ inline unsigned stepA(unsigned x) { return x * 1664525u + 1013904223u; }
__host__ __device__ inline unsigned stepB(unsigned x) { return (x ^ (x >> 7)) * 22695477u + 1u; }
__host__ __device__ inline unsigned stepC(unsigned x) { return (x + 0x9e3779b9u) ^ (x << 3); }
__host__ __device__ inline unsigned stepD(unsigned x) { return x * 69069u + 12345u; }

__global__ void div_none(const unsigned* in, unsigned* out, int iters, int n) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[gtid];
#pragma unroll 1
  for (int i = 0; i < iters; ++i) x = stepA(x);
  out[gtid] = x;
}
__global__ void div_halfwarp(const unsigned* in, unsigned* out, int iters, int n) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  unsigned x = in[gtid];
  if (lane < 16) {
#pragma unroll 1
    for (int i = 0; i < iters; ++i) x = stepA(x);
  } else {
#pragma unroll 1
    for (int i = 0; i < iters; ++i) x = stepB(x);
  }
  out[gtid] = x;
}
__global__ void div_nested(const unsigned* in, unsigned* out, int iters, int n) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  unsigned x = in[gtid];
  if (lane < 16) {
    if (lane < 8) {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) x = stepA(x);
    } else {
#pragma unroll 1
      for (int i = 0; i < iters; ++i) x = stepB(x);
    }
  } else {
#pragma unroll 1
    for (int i = 0; i < iters; ++i) x = stepC(x);
  }
#pragma unroll 1
  for (int i = 0; i < iters; ++i) x = stepD(x);
  out[gtid] = x;
}
__global__ void div_loop(const unsigned* in, unsigned* out, int iters, int n) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  unsigned x = in[gtid];
  const int trip = lane % 8 + 1;
#pragma unroll 1
  for (int i = 0; i < trip; ++i) x = stepA(x);
  out[gtid] = x;
}
__global__ void div_early_return(const unsigned* in, unsigned* out, int iters, int n) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  if (gtid >= n) return;
  unsigned x = in[gtid];
#pragma unroll 1
  for (int i = 0; i < iters; ++i) x = stepA(x);
  out[gtid] = x;
}

static unsigned host_ref(const std::string& k, unsigned x, int gtid, int iters) {
  const int lane = gtid & 31;
  auto rep = [&](unsigned (*f)(unsigned), int it) { for (int i = 0; i < it; ++i) x = f(x); };
  if (k == "div_none" || k == "div_early_return") rep(stepA, iters);
  else if (k == "div_halfwarp") rep(lane < 16 ? stepA : stepB, iters);
  else if (k == "div_nested") { rep(lane < 16 ? (lane < 8 ? stepA : stepB) : stepC, iters); rep(stepD, iters); }
  else if (k == "div_loop") rep(stepA, lane % 8 + 1);
  return x;
}

typedef void (*DivKernel)(const unsigned*, unsigned*, int, int);

static void run_div(LaunchInfo& li, DivKernel kernel, const std::string& name, int n) {
  const int grid = 2, block = 128, total = grid * block, iters = 4;
  std::vector<unsigned> hin(total);
  for (int i = 0; i < total; ++i) hin[i] = hash32(i + 77);
  DevBuf<unsigned> in(total), out(total);
  in.upload(hin);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block); li.cuda_name = name;
  li.params = "iters=4 n=" + std::to_string(n);
  get_attr(li, kernel);
  kernel<<<li.grid, li.block>>>(in.p, out.p, iters, n);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int g = 0; g < total; ++g) {
    unsigned e = g < n ? host_ref(name, hin[g], g, iters) : 0xFFFFFFFFu;
    if (h[g] != e) { li.ok = false; li.detail = "mismatch at " + std::to_string(g); break; }
  }
}

int main(int argc, char** argv) {
  std::vector<Entry> reg;
  struct { const char* name; DivKernel k; int n; const char* cfg; } ks[] = {
      {"div_none", div_none, 256, "grid 2, block 128, iters 4"},
      {"div_halfwarp", div_halfwarp, 256, "grid 2, block 128, iters 4; lane < 16"},
      {"div_nested", div_nested, 256, "grid 2, block 128, iters 4; lane < 16 { lane < 8 } else"},
      {"div_loop", div_loop, 256, "grid 2, block 128; trip = lane % 8 + 1"},
      {"div_early_return", div_early_return, 200, "grid 2, block 128, iters 4, n 200; gtid >= n returns"},
  };
  for (auto& k : ks) {
    std::string name = k.name;
    DivKernel f = k.k;
    int n = k.n;
    reg.push_back({name, k.cfg, [name, f, n](LaunchInfo& li) { run_div(li, f, name, n); }});
  }
  return run_registry(PROGRAM, reg, argc, argv);
}
