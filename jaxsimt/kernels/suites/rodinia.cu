// rodinia.cu - kernels written for jaxsimt after the Rodinia benchmark suite (University of Virginia,
// rodinia.cs.virginia.edu, CUDA versions of Rodinia 3.1). Nothing here is copied: each kernel is our own
// code following the published algorithm, kernel structure, launch configuration and memory-access
// pattern of the Rodinia kernel named in its comment. Host drivers and numpy references:
// kernels/suites/rodinia.py.
//
// Build: nvcc -ptx -arch=sm_90 -O3 -lineinfo rodinia.cu -o rodinia.ptx   (kernels/suites/regen.sh)
//
// Where a Rodinia kernel reads outside its arrays (srad_v2 reads a row above J for the top blocks and a
// column left of it for the left blocks, values it then replaces), the kernel here loads the replacement
// directly; `srad_cuda_1_rodinia` keeps Rodinia's loads, so that jaxsimt's bounds check reports them.
#include <float.h>

#define IN_RANGE(x, min, max) ((x) >= (min) && (x) <= (max))
#define MIN(a, b) ((a) <= (b) ? (a) : (b))

// ---------------------------------------------------------------------------- bfs
// One BFS level per pair of launches over a graph of Node {first edge, edge count}: Kernel expands the
// frontier (mask) into updating flags and costs, Kernel2 moves updated nodes into the next frontier and
// sets the "not finished" flag.
struct Node {
  int starting;
  int no_of_edges;
};
extern "C" __global__ void bfs_Kernel(const Node* g_graph_nodes, const int* g_graph_edges, bool* g_graph_mask,
                                      bool* g_updating_graph_mask, const bool* g_graph_visited, int* g_cost,
                                      int no_of_nodes) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < no_of_nodes && g_graph_mask[tid]) {
    g_graph_mask[tid] = false;
    for (int i = g_graph_nodes[tid].starting; i < (g_graph_nodes[tid].no_of_edges + g_graph_nodes[tid].starting); i++) {
      int id = g_graph_edges[i];
      if (!g_graph_visited[id]) {
        g_cost[id] = g_cost[tid] + 1;
        g_updating_graph_mask[id] = true;
      }
    }
  }
}
extern "C" __global__ void bfs_Kernel2(bool* g_graph_mask, bool* g_updating_graph_mask, bool* g_graph_visited,
                                       bool* g_over, int no_of_nodes) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < no_of_nodes && g_updating_graph_mask[tid]) {
    g_graph_mask[tid] = true;
    g_graph_visited[tid] = true;
    *g_over = true;
    g_updating_graph_mask[tid] = false;
  }
}

// ---------------------------------------------------------------------------- nw (Needleman-Wunsch)
// The score matrix is filled by anti-diagonals of 16 x 16 blocks: launch i of needle_cuda_shared_1 runs
// the i blocks of the i-th block diagonal of the upper-left triangle, needle_cuda_shared_2 those of the
// lower-right one; inside a block the 16 threads sweep the block's own anti-diagonals in shared memory.
#define NW_BLOCK 16
__device__ __host__ inline int maximum(int a, int b, int c) {
  int k;
  if (a <= b) k = b;
  else k = a;
  if (k <= c) return c;
  else return k;
}
__device__ inline void nw_block(const int* referrence, int* matrix_cuda, int cols, int penalty, int b_index_x,
                                int b_index_y) {
  int tx = threadIdx.x;
  int index = cols * NW_BLOCK * b_index_y + NW_BLOCK * b_index_x + tx + (cols + 1);
  int index_n = cols * NW_BLOCK * b_index_y + NW_BLOCK * b_index_x + tx + (1);
  int index_w = cols * NW_BLOCK * b_index_y + NW_BLOCK * b_index_x + (cols);
  int index_nw = cols * NW_BLOCK * b_index_y + NW_BLOCK * b_index_x;
  __shared__ int temp[NW_BLOCK + 1][NW_BLOCK + 1];
  __shared__ int ref[NW_BLOCK][NW_BLOCK];
  if (tx == 0) temp[tx][0] = matrix_cuda[index_nw];
  for (int ty = 0; ty < NW_BLOCK; ty++) ref[ty][tx] = referrence[index + cols * ty];
  __syncthreads();
  temp[tx + 1][0] = matrix_cuda[index_w + cols * tx];
  __syncthreads();
  temp[0][tx + 1] = matrix_cuda[index_n];
  __syncthreads();
  for (int m = 0; m < NW_BLOCK; m++) {
    if (tx <= m) {
      int t_index_x = tx + 1, t_index_y = m - tx + 1;
      temp[t_index_y][t_index_x] = maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                                           temp[t_index_y][t_index_x - 1] - penalty,
                                           temp[t_index_y - 1][t_index_x] - penalty);
    }
    __syncthreads();
  }
  for (int m = NW_BLOCK - 2; m >= 0; m--) {
    if (tx <= m) {
      int t_index_x = tx + NW_BLOCK - m, t_index_y = NW_BLOCK - tx;
      temp[t_index_y][t_index_x] = maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                                           temp[t_index_y][t_index_x - 1] - penalty,
                                           temp[t_index_y - 1][t_index_x] - penalty);
    }
    __syncthreads();
  }
  for (int ty = 0; ty < NW_BLOCK; ty++) matrix_cuda[index + ty * cols] = temp[ty + 1][tx + 1];
}
extern "C" __global__ void needle_cuda_shared_1(const int* referrence, int* matrix_cuda, int cols, int penalty, int i,
                                                int block_width) {
  nw_block(referrence, matrix_cuda, cols, penalty, blockIdx.x, i - 1 - blockIdx.x);
}
extern "C" __global__ void needle_cuda_shared_2(const int* referrence, int* matrix_cuda, int cols, int penalty, int i,
                                                int block_width) {
  nw_block(referrence, matrix_cuda, cols, penalty, blockIdx.x + block_width - i, block_width - blockIdx.x - 1);
}

