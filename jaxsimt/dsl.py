"""The kernel DSL: a Python function traced once into a `Program`.

    @jaxsimt.kernel
    def saxpy(n: s32, a: f32, x: Ptr[f32], y: Ptr[f32]):
        i = jaxsimt.global_thread_index()
        with jaxsimt.if_(i < n):
            y[i] = a * x[i] + y[i]

Values are per-thread registers; arithmetic on them emits instructions. Python control flow runs once at
trace time (so Python `if`/`for` over constants unroll); data-dependent control flow uses `if_`/`else_`,
`range`, `while_`, `break_` and `return_`, which lower to conditional branches. Values that change inside
a loop must be `var`s (mutated with `.set(...)` or augmented assignment: `acc += x`).
Integer `//` and `%` follow C and PTX (truncation toward zero), since kernels are ported from CUDA.
"""
from __future__ import annotations

import builtins
import contextlib
import contextvars
import functools
import inspect
import os
from typing import Any, Callable, Optional, Sequence

from jaxsimt import types as T
from jaxsimt.units import lsu
from jaxsimt.program import (
    BARRIER, BRANCH, EXIT, FALL, JUMP, Block, Imm, Instr, Param, Program, Reg, SharedDecl,
    SourceLoc, Terminator, finalize, fold_moves,
)
from jaxsimt.types import DType

_BUILDER: contextvars.ContextVar[Optional["_Builder"]] = contextvars.ContextVar("jaxsimt_builder", default=None)
_DSL_DIR = os.path.dirname(os.path.abspath(__file__))


class KernelTraceError(TypeError):
    """A kernel could not be traced (type mismatch, misuse of the DSL, ...)."""


def _builder() -> "_Builder":
    b = _BUILDER.get()
    if b is None:
        raise KernelTraceError("jaxsimt DSL operations are only valid inside a @jaxsimt.kernel function")
    return b


# ---------------------------------------------------------------------------------------------
# Builder: collects blocks and instructions while a kernel function runs
# ---------------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, name: str, source_file: str):
        self.name = name
        self.source_file = source_file
        self.regs: list[Reg] = []
        self.blocks: list[Block] = []
        self.cur: Block = self._new_block()
        self.shared: list[SharedDecl] = []
        self.shared_bytes = 0
        self.loops: list[tuple[int, int]] = []  # (continue target, break target) per open loop
        self.last_if: Optional[dict] = None
        self._lines_cache: dict[str, list[str]] = {}

    # -- blocks --
    def _new_block(self) -> Block:
        b = Block(len(self.blocks), [], Terminator(FALL))
        self.blocks.append(b)
        return b

    def start_block(self, b: Block):
        self.cur = b

    def end_block(self, term: Terminator):
        self.cur.term = term
        self.last_if = None

    # -- registers & instructions --
    def reg(self, dtype: DType, name: str = "") -> Reg:
        r = Reg(len(self.regs), dtype, name)
        self.regs.append(r)
        return r

    def loc(self) -> SourceLoc:
        f = inspect.currentframe()
        # the DSL's own frames, and contextlib's between a `with js.if_(...)` and the DSL, are not the kernel's
        while f is not None and (os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _DSL_DIR
                                 or f.f_code.co_filename == contextlib.__file__):
            f = f.f_back
        if f is None:
            return SourceLoc(self.source_file, 0)
        fn, ln = f.f_code.co_filename, f.f_lineno
        if fn not in self._lines_cache:
            try:
                with open(fn) as fh:
                    self._lines_cache[fn] = fh.read().splitlines()
            except OSError:
                self._lines_cache[fn] = []
        lines = self._lines_cache[fn]
        text = lines[ln - 1] if 0 < ln <= len(lines) else ""
        return SourceLoc(fn, ln, text)

    def emit(self, op: str, dst: Sequence[Reg], src: Sequence, **attrs) -> Instr:
        ins = Instr(op, tuple(dst), tuple(src), tuple(sorted(attrs.items())), self.loc())
        self.cur.instrs.append(ins)
        self.last_if = None
        return ins


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def _operand(x, dtype: Optional[DType] = None):
    """Turn a Value or Python scalar into an instruction operand of `dtype`."""
    if isinstance(x, Value):
        if dtype is not None and x.dtype != dtype:
            raise KernelTraceError(
                f"{_builder().loc()}: operand of type {x.dtype.name} where {dtype.name} is expected; "
                f"convert explicitly with .astype({dtype.name})")
        return x.reg
    if isinstance(x, (bool, int, float)):
        if dtype is None:
            dtype = T.pred if isinstance(x, bool) else (T.f32 if isinstance(x, float) else T.s32)
        if dtype.is_int and isinstance(x, float):
            raise KernelTraceError(f"{_builder().loc()}: float constant {x} used as {dtype.name}")
        return Imm(x, dtype)
    raise KernelTraceError(f"{_builder().loc()}: cannot use {type(x).__name__} as a kernel value")


