"""The sanitizer: memcheck, racecheck, initcheck and synccheck as array state of the machine.

memcheck (bounds, alignment, wrong-space pointers) runs on every launch: without `check` its first
violation stops the run as a `MemoryFault`. The other checks are opt-in (`launch(..., check=...)`), because
they cost time and because what they report is legal code on some machines (lanes of one warp sharing
memory without `__syncwarp` work under the reconvergence stack).

Everything a check keeps is arrays written only by the machine's memory stage (`jaxsimt.machine.memstage`: stores
and atomics run there; a block's loads read the shadow and hand what they read to the stage, which records
them as readers after the step's switch), so a check is written once, not in every block:

- `Findings`: a table of up to CAPACITY distinct findings (code, pc, warp, lane, address, wave, the other
  access's thread and pc, count), deduplicated by (code, pc, other pc), plus the ordering state the race
  rules need: each block's barrier episode (`episode` [C], counted at every release) and each warp's
  `__syncwarp` count (`warp_sync` [W]).
- `Shadow`: per word of global and shared memory, the last plain writer and the lowest and highest
  reader (or atomic) since, as (thread << 32 | pc) keys with the (episode << 32 | warp sync) they ran in
  (racecheck); per byte of every memory, whether it is initialized (initcheck).

Two accesses of one word by different threads, at least one a plain write (atomics never race with
atomics, nor with plain reads), race unless ordered: by a barrier of their block (their episodes differ)
or, for lanes of one warp, by a `__syncwarp` between them. Threads of different blocks are never ordered
within a launch. Lanes of one warp with neither between them are a WARP_HAZARD: harmless under the
reconvergence stack's lockstep, a race under Independent Thread Scheduling.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional, Union

import numpy as np

import jax.numpy as jnp
from jax import lax

from jaxsimt import errors
from jaxsimt.units import isa

CHECKS = ("memcheck", "racecheck", "initcheck", "synccheck")
CAPACITY = 64  # distinct findings a launch keeps (more are counted in `total` only)

# Findings.rows columns
CODE, PC, WARP, LANE, ADDRESS, WAVE, OTHER, OTHER_PC, COUNT = range(9)
N_COLUMNS = 9

CHECK_OF = {
    errors.OOB_GLOBAL: "memcheck", errors.OOB_SHARED: "memcheck", errors.OOB_LOCAL: "memcheck",
    errors.MISALIGNED: "memcheck", errors.WRONG_SPACE: "memcheck",
    errors.FaultCode.RACE: "racecheck", errors.FaultCode.WARP_HAZARD: "racecheck",
    errors.FaultCode.UNINIT: "initcheck",
    errors.DIVERGENT_BARRIER: "synccheck", errors.FaultCode.BARRIER_SKIPPED: "synccheck",
    errors.FaultCode.BARRIER_MISMATCH: "synccheck", errors.FaultCode.SYNC_MASK: "synccheck",
    errors.FaultCode.BARRIER_HANG: "synccheck", errors.FaultCode.BARRIER_COUNTS: "synccheck",
}

EMPTY = -1  # an empty writer or highest-reader key
EMPTY_LO = np.iinfo(np.int64).max  # an empty lowest-reader key


# ---------------------------------------------------------------------------------------------
# What the user asks for
# ---------------------------------------------------------------------------------------------


def parse(check: Union[None, str, Iterable[str]], kernel: str = "") -> frozenset:
    """The checks named by `check`: None or "" (none beyond the always-on bounds checks), "all", a
    comma-separated string or an iterable of names from CHECKS."""
    if check is None or check == "" or check is False:
        return frozenset()
    names = check.split(",") if isinstance(check, str) else list(check)
    names = [str(n).strip() for n in names if str(n).strip()]
    if "all" in names:
        return frozenset(CHECKS)
    bad = [n for n in names if n not in CHECKS]
    if bad:
        raise errors.LaunchConfigError(f"kernel {kernel}: unknown check {bad[0]!r}; checks: all, {', '.join(CHECKS)}")
    return frozenset(names)


class Uninit(np.ndarray):
    """A buffer the host allocated and never wrote (`uninit`): its contents are zeros, and initcheck reports
    a read of any of its bytes that no thread wrote first."""


def uninit(shape, dtype=np.float32) -> np.ndarray:
    """A launch argument for a buffer the host leaves uninitialized (cudaMalloc without a copy or memset)."""
    return np.zeros(shape, dtype).view(Uninit)


def is_uninit(a) -> bool:
    return isinstance(a, Uninit)


# ---------------------------------------------------------------------------------------------
# What synccheck knows of a program before it runs
# ---------------------------------------------------------------------------------------------

def member_mask(ins) -> Optional[int]:
    """The static member mask of a warp-synchronous instruction (`__syncwarp`, `shfl.sync`, `vote.sync`,
    `redux.sync`, `match.sync`; `isa.member_mask`), None for other instructions and for masks held in
    registers."""
    return isa.member_mask(ins)


def after_barrier(program) -> np.ndarray:
    """[NB, NB] bool: after[b, f] when block b ends in a block barrier and block f, which does work (has
    instructions), follows it on a forward path (no loop back edge) that crosses no other barrier. A thread
    running f while others of its block wait at b has run past b without reaching it."""
    from jaxsimt.program import BARRIER
    nb = len(program.blocks)
    succ = [[t for t in b.term.successors(nb) if t < nb] for b in program.blocks]
    # back edges: to a block on the depth-first search's stack
    back, state = set(), [0] * nb
    for root in range(nb):
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            u, it = stack[-1]
            v = next(it, None)
            if v is None:
                state[u] = 2
                stack.pop()
            elif state[v] == 1:
                back.add((u, v))
            elif state[v] == 0:
                state[v] = 1
                stack.append((v, iter(succ[v])))
    out = np.zeros((nb, nb), bool)
    for b in program.blocks:
        # counted barriers (bar.sync a, b) wait for part of the block: the rest runs past them by design
        if b.term.kind != BARRIER or (b.term.instr is not None and b.term.instr.attr("threads", 0)):
            continue
        seen, todo = set(), [b.term.target]
        while todo:
            f = todo.pop()
            if f >= nb or f in seen:
                continue
            seen.add(f)
            if program.blocks[f].instrs:
                out[b.index, f] = True
            if program.blocks[f].term.kind != BARRIER:
                todo.extend(v for v in succ[f] if (f, v) not in back)
    return out


# ---------------------------------------------------------------------------------------------
# The findings table (jit-side)
# ---------------------------------------------------------------------------------------------


class Findings(NamedTuple):
    rows: jnp.ndarray  # [CAPACITY, N_COLUMNS] int64
    n: jnp.ndarray  # [] int32  rows used
    total: jnp.ndarray  # [] int64  every finding lane, kept or not
    episode: jnp.ndarray  # [C] int32  barrier releases of each block of the wave
    warp_sync: jnp.ndarray  # [W] int32  __syncwarp executions of each warp
    bar_block: jnp.ndarray  # [W, L] int32  the barrier block each lane waits at (-1: none)
    clock: jnp.ndarray = None  # [] int64  wave << 32 | step: when the step's accesses happen


def init_findings(ctas: int, warps: int, warp_size: int) -> Findings:
    return Findings(jnp.zeros((CAPACITY, N_COLUMNS), jnp.int64), jnp.int32(0), jnp.int64(0),
                    jnp.zeros((ctas,), jnp.int32), jnp.zeros((warps,), jnp.int32),
                    jnp.full((warps, warp_size), -1, jnp.int32), jnp.int64(0))


def record(f: Findings, code: int, pc, bad, address, wave, other=-1, other_pc=-1) -> Findings:
    """Add a finding of `code` for the lanes `bad` [W, L]: the lowest such lane's pc, address, other thread
    and other pc (each broadcast to [W, L]) make its row, unless a row of (code, pc, other pc) exists: then
    that row's count grows."""
    L = bad.shape[-1]

    def add(f):
        flat = jnp.argmax(bad.reshape(-1))
        pick = lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.int64), bad.shape).reshape(-1)[flat]  # noqa: E731
        opc, pcv = pick(other_pc), pick(pc)
        nbad = jnp.sum(bad, dtype=jnp.int64)
        used = jnp.arange(CAPACITY) < f.n
        match = used & (f.rows[:, CODE] == code) & (f.rows[:, PC] == pcv) & (f.rows[:, OTHER_PC] == opc)
        hit = jnp.any(match)
        i = jnp.where(hit, jnp.argmax(match), f.n)
        row = jnp.stack([jnp.int64(code), pcv, (flat // L).astype(jnp.int64),
                         (flat % L).astype(jnp.int64), pick(address), jnp.asarray(wave, jnp.int64), pick(other),
                         opc, jnp.int64(0)])
        row = jnp.where(hit, f.rows[jnp.minimum(i, CAPACITY - 1)], row).at[COUNT].add(nbad)
        rows = f.rows.at[i].set(row, mode="drop")
        n = jnp.where(hit | (f.n >= CAPACITY), f.n, f.n + 1)
        return f._replace(rows=rows, n=n, total=f.total + nbad)

    return lax.cond(jnp.any(bad), add, lambda f: f, f)


# ---------------------------------------------------------------------------------------------
# Shadow memory (jit-side)
# ---------------------------------------------------------------------------------------------


class Access(NamedTuple):
    """Who makes the accesses of one warp instruction, per lane [W, L] (int64)."""

    key: jnp.ndarray  # thread << 32 | pc
    ep: jnp.ndarray  # episode << 32 | warp sync
    tid: jnp.ndarray  # the thread's launch-wide id: fused block id x threads per block + thread in block
    cta: jnp.ndarray  # fused block id
    warp: jnp.ndarray  # warp in block
    time: jnp.ndarray  # [] int64  the step's clock (Findings.clock)


class RaceShadow(NamedTuple):
    """Per word of one memory [N] int64 (see the module docstring): the last plain writer's key, ordering
    word and clock, and the same of the lowest and highest reader since."""

    w_key: jnp.ndarray
    w_ep: jnp.ndarray
    w_t: jnp.ndarray
    lo_key: jnp.ndarray
    lo_ep: jnp.ndarray
    lo_t: jnp.ndarray
    hi_key: jnp.ndarray
    hi_ep: jnp.ndarray
    hi_t: jnp.ndarray


class Shadow(NamedTuple):
    g_race: tuple  # () or (RaceShadow of global memory, atomics' clock [launch threads] int64: each thread's
    # latest atomic)
    s_race: tuple  # () or RaceShadow of shared memory
    g_init: tuple  # () or [4 x global words] bool: bytes written (or given by the host)
    s_init: tuple  # () or [4 x shared words] bool
    l_init: tuple  # () or [4 x local words] bool


def race_shadow(n: int, timed: bool = True) -> RaceShadow:
    """An empty race shadow of n words. `timed`: keep each access's clock (the kernel has atomics, which may
    order accesses as a lock does); else the clocks are [0] arrays and a write clears the readers instead."""
    e = lambda m=n: jnp.full((m,), EMPTY, jnp.int64)  # noqa: E731  (distinct buffers: the run donates them)
    t = n if timed else 0
    return RaceShadow(e(), e(), e(t), jnp.full((n,), EMPTY_LO, jnp.int64), e(), e(t), e(), e(), e(t))


def global_race_shadow(words: int, threads: int) -> tuple:
    """Global memory's race shadow and the per-thread clock of the latest atomic ([threads]; [0] for a kernel
    without atomics), carried from wave to wave."""
    return race_shadow(words, threads > 0), jnp.full((threads,), -1, jnp.int64)


def byte_mask(boff, nbytes: int):
    """The bytes of its word an access of `nbytes` at byte `boff` covers, as a 4-bit mask (every byte of each
    word for accesses of a word or more)."""
    if nbytes >= 4:
        return jnp.int64(0xF)
    return (jnp.int64((1 << nbytes) - 1) << boff.astype(jnp.int64))


def access_ep(episode, warp_sync, mask):
    """The ordering word of an access: episode << 32 | warp sync count << 4 | byte mask."""
    return (episode.astype(jnp.int64) << 32) | ((warp_sync.astype(jnp.int64) & 0x0FFFFFFF) << 4) | mask


def unordered(key, ep, t, me: Access, atom_time, tpb: int, warp_size: int):
    """(race, hazard) [W, L]: whether the stored access (key, ep, clock t) [W, L] and this lane's overlap in
    bytes and are unordered, between threads of different warps or blocks (a race) or lanes of one warp (a
    hazard under ITS). An atomic of the other thread after its access and a later atomic of this lane's
    thread order them (a lock's release and acquire); `atom_time` [threads]: each thread's latest atomic."""
    valid = (key != EMPTY) & (key != EMPTY_LO) & ((ep & me.ep & 0xF) != 0)
    tid = key >> 32
    cta = tid // tpb
    warp = (tid % tpb) // warp_size
    same_cta = cta == me.cta
    same_warp = same_cta & (warp == me.warp)
    ordered = ((tid == me.tid) | (same_cta & ((ep >> 32) != (me.ep >> 32)))
               | (same_warp & (((ep >> 4) & 0x0FFFFFFF) != ((me.ep >> 4) & 0x0FFFFFFF))))
    n = atom_time.shape[0]
    if n and t is not None:  # the kernel has atomics (else the clock is empty: `global_race_shadow`)
        other_atom = atom_time[jnp.clip(tid, 0, n - 1)]
        mine = atom_time[jnp.clip(me.tid, 0, n - 1)]
        ordered = ordered | ((other_atom > t) & (mine > other_atom))
    bad = valid & ~ordered
    return bad & ~same_warp, bad & same_warp


def stale(key, ep, me: Access, tpb: int):
    """Whether a stored reader is ordered before every later access of this lane's block (an earlier
    episode of the same block): its slot may be reused."""
    tid = key >> 32
    return (key == EMPTY) | (key == EMPTY_LO) | ((tid // tpb == me.cta) & ((ep >> 32) != (me.ep >> 32)))


def race_check(sh: RaceShadow, atom_time, kind: str, widx, ok, me: Access, tpb: int, warp_size: int,
               words: int = 1):
    """One warp instruction's accesses (`kind` "read", "write" or "atomic") of the words `widx` .. + words-1
    [W, L] by the lanes `ok`, checked against the shadow (which they do not change). Returns (conflicts,
    seen): conflicts a list of (code, lanes [W, L], the other access's key [W, L]); seen what was read of the
    shadow, for `race_update`."""
    n = sh.w_key.shape[0]
    found, seen = [], []

    def conflict(key, ep, t):
        r, h = unordered(key, ep, t, me, atom_time, tpb, warp_size)
        found.append((errors.FaultCode.RACE, ok & r, key))
        found.append((errors.FaultCode.WARP_HAZARD, ok & h, key))
        seen.extend((key, ep) + (() if t is None else (t,)))

    timed = sh.w_t.shape[0] > 0
    for w in range(words):
        g = jnp.minimum(widx + w, n - 1)
        w_t = sh.w_t[g] if timed else None
        conflict(sh.w_key[g], sh.w_ep[g], w_t)  # after a plain write: every kind of access
        if kind == "write" and timed:
            # readers since the write, only: an older reader was checked against that write already
            lo_t, hi_t = sh.lo_t[g], sh.hi_t[g]
            conflict(jnp.where(lo_t > w_t, sh.lo_key[g], EMPTY), sh.lo_ep[g], lo_t)
            conflict(jnp.where(hi_t > w_t, sh.hi_key[g], EMPTY), sh.hi_ep[g], hi_t)
        elif kind == "write":  # a write clears the readers (untimed shadow)
            conflict(sh.lo_key[g], sh.lo_ep[g], None)
            conflict(sh.hi_key[g], sh.hi_ep[g], None)
    return found, seen


def _after(seen) -> jnp.ndarray:
    """[W, L] True, computed from every value of `seen`: indices masked with it make an update of the shadow
    wait for those reads (else XLA, unable to order a read whose only consumers are the findings before the
    update, copies the whole shadow array at every access)."""
    dep = jnp.ones(seen[0].shape, bool) if seen else True
    for v in seen:
        dep = dep & (v != -2)  # never -2: keys, ordering words and clocks are >= -1
    return dep


def race_update(sh: RaceShadow, atom_time, kind: str, widx, ok, me: Access, tpb: int, warp_size: int,
                words: int = 1, seen=()):
    """The shadow (and the atomics' clock) with the accesses of `race_check` recorded. Returns (shadow,
    atom_time, conflicts): conflicts between lanes of this instruction writing one word (the highest key
    lands; the others race with it), as `race_check`'s."""
    n = sh.w_key.shape[0]
    found = []
    now = jnp.broadcast_to(me.time, ok.shape)
    ok = ok & _after(list(seen))
    timed = sh.w_t.shape[0] > 0
    for w in range(words):
        idx = jnp.where(ok, widx + w, n)
        g = jnp.minimum(idx, n - 1)
        if kind == "write":
            wk = sh.w_key.at[idx].set(EMPTY, mode="drop").at[idx].max(me.key, mode="drop")
            won = wk[g]
            lost = ok & (won != me.key) & ((me.ep & 0xF) == 0xF)  # sub-word writes of one word may not overlap
            r = lost & ((won >> 32) // tpb != me.cta) | lost & (((won >> 32) % tpb) // warp_size != me.warp)
            found.append((errors.FaultCode.RACE, r, won))
            found.append((errors.FaultCode.WARP_HAZARD, lost & ~r, won))
            mine = jnp.where(ok & (won == me.key), idx, n)
            sh = sh._replace(w_key=wk, w_ep=sh.w_ep.at[mine].set(me.ep, mode="drop"))
            if timed:
                sh = sh._replace(w_t=sh.w_t.at[mine].set(now, mode="drop"))
            else:
                sh = sh._replace(lo_key=sh.lo_key.at[idx].set(EMPTY_LO, mode="drop"),
                                 hi_key=sh.hi_key.at[idx].set(EMPTY, mode="drop"))
        else:  # a reader (atomics too: they race only with plain writes)
            lo = sh.lo_key.at[jnp.where(stale(sh.lo_key[g], sh.lo_ep[g], me, tpb), idx, n)].set(EMPTY_LO, mode="drop")
            hi = sh.hi_key.at[jnp.where(stale(sh.hi_key[g], sh.hi_ep[g], me, tpb), idx, n)].set(EMPTY, mode="drop")
            lo = lo.at[idx].min(me.key, mode="drop")
            hi = hi.at[idx].max(me.key, mode="drop")
            lo_me, hi_me = jnp.where(lo[g] == me.key, idx, n), jnp.where(hi[g] == me.key, idx, n)
            sh = sh._replace(lo_key=lo, lo_ep=sh.lo_ep.at[lo_me].set(me.ep, mode="drop"), hi_key=hi,
                             hi_ep=sh.hi_ep.at[hi_me].set(me.ep, mode="drop"))
            if timed:
                sh = sh._replace(lo_t=sh.lo_t.at[lo_me].set(now, mode="drop"),
                                 hi_t=sh.hi_t.at[hi_me].set(now, mode="drop"))
    if kind == "atomic" and atom_time.shape[0]:
        m = atom_time.shape[0]
        atom_time = atom_time.at[jnp.where(ok, me.tid, m)].set(now, mode="drop")
    return sh, atom_time, found


def _bytes(widx, boff, nbytes: int):
    """[W, L, nbytes] byte indices of an access of `nbytes` starting at byte `boff` of word `widx`."""
    return (widx.astype(jnp.int64) * 4 + boff)[..., None] + jnp.arange(nbytes)


def mark_initialized(init, widx, boff, ok, nbytes: int):
    """`init` [4N] bool (one per byte) with the bytes the lanes `ok` write set."""
    idx = jnp.where(ok[..., None], _bytes(widx, boff, nbytes), init.shape[0])
    return init.at[idx].set(True, mode="drop")


def uninitialized(init, widx, boff, ok, nbytes: int):
    """[W, L] bool: lanes of `ok` reading a byte no write set in `init` [4N] bool."""
    idx = jnp.minimum(_bytes(widx, boff, nbytes), init.shape[0] - 1)
    return ok & ~jnp.all(init[idx], axis=-1)


# ---------------------------------------------------------------------------------------------
# What the user reads
# ---------------------------------------------------------------------------------------------

KIND = {
    errors.OOB_GLOBAL: "out-of-bounds global access", errors.OOB_SHARED: "out-of-bounds shared access",
    errors.OOB_LOCAL: "out-of-bounds local access", errors.MISALIGNED: "misaligned access",
    errors.WRONG_SPACE: "wrong-space address",
    errors.FaultCode.RACE: "data race", errors.FaultCode.WARP_HAZARD: "warp hazard (a race under ITS)",
    errors.FaultCode.UNINIT: "uninitialized read",
    errors.DIVERGENT_BARRIER: "barrier under divergence",
    errors.FaultCode.BARRIER_SKIPPED: "barrier skipped by live threads",
    errors.FaultCode.BARRIER_MISMATCH: "threads wait at different barriers",
    errors.FaultCode.SYNC_MASK: "member mask names lanes that do not execute it",
    errors.FaultCode.BARRIER_HANG: "barrier never completes",
    errors.FaultCode.BARRIER_COUNTS: "barrier reached with different thread counts",
}


@dataclass
class Finding:
    """One finding, as a launch reports it: what (`check`, `kind`), where (kernel, source line, pc), who
    (block and thread coordinates, warp and lane), the address (byte offset in `array` where known), and for
    races the other access (`other_block`, `other_thread`, `other_line`); `count`: lanes of this kind at
    this pc (and other pc) in the launch."""

    check: str
    kind: str
    kernel: str
    pc: int
    line: int
    source: str
    block: tuple
    thread: tuple
    warp: int
    lane: int
    address: Optional[int]
    count: int
    message: str
    array: Optional[str] = None
    other_block: Optional[tuple] = None
    other_thread: Optional[tuple] = None
    other_pc: Optional[int] = None
    other_line: Optional[int] = None
    other_source: Optional[str] = None
    extra: dict = field(default_factory=dict)
    item: int = 0  # the batch item (0 for a plain launch)

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("check", "kind", "kernel", "pc", "line", "source", "block", "thread",
                                           "warp", "lane", "address", "array", "count", "message")}
        d.update(self.extra)
        if self.other_pc is not None:
            d.update(other_block=self.other_block, other_thread=self.other_thread, other_pc=self.other_pc,
                     other_line=self.other_line, other_source=self.other_source)
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}

    def __str__(self) -> str:
        return self.message


class SanitizerError(errors.SimtError):
    """A check's finding stopped the launch (`launch(..., check=...)` without collect=True); `finding` is it,
    `findings` every one kept before the run stopped."""

    def __init__(self, message: str, findings: list):
        super().__init__(message)
        self.findings = findings
        self.finding = findings[0] if findings else None


class RaceError(SanitizerError):
    """racecheck: two unordered accesses of one word, one a plain write."""


class UninitializedReadError(SanitizerError):
    """initcheck: a read of memory no thread wrote and the host did not give."""


class SyncError(SanitizerError):
    """synccheck: a barrier or warp-synchronous instruction used against its rules."""


ERROR_OF = {"racecheck": RaceError, "initcheck": UninitializedReadError, "synccheck": SyncError}


def _coords(lin: int, dims) -> tuple:
    x, y, _ = dims
    return (lin % x, (lin // x) % y, lin // (x * y))


def _place(prog, ins, addr: int, bases, sizes):
    """(array name, byte offset) of an address an instruction accessed, where an array holds it."""
    space = ins.attr("space")
    if space != "shared":
        for p in prog.params:
            if p.is_pointer and bases[p.index] <= addr < bases[p.index] + max(sizes[p.index], 1):
                return p.name, addr - bases[p.index]
    if space in ("shared", "generic"):
        for d in prog.shared:
            if d.offset <= addr < d.offset + d.nbytes:
                return d.name, addr - d.offset
    return None, None


def _array_name(prog, ins) -> Optional[str]:
    """The array a memory instruction accesses, where the program knows it: the DSL's array, or the
    parameter or shared variable a PTX address derives from (`jaxsimt.ptx.provenance`)."""
    space = ins.attr("space")
    arr = ins.attr("array")
    if arr is not None:
        return prog.shared[arr].name if space == "shared" else prog.params[arr].name
    if isinstance(ins.attr("origin"), int):
        return prog.params[ins.attr("origin")].name
    if ins.attr("shared_array") is not None:
        return prog.shared[ins.attr("shared_array")].name
    return None


def describe(prog, geo, grid, cta_table, bases, sizes, findings: Findings, legacy) -> list:
    """The wave's findings table as `Finding`s. `legacy(fault)`: the message a fault of a memcheck code (or a
    divergent barrier) has when it stops a launch without checks, reused for its finding."""
    from jaxsimt.machine.core import Fault
    rows = np.asarray(findings.rows)[: int(findings.n)]
    n_ctas = int(np.prod(grid))
    tpb = geo.threads_per_block
    instrs = prog.instructions()
    out = []
    for code, pc, warp, lane, addr, wave, other, opc, count in (tuple(int(v) for v in r) for r in rows):
        code = errors.FaultCode(code)
        fused = int(cta_table[min(wave * geo.ctas_per_wave + warp // geo.warps_per_block, len(cta_table) - 1)])
        item, cta = divmod(fused, n_ctas)
        blk = _coords(cta, grid)
        thr = _coords((warp % geo.warps_per_block) * geo.warp_size + lane, geo.block)
        ins = instrs[pc][1] if 0 <= pc < len(instrs) else None
        loc = ins.loc if ins is not None else None
        line, source = (loc.line, loc.text.strip()) if loc else (0, "")
        check = CHECK_OF[code]
        f = Finding(check, KIND[code], prog.name, pc, line, source, blk, thr, warp % geo.warps_per_block, lane,
                    addr, count, "")
        f.item = item
        if ins is not None and code in (errors.FaultCode.RACE, errors.FaultCode.WARP_HAZARD, errors.FaultCode.UNINIT):
            f.array, off = _place(prog, ins.operation, addr, bases[min(item, len(bases) - 1)],
                                  sizes[min(item, len(sizes) - 1)])
            f.extra["offset"] = off
        if ins is not None and check == "memcheck":
            f.array = _array_name(prog, ins.operation)
            f.extra["offset"] = addr
        if ins is not None and code == errors.FaultCode.UNINIT and ins.operation.attr("space") == "local":
            f.extra["offset"] = addr  # the byte in the thread's local window
        if ins is not None and code in (errors.FaultCode.BARRIER_HANG, errors.FaultCode.BARRIER_COUNTS):
            f.extra["barrier"], f.extra["threads"] = ins.attr("barrier", 0), ins.attr("threads", 0)
        if other >= 0 and opc >= 0 and code != errors.FaultCode.SYNC_MASK:  # a race: the other access's thread
            o_cta, o_t = divmod(other, tpb)
            f.other_block, f.other_thread = _coords(o_cta % n_ctas, grid), _coords(o_t, geo.block)
        if opc >= 0 and (f.other_thread is not None or code in (errors.FaultCode.BARRIER_SKIPPED,
                                                                  errors.FaultCode.BARRIER_MISMATCH)):
            f.other_pc = opc  # the other access, or the barrier
            o_ins = instrs[opc][1] if 0 <= opc < len(instrs) else None
            if o_ins is not None and o_ins.loc:
                f.other_line, f.other_source = o_ins.loc.line, o_ins.loc.text.strip()
        f.message = (legacy(Fault.of_ints(code, pc, warp, lane, addr, wave)) if check == "memcheck"
                     or code == errors.DIVERGENT_BARRIER else _message(f, code, loc))
        out.append(f)
    return out


def _message(f: Finding, code, loc) -> str:
    where = f" at {loc}" if loc else ""
    who = f"block {f.block}, thread {f.thread} (warp {f.warp}, lane {f.lane})"
    k = f"kernel {f.kernel}"
    at = (f"{f.array!r} at byte offset {f.extra.get('offset')}" if f.array is not None
          else f"address {f.address:#x}")
    other = ""
    if f.other_thread is not None:
        other = (f"; the other access: block {f.other_block}, thread {f.other_thread}"
                 + (f" at line {f.other_line}: {f.other_source}" if f.other_line else ""))
    if code == errors.FaultCode.RACE:
        return (f"{k}: data race on {at}{where}; {who}{other} (no barrier orders them; "
                f"{f.count} lane access(es) like it)")
    if code == errors.FaultCode.WARP_HAZARD:
        return (f"{k}: warp hazard on {at}{where}; {who}{other}: lanes of one warp with no __syncwarp between "
                f"them (a race under independent thread scheduling; the reconvergence stack's lockstep hides it)")
    if code == errors.FaultCode.UNINIT:
        return f"{k}: read of uninitialized memory, {at}{where}; {who} (no thread wrote it and the host did not)"
    if code == errors.FaultCode.BARRIER_SKIPPED:
        bar = f" (line {f.other_line})" if f.other_line else ""
        return (f"{k}: {who} runs past the block barrier{bar} that other threads of its block wait at; it"
                f" runs{where} (__syncthreads in divergent code: every thread of the block must reach it)")
    if code == errors.FaultCode.BARRIER_MISMATCH:
        return (f"{k}: threads of one block wait at different barriers{where} and at line {f.other_line}; {who}"
                f" (each __syncthreads must be reached by every thread of the block)")
    if code == errors.FaultCode.BARRIER_HANG:
        bar, n = f.extra.get("barrier", 0), f.extra.get("threads", 0)
        got = (f"it waits for {n} threads and {f.address} arrived" if n else
               "it waits for every thread of the block that has not exited")
        return (f"{k}: barrier {bar}{where} never completes: {got}, and no other thread of block {f.block} can "
                f"still arrive (they exited or wait at another barrier); {f.count} thread(s) wait there, "
                f"thread {f.thread} (warp {f.warp}, lane {f.lane}) among them. It hangs the GPU")
    if code == errors.FaultCode.BARRIER_COUNTS:
        return (f"{k}: threads of one block arrive at barrier {f.extra.get('barrier', 0)} with different thread "
                f"counts in one phase{where}; {who} arrives with {f.address}")
    if code == errors.FaultCode.SYNC_MASK:
        return (f"{k}: warp-synchronous instruction with member mask {f.address:#010x} names lanes that do not "
                f"execute it{where}; {who} is named but absent")
    return f"{k}: {f.kind}{where}; {who}"


def merge(found: list, new: list) -> list:
    """Findings of several waves: one per (item, code kind, pc, other pc), counts summed."""
    out = list(found)
    index = {(f.item, f.kind, f.pc, f.other_pc): f for f in out}
    for f in new:
        key = (f.item, f.kind, f.pc, f.other_pc)
        if key in index:
            index[key].count += f.count
        else:
            index[key] = f
            out.append(f)
    return out


def error(first: Finding, found: list) -> errors.SimtError:
    """The exception a launch that stops at its first finding raises."""
    if first.check == "memcheck":
        e = errors.MemoryFault(first.message)
    elif first.kind == KIND[errors.DIVERGENT_BARRIER]:
        e = errors.DivergentBarrierError(first.message)
    else:
        return ERROR_OF[first.check](first.message, found)
    e.findings, e.finding = found, first
    return e
