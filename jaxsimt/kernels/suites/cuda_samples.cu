// cuda_samples.cu - kernels written for jaxsimt after NVIDIA's CUDA samples (github.com/NVIDIA/cuda-samples,
// BSD-3-Clause). Nothing here is copied: each kernel is our own code following the published algorithm,
// kernel structure, launch configuration and memory-access pattern of the sample named in its comment.
// Host drivers and numpy references: kernels/suites/cuda_samples.py.
//
// Build: nvcc -ptx -arch=sm_90 -O3 -lineinfo cuda_samples.cu -o cuda_samples.ptx   (kernels/suites/regen.sh)
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

// ---------------------------------------------------------------------------- 0_Introduction/vectorAdd
// One element per thread, grid-rounded with a bounds test.
extern "C" __global__ void vectorAdd(const float* A, const float* B, float* C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < numElements) C[i] = A[i] + B[i] + 0.0f;
}

// ---------------------------------------------------------------------------- 0_Introduction/matrixMul
// C = A * B with BLOCK_SIZE x BLOCK_SIZE tiles of A and B staged in shared memory; one C element per
// thread; wA, wB multiples of BLOCK_SIZE. As the sample, the k loop over the tile is fully unrolled.
template <int BLOCK_SIZE>
__device__ void matrixMulTile(float* C, const float* A, const float* B, int wA, int wB) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int aBegin = wA * BLOCK_SIZE * by, aEnd = aBegin + wA - 1, aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * bx, bStep = BLOCK_SIZE * wB;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    As[ty][tx] = A[a + wA * ty + tx];
    Bs[ty][tx] = B[b + wB * ty + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  C[c + wB * ty + tx] = Csub;
}
extern "C" __global__ void matrixMul_bs16(float* C, const float* A, const float* B, int wA, int wB) {
  matrixMulTile<16>(C, A, B, wA, wB);
}
extern "C" __global__ void matrixMul_bs32(float* C, const float* A, const float* B, int wA, int wB) {
  matrixMulTile<32>(C, A, B, wA, wB);
}

