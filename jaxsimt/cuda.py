"""CUDA C++ to PTX with the local nvcc (`nvcc -ptx`), for running CUDA sources on the emulator."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Sequence


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


def compile_file(path, arch: str = "sm_90", options: Sequence[str] = (), **kw) -> str:
    """Compile a .cu file to PTX; includes resolve relative to the file's folder (passed as -I)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        src = f.read()
    inc = ["-I", os.path.dirname(os.path.abspath(path))]
    return compile(src, arch, inc + list(options), filename=os.path.basename(path), **kw)
