"""The cycle-level model's issue timeline in the Chrome / Perfetto trace-event format (JSON).

One process per simulated SM; in it one track per warp scheduler (a slice per issued instruction) and one
per warp slot (the same issues, and before each the wait that held the warp, as a slice named by its
stall reason: Nsight Compute's names, `jaxsimt.timing.replay.REASONS`). Times are the model's cycles converted
to microseconds at the SM clock (the format's unit); every slice also carries its cycles in `args`.
Open the file in https://ui.perfetto.dev or chrome://tracing.

Format (the "JSON Object Format" of the Trace Event Format): {"traceEvents": [...], ...}; complete
events `ph: "X"` with name, cat, ts, dur, pid, tid, args; metadata events `ph: "M"` (process_name,
thread_name, *_sort_index) with args.
"""
from __future__ import annotations

import json
from typing import Optional

import numpy as np

from jaxsimt.timing import trace as tr
from jaxsimt.timing.replay import REASONS

MAX_EVENTS = 400_000  # issue and stall slices kept per file (the first ones in time); the rest is dropped, and said
WARP_TID = 1000  # warp slot w's track is WARP_TID + w; scheduler s's is s


def _meta(pid: int, tid: Optional[int], kind: str, value) -> dict:
    ev = {"name": kind, "ph": "M", "pid": pid, "args": {"name" if kind.endswith("_name") else "sort_index": value}}
    if tid is not None:
        ev["tid"] = tid
    return ev


def events(out: dict, clock_ghz: float, program=None, *, label: str = "", pid0: int = 0,
           sms: Optional[list] = None, sm_ids=None, max_events: int = MAX_EVENTS, origin=None) -> tuple[list, int]:
    """Trace events of a replay's timeline (`timing.run` output; `out["timeline"]` per simulated SM).

    clock_ghz: cycles to microseconds; program: names the issued instructions by opcode (else by pc);
    label: prefix of the process names; pid0: the first process id; sms: which simulated SMs (rows of the
    output; default all that issued anything); sm_ids: the hardware SM index of each row (`Work.sms`); origin:
    the program pc of each of the trace's static instructions (`Trace.origins()`: an unrolled loop's copies
    are named by the instruction they copy; default the identity).
    Returns (events, number of slices dropped beyond max_events)."""
    time_, slot, sched, pc, warp, reason, start = (np.asarray(y) for y in out["timeline"])
    us = 1e-3 / float(clock_ghz)
    ops = [f"{o.operation.op}" for _, o in program.instructions()] if program is not None else None
    cls_names = None
    rows = sms if sms is not None else [m for m in range(pc.shape[0]) if (pc[m] >= 0).any()]
    evs, n_slices, dropped = [], 0, 0
    for k, m in enumerate(rows):
        pid = pid0 + k
        sm = int(sm_ids[m]) if sm_ids is not None else m
        evs.append(_meta(pid, None, "process_name", f"{label}SM {sm}".strip()))
        evs.append(_meta(pid, None, "process_sort_index", pid))
        ok = np.flatnonzero(pc[m] >= 0)
        nsch = int(sched[m][ok].max()) + 1 if ok.size else 0
        for s in range(nsch):
            evs.append(_meta(pid, s, "thread_name", f"scheduler {s}: issues"))
            evs.append(_meta(pid, s, "thread_sort_index", s))
        for w in sorted(set(slot[m][ok].tolist())):
            s = w % max(nsch, 1)
            evs.append(_meta(pid, WARP_TID + w, "thread_name", f"scheduler {s} / warp slot {w}"))
            evs.append(_meta(pid, WARP_TID + w, "thread_sort_index", nsch + s * 10_000 + w))
        for i in ok:
            if n_slices + 3 > max_events:
                dropped += 3 if reason[m][i] >= 0 else 2
                continue
            t, q, w, s = float(time_[m][i]), int(pc[m][i]), int(slot[m][i]), int(sched[m][i])
            p = int(origin[q]) if origin is not None and q < len(origin) else q
            name = ops[p] if ops is not None and p < len(ops) else f"pc {p}"
            args = {"pc": p, "cycle": t, "traced_warp": int(warp[m][i])}
            if p != q:  # an unrolled loop's copy of the instruction (`jaxsimt.timing.unroll`)
                args["unrolled_copy"] = q
            if cls_names is None and program is not None:
                cls_names = [tr.CLASS_NAMES[tr.timing_class(o.operation)] for _, o in program.instructions()]
            if cls_names is not None and p < len(cls_names):
                args["class"] = cls_names[p]
            issue = {"name": name, "cat": "issue", "ph": "X", "ts": t * us, "dur": us, "pid": pid, "args": args}
            evs.append({**issue, "tid": s})
            evs.append({**issue, "tid": WARP_TID + w})
            n_slices += 2
            r = int(reason[m][i])
            if r >= 0:
                t0 = float(start[m][i])
                if t > t0:
                    evs.append({"name": REASONS[r], "cat": "stall", "ph": "X", "ts": t0 * us, "dur": (t - t0) * us,
                                "pid": pid, "tid": WARP_TID + w, "args": {"cycles": t - t0, "from_cycle": t0}})
                    n_slices += 1
    return evs, dropped


def document(evs: list, dropped: int = 0, **meta) -> dict:
    """The JSON object of a trace file: the events plus what they are (otherData)."""
    other = {"generator": "jaxsimt cycle-level timing model", "time_unit": "microseconds at the SM clock",
             "dropped_slices": int(dropped), **{k: v for k, v in meta.items() if v is not None}}
    return {"traceEvents": evs, "displayTimeUnit": "ns", "otherData": other}


def write(path: str, doc: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), default=float)


def of_launch(result, path: str) -> dict:
    """Write the timeline of a launch run with timing=True (`result.timing`) to `path`; returns the document."""
    if result.timing is None:
        raise ValueError(f"kernel {result.kernel}: the launch has no timing (launch(..., timing=True))")
    tm = result.timing
    work = tm["work"]
    evs, dropped = events(tm["output"], float(tm["params"]["clock_ghz"]), tm["trace"].program,
                          sm_ids=work.sms, sms=[m for m in range(len(work.sms)) if work.sms[m] >= 0],
                          origin=tm["trace"].origins())
    doc = document(evs, dropped, kernel=result.kernel, arch=result.arch, grid=list(result.grid),
                   block=list(result.block), cycles=result.stats.get("cycles"))
    write(path, doc)
    return doc
