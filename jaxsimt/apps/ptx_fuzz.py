"""A fixed-seed mutation fuzzer of PTX text, for checking that the front end refuses malformed PTX with its
own errors (`PtxError` with a file and line) instead of crashing.

    from jaxsimt.apps import ptx_fuzz as fuzz
    src = fuzz.extract(open("jaxsimt/kernels/ptx/micro_divergence.ptx").read(), "_Z8div_nonePKjPjii")
    for kind, text in fuzz.mutants(src, seed=0, n=50):
        fuzz.outcome(text, "_Z8div_nonePKjPjii")   # ("ptx_error", line) / ("ok", None) / ("crash", "IndexError")

`mutants` edits the lines of the one `.entry` in the text (its parameter list and body; the module header
is kept): lines deleted, duplicated and swapped, opcodes and type suffixes changed, undeclared registers,
extreme immediates, truncation, garbage tokens, missing labels, operands removed and added, registers of
the wrong class or width, a 32-bit address register, a `.pred` parameter, a zero-size `.shared` array and
an `.entry` without body. The same (text, seed, n) always gives the same mutants.
"""
from __future__ import annotations

import random
import re
from typing import Iterator, Optional

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)", re.M)
_REG = re.compile(r"%[A-Za-z_]\w*")
_REGDECL = re.compile(r"\.reg\s+\.(\w+)\s+(%\w+)<(\d+)>")
_TYPE = re.compile(r"\.(?:[usbf](?:8|16|32|64)|pred|f16x2|bf16|bf16x2)\b")
_IMM = re.compile(r"(?<![\w%$.])-?(?:0[xX][0-9A-Fa-f]+|\d+)(?![\w.])")
_LABEL = re.compile(r"^\s*(\$[\w$]+):\s*$")

OPCODES = ("mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "and", "or", "xor", "not", "shl", "shr",
           "setp", "selp", "cvt", "cvta", "ld", "st", "atom", "bra", "ret", "exit", "bar", "shfl", "vote",
           "neg", "abs", "min", "max", "popc", "clz", "brev", "bfe", "bfi", "prmt", "lop3", "rcp", "sqrt",
           "frobnicate", "mma", "ldmatrix", "call")
TYPES = ("u8", "s8", "b16", "u16", "s16", "u32", "s32", "b32", "u64", "s64", "b64", "f16", "f32", "f64", "pred",
         "f16x2", "bf16", "f33", "u128", "b1")
EXTREMES = ("0xFFFFFFFFFFFFFFFF", "-9223372036854775808", "18446744073709551616", "99999999999999999999999",
            "-1", "0x80000000", "0f7FC00000", "0dFFF0000000000000", "2147483648", "0")
GARBAGE = ("@", "#", "}", "{", "[", "]", ",", ";;", ".reg", "%", "0x", "$L__BB0_", "!", "|", "::", "_", "(", "+")

KINDS = ("delete", "duplicate", "swap", "opcode", "type", "undeclared", "immediate", "truncate", "garbage",
         "label", "drop_operand", "add_operand", "reg_class", "addr32", "pred_param", "zero_shared",
         "no_body")


def extract(text: str, entry: str) -> str:
    """The module header (everything before the first `.entry`, comments dropped) followed by `entry`'s
    text: a module of one kernel, small enough to parse and lower quickly."""
    starts = [(m.start(), m.group(1)) for m in _ENTRY.finditer(text)]
    if not starts:
        raise ValueError("no .entry in the text")
    header = "\n".join(ln for ln in text[:starts[0][0]].split("\n") if not ln.strip().startswith("//"))
    for k, (pos, name) in enumerate(starts):
        if name == entry:
            end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
            body = text[pos:end]
            close = body.rfind("\n}")
            body = body[:close + 2] if close >= 0 else body
            return header.rstrip() + "\n\n" + body + "\n"
    raise ValueError(f"no .entry named {entry!r}")


def _instr_lines(lines):
    """Indices of instruction lines (not directives, labels, braces or blank)."""
    out = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if not s or s.startswith((".", "//", "{", "}", ")")) or s.endswith(":") or s.startswith("$"):
            continue
        if ";" in s:
            out.append(i)
    return out


