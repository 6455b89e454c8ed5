"""The HTML report: its numbers against `result.stats` and the per-instruction rows, read from the page as
written and from the DOM of a real browser (headless Chromium, where it can be had), plus screenshots."""
from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.apps import html_report
from jaxsimt.kernels import seeds
from jaxsimt.kernels.micro import shared as micro_shared

N = 32  # the tiled GEMM: 2x2 blocks of 16x16 threads


class Page(HTMLParser):
    """What the report shows, read back from its HTML: the tiles (metric -> value), the source table's line
    rows (col -> value), the memory panels (id -> {col: value}), the occupancy numbers."""

    def __init__(self, text: str):
        super().__init__()
        self.tiles, self.lines, self.mem, self.occ, self.mem_on = {}, [], {}, {}, None
        self._row = self._panel = None
        self._in_occ = False
        self.sections = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "section":
            self.sections.append(a.get("id"))
            self._in_occ = a.get("id") == "occupancy"
        if "tile" in cls and "data-metric" in a:
            self.tiles[a["data-metric"]] = float(a["data-v"])
        if tag == "tr" and "line" in cls:
            self._row = {"line": int(a["data-lineno"]), "hot": "hot" in cls}
            self.lines.append(self._row)
        if tag == "div" and "mem" in cls:
            self._panel = self.mem.setdefault(a["id"], {"pc": int(a["data-pc"]), "space": a["data-space"]})
            if "on" in cls:
                self.mem_on = a["id"]
        v = a.get("data-v")
        col = a.get("data-col")
        if col and v is not None and v != "":
            if self._row is not None and tag == "td":
                self._row[col] = float(v)
            elif self._panel is not None and tag == "b":
                self._panel[col] = float(v)
            elif self._in_occ:
                self.occ[col] = float(v)

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        if tag == "section":
            self._panel = None
            self._in_occ = False


