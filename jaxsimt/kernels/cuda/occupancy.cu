// occupancy.cu - device properties and cudaOccupancyMaxActiveBlocksPerMultiprocessor answers.
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo occupancy.cu -o occupancy
// Run:    ./occupancy --props     one JSON object with the cudaDeviceProp fields the models use
//         ./occupancy --sweep     CSV on stdout: every (kernel, threads per block, dynamic shared memory)
//                                 of the sweep below and the runtime's answer
//
// Register counts: `pressure<N>` keeps N floats live (N loads, then a product sum over all of them);
// `__maxnreg__(R)` caps it at R. The count the sweep records is the ACTUAL one, read back with
// cudaFuncGetAttributes (numRegs), never the target. As built by nvcc 13.0 for sm_90 the targets
// 16, 32, 40, 64, 72, 128, 168, 255 come out exactly (16 from the uncapped pressure<5>; the capped
// kernels spill to local memory, which does not matter here: they are never launched).
// Threads per block: 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024.
// Dynamic shared memory per block: 0, 1024, 4000, 16384, 32768, 49152, 100000, 232448 (227 KB);
// every kernel gets cudaFuncAttributeMaxDynamicSharedMemorySize = sharedMemPerBlockOptin first (the
// opt-in above 48 KB); the carve-out preference is left at its default.
#include "common.cuh"

template <int N>
__device__ __forceinline__ void pressure_body(float* p) {
  float v[N];
#pragma unroll
  for (int i = 0; i < N; i++) v[i] = p[i * blockDim.x + threadIdx.x];
  float s = 0;
#pragma unroll
  for (int j = 1; j < 3; j++)
#pragma unroll
    for (int i = 0; i < N; i++) s += v[i] * v[(i * j + 7) % N];
  p[threadIdx.x] = s;
}
template <int N> __global__ void pressure(float* p) { pressure_body<N>(p); }
template <int N, int R> __global__ void __maxnreg__(R) pressure_capped(float* p) { pressure_body<N>(p); }

struct SweepKernel {
  int target;
  const void* fn;
  const char* name;
};

static int props() {
  int dev = 0;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  int clock_khz = 0, mem_clock_khz = 0, l2_persist = 0, smem_per_sm = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&l2_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
  cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  printf("{\n");
  printf("  \"name\": \"%s\",\n", json_escape(p.name).c_str());
  printf("  \"major\": %d, \"minor\": %d,\n", p.major, p.minor);
  printf("  \"driver_version\": %d, \"runtime_version\": %d,\n", drv, rt);
  printf("  \"multiProcessorCount\": %d,\n", p.multiProcessorCount);
  printf("  \"clockRate_khz\": %d,\n", clock_khz);
  printf("  \"memoryClockRate_khz\": %d,\n", mem_clock_khz);
  printf("  \"memoryBusWidth\": %d,\n", p.memoryBusWidth);
  printf("  \"totalGlobalMem\": %zu,\n", p.totalGlobalMem);
  printf("  \"l2CacheSize\": %d,\n", p.l2CacheSize);
  printf("  \"persistingL2CacheMaxSize\": %d,\n", l2_persist);
  printf("  \"sharedMemPerMultiprocessor\": %zu,\n", p.sharedMemPerMultiprocessor);
  printf("  \"maxSharedMemoryPerMultiprocessor_attr\": %d,\n", smem_per_sm);
  printf("  \"sharedMemPerBlock\": %zu,\n", p.sharedMemPerBlock);
  printf("  \"sharedMemPerBlockOptin\": %zu,\n", p.sharedMemPerBlockOptin);
  printf("  \"reservedSharedMemPerBlock\": %zu,\n", p.reservedSharedMemPerBlock);
  printf("  \"regsPerMultiprocessor\": %d,\n", p.regsPerMultiprocessor);
  printf("  \"regsPerBlock\": %d,\n", p.regsPerBlock);
  printf("  \"warpSize\": %d,\n", p.warpSize);
  printf("  \"maxThreadsPerMultiProcessor\": %d,\n", p.maxThreadsPerMultiProcessor);
  printf("  \"maxWarpsPerMultiProcessor\": %d,\n", p.maxThreadsPerMultiProcessor / p.warpSize);
  printf("  \"maxBlocksPerMultiProcessor\": %d,\n", p.maxBlocksPerMultiProcessor);
  printf("  \"maxThreadsPerBlock\": %d,\n", p.maxThreadsPerBlock);
  printf("  \"maxThreadsDim\": [%d, %d, %d],\n", p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]);
  printf("  \"maxGridSize\": [%d, %d, %d],\n", p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]);
  printf("  \"totalConstMem\": %zu,\n", p.totalConstMem);
  printf("  \"concurrentKernels\": %d, \"asyncEngineCount\": %d, \"eccEnabled\": %d,\n", p.concurrentKernels,
         p.asyncEngineCount, p.ECCEnabled);
  printf("  \"pciBusID\": %d, \"pciDeviceID\": %d\n", p.pciBusID, p.pciDeviceID);
  printf("}\n");
  return 0;
}

static int sweep() {
  int dev = 0;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  const SweepKernel ks[] = {
      {16, (const void*)pressure<5>, "pressure<5>"},
      {32, (const void*)pressure_capped<64, 32>, "pressure_capped<64,32>"},
      {40, (const void*)pressure_capped<64, 40>, "pressure_capped<64,40>"},
      {64, (const void*)pressure_capped<96, 64>, "pressure_capped<96,64>"},
      {72, (const void*)pressure_capped<128, 72>, "pressure_capped<128,72>"},
      {128, (const void*)pressure_capped<256, 128>, "pressure_capped<256,128>"},
      {168, (const void*)pressure_capped<256, 168>, "pressure_capped<256,168>"},
      {255, (const void*)pressure_capped<256, 255>, "pressure_capped<256,255>"},
  };
  const int threads[] = {32, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  const int smems[] = {0, 1024, 4000, 16384, 32768, 49152, 100000, 227 * 1024};
  printf("kernel,target_regs,num_regs,attr_max_threads_per_block,static_smem,local_bytes,max_dyn_smem_attr,"
         "threads_per_block,dyn_smem,blocks_per_sm,active_warps_per_sm,status\n");
  for (auto& k : ks) {
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, k.fn));
    int optin = (int)p.sharedMemPerBlockOptin - (int)a.sharedSizeBytes;
    cudaError_t se = cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if (se != cudaSuccess) { cudaGetLastError(); optin = -1; }
    CK(cudaFuncGetAttributes(&a, k.fn));
    for (int t : threads)
      for (int s : smems) {
        int n = -1;
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.fn, t, (size_t)s);
        if (e != cudaSuccess) cudaGetLastError();
        int warps = n > 0 ? n * ((t + p.warpSize - 1) / p.warpSize) : 0;
        printf("%s,%d,%d,%d,%zu,%zu,%d,%d,%d,%d,%d,%s\n", k.name, k.target, a.numRegs, a.maxThreadsPerBlock,
               a.sharedSizeBytes, a.localSizeBytes, a.maxDynamicSharedSizeBytes, t, s, n, warps,
               e == cudaSuccess ? "ok" : cudaGetErrorName(e));
      }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      if (!strcmp(argv[i], "--props")) return props();
      if (!strcmp(argv[i], "--sweep")) return sweep();
    }
  } catch (CudaFailure&) {
    return 2;
  }
  fprintf(stderr, "usage: occupancy --props | --sweep\n");
  return 1;
}
