"""Every `jaxsimt` command given a user's mistake: exit status 2, one line on stderr (`jaxsimt CMD: error: ...`)
that names the bad argument, no traceback; an internal error: the traceback and a line asking to report it.
Commands run in-process through `jaxsimt.cli.main`; nothing here launches a kernel except one tiny run."""
import json
import os

import numpy as np
import pytest

from jaxsimt import cli
from jaxsimt.cli import run as run_cli
from jaxsimt.demangle import base_name, demangle, demangle_all

HERE = os.path.dirname(__file__)
SAXPY = os.path.join(HERE, "data", "ptx", "saxpy.ptx")
KPTX = os.path.join(HERE, "..", "jaxsimt", "kernels", "ptx")
DIVERGENCE = os.path.join(KPTX, "micro_divergence.ptx")
GLOBAL = os.path.join(KPTX, "micro_global.ptx")
DIV_ARGS = ["--kernel", "div_none", "--grid", "1", "--block", "32", "--arg", "u32[32]:rand", "--arg",
            "u32[32]:zeros", "--arg", "s32:32", "--arg", "s32:1"]


@pytest.fixture(autouse=True)
def _no_compile_cache(monkeypatch):
    # the tests must not turn on JAX's persistent cache for the whole test process
    monkeypatch.setenv("JAXSIMT_NO_COMPILE_CACHE", "1")


def fails(capsys, argv, *names, rc=2):
    """Run `jaxsimt ARGV`; assert the exit status, one error line naming each of `names`; return the line."""
    got = cli.main(argv)
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert got == rc, cap.err
    assert len(lines) == 1, cap.err
    assert lines[0].startswith(f"jaxsimt {argv[0]}: error: "), lines[0]
    assert "Traceback" not in cap.err
    for n in names:
        assert n in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------- jaxsimt run
def test_run_missing_file_folder_and_text_that_is_not_ptx(tmp_path, capsys):
    fails(capsys, ["run", str(tmp_path / "nope.ptx"), "--list"], "nope.ptx", "does not exist")
    fails(capsys, ["run", str(tmp_path), "--list"], "is a folder")
    text = tmp_path / "notes.txt"
    text.write_text("hello\nthis is not a kernel\n")
    fails(capsys, ["run", str(text), "--list"], "notes.txt", "not PTX", ".version", ".entry")
    binary = tmp_path / "k.cubin"
    binary.write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    fails(capsys, ["run", str(binary), "--list"], "k.cubin", "binary")


def test_run_kernel_not_in_the_file_lists_the_entries(capsys):
    line = fails(capsys, ["run", DIVERGENCE, "--kernel", "nope", "--grid", "1", "--block", "32"], "'nope'")
    assert "div_none" in line and "div_early_return" in line


def test_run_ambiguous_or_missing_kernel(capsys):
    line = fails(capsys, ["run", GLOBAL, "--kernel", "glob_load", "--grid", "1", "--block", "32"], "ambiguous")
    assert "glob_load<float, PStride>" in line
    fails(capsys, ["run", DIVERGENCE, "--grid", "1", "--block", "32"], "5 kernels", "--kernel", "div_loop")


def test_run_unknown_arch_and_bad_dimensions(capsys):
    fails(capsys, ["run", DIVERGENCE, *DIV_ARGS, "--arch", "volta"], "--arch", "volta", "h200")
    fails(capsys, ["run", DIVERGENCE, "--kernel", "div_none", "--grid", "1.5", "--block", "32"], "--grid", "1.5")
    fails(capsys, ["run", DIVERGENCE, "--kernel", "div_none", "--grid", "1", "--block", "0"], "--block")
    fails(capsys, ["run", DIVERGENCE, "--kernel", "div_none", "--block", "32"], "--grid")