def _dtype_of(*xs) -> DType:
    for x in xs:
        if isinstance(x, Value):
            return x.dtype
    x = xs[0]
    return T.pred if isinstance(x, bool) else (T.f32 if isinstance(x, float) else T.s32)


def _unify(a, b, what: str) -> DType:
    ta = a.dtype if isinstance(a, Value) else None
    tb = b.dtype if isinstance(b, Value) else None
    if ta is not None and tb is not None and ta != tb:
        raise KernelTraceError(
            f"{_builder().loc()}: {what} of {ta.name} and {tb.name}; convert one with .astype()")
    return ta or tb or _dtype_of(a, b)


def _alu(op: str, dtype: DType, *args, out: Optional[DType] = None, **attrs) -> "Value":
    b = _builder()
    srcs = [_operand(a, dtype) for a in args]
    r = b.reg(out or dtype)
    b.emit(op, [r], srcs, type=dtype.name, **attrs)
    return Value(r)


class Value:
    """A per-thread value held in a register."""

    __array_priority__ = 1000

    def __init__(self, reg: Reg):
        self.reg = reg

    @property
    def dtype(self) -> DType:
        return self.reg.dtype

    def __repr__(self):
        return f"Value({self.reg!r})"

    def __bool__(self):
        raise KernelTraceError(
            f"{_builder().loc()}: a kernel value has no Python truth value; use jaxsimt.if_(...) or "
            f"jaxsimt.while_(...) for data-dependent control flow")

    __hash__ = object.__hash__

    # arithmetic
    def _bin(self, other, op, reverse=False):
        t = _unify(self, other, op)
        a, b = (other, self) if reverse else (self, other)
        return _alu(op, t, a, b)

    def __add__(self, o): return self._bin(o, "add")
    def __radd__(self, o): return self._bin(o, "add", True)
    def __sub__(self, o): return self._bin(o, "sub")
    def __rsub__(self, o): return self._bin(o, "sub", True)
    def __mul__(self, o): return self._bin(o, "mul")
    def __rmul__(self, o): return self._bin(o, "mul", True)

    def __truediv__(self, o):
        t = _unify(self, o, "/")
        if not t.is_float:
            raise KernelTraceError(f"{_builder().loc()}: use // for integer division (C semantics)")
        return _alu("div", t, self, o)

    def __rtruediv__(self, o):
        t = _unify(self, o, "/")
        if not t.is_float:
            raise KernelTraceError(f"{_builder().loc()}: use // for integer division (C semantics)")
        return _alu("div", t, o, self)

    def __floordiv__(self, o):
        t = _unify(self, o, "//")
        if t.is_float:
            raise KernelTraceError(f"{_builder().loc()}: // on floats; use /")
        return _alu("div", t, self, o)

    def __rfloordiv__(self, o): return _alu("div", _unify(self, o, "//"), o, self)
    def __mod__(self, o): return self._bin(o, "rem")
    def __rmod__(self, o): return self._bin(o, "rem", True)
    def __neg__(self): return _alu("neg", self.dtype, self)
    def __abs__(self): return _alu("abs", self.dtype, self)

    # bitwise / logical (pred: logical)
    def __and__(self, o): return self._bin(o, "and")
    def __rand__(self, o): return self._bin(o, "and", True)
    def __or__(self, o): return self._bin(o, "or")
    def __ror__(self, o): return self._bin(o, "or", True)
    def __xor__(self, o): return self._bin(o, "xor")
    def __rxor__(self, o): return self._bin(o, "xor", True)
    def __invert__(self): return _alu("not", self.dtype, self)

    def _shift(self, o, op):
        b = _builder()
        amount = _cvt_if(o, T.u32) if isinstance(o, Value) else _operand(o, T.u32)
        r = b.reg(self.dtype)
        b.emit(op, [r], [self.reg, amount], type=self.dtype.name)
        return Value(r)

    def __lshift__(self, o): return self._shift(o, "shl")
    def __rshift__(self, o): return self._shift(o, "shr")

    # comparisons -> pred
    def _cmp(self, o, cmp):
        t = _unify(self, o, "comparison")
        return _alu("setp", t, self, o, out=T.pred, cmp=cmp)

    def __lt__(self, o): return self._cmp(o, "lt")
    def __le__(self, o): return self._cmp(o, "le")
    def __gt__(self, o): return self._cmp(o, "gt")
    def __ge__(self, o): return self._cmp(o, "ge")
    def __eq__(self, o): return self._cmp(o, "eq")  # type: ignore[override]
    def __ne__(self, o):  # type: ignore[override]
        # C's != is true when either operand is NaN: PTX setp.neu for floats
        return self._cmp(o, "neu" if _unify(self, o, "comparison").is_float else "ne")

    def astype(self, dtype) -> "Value":
        dtype = T.as_dtype(dtype)
        if dtype == self.dtype:
            return self
        return _alu("cvt", self.dtype, self, out=dtype, to=dtype.name)


