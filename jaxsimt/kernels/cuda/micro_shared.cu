// micro_shared.cu - shared-memory access patterns with known, easy-to-count accesses.
//
// Build:  nvcc -arch=sm_90 -O3 -lineinfo micro_shared.cu -o micro_shared
// Run:    ./micro_shared [--list] [--kernel NAME]...   (no option: every kernel once, in order)
//
// Launch configurations (FIXED; the emulator re-runs exactly these):
//   smem_stride_sS        S = 1..33   grid 2, block 128 (4 warps), dyn smem 4*32*S floats
//                         per thread: 1 st.shared.f32 and 1 ld.shared.f32 at word warp*32*S + lane*S
//   smem_elem_<B>B_<T>    T in {char(1B), short(2B), float(4B), float2(8B), double(8B), float4(16B)}
//                         grid 2, block 128; per thread 1 store + 1 load of one T at element tid
//                         (float2/float4 as one v2/v4 access; char/short as one u8/u16 access)
//   smem_struct_vec3      struct {float x,y,z} at element tid: 3 scalar stores, 3 scalar loads
//   smem_struct_mytype    struct {float f; int c;} at element tid: 2 scalar stores, 2 scalar loads
//   smem_struct_vec3_x    as smem_struct_vec3 (3 stores) but loads only .x (1 load)
//   smem_struct_mytype_f  as smem_struct_mytype (2 stores) but loads only .f (1 load)
//   smem_tile_row         grid 2, block 1024 viewed as 32x32 (tx = tid%32, ty = tid/32), float tile[32][32]:
//                         store tile[ty][tx], load tile[ty][tx]
//   smem_tile_col         store tile[ty][tx], load tile[tx][ty]            (32-way conflicts on the load)
//   smem_tile_row_pad     float tile[32][33]: store tile[ty][tx], load tile[ty][tx]
//   smem_tile_col_pad     float tile[32][33]: store tile[ty][tx], load tile[tx][ty]
//   smem_broadcast        grid 2, block 128: store word tid, every thread loads word 0
//   smem_interleave2      grid 2, block 128 (seed 003 Ex. 4): stores sm[2*tid], sm[2*tid+1]; loads the same two
//   smem_blocked2         grid 2, block 128 (Ex. 4's fix): stores sm[tid], sm[tid+128]; loads the same two
//   smem_reduce_interleaved          grid 4, block 256: if (tid % (2*s) == 0) sdata[tid] += sdata[tid+s], s = 1,2,..,128
//   smem_reduce_interleaved_strided  grid 4, block 256: index = 2*s*tid; if (index < 256) sdata[index] += sdata[index+s]
//   smem_reduce_sequential           grid 4, block 256: for (s = 128; s > 0; s >>= 1) if (tid < s) sdata[tid] += sdata[tid+s]
//                         (each: 1 global load + 1 shared store per thread first, thread 0 stores the block sum)
//   smem_transpose_naive   64x64 float matrix, tile float[32][32], grid (2,2), block (32,8): 4 rows per thread
//   smem_transpose_padded  the same with tile float[32][33]
//   smem_pred_active0/1/32 grid 2, block 128: one PREDICATED st.shared.f32 and one predicated ld.shared.f32
//                         per thread, predicate lane < A with A = 0 (no lane active), 1, 32 (all active)
// Every generic pattern kernel writes each loaded value to global memory (out[i*total + gtid], coalesced),
// and the shared accesses go through volatile pointers or asm volatile, so none is optimized away or
// merged into a wider access. Every kernel's output is checked against a host simulation.
#include "common.cuh"

static const char* PROGRAM = "micro_shared";

struct Vec3 { float x, y, z; };
struct MyType { float f; int c; };

