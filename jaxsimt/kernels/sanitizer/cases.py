"""The sanitizer corpus: every planted-bug and clean kernel of jaxsimt/kernels/sanitizer/, with its launch and what a
sanitizer must say about it.

`CASES` holds one `Case` per kernel, CUDA (the .cu source, its nvcc PTX beside it) and DSL
(jaxsimt/kernels/sanitizer/dsl_kernels.py). `case.check` names the check that must report the planted bug
("memcheck", "racecheck", "initcheck", "synccheck"), or is None for a clean kernel, on which every check
must stay silent. `case.expect` says what the report must contain: the source line (for PTX the line its
`.loc` gives, i.e. the .cu line; for DSL kernels the Python line), the thread and block where exactly one
thread is at fault, the array and the byte offset from its start where they are well defined, and for a
race both lines. `case.args()` builds the arguments in parameter order (numpy arrays and numpy scalars);
a buffer the host allocates and never writes is `jaxsimt.machine.sanitizer.uninit(shape, dtype)`, its parameter
index listed in `case.uninit`. `case.reference(args)` gives the clean kernels' expected outputs.

This module needs only numpy (jaxsimt/kernels/sanitizer/collect_h200.py imports it on a machine without jaxsimt).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = ("memcheck", "racecheck", "initcheck", "synccheck")
F32, S32, U8 = np.float32, np.int32, np.uint8


@dataclass(frozen=True)
class Expect:
    """What a report of a planted bug must say.

    kind: "out_of_bounds", "misaligned", "wrong_space" (memcheck), "race" (racecheck), "uninitialized"
    (initcheck), "barrier_divergence", "warp_sync_mask" (synccheck).
    line: the faulting access's (or barrier's) source line. For races, `lines` = the two accesses' lines,
    ordered as the hazard's name (RAW: write, read; WAR: read, write; WAW: write, write), and `hazards` the
    hazard kinds a correct report may name (the first pair seen can depend on the order threads run). For a
    bug of another kind made of two statements (two barriers), `lines` holds both: a report at either is
    right.
    thread, block: (x, y, z) of the one thread at fault, None where several are (`threads` says how many;
    for races, `thread`/`block` is one side of the racing pair and `other_thread`/`other_block` the other).
    array, space, offset: the array (parameter name, or the source's shared/local array name), its memory
    space, and the byte offset of the access from the array's start (for several threads at fault: the
    lowest-numbered one's)."""

    kind: str
    line: int
    lines: tuple = ()
    hazards: tuple = ()
    thread: Optional[tuple] = None
    block: Optional[tuple] = None
    threads: int = 1
    other_thread: Optional[tuple] = None
    other_block: Optional[tuple] = None
    array: Optional[str] = None
    space: str = "global"
    offset: Optional[int] = None


@dataclass(frozen=True)
class Case:
    """One kernel of the corpus and its launch (see the module docstring)."""

    name: str
    kind: str  # "cuda" (source .cu + nvcc's .ptx) or "dsl" (dsl_kernels.py)
    source: str  # file in jaxsimt/kernels/sanitizer/
    entry: str  # the kernel's name (extern "C" in the .cu; the function in dsl_kernels.py)
    grid: tuple
    block: tuple
    args: Callable[[], list]
    check: Optional[str]
    expect: Optional[Expect] = None
    uninit: tuple = ()  # parameter indices of buffers the host allocates and never writes
    reference: Optional[Callable[[list], dict]] = None  # {parameter index: expected final contents}
    mode: str = "stack"  # the execution mode under which the bug shows ("its": only under ITS)
    notes: str = ""

    @property
    def ptx(self) -> Optional[str]:
        return self.source[:-3] + ".ptx" if self.kind == "cuda" else None

    @property
    def source_path(self) -> str:
        return os.path.join(HERE, self.source)

    @property
    def ptx_path(self) -> Optional[str]:
        return os.path.join(HERE, self.ptx) if self.ptx else None


def uninit(shape, dtype):
    """A buffer the host allocates and never writes: `jaxsimt.machine.sanitizer.uninit`; without jaxsimt (the GPU
    collection, which reads `Case.uninit` instead) plain zeros."""
    try:
        from jaxsimt.machine.sanitizer import uninit as _uninit
    except ImportError:
        return np.zeros(shape, dtype)
    return _uninit(shape, dtype)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, name)))


