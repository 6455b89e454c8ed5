// mma_truth.cu: ground truth for jaxsimt.mma's Tensor Core model.
//
// Runs mma.sync (inline PTX) for m16n8k16 (f16->f32, bf16->f32, f16->f16) and m16n8k8 (f16, bf16,
// tf32 -> f32), and a WMMA m16n16k16 f16->f32 kernel, on deterministic tiles, and writes the bits.
//
//   nvcc -arch=sm_90 -O2 -o mma_truth mma_truth.cu && ./mma_truth OUTDIR
//   ./mma_truth --dry-run OUTDIR  (no GPU: same files, D bits all ones)   ./mma_truth --checksums
//
// OUTDIR/mma_truth.bin + OUTDIR/mma_truth.json (the manifest: sections, byte offsets, layouts, device).
// Per configuration: N_RANDOM random tiles whose inputs are NOT stored (they are a pure function of the
// tile index, see gen_random_bits; the manifest carries a checksum of them) and N_HARD hard-case tiles
// whose inputs are stored. Tiles are row-major: A [m][k], B [k][n], C and D [m][n]; elements are the
// little-endian bits (uint16 for f16/bf16, uint32 for f32 and for tf32 held in f32 containers).
// Fragment loads in the kernels follow the PTX ISA's "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"
// tables (groupID = lane >> 2, threadID_in_group = lane % 4).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static const uint64_t SEED = 0x6A617873696D7401ull;  // "jaxsimt\x01"
static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ull;
static const int N_RANDOM = 2000;
static const int HARD_PER_CATEGORY = 24;
static const int N_CATEGORIES = 10;
static const int N_HARD = HARD_PER_CATEGORY * N_CATEGORIES;
static const char* CATEGORY_NAMES[N_CATEGORIES] = {
    "cancellation", "mixed_exponents", "subnormal_inputs", "subnormal_results", "near_overflow",
    "c_dominates", "signed_zeros", "truncation_probe", "group_probe", "inf_nan"};

// ------------------------------------------------------------------------------------------------
// Formats
enum Fmt { F16 = 0, BF16 = 1, F32 = 2, TF32 = 3 };
static const char* FMT_NAME[4] = {"f16", "bf16", "f32", "tf32"};
static int ebits(Fmt f) { return f == F16 ? 5 : 8; }
static int fbits(Fmt f) { return f == F16 ? 10 : f == BF16 ? 7 : f == F32 ? 23 : 10; }
static int bias(Fmt f) { return (1 << (ebits(f) - 1)) - 1; }
static int nbytes(Fmt f) { return (f == F16 || f == BF16) ? 2 : 4; }