def _cvt_if(v: Value, t: DType) -> Reg:
    return v.reg if v.dtype == t else v.astype(t).reg


class Var(Value):
    """A mutable register: the value of a loop-carried variable. Assign with `.set(x)` or `+=` etc."""

    def set(self, x) -> "Var":
        b = _builder()
        b.emit("mov", [self.reg], [_operand(x, self.dtype)], type=self.dtype.name)
        return self

    def _inplace(self, o, op):
        v = self._bin(o, op)
        return self.set(v)

    def __iadd__(self, o): return self._inplace(o, "add")
    def __isub__(self, o): return self._inplace(o, "sub")
    def __imul__(self, o): return self._inplace(o, "mul")
    def __iand__(self, o): return self._inplace(o, "and")
    def __ior__(self, o): return self._inplace(o, "or")
    def __ixor__(self, o): return self._inplace(o, "xor")


def var(init, dtype=None) -> Var:
    """A new mutable register initialised to `init` (a Value or a Python scalar)."""
    b = _builder()
    dtype = T.as_dtype(dtype) if dtype is not None else _dtype_of(init)
    v = Var(b.reg(dtype, "v"))
    if isinstance(init, Value) and init.dtype != dtype:
        init = init.astype(dtype)
    v.set(init)
    return v


def const(x, dtype) -> Value:
    """A register holding a constant."""
    return _alu("mov", T.as_dtype(dtype), x)


# ---------------------------------------------------------------------------------------------
# Intrinsics
# ---------------------------------------------------------------------------------------------


def fma(a, b, c) -> Value:
    """a*b + c with one rounding (FFMA)."""
    t = _unify(_unify(a, b, "fma"), c, "fma") if isinstance(c, Value) else _unify(a, b, "fma")
    return _alu("fma", t, a, b, c)


def mad(a, b, c) -> Value:
    """Integer a*b + c (low bits)."""
    t = _unify(a, b, "mad")
    return _alu("mad", t, a, b, c)


def where(p, a, b) -> Value:
    """Per-lane select: a where p holds, else b (selp)."""
    t = _unify(a, b, "where")
    bld = _builder()
    r = bld.reg(t)
    bld.emit("selp", [r], [_operand(a, t), _operand(b, t), _operand(p, T.pred)], type=t.name)
    return Value(r)


def minimum(a, b) -> Value:
    return _alu("min", _unify(a, b, "min"), a, b)


def maximum(a, b) -> Value:
    return _alu("max", _unify(a, b, "max"), a, b)


def _unary(op):
    def f(x) -> Value:
        return _alu(op, _dtype_of(x), x)
    f.__name__ = op
    f.__doc__ = (f"{op} of a float value: on f32 what the H200's special function unit returns for PTX's "
                 f"{op}.approx.f32, bit for bit (jaxsimt.units.mufu)" if op in ("rsqrt", "ex2", "lg2", "sin", "cos")
                 else f"{op} of a float value, correctly rounded (PTX {op}.rn).")
    return f


sqrt, rsqrt, rcp, exp2, log2, sin, cos = map(_unary, ["sqrt", "rsqrt", "rcp", "ex2", "lg2", "sin", "cos"])


def syncthreads() -> None:
    """Barrier for all threads of the block (bar.sync 0). Ends the current basic block."""
    _barrier(())


def bar_sync(barrier: int, threads: Optional[int] = None) -> None:
    """Wait at block barrier `barrier` (0..15) until `threads` threads (a multiple of the warp size) have
    arrived at it, or without `threads` every thread of the block (PTX bar.sync a{, b}). Ends the block."""
    _barrier(_barrier_attrs("bar_sync", barrier, threads, False))


def bar_arrive(barrier: int, threads: int) -> None:
    """Count this warp's threads at block barrier `barrier` without waiting (PTX bar.arrive a, b): the producer
    side of a producer/consumer pair whose consumers `bar_sync(barrier, threads)`. Ends the block."""
    _barrier(_barrier_attrs("bar_arrive", barrier, threads, True))


