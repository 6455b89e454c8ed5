"""Instruction traces for the timing model: per warp, the sequence of static instructions it executed.

The functional machine records, when asked (`launch(trace=True)`), which basic block ran at each step and
which warps ran it (their active masks). A warp that runs block b issues b's instructions in order, so its
instruction stream is the concatenation of the pc ranges of the blocks it ran. Per static instruction,
the program gives the timing class (ALU, FP32, SFU, tensor, shared, global, barrier, control), the
registers it reads and writes (the scoreboard's dependences), and the launch's memory counters give its
average memory cost per warp execution (global requests and sectors, shared wavefronts). Nothing is
recorded when tracing is off: the counters are collected anyway, the step trace costs only when asked.

Shapes: NI static instructions, NW traced warps, L longest stream (padded with -1), ND/NS destination /
source register slots per instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from jaxsimt.timing import issue_order, unroll
from jaxsimt.units import isa
from jaxsimt.arch import get_arch
from jaxsimt.program import BRANCH, Imm, Instr, Program, Reg

# Timing classes (indices into the per-class latency / issue-interval tables of jaxsimt.timing.replay)
ALU, FP32, SFU, TENSOR, SHARED, GLOBAL, BARRIER, CONTROL, SHUFFLE = range(9)
CLASS_NAMES = isa.TIMING_CLASSES
N_CLASSES = len(CLASS_NAMES)

ND, NS = 8, 24  # register slots per instruction (vector loads write 4; a WMMA mma writes 8 and reads 24)


def timing_class(ins: Instr) -> int:
    """The timing class of one instruction (of the one doing the work, for a predicated one): the
    instruction table's (`jaxsimt.units.isa`)."""
    return CLASS_NAMES.index(isa.timing_class(ins))


@dataclass
class Trace:
    """Per-warp instruction streams of the traced blocks plus the static instruction tables.

    pcs [NW, L] int32: static instruction of each warp's k-th issue (-1 past the end); length [NW]:
    instructions each warp issued; block [NW]: traced block (0..n_blocks-1) of each warp; warp_in_block [NW].
    Static tables over the NI instructions: cls [NI] timing class, dst [NI, ND] / src [NI, NS] register
    slots (-1: none), requests / sectors / wavefronts [NI] float: average per warp execution (wavefronts: of
    the L1TEX data stage, a shared access's or a global access's distinct lines).
    hit_l1 / to_dram [NI]: fraction of a global access's sectors served by L1, and of L1 misses served by
    DRAM (estimates; see `memory_fractions`). folded [NI] bool: instructions the hardware issues no
    instruction for (see `folded_mask`; None: none). dram_wait [NI]: fraction of L1 misses whose data the
    access waits for from DRAM, fetched for it or for another SM in step with it (`dram_waits`; None: to_dram).
    The tables may hold more instructions than the program (NI' >= NI): the copies of the loops ptxas unrolls
    (`jaxsimt.timing.unroll`), origin [NI'] the program pc of each (None: none).
    """

    program: Program
    pcs: np.ndarray
    length: np.ndarray
    block: np.ndarray
    warp_in_block: np.ndarray
    warps_per_block: int
    cls: np.ndarray
    dst: np.ndarray
    src: np.ndarray
    requests: np.ndarray
    sectors: np.ndarray
    wavefronts: np.ndarray
    hit_l1: np.ndarray
    to_dram: np.ndarray
    n_regs: int
    meta: dict = field(default_factory=dict)
    folded: "np.ndarray | None" = None
    dram_wait: "np.ndarray | None" = None
    origin: "np.ndarray | None" = None

    def origins(self) -> np.ndarray:
        """[NI'] the program pc of each static instruction of the tables (`origin`; the identity where the
        trace has no unrolled loop copies)."""
        return np.arange(len(self.cls)) if self.origin is None else self.origin

    @property
    def n_blocks(self) -> int:
        return int(self.block.max()) + 1 if self.block.size else 0

    @property
    def n_instructions(self) -> int:
        return int(self.length.sum())


IF_CONVERT_MAX = 4  # a conditional forward branch over at most this many instructions becomes predication