// ---------------------------------------------------------------------------- 6_Performance/transpose
// TILE_DIM x TILE_DIM tiles, BLOCK_ROWS rows of threads each looping over TILE_DIM / BLOCK_ROWS rows.
#define TILE_DIM 32
#define BLOCK_ROWS 8
extern "C" __global__ void copySharedMem(float* odata, const float* idata, int width, int height) {
  __shared__ float tile[TILE_DIM * TILE_DIM];
  int xIndex = blockIdx.x * TILE_DIM + threadIdx.x, yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
  int index = xIndex + width * yIndex;
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS)
    if (xIndex < width && yIndex + i < height) tile[(threadIdx.y + i) * TILE_DIM + threadIdx.x] = idata[index + i * width];
  __syncthreads();
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS)
    if (xIndex < width && yIndex + i < height) odata[index + i * width] = tile[(threadIdx.y + i) * TILE_DIM + threadIdx.x];
}
extern "C" __global__ void transposeNaive(float* odata, const float* idata, int width, int height) {
  int xIndex = blockIdx.x * TILE_DIM + threadIdx.x, yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
  int index_in = xIndex + width * yIndex, index_out = yIndex + height * xIndex;
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) odata[index_out + i] = idata[index_in + i * width];
}
extern "C" __global__ void transposeCoalesced(float* odata, const float* idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM];
  int xIndex = blockIdx.x * TILE_DIM + threadIdx.x, yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
  int index_in = xIndex + yIndex * width;
  xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
  yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
  int index_out = xIndex + yIndex * height;
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) tile[threadIdx.y + i][threadIdx.x] = idata[index_in + i * width];
  __syncthreads();
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) odata[index_out + i * height] = tile[threadIdx.x][threadIdx.y + i];
}
extern "C" __global__ void transposeNoBankConflicts(float* odata, const float* idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int xIndex = blockIdx.x * TILE_DIM + threadIdx.x, yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
  int index_in = xIndex + yIndex * width;
  xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
  yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
  int index_out = xIndex + yIndex * height;
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) tile[threadIdx.y + i][threadIdx.x] = idata[index_in + i * width];
  __syncthreads();
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) odata[index_out + i * height] = tile[threadIdx.x][threadIdx.y + i];
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/reduction
// The classic ladder of block sums (one partial sum per block, into g_odata[blockIdx.x]); dynamic shared
// memory of blockDim.x ints. reduce0: interleaved addressing with a modulo (divergent); reduce1: interleaved
// with a strided index (bank conflicts); reduce2: sequential addressing; reduce3: first add during the
// load; reduce4: the last warp by tile shuffles; reduce5: completely unrolled for a compile-time block
// size; reduce6: many elements per thread (grid-stride); the warp-shuffle variant reduces each warp with
// __shfl_down_sync first; the cooperative-groups variant uses cg::reduce on a 32-thread tile.
extern "C" __global__ void reduce0(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
extern "C" __global__ void reduce1(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    int index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
extern "C" __global__ void reduce2(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
extern "C" __global__ void reduce3(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  int mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}
extern "C" __global__ void reduce4(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  int mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}
template <unsigned int blockSize>
__device__ void reduce5Body(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  int mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  cg::sync(cta);
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  cg::sync(cta);
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  cg::sync(cta);
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  cg::sync(cta);
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}
extern "C" __global__ void reduce5_256(const int* g_idata, int* g_odata, unsigned int n) {
  reduce5Body<256>(g_idata, g_odata, n);
}
template <unsigned int blockSize, bool nIsPow2>
__device__ void reduce6Body(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ int sdata[];
  unsigned int tid = threadIdx.x, gridSize = blockSize * gridDim.x;
  int mySum = 0;
  if (nIsPow2) {
    unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
    gridSize = gridSize << 1;
    while (i < n) {
      mySum += g_idata[i];
      if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
      i += gridSize;
    }
  } else {
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    while (i < n) {
      mySum += g_idata[i];
      i += gridSize;
    }
  }
  sdata[tid] = mySum;
  cg::sync(cta);
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  cg::sync(cta);
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  cg::sync(cta);
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  cg::sync(cta);
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}
extern "C" __global__ void reduce6_128_pow2(const int* g_idata, int* g_odata, unsigned int n) {
  reduce6Body<128, true>(g_idata, g_odata, n);
}
extern "C" __global__ void reduce6_128(const int* g_idata, int* g_odata, unsigned int n) {
  reduce6Body<128, false>(g_idata, g_odata, n);
}
// reduce7 of the sample: each warp reduces by __shfl_down_sync under the mask of its active lanes, warp
// partial sums go through shared memory, and the first warp reduces them again (blockDim.x a multiple of 32).
extern "C" __global__ void reduce7_shfl(const float* g_idata, float* g_odata, unsigned int n) {
  extern __shared__ float fdata[];
  unsigned int tid = threadIdx.x, gridSize = blockDim.x * gridDim.x;
  unsigned int mask = __ballot_sync(0xffffffffu, tid < blockDim.x);
  float mySum = 0;
  for (unsigned int i = blockIdx.x * blockDim.x + tid; i < n; i += gridSize) mySum += g_idata[i];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) mySum += __shfl_down_sync(mask, mySum, offset);
  if ((tid % warpSize) == 0) fdata[tid / warpSize] = mySum;
  __syncthreads();
  // The sample shuffles under the ballot of the first shmem_extent lanes, so for shmem_extent < 32 its
  // shuffles read lanes outside their mask (undefined in CUDA); here the first warp shuffles under the
  // full mask with zeros beyond shmem_extent.
  const unsigned int shmem_extent = blockDim.x / warpSize;
  if (tid < warpSize) {
    mySum = tid < shmem_extent ? fdata[tid] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) mySum += __shfl_down_sync(mask, mySum, offset);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}
// reduceMultiBlockCG's per-block stage: cg::reduce over a 32-thread tile (an integer add becomes
// redux.sync on sm_80+), tile sums in shared memory, the first tile reduces them.
extern "C" __global__ void reduce_cg(const int* g_idata, int* g_odata, unsigned int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  __shared__ int partial[32];
  int v = 0;
  for (unsigned int i = block.group_index().x * block.size() + block.thread_rank(); i < n;
       i += block.size() * gridDim.x)
    v += g_idata[i];
  v = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = v;
  block.sync();
  if (tile.meta_group_rank() == 0) {
    v = tile.thread_rank() < tile.meta_group_size() ? partial[tile.thread_rank()] : 0;
    v = cg::reduce(tile, v, cg::plus<int>());
    if (tile.thread_rank() == 0) g_odata[blockIdx.x] = v;
  }
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/shfl_scan
// Inclusive block scan: warp scans by __shfl_up_sync, warp totals in shared memory scanned by the first
// warp, added back; the per-block totals go to partial_sums. uniform_add adds each block's prefix.
extern "C" __global__ void shfl_scan_test(int* data, int width, int* partial_sums) {
  extern __shared__ int sums[];
  int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
  int lane_id = id % warpSize;
  int warp_id = threadIdx.x / warpSize;
  int value = data[id];
#pragma unroll
  for (int i = 1; i <= width; i *= 2) {
    unsigned int mask = 0xffffffff;
    int n = __shfl_up_sync(mask, value, i, width);
    if (lane_id >= i) value += n;
  }
  if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
  __syncthreads();
  if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
    int warp_sum = sums[lane_id];
    int mask = (1 << (blockDim.x / warpSize)) - 1;
    for (int i = 1; i <= (blockDim.x / warpSize); i *= 2) {
      int n = __shfl_up_sync(mask, warp_sum, i, (blockDim.x / warpSize));
      if (lane_id >= i) warp_sum += n;
    }
    sums[lane_id] = warp_sum;
  }
  __syncthreads();
  int blockSum = 0;
  if (warp_id > 0) blockSum = sums[warp_id - 1];
  value += blockSum;
  data[id] = value;
  if (partial_sums != NULL && threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}
extern "C" __global__ void uniform_add(int* data, int* partial_sums, int len) {
  __shared__ int buf;
  int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
  if (id > len) return;
  if (threadIdx.x == 0) buf = partial_sums[blockIdx.x];
  __syncthreads();
  data[id] += buf;
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/histogram
// histogram256: one 256-bin sub-histogram per warp in shared memory (WARP_COUNT warps per block), bytes of
// 32-bit words counted with shared atomicAdd, each block's sub-histograms summed into its own partial
// histogram; mergeHistogram256 sums the partial histograms bin by bin (a shared reduction per bin).
#define HIST_BIN 256
#define WARP_COUNT 6
#define HIST_THREADBLOCK (WARP_COUNT * 32)
#define MERGE_THREADBLOCK 256
__device__ inline void addByte(unsigned int* s_WarpHist, unsigned int data) { atomicAdd(s_WarpHist + data, 1); }
__device__ inline void addWord(unsigned int* s_WarpHist, unsigned int data) {
  addByte(s_WarpHist, (data >> 0) & 0xFFU);
  addByte(s_WarpHist, (data >> 8) & 0xFFU);
  addByte(s_WarpHist, (data >> 16) & 0xFFU);
  addByte(s_WarpHist, (data >> 24) & 0xFFU);
}
extern "C" __global__ void histogram256Kernel(unsigned int* d_PartialHistograms, const unsigned int* d_Data,
                                              unsigned int dataCount) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ unsigned int s_Hist[WARP_COUNT * HIST_BIN];
  unsigned int* s_WarpHist = s_Hist + (threadIdx.x >> 5) * HIST_BIN;
#pragma unroll
  for (unsigned int i = 0; i < (HIST_BIN / 32); i++) s_Hist[threadIdx.x + i * HIST_THREADBLOCK] = 0;
  cg::sync(cta);
  for (unsigned int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < dataCount; pos += blockDim.x * gridDim.x)
    addWord(s_WarpHist, d_Data[pos]);
  cg::sync(cta);
  for (unsigned int bin = threadIdx.x; bin < HIST_BIN; bin += HIST_THREADBLOCK) {
    unsigned int sum = 0;
    for (unsigned int i = 0; i < WARP_COUNT; i++) sum += s_Hist[bin + i * HIST_BIN];
    d_PartialHistograms[blockIdx.x * HIST_BIN + bin] = sum;
  }
}
extern "C" __global__ void mergeHistogram256Kernel(unsigned int* d_Histogram, const unsigned int* d_PartialHistograms,
                                                   unsigned int histogramCount) {
  cg::thread_block cta = cg::this_thread_block();
  unsigned int sum = 0;
  for (unsigned int i = threadIdx.x; i < histogramCount; i += MERGE_THREADBLOCK)
    sum += d_PartialHistograms[blockIdx.x + i * HIST_BIN];
  __shared__ unsigned int data[MERGE_THREADBLOCK];
  data[threadIdx.x] = sum;
  for (unsigned int stride = MERGE_THREADBLOCK / 2; stride > 0; stride >>= 1) {
    cg::sync(cta);
    if (threadIdx.x < stride) data[threadIdx.x] += data[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) d_Histogram[blockIdx.x] = data[0];
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/sortingNetworks
// Bitonic sort of (key, value) pairs: segments of SHARED_SIZE_LIMIT sorted in shared memory (alternating
// direction for the later global merge), then for every larger size the global merge steps down to
// SHARED_SIZE_LIMIT and one shared merge for the rest (bitonicMergeGlobal / bitonicMergeShared).
#define SHARED_SIZE_LIMIT 1024U
__device__ inline void Comparator(unsigned int& keyA, unsigned int& valA, unsigned int& keyB, unsigned int& valB,
                                  unsigned int dir) {
  unsigned int t;
  if ((keyA > keyB) == dir) {
    t = keyA; keyA = keyB; keyB = t;
    t = valA; valA = valB; valB = t;
  }
}
extern "C" __global__ void bitonicSortShared(unsigned int* d_DstKey, unsigned int* d_DstVal, const unsigned int* d_SrcKey,
                                             const unsigned int* d_SrcVal, unsigned int arrayLength, unsigned int dir) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ unsigned int s_key[SHARED_SIZE_LIMIT];
  __shared__ unsigned int s_val[SHARED_SIZE_LIMIT];
  d_SrcKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_SrcVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  s_key[threadIdx.x + 0] = d_SrcKey[0];
  s_val[threadIdx.x + 0] = d_SrcVal[0];
  s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcKey[(SHARED_SIZE_LIMIT / 2)];
  s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcVal[(SHARED_SIZE_LIMIT / 2)];
  for (unsigned int size = 2; size < arrayLength; size <<= 1) {
    unsigned int ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
    for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
      cg::sync(cta);
      unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], ddd);
    }
  }
  for (unsigned int stride = arrayLength / 2; stride > 0; stride >>= 1) {
    cg::sync(cta);
    unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
    Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], dir);
  }
  cg::sync(cta);
  d_DstKey[0] = s_key[threadIdx.x + 0];
  d_DstVal[0] = s_val[threadIdx.x + 0];
  d_DstKey[(SHARED_SIZE_LIMIT / 2)] = s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
  d_DstVal[(SHARED_SIZE_LIMIT / 2)] = s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
}
extern "C" __global__ void bitonicSortShared1(unsigned int* d_DstKey, unsigned int* d_DstVal, const unsigned int* d_SrcKey,
                                              const unsigned int* d_SrcVal) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ unsigned int s_key[SHARED_SIZE_LIMIT];
  __shared__ unsigned int s_val[SHARED_SIZE_LIMIT];
  d_SrcKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_SrcVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  s_key[threadIdx.x + 0] = d_SrcKey[0];
  s_val[threadIdx.x + 0] = d_SrcVal[0];
  s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcKey[(SHARED_SIZE_LIMIT / 2)];
  s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcVal[(SHARED_SIZE_LIMIT / 2)];
  for (unsigned int size = 2; size < SHARED_SIZE_LIMIT; size <<= 1) {
    unsigned int ddd = (threadIdx.x & (size / 2)) != 0;
    for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
      cg::sync(cta);
      unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], ddd);
    }
  }
  unsigned int ddd = blockIdx.x & 1;
  for (unsigned int stride = SHARED_SIZE_LIMIT / 2; stride > 0; stride >>= 1) {
    cg::sync(cta);
    unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
    Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], ddd);
  }
  cg::sync(cta);
  d_DstKey[0] = s_key[threadIdx.x + 0];
  d_DstVal[0] = s_val[threadIdx.x + 0];
  d_DstKey[(SHARED_SIZE_LIMIT / 2)] = s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
  d_DstVal[(SHARED_SIZE_LIMIT / 2)] = s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
}
extern "C" __global__ void bitonicMergeGlobal(unsigned int* d_DstKey, unsigned int* d_DstVal, const unsigned int* d_SrcKey,
                                              const unsigned int* d_SrcVal, unsigned int arrayLength, unsigned int size,
                                              unsigned int stride, unsigned int dir) {
  unsigned int global_comparatorI = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int comparatorI = global_comparatorI & (arrayLength / 2 - 1);
  unsigned int ddd = dir ^ ((comparatorI & (size / 2)) != 0);
  unsigned int pos = 2 * global_comparatorI - (global_comparatorI & (stride - 1));
  unsigned int keyA = d_SrcKey[pos + 0], valA = d_SrcVal[pos + 0];
  unsigned int keyB = d_SrcKey[pos + stride], valB = d_SrcVal[pos + stride];
  Comparator(keyA, valA, keyB, valB, ddd);
  d_DstKey[pos + 0] = keyA;
  d_DstVal[pos + 0] = valA;
  d_DstKey[pos + stride] = keyB;
  d_DstVal[pos + stride] = valB;
}
extern "C" __global__ void bitonicMergeShared(unsigned int* d_DstKey, unsigned int* d_DstVal, const unsigned int* d_SrcKey,
                                              const unsigned int* d_SrcVal, unsigned int arrayLength, unsigned int size,
                                              unsigned int dir) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ unsigned int s_key[SHARED_SIZE_LIMIT];
  __shared__ unsigned int s_val[SHARED_SIZE_LIMIT];
  d_SrcKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_SrcVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  d_DstVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
  s_key[threadIdx.x + 0] = d_SrcKey[0];
  s_val[threadIdx.x + 0] = d_SrcVal[0];
  s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcKey[(SHARED_SIZE_LIMIT / 2)];
  s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcVal[(SHARED_SIZE_LIMIT / 2)];
  unsigned int comparatorI = (blockIdx.x * blockDim.x + threadIdx.x) & ((arrayLength / 2) - 1);
  unsigned int ddd = dir ^ ((comparatorI & (size / 2)) != 0);
  for (unsigned int stride = SHARED_SIZE_LIMIT / 2; stride > 0; stride >>= 1) {
    cg::sync(cta);
    unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
    Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], ddd);
  }
  cg::sync(cta);
  d_DstKey[0] = s_key[threadIdx.x + 0];
  d_DstVal[0] = s_val[threadIdx.x + 0];
  d_DstKey[(SHARED_SIZE_LIMIT / 2)] = s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
  d_DstVal[(SHARED_SIZE_LIMIT / 2)] = s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/convolutionSeparable