def _barrier_attrs(name: str, barrier, threads, arrive: bool) -> tuple:
    from jaxsimt.units.barriers import PTX_BARRIERS, attrs
    if not isinstance(barrier, int) or not 0 <= barrier < PTX_BARRIERS:
        raise KernelTraceError(f"{name}: barrier must be an int in 0..{PTX_BARRIERS - 1}, got {barrier!r}")
    if (threads is None and arrive) or (threads is not None and (not isinstance(threads, int) or threads <= 0)):
        raise KernelTraceError(f"{name}: threads must be a positive int, got {threads!r}")
    return attrs(barrier, threads or 0, arrive)


def _barrier(attrs: tuple) -> None:
    b = _builder()
    ins = Instr("bar", (), (), attrs, b.loc())
    nxt = b._new_block()
    b.end_block(Terminator(BARRIER, target=nxt.index, instr=ins))
    b.start_block(nxt)


def syncwarp(mask: int = 0xFFFFFFFF) -> None:
    """`__syncwarp(mask)` (bar.warp.sync): the lanes in `mask` wait for each other. Under Independent
    Thread Scheduling (launch mode "its") this is where a diverged warp reconverges; under the
    reconvergence stack the warp runs in lockstep already and it does nothing."""
    _builder().emit("warpsync", [], [], membermask=int(mask) & 0xFFFFFFFF)


# ---------------------------------------------------------------------------------------------
# Special registers
# ---------------------------------------------------------------------------------------------


def _sreg(name: str) -> Value:
    b = _builder()
    r = b.reg(T.s32, name.replace(".", "_"))
    b.emit("sreg", [r], [], name=name)
    return Value(r)


class _Dim3:
    def __init__(self, base: str):
        self._base = base

    @property
    def x(self) -> Value: return _sreg(f"{self._base}.x")

    @property
    def y(self) -> Value: return _sreg(f"{self._base}.y")

    @property
    def z(self) -> Value: return _sreg(f"{self._base}.z")


threadIdx, blockDim, blockIdx, gridDim = _Dim3("tid"), _Dim3("ntid"), _Dim3("ctaid"), _Dim3("nctaid")
tid, ntid, ctaid, nctaid = threadIdx, blockDim, blockIdx, gridDim


def laneid() -> Value:
    return _sreg("laneid")


def warpid() -> Value:
    """Warp index within the block (threads linearised x fastest, 32 per warp)."""
    return _sreg("warpid")


def global_thread_index() -> Value:
    """Seed 000's global linear thread index: linear block id x threads per block + linear thread id."""
    return _sreg("gtid")


# ---------------------------------------------------------------------------------------------
# Memory: global arrays (kernel pointer arguments) and per-block shared arrays
# ---------------------------------------------------------------------------------------------


class PtrType:
    def __init__(self, dtype: DType):
        self.dtype = dtype

    def __repr__(self):
        return f"Ptr[{self.dtype.name}]"


class Ptr:
    """Annotation for a pointer parameter: `x: Ptr[f32]`."""

    def __class_getitem__(cls, dtype) -> PtrType:
        return PtrType(T.as_dtype(dtype))


class ConstType(PtrType):
    def __repr__(self):
        return f"Const[{self.dtype.name}]"


class Const:
    """Annotation for a constant-memory parameter (`__constant__`): `c: Const[f32]`. The launch argument
    is an array placed in constant memory; the kernel may only read it (through the constant cache)."""

    def __class_getitem__(cls, dtype) -> ConstType:
        return ConstType(T.as_dtype(dtype))