// ---------------------------------------------------------------------------- pathfinder
// Dynamic programming over rows of a wall grid, `iteration` rows per launch (a pyramid): each block of
// 256 columns loads its row with a halo of `iteration` columns either side, and shrinks its valid range
// by one column per row in shared memory.
#define PF_BLOCK 256
#define PF_HALO 1
extern "C" __global__ void dynproc_kernel(int iteration, const int* gpuWall, const int* gpuSrc, int* gpuResults,
                                          int cols, int rows, int startStep, int border) {
  __shared__ int prev[PF_BLOCK];
  __shared__ int result[PF_BLOCK];
  int bx = blockIdx.x, tx = threadIdx.x;
  int small_block_cols = PF_BLOCK - iteration * PF_HALO * 2;
  int blkX = small_block_cols * bx - border;
  int blkXmax = blkX + PF_BLOCK - 1;
  int xidx = blkX + tx;
  int validXmin = (blkX < 0) ? -blkX : 0;
  int validXmax = (blkXmax > cols - 1) ? PF_BLOCK - 1 - (blkXmax - cols + 1) : PF_BLOCK - 1;
  int W = tx - 1, E = tx + 1;
  W = (W < validXmin) ? validXmin : W;
  E = (E > validXmax) ? validXmax : E;
  bool isValid = IN_RANGE(tx, validXmin, validXmax);
  if (IN_RANGE(xidx, 0, cols - 1)) prev[tx] = gpuSrc[xidx];
  __syncthreads();
  bool computed;
  for (int i = 0; i < iteration; i++) {
    computed = false;
    if (IN_RANGE(tx, i + 1, PF_BLOCK - i - 2) && isValid) {
      computed = true;
      int left = prev[W], up = prev[tx], right = prev[E];
      int shortest = MIN(left, up);
      shortest = MIN(shortest, right);
      int index = cols * (startStep + i) + xidx;
      result[tx] = shortest + gpuWall[index];
    }
    __syncthreads();
    if (i == iteration - 1) break;
    if (computed) prev[tx] = result[tx];
    __syncthreads();
  }
  if (computed) gpuResults[xidx] = result[tx];
}

