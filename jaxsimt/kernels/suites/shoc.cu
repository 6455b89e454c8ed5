// shoc.cu - kernels written for jaxsimt after the SHOC benchmark suite (Scalable HeterOgeneous Computing,
// Danalis et al., GPGPU-3 2010; github.com/vetter/shoc, CUDA level-1 benchmarks). Nothing here is copied:
// each kernel is our own code following the published algorithm, kernel structure, launch configuration
// and memory-access pattern of the SHOC kernel named in its comment. Host drivers and numpy references:
// kernels/suites/shoc.py.
//
// Build: nvcc -ptx -arch=sm_90 -O3 -lineinfo shoc.cu -o shoc.ptx   (kernels/suites/regen.sh)

// ---------------------------------------------------------------------------- level1/triad
// C = A + s B over one chunk of floats, one element per thread.
extern "C" __global__ void triad(const float* A, const float* B, float* C, float s) {
  int gid = threadIdx.x + (blockIdx.x * blockDim.x);
  C[gid] = A[gid] + s * B[gid];
}

// ---------------------------------------------------------------------------- level1/reduction
// Block sums with two loads per thread in a grid-stride loop, a shared tree down to 64 and a
// warp-synchronous tail through a volatile pointer (no barrier below 32 threads, as SHOC writes it);
// launched once over the data and once with one block over the block sums.
template <int blockSize>
__device__ void shocReduce(const float* g_idata, float* g_odata, unsigned int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = (blockIdx.x * (blockDim.x * 2)) + tid;
  unsigned int gridSize = blockDim.x * 2 * gridDim.x;
  sdata[tid] = 0;
  while (i < n) {
    sdata[tid] += g_idata[i] + g_idata[i + blockSize];
    i += gridSize;
  }
  __syncthreads();
  if (blockSize >= 512) {
    if (tid < 256) sdata[tid] += sdata[tid + 256];
    __syncthreads();
  }
  if (blockSize >= 256) {
    if (tid < 128) sdata[tid] += sdata[tid + 128];
    __syncthreads();
  }
  if (blockSize >= 128) {
    if (tid < 64) sdata[tid] += sdata[tid + 64];
    __syncthreads();
  }
  if (tid < warpSize) {
    volatile float* smem = sdata;
    if (blockSize >= 64) smem[tid] += smem[tid + 32];
    if (blockSize >= 32) smem[tid] += smem[tid + 16];
    if (blockSize >= 16) smem[tid] += smem[tid + 8];
    if (blockSize >= 8) smem[tid] += smem[tid + 4];
    if (blockSize >= 4) smem[tid] += smem[tid + 2];
    if (blockSize >= 2) smem[tid] += smem[tid + 1];
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
extern "C" __global__ void shoc_reduce_256(const float* g_idata, float* g_odata, unsigned int n) {
  shocReduce<256>(g_idata, g_odata, n);
}

// ---------------------------------------------------------------------------- level1/scan
// Three-phase inclusive scan: reduce (each block's sum of its range), scan_single_block (one block scans
// the block sums in shared memory), bottom_scan (each block rescans its range with float4 loads, its
// seed from the scanned block sums, a per-warp then per-block shared scan).
#define SCAN_BLOCK 256
__device__ float scanLocalMem(float val, volatile float* s_data) {
  int idx = threadIdx.x;
  s_data[idx] = 0.0f;
  __syncthreads();
  idx += blockDim.x;
  float t;
  s_data[idx] = val;
  __syncthreads();
  for (int i = 1; i < blockDim.x; i *= 2) {
    t = s_data[idx - i];
    __syncthreads();
    s_data[idx] += t;
    __syncthreads();
  }
  return s_data[idx - 1];
}
extern "C" __global__ void scan_reduce(const float* in, float* isums, const int n) {
  __shared__ float sdata[SCAN_BLOCK];
  int region_size = ((n / 4) / gridDim.x) * 4;
  int block_start = blockIdx.x * region_size;
  int block_stop = (blockIdx.x == gridDim.x - 1) ? n : block_start + region_size;
  int i = block_start + threadIdx.x;
  float sum = 0.0f;
  while (i < block_stop) {
    sum += in[i];
    i += blockDim.x;
  }
  sdata[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) isums[blockIdx.x] = sdata[0];
}
extern "C" __global__ void scan_single_block(float* isums, const int n) {
  __shared__ float s_data[SCAN_BLOCK * 2];
  float val = (threadIdx.x < n) ? isums[threadIdx.x] : 0.0f;
  val = scanLocalMem(val, s_data);
  if (threadIdx.x < n) isums[threadIdx.x] = val;
}
extern "C" __global__ void bottom_scan(const float* in, const float* isums, float* out, const int n) {
  __shared__ float s_data[SCAN_BLOCK * 2];
  __shared__ float s_seed;
  int n4 = n / 4;
  int region_size = n4 / gridDim.x;
  int block_start = blockIdx.x * region_size;
  int block_stop = (blockIdx.x == gridDim.x - 1) ? n4 : block_start + region_size;
  if (threadIdx.x == 0) s_seed = isums[blockIdx.x];
  __syncthreads();
  int i = block_start + threadIdx.x;
  int window = block_start;
  const float4* in4 = (const float4*)in;
  float4* out4 = (float4*)out;
  while (window < block_stop) {
    float4 val_4;
    if (i < block_stop) val_4 = in4[i];
    else val_4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    val_4.y += val_4.x;
    val_4.z += val_4.y;
    val_4.w += val_4.z;
    float res = scanLocalMem(val_4.w, s_data);
    val_4.x += res + s_seed;
    val_4.y += res + s_seed;
    val_4.z += res + s_seed;
    val_4.w += res + s_seed;
    if (i < block_stop) out4[i] = val_4;
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) s_seed = val_4.w;
    __syncthreads();
    window += blockDim.x;
    i += blockDim.x;
  }
}

// ---------------------------------------------------------------------------- level1/spmv
// CSR sparse matrix-vector products: the scalar kernel (one thread per row) and the vector kernel (one
// warp per row, partial sums reduced warp-synchronously through volatile shared memory). SHOC reads the
// vector through a texture when asked; here through plain loads.
#define SPMV_BLOCK 128
extern "C" __global__ void spmv_csr_scalar_kernel(const float* __restrict__ val, const int* __restrict__ cols,
                                                  const int* __restrict__ rowDelimiters, const float* __restrict__ vec,
                                                  const int dim, float* __restrict__ out) {
  int myRow = blockIdx.x * blockDim.x + threadIdx.x;
  if (myRow < dim) {
    float t = 0.0f;
    int start = rowDelimiters[myRow];
    int end = rowDelimiters[myRow + 1];
    for (int j = start; j < end; j++) {
      int col = cols[j];
      t += val[j] * vec[col];
    }
    out[myRow] = t;
  }
}
extern "C" __global__ void spmv_csr_vector_kernel(const float* __restrict__ val, const int* __restrict__ cols,
                                                  const int* __restrict__ rowDelimiters, const float* __restrict__ vec,
                                                  const int dim, float* __restrict__ out) {
  int t = threadIdx.x;
  int id = t & (warpSize - 1);
  int warpsPerBlock = blockDim.x / warpSize;
  int myRow = (blockIdx.x * warpsPerBlock) + (t / warpSize);
  __shared__ volatile float partialSums[SPMV_BLOCK];
  if (myRow < dim) {
    int warpStart = rowDelimiters[myRow];
    int warpEnd = rowDelimiters[myRow + 1];
    float mySum = 0;
    for (int j = warpStart + id; j < warpEnd; j += warpSize) {
      int col = cols[j];
      mySum += val[j] * vec[col];
    }
    partialSums[t] = mySum;
    if (id < 16) partialSums[t] += partialSums[t + 16];
    if (id < 8) partialSums[t] += partialSums[t + 8];
    if (id < 4) partialSums[t] += partialSums[t + 4];
    if (id < 2) partialSums[t] += partialSums[t + 2];
    if (id < 1) partialSums[t] += partialSums[t + 1];
    if (id == 0) out[myRow] = partialSums[t];
  }
}

// ---------------------------------------------------------------------------- level1/md
// Lennard-Jones forces: each thread loops over its atom's neighbour list (stored neighbour-major, so a
// warp's reads of the list coalesce), positions and forces as float4.
extern "C" __global__ void compute_lj_force(float4* force, const float4* position, const int neighCount,
                                            const int* neighList, const float cutsq, const float lj1, const float lj2,
                                            const int inum) {
  unsigned int idx = blockIdx.x * blockDim.x + threadIdx.x;
  float4 ipos = position[idx];
  float4 f = {0.0f, 0.0f, 0.0f, 0.0f};
  int j = 0;
  while (j < neighCount) {
    int jidx = neighList[j * inum + idx];
    float4 jpos = position[jidx];
    float delx = ipos.x - jpos.x;
    float dely = ipos.y - jpos.y;
    float delz = ipos.z - jpos.z;
    float r2inv = delx * delx + dely * dely + delz * delz;
    if (r2inv < cutsq) {
      r2inv = 1.0f / r2inv;
      float r6inv = r2inv * r2inv * r2inv;
      float forceC = r2inv * r6inv * (lj1 * r6inv - lj2);
      f.x += delx * forceC;
      f.y += dely * forceC;
      f.z += delz * forceC;
    }
    j++;
  }
  force[idx] = f;
}