def folded_mask(prog: Program, cls: "np.ndarray | None" = None) -> np.ndarray:
    """[NI] bool: instructions of the emulated IR that the hardware does not issue as instructions of
    their own, because the compiler (ptxas) removes them when it makes SASS:

    * register and immediate moves (`mov`, and `cvta` to the global space, lowered to a mov): copy
      propagation and immediate operands;
    * the address arithmetic and packing of an instruction the PTX front end expands (attr `expansion`:
      a `wmma.load` becomes per-lane loads here, one or two shared loads in SASS), not its loads / stores;
    * a conditional forward branch over at most IF_CONVERT_MAX instructions with no control flow among
      them (a bounds-checked load): if-conversion makes them predicated instructions.

    The timing model replays folded instructions in zero time; the counters still count them.
    cls: the program's timing classes (`static_tables`), recomputed when not given."""
    instrs = prog.instructions()
    cls = cls if cls is not None else np.asarray([timing_class(o.operation) for _, o in instrs])
    out = np.zeros(len(instrs), bool)
    first = dict(enumerate(prog.first_pcs()))
    for b, pcs in zip(prog.blocks, prog.pc_lists()):
        for pc, ins in zip(pcs, b.instrs):
            op = ins.operation
            out[pc] = (isa.spec(op).copy and all(isinstance(x, (Reg, Imm)) for x in op.src)) or (
                bool(op.attr("expansion")) and isa.memory(op) is None)
        t, pc = b.term, (pcs[-1] if pcs else -1)  # the terminator instruction, if any, is the block's last
        if t.instr is not None and t.kind == BRANCH and t.target in first:
            skipped = cls[pc + 1:first[t.target]]
            out[pc] = 0 < len(skipped) <= IF_CONVERT_MAX and not np.isin(skipped, (CONTROL, BARRIER)).any()
    return out


def static_tables(prog: Program, group: bool = True):
    """(cls [NI], dst [NI, ND], src [NI, NS], number of register slots) of a program.

    A slot stands for the registers written by the same set of instructions: each such instruction writes
    them all at once, so their ready times are always equal and the scoreboard needs one of them (a vector
    load's four registers, an mma's accumulators). Registers nothing writes are always ready and get no
    slot. group=False: a slot per written register (the same replay, more scoreboard work)."""
    instrs = prog.instructions()
    NI = len(instrs)
    cls = np.zeros(NI, np.int32)
    dst = np.full((NI, ND), -1, np.int32)
    src = np.full((NI, NS), -1, np.int32)
    writers: dict[int, list] = {}
    for pc, (_, outer) in enumerate(instrs):
        for r in tuple(outer.dst) + tuple(outer.operation.dst):
            w = writers.setdefault(r.index, [])
            if not w or w[-1] != pc:
                w.append(pc)
    groups: dict[tuple, int] = {}
    slot = {r: groups.setdefault(tuple(w) if group else (r,), len(groups)) for r, w in writers.items()}
    for pc, (_, outer) in enumerate(instrs):
        inner = outer.operation
        cls[pc] = timing_class(inner)
        ds = sorted({slot[r.index] for r in tuple(outer.dst) + tuple(inner.dst)})
        ss = sorted({slot[r.index] for r in tuple(outer.src) + tuple(inner.src)
                     if isinstance(r, Reg) and r.index in slot})
        if len(ds) > ND or len(ss) > NS:
            raise ValueError(f"kernel {prog.name}: instruction at pc {pc} ({outer.loc}) has {len(ds)} destination "
                             f"and {len(ss)} source register groups; the timing trace holds {ND} and {NS}")
        dst[pc, :len(ds)] = ds
        src[pc, :len(ss)] = ss
    return cls, dst, src, max(len(groups), 1)


def streams(prog: Program, step_block: np.ndarray, step_mask: np.ndarray, max_len: int = 0):
    """Per-warp instruction streams from a step trace: step_block [S] (block run at each step),
    step_mask [S, W] (lanes of each warp that ran it; 0: the warp did not run). Returns (pcs [W, L] int32,
    -1 padded, truncated to max_len when > 0; full length [W] int64)."""
    lists = prog.pc_lists()
    nins = np.asarray([len(p) for p in lists], np.int64)
    at = np.cumsum(nins) - nins  # each block's pcs in `flat`
    flat = np.asarray([pc for p in lists for pc in p], np.int64)
    ran = np.asarray(step_mask) != 0
    b = np.asarray(step_block, np.int64)
    W = ran.shape[1]
    # every (warp, step) at which the warp ran, warp-major: each warp's blocks in step order
    w_of, step = np.nonzero(ran.T)
    bs = b[step]
    n = nins[bs]
    lens = np.bincount(w_of, weights=n, minlength=W).astype(np.int64)
    first = np.cumsum(n) - n  # each executed block's first position in the concatenated streams
    warp_base = np.concatenate([[0], np.cumsum(lens)[:-1]])
    k = np.arange(int(n.sum())) - np.repeat(first, n)  # instruction index within its block
    pos = np.repeat(first - warp_base[w_of], n) + k  # position in its warp's stream
    pc = flat[np.repeat(at[bs], n) + k]
    w_i = np.repeat(w_of, n)
    if max_len:
        keep = pos < max_len
        pos, pc, w_i = pos[keep], pc[keep], w_i[keep]
    L = max(1, int(min(lens.max(initial=0), max_len) if max_len else lens.max(initial=0)))
    pcs = np.full((W, L), -1, np.int32)
    pcs[w_i, pos] = pc
    return pcs, lens


