"""Misuses of `launch`, `launch_batch`, `sweep` and `jaxsimt.ptx.launch`: each is refused before anything is
compiled, with a jaxsimt error naming the bad argument; XLA's failures while running come back as jaxsimt
errors saying what the launch asked for."""
import importlib

import jax
import numpy as np
import pytest

import jaxsimt as js
import jaxsimt.ptx as P
from jaxsimt.run.batch import LaunchSpec
from jaxsimt.errors import ArgumentError, LaunchConfigError, LaunchResourceError
from jaxsimt.kernels.seeds import saxpy

launch_mod = importlib.import_module("jaxsimt.run.launch")  # the module, not the function of that name

N = 64
X = np.ones(N, np.float32)
Y = np.zeros(N, np.float32)
OK = (N, np.float32(2), X, Y)

PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry saxpy(.param .u32 n, .param .f32 a, .param .u64 px, .param .u64 py)
{
    .reg .pred %p<2>;
    .reg .f32 %f<5>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u32 %r1, [n];
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd5];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd5], %f4;
DONE:
    ret;
}
"""


@pytest.fixture(autouse=True)
def _nothing_compiles(monkeypatch, request):
    """Every misuse is refused before a machine is built (the test_valid_* cases run)."""
    if request.node.name.startswith("test_valid"):
        return
    def refuse(*a, **k):
        raise AssertionError("a machine was built for a launch that should have been refused")
    monkeypatch.setattr(launch_mod, "_machine", refuse)


def _args(**over):
    names = ("n", "a", "x", "y")
    return tuple(over.get(k, v) for k, v in zip(names, OK))


LAUNCH_MISUSES = [
    # (grid, block, args, options, error type, words the message must hold)
    (2.5, 32, OK, {}, LaunchConfigError, ["grid", "2.5"]),
    (1, (16.0, 16), OK, {}, LaunchConfigError, ["block", "16.0"]),
    (None, 32, OK, {}, LaunchConfigError, ["grid", "None"]),
    (0, 32, OK, {}, LaunchConfigError, ["grid", "below 1"]),
    (1, -32, OK, {}, LaunchConfigError, ["block", "-32"]),
    ((1, 1, 1, 1), 32, OK, {}, LaunchConfigError, ["grid", "4 dimensions"]),
    (1, True, OK, {}, LaunchConfigError, ["block", "True"]),
    (1, 2048, OK, {}, LaunchConfigError, ["2048 threads per block", "1024"]),
    (1, (1, 1, 128), OK, {}, LaunchConfigError, ["block dimension z=128"]),
    ((1, 70000), 32, OK, {}, LaunchConfigError, ["grid dimension y=70000", "65535"]),
    (1, 32, _args(n="64"), {}, ArgumentError, ["'n'", "position 0", "s32", "str"]),
    (1, 32, _args(n=None), {}, ArgumentError, ["'n'", "position 0", "None"]),
    (1, 32, _args(n=64.7), {}, ArgumentError, ["'n'", "integer", "64.7"]),
    (1, 32, _args(n=64.0), {}, ArgumentError, ["'n'", "integer", "64.0"]),
    (1, 32, _args(n=True), {}, ArgumentError, ["'n'", "bool"]),
    (1, 32, _args(n=2**40), {}, ArgumentError, ["'n'", "1099511627776", "2147483647"]),
    (1, 32, _args(n=np.int64(-2**31 - 1)), {}, ArgumentError, ["'n'", "-2147483649"]),
    (1, 32, _args(n=np.arange(3)), {}, ArgumentError, ["'n'", "shape (3,)"]),
    (1, 32, _args(a="2"), {}, ArgumentError, ["'a'", "position 1", "f32"]),
    (1, 32, _args(a=1e39), {}, ArgumentError, ["'a'", "1e+39", "inf"]),
    (1, 32, _args(x=X.astype(np.float64)), {}, ArgumentError, ["'x'", "position 2", "float32", "float64"]),
    (1, 32, _args(x=X.astype(np.int32)), {}, ArgumentError, ["'x'", "float32", "int32"]),
    (1, 32, _args(x=[1.0] * N), {}, ArgumentError, ["'x'", "float64"]),
    (1, 32, _args(x=1.0), {}, ArgumentError, ["'x'", "Ptr[f32]", "1.0"]),
    (1, 32, _args(x=None), {}, ArgumentError, ["'x'", "Ptr[f32]", "None"]),
    (1, 32, _args(y=np.float32(0)), {}, ArgumentError, ["'y'", "position 3", "scalar"]),
    (1, 32, _args(x=np.array([object()] * 4)), {}, ArgumentError, ["'x'", "object"]),
    (1, 32, OK[:3], {}, ArgumentError, ["takes 4 arguments", "missing 'y' (position 3)"]),
    (1, 32, OK + (1,), {}, ArgumentError, ["takes 4 arguments", "extra from position 4"]),
    (1, 32, dict(n=N, a=np.float32(2), x=X), {}, ArgumentError, ["missing", "'y' (position 3)"]),
    (1, 32, dict(n=N, a=np.float32(2), x=X, y=Y, z=Y), {}, ArgumentError, ["no parameter named 'z'"]),
    (1, 32, X, {}, ArgumentError, ["args must be a sequence"]),
    (1, 32, OK, dict(stack_depth=-1), ArgumentError, ["stack_depth", "-1"]),
    (1, 32, OK, dict(stack_depth=0), ArgumentError, ["stack_depth", "0"]),
    (1, 32, OK, dict(stack_depth=2.0), ArgumentError, ["stack_depth", "2.0"]),
    (1, 32, OK, dict(blocks_per_wave=0), ArgumentError, ["blocks_per_wave", "0"]),
    (1, 32, OK, dict(max_steps=-5), LaunchConfigError, ["max_steps", "-5"]),
    (1, 32, OK, dict(mode="simt"), LaunchConfigError, ["mode", "simt"]),
    (1, 32, OK, dict(arch="h300"), LaunchConfigError, ["h300"]),
    # 4 TiB of float32 that never exist: a broadcast view, refused before it is copied
    (1, 32, _args(x=np.broadcast_to(np.float32(1), (1 << 40,))), {}, LaunchConfigError,
     ["kernel saxpy", "array arguments", "TiB", "smaller arrays"]),
]


def _check(exc_info, cls, words):
    assert exc_info.type is cls or issubclass(exc_info.type, cls)
    msg = str(exc_info.value)
    assert "saxpy" in msg or "h300" in msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.mark.parametrize("grid, block, args, opts, cls, words", LAUNCH_MISUSES)
def test_launch_misuse(grid, block, args, opts, cls, words):
    opts = dict(opts)
    arch = opts.pop("arch", "h200")
    with pytest.raises(cls) as e:
        js.launch(saxpy, grid, block, args, arch, **opts)
    _check(e, cls, words)


def test_argument_errors_are_type_errors_too():
    """Code that caught the TypeError of a wrong argument still does."""
    with pytest.raises(TypeError):
        js.launch(saxpy, 1, 32, _args(x=X.astype(np.float64)))
    with pytest.raises(TypeError):
        js.launch(saxpy, 1, 32, OK[:3])


def _batched(**over):
    base = dict(n=N, a=np.float32(2), x=np.stack([X, X]), y=np.stack([Y, Y]))
    base.update(over)
    return tuple(base.values())


AXES = (None, None, 0, 0)
BATCH_MISUSES = [
    (2.5, 32, _batched(), AXES, {}, LaunchConfigError, ["grid", "2.5"]),
    (1, (16.0,), _batched(), AXES, {}, LaunchConfigError, ["block", "16.0"]),
    (1, 32, _batched(n="64"), AXES, {}, ArgumentError, ["'n'", "str"]),
    (1, 32, _batched(n=2**33), AXES, {}, ArgumentError, ["'n'", "8589934592"]),
    (1, 32, _batched(x=np.stack([X, X]).astype(np.float64)), AXES, {}, ArgumentError, ["'x'", "float64"]),
    (1, 32, _batched()[:3], AXES, {}, ArgumentError, ["missing 'y' (position 3)"]),
    (1, 32, _batched(), 0, {}, ArgumentError, ["'n'", "in_axes 0", "no leading batch axis"]),
    (1, 32, _batched(), (None, 0), {}, ArgumentError, ["in_axes"]),
    (1, 32, _batched(), (None, None, 1, 0), {}, ArgumentError, ["in_axes"]),
    (1, 32, _batched(y=np.zeros((3, N), np.float32)), AXES, {}, ArgumentError, ["batch axes differ"]),
    (1, 32, _batched(x=np.zeros((0, N), np.float32), y=np.zeros((0, N), np.float32)), AXES, {},
     ArgumentError, ["empty batch"]),
    (1, 32, _batched(), AXES, dict(stack_depth=-1), ArgumentError, ["stack_depth"]),
    (1, 32, _batched(), AXES, dict(blocks_per_wave=-2), ArgumentError, ["blocks_per_wave"]),
]


@pytest.mark.parametrize("grid, block, args, axes, opts, cls, words", BATCH_MISUSES)
def test_launch_batch_misuse(grid, block, args, axes, opts, cls, words):
    with pytest.raises(cls) as e:
        js.launch_batch(saxpy, grid, block, args, in_axes=axes, **opts)
    _check(e, cls, words)


def test_launch_batch_memory_of_all_items(monkeypatch):
    """The budget holds for the batch's whole memory image, not item by item."""
    import jaxsimt.run.validate_args as V
    monkeypatch.setattr(V, "memory_budget", lambda: 64 * 1024)
    xs = np.zeros((64, 128), np.float32)  # 512 bytes per array and item; 64 KiB for all items
    with pytest.raises(LaunchConfigError, match=r"kernel saxpy: the 64 item\(s\)' arrays"):
        js.launch_batch(saxpy, 1, 32, (128, np.float32(1), xs, xs.copy()), in_axes=AXES)


