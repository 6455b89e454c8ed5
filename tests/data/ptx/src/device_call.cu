// A kernel calling non-inlined device functions (.func + call).
__device__ __noinline__ float poly(float x, float a, float b) { return a * x * x + b * x + 1.0f; }
__device__ __noinline__ void store_pair(float* p, int i, float v) { p[2 * i] = v; p[2 * i + 1] = -v; }
extern "C" __global__ void device_call(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store_pair(y, i, poly(x[i], 2.0f, 3.0f));
}
