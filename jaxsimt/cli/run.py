"""`jaxsimt run`: run one PTX kernel with arguments described on the command line.

    jaxsimt run saxpy.ptx --list
    jaxsimt run saxpy.ptx --kernel saxpy --grid 4 --block 256 \
        --arg s32:1000 --arg f32:2.5 --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --json
    jaxsimt run saxpy.cu --kernel saxpy ...        # CUDA source: compiled by the local nvcc first

One `--arg` per kernel parameter, in order: a scalar `TYPE:VALUE` (`s32:7`, `f32:1.5`, `u64:0x10`), or an array
`TYPE[N]:INIT` with INIT one of rand (floats uniform in [-1, 1), integers uniform in [0, 1000), from --seed),
zeros, ones, arange, or a path to a .npy file (loaded with allow_pickle=False), or a bare path to a .npy file (its
own dtype and size), or `bool[N]:INIT` (C++ bools, rand uniform 0/1), or `@K` / `@K+N` (the pointer of the earlier
argument K, moved by N elements: aliased and offset pointers into one buffer). Arrays are passed as pointers;
`--const NAME=SPEC` fills a module .const/.global variable. `--kernel` takes the entry's name as in the file
(mangled), its demangled signature, or its demangled name alone where only one entry has it; `--list` shows them.
"""
from __future__ import annotations

import json
import os
import re
import sys

import numpy as np

from jaxsimt import types as T
from jaxsimt.run.command import (ArgumentParser, add_arch, check_input_file, check_output_dir, check_output_file,
                             command, human_bytes, memory_budget)
from jaxsimt.errors import UsageError
from jaxsimt.timing.replay import REPLAYS

_ARRAY = re.compile(r"^(\w+)\[([^\]]*)\]:(.+)$")
_REF = re.compile(r"^@(\d+)(?:([+-])(\d+))?$")
_TYPES = [t.name for t in T.ALL if t.name != "pred"]
INITS = ("rand", "zeros", "ones", "arange", "uninit")
BOOL_INITS = ("rand", "zeros", "ones")

ARG_HELP = """\
kernel arguments, one --arg per parameter, in order:
  TYPE:VALUE       a scalar, e.g. s32:1000, f32:2.5, u64:0x10
  TYPE[N]:INIT     an array of N elements passed as a pointer; INIT is one of
                     rand      floats uniform in [-1, 1), integers uniform in [0, 1000), from --seed
                     zeros, ones, arange (0, 1, 2, ...)
                     uninit    allocated but never written by the host (zeros; --check initcheck
                               reports reads of it that no thread wrote first)
                     FILE.npy  N elements from a .npy file, converted to TYPE (allow_pickle=False)
  bool[N]:INIT     an array of C++ bools (one byte each); INIT is one of
                     rand      0 or 1, each with probability 1/2, from --seed
                     zeros, ones, FILE.npy (nonzero is true)
  FILE.npy         an array with the file's own dtype and size
  @K               the pointer of the earlier argument K (0-based): the same buffer, as host code
                     passing one allocation twice; stores through one are seen through the other
  @K+N, @K-N       argument K's pointer moved by N elements of its buffer's type (buf + N in host
                     code); it must stay within the buffer
TYPE is one of {types}.
`jaxsimt run FILE.ptx --list` shows each kernel's parameters.""".format(types=", ".join(_TYPES))

CONST_HELP = """\
fill a module .const/.global variable before the launch, as cudaMemcpyToSymbol (repeatable):
  NAME=TYPE[N]:INIT, NAME=bool[N]:INIT, NAME=TYPE:VALUE or NAME=FILE.npy, the value as for --arg;
  its bytes are copied from the variable's start, the rest keeps the module's initializer"""

EPILOG = """\
examples:
  jaxsimt run saxpy.ptx --list
  jaxsimt run saxpy.ptx --kernel saxpy --grid 4 --block 256 --arg s32:1000 --arg f32:2.5 \\
      --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --show-outputs
  jaxsimt run real_cuda.ptx --kernel axpy_alias --grid 8 --block 128 \\
      --arg f32:0.3 --arg 'f32[1000]:rand' --arg @1 --arg s32:1000       (x and y one buffer)
  jaxsimt run real_cuda.ptx --kernel shift_add --grid 8 --block 128 \\
      --arg 'f32[1100]:rand' --arg @0+37 --arg s32:1000                  (q = p + 37 elements)
  jaxsimt run real_cuda.ptx --kernel const_poly --grid 8 --block 128 --const 'coef=f32[4]:rand' \\
      --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --arg s32:1024
"""


class ArgSpecError(UsageError):
    """An --arg or --const that does not parse or does not fit."""