// Separable convolution with the filter in __constant__ memory: a row pass over tiles of
// ROWS_RESULT_STEPS x ROWS_BLOCKDIM_X pixels with ROWS_HALO_STEPS halo tiles either side staged in shared
// memory, then a column pass likewise. The image sides are multiples of the tiles (as the sample assumes).
#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
__constant__ float c_Kernel[KERNEL_LENGTH];
#define ROWS_BLOCKDIM_X 16
#define ROWS_BLOCKDIM_Y 4
#define ROWS_RESULT_STEPS 8
#define ROWS_HALO_STEPS 1
extern "C" __global__ void convolutionRowsKernel(float* d_Dst, const float* d_Src, int imageW, int imageH, int pitch) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ float s_Data[ROWS_BLOCKDIM_Y][(ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X];
  const int baseX = (blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X + threadIdx.x;
  const int baseY = blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y;
  d_Src += baseY * pitch + baseX;
  d_Dst += baseY * pitch + baseX;
#pragma unroll
  for (int i = ROWS_HALO_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i++)
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] = d_Src[i * ROWS_BLOCKDIM_X];
#pragma unroll
  for (int i = 0; i < ROWS_HALO_STEPS; i++)
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] = (baseX >= -i * ROWS_BLOCKDIM_X) ? d_Src[i * ROWS_BLOCKDIM_X] : 0;
#pragma unroll
  for (int i = ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS + ROWS_HALO_STEPS; i++)
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] =
        (imageW - baseX > i * ROWS_BLOCKDIM_X) ? d_Src[i * ROWS_BLOCKDIM_X] : 0;
  cg::sync(cta);
