"""What the *_h200.py scripts here share (stdlib only): building a CUDA source with nvcc, and `nvidia-smi`
sampling in the background while a GPU job runs."""
from __future__ import annotations

import os
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NVCC_FLAGS = ("-arch=sm_90", "-O3", "-std=c++17")


def nvcc(source: str, out: str, log, extra=()) -> str:
    """Build `source` (a file name here) into `out` with NVCC_FLAGS and `extra` (e.g. "-cubin", "-lineinfo"),
    the command and its errors written to `log`; exits with nvcc's message where it fails. Returns `out`."""
    cmd = ["nvcc", *NVCC_FLAGS, *extra, "-I", HERE, os.path.join(HERE, source), "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    log.write(f"$ {' '.join(cmd)}\nrc={p.returncode}\n{p.stderr[-3000:]}\n")
    if p.returncode:
        raise SystemExit(f"nvcc failed for {source}: {p.stderr[-2000:]}")
    return out


class SmiSampler:
    """Samples `nvidia-smi --query-gpu=FIELDS` every `ms` milliseconds from `start()` to `stop()`:
    `samples` is [(host time.time(), the CSV line without units)]."""

    def __init__(self, fields: str, ms: int = 20):
        self.fields, self.ms = fields, ms
        self.samples: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        p = subprocess.Popen(["nvidia-smi", f"--query-gpu={self.fields}", "--format=csv,noheader,nounits",
                              "-lms", str(self.ms)], stdout=subprocess.PIPE, text=True)
        while not self._stop.is_set():
            line = p.stdout.readline()
            if not line:
                break
            self.samples.append((time.time(), line.strip()))
        p.terminate()

    def start(self) -> "SmiSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
