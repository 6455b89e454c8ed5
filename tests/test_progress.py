"""Progress bars: drawn on a terminal only, never under pytest or in --json mode; launches report each wave."""
from __future__ import annotations

import io
import sys

import numpy as np

import jaxsimt as js
from jaxsimt.run import progress
from jaxsimt.kernels import seeds


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bars_only_on_a_terminal_and_not_under_pytest(monkeypatch):
    assert progress.wanted(None) is False  # under pytest
    assert progress.wanted(False) is False
    assert progress.wanted(True) is False  # stderr is captured, not a terminal
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.wanted(True) is True
    assert progress.wanted(None) is False  # still under pytest
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert progress.wanted(None) is True
    monkeypatch.setenv("JAXSIMT_NO_PROGRESS", "1")
    assert progress.wanted(True) is False
    with progress.launch_progress(False) as bar:
        assert bar is None


def _saxpy_args(n=256):
    return (n, np.float32(2.0), np.ones(n, np.float32), np.zeros(n, np.float32))


def test_launch_reports_every_wave():
    calls = []
    js.launch(seeds.saxpy, grid=8, block=32, args=_saxpy_args(), blocks_per_wave=2,
              progress=lambda *a: calls.append(a))
    assert calls == [(1, 4, 2, 8), (2, 4, 4, 8), (3, 4, 6, 8), (4, 4, 8, 8)]


def test_launch_batch_draws_waves_and_blocks_on_a_terminal(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    n = 256
    xs = np.ones((3, n), np.float32)
    out = js.launch_batch(seeds.saxpy, grid=8, block=32, blocks_per_wave=4, progress=True,
                          args=(n, np.float32(2.0), xs, np.zeros((3, n), np.float32)), in_axes=(None, None, 0, 0))
    np.testing.assert_array_equal(out.outputs["y"], 2 * xs)
    text = term.getvalue()
    assert "waves 6/6" in text and "blocks 24/24" in text  # 3 items x 8 blocks, 4 per wave
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    js.launch_batch(seeds.saxpy, grid=8, block=32, blocks_per_wave=4, progress=None,
                    args=(n, np.float32(2.0), xs, np.zeros((3, n), np.float32)), in_axes=(None, None, 0, 0))
    assert quiet.getvalue() == ""  # None: not under pytest
