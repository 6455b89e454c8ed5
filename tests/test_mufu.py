"""The special function unit (jaxsimt.units.mufu) against the H200: `ex2`, `lg2`, `rsqrt`, `rcp`, `sqrt`, `sin`, `cos`
(.approx, with and without .ftz), `tanh` and `div.approx` / `div.full`, bit for bit on a sample of the hardware's own results
(tests/data/mufu/h200_sample.npz: random bit patterns, denormals, the ranges where ptxas scales, specials), directly
and through a PTX kernel. On the H200, the model equals the hardware on all 2^32 inputs of every unary form
(jaxsimt/data/h200/mufu/check_report.json).

Every sample must be equal, denormal operands and results of the forms without .ftz included, on every backend
(XLA:CPU flushes float32 denormals in its own arithmetic; the model's scaling steps go through `fp32`)."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsimt import ptx
from jaxsimt.units import isa, mufu

SAMPLE = np.load(os.path.join(os.path.dirname(__file__), "data", "mufu", "h200_sample.npz"))
UNARY = [(fn, ftz) for fn in ("ex2", "lg2", "rsqrt", "rcp", "sqrt", "sin", "cos") for ftz in (True, False)] + [
    ("tanh", False)]
DIVS = [(full, ftz) for full in (False, True) for ftz in (True, False)]


def _name(fn, ftz):
    return f"{fn}.approx{'.ftz' if ftz else ''}.f32"


def _denormal(u):
    return ((u >> 23) & 0xFF == 0) & (u & 0x7FFFFF != 0)


def test_sample_holds_denormal_operands_and_results():
    """The forms without .ftz are checked where the H200 keeps denormals: results of ex2, rcp and the
    divisions, operands of every form."""
    for form, least in (("ex2.approx.f32", 100), ("rcp.approx.f32", 10), ("div.approx.f32", 100),
                        ("div.full.f32", 100), ("x", 1000), ("a", 5), ("b", 5)):
        assert np.count_nonzero(_denormal(SAMPLE[form])) >= least, form


@pytest.fixture(scope="module")
def tables():
    return mufu.tables_for(mufu.UNIT)


def _check(got, want):
    """Equal bits on every sample."""
    bad = got != want
    assert not np.any(bad), [(hex(g), hex(w)) for g, w in zip(got[bad][:5], want[bad][:5])]


@pytest.mark.parametrize("fn,ftz", UNARY)
def test_unary_forms_equal_the_h200(fn, ftz, tables):
    x = SAMPLE["x"].view(np.float32)
    with jax.enable_x64(True):  # as the machine runs: fp32's exact steps are f64
        got = np.asarray(jax.jit(lambda v: jax.lax.bitcast_convert_type(mufu.approx(fn, v, tables, ftz),
                                                                        jnp.uint32))(x))
    want = SAMPLE[_name(fn, ftz)]
    _check(got, want)


@pytest.mark.parametrize("full,ftz", DIVS)
def test_divisions_equal_the_h200(full, ftz, tables):
    a, b = SAMPLE["a"].view(np.float32), SAMPLE["b"].view(np.float32)
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(lambda p, q: jax.lax.bitcast_convert_type(mufu.div(p, q, tables, full, ftz),
                                                                            jnp.uint32))(a, b))
    form = f"div.{'full' if full else 'approx'}{'.ftz' if ftz else ''}.f32"
    _check(got, SAMPLE[form])


def test_tables_hold_what_their_names_say():
    one = np.uint32(0x3F800000)
    assert mufu.table("rcp")[0] == one and mufu.table("rsqrt")[0] == one and mufu.table("ex2_pos")[0] == one
    assert mufu.table("ex2_neg")[0] == one and mufu.table("lg2_pos")[0] == 0
    assert mufu.table("sqrt")[0] == one and mufu.table("cos")[0] == one and mufu.table("sin")[0] == 0
    for name, n in (("rcp", 1 << 23), ("rsqrt", 1 << 24), ("ex2_pos", 1 << 23), ("lg2_neg", 1 << 23),
                    ("sqrt", 1 << 24), ("sin", 1 << 25)):
        assert mufu.table(name).size == n
    f = {n: mufu.table(n).view(np.float32) for n in ("rcp", "ex2_pos", "ex2_neg", "lg2_pos", "lg2_neg")}
    x = 1 + np.arange(1 << 23) / 2 ** 23
    # within the unit's documented accuracy (PTX ISA: ex2/lg2 ~2^-22 relative/absolute, rcp ~1 ulp)
    assert np.max(np.abs(f["rcp"] * x - 1)) < 2 ** -22
    assert np.max(np.abs(f["ex2_pos"] / np.exp2(x - 1) - 1)) < 2 ** -21
    assert np.max(np.abs(f["ex2_neg"] / np.exp2(1 - x) - 1)) < 2 ** -21
    assert np.max(np.abs(f["lg2_pos"] - np.log2(x))) < 2 ** -21
    assert np.max(np.abs(f["lg2_neg"] - np.log2(x / 2))) < 2 ** -21
    assert np.max(np.abs(mufu.table("sqrt")[: 1 << 23].view(np.float32) / np.sqrt(x) - 1)) < 2 ** -22
    assert mufu.table("tanh").size == mufu._TANH_AT[-1]
    for k, (e, b) in enumerate(zip(mufu.TANH_BINADES, mufu.TANH_BITS)):  # PTX ISA: relative error ~2^-11
        x = (2.0 ** (e - 127)) * (1 + np.arange(1 << b) / 2 ** b)
        got = mufu.table("tanh")[mufu._TANH_AT[k]:mufu._TANH_AT[k + 1]].view(np.float32)
        assert np.max(np.abs(got / np.tanh(x) - 1)) < 2 ** -10.5
    turns = np.arange(1 << 25) / 2 ** 25
    for fn in ("sin", "cos"):  # PTX ISA: absolute error ~2^-20.9; entries no input reaches repeat the one below
        assert np.max(np.abs(mufu.table(fn).view(np.float32) - getattr(np, fn)(2 * np.pi * turns))) < 2 ** -20


DIV_FORMS = [f"div.{'full' if full else 'approx'}{'.ftz' if ftz else ''}.f32" for full, ftz in DIVS]
FORMS = [_name(fn, ftz) for fn, ftz in UNARY] + DIV_FORMS  # the PTX kernel's results, in order


# one thread: x, a, b loaded into %f1..%f3; result k of FORMS into %f(10 + k) and y[i * len(FORMS) + k]
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry unit(.param .u64 px, .param .u64 pa, .param .u64 pb, .param .u64 py, .param .u32 pn)
{
    .reg .pred %p<2>;
    .reg .f32 %f<NREGS>;
    .reg .b64 %rd<10>;
    .reg .b32 %r<6>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [pa];
    ld.param.u64 %rd3, [pb];
    ld.param.u64 %rd4, [py];
    ld.param.u32 %r2, [pn];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r1, %r1, %r3, %r4;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    cvta.to.global.u64 %rd4, %rd4;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.f32 %f1, [%rd6];
    add.s64 %rd6, %rd2, %rd5;
    ld.global.f32 %f2, [%rd6];
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f3, [%rd6];
    mul.wide.u32 %rd5, %r1, STRIDE;
    add.s64 %rd7, %rd4, %rd5;
FORMS
DONE:
    ret;
}
""".replace("NREGS", str(10 + len(FORMS))).replace("STRIDE", str(4 * len(FORMS))).replace("FORMS\n", "".join(
    f"    {form} %f{10 + k}, {'%f2, %f3' if form.startswith('div') else '%f1'};\n"
    f"    st.global.f32 [%rd7+{4 * k}], %f{10 + k};\n" for k, form in enumerate(FORMS)))