class _Array:
    """A typed view of global or shared memory. Indexing loads or stores one element per thread."""

    space = ""

    def __init__(self, array_id: int, dtype: DType, shape: tuple[int, ...], name: str):
        self.array_id, self.dtype, self.shape, self.name = array_id, dtype, shape, name

    def _flat_index(self, idx) -> Any:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(self.shape):
            raise KernelTraceError(f"{_builder().loc()}: {self.name} has {len(self.shape)} dimension(s), "
                                   f"indexed with {len(idx)}")
        flat = None
        for k, i in enumerate(idx):
            stride = 1
            for s in self.shape[k + 1:]:
                stride *= s
            term = i * stride if stride != 1 else i
            flat = term if flat is None else flat + term
        if isinstance(flat, Value) and flat.dtype not in (T.s32, T.u32, T.s64, T.u64):
            raise KernelTraceError(f"{_builder().loc()}: index of type {flat.dtype.name}")
        return flat

    def _attrs(self, vec: int):
        return dict(space=self.space, array=self.array_id, type=self.dtype.name, vec=vec)

    def __getitem__(self, idx) -> Value:
        return self.load(idx)

    def __setitem__(self, idx, value) -> None:
        self.store(idx, value)

    def load(self, idx, n: int = 1):
        """Load one element, or `n` consecutive elements as one vector access (n in 1, 2, 4; the
        whole access 16 bytes at most and aligned to its size). Returns a Value or a tuple of n."""
        b = _builder()
        dst = [b.reg(self.dtype) for _ in builtins.range(n)]
        b.emit("ld", dst, [_operand(self._flat_index(idx), None)], **self._attrs(n))
        vals = tuple(Value(r) for r in dst)
        return vals[0] if n == 1 else vals

    def store(self, idx, value) -> None:
        """Store one element, or a tuple/list of 1, 2 or 4 elements as one vector access."""
        b = _builder()
        vals = list(value) if isinstance(value, (tuple, list)) else [value]
        srcs = [_operand(self._flat_index(idx), None)] + [_operand(v, self.dtype) for v in vals]
        b.emit("st", [], srcs, **self._attrs(len(vals)))

    def _atomic(self, op, idx, *vals) -> Value:
        b = _builder()
        r = b.reg(self.dtype)
        srcs = [_operand(self._flat_index(idx), None)] + [_operand(v, self.dtype) for v in vals]
        b.emit("atom", [r], srcs, aop=op, **self._attrs(1))
        return Value(r)

    def atomic_add(self, idx, v) -> Value:
        """atomicAdd: returns the old value; lanes hitting one address are serialised in lane order."""
        return self._atomic("add", idx, v)

    def atomic_min(self, idx, v) -> Value: return self._atomic("min", idx, v)
    def atomic_max(self, idx, v) -> Value: return self._atomic("max", idx, v)
    def atomic_exch(self, idx, v) -> Value: return self._atomic("exch", idx, v)

    def atomic_cas(self, idx, compare, v) -> Value:
        return self._atomic("cas", idx, compare, v)


class GlobalArray(_Array):
    space = "global"


class SharedArray(_Array):
    space = "shared"


class ConstArray(_Array):
    """A `__constant__` array: loads go through the constant cache (`ld.const`); stores are refused."""

    space = "const"

    def store(self, idx, value) -> None:
        raise KernelTraceError(f"{_builder().loc()}: {self.name} is constant memory (read-only in a kernel)")

    def _atomic(self, op, idx, *vals):
        raise KernelTraceError(f"{_builder().loc()}: {self.name} is constant memory (read-only in a kernel)")


def shared(shape, dtype, name: str = "") -> SharedArray:
    """Declare a per-block shared array (1D or 2D, any element type); its base is aligned to 16 bytes."""
    b = _builder()
    dtype = T.as_dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    off = (b.shared_bytes + 15) // 16 * 16
    decl = SharedDecl(name or f"smem{len(b.shared)}", dtype, shape, off)
    b.shared.append(decl)
    b.shared_bytes = off + decl.nbytes
    return SharedArray(len(b.shared) - 1, dtype, shape, decl.name)


class TextureType(PtrType):
    def __repr__(self):
        return f"Tex2D[{self.dtype.name}]"


class Tex2D:
    """Annotation for a 2D texture parameter: `img: Tex2D[f32]`. The launch argument is a 2D array
    [height, width]; the launch stores it tiled (see `jaxsimt.units.texture`) and the kernel reads it with
    `tex2d(img, x, y)` through the texture cache."""

    def __class_getitem__(cls, dtype) -> TextureType:
        return TextureType(T.as_dtype(dtype))


class TextureRef:
    """A 2D texture inside a kernel: read it with `tex2d(ref, x, y)`."""

    def __init__(self, array_id: int, dtype: DType, name: str):
        self.array_id, self.dtype, self.name = array_id, dtype, name

    def __getitem__(self, idx):
        raise KernelTraceError(f"{_builder().loc()}: read texture {self.name} with jaxsimt.tex2d({self.name}, x, y)")


def tex2d(tex: TextureRef, x, y) -> Value:
    """tex2D: the texel at integer coordinates (x, y) (column, row), clamped to the texture, point sampled,
    fetched through the read-only/texture cache."""
    if not isinstance(tex, TextureRef):
        raise KernelTraceError(f"{_builder().loc()}: tex2d needs a Tex2D parameter")
    b = _builder()
    r = b.reg(tex.dtype)
    xs = [_operand(v.astype(T.s32) if isinstance(v, Value) else v, T.s32) for v in (x, y)]
    b.emit("tex2d", [r], xs, space="global", array=tex.array_id, type=tex.dtype.name, cache="tex")
    return Value(r)


