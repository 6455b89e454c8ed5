"""`jaxsimt.ptx.launch`: parse, lower and run one PTX kernel with the launch's arguments.

Which parameters are pointers is decided by the arguments (numpy arrays -> pointers to their element
type, anything else -> a scalar of the parameter's PTX type). Hidden arrays (module `.const`/`.global`
variables) are appended to the arguments; the per-thread `.local` frame is the machine's local memory
(`local_bytes=` of `jaxsimt.launch`, at least the frame's size); the result keeps the `.global`
variables' final contents in `outputs` under their PTX names and drops the rest.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, Sequence

import numpy as np

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


def _dims(x):
    if isinstance(x, (int, np.integer)):
        return [int(x)]
    return [int(v) for v in x]


def launch(ptx_text_or_path, kernel_name, grid, block, args: Sequence[Any] = (), arch="h200", *,
           dynamic_smem: int = 0, **launch_kwargs):
    """Run `kernel_name` from PTX text or a .ptx path; other keywords go to `jaxsimt.launch`."""
    from jaxsimt.launch import launch as _launch

    module = load_module(ptx_text_or_path)
    args = [np.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    prog = lower(module, kernel_name, args, dynamic_smem=dynamic_smem)
    hidden = hidden_arrays(prog, _dims(grid), _dims(block))
    launch_kwargs["local_bytes"] = max(int(launch_kwargs.get("local_bytes", 0)), prog.ptx_local_bytes)
    res = _launch(prog, grid, block, list(args) + hidden, arch, **launch_kwargs)
    n = prog.ptx_user_params
    for h in prog.ptx_hidden:
        if h.kind != "global":
            res.outputs.pop(h.name, None)
    res.args = tuple(res.args[:n])
    return res
