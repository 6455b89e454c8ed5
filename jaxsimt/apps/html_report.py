"""The HTML report of one launch: one self-contained page (inline CSS, SVG and a few lines of JS, no network).

Views, one tab each:
- source: the kernel's source lines (the DSL function's, or the CUDA lines PTX `.loc` directives name) with
  warp/thread instructions, SIMD and branch efficiency, global requests and sectors per request, shared
  wavefronts and bank conflicts, and the cycle-level model's stall reasons where it ran; the hottest lines
  marked; each line folds open onto its instructions (the PTX text beside the CUDA line);
- divergence: per warp, the active lanes over the steps of `trace=True`, with the reconvergence stack depth;
- memory: for a chosen memory instruction, one warp's 32 addresses drawn onto 32-byte sectors of 128-byte
  lines, or onto the 32 shared-memory banks, with what the memory model counts for it;
- occupancy: the limits per SM, the limiter, and what would raise it.

Every number shown comes from the result (`stats`, `per_instruction`, `trace`, `occupancy`, `timing`); cells
carry the raw value in `data-v` so that a reader (or a test) can check them.
"""
from __future__ import annotations

import html
import json
import os
import zlib
from typing import Optional

import numpy as np

from jaxsimt.arch import get_arch

MEMORY_OPS = ("ld", "st", "atom")
HOT_SHARE = 0.10  # a line issuing at least this share of the warp instructions is marked hot
HOT_LINES = 3  # and at most this many lines are
MAX_TRACE_WARPS = 64  # the divergence view draws at most this many warps ...
MAX_TRACE_COLUMNS = 1200  # ... and this many columns of steps (longer traces: bins of steps)

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#20303f;color:#fff;padding:14px 22px}header h1{font-size:20px;margin:0 0 4px}
header .sub{opacity:.8}nav{background:#2d4052;padding:0 16px}nav a{display:inline-block;color:#dfe7ee;
padding:9px 14px;text-decoration:none;font-weight:600}nav a.on{background:#f6f7f9;color:#20303f;border-radius:6px 6px 0 0}
main{padding:16px 22px}section{margin-bottom:26px}h2{font-size:17px;margin:6px 0 10px}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 14px}.tile{background:#fff;border:1px solid #d9dee4;
border-radius:6px;padding:8px 12px;min-width:130px}.tile b{display:block;font-size:18px}.tile span{color:#5b6773;font-size:12px}
table{border-collapse:collapse;background:#fff;border:1px solid #d9dee4}th,td{padding:3px 8px;border-bottom:1px solid #eceff2;
text-align:right;white-space:nowrap}th{background:#eef1f4;font-size:12px;white-space:normal;vertical-align:bottom}.wrap{overflow-x:auto}
td.src{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre;max-width:520px;overflow:hidden;text-overflow:ellipsis}
td.ln{color:#7a8591}td.t,th.t{text-align:left}tr.hot td.src{font-weight:700}tr.hot td.ln{background:#e4572e;color:#fff}
tr.code td{color:#98a1aa}tr.fold td{background:#fafbfc;text-align:left}tr.fold pre{margin:2px 0 6px 42px;font-size:12px}
td.heat{position:relative}td.heat i{position:absolute;left:0;bottom:1px;height:5px;background:#f08a24}
td.heat b{position:relative;font-weight:400}.bad{color:#c0392b;font-weight:700}.note{color:#5b6773;font-size:12.5px;max-width:1100px}
details summary{cursor:pointer;color:#2b6cb0}.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border:1px solid #999}
select{font-size:14px;padding:2px 4px}.mem{display:none}.mem.on{display:block}
svg text{font-family:system-ui,sans-serif}
"""

JS = """
function show(id){window.scrollTo(0,0);document.querySelectorAll('main>section').forEach(s=>s.style.display=(s.id===id)?'':'none');
document.querySelectorAll('nav a').forEach(a=>a.classList.toggle('on',a.getAttribute('href')==='#'+id));}
function pick(){var s=document.getElementById('mempick');if(!s)return;
document.querySelectorAll('.mem').forEach(d=>d.classList.toggle('on',d.id===s.value));}
function first(){return location.hash.slice(1)||document.querySelector('main>section').id;}
window.addEventListener('hashchange',()=>show(first()));
window.addEventListener('load',()=>window.scrollTo(0,0));
window.addEventListener('DOMContentLoaded',()=>{show(first());pick();
var s=document.getElementById('mempick');if(s)s.addEventListener('change',pick);
document.querySelectorAll('tr.line').forEach(r=>r.addEventListener('click',()=>{var f=document.getElementById('f'+r.dataset.line);
if(f)f.style.display=f.style.display==='none'?'':'none';}));});
"""


def esc(x) -> str:
    return html.escape(str(x), quote=True)


def fmt(x, digits: int = 2) -> str:
    """A number for a cell: integers with thousands separators, ratios with `digits` decimals."""
    if x is None:
        return ""
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if x != x:
        return "-"
    return f"{x:,.{digits}f}"


def num(x, digits: int = 2, cls: str = "", name: str = "") -> str:
    """A numeric cell with its raw value in data-v (and its column name in data-col)."""
    raw = "" if x is None else (int(x) if isinstance(x, (int, np.integer)) else float(x))
    attrs = f' data-v="{raw}"' + (f' data-col="{name}"' if name else "") + (f' class="{cls}"' if cls else "")
    return f"<td{attrs}>{fmt(x, digits)}</td>"


# --------------------------------------------------------------------------------------------- the numbers
def line_rows(result) -> list[dict]:
    """Per source line (file, line): the sums of its instructions' per-instruction rows, in line order."""
    by: dict[tuple, dict] = {}
    for r in result.per_instruction:
        ins = _instr(result, r["pc"])
        f = ins.loc.file if ins is not None and ins.loc else ""
        key = (f, r["line"])
        d = by.setdefault(key, {"file": f, "line": r["line"], "source": r["source"], "pcs": [], "warp_exec": 0,
                                "thread_exec": 0, "branches": 0, "divergent": 0, "requests": 0, "sectors": 0,
                                "wavefronts": 0, "bank_conflicts": 0, "shared_requests": 0})
        d["pcs"].append(r["pc"])
        d["has_global"] = d.get("has_global", False) or (r["op"] in MEMORY_OPS and r.get("space") in ("global", "generic"))
        d["has_shared"] = d.get("has_shared", False) or (r["op"] in MEMORY_OPS and r.get("space") in ("shared", "generic"))
        d["warp_exec"] += r["warp_exec"]
        d["thread_exec"] += r["thread_exec"]
        if "divergent" in r:
            d["branches"] += r["warp_exec"]
            d["divergent"] += r["divergent"]
        if r["op"] in MEMORY_OPS:
            space = r.get("space", "")
            if space in ("global", "generic"):
                d["requests"] += r.get("requests", 0)
                d["sectors"] += r.get("sectors", 0)
            if space in ("shared", "generic"):
                d["wavefronts"] += r.get("wavefronts", 0)
                d["bank_conflicts"] += r.get("bank_conflicts", 0)
                d["shared_requests"] += r["warp_exec"] if space == "shared" else 0
    return sorted(by.values(), key=lambda d: (d["file"], d["line"]))


def _instr(result, pc: int):
    prog = result.program
    if prog is None:
        return None
    if "_instr_table" not in prog.__dict__:
        prog.__dict__["_instr_table"] = [outer.operation for _, outer in prog.instructions()]
    table = prog.__dict__["_instr_table"]
    return table[pc] if 0 <= pc < len(table) else None


def stalls_by_pc(result) -> Optional[dict]:
    """{pc: {reason: warp-cycles}} from the cycle-level model's issue timeline (the wait before each issue,
    by its stall reason), or None where the model did not run."""
    t = result.timing
    if not t or not t.get("output") or "timeline" not in t["output"]:
        return None
    from jaxsimt.timing.replay import REASONS

    time_, _, _, pc, _, reason, start = (np.asarray(y) for y in t["output"]["timeline"])
    if t.get("trace") is not None:  # an unrolled loop's copies count for the instruction they copy
        origin = t["trace"].origins()
        pc = np.where(pc >= 0, origin[np.clip(pc, 0, len(origin) - 1)], pc)
    ok = (pc >= 0) & np.isfinite(time_) & np.isfinite(start)
    wait = np.where(ok, time_ - start, 0.0)
    out: dict = {}
    for p, r, w in zip(pc[ok].ravel(), reason[ok].ravel(), wait[ok].ravel()):
        if w > 0:
            d = out.setdefault(int(p), {})
            d[REASONS[int(r)]] = d.get(REASONS[int(r)], 0.0) + float(w)
    return out


def hot_lines(rows: list[dict]) -> set:
    """The lines marked hot: the HOT_LINES lines issuing most warp instructions, each at least HOT_SHARE."""
    total = sum(r["warp_exec"] for r in rows) or 1
    top = sorted(rows, key=lambda r: -r["warp_exec"])[:HOT_LINES]
    return {(r["file"], r["line"]) for r in top if r["warp_exec"] >= HOT_SHARE * total}


# --------------------------------------------------------------------------------------------- the views
def _tiles(result) -> str:
    s = result.stats
    g_req = sum(v for k, v in s.items() if k.startswith("l1tex__t_requests_pipe_lsu_mem_global_op_"))
    g_sec = sum(v for k, v in s.items() if k.startswith("l1tex__t_sectors_pipe_lsu_mem_global_op_"))
    tiles = [("smsp__inst_executed.sum", "warp instructions"), ("smsp__thread_inst_executed.sum", "thread instructions"),
             ("simd_efficiency", "SIMD efficiency"), ("smsp__sass_branch_targets_threads_divergent.sum", "divergent branches"),
             ("max_stack_depth", "max stack depth"),
             ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared ld wavefronts"),
             ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "shared ld bank conflicts"),
             ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "shared st bank conflicts"),
             ("occupancy", "theoretical occupancy"), ("predicted_ms", "predicted ms"), ("cycles", "cycles")]
    out = []
    for key, label in tiles:
        if key in s:
            v = s[key]
            out.append(f'<div class="tile" data-metric="{esc(key)}" data-v="{v}"><b>{fmt(v, 3)}</b>'
                       f'<span>{esc(label)}<br><code>{esc(key)}</code></span></div>')
    if g_req:
        out.append(f'<div class="tile" data-metric="global_sectors_per_request" data-v="{g_sec / g_req}">'
                   f'<b>{g_sec / g_req:.2f}</b><span>global sectors / request<br>'
                   f'{fmt(int(g_sec))} / {fmt(int(g_req))}</span></div>')
    return '<div class="tiles">' + "".join(out) + "</div>"


def _file_lines(path: str, result, source_dirs=()) -> Optional[list[str]]:
    """A source file's lines: a DSL kernel's Python file, or a CUDA file the PTX names, read only from the
    folders `jaxsimt.ptx.sources` allows (the PTX file's own)."""
    if not path:
        return None
    if path.endswith(".py"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read().split("\n")
        except OSError:
            return None
    from jaxsimt.ptx import sources

    ptx_file = getattr(result.program, "source_file", "") or ""
    return sources.read_lines(path, sources.allowed_dirs(ptx_file if ptx_file.endswith(".ptx") else None,
                                                         source_dirs))


def _ptx_text_by_line(result) -> dict:
    """{(cuda file, line): [PTX instruction texts]} from the PTX file's `.loc` lines (PTX kernels only)."""
    prog = result.program
    path = getattr(prog, "source_file", "") or ""
    if not path.endswith(".ptx") or not os.path.isfile(path):
        return {}
    from jaxsimt import ptx

    try:
        mod = ptx.parse_file(path)
    except Exception:  # noqa: BLE001 - the PTX text is a nicety beside the numbers; a file changed since
        return {}
    try:
        fn = mod.function(prog.name)
    except KeyError:
        return {}
    table = mod.file_table
    out: dict = {}
    for st in fn.body:
        if isinstance(st, ptx.Instruction) and st.loc is not None:
            out.setdefault((table.get(st.loc[0], path), st.loc[1]), []).append(f"{st.line:>5}  {st.text};")
    return out


def source_view(result, source_dirs=()) -> str:
    rows = line_rows(result)
    hot = hot_lines(rows)
    stalls = stalls_by_pc(result)
    ptx_text = _ptx_text_by_line(result)
    ws = get_arch(result.arch).warp_size
    per_pc = {r["pc"]: r for r in result.per_instruction}
    total = sum(r["warp_exec"] for r in rows) or 1
    head = ["line", "source", "warp inst", "thread inst", "SIMD eff.", "branch eff.", "divergent", "gl. requests",
            "sectors", "sectors/req", "sh. wavefronts", "bank confl."]
    if stalls is not None:
        head.append("top stall (warp-cycles)")
    out = ['<div class="wrap"><table id="source-table"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    files = sorted({r["file"] for r in rows})
    for f in files:
        frows = [r for r in rows if r["file"] == f]
        text = _file_lines(f, result, source_dirs) or []
        coded = {r["line"]: r for r in frows if r["line"] > 0}
        if len(files) > 1 or f:
            out.append(f'<tr class="fold"><td colspan="{len(head)}"><b>{esc(os.path.basename(f) or "kernel")}</b>'
                       f' <span class="note">{esc(f)}</span></td></tr>')
        shown = sorted(coded)
        if text and shown:  # the span of the kernel's lines, the lines without instructions in grey
            lo, hi = shown[0], shown[-1]
            shown = list(range(lo, hi + 1))
        for ln in shown + ([0] if 0 in {r["line"] for r in frows} else []):
            r = coded.get(ln) if ln else next(x for x in frows if x["line"] == 0)
            src = (text[ln - 1] if text and 0 < ln <= len(text) else (r["source"] if r else "")).rstrip()
            if r is None:
                out.append(f'<tr class="code"><td class="ln">{ln}</td><td class="src">{esc(src)}</td>'
                           + "<td></td>" * (len(head) - 2) + "</tr>")
                continue
            is_hot = (f, r["line"]) in hot
            simd = r["thread_exec"] / (r["warp_exec"] * ws) if r["warp_exec"] else None
            br = (1.0 - r["divergent"] / r["branches"]) if r["branches"] else None
            spr = r["sectors"] / r["requests"] if r["requests"] else None
            share = r["warp_exec"] / total
            cells = [f'<td class="ln">{ln or "-"}</td>', f'<td class="src">{esc(src)}</td>',
                     f'<td class="heat" data-v="{r["warp_exec"]}" data-col="warp_exec"><i style="width:{share * 100:.1f}%">'
                     f'</i><b>{fmt(r["warp_exec"])}</b></td>',
                     num(r["thread_exec"], name="thread_exec"),
                     num(simd, 3, "bad" if simd is not None and simd < 0.75 else "", "simd_efficiency"),
                     num(br, 3, "bad" if br is not None and br < 1 else "", "branch_efficiency"),
                     num(r["divergent"] if r["branches"] else None, name="divergent"),
                     num(r["requests"] if r["has_global"] else None, name="requests"),
                     num(r["sectors"] if r["has_global"] else None, name="sectors"),
                     num(spr, 2, "bad" if spr is not None and spr > 4 else "", "sectors_per_request"),
                     num(r["wavefronts"] if r["has_shared"] else None, name="wavefronts"),
                     num(r["bank_conflicts"] if r["has_shared"] else None, cls="bad" if r["bank_conflicts"] else "",
                         name="bank_conflicts")]
            if stalls is not None:
                st: dict = {}
                for pc in r["pcs"]:
                    for k, v in stalls.get(pc, {}).items():
                        st[k] = st.get(k, 0.0) + v
                top = max(st, key=st.get) if st else ""
                cells.append(f'<td data-col="stall">{esc(top)} {fmt(st[top], 0) if top else ""}</td>')
            key = f"{zlib.crc32(f.encode()) % 997}-{ln}"
            out.append(f'<tr class="line{" hot" if is_hot else ""}" data-line="{key}" data-file="{esc(f)}" '
                       f'data-lineno="{ln}" title="click: the instructions of this line">' + "".join(cells) + "</tr>")
            fold = []
            for pc in r["pcs"]:
                ins, row = _instr(result, pc), per_pc[pc]
                extra = ""
                if row["op"] in MEMORY_OPS:
                    extra = (f"  [{row.get('space', '')}: req {row.get('requests', 0)}, sectors {row.get('sectors', 0)},"
                             f" wavefronts {row.get('wavefronts', 0)}, conflicts {row.get('bank_conflicts', 0)}]")
                stall = ""
                if stalls is not None and stalls.get(pc):
                    stall = "  stalls: " + ", ".join(f"{k} {v:,.0f}" for k, v in
                                                     sorted(stalls[pc].items(), key=lambda kv: -kv[1])[:3])
                fold.append(f"pc {pc:>4}  warps {row['warp_exec']:>9,}  {ins!r}{extra}{stall}")
            ptx_lines = ptx_text.get((f, ln), [])
            body = esc("\n".join(fold))
            if ptx_lines:
                body = ("<b>PTX</b>\n" + esc("\n".join(ptx_lines)) + "\n<b>emulated instructions</b>\n" + body)
            out.append(f'<tr class="fold" id="f{key}" style="display:none"><td colspan="{len(head)}"><pre>{body}'
                       f"</pre></td></tr>")
    out.append("</tbody></table></div>")
    note = ('<p class="note">One row per source line; <b>bold, red line numbers</b>: the hottest lines (most warp '
            'instructions, at least 10% of them); the orange bar: the line\'s share of warp instructions. Click a '
            'line for its instructions (the PTX beside a CUDA line). SIMD efficiency: thread instructions / (warp '
            'instructions x warp size); branch efficiency: 1 - divergent / executed branches; sectors per request '
            'of global accesses (4 is a fully used 128-byte line for 4-byte lanes); shared wavefronts and bank '
            'conflicts as the bank model counts them.'
            + (" Stall reasons: the cycle-level model's, summed over the issues of the line's instructions."
               if stalls is not None else " Stall reasons appear where the cycle-level model ran (timing=True).")
            + "</p>")
    return "<h2>Source</h2>" + _tiles(result) + note + "".join(out)


def _active_colour(frac: float) -> str:
    """Blue for a full warp, through yellow (half the lanes) to red (one lane)."""
    stops = ((0.0, (215, 48, 39)), (0.5, (254, 224, 90)), (1.0, (44, 123, 182)))
    for (f0, c0), (f1, c1) in zip(stops, stops[1:]):
        if frac <= f1:
            t = (frac - f0) / (f1 - f0)
            return "rgb({},{},{})".format(*(int(a + (b - a) * t) for a, b in zip(c0, c1)))
    return "rgb(44,123,182)"


def divergence_view(result) -> str:
    tr = result.trace
    head = "<h2>Divergence</h2>"
    if tr is None:
        return head + '<p class="note">No trace: launch with trace=True (jaxsimt report does) to see the active mask of each warp over the steps.</p>'
    mask = np.asarray(tr["mask"])  # [steps, W] uint32: lanes that ran, 0 where the warp did not run
    sp = np.asarray(tr["sp"])  # [steps, W] reconvergence stack depth
    blocks = np.asarray(tr["block"])
    ws = get_arch(result.arch).warp_size
    tpb = result.block[0] * result.block[1] * result.block[2]
    wpb = -(-tpb // ws)
    lanes = np.zeros(mask.shape, np.int64)
    for b in range(ws):
        lanes += (mask >> np.uint32(b)) & 1
    n_steps, n_warps = mask.shape
    shown_w = min(n_warps, MAX_TRACE_WARPS)
    bins = max(1, -(-n_steps // MAX_TRACE_COLUMNS))
    cols = -(-n_steps // bins)
    cw = max(3, min(14, 1100 // max(cols, 1)))
    rh, dh, gap, left, top = 12, 5, 3, 74, 22
    row_h = rh + dh + gap
    width = left + cols * cw + 10
    height = top + shown_w * row_h + 30
    max_depth = max(int(sp.max()), 1)
    depth_scale = max(max_depth, 4)  # depth 1 stays light whatever the deepest
    parts = [f'<svg id="divergence-svg" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    for c in range(0, cols, max(1, cols // 10)):
        parts.append(f'<text x="{left + c * cw}" y="14" font-size="10" fill="#555">{c * bins}</text>')
    for w in range(shown_w):
        y = top + w * row_h
        parts.append(f'<text x="{left - 6}" y="{y + rh - 2}" font-size="10" text-anchor="end">b{w // wpb} w{w % wpb}</text>')
        cells = []  # per column: (lanes fraction or None where the warp did not run, depth, first block, steps)
        for c in range(cols):
            seg = slice(c * bins, min((c + 1) * bins, n_steps))
            ran = mask[seg, w] != 0
            frac = round(float(lanes[seg, w][ran].mean()) / ws, 3) if ran.any() else None
            blk = int(blocks[seg][ran][0]) if ran.any() else -1
            cells.append((frac, int(sp[seg, w].max()), blk, seg))
        c = 0
        while c < cols:  # runs of equal columns are one rectangle (a lockstep kernel is a few per warp)
            frac, depth, blk, seg = cells[c]
            e = c + 1
            while e < cols and cells[e][:2] == (frac, depth):
                e += 1
            x, wdt = left + c * cw, (e - c) * cw - 0.5
            first, last = seg.start, cells[e - 1][3].stop - 1
            if frac is not None:
                parts.append(f'<rect x="{x}" y="{y}" width="{wdt}" height="{rh}" fill="{_active_colour(frac)}">'
                             f'<title>steps {first}-{last}: {frac * ws:.0f}/{ws} lanes, from basic block {blk}, '
                             f'stack depth {depth}</title></rect>')
            shade = int(225 - 165 * (depth - 1) / (depth_scale - 1)) if depth else 250
            parts.append(f'<rect x="{x}" y="{y + rh}" width="{wdt}" height="{dh}" fill="rgb({shade},{shade},{shade})"/>')
            c = e
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="11" fill="#333">step{" (bins of " + str(bins) + ")" if bins > 1 else ""} →</text>')
    parts.append("</svg>")
    n_div = int(result.stats.get("smsp__sass_branch_targets_threads_divergent.sum", 0))
    partial = int(((lanes > 0) & (lanes < ws)).sum())
    legend = ('<p class="legend"><span><i style="background:' + _active_colour(1.0) + '"></i>all lanes active</span>'
              '<span><i style="background:' + _active_colour(0.5) + '"></i>half</span>'
              '<span><i style="background:' + _active_colour(1 / ws) + '"></i>one lane</span>'
              '<span><i style="background:#fff"></i>warp did not run this step</span>'
              f'<span><i style="background:rgb(225,225,225)"></i>thin strip: stack depth 1</span>'
              f'<span><i style="background:rgb(60,60,60)"></i>depth {depth_scale}</span></p>')
    summary = (f'<p class="note" id="divergence-summary" data-steps="{n_steps}" data-warps="{n_warps}" '
               f'data-partial="{partial}" data-max-depth="{int(sp.max())}">{n_steps} steps of {n_warps} warps '
               f'(first wave{"s" if n_warps > wpb else ""} of the launch; rows b&lt;block&gt; w&lt;warp&gt;'
               f'{", the first " + str(shown_w) if shown_w < n_warps else ""}); {partial} warp-steps ran with part of '
               f'the warp; {n_div} divergent branches; deepest reconvergence stack {int(sp.max())}. Hover a cell for '
               f'its lanes, basic block and depth.</p>')
    return head + summary + legend + "".join(parts)


def _memory_svg(acc, arch, costs: dict) -> str:
    ws = arch.warp_size
    lane_w, left = 30, 60
    if acc.space == "global":
        sector, line = arch.sector_size, arch.line_size
        act = acc.active
        lines_touched = sorted({int(a) // line for a, on in zip(acc.addr, act) if on})
        spl = line // sector
        box = 40
        width = max(left + ws * lane_w, left + len(lines_touched[:8]) * (spl * box + 20)) + 20
        height = 250
        p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
             f'<text x="4" y="30" font-size="11">lanes</text>', f'<text x="4" y="190" font-size="11">lines</text>']
        pos = {}
        for k, ln in enumerate(lines_touched[:8]):
            x0 = left + k * (spl * box + 20)
            p.append(f'<text x="{x0}" y="228" font-size="10" fill="#444">line {ln * line:#x}</text>')
            for s in range(spl):
                hit = any(on and int(a) // sector == ln * spl + s for a, on in zip(acc.addr, act))
                p.append(f'<rect x="{x0 + s * box}" y="170" width="{box - 2}" height="40" fill="{"#f7b267" if hit else "#eef1f4"}" '
                         f'stroke="#888"><title>sector {s} of line {ln * line:#x}{": touched" if hit else ": not touched"}</title></rect>'
                         f'<text x="{x0 + s * box + 4}" y="194" font-size="10">s{s}</text>')
                pos[ln * spl + s] = x0 + s * box + box / 2
        for l in range(ws):
            x = left + l * lane_w
            on = bool(act[l])
            p.append(f'<rect x="{x}" y="16" width="{lane_w - 3}" height="22" fill="{"#4c78a8" if on else "#ddd"}">'
                     f'<title>lane {l}: {"address " + hex(int(acc.addr[l])) if on else "inactive"}</title></rect>'
                     f'<text x="{x + 3}" y="31" font-size="10" fill="#fff">{l}</text>')
            if on and int(acc.addr[l]) // sector in pos:
                p.append(f'<line x1="{x + lane_w / 2}" y1="38" x2="{pos[int(acc.addr[l]) // sector]}" y2="170" '
                         f'stroke="#4c78a8" stroke-opacity="0.45"/>')
        if len(lines_touched) > 8:
            p.append(f'<text x="{left}" y="244" font-size="11">... and {len(lines_touched) - 8} more lines</text>')
        p.append("</svg>")
        return "".join(p)
    nb, bw = arch.shared_banks, arch.bank_width
    words: dict[int, dict[int, list[int]]] = {}  # bank -> word -> lanes
    per = max(1, acc.nbytes // bw)
    for l in range(ws):
        if acc.active[l]:
            for k in range(per):
                w = int(acc.addr[l]) // bw + k
                words.setdefault(w % nb, {}).setdefault(w, []).append(l)
    deepest = max((len(v) for v in words.values()), default=1)
    cell, left2, top = 30, 60, 26
    width = left2 + nb * cell + 20
    bh = 15
    height = top + deepest * bh + 40
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
         f'<text x="4" y="{top - 8}" font-size="11">bank</text>']
    for b in range(nb):
        x = left2 + b * cell
        p.append(f'<text x="{x + 6}" y="{top - 8}" font-size="10">{b}</text>')
        for k, (w, ls) in enumerate(sorted(words.get(b, {}).items())):
            colour = "#4c78a8" if len(words[b]) == 1 else "#e4572e"
            p.append(f'<rect x="{x}" y="{top + k * bh}" width="{cell - 3}" height="{bh - 2}" fill="{colour}">'
                     f'<title>bank {b}, word {w} (byte {w * bw}): lanes {", ".join(map(str, ls))}</title></rect>'
                     f'<text x="{x + 3}" y="{top + k * bh + 10}" font-size="9" fill="#fff">{ls[0]}{"+" if len(ls) > 1 else ""}</text>')
    p.append(f'<text x="4" y="{height - 10}" font-size="11">each box: one distinct word a bank is asked for '
             f'(the number: its first lane; + : several lanes, one multicast read); a column of N boxes: an N-way '
             f'conflict</text></svg>')
    return "".join(p)


def memory_view(result, accesses) -> str:
    head = "<h2>Memory</h2>"
    if not accesses:
        why = ("the launch has no global or shared memory instruction" if accesses is not None else
               "the result does not say what was launched (only jaxsimt.launch results can be replayed)")
        return head + f'<p class="note">No accesses to draw: {why}.</p>'
    from jaxsimt.run.addresses import warp_costs

    arch = get_arch(result.arch)
    per_pc = {r["pc"]: r for r in result.per_instruction}
    options, panels = [], []
    # the default: the access with the worst cost (most sectors per request or most conflicts)
    scored = []
    for a in accesses:
        row = per_pc[a.pc]
        c = warp_costs(arch, a, row["op"])
        score = c.get("degree", 0) * 2 if a.space == "shared" else c["sectors"] / max(c["requests"], 1)
        scored.append((a, row, c, score))
    best = max(range(len(scored)), key=lambda i: (scored[i][3], -i))
    for i, (a, row, c, _) in enumerate(scored):
        pid = f"mem-{a.pc}-{a.space}-{a.warp}"
        label = f"pc {a.pc} {row['op']}.{a.space} warp {a.warp} — line {row['line']}: {row['source'][:60]}"
        options.append(f'<option value="{pid}"{" selected" if i == best else ""}>{esc(label)}</option>')
        act = int(a.active.sum())
        if a.space == "global":
            facts = (f'<b data-col="requests" data-v="{c["requests"]}">{c["requests"]}</b> request(s), '
                     f'<b data-col="sectors" data-v="{c["sectors"]}">{c["sectors"]}</b> sectors of {arch.sector_size} '
                     f'bytes in <b data-col="lines" data-v="{c["lines"]}">{c["lines"]}</b> lines of {arch.line_size} '
                     f'bytes for {act} active lanes x {a.nbytes} bytes (the fewest: '
                     f'{-(-act * a.nbytes // arch.sector_size) if act else 0} sectors)')
        else:
            facts = (f'<b data-col="wavefronts" data-v="{c["wavefronts"]}">{c["wavefronts"]}</b> wavefront(s), '
                     f'<b data-col="bank_conflicts" data-v="{c["bank_conflicts"]}">{c["bank_conflicts"]}</b> bank '
                     f'conflicts, conflict degree <b data-col="degree" data-v="{c["degree"]}">{c["degree"]}-way</b> '
                     f'for {act} active lanes x {a.nbytes} bytes')
        addr_list = ", ".join(f"{l}:{int(x):#x}" if on else f"{l}:-" for l, (x, on) in enumerate(zip(a.addr, a.active)))
        totals = (f"all executions of this instruction: {row['warp_exec']:,} warp instructions, "
                  + (f"{row.get('requests', 0):,} requests, {row.get('sectors', 0):,} sectors"
                     if a.space == "global" else f"{row.get('wavefronts', 0):,} wavefronts, "
                                                 f"{row.get('bank_conflicts', 0):,} bank conflicts"))
        panels.append(f'<div class="mem{" on" if i == best else ""}" id="{pid}" data-pc="{a.pc}" data-space="{a.space}" '
                      f'data-warp="{a.warp}"><p>{facts}.<br><span class="note">{esc(totals)}</span></p>'
                      + _memory_svg(a, arch, c)
                      + f'<details><summary>the 32 addresses</summary><pre class="note">{esc(addr_list)}</pre></details></div>')
    note = ('<p class="note">One warp\'s first execution of a memory instruction in block 0 (replayed), its lanes\' '
            'addresses drawn onto 32-byte sectors of 128-byte lines (global) or onto the shared-memory banks; the '
            'numbers are the memory model\'s for that one warp access. The first choice: the costliest access.</p>')
    return (head + note + '<p>instruction: <select id="mempick">' + "".join(options) + "</select></p>"
            + "".join(panels))


def occupancy_view(result) -> str:
    from jaxsimt.units.occupancy import occupancy

    occ = result.occupancy or {}
    head = "<h2>Occupancy</h2>"
    if not occ:
        return head + '<p class="note">No occupancy for this result.</p>'
    arch = get_arch(result.arch)
    s = result.stats
    tpb = int(s["launch__block_size"])
    regs = int(s["launch__registers_per_thread"])
    smem = int(s["launch__shared_mem_per_block_static"])
    lim = occ["limiter"]
    names = [("warps", "warps per SM", f"{arch.max_threads_per_sm // arch.warp_size} warps"),
             ("blocks", "block slots per SM", f"{arch.max_blocks_per_sm} blocks"),
             ("registers", "registers", f"{regs} per thread, {occ['registers_per_block']:,} per block"),
             ("shared_memory", "shared memory", f"{occ['shared_mem_per_block']:,} bytes per block of "
                                                f"{occ['shared_mem_per_sm']:,} per SM")]
    rows = []
    for key, label, what in names:
        v = occ[f"blocks_limit_{key}"]
        on = key in occ.get("limiters", [lim])
        rows.append(f'<tr{" class=hot" if on else ""}><td class="t">{"<b>" if on else ""}{label}{" (limiter)</b>" if on else ""}</td>'
                    f'<td class="t">{esc(what)}</td><td data-col="blocks_limit_{key}" data-v="{v}">'
                    f'{fmt(v) if v < 1 << 30 else "no limit"}</td></tr>')
    table = ('<table id="occupancy-table"><thead><tr><th class="t">limit</th><th class="t">use (allocated)</th><th>blocks per SM</th></tr></thead><tbody>'
             + "".join(rows) + "</tbody></table>")
    facts = (f'<p><b data-col="active_blocks_per_sm" data-v="{occ["active_blocks_per_sm"]}">{occ["active_blocks_per_sm"]}</b> '
             f'blocks x {-(-tpb // arch.warp_size)} warps = <b data-col="active_warps_per_sm" data-v="{occ["active_warps_per_sm"]}">'
             f'{occ["active_warps_per_sm"]}</b> of {occ["max_warps_per_sm"]} warps per SM: theoretical occupancy '
             f'<b data-col="occupancy" data-v="{occ["occupancy"]}">{occ["occupancy"]:.1%}</b>, limited by '
             f'<b>{esc(lim.replace("_", " "))}</b>'
             + (f'; achieved (cycle-level model): {s["timing__achieved_occupancy"]:.1%}' if "timing__achieved_occupancy" in s else "")
             + ".</p>")
    hints = []
    if occ["occupancy"] >= 1.0:
        hints.append("Occupancy is already the largest the SM allows.")
    else:
        for key in occ.get("limiters", [lim]):
            if key == "registers" and regs > 0:
                for r in range(regs - 1, 0, -1):
                    o = occupancy(arch, tpb, r, smem)
                    if o["active_warps_per_sm"] > occ["active_warps_per_sm"]:
                        hints.append(f"registers: at most {r} per thread (now {regs}) give "
                                     f"{o['active_blocks_per_sm']} blocks, occupancy {o['occupancy']:.1%}"
                                     + (f" (then limited by {o['limiter'].replace('_', ' ')})" if o["limiter"] != "registers" else ""))
                        break
            if key == "shared_memory" and smem > 0:
                lo, hi = 0, smem
                want = occ["active_blocks_per_sm"] + 1
                while lo < hi:  # the largest shared memory per block that gives one more block
                    mid = (lo + hi + 1) // 2
                    if occupancy(arch, tpb, regs, mid)["active_blocks_per_sm"] >= want:
                        lo = mid
                    else:
                        hi = mid - 1
                o = occupancy(arch, tpb, regs, lo)
                if o["active_blocks_per_sm"] >= want:
                    hints.append(f"shared memory: at most {lo:,} bytes per block (now {smem:,}) give "
                                 f"{o['active_blocks_per_sm']} blocks, occupancy {o['occupancy']:.1%}")
            if key in ("blocks", "warps"):
                better = []
                for t in (64, 128, 256, 512, 1024):
                    if t <= arch.max_threads_per_block:
                        o = occupancy(arch, t, regs, smem)
                        if o["active_warps_per_sm"] > occ["active_warps_per_sm"]:
                            better.append(f"{t} threads: {o['occupancy']:.1%}")
                if better:
                    hints.append(f"{key.replace('_', ' ')}: larger blocks fill the SM: " + ", ".join(better))
    if not hints:
        hints.append("No single change of registers, shared memory or block size raises it.")
    sizes = []
    for t in (32, 64, 128, 256, 512, 1024):
        if t <= arch.max_threads_per_block:
            o = occupancy(arch, t, regs, smem)
            sizes.append(f'<tr{" class=hot" if t == tpb else ""}><td>{t}</td><td>{o["active_blocks_per_sm"]}</td>'
                         f'<td>{o["occupancy"]:.1%}</td><td class="t">{esc(o["limiter"].replace("_", " "))}</td></tr>')
    size_table = ('<h2>Block size at these registers and shared memory</h2><table><thead><tr><th>threads</th>'
                  '<th>blocks/SM</th><th>occupancy</th><th>limiter</th></tr></thead><tbody>' + "".join(sizes)
                  + "</tbody></table>")
    return (head + facts + table + "<h2>What would raise it</h2><ul id=\"occupancy-hints\">"
            + "".join(f"<li>{esc(h)}</li>" for h in hints) + "</ul>" + size_table)


# --------------------------------------------------------------------------------------------- the page
def page(title: str, subtitle: str, sections: list[tuple[str, str, str]], data: Optional[dict] = None) -> str:
    """One self-contained HTML page: sections (id, tab label, HTML) as tabs; `data` embedded as JSON."""
    nav = "".join(f'<a href="#{sid}">{esc(label)}</a>' for sid, label, _ in sections)
    body = "".join(f'<section id="{sid}">{content}</section>' for sid, _, content in sections)
    blob = ""
    if data is not None:
        blob = ('<script type="application/json" id="report-data">'
                + json.dumps(data, default=float).replace("</", "<\\/") + "</script>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width"><style>{CSS}</style><script>{JS}</script></head>'
            f'<body><header><h1>{esc(title)}</h1><div class="sub">{esc(subtitle)}</div></header><nav>{nav}</nav>'
            f"<main>{body}</main>{blob}</body></html>")


def render(result, accesses=None, title: Optional[str] = None, source_dirs=()) -> str:
    """The report page of one launch result as an HTML string. `accesses`: the replayed accesses of the
    memory view (`jaxsimt.run.addresses.capture`; None: that view says why it is empty); `source_dirs`: folders
    CUDA sources may be read from besides the PTX file's own."""
    from jaxsimt.demangle import demangle

    pretty = demangle(result.kernel) if result.kernel.startswith("_Z") else None
    sub = ((f"{pretty} — " if pretty else "") + f"{result.arch}, grid {tuple(result.grid)}, block {tuple(result.block)}"
           f"{', ' + str(result.stats['emulator__steps']) + ' steps' if 'emulator__steps' in result.stats else ''}"
           " — jaxsimt")
    sections = [("source", "Source", source_view(result, source_dirs)), ("divergence", "Divergence", divergence_view(result)),
                ("memory", "Memory", memory_view(result, accesses)), ("occupancy", "Occupancy", occupancy_view(result))]
    stats = {k: v for k, v in result.stats.items() if isinstance(v, (int, float, np.integer, np.floating))}
    return page(title or f"kernel {result.kernel}", sub, sections, {"kernel": result.kernel, "stats": stats})


def write_report(result, path: str, title: Optional[str] = None, source_dirs=()) -> str:
    """Write `render(result, ...)` to `path`, replaying block 0 for the memory view; returns `path`."""
    from jaxsimt.run.addresses import capture

    text = render(result, capture(result), title=title, source_dirs=source_dirs)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# --------------------------------------------------------------------------------------------- the ladder
def ladder_page(rows: list[dict], M: int, N: int, K: int, arch: str) -> str:
    """The GEMM ladder's rows (`jaxsimt.apps.ladder` JSON rows) as a table and a bar chart of GFLOP/s, predicted
    beside measured, on a log scale."""
    cols = [("variant", "variant", None), ("predicted_ms", "predicted ms", 4), ("predicted_ms_analytical", "analytical ms", 4),
            ("measured_ms", "measured ms", 4), ("gflops", "GFLOP/s", 0), ("limiter", "limiter", None),
            ("sectors_per_request", "sectors/req", 2), ("shared_wavefronts_per_request", "sh. wavefr./req", 2),
            ("occupancy", "occupancy", 3), ("occupancy_limiter", "occ. limiter", None),
            ("simd_efficiency", "SIMD eff.", 3), ("arithmetic_intensity", "FLOP/B (L2)", 2)]
    out = ['<table id="ladder-table"><thead><tr>' + "".join(f'<th{" class=t" if d is None else ""}>{h}</th>'
                                                              for _, h, d in cols) + "</tr></thead><tbody>"]
    for r in rows:
        cells = []
        for key, _, d in cols:
            v = r.get(key)
            cells.append(f'<td class="t" data-col="{key}">{esc(v)}</td>' if d is None else num(v, d, name=key))
        out.append(f'<tr data-variant="{esc(r["variant"])}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    why = "<ul>" + "".join(f"<li><b>{esc(r['variant'])}</b>: {esc(r.get('why', ''))}</li>" for r in rows) + "</ul>"
    flops = 2.0 * M * N * K
    pred = [r["gflops"] for r in rows]
    meas = [flops / (r["measured_ms"] * 1e-3) / 1e9 if r.get("measured_ms") else None for r in rows]
    vals = [v for v in pred + meas if v]
    lo = 10 ** np.floor(np.log10(min(vals))) if vals else 1.0
    hi = 10 ** np.ceil(np.log10(max(vals))) if vals else 10.0
    bw, gap, left, top, h = 26, 30, 70, 20, 260
    width = left + len(rows) * (2 * bw + gap) + 20

    def y(v):
        return top + h - h * (np.log10(v) - np.log10(lo)) / max(np.log10(hi) - np.log10(lo), 1e-9)

    svg = [f'<svg id="ladder-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + h + 70}">']
    e = np.log10(lo)
    while e <= np.log10(hi) + 1e-9:
        yy = y(10 ** e)
        svg.append(f'<line x1="{left}" x2="{width - 10}" y1="{yy}" y2="{yy}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{yy + 4}" font-size="10" text-anchor="end">{10 ** e:,.0f}</text>')
        e += 1
    for i, r in enumerate(rows):
        x = left + i * (2 * bw + gap) + gap / 2
        for k, (v, colour, what) in enumerate(((pred[i], "#4c78a8", "predicted"), (meas[i], "#f58518", "measured"))):
            if v:
                svg.append(f'<rect x="{x + k * bw}" y="{y(v)}" width="{bw - 2}" height="{top + h - y(v)}" fill="{colour}">'
                           f'<title>{esc(r["variant"])} {what}: {v:,.0f} GFLOP/s</title></rect>')
        svg.append(f'<text x="{x}" y="{top + h + 14}" font-size="10" transform="rotate(20 {x} {top + h + 14})">'
                   f'{esc(r["variant"])}</text>')
    svg.append(f'<text x="6" y="{top - 6}" font-size="11">GFLOP/s (log)</text></svg>')
    legend = ('<p class="legend"><span><i style="background:#4c78a8"></i>predicted</span>'
              '<span><i style="background:#f58518"></i>measured (H200, where committed)</span></p>')
    content = "<h2>GEMM ladder</h2>" + legend + "".join(svg) + "".join(out) + why
    return page(f"GEMM ladder {M}x{N}x{K} on {arch}", "jaxsimt ladder", [("ladder", "Ladder", content)],
                {"rows": [{k: v for k, v in r.items() if k != "stats"} for r in rows]})


def write_ladder(rows: list[dict], path: str, M: int, N: int, K: int, arch: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(ladder_page(rows, M, N, K, arch))
    return path
