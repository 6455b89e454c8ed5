// initcheck.cu - planted reads of memory nothing wrote, one per kernel (kernels/sanitizer/cases.py).
// Each uninitialized read carries a `planted CASE` comment on its line.
// PTX: nvcc -arch=sm_90 -O3 -lineinfo -ptx (kernels/sanitizer/regen.sh).

// The staging loop stops one short: s[255] is never written, and thread 0 reads it.
extern "C" __global__ void ic_shared_unwritten(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  if (t < 255) s[t] = in[t];
  __syncthreads();
  out[t] = s[255 - t];  // planted ic_shared_unwritten
}

// `bias` is allocated by the host (cudaMalloc) and never copied to or set.
extern "C" __global__ void ic_global_uninit(const float* in, const float* bias, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + bias[i];  // planted ic_global_uninit
}

// An accumulator the host allocated but forgot to zero before the first `+=`.
extern "C" __global__ void ic_accumulate_unzeroed(const float* in, float* acc, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += in[i];  // planted ic_accumulate_unzeroed
}

// A per-thread array (local memory: it is indexed by data) filled for k < 7 only; the one thread whose
// index is 7 reads the element nothing wrote.
extern "C" __global__ void ic_local_uninit(const int* idx, const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float vals[8];
#pragma unroll
  for (int k = 0; k < 7; ++k) vals[k] = in[i * 8 + k];
  out[i] = vals[idx[i]];  // planted ic_local_uninit
}