#pragma unroll
  for (int i = ROWS_HALO_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
      sum += c_Kernel[KERNEL_RADIUS - j] * s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X + j];
    d_Dst[i * ROWS_BLOCKDIM_X] = sum;
  }
}
#define COLUMNS_BLOCKDIM_X 16
#define COLUMNS_BLOCKDIM_Y 8
#define COLUMNS_RESULT_STEPS 8
#define COLUMNS_HALO_STEPS 1
extern "C" __global__ void convolutionColumnsKernel(float* d_Dst, const float* d_Src, int imageW, int imageH, int pitch) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ float s_Data[COLUMNS_BLOCKDIM_X][(COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + 1];
  const int baseX = blockIdx.x * COLUMNS_BLOCKDIM_X + threadIdx.x;
  const int baseY = (blockIdx.y * COLUMNS_RESULT_STEPS - COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + threadIdx.y;
  d_Src += baseY * pitch + baseX;
  d_Dst += baseY * pitch + baseX;
#pragma unroll
  for (int i = COLUMNS_HALO_STEPS; i < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; i++)
    s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y] = d_Src[i * COLUMNS_BLOCKDIM_Y * pitch];
#pragma unroll
  for (int i = 0; i < COLUMNS_HALO_STEPS; i++)
    s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y] =
        (baseY >= -i * COLUMNS_BLOCKDIM_Y) ? d_Src[i * COLUMNS_BLOCKDIM_Y * pitch] : 0;
