// polybench.cu - kernels written for jaxsimt after PolyBench/GPU (Grauer-Gray, Xu, Searles, Ayalasomayajula,
// Cavazos: "Auto-tuning a high-level language targeted to GPU codes", InPar 2012; the CUDA versions of the
// PolyBench 2.0 kernels). Nothing here is copied: each kernel is our own code following the published
// algorithm, kernel structure (one thread per output element, one launch per outer loop iteration where
// PolyBench/GPU's host loops), launch configuration and memory-access pattern of the PolyBench/GPU kernel
// named in its comment. Host drivers and numpy references: kernels/suites/polybench.py.
//
// Build: nvcc -ptx -arch=sm_90 -O3 -lineinfo polybench.cu -o polybench.ptx   (kernels/suites/regen.sh)

// ---------------------------------------------------------------------------- linear-algebra/kernels/gemm
// C = alpha A B + beta C, one thread per C element (blocks of 32 x 8).
extern "C" __global__ void gemm_kernel(const float* a, const float* b, float* c, int ni, int nj, int nk, float alpha,
                                       float beta) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < ni) && (j < nj)) {
    c[i * nj + j] *= beta;
    for (int k = 0; k < nk; k++) c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/2mm
// tmp = A B; D = tmp C (alpha = beta = 1 as PolyBench/GPU's 2mm).
extern "C" __global__ void mm2_kernel1(const float* A, const float* B, float* C, int ni, int nj, int nk) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < ni) && (j < nj)) {
    for (int k = 0; k < nk; k++) C[i * nj + j] += A[i * nk + k] * B[k * nj + j];
  }
}
extern "C" __global__ void mm2_kernel2(const float* C, const float* D, float* E, int ni, int nj, int nl) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < ni) && (j < nl)) {
    for (int k = 0; k < nj; k++) E[i * nl + j] += C[i * nj + k] * D[k * nl + j];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/3mm
// E = A B; F = C D; G = E F, three launches.
extern "C" __global__ void mm3_kernel1(const float* A, const float* B, float* E, int ni, int nj, int nk) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < ni) && (j < nj)) {
    for (int k = 0; k < nk; k++) E[i * nj + j] += A[i * nk + k] * B[k * nj + j];
  }
}
extern "C" __global__ void mm3_kernel2(const float* C, const float* D, float* F, int nj, int nl, int nm) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < nj) && (j < nl)) {
    for (int k = 0; k < nm; k++) F[i * nl + j] += C[i * nm + k] * D[k * nl + j];
  }
}
extern "C" __global__ void mm3_kernel3(const float* E, const float* F, float* G, int ni, int nl, int nj) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < ni) && (j < nl)) {
    for (int k = 0; k < nj; k++) G[i * nl + j] += E[i * nj + k] * F[k * nl + j];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/atax
// y = A^T (A x): a row pass (one thread per row, uncoalesced) and a column pass (one thread per column).
extern "C" __global__ void atax_kernel1(const float* A, const float* x, float* tmp, int nx, int ny) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx) {
    for (int j = 0; j < ny; j++) tmp[i] += A[i * ny + j] * x[j];
  }
}
extern "C" __global__ void atax_kernel2(const float* A, float* y, const float* tmp, int nx, int ny) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < ny) {
    for (int i = 0; i < nx; i++) y[j] += A[i * ny + j] * tmp[i];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/bicg
// s = r^T A (column pass), q = A p (row pass).
extern "C" __global__ void bicg_kernel1(const float* A, const float* r, float* s, int nx, int ny) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < ny) {
    s[j] = 0.0f;
    for (int i = 0; i < nx; i++) s[j] += r[i] * A[i * ny + j];
  }
}
extern "C" __global__ void bicg_kernel2(const float* A, const float* p, float* q, int nx, int ny) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx) {
    q[i] = 0.0f;
    for (int j = 0; j < ny; j++) q[i] += A[i * ny + j] * p[j];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/mvt
// x1 += A y1 (rows), x2 += A^T y2 (columns).
extern "C" __global__ void mvt_kernel1(const float* a, float* x1, const float* y_1, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < n; j++) x1[i] += a[i * n + j] * y_1[j];
  }
}
extern "C" __global__ void mvt_kernel2(const float* a, float* x2, const float* y_2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < n; j++) x2[i] += a[j * n + i] * y_2[j];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/gesummv
// y = alpha A x + beta B x, one thread per row.
extern "C" __global__ void gesummv_kernel(const float* a, const float* b, const float* x, float* y, float* tmp, int n,
                                          float alpha, float beta) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < n; j++) {
      tmp[i] += a[i * n + j] * x[j];
      y[i] += b[i * n + j] * x[j];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }
}