// ---------------------------------------------------------------- values
template <typename T> __host__ __device__ inline T make_val(int i);
template <> __host__ __device__ inline signed char make_val<signed char>(int i) { return (signed char)(i * 7 + 1); }
template <> __host__ __device__ inline short make_val<short>(int i) { return (short)(i * 3 + 1); }
template <> __host__ __device__ inline float make_val<float>(int i) { return (float)i + 0.5f; }
template <> __host__ __device__ inline double make_val<double>(int i) { return (double)i + 0.25; }
template <> __host__ __device__ inline float2 make_val<float2>(int i) { return make_float2(i + 0.5f, -(i + 0.5f)); }
template <> __host__ __device__ inline float4 make_val<float4>(int i) {
  return make_float4((float)i, i + 0.25f, i + 0.5f, i + 0.75f);
}
template <> __host__ __device__ inline Vec3 make_val<Vec3>(int i) { return Vec3{(float)i, 2.0f * i, 3.0f * i}; }
template <> __host__ __device__ inline MyType make_val<MyType>(int i) { return MyType{i + 0.5f, i * 3}; }

// ---------------------------------------------------------------- exact-width shared accesses
__device__ inline unsigned saddr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ inline void sts(signed char* p, signed char v) { *(volatile signed char*)p = v; }
__device__ inline void sts(short* p, short v) { *(volatile short*)p = v; }
__device__ inline void sts(float* p, float v) { *(volatile float*)p = v; }
__device__ inline void sts(double* p, double v) { *(volatile double*)p = v; }
__device__ inline void sts(float2* p, float2 v) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(saddr(p)), "f"(v.x), "f"(v.y) : "memory");
}
__device__ inline void sts(float4* p, float4 v) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(saddr(p)), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}
__device__ inline void sts(Vec3* p, Vec3 v) {
  volatile float* q = (volatile float*)p;
  q[0] = v.x; q[1] = v.y; q[2] = v.z;
}
__device__ inline void sts(MyType* p, MyType v) {
  volatile MyType* q = p;
  q->f = v.f; q->c = v.c;
}
__device__ inline signed char lds(const signed char* p) { return *(const volatile signed char*)p; }
__device__ inline short lds(const short* p) { return *(const volatile short*)p; }
__device__ inline float lds(const float* p) { return *(const volatile float*)p; }
__device__ inline double lds(const double* p) { return *(const volatile double*)p; }
__device__ inline float2 lds(const float2* p) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(saddr(p)) : "memory");
  return v;
}
__device__ inline float4 lds(const float4* p) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(saddr(p))
               : "memory");
  return v;
}
__device__ inline Vec3 lds(const Vec3* p) {
  const volatile float* q = (const volatile float*)p;
  Vec3 v; v.x = q[0]; v.y = q[1]; v.z = q[2];
  return v;
}
__device__ inline MyType lds(const MyType* p) {
  const volatile MyType* q = p;
  MyType v; v.f = q->f; v.c = q->c;
  return v;
}