SWEEP_MISUSES = [
    (LaunchSpec(saxpy, 1, 16.0, OK), LaunchConfigError, ["block", "16.0"]),
    (LaunchSpec(saxpy, 1, 32, _args(n=None)), ArgumentError, ["'n'", "None"]),
    (LaunchSpec(saxpy, 1, 32, _args(y=Y.astype(np.float16))), ArgumentError, ["'y'", "float16"]),
    (LaunchSpec(saxpy, 1, 32, OK[:2]), ArgumentError, ["missing 'x' (position 2), 'y' (position 3)"]),
    (LaunchSpec(saxpy, 1, 32, dict(n=N, a=2.0, x=X)), ArgumentError, ["'y' (position 3)"]),
    (LaunchSpec(saxpy, 1, 32, OK, options=dict(stack_depth=-1)), ArgumentError, ["stack_depth"]),
]


@pytest.mark.parametrize("spec, cls, words", SWEEP_MISUSES)
def test_sweep_misuse(spec, cls, words):
    with pytest.raises(cls) as e:
        js.sweep([LaunchSpec(saxpy, 1, 32, OK), spec], progress=False)
    _check(e, cls, words)


PTX_MISUSES = [
    (2.5, 32, list(OK), {}, LaunchConfigError, ["grid", "2.5"]),
    (1, 0, list(OK), {}, LaunchConfigError, ["block", "below 1"]),
    (1, 32, ["64", np.float32(2), X, Y], {}, ArgumentError, ["'n'", "position 0", "u32", "str"]),
    (1, 32, [None, np.float32(2), X, Y], {}, ArgumentError, ["'n'", "None"]),
    (1, 32, [2**40, np.float32(2), X, Y], {}, ArgumentError, ["'n'", "4294967295"]),
    (1, 32, [-1, np.float32(2), X, Y], {}, ArgumentError, ["'n'", "-1", "[0, 4294967295]"]),
    (1, 32, [64.5, np.float32(2), X, Y], {}, ArgumentError, ["'n'", "integer"]),
    (1, 32, [N, np.ones(3, np.float32), X, Y], {}, ArgumentError, ["'a'", "position 1", ".f32", "not an address"]),
    (1, 32, [N, np.float32(2), X], {}, ArgumentError, ["missing 'py' (position 3)"]),
    (1, 32, [N, np.float32(2), X, Y, Y], {}, ArgumentError, ["extra from position 4"]),
    (1, 32, dict(n=N, a=np.float32(2), x=X, y=Y), {}, ArgumentError, ["no parameter named 'x'", "px"]),
    (1, 32, list(OK), dict(dynamic_smem=4096), ArgumentError, ["dynamic_smem=4096", ".extern .shared"]),
    (1, 32, list(OK), dict(dynamic_smem=-4), ArgumentError, ["dynamic_smem", "-4"]),
    (1, 32, list(OK), dict(stack_depth=-1), ArgumentError, ["stack_depth"]),
]


