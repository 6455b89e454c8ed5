// racecheck.cu - planted data races, one per kernel (kernels/sanitizer/cases.py). The two accesses of each
// race carry `planted CASE (write)` / `(read)` comments on their lines.
// PTX: nvcc -arch=sm_90 -O3 -lineinfo -ptx (kernels/sanitizer/regen.sh).

// Each thread reads the element a thread of the next warp wrote, with no barrier between: read after
// write between warps.
extern "C" __global__ void rc_raw_between_warps(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];  // planted rc_raw_between_warps (write)
  out[blockIdx.x * 256 + t] = s[(t + 32) % 256];  // planted rc_raw_between_warps (read)
}

// A shared-memory tree reduction without the barrier after each step: a thread may read s[t + stride]
// before the thread that owns it has added into it.
extern "C" __global__ void rc_reduce_missing_sync(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = s[t] + s[t + stride];  // planted rc_reduce_missing_sync (write) (read)
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// A tiled loop with one barrier per tile instead of two: a fast warp overwrites the tile for step k + 1
// while a slow warp still reads step k's tile (write after read).
extern "C" __global__ void rc_tiled_war(const float* in, float* out, int ntiles) {
  __shared__ float tile[256];
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int k = 0; k < ntiles; ++k) {
    tile[t] = in[k * 256 + t];  // planted rc_tiled_war (write)
    __syncthreads();
    acc += tile[255 - t];  // planted rc_tiled_war (read)
  }
  out[t] = acc;
}

// Threads t and t + 128 (different warps) write the same shared word with no order between them.
extern "C" __global__ void rc_shared_waw(const int* in, int* out) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  s[t % 128] = in[t];  // planted rc_shared_waw (write)
  __syncthreads();
  if (t < 128) out[t] = s[t];
}

// A sum into out[0] with a plain read-modify-write from every thread of the grid instead of atomicAdd.
extern "C" __global__ void rc_global_sum(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[0] += in[i];  // planted rc_global_sum (write) (read)
}

// A launch that reads another block's output: __syncthreads orders the block's own threads, but the last
// thread of block 0 reads mid[256], which block 1 writes in the same launch.
extern "C" __global__ void rc_global_neighbour(const float* in, float* mid, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  mid[i] = 2.0f * in[i];  // planted rc_global_neighbour (write)
  __syncthreads();
  out[i] = mid[i] + (i + 1 < n ? mid[i + 1] : 0.0f);  // planted rc_global_neighbour (read)
}

// The pre-Volta warp-synchronous reduction: one warp, volatile shared memory, no __syncwarp between steps.
// Lanes of a warp are not in lockstep under Independent Thread Scheduling: lane t may read s[t + 16]
// before lane t + 16 has stored it.
extern "C" __global__ void rc_warp_no_syncwarp(const int* in, int* out) {
  __shared__ int part[32];
  volatile int* s = part;
  const int t = threadIdx.x;
  s[t] = in[t];  // planted rc_warp_no_syncwarp (write)
  if (t < 16) s[t] += s[t + 16];  // planted rc_warp_no_syncwarp (read)
  if (t < 8) s[t] += s[t + 8];
  if (t < 4) s[t] += s[t + 4];
  if (t < 2) s[t] += s[t + 2];
  if (t < 1) s[t] += s[t + 1];
  if (t == 0) out[0] = s[0];
}