def ldg(array: "GlobalArray", idx) -> Value:
    """__ldg: load one element of a global array through the read-only (non-coherent) cache path
    (PTX ld.global.nc). The kernel must not write the array during the launch."""
    if not isinstance(array, GlobalArray):
        raise KernelTraceError(f"{_builder().loc()}: ldg reads a global array (a Ptr parameter)")
    b = _builder()
    r = b.reg(array.dtype)
    b.emit("ld", [r], [_operand(array._flat_index(idx), None)], cache="ro", **array._attrs(1))
    return Value(r)


# ---------------------------------------------------------------------------------------------
# Generic addressing: pointers into the unified address space
# ---------------------------------------------------------------------------------------------


def address_of(array: "_Array", index=0) -> Value:
    """The generic (unified address space) byte address of `array[index]`, a u64 value: a global array's
    address as is, a shared array's inside the shared window (cvta.shared)."""
    b = _builder()
    if not isinstance(array, (GlobalArray, SharedArray)):
        raise KernelTraceError(f"{b.loc()}: address_of takes a global (Ptr) or shared array")
    base = b.reg(T.u64)
    if isinstance(array, SharedArray):
        b.emit("mov", [base], [Imm(b.shared[array.array_id].offset, T.u64)], type="u64")
        gen = b.reg(T.u64)
        b.emit("cvta", [gen], [base], space="shared", to=False)
        base = gen
    else:
        b.emit("param", [base], [], index=array.array_id)
    flat = array._flat_index(index) if not (isinstance(index, int) and index == 0) else 0
    if isinstance(flat, int):
        return Value(base) + flat * array.dtype.size if flat else Value(base)
    return Value(base) + flat.astype(T.u64) * array.dtype.size


def load(ptr: Value, dtype) -> Value:
    """Load one `dtype` element from generic byte address `ptr` (u64): shared, local or global memory,
    whichever window the address lies in (a generic ld)."""
    b = _builder()
    dtype = T.as_dtype(dtype)
    r = b.reg(dtype)
    b.emit("ld", [r], [_operand(ptr, T.u64)], space="generic", type=dtype.name, vec=1)
    return Value(r)


def store(ptr: Value, value) -> None:
    """Store `value` at generic byte address `ptr` (u64) (a generic st)."""
    b = _builder()
    dtype = _dtype_of(value)
    b.emit("st", [], [_operand(ptr, T.u64), _operand(value, dtype)], space="generic", type=dtype.name, vec=1)


# ---------------------------------------------------------------------------------------------
# Warp-level primitives
# ---------------------------------------------------------------------------------------------

FULL_MASK = 0xFFFFFFFF


def _shfl(mode, value, lane_arg, width, mask) -> Value:
    """shfl.sync as CUDA's `__shfl*_sync` emits it: the width packed into the ISA's clamp and segment mask
    operand (an immediate for a constant width, computed in registers for a variable one)."""
    b = _builder()
    control = lsu.shuffle_control(mode, width if isinstance(width, Value) else int(width))
    r = b.reg(value.dtype)
    b.emit("shfl", [r], [value.reg, _operand(lane_arg, T.s32), _operand(control, T.s32)],
           mode=mode, membermask=int(mask) & 0xFFFFFFFF, type=value.dtype.name)
    return Value(r)


def shfl_sync(value: Value, src_lane, width: int = 32, mask: int = FULL_MASK) -> Value:
    return _shfl("idx", value, src_lane, width, mask)


def shfl_up_sync(value: Value, delta, width: int = 32, mask: int = FULL_MASK) -> Value:
    return _shfl("up", value, delta, width, mask)


def shfl_down_sync(value: Value, delta, width: int = 32, mask: int = FULL_MASK) -> Value:
    return _shfl("down", value, delta, width, mask)


def shfl_xor_sync(value: Value, lane_mask, width: int = 32, mask: int = FULL_MASK) -> Value:
    return _shfl("bfly", value, lane_mask, width, mask)


def _vote(mode, p, mask) -> Value:
    b = _builder()
    r = b.reg(T.u32 if mode == "ballot" else T.pred)
    b.emit("vote", [r], [_operand(p, T.pred), Imm(int(mask) & 0xFFFFFFFF, T.u32)], mode=mode)
    return Value(r)


def all_sync(p, mask: int = FULL_MASK) -> Value: return _vote("all", p, mask)
def any_sync(p, mask: int = FULL_MASK) -> Value: return _vote("any", p, mask)
def ballot_sync(p, mask: int = FULL_MASK) -> Value: return _vote("ballot", p, mask)


# ---------------------------------------------------------------------------------------------
# Structured control flow
# ---------------------------------------------------------------------------------------------


