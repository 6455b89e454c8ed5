// micro_global.cu - global-memory access patterns, loads and stores measured separately.
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo micro_global.cu -o micro_global
// Run:    ./micro_global [--list] [--kernel NAME]...
//
// Launch configurations (FIXED): grid 4, block 128 (512 threads, 16 warps) unless noted.
// Buffers come from cudaMalloc (256-byte aligned bases), 1 MiB each; element index idx(gtid):
//   *_stride{1,2,4,8,32}       float, idx = gtid * S
//   *_offset{1,4,16}           float, idx = gtid + OFF (misaligned by OFF elements = 4*OFF bytes)
//   *_elem_1B_char, _2B_short, _8B_float2, _8B_double, _16B_float4
//                              one T per thread, idx = gtid (4-byte float unit stride is *_stride1)
//   *_broadcast                float, idx = 0 for every thread (all lanes one address)
//   *_perm128                  float, idx = (gtid & ~31) | ((lane*13 + 5) & 31): a permutation of the
//                              warp's own 32 consecutive floats (one 128-byte span)
//   *_partial48                float, idx = gtid, grid 4, block 48 (warp 0 full, warp 1 has 16 lanes)
// glob_ld_*: thread loads in[idx] (plain ld.global, no __restrict__/const so no .nc path) and stores the
//            value converted to float to out[gtid] (float, unit stride: 1 coalesced 4-byte store / thread)
// glob_st_*: thread stores make_val(idx) to out[idx] (no load at all; the value depends only on the
//            address, so the broadcast store's racing lanes all write the same value)
// Every output is checked bytewise against a host simulation.
#include "common.cuh"

static const char* PROGRAM = "micro_global";
static const size_t BUF_BYTES = 1 << 20;

template <typename T> __host__ __device__ inline T make_val(int i);
template <> __host__ __device__ inline signed char make_val<signed char>(int i) { return (signed char)(i * 7 + 1); }
template <> __host__ __device__ inline short make_val<short>(int i) { return (short)(i * 3 + 1); }
template <> __host__ __device__ inline float make_val<float>(int i) { return (float)i + 0.5f; }
template <> __host__ __device__ inline double make_val<double>(int i) { return (double)i + 0.25; }
template <> __host__ __device__ inline float2 make_val<float2>(int i) { return make_float2(i + 0.5f, -(i + 0.5f)); }
template <> __host__ __device__ inline float4 make_val<float4>(int i) {
  return make_float4((float)i, i + 0.25f, i + 0.5f, i + 0.75f);
}
__host__ __device__ inline float to_f(signed char v) { return (float)v; }
__host__ __device__ inline float to_f(short v) { return (float)v; }
__host__ __device__ inline float to_f(float v) { return v; }
__host__ __device__ inline float to_f(double v) { return (float)v; }
__host__ __device__ inline float to_f(float2 v) { return v.x + v.y; }
__host__ __device__ inline float to_f(float4 v) { return ((v.x + v.y) + v.z) + v.w; }

struct PStride { __host__ __device__ static int idx(int g, int p) { return g * p; } };
struct POffset { __host__ __device__ static int idx(int g, int p) { return g + p; } };
struct PBroadcast { __host__ __device__ static int idx(int, int) { return 0; } };
struct PPerm128 { __host__ __device__ static int idx(int g, int) { return (g & ~31) | (((g & 31) * 13 + 5) & 31); } };

template <typename T, typename P>
__global__ void glob_load(T* in, float* out, int p) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gtid] = to_f(in[P::idx(gtid, p)]);
}
template <typename T, typename P>
__global__ void glob_store(T* out, int p) {
  const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = P::idx(gtid, p);
  out[i] = make_val<T>(i);
}

static std::vector<unsigned char> input_bytes() {
  std::vector<float> f(BUF_BYTES / 4);
  for (size_t i = 0; i < f.size(); ++i) f[i] = hash_float((uint32_t)i, 5) + 1.5f;  // finite, non-zero
  std::vector<unsigned char> b(BUF_BYTES);
  memcpy(b.data(), f.data(), BUF_BYTES);
  return b;
}

