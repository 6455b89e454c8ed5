// Naive GEMM, C[N x N] = A[N x M] * B[M x N]; A indexed with its own row length M.
extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int N, int M) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < M; k++) sum += A[row * M + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
