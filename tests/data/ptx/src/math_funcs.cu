// Single-precision math library calls and intrinsics.
extern "C" __global__ void math_funcs(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    y[i] = sqrtf(fabsf(v)) + __expf(v) + sinf(v) + rsqrtf(v * v + 1.0f) + __fdividef(v, 3.0f)
         + __logf(fabsf(v) + 1.0f) + cosf(v) + expf(v) + copysignf(1.0f, v) + floorf(v);
}
