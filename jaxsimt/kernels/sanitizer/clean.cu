// clean.cu - kernels that look like the planted bugs of this folder but are correct: a sanitizer must
// report nothing on them (kernels/sanitizer/cases.py holds their numpy references).
// PTX: nvcc -arch=sm_90 -O3 -lineinfo -ptx (kernels/sanitizer/regen.sh).

// Shared-memory tree reduction with a barrier after every step (rc_reduce_missing_sync done right).
extern "C" __global__ void ok_tree_reduce(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = s[t] + s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// A 16-bin histogram: atomics into a shared histogram, then atomics of the block's bins into the global one.
// Many threads update one word, but atomics do not race with atomics.
extern "C" __global__ void ok_histogram(const int* in, int* hist, int n) {
  __shared__ int bins[16];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t < 16) bins[t] = 0;
  __syncthreads();
  if (i < n) atomicAdd(&bins[in[i] & 15], 1);
  __syncthreads();
  if (t < 16) atomicAdd(&hist[t], bins[t]);
}

// Double-buffered shared tiles: tile k + 1 is loaded into the other buffer while tile k is read, with one
// barrier per step, which is enough because a buffer is rewritten only two steps after it was read.
extern "C" __global__ void ok_double_buffer(const float* in, float* out, int ntiles) {
  __shared__ float tile[2][256];
  const int t = threadIdx.x;
  float acc = 0.0f;
  tile[0][t] = in[t];
  __syncthreads();
  for (int k = 0; k < ntiles; ++k) {
    if (k + 1 < ntiles) tile[(k + 1) & 1][t] = in[(k + 1) * 256 + t];
    acc += tile[k & 1][255 - t];
    __syncthreads();
  }
  out[t] = acc;
}

// rc_warp_no_syncwarp done right: __syncwarp() between the steps orders the lanes' shared accesses.
extern "C" __global__ void ok_warp_reduce_syncwarp(const int* in, int* out) {
  __shared__ int s[32];
  const int t = threadIdx.x;
  s[t] = in[t];
  __syncwarp();
  for (int off = 16; off > 0; off >>= 1) {
    int v = 0;
    if (t < off) v = s[t + off];
    __syncwarp();
    if (t < off) s[t] += v;
    __syncwarp();
  }
  if (t == 0) out[0] = s[0];
}

// A warp reduction by shuffles: every lane of the warp executes every __shfl_down_sync it names.
extern "C" __global__ void ok_warp_reduce_shfl(const int* in, int* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) out[t / 32] = v;
}

// A 3-point stencil: each block stages its 256 cells and one halo cell on each side (loaded by the first
// and last thread), then reads neighbours after the barrier.
extern "C" __global__ void ok_stencil_halo(const float* in, float* out, int n) {
  __shared__ float s[256 + 2];
  const int t = threadIdx.x, i = blockIdx.x * 256 + t;
  s[t + 1] = in[i];
  if (t == 0) s[0] = i > 0 ? in[i - 1] : 0.0f;
  if (t == 255) s[257] = i + 1 < n ? in[i + 1] : 0.0f;
  __syncthreads();
  out[i] = s[t] + 2.0f * s[t + 1] + s[t + 2];
}

// Each thread writes its own element, then reads it back and writes it again: one thread, program order.
extern "C" __global__ void ok_own_element(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (i < n) {
    out[i] = in[i];
    s[t] = out[i] * 3.0f;
    out[i] = s[t] + out[i];
  }
}

// A forward difference that stops at the last element: `in` is followed directly by `out` (4096 bytes
// each), and in[i + 1] is only read when it is inside `in` (mc_load_next_alloc done right).
extern "C" __global__ void ok_neighbour_guarded(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (i + 1 < n ? in[i + 1] : 0.0f) - in[i];
}

// A per-thread array in local memory, filled entirely before a data-dependent read (ic_local_uninit and
// mc_local_overflow done right).
extern "C" __global__ void ok_local_array(const int* idx, const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float vals[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) vals[k] = in[i * 8 + k];
  out[i] = vals[idx[i] & 7];
}
