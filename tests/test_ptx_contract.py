"""ptxas-style contraction: a plain PTX `mul` whose result only a later plain `add`/`sub` reads runs as
one fma (one rounding), as the H200's SASS shows; `.rn` forms, a product also stored, `contract=False` and
the DSL's mul then add keep two roundings (the whole rule against ptxas: test_ptx_contract_rule.py)."""
from fractions import Fraction

import numpy as np

import jaxsimt as js
import jaxsimt.ptx as P
from jaxsimt import Ptr, f32

N = 256

_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 py)
{{
    .reg .{t} %f<20>;
    .reg .b64 %rd<12>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [py];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, {s};
    add.s64 %rd6, %rd1, %rd5;
    add.s64 %rd7, %rd2, %rd5;
    add.s64 %rd8, %rd3, %rd5;
    ld.global.{t} %f1, [%rd6];
    ld.global.{t} %f2, [%rd7];
    ld.global.{t} %f3, [%rd8];
    mul.wide.u32 %rd9, %r1, {s6};
    add.s64 %rd10, %rd4, %rd9;
    mul.{t} %f4, %f1, %f2;
    add.{t} %f5, %f3, %f4;
    st.global.{t} [%rd10], %f5;
    mul.{t} %f6, %f1, %f2;
    sub.{t} %f7, %f6, %f3;
    st.global.{t} [%rd10+{s1}], %f7;
    mul.{t} %f8, %f1, %f2;
    sub.{t} %f9, %f3, %f8;
    st.global.{t} [%rd10+{s2}], %f9;
    mul.rn.{t} %f10, %f1, %f2;
    add.{t} %f11, %f10, %f3;
    st.global.{t} [%rd10+{s3}], %f11;
    mul.{t} %f12, %f1, %f2;
    add.rn.{t} %f13, %f12, %f3;
    st.global.{t} [%rd10+{s4}], %f13;
    mul.{t} %f14, %f1, %f2;
    st.global.{t} [%rd10+{s5}], %f14;
    add.{t} %f15, %f14, %f3;
    st.global.{t} [%rd10+{s5}], %f15;
    ret;
}}
"""


def _ptx(t):
    s = 4 if t == "f32" else 8
    return _KERNEL.format(t=t, s=s, s6=6 * s, **{f"s{k}": k * s for k in range(1, 6)})


def _round(q, dtype):
    """Exact rational q to `dtype`, round to nearest even."""
    r = dtype(float(q))
    best = r
    for c in (np.nextafter(r, dtype(-np.inf)), np.nextafter(r, dtype(np.inf))):
        dc, db = abs(Fraction(float(c)) - q), abs(Fraction(float(best)) - q)
        if dc < db or (dc == db and int(np.asarray(c).view(np.uint32 if dtype == np.float32 else np.uint64)) % 2 == 0):
            best = c
    return best


def _case(dtype, seed):
    g = np.random.default_rng(seed)
    a, b, c = (g.uniform(-1, 1, N).astype(dtype) for _ in range(3))
    fa, fb, fc = ([Fraction(float(x)) for x in v] for v in (a, b, c))
    fused = {
        "add": np.array([_round(x * y + z, dtype) for x, y, z in zip(fa, fb, fc)]),
        "sub": np.array([_round(x * y - z, dtype) for x, y, z in zip(fa, fb, fc)]),
        "rsub": np.array([_round(z - x * y, dtype) for x, y, z in zip(fa, fb, fc)]),
    }
    return a, b, c, fused


def _bits(x):
    x = np.ascontiguousarray(x)
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


def _check(dtype, t, seed):
    a, b, c, fused = _case(dtype, seed)
    y = np.zeros(6 * N, dtype)
    out = P.launch(_ptx(t), "k", 1, N, [a, b, c, y])["py"].reshape(N, 6).T
    p = a * b  # numpy: rounded product
    two = [c + p, p - c, c - p]
    np.testing.assert_array_equal(_bits(out[0]), _bits(fused["add"]))
    np.testing.assert_array_equal(_bits(out[1]), _bits(fused["sub"]))
    np.testing.assert_array_equal(_bits(out[2]), _bits(fused["rsub"]))
    assert (_bits(out[0]) != _bits(two[0])).any()  # the inputs do tell one rounding from two
    np.testing.assert_array_equal(_bits(out[3]), _bits(p + c))  # mul.rn: not fused
    np.testing.assert_array_equal(_bits(out[4]), _bits(p + c))  # add.rn: not fused
    np.testing.assert_array_equal(_bits(out[5]), _bits(p + c))  # product also stored: not fused
    off = P.launch(_ptx(t), "k", 1, N, [a, b, c, y], contract=False)["py"].reshape(N, 6).T
    for k in range(3):
        np.testing.assert_array_equal(_bits(off[k]), _bits(two[k]))


def test_ptx_mul_add_contracts_f32():
    _check(np.float32, "f32", 0)


def test_ptx_mul_add_contracts_f64():
    _check(np.float64, "f64", 1)


@js.kernel
def mul_then_add(a: Ptr[f32], b: Ptr[f32], c: Ptr[f32], y: Ptr[f32], z: Ptr[f32]):
    i = js.threadIdx.x
    y[i] = a[i] * b[i] + c[i]
    z[i] = js.fma(a[i], b[i], c[i])


def test_dsl_mul_add_stays_two_roundings_and_fma_one():
    a, b, c, fused = _case(np.float32, 2)
    r = js.launch(mul_then_add, 1, N, (a, b, c, np.zeros(N, np.float32), np.zeros(N, np.float32)))
    np.testing.assert_array_equal(_bits(r["y"]), _bits(a * b + c))
    np.testing.assert_array_equal(_bits(r["z"]), _bits(fused["add"]))


def test_cli_run_no_contract(tmp_path):
    from jaxsimt.cli.run import main
    src = tmp_path / "k.ptx"
    src.write_text(_ptx("f32"))
    outs = {}
    for flag in ([], ["--no-contract"]):
        d = tmp_path / ("off" if flag else "on")
        rc = main(["run", str(src), "--kernel", "k", "--grid", "1", "--block", str(N), "--arg", f"f32[{N}]:rand",
                   "--arg", f"f32[{N}]:rand", "--arg", f"f32[{N}]:rand", "--arg", f"f32[{6 * N}]:zeros",
                   "--no-timing", "--save-outputs", str(d)] + flag)
        assert rc == 0
        a, b, c = (np.load(next(d.glob(f"arg{k}_*.npy"))) for k in range(3))
        outs[bool(flag)] = np.load(next(d.glob("arg3_*.npy"))).reshape(N, 6).T[0]
    fa, fb, fc = ([Fraction(float(x)) for x in v] for v in (a, b, c))
    fused = np.array([_round(x * y + z, np.float32) for x, y, z in zip(fa, fb, fc)])
    np.testing.assert_array_equal(_bits(outs[False]), _bits(fused))
    np.testing.assert_array_equal(_bits(outs[True]), _bits(c + a * b))
