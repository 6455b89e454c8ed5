// A per-thread array indexed with run-time values: lives in local memory.
extern "C" __global__ void local_array(const int* idx, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float tmp[32];
    for (int k = 0; k < 32; ++k) tmp[k] = x[(i + k) % n] * k;
    float acc = 0.0f;
    for (int k = 0; k < 8; ++k) acc += tmp[idx[(i * 8 + k) % n] & 31];
    y[i] = acc;
}
