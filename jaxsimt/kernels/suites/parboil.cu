// parboil.cu - kernels written for jaxsimt after the Parboil benchmark suite (IMPACT group, University of
// Illinois, impact.crhc.illinois.edu/parboil). Nothing here is copied: each kernel is our own code following
// the published algorithm, kernel structure, launch configuration and memory-access pattern of the Parboil
// kernel named in its comment. Host drivers and numpy references: kernels/suites/parboil.py.
//
// Build: nvcc -ptx -arch=sm_90 -O3 -lineinfo parboil.cu -o parboil.ptx   (kernels/suites/regen.sh)

// ---------------------------------------------------------------------------- sgemm (cuda_base, mysgemmNT)
// C = alpha A B^T + beta C, column-major: a block of 16 x 8 threads computes a 128 x 16 tile of C, each
// thread one row of it in 16 registers; 8 x 16 tiles of B staged in shared memory, A read from global.
#define TILE_N 16
#define TILE_TB_HEIGHT 8
#define TILE_M (TILE_N * TILE_TB_HEIGHT)
extern "C" __global__ void mysgemmNT(const float* A, int lda, const float* B, int ldb, float* C, int ldc, int k,
                                     float alpha, float beta) {
  float c[TILE_N];
  for (int i = 0; i < TILE_N; i++) c[i] = 0.0f;
  int mid = threadIdx.y * blockDim.x + threadIdx.x;
  int m = blockIdx.x * TILE_M + mid;
  int n = blockIdx.y * TILE_N + threadIdx.x;
  __shared__ float b_s[TILE_TB_HEIGHT][TILE_N];
  for (int i = 0; i < k; i += TILE_TB_HEIGHT) {
    float a;
    b_s[threadIdx.y][threadIdx.x] = B[n + (i + threadIdx.y) * ldb];
    __syncthreads();
    for (int j = 0; j < TILE_TB_HEIGHT; j++) {
      a = A[m + (i + j) * lda];
      for (int kk = 0; kk < TILE_N; kk++) c[kk] += a * b_s[j][kk];
    }
    __syncthreads();
  }
  int t = ldc * blockIdx.y * TILE_N + m;
  for (int i = 0; i < TILE_N; i++) C[t + i * ldc] = C[t + i * ldc] * beta + alpha * c[i];
}

// ---------------------------------------------------------------------------- stencil (cuda_base, naive_kernel)
// 7-point Jacobi stencil on a 3D grid, one thread per interior point, launched once per iteration.
#define Index3D(_nx, _ny, _i, _j, _k) ((_i) + (_nx) * ((_j) + (_ny) * (_k)))
extern "C" __global__ void naive_kernel(float c0, float c1, const float* A0, float* Anext, int nx, int ny, int nz) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
  int j = blockIdx.y * blockDim.y + threadIdx.y + 1;
  int k = blockIdx.z * blockDim.z + threadIdx.z + 1;
  if (i < nx - 1) {
    Anext[Index3D(nx, ny, i, j, k)] = c1 * (A0[Index3D(nx, ny, i, j, k + 1)] + A0[Index3D(nx, ny, i, j, k - 1)] +
                                            A0[Index3D(nx, ny, i, j + 1, k)] + A0[Index3D(nx, ny, i, j - 1, k)] +
                                            A0[Index3D(nx, ny, i + 1, j, k)] + A0[Index3D(nx, ny, i - 1, j, k)]) -
                                      A0[Index3D(nx, ny, i, j, k)] * c0;
  }
}

// ---------------------------------------------------------------------------- spmv (cuda_base, spmv_jds_naive)
// Sparse matrix-vector product in JDS form (rows sorted by length, stored by jagged diagonals), one thread
// per sorted row; sh_zcnt holds the number of diagonals of each group of 32 rows.
extern "C" __global__ void spmv_jds_naive(float* dst_vector, const float* d_data, const int* d_index, const int* d_perm,
                                          const float* x_vec, const int dim, const int* jds_ptr_int,
                                          const int* sh_zcnt_int) {
  int ix = blockIdx.x * blockDim.x + threadIdx.x;
  if (ix < dim) {
    float sum = 0.0f;
    int bound = sh_zcnt_int[ix / 32];
    for (int k = 0; k < bound; k++) {
      int j = jds_ptr_int[k] + ix;
      int in = d_index[j];
      float d = d_data[j];
      float t = x_vec[in];
      sum += d * t;
    }
    dst_vector[d_perm[ix]] = sum;
  }
}

// ---------------------------------------------------------------------------- mri-q (cuda, ComputePhiMag_GPU, ComputeQ_GPU)
// The MRI Q matrix: |phi|^2 per k-space sample, then for every voxel the sum over samples of
// phi * (cos, sin)(2 pi k . x), the samples in __constant__ memory in chunks of 1024 (one launch each).
#define KERNEL_PHI_MAG_THREADS_PER_BLOCK 256
#define KERNEL_Q_THREADS_PER_BLOCK 256
#define KERNEL_Q_K_ELEMS_PER_GRID 1024
#define PIx2 6.2831853071795864769252867665590058f
struct kValues {
  float Kx;
  float Ky;
  float Kz;
  float PhiMag;
};
__constant__ kValues ck[KERNEL_Q_K_ELEMS_PER_GRID];
extern "C" __global__ void ComputePhiMag_GPU(const float* phiR, const float* phiI, float* phiMag, int numK) {
  int indexK = blockIdx.x * KERNEL_PHI_MAG_THREADS_PER_BLOCK + threadIdx.x;
  if (indexK < numK) {
    float real = phiR[indexK];
    float imag = phiI[indexK];
    phiMag[indexK] = real * real + imag * imag;
  }
}
extern "C" __global__ void ComputeQ_GPU(int numK, int kGlobalIndex, const float* x, const float* y, const float* z,
                                        float* Qr, float* Qi) {
  int kIndex = 0;
  int xIndex = blockIdx.x * KERNEL_Q_THREADS_PER_BLOCK + threadIdx.x;
  float sX = x[xIndex], sY = y[xIndex], sZ = z[xIndex], sQr = Qr[xIndex], sQi = Qi[xIndex];
  for (; (kIndex < KERNEL_Q_K_ELEMS_PER_GRID) && (kGlobalIndex < numK); kIndex++, kGlobalIndex++) {
    float expArg = PIx2 * (ck[kIndex].Kx * sX + ck[kIndex].Ky * sY + ck[kIndex].Kz * sZ);
    float cosArg = cosf(expArg);
    float sinArg = sinf(expArg);
    float phi = ck[kIndex].PhiMag;
    sQr += phi * cosArg;
    sQi += phi * sinArg;
  }
  Qr[xIndex] = sQr;
  Qi[xIndex] = sQi;
}
