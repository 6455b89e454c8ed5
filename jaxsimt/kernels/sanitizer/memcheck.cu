// memcheck.cu - planted memory-access bugs, one per kernel (kernels/sanitizer/cases.py: grids, arguments and
// what a sanitizer must report). Each faulting access carries a `planted CASE` comment on its line.
// PTX: nvcc -arch=sm_90 -O3 -lineinfo -ptx (kernels/sanitizer/regen.sh).

// One element past the end of `out`: the guard is `<=` where it should be `<`. out holds 1000 floats
// (4000 bytes), so out[1000] lands in the allocator's padding up to the next 256-byte boundary.
extern "C" __global__ void mc_store_past_end(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 2.0f * i;  // planted mc_store_past_end
}

// A forward difference that reads in[i + 1] for the last element too. `in` is 1024 floats (4096 bytes,
// a multiple of 256), so in[1024] is the first element of `out`, the next allocation.
extern "C" __global__ void mc_load_next_alloc(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i + 1] - in[i];  // planted mc_load_next_alloc
}

// A backward difference that reads in[i - 1] for i = 0 too: in[-1] is the last element of `out`, the
// allocation just before `in`.
extern "C" __global__ void mc_load_before_start(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] - in[i - 1];  // planted mc_load_before_start
}

// A gather through a host-made index: one index is far past the end of `table` and lands inside `out`.
extern "C" __global__ void mc_gather_wild(const int* idx, const float* table, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i]];  // planted mc_gather_wild
}

// A column of a 32 x 32 row-major matrix read with leading dimension 64 instead of 32: rows 16..31 read
// past the matrix into the allocation after it.
extern "C" __global__ void mc_column_stride(const float* m, float* out, int col, int ld) {
  const int r = threadIdx.x;
  out[r] = m[r * ld + col];  // planted mc_column_stride
}

// Floats read from a byte buffer after a one-byte header: every 4-byte load is misaligned.
extern "C" __global__ void mc_misaligned(const char* bytes, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float* payload = reinterpret_cast<const float*>(bytes + 1);
  if (i < n) out[i] = payload[i];  // planted mc_misaligned
}

// The last thread of the block reads tile[256], one past the end of the block's only shared array.
extern "C" __global__ void mc_shared_overflow(const float* in, float* out) {
  __shared__ float tile[256];
  const int t = threadIdx.x;
  tile[t] = in[t];
  __syncthreads();
  out[t] = tile[t] + tile[t + 1];  // planted mc_shared_overflow
}

// As above with two shared arrays: a[128] is one past the end of `a`, and may be b[0] of the same block.
extern "C" __global__ void mc_shared_into_neighbour(const float* in, float* out) {
  __shared__ float a[128];
  __shared__ float b[128];
  const int t = threadIdx.x;
  a[t] = in[t];
  b[t] = -in[t];
  __syncthreads();
  out[t] = a[t + 1] + b[t];  // planted mc_shared_into_neighbour
}

// A shared-memory address (an offset in the block's shared window) used as a global pointer.
extern "C" __global__ void mc_shared_as_global(float* out) {
  __shared__ float buf[32];
  const int t = threadIdx.x;
  buf[t] = 1.0f + t;
  __syncthreads();
  const unsigned offset = static_cast<unsigned>(__cvta_generic_to_shared(&buf[t]));
  const float* p = reinterpret_cast<const float*>(static_cast<size_t>(offset));
  out[t] = *p;  // planted mc_shared_as_global
}

// A per-thread array indexed by data: the dynamic index puts it in local memory, and one thread's index
// is 8, one past the end of vals[8].
extern "C" __global__ void mc_local_overflow(const int* idx, const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float vals[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) vals[k] = in[i * 8 + k];
  out[i] = vals[idx[i]];  // planted mc_local_overflow
}
