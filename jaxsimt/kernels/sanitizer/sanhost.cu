// sanhost.cu - the host side of one sanitizer-corpus launch on a GPU, driven by a small spec file that
// kernels/sanitizer/collect_h200.py writes from kernels/sanitizer/cases.py:
//
//   module FILE.cubin          the kernels, built with nvcc -cubin -arch=sm_90 -O3 -lineinfo
//   kernel NAME                an extern "C" entry
//   grid X Y Z / block X Y Z
//   buf NBYTES INIT [OUT]      a cudaMalloc'd buffer, in parameter order; INIT a file of NBYTES bytes copied
//                              in, or "uninit" (allocated, never written); OUT: where its final bytes go
//   scalar NBYTES HEX          a by-value parameter, its bytes in hexadecimal (little-endian)
//
// Build: nvcc -O2 -o sanhost sanhost.cu   (the runtime API only: cudaLibraryLoadFromFile loads the cubin)
// Prints each buffer's device address ("alloc K ADDR NBYTES") so that a report's addresses can be turned into
// (argument, byte offset), then "launch: CODE", "sync: CODE" and exits 0 when both are cudaSuccess.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

struct Param {
  bool is_buf = false;
  size_t nbytes = 0;
  std::string init, out;
  std::vector<unsigned char> value;  // a scalar's bytes
  void* dptr = nullptr;
};

static std::vector<unsigned char> read_file(const std::string& path, size_t n) {
  std::vector<unsigned char> data(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(f.gcount()) != n) {
    std::fprintf(stderr, "sanhost: %s holds fewer than %zu bytes\n", path.c_str(), n);
    std::exit(2);
  }
  return data;
}

static std::vector<unsigned char> hex_bytes(const std::string& hex) {
  std::vector<unsigned char> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<unsigned char>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sanhost SPEC\n");
    return 2;
  }
  std::ifstream spec(argv[1]);
  std::string line, module, kernel;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::vector<Param> params;
  while (std::getline(spec, line)) {
    std::istringstream ls(line);
    std::string key;
    if (!(ls >> key)) continue;
    if (key == "module") ls >> module;
    else if (key == "kernel") ls >> kernel;
    else if (key == "grid") ls >> grid[0] >> grid[1] >> grid[2];
    else if (key == "block") ls >> block[0] >> block[1] >> block[2];
    else if (key == "buf") {
      Param p;
      p.is_buf = true;
      ls >> p.nbytes >> p.init >> p.out;
      params.push_back(p);
    } else if (key == "scalar") {
      Param p;
      std::string hex;
      ls >> p.nbytes >> hex;
      p.value = hex_bytes(hex);
      params.push_back(p);
    }
  }
  cudaLibrary_t lib;
  cudaKernel_t fn;
  cudaError_t e = cudaLibraryLoadFromFile(&lib, module.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e == cudaSuccess) e = cudaLibraryGetKernel(&fn, lib, kernel.c_str());
  if (e != cudaSuccess) {
    std::printf("module: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::vector<void*> argp;
  for (size_t k = 0; k < params.size(); ++k) {
    Param& p = params[k];
    if (!p.is_buf) continue;
    void*& d = p.dptr;
    e = cudaMalloc(&d, p.nbytes);
    if (e != cudaSuccess) {
      std::printf("cudaMalloc: %s\n", cudaGetErrorName(e));
      return 1;
    }
    std::printf("alloc %zu %p %zu\n", k, d, p.nbytes);
    if (p.init != "uninit") {
      std::vector<unsigned char> data = read_file(p.init, p.nbytes);
      e = cudaMemcpy(d, data.data(), p.nbytes, cudaMemcpyHostToDevice);
      if (e != cudaSuccess) {
        std::printf("cudaMemcpy: %s\n", cudaGetErrorName(e));
        return 1;
      }
    }
  }
  for (Param& p : params) argp.push_back(p.is_buf ? static_cast<void*>(&p.dptr) : static_cast<void*>(p.value.data()));
  std::fflush(stdout);
  const cudaError_t r = cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(grid[0], grid[1], grid[2]),
                                         dim3(block[0], block[1], block[2]), argp.data(), 0, nullptr);
  std::printf("launch: %s\n", cudaGetErrorName(r));
  const cudaError_t s = cudaDeviceSynchronize();
  std::printf("sync: %s\n", cudaGetErrorName(s));
  if (r == cudaSuccess && s == cudaSuccess) {
    for (Param& p : params) {
      if (!p.is_buf || p.out.empty()) continue;
      std::vector<unsigned char> data(p.nbytes);
      if (cudaMemcpy(data.data(), p.dptr, p.nbytes, cudaMemcpyDeviceToHost) != cudaSuccess) continue;
      std::ofstream f(p.out, std::ios::binary);
      f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(p.nbytes));
    }
  }
  return (r == cudaSuccess && s == cudaSuccess) ? 0 : 1;
}
