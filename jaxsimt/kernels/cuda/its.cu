// its.cu - kernels whose behaviour depends on Independent Thread Scheduling (Volta and later).
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo its.cu -o its
// Run:    ./its [--list] [--kernel NAME]...
//
// The CUDA forms of kernels/its.py (the emulator runs them with launch(mode="stack"|"its"), docs/its.md):
//   its_spin_lock     grid 2, block 32: the lanes of each block's single warp take the block's lock
//                     (atomicCAS spin), increment its counter with a plain read-modify-write, release it
//                     (atomicExch). Completes on Volta+ (ITS); livelocks under a reconvergence stack.
//   its_warp_sum      grid 1, block 64, sync = 1: each lane sums x[t*32 .. t*32 + lens[t]) (lens[t] =
//                     (t * 7) % 11), the warp adds the partials in shared memory, __syncwarp() after
//                     every step. (sync = 0 leaves the __syncwarp() out: pre-Volta lockstep code whose
//                     result under ITS is not guaranteed; not run here.)
//   its_loop_tail     grid 1, block 32: out[t] = 3 * (t % 4) + 7 through a loop of t % 4 iterations.
#include "common.cuh"

static const char* PROGRAM = "its";

extern "C" __global__ void its_spin_lock(int* lock, int* counter) {
  const int b = blockIdx.x;
  while (atomicCAS(&lock[b], 0, 1) != 0) {
  }
  volatile int* c = counter;
  c[b] = c[b] + 1;
  __threadfence();
  atomicExch(&lock[b], 0);
}

extern "C" __global__ void its_warp_sum(const int* lens, const int* x, int* out, int sync) {
  __shared__ int part[32 * 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, t = w * 32 + lane;
  int acc = 0;
#pragma unroll 1
  for (int i = 0; i < lens[t]; ++i) acc += x[t * 32 + i];
  volatile int* p = part;
  p[t] = acc;
  if (sync) __syncwarp();
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    if (lane < off) p[t] = p[t] + p[t + off];
    if (sync) __syncwarp();
  }
  if (lane == 0) out[w] = p[t];
}

extern "C" __global__ void its_loop_tail(int* out) {
  const int t = threadIdx.x;
  int acc = 0;
#pragma unroll 1
  for (int i = 0; i < t % 4; ++i) acc += 3;
  out[t] = acc + 7;
}

static void run_spin_lock(LaunchInfo& li) {
  const int grid = 2, block = 32;
  DevBuf<int> lock(grid), counter(grid);
  lock.upload(std::vector<int>(grid, 0));
  counter.upload(std::vector<int>(grid, 0));
  li.grid = dim3(grid); li.block = dim3(block); li.cuda_name = "its_spin_lock";
  get_attr(li, its_spin_lock);
  its_spin_lock<<<li.grid, li.block>>>(lock.p, counter.p);
  launch_check();
  auto h = counter.download();
  li.ok = true;
  for (int b = 0; b < grid; ++b)
    if (h[b] != block) { li.ok = false; li.detail = "counter " + std::to_string(b) + " = " + std::to_string(h[b]); }
}

static void run_warp_sum(LaunchInfo& li) {
  const int block = 64, warps = block / 32;
  std::vector<int> hl(block), hx(block * 32);
  for (int t = 0; t < block; ++t) hl[t] = (t * 7) % 11;
  for (int i = 0; i < block * 32; ++i) hx[i] = (int)(hash32(i + 5) % 100);
  DevBuf<int> lens(block), x(block * 32), out(warps);
  lens.upload(hl); x.upload(hx); out.poison();
  li.grid = dim3(1); li.block = dim3(block); li.cuda_name = "its_warp_sum"; li.params = "sync=1";
  get_attr(li, its_warp_sum);
  its_warp_sum<<<li.grid, li.block>>>(lens.p, x.p, out.p, 1);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int w = 0; w < warps; ++w) {
    int e = 0;
    for (int t = w * 32; t < w * 32 + 32; ++t)
      for (int i = 0; i < hl[t]; ++i) e += hx[t * 32 + i];
    if (h[w] != e) { li.ok = false; li.detail = "mismatch at warp " + std::to_string(w); }
  }
}

static void run_loop_tail(LaunchInfo& li) {
  DevBuf<int> out(32);
  out.poison();
  li.grid = dim3(1); li.block = dim3(32); li.cuda_name = "its_loop_tail";
  get_attr(li, its_loop_tail);
  its_loop_tail<<<li.grid, li.block>>>(out.p);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int t = 0; t < 32; ++t)
    if (h[t] != 3 * (t % 4) + 7) { li.ok = false; li.detail = "mismatch at " + std::to_string(t); break; }
}

int main(int argc, char** argv) {
  std::vector<Entry> reg = {
      {"its_spin_lock", "grid 2, block 32; one lock and counter per block", run_spin_lock},
      {"its_warp_sum", "grid 1, block 64, sync 1; lens[t] = (t * 7) % 11", run_warp_sum},
      {"its_loop_tail", "grid 1, block 32", run_loop_tail},
  };
  return run_registry(PROGRAM, reg, argc, argv);
}