// ---------------------------------------------------------------------------- hotspot
// Transient heat on a chip grid, `iteration` time steps per launch in 16 x 16 blocks that overlap by a
// border of `iteration` cells (the pyramid); the update mixes float data with double constants (2.0), so
// part of it runs in double, as in Rodinia.
#define HS_BLOCK 16
extern "C" __global__ void calculate_temp(int iteration, const float* power, const float* temp_src, float* temp_dst,
                                          int grid_cols, int grid_rows, int border_cols, int border_rows, float Cap,
                                          float Rx, float Ry, float Rz, float step, float time_elapsed) {
  __shared__ float temp_on_cuda[HS_BLOCK][HS_BLOCK];
  __shared__ float power_on_cuda[HS_BLOCK][HS_BLOCK];
  __shared__ float temp_t[HS_BLOCK][HS_BLOCK];
  float amb_temp = 80.0;
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  float step_div_Cap = step / Cap;
  float Rx_1 = 1 / Rx, Ry_1 = 1 / Ry, Rz_1 = 1 / Rz;
  int small_block_rows = HS_BLOCK - iteration * 2, small_block_cols = HS_BLOCK - iteration * 2;
  int blkY = small_block_rows * by - border_rows, blkX = small_block_cols * bx - border_cols;
  int blkYmax = blkY + HS_BLOCK - 1, blkXmax = blkX + HS_BLOCK - 1;
  int yidx = blkY + ty, xidx = blkX + tx;
  int index = grid_cols * yidx + xidx;
  if (IN_RANGE(yidx, 0, grid_rows - 1) && IN_RANGE(xidx, 0, grid_cols - 1)) {
    temp_on_cuda[ty][tx] = temp_src[index];
    power_on_cuda[ty][tx] = power[index];
  }
  __syncthreads();
  int validYmin = (blkY < 0) ? -blkY : 0;
  int validYmax = (blkYmax > grid_rows - 1) ? HS_BLOCK - 1 - (blkYmax - grid_rows + 1) : HS_BLOCK - 1;
  int validXmin = (blkX < 0) ? -blkX : 0;
  int validXmax = (blkXmax > grid_cols - 1) ? HS_BLOCK - 1 - (blkXmax - grid_cols + 1) : HS_BLOCK - 1;
  int N = ty - 1, S = ty + 1, W = tx - 1, E = tx + 1;
  N = (N < validYmin) ? validYmin : N;
  S = (S > validYmax) ? validYmax : S;
  W = (W < validXmin) ? validXmin : W;
  E = (E > validXmax) ? validXmax : E;
  bool computed;
  for (int i = 0; i < iteration; i++) {
    computed = false;
    if (IN_RANGE(tx, i + 1, HS_BLOCK - i - 2) && IN_RANGE(ty, i + 1, HS_BLOCK - i - 2) &&
        IN_RANGE(tx, validXmin, validXmax) && IN_RANGE(ty, validYmin, validYmax)) {
      computed = true;
      temp_t[ty][tx] = temp_on_cuda[ty][tx] +
                       step_div_Cap * (power_on_cuda[ty][tx] +
                                       (temp_on_cuda[S][tx] + temp_on_cuda[N][tx] - 2.0 * temp_on_cuda[ty][tx]) * Ry_1 +
                                       (temp_on_cuda[ty][E] + temp_on_cuda[ty][W] - 2.0 * temp_on_cuda[ty][tx]) * Rx_1 +
                                       (amb_temp - temp_on_cuda[ty][tx]) * Rz_1);
    }
    __syncthreads();
    if (i == iteration - 1) break;
    if (computed) temp_on_cuda[ty][tx] = temp_t[ty][tx];
    __syncthreads();
  }
  if (computed) temp_dst[index] = temp_t[ty][tx];
}

// ---------------------------------------------------------------------------- hotspot3D
// The 3D variant (hotspotOpt1): each thread walks its (i, j) column through the z planes keeping the
// planes below, at and above in registers.
extern "C" __global__ void hotspotOpt1(const float* p, const float* tIn, float* tOut, float sdc, int nx, int ny, int nz,
                                       float ce, float cw, float cn, float cs, float ct, float cb, float cc) {
  float amb_temp = 80.0;
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  int j = blockDim.y * blockIdx.y + threadIdx.y;
  int c = i + j * nx, xy = nx * ny;
  int W = (i == 0) ? c : c - 1;
  int E = (i == nx - 1) ? c : c + 1;
  int N = (j == 0) ? c : c - nx;
  int S = (j == ny - 1) ? c : c + nx;
  float temp1, temp2, temp3;
  temp1 = temp2 = tIn[c];
  temp3 = tIn[c + xy];
  tOut[c] = cc * temp2 + cw * tIn[W] + ce * tIn[E] + cs * tIn[S] + cn * tIn[N] + cb * temp1 + ct * temp3 + sdc * p[c] +
            ct * amb_temp;
  c += xy; W += xy; E += xy; N += xy; S += xy;
  for (int k = 1; k < nz - 1; ++k) {
    temp1 = temp2;
    temp2 = temp3;
    temp3 = tIn[c + xy];
    tOut[c] = cc * temp2 + cw * tIn[W] + ce * tIn[E] + cs * tIn[S] + cn * tIn[N] + cb * temp1 + ct * temp3 +
              sdc * p[c] + ct * amb_temp;
    c += xy; W += xy; E += xy; N += xy; S += xy;
  }
  temp1 = temp2;
  temp2 = temp3;
  tOut[c] = cc * temp2 + cw * tIn[W] + ce * tIn[E] + cs * tIn[S] + cn * tIn[N] + cb * temp1 + ct * temp3 + sdc * p[c] +
            ct * amb_temp;
}

