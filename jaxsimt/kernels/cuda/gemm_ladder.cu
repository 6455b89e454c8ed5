// gemm_ladder.cu - the f32 GEMM ladder (C = A * B, row-major, A is M x K, B is K x N, C is M x N),
// Tensor Cores through WMMA, and cuBLAS as the timing reference.
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo -DLADDER_CUBLAS_LINKED gemm_ladder.cu -o gemm_ladder -lcublas
//   or    nvcc -arch=sm_90 -O3 -lineinfo gemm_ladder.cu -o gemm_ladder -ldl
//         (the second form loads libcublas.so.13/.12 at run time with dlopen; LADDER_CUBLAS_LIB=path overrides)
// Run:    ./gemm_ladder [--list] [--kernel NAME]... [--size M,N,K]   each rung once (default 256,256,256),
//                                                                     checked against a float64 host product
//         ./gemm_ladder --check-sizes      each rung at sizes that are not multiples of the tiles
//         ./gemm_ladder --time 1024,2048,4096 [--budget-ms 600] [--skip-ms 1500]
//                                          CUDA-event timing, median of repeats after one warm-up,
//                                          one JSON line per (size, variant), cuBLAS included
//
// =====================================================================================================
// DEFINITIVE PARAMETERS (the emulator's versions of these kernels copy them)
//   rung 1 naive_uncoalesced : block (16,16); row = blockIdx.x*16 + threadIdx.x, col = blockIdx.y*16 + threadIdx.y
//                              (seed 000's first mapping); grid (ceil(M/16), ceil(N/16))
//   rung 2 naive_coalesced   : block (16,16); col = blockIdx.x*16 + threadIdx.x, row = blockIdx.y*16 + threadIdx.y;
//                              grid (ceil(N/16), ceil(M/16))
//   rung 3 smem_tiled        : T = 16, block (16,16), grid (ceil(N/16), ceil(M/16)); As[16][16], Bs[16][16]
//   rung 4 coarsened         : T = 32, COARSEN = 2, block (16,16) = (T/COARSEN)^2, grid (ceil(N/32), ceil(M/32));
//                              As[32][32], Bs[32][32]; thread (tx,ty) owns C rows rowBase + wr*16,
//                              cols colBase + wc*16 (wr, wc in {0,1}), rowBase = blockIdx.y*32 + ty,
//                              colBase = blockIdx.x*32 + tx
//   rung 5 register_tiled    : BM = 64, BN = 64, BK = 8, 256 threads (block (256,1)), grid (ceil(N/64), ceil(M/64));
//                              8 warps arranged WARPS_M x WARPS_N = 2 x 4, warp tile WM x WN = 32 x 16,
//                              micro-tile M_R x N_R = 4 x 4 per thread;
//                              warp_row = warp / 4, warp_col = warp % 4;
//                              lane -> micro_row = lane / (WN/N_R) = lane / 4, micro_col = lane % 4;
//                              thread's C rows blockIdx.y*64 + warp_row*32 + micro_row*4 + i (i < 4),
//                              cols blockIdx.x*64 + warp_col*16 + micro_col*4 + j (j < 4);
//                              shared As[BK][BM] (A panel stored TRANSPOSED, As[k][m]) and Bs[BK][BN];
//                              loads: element idx = tid + r*256 (r < 2) of the 64x8 A panel (row idx/8, col idx%8)
//                              and of the 8x64 B panel (row idx/64, col idx%64);
//                              per k: a[i] = As[k][m0+i], b[j] = Bs[k][n0+j], acc[i][j] += a[i]*b[j]
//   rung 6 wmma              : nvcuda::wmma m16n16k16, A and B half, BOTH row-major, f32 accumulate;
//                              block 128 threads = 4 warps as 2 x 2, block tile 32 x 32, one 16x16 C tile
//                              per warp; grid (ceil(N/32), ceil(M/32)); per k-step of 16 the block stages
//                              As[32][16] and Bs[16][32] (half, zero-filled out of range) in shared memory,
//                              warp (wy,wx) = (warp/2, warp%2) loads A from &As[wy*16][0] (ldm 16) and B from
//                              &Bs[0][wx*16] (ldm 32); the result goes through shared Cs[warp][16][16] and
//                              is written with bounds checks. A and B are converted to half on the host.
//   cublas_sgemm             : cublasSgemm, default math mode (no TF32), row-major via C^T = B^T A^T
//   cublas_gemmex_f16        : cublasGemmEx A,B CUDA_R_16F, C CUDA_R_32F, CUBLAS_COMPUTE_32F, default algorithm
// Every kernel bounds-checks, so any M, N, K works. nvcc contracts acc += a*b into one FFMA (fmad on).
// =====================================================================================================
#include "common.cuh"
#include <cuda_fp16.h>
#include <mma.h>
#include <algorithm>
#include <stdexcept>
#ifdef LADDER_CUBLAS_LINKED
#include <cublas_v2.h>
#else
#include <dlfcn.h>
#endif

