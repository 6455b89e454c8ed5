"""compute-sanitizer's verdicts on the sanitizer corpus (the H200 fixture jaxsimt/data/h200/sanitizer/verdicts.json,
written by jaxsimt/kernels/sanitizer/collect_h200.py) as markdown tables for docs/sanitizer.md:

    python -m jaxsimt.kernels.sanitizer.table            # all three tables
    python -m jaxsimt.kernels.sanitizer.table --cases    # one of them: --cases, --classes or --details

With --jaxsimt the "jaxsimt" columns hold jaxsimt's own verdicts, from running every case with all checks
(`launch(..., check="all", collect=True)`; a few minutes on a laptop); without it they stay empty.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
from typing import Optional

from . import cases as C

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "data", "h200", "sanitizer", "verdicts.json")
# The runs of each check, in table order, with their column titles.
COLUMNS = (("memcheck", "memcheck"), ("memcheck_padding", "memcheck --padding 256"),
           ("racecheck_default", "racecheck"), ("racecheck", "racecheck (hazards, info)"),
           ("initcheck", "initcheck"), ("synccheck", "synccheck"))
RUNS_OF = {"memcheck": ("memcheck", "memcheck_padding"), "racecheck": ("racecheck", "racecheck_default"),
           "initcheck": ("initcheck",), "synccheck": ("synccheck",)}


def fixture_path() -> str:
    """The fixture beside the installed package, else in the source checkout."""
    import jaxsimt
    path = os.path.join(os.path.dirname(jaxsimt.__file__), "data", "h200", "sanitizer", "verdicts.json")
    return path if os.path.exists(path) else FIXTURE


@functools.lru_cache(maxsize=None)
def load() -> dict:
    with open(fixture_path()) as f:
        return json.load(f)


def lines_of(v: dict) -> list:
    """The source lines a verdict's findings name, in order of first appearance (both accesses of a race)."""
    out = []
    for r in v.get("records", []):
        for ln in [a["line"] for a in r.get("accesses", [])] or [r.get("line")]:
            if ln is not None and ln not in out:
                out.append(ln)
    return out


def cell(v) -> str:
    """One verdict as a table cell: '—' when nothing was reported, else the lines named ('L10/L11' for the two
    accesses of a race, with its hazard kind), 'hang' when the run did not finish."""
    if v is None:
        return ""
    if v.get("timed_out"):
        return "hang"
    if not v.get("reported"):
        return "—"
    hazards = sorted({r["hazard"] for r in v["records"] if r.get("hazard")})
    severity = {r.get("severity") for r in v["records"]} & {"warning"}
    text = "L" + "/L".join(str(x) for x in lines_of(v)[:3])
    if hazards:
        text = " ".join(hazards) + " " + text
    return text + (" (warning)" if severity and "error" not in {r.get("severity") for r in v["records"]} else "")


def at_planted_line(case, v) -> bool:
    """Whether a verdict reports the planted bug: a finding at its line (a race: one naming both its lines)."""
    if not v or not v.get("reported"):
        return False
    want = set(case.expect.lines or (case.expect.line,))
    for r in v["records"]:
        got = {a["line"] for a in r.get("accesses", [])} or {r.get("line")}
        if (want <= got) if case.expect.kind == "race" else bool(want & got):
            return True
    return False


def plain_cell(v) -> str:
    if v is None:
        return ""
    if v.get("timed_out"):
        return "hang"
    ok = v.get("reference_ok")
    text = (v.get("sync") or "?").replace("cudaError", "").replace("cudaSuccess", "ok")
    if ok is not None:
        text += ", outputs " + ("right" if all(ok.values()) else "WRONG")
    return text


def jaxsimt_verdicts() -> dict:
    """{case: table cell} of jaxsimt's checks on every case: "L<line> <kind>" when the planted bug is reported
    (`run.match`), "missed (why)" when not, "clean" / the findings for clean kernels, the error for a case the
    emulator refuses."""
    from . import run
    out = {}
    for c in C.CASES:
        try:
            r = run.launch(c, check="all", collect=True, mode=c.mode, counters=False)
        except Exception as e:  # noqa: BLE001 - a cell of the table
            out[c.name] = f"{type(e).__name__}"
            continue
        if c.check is None:
            out[c.name] = "clean" if not r.findings else ", ".join(sorted({f.kind for f in r.findings}))
            continue
        f, why = run.match(c, r.findings)
        if f is None:
            out[c.name] = f"missed ({why})"
        else:
            lines = "/".join(str(x) for x in dict.fromkeys(x for x in (f.line, f.other_line) if x))
            out[c.name] = f"L{lines} {f.kind}"
    return out


