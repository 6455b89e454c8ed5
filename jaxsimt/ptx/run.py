"""`jaxsimt.ptx.launch`: parse, lower and run one PTX kernel with the launch's arguments.

Which parameters are pointers is decided by the arguments: a numpy array (bool arrays included: one
byte per element, as C++'s bool) or `(array, offset)` (a pointer `offset` elements into the array) is a
pointer, anything else a scalar of the parameter's PTX type. One array object passed for several
parameters is one buffer (aliased pointers, as host code that passes the same allocation twice), also
when the parameters point into it at different offsets. `result[name]` of a pointer parameter is the
final contents of the whole buffer it points into, as an array like the one passed: parameters aliasing
one buffer give the same array object, and an offset pointer's own elements are
`result[name][offset:]`. Hidden arrays (module `.const`/`.global` variables) are appended to the
arguments, their initial contents from the module's initializers or from `constants={symbol: array}`
(cudaMemcpyToSymbol: the array's bytes from the variable's start); the per-thread `.local` frame is the
machine's local memory (`local_bytes=` of `jaxsimt.launch`, at least the frame's size); the result keeps
the `.global` variables' final contents in `outputs` under their PTX names and drops the rest.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, Optional, Sequence

import numpy as np

from jaxsimt.run import validate_args
from jaxsimt.errors import ArgumentError, LaunchConfigError
from jaxsimt.ptx.lower import hidden_arrays, lower
from jaxsimt.ptx.parser import parse

_MODULES: dict = {}


def load_module(ptx_text_or_path):
    """Parse (once per distinct text) PTX given as text or as a path to a .ptx file."""
    s = os.fspath(ptx_text_or_path)
    if "\n" not in s and (s.endswith(".ptx") or os.path.exists(s)):
        with open(s, encoding="utf-8", errors="replace") as f:
            text, name = f.read(), s
    else:
        text, name = s, "<ptx>"
    key = (hashlib.sha1(text.encode()).hexdigest(), name)
    if key not in _MODULES:
        _MODULES[key] = parse(text, name)
    return _MODULES[key]


def _dims(x, what="grid", kernel=None):
    return list(validate_args.dim3(x, what, kernel))


_POINTER_TYPES = {64: ("u64", "b64", "s64"), 32: ("u32", "b32", "s32")}


def _check_entry_args(module, kernel_name, args, dynamic_smem):
    """The user's arguments in parameter order (a dict by PTX parameter name, or a sequence), each array
    given for a parameter that can hold an address; dynamic_smem checked against the kernel's `.extern
    .shared` declarations."""
    try:
        entry = module.function(kernel_name)
    except KeyError:
        return list(args), int(dynamic_smem)  # the lowering names the kernels there are
    names = [p.name for p in entry.params]
    args = list(validate_args.bind(kernel_name, names, args))
    addr = _POINTER_TYPES.get(module.address_size, _POINTER_TYPES[64])
    for i, (p, a) in enumerate(zip(entry.params, args)):
        is_arr = (isinstance(a, np.ndarray) and a.ndim > 0 or
                  isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], np.ndarray))
        if is_arr and p.dtype not in addr:
            raise ArgumentError(f"kernel {kernel_name}: parameter {p.name!r} (position {i}) is .{p.dtype}, not "
                                f"an address (.{'/.'.join(addr)}), so it takes a scalar, got an array")
    dyn = any(v.space == "shared" and v.is_dynamic
              for v in list(module.globals) + [v for f in module.functions for v in f.var_decls])
    return args, validate_args.check_dynamic_smem(kernel_name, dynamic_smem, dyn)


def _pointer_args(args):
    """Args for the lowering (each buffer once, at its first parameter; the other parameters pointing into
    it become scalars) and {parameter: (buffer's parameter, byte offset)} for every pointer that is not a
    buffer's own start; also {parameter: buffer's parameter} for every pointer."""
    owner_of: dict = {}  # id(array) -> parameter index holding it
    lowered, pointers, buffer_of = [], {}, {}
    for i, a in enumerate(args):
        arr, off = None, 0
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], np.ndarray):
            arr, off = a
            if not isinstance(off, (int, np.integer)) or not 0 <= int(off) <= arr.size:
                raise LaunchConfigError(f"argument {i}: offset {off!r} must be an element index in [0, {arr.size}]")
            off = int(off)
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            arr = a
        if arr is None:
            lowered.append(a)
            continue
        if arr.ndim == 0:
            raise LaunchConfigError(f"argument {i}: a pointer argument needs an array of at least one element")
        owner = owner_of.setdefault(id(arr), i)
        buffer_of[i] = owner
        if owner == i:
            lowered.append(arr if arr.flags.c_contiguous else np.ascontiguousarray(arr))
        else:
            lowered.append(np.uint64(0))  # its value is the buffer's address: see `pointers`
        if owner != i or off:
            pointers[i] = (owner, off * arr.itemsize)
    return lowered, pointers, buffer_of


def _constants(prog, hidden, constants):
    names = {h.name: k for k, h in enumerate(prog.ptx_hidden)}
    for sym, value in (constants or {}).items():
        if sym not in names:
            raise LaunchConfigError(f"kernel {prog.name}: no module .const/.global variable named {sym!r}; "
                                    f"variables: {sorted(names)}")
        raw = np.ascontiguousarray(value).view(np.uint8).reshape(-1)
        buf = hidden[names[sym]]
        if raw.size > buf.size:
            raise LaunchConfigError(f"kernel {prog.name}: {raw.size} bytes for {sym!r}, which holds {buf.size}")
        buf[:raw.size] = raw


def launch(ptx_text_or_path, kernel_name, grid, block, args: Sequence[Any] = (), arch="h200", *,
           dynamic_smem: int = 0, contract: bool = True, constants: Optional[dict] = None,
           source_dirs: Sequence[str] = (), vectorize_loads: bool = True, schedule_loads: bool = True,
           **launch_kwargs):
    """Run `kernel_name` from PTX text or a .ptx path; other keywords go to `jaxsimt.launch`.

    args: arrays, `(array, offset)` pointers and scalars (see the module's docstring), in parameter order
    or a dict by PTX parameter name; an array goes only to an address parameter (.u64/.b64/.s64), and a
    PTX pointer is untyped: an array's bytes are passed whatever its dtype; dynamic_smem: bytes of the
    kernel's `.extern .shared` array (0 for a kernel that declares none); contract: fuse
    plain `mul` + dependent `add`/`sub` into `fma` as ptxas does (docs/ptx.md), False rounds twice;
    vectorize_loads: merge scalar shared loads of consecutive elements into vector loads as ptxas does
    (`jaxsimt.ptx.vectorize`), False keeps the PTX's loads (their counts); schedule_loads: move global loads up
    their blocks with their address arithmetic as ptxas does (`jaxsimt.ptx.schedule`), False keeps the PTX's
    order (the order the timing traces issue); constants: {module variable: array} copied into
    `.const`/`.global` variables before the launch;
    source_dirs: folders besides the PTX file's own from which the sources its `.file` directives name may
    be read for messages and tables (never any other path: `jaxsimt.ptx.sources`)."""
    from jaxsimt.run.launch import launch as _launch

    module = load_module(ptx_text_or_path)
    args, dynamic_smem = _check_entry_args(module, kernel_name, args, dynamic_smem)
    grid, block = _dims(grid, "grid", kernel_name), _dims(block, "block", kernel_name)
    args = [np.asanyarray(a) if isinstance(a, np.ndarray) else a for a in args]  # any: keeps sanitizer.uninit
    lowered, pointers, buffer_of = _pointer_args(args)
    prog = lower(module, kernel_name, lowered, dynamic_smem=dynamic_smem, contract=contract, pointers=pointers,
                 source_dirs=source_dirs, vectorize_loads=vectorize_loads, schedule_loads=schedule_loads)
    hidden = hidden_arrays(prog, grid, block)
    _constants(prog, hidden, constants)
    launch_kwargs["local_bytes"] = max(int(launch_kwargs.get("local_bytes", 0)), prog.ptx_local_bytes)
    res = _launch(prog, grid, block, list(lowered) + hidden, arch, **launch_kwargs)
    n = prog.ptx_user_params
    for h in prog.ptx_hidden:
        if h.kind != "global":
            res.outputs.pop(h.name, None)
    for i, owner in buffer_of.items():
        res.outputs[prog.params[i].name] = res.outputs[prog.params[owner].name]
    res.args = tuple(res.args[:n])
    return res