static const char* PROGRAM = "gemm_ladder";

constexpr int NAIVE_BLOCK = 16;  // rungs 1 and 2: block (16,16)
constexpr int TILED_T = 16;
constexpr int COARSE_T = 32, COARSE_K = 2;
constexpr int RT_BM = 64, RT_BN = 64, RT_BK = 8, RT_WM = 32, RT_WN = 16, RT_MR = 4, RT_NR = 4;
constexpr int RT_WARPS_M = RT_BM / RT_WM, RT_WARPS_N = RT_BN / RT_WN, RT_THREADS = 32 * RT_WARPS_M * RT_WARPS_N;
static_assert(RT_THREADS == 256, "register tile: 8 warps");
static_assert((RT_WM / RT_MR) * (RT_WN / RT_NR) == 32, "one micro-tile per lane");
constexpr int WMMA_BM = 32, WMMA_BN = 32, WMMA_THREADS = 128;

// ---------------------------------------------------------------------------------------- rung 1
// Seed 000's first mapping: row from threadIdx.x, col from threadIdx.y. Consecutive lanes walk down a
// column of A (stride K) and of C (stride N): uncoalesced; B[k*N+col] is one address per half-warp row.
__global__ void gemm_naive_uncoalesced(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
  }
}

// ---------------------------------------------------------------------------------------- rung 2
// Seed 002's naive_matrix_multiply.
// FIX (seed 002 bug): the seed indexes A as A[row * N + k] with the loop running to M, i.e. as if A were
// square; A is M x K here, so its row stride is K: A[row * K + k], loop k < K. The sizes are kernel
// arguments instead of the seed's global N and M (the seed's N x M / M x N naming becomes M x K / K x N).
__global__ void gemm_naive_coalesced(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
  }
}