def _ints_as_floats(name: str, n: int) -> np.ndarray:
    """Small integers stored as f32: sums of them are exact in any order of addition."""
    return _rng(name).integers(-8, 8, n).astype(F32)


def _rand(name: str, n: int, dtype=F32) -> np.ndarray:
    r = _rng(name)
    if np.dtype(dtype).kind == "f":
        return r.uniform(-1, 1, n).astype(dtype)
    return r.integers(0, 1000, n).astype(dtype)


G = (1, 1, 1)


def _d(x: int) -> tuple:
    return (x, 1, 1)


def _t(x: int) -> tuple:
    return (x, 0, 0)


# ---- memcheck --------------------------------------------------------------------------------------------

def _wild_index() -> np.ndarray:
    idx = _rng("mc_gather_wild").permutation(1024)[:256].astype(S32)
    idx[77] = 1024 + 100  # table[1124]: 400 bytes into the allocation after `table`
    return idx


def _local_index(bad_value: int, modulus: int) -> np.ndarray:
    idx = (np.arange(256) % modulus).astype(S32)
    idx[77] = bad_value
    return idx


MEMCHECK = [
    Case("mc_store_past_end", "cuda", "memcheck.cu", "mc_store_past_end", _d(4), _d(256),
         lambda: [np.zeros(1000, F32), S32(1000)], "memcheck",
         Expect("out_of_bounds", 9, thread=_t(232), block=_t(3), array="out", offset=4000),
         notes="out is 4000 bytes: out[1000] lands in the allocator's padding up to the 256-byte boundary"),
    Case("mc_load_next_alloc", "cuda", "memcheck.cu", "mc_load_next_alloc", _d(4), _d(256),
         lambda: [_rand("mc_load_next_alloc", 1024), np.zeros(1024, F32), S32(1024)], "memcheck",
         Expect("out_of_bounds", 16, thread=_t(255), block=_t(3), array="in", offset=4096),
         notes="in is 4096 bytes and out starts right after it: in[1024] is out[0], inside another allocation"),
    Case("mc_load_before_start", "cuda", "memcheck.cu", "mc_load_before_start", _d(4), _d(256),
         lambda: [np.zeros(1024, F32), _rand("mc_load_before_start", 1024), S32(1024)], "memcheck",
         Expect("out_of_bounds", 23, thread=_t(0), block=_t(0), array="in", offset=-4),
         notes="in[-1] is the last element of out, the allocation just before in"),
    Case("mc_gather_wild", "cuda", "memcheck.cu", "mc_gather_wild", G, _d(256),
         lambda: [_wild_index(), _rand("mc_gather_wild", 1024), np.zeros(256, F32), S32(256)], "memcheck",
         Expect("out_of_bounds", 29, thread=_t(77), block=_t(0), array="table", offset=4496),
         notes="table[1124] is out[100], inside the next allocation"),
    Case("mc_column_stride", "cuda", "memcheck.cu", "mc_column_stride", G, _d(32),
         lambda: [_rand("mc_column_stride", 1024), np.zeros(32, F32), S32(3), S32(64)], "memcheck",
         Expect("out_of_bounds", 36, threads=16, block=_t(0), array="m", offset=4108),
         notes="rows 16..31 read past the 4096-byte matrix; row 16 lands in out, the next allocation"),
    Case("mc_misaligned", "cuda", "memcheck.cu", "mc_misaligned", _d(4), _d(256),
         lambda: [_rand("mc_misaligned", 4 * 1024 + 256, U8), np.zeros(1024, F32), S32(1024)], "memcheck",
         Expect("misaligned", 43, threads=1024, block=_t(0), array="bytes", offset=1),
         notes="every thread's 4-byte load is at an odd address"),
    Case("mc_shared_overflow", "cuda", "memcheck.cu", "mc_shared_overflow", G, _d(256),
         lambda: [_rand("mc_shared_overflow", 256), np.zeros(256, F32)], "memcheck",
         Expect("out_of_bounds", 52, thread=_t(255), block=_t(0), array="tile", space="shared", offset=1024),
         notes="tile is the block's only shared array: tile[256] is past the block's shared memory"),
    Case("mc_shared_into_neighbour", "cuda", "memcheck.cu", "mc_shared_into_neighbour", G, _d(128),
         lambda: [_rand("mc_shared_into_neighbour", 128), np.zeros(128, F32)], "memcheck",
         Expect("out_of_bounds", 63, thread=_t(127), block=_t(0), array="a", space="shared", offset=512),
         notes="a[128] may be b[0]: inside the block's shared memory, outside the array"),
    Case("mc_shared_as_global", "cuda", "memcheck.cu", "mc_shared_as_global", G, _d(32),
         lambda: [np.zeros(32, F32)], "memcheck",
         Expect("wrong_space", 74, threads=32, block=_t(0), array="buf", space="shared", offset=0),
         notes="a shared-window offset (cvta.to.shared) dereferenced as a generic, i.e. global, pointer"),
    Case("mc_local_overflow", "cuda", "memcheck.cu", "mc_local_overflow", G, _d(256),
         lambda: [_local_index(8, 8), _rand("mc_local_overflow", 2048), np.zeros(256, F32), S32(256)],
         "memcheck", Expect("out_of_bounds", 85, thread=_t(77), block=_t(0), array="vals", space="local",
                            offset=32),
         notes="vals[8] of a 32-byte per-thread array (the PTX's __local_depot): past its end, inside the "
               "thread's local window"),
]