def _pred_reg(cond) -> Reg:
    if isinstance(cond, Value):
        if cond.dtype != T.pred:
            raise KernelTraceError(f"{_builder().loc()}: condition of type {cond.dtype.name}; compare it "
                                   f"(e.g. x != 0) to get a predicate")
        return cond.reg
    if isinstance(cond, bool):
        return const(cond, T.pred).reg
    raise KernelTraceError(f"{_builder().loc()}: condition must be a kernel predicate")


def _branch_instr(b, pred: Reg, negate: bool) -> Instr:
    return Instr("bra", (), (pred,), (("negate", negate),), b.loc())


@contextlib.contextmanager
def if_(cond):
    """`with if_(c): ...` runs the body for the lanes where c holds (a conditional branch)."""
    b = _builder()
    p = _pred_reg(cond)
    head = b.cur
    then = b._new_block()
    br = _branch_instr(b, p, True)
    b.start_block(then)
    yield
    end_then = b.cur
    join = b._new_block()
    head.term = Terminator(BRANCH, target=join.index, fallthrough=then.index, pred=p, negate=True, instr=br)
    if end_then.term.kind == FALL and end_then.term.instr is None:
        end_then.term = Terminator(FALL, target=join.index)
    b.start_block(join)
    b.last_if = dict(head=head, end_then=end_then, join=join)


@contextlib.contextmanager
def else_():
    """`with else_(): ...` directly after an `if_` block: the body runs for the other lanes."""
    b = _builder()
    info = b.last_if
    if info is None or b.cur is not info["join"] or b.cur.instrs:
        raise KernelTraceError(f"{b.loc()}: else_() must directly follow a with if_(...) block")
    b.last_if = None  # the join block of the if becomes the else path: the branch already targets it
    yield
    end_else = b.cur
    join = b._new_block()
    end_then = info["end_then"]
    if end_then.term.kind == FALL and end_then.term.instr is None:
        # The then-path jumps over the else path (a real instruction: bra.uni).
        end_then.term = Terminator(JUMP, target=join.index, instr=Instr("bra", (), (), (("uni", True),), b.loc()))
    if end_else.term.kind == FALL and end_else.term.instr is None:
        end_else.term = Terminator(FALL, target=join.index)
    b.start_block(join)


def _loop(make_cond: Callable[[], Any], step: Optional[Callable[[], None]]):
    b = _builder()
    pre = b.cur
    header = b._new_block()
    pre.term = Terminator(FALL, target=header.index)
    b.start_block(header)
    p = _pred_reg(make_cond())
    header_end = b.cur
    body = b._new_block()
    latch = b._new_block() if step is not None else None
    exit_ = b._new_block()
    header_end.term = Terminator(BRANCH, target=exit_.index, fallthrough=body.index, pred=p, negate=True,
                                 instr=_branch_instr(b, p, True))
    b.loops.append(((latch or header).index, exit_.index))
    b.start_block(body)
    return header, latch, exit_


def _close_loop(header, latch, exit_, step: Optional[Callable[[], None]] = None):
    b = _builder()
    b.loops.pop()
    end = b.cur
    back = Instr("bra", (), (), (("uni", True),), b.loc())
    if latch is not None:
        if end.term.kind == FALL and end.term.instr is None:
            end.term = Terminator(FALL, target=latch.index)
        b.start_block(latch)
        step()
        b.cur.term = Terminator(JUMP, target=header.index, instr=back)
    elif end.term.kind == FALL and end.term.instr is None:
        end.term = Terminator(JUMP, target=header.index, instr=back)
    b.start_block(exit_)
    b.last_if = None


def range(start, stop=None, step: int = 1, dtype=T.s32):  # noqa: A001 - mirrors Python's range
    """`for k in jaxsimt.range(n)`: a loop whose trip count may differ per lane. Yields the induction
    variable once (the body is traced once). `step` must be a nonzero Python int."""
    if stop is None:
        start, stop = 0, start
    if not isinstance(step, int) or step == 0:
        raise KernelTraceError("jaxsimt.range: step must be a nonzero Python int")
    i = var(start, dtype)
    header, latch, exit_ = _loop(lambda: (i < stop) if step > 0 else (i > stop), step=lambda: None)
    yield i
    _close_loop(header, latch, exit_, lambda: i.set(i + step))


def while_(cond: Callable[[], Any]):
    """`for _ in jaxsimt.while_(lambda: x < n): ...` loops while the condition holds, per lane.
    The condition is a function so that it is re-evaluated at the top of every iteration."""
    if not callable(cond):
        raise KernelTraceError("jaxsimt.while_ takes a function returning the condition, e.g. lambda: i < n")
    header, latch, exit_ = _loop(cond, step=None)
    yield None
    _close_loop(header, latch, exit_)