// ---------------------------------------------------------------------------- srad_v2
// Speckle-reducing anisotropic diffusion on 16 x 16 blocks: srad_cuda_1 computes the four directional
// derivatives and the diffusion coefficient (clamped to [0, 1]) with the neighbours' rows and columns
// staged in shared memory, srad_cuda_2 applies the divergence update; the host computes q0sqr from a
// region of interest between iterations. The arithmetic mixes float data with double constants.
#define SR_BLOCK 16
__device__ inline void srad_coefficient(float* E_C, float* W_C, float* N_C, float* S_C, const float (*temp)[SR_BLOCK],
                                        const float (*north)[SR_BLOCK], const float (*south)[SR_BLOCK],
                                        const float (*east)[SR_BLOCK], const float (*west)[SR_BLOCK],
                                        float (*temp_result)[SR_BLOCK], float* C_cuda, int index, float q0sqr) {
  int tx = threadIdx.x, ty = threadIdx.y;
  float n, w, e, s, jc, g2, l, num, den, qsqr, c;
  jc = temp[ty][tx];
  if (ty == 0 && tx == 0) {
    n = north[ty][tx] - jc; s = temp[ty + 1][tx] - jc; w = west[ty][tx] - jc; e = temp[ty][tx + 1] - jc;
  } else if (ty == 0 && tx == SR_BLOCK - 1) {
    n = north[ty][tx] - jc; s = temp[ty + 1][tx] - jc; w = temp[ty][tx - 1] - jc; e = east[ty][tx] - jc;
  } else if (ty == SR_BLOCK - 1 && tx == SR_BLOCK - 1) {
    n = temp[ty - 1][tx] - jc; s = south[ty][tx] - jc; w = temp[ty][tx - 1] - jc; e = east[ty][tx] - jc;
  } else if (ty == SR_BLOCK - 1 && tx == 0) {
    n = temp[ty - 1][tx] - jc; s = south[ty][tx] - jc; w = west[ty][tx] - jc; e = temp[ty][tx + 1] - jc;
  } else if (ty == 0) {
    n = north[ty][tx] - jc; s = temp[ty + 1][tx] - jc; w = temp[ty][tx - 1] - jc; e = temp[ty][tx + 1] - jc;
  } else if (tx == SR_BLOCK - 1) {
    n = temp[ty - 1][tx] - jc; s = temp[ty + 1][tx] - jc; w = temp[ty][tx - 1] - jc; e = east[ty][tx] - jc;
  } else if (ty == SR_BLOCK - 1) {
    n = temp[ty - 1][tx] - jc; s = south[ty][tx] - jc; w = temp[ty][tx - 1] - jc; e = temp[ty][tx + 1] - jc;
  } else if (tx == 0) {
    n = temp[ty - 1][tx] - jc; s = temp[ty + 1][tx] - jc; w = west[ty][tx] - jc; e = temp[ty][tx + 1] - jc;
  } else {
    n = temp[ty - 1][tx] - jc; s = temp[ty + 1][tx] - jc; w = temp[ty][tx - 1] - jc; e = temp[ty][tx + 1] - jc;
  }
  g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
  l = (n + s + w + e) / jc;
  num = (0.5 * g2) - ((1.0 / 16.0) * (l * l));
  den = 1 + (.25 * l);
  qsqr = num / (den * den);
  den = (qsqr - q0sqr) / (q0sqr * (1 + q0sqr));
  c = 1.0 / (1.0 + den);
  if (c < 0) temp_result[ty][tx] = 0;
  else if (c > 1) temp_result[ty][tx] = 1;
  else temp_result[ty][tx] = c;
  __syncthreads();
  C_cuda[index] = temp_result[ty][tx];
  E_C[index] = e;
  W_C[index] = w;
  S_C[index] = s;
  N_C[index] = n;
}
extern "C" __global__ void srad_cuda_1(float* E_C, float* W_C, float* N_C, float* S_C, const float* J_cuda,
                                       float* C_cuda, int cols, int rows, float q0sqr) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int index = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + tx;
  int index_n = cols * SR_BLOCK * by + SR_BLOCK * bx + tx - cols;
  int index_s = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * SR_BLOCK + tx;
  int index_w = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty - 1;
  int index_e = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + SR_BLOCK;
  __shared__ float temp[SR_BLOCK][SR_BLOCK], temp_result[SR_BLOCK][SR_BLOCK];
  __shared__ float north[SR_BLOCK][SR_BLOCK], south[SR_BLOCK][SR_BLOCK];
  __shared__ float east[SR_BLOCK][SR_BLOCK], west[SR_BLOCK][SR_BLOCK];
  // Rodinia loads index_n / index_s first and replaces them at the image's edges: here the edge value is
  // the one loaded (no read outside J).
  if (by == 0) north[ty][tx] = J_cuda[SR_BLOCK * bx + tx];
  else north[ty][tx] = J_cuda[index_n];
  if (by == gridDim.y - 1)
    south[ty][tx] = J_cuda[cols * SR_BLOCK * (gridDim.y - 1) + SR_BLOCK * bx + cols * (SR_BLOCK - 1) + tx];
  else south[ty][tx] = J_cuda[index_s];
  __syncthreads();
  if (bx == 0) west[ty][tx] = J_cuda[cols * SR_BLOCK * by + cols * ty];
  else west[ty][tx] = J_cuda[index_w];
  if (bx == gridDim.x - 1)
    east[ty][tx] = J_cuda[cols * SR_BLOCK * by + SR_BLOCK * (gridDim.x - 1) + cols * ty + SR_BLOCK - 1];
  else east[ty][tx] = J_cuda[index_e];
  __syncthreads();
  temp[ty][tx] = J_cuda[index];
  __syncthreads();
  srad_coefficient(E_C, W_C, N_C, S_C, temp, north, south, east, west, temp_result, C_cuda, index, q0sqr);
}
// Rodinia's loads as written: the top blocks read the row above J (index_n < 0) before replacing it.
extern "C" __global__ void srad_cuda_1_rodinia(float* E_C, float* W_C, float* N_C, float* S_C, const float* J_cuda,
                                               float* C_cuda, int cols, int rows, float q0sqr) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int index = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + tx;
  int index_n = cols * SR_BLOCK * by + SR_BLOCK * bx + tx - cols;
  int index_s = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * SR_BLOCK + tx;
  int index_w = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty - 1;
  int index_e = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + SR_BLOCK;
  __shared__ float temp[SR_BLOCK][SR_BLOCK], temp_result[SR_BLOCK][SR_BLOCK];
  __shared__ float north[SR_BLOCK][SR_BLOCK], south[SR_BLOCK][SR_BLOCK];
  __shared__ float east[SR_BLOCK][SR_BLOCK], west[SR_BLOCK][SR_BLOCK];
  north[ty][tx] = J_cuda[index_n];
  south[ty][tx] = J_cuda[index_s];
  if (by == 0) north[ty][tx] = J_cuda[SR_BLOCK * bx + tx];
  else if (by == gridDim.y - 1)
    south[ty][tx] = J_cuda[cols * SR_BLOCK * (gridDim.y - 1) + SR_BLOCK * bx + cols * (SR_BLOCK - 1) + tx];
  __syncthreads();
  west[ty][tx] = J_cuda[index_w];
  east[ty][tx] = J_cuda[index_e];
  if (bx == 0) west[ty][tx] = J_cuda[cols * SR_BLOCK * by + cols * ty];
  else if (bx == gridDim.x - 1)
    east[ty][tx] = J_cuda[cols * SR_BLOCK * by + SR_BLOCK * (gridDim.x - 1) + cols * ty + SR_BLOCK - 1];
  __syncthreads();
  temp[ty][tx] = J_cuda[index];
  __syncthreads();
  srad_coefficient(E_C, W_C, N_C, S_C, temp, north, south, east, west, temp_result, C_cuda, index, q0sqr);
}
extern "C" __global__ void srad_cuda_2(const float* E_C, const float* W_C, const float* N_C, const float* S_C,
                                       float* J_cuda, const float* C_cuda, int cols, int rows, float lambda, float q0sqr) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int index = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + tx;
  int index_s = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * SR_BLOCK + tx;
  int index_e = cols * SR_BLOCK * by + SR_BLOCK * bx + cols * ty + SR_BLOCK;
  float cc, cn, cs, ce, cw, d_sum;
  __shared__ float south_c[SR_BLOCK][SR_BLOCK], east_c[SR_BLOCK][SR_BLOCK];
  __shared__ float c_cuda_temp[SR_BLOCK][SR_BLOCK], c_cuda_result[SR_BLOCK][SR_BLOCK], temp[SR_BLOCK][SR_BLOCK];
  temp[ty][tx] = J_cuda[index];
  __syncthreads();
  if (by == gridDim.y - 1)
    south_c[ty][tx] = C_cuda[cols * SR_BLOCK * (gridDim.y - 1) + SR_BLOCK * bx + cols * (SR_BLOCK - 1) + tx];
  else south_c[ty][tx] = C_cuda[index_s];
  __syncthreads();
  if (bx == gridDim.x - 1)
    east_c[ty][tx] = C_cuda[cols * SR_BLOCK * by + SR_BLOCK * (gridDim.x - 1) + cols * ty + SR_BLOCK - 1];
  else east_c[ty][tx] = C_cuda[index_e];
  __syncthreads();
  c_cuda_temp[ty][tx] = C_cuda[index];
  __syncthreads();
  cc = c_cuda_temp[ty][tx];
  if (ty == SR_BLOCK - 1 && tx == SR_BLOCK - 1) {
    cn = cc; cs = south_c[ty][tx]; cw = cc; ce = east_c[ty][tx];
  } else if (tx == SR_BLOCK - 1) {
    cn = cc; cs = c_cuda_temp[ty + 1][tx]; cw = cc; ce = east_c[ty][tx];
  } else if (ty == SR_BLOCK - 1) {
    cn = cc; cs = south_c[ty][tx]; cw = cc; ce = c_cuda_temp[ty][tx + 1];
  } else {
    cn = cc; cs = c_cuda_temp[ty + 1][tx]; cw = cc; ce = c_cuda_temp[ty][tx + 1];
  }
  d_sum = cn * N_C[index] + cs * S_C[index] + cw * W_C[index] + ce * E_C[index];
  c_cuda_result[ty][tx] = temp[ty][tx] + 0.25 * lambda * d_sum;
  __syncthreads();
  J_cuda[index] = c_cuda_result[ty][tx];
}