def array_bytes(result) -> float:
    """Bytes of a launch result's array arguments (those bound to pointer parameters): the default estimate of
    the distinct bytes a launch touches."""
    return sum(float(np.asarray(a).nbytes) for p, a in zip(result.program.params, result.args)
               if p.is_pointer and a is not None)


def memory_fractions(prog: Program, cls: np.ndarray, sectors_total: np.ndarray, footprint_sectors: float,
                     dram_sectors: float, hit_l1: Optional[np.ndarray] = None):
    """Cache estimates per instruction: (hit_l1 [NI], to_dram [NI]).

    L1: `hit_l1` where given (an L1 model's hit fraction per instruction, `jaxsimt.timing.l1tags`), else
    from `footprint_sectors`, the distinct sectors one block touches (an L1 hit is a sector the block
    touched before, so L1 misses = footprint), spread evenly over the global instructions' sectors. DRAM:
    `dram_sectors`, the distinct sectors of the whole launch per block (cold caches: every distinct sector
    comes from DRAM once, the rest of the L1 misses hit L2), spread evenly over the L1 misses."""
    g = cls == GLOBAL
    total = float(sectors_total[g].sum())
    hit = np.zeros(len(cls), np.float32)
    dram = np.zeros(len(cls), np.float32)
    if total > 0:
        hit[g] = 1.0 - min(1.0, max(footprint_sectors, 0.0) / total) if hit_l1 is None else hit_l1[g]
        missed = float((sectors_total[g] * (1.0 - hit[g])).sum())
        dram[g] = min(1.0, max(dram_sectors, 0.0) / max(missed, 1e-9))
    return hit, dram


def dram_waits(cls: np.ndarray, missed: np.ndarray, first_share: np.ndarray, to_dram: np.ndarray,
               dram_sectors: float, waves: float) -> np.ndarray:
    """[NI] the fraction of each global access's L1-missing sectors whose data it waits for from DRAM.

    missed [NI]: the launch's L1-missing sectors of each instruction; first_share [NI]: the part of them its SM
    asks for the first time (the rest are sectors the SM held and lost: L2 hits); dram_sectors: the launch's
    distinct sectors, each fetched from DRAM once (`to_dram`: that share of the misses, the DRAM traffic);
    waves: the launch's waves of resident blocks.

    In the first wave every SM's blocks start together and, running the same code, ask for the same sectors at
    about the same time: a first request finds its sector either not yet in L2 or still on its way from DRAM
    (the L2 merges requests for a sector in flight into one fetch), and waits for DRAM either way. Parboil
    sgemm on the H200 (512 blocks, one wave, each row of A read by 64 blocks) takes 4,100 cycles per tile of
    k, five dependent loads at DRAM's latency, where a sector fetched once and then hit in L2 would take
    half that. In later waves a first request finds its sector in L2 unless no block asked for it before:
    one in `share` of them, `share` the first requests per distinct sector."""
    g = cls == GLOBAL
    out = np.asarray(to_dram, np.float32).copy()
    first = float((missed[g] * first_share[g]).sum())
    if first <= 0 or dram_sectors <= 0:
        return out
    share = max(first / dram_sectors, 1.0)
    w = max(float(waves), 1.0)
    cold = 1.0 / w + (1.0 - 1.0 / w) / share
    out[g] = np.maximum(out[g], np.clip(first_share[g], 0.0, 1.0) * cold)
    return out