# ---- racecheck -------------------------------------------------------------------------------------------

RACECHECK = [
    Case("rc_raw_between_warps", "cuda", "racecheck.cu", "rc_raw_between_warps", G, _d(256),
         lambda: [_rand("rc_raw_between_warps", 256), np.zeros(256, F32)], "racecheck",
         Expect("race", 11, lines=(10, 11), hazards=("RAW", "WAR"), threads=256, block=_t(0), array="s",
                space="shared"),
         notes="thread t reads s[(t + 32) % 256], written by a thread of another warp, with no barrier"),
    Case("rc_reduce_missing_sync", "cuda", "racecheck.cu", "rc_reduce_missing_sync", G, _d(256),
         lambda: [_ints_as_floats("rc_reduce_missing_sync", 256), np.zeros(1, F32)], "racecheck",
         Expect("race", 22, lines=(22, 22), hazards=("RAW", "WAR"), threads=255, block=_t(0), array="s",
                space="shared"),
         notes="between warps for strides >= 32; within a warp (strides < 32) a hazard under ITS only"),
    Case("rc_tiled_war", "cuda", "racecheck.cu", "rc_tiled_war", G, _d(256),
         lambda: [_rand("rc_tiled_war", 1024), np.zeros(256, F32), S32(4)], "racecheck",
         Expect("race", 34, lines=(36, 34), hazards=("WAR", "RAW"), threads=256, block=_t(0), array="tile",
                space="shared"),
         notes="step k's read of tile[255 - t] against step k + 1's write by thread 255 - t (another warp)"),
    Case("rc_shared_waw", "cuda", "racecheck.cu", "rc_shared_waw", G, _d(256),
         lambda: [_rand("rc_shared_waw", 256, S32), np.zeros(128, S32)], "racecheck",
         Expect("race", 45, lines=(45, 45), hazards=("WAW",), threads=256, block=_t(0), array="s",
                space="shared"),
         notes="threads t and t + 128 (warps w and w + 4) write s[t % 128]"),
    Case("rc_global_sum", "cuda", "racecheck.cu", "rc_global_sum", _d(4), _d(256),
         lambda: [_ints_as_floats("rc_global_sum", 1000), np.zeros(1, F32), S32(1000)], "racecheck",
         Expect("race", 53, lines=(53, 53), hazards=("RAW", "WAR", "WAW"), threads=1000, array="out",
                offset=0),
         notes="global memory: compute-sanitizer's racecheck checks shared memory only"),
    Case("rc_global_neighbour", "cuda", "racecheck.cu", "rc_global_neighbour", _d(2), _d(256),
         lambda: [_rand("rc_global_neighbour", 512), np.zeros(512, F32), np.zeros(512, F32), S32(512)],
         "racecheck",
         Expect("race", 62, lines=(60, 62), hazards=("RAW", "WAR"), thread=_t(255), block=_t(0),
                other_thread=_t(0), other_block=_t(1), array="mid", offset=1024),
         notes="global memory, across blocks: the block's barrier does not order other blocks"),
    Case("rc_warp_no_syncwarp", "cuda", "racecheck.cu", "rc_warp_no_syncwarp", G, _d(32),
         lambda: [_rand("rc_warp_no_syncwarp", 32, S32), np.zeros(1, S32)], "racecheck",
         Expect("race", 73, lines=(72, 73), hazards=("RAW",), threads=16, block=_t(0), array="part",
                space="shared"),
         mode="its",
         notes="lanes of one warp: a hazard only under independent thread scheduling (mode='its'); the "
               "reconvergence stack runs the warp in lockstep and hides it"),
]

