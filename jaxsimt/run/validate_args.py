"""Checks of a launch's arguments and options before anything is allocated or compiled, shared by
`jaxsimt.launch`, `launch_batch`, `sweep` and `jaxsimt.ptx.launch`.

Every error is a `jaxsimt.errors.ArgumentError` (a `LaunchConfigError`, also a `TypeError`) or a
`LaunchConfigError` whose message names the kernel, the parameter (name and position) and what was
expected and given. What is accepted:

- grid, block: an int or a tuple/list of 1 to 3 ints, each at least 1 (bools and floats are refused, also
  integral floats: CUDA's dim3 holds unsigned integers); the architecture's limits are `check_launch`'s.
- arguments: a sequence in parameter order or a dict {parameter name: value} (every parameter named once).
- a pointer parameter (`Ptr[T]`, `Const[T]`, `Texture[T]`): an array (numpy, JAX, or anything
  `np.asarray` takes) of exactly T's dtype, never converted (its bytes are the kernel's memory), of any
  rank: a kernel's pointer is flat, so an array of several dimensions is its elements in C order (a
  texture needs 2 dimensions). A zero-size array is allowed, as `cudaMalloc(0)`: every access to it
  faults as out of bounds.
- a scalar parameter: an integer parameter takes a Python or numpy integer (or 0-d integer array) within
  the type's range (s: signed, u: unsigned, b: either, as a bit pattern); a float parameter takes any
  real number whose magnitude the type can hold (inf and nan included); a pred parameter takes a bool or
  0/1. Strings, None, bools for numbers and floats for integers are refused; a numpy scalar of exactly
  the parameter's dtype is taken as it is.
- the arrays of one launch (and of a batch, all items) fit `memory_budget()` bytes of emulated global
  memory.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from jaxsimt import errors

_INT_KINDS = ("s", "u", "b")


def _desc(v) -> str:
    """A short description of a given value for messages: its repr (cut) and type."""
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    if isinstance(v, np.generic):
        return f"{r} (a numpy {v.dtype} scalar)"
    if isinstance(v, np.ndarray) or hasattr(v, "__array__") and hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"an array of shape {tuple(np.shape(v))} and dtype {v.dtype}"
    return f"{r} ({type(v).__name__})"


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def positive_int(value, what: str, kernel: str) -> int:
    """`value` as an int, refusing anything but a positive integer (bools, floats, strings, None)."""
    if not _is_int(value) or value < 1:
        raise errors.ArgumentError(f"kernel {kernel}: {what} must be a positive integer, got {_desc(value)}")
    return int(value)


def dim3(x, what: str, kernel: Optional[str] = None) -> tuple[int, int, int]:
    """A grid or block as three positive ints (missing dimensions 1)."""
    k = f"kernel {kernel}: " if kernel else ""
    vals = (x,) if not isinstance(x, (tuple, list)) else tuple(x)
    if not 1 <= len(vals) <= 3 or not all(_is_int(v) for v in vals) or any(v < 1 for v in vals):
        bad = [v for v in vals if not _is_int(v)]
        why = (f"{_desc(bad[0])} is not an integer" if bad else
               f"{len(vals)} dimensions" if not 1 <= len(vals) <= 3 else "a dimension below 1")
        raise errors.LaunchConfigError(f"{k}{what} must be 1 to 3 positive integers (an int or a tuple), got "
                                       f"{x!r}: {why}")
    return tuple(int(v) for v in vals) + (1,) * (3 - len(vals))


def bind(kernel: str, names: Sequence[str], args) -> tuple:
    """The arguments in parameter order: `args` is a sequence in that order or a dict by parameter name."""
    names = list(names)
    sig = f"({', '.join(names)})"
    if isinstance(args, dict):
        unknown = [k for k in args if k not in names]
        if unknown:
            raise errors.ArgumentError(f"kernel {kernel}: no parameter named {unknown[0]!r}; parameters: {sig}")
        missing = [f"{n!r} (position {i})" for i, n in enumerate(names) if n not in args]
        if missing:
            raise errors.ArgumentError(f"kernel {kernel}: missing argument for parameter {', '.join(missing)}; "
                                       f"parameters: {sig}")
        return tuple(args[n] for n in names)
    if isinstance(args, (str, bytes, np.ndarray)) or not hasattr(args, "__iter__"):
        raise errors.ArgumentError(f"kernel {kernel}: args must be a sequence of arguments in parameter order "
                                   f"{sig} or a dict by parameter name, got {_desc(args)}")
    args = tuple(args)
    if len(args) < len(names):
        missing = ", ".join(f"{n!r} (position {i})" for i, n in enumerate(names) if i >= len(args))
        raise errors.ArgumentError(f"kernel {kernel} takes {len(names)} arguments {sig}, got {len(args)}: "
                                   f"missing {missing}")
    if len(args) > len(names):
        raise errors.ArgumentError(f"kernel {kernel} takes {len(names)} arguments {sig}, got {len(args)}: "
                                   f"{len(args) - len(names)} extra from position {len(names)}")
    return args


def _where(prog, p) -> str:
    return f"kernel {prog.name}: parameter {p.name!r} (position {p.index})"


def pointer(prog, p, a) -> np.ndarray:
    """A pointer parameter's argument as an array (not yet copied), its kind, dtype and rank checked."""
    kind = {"const": "Const", "texture": "Texture"}.get(p.space, "Ptr")
    want = f"{kind}[{p.dtype.name}]"
    if a is None or isinstance(a, (str, bytes, dict, bool, int, float, complex, np.generic)):
        raise errors.ArgumentError(f"{_where(prog, p)} is {want}: it needs an array of {p.dtype.np_dtype}, got "
                                   f"{_desc(a)}")
    try:
        arr = np.asarray(a)
    except Exception as e:  # ragged lists and the like
        raise errors.ArgumentError(f"{_where(prog, p)} is {want}: {_desc(a)} is not an array ({e})") from None
    if arr.ndim == 0:
        raise errors.ArgumentError(f"{_where(prog, p)} is {want}: it needs an array, got a scalar {_desc(a)}")
    if arr.dtype != p.dtype.np_dtype:
        raise errors.ArgumentError(
            f"{_where(prog, p)} is {want}: it needs an array of {p.dtype.np_dtype}, got one of {arr.dtype} "
            f"(arrays are never converted; pass x.astype({p.dtype.np_dtype.name!r}) if a converted copy is meant)")
    if p.space == "texture" and arr.ndim != 2:
        raise errors.ArgumentError(f"{_where(prog, p)} is {want}: it needs a 2D array [height, width], got "
                                   f"shape {arr.shape}")
    return arr