def _where(spec: str, opt: str = "--arg") -> str:
    return f"{opt} {spec!r}"


def _type(name: str, where: str) -> T.DType:
    if name == "bool":
        return T.pred  # numpy's bool: one byte per element, as C++'s bool
    if name not in T.BY_NAME or name == "pred":
        raise ArgSpecError(f"{where}: unknown type {name!r} (use one of {', '.join(_TYPES)}, or bool for an array)")
    return T.BY_NAME[name]


def _load_npy(path: str, where: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise ArgSpecError(f"{where}: no such .npy file {path!r}")
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any failure to read the user's file is the user's to fix
        why = "it holds Python objects (pickled), which are refused" if "allow_pickle" in str(e) else \
            f"not a readable .npy file ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'corrupt'})"
        raise ArgSpecError(f"{where}: cannot load {path!r}: {why}") from None
    if not isinstance(a, np.ndarray):
        raise ArgSpecError(f"{where}: {path!r} is an .npz archive, not one array (.npy)")
    return a


def _scalar_value(t: T.DType, val: str, where: str):
    try:
        v = float(val) if t.is_float else int(val, 0)
    except ValueError:
        raise ArgSpecError(f"{where}: {val!r} is not a {t.name} value") from None
    if t.is_float:
        with np.errstate(over="ignore"):  # an overflow is reported below, by name
            out = np.asarray(v).astype(t.np_dtype)
        if np.isfinite(v) and not np.isfinite(out):
            raise ArgSpecError(f"{where}: {val} does not fit in {t.name}")
        return out[()]
    info = np.iinfo(t.np_dtype)
    lo = -(1 << (t.bits - 1)) if t.kind == "b" else info.min  # b types take signed or unsigned spellings
    if not lo <= v <= info.max:
        raise ArgSpecError(f"{where}: {val} is outside the range of {t.name} [{info.min}, {info.max}]")
    return np.asarray(v & ((1 << t.bits) - 1) if v < 0 and t.kind == "b" else v).astype(t.np_dtype)[()]


def arg_bytes(spec: str, where: str | None = None) -> int:
    """Bytes an --arg will allocate (0 for scalars, files and references to earlier arguments), from its text
    alone: checked before any allocation. Raises ArgSpecError for a malformed array size."""
    where = where or _where(spec)
    m = _ARRAY.match(spec)
    if not m:
        return 0
    t = _type(m.group(1), where)
    size = m.group(2).strip()
    if not size.isdigit():
        raise ArgSpecError(f"{where}: the array size {size!r} is not a whole number of elements")
    n = int(size)
    if n < 1:
        raise ArgSpecError(f"{where}: an array needs at least 1 element")
    return n * t.size


def parse_arg(spec: str, rng: np.random.Generator, where: str | None = None):
    """One --arg SPEC (not a reference @K) -> a numpy scalar or array."""
    where = where or _where(spec)
    if spec.endswith(".npy") and ":" not in spec:
        a = _load_npy(spec, where)
        try:
            T.as_dtype(a.dtype)
        except TypeError:
            raise ArgSpecError(f"{where}: the file's dtype {a.dtype} is not a kernel type (use one of "
                               f"{', '.join(_TYPES)}, bool, or TYPE[N]:{spec} to convert)") from None
        if a.size == 0:
            raise ArgSpecError(f"{where}: the file holds no elements")
        return a.reshape(-1) if a.ndim != 1 else a
    m = _ARRAY.match(spec)
    if m:
        tname, init = m.group(1), m.group(3)
        t = _type(tname, where)
        n = arg_bytes(spec, where) // t.size
        dt = np.dtype(t.np_dtype)
        if tname == "bool" and init in ("rand", "arange", "uninit"):
            if init in ("arange", "uninit"):
                raise ArgSpecError(f"{where}: bool arrays take {', '.join(BOOL_INITS)} or a .npy path, not {init}")
            return rng.integers(0, 2, n).astype(np.bool_)
        if init == "rand":
            if t.is_float:
                return rng.uniform(-1.0, 1.0, n).astype(dt)
            return rng.integers(0, 1000, n).astype(dt)
        if init == "zeros":
            return np.zeros(n, dt)
        if init == "uninit":
            from jaxsimt.machine.sanitizer import uninit

            return uninit(n, dt)
        if init == "ones":
            return np.ones(n, dt)
        if init == "arange":
            return np.arange(n).astype(dt)
        if init.endswith(".npy"):
            a = _load_npy(init, where)
            if a.size != n:
                raise ArgSpecError(f"{where}: {init!r} holds {a.size} elements, not {n}")
            try:
                return a.astype(dt).reshape(-1)
            except (TypeError, ValueError):
                raise ArgSpecError(f"{where}: {init!r} holds {a.dtype} values, which do not convert to "
                                   f"{tname}") from None
        inits = BOOL_INITS if tname == "bool" else INITS
        raise ArgSpecError(f"{where}: unknown initializer {init!r} (one of {', '.join(inits)} or a .npy path)")
    if ":" not in spec:
        raise ArgSpecError(f"{where}: expected TYPE:VALUE, TYPE[N]:INIT, FILE.npy or @K (see --help)")
    tname, val = spec.split(":", 1)
    if "[" in tname or "]" in tname:
        raise ArgSpecError(f"{where}: an array is TYPE[N]:INIT with N a whole number, e.g. f32[1024]:rand")
    if tname == "bool":
        raise ArgSpecError(f"{where}: bool is for arrays (bool[N]:INIT); a bool scalar parameter is u8:0 or u8:1")
    return _scalar_value(_type(tname, where), val.strip(), where)


def _is_buffer(v) -> bool:
    return isinstance(v, np.ndarray) and v.ndim > 0


def _resolve_ref(spec: str, k: int, specs, values, pointer_of) -> tuple:
    """`@K`, `@K+N`, `@K-N` of argument k -> (buffer's argument index, element offset) of the pointer."""
    where = f"{_where(spec)} (argument {k})"
    m = _REF.match(spec.replace(" ", ""))
    if not m:
        raise ArgSpecError(f"{where}: expected @K or @K+N (K an earlier argument's index, N whole elements)")
    ref = int(m.group(1))
    if ref >= k:
        earlier = f"arguments 0 to {k - 1} come before it" if k else "it is the first argument"
        raise ArgSpecError(f"{where}: argument {ref} is not an earlier argument ({earlier})")
    if ref not in pointer_of:
        raise ArgSpecError(f"{where}: argument {ref} ({specs[ref]}) is a scalar, not a buffer")
    owner, base = pointer_of[ref]
    step = int(m.group(3) or 0) * (-1 if m.group(2) == "-" else 1)
    buf = values[owner]
    off = base + step
    if not 0 <= off <= buf.size:
        raise ArgSpecError(f"{where}: element offset {off} is outside the buffer of argument {owner} "
                           f"({buf.size} {T.as_dtype(buf.dtype).name if buf.dtype != np.bool_ else 'bool'} "
                           f"elements; a pointer may be at 0 to {buf.size})")
    return owner, off


class LaunchArgs:
    """The command line's arguments as `jaxsimt.ptx.launch` takes them: `values` (arrays, `(array, offset)`
    pointers into an earlier argument's array, scalars) and, for every pointer argument, `pointer_of[k]` =
    (index of the argument that allocated its buffer, element offset)."""

    def __init__(self, values, pointer_of):
        self.values, self.pointer_of = values, pointer_of

    def buffers(self) -> dict:
        """{owner argument: [(argument, element offset), ...]}: every buffer once, with the pointers into it."""
        out: dict = {}
        for k, (owner, off) in sorted(self.pointer_of.items()):
            out.setdefault(owner, []).append((k, off))
        return out


def parse_args_checked(specs, rng: np.random.Generator, budget: int | None = None, consts=()) -> LaunchArgs:
    """All --args (and the arrays of --const), their total size checked against the memory budget before
    anything is allocated; references @K resolved to the buffer of argument K."""
    budget = memory_budget() if budget is None else budget
    sized = [(_where(s), s) for s in specs] + [(_where(f"{n}={s}", "--const"), s) for n, s in consts]
    sizes = [arg_bytes(s, w) for w, s in sized]
    if sum(sizes) > budget:
        big = max(range(len(sized)), key=lambda k: sizes[k])
        raise ArgSpecError(f"{sized[big][0]}: the arrays need {human_bytes(sum(sizes))} in all, more than the "
                           f"{human_bytes(budget)} a launch may use on this machine (half its memory)")
    values, pointer_of = [], {}
    for k, s in enumerate(specs):
        if s.lstrip().startswith("@"):
            owner, off = _resolve_ref(s.strip(), k, specs, values, pointer_of)
            pointer_of[k] = (owner, off)
            buf = values[owner]
            values.append(buf if off == 0 else (buf, off))  # the same array object: one buffer
            continue
        v = parse_arg(s, rng)
        if _is_buffer(v):
            pointer_of[k] = (k, 0)
        values.append(v)
    return LaunchArgs(values, pointer_of)


def _module_vars(module) -> dict:
    """{name: bytes} of the module's .const/.global variables that a launch can fill (those of known size)."""
    out = {}
    for v in module.globals:
        if v.space in ("const", "global") and v.elements is not None:
            t = T.BY_NAME.get(v.dtype)
            out[v.name] = v.elements * (t.size if t is not None and t.name != "pred" else 1)
    return out


def split_consts(specs) -> list:
    """--const NAME=SPEC texts -> [(NAME, SPEC)], each name once."""
    out, seen = [], set()
    for text in specs:
        name, eq, spec = text.partition("=")
        name, spec = name.strip(), spec.strip()
        if not eq or not name or not spec:
            raise ArgSpecError(f"{_where(text, '--const')}: expected NAME=VALUE, e.g. coef=f32[4]:rand or "
                               f"coef=coef.npy")
        if name in seen:
            raise ArgSpecError(f"{_where(text, '--const')}: {name!r} is given twice")
        seen.add(name)
        out.append((name, spec))
    return out


def parse_consts(module, consts, rng: np.random.Generator) -> dict:
    """[(NAME, SPEC)] -> {NAME: array} for `constants=`, checked against the module's variables."""
    avail = _module_vars(module)
    out = {}
    for name, spec in consts:
        where = _where(f"{name}={spec}", "--const")
        if name not in avail:
            listing = ", ".join(f"{n} ({b} bytes)" for n, b in sorted(avail.items())) or "none"
            raise ArgSpecError(f"{where}: {module.filename} has no .const/.global variable {name!r}; variables: "
                               f"{listing}")
        if spec.startswith("@"):
            raise ArgSpecError(f"{where}: a variable takes a value (TYPE[N]:INIT, TYPE:VALUE or FILE.npy), not @K")
        v = np.asarray(parse_arg(spec, rng, where))
        if v.nbytes > avail[name]:
            raise ArgSpecError(f"{where}: {v.nbytes} bytes do not fit in {name!r}, which holds {avail[name]} bytes")
        out[name] = v
    return out


def _dim3(s: str):
    import argparse

    try:
        v = tuple(int(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X[,Y[,Z]] (whole numbers), got {s!r}") from None
    if not 1 <= len(v) <= 3 or min(v) < 1:
        raise argparse.ArgumentTypeError(f"expected 1 to 3 positive integers, got {s!r}")
    return v


def parser(prog: str = "jaxsimt run", description: str | None = None, file_required: bool = True,
           outputs: bool = True) -> ArgumentParser:
    """The options of `jaxsimt run`; `jaxsimt report` takes them with the PTX file optional and without the
    options about printing and saving outputs (outputs=False)."""
    p = ArgumentParser(prog=prog, description=description or __doc__.split("\n\n")[0].split(": ", 1)[1],
                       epilog=EPILOG)
    p.add_argument("file", nargs=None if file_required else "?",
                   help="a .ptx file (the text nvcc -ptx writes), or a CUDA source .cu compiled first with the "
                        "local nvcc (nvcc -arch=sm_90 -O3 -lineinfo -ptx)")
    p.add_argument("--nvcc-option", action="append", default=[], metavar="OPT",
                   help="with a .cu file: an extra nvcc option, e.g. --nvcc-option=-DN=256 (repeatable)")
    p.add_argument("--list", action="store_true",
                   help="list the file's kernels (demangled names, parameter types) and exit")
    p.add_argument("--kernel", metavar="NAME",
                   help="entry to run: its name in the file, its demangled signature, or its demangled name where "
                        "unambiguous (default: the file's only kernel)")
    p.add_argument("--grid", type=_dim3, metavar="X[,Y,Z]", help="blocks in the grid (required to run)")
    p.add_argument("--block", type=_dim3, metavar="X[,Y,Z]", help="threads per block (required to run)")
    p.add_argument("--arg", action="append", default=[], metavar="SPEC", help=ARG_HELP)
    p.add_argument("--const", action="append", default=[], metavar="NAME=SPEC", help=CONST_HELP)
    if outputs:
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("--show-outputs", action="store_true",
                       help="summarise each buffer after the run, once (naming every argument that points into it), "
                            "and each module .global variable: shape, dtype, min/max/mean, first values")
    add_arch(p)
    if outputs:
        p.add_argument("--save-outputs", metavar="DIR",
                       help="write each buffer once as DIR/argK_name.npy (K: its first argument), each module "
                            ".global variable as DIR/global_NAME.npy, and DIR/outputs.json (which arguments point "
                            "into which file, at which element offset)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rand initializer")
    p.add_argument("--dynamic-smem", type=int, default=0, metavar="BYTES", help="dynamic shared memory per block")
    p.add_argument("--regs", type=int, default=None, help="registers per thread for occupancy (default: estimated)")
    p.add_argument("--mode", choices=("stack", "its"), default="stack",
                   help="execution mode: stack (reconvergence stack) or its (Independent Thread Scheduling, Volta "
                        "and later; docs/its.md)")
    p.add_argument("--no-contract", action="store_true",
                   help="keep plain PTX mul + add/sub as two roundings (default: fused into fma as ptxas does; "
                        "docs/ptx.md)")
    p.add_argument("--carveout", type=int, default=None, metavar="KB",
                   help="L1/shared split: preferred shared memory per SM in KB (default: the largest allowed)")
    p.add_argument("--no-timing", action="store_true",
                   help="skip the cycle-level timing model (cycles, predicted_ms, stall reasons)")
    p.add_argument("--l1", choices=("tags", "footprint"), default="tags",
                   help="the timing model's L1: tags (the traced loads through a model of one SM's L1: one more "
                        "run of the traced blocks) or footprint (an estimate from the arrays' bytes; faster)")
    p.add_argument("--replay", choices=REPLAYS, default="exact",
                   help="the timing model's replay: exact (cycle by cycle, the reference), fast (every warp "
                        "scheduler's issue per step) or interval (the warps alone, then mean value analysis of what "
                        "they share; the fastest; docs/timing.md)")
    p.add_argument("--check", metavar="CHECKS", default="",
                   help="run the sanitizer's checks: all, or a comma-separated list of memcheck, racecheck, "
                        "initcheck, synccheck (bounds are always checked); the first finding stops the run "
                        "unless --collect")
    p.add_argument("--collect", action="store_true",
                   help="with --check: keep running and report every finding (exit status 1 when there is one)")
    p.add_argument("--timeline", metavar="FILE.json", default="",
                   help="write the cycle-level model's issue timeline to FILE.json in the Chrome / Perfetto "
                        "trace-event format (one track per SM scheduler and warp slot, stall reasons as slices)")
    return p


def _has_timing(arch: str) -> bool:
    from jaxsimt.arch import get_arch

    try:
        return get_arch(arch).timing is not None
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------- the PTX file
def compile_cuda(path: str, options) -> str:
    """Compile a .cu file with the local nvcc; return the path of its PTX (a file in a temporary folder that
    lives as long as the process)."""
    import atexit
    import shutil
    import tempfile

    from jaxsimt import cuda

    check_input_file(path, "CUDA source")
    try:
        text = cuda.compile_file(path, "sm_90", ["-O3"] + list(options))
    except cuda.NvccNotFoundError as e:
        raise UsageError(f"{path!r} is CUDA source, which needs nvcc to become PTX: {e}; or compile it elsewhere "
                         f"(nvcc -arch=sm_90 -O3 -ptx {os.path.basename(path)}) and run the .ptx") from None
    except cuda.CompileError as e:
        raise UsageError(str(e)) from None
    d = tempfile.mkdtemp(prefix="jaxsimt-run-")
    atexit.register(shutil.rmtree, d, True)
    out = os.path.join(d, os.path.splitext(os.path.basename(path))[0] + ".ptx")
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return out


def load_ptx(path: str):
    """Parse a PTX file, refusing first what is not PTX text (a folder, a binary, any other text)."""
    from jaxsimt import ptx

    check_input_file(path, "PTX file")
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if b"\0" in head:
        raise UsageError(f"{path!r} is a binary file, not PTX text (a cubin or object file? nvcc -ptx writes PTX)")
    text = head.decode("utf-8", errors="replace")
    if not re.search(r"(^|\s)\.(version|target|entry)\b", text) and len(head) < (1 << 16):
        raise UsageError(f"{path!r} is not PTX: it has no .version, .target or .entry directive")
    module = ptx.load_module(path)
    if not module.entries:
        raise UsageError(f"{path!r} has no kernel (.entry) to run")
    return module


def describe_entries(module) -> list[dict]:
    """Each kernel of the module: its name in the file, its demangled signature (None for C names or names the
    demangler cannot read), the demangled name alone, and its parameters (PTX type; C++ type where known)."""
    from jaxsimt.demangle import base_name, demangle_all, parameter_types, template_name

    entries = module.entries
    dem = demangle_all([e.name for e in entries])
    out = []
    for e, d in zip(entries, dem):
        ctypes = parameter_types(d) if d else []
        if len(ctypes) != len(e.params):
            ctypes = [None] * len(e.params)
        params = []
        for k, (p, c) in enumerate(zip(e.params, ctypes)):
            short = p.name[len(e.name) + 1:] if p.name.startswith(e.name + "_") else p.name
            params.append({"name": short, "ptx_type": p.dtype + (f"[{p.dims[0]}]" if p.dims else ""),
                           "ptr_space": p.ptr_space, "cxx_type": c, "arg": _arg_hint(p, c)})
        out.append({"entry": e.name, "demangled": d, "name": base_name(d) if d else e.name,
                    "template": template_name(d) if d else e.name, "params": params})
    for e in out:  # the shortest name that --kernel takes for this entry
        e["kernel_option"] = next((e[k] for k in ("name", "template") if e["demangled"]
                                   and sum(o[k] == e[k] for o in out) == 1), e["entry"])
    return out


_CXX = {"float": "f32", "double": "f64", "int": "s32", "unsigned int": "u32", "short": "s16", "unsigned short": "u16",
        "signed char": "s8", "char": "s8", "unsigned char": "u8", "long": "s64", "long long": "s64",
        "unsigned long": "u64", "unsigned long long": "u64", "__half": "f16", "half": "f16",
        "__nv_bfloat16": "bf16", "bool": "u8"}


def _arg_hint(p, cxx) -> str:
    """An --arg for this parameter: TYPE[N]:rand for a pointer, TYPE:VALUE for a scalar."""
    if cxx and cxx.endswith("*"):
        base = cxx[:-1].replace(" const", "").replace("const ", "").replace(" volatile", "").strip()
        return f"{'bool' if base == 'bool' else _CXX.get(base, 'u8')}[N]:rand"
    if cxx in _CXX:
        return f"{_CXX[cxx]}:VALUE"
    if p.ptr_space is not None:
        return "TYPE[N]:rand"
    if p.dtype in ("u64", "b64"):
        return "TYPE[N]:rand (a pointer) or u64:VALUE"
    return f"{p.dtype}:VALUE"


def _shown(e: dict) -> str:
    return e["demangled"] or e["entry"]


def resolve_kernel(module, name: str | None, infos: list[dict] | None = None) -> str:
    """The entry `name` designates: its name in the file, its demangled signature, its demangled name with or
    without template arguments where only one entry has it. Without a name: the file's only kernel."""
    infos = describe_entries(module) if infos is None else infos
    listing = ", ".join(e["kernel_option"] for e in infos) + f" (jaxsimt run {module.filename} --list shows them)"
    if name is None:
        if len(infos) == 1:
            return infos[0]["entry"]
        raise UsageError(f"{module.filename} has {len(infos)} kernels; choose one with --kernel: {listing}")
    for e in infos:
        if name == e["entry"]:
            return name
    if any(f.name == name and not f.is_entry for f in module.functions):
        raise UsageError(f"--kernel {name!r} is a .func (a device function), not a kernel (.entry); kernels: {listing}")
    squeeze = name.replace(" ", "")
    for key in ("demangled", "template", "name"):
        hits = [e for e in infos if e[key] and e[key].replace(" ", "") == squeeze]
        if len(hits) == 1:
            return hits[0]["entry"]
        if len(hits) > 1:
            raise UsageError(f"--kernel {name!r} is ambiguous: {len(hits)} kernels have that name: "
                             + "; ".join(f"{_shown(e)} [{e['entry']}]" for e in hits))
    raise UsageError(f"--kernel {name!r}: no kernel of that name in {module.filename}; kernels: {listing}")


def print_list(path: str, infos: list[dict], as_json: bool) -> None:
    from jaxsimt.demangle import demangle

    if as_json:
        print(json.dumps({"file": path, "kernels": infos}))
        return
    print(f"{path}: {len(infos)} kernel{'s' if len(infos) != 1 else ''}")
    for e in infos:
        print(f"  {_shown(e)}")
        opt = e["kernel_option"]
        print(f"      --kernel {opt!r}" if " " in opt or "<" in opt else f"      --kernel {opt}")
        for p in e["params"]:
            cxx = f"  {p['cxx_type']}" if p["cxx_type"] else ""
            print(f"      {p['name']:<10} .{p['ptx_type']:<5}{cxx:<28} --arg {p['arg']}")
    if any(e["entry"].startswith("_Z") and not e["demangled"] for e in infos):
        print("  (names starting with _Z are C++ names that could not be demangled here"
              + ("" if demangle("_Z1fv") else "; install c++filt") + ")")


# --------------------------------------------------------------------------------------------- outputs
def summarize_array(a: np.ndarray, first: int = 6) -> dict:
    """Shape, dtype, min/max/mean (as float64; NaNs counted apart) and the first values of an array."""
    a = np.asarray(a)
    flat = a.reshape(-1)
    out = {"shape": list(a.shape), "dtype": str(a.dtype), "first": [v.item() for v in flat[:first]]}
    if flat.size:
        v = flat.astype(np.float64)
        finite = v[np.isfinite(v)]
        exact = int if a.dtype.kind in "iub" else float  # integers stay exact
        out.update(min=exact(flat.min()) if exact is int else (float(finite.min()) if finite.size else None),
                   max=exact(flat.max()) if exact is int else (float(finite.max()) if finite.size else None),
                   mean=float(finite.mean()) if finite.size else None, nonfinite=int(v.size - finite.size))
    return out


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _short(param: str, kernel: str) -> str:
    return param[len(kernel) + 1:] if param.startswith(kernel + "_") else param


def _buffer_rows(res, launch_args: LaunchArgs | None):
    """(key, label, array, pointers) for every buffer of the launch once, then every module .global variable;
    pointers: [{"arg", "param", "offset"}] of the arguments that point into the buffer."""
    params = res.program.params
    if launch_args is None:  # one buffer per array argument
        launch_args = LaunchArgs(list(res.args), {k: (k, 0) for k, v in enumerate(res.args) if _is_buffer(v)})
    rows = []
    for owner, ptrs in launch_args.buffers().items():
        name = params[owner].name
        pointers = [{"arg": k, "param": params[k].name, "offset": off} for k, off in ptrs]
        label = " = ".join(f"arg{k} {_short(params[k].name, res.kernel)}" + (f" (+{off})" if off else "")
                           for k, off in ptrs)
        rows.append((f"arg{owner}_{name}", label, np.asarray(res.outputs[name]), pointers))
    own = {p.name for p in params[:getattr(res.program, "ptx_user_params", len(params))]}  # hidden: globals
    for name, v in res.outputs.items():  # module .global variables
        if name not in own:
            rows.append((f"global_{name}", name, np.asarray(v), []))
    return rows


def output_lines(res, launch_args: LaunchArgs | None = None) -> list[str]:
    lines = []
    for _, name, v, ptrs in _buffer_rows(res, launch_args):
        s = summarize_array(v)
        first = ", ".join(_fmt(x) for x in s["first"]) + (", ..." if int(np.prod(s["shape"])) > len(s["first"]) else "")
        nf = f" non-finite {s['nonfinite']}" if s.get("nonfinite") else ""
        shared = " (one buffer)" if len(ptrs) > 1 else ""
        lines.append(f"  {name}{shared}: {s['dtype']}[{', '.join(map(str, s['shape']))}]  min {_fmt(s.get('min'))}  "
                     f"max {_fmt(s.get('max'))}  mean {_fmt(s.get('mean'))}{nf}  [{first}]")
    return lines


def output_summaries(res, launch_args: LaunchArgs | None = None) -> dict:
    """{argK_PARAM (the buffer's first argument) or global_NAME: summary}; a buffer's summary lists under
    "pointers" every argument pointing into it, with its element offset."""
    out = {}
    for key, _, v, ptrs in _buffer_rows(res, launch_args):
        out[key] = summarize_array(v)
        if ptrs:
            out[key]["pointers"] = ptrs
    return out


def save_outputs(folder: str, res, launch_args: LaunchArgs | None = None) -> None:
    """Each buffer once as FOLDER/argK_PARAM.npy (K its first argument), each module .global variable as
    FOLDER/global_NAME.npy, and FOLDER/outputs.json: {file: the arguments pointing into it, with offsets}."""
    os.makedirs(folder, exist_ok=True)
    index = {}
    for key, _, v, ptrs in _buffer_rows(res, launch_args):
        np.save(os.path.join(folder, f"{key}.npy"), v)
        index[f"{key}.npy"] = {"pointers": ptrs}
    with open(os.path.join(folder, "outputs.json"), "w") as f:
        json.dump(index, f, indent=1)


# --------------------------------------------------------------------------------------------- the command
def shipped_sources(ptx_file: str) -> tuple:
    """(the kernel library's folder,) when `ptx_file` is one of jaxsimt's own PTX files, whose `.file` lines name
    their CUDA sources as `jaxsimt/kernels/cuda/...` (nvcc run from the project's root), else ()."""
    import jaxsimt.kernels

    root = os.path.realpath(os.path.dirname(jaxsimt.kernels.__file__))
    real = os.path.realpath(ptx_file)
    return (root,) if os.path.isfile(real) and real.startswith(root + os.sep) else ()


def launch_from_args(a, trace: bool = False, progress=None, source_dirs=()):
    """Run the kernel the parsed options name; returns (LaunchResult, LaunchArgs), or None after --list."""
    consts = split_consts(a.const)
    if a.file and a.file.endswith((".cu", ".cuh")):
        cu = a.file
        a.file = compile_cuda(cu, getattr(a, "nvcc_option", []))
        source_dirs = tuple(source_dirs) + (os.path.dirname(os.path.abspath(cu)),)
    module = load_ptx(a.file)
    infos = describe_entries(module)
    if a.list:
        print_list(a.file, infos, getattr(a, "json", False))
        return None
    kernel = resolve_kernel(module, a.kernel, infos)
    for opt in ("grid", "block"):
        if getattr(a, opt) is None:
            raise UsageError(f"--{opt} X[,Y,Z] is required to run a kernel (see jaxsimt run --help)")
    info = next(e for e in infos if e["entry"] == kernel)
    if len(a.arg) != len(info["params"]):
        want = " ".join(f"--arg {p['arg']}" for p in info["params"])
        raise UsageError(f"kernel {_shown(info)} takes {len(info['params'])} argument(s), got {len(a.arg)} --arg; "
                         f"expected e.g. {want or 'none'}")
    if a.dynamic_smem < 0:
        raise UsageError(f"--dynamic-smem {a.dynamic_smem}: must be at least 0 bytes")
    if a.regs is not None and a.regs < 1:
        raise UsageError(f"--regs {a.regs}: must be at least 1")
    if a.timeline:
        if a.no_timing or not _has_timing(a.arch):
            why = "--no-timing given" if a.no_timing else f"none for --arch {a.arch}"
            raise UsageError(f"--timeline needs the cycle-level timing model ({why})")
        check_output_file(a.timeline, "--timeline")

    from jaxsimt import ptx

    rng = np.random.default_rng(a.seed)
    largs = parse_args_checked(a.arg, rng, consts=consts)
    for k in largs.pointer_of:  # a buffer for a 32-bit parameter would pass a truncated address, silently
        pt = info["params"][k]["ptx_type"]
        if pt[1:].isdigit() and int(pt[1:]) != module.address_size:
            raise ArgSpecError(f"{_where(a.arg[k])} (argument {k}): a buffer is passed as a pointer, but parameter "
                               f"{info['params'][k]['name']} is .{pt}; a pointer is .u{module.address_size}")
    constants = parse_consts(module, consts, rng)
    source_dirs = tuple(source_dirs) + shipped_sources(a.file)
    try:
        res = ptx.launch(a.file, kernel, a.grid, a.block, largs.values, arch=a.arch, dynamic_smem=a.dynamic_smem,
                         regs=a.regs, mode=a.mode, timing=not a.no_timing and _has_timing(a.arch), l1=a.l1,
                         replay=a.replay, contract=not a.no_contract, constants=constants or None,
                         carveout=None if a.carveout is None else a.carveout * 1024, trace=trace,
                         progress=progress, source_dirs=source_dirs, check=a.check or None, collect=a.collect)
    except TypeError as e:  # an argument the kernel's parameter cannot take (checked by the lowering)
        raise UsageError(str(e)) from None
    return res, largs


@command("run")
def main(argv) -> int:
    a = parser().parse_args(argv)
    if a.save_outputs:
        check_output_dir(a.save_outputs, "--save-outputs")
    from jaxsimt.run.progress import launch_progress

    with launch_progress(enabled=False if a.json else None, description=f"running {a.kernel or a.file}") as bar:
        ran = launch_from_args(a, progress=bar)
    if ran is None:
        return 0
    res, largs = ran
    if a.save_outputs:
        save_outputs(a.save_outputs, res, largs)
    if a.timeline:
        from jaxsimt.timing import timeline

        timeline.of_launch(res, a.timeline)
    if a.json:
        out = {"kernel": res.kernel, "arch": res.arch, "grid": list(res.grid), "block": list(res.block),
               "stats": res.stats}
        if a.show_outputs:
            out["outputs"] = output_summaries(res, largs)
        if a.check:
            out["findings"] = [f.as_dict() for f in res.findings]
        print(json.dumps(out))
    else:
        print(f"{res.kernel} on {res.arch}: grid {res.grid}, block {res.block}")
        for k, v in res.stats.items():
            print(f"  {k:<60} {v}")
        if a.show_outputs:
            print("outputs:")
            print("\n".join(output_lines(res, largs)))
        if a.check:
            print(f"findings ({a.check}): {len(res.findings) or 'none'}")
            for f in res.findings:
                print(f"  [{f.check}] {f.message}" + (f" (x{f.count})" if f.count > 1 else ""))
    return 1 if res.findings else 0


if __name__ == "__main__":
    sys.exit(main())
