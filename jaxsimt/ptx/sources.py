"""Source files named by PTX `.file` directives, read only where the user allows.

A PTX file is data that may come from anywhere; its `.file` table must not make jaxsimt read, and then
show in fault messages and per-instruction tables, a file the user did not mean to share. A `.file` path
is opened only when, with symbolic links resolved, it lies inside an allowed folder: the PTX file's own
folder (PTX given as text has none) or one of the `source_dirs` the caller passes. A relative path is
looked up in each allowed folder, then its file name in each, then in `src/` of the first (nvcc's layout
in `tests/data/ptx`); an absolute path is opened only inside an allowed folder.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence


def allowed_dirs(ptx_filename: Optional[str], source_dirs: Sequence[str] = ()) -> tuple[str, ...]:
    """The folders source files may be read from: the PTX file's folder (when it is a real file) first,
    then `source_dirs`, each as a resolved absolute path."""
    out = []
    if ptx_filename and os.path.isfile(ptx_filename):
        out.append(os.path.dirname(os.path.realpath(ptx_filename)))
    out += [os.path.realpath(os.fspath(d)) for d in source_dirs]
    return tuple(out)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def candidates(path: str, dirs: Sequence[str]) -> list[str]:
    """The resolved paths a `.file` entry may be read from, in order; none outside `dirs`."""
    if os.path.isabs(path):
        tries = [path]
    else:
        # the path as nvcc was given it, relative to a folder it was run in: each allowed folder may hold it
        # whole or its trailing part (`jaxsimt/kernels/cuda/k.cu` under a folder that holds `cuda/k.cu`), or the name
        parts = [q for q in path.replace("\\", "/").split("/") if q]
        tails = [os.path.join(*parts[k:]) for k in range(len(parts))] if parts else [path]
        tries = [os.path.join(d, t) for t in tails for d in dirs]
        if dirs:
            tries.append(os.path.join(dirs[0], "src", parts[-1] if parts else path))
    out = []
    for t in tries:
        real = os.path.realpath(t)
        if any(_inside(real, d) for d in dirs) and real not in out:
            out.append(real)
    return out


def read_lines(path: str, dirs: Sequence[str]) -> Optional[list[str]]:
    """The lines of the first allowed file `path` names, or None."""
    for cand in candidates(path, dirs):
        try:
            with open(cand, encoding="utf-8", errors="replace") as f:
                return f.read().split("\n")
        except OSError:
            continue
    return None