def _run_kernel(n, **kw):
    """The kernel on the first n samples -> [n, len(FORMS)] uint32 results."""
    args = [SAMPLE[k][:n].view(np.float32) for k in ("x", "a", "b")]
    r = ptx.launch(KERNEL, "unit", n // 128, 128, args + [np.zeros(n * len(FORMS), np.float32), n], **kw)
    return np.asarray(r["py"]).view(np.uint32).reshape(n, len(FORMS))


def test_a_ptx_kernel_runs_on_the_unit():
    """Every form through the PTX front end and the machine (the tables passed as launch data)."""
    n = 2048
    y = _run_kernel(n)
    for k, form in enumerate(FORMS):
        want = SAMPLE[form][:n]
        _check(y[:, k], want)


def test_only_the_approximate_forms_read_tables():
    """rcp.rn stays the ALU's correctly rounded reciprocal (sqrt.rn its root), f64 forms the ALU's; a kernel
    without the unit's forms reads no table."""
    module = ptx.load_module(KERNEL.replace("rcp.approx.ftz.f32", "rcp.rn.f32"))
    from jaxsimt.ptx.lower import lower
    prog = lower(module, "unit")
    assert isa.unit_tables(i for _, i in prog.instructions()) == ("cos", "ex2", "lg2", "rcp", "rsqrt", "sin", "sqrt",
                                                                  "tanh")
    plain = lower(ptx.load_module(KERNEL.split("    ex2.approx.ftz")[0] + "DONE:\n    ret;\n}\n"), "unit")
    assert isa.unit_tables(i for _, i in plain.instructions()) == ()
    rn = [i for _, i in prog.instructions() if i.op == "rcp"]
    assert len(rn) == 2 and sorted(bool(i.attr("approx")) for i in rn) == [False, True]


def test_the_dsl_functions_run_on_the_unit():
    """The DSL's exp2, log2, rsqrt, sin and cos on f32 are PTX's .approx.f32 forms (without .ftz): the unit."""
    import jaxsimt as js
    from jaxsimt import Ptr, f32

    @js.kernel
    def funcs(x: Ptr[f32], y: Ptr[f32]):
        i = js.global_thread_index()
        v = x[i]
        y[5 * i] = js.exp2(v)
        y[5 * i + 1] = js.log2(v)
        y[5 * i + 2] = js.rsqrt(v)
        y[5 * i + 3] = js.sin(v)
        y[5 * i + 4] = js.cos(v)

    n = 1024
    x = SAMPLE["x"][:n].view(np.float32)
    y = np.asarray(js.launch(funcs, n // 128, 128, (x, np.zeros(5 * n, np.float32)))["y"]).view(np.uint32)
    for k, fn in enumerate(("ex2", "lg2", "rsqrt", "sin", "cos")):
        want = SAMPLE[_name(fn, False)][:n]
        _check(y[k::5], want)


def test_an_architecture_without_measured_tables_computes_with_xla():
    """`Arch.sfu_tables` names the measured tables; without them (G80, Fermi, or any config that clears it) the
    .approx functions are XLA's, and the H200's differ from those on some inputs."""
    from jaxsimt.arch import H200

    assert H200.sfu_tables and mufu.for_arch(H200.replace(sfu_tables=""), ["ex2"]) is None
    n, k = 2048, FORMS.index("ex2.approx.f32")
    y = _run_kernel(n, arch=H200.replace(sfu_tables="")).view(np.float32)
    x = SAMPLE["x"][:n].view(np.float32)
    with np.errstate(all="ignore"):
        ok = np.isfinite(x) & (np.abs(x) < 100)
        assert np.array_equal(y[ok, k], np.asarray(jnp.exp2(x[ok])))  # as XLA's exp2
    assert np.any(_run_kernel(n).view(np.float32)[ok, k] != y[ok, k])