// ---------------------------------------------------------------------------- linear-algebra/kernels/syrk, syr2k
// C = alpha A A^T + beta C (and alpha A B^T + alpha B A^T + beta C), one thread per C element.
extern "C" __global__ void syrk_kernel(float ALPHA, float BETA, const float* a, float* c, int n, int m) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < n) && (j < n)) {
    c[i * n + j] *= BETA;
    for (int k = 0; k < m; k++) c[i * n + j] += ALPHA * a[i * m + k] * a[j * m + k];
  }
}
extern "C" __global__ void syr2k_kernel(float ALPHA, float BETA, const float* a, const float* b, float* c, int n, int m) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < n) && (j < n)) {
    c[i * n + j] *= BETA;
    for (int k = 0; k < m; k++)
      c[i * n + j] += ALPHA * a[i * m + k] * b[j * m + k] + ALPHA * b[i * m + k] * a[j * m + k];
  }
}

// ---------------------------------------------------------------------------- datamining/covariance
// Column means, centring, then the upper triangle of the covariance (one thread per column j1, looping
// over j2 >= j1 and mirroring).
extern "C" __global__ void covar_mean_kernel(float* mean, const float* data, int m, int n, float float_n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < m) {
    mean[j] = 0.0;
    for (int i = 0; i < n; i++) mean[j] += data[i * m + j];
    mean[j] /= float_n;
  }
}
extern "C" __global__ void covar_reduce_kernel(const float* mean, float* data, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < n) && (j < m)) data[i * m + j] -= mean[j];
}
extern "C" __global__ void covar_kernel(float* symmat, const float* data, int m, int n) {
  int j1 = blockIdx.x * blockDim.x + threadIdx.x;
  if (j1 < m) {
    for (int j2 = j1; j2 < m; j2++) {
      symmat[j1 * m + j2] = 0.0;
      for (int i = 0; i < n; i++) symmat[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
      symmat[j2 * m + j1] = symmat[j1 * m + j2];
    }
  }
}

// ---------------------------------------------------------------------------- datamining/correlation
// Means, standard deviations (sqrt, small ones replaced by 1), standardisation by sqrt(n), then the upper
// triangle of the correlation matrix (the diagonal set to 1 on the host, as PolyBench/GPU does).
#define FLOAT_N 3214212.01f
#define EPS 0.005f
extern "C" __global__ void corr_mean_kernel(float* mean, const float* data, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < m) {
    mean[j] = 0.0;
    for (int i = 0; i < n; i++) mean[j] += data[i * m + j];
    mean[j] /= (float)FLOAT_N;
  }
}
extern "C" __global__ void corr_std_kernel(const float* mean, float* std, const float* data, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < m) {
    std[j] = 0.0;
    for (int i = 0; i < n; i++) std[j] += (data[i * m + j] - mean[j]) * (data[i * m + j] - mean[j]);
    std[j] /= (FLOAT_N);
    std[j] = sqrtf(std[j]);
    if (std[j] <= EPS) std[j] = 1.0;
  }
}
extern "C" __global__ void corr_reduce_kernel(const float* mean, const float* std, float* data, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < n) && (j < m)) {
    data[i * m + j] -= mean[j];
    data[i * m + j] /= (sqrtf(FLOAT_N) * std[j]);
  }
}
extern "C" __global__ void corr_kernel(float* symmat, const float* data, int m, int n) {
  int j1 = blockIdx.x * blockDim.x + threadIdx.x;
  if (j1 < (m - 1)) {
    symmat[j1 * m + j1] = 1.0;
    for (int j2 = (j1 + 1); j2 < m; j2++) {
      symmat[j1 * m + j2] = 0.0;
      for (int i = 0; i < n; i++) symmat[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
      symmat[j2 * m + j1] = symmat[j1 * m + j2];
    }
  }
}

// ---------------------------------------------------------------------------- stencils/convolution-2d, -3d
// A 3 x 3 (3 x 3 x 3) stencil with fixed coefficients; the 3D one is launched once per plane i, as
// PolyBench/GPU's host does.
extern "C" __global__ void Convolution2D_kernel(int ni, int nj, const float* A, float* B) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  float c11 = +0.2, c21 = +0.5, c31 = -0.8;
  float c12 = -0.3, c22 = +0.6, c32 = -0.9;
  float c13 = +0.4, c23 = +0.7, c33 = +0.10;
  if ((i < ni - 1) && (j < nj - 1) && (i > 0) && (j > 0)) {
    B[i * nj + j] = c11 * A[(i - 1) * nj + (j - 1)] + c21 * A[(i - 1) * nj + (j + 0)] + c31 * A[(i - 1) * nj + (j + 1)] +
                    c12 * A[(i + 0) * nj + (j - 1)] + c22 * A[(i + 0) * nj + (j + 0)] + c32 * A[(i + 0) * nj + (j + 1)] +
                    c13 * A[(i + 1) * nj + (j - 1)] + c23 * A[(i + 1) * nj + (j + 0)] + c33 * A[(i + 1) * nj + (j + 1)];
  }
}
extern "C" __global__ void convolution3D_kernel(int ni, int nj, int nk, const float* A, float* B, int i) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  float c11 = +2, c21 = +5, c31 = -8;
  float c12 = -3, c22 = +6, c32 = -9;
  float c13 = +4, c23 = +7, c33 = +10;
  if ((i < (ni - 1)) && (j < (nj - 1)) && (k < (nk - 1)) && (i > 0) && (j > 0) && (k > 0)) {
    B[i * (nk * nj) + j * nk + k] =
        c11 * A[(i - 1) * (nk * nj) + (j - 1) * nk + (k - 1)] + c13 * A[(i + 1) * (nk * nj) + (j - 1) * nk + (k - 1)] +
        c21 * A[(i - 1) * (nk * nj) + (j - 1) * nk + (k - 1)] + c23 * A[(i + 1) * (nk * nj) + (j - 1) * nk + (k - 1)] +
        c31 * A[(i - 1) * (nk * nj) + (j - 1) * nk + (k - 1)] + c33 * A[(i + 1) * (nk * nj) + (j - 1) * nk + (k - 1)] +
        c12 * A[(i + 0) * (nk * nj) + (j - 1) * nk + (k + 0)] + c22 * A[(i + 0) * (nk * nj) + (j + 0) * nk + (k + 0)] +
        c32 * A[(i + 0) * (nk * nj) + (j + 1) * nk + (k + 0)] + c11 * A[(i - 1) * (nk * nj) + (j - 1) * nk + (k + 1)] +
        c13 * A[(i + 1) * (nk * nj) + (j - 1) * nk + (k + 1)] + c21 * A[(i - 1) * (nk * nj) + (j + 0) * nk + (k + 1)] +
        c23 * A[(i + 1) * (nk * nj) + (j + 0) * nk + (k + 1)] + c31 * A[(i - 1) * (nk * nj) + (j + 1) * nk + (k + 1)] +
        c33 * A[(i + 1) * (nk * nj) + (j + 1) * nk + (k + 1)];
  }
}