// bits from (sign, biased exponent field, fraction); tf32 lands in an f32 container (low 13 bits 0)
static uint32_t mk(Fmt f, uint32_t sign, int ef, uint32_t frac) {
  int emax = (1 << ebits(f)) - 1;
  if (ef < 0) ef = 0;
  if (ef > emax - 1) ef = emax - 1;
  frac &= (1u << fbits(f)) - 1;
  uint32_t b = (sign << (ebits(f) + fbits(f))) | ((uint32_t)ef << fbits(f)) | frac;
  return f == TF32 ? b << 13 : b;
}
static uint32_t mk_special(Fmt f, uint32_t sign, bool nan) {
  uint32_t emax = (1u << ebits(f)) - 1;
  uint32_t b = (sign << (ebits(f) + fbits(f))) | (emax << fbits(f)) | (nan ? 1u << (fbits(f) - 1) : 0);
  return f == TF32 ? b << 13 : b;
}
static double to_double(Fmt f, uint32_t b) {
  if (f == TF32) { b >>= 13; }
  int eb = ebits(f), fb = fbits(f);
  uint32_t sign = b >> (eb + fb), ef = (b >> fb) & ((1u << eb) - 1), frac = b & ((1u << fb) - 1);
  double v;
  if (ef == (1u << eb) - 1) v = frac ? NAN : INFINITY;
  else if (ef == 0) v = ldexp((double)frac, 1 - bias(f) - fb);
  else v = ldexp((double)(frac | (1u << fb)), (int)ef - bias(f) - fb);
  return sign ? -v : v;
}
static uint32_t f32bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
// round-to-nearest-even from double (through float, fine for test construction)
static uint32_t from_double(Fmt f, double x) {
  float xf = (float)x;
  uint32_t u = f32bits(xf);
  if (f == F32) return u;
  if (std::isnan(xf)) return mk_special(f, 0, true);
  if (f == BF16) return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  if (f == TF32) return (u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  // f16
  uint32_t sign = (u >> 16) & 0x8000u;
  float ax = fabsf(xf);
  if (ax >= 65520.0f) return sign | 0x7C00u;
  if (ax < ldexpf(1.0f, -14)) {  // subnormal: quantum 2^-24
    float q = ax * 16777216.0f;
    uint32_t m = (uint32_t)nearbyintf(q);
    return sign | m;
  }
  int e; float fr = frexpf(ax, &e);  // ax = fr * 2^e, fr in [0.5, 1)
  uint32_t m = (uint32_t)nearbyintf(fr * 2048.0f);  // 11 bits
  if (m == 2048) { m = 1024; e += 1; }
  return sign | ((uint32_t)(e - 1 + 15) << 10) | (m & 0x3FFu);
}

// ------------------------------------------------------------------------------------------------
// Random tiles: inputs are a pure function of (config, tile, operand, element index); the Python
// loader regenerates them (jaxsimt/mma/fixture.py) and checks the checksum in the manifest.
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint32_t gen_random_bits(int cfg, int tile, int operand, int index, Fmt f) {
  uint64_t key = (((uint64_t)cfg * (1ull << 20) + (uint64_t)tile) * 4 + (uint64_t)operand) * 4096 + index;
  uint64_t h = mix64(SEED + key * GOLDEN);
  int profile = tile % 4;
  uint32_t sign = (uint32_t)(h >> 63);
  uint32_t frac = (uint32_t)(h & ((1ull << fbits(f == TF32 ? F32 : f)) - 1));
  uint32_t r = (uint32_t)((h >> 24) & 0xFFFF);
  Fmt cf = f == TF32 ? F32 : f;  // tf32 values are generated as f32 bit patterns
  int b = bias(cf), eb = ebits(cf), fb = fbits(cf);
  int width = nbytes(cf) * 8;
  uint32_t bits;
  if (profile == 2) {  // raw bits, never inf/NaN
    bits = (uint32_t)(h & (width == 32 ? 0xFFFFFFFFull : 0xFFFFull));
    uint32_t emask = (1u << eb) - 1;
    if (((bits >> fb) & emask) == emask) bits ^= 1u << (fb + eb - 1);
  } else {
    int e;
    if (profile == 0) e = b - 2 + (int)(r % 3);
    else if (profile == 1) { int w = eb == 5 ? 12 : 24; e = b - w + (int)(r % (2 * w + 1)); }
    else e = b - 1 + (int)(r % 2);
    bits = (sign << (eb + fb)) | ((uint32_t)e << fb) | frac;
  }
  if (f == TF32 && profile != 3) bits &= ~0x1FFFu;  // profile 3 keeps dirty low bits (tf32 read rule)
  return bits;
}

// ------------------------------------------------------------------------------------------------
// Configurations
enum Kind { K16_F32 = 0, K16_F16 = 1, K8_F32 = 2, K8_TF32 = 3, WMMA16 = 4 };
struct Config {
  const char* name;
  const char* instruction;
  const char* api;
  int m, n, k;
  Fmt ab, cd;
  Kind kind;
};
static const Config CONFIGS[] = {
    {"m16n8k16_f16_f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync", 16, 8, 16, F16, F32, K16_F32},
    {"m16n8k16_bf16_f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync", 16, 8, 16, BF16, F32, K16_F32},
    {"m16n8k16_f16_f16", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "mma.sync", 16, 8, 16, F16, F16, K16_F16},
    {"m16n8k8_f16_f32", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "mma.sync", 16, 8, 8, F16, F32, K8_F32},
    {"m16n8k8_bf16_f32", "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "mma.sync", 16, 8, 8, BF16, F32, K8_F32},
    {"m16n8k8_tf32_f32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "mma.sync", 16, 8, 8, TF32, F32, K8_TF32},
    {"wmma_m16n16k16_f16_f32", "wmma::mma_sync<16,16,16,half,float> (row_major A, row_major B)", "wmma", 16, 16, 16, F16, F32, WMMA16},
};
static const int N_CONFIGS = sizeof(CONFIGS) / sizeof(CONFIGS[0]);

// ------------------------------------------------------------------------------------------------
// Kernels: one warp per tile. A, B, C, D are flat arrays of tiles (row-major inside a tile).
__device__ __forceinline__ uint32_t pack2(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }

template <int KIND>
__global__ void mma_kernel(const void* A_, const void* B_, const void* C_, void* D_, int ntiles, int bf16) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (warp >= ntiles) return;
  int g = lane >> 2, t = lane & 3;
  if (KIND == K16_F32 || KIND == K16_F16) {
    const uint16_t* A = (const uint16_t*)A_ + (size_t)warp * 256;
    const uint16_t* B = (const uint16_t*)B_ + (size_t)warp * 128;
    uint32_t a[4], b[2];
    for (int r = 0; r < 4; ++r) {  // a_i: row g (+8 for i in 2,3,6,7), col 2t + (i&1) (+8 for i >= 4)
      int i0 = 2 * r;
      int row = g + 8 * ((i0 >> 1) & 1), col = 2 * t + 8 * (i0 >= 4);
      a[r] = pack2(A[row * 16 + col], A[row * 16 + col + 1]);
    }
    for (int r = 0; r < 2; ++r) {  // b_i: row 2t + (i&1) (+8 for i >= 2), col g
      int row = 2 * t + 8 * r;
      b[r] = pack2(B[row * 8 + g], B[(row + 1) * 8 + g]);
    }
    if (KIND == K16_F32) {
      const uint32_t* C = (const uint32_t*)C_ + (size_t)warp * 128;
      uint32_t* D = (uint32_t*)D_ + (size_t)warp * 128;
      uint32_t c[4], d[4];
      for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)];
      if (bf16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
      } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
      }
      for (int i = 0; i < 4; ++i) D[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)] = d[i];
    } else {
      const uint16_t* C = (const uint16_t*)C_ + (size_t)warp * 128;
      uint16_t* D = (uint16_t*)D_ + (size_t)warp * 128;
      uint32_t c[2], d[2];
      for (int r = 0; r < 2; ++r) {  // f16x2 {c0,c1} row g, {c2,c3} row g+8; cols 2t, 2t+1
        int row = g + 8 * r;
        c[r] = pack2(C[row * 8 + 2 * t], C[row * 8 + 2 * t + 1]);
      }
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
                   : "=r"(d[0]), "=r"(d[1])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
      for (int r = 0; r < 2; ++r) {
        int row = g + 8 * r;
        D[row * 8 + 2 * t] = (uint16_t)(d[r] & 0xFFFF);
        D[row * 8 + 2 * t + 1] = (uint16_t)(d[r] >> 16);
      }
    }
  } else if (KIND == K8_F32) {
    const uint16_t* A = (const uint16_t*)A_ + (size_t)warp * 128;
    const uint16_t* B = (const uint16_t*)B_ + (size_t)warp * 64;
    const uint32_t* C = (const uint32_t*)C_ + (size_t)warp * 128;
    uint32_t* D = (uint32_t*)D_ + (size_t)warp * 128;
    uint32_t a[2], b, c[4], d[4];
    for (int r = 0; r < 2; ++r) {  // a_i: row g (+8 for a2, a3), col 2t + (i&1)
      int row = g + 8 * r;
      a[r] = pack2(A[row * 8 + 2 * t], A[row * 8 + 2 * t + 1]);
    }
    b = pack2(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);  // b_i: row 2t + i, col g
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)];
    if (bf16) {
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                   : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                   : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    } else {
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                   : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                   : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    }
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)] = d[i];
  } else if (KIND == K8_TF32) {
    const uint32_t* A = (const uint32_t*)A_ + (size_t)warp * 128;
    const uint32_t* B = (const uint32_t*)B_ + (size_t)warp * 64;
    const uint32_t* C = (const uint32_t*)C_ + (size_t)warp * 128;
    uint32_t* D = (uint32_t*)D_ + (size_t)warp * 128;
    uint32_t a[4], b[2], c[4], d[4];
    for (int i = 0; i < 4; ++i) a[i] = A[(g + 8 * (i & 1)) * 8 + t + 4 * (i >= 2)];  // tf32 A table
    for (int i = 0; i < 2; ++i) b[i] = B[(t + 4 * i) * 8 + g];                      // tf32 B table
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)] = d[i];
  } else {  // WMMA16
    using namespace nvcuda;
    const half* A = (const half*)A_ + (size_t)warp * 256;
    const half* B = (const half*)B_ + (size_t)warp * 256;
    const float* C = (const float*)C_ + (size_t)warp * 256;
    float* D = (float*)D_ + (size_t)warp * 256;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, A, 16);
    wmma::load_matrix_sync(fb, B, 16);
    wmma::load_matrix_sync(fc, C, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(D, fc, 16, wmma::mem_row_major);
  }
}