@pytest.mark.parametrize("spec, name", [
    ("f32[x]:rand", "f32[x]:rand"), ("f33[4]:rand", "f33"), ("u32[4]:random", "random"), ("s32:abc", "abc"),
    ("nonsense", "nonsense"), ("u32[0]:zeros", "at least 1 element"), ("s32:99999999999", "99999999999"),
    ("u32[-3]:zeros", "u32[-3]"), ("f16:1e9", "1e9"),
])
def test_run_bad_arg_syntax(capsys, spec, name):
    args = list(DIV_ARGS)
    args[args.index("u32[32]:rand")] = spec
    fails(capsys, ["run", DIVERGENCE, *args], name)


def test_run_arg_sizes_checked_against_a_budget_before_allocation(capsys):
    args = list(DIV_ARGS)
    args[args.index("u32[32]:rand")] = "f32[999999999999]:rand"  # 3.6 TiB: refused, never allocated
    fails(capsys, ["run", DIVERGENCE, *args], "f32[999999999999]:rand", "TiB")


def test_run_npy_files(tmp_path, capsys):
    pickled = tmp_path / "obj.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    corrupt = tmp_path / "bad.npy"
    corrupt.write_bytes(b"\x93NUMPY not really")
    complex_ = tmp_path / "c.npy"
    np.save(complex_, np.zeros(32, np.complex64))
    for spec, names in ((str(pickled), ("obj.npy", "pickled")), (f"u32[32]:{corrupt}", ("bad.npy",)),
                        (f"u32[32]:{tmp_path / 'missing.npy'}", ("missing.npy",)), (str(complex_), ("complex64",)),
                        (f"u32[16]:{complex_}", ("32 elements",))):
        args = list(DIV_ARGS)
        args[args.index("u32[32]:rand")] = spec
        fails(capsys, ["run", DIVERGENCE, *args], *names)


def test_run_wrong_number_of_args_and_bad_output_folder(tmp_path, capsys):
    fails(capsys, ["run", DIVERGENCE, *DIV_ARGS[:8]], "4 argument", "got 1", "--arg s32:VALUE")
    f = tmp_path / "afile"
    f.write_text("")
    fails(capsys, ["run", DIVERGENCE, *DIV_ARGS, "--save-outputs", str(f)], "--save-outputs", "afile")
    fails(capsys, ["run", DIVERGENCE, *DIV_ARGS, "--save-outputs", str(f / "sub")], "--save-outputs")
    fails(capsys, ["run", DIVERGENCE, *DIV_ARGS, "--dynamic-smem", "-4"], "--dynamic-smem")


def test_run_help_explains_the_arg_syntax(capsys):
    assert cli.main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for s in ("TYPE[N]:INIT", "TYPE:VALUE", "rand", "zeros", "ones", "arange", "FILE.npy", "[-1, 1)", "[0, 1000)",
              "allow_pickle=False", "g80, fermi, h100, h200", "default: h200", "--list", "--show-outputs"):
        assert s in out, s


