// common.cuh - shared helpers of the hardware ground-truth programs in kernels/cuda/.
//
// Every program here is a small registry of kernels. Each entry launches ONE kernel with a fixed,
// documented launch configuration and problem size, checks the result against a host reference, and
// prints one JSON line per launch on stdout:
//   {"event":"launch","program":...,"kernel":...,"cuda_name":...,"grid":[x,y,z],"block":[x,y,z],
//    "dyn_smem":B,"params":"...","attr":{"numRegs":..,"sharedSizeBytes":..,...},"ok":true,"detail":"..."}
// Common options:  --list            print the registry (name, launch configuration) and exit
//                  --kernel NAME     run one kernel only (may be repeated)
//                  (none)            run every kernel once, in registry order
// Exit status: 0 when every check passed, 1 when a check failed, 2 on a CUDA error.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>
#include <functional>

#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__,     \
              __LINE__, cudaGetErrorString(e_));                                          \
      throw CudaFailure();                                                                \
    }                                                                                     \
  } while (0)

struct CudaFailure {};

// Launch bookkeeping filled by a registry entry's run function.
struct LaunchInfo {
  dim3 grid{1, 1, 1}, block{1, 1, 1};
  size_t dyn_smem = 0;
  std::string params;      // problem size / kernel arguments, human readable
  std::string cuda_name;   // the __global__ function's name (templates spelled out)
  cudaFuncAttributes attr{};
  bool have_attr = false;
  bool ok = false;
  std::string detail;      // first mismatch or error figure
};

struct Entry {
  std::string name;        // registry name, the key used by the fixtures
  std::string config;      // launch configuration, documented (also printed by --list)
  std::function<void(LaunchInfo&)> run;
};

template <typename K>
inline void get_attr(LaunchInfo& li, K kernel) {
  if (cudaFuncGetAttributes(&li.attr, (const void*)kernel) == cudaSuccess) li.have_attr = true;
}

inline void launch_check() {
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (c == '\n') o += "\\n";
    else if ((unsigned char)c < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

inline void print_launch(const char* program, const Entry& e, const LaunchInfo& li) {
  printf("{\"event\":\"launch\",\"program\":\"%s\",\"kernel\":\"%s\",\"cuda_name\":\"%s\","
         "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"dyn_smem\":%zu,\"params\":\"%s\",",
         program, e.name.c_str(), json_escape(li.cuda_name).c_str(), li.grid.x, li.grid.y, li.grid.z,
         li.block.x, li.block.y, li.block.z, li.dyn_smem, json_escape(li.params).c_str());
  if (li.have_attr)
    printf("\"attr\":{\"numRegs\":%d,\"sharedSizeBytes\":%zu,\"localSizeBytes\":%zu,"
           "\"constSizeBytes\":%zu,\"maxThreadsPerBlock\":%d,\"ptxVersion\":%d,\"binaryVersion\":%d},",
           li.attr.numRegs, li.attr.sharedSizeBytes, li.attr.localSizeBytes, li.attr.constSizeBytes,
           li.attr.maxThreadsPerBlock, li.attr.ptxVersion, li.attr.binaryVersion);
  printf("\"ok\":%s,\"detail\":\"%s\"}\n", li.ok ? "true" : "false", json_escape(li.detail).c_str());
  fflush(stdout);
}

// Runs the registry according to argv. Returns the process exit status.
inline int run_registry(const char* program, std::vector<Entry>& reg, int argc, char** argv) {
  std::vector<std::string> only;
  int passes = 1;  // --twice: every selected kernel runs in two passes (the first warms the caches and TLBs)
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--twice")) {
      passes = 2;
    } else if (!strcmp(argv[i], "--list")) {
      for (auto& e : reg)
        printf("{\"event\":\"entry\",\"program\":\"%s\",\"kernel\":\"%s\",\"config\":\"%s\"}\n", program,
               e.name.c_str(), json_escape(e.config).c_str());
      return 0;
    } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
      only.push_back(argv[++i]);
    }
  }
  int failed = 0, errors = 0, ran = 0;
  for (int pass = 0; pass < passes; ++pass)
  for (auto& e : reg) {
    if (!only.empty()) {
      bool want = false;
      for (auto& o : only) want |= (o == e.name);
      if (!want) continue;
    }
    LaunchInfo li;
    try {
      e.run(li);
    } catch (CudaFailure&) {
      li.ok = false;
      li.detail = "CUDA error (see stderr)";
      ++errors;
      cudaGetLastError();  // clear a non-sticky error so later kernels still run
    }
    ++ran;
    if (!li.ok) {
      ++failed;
      fprintf(stderr, "FAIL %s/%s: %s\n", program, e.name.c_str(), li.detail.c_str());
    }
    print_launch(program, e, li);
  }
  printf("{\"event\":\"done\",\"program\":\"%s\",\"ran\":%d,\"failed\":%d,\"cuda_errors\":%d}\n", program, ran,
         failed, errors);
  if (!only.empty() && ran == 0) { fprintf(stderr, "no kernel named like that; try --list\n"); return 1; }
  return errors ? 2 : (failed ? 1 : 0);
}

// Deterministic input values (no RNG state shared between programs).
inline uint32_t hash32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
// Uniform in [-1, 1), multiples of 2^-16: exact in float.
inline float hash_float(uint32_t i, uint32_t seed) {
  return (float)((int32_t)(hash32(i * 2654435761U + seed) >> 16) - 32768) / 32768.0f;
}

// RAII device buffer.
template <typename T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t n_) : n(n_) { CK(cudaMalloc(&p, n * sizeof(T))); }
  ~DevBuf() { if (p) cudaFree(p); }
  void poison() { CK(cudaMemset(p, 0xFF, n * sizeof(T))); }
  void upload(const std::vector<T>& h) { CK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

inline std::string dim_str(dim3 d) {
  char b[64];
  snprintf(b, sizeof b, "(%u,%u,%u)", d.x, d.y, d.z);
  return b;
}
