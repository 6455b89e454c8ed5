// float <-> half / bfloat16 conversions, half2 arithmetic.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_bf16(const float* x, half* h, __nv_bfloat16* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    half hv = __float2half_rn(x[i]);
    __nv_bfloat16 bv = __float2bfloat16_rn(x[i]);
    half2 h2 = __halves2half2(hv, __float2half_rz(x[i] * 2.0f));
    h2 = __hmul2(h2, h2);
    h[i] = __hadd(__low2half(h2), __high2half(h2));
    b[i] = __hmul(bv, __float2bfloat16(1.5f));
    y[i] = __half2float(hv) + __bfloat162float(bv) + (float)__half2int_rz(hv) + __int2float_rd(i);
}
