"""`jaxsimt run`: run one PTX kernel with arguments described on the command line.

    jaxsimt run saxpy.ptx --list
    jaxsimt run saxpy.ptx --kernel saxpy --grid 4 --block 256 \
        --arg s32:1000 --arg f32:2.5 --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --json

One `--arg` per kernel parameter, in order: a scalar `TYPE:VALUE` (`s32:7`, `f32:1.5`, `u64:0x10`), or an array
`TYPE[N]:INIT` with INIT one of rand (floats uniform in [-1, 1), integers uniform in [0, 1000), from --seed),
zeros, ones, arange, or a path to a .npy file (loaded with allow_pickle=False), or a bare path to a .npy file (its
own dtype and size). Arrays are passed as pointers. `--kernel` takes the entry's name as in the file (mangled), its
demangled signature, or its demangled name alone where only one entry has it; `--list` shows them.
"""
from __future__ import annotations

import json
import os
import re
import sys

import numpy as np

from jaxsimt import types as T
from jaxsimt.command import (ArgumentParser, add_arch, check_input_file, check_output_dir, command, human_bytes,
                             memory_budget)
from jaxsimt.errors import UsageError

_ARRAY = re.compile(r"^(\w+)\[([^\]]*)\]:(.+)$")
_TYPES = [t.name for t in T.ALL if t.name != "pred"]
INITS = ("rand", "zeros", "ones", "arange")

ARG_HELP = """\
kernel arguments, one --arg per parameter, in order:
  TYPE:VALUE       a scalar, e.g. s32:1000, f32:2.5, u64:0x10
  TYPE[N]:INIT     an array of N elements passed as a pointer; INIT is one of
                     rand      floats uniform in [-1, 1), integers uniform in [0, 1000), from --seed
                     zeros, ones, arange (0, 1, 2, ...)
                     FILE.npy  N elements from a .npy file, converted to TYPE (allow_pickle=False)
  FILE.npy         an array with the file's own dtype and size
TYPE is one of {types}.
`jaxsimt run FILE.ptx --list` shows each kernel's parameters.""".format(types=", ".join(_TYPES))

EPILOG = """\
examples:
  jaxsimt run saxpy.ptx --list
  jaxsimt run saxpy.ptx --kernel saxpy --grid 4 --block 256 --arg s32:1000 --arg f32:2.5 \\
      --arg 'f32[1024]:rand' --arg 'f32[1024]:zeros' --show-outputs
"""


class ArgSpecError(UsageError):
    """An --arg that does not parse."""


def _type(name: str, spec: str) -> T.DType:
    if name not in T.BY_NAME or name == "pred":
        raise ArgSpecError(f"--arg {spec!r}: unknown type {name!r} (use one of {', '.join(_TYPES)})")
    return T.BY_NAME[name]