#pragma unroll
  for (int i = COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; i < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS + COLUMNS_HALO_STEPS;
       i++)
    s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y] =
        (imageH - baseY > i * COLUMNS_BLOCKDIM_Y) ? d_Src[i * COLUMNS_BLOCKDIM_Y * pitch] : 0;
  cg::sync(cta);
#pragma unroll
  for (int i = COLUMNS_HALO_STEPS; i < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; i++) {
    float sum = 0;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
      sum += c_Kernel[KERNEL_RADIUS - j] * s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y + j];
    d_Dst[i * COLUMNS_BLOCKDIM_Y * pitch] = sum;
  }
}

// ---------------------------------------------------------------------------- 0_Introduction/simpleAtomicIntrinsics
// Every thread applies each integer atomic once to its own word of g_odata (results that do not depend on
// the order of the threads: add, sub, max, min, inc, dec, and, or, xor).
extern "C" __global__ void atomicIntrinsics(int* g_odata) {
  const unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
  atomicAdd(&g_odata[0], 10);
  atomicSub(&g_odata[1], 10);
  atomicMax(&g_odata[2], tid);
  atomicMin(&g_odata[3], tid);
  atomicInc((unsigned int*)&g_odata[4], 17);
  atomicDec((unsigned int*)&g_odata[5], 137);
  atomicAnd(&g_odata[6], 2 * tid + 7);
  atomicOr(&g_odata[7], 1 << (tid % 32));
  atomicXor(&g_odata[8], tid);
}