# ---- initcheck -------------------------------------------------------------------------------------------

INITCHECK = [
    Case("ic_shared_unwritten", "cuda", "initcheck.cu", "ic_shared_unwritten", G, _d(256),
         lambda: [_rand("ic_shared_unwritten", 256), np.zeros(256, F32)], "initcheck",
         Expect("uninitialized", 11, thread=_t(0), block=_t(0), array="s", space="shared", offset=1020),
         notes="shared memory: compute-sanitizer's initcheck checks global memory only"),
    Case("ic_global_uninit", "cuda", "initcheck.cu", "ic_global_uninit", _d(4), _d(256),
         lambda: [_rand("ic_global_uninit", 1024), uninit(1024, F32), np.zeros(1024, F32), S32(1024)],
         "initcheck",
         Expect("uninitialized", 17, threads=1024, block=_t(0), array="bias", offset=0),
         uninit=(1,), notes="bias: cudaMalloc without a copy or memset"),
    Case("ic_accumulate_unzeroed", "cuda", "initcheck.cu", "ic_accumulate_unzeroed", _d(4), _d(256),
         lambda: [_rand("ic_accumulate_unzeroed", 1024), uninit(1024, F32), S32(1024)], "initcheck",
         Expect("uninitialized", 23, threads=1024, block=_t(0), array="acc", offset=0),
         uninit=(1,), notes="acc: cudaMalloc without the memset to zero before +="),
    Case("ic_local_uninit", "cuda", "initcheck.cu", "ic_local_uninit", G, _d(256),
         lambda: [_local_index(7, 7), _rand("ic_local_uninit", 2048), np.zeros(256, F32), S32(256)],
         "initcheck",
         Expect("uninitialized", 34, thread=_t(77), block=_t(0), array="vals", space="local", offset=28),
         notes="local memory: compute-sanitizer's initcheck checks global memory only"),
]

# ---- synccheck -------------------------------------------------------------------------------------------