def from_launch(result, footprint_bytes_per_block: float | None = None, dram_bytes: float | None = None,
                max_len: int = 0, hit_l1: Optional[np.ndarray] = None,
                first_share: Optional[np.ndarray] = None) -> Trace:
    """A Trace from a `launch(..., trace=True)` result whose traced blocks ran in one wave.

    footprint_bytes_per_block: distinct bytes one block accesses in global memory (default: the array
    arguments' bytes spread evenly over the grid's blocks, as for a kernel whose blocks partition the
    data); dram_bytes: distinct bytes of the whole launch (default: the array arguments' bytes); hit_l1 [NI]:
    an L1 model's hit fraction of each global instruction (default: from the footprint; `memory_fractions`);
    first_share [NI]: the part of each one's L1 misses its SM asks for the first time (the L1 model's,
    `l1tags.first_requests`; default: all of them, as the footprint counts only first requests)."""
    prog = result.program
    tr = result.trace
    if tr is None:
        raise ValueError(f"kernel {prog.name}: the launch was not traced (pass trace=True)")
    cls, dst, src, n_regs = static_tables(prog)
    NI = len(cls)
    rows = result.per_instruction
    execs = np.asarray([max(r["warp_exec"], 1) for r in rows], np.float64)
    col = lambda k: np.asarray([float(r.get(k, 0)) for r in rows], np.float64)  # noqa: E731
    # the L1TEX data stage moves a shared access's wavefronts and one wavefront per distinct 128-byte line of a
    # global access (the H200's global loads: kernels/cuda/l1_rate.cu); a generic access may have both
    requests, sectors, wavefronts = col("requests"), col("sectors"), col("wavefronts") + col("lines")
    pcs, lens = streams(prog, tr["block"], tr["mask"], max_len)
    folded = folded_mask(prog, cls)
    rank, region = issue_order.ranks(prog, folded)
    # the loops ptxas unrolls issue as its unrolled bodies: copies of their instructions after the program's
    u = unroll.copies(prog, dst, src, n_regs, folded, rank, region)
    origin, dst, src, n_regs, folded = u["origin"], u["dst"], u["src"], u["n_regs"], u["folded"]
    pcs = issue_order.reorder(unroll.streams(pcs, u["loops"]), u["rank"], u["region"])
    tpb = int(np.prod(result.block))
    wpb = -(-tpb // 32)
    W = pcs.shape[0]
    ran = lens > 0
    warp = np.arange(W)
    block, wib = warp // wpb, warp % wpb
    # keep only blocks that ran (padding blocks of a wave never issue)
    keep_blocks = np.unique(block[ran])
    keep = np.isin(block, keep_blocks)
    remap = {b: i for i, b in enumerate(keep_blocks)}
    block = np.asarray([remap[b] for b in block[keep]], np.int64)
    n_bytes = array_bytes(result)
    n_ctas = int(np.prod(result.grid))
    if footprint_bytes_per_block is None:
        footprint_bytes_per_block = n_bytes / max(n_ctas, 1)
    if dram_bytes is None:
        dram_bytes = n_bytes
    # per-block sectors of the traced run (the footprint is per block: compare with one block's sectors)
    n_traced = max(len(keep_blocks), 1)
    sector = float(get_arch(result.arch).sector_size)
    hit, to_dram = memory_fractions(prog, cls, sectors / n_traced, footprint_bytes_per_block / sector,
                                    dram_bytes / sector / max(n_ctas, 1), hit_l1)
    arch = get_arch(result.arch)
    per_wave = arch.num_sms * max(int((result.stats or {}).get("active_blocks_per_sm", 1)), 1)
    missed = sectors * (1.0 - hit) * n_ctas / n_traced
    wait = dram_waits(cls, missed, np.ones(NI, np.float32) if first_share is None else first_share, to_dram,
                      dram_bytes / sector, n_ctas / per_wave)
    o = origin
    return Trace(prog, pcs[keep], lens[keep], block, wib[keep], wpb, cls[o], dst, src,
                 (requests / execs).astype(np.float32)[o], (sectors / execs).astype(np.float32)[o],
                 (wavefronts / execs).astype(np.float32)[o], hit[o], to_dram[o], n_regs,
                 meta={"kernel": prog.name, "grid": tuple(result.grid), "block": tuple(result.block),
                       "n_ctas": n_ctas, "traced_blocks": int(n_traced), "NI": NI}, folded=folded,
                 dram_wait=wait[o], origin=origin)
