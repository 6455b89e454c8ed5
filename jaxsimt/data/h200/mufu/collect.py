"""Measure the special function unit's tables on an NVIDIA GPU and check `jaxsimt.units.mufu` against it.

    python jaxsimt/data/h200/mufu/collect.py OUT_DIR     # needs CuPy and JAX with CUDA; about a minute on an H200

Writes OUT_DIR/<table>.zlib and OUT_DIR/index.json (the format `mufu.table` reads) and OUT_DIR/check_report.json:
for every unary form (ex2, lg2, rsqrt, rcp, sqrt; .approx with and without .ftz), how many of the 2^32 float32
inputs the model computes differently from the GPU (JAX on the same GPU, whose float arithmetic keeps
denormals), and the same for the four divisions on five sets of 2^24 operand pairs.
"""
import json
import os
import sys
import zlib

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import cupy as cp  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

UNARY = ["ex2.approx.ftz.f32", "lg2.approx.ftz.f32", "rsqrt.approx.ftz.f32", "rcp.approx.ftz.f32",
         "ex2.approx.f32", "lg2.approx.f32", "rsqrt.approx.f32", "rcp.approx.f32",
         "sqrt.approx.ftz.f32", "sqrt.approx.f32", "sin.approx.ftz.f32", "sin.approx.f32", "cos.approx.ftz.f32",
         "cos.approx.f32", "tanh.approx.f32"]
BINARY = ["div.approx.ftz.f32", "div.approx.f32", "div.full.ftz.f32", "div.full.f32"]
SOURCE = r'''
__device__ float un(int op, float a) { float r = 0.f; switch (op) { %s } return r; }
__device__ float bi(int op, float a, float b) { float r = 0.f; switch (op) { %s } return r; }
extern "C" __global__ void sweep(unsigned start, unsigned n, int op, float* out) {
  unsigned i = blockIdx.x * (unsigned)blockDim.x + threadIdx.x; if (i < n) out[i] = un(op, __uint_as_float(start + i)); }
extern "C" __global__ void onarr(const float* x, unsigned n, int op, float* out) {
  unsigned i = blockIdx.x * (unsigned)blockDim.x + threadIdx.x; if (i < n) out[i] = un(op, x[i]); }
extern "C" __global__ void onpair(const float* x, const float* y, unsigned n, int op, float* out) {
  unsigned i = blockIdx.x * (unsigned)blockDim.x + threadIdx.x; if (i < n) out[i] = bi(op, x[i], y[i]); }
''' % ("".join(f'case {i}: asm("{o} %0, %1;" : "=f"(r) : "f"(a)); break;\n' for i, o in enumerate(UNARY)),
       "".join(f'case {i}: asm("{o} %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); break;\n' for i, o in enumerate(BINARY)))
THREADS = 256