SYNCCHECK = [
    Case("sc_half_block_barrier", "cuda", "synccheck.cu", "sc_half_block_barrier", G, _d(256),
         lambda: [_rand("sc_half_block_barrier", 256), np.zeros(256, F32)], "synccheck",
         Expect("barrier_divergence", 10, threads=128, block=_t(0)),
         notes="whole warps skip the barrier (CUDA: undefined behaviour); warps 4..7 also read what warps "
               "0..3 wrote without a barrier (a race)"),
    Case("sc_lane_divergent_barrier", "cuda", "synccheck.cu", "sc_lane_divergent_barrier", G, _d(64),
         lambda: [_rand("sc_lane_divergent_barrier", 64), np.zeros(64, F32)], "synccheck",
         Expect("barrier_divergence", 19, threads=32, block=_t(0)),
         notes="the barrier is reached by the even lanes of every warp"),
    Case("sc_if_else_barriers", "cuda", "synccheck.cu", "sc_if_else_barriers", G, _d(64),
         lambda: [_rand("sc_if_else_barriers", 64), np.zeros(64, F32)], "synccheck",
         Expect("barrier_divergence", 30, lines=(30, 34), threads=16, block=_t(0)),
         notes="the halves of warp 0 wait at two different barrier instructions (CUDA: undefined; Volta+ "
               "hardware counts arrivals at barrier 0 whatever the instruction)"),
    Case("sc_syncwarp_partial", "cuda", "synccheck.cu", "sc_syncwarp_partial", G, _d(32),
         lambda: [_rand("sc_syncwarp_partial", 32, S32), np.zeros(32, S32)], "synccheck",
         Expect("warp_sync_mask", 45, threads=16, block=_t(0)), mode="its",
         notes="__syncwarp() names lanes 16..31, which never execute it"),
    Case("sc_syncwarp_mask_mismatch", "cuda", "synccheck.cu", "sc_syncwarp_mask_mismatch", G, _d(32),
         lambda: [_rand("sc_syncwarp_mask_mismatch", 32, S32), np.zeros(32, S32)], "synccheck",
         Expect("warp_sync_mask", 59, threads=16, block=_t(0)), mode="its",
         notes="lanes 16..31 name lanes 0..15, which wait at another __syncwarp with another mask"),
    Case("sc_shfl_partial_mask", "cuda", "synccheck.cu", "sc_shfl_partial_mask", G, _d(32),
         lambda: [_rand("sc_shfl_partial_mask", 32, S32), np.zeros(32, S32)], "synccheck",
         Expect("warp_sync_mask", 68, threads=16, block=_t(0)), mode="its",
         notes="__shfl_down_sync names lanes 16..31, which do not execute it"),
    Case("sc_named_barrier_count", "cuda", "synccheck.cu", "sc_named_barrier_count", G, _d(128),
         lambda: [_rand("sc_named_barrier_count", 64), np.zeros(64, F32)], "synccheck",
         Expect("barrier_divergence", 79, threads=64, block=_t(0)),
         notes="bar.sync 1, 96 reached by 64 threads; warps 2 and 3 exit without it. It hangs the H200, "
               "under every compute-sanitizer tool too. jaxsimt's PTX front end refuses barrier ids other than "
               "0 and thread counts"),
]

# ---- clean look-alikes -----------------------------------------------------------------------------------


def _block_sums(a, per):
    return a.reshape(-1, per).sum(axis=1, dtype=np.float64).astype(a.dtype)


def _stencil(a):
    p = np.concatenate([[0], a, [0]]).astype(np.float64)
    return (p[:-2] + 2 * p[1:-1] + p[2:]).astype(F32)


def _early_exit_ref(a, n):
    t = np.arange(n) % 256
    prev = np.concatenate([[0], a[:-1]])
    return (2 * a + np.where(t > 0, prev, 0)).astype(F32)


def _double_buffer_ref(a, ntiles):
    return a.reshape(ntiles, 256)[:, ::-1].sum(axis=0, dtype=np.float64).astype(F32)


def _neighbour_ref(a):
    nxt = np.concatenate([a[1:], [0]]).astype(F32)
    return (nxt - a).astype(F32)


def _local_args():
    idx = _rng("ok_local_array").integers(0, 16, 256).astype(S32)
    return [idx, _rand("ok_local_array", 2048), np.zeros(256, F32), S32(256)]


