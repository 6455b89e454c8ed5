// Dynamic extern shared memory: reverse a block's slice.
extern "C" __global__ void dynamic_shared(const int* in, int* out, int n) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) s[t] = in[i];
    __syncthreads();
    int r = blockDim.x - 1 - t;
    int j = blockIdx.x * blockDim.x + r;
    if (j < n) out[i] = s[r];
}
