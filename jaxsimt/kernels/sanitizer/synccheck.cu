// synccheck.cu - planted misuses of barriers and warp-synchronous primitives, one per kernel
// (kernels/sanitizer/cases.py). Each offending call carries a `planted CASE` comment on its line.
// PTX: nvcc -arch=sm_90 -O3 -lineinfo -ptx (kernels/sanitizer/regen.sh).

// Half the block (warps 0..3 of 8) waits at a barrier the other half never reaches.
extern "C" __global__ void sc_half_block_barrier(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[t];
  if (t < 128) __syncthreads();  // planted sc_half_block_barrier
  out[t] = s[255 - t];
}

// A barrier reached by the even lanes of every warp only.
extern "C" __global__ void sc_lane_divergent_barrier(const float* in, float* out) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = in[t];
  if (t % 2 == 0) __syncthreads();  // planted sc_lane_divergent_barrier
  out[t] = s[63 - t];
}

// Both sides of a lane-divergent branch have their own barrier: the two halves of each warp wait at
// different barrier instructions.
extern "C" __global__ void sc_if_else_barriers(const float* in, float* out) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  if (t < 16) {
    s[t] = 2.0f * in[t];
    __syncthreads();  // planted sc_if_else_barriers
    out[t] = s[63 - t];
  } else {
    s[t] = in[t];
    __syncthreads();  // planted sc_if_else_barriers (the other barrier)
    out[t] = s[63 - t];
  }
}

// __syncwarp() names the full warp, but only lanes 0..15 execute it.
extern "C" __global__ void sc_syncwarp_partial(const int* in, int* out) {
  __shared__ int s[32];
  const int t = threadIdx.x;
  s[t] = in[t];
  if (t < 16) {
    __syncwarp();  // planted sc_syncwarp_partial
    out[t] = s[t] + s[t + 16];
  }
}

// Lanes 0..15 and 16..31 call __syncwarp with different member masks (each half names only itself, but
// the second call names the whole warp).
extern "C" __global__ void sc_syncwarp_mask_mismatch(const int* in, int* out) {
  __shared__ int s[32];
  const int t = threadIdx.x;
  s[t] = in[t];
  if (t < 16) {
    __syncwarp(0x0000ffffu);
  } else {
    __syncwarp(0xffffffffu);  // planted sc_syncwarp_mask_mismatch
  }
  out[t] = s[31 - t];
}

// A shuffle whose member mask names the whole warp, executed by lanes 0..15 only.
extern "C" __global__ void sc_shfl_partial_mask(const int* in, int* out) {
  const int t = threadIdx.x;
  int v = in[t];
  if (t < 16) v += __shfl_down_sync(0xffffffffu, v, 8);  // planted sc_shfl_partial_mask
  out[t] = v;
}

// A named barrier (id 1) told to wait for 96 threads, reached by warps 0 and 1 only (64 threads): the thread
// count does not match the threads that arrive.
extern "C" __global__ void sc_named_barrier_count(const float* in, float* out) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  if (t < 64) {
    s[t] = in[t];
    asm volatile("bar.sync 1, 96;");  // planted sc_named_barrier_count
    out[t] = s[63 - t];
  }
}

// Threads past the end of the data leave before a later barrier. Legal since Volta: exited threads do not
// hold a barrier up. A clean case (no finding expected).
extern "C" __global__ void sc_early_exit(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (i >= n) return;
  s[t] = in[i];
  __syncthreads();
  out[i] = 2.0f * s[t] + (t > 0 ? s[t - 1] : 0.0f);
}