// ---------------------------------------------------------------------------- lud
// Blocked LU decomposition without pivoting, 16 x 16 blocks: per step the diagonal block is factored by
// one block of 16 threads, the perimeter row and column blocks by blocks of 32 threads (half row, half
// column), and the trailing blocks updated by 16 x 16 blocks over a shrinking grid.
#define LUD_BLOCK 16
extern "C" __global__ void lud_diagonal(float* m, int matrix_dim, int offset) {
  int i, j;
  __shared__ float shadow[LUD_BLOCK][LUD_BLOCK];
  int array_offset = offset * matrix_dim + offset;
  for (i = 0; i < LUD_BLOCK; i++) {
    shadow[i][threadIdx.x] = m[array_offset + threadIdx.x];
    array_offset += matrix_dim;
  }
  __syncthreads();
  for (i = 0; i < LUD_BLOCK - 1; i++) {
    if (threadIdx.x > i) {
      for (j = 0; j < i; j++) shadow[threadIdx.x][i] -= shadow[threadIdx.x][j] * shadow[j][i];
      shadow[threadIdx.x][i] /= shadow[i][i];
    }
    __syncthreads();
    if (threadIdx.x > i) {
      for (j = 0; j < i + 1; j++) shadow[i + 1][threadIdx.x] -= shadow[i + 1][j] * shadow[j][threadIdx.x];
    }
    __syncthreads();
  }
  array_offset = (offset + 1) * matrix_dim + offset;
  for (i = 1; i < LUD_BLOCK; i++) {
    m[array_offset + threadIdx.x] = shadow[i][threadIdx.x];
    array_offset += matrix_dim;
  }
}
extern "C" __global__ void lud_perimeter(float* m, int matrix_dim, int offset) {
  __shared__ float dia[LUD_BLOCK][LUD_BLOCK], peri_row[LUD_BLOCK][LUD_BLOCK], peri_col[LUD_BLOCK][LUD_BLOCK];
  int i, j, array_offset, idx;
  if (threadIdx.x < LUD_BLOCK) {
    idx = threadIdx.x;
    array_offset = offset * matrix_dim + offset;
    for (i = 0; i < LUD_BLOCK / 2; i++) {
      dia[i][idx] = m[array_offset + idx];
      array_offset += matrix_dim;
    }
    array_offset = offset * matrix_dim + offset;
    for (i = 0; i < LUD_BLOCK; i++) {
      peri_row[i][idx] = m[array_offset + (blockIdx.x + 1) * LUD_BLOCK + idx];
      array_offset += matrix_dim;
    }
  } else {
    idx = threadIdx.x - LUD_BLOCK;
    array_offset = (offset + LUD_BLOCK / 2) * matrix_dim + offset;
    for (i = LUD_BLOCK / 2; i < LUD_BLOCK; i++) {
      dia[i][idx] = m[array_offset + idx];
      array_offset += matrix_dim;
    }
    array_offset = (offset + (blockIdx.x + 1) * LUD_BLOCK) * matrix_dim + offset;
    for (i = 0; i < LUD_BLOCK; i++) {
      peri_col[i][idx] = m[array_offset + idx];
      array_offset += matrix_dim;
    }
  }
  __syncthreads();
  if (threadIdx.x < LUD_BLOCK) {
    idx = threadIdx.x;
    for (i = 1; i < LUD_BLOCK; i++)
      for (j = 0; j < i; j++) peri_row[i][idx] -= dia[i][j] * peri_row[j][idx];
  } else {
    idx = threadIdx.x - LUD_BLOCK;
    for (i = 0; i < LUD_BLOCK; i++) {
      for (j = 0; j < i; j++) peri_col[idx][i] -= peri_col[idx][j] * dia[j][i];
      peri_col[idx][i] /= dia[i][i];
    }
  }
  __syncthreads();
  if (threadIdx.x < LUD_BLOCK) {
    idx = threadIdx.x;
    array_offset = (offset + 1) * matrix_dim + offset;
    for (i = 1; i < LUD_BLOCK; i++) {
      m[array_offset + (blockIdx.x + 1) * LUD_BLOCK + idx] = peri_row[i][idx];
      array_offset += matrix_dim;
    }
  } else {
    idx = threadIdx.x - LUD_BLOCK;
    array_offset = (offset + (blockIdx.x + 1) * LUD_BLOCK) * matrix_dim + offset;
    for (i = 0; i < LUD_BLOCK; i++) {
      m[array_offset + idx] = peri_col[i][idx];
      array_offset += matrix_dim;
    }
  }
}
extern "C" __global__ void lud_internal(float* m, int matrix_dim, int offset) {
  __shared__ float peri_row[LUD_BLOCK][LUD_BLOCK], peri_col[LUD_BLOCK][LUD_BLOCK];
  int global_row_id = offset + (blockIdx.y + 1) * LUD_BLOCK;
  int global_col_id = offset + (blockIdx.x + 1) * LUD_BLOCK;
  peri_row[threadIdx.y][threadIdx.x] = m[(offset + threadIdx.y) * matrix_dim + global_col_id + threadIdx.x];
  peri_col[threadIdx.y][threadIdx.x] = m[(global_row_id + threadIdx.y) * matrix_dim + offset + threadIdx.x];
  __syncthreads();
  float sum = 0;
  for (int i = 0; i < LUD_BLOCK; i++) sum += peri_col[threadIdx.y][i] * peri_row[i][threadIdx.x];
  m[(global_row_id + threadIdx.y) * matrix_dim + global_col_id + threadIdx.x] -= sum;
}