def case_table(ours: Optional[dict] = None) -> str:
    """Per case and run: what compute-sanitizer reported (and jaxsimt: `ours`, from `jaxsimt_verdicts`)."""
    ours = ours or {}
    data = load()["cases"]
    head = ["case", "check", "planted at"] + [t for _, t in COLUMNS] + ["H200 without a tool", "jaxsimt"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in C.cuda_cases():
        per = data.get(c.name, {})
        where = f"{c.source}:{'/'.join(map(str, c.expect.lines or (c.expect.line,)))}" if c.expect else "—"
        cells = [f"`{c.name}`", c.check or "clean", where] + [cell(per.get(r)) for r, _ in COLUMNS]
        rows.append("| " + " | ".join(cells + [plain_cell(per.get("plain")), ours.get(c.name, "")]) + " |")
    return "\n".join(rows)


OPTIONS = {"memcheck_padding": "--padding 256", "racecheck": "--racecheck-report all --racecheck-detect-level info"}


def class_table(ours: Optional[dict] = None) -> str:
    """Per bug class: how many planted bugs compute-sanitizer's matching tool reported at their line, by
    default and with the options that find more, which it missed, and findings on the clean look-alikes."""
    ours_of = ours or {}
    data = load()["cases"]
    head = ["check", "planted bugs", "compute-sanitizer reports", "with options", "missed", "jaxsimt"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for check in C.CHECKS:
        planted = [c for c in C.by_check(check) if c.kind == "cuda"]
        runs = sorted(RUNS_OF[check], key=lambda r: r in OPTIONS)  # the default run first
        found = {r: {c.name for c in planted if at_planted_line(c, data.get(c.name, {}).get(r))} for r in runs}
        default = found[runs[0]]
        extra = [f"{len(found[r])} (`{OPTIONS[r]}`)" for r in runs[1:]]
        missed = [f"`{c.name}`" + (" (hangs)" if _hangs(data.get(c.name, {})) else "") for c in planted
                  if not any(c.name in f for f in found.values())]
        ours = ""
        if ours_of:
            gone = [f"`{c.name}`" for c in planted if not ours_of.get(c.name, "").startswith("L")]
            ours = f"{len(planted) - len(gone)}" + (f" (missed: {', '.join(gone)})" if gone else "")
        rows.append("| " + " | ".join([f"`{check}`", str(len(planted)), str(len(default)),
                                        ", ".join(extra) or "", ", ".join(missed) or "none", ours]) + " |")
    clean = [c for c in C.by_check(None) if c.kind == "cuda"]
    bad = sorted({c.name for c in clean for r, v in data.get(c.name, {}).items() if r != "plain" and v.get("reported")})
    ours = f"{sum(ours_of.get(c.name) != 'clean' for c in clean)} with findings" if ours_of else ""
    rows.append("| " + " | ".join(["clean look-alikes", str(len(clean)),
                                    f"{len(bad)} with findings (any run)", "", ", ".join(bad) or "", ours]) + " |")
    return "\n".join(rows)


def _hangs(per: dict) -> bool:
    return bool(per) and all(v.get("timed_out") for v in per.values())


def _first(v) -> dict:
    recs = (v or {}).get("records") or []
    return recs[0] if recs else {}


def details_table() -> str:
    """Per planted bug, the first finding of its check's first run that reported it: what the tool said,
    its line, thread and block, and where the address falls."""
    data = load()["cases"]
    head = ["case", "run", "what it said", "line", "thread", "block", "address", "jaxsimt"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in C.cuda_cases():
        if c.check is None:
            continue
        per = data.get(c.name, {})
        run = next((r for r in RUNS_OF[c.check] if (per.get(r) or {}).get("reported")), None)
        if run is None:
            said = "nothing reported" + (" (every run hangs)" if _hangs(per) else "")
            rows.append(f"| `{c.name}` | {', '.join(RUNS_OF[c.check])} | {said} | | | | | |")
            continue
        r = _first(per[run])
        what = r.get("what", "").replace("|", "/").rstrip(" :")
        threads = [a.get("thread") for a in r.get("accesses", []) if a.get("thread")]
        thread = " / ".join(_xyz(t) for t in threads) if threads else _xyz(r.get("thread"))
        line = "/".join(str(a["line"]) for a in r.get("accesses", [])) or str(r.get("line", ""))
        rows.append("| " + " | ".join([f"`{c.name}`", run, what, line, thread, _xyz(r.get("block")),
                                        _where(r, c, per[run]), ""]) + " |")
    return "\n".join(rows)


def _xyz(t) -> str:
    return "(%d,%d,%d)" % tuple(t) if t else ""


def _where(r: dict, case, v: dict) -> str:
    """A finding's address: for global memory, as the byte offset from the start of the argument the
    planted bug's pointer was derived from (the run's own allocations), else as the tool printed it."""
    addr = r.get("address")
    if not addr:
        return ""
    names = _param_names(case)
    arg = next((k for k, n in names.items() if n == case.expect.array), None)
    if r.get("space") == "global" and arg is not None:
        base = next((b for k, b, _ in v.get("allocations", []) if k == arg), None)
        if base is not None:
            return f"{case.expect.array} {int(addr, 16) - base:+d}"
    return f"{r.get('space', '')} {addr}".strip()


@functools.lru_cache(maxsize=None)
def _source_params(source: str) -> dict:
    """{entry: [parameter names]} of the extern "C" kernels of a .cu file of the corpus."""
    import re
    with open(os.path.join(C.HERE, source)) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r'extern "C" __global__ void (\w+)\(([^)]*)\)', text):
        out[m.group(1)] = [p.split()[-1].lstrip("*&") for p in m.group(2).split(",")]
    return out


def _param_names(case) -> dict:
    return dict(enumerate(_source_params(case.source).get(case.entry, [])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("cases", "classes", "details"):
        ap.add_argument(f"--{name}", action="store_true")
    ap.add_argument("--jaxsimt", action="store_true", help="run every case on jaxsimt for its columns")
    a = ap.parse_args(argv)
    ours = jaxsimt_verdicts() if a.jaxsimt else {}
    chosen = [n for n in ("cases", "classes", "details") if getattr(a, n)] or ["classes", "cases", "details"]
    tables = {"cases": lambda: case_table(ours), "classes": lambda: class_table(ours), "details": details_table}
    print("\n\n".join(tables[n]() for n in chosen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
