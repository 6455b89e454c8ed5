"""The registers a lowered instruction reads and writes, for the PTX front end's passes over lowered blocks
(`jaxsimt.ptx.vectorize`, `jaxsimt.ptx.schedule`): the program's own (`jaxsimt.program.reads`, `writes`)."""
from __future__ import annotations

from jaxsimt.program import reads, writes

__all__ = ["reads", "writes"]