@pytest.mark.parametrize("grid, block, args, opts, cls, words", PTX_MISUSES)
def test_ptx_launch_misuse(grid, block, args, opts, cls, words):
    with pytest.raises(cls) as e:
        P.launch(PTX, "saxpy", grid, block, args, **opts)
    _check(e, cls, words)


def test_runtime_out_of_memory_is_reported_with_the_launch(monkeypatch):
    """An XLA failure while the waves run comes back as a LaunchResourceError that says what the launch
    asked for and what to change, chaining XLA's error."""
    class _Machine:
        compiles = 0

        def zero_counters(self):
            return ()

        def run_wave(self, *a):
            raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.0TiB")

    monkeypatch.setattr(launch_mod, "_machine", lambda *a, **k: _Machine())
    with pytest.raises(LaunchResourceError) as e:
        js.launch(saxpy, 2, 32, OK, blocks_per_wave=1)
    msg = str(e.value)
    for w in ("kernel saxpy", "out of memory", "2 blocks in 2 wave(s) of 1 blocks x 32 threads",
              "words", "blocks_per_wave=", "smaller arrays", "RESOURCE_EXHAUSTED"):
        assert w in msg, (w, msg)
    assert isinstance(e.value.__cause__, jax.errors.JaxRuntimeError)
    assert isinstance(e.value, LaunchConfigError)