def _load_npy(path: str, spec: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise ArgSpecError(f"--arg {spec!r}: no such .npy file {path!r}")
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any failure to read the user's file is the user's to fix
        why = "it holds Python objects (pickled), which are refused" if "allow_pickle" in str(e) else \
            f"not a readable .npy file ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'corrupt'})"
        raise ArgSpecError(f"--arg {spec!r}: cannot load {path!r}: {why}") from None
    if not isinstance(a, np.ndarray):
        raise ArgSpecError(f"--arg {spec!r}: {path!r} is an .npz archive, not one array (.npy)")
    return a


def _scalar_value(t: T.DType, val: str, spec: str):
    try:
        v = float(val) if t.is_float else int(val, 0)
    except ValueError:
        raise ArgSpecError(f"--arg {spec!r}: {val!r} is not a {t.name} value") from None
    if t.is_float:
        with np.errstate(over="ignore"):  # an overflow is reported below, by name
            out = np.asarray(v).astype(t.np_dtype)
        if np.isfinite(v) and not np.isfinite(out):
            raise ArgSpecError(f"--arg {spec!r}: {val} does not fit in {t.name}")
        return out[()]
    info = np.iinfo(t.np_dtype)
    lo = -(1 << (t.bits - 1)) if t.kind == "b" else info.min  # b types take signed or unsigned spellings
    if not lo <= v <= info.max:
        raise ArgSpecError(f"--arg {spec!r}: {val} is outside the range of {t.name} [{info.min}, {info.max}]")
    return np.asarray(v & ((1 << t.bits) - 1) if v < 0 and t.kind == "b" else v).astype(t.np_dtype)[()]


def arg_bytes(spec: str) -> int:
    """Bytes an --arg will allocate (0 for scalars and files), from its text alone: checked before any allocation.
    Raises ArgSpecError for a malformed array size."""
    m = _ARRAY.match(spec)
    if not m:
        return 0
    t = _type(m.group(1), spec)
    size = m.group(2).strip()
    if not size.isdigit():
        raise ArgSpecError(f"--arg {spec!r}: the array size {size!r} is not a whole number of elements")
    n = int(size)
    if n < 1:
        raise ArgSpecError(f"--arg {spec!r}: an array needs at least 1 element")
    return n * t.size


def parse_arg(spec: str, rng: np.random.Generator):
    """One --arg SPEC -> a numpy scalar or array."""
    if spec.endswith(".npy") and ":" not in spec:
        a = _load_npy(spec, spec)
        try:
            T.as_dtype(a.dtype)
        except TypeError:
            raise ArgSpecError(f"--arg {spec!r}: the file's dtype {a.dtype} is not a kernel type (use one of "
                               f"{', '.join(_TYPES)}, or TYPE[N]:{spec} to convert)") from None
        if a.size == 0:
            raise ArgSpecError(f"--arg {spec!r}: the file holds no elements")
        return a.reshape(-1) if a.ndim != 1 else a
    m = _ARRAY.match(spec)
    if m:
        tname, init = m.group(1), m.group(3)
        n = arg_bytes(spec) // _type(tname, spec).size
        t = T.BY_NAME[tname]
        dt = np.dtype(t.np_dtype)
        if init == "rand":
            if t.is_float:
                return rng.uniform(-1.0, 1.0, n).astype(dt)
            return rng.integers(0, 1000, n).astype(dt)
        if init == "zeros":
            return np.zeros(n, dt)
        if init == "ones":
            return np.ones(n, dt)
        if init == "arange":
            return np.arange(n).astype(dt)
        if init.endswith(".npy"):
            a = _load_npy(init, spec)
            if a.size != n:
                raise ArgSpecError(f"--arg {spec!r}: {init!r} holds {a.size} elements, not {n}")
            try:
                return a.astype(dt).reshape(-1)
            except (TypeError, ValueError):
                raise ArgSpecError(f"--arg {spec!r}: {init!r} holds {a.dtype} values, which do not convert to "
                                   f"{tname}") from None
        raise ArgSpecError(f"--arg {spec!r}: unknown initializer {init!r} (one of {', '.join(INITS)} or a .npy path)")
    if ":" not in spec:
        raise ArgSpecError(f"--arg {spec!r}: expected TYPE:VALUE, TYPE[N]:INIT or FILE.npy (see --help)")
    tname, val = spec.split(":", 1)
    if "[" in tname or "]" in tname:
        raise ArgSpecError(f"--arg {spec!r}: an array is TYPE[N]:INIT with N a whole number, e.g. f32[1024]:rand")
    return _scalar_value(_type(tname, spec), val.strip(), spec)


def parse_args_checked(specs, rng: np.random.Generator, budget: int | None = None) -> list:
    """All --args, their total size checked against the memory budget before anything is allocated."""
    budget = memory_budget() if budget is None else budget
    sizes = [arg_bytes(s) for s in specs]
    if sum(sizes) > budget:
        big = max(range(len(specs)), key=lambda k: sizes[k])
        raise ArgSpecError(f"--arg {specs[big]!r}: the arrays need {human_bytes(sum(sizes))} in all, more than the "
                           f"{human_bytes(budget)} a launch may use on this machine (half its memory)")
    return [parse_arg(s, rng) for s in specs]


def _dim3(s: str):
    import argparse

    try:
        v = tuple(int(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X[,Y[,Z]] (whole numbers), got {s!r}") from None
    if not 1 <= len(v) <= 3 or min(v) < 1:
        raise argparse.ArgumentTypeError(f"expected 1 to 3 positive integers, got {s!r}")
    return v


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="jaxsimt run", description=__doc__.split("\n\n")[0].split(": ", 1)[1], epilog=EPILOG)
    p.add_argument("file", help="a .ptx file (the text nvcc -ptx writes)")
    p.add_argument("--list", action="store_true",
                   help="list the file's kernels (demangled names, parameter types) and exit")
    p.add_argument("--kernel", metavar="NAME",
                   help="entry to run: its name in the file, its demangled signature, or its demangled name where "
                        "unambiguous (default: the file's only kernel)")
    p.add_argument("--grid", type=_dim3, metavar="X[,Y,Z]", help="blocks in the grid (required to run)")
    p.add_argument("--block", type=_dim3, metavar="X[,Y,Z]", help="threads per block (required to run)")
    p.add_argument("--arg", action="append", default=[], metavar="SPEC", help=ARG_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--show-outputs", action="store_true",
                   help="summarise each array after the run: shape, dtype, min/max/mean, first values")
    add_arch(p)
    p.add_argument("--save-outputs", metavar="DIR", help="write each array argument as DIR/argN_name.npy")
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
    return p


def _has_timing(arch: str) -> bool:
    from jaxsimt.arch import get_arch

    try:
        return get_arch(arch).timing is not None
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------- the PTX file
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
        return f"{_CXX.get(base, 'u8')}[N]:rand"
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


def output_lines(res) -> list[str]:
    rows = []
    for k, (p, v) in enumerate(zip(res.program.params, res.args)):
        if isinstance(v, np.ndarray) and v.ndim > 0:
            rows.append((f"arg{k} {_short(p.name, res.kernel)}", summarize_array(v)))
    for name, v in res.outputs.items():  # module .global variables
        if not any(name == p.name for p in res.program.params):
            rows.append((name, summarize_array(v)))
    lines = []
    for name, s in rows:
        first = ", ".join(_fmt(x) for x in s["first"]) + (", ..." if int(np.prod(s["shape"])) > len(s["first"]) else "")
        nf = f" non-finite {s['nonfinite']}" if s.get("nonfinite") else ""
        lines.append(f"  {name}: {s['dtype']}[{', '.join(map(str, s['shape']))}]  min {_fmt(s.get('min'))}  "
                     f"max {_fmt(s.get('max'))}  mean {_fmt(s.get('mean'))}{nf}  [{first}]")
    return lines


def output_summaries(res) -> dict:
    out = {}
    for k, (p, v) in enumerate(zip(res.program.params, res.args)):
        if isinstance(v, np.ndarray) and v.ndim > 0:
            out[f"arg{k}_{p.name}"] = summarize_array(v)
    return out


# --------------------------------------------------------------------------------------------- the command
@command("run")
def main(argv) -> int:
    a = parser().parse_args(argv)
    if a.save_outputs:
        check_output_dir(a.save_outputs, "--save-outputs")
    module = load_ptx(a.file)
    infos = describe_entries(module)
    if a.list:
        print_list(a.file, infos, a.json)
        return 0
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

    from jaxsimt import ptx

    rng = np.random.default_rng(a.seed)
    args = parse_args_checked(a.arg, rng)
    try:
        res = ptx.launch(a.file, kernel, a.grid, a.block, args, arch=a.arch, dynamic_smem=a.dynamic_smem,
                         regs=a.regs, mode=a.mode, timing=not a.no_timing and _has_timing(a.arch),
                         contract=not a.no_contract,
                         carveout=None if a.carveout is None else a.carveout * 1024)
    except TypeError as e:  # an argument the kernel's parameter cannot take (checked by the lowering)
        raise UsageError(str(e)) from None
    if a.save_outputs:
        os.makedirs(a.save_outputs, exist_ok=True)
        for k, (p, v) in enumerate(zip(res.program.params, res.args)):
            if isinstance(v, np.ndarray) and v.ndim > 0:
                np.save(os.path.join(a.save_outputs, f"arg{k}_{p.name}.npy"), v)
    if a.json:
        out = {"kernel": res.kernel, "arch": res.arch, "grid": list(res.grid), "block": list(res.block),
               "stats": res.stats}
        if a.show_outputs:
            out["outputs"] = output_summaries(res)
        print(json.dumps(out))
    else:
        print(f"{res.kernel} on {res.arch}: grid {res.grid}, block {res.block}")
        for k, v in res.stats.items():
            print(f"  {k:<60} {v}")
        if a.show_outputs:
            print("outputs:")
            print("\n".join(output_lines(res)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