def _range(dt) -> tuple:
    b = dt.bits
    if dt.kind == "s":
        return -(1 << (b - 1)), (1 << (b - 1)) - 1
    if dt.kind == "u":
        return 0, (1 << b) - 1
    return -(1 << (b - 1)), (1 << b) - 1  # b: a bit pattern, given signed or unsigned


def scalar(prog, p, a) -> np.ndarray:
    """A scalar parameter's argument as a 0-d array of its dtype, its kind and range checked."""
    dt = p.dtype
    want = f"a scalar {dt.name}"
    if isinstance(a, np.generic) and a.dtype == dt.np_dtype:
        return np.asarray(a).astype(dt.np_dtype)  # exactly the parameter's type
    v = a
    if not isinstance(a, (bool, int, float, np.generic)):
        if a is None or isinstance(a, (str, bytes)) or not hasattr(a, "__array__"):
            raise errors.ArgumentError(f"{_where(prog, p)} is {want}, got {_desc(a)}")
        arr = np.asarray(a)
        if arr.ndim:
            raise errors.ArgumentError(f"{_where(prog, p)} is {want}, got {_desc(a)}")
        v = arr[()]
        if isinstance(v, np.generic) and v.dtype == dt.np_dtype:
            return np.asarray(a).astype(dt.np_dtype)
    is_bool = isinstance(v, (bool, np.bool_))
    if dt.kind == "pred":
        if not (is_bool or _is_int(v) and int(v) in (0, 1)):
            raise errors.ArgumentError(f"{_where(prog, p)} is {want} (a bool), got {_desc(a)}")
    elif dt.kind in _INT_KINDS:
        if not _is_int(v):
            hint = "; pass int(...) if truncation is meant" if isinstance(v, (float, np.floating)) else ""
            raise errors.ArgumentError(f"{_where(prog, p)} is {want} (an integer), got {_desc(a)}{hint}")
        lo, hi = _range(dt)
        if not lo <= int(v) <= hi:
            raise errors.ArgumentError(f"{_where(prog, p)} is {want}: {int(v)} is outside its range "
                                       f"[{lo}, {hi}]")
    elif dt.is_float:
        if is_bool or not isinstance(v, (int, float, np.integer, np.floating)):
            raise errors.ArgumentError(f"{_where(prog, p)} is {want} (a real number), got {_desc(a)}")
        import jax.numpy as jnp
        top = float(jnp.finfo(dt.np_dtype).max)
        f = float(v)
        if np.isfinite(f) and abs(f) > top:
            raise errors.ArgumentError(f"{_where(prog, p)} is {want}: {v!r} is beyond its largest value "
                                       f"{top:.4g} (it would become inf)")
    return np.asarray(a).astype(dt.np_dtype)


