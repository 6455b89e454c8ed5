"""Register-file banks: the extra operand-read cycles of every static instruction.

The register file is `arch.register_banks` banks; the operand collector reads an instruction's source
registers from them, each bank delivering `arch.register_bank_ports` registers per cycle, so sources that
share a bank are read in successive cycles (seed 000: operands from one bank cannot be read in one cycle).

Model (static: it depends on the instruction, not on the data, so it is computed once per program):

* register number: DSL programs use `Reg.index`; PTX programs the number ending the register's name
  (`%r12`, `%f12`, `%rd12` -> 12), `Reg.index` for names without one (the lowering's temporaries);
* bank = register number % `register_banks`;
* sources: the distinct registers among the instruction's operands (a register read twice is read once);
  immediates read no register and predicates live in their own file, so neither counts; a guarded
  (predicated) instruction counts the operands of the instruction it guards;
* read cycles = max over banks of ceil(sources in the bank / register_bank_ports) (at least 1 when there
  is a source); extra cycles (the bank conflicts) = read cycles - 1.

`extra_cycles` is the per-pc array a timing model adds to each warp instruction's issue; launch reports
it per instruction (`register_bank_conflicts`) and, weighted by warp executions, as
`emulator__register_bank_conflicts`.

The timing model reads the register file as the H200 does (`read_cycles`; micro-benchmarks in
`kernels/cuda/micro_issue.cu`, docs/timing.md "Register-bank reads"): each bank delivers
`register_bank_ports` registers a cycle to a scheduler's instructions, a register read by the previous
instruction in the same operand position is served by the operand reuse cache, and reads queue across
instructions, so a bank only slows issue where a stream of instructions reads it more than once a cycle on
average (two reads of one bank in one FFMA cost nothing when its neighbours read the other bank).
"""
from __future__ import annotations

import re

import numpy as np

from jaxsimt import types as T
from jaxsimt.arch import Arch
from jaxsimt.program import Instr, Program, Reg

METRIC = "emulator__register_bank_conflicts"
_NUMBER = re.compile(r"(\d+)$")


def register_number(reg: Reg, ptx: bool) -> int:
    """The number the bank is taken from (see the module docstring)."""
    if ptx:
        m = _NUMBER.search(reg.name.rsplit(".", 1)[-1])
        if m is not None:
            return int(m.group(1))
    return reg.index


def source_registers(ins: Instr) -> list[Reg]:
    """Distinct non-predicate registers read by `ins` (a guard's inner instruction for guarded ones)."""
    srcs = ins.operation.src
    out: list[Reg] = []
    for x in srcs:
        if isinstance(x, Reg) and x.dtype != T.pred and x not in out:
            out.append(x)
    return out


def instruction_cycles(arch: Arch, ins: Instr, ptx: bool = False) -> int:
    """Extra operand-read cycles of one instruction (0: conflict free)."""
    regs = source_registers(ins)
    if not regs:
        return 0
    per_bank = np.bincount([register_number(r, ptx) % arch.register_banks for r in regs],
                           minlength=arch.register_banks)
    ports = arch.register_bank_ports
    return int(np.max(-(-per_bank // ports))) - 1


def extra_cycles(program: Program, arch: Arch) -> np.ndarray:
    """[NI] int64: extra operand-read cycles of every static instruction, indexed by pc."""
    ptx = hasattr(program, "ptx_hidden")
    return np.asarray([instruction_cycles(arch, ins, ptx) for _, ins in program.instructions()], np.int64)


def register_reads(ins: Instr, previous: "Instr | None") -> int:
    """Register-file reads of one instruction: its distinct non-predicate source registers, less those the
    previous instruction of its block read in the same operand position (the operand reuse cache holds
    them). A 64-bit register counts once: ptxas splits 64-bit integer arithmetic into two instructions that
    read one half each."""
    held = {}
    if previous is not None:
        held = {i: x for i, x in enumerate(previous.operation.src) if isinstance(x, Reg)}
    seen, n = set(), 0
    for i, x in enumerate(ins.operation.src):
        if not isinstance(x, Reg) or x.dtype == T.pred or x in seen or held.get(i) == x:
            continue
        seen.add(x)
        n += 1
    return n


def front_blocks(program: Program) -> list:
    """[[pc]] the front end's basic blocks, in order: the machine may cut one into several blocks (its tiers)
    or merge several; `Block.origin_of` says which instruction came from which."""
    out: dict = {}
    for b, pcs in zip(program.blocks, program.pc_lists()):
        for j, pc in enumerate(pcs):
            out.setdefault(b.origin_of(j), []).append(pc)
    return [sorted(v) for _, v in sorted(out.items())]


# the shortest instruction stream whose reads are averaged over on their own: the imbalance statistic is of
# loops at least this long, and a shorter block's reads queue with its neighbours' blocks
MIN_STREAM = 12


def read_cycles(program: Program, arch: Arch, issued: "np.ndarray | None" = None) -> np.ndarray:
    """[NI] float: the fewest cycles per issue of every static instruction that the register file allows:
    per basic block of the front end (`front_blocks`) of at least MIN_STREAM issued instructions, its reads
    times `register_bank_imbalance` over what the banks deliver a cycle (`register_banks` x
    `register_bank_ports`), over the instructions it issues (at least 1: the banks keep up); 1 elsewhere.
    issued [NI] bool: the instructions the hardware issues (default: all). The per-lane instructions the
    PTX front end expands one instruction into (attr `expansion`: a `wmma.load`'s loads, one or two SASS
    instructions) are left out."""
    instrs = program.instructions()
    issued = np.ones(len(instrs), bool) if issued is None else np.asarray(issued, bool)
    out = np.ones(len(instrs), np.float64)
    per_cycle = arch.register_banks * arch.register_bank_ports
    for pcs in front_blocks(program):
        pcs = [pc for pc in pcs if issued[pc] and not instrs[pc][1].operation.attr("expansion")]
        if len(pcs) < MIN_STREAM:
            continue
        reads, prev = 0, None
        for pc in pcs:
            ins = instrs[pc][1]
            reads += register_reads(ins, prev)
            prev = ins
        out[pcs] = max(1.0, reads * arch.register_bank_imbalance / per_cycle / len(pcs))
    return out