// ---------------------------------------------------------------------------- 0_Introduction/simpleVoteIntrinsics
// Warp votes: any over tid >= warpSize/2 lanes, all over the same, any over a block-dependent test.
extern "C" __global__ void VoteAnyKernel1(unsigned int* input, unsigned int* result, int size) {
  int tx = threadIdx.x;
  int mask = 0xffffffff;
  result[tx] = __any_sync(mask, input[tx]);
}
extern "C" __global__ void VoteAllKernel2(unsigned int* input, unsigned int* result, int size) {
  int tx = threadIdx.x;
  int mask = 0xffffffff;
  result[tx] = __all_sync(mask, input[tx]);
}
extern "C" __global__ void VoteAnyKernel3(bool* info, int warp_size) {
  int tx = threadIdx.x;
  unsigned int mask = 0xffffffff;
  bool* offs = info + (tx * 3);
  *offs = __any_sync(mask, (tx >= (warp_size * 3) / 2));
  *(offs + 1) = (tx >= (warp_size * 3) / 2 ? true : false);
  if (__all_sync(mask, (tx >= (warp_size * 3) / 2))) *(offs + 2) = true;
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/scalarProd
// Dot products of vectorN pairs of vectors of elementN elements: one block per pair, each thread
// accumulating a strided slice, then a shared tree reduction of ACCUM_N partial sums.
#define ACCUM_N 256
extern "C" __global__ void scalarProdGPU(float* d_C, const float* d_A, const float* d_B, int vectorN, int elementN) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ float accumResult[ACCUM_N];
  for (int vec = blockIdx.x; vec < vectorN; vec += gridDim.x) {
    int vectorBase = elementN * vec, vectorEnd = vectorBase + elementN;
    for (int iAccum = threadIdx.x; iAccum < ACCUM_N; iAccum += blockDim.x) {
      float sum = 0;
      for (int pos = vectorBase + iAccum; pos < vectorEnd; pos += ACCUM_N) sum += d_A[pos] * d_B[pos];
      accumResult[iAccum] = sum;
    }
    for (int stride = ACCUM_N / 2; stride > 0; stride >>= 1) {
      cg::sync(cta);
      for (int iAccum = threadIdx.x; iAccum < stride; iAccum += blockDim.x)
        accumResult[iAccum] += accumResult[stride + iAccum];
    }
    cg::sync(cta);
    if (threadIdx.x == 0) d_C[vec] = accumResult[0];
  }
}

