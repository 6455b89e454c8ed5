"""`jaxsimt run` with the arguments real host code passes: one buffer for two parameters (`--arg @K`), a pointer
into an earlier buffer (`--arg @K+N`), module variables filled from the command line (`--const NAME=SPEC`) and
bool arrays (`bool[N]:INIT`); every mistake in them is one error line naming the argument, exit status 2.
Tiny kernels of jaxsimt/kernels/ptx/real_cuda.ptx, run in-process through `jaxsimt.cli.main`."""
import json
import os

import numpy as np
import pytest

import jaxsimt.ptx as P
from jaxsimt import cli
from jaxsimt.cli import run as run_cli

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "..", "jaxsimt", "kernels", "ptx", "real_cuda.ptx")
AXPY = ["run", REAL, "--kernel", "axpy_alias", "--grid", "1", "--block", "64", "--no-timing"]
SHIFT = ["run", REAL, "--kernel", "shift_add", "--grid", "1", "--block", "64", "--no-timing"]
POLY = ["run", REAL, "--kernel", "const_poly", "--grid", "1", "--block", "64", "--no-timing"]
UPDATE = ["run", REAL, "--kernel", "bfs_update", "--grid", "1", "--block", "64", "--no-timing"]


@pytest.fixture(autouse=True)
def _no_compile_cache(monkeypatch):
    # the tests must not turn on JAX's persistent cache for the whole test process
    monkeypatch.setenv("JAXSIMT_NO_COMPILE_CACHE", "1")


def argv(base, *args, consts=(), opts=()):
    out = list(base)
    for a in args:
        out += ["--arg", a]
    for c in consts:
        out += ["--const", c]
    return out + list(opts)


def ok(capsys, argv_):
    got = cli.main(argv_)
    cap = capsys.readouterr()
    assert got == 0, cap.err
    return cap.out


def fails(capsys, argv_, *names):
    got = cli.main(argv_)
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert got == 2, cap.err
    assert len(lines) == 1 and lines[0].startswith("jaxsimt run: error: "), cap.err
    for n in names:
        assert n in lines[0], lines[0]
    return lines[0]


def saved(folder):
    with open(os.path.join(folder, "outputs.json")) as f:
        index = json.load(f)
    return index, {k: np.load(os.path.join(folder, k)) for k in index}


# --------------------------------------------------------------------------------------------- aliases, offsets
def test_alias_is_one_buffer_shown_and_saved_once(tmp_path, capsys):
    """y = a*x; y += x with y the same buffer as x: 2*(a*x), exactly (2x is exact); two buffers would give a*x + x."""
    out = ok(capsys, argv(AXPY, "f32:0.5", "f32[64]:rand", "@1", "s32:64",
                          opts=["--show-outputs", "--save-outputs", str(tmp_path)]))
    x = np.random.default_rng(0).uniform(-1, 1, 64).astype(np.float32)
    index, files = saved(tmp_path)
    assert list(files) == ["arg1_axpy_alias_param_1.npy"]  # one buffer, one file
    assert [(p["arg"], p["offset"]) for p in index["arg1_axpy_alias_param_1.npy"]["pointers"]] == [(1, 0), (2, 0)]
    np.testing.assert_array_equal(files["arg1_axpy_alias_param_1.npy"], 2 * (np.float32(0.5) * x))
    rows = [ln for ln in out.splitlines() if ln.startswith("  arg")]
    assert len(rows) == 1 and "arg1 param_1 = arg2 param_2 (one buffer)" in rows[0], out


def test_offset_pointer_into_an_earlier_buffer(tmp_path, capsys):
    """shift_add(p, q, n): p[i] += q[i] with q = p + 64 elements; the rest of the buffer is untouched."""
    ok(capsys, argv(SHIFT, "f32[160]:rand", "@0+64", "s32:64", opts=["--save-outputs", str(tmp_path)]))
    buf = np.random.default_rng(0).uniform(-1, 1, 160).astype(np.float32)
    want = buf.copy()
    want[:64] += buf[64:128]
    index, files = saved(tmp_path)
    np.testing.assert_array_equal(files["arg0_shift_add_param_0.npy"], want)
    assert [(p["arg"], p["offset"]) for p in index["arg0_shift_add_param_0.npy"]["pointers"]] == [(0, 0), (1, 64)]
    # --json --show-outputs: the buffer once, with both pointers
    out = ok(capsys, argv(SHIFT, "f32[160]:rand", "@0+64", "s32:64", opts=["--show-outputs", "--json"]))
    outputs = json.loads(out)["outputs"]
    assert list(outputs) == ["arg0_shift_add_param_0"]
    assert outputs["arg0_shift_add_param_0"]["pointers"][1] == {"arg": 1, "param": "shift_add_param_1", "offset": 64}


