// real_cuda.cu - kernels written the way public CUDA suites write them, for the cases where an emulator
// can be silently wrong: byte flags stored by many warps, division by a uniform divisor, ptxas's
// contraction of a multiply feeding an add, aliased and offset pointer arguments, __constant__ tables.
//
// Build:  nvcc -ptx -arch=sm_90 -O3 real_cuda.cu -o ../ptx/real_cuda.ptx   (see kernels/ptx/regen.sh)
// The H200 runs this PTX itself (CuPy RawModule, the driver's ptxas), on the fixed inputs of
// jaxsimt.kernels.real_cuda, whose outputs are the fixture jaxsimt/data/h200/real_cuda.npz.
//
//   bfs_expand / bfs_update   a BFS level over a CSR graph with bool frontier, updating and visited flags
//                             and one bool "not finished" flag every updating thread sets to true
//   div_uniform               x / c (a kernel parameter), x / 3.0f (an immediate), rsqrt-free sqrt(x) / c
//   gauss_fan1 / gauss_fan2   one elimination step t of Gaussian elimination: m[i] = a[i][t] / a[t][t];
//                             a[i][j] -= m[i] * a[t][j]; b[i] -= m[i] * b[t] (multiplier kept in a
//                             register across the loop, so NVVM emits mul then sub and ptxas fuses them)
//   axpy_alias                y[i] = a * x[i]; y[i] += x[i] launched with x == y (one buffer, two
//                             parameters: 2 a x, where two buffers would give a x + x)
//   shift_add                 p[i] += q[i] with p a pointer into the middle of a buffer
//   const_poly                y[i] = c0 + x*(c1 + x*(c2 + x*c3)) with the coefficients in __constant__
//   gauss_fan2_f64            gauss_fan2 in double

extern "C" __global__ void bfs_expand(const int* row, const int* col, bool* frontier, bool* updating,
                                      const bool* visited, int* cost, int n) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < n && frontier[v]) {
    frontier[v] = false;
    for (int e = row[v]; e < row[v + 1]; e++) {
      int u = col[e];
      if (!visited[u]) {
        cost[u] = cost[v] + 1;
        updating[u] = true;
      }
    }
  }
}

extern "C" __global__ void bfs_update(bool* frontier, bool* updating, bool* visited, bool* not_done, int n) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < n && updating[v]) {
    frontier[v] = true;
    visited[v] = true;
    *not_done = true;
    updating[v] = false;
  }
}

extern "C" __global__ void div_uniform(const float* x, float* y, float* z, float* w, float c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] / c;
    z[i] = x[i] / 3.0f;
    w[i] = sqrtf(fabsf(x[i])) / c;
  }
}

extern "C" __global__ void gauss_fan1(const float* a, float* m, int n, int t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1 - t) {
    m[n * (i + t + 1) + t] = a[n * (i + t + 1) + t] / a[n * t + t];
  }
}

extern "C" __global__ void gauss_fan2(const float* m, float* a, float* b, int n, int t) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= n - 1 - t || y >= n - t) return;
  float mx = m[n * (x + 1 + t) + t];
  float p = mx * a[n * t + (y + t)];
  a[n * (x + 1 + t) + (y + t)] -= p;
  if (y == 0) {
    float q = mx * b[t];
    b[x + 1 + t] -= q;
  }
}

extern "C" __global__ void axpy_alias(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i];
    y[i] += x[i];  // x may alias y: reloaded after the store
  }
}

extern "C" __global__ void shift_add(float* p, const float* q, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += q[i];
}

__constant__ float coef[4];

extern "C" __global__ void const_poly(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]));
  }
}

extern "C" __global__ void gauss_fan2_f64(const double* m, double* a, double* b, int n, int t) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= n - 1 - t || y >= n - t) return;
  double mx = m[n * (x + 1 + t) + t];
  double p = mx * a[n * t + (y + t)];
  a[n * (x + 1 + t) + (y + t)] -= p;
  if (y == 0) {
    double q = mx * b[t];
    b[x + 1 + t] -= q;
  }
}