// ---------------------------------------------------------------------------- gaussian
// Gaussian elimination, two launches per column t: Fan1 computes the multipliers of column t (one thread
// per row below t), Fan2 updates the trailing matrix and the right-hand side (4 x 4 thread blocks).
extern "C" __global__ void Fan1(float* m_cuda, const float* a_cuda, int Size, int t) {
  if (threadIdx.x + blockIdx.x * blockDim.x >= Size - 1 - t) return;
  *(m_cuda + Size * (blockDim.x * blockIdx.x + threadIdx.x + t + 1) + t) =
      *(a_cuda + Size * (blockDim.x * blockIdx.x + threadIdx.x + t + 1) + t) / *(a_cuda + Size * t + t);
}
extern "C" __global__ void Fan2(const float* m_cuda, float* a_cuda, float* b_cuda, int Size, int j1, int t) {
  if (threadIdx.x + blockIdx.x * blockDim.x >= Size - 1 - t) return;
  if (threadIdx.y + blockIdx.y * blockDim.y >= Size - t) return;
  int xidx = blockIdx.x * blockDim.x + threadIdx.x;
  int yidx = blockIdx.y * blockDim.y + threadIdx.y;
  a_cuda[Size * (xidx + 1 + t) + (yidx + t)] -= m_cuda[Size * (xidx + 1 + t) + t] * a_cuda[Size * t + (yidx + t)];
  if (yidx == 0) b_cuda[xidx + 1 + t] -= m_cuda[Size * (xidx + 1 + t) + (yidx + t)] * b_cuda[t];
}