def break_() -> None:
    """Leave the innermost jaxsimt loop (for the lanes that execute it)."""
    b = _builder()
    if not b.loops:
        raise KernelTraceError(f"{b.loc()}: break_() outside a jaxsimt loop")
    b.end_block(Terminator(JUMP, target=b.loops[-1][1], instr=Instr("bra", (), (), (("uni", True),), b.loc())))
    b.start_block(b._new_block())  # unreachable remainder of the scope; pruned later


def continue_() -> None:
    """Go to the next iteration of the innermost jaxsimt loop."""
    b = _builder()
    if not b.loops:
        raise KernelTraceError(f"{b.loc()}: continue_() outside a jaxsimt loop")
    b.end_block(Terminator(JUMP, target=b.loops[-1][0], instr=Instr("bra", (), (), (("uni", True),), b.loc())))
    b.start_block(b._new_block())


def return_() -> None:
    """End the executing threads (like `return;` in a CUDA kernel)."""
    b = _builder()
    b.end_block(Terminator(EXIT, instr=Instr("exit", (), (), (), b.loc())))
    b.start_block(b._new_block())


# ---------------------------------------------------------------------------------------------
# The kernel decorator
# ---------------------------------------------------------------------------------------------


class Kernel:
    """A DSL kernel. `program` traces the function (once) into a `Program`."""

    def __init__(self, fn: Callable, name: Optional[str] = None):
        self.fn = fn
        self.name = name or fn.__name__
        functools.update_wrapper(self, fn)
        self._program: Optional[Program] = None

    def __repr__(self):
        return f"<jaxsimt.kernel {self.name}>"

    def __call__(self, *a, **k):
        raise TypeError(f"kernel {self.name} cannot be called directly; use jaxsimt.launch({self.name}, ...)")

    @property
    def program(self) -> Program:
        if self._program is None:
            self._program = trace(self.fn, self.name)
        return self._program


def kernel(fn: Optional[Callable] = None, *, name: Optional[str] = None):
    """Decorator turning a Python function into a kernel. Parameters must be annotated with a type
    (`n: s32`, `a: f32`) or a pointer type (`x: Ptr[f32]`)."""
    if fn is None:
        return lambda f: Kernel(f, name)
    return Kernel(fn, name)


def trace(fn: Callable, name: str) -> Program:
    src = inspect.getsourcefile(fn) or "<kernel>"
    b = _Builder(name, src)
    token = _BUILDER.set(b)
    try:
        sig = inspect.signature(fn)
        try:
            hints = inspect.get_annotations(fn, eval_str=True)
        except Exception:  # noqa: BLE001 - fall back to raw annotations
            hints = dict(fn.__annotations__)
        params, args = [], []
        for idx, (pname, p) in enumerate(sig.parameters.items()):
            ann = hints.get(pname, p.annotation)
            if isinstance(ann, TextureType):
                params.append(Param(pname, ann.dtype, True, None, idx, space="texture"))
                args.append(TextureRef(idx, ann.dtype, pname))
            elif isinstance(ann, ConstType):
                params.append(Param(pname, ann.dtype, True, None, idx, space="const"))
                args.append(ConstArray(idx, ann.dtype, (2**62,), pname))
            elif isinstance(ann, PtrType):
                params.append(Param(pname, ann.dtype, True, None, idx))
                args.append(GlobalArray(idx, ann.dtype, (2**62,), pname))
            else:
                try:
                    dt = T.as_dtype(ann)
                except TypeError:
                    raise KernelTraceError(
                        f"kernel {name}: parameter {pname!r} needs a type annotation (e.g. s32, f32, Ptr[f32])"
                    ) from None
                r = b.reg(dt, pname)
                params.append(Param(pname, dt, False, r, idx))
                args.append(Value(r))
        fn(*args)
        if b.cur.term.kind == FALL and b.cur.term.instr is None:
            b.cur.term = Terminator(EXIT, instr=Instr("exit", (), (), (), SourceLoc(src, 0, "<end of kernel>")))
        # Any block still falling through to nowhere (e.g. after return_) exits.
        for blk in b.blocks:
            if blk.term.kind == FALL and blk.term.target < 0:
                blk.term = Terminator(EXIT, instr=Instr("exit", (), (), (), SourceLoc(src, 0, "<end of kernel>")))
    finally:
        _BUILDER.reset(token)
    prog = Program(name, params, b.regs, b.blocks, b.shared, b.shared_bytes, src)
    return finalize(fold_moves(prog))