static void launch(const Config& cf, const void* A, const void* B, const void* C, void* D, int ntiles) {
  int threads = 128, blocks = (ntiles * 32 + threads - 1) / threads;
  int bf = cf.ab == BF16;
  switch (cf.kind) {
    case K16_F32: mma_kernel<K16_F32><<<blocks, threads>>>(A, B, C, D, ntiles, bf); break;
    case K16_F16: mma_kernel<K16_F16><<<blocks, threads>>>(A, B, C, D, ntiles, bf); break;
    case K8_F32: mma_kernel<K8_F32><<<blocks, threads>>>(A, B, C, D, ntiles, bf); break;
    case K8_TF32: mma_kernel<K8_TF32><<<blocks, threads>>>(A, B, C, D, ntiles, bf); break;
    case WMMA16: mma_kernel<WMMA16><<<blocks, threads>>>(A, B, C, D, ntiles, bf); break;
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// ------------------------------------------------------------------------------------------------
// Host tile buffers (bits as uint32 per element, packed to the element width on output)
struct Tiles {
  int n = 0;
  std::vector<uint32_t> a, b, c, d;
};
static std::vector<uint8_t> pack(const std::vector<uint32_t>& v, Fmt f) {
  int w = nbytes(f);
  std::vector<uint8_t> out(v.size() * w);
  for (size_t i = 0; i < v.size(); ++i)
    for (int j = 0; j < w; ++j) out[i * w + j] = (uint8_t)(v[i] >> (8 * j));
  return out;
}
static std::vector<uint32_t> unpack(const std::vector<uint8_t>& v, Fmt f) {
  int w = nbytes(f);
  std::vector<uint32_t> out(v.size() / w);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t x = 0;
    for (int j = 0; j < w; ++j) x |= (uint32_t)v[i * w + j] << (8 * j);
    out[i] = x;
  }
  return out;
}
static bool DRY_RUN = false;  // --dry-run OUTDIR: everything but the GPU (D bits all ones), to check the format
static void run(const Config& cf, Tiles& T) {
  if (DRY_RUN) { T.d.assign((size_t)T.n * cf.m * cf.n, nbytes(cf.cd) == 2 ? 0xFFFFu : 0xFFFFFFFFu); return; }
  std::vector<uint8_t> ha = pack(T.a, cf.ab), hb = pack(T.b, cf.ab), hc = pack(T.c, cf.cd);
  size_t dbytes = (size_t)T.n * cf.m * cf.n * nbytes(cf.cd);
  void *da, *db, *dc, *dd;
  CK(cudaMalloc(&da, ha.size())); CK(cudaMalloc(&db, hb.size()));
  CK(cudaMalloc(&dc, hc.size())); CK(cudaMalloc(&dd, dbytes));
  CK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc, hc.data(), hc.size(), cudaMemcpyHostToDevice));
  CK(cudaMemset(dd, 0xFF, dbytes));
  launch(cf, da, db, dc, dd, T.n);
  std::vector<uint8_t> hd(dbytes);
  CK(cudaMemcpy(hd.data(), dd, dbytes, cudaMemcpyDeviceToHost));
  T.d = unpack(hd, cf.cd);
  CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dc)); CK(cudaFree(dd));
}

