"""`nvidia-smi` sampling in the background while a GPU job runs (stdlib only; for the *_h200.py scripts here)."""
from __future__ import annotations

import subprocess
import threading
import time


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