// ---------------------------------------------------------------- index patterns
// st(tid, i, p) / ld(tid, i, p): element index of the i-th store / load of thread tid; p: kernel parameter.
struct PStride {  // 32-bit stride p inside each warp's own stretch
  static const int NST = 1, NLD = 1, BLOCK = 128;
  __host__ __device__ static int st(int tid, int, int p) { return (tid >> 5) * 32 * p + (tid & 31) * p; }
  __host__ __device__ static int ld(int tid, int i, int p) { return st(tid, i, p); }
  static int elems(int p) { return BLOCK * p; }
};
struct PUnit {
  static const int NST = 1, NLD = 1, BLOCK = 128;
  __host__ __device__ static int st(int tid, int, int) { return tid; }
  __host__ __device__ static int ld(int tid, int, int) { return tid; }
  static int elems(int) { return BLOCK; }
};
struct PBroadcast {  // store unit stride, every thread loads element 0
  static const int NST = 1, NLD = 1, BLOCK = 128;
  __host__ __device__ static int st(int tid, int, int) { return tid; }
  __host__ __device__ static int ld(int, int, int) { return 0; }
  static int elems(int) { return BLOCK; }
};
struct PTileRow {  // p = row pitch in words (32 or 33)
  static const int NST = 1, NLD = 1, BLOCK = 1024;
  __host__ __device__ static int st(int tid, int, int p) { return (tid >> 5) * p + (tid & 31); }
  __host__ __device__ static int ld(int tid, int, int p) { return (tid >> 5) * p + (tid & 31); }
  static int elems(int p) { return 32 * p; }
};
struct PTileCol {
  static const int NST = 1, NLD = 1, BLOCK = 1024;
  __host__ __device__ static int st(int tid, int, int p) { return (tid >> 5) * p + (tid & 31); }
  __host__ __device__ static int ld(int tid, int, int p) { return (tid & 31) * p + (tid >> 5); }
  static int elems(int p) { return 32 * p; }
};
struct PInterleave2 {  // seed 003 Ex. 4: shared[2*tid], shared[2*tid+1]
  static const int NST = 2, NLD = 2, BLOCK = 128;
  __host__ __device__ static int st(int tid, int i, int) { return 2 * tid + i; }
  __host__ __device__ static int ld(int tid, int i, int) { return 2 * tid + i; }
  static int elems(int) { return 2 * BLOCK; }
};
struct PBlocked2 {  // Ex. 4's fix: shared[tid], shared[tid + blockDim.x]
  static const int NST = 2, NLD = 2, BLOCK = 128;
  __host__ __device__ static int st(int tid, int i, int) { return tid + i * BLOCK; }
  __host__ __device__ static int ld(int tid, int i, int) { return tid + i * BLOCK; }
  static int elems(int) { return 2 * BLOCK; }
};

template <typename T, typename P>
__global__ void smem_pattern(T* __restrict__ out, int p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x;
  const int total = gridDim.x * blockDim.x;
  const int gtid = blockIdx.x * blockDim.x + tid;
#pragma unroll
  for (int i = 0; i < P::NST; ++i) sts(&sm[P::st(tid, i, p)], make_val<T>(gtid * P::NST + i));
  __syncthreads();
#pragma unroll
  for (int i = 0; i < P::NLD; ++i) out[i * total + gtid] = lds(&sm[P::ld(tid, i, p)]);
}

template <typename T, typename P>
void run_pattern(LaunchInfo& li, int p, const char* tname, const char* pname) {
  const int grid = 2, block = P::BLOCK, total = grid * block;
  const int elems = P::elems(p);
  DevBuf<T> out((size_t)P::NLD * total);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block); li.dyn_smem = (size_t)elems * sizeof(T);
  li.cuda_name = std::string("smem_pattern<") + tname + "," + pname + ">";
  li.params = "p=" + std::to_string(p) + " elem_bytes=" + std::to_string(sizeof(T));
  get_attr(li, smem_pattern<T, P>);
  smem_pattern<T, P><<<li.grid, li.block, li.dyn_smem>>>(out.p, p);
  launch_check();
  std::vector<T> h = out.download();
  // host simulation, block by block
  li.ok = true;
  for (int b = 0; b < grid && li.ok; ++b) {
    std::vector<T> sm(elems);
    std::vector<char> written(elems, 0);
    for (int t = 0; t < block; ++t)
      for (int i = 0; i < P::NST; ++i) {
        int a = P::st(t, i, p);
        sm[a] = make_val<T>((b * block + t) * P::NST + i);
        written[a] = 1;
      }
    for (int t = 0; t < block && li.ok; ++t)
      for (int i = 0; i < P::NLD; ++i) {
        int a = P::ld(t, i, p);
        const T& got = h[(size_t)i * total + b * block + t];
        if (!written[a] || memcmp(&got, &sm[a], sizeof(T)) != 0) {
          li.ok = false;
          li.detail = "mismatch at block " + std::to_string(b) + " thread " + std::to_string(t) + " load " +
                      std::to_string(i);
          break;
        }
      }
  }
}

