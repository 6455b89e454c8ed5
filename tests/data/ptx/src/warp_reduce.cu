// Warp-shuffle reduction with a ballot of positive inputs.
extern "C" __global__ void warp_reduce(const float* in, float* out, unsigned int* counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    unsigned int positive = __ballot_sync(0xffffffffu, v > 0.0f);
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    float lane0 = __shfl_sync(0xffffffffu, v, 0);
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, lane0);
        atomicAdd(counts, __popc(positive));
    }
    if (__any_sync(0xffffffffu, v < 0.0f) && __all_sync(0xffffffffu, i < n))
        v = __shfl_xor_sync(0xffffffffu, v, 1) + __shfl_up_sync(0xffffffffu, v, 1);
    if (i < n) out[1 + i] = v;
}
