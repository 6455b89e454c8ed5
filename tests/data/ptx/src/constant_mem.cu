// A __constant__ filter and a __device__ global with an initializer.
__constant__ float coeffs[9] = {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f};
__device__ int call_count = 0;
__device__ double scale[2] = {0.5, 2.0};
extern "C" __global__ void constant_mem(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&call_count, 1);
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 9; ++k) {
        int j = min(max(i + k - 4, 0), n - 1);
        acc += coeffs[k] * x[j];
    }
    y[i] = acc * (float)scale[i & 1];
}