// ---------------------------------------------------------------- member-only loads
__global__ void smem_struct_vec3_x(float* __restrict__ out) {
  __shared__ Vec3 sm[128];
  const int tid = threadIdx.x, gtid = blockIdx.x * blockDim.x + tid;
  sts(&sm[tid], make_val<Vec3>(gtid));
  __syncthreads();
  out[gtid] = *(volatile float*)&sm[tid].x;
}
__global__ void smem_struct_mytype_f(float* __restrict__ out) {
  __shared__ MyType sm[128];
  const int tid = threadIdx.x, gtid = blockIdx.x * blockDim.x + tid;
  sts(&sm[tid], make_val<MyType>(gtid));
  __syncthreads();
  out[gtid] = *(volatile float*)&sm[tid].f;
}

template <typename K, typename F>
void run_member(LaunchInfo& li, K kernel, const char* name, F expect) {
  const int grid = 2, block = 128, total = grid * block;
  DevBuf<float> out(total);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block); li.cuda_name = name; li.params = "";
  get_attr(li, kernel);
  kernel<<<li.grid, li.block>>>(out.p);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int g = 0; g < total; ++g)
    if (h[g] != expect(g)) { li.ok = false; li.detail = "mismatch at " + std::to_string(g); break; }
}

// ---------------------------------------------------------------- reductions (seed 003)
__global__ void smem_reduce_interleaved(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
__global__ void smem_reduce_interleaved_strided(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
__global__ void smem_reduce_sequential(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

template <typename K>
void run_reduce(LaunchInfo& li, K kernel, const char* name) {
  const int grid = 4, block = 256, n = grid * block;
  std::vector<float> hin(n);
  for (int i = 0; i < n; ++i) hin[i] = (float)(hash32(i) % 16);  // small integers: every order sums exactly
  DevBuf<float> in(n), out(grid);
  in.upload(hin);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block); li.cuda_name = name; li.params = "n=1024";
  get_attr(li, kernel);
  kernel<<<li.grid, li.block>>>(in.p, out.p);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int b = 0; b < grid; ++b) {
    float s = 0;
    for (int t = 0; t < block; ++t) s += hin[b * block + t];
    if (h[b] != s) { li.ok = false; li.detail = "block " + std::to_string(b) + " sum differs"; }
  }
}

// ---------------------------------------------------------------- transpose through shared memory
template <int PITCH>
__global__ void smem_transpose(const float* __restrict__ in, float* __restrict__ out, int width, int height) {
  __shared__ float tile[32][PITCH];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <int PITCH>
void run_transpose(LaunchInfo& li) {
  const int W = 64, H = 64;
  std::vector<float> hin(W * H);
  for (int i = 0; i < W * H; ++i) hin[i] = hash_float(i, 11);
  DevBuf<float> in(W * H), out(W * H);
  in.upload(hin);
  out.poison();
  li.grid = dim3(2, 2); li.block = dim3(32, 8);
  li.cuda_name = PITCH == 32 ? "smem_transpose<32>" : "smem_transpose<33>";
  li.params = "width=64 height=64";
  get_attr(li, smem_transpose<PITCH>);
  smem_transpose<PITCH><<<li.grid, li.block>>>(in.p, out.p, W, H);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int y = 0; y < H && li.ok; ++y)
    for (int x = 0; x < W; ++x)
      if (h[x * H + y] != hin[y * W + x]) { li.ok = false; li.detail = "transpose mismatch"; break; }
}

// ---------------------------------------------------------------- predicated accesses, A lanes active
__global__ void smem_pred_lanes(float* __restrict__ out, int active) {
  __shared__ float sm[128];
  const int tid = threadIdx.x, lane = tid & 31, gtid = blockIdx.x * blockDim.x + tid;
  unsigned a = saddr(&sm[tid]);
  float w = (float)gtid + 0.5f;
  float v = -1.0f;
  asm volatile("{\n\t.reg .pred p;\n\tsetp.lt.s32 p, %1, %2;\n\t@p st.shared.f32 [%0], %3;\n\t}" ::"r"(a), "r"(lane),
               "r"(active), "f"(w)
               : "memory");
  __syncthreads();
  asm volatile("{\n\t.reg .pred p;\n\tsetp.lt.s32 p, %2, %3;\n\t@p ld.shared.f32 %0, [%1];\n\t}"
               : "+f"(v)
               : "r"(a), "r"(lane), "r"(active)
               : "memory");
  out[gtid] = v;
}

void run_pred(LaunchInfo& li, int active) {
  const int grid = 2, block = 128, total = grid * block;
  DevBuf<float> out(total);
  out.poison();
  li.grid = dim3(grid); li.block = dim3(block); li.cuda_name = "smem_pred_lanes";
  li.params = "active_lanes_per_warp=" + std::to_string(active);
  get_attr(li, smem_pred_lanes);
  smem_pred_lanes<<<li.grid, li.block>>>(out.p, active);
  launch_check();
  auto h = out.download();
  li.ok = true;
  for (int g = 0; g < total; ++g) {
    float e = ((g & 31) < active) ? (float)g + 0.5f : -1.0f;
    if (h[g] != e) { li.ok = false; li.detail = "mismatch at " + std::to_string(g); break; }
  }
}

// ---------------------------------------------------------------- registry
int main(int argc, char** argv) {
  std::vector<Entry> reg;
  for (int s = 1; s <= 33; ++s)
    reg.push_back({"smem_stride_s" + std::to_string(s),
                   "grid 2, block 128, dyn smem " + std::to_string(4 * 128 * s) + " B; word warp*32*S+lane*S, S=" +
                       std::to_string(s),
                   [s](LaunchInfo& li) { run_pattern<float, PStride>(li, s, "float", "PStride"); }});
  reg.push_back({"smem_elem_1B_char", "grid 2, block 128; element tid",
                 [](LaunchInfo& li) { run_pattern<signed char, PUnit>(li, 0, "signed char", "PUnit"); }});
  reg.push_back({"smem_elem_2B_short", "grid 2, block 128; element tid",
                 [](LaunchInfo& li) { run_pattern<short, PUnit>(li, 0, "short", "PUnit"); }});
  reg.push_back({"smem_elem_4B_float", "grid 2, block 128; element tid",
                 [](LaunchInfo& li) { run_pattern<float, PUnit>(li, 0, "float", "PUnit"); }});
  reg.push_back({"smem_elem_8B_float2", "grid 2, block 128; element tid (v2.f32)",
                 [](LaunchInfo& li) { run_pattern<float2, PUnit>(li, 0, "float2", "PUnit"); }});
  reg.push_back({"smem_elem_8B_double", "grid 2, block 128; element tid (f64)",
                 [](LaunchInfo& li) { run_pattern<double, PUnit>(li, 0, "double", "PUnit"); }});
  reg.push_back({"smem_elem_16B_float4", "grid 2, block 128; element tid (v4.f32)",
                 [](LaunchInfo& li) { run_pattern<float4, PUnit>(li, 0, "float4", "PUnit"); }});
  reg.push_back({"smem_struct_vec3", "grid 2, block 128; struct {float x,y,z} element tid, 3 st + 3 ld",
                 [](LaunchInfo& li) { run_pattern<Vec3, PUnit>(li, 0, "Vec3", "PUnit"); }});
  reg.push_back({"smem_struct_mytype", "grid 2, block 128; struct {float f; int c;} element tid, 2 st + 2 ld",
                 [](LaunchInfo& li) { run_pattern<MyType, PUnit>(li, 0, "MyType", "PUnit"); }});
  reg.push_back({"smem_struct_vec3_x", "grid 2, block 128; 3 st (whole struct), 1 ld (.x)", [](LaunchInfo& li) {
                   run_member(li, smem_struct_vec3_x, "smem_struct_vec3_x", [](int g) { return (float)g; });
                 }});
  reg.push_back({"smem_struct_mytype_f", "grid 2, block 128; 2 st (whole struct), 1 ld (.f)", [](LaunchInfo& li) {
                   run_member(li, smem_struct_mytype_f, "smem_struct_mytype_f", [](int g) { return g + 0.5f; });
                 }});
  reg.push_back({"smem_tile_row", "grid 2, block 1024 (32x32), float[32][32]: st [ty][tx], ld [ty][tx]",
                 [](LaunchInfo& li) { run_pattern<float, PTileRow>(li, 32, "float", "PTileRow"); }});
  reg.push_back({"smem_tile_col", "grid 2, block 1024 (32x32), float[32][32]: st [ty][tx], ld [tx][ty]",
                 [](LaunchInfo& li) { run_pattern<float, PTileCol>(li, 32, "float", "PTileCol"); }});
  reg.push_back({"smem_tile_row_pad", "grid 2, block 1024 (32x32), float[32][33]: st [ty][tx], ld [ty][tx]",
                 [](LaunchInfo& li) { run_pattern<float, PTileRow>(li, 33, "float", "PTileRow"); }});
  reg.push_back({"smem_tile_col_pad", "grid 2, block 1024 (32x32), float[32][33]: st [ty][tx], ld [tx][ty]",
                 [](LaunchInfo& li) { run_pattern<float, PTileCol>(li, 33, "float", "PTileCol"); }});
  reg.push_back({"smem_broadcast", "grid 2, block 128; st word tid, ld word 0",
                 [](LaunchInfo& li) { run_pattern<float, PBroadcast>(li, 0, "float", "PBroadcast"); }});
  reg.push_back({"smem_interleave2", "grid 2, block 128; st/ld sm[2*tid], sm[2*tid+1]",
                 [](LaunchInfo& li) { run_pattern<float, PInterleave2>(li, 0, "float", "PInterleave2"); }});
  reg.push_back({"smem_blocked2", "grid 2, block 128; st/ld sm[tid], sm[tid+128]",
                 [](LaunchInfo& li) { run_pattern<float, PBlocked2>(li, 0, "float", "PBlocked2"); }});
  reg.push_back({"smem_reduce_interleaved", "grid 4, block 256, n 1024; tid % (2*s) == 0",
                 [](LaunchInfo& li) { run_reduce(li, smem_reduce_interleaved, "smem_reduce_interleaved"); }});
  reg.push_back({"smem_reduce_interleaved_strided", "grid 4, block 256, n 1024; index = 2*s*tid",
                 [](LaunchInfo& li) {
                   run_reduce(li, smem_reduce_interleaved_strided, "smem_reduce_interleaved_strided");
                 }});
  reg.push_back({"smem_reduce_sequential", "grid 4, block 256, n 1024; tid < s, s halving",
                 [](LaunchInfo& li) { run_reduce(li, smem_reduce_sequential, "smem_reduce_sequential"); }});
  reg.push_back({"smem_transpose_naive", "grid (2,2), block (32,8), 64x64 floats, tile float[32][32]",
                 [](LaunchInfo& li) { run_transpose<32>(li); }});
  reg.push_back({"smem_transpose_padded", "grid (2,2), block (32,8), 64x64 floats, tile float[32][33]",
                 [](LaunchInfo& li) { run_transpose<33>(li); }});
  for (int a : {0, 1, 32})
    reg.push_back({"smem_pred_active" + std::to_string(a),
                   "grid 2, block 128; predicated st/ld.shared.f32, lanes < " + std::to_string(a) + " active",
                   [a](LaunchInfo& li) { run_pred(li, a); }});
  return run_registry(PROGRAM, reg, argc, argv);
}