template <typename T, typename P>
void run_load(LaunchInfo& li, int p, int block, const char* tname, const char* pname) {
  const int grid = 4, total = grid * block;
  auto bytes = input_bytes();
  DevBuf<unsigned char> in(BUF_BYTES);
  in.upload(bytes);
  DevBuf<float> out(total);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block);
  li.cuda_name = std::string("glob_load<") + tname + "," + pname + ">";
  li.params = "p=" + std::to_string(p) + " elem_bytes=" + std::to_string(sizeof(T));
  get_attr(li, glob_load<T, P>);
  glob_load<T, P><<<li.grid, li.block>>>(reinterpret_cast<T*>(in.p), out.p, p);
  launch_check();
  auto h = out.download();
  const T* hin = reinterpret_cast<const T*>(bytes.data());
  li.ok = true;
  for (int g = 0; g < total; ++g) {
    float e = to_f(hin[P::idx(g, p)]);
    if (memcmp(&e, &h[g], 4) != 0) { li.ok = false; li.detail = "mismatch at " + std::to_string(g); break; }
  }
}

template <typename T, typename P>
void run_store(LaunchInfo& li, int p, int block, const char* tname, const char* pname) {
  const int grid = 4, total = grid * block;
  const size_t n = BUF_BYTES / sizeof(T);
  DevBuf<T> out(n);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block);
  li.cuda_name = std::string("glob_store<") + tname + "," + pname + ">";
  li.params = "p=" + std::to_string(p) + " elem_bytes=" + std::to_string(sizeof(T));
  get_attr(li, glob_store<T, P>);
  glob_store<T, P><<<li.grid, li.block>>>(out.p, p);
  launch_check();
  auto h = out.download();
  std::vector<T> e(n);
  memset(e.data(), 0xFF, n * sizeof(T));
  for (int g = 0; g < total; ++g) { int i = P::idx(g, p); e[i] = make_val<T>(i); }
  li.ok = memcmp(e.data(), h.data(), n * sizeof(T)) == 0;
  if (!li.ok) li.detail = "stored buffer differs from host simulation";
}

int main(int argc, char** argv) {
  std::vector<Entry> reg;
  const char* cfg = "grid 4, block 128";
  for (int ld = 1; ld >= 0; --ld) {
    const std::string pre = ld ? "glob_ld_" : "glob_st_";
    auto add = [&](const std::string& name, const std::string& c, std::function<void(LaunchInfo&)> f) {
      reg.push_back({pre + name, c, f});
    };
#define ADD(NAME, CFG, T, P, PARAM, BLOCK)                                                   \
  add(NAME, CFG, [ld](LaunchInfo& li) {                                                     \
    if (ld) run_load<T, P>(li, PARAM, BLOCK, #T, #P); else run_store<T, P>(li, PARAM, BLOCK, #T, #P); \
  })
    for (int s : {1, 2, 4, 8, 32})
      add("stride" + std::to_string(s), std::string(cfg) + "; float idx = gtid*" + std::to_string(s),
          [ld, s](LaunchInfo& li) {
            if (ld) run_load<float, PStride>(li, s, 128, "float", "PStride");
            else run_store<float, PStride>(li, s, 128, "float", "PStride");
          });
    for (int o : {1, 4, 16})
      add("offset" + std::to_string(o), std::string(cfg) + "; float idx = gtid+" + std::to_string(o),
          [ld, o](LaunchInfo& li) {
            if (ld) run_load<float, POffset>(li, o, 128, "float", "POffset");
            else run_store<float, POffset>(li, o, 128, "float", "POffset");
          });
    ADD("elem_1B_char", "grid 4, block 128; signed char idx = gtid", signed char, POffset, 0, 128);
    ADD("elem_2B_short", "grid 4, block 128; short idx = gtid", short, POffset, 0, 128);
    ADD("elem_8B_float2", "grid 4, block 128; float2 idx = gtid", float2, POffset, 0, 128);
    ADD("elem_8B_double", "grid 4, block 128; double idx = gtid", double, POffset, 0, 128);
    ADD("elem_16B_float4", "grid 4, block 128; float4 idx = gtid", float4, POffset, 0, 128);
    ADD("broadcast", "grid 4, block 128; float idx = 0", float, PBroadcast, 0, 128);
    ADD("perm128", "grid 4, block 128; float idx = (gtid&~31)|((lane*13+5)&31)", float, PPerm128, 0, 128);
    ADD("partial48", "grid 4, block 48; float idx = gtid", float, POffset, 0, 48);
#undef ADD
  }
  return run_registry(PROGRAM, reg, argc, argv);
}