// ---------------------------------------------------------------------------- backprop
// One 16 x 16 block per 16 input units: layerforward multiplies the weights by the inputs and sums each
// column by a shared tree (ty % 2^i, with 2^i from __powf), adjust_weights applies the momentum update.
#define BP_HEIGHT 16
#define BP_WIDTH 16
#define ETA 0.3
#define MOMENTUM 0.3
extern "C" __global__ void bpnn_layerforward_CUDA(const float* input_cuda, float* output_hidden_cuda,
                                                  float* input_hidden_cuda, float* hidden_partial_sum, int in, int hid) {
  int by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int index = (hid + 1) * BP_HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
  int index_in = BP_HEIGHT * by + ty + 1;
  __shared__ float input_node[BP_HEIGHT];
  __shared__ float weight_matrix[BP_HEIGHT][BP_WIDTH];
  if (tx == 0) input_node[ty] = input_cuda[index_in];
  __syncthreads();
  weight_matrix[ty][tx] = input_hidden_cuda[index];
  __syncthreads();
  weight_matrix[ty][tx] = weight_matrix[ty][tx] * input_node[ty];
  __syncthreads();
  for (int i = 1; i <= __log2f(BP_HEIGHT); i++) {
    int power_two = __powf(2, i);
    if (ty % power_two == 0) weight_matrix[ty][tx] = weight_matrix[ty][tx] + weight_matrix[ty + power_two / 2][tx];
    __syncthreads();
  }
  input_hidden_cuda[index] = weight_matrix[ty][tx];
  __syncthreads();
  if (tx == 0) hidden_partial_sum[by * hid + ty] = weight_matrix[tx][ty];
}
extern "C" __global__ void bpnn_adjust_weights_cuda(const float* delta, int hid, const float* ly, int in, float* w,
                                                    float* oldw) {
  int by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int index = (hid + 1) * BP_HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
  int index_y = BP_HEIGHT * by + ty + 1;
  int index_x = tx + 1;
  w[index] += ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));
  oldw[index] = ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));
  __syncthreads();
  if (ty == 0 && by == 0) {
    w[index_x] += ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
    oldw[index_x] = ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
  }
}