CLEAN = [
    Case("ok_tree_reduce", "cuda", "clean.cu", "ok_tree_reduce", _d(4), _d(256),
         lambda: [_ints_as_floats("ok_tree_reduce", 1024), np.zeros(4, F32)], None,
         reference=lambda a: {1: _block_sums(a[0], 256)}, notes="rc_reduce_missing_sync done right"),
    Case("ok_histogram", "cuda", "clean.cu", "ok_histogram", _d(4), _d(256),
         lambda: [_rand("ok_histogram", 1000, S32), np.zeros(16, S32), S32(1000)], None,
         reference=lambda a: {1: np.bincount(a[0] & 15, minlength=16).astype(S32)},
         notes="atomics into shared and global memory: atomics do not race with atomics"),
    Case("ok_double_buffer", "cuda", "clean.cu", "ok_double_buffer", G, _d(256),
         lambda: [_ints_as_floats("ok_double_buffer", 1024), np.zeros(256, F32), S32(4)], None,
         reference=lambda a: {1: _double_buffer_ref(a[0], 4)}, notes="rc_tiled_war done right"),
    Case("ok_warp_reduce_syncwarp", "cuda", "clean.cu", "ok_warp_reduce_syncwarp", G, _d(32),
         lambda: [_rand("ok_warp_reduce_syncwarp", 32, S32), np.zeros(1, S32)], None,
         reference=lambda a: {1: np.array([a[0].sum()], S32)}, notes="rc_warp_no_syncwarp done right"),
    Case("ok_warp_reduce_shfl", "cuda", "clean.cu", "ok_warp_reduce_shfl", _d(2), _d(64),
         lambda: [_rand("ok_warp_reduce_shfl", 128, S32), np.zeros(4, S32)], None,
         reference=lambda a: {1: a[0].reshape(4, 32).sum(axis=1).astype(S32)},
         notes="sc_shfl_partial_mask done right"),
    Case("ok_stencil_halo", "cuda", "clean.cu", "ok_stencil_halo", _d(4), _d(256),
         lambda: [_ints_as_floats("ok_stencil_halo", 1024), np.zeros(1024, F32), S32(1024)], None,
         reference=lambda a: {1: _stencil(a[0])}, notes="halo cells read from shared memory after the barrier"),
    Case("ok_own_element", "cuda", "clean.cu", "ok_own_element", _d(4), _d(256),
         lambda: [_ints_as_floats("ok_own_element", 1000), np.zeros(1000, F32), S32(1000)], None,
         reference=lambda a: {1: (4 * a[0]).astype(F32)},
         notes="a thread's own write then read (global and shared): program order, no race"),
    Case("ok_neighbour_guarded", "cuda", "clean.cu", "ok_neighbour_guarded", _d(4), _d(256),
         lambda: [_ints_as_floats("ok_neighbour_guarded", 1024), np.zeros(1024, F32), S32(1024)], None,
         reference=lambda a: {1: _neighbour_ref(a[0])}, notes="mc_load_next_alloc done right"),
    Case("ok_local_array", "cuda", "clean.cu", "ok_local_array", G, _d(256), _local_args, None,
         reference=lambda a: {2: a[1].reshape(256, 8)[np.arange(256), a[0] & 7]},
         notes="mc_local_overflow and ic_local_uninit done right"),
    Case("sc_early_exit", "cuda", "synccheck.cu", "sc_early_exit", _d(4), _d(256),
         lambda: [_ints_as_floats("sc_early_exit", 1000), np.zeros(1000, F32), S32(1000)], None,
         reference=lambda a: {1: _early_exit_ref(a[0], 1000)},
         notes="threads past the end exit before a barrier the others then wait at: legal on Volta+ "
               "(exited threads do not hold a barrier), so no check may report it"),
]

# ---- DSL forms -------------------------------------------------------------------------------------------

