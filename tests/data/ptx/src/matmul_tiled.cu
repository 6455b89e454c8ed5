// Tiled GEMM from seed 002, fixed minimally: B_shared[ty][tx] = B[(t+ty)*N+col],
// read B_shared[k][tx]; one tile size T used everywhere (T == TILE).
#define T 16
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int N, int M) {
    __shared__ float A_shared[T][T];
    __shared__ float B_shared[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty;
    int col = blockIdx.x * T + tx;
    float accumulator = 0.0f;
    for (int t = 0; t < M; t += T) {
        A_shared[ty][tx] = A[row * M + t + tx];
        B_shared[ty][tx] = B[(t + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < T; ++k)
            accumulator += A_shared[ty][k] * B_shared[k][tx];
        __syncthreads();
    }
    C[row * N + col] = accumulator;
}
