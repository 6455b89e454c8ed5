"""Timing: per-warp instruction traces of a launch (`trace`), the cycle-level replay of an SM (`replay`), the
roofline model (`cost`), exact large-K extrapolation of a GEMM's trace (`kscale`) and the Perfetto timeline
(`timeline`). The replay's public functions are re-exported here (`jaxsimt.timing.predict`, ...)."""
from jaxsimt.timing.replay import (  # noqa: F401
    REPLAYS, WINDOW_MAX, WINDOW_MIN, Work, kernel_cycles, params_of, plan, plot_timeline, predict, predicted_ms,
    run, run_many, starting_params, summarize, traced_blocks, uses_tensor, warmup, window_steps,
)