def main(out):
    os.makedirs(out, exist_ok=True)
    mod = cp.RawModule(code=SOURCE)
    sweep, onarr, onpair = (mod.get_function(n) for n in ("sweep", "onarr", "onpair"))

    def grid(n):
        return ((n + THREADS - 1) // THREADS,), (THREADS,)

    def hw_range(op, start, n):
        o = cp.empty(n, cp.float32)
        sweep(*grid(n), (np.uint32(start), np.uint32(n), np.int32(op), o))
        return o

    def hw(op, x):
        x = cp.ascontiguousarray(x, cp.float32)
        o = cp.empty_like(x)
        onarr(*grid(x.size), (x, np.uint32(x.size), np.int32(op), o))
        return o

    def hw2(op, x, y):
        x, y = (cp.ascontiguousarray(v, cp.float32) for v in (x, y))
        o = cp.empty_like(x)
        onpair(*grid(x.size), (x, y, np.uint32(x.size), np.int32(op), o))
        return o

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))))
    from jaxsimt.units import mufu
    index = {}

    def save(name, values):
        bits = cp.asnumpy(values.view(cp.uint32)).astype(np.int64)
        steps = (np.diff(bits) + 2 ** 31) % 2 ** 32 - 2 ** 31  # modulo 2^32, as the decoder sums
        dtype = next(d for d in (np.int8, np.int16, np.int32) if np.all(steps == steps.astype(d)))
        with open(os.path.join(out, name + ".zlib"), "wb") as f:
            f.write(zlib.compress(bits[:1].astype(np.int32).tobytes() + steps.astype(dtype).tobytes(), 9))
        index[name] = {"n": int(bits.size), "dtype": np.dtype(dtype).name}

    j = cp.arange(1 << 23, dtype=cp.float64) / 2.0 ** 23
    save("ex2_pos", hw(0, j.astype(cp.float32)))
    save("ex2_neg", hw(0, (-j).astype(cp.float32)))
    save("lg2_pos", hw_range(1, 0x3F800000, 1 << 23))
    save("lg2_neg", hw_range(1, 0x3F000000, 1 << 23))
    save("rsqrt", hw_range(2, 0x3F800000, 1 << 24))
    save("rcp", hw_range(3, 0x3F800000, 1 << 23))
    save("sqrt", hw_range(8, 0x3F800000, 1 << 24))
    # sin and cos: what every input gives, at the fraction of a turn the unit reads (`mufu._turns`), with
    # t's sign taken out of sin (odd); indices no input reaches repeat the entry below them
    turns = cp.ElementwiseKernel("uint32 u", "uint32 q, uint32 s", r'''
      float t = __fmul_rz(__uint_as_float(u), __uint_as_float(0x3E22F983u));
      unsigned b = __float_as_uint(t), e = (b >> 23) & 255, mt = (b & 0x7FFFFF) | 0x800000;
      int sh = (int)e - 125;
      unsigned v = sh >= 32 ? 0u : sh >= 0 ? (mt << sh) : (-sh >= 32 ? 0u : (mt >> -sh));
      q = (e == 0) ? 0u : (v & ((1u << 25) - 1)); s = b & 0x80000000u;''', "turns")
    for op, name in ((UNARY.index("sin.approx.ftz.f32"), "sin"), (UNARY.index("cos.approx.ftz.f32"), "cos")):
        table, seen = cp.zeros(1 << 25, cp.uint32), cp.zeros(1 << 25, cp.bool_)
        for start in range(0, 1 << 32, 1 << 27):
            u = cp.arange(start, start + (1 << 27), dtype=cp.uint64).astype(cp.uint32)
            finite = ((u >> 23) & 255) != 255
            q, sgn = turns(u)
            v = hw_range(op, start, 1 << 27).view(cp.uint32)
            table[q[finite]] = (v ^ sgn)[finite] if name == "sin" else v[finite]
            seen[q[finite]] = True
        below = np.maximum.accumulate(np.where(cp.asnumpy(seen), np.arange(1 << 25), 0))
        save(name, cp.asarray(cp.asnumpy(table)[below]))
    # tanh: each binade between 2^-8 and 8 at its top TANH_BITS mantissa bits, on which alone it depends (checked
    # below on every input)
    op = UNARY.index("tanh.approx.f32")
    save("tanh", cp.concatenate([hw(op, ((cp.uint32(e) << 23) | (cp.arange(1 << b, dtype=cp.uint32) << (23 - b))
                                          ).view(cp.float32)) for e, b in zip(mufu.TANH_BINADES, mufu.TANH_BITS)]))
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)

    tab = mufu.tables_for(list(mufu.UNIT), folder=out)
    report, chunk = {}, 1 << 27
    for op, name in enumerate(UNARY):
        fn, ftz = name.split(".")[0], ".ftz" in name
        model = jax.jit(lambda s, fn=fn, ftz=ftz: jax.lax.bitcast_convert_type(mufu.approx(
            fn, jax.lax.bitcast_convert_type(s + jnp.arange(chunk, dtype=jnp.uint32), jnp.float32), tab, ftz),
            jnp.uint32))
        differ, examples = 0, []
        for start in range(0, 1 << 32, chunk):
            h = hw_range(op, start, chunk).view(cp.uint32)
            bad = cp.from_dlpack(model(jnp.uint32(start))) != h
            differ += int(bad.sum())
            examples += [hex(start + int(i)) for i in cp.nonzero(bad)[0][:4 - len(examples)]]
        report[name] = {"inputs": 1 << 32, "differ": differ, "examples": examples}
        print(name, report[name], flush=True)
    rng = np.random.default_rng(7)
    n = 1 << 24

    def bits(k):
        return rng.integers(0, 2 ** 32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)

    def denormals(k):
        return (rng.integers(1, 1 << 23, k, dtype=np.uint64) | (rng.integers(0, 2, k, dtype=np.uint64) << 31)
                ).astype(np.uint32).view(np.float32)

    uniform = lambda k: rng.uniform(-1e3, 1e3, k).astype(np.float32)  # noqa: E731
    pairs = {"bits": (bits(n), bits(n)), "uniform": (uniform(n), uniform(n)),
             "big_b": (uniform(n), (2.0 ** rng.integers(118, 128, n) * rng.uniform(1, 2, n)).astype(np.float32)),
             "tiny_b": (bits(n), denormals(n)), "tiny_a": (denormals(n), rng.uniform(1e-3, 1e3, n).astype(np.float32))}
    for op, name in enumerate(BINARY):
        full, ftz = ".full" in name, ".ftz" in name
        model = jax.jit(lambda a, b, full=full, ftz=ftz: jax.lax.bitcast_convert_type(
            mufu.div(a, b, tab, full, ftz), jnp.uint32))
        for kind, (a, b) in pairs.items():
            h = hw2(op, cp.asarray(a), cp.asarray(b)).view(cp.uint32)
            differ = int((cp.from_dlpack(model(jnp.asarray(a), jnp.asarray(b))) != h).sum())
            report[f"{name} {kind}"] = {"pairs": n, "differ": differ}
            print(name, kind, differ, flush=True)
    report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(os.path.join(out, "check_report.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