def split_args(prog, args) -> tuple[dict, list]:
    """Check one launch's arguments against the kernel's parameters: ({param index: contiguous array},
    [scalar values in param order]). `args` must already be in parameter order (`bind`)."""
    args = bind(prog.name, [p.name for p in prog.params], args)
    checked = [pointer(prog, p, a) if p.is_pointer else scalar(prog, p, a) for p, a in zip(prog.params, args)]
    check_memory(prog, sum(c.nbytes for p, c in zip(prog.params, checked) if p.is_pointer))
    arrays = {p.index: np.ascontiguousarray(c) for p, c in zip(prog.params, checked) if p.is_pointer}
    return arrays, [c for p, c in zip(prog.params, checked) if not p.is_pointer]


def check_args(prog, args) -> None:
    """Check one launch's arguments as `split_args` does, copying nothing."""
    args = bind(prog.name, [p.name for p in prog.params], args)
    for p, a in zip(prog.params, args):
        pointer(prog, p, a) if p.is_pointer else scalar(prog, p, a)


def memory_budget() -> int:
    """Bytes of emulated global memory one launch (a batch: all its items) may take: half of this machine's
    memory, as the `jaxsimt run` command allows (the image is held on the host and on the device)."""
    from jaxsimt.run.command import memory_budget as budget
    return budget()


def check_memory(prog, nbytes: int, what: str = "the array arguments") -> None:
    """Raise LaunchConfigError when `nbytes` of global memory exceed `memory_budget()`."""
    budget = memory_budget()
    if nbytes > budget:
        from jaxsimt.run.command import human_bytes
        raise errors.LaunchConfigError(
            f"kernel {prog.name}: {what} take {human_bytes(nbytes)} ({int(nbytes)} bytes) of emulated global "
            f"memory, more than the {human_bytes(budget)} a launch may use on this machine (half its memory); "
            f"use smaller arrays or fewer batch items")


def check_options(prog, stack_depth: Any, blocks_per_wave: Any) -> None:
    """Raise ArgumentError for a stack depth or blocks per wave that is not a positive integer."""
    positive_int(stack_depth, "stack_depth (entries of each warp's reconvergence stack)", prog.name)
    if blocks_per_wave is not None:
        positive_int(blocks_per_wave, "blocks_per_wave", prog.name)


def check_dynamic_smem(kernel: str, dynamic_smem: Any, declares_dynamic: bool) -> int:
    """Bytes of dynamic shared memory as an int: a non-negative integer, and 0 unless the kernel declares an
    `.extern .shared` array to hold them (what it is given would be unused)."""
    if not _is_int(dynamic_smem) or dynamic_smem < 0:
        raise errors.ArgumentError(f"kernel {kernel}: dynamic_smem must be a non-negative integer (bytes), got "
                                   f"{_desc(dynamic_smem)}")
    if dynamic_smem and not declares_dynamic:
        raise errors.ArgumentError(
            f"kernel {kernel}: dynamic_smem={int(dynamic_smem)} bytes, but the kernel declares no `.extern "
            f".shared` array to use them; pass dynamic_smem=0")
    return int(dynamic_smem)
