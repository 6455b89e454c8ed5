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
