// Warp collectives and wrapping atomics that the suite corpus needs: redux.sync (all six operations),
// match.any/all.sync, __activemask in a divergent branch, warpSize (PTX's WARP_SZ), atomicInc/atomicDec
// on one contended word.
extern "C" __global__ void redux_all(const unsigned int* u, const int* s, unsigned int* out) {
  unsigned int t = threadIdx.x, w = t / 32;
  unsigned int m = __activemask();
  unsigned int x = u[t];
  int y = s[t];
  out[w * 8 + 0] = __reduce_add_sync(m, x);
  out[w * 8 + 1] = __reduce_min_sync(m, x);
  out[w * 8 + 2] = __reduce_max_sync(m, x);
  out[w * 8 + 3] = (unsigned int)__reduce_min_sync(m, y);
  out[w * 8 + 4] = (unsigned int)__reduce_max_sync(m, y);
  out[w * 8 + 5] = __reduce_and_sync(m, x);
  out[w * 8 + 6] = __reduce_or_sync(m, x);
  out[w * 8 + 7] = __reduce_xor_sync(m, x);
}
// Only the lanes with an odd value take part (a divergent branch): the reduction covers those lanes.
extern "C" __global__ void redux_partial(const unsigned int* u, unsigned int* out, unsigned int* mask) {
  unsigned int t = threadIdx.x;
  if (u[t] & 1) {
    unsigned int m = __activemask();
    out[t] = __reduce_add_sync(m, u[t]);
    mask[t] = m;
  }
}
extern "C" __global__ void match_sync(const unsigned int* v, const unsigned long long* v64, unsigned int* any,
                                      unsigned int* all, int* pred, unsigned int* any64) {
  unsigned int t = threadIdx.x;
  any[t] = __match_any_sync(0xffffffffu, v[t]);
  int p;
  all[t] = __match_all_sync(0xffffffffu, v[t], &p);
  pred[t] = p;
  any64[t] = __match_any_sync(0xffffffffu, v64[t]);
}
extern "C" __global__ void warp_size_lanes(unsigned int* out) {
  out[threadIdx.x] = threadIdx.x % warpSize + 100 * warpSize;
}
extern "C" __global__ void inc_dec(unsigned int* words, unsigned int* old_inc) {
  old_inc[blockIdx.x * blockDim.x + threadIdx.x] = atomicInc(&words[0], 5);
  atomicDec(&words[1], 7);
}
// Two products feeding one add / sub (Black-Scholes' S * N(d1) - X e^{-rT} N(d2)): one of them is fused.
extern "C" __global__ void two_products(const float* a, float* o) {
  int i = threadIdx.x;
  float p = a[i] * a[i + 32];
  float q = a[i + 64] * a[i + 96];
  o[i] = p - q;
  o[i + 32] = a[i + 128] * a[i + 160] + a[i + 192] * a[i + 224];
}
