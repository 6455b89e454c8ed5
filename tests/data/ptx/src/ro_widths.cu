// Read-only loads of three widths from one array in one basic block: which of them misses a line depends on
// the order of their lookups in the read-only cache, which must be program order whatever their widths.
extern "C" __global__ void ro_widths(const float* __restrict__ a, float* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    float x = __ldg(a + (t * 7) % 256);
    float4 y = __ldg(reinterpret_cast<const float4*>(a) + (t % 16));
    unsigned char z = __ldg(reinterpret_cast<const unsigned char*>(a) + (t * 3) % 1024);
    float w = __ldg(a + (t + 128) % 256);
    out[t] = x + y.x + y.y + y.z + y.w + z + w;
}