DSL = [
    Case("dsl_mc_store_past_end", "dsl", "dsl_kernels.py", "dsl_mc_store_past_end", _d(4), _d(256),
         lambda: [np.zeros(1000, F32), S32(1000)], "memcheck",
         Expect("out_of_bounds", 18, thread=_t(232), block=_t(3), array="out", offset=4000)),
    Case("dsl_mc_load_next_alloc", "dsl", "dsl_kernels.py", "dsl_mc_load_next_alloc", _d(4), _d(256),
         lambda: [_rand("mc_load_next_alloc", 1024), np.zeros(1024, F32), S32(1024)], "memcheck",
         Expect("out_of_bounds", 26, thread=_t(255), block=_t(3), array="x", offset=4096),
         notes="x[1024] is out[0], inside the next allocation"),
    Case("dsl_rc_raw_between_warps", "dsl", "dsl_kernels.py", "dsl_rc_raw_between_warps", G, _d(256),
         lambda: [_rand("rc_raw_between_warps", 256), np.zeros(256, F32)], "racecheck",
         Expect("race", 35, lines=(34, 35), hazards=("RAW", "WAR"), threads=256, block=_t(0), array="s",
                space="shared")),
    Case("dsl_rc_global_sum", "dsl", "dsl_kernels.py", "dsl_rc_global_sum", _d(4), _d(256),
         lambda: [_ints_as_floats("rc_global_sum", 1000), np.zeros(1, F32), S32(1000)], "racecheck",
         Expect("race", 43, lines=(43, 43), hazards=("RAW", "WAR", "WAW"), threads=1000, array="out",
                offset=0)),
    Case("dsl_ic_shared_unwritten", "dsl", "dsl_kernels.py", "dsl_ic_shared_unwritten", G, _d(256),
         lambda: [_rand("ic_shared_unwritten", 256), np.zeros(256, F32)], "initcheck",
         Expect("uninitialized", 54, thread=_t(0), block=_t(0), array="s", space="shared", offset=1020)),
    Case("dsl_ic_global_uninit", "dsl", "dsl_kernels.py", "dsl_ic_global_uninit", _d(4), _d(256),
         lambda: [_rand("ic_global_uninit", 1024), uninit(1024, F32), np.zeros(1024, F32), S32(1024)],
         "initcheck", Expect("uninitialized", 62, threads=1024, block=_t(0), array="bias", offset=0),
         uninit=(1,)),
    Case("dsl_sc_half_block_barrier", "dsl", "dsl_kernels.py", "dsl_sc_half_block_barrier", G, _d(256),
         lambda: [_rand("sc_half_block_barrier", 256), np.zeros(256, F32)], "synccheck",
         Expect("barrier_divergence", 72, threads=128, block=_t(0))),
    Case("dsl_sc_shfl_partial_mask", "dsl", "dsl_kernels.py", "dsl_sc_shfl_partial_mask", G, _d(32),
         lambda: [_rand("sc_shfl_partial_mask", 32, S32), np.zeros(32, S32)], "synccheck",
         Expect("warp_sync_mask", 82, threads=16, block=_t(0)), mode="its"),
    Case("dsl_ok_tree_reduce", "dsl", "dsl_kernels.py", "dsl_ok_tree_reduce", _d(4), _d(256),
         lambda: [_ints_as_floats("ok_tree_reduce", 1024), np.zeros(4, F32)], None,
         reference=lambda a: {1: _block_sums(a[0], 256)}),
    Case("dsl_ok_histogram", "dsl", "dsl_kernels.py", "dsl_ok_histogram", _d(4), _d(256),
         lambda: [_rand("ok_histogram", 1000, S32), np.zeros(16, S32), S32(1000)], None,
         reference=lambda a: {1: np.bincount(a[0] & 15, minlength=16).astype(S32)}),
    Case("dsl_ok_warp_reduce_shfl", "dsl", "dsl_kernels.py", "dsl_ok_warp_reduce_shfl", _d(2), _d(64),
         lambda: [_rand("ok_warp_reduce_shfl", 128, S32), np.zeros(4, S32)], None,
         reference=lambda a: {1: a[0].reshape(4, 32).sum(axis=1).astype(S32)}),
]

CASES = MEMCHECK + RACECHECK + INITCHECK + SYNCCHECK + CLEAN + DSL
BY_NAME = {c.name: c for c in CASES}


def cuda_cases() -> list:
    return [c for c in CASES if c.kind == "cuda"]


def by_check(check: Optional[str]) -> list:
    """The cases whose planted bug `check` must report (None: the clean ones)."""
    return [c for c in CASES if c.check == check]