// ------------------------------------------------------------------------------------------------
// Hard cases (stored explicitly; generated with a fixed-seed host PRNG)
struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t s) : g(s) {}
  uint64_t u64() { return g(); }
  int uni(int lo, int hi) { return lo + (int)(g() % (uint64_t)(hi - lo + 1)); }  // inclusive
  bool coin(double p = 0.5) { return (double)(g() >> 11) * (1.0 / 9007199254740992.0) < p; }
};
static uint32_t rnd_val(Rng& r, Fmt f, int e_lo, int e_hi, int sign = -1) {  // unbiased exponents
  uint32_t s = sign < 0 ? (uint32_t)r.coin() : (uint32_t)sign;
  return mk(f, s, r.uni(e_lo, e_hi) + bias(f), (uint32_t)r.u64());
}
static int emin_of(Fmt f) { return 1 - bias(f); }
static int emax_of(Fmt f) { return bias(f); }

static void hard_tile(const Config& cf, int cat, Rng& r, uint32_t* A, uint32_t* B, uint32_t* C) {
  const int m = cf.m, n = cf.n, k = cf.k;
  Fmt fi = cf.ab, fo = cf.cd;
  auto fillA = [&](int lo, int hi) { for (int i = 0; i < m * k; ++i) A[i] = rnd_val(r, fi, lo, hi); };
  auto fillB = [&](int lo, int hi) { for (int i = 0; i < k * n; ++i) B[i] = rnd_val(r, fi, lo, hi); };
  auto fillC = [&](int lo, int hi) { for (int i = 0; i < m * n; ++i) C[i] = rnd_val(r, fo, lo, hi); };
  auto dot = [&](int i, int j) {
    double s = 0;
    for (int q = 0; q < k; ++q) s += to_double(fi, A[i * k + q]) * to_double(fi, B[q * n + j]);
    return s;
  };
  int wide = fo == F16 ? 7 : fi == F16 ? 14 : 60;
  switch (cat) {
    case 0:  // catastrophic cancellation: c = -(sum of products), or products cancelling in pairs
      fillA(-2, 1); fillB(-2, 1);
      if (r.coin()) {
        for (int i = 0; i < m * n; ++i) C[i] = from_double(fo, -dot(i / n, i % n));
      } else {
        for (int i = 0; i < m; ++i) for (int q = 0; q + 1 < k; q += 2) A[i * k + q + 1] = A[i * k + q] ^ (1u << (nbytes(fi) * 8 - 1));
        for (int q = 0; q + 1 < k; q += 2) for (int j = 0; j < n; ++j) B[(q + 1) * n + j] = B[q * n + j];
        fillC(-30, 2);
      }
      break;
    case 1:  // widely mixed exponents
      fillA(-wide, wide); fillB(-wide, wide); fillC(-2 * wide, 2 * wide);
      break;
    case 2: {  // subnormal inputs
      for (int i = 0; i < m * k; ++i) A[i] = r.coin() ? mk(fi, (uint32_t)r.coin(), 0, (uint32_t)r.u64() | 1) : rnd_val(r, fi, -2, 1);
      for (int i = 0; i < k * n; ++i) B[i] = r.coin() ? mk(fi, (uint32_t)r.coin(), 0, (uint32_t)r.u64() | 1) : rnd_val(r, fi, -2, 1);
      for (int i = 0; i < m * n; ++i) C[i] = r.coin(0.25) ? mk(fo, (uint32_t)r.coin(), 0, (uint32_t)r.u64() | 1) : rnd_val(r, fo, -20, 2);
      break;
    }
    case 3: {  // results in the accumulator's subnormal range
      int target = emin_of(fo) - r.uni(1, 8);  // product exponent aimed at
      int half_e = target / 2;
      int lo = std::max(half_e - 2, emin_of(fi)), hi = std::max(std::min(half_e + 1, emax_of(fi)), lo);
      fillA(lo, hi); fillB(lo, hi);
      for (int i = 0; i < m * n; ++i) C[i] = r.coin() ? mk(fo, (uint32_t)r.coin(), 0, (uint32_t)r.u64()) : mk(fo, (uint32_t)r.coin(), 0, 0);
      if (fo == F32 && fi == F16)  // f16 products cannot reach f32 subnormals: zero half the A rows
        for (int i = 0; i < m; i += 2) for (int q = 0; q < k; ++q) A[i * k + q] = 0;
      break;
    }
    case 4: {  // near overflow of the accumulator
      if (fo == F16) { fillA(3, 6); fillB(3, 7); fillC(13, 15); }
      else if (fi == F16) { fillA(10, 15); fillB(10, 15); fillC(125, 127); }
      else { fillA(56, 61); fillB(56, 62); fillC(124, 127); }
      if (r.coin()) {  // same signs: sums grow
        for (int i = 0; i < m * k; ++i) A[i] &= ~(1u << (nbytes(fi) * 8 - 1));
        for (int i = 0; i < k * n; ++i) B[i] &= ~(1u << (nbytes(fi) * 8 - 1));
        for (int i = 0; i < m * n; ++i) C[i] &= ~(1u << (nbytes(fo) * 8 - 1));
      }
      break;
    }
    case 5:  // c dominates the products
      fillA(-2, 1); fillB(-2, 1);
      { int e = r.uni(8, fo == F16 ? 14 : 30); fillC(e, e + 2); }
      break;
    case 6:  // signed zeros
      for (int i = 0; i < m * k; ++i) A[i] = r.coin(0.2) ? rnd_val(r, fi, -1, 1) : mk(fi, (uint32_t)r.coin(), 0, 0);
      for (int i = 0; i < k * n; ++i) B[i] = r.coin(0.2) ? rnd_val(r, fi, -1, 1) : mk(fi, (uint32_t)r.coin(), 0, 0);
      for (int i = 0; i < m * n; ++i) C[i] = mk(fo, (uint32_t)r.coin(), 0, 0);
      if (r.coin()) for (int i = 0; i < m * k; ++i) A[i] = mk(fi, (uint32_t)r.coin(), 0, 0);
      break;
    case 7: {  // truncation probe: c = +-2^e (1 + f), products 2^(e - 24 - j), j in 0..8
      int e = r.uni(-4, 4);
      bool same = r.coin();
      for (int i = 0; i < m * n; ++i) C[i] = mk(fo, same ? 0u : (uint32_t)r.coin(), e + bias(fo), r.coin() ? 0u : (uint32_t)r.u64());
      int pe = e - (fo == F16 ? 11 : 24);
      for (int i = 0; i < m * k; ++i) {
        int ea = std::max(std::min(pe / 2 - r.uni(0, 4), emax_of(fi)), emin_of(fi));
        A[i] = mk(fi, same ? 0u : (uint32_t)r.coin(), ea + bias(fi), (uint32_t)r.u64());
      }
      for (int i = 0; i < k * n; ++i) {
        int eb = std::max(std::min(pe - pe / 2 - r.uni(0, 4), emax_of(fi)), emin_of(fi));
        B[i] = mk(fi, same ? 0u : (uint32_t)r.coin(), eb + bias(fi), r.coin() ? 0u : (uint32_t)r.u64());
      }
      break;
    }
    case 8: {  // group probe: one big product (or a cancelling big pair) among small ones
      fillA(-12, -8); fillB(-12, -8); fillC(-2, 1);
      for (int i = 0; i < m; ++i) {
        int q0 = r.uni(0, k - 1), q1 = r.uni(0, k - 1);
        A[i * k + q0] = rnd_val(r, fi, 4, 6);
        if (r.coin() && q1 != q0) A[i * k + q1] = A[i * k + q0] ^ (1u << (nbytes(fi) * 8 - 1));
      }
      for (int q = 0; q < k; ++q) for (int j = 0; j < n; ++j) if (r.coin(0.3)) B[q * n + j] = mk(fi, 0, bias(fi), 0);
      break;
    }
    default: {  // inf and NaN among ordinary values
      fillA(-2, 1); fillB(-2, 1); fillC(-2, 2);
      for (int s = 0; s < 3; ++s) {
        int which = r.uni(0, 2);
        bool nan = r.coin(0.3);
        uint32_t sign = (uint32_t)r.coin();
        if (which == 0) A[r.uni(0, m * k - 1)] = mk_special(fi, sign, nan);
        else if (which == 1) B[r.uni(0, k * n - 1)] = mk_special(fi, sign, nan);
        else C[r.uni(0, m * n - 1)] = mk_special(fo, sign, nan);
      }
      if (r.coin()) A[r.uni(0, m * k - 1)] = 0;
      break;
    }
  }
}