def test_run_list_shows_demangled_names_and_parameter_types(capsys):
    assert cli.main(["run", DIVERGENCE, "--list"]) == 0
    out = capsys.readouterr().out
    assert "div_none(unsigned int const*, unsigned int*, int, int)" in out
    assert "--kernel div_none" in out and "--arg u32[N]:rand" in out and "--arg s32:VALUE" in out
    assert cli.main(["run", GLOBAL, "--list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    first = listing["kernels"][0]
    assert first["entry"] == "_Z9glob_loadIf7PStrideEvPT_Pfi"
    assert first["demangled"] == "void glob_load<float, PStride>(float*, float*, int)"
    assert [p["ptx_type"] for p in first["params"]] == ["u64", "u64", "u32"]
    assert first["kernel_option"] == "glob_load<float, PStride>"


def test_kernel_by_demangled_name():
    module = run_cli.load_ptx(GLOBAL)
    want = "_Z9glob_loadIf7PStrideEvPT_Pfi"
    for name in (want, "glob_load<float, PStride>", "glob_load<float,PStride>",
                 "void glob_load<float, PStride>(float*, float*, int)"):
        assert run_cli.resolve_kernel(module, name) == want
    assert run_cli.resolve_kernel(run_cli.load_ptx(DIVERGENCE), "div_loop") == "_Z8div_loopPKjPjii"
    assert run_cli.resolve_kernel(run_cli.load_ptx(SAXPY), None) == "saxpy"  # the file's only kernel


def test_show_outputs_summary():
    s = run_cli.summarize_array(np.array([3, 1, 2, 7], np.uint32))
    assert s == {"shape": [4], "dtype": "uint32", "first": [3, 1, 2, 7], "min": 1, "max": 7, "mean": 3.25,
                 "nonfinite": 0}
    s = run_cli.summarize_array(np.array([np.nan, 1.5, -2.0], np.float32))
    assert s["min"] == -2.0 and s["max"] == 1.5 and s["nonfinite"] == 1


def test_run_show_outputs_on_a_tiny_launch(capsys):
    argv = ["run", SAXPY, "--grid", "1", "--block", "32", "--arg", "s32:32", "--arg", "f32:2", "--arg",
            "f32[32]:ones", "--arg", "f32[32]:arange", "--no-timing", "--show-outputs"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    line = [x for x in out.splitlines() if x.strip().startswith("arg3")][0]
    assert "float32[32]" in line and "min 2" in line and "max 33" in line and "[2, 3, 4, 5, 6, 7, ...]" in line
    assert cli.main(argv + ["--json"]) == 0
    outs = json.loads(capsys.readouterr().out)["outputs"]
    assert outs["arg3_saxpy_param_3"]["max"] == 33.0


def test_internal_error_shows_the_traceback_and_asks_for_a_report(monkeypatch, capsys):
    def boom(path):
        raise RuntimeError("an invariant broke")

    monkeypatch.setattr(run_cli, "load_ptx", boom)
    assert cli.main(["run", DIVERGENCE, "--list"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "an invariant broke" in err
    assert err.strip().splitlines()[-1].startswith("jaxsimt run: internal error:") and "report" in err


def test_unknown_command(capsys):
    assert cli.main(["frobnicate"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "frobnicate" in lines[0] and "ladder" in lines[0]


# --------------------------------------------------------------------------------------------- the other commands
def test_ladder_errors(tmp_path, capsys):
    fails(capsys, ["ladder", "--arch", "v100"], "--arch", "v100")
    fails(capsys, ["ladder", "--rungs", "naive,smem_tiled"], "--rungs", "'naive'", "naive_coalesced")
    fails(capsys, ["ladder", "--size", "0", "64", "64"], "--size", "M = 0")
    fails(capsys, ["ladder", "--size", "64", "64"], "--size")
    fails(capsys, ["ladder", "--plot", str(tmp_path)], "--plot", "folder")
    fails(capsys, ["ladder", "--json", str(tmp_path / "no" / "rows.json")], "--json", "does not exist")
    fails(capsys, ["ladder", "--cycle-level", "--analytical-only"], "--cycle-level", "--analytical-only")
    fails(capsys, ["ladder", "--analytical-only", "--timeline", str(tmp_path / "t.json")], "--timeline")
    fails(capsys, ["ladder", "--timeline", str(tmp_path)], "--timeline", "folder")
    fails(capsys, ["ladder", "--workers", "-1"], "--workers")


def test_ladder_help_shows_rungs_size_and_arch(capsys):
    assert cli.main(["ladder", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for s in ("naive_uncoalesced", "register_tiled", "default: 4096 4096 4096", "default: h200", "g80, fermi"):
        assert s in out, s


def test_demo_errors(capsys):
    fails(capsys, ["demo", "--arch", "kepler"], "--arch", "kepler")
    fails(capsys, ["demo", "--size", "10"], "--size 10")
    fails(capsys, ["demo", "--size", "ten"], "--size", "ten")


def test_occupancy_errors(capsys):
    fails(capsys, ["occupancy", "--arch", "nope", "--threads", "32", "--regs", "32"], "--arch", "nope")
    fails(capsys, ["occupancy", "--threads", "2000", "--regs", "32"], "--threads 2000", "1024")
    fails(capsys, ["occupancy", "--threads", "256", "--regs", "300"], "--regs 300", "255")
    fails(capsys, ["occupancy", "--threads", "0", "--regs", "32"], "threads")
    fails(capsys, ["occupancy", "--threads", "256"], "--regs")


def test_validate_errors(capsys):
    fails(capsys, ["validate", "--arch", "g80"], "--arch g80", "h200")
    fails(capsys, ["validate", "--arch", "p100"], "--arch", "p100")
    fails(capsys, ["validate", "--kernels", "("], "--kernels", "'('")
    fails(capsys, ["validate", "--kernels", "no_such_kernel"], "no_such_kernel")


def test_sweep_errors(capsys):
    fails(capsys, ["sweep", "--configs", "foo:T=1"], "--configs", "'foo'")
    fails(capsys, ["sweep", "--configs", "smem_tiled:X=3"], "--configs", "'X'")
    fails(capsys, ["sweep", "--configs", "smem_tiled:T=x"], "--configs", "smem_tiled:T=x")
    fails(capsys, ["sweep", "--configs", "smem_tiled:T=7"], "--configs", "T=7")
    fails(capsys, ["sweep", "--size", "0", "64", "64"], "--size")
    fails(capsys, ["sweep", "--arch", "x"], "--arch")


@pytest.mark.parametrize("cmd", list(cli.COMMANDS))
def test_every_command_shows_arch_choices_and_default(cmd, capsys):
    assert cli.main([cmd, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--arch ARCH" in out and "g80, fermi, h100, h200" in out and "default: h200" in out


# --------------------------------------------------------------------------------------------- demangling
def test_own_demangler_matches_cxxfilt_on_the_project_kernels():
    import glob
    import re
    import shutil

    names = set()
    for path in glob.glob(os.path.join(KPTX, "*.ptx")) + glob.glob(os.path.join(HERE, "data", "ptx", "*.ptx")):
        with open(path, encoding="utf-8") as f:
            names |= set(re.findall(r"\.entry\s+(\w+)", f.read()))
    names = sorted(names)
    ours = demangle_all(names, use_cxxfilt=False)
    if shutil.which("c++filt"):
        assert ours == demangle_all(names)
    assert demangle("_Z9gemm_wmmaPK6__halfS1_Pfiii") == "gemm_wmma(__half const*, __half const*, float*, int, int, int)"


@pytest.mark.parametrize("mangled, want", [
    ("_ZN2ns6kernelEPfi", "ns::kernel(float*, int)"),
    ("_ZN2ns6kernelIiEEvPT_", "void ns::kernel<int>(int*)"),
    ("_Z3fooPKcS0_", "foo(char const*, char const*)"),
    ("_Z1fIfLi4EEvPT_S1_", "void f<float, 4>(float*, float*)"),
    ("_Z6kernelILj8EEvPj", "void kernel<8u>(unsigned int*)"),
    ("_ZN12_GLOBAL__N_16kernelEv", "(anonymous namespace)::kernel()"),
    ("_Z1fSt6vectorIiSaIiEE", "f(std::vector<int, std::allocator<int> >)"),
    ("saxpy", None), ("_Z1fPA4_f", None), ("_Zgarbage", None),
])
def test_own_demangler(mangled, want):
    assert demangle(mangled) == want


def test_base_names():
    assert base_name("void glob_load<float, PStride>(float*, float*, int)") == "glob_load"
    assert base_name("ns::f(int)") == "ns::f"
    assert base_name("(anonymous namespace)::kernel()") == "(anonymous namespace)::kernel"


def test_a_faulting_kernel_exits_1_with_the_fault_report(capsys):
    # n = 64 threads read arrays of 32 floats: the kernel's own out-of-bounds load, not a usage error
    argv = ["run", SAXPY, "--grid", "1", "--block", "64", "--arg", "s32:64", "--arg", "f32:2", "--arg",
            "f32[32]:ones", "--arg", "f32[32]:ones", "--no-timing"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("jaxsimt run: error: the kernel faulted:") and "out-of-bounds" in err
    assert "Traceback" not in err


def test_a_ptx_syntax_error_is_one_line_with_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n .param .u64 p\n)\n{\n"
                   "  mov.u32 %r1, ;\n  ret;\n}\n")
    fails(capsys, ["run", str(bad), "--list"], "bad.ptx:8")


def _ladder_row(name, ms):
    return {"variant": name, "why": "what this rung changes", "predicted_ms": ms, "predicted_ms_analytical": ms * 0.9,
            "measured_ms": ms * 1.1, "gflops": 137438.95 / ms, "limiter": "latency", "sectors_per_request": 16.0,
            "shared_wavefronts_per_request": 10.25, "occupancy": 0.75, "occupancy_limiter": "shared_memory",
            "simd_efficiency": 0.999, "arithmetic_intensity": 1234.56,
            "stats": {"smsp__inst_executed.sum": 21_474_836_480},
            "timing": {"stall_math_pipe_throttle_per_issue": 123.4, "stall_selected_per_issue": 1.0}}


@pytest.mark.parametrize("cycle_level", [True, False])
def test_ladder_table_fits_120_columns_without_cutting_numbers(cycle_level):
    from rich.console import Console

    from jaxsimt.apps import ladder

    rows = [_ladder_row(n, ms) for n, ms in (("naive_uncoalesced", 12345.678), ("register_tiled", 1.5e-4),
                                             ("wmma", 8.921))]
    console = Console(width=ladder.TABLE_WIDTH, record=True, file=open(os.devnull, "w"))
    ladder.print_table(rows, 4096, 4096, 4096, "h200", cycle_level, console)
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 120
    for s in ("12,346", "1.50e-04", "21,475", "1,235", "uncoalesced", "0.999", "smem"):
        assert s in text, s
    assert ("11,111" in text) == cycle_level  # the analytical column only beside a cycle-level prediction
    # a realistic ladder (times of 0.5 ms to 12 s) fits in one table; the extreme GFLOP/s above needed two
    rows[1] = _ladder_row("register_tiled", 0.5)
    console = Console(width=ladder.TABLE_WIDTH, record=True, file=open(os.devnull, "w"))
    ladder.print_table(rows, 4096, 4096, 4096, "h200", cycle_level, console)
    text = console.export_text()
    assert "(continued)" not in text and "21,475" in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 120


def test_ladder_computes_once_for_the_table_and_the_json(monkeypatch, tmp_path, capsys):
    from jaxsimt.apps import ladder

    calls = []

    def fake_analyse_all(todo, M, N, K, arch, timing=False, **kw):
        calls.extend(r.name for r in todo)
        return [dict(_ladder_row(r.name, 1.0), timing={}, cycles=None) for r in todo], []

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(ladder, "analyse_all", fake_analyse_all)
    argv = ["ladder", "--size", "32", "32", "32", "--rungs", "naive_coalesced", "--analytical-only"]
    assert cli.main(argv + ["--json", str(tmp_path / "rows.json")]) == 0  # the table and the file, one computation
    assert "GEMM ladder" in capsys.readouterr().out and calls == ["naive_coalesced"]
    with open(tmp_path / "rows.json") as f:
        assert json.load(f)[0]["variant"] == "naive_coalesced"
    assert cli.main(argv + ["--json"]) == 0  # a later command with the same code reuses the rows
    assert json.loads(capsys.readouterr().out)[0]["predicted_ms"] == 1.0 and calls == ["naive_coalesced"]
    assert cli.main(argv + ["--json", "--recompute"]) == 0
    assert len(calls) == 2
    assert cli.main(argv[:-1] + ["--json"]) == 0 and len(calls) == 3  # another model: another computation
