"""Per-lane addresses of a launch's memory instructions, replayed on a probe machine.

The counters keep only sums per static instruction. The report's memory view draws one warp's 32 addresses
onto sectors, lines and banks, and the timing model finds the L2 sectors that global atomics serialize on.
`replay` runs blocks of a launch again on a machine whose memory model also hands each warp instruction's
addresses to the host (a `jax.debug.callback`). `capture` keeps, per memory instruction and warp of one
block, the first execution with an active lane; `warp_costs` counts those accesses with the same coalescing
and bank models the counters use, so the page's numbers are the model's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsimt import types as T
from jaxsimt.units import banks, coalescing
from jaxsimt.arch import get_arch
from jaxsimt.machine.core import Machine

MAX_WARPS = 8  # warps of the block whose accesses are kept (the view draws one at a time)


@dataclass
class Access:
    """One warp's execution of one memory instruction: addr [L] int64 byte addresses as the memory model
    sees them (global: in the flat global memory; shared: in the block's shared window), active [L] bool."""

    pc: int
    warp: int
    space: str  # "global" or "shared"
    nbytes: int  # bytes per lane
    addr: np.ndarray
    active: np.ndarray


class _AddressProbe(Machine):
    """A Machine whose memory model also hands every warp instruction's addresses to `sink(pc, space, addr
    [W, L] int64, ok [W, L] bool, nbytes)` on the host (space: "global" or "shared"; constant-cache
    accesses are not handed over). pcs: only these instructions' accesses (None: all), where the pc is
    known when the step is traced (a compiled block's); an interpreted instruction's are all handed over."""

    count_stage = False  # every access counted where it runs, so that it passes count_memory

    def __init__(self, *a, sink=None, pcs=None, **kw):
        super().__init__(*a, **kw)
        self.sink, self.probe_pcs = sink, pcs

    def _record(self, pc, name, addr, ok, nbytes):
        self.sink(int(pc), "global" if int(name) == 0 else "shared", np.asarray(addr, np.int64), np.asarray(ok, bool),
                  int(nbytes))

    def count_memory(self, mem, pc, shape, addr, ok, item):
        if not shape.const and (self.probe_pcs is None or not isinstance(pc, int) or pc in self.probe_pcs):
            jax.debug.callback(self._record, jnp.asarray(pc, jnp.int32), jnp.int32(0 if shape.name == "gmem" else 1),
                               addr, ok, jnp.int32(shape.nbytes))
        return super().count_memory(mem, pc, shape, addr, ok, item)


def replay(result, ctas, sink, pcs=None, **kw):
    """Run blocks `ctas` (linear ids, one wave: warp w of the wave belongs to ctas[w // warps per block]) of
    the launch behind `result` (`result.inputs`, kept by `jaxsimt.launch`) again, handing every memory
    access (of instructions `pcs`; None: all) to `sink` (see `_AddressProbe`). `kw`: more launch options
    (e.g. trace=True). Returns the run's LaunchResult (its counters those of `ctas`), or None when the
    result does not say what was launched."""
    from jaxsimt.run.launch import _split_args, run_items

    inp = result.inputs
    if not inp or result.program is None:
        return None
    args = inp["args"]
    return run_items(result.program, result.grid, result.block, [_split_args(result.program, args)], [args],
                     result.arch, regs=inp.get("regs"), local_bytes=inp.get("local_bytes", 0),
                     carveout=inp.get("carveout"), stack_depth=inp.get("stack_depth", 16),
                     ctas=[int(c) for c in ctas], blocks_per_wave=len(ctas),
                     machine=lambda p, geo, layout, options: _AddressProbe(p, geo, layout, options, sink=sink,
                                                                            pcs=pcs), **kw)[0]


def capture(result, block: int = 0) -> Optional[list[Access]]:
    """Replay block `block` (linear id) of the launch behind `result` and return its accesses, ordered by pc
    then warp: per memory instruction and warp (the first MAX_WARPS), its first execution with an active
    lane; None when the result does not say what was launched."""
    seen: dict[tuple[int, str], dict[int, tuple[np.ndarray, np.ndarray, int]]] = {}

    def keep(pc, space, addr, ok, nbytes):
        per = seen.setdefault((pc, space), {})
        for w in np.flatnonzero(ok.any(axis=1)):
            if int(w) < MAX_WARPS and int(w) not in per:
                per[int(w)] = (addr[w].copy(), ok[w].copy(), nbytes)

    if replay(result, [block], keep) is None:
        return None
    out = []
    for (pc, space), per in sorted(seen.items()):
        for w, (addr, ok, nbytes) in sorted(per.items()):
            out.append(Access(pc, w, space, nbytes, addr, ok))
    return out


# compiled once per (architecture, access size, op): eager calls of the models cost ~0.5 s each
_coalesce = jax.jit(coalescing.coalesce, static_argnums=(0, 2, 4))
_bank_access = jax.jit(banks.bank_access, static_argnums=(0, 2))


def warp_costs(arch, acc: Access, op: str) -> dict:
    """What the memory model counts for one warp access: global requests/sectors/lines, or shared
    wavefronts/bank conflicts/conflict degree."""
    arch = get_arch(arch)
    with jax.enable_x64(True):
        addr = jnp.asarray(acc.addr, jnp.int64)
        act = jnp.asarray(acc.active)
        if acc.space == "global":
            c = _coalesce(arch, addr, acc.nbytes, act, "st" if op == "st" else "ld")
            return {"requests": int(c.requests), "sectors": int(c.sectors), "lines": int(c.lines)}
        b = _bank_access(arch, addr, acc.nbytes, act)
        return {"wavefronts": int(b.wavefronts), "bank_conflicts": int(b.conflicts), "degree": int(b.degree)}


def access_size(ins) -> int:
    """Bytes per lane of a memory instruction (type size x vector width)."""
    return T.BY_NAME[ins.attr("type")].size * ins.attr("vec", 1)