// ---------------------------------------------------------------------------- kmeans
// invert_mapping transposes the point-major features to feature-major; kmeansPoint assigns each point to
// its nearest cluster, the cluster centres in __constant__ memory. Rodinia reads the features through a
// 1D texture (tex1Dfetch); here through the read-only path (__ldg), the same addresses.
#define KM_MAX_CLUSTERS 16
#define KM_MAX_FEATURES 16
__constant__ float c_clusters[KM_MAX_CLUSTERS * KM_MAX_FEATURES];
extern "C" __global__ void invert_mapping(const float* input, float* output, int npoints, int nfeatures) {
  int point_id = threadIdx.x + blockDim.x * blockIdx.x;
  if (point_id < npoints)
    for (int i = 0; i < nfeatures; i++) output[point_id + npoints * i] = input[point_id * nfeatures + i];
}
extern "C" __global__ void kmeansPoint(const float* __restrict__ features, int nfeatures, int npoints, int nclusters,
                                       int* membership) {
  const unsigned int block_id = gridDim.x * blockIdx.y + blockIdx.x;
  const unsigned int point_id = block_id * blockDim.x * blockDim.y + threadIdx.x;
  int index = -1;
  if (point_id < npoints) {
    float min_dist = FLT_MAX;
    for (int i = 0; i < nclusters; i++) {
      int cluster_base_index = i * nfeatures;
      float ans = 0.0;
      for (int j = 0; j < nfeatures; j++) {
        int addr = point_id + j * npoints;
        float diff = (__ldg(&features[addr]) - c_clusters[cluster_base_index + j]);
        ans += diff * diff;
      }
      if (ans < min_dist) {
        min_dist = ans;
        index = i;
      }
    }
  }
  if (point_id < npoints) membership[point_id] = index;
}

// ---------------------------------------------------------------------------- nn (nearest neighbour)
// Distance of every record (lat, lng) to the query point, one thread each.
struct LatLong {
  float lat;
  float lng;
};
extern "C" __global__ void euclid(const LatLong* d_locations, float* d_distances, int numRecords, float lat, float lng) {
  int globalId = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x;
  const LatLong* latLong = d_locations + globalId;
  if (globalId < numRecords) {
    float* dist = d_distances + globalId;
    *dist = (float)sqrt((lat - latLong->lat) * (lat - latLong->lat) + (lng - latLong->lng) * (lng - latLong->lng));
  }
}