// ---------------------------------------------------------------------------------------- rung 3
// Seed 002's matmul_tiled, fixed minimally:
// FIX 1: the seed writes B_shared[tx][ty] but reads B_shared[k][tx]; written now as B_shared[ty][tx]
//        (row t+ty of B's panel lands in shared row ty), matching the read.
// FIX 2: the seed mixes T (tile edge, block edge) and TILE (inner loop bound); one T = 16 is used for both.
// FIX 3: the seed assumes M, N, K multiples of T (no bound check); out-of-range tile elements are now
//        zero-filled and the C store is guarded, so any size works.
// (The seed's A row stride M is its inner dimension, K here: A[row * K + t + tx].)
__global__ void gemm_smem_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  constexpr int T = TILED_T;
  __shared__ float A_shared[T][T];
  __shared__ float B_shared[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty;
  int col = blockIdx.x * T + tx;
  float accumulator = 0.0f;
  for (int t = 0; t < K; t += T) {
    A_shared[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    B_shared[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) accumulator += A_shared[ty][k] * B_shared[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = accumulator;
}

// ---------------------------------------------------------------------------------------- rung 4
// Seed 002's matmul_tiled_and_coarsened, fixed minimally. T = 32 tile per block, K (COARSEN) = 2,
// (T/K) x (T/K) = 16 x 16 threads, each computing a K x K = 2 x 2 set of C with stride T/K.
// FIX 1: `_global__` typo -> `__global__`.
// FIX 2: rowBase/colBase were blockIdx * T * K + t{y,x}; a block covers a T x T tile of C, so
//        rowBase = blockIdx.y * T + ty and colBase = blockIdx.x * T + tx.
// FIX 3: undefined names: `row`/`col` in the loads and `acc` vs `accumulators`; the accumulators are now
//        named acc and zero-initialised (the seed left them uninitialised).
// FIX 4: a 16 x 16 block cannot load a 32 x 32 tile with one element per thread; each thread now loads the
//        K x K = 4 elements (ty + wr*T/K, tx + wc*T/K) of each tile, cooperatively.
// FIX 5: the B tile is written B_shared[row][col] (as in rung 3's fix), matching the B_shared[k][..] read.
// FIX 6: the k-loop stepped by TILE while loading T-wide tiles; it steps by T. The write-out loops ran to T
//        instead of K (the coarsening factor); they run to K and are bounds-checked, like the loads.
__global__ void gemm_coarsened(const float* A, const float* B, float* C, int M, int N, int Kdim) {
  constexpr int T = COARSE_T, K = COARSE_K, S = T / K;
  __shared__ float A_shared[T][T];
  __shared__ float B_shared[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int rowBase = blockIdx.y * T + ty;
  int colBase = blockIdx.x * T + tx;
  float acc[K][K];
#pragma unroll
  for (int wr = 0; wr < K; ++wr)
#pragma unroll
    for (int wc = 0; wc < K; ++wc) acc[wr][wc] = 0.0f;
  for (int t = 0; t < Kdim; t += T) {
#pragma unroll
    for (int wr = 0; wr < K; ++wr)
#pragma unroll
      for (int wc = 0; wc < K; ++wc) {
        int ar = rowBase + wr * S, ac = t + tx + wc * S;
        A_shared[ty + wr * S][tx + wc * S] = (ar < M && ac < Kdim) ? A[ar * Kdim + ac] : 0.0f;
        int br = t + ty + wr * S, bc = colBase + wc * S;
        B_shared[ty + wr * S][tx + wc * S] = (br < Kdim && bc < N) ? B[br * N + bc] : 0.0f;
      }
    __syncthreads();
    for (int k = 0; k < T; ++k)
#pragma unroll
      for (int wr = 0; wr < K; ++wr)
#pragma unroll
        for (int wc = 0; wc < K; ++wc) acc[wr][wc] += A_shared[ty + wr * S][k] * B_shared[k][tx + wc * S];
    __syncthreads();
  }
#pragma unroll
  for (int wr = 0; wr < K; ++wr)
#pragma unroll
    for (int wc = 0; wc < K; ++wc) {
      int r = rowBase + wr * S, c = colBase + wc * S;
      if (r < M && c < N) C[r * N + c] = acc[wr][wc];
    }
}

// ---------------------------------------------------------------------------------------- rung 5
// Block tile 64 x 64, k-panel 8 in shared memory, warp tile 32 x 16, 4 x 4 register micro-tile per thread
// updated by outer products (seed 000's warp and register tiling).
__global__ void __launch_bounds__(RT_THREADS) gemm_register_tiled(const float* A, const float* B, float* C, int M,
                                                                  int N, int K) {
  __shared__ float As[RT_BK][RT_BM];  // transposed: As[k][m]
  __shared__ float Bs[RT_BK][RT_BN];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_row = warp / RT_WARPS_N, warp_col = warp % RT_WARPS_N;
  const int micro_row = lane / (RT_WN / RT_NR), micro_col = lane % (RT_WN / RT_NR);
  const int blockRow = blockIdx.y * RT_BM, blockCol = blockIdx.x * RT_BN;
  const int m0 = warp_row * RT_WM + micro_row * RT_MR;  // micro-tile origin inside the block tile
  const int n0 = warp_col * RT_WN + micro_col * RT_NR;
  float acc[RT_MR][RT_NR];
#pragma unroll
  for (int i = 0; i < RT_MR; ++i)
#pragma unroll
    for (int j = 0; j < RT_NR; ++j) acc[i][j] = 0.0f;
  for (int t = 0; t < K; t += RT_BK) {
#pragma unroll
    for (int r = 0; r < (RT_BM * RT_BK) / RT_THREADS; ++r) {
      int idx = tid + r * RT_THREADS, m = idx / RT_BK, k = idx % RT_BK;
      int gr = blockRow + m, gc = t + k;
      As[k][m] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < (RT_BK * RT_BN) / RT_THREADS; ++r) {
      int idx = tid + r * RT_THREADS, k = idx / RT_BN, n = idx % RT_BN;
      int gr = t + k, gc = blockCol + n;
      Bs[k][n] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RT_BK; ++k) {
      float a[RT_MR], b[RT_NR];
#pragma unroll
      for (int i = 0; i < RT_MR; ++i) a[i] = As[k][m0 + i];
#pragma unroll
      for (int j = 0; j < RT_NR; ++j) b[j] = Bs[k][n0 + j];
#pragma unroll
      for (int i = 0; i < RT_MR; ++i)
#pragma unroll
        for (int j = 0; j < RT_NR; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < RT_MR; ++i)
#pragma unroll
    for (int j = 0; j < RT_NR; ++j) {
      int r = blockRow + m0 + i, c = blockCol + n0 + j;
      if (r < M && c < N) C[r * N + c] = acc[i][j];
    }
}

// ---------------------------------------------------------------------------------------- rung 6
__global__ void __launch_bounds__(WMMA_THREADS) gemm_wmma(const __half* A, const __half* B, float* C, int M, int N,
                                                          int K) {
  using namespace nvcuda;
  __shared__ __align__(128) __half As[WMMA_BM][16];
  __shared__ __align__(128) __half Bs[16][WMMA_BN];
  __shared__ __align__(128) float Cs[4][16][16];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wy = warp / 2, wx = warp % 2;
  const int blockRow = blockIdx.y * WMMA_BM, blockCol = blockIdx.x * WMMA_BN;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  const __half zero = __float2half(0.0f);
  for (int t = 0; t < K; t += 16) {
#pragma unroll
    for (int r = 0; r < (WMMA_BM * 16) / WMMA_THREADS; ++r) {
      int idx = tid + r * WMMA_THREADS, m = idx / 16, k = idx % 16;
      int gr = blockRow + m, gc = t + k;
      As[m][k] = (gr < M && gc < K) ? A[gr * K + gc] : zero;
    }
#pragma unroll
    for (int r = 0; r < (16 * WMMA_BN) / WMMA_THREADS; ++r) {
      int idx = tid + r * WMMA_THREADS, k = idx / WMMA_BN, n = idx % WMMA_BN;
      int gr = t + k, gc = blockCol + n;
      Bs[k][n] = (gr < K && gc < N) ? B[gr * N + gc] : zero;
    }
    __syncthreads();
    wmma::load_matrix_sync(a, &As[wy * 16][0], 16);
    wmma::load_matrix_sync(b, &Bs[0][wx * 16], WMMA_BN);
    wmma::mma_sync(c, a, b, c);
    __syncthreads();
  }
  wmma::store_matrix_sync(&Cs[warp][0][0], c, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < 256; i += 32) {
    int r = i / 16, cc = i % 16;
    int gr = blockRow + wy * 16 + r, gc = blockCol + wx * 16 + cc;
    if (gr < M && gc < N) C[gr * N + gc] = Cs[warp][r][cc];
  }
}

// ---------------------------------------------------------------------------------------- cuBLAS shim
struct Blas {
  bool ok = false;
  std::string why;
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;
  int (*gemmex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                const void*, void*, int, int, int, int) = nullptr;
  void init() {
#ifdef LADDER_CUBLAS_LINKED
    create = [](void** h) -> int { return (int)cublasCreate_v2((cublasHandle_t*)h); };
    destroy = [](void* h) -> int { return (int)cublasDestroy_v2((cublasHandle_t)h); };
    sgemm = [](void* h, int ta, int tb, int m, int n, int k, const float* al, const float* A, int lda, const float* B,
               int ldb, const float* be, float* C, int ldc) -> int {
      return (int)cublasSgemm_v2((cublasHandle_t)h, (cublasOperation_t)ta, (cublasOperation_t)tb, m, n, k, al, A, lda,
                                 B, ldb, be, C, ldc);
    };
    gemmex = [](void* h, int ta, int tb, int m, int n, int k, const void* al, const void* A, int at, int lda,
                const void* B, int bt, int ldb, const void* be, void* C, int ct, int ldc, int comp, int algo) -> int {
      return (int)cublasGemmEx((cublasHandle_t)h, (cublasOperation_t)ta, (cublasOperation_t)tb, m, n, k, al, A,
                               (cudaDataType)at, lda, B, (cudaDataType)bt, ldb, be, C, (cudaDataType)ct, ldc,
                               (cublasComputeType_t)comp, (cublasGemmAlgo_t)algo);
    };
    why = "linked";
#else
    void* lib = nullptr;
    const char* env = getenv("LADDER_CUBLAS_LIB");
    const char* names[] = {env, "libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    for (const char* n : names)
      if (n && (lib = dlopen(n, RTLD_NOW | RTLD_GLOBAL))) { why = std::string("dlopen ") + n; break; }
    if (!lib) { why = "libcublas not found by dlopen"; return; }
    create = (decltype(create))dlsym(lib, "cublasCreate_v2");
    destroy = (decltype(destroy))dlsym(lib, "cublasDestroy_v2");
    sgemm = (decltype(sgemm))dlsym(lib, "cublasSgemm_v2");
    gemmex = (decltype(gemmex))dlsym(lib, "cublasGemmEx");
    if (!create || !sgemm || !gemmex) { why = "cublas symbols missing"; return; }
#endif
    int st = create(&handle);
    if (st != 0) { why += ", cublasCreate status " + std::to_string(st); return; }
    ok = true;
  }
  // row-major C(MxN) = A(MxK) B(KxN)  ==  column-major C^T = B^T A^T
  int run_sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    const float one = 1.0f, zero = 0.0f;
    return sgemm(handle, 0, 0, N, M, K, &one, B, N, A, K, &zero, C, N);
  }
  int run_gemmex(const __half* A, const __half* B, float* C, int M, int N, int K) {
    const float one = 1.0f, zero = 0.0f;
    return gemmex(handle, 0, 0, N, M, K, &one, B, (int)CUDA_R_16F, N, A, (int)CUDA_R_16F, K, &zero, C,
                  (int)CUDA_R_32F, N, 68 /*CUBLAS_COMPUTE_32F*/, -1 /*CUBLAS_GEMM_DEFAULT*/);
  }
};

// ---------------------------------------------------------------------------------------- launching
struct Problem {
  int M, N, K;
  float *A, *B, *C;
  __half *Ah, *Bh;
};

static const char* RUNGS[] = {"naive_uncoalesced", "naive_coalesced", "smem_tiled",
                              "coarsened", "register_tiled", "wmma"};
static const int NRUNGS = 6;

static inline int cdiv(int a, int b) { return (a + b - 1) / b; }

// Launches rung r (0..5) on p; fills grid/block/name/attributes in li when given.
static void launch_rung(int r, const Problem& p, LaunchInfo* li) {
  dim3 grid, block;
  const void* fn = nullptr;
  const char* name = "";
  switch (r) {
    case 0: block = dim3(NAIVE_BLOCK, NAIVE_BLOCK); grid = dim3(cdiv(p.M, NAIVE_BLOCK), cdiv(p.N, NAIVE_BLOCK)); fn = (const void*)gemm_naive_uncoalesced;
      name = "gemm_naive_uncoalesced";
      gemm_naive_uncoalesced<<<grid, block>>>(p.A, p.B, p.C, p.M, p.N, p.K); break;
    case 1: block = dim3(NAIVE_BLOCK, NAIVE_BLOCK); grid = dim3(cdiv(p.N, NAIVE_BLOCK), cdiv(p.M, NAIVE_BLOCK)); fn = (const void*)gemm_naive_coalesced;
      name = "gemm_naive_coalesced";
      gemm_naive_coalesced<<<grid, block>>>(p.A, p.B, p.C, p.M, p.N, p.K); break;
    case 2: block = dim3(TILED_T, TILED_T); grid = dim3(cdiv(p.N, TILED_T), cdiv(p.M, TILED_T));
      fn = (const void*)gemm_smem_tiled; name = "gemm_smem_tiled";
      gemm_smem_tiled<<<grid, block>>>(p.A, p.B, p.C, p.M, p.N, p.K); break;
    case 3: block = dim3(COARSE_T / COARSE_K, COARSE_T / COARSE_K); grid = dim3(cdiv(p.N, COARSE_T), cdiv(p.M, COARSE_T));
      fn = (const void*)gemm_coarsened; name = "gemm_coarsened";
      gemm_coarsened<<<grid, block>>>(p.A, p.B, p.C, p.M, p.N, p.K); break;
    case 4: block = dim3(RT_THREADS); grid = dim3(cdiv(p.N, RT_BN), cdiv(p.M, RT_BM));
      fn = (const void*)gemm_register_tiled; name = "gemm_register_tiled";
      gemm_register_tiled<<<grid, block>>>(p.A, p.B, p.C, p.M, p.N, p.K); break;
    case 5: block = dim3(WMMA_THREADS); grid = dim3(cdiv(p.N, WMMA_BN), cdiv(p.M, WMMA_BM));
      fn = (const void*)gemm_wmma; name = "gemm_wmma";
      gemm_wmma<<<grid, block>>>(p.Ah, p.Bh, p.C, p.M, p.N, p.K); break;
  }
  if (li) {
    li->grid = grid; li->block = block; li->cuda_name = name;
    li->params = "M=" + std::to_string(p.M) + " N=" + std::to_string(p.N) + " K=" + std::to_string(p.K);
    if (cudaFuncGetAttributes(&li->attr, fn) == cudaSuccess) li->have_attr = true;
  }
}

struct HostData {
  int M, N, K;
  std::vector<float> A, B;    // f32 inputs
  std::vector<__half> Ah, Bh; // half copies
  std::vector<float> Ahf, Bhf;// half values back in f32 (reference of the f16 paths)
};

static HostData make_host(int M, int N, int K, uint32_t seed) {
  HostData h{M, N, K};
  h.A.resize((size_t)M * K); h.B.resize((size_t)K * N);
  for (size_t i = 0; i < h.A.size(); ++i) h.A[i] = hash_float((uint32_t)i, seed);
  for (size_t i = 0; i < h.B.size(); ++i) h.B[i] = hash_float((uint32_t)i, seed + 1);
  h.Ah.resize(h.A.size()); h.Bh.resize(h.B.size()); h.Ahf.resize(h.A.size()); h.Bhf.resize(h.B.size());
  for (size_t i = 0; i < h.A.size(); ++i) { h.Ah[i] = __float2half(h.A[i]); h.Ahf[i] = __half2float(h.Ah[i]); }
  for (size_t i = 0; i < h.B.size(); ++i) { h.Bh[i] = __float2half(h.B[i]); h.Bhf[i] = __half2float(h.Bh[i]); }
  return h;
}

struct DevProblem {
  Problem p;
  DevBuf<float> A, B, C;
  DevBuf<__half> Ah, Bh;
  explicit DevProblem(const HostData& h)
      : A(h.A.size()), B(h.B.size()), C((size_t)h.M * h.N), Ah(h.Ah.size()), Bh(h.Bh.size()) {
    A.upload(h.A); B.upload(h.B); Ah.upload(h.Ah); Bh.upload(h.Bh);
    p = Problem{h.M, h.N, h.K, A.p, B.p, C.p, Ah.p, Bh.p};
  }
};

// Full check: Frobenius-norm relative error against a float64 host product.
static double full_rel_err(const HostData& h, const std::vector<float>& C, bool half_inputs) {
  const std::vector<float>& A = half_inputs ? h.Ahf : h.A;
  const std::vector<float>& B = half_inputs ? h.Bhf : h.B;
  double num = 0, den = 0;
  std::vector<double> row(h.N);
  for (int i = 0; i < h.M; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int k = 0; k < h.K; ++k) {
      double a = A[(size_t)i * h.K + k];
      const float* b = &B[(size_t)k * h.N];
      for (int j = 0; j < h.N; ++j) row[j] += a * b[j];
    }
    for (int j = 0; j < h.N; ++j) {
      double c = C[(size_t)i * h.N + j];
      if (!std::isfinite(c)) return INFINITY;  // poison (NaN) left: an element was not written
      num += (c - row[j]) * (c - row[j]);
      den += row[j] * row[j];
    }
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Sampled check: 512 entries, each error over sum_k |a_ik b_kj|; returns the largest.
static double sampled_err(const HostData& h, const std::vector<float>& C, bool half_inputs) {
  const std::vector<float>& A = half_inputs ? h.Ahf : h.A;
  const std::vector<float>& B = half_inputs ? h.Bhf : h.B;
  double worst = 0;
  for (int s = 0; s < 512; ++s) {
    int i = (int)(hash32(2 * s + 1) % h.M), j = (int)(hash32(2 * s + 2) % h.N);
    if (s == 0) { i = h.M - 1; j = h.N - 1; }
    double ref = 0, mag = 0;
    for (int k = 0; k < h.K; ++k) {
      double t = (double)A[(size_t)i * h.K + k] * B[(size_t)k * h.N + j];
      ref += t; mag += std::fabs(t);
    }
    double c = C[(size_t)i * h.N + j];
    if (!std::isfinite(c)) return INFINITY;
    worst = std::max(worst, std::fabs(c - ref) / (mag + 1e-30));
  }
  return worst;
}

static const double TOL_F32 = 1e-5, TOL_F16 = 1e-4, TOL_SAMPLED = 1e-5;

static void run_rung_checked(int r, const HostData& h, LaunchInfo& li) {
  DevProblem d(h);
  d.C.poison();
  launch_rung(r, d.p, &li);
  launch_check();
  auto C = d.C.download();
  double err = full_rel_err(h, C, r == 5);
  double tol = r == 5 ? TOL_F16 : TOL_F32;
  li.ok = err < tol;
  char buf[96];
  snprintf(buf, sizeof buf, "rel_fro_err=%.3e tol=%.0e", err, tol);
  li.detail = buf;
}

// ---------------------------------------------------------------------------------------- timing
static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int time_mode(const std::vector<int>& sizes, double budget_ms, double skip_ms) {
  Blas blas;
  blas.init();
  printf("{\"event\":\"cublas\",\"ok\":%s,\"how\":\"%s\"}\n", blas.ok ? "true" : "false", json_escape(blas.why).c_str());
  fflush(stdout);
  const int NV = NRUNGS + 2;
  std::vector<double> last_median(NV, 0.0);
  int last_size = 0;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int n : sizes) {
    HostData h = make_host(n, n, n, 1000 + n);
    DevProblem d(h);
    const double flops = 2.0 * n * (double)n * n;
    for (int v = 0; v < NV; ++v) {
      std::string name = v < NRUNGS ? RUNGS[v] : (v == NRUNGS ? "cublas_sgemm" : "cublas_gemmex_f16");
      bool half_in = (v == 5 || v == NRUNGS + 1);
      auto launch = [&]() -> int {
        if (v < NRUNGS) { launch_rung(v, d.p, nullptr); return 0; }
        return v == NRUNGS ? blas.run_sgemm(d.p.A, d.p.B, d.p.C, n, n, n) : blas.run_gemmex(d.p.Ah, d.p.Bh, d.p.C, n, n, n);
      };
      std::string skip;
      if (v >= NRUNGS && !blas.ok) skip = "cuBLAS unavailable: " + blas.why;
      if (skip.empty() && last_size && last_median[v] > 0) {
        double ratio = (double)n / last_size;
        double predicted = last_median[v] * ratio * ratio * ratio;
        if (predicted > skip_ms) {
          char b[160];
          snprintf(b, sizeof b, "predicted %.0f ms per run from size %d (limit %.0f ms)", predicted, last_size, skip_ms);
          skip = b;
        }
      }
      if (!skip.empty()) {
        last_median[v] = 0;
        printf("{\"event\":\"timing\",\"size\":%d,\"variant\":\"%s\",\"skipped\":true,\"reason\":\"%s\"}\n", n,
               name.c_str(), json_escape(skip).c_str());
        fflush(stdout);
        continue;
      }
      try {
        d.C.poison();
        CK(cudaEventRecord(e0));
        int st = launch();
        CK(cudaEventRecord(e1));
        CK(cudaGetLastError());
        CK(cudaEventSynchronize(e1));
        if (st != 0) throw std::runtime_error("cuBLAS status " + std::to_string(st));
        float wms = 0;
        CK(cudaEventElapsedTime(&wms, e0, e1));
        auto C = d.C.download();
        double err = sampled_err(h, C, half_in);
        double tol = half_in ? 1e-3 : TOL_SAMPLED;
        bool ok = err < tol;
        int reps = (int)std::min(20.0, std::max(3.0, budget_ms / std::max(wms, 1e-3f)));
        if (wms > skip_ms) reps = 1;
        std::vector<double> ts;
        for (int i = 0; i < reps; ++i) {
          CK(cudaEventRecord(e0));
          launch();
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          ts.push_back(ms);
        }
        CK(cudaGetLastError());
        double med = median(ts), mn = *std::min_element(ts.begin(), ts.end());
        last_median[v] = med;
        printf("{\"event\":\"timing\",\"size\":%d,\"variant\":\"%s\",\"skipped\":false,\"warmup_ms\":%.4f,"
               "\"reps\":%d,\"median_ms\":%.5f,\"min_ms\":%.5f,\"max_ms\":%.5f,\"tflops\":%.3f,"
               "\"check_ok\":%s,\"sampled_max_rel_err\":%.3e}\n",
               n, name.c_str(), wms, reps, med, mn, *std::max_element(ts.begin(), ts.end()),
               flops / (med * 1e-3) / 1e12, ok ? "true" : "false", err);
      } catch (CudaFailure&) {
        cudaGetLastError();
        printf("{\"event\":\"timing\",\"size\":%d,\"variant\":\"%s\",\"skipped\":true,\"reason\":\"CUDA error\"}\n", n,
               name.c_str());
      } catch (std::exception& ex) {
        printf("{\"event\":\"timing\",\"size\":%d,\"variant\":\"%s\",\"skipped\":true,\"reason\":\"%s\"}\n", n,
               name.c_str(), json_escape(ex.what()).c_str());
      }
      fflush(stdout);
    }
    last_size = n;
  }
  printf("{\"event\":\"done\",\"program\":\"gemm_ladder\",\"mode\":\"time\"}\n");
  return 0;
}

static std::vector<int> parse_ints(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return v;
}

int main(int argc, char** argv) {
  int M = 256, N = 256, K = 256;
  bool check_sizes = false;
  std::vector<int> time_sizes;
  double budget_ms = 600, skip_ms = 1500;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) {
      auto v = parse_ints(argv[++i]);
      if (v.size() == 3) { M = v[0]; N = v[1]; K = v[2]; }
    } else if (!strcmp(argv[i], "--check-sizes")) check_sizes = true;
    else if (!strcmp(argv[i], "--time") && i + 1 < argc) time_sizes = parse_ints(argv[++i]);
    else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) budget_ms = atof(argv[++i]);
    else if (!strcmp(argv[i], "--skip-ms") && i + 1 < argc) skip_ms = atof(argv[++i]);
  }
  try {
    if (!time_sizes.empty()) return time_mode(time_sizes, budget_ms, skip_ms);
  } catch (CudaFailure&) { return 2; }
  std::vector<Entry> reg;
  if (check_sizes) {
    const int sizes[][3] = {{100, 75, 37}, {33, 65, 17}, {129, 257, 71}, {64, 64, 64}};
    for (auto& s : sizes)
      for (int r = 0; r < NRUNGS; ++r) {
        int m = s[0], n = s[1], k = s[2];
        reg.push_back({std::string(RUNGS[r]) + "@" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                       "check at odd size", [r, m, n, k](LaunchInfo& li) {
                         HostData h = make_host(m, n, k, 7);
                         run_rung_checked(r, h, li);
                       }});
      }
  } else {
    for (int r = 0; r < NRUNGS; ++r) {
      char cfg[160];
      snprintf(cfg, sizeof cfg, "M=%d N=%d K=%d; see the parameter block at the top of gemm_ladder.cu", M, N, K);
      reg.push_back({RUNGS[r], cfg, [r, M, N, K](LaunchInfo& li) {
                       HostData h = make_host(M, N, K, 3);
                       run_rung_checked(r, h, li);
                     }});
    }
  }
  return run_registry(PROGRAM, reg, argc, argv);
}