// ---------------------------------------------------------------------------- stencils/fdtd-2d
// 2D finite-difference time domain, three launches per time step t (ey, ex, hz updates; the first row
// of ey from the source _fict_[t]).
extern "C" __global__ void fdtd_step1_kernel(const float* _fict_, const float* ex, float* ey, const float* hz, int t,
                                             int nx, int ny) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < nx) && (j < ny)) {
    if (i == 0) ey[i * ny + j] = _fict_[t];
    else ey[i * ny + j] = ey[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
  }
}
extern "C" __global__ void fdtd_step2_kernel(float* ex, const float* ey, const float* hz, int t, int nx, int ny) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < nx) && (j < ny) && (j > 0)) ex[i * (ny + 1) + j] = ex[i * (ny + 1) + j] - 0.5f * (hz[i * ny + j] - hz[i * ny + (j - 1)]);
}
extern "C" __global__ void fdtd_step3_kernel(const float* ex, const float* ey, float* hz, int t, int nx, int ny) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if ((i < nx) && (j < ny))
    hz[i * ny + j] = hz[i * ny + j] - 0.7f * (ex[i * (ny + 1) + (j + 1)] - ex[i * (ny + 1) + j] + ey[(i + 1) * ny + j] -
                                              ey[i * ny + j]);
}

// ---------------------------------------------------------------------------- stencils/jacobi-1d-imper, jacobi-2d-imper
// Jacobi sweeps, two launches per time step (compute into B, copy back into A).
extern "C" __global__ void runJacobi1D_kernel1(const float* A, float* B, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if ((i > 1) && (i < (n - 1))) B[i] = 0.33333f * (A[i - 1] + A[i] + A[i + 1]);
}
extern "C" __global__ void runJacobi1D_kernel2(float* A, const float* B, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if ((j > 1) && (j < (n - 1))) A[j] = B[j];
}
extern "C" __global__ void runJacobi2D_kernel1(int n, const float* A, float* B) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if ((i >= 1) && (i < (n - 1)) && (j >= 1) && (j < (n - 1)))
    B[i * n + j] = 0.2f * (A[i * n + j] + A[i * n + (j - 1)] + A[i * n + (1 + j)] + A[(1 + i) * n + j] + A[(i - 1) * n + j]);
}
extern "C" __global__ void runJacobi2D_kernel2(int n, float* A, const float* B) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if ((i >= 1) && (i < (n - 1)) && (j >= 1) && (j < (n - 1))) A[i * n + j] = B[i * n + j];
}

// ---------------------------------------------------------------------------- solvers/gramschmidt
// Modified Gram-Schmidt QR, three launches per column k: the column norm (one thread), the normalised
// column of Q, and the projections removed from the later columns (one thread per column j > k).
extern "C" __global__ void gramschmidt_kernel1(const float* a, float* r, const float* q, int k, int m, int n) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid == 0) {
    float nrm = 0.0;
    for (int i = 0; i < m; i++) nrm += a[i * n + k] * a[i * n + k];
    r[k * n + k] = sqrtf(nrm);
  }
}
extern "C" __global__ void gramschmidt_kernel2(const float* a, const float* r, float* q, int k, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) q[i * n + k] = a[i * n + k] / r[k * n + k];
}
extern "C" __global__ void gramschmidt_kernel3(float* a, float* r, const float* q, int k, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if ((j > k) && (j < n)) {
    r[k * n + j] = 0.0;
    for (int i = 0; i < m; i++) r[k * n + j] += q[i * n + k] * a[i * n + j];
    for (int i = 0; i < m; i++) a[i * n + j] -= q[i * n + k] * r[k * n + j];
  }
}