def _gemm():
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, N * N).astype(np.float32)
    b = rng.uniform(-1, 1, N * N).astype(np.float32)
    r = js.launch(seeds.matmul_tiled, grid=(N // 16, N // 16), block=(16, 16),
                  args=(N, N, a, b, np.zeros(N * N, np.float32)), trace=True)
    np.testing.assert_allclose(r["C"].reshape(N, N), a.reshape(N, N) @ b.reshape(N, N), rtol=1e-4, atol=1e-4)
    return r


def _transpose():
    inp = np.arange(64 * 64, dtype=np.float32)
    # pitch 32: column reads of a float[32][32] tile, every lane of a warp in one bank (32-way)
    r = js.launch(micro_shared.transpose(), grid=(2, 2), block=(32, 8),
                  args=(inp, np.zeros(64 * 64, np.float32), 64, 64, 32), trace=True)
    np.testing.assert_array_equal(r["out"], inp.reshape(64, 64).T.reshape(-1))
    return r


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """{name: (result, path of its report)} for the tiled GEMM (DSL) and the bank-conflicted transpose."""
    d = tmp_path_factory.mktemp("report")
    out = {}
    for name, make in (("gemm", _gemm), ("transpose", _transpose)):
        r = make()
        out[name] = (r, r.report(str(d / f"{name}.html")))
    return out


def _sum(stats, prefix):
    return sum(v for k, v in stats.items() if k.startswith(prefix))


def check_page(page: Page, r) -> None:
    """The page's numbers equal the result's."""
    s = r.stats
    assert page.sections == ["source", "divergence", "memory", "occupancy"]
    for k in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "simd_efficiency", "max_stack_depth",
              "smsp__sass_branch_targets_threads_divergent.sum",
              "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "occupancy"):
        assert page.tiles[k] == pytest.approx(s[k]), k
    lines = page.lines

    def total(col):
        return sum(x.get(col, 0) for x in lines)

    # the per-line sums are the kernel's totals
    assert total("warp_exec") == s["smsp__inst_executed.sum"]
    assert total("thread_exec") == s["smsp__thread_inst_executed.sum"]
    assert total("divergent") == s["smsp__sass_branch_targets_threads_divergent.sum"]
    assert total("requests") == _sum(s, "l1tex__t_requests_pipe_lsu_mem_global_op_")
    assert total("sectors") == _sum(s, "l1tex__t_sectors_pipe_lsu_mem_global_op_")
    assert total("wavefronts") == _sum(s, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_")
    assert total("bank_conflicts") == _sum(s, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_")
    # each line's numbers are its instructions' rows (an independent sum over result.per_instruction)
    by_line: dict[int, dict] = {}
    for row in r.per_instruction:
        d = by_line.setdefault(row["line"], {"warp_exec": 0, "thread_exec": 0})
        d["warp_exec"] += row["warp_exec"]
        d["thread_exec"] += row["thread_exec"]
    for x in lines:
        assert x["warp_exec"] == by_line[x["line"]]["warp_exec"], x
        assert x["simd_efficiency"] == pytest.approx(x["thread_exec"] / (x["warp_exec"] * 32))
    hottest = max(lines, key=lambda x: x["warp_exec"])
    assert hottest["hot"]
    # occupancy panel
    for k, stat in (("active_blocks_per_sm", "active_blocks_per_sm"), ("active_warps_per_sm", "active_warps_per_sm"),
                    ("occupancy", "occupancy"), ("blocks_limit_registers", "launch__occupancy_limit_registers"),
                    ("blocks_limit_shared_memory", "launch__occupancy_limit_shared_mem"),
                    ("blocks_limit_warps", "launch__occupancy_limit_warps")):
        assert page.occ[k] == pytest.approx(s[stat]), k


def check_memory(page: Page, name: str) -> None:
    shown = page.mem[page.mem_on]
    if name == "transpose":
        # the column read tile[tx * 32 + ty + j]: 32 lanes, 32 words in one bank, 32 wavefronts
        assert shown["space"] == "shared"
        assert (shown["wavefronts"], shown["bank_conflicts"], shown["degree"]) == (32, 31, 32)
        # the row-wise store into the tile is conflict-free
        stores = [p for p in page.mem.values() if p["space"] == "shared" and p["pc"] != shown["pc"]]
        assert stores and all(p["degree"] == 1 for p in stores)
    else:
        # the GEMM: 16-thread rows, each warp reads two 64-byte row pieces: 2 lines, 4 sectors... per warp
        g = [p for p in page.mem.values() if p["space"] == "global"]
        assert g and all(p["sectors"] == 4 and p["requests"] == 1 and p["lines"] == 2 for p in g)


@pytest.mark.parametrize("name", ["gemm", "transpose"])
def test_page_numbers_equal_stats(reports, name):
    r, path = reports[name]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained
    assert "https://" not in text
    page = Page(text)
    check_page(page, r)
    check_memory(page, name)
    if name == "transpose":
        assert r.stats["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] > 0
        line = next(x for x in page.lines if x.get("bank_conflicts"))
        assert "tile[tx * pitch + ty + j]" in open(path).read()
        assert line["bank_conflicts"] == r.stats["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]


def test_divergence_view_counts_partial_warps(reports):
    """A 48x48 transpose through the same kernel (the machine of the 64x64 one: no new compile) diverges at its
    bounds checks: the trace's partial warp-steps and stack depth appear in the view."""
    inp = np.arange(64 * 64, dtype=np.float32)  # the 64x64 arrays (one memory layout), a 48x48 matrix in them
    r = js.launch(micro_shared.transpose(), grid=(2, 2), block=(32, 8),
                  args=(inp, np.zeros(64 * 64, np.float32), 48, 48, 32), trace=True)
    np.testing.assert_array_equal(r["out"][:48 * 48], inp[:48 * 48].reshape(48, 48).T.reshape(-1))
    text = html_report.divergence_view(r)
    lanes = np.zeros(r.trace["mask"].shape, np.int64)
    for b in range(32):
        lanes += (r.trace["mask"] >> np.uint32(b)) & 1
    partial = int(((lanes > 0) & (lanes < 32)).sum())
    assert partial > 0 and r.stats["smsp__sass_branch_targets_threads_divergent.sum"] > 0
    assert f'data-partial="{partial}"' in text
    assert f'data-max-depth="{r.stats["max_stack_depth"]}"' in text
    assert r.stats["max_stack_depth"] >= 2
    assert "16/32 lanes" in text  # x < 48 in the second column of blocks: lanes 16..31 masked off


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browser(exe, tmp, *args, timeout=90):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp}"]
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("name", ["gemm", "transpose"])
def test_report_in_headless_chromium(reports, name, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install -y chromium); the report's "
                    "numbers are still checked from its HTML by test_page_numbers_equal_stats")
    r, path = reports[name]
    url = "file://" + os.path.abspath(path)
    try:
        dom = _browser(exe, tmp_path / "profile", "--dump-dom", url)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"headless Chromium could not run here: {e}")
    if dom.returncode != 0 or "<section" not in dom.stdout:
        pytest.skip(f"headless Chromium could not load the page (status {dom.returncode}): {dom.stderr[-400:]}")
    page = Page(dom.stdout)  # the DOM after the page's script ran
    check_page(page, r)
    check_memory(page, name)
    # the script shows one view: the source view by default
    assert 'id="divergence" style="display: none;"' in dom.stdout
    # one screenshot per page here (the view the test's numbers are about); every view: the slow case below
    view = "memory" if name == "transpose" else "source"
    png = _screenshot(exe, tmp_path, url, f"{name}_{view}", view)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _screenshot(exe, tmp_path, url, stem, view):
    shots = tmp_path / "screenshots"
    shots.mkdir(exist_ok=True)
    png = shots / f"{stem}.png"
    _browser(exe, tmp_path / "profile", f"--screenshot={png}", "--window-size=1400,1000", f"{url}#{view}")
    assert png.is_file(), f"no screenshot of {url}#{view}"
    return png


@pytest.mark.slow
def test_screenshots_of_every_view(reports, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install -y chromium)")
    for name, (_, path) in reports.items():
        for view in ("source", "divergence", "memory", "occupancy"):
            png = _screenshot(exe, tmp_path, "file://" + os.path.abspath(path), f"{name}_{view}", view)
            assert png.stat().st_size > 10_000  # a drawn page, not a blank one


def test_report_command_refuses_bad_input(tmp_path, capsys):
    from jaxsimt.cli import main

    out = tmp_path / "t.html"
    assert main(["report", "-o", str(out)]) == 2  # neither a PTX file nor --example
    assert "give a PTX file or --example" in capsys.readouterr().err
    assert main(["report", "--example", "nope", "-o", str(out)]) == 2
    assert "unknown" in capsys.readouterr().err
    assert main(["report", "--example", "matmul_tiled", "-o", str(tmp_path)]) == 2  # a folder
    assert main(["report", "--example", "matmul_tiled", "--grid", "2", "-o", str(out)]) == 2
    assert "--grid is for a PTX file" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_report_command_writes_page(tmp_path, capsys):
    from jaxsimt.cli import main

    out = tmp_path / "t.html"
    assert main(["report", "--example", "smem_transpose_naive", "--no-timing", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    page = Page(out.read_text())
    assert page.tiles["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] > 0
    assert page.mem[page.mem_on]["degree"] == 32


@pytest.mark.slow
def test_report_of_ptx_kernel_shows_cuda_and_ptx(tmp_path):
    """A PTX kernel's report: CUDA lines from the `.loc` lines, the PTX text folded under them, stall reasons
    from the cycle-level model."""
    from jaxsimt import ptx

    here = os.path.dirname(os.path.abspath(js.__file__))  # where the PTX's `.file kernels/cuda/...` lies
    path = os.path.join(here, "kernels", "ptx", "micro_shared.ptx")
    inp = np.arange(64 * 64, dtype=np.float32)
    r = ptx.launch(path, "_Z14smem_transposeILi32EEvPKfPfii", (2, 2), (32, 8),
                   [inp, np.zeros(64 * 64, np.float32), 64, 64], trace=True, timing=True, source_dirs=[here])
    out = r.report(str(tmp_path / "p.html"), source_dirs=[here])
    text = open(out).read()
    page = Page(text)
    check_page(page, r)
    assert "__syncthreads();" in text and "ld.global.nc.f32" in text
    assert 'data-col="stall"' in text


def test_ladder_page_shows_rows(tmp_path):
    rows = [{"variant": "naive", "why": "one thread per element", "predicted_ms": 2.0, "predicted_ms_analytical": 2.5,
             "measured_ms": 1.0, "gflops": 1000.0, "limiter": "dram", "sectors_per_request": 16.0,
             "shared_wavefronts_per_request": 0.0, "occupancy": 1.0, "occupancy_limiter": "warps",
             "simd_efficiency": 1.0, "arithmetic_intensity": 0.5},
            {"variant": "tiled", "why": "shared-memory tiles", "predicted_ms": 0.5, "predicted_ms_analytical": 0.4,
             "measured_ms": None, "gflops": 4000.0, "limiter": "shared", "sectors_per_request": 4.0,
             "shared_wavefronts_per_request": 1.0, "occupancy": 0.5, "occupancy_limiter": "registers",
             "simd_efficiency": 1.0, "arithmetic_intensity": 4.0}]
    path = html_report.write_ladder(rows, str(tmp_path / "l.html"), 1024, 1024, 1024, "h200")
    text = open(path).read()
    assert text.count("<rect") == 3  # two predicted bars, one measured
    assert 'data-v="0.5" data-col="predicted_ms"' in text and 'data-variant="tiled"' in text
    assert "shared-memory tiles" in text


@pytest.mark.slow
def test_ladder_command_writes_html(tmp_path):
    from jaxsimt.cli import main

    out = tmp_path / "ladder.html"
    rows = tmp_path / "rows.json"
    assert main(["ladder", "--size", "64", "64", "64", "--rungs", "smem_tiled,coarsened", "--analytical-only",
                 "--recompute", "--json", str(rows), "--html", str(out)]) == 0
    import json

    text = out.read_text()
    for r in json.loads(rows.read_text()):
        assert f'data-v="{r["gflops"]}" data-col="gflops"' in text