def test_references_resolve_to_the_buffer_of_the_earlier_pointer():
    rng = np.random.default_rng(0)
    la = run_cli.parse_args_checked(["f32[100]:zeros", "s32:3", "@0+10", "@2+5", "@3-15", "@2"], rng)
    buf = la.values[0]
    assert la.pointer_of == {0: (0, 0), 2: (0, 10), 3: (0, 15), 4: (0, 0), 5: (0, 10)}
    assert la.values[4] is buf  # the same array object: one buffer for jaxsimt.ptx.launch
    assert [(v[0] is buf, v[1]) for v in (la.values[2], la.values[3], la.values[5])] == [(True, 10), (True, 15),
                                                                                        (True, 10)]
    assert la.buffers() == {0: [(0, 0), (2, 10), (3, 15), (4, 0), (5, 10)]}
    assert run_cli.parse_args_checked(["f32[8]:zeros", "@0+8"], rng).pointer_of[1] == (0, 8)  # one past the end


@pytest.mark.parametrize("args, names", [
    (("f32:0.5", "f32[64]:rand", "@3", "s32:64"), ("'@3'", "argument 2", "argument 3", "not an earlier")),
    (("f32:0.5", "f32[64]:rand", "@2", "s32:64"), ("'@2'", "argument 2", "not an earlier")),
    (("f32:0.5", "f32[64]:rand", "@17", "s32:64"), ("'@17'", "argument 17")),
    (("@1", "f32[64]:rand", "f32[64]:rand", "s32:64"), ("'@1'", "argument 0", "first argument")),
    (("f32:0.5", "f32[64]:rand", "@0", "s32:64"), ("'@0'", "argument 0", "f32:0.5", "scalar")),
    (("f32:0.5", "f32[64]:rand", "@1+65", "s32:64"), ("'@1+65'", "argument 2", "offset 65", "64")),
    (("f32:0.5", "f32[64]:rand", "@1-1", "s32:64"), ("'@1-1'", "offset -1")),
    (("f32:0.5", "f32[64]:rand", "@x", "s32:64"), ("'@x'", "argument 2", "@K+N")),
    (("f32:0.5", "f32[64]:rand", "@1+", "s32:64"), ("'@1+'", "@K+N")),
    (("f32:0.5", "f32[64]:rand", "@1*2", "s32:64"), ("'@1*2'", "@K+N")),
    (("f32:0.5", "f32[64]:rand", "@1", "@1"), ("'@1'", "argument 3", ".u32")),  # a pointer for int n
    (("f32:0.5", "f32[64]:rand", "f32[64]:rand", "f32[4]:ones"), ("f32[4]:ones", "argument 3", ".u32")),
])
def test_reference_mistakes_name_the_argument(capsys, args, names):
    fails(capsys, argv(AXPY, *args), *names)


# --------------------------------------------------------------------------------------------- --const
def test_const_fills_a_module_variable(tmp_path, capsys):
    """const_poly: y = c0 + x*(c1 + x*(c2 + x*c3)) with the coefficients in __constant__ coef[4]."""
    coef = np.array([0.5, -1.25, 0.75, 0.125], np.float32)
    np.save(tmp_path / "coef.npy", coef)
    x = np.random.default_rng(0).uniform(-1, 1, 64).astype(np.float32)
    want = P.launch(REAL, "const_poly", 1, 64, [x, np.zeros(64, np.float32), np.int32(64)],
                    constants={"coef": coef}, timing=False)["const_poly_param_1"]
    np.testing.assert_allclose(want, coef[0] + x * (coef[1] + x * (coef[2] + x * coef[3])), rtol=1e-5, atol=1e-6)
    for spec in (f"coef={tmp_path / 'coef.npy'}", f"coef=f32[4]:{tmp_path / 'coef.npy'}"):
        out_dir = tmp_path / spec[-8:-4].replace("/", "_")
        ok(capsys, argv(POLY, "f32[64]:rand", "f32[64]:zeros", "s32:64", consts=[spec],
                        opts=["--save-outputs", str(out_dir)]))
        np.testing.assert_array_equal(saved(out_dir)[1]["arg1_const_poly_param_1.npy"], want)
    # two of the four coefficients given: the others keep the module's initial zeros -> y = 1 + 2x
    out_dir = tmp_path / "half"
    ok(capsys, argv(POLY, "f32[64]:rand", "f32[64]:zeros", "s32:64", consts=["coef=f32[2]:ones"],
                    opts=["--save-outputs", str(out_dir)]))
    np.testing.assert_allclose(saved(out_dir)[1]["arg1_const_poly_param_1.npy"], 1 + x, rtol=1e-6)


