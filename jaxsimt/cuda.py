"""CUDA C++ to PTX with the local nvcc (`nvcc -ptx`), for running CUDA sources on the emulator.

    m = jaxsimt.cuda.load("vector_add.cu")          # nvcc -arch=sm_90 -O3 -lineinfo -ptx, once per source
    r = m.launch("vectorAdd", 4, 256, [a, b, c, np.int32(n)])   # as jaxsimt.ptx.launch
    m.kernels                                      # the entries' names; m.ptx is the PTX text

Without nvcc, `load` of a .cu raises NvccNotFoundError, which says where nvcc was looked for.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Sequence

_LOADED: dict = {}  # (sha1 of source, nvcc command) -> PTX text: one compilation per distinct source


class NvccNotFoundError(RuntimeError):
    """No nvcc: install the CUDA toolkit, put nvcc on PATH, or set CUDA_HOME / $NVCC."""


class CompileError(RuntimeError):
    """nvcc rejected the source; the message holds its diagnostics."""


def find_nvcc() -> str:
    """Path of nvcc: $NVCC, then PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin."""
    cands = [os.environ.get("NVCC"), shutil.which("nvcc")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands.append(os.path.join(home, "bin", "nvcc"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise NvccNotFoundError("nvcc not found: CUDA compilation needs the CUDA toolkit's nvcc (looked at $NVCC, "
                            "PATH, $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin)")


def compile(source: str, arch: str = "sm_90", options: Sequence[str] = (), *, lineinfo: bool = True,
            filename: str = "kernel.cu", timeout: float = 300) -> str:  # noqa: A001 - the natural name
    """Compile CUDA C++ `source` to PTX for `arch` (`nvcc -arch=ARCH -ptx [-lineinfo] OPTIONS`); return the
    PTX text. Host code is ignored by -ptx. Raises NvccNotFoundError / CompileError."""
    nvcc = find_nvcc()
    with tempfile.TemporaryDirectory(prefix="jaxsimt-nvcc-") as d:
        src = os.path.join(d, os.path.basename(filename))
        out = os.path.join(d, "out.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        cmd = [nvcc, f"-arch={arch}", "-ptx"] + (["-lineinfo"] if lineinfo else []) + list(options) + [src, "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise CompileError(f"nvcc failed ({' '.join(cmd)}):\n{p.stderr.strip() or p.stdout.strip()}")
        with open(out, encoding="utf-8") as f:
            return f.read()


def compile_file(path, arch: str = "sm_90", options: Sequence[str] = (), *, lineinfo: bool = True,
                 timeout: float = 300) -> str:
    """Compile a .cu file to PTX in place (its `.file` lines name the file itself, so per-instruction tables
    show its source); includes resolve relative to the file's folder."""
    path = os.path.abspath(os.fspath(path))
    nvcc = find_nvcc()
    with tempfile.TemporaryDirectory(prefix="jaxsimt-nvcc-") as d:
        out = os.path.join(d, "out.ptx")
        cmd = [nvcc, f"-arch={arch}", "-ptx"] + (["-lineinfo"] if lineinfo else []) + list(options) + [path, "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise CompileError(f"nvcc failed ({' '.join(cmd)}):\n{p.stderr.strip() or p.stdout.strip()}")
        with open(out, encoding="utf-8") as f:
            return f.read()


class CudaModule:
    """A CUDA source compiled to PTX: `ptx` (text), `source` (the .cu path, or None for text), `kernels`
    (entry names in the order of the file), `launch(kernel, grid, block, args, **kw)` as
    `jaxsimt.ptx.launch` on this PTX."""

    def __init__(self, ptx: str, source=None):
        from jaxsimt.ptx import load_module

        self.ptx = ptx
        self.source = source
        self.module = load_module(ptx)
        self.kernels = tuple(f.name for f in self.module.entries)

    def launch(self, kernel: str, grid, block, args=(), arch: str = "h200", **kw):
        from jaxsimt.ptx import launch

        if self.source and "source_dirs" not in kw:
            kw["source_dirs"] = (os.path.dirname(self.source),)
        return launch(self.ptx, kernel, grid, block, args, arch, **kw)

    def __repr__(self):
        return f"CudaModule({self.source or '<source>'}: {', '.join(self.kernels)})"


def load(source, arch: str = "sm_90", options: Sequence[str] = ("-O3",)) -> CudaModule:
    """Compile CUDA C++ with nvcc (`nvcc -arch=ARCH -ptx -lineinfo OPTIONS`, once per distinct source and
    command) and return a `CudaModule` to launch its kernels from. `source`: a path to a .cu file, or CUDA
    source text (any string holding a newline); a .ptx path is loaded without nvcc. Raises
    NvccNotFoundError without nvcc, CompileError when nvcc rejects the source."""
    s = os.fspath(source)
    is_text = "\n" in s
    if not is_text and s.endswith(".ptx"):
        with open(s, encoding="utf-8", errors="replace") as f:
            return CudaModule(f.read(), None)
    if not is_text and not os.path.isfile(s):
        raise FileNotFoundError(f"no CUDA source file {s!r}")
    if is_text:
        text = s
    else:
        with open(s, encoding="utf-8", errors="replace") as f:
            text = f.read()
    key = (hashlib.sha1(text.encode()).hexdigest(), None if is_text else os.path.abspath(s), arch, tuple(options))
    if key not in _LOADED:
        _LOADED[key] = compile(text, arch, options) if is_text else compile_file(s, arch, options)
    return CudaModule(_LOADED[key], None if is_text else os.path.abspath(s))
