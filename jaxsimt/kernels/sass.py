"""Reading SASS listings (`cuobjdump --dump-sass` or `nvdisasm`) of the committed H200 data: functions,
their loops, and the register-file reads of an instruction stream.

Used to check the timing model's rules against what ptxas emitted and the H200 ran: which loops it unrolls
(`jaxsimt.timing.unroll`), and how many reads each register bank serves (`jaxsimt.units.regbanks`).
"""
from __future__ import annotations

import collections
import re

_FUNC = (re.compile(r"Function : (\S+)"), re.compile(r"^\s*\.text\.(\S+):"))
_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"\bBRA\s+(?:`\((\.L_x_\d+)\)|(0x[0-9a-f]+))")
# a general register operand, its width and whether the reuse cache keeps it for the next instruction
_REG = re.compile(r"(?<![A-Z_])R(\d+)(\.64|\.128)?(\.reuse)?")
_WIDTH = {".64": 2, ".128": 4}
# opcodes whose first operand is a source (stores, branches) or a predicate destination (compares)
_NO_DEST = ("ST", "RED", "BRA", "EXIT", "BAR", "RET", "CALL", "JMP", "NOP")


def functions(text: str) -> dict:
    """{function name: [(address, opcode with modifiers, operand text)]} of a listing. Labels (nvdisasm)
    become their addresses in the operand text of branches."""
    out, fn, labels = {}, None, {}
    pending = []
    for line in text.splitlines():
        m = _FUNC[0].search(line) or _FUNC[1].search(line)
        if m:
            fn = m.group(1)
            out[fn], labels[fn] = [], {}
            continue
        if fn is None:
            continue
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = _INSTR.search(line)
        if m:
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[fn][lab] = addr
            pending = []
            out[fn].append((addr, m.group(3), m.group(4)))
    for fn, ins in out.items():
        out[fn] = [(a, op, re.sub(r"`\((\.L_x_\d+)\)", lambda m: hex(labels[fn].get(m.group(1), -1)), t))
                   for a, op, t in ins]
    return out


def loops(instrs: list) -> list:
    """[(first, last)] index ranges of the loops of one function: from a backward branch's target to the
    branch."""
    index = {a: i for i, (a, _, _) in enumerate(instrs)}
    out = []
    for i, (a, op, t) in enumerate(instrs):
        m = _TARGET.search(f"{op} {t}")
        if op.startswith("BRA") and m and m.group(2) and int(m.group(2), 16) < a and int(m.group(2), 16) in index:
            out.append((index[int(m.group(2), 16)], i))
    return out


def sources(op: str, operands: str) -> list:
    """[(operand position, register number, reuse flag)] of the general registers an instruction reads; a
    64-bit or 128-bit operand reads 2 or 4 consecutive registers."""
    parts = [p.strip() for p in operands.split(",")]
    if op.startswith(("ISETP", "FSETP", "DSETP", "HSETP")):
        parts = parts[2:]  # two predicate destinations
    elif not op.startswith(_NO_DEST):
        parts = parts[1:]
    out = []
    for k, p in enumerate(parts):
        for m in _REG.finditer(p):
            w = _WIDTH.get(m.group(2), 1)
            out += [(4 * k + q, int(m.group(1)) + q, bool(m.group(3))) for q in range(w)]
    return out


def reads(body: list, rounds: int = 2) -> list:
    """[[register]] the registers each instruction of a stream reads from the register file (a loop body,
    `rounds` times so that the reuse cache carries round the loop; the last round's): a register read in
    the same operand position by the previous instruction with its reuse flag set is not read again, and an
    instruction reads a register once however many operands name it."""
    held: dict = {}
    out: list = []
    for _ in range(rounds):
        out = []
        for _, op, operands in body:
            regs, keep = [], {}
            for pos, r, reuse in sources(op, operands):
                if held.get(pos) != r and r not in regs:
                    regs.append(r)
                if reuse:
                    keep[pos] = r
            held = keep
            out.append(regs)
    return out


def bank_reads(body: list, banks: int, rounds: int = 2) -> collections.Counter:
    """{bank: registers read} over an instruction stream (`reads`)."""
    return collections.Counter(r % banks for regs in reads(body, rounds) for r in regs)