def _split_ops(s: str):
    """(head 'opcode.mods', operands text, tail ';...') of an instruction line, or None."""
    m = re.match(r"^(\s*(?:@!?%\w+\s+)?)([\w.:]+)(\s+)(.*?)(;.*)$", s)
    if not m:
        return None
    return m.group(1) + m.group(2) + m.group(3), m.group(4), m.group(5)


def _operands(ops: str):
    """Top-level comma-separated operands (commas inside {} [] () kept)."""
    out, depth, cur = [], 0, ""
    for ch in ops:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [o.strip() for o in out]


def _mutate(text: str, kind: str, rnd: random.Random) -> Optional[str]:
    lines = text.split("\n")
    m = _ENTRY.search(text)
    first = text[:m.start()].count("\n")
    body = [i for i in range(first + 1, len(lines))]
    ins = [i for i in _instr_lines(lines) if i > first]
    regs = [(ty, name, int(n)) for ty, name, n in _REGDECL.findall(text)]
    if not ins:
        return None
    k = rnd.choice(ins)
    line = lines[k]
    if kind == "delete":
        del lines[rnd.choice(body)]
    elif kind == "duplicate":
        i = rnd.choice(body)
        lines.insert(i, lines[i])
    elif kind == "swap":
        i, j = rnd.choice(ins), rnd.choice(ins)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "opcode":
        p = _split_ops(line)
        if p is None:
            return None
        head = p[0]
        mm = re.match(r"^(\s*(?:@!?%\w+\s+)?)(\w+)", head)
        lines[k] = mm.group(1) + rnd.choice(OPCODES) + head[mm.end():] + p[1] + p[2]
    elif kind == "type":
        hits = list(_TYPE.finditer(line))
        if not hits:
            return None
        h = rnd.choice(hits)
        lines[k] = line[:h.start()] + "." + rnd.choice(TYPES) + line[h.end():]
    elif kind == "undeclared":
        hits = list(_REG.finditer(line))
        if not hits:
            return None
        h = rnd.choice(hits)
        new = rnd.choice(["%r9999", "%q1", "%rd777", "%nosuch", "%p99"])
        lines[k] = line[:h.start()] + new + line[h.end():]
    elif kind == "immediate":
        hits = [h for h in _IMM.finditer(line) if not line[:h.start()].rstrip().endswith("<")]
        p = _split_ops(line)
        if p is None:
            return None
        start = len(p[0])
        hits = [h for h in hits if h.start() >= start]
        if hits:
            h = rnd.choice(hits)
            lines[k] = line[:h.start()] + rnd.choice(EXTREMES) + line[h.end():]
        else:
            ops = _operands(p[1])
            ops[rnd.randrange(len(ops))] = rnd.choice(EXTREMES)
            lines[k] = p[0] + ", ".join(ops) + p[2]
    elif kind == "truncate":
        cut = rnd.randrange(len(text) // 2, len(text))
        return text[:cut]
    elif kind == "garbage":
        pos = rnd.randrange(len(line) + 1)
        lines[k] = line[:pos] + " " + rnd.choice(GARBAGE) + " " + line[pos:]
    elif kind == "label":
        labels = [i for i in range(first, len(lines)) if _LABEL.match(lines[i])]
        if not labels:
            return None
        i = rnd.choice(labels)
        if rnd.random() < 0.5:
            del lines[i]
        else:
            name = _LABEL.match(lines[i]).group(1)
            lines = [ln.replace(name, name + "_x") if "bra" in ln else ln for ln in lines]
    elif kind in ("drop_operand", "add_operand"):
        p = _split_ops(line)
        if p is None:
            return None
        ops = _operands(p[1])
        if kind == "drop_operand":
            del ops[rnd.randrange(len(ops))]
        else:
            extra = rnd.choice([r[1] + "1" for r in regs] + ["7", "%tid.x", "[%rd1]", "{%r1, %r2}"])
            ops.insert(rnd.randrange(len(ops) + 1), extra)
        lines[k] = p[0] + ", ".join(ops) + p[2]
    elif kind == "reg_class":
        hits = list(_REG.finditer(line))
        names = [f"{r[1]}{rnd.randrange(1, max(2, r[2]))}" for r in regs]
        if not hits or not names:
            return None
        h = rnd.choice(hits[:2])  # mostly the destination or first source
        lines[k] = line[:h.start()] + rnd.choice(names) + line[h.end():]
    elif kind == "addr32":
        cand = [i for i in range(first, len(lines)) if re.search(r"\[%rd\d+", lines[i])]
        r32 = [r for r in regs if r[0] in ("b32", "u32", "s32", "f32")]
        if not cand or not r32:
            return None
        i = rnd.choice(cand)
        lines[i] = re.sub(r"\[%rd\d+", f"[{r32[0][1]}1", lines[i], count=1)
    elif kind == "pred_param":
        cand = [i for i in range(first, len(lines)) if re.match(r"^\s*\.param\s+\.\w+", lines[i])]
        if not cand:
            return None
        i = rnd.choice(cand)
        lines[i] = re.sub(r"\.param\s+\.\w+", ".param .pred", lines[i], count=1)
    elif kind == "zero_shared":
        brace = next((i for i in range(first, len(lines)) if lines[i].strip() == "{"), None)
        if brace is None:
            return None
        lines.insert(brace + 1, "\t.shared .align 4 .b8 fuzz_zero[0];")
    elif kind == "no_body":
        close = next((i for i in range(first, len(lines)) if lines[i].strip() == ")"), None)
        if close is None:
            return None
        lines = lines[:close] + [")", rnd.choice([";", "{", "{\n}"])]
    return "\n".join(lines)


def mutants(text: str, seed: int, n: int, edits: int = 1) -> Iterator[tuple]:
    """Yield n mutants `(kind, mutated text)` of PTX text holding one `.entry` (see `extract`), from
    `random.Random(seed)`. With edits=1 each mutant is one edit and the kinds cycle through KINDS; with
    more, each mutant is 1 to `edits` edits of random kinds (kind names joined by '+')."""
    rnd = random.Random(seed)
    made = tries = 0
    while made < n and tries < 20 * n:
        tries += 1
        if edits == 1:
            kinds = [KINDS[(tries - 1) % len(KINDS)]]
        else:
            kinds = [rnd.choice(KINDS) for _ in range(rnd.randint(1, edits))]
        out = text
        for kind in kinds:
            nxt = _mutate(out, kind, rnd) if _ENTRY.search(out) else None
            out = nxt if nxt is not None else out
        if out == text:
            continue
        made += 1
        yield "+".join(kinds), out


def outcome(text: str, entry: str, filename: str = "fuzz.ptx"):
    """Parse and lower `entry` of PTX text. Returns ("ptx_error", line) for a PtxError (line 0 when it has
    none), ("ok", None) when it lowers, ("crash", exception class name) for any other exception."""
    from jaxsimt.ptx.errors import PtxError
    from jaxsimt.ptx.lower import lower
    from jaxsimt.ptx.parser import parse
    try:
        lower(parse(text, filename), entry)
    except PtxError as e:
        return "ptx_error", int(getattr(e, "line", 0) or 0)
    except RecursionError:
        return "crash", "RecursionError"
    except Exception as e:  # noqa: BLE001 - what is measured is exactly which other exceptions escape
        return "crash", type(e).__name__
    return "ok", None


# Small entries of jaxsimt/kernels/ptx covering the opcode families nvcc emits for the project's kernels
# (integer and float arithmetic, branches and loops, shared memory and barriers, vector and read-only
# loads, atomics, warp shuffles and votes, calls' absence, WMMA and mma.sync, module .const variables).
SOURCES = (
    ("micro_divergence", "_Z8div_nonePKjPjii"),
    ("micro_divergence", "_Z16div_early_returnPKjPjii"),
    ("micro_shared", "_Z23smem_reduce_interleavedPKfPf"),
    ("micro_shared", "_Z15smem_pred_lanesPfi"),
    ("micro_shared", "_Z12smem_patternI6float45PUnitEvPT_i"),
    ("micro_global", "_Z9glob_loadIa7POffsetEvPT_Pfi"),
    ("micro_global", "_Z10glob_storeId7POffsetEvPT_i"),
    ("gemm_ladder", "_Z15gemm_smem_tiledPKfS0_Pfiii"),
    ("its", "its_warp_sum"),
    ("its", "its_spin_lock"),
    ("real_cuda", "bfs_expand"),
    ("real_cuda", "div_uniform"),
    ("real_cuda", "const_poly"),
    ("real_cuda", "gauss_fan2_f64"),
    ("mma_truth", "_Z10mma_kernelILi3EEvPKvS1_S1_Pvii"),
)


def source_texts(ptx_dir: Optional[str] = None) -> list:
    """[(program, entry, one-kernel PTX text)] of SOURCES, read from the kernel library's PTX."""
    import os
    if ptx_dir is None:
        from jaxsimt.kernels import collection
        ptx_dir = collection.PTX
    out, cache = [], {}
    for prog, entry in SOURCES:
        if prog not in cache:
            with open(os.path.join(ptx_dir, prog + ".ptx"), encoding="utf-8") as f:
                cache[prog] = f.read()
        out.append((prog, entry, extract(cache[prog], entry)))
    return out


def survey(total: int = 750, seed: int = 0, sources: Optional[list] = None, edits: int = 1) -> dict:
    """Run `total` mutants spread evenly over the sources through `outcome`. Returns {"counts": {outcome:
    n} with outcomes "ptx_error (line)", "ptx_error (no line)", "ok", "crash: <class>", "by_kind": {kind:
    {outcome: n}}, "crashes": [(program, entry, kind, class, mutant text)]}."""
    sources = sources if sources is not None else source_texts()
    per = -(-total // len(sources))
    counts, by_kind, crashes, done = {}, {}, [], 0
    for si, (prog, entry, text) in enumerate(sources):
        for kind, mut in mutants(text, seed * 1000 + si, min(per, total - done), edits):
            res, info = outcome(mut, entry, f"{prog}.ptx")
            key = ("ptx_error (line)" if info else "ptx_error (no line)") if res == "ptx_error" else \
                "ok" if res == "ok" else f"crash: {info}"
            counts[key] = counts.get(key, 0) + 1
            by_kind.setdefault(kind, {})
            by_kind[kind][key] = by_kind[kind].get(key, 0) + 1
            if res == "crash":
                crashes.append((prog, entry, kind, info, mut))
            done += 1
    return {"counts": counts, "by_kind": by_kind, "crashes": crashes, "total": done}


def tiny_args(module, entry: str, elems: int = 1024) -> list:
    """Arguments for a tiny launch of `entry`: a zeroed float32 array of `elems` for every .u64/.b64
    parameter (a pointer), 8 for the integer scalars (a small size), 1.0 for the float ones."""
    import numpy as np
    out = []
    for p in module.function(entry).params:
        if p.dtype in ("u64", "b64"):
            out.append(np.zeros(elems, np.float32))
        elif p.dtype.startswith("f"):
            out.append(np.float32(1.0) if p.dtype == "f32" else np.float64(1.0))
        else:
            out.append(8)
    return out


def run_outcome(text: str, entry: str, filename: str = "fuzz.ptx", grid=1, block=32, max_steps: int = 2000):
    """Parse, lower and launch `entry` on a tiny grid (jaxsimt.ptx.launch, `tiny_args`). Returns
    ("ptx_error", line), ("ok", None), ("fault", SimtError/LaunchConfigError class name) or ("crash", class
    name of any other exception)."""
    from jaxsimt.errors import LaunchConfigError, SimtError
    from jaxsimt.ptx.errors import PtxError
    from jaxsimt.ptx.parser import parse
    from jaxsimt.ptx.run import launch
    try:
        args = tiny_args(parse(text, filename), entry)
        launch(text, entry, grid, block, args, max_steps=max_steps)
    except PtxError as e:
        return "ptx_error", int(getattr(e, "line", 0) or 0)
    except (SimtError, LaunchConfigError) as e:
        return "fault", type(e).__name__
    except Exception as e:  # noqa: BLE001 - see `outcome`
        return "crash", type(e).__name__
    return "ok", None