// ------------------------------------------------------------------------------------------------
struct Section { std::string name; size_t offset, bytes; };

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s OUTDIR | --checksums\n", argv[0]); return 2; }
  if (!strcmp(argv[1], "--checksums")) {  // host only: the random-input checksums, no GPU needed
    for (int ci = 0; ci < N_CONFIGS; ++ci) {
      const Config& cf = CONFIGS[ci];
      uint64_t checksum = 0, idx = 0;
      for (int t = 0; t < N_RANDOM; ++t) {
        for (int i = 0; i < cf.m * cf.k; ++i) checksum += (uint64_t)gen_random_bits(ci, t, 0, i, cf.ab) * (2 * idx++ + 1);
        for (int i = 0; i < cf.k * cf.n; ++i) checksum += (uint64_t)gen_random_bits(ci, t, 1, i, cf.ab) * (2 * idx++ + 1);
        for (int i = 0; i < cf.m * cf.n; ++i) checksum += (uint64_t)gen_random_bits(ci, t, 2, i, cf.cd) * (2 * idx++ + 1);
      }
      printf("%s 0x%016llx\n", cf.name, (unsigned long long)checksum);
    }
    return 0;
  }
  if (!strcmp(argv[1], "--dry-run") && argc > 2) { DRY_RUN = true; ++argv; }
  std::string dir = argv[1];
  std::string bin_path = dir + "/mma_truth.bin", json_path = dir + "/mma_truth.json";
  FILE* bin = fopen(bin_path.c_str(), "wb");
  if (!bin) { fprintf(stderr, "cannot write %s\n", bin_path.c_str()); return 1; }
  int dev = 0, drv = 0, rt = 0;
  cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  if (DRY_RUN) {
    strcpy(prop.name, "dry-run (no GPU)");
    prop.major = 9;
  } else {
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
  }
  if (prop.major < 8) { fprintf(stderr, "needs sm_80 or newer (got %d.%d)\n", prop.major, prop.minor); return 1; }

  size_t offset = 0;
  std::string cfg_json;
  for (int ci = 0; ci < N_CONFIGS; ++ci) {
    const Config& cf = CONFIGS[ci];
    size_t na = (size_t)cf.m * cf.k, nb = (size_t)cf.k * cf.n, nc = (size_t)cf.m * cf.n;
    std::vector<Section> secs;
    auto emit = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
      fwrite(bytes.data(), 1, bytes.size(), bin);
      secs.push_back({name, offset, bytes.size()});
      offset += bytes.size();
    };
    // random tiles: inputs from gen_random_bits, checksum sum_i bits_i * (2 i + 1) mod 2^64 over the
    // per-tile concatenation A, B, C (row-major each), tile by tile
    Tiles R; R.n = N_RANDOM;
    R.a.resize(N_RANDOM * na); R.b.resize(N_RANDOM * nb); R.c.resize(N_RANDOM * nc);
    uint64_t checksum = 0, idx = 0;
    for (int t = 0; t < N_RANDOM; ++t) {
      for (size_t i = 0; i < na; ++i) { uint32_t v = gen_random_bits(ci, t, 0, (int)i, cf.ab); R.a[t * na + i] = v; checksum += (uint64_t)v * (2 * idx++ + 1); }
      for (size_t i = 0; i < nb; ++i) { uint32_t v = gen_random_bits(ci, t, 1, (int)i, cf.ab); R.b[t * nb + i] = v; checksum += (uint64_t)v * (2 * idx++ + 1); }
      for (size_t i = 0; i < nc; ++i) { uint32_t v = gen_random_bits(ci, t, 2, (int)i, cf.cd); R.c[t * nc + i] = v; checksum += (uint64_t)v * (2 * idx++ + 1); }
    }
    run(cf, R);
    emit("random_d", pack(R.d, cf.cd));
    // hard tiles
    Tiles H; H.n = N_HARD;
    H.a.resize(N_HARD * na); H.b.resize(N_HARD * nb); H.c.resize(N_HARD * nc);
    std::vector<uint8_t> cats(N_HARD);
    Rng rng(SEED ^ (0x1000ull + ci));
    for (int t = 0; t < N_HARD; ++t) {
      cats[t] = (uint8_t)(t / HARD_PER_CATEGORY);
      hard_tile(cf, cats[t], rng, &H.a[t * na], &H.b[t * nb], &H.c[t * nc]);
    }
    run(cf, H);
    emit("hard_a", pack(H.a, cf.ab)); emit("hard_b", pack(H.b, cf.ab));
    emit("hard_c", pack(H.c, cf.cd)); emit("hard_d", pack(H.d, cf.cd));
    emit("hard_category", cats);

    char buf[1024];
    snprintf(buf, sizeof buf,
             "%s    {\"name\": \"%s\", \"id\": %d, \"api\": \"%s\", \"instruction\": \"%s\",\n"
             "     \"shape\": \"m%dn%dk%d\", \"m\": %d, \"n\": %d, \"k\": %d,\n"
             "     \"a_type\": \"%s\", \"b_type\": \"%s\", \"c_type\": \"%s\", \"d_type\": \"%s\",\n"
             "     \"ab_bytes\": %d, \"cd_bytes\": %d, \"n_random\": %d, \"n_hard\": %d,\n"
             "     \"random_checksum\": \"0x%016llx\",\n     \"sections\": {",
             ci ? ",\n" : "", cf.name, ci, cf.api, cf.instruction, cf.m, cf.n, cf.k, cf.m, cf.n, cf.k,
             FMT_NAME[cf.ab], FMT_NAME[cf.ab], FMT_NAME[cf.cd], FMT_NAME[cf.cd], nbytes(cf.ab),
             nbytes(cf.cd), N_RANDOM, N_HARD, (unsigned long long)checksum);
    cfg_json += buf;
    for (size_t s = 0; s < secs.size(); ++s) {
      snprintf(buf, sizeof buf, "%s\"%s\": [%zu, %zu]", s ? ", " : "", secs[s].name.c_str(), secs[s].offset, secs[s].bytes);
      cfg_json += buf;
    }
    cfg_json += "}}";
    fprintf(stderr, "%s: %d random + %d hard tiles\n", cf.name, N_RANDOM, N_HARD);
  }
  fclose(bin);

  FILE* js = fopen(json_path.c_str(), "w");
  if (!js) { fprintf(stderr, "cannot write %s\n", json_path.c_str()); return 1; }
  fprintf(js, "{\n  \"format\": \"jaxsimt-mma-truth\", \"version\": 1,\n");
  fprintf(js, "  \"binary\": \"mma_truth.bin\", \"binary_bytes\": %zu, \"byte_order\": \"little\",\n", offset);
  fprintf(js, "  \"record_layout\": \"each section is an array of tiles, row-major in a tile: A [m][k], B [k][n], "
              "C and D [m][n]; elements are bit patterns, uint16 for f16/bf16, uint32 for f32 and tf32 (f32 container); "
              "hard_category is one uint8 per hard tile\",\n");
  fprintf(js, "  \"random_inputs\": {\"generator\": \"gen_random_bits in kernels/cuda/mma_truth.cu\", "
              "\"seed\": \"0x%016llx\", \"golden\": \"0x%016llx\", \"checksum\": \"sum of bits * (2 i + 1) mod 2^64 over A, B, C of each tile in turn\"},\n",
          (unsigned long long)SEED, (unsigned long long)GOLDEN);
  fprintf(js, "  \"hard_categories\": [");
  for (int i = 0; i < N_CATEGORIES; ++i) fprintf(js, "%s\"%s\"", i ? ", " : "", CATEGORY_NAMES[i]);
  fprintf(js, "],\n");
  fprintf(js, "  \"device\": {\"name\": \"%s\", \"compute_capability\": [%d, %d], \"driver_version\": %d, "
              "\"runtime_version\": %d, \"nvcc_version\": \"%d.%d.%d\", \"sm_count\": %d},\n",
          prop.name, prop.major, prop.minor, drv, rt, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__,
          __CUDACC_VER_BUILD__, prop.multiProcessorCount);
  fprintf(js, "  \"configs\": [\n%s\n  ]\n}\n", cfg_json.c_str());
  fclose(js);
  fprintf(stderr, "wrote %s (%zu bytes) and %s\n", bin_path.c_str(), offset, json_path.c_str());
  return 0;
}