// ---------------------------------------------------------------------------- 4_CUDA_Libraries/../BlackScholes
// European call and put prices by the Black-Scholes formula with the polynomial approximation of the
// cumulative normal distribution; two options per thread in a grid-stride loop.
__device__ inline float cndGPU(float d) {
  const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f, A5 = 1.330274429f;
  const float RSQRT2PI = 0.39894228040143267793994605993438f;
  float K = __fdividef(1.0f, (1.0f + 0.2316419f * fabsf(d)));
  float cnd = RSQRT2PI * __expf(-0.5f * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
  if (d > 0) cnd = 1.0f - cnd;
  return cnd;
}
__device__ inline void BlackScholesBodyGPU(float& CallResult, float& PutResult, float S, float X, float T, float R,
                                           float V) {
  float sqrtT = __fdividef(1.0F, rsqrtf(T));
  float d1 = __fdividef(__logf(S / X) + (R + 0.5f * V * V) * T, V * sqrtT);
  float d2 = d1 - V * sqrtT;
  float CNDD1 = cndGPU(d1), CNDD2 = cndGPU(d2);
  float expRT = __expf(-R * T);
  CallResult = S * CNDD1 - X * expRT * CNDD2;
  PutResult = X * expRT * (1.0f - CNDD2) - S * (1.0f - CNDD1);
}
extern "C" __global__ void BlackScholesGPU(float2* d_CallResult, float2* d_PutResult, const float2* d_StockPrice,
                                           const float2* d_OptionStrike, const float2* d_OptionYears, float Riskfree,
                                           float Volatility, int optN) {
  const int opt = blockDim.x * blockIdx.x + threadIdx.x;
  if (opt < (optN / 2)) {
    float callResult1, callResult2, putResult1, putResult2;
    BlackScholesBodyGPU(callResult1, putResult1, d_StockPrice[opt].x, d_OptionStrike[opt].x, d_OptionYears[opt].x,
                        Riskfree, Volatility);
    BlackScholesBodyGPU(callResult2, putResult2, d_StockPrice[opt].y, d_OptionStrike[opt].y, d_OptionYears[opt].y,
                        Riskfree, Volatility);
    d_CallResult[opt] = make_float2(callResult1, callResult2);
    d_PutResult[opt] = make_float2(putResult1, putResult2);
  }
}

// ---------------------------------------------------------------------------- 0_Introduction/simpleCooperativeGroups
// Each thread block split into tiles of 16 threads (cg::tiled_partition); each tile sums its thread ranks
// through shared memory with tile-wide syncs; the tile's first thread writes the sum.
__device__ int sumReduction(cg::thread_group g, int* x, int val) {
  int lane = g.thread_rank();
  for (int i = g.size() / 2; i > 0; i /= 2) {
    x[lane] = val;
    g.sync();
    if (lane < i) val += x[lane + i];
    g.sync();
  }
  if (g.thread_rank() == 0) return val;
  return -1;
}
extern "C" __global__ void cgkernel(int* out) {
  cg::thread_block threadBlockGroup = cg::this_thread_block();
  extern __shared__ int workspace[];
  int threadRank = threadBlockGroup.thread_rank();
  cg::thread_group tiledPartition16 = cg::tiled_partition(threadBlockGroup, 16);
  int workspaceOffset = threadBlockGroup.thread_rank() - tiledPartition16.thread_rank();
  int input = tiledPartition16.thread_rank();
  int output = sumReduction(tiledPartition16, workspace + workspaceOffset, input);
  if (tiledPartition16.thread_rank() == 0) out[blockIdx.x * 64 + threadRank / 16] = output;
}

// ---------------------------------------------------------------------------- 2_Concepts_and_Techniques/.. warpAggregatedAtomicsCG
// Stream compaction of the positive elements: the active threads of a warp (cg::coalesced_threads) add
// their count to the global counter with one atomic by the group's leader, then each takes its slot.
__device__ int atomicAggInc(int* counter) {
  cg::coalesced_group active = cg::coalesced_threads();
  int res;
  if (active.thread_rank() == 0) res = atomicAdd(counter, active.size());
  res = active.shfl(res, 0);
  return res + active.thread_rank();
}
extern "C" __global__ void filter_arr(int* dst, int* nres, const int* src, int n) {
  int id = threadIdx.x + blockIdx.x * blockDim.x;
  for (int i = id; i < n; i += gridDim.x * blockDim.x)
    if (src[i] > 0) dst[atomicAggInc(nres)] = src[i];
}

// ---------------------------------------------------------------------------- 5_Domain_Specific/fastWalshTransform
// Fast Walsh-Hadamard transform: fwtBatch2Kernel does two radix-2 stages per launch on global memory
// (4 elements per thread, stride, many launches), fwtBatch1Kernel the last log2(N) <= ELEMENTARY_LOG2SIZE
// stages in shared memory (a radix-4 butterfly per step), modulateKernel multiplies pointwise.
#define ELEMENTARY_LOG2SIZE 11
extern "C" __global__ void fwtBatch1Kernel(float* d_Output, const float* d_Input, int log2N) {
  cg::thread_block cta = cg::this_thread_block();
  const int N = 1 << log2N;
  const int base = blockIdx.x << log2N;
  extern __shared__ float s_data[];
  const float* d_Src = d_Input + base;
  float* d_Dst = d_Output + base;
  for (int pos = threadIdx.x; pos < N; pos += blockDim.x) s_data[pos] = d_Src[pos];
  int stride = N;
  for (; stride >= 4; stride >>= 2) {
    int lo = threadIdx.x & (stride / 4 - 1);
    int i0 = ((threadIdx.x - lo) << 2) + lo;
    int i1 = i0 + stride / 4, i2 = i1 + stride / 4, i3 = i2 + stride / 4;
    cg::sync(cta);
    float D0 = s_data[i0], D1 = s_data[i1], D2 = s_data[i2], D3 = s_data[i3];
    float T;
    T = D0; D0 = D0 + D2; D2 = T - D2;
    T = D1; D1 = D1 + D3; D3 = T - D3;
    T = D0; s_data[i0] = D0 + D1; s_data[i1] = T - D1;
    T = D2; s_data[i2] = D2 + D3; s_data[i3] = T - D3;
  }
  if (stride == 2) {
    int i0 = threadIdx.x << 1, i1 = i0 + 1;
    cg::sync(cta);
    float D0 = s_data[i0], D1 = s_data[i1];
    s_data[i0] = D0 + D1;
    s_data[i1] = D0 - D1;
  }
  cg::sync(cta);
  for (int pos = threadIdx.x; pos < N; pos += blockDim.x) d_Dst[pos] = s_data[pos];
}
extern "C" __global__ void fwtBatch2Kernel(float* d_Output, const float* d_Input, int stride) {
  const int pos = blockIdx.x * blockDim.x + threadIdx.x;
  const int N = blockDim.x * gridDim.x * 4;
  const float* d_Src = d_Input + blockIdx.y * N;
  float* d_Dst = d_Output + blockIdx.y * N;
  int lo = pos & (stride - 1);
  int i0 = ((pos - lo) << 2) + lo;
  int i1 = i0 + stride, i2 = i1 + stride, i3 = i2 + stride;
  float D0 = d_Src[i0], D1 = d_Src[i1], D2 = d_Src[i2], D3 = d_Src[i3];
  float T;
  T = D0; D0 = D0 + D2; D2 = T - D2;
  T = D1; D1 = D1 + D3; D3 = T - D3;
  d_Dst[i0] = D0 + D1;
  d_Dst[i1] = D0 - D1;
  d_Dst[i2] = D2 + D3;
  d_Dst[i3] = D2 - D3;
}
extern "C" __global__ void modulateKernel(float* d_A, const float* d_B, int N) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int numThreads = blockDim.x * gridDim.x;
  float rcpN = 1.0f / (float)N;
  for (int pos = tid; pos < N; pos += numThreads) d_A[pos] *= d_B[pos] * rcpN;
}