@pytest.mark.parametrize("consts, names", [
    (["nope=f32[4]:ones"], ("--const 'nope=f32[4]:ones'", "'nope'", "coef (16 bytes)")),
    (["coef=f32[5]:ones"], ("--const 'coef=f32[5]:ones'", "20 bytes", "16")),
    (["coef"], ("--const 'coef'", "NAME=")),
    (["=f32[4]:ones"], ("NAME=",)),
    (["coef=f32[4]:ones", "coef=f32[4]:zeros"], ("'coef=f32[4]:zeros'", "twice")),
    (["coef=@0"], ("'coef=@0'", "not @K")),
    (["coef=f32[4]:sometimes"], ("'coef=f32[4]:sometimes'", "sometimes")),
    (["coef=f32[4]:missing.npy"], ("'coef=f32[4]:missing.npy'", "missing.npy")),
])
def test_const_mistakes_name_the_option(capsys, consts, names):
    fails(capsys, argv(POLY, "f32[64]:rand", "f32[64]:zeros", "s32:64", consts=consts), *names)


# --------------------------------------------------------------------------------------------- bool arrays
def test_bool_arrays(tmp_path, capsys):
    """bfs_update(frontier, updating, visited, not_done, n): where updating[v], frontier[v] = visited[v] = true,
    *not_done = true, updating[v] = false."""
    ok(capsys, argv(UPDATE, "bool[64]:zeros", "bool[64]:rand", "bool[64]:ones", "bool[1]:zeros", "s32:64",
                    opts=["--save-outputs", str(tmp_path), "--show-outputs"]))
    upd = np.random.default_rng(0).integers(0, 2, 64).astype(np.bool_)  # rand: 0 or 1 from --seed
    assert 16 < upd.sum() < 48
    files = saved(tmp_path)[1]
    assert all(v.dtype == np.bool_ for v in files.values())
    np.testing.assert_array_equal(files["arg0_bfs_update_param_0.npy"], upd)
    np.testing.assert_array_equal(files["arg1_bfs_update_param_1.npy"], np.zeros(64, np.bool_))
    np.testing.assert_array_equal(files["arg2_bfs_update_param_2.npy"], np.ones(64, np.bool_))
    assert files["arg3_bfs_update_param_3.npy"].tolist() == [True]
    # from a .npy file (nonzero is true, as C++'s conversion to bool), and as a file's own bool dtype
    flags = np.arange(64) % 5 == 0
    np.save(tmp_path / "u8.npy", (flags * 7).astype(np.uint8))
    np.save(tmp_path / "b.npy", flags)
    for spec in (f"bool[64]:{tmp_path / 'u8.npy'}", str(tmp_path / "b.npy")):
        out_dir = tmp_path / ("o" + spec[-6:-4])
        ok(capsys, argv(UPDATE, "bool[64]:zeros", spec, "bool[64]:zeros", "bool[1]:zeros", "s32:64",
                        opts=["--save-outputs", str(out_dir)]))
        np.testing.assert_array_equal(saved(out_dir)[1]["arg2_bfs_update_param_2.npy"], flags)


def test_bool_mistakes_and_help(capsys):
    base = ["bool[64]:zeros", "bool[64]:zeros", "bool[64]:zeros", "bool[1]:zeros", "s32:64"]
    for bad, names in (("bool[64]:arange", ("bool[64]:arange", "arange")), ("bool:1", ("'bool:1'", "u8:1")),
                       ("bool[x]:rand", ("bool[x]:rand",)), ("bool[64]:half", ("half", "rand, zeros, ones"))):
        fails(capsys, argv(UPDATE, bad, *base[1:]), *names)
    assert cli.main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for s in ("bool[N]:INIT", "0 or 1, each with probability 1/2", "@K", "@K+N", "--const NAME=SPEC",
              "cudaMemcpyToSymbol", "outputs.json"):
        assert s in text, s
    assert run_cli._arg_hint(None, "bool*") == "bool[N]:rand"  # --list's hint for a C++ bool* parameter
    assert run_cli._arg_hint(None, "bool") == "u8:VALUE"


def test_const_of_a_global_variable_is_shown_and_saved(tmp_path, capsys):
    """A scalar `.global` variable filled by --const NAME=TYPE:VALUE; its final contents come back as global_NAME."""
    from test_ptx_launch_args import _CONST  # poly(py): py[i] = coef[i % 4], py[32 + i] = counter

    path = tmp_path / "poly.ptx"
    path.write_text(_CONST)
    out = ok(capsys, ["run", str(path), "--grid", "1", "--block", "32", "--no-timing", "--arg", "f32[64]:zeros",
                      "--const", "counter=u32:7", "--const", "coef=f32[4]:arange", "--show-outputs",
                      "--save-outputs", str(tmp_path / "o")])
    index, files = saved(tmp_path / "o")
    assert sorted(index) == ["arg0_py.npy", "global_counter.npy"]
    np.testing.assert_array_equal(files["arg0_py.npy"][:32], np.tile(np.arange(4, dtype=np.float32), 8))
    np.testing.assert_array_equal(files["arg0_py.npy"][32:].view(np.uint32), np.full(32, 7))
    assert files["global_counter.npy"].view(np.uint32).tolist() == [7]
    assert any(ln.strip().startswith("counter:") for ln in out.splitlines()), out