def test_valid_dict_arguments_and_zero_size_arrays():
    """Arguments by name equal arguments by position; a zero-size array is allowed (as cudaMalloc(0)) and any
    access to it faults as out of bounds; a 2D array for a flat pointer is its elements in C order."""
    r1 = js.launch(saxpy, 1, 32, OK)
    r2 = js.launch(saxpy, 1, 32, dict(y=Y, x=X, a=np.float32(2), n=N))
    np.testing.assert_array_equal(r1["y"], r2["y"])
    assert r1.stats == r2.stats
    r3 = js.launch(saxpy, 1, 32, (N, np.float32(2), X.reshape(8, 8), Y.reshape(8, 8)))
    np.testing.assert_array_equal(r3["y"].reshape(-1), r1["y"])
    assert r3["y"].shape == (8, 8)
    js.launch(saxpy, 1, 32, (0, np.float32(2), np.zeros(0, np.float32), np.zeros(0, np.float32)))
    from jaxsimt.errors import MemoryFault
    with pytest.raises(MemoryFault, match="'x'"):
        js.launch(saxpy, 1, 32, (1, np.float32(2), np.zeros(0, np.float32), Y))


def test_valid_launch_options_one_record_for_launch_batch_and_sweep():
    """`jaxsimt.LaunchOptions` holds every option: given as `options=`, as keywords, or both (keywords replace
    fields); an unknown option is named; the same record drives a batch and a sweep."""
    opts = js.LaunchOptions(counters=False, blocks_per_wave=1)
    a = js.launch(saxpy, 2, 32, OK, options=opts)
    b = js.launch(saxpy, 2, 32, OK, counters=False, blocks_per_wave=1)
    assert a.stats == b.stats and np.array_equal(a["y"], b["y"])
    assert opts.replace(mode="its").mode == "its" and opts.mode == "stack"  # frozen: replace makes a new one
    with pytest.raises(ArgumentError, match=r"unknown launch option\(s\) blocks_per_warp; the options are"):
        js.launch(saxpy, 2, 32, OK, blocks_per_warp=1)
    with pytest.raises(LaunchConfigError, match="timing=True predicts one launch"):
        js.launch_batch(saxpy, 2, 32, [np.stack([x] * 2) if isinstance(x, np.ndarray) else x for x in OK],
                        in_axes=[0 if isinstance(x, np.ndarray) else None for x in OK], timing=True)
    (r,) = js.sweep([js.LaunchSpec(saxpy, 2, 32, OK, options=opts)], progress=False)
    assert r.stats == a.stats
