// cp.async copies, warp-level intrinsics and bit tricks (sm_80+).
#include <cuda_pipeline.h>
extern "C" __global__ void async_misc(const int* in, int* out, unsigned long long* t, int n) {
    __shared__ __align__(16) int s[256];
    int tid = threadIdx.x;
    __pipeline_memcpy_async(&s[tid * 4], &in[blockIdx.x * 1024 + tid * 4], 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    int v = s[tid];
    unsigned m = __activemask();
    v = __brev(v) ^ __clz(v) ^ __popc(v) ^ __ffs(v) ^ __byte_perm(v, m, 0x3210);
    v += __dp4a(v, 0x01020304, 7) + __sad(v, tid, 3) + __mul24(v, tid) + __umulhi(v, tid);
    v += (int)__funnelshift_l(v, tid, 5);
    __threadfence();
    __nanosleep(100);
    if (tid < n) out[blockIdx.x * blockDim.x + tid] = v;
    if (tid == 0) t[blockIdx.x] = clock64();
    atomicCAS(&out[0], 0, v);
    atomicMax(&out[1], v);
    atomicExch(&out[2], v);
}
