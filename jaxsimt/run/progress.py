"""Progress bars for long work (ladder, run, sweep, validate, launch_batch), on stderr.

A bar is shown only where someone watches: stderr is a terminal, the command is not in `--json` mode, and
the process is not under pytest; JAXSIMT_NO_PROGRESS=1 turns bars off everywhere. Bars start at their first
update (a command that fails early or only lists prints no bar) and vanish when done (transient), so that a
table printed afterwards stands alone.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator, Optional


def wanted(enabled: Optional[bool] = None) -> bool:
    """Whether to draw a bar: `enabled` False never, True where stderr is a terminal, None (auto) as True but
    not under pytest nor with JAXSIMT_NO_PROGRESS=1."""
    if enabled is False or os.environ.get("JAXSIMT_NO_PROGRESS") == "1":
        return False
    if enabled is None and "PYTEST_CURRENT_TEST" in os.environ:
        return False
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class _Bar:
    """One rich progress task on stderr, started at its first update."""

    def __init__(self, description: str, columns: tuple):
        self.description = description
        self.columns = columns
        self.progress = None
        self.task = None
        self.t0 = time.perf_counter()

    def _start(self, total: int):
        from rich.console import Console
        from rich.progress import Progress

        self.progress = Progress(*self.columns, console=Console(stderr=True), transient=True)
        self.progress.start()
        self.task = self.progress.add_task(self.description, total=total, waves="", blocks="")

    def update(self, done: int, total: int, description: Optional[str] = None, **fields) -> None:
        if self.progress is None:
            self._start(total)
        kw = {"description": description} if description else {}
        self.progress.update(self.task, completed=done, total=total, **kw, **fields)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _columns(waves: bool) -> tuple:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    counts = (TextColumn("waves {task.fields[waves]}"), TextColumn("blocks {task.fields[blocks]}")) if waves else (
        MofNCompleteColumn(),)
    return (TextColumn("{task.description}"), BarColumn(), *counts, TextColumn("elapsed"), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn())


class WaveProgress:
    """The waves of one launch (or batch): call it as progress(waves done, waves, blocks done, blocks), the
    form `jaxsimt.run.launch.run_items` calls its `progress` with."""

    def __init__(self, description: str):
        self.bar = _Bar(description, _columns(waves=True))

    def __call__(self, waves_done: int, waves: int, blocks_done: int, blocks: int) -> None:
        self.bar.update(waves_done, waves, waves=f"{waves_done}/{waves}", blocks=f"{blocks_done:,}/{blocks:,}")


class TaskProgress:
    """Items of a longer job (rungs, kernels, launches): `advance(n, description=...)`."""

    def __init__(self, description: str, total: int):
        self.bar = _Bar(description, _columns(waves=False))
        self.total, self.done = total, 0

    def advance(self, n: int = 1, description: Optional[str] = None) -> None:
        self.done += n
        self.bar.update(self.done, self.total, description)

    def describe(self, description: str) -> None:
        self.bar.update(self.done, self.total, description)


@contextlib.contextmanager
def launch_progress(enabled: Optional[bool] = None, description: str = "emulating") -> Iterator[Optional[WaveProgress]]:
    """A WaveProgress for a `with` block where `wanted(enabled)`, else None (run_items then reports nothing)."""
    if not wanted(enabled):
        yield None
        return
    p = WaveProgress(description)
    try:
        yield p
    finally:
        p.bar.close()


@contextlib.contextmanager
def task_progress(total: int, enabled: Optional[bool] = None, description: str = "") -> Iterator[Optional[TaskProgress]]:
    """A TaskProgress of `total` items where `wanted(enabled)`, else None."""
    if not wanted(enabled):
        yield None
        return
    p = TaskProgress(description, total)
    try:
        yield p
    finally:
        p.bar.close()
