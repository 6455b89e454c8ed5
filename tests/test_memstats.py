"""The wave-wide memory counters (`jaxsimt.units.memstats`) against per-warp sets of sectors and lines computed in
Python: every shortcut (non-decreasing lanes, 64-sector spans) gives the exact model's numbers, and waves
that no shortcut covers take the exact model; the shared-memory counts against the per-warp bank model."""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsimt.units import memstats
from jaxsimt.arch import get_arch

H200 = get_arch("h200")
L = H200.warp_size
BASE = 1 << 20  # 256-byte aligned, as the allocator lays arrays out

_counts = jax.jit(memstats.global_counts, static_argnums=(0, 2, 4))


def reference(addr, active, nbytes):
    """(requests, sectors, lines) per warp from Python sets (one request per warp instruction on the H200)."""
    out = []
    for a, m in zip(addr, active):
        lanes = [int(x) for x, on in zip(a, m) if on]
        secs = {x // H200.sector_size for x in lanes} | {(x + nbytes - 1) // H200.sector_size for x in lanes}
        out.append((int(bool(lanes)), len(secs), len({s * H200.sector_size // H200.line_size for s in secs})))
    return np.asarray(out, np.int32).reshape(-1, 3)


def check(addr, active, nbytes=4):
    addr, active = np.asarray(addr, np.int64), np.asarray(active, bool)
    with jax.enable_x64(True):  # as launches run: int64 addresses, 64-bit sector sets
        got = np.stack([np.asarray(x) for x in _counts(H200, jnp.asarray(addr), nbytes, jnp.asarray(active), "ld")], 1)
    np.testing.assert_array_equal(got, reference(addr, active, nbytes))


lane = np.arange(L)


def test_rows_of_a_tile_far_apart_count_by_neighbours():
    # a 16x16 block's warp reads two rows of a 512-float matrix: 64 sectors apart, beyond any 64-sector set
    addr = BASE + 4 * np.where(lane < 16, 0, 512)[None, :] + 4 * 512 * 2 * np.arange(8)[:, None]
    check(addr, np.ones_like(addr, bool))
    check(BASE + 4 * 1024 * lane[None, :] + np.zeros((4, 1), int), np.ones((4, L), bool))  # stride 4 KiB


def test_gaps_in_the_active_lanes_are_not_taken_for_new_sectors():
    # two rows 64 sectors apart, lane 4 inactive: lanes 3 and 5 share a sector
    addr = BASE + 4 * np.where(lane < 16, lane, 512 + lane - 16)[None, :] + np.zeros((2, 1), int)
    check(addr, np.stack([lane != 4, lane < 30]))


def test_decreasing_lanes_within_a_span_and_scattered_lanes():
    rev = BASE + 4 * (L - 1 - lane)[None, :] + 128 * np.arange(4)[:, None]
    check(rev, np.ones_like(rev, bool))  # reversed: the 64-sector set
    rng = np.random.default_rng(0)
    wide = BASE + 4 * rng.integers(0, 1 << 16, (4, L))
    check(wide, rng.random((4, L)) < 0.7)  # neither shortcut: the exact model


_warp = st.one_of(
    st.tuples(st.just("stride"), st.integers(-4096, 4096), st.integers(1 << 17, 1 << 18)),
    st.tuples(st.just("rows"), st.integers(1, 4096), st.integers(0, 1 << 14)),
    st.tuples(st.just("shuffled"), st.integers(0, 2 ** 32 - 1), st.integers(0, 1 << 14)),
    st.tuples(st.just("random"), st.integers(0, 2 ** 32 - 1), st.integers(0, 1 << 14)),
)


def _lanes(kind, p, start, nbytes):
    if kind == "stride":
        return start * nbytes + nbytes * p * lane
    if kind == "rows":  # lanes 0-15 one row, 16-31 the next, rows p elements apart
        return start * nbytes + nbytes * (lane % 16 + p * (lane // 16))
    rng = np.random.default_rng(p)
    if kind == "shuffled":  # a permutation of a small window
        return start * nbytes + nbytes * rng.permutation(L)
    return nbytes * rng.integers(0, 1 << 20, L)


_mask = st.one_of(st.integers(0, 2 ** 32 - 1).map(lambda m: (m >> lane) & 1 == 1),  # any lanes
                  st.tuples(st.integers(0, L), st.integers(0, L)).map(lambda r: (lane >= r[0]) & (lane < r[1])))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_warp, _mask), min_size=1, max_size=6), st.sampled_from([1, 2, 4, 8, 16]))
def test_wave_counts_equal_per_warp_sets(warps, nbytes):
    addr = BASE + np.stack([_lanes(k, p, s, nbytes) for (k, p, s), _ in warps])
    check(addr, np.stack([m for _, m in warps]), nbytes)


# Shared memory: the wave's counts (the 64-word span shortcut, else the per-warp model) against the per-warp bank model

_shared = jax.jit(memstats.shared_counts, static_argnums=(0, 2))


def shared_check(offsets, active, nbytes):
    """offsets [W, L] byte offsets in the shared window; the wave's (wavefronts, conflicts) against
    `banks.bank_access` warp by warp."""
    from jaxsimt.units import banks
    offsets, active = np.asarray(offsets, np.int64), np.asarray(active, bool)
    with jax.enable_x64(True):
        got = np.stack([np.asarray(x) for x in _shared(H200, jnp.asarray(offsets), nbytes, jnp.asarray(active))], 1)
        want = [banks.bank_access(H200, jnp.asarray(o), nbytes, jnp.asarray(m)) for o, m in zip(offsets, active)]
    np.testing.assert_array_equal(got, np.asarray([[int(b.wavefronts), int(b.conflicts)] for b in want]))


def test_shared_strides_beyond_a_span():
    """Strides of 32 words (every lane in one bank: 32 wavefronts), 33 (all banks: 1), 64 and 2 words (two words
    in each of 16 banks: 2 wavefronts, 1 conflict), and a broadcast, in one wave: the first three lie beyond the
    64-word span the shortcut covers."""
    rows = [4 * 32 * lane, 4 * 33 * lane, 4 * 64 * lane, 4 * 2 * lane, np.full(L, 40)]
    shared_check(np.stack(rows), np.ones((len(rows), L), bool), 4)
    with jax.enable_x64(True):
        waves, conflicts = _shared(H200, jnp.asarray(np.stack(rows)), 4, jnp.ones((len(rows), L), bool))
    assert np.asarray(waves).tolist() == [32, 1, 32, 2, 1] and np.asarray(conflicts).tolist() == [31, 0, 31, 1, 0]


_swarp = st.one_of(
    st.tuples(st.just("stride"), st.integers(-70, 70), st.integers(1 << 12, 1 << 13)),
    st.tuples(st.just("window"), st.integers(0, 2 ** 32 - 1), st.sampled_from([16, 64, 100, 4096])),
)


def _shared_lanes(kind, p, q, nbytes):
    if kind == "stride":  # p words apart from word q
        return 4 * (q + p * lane)
    rng = np.random.default_rng(p)  # random words of a window of q words, at any aligned byte of the word
    return 4 * rng.integers(0, q, L) + nbytes * rng.integers(0, 4 // nbytes, L)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_swarp, _mask), min_size=1, max_size=6), st.sampled_from([1, 2, 4]))
def test_shared_wave_counts_equal_the_per_warp_model(warps, nbytes):
    offsets = np.stack([_shared_lanes(k, p, q, nbytes) for (k, p, q), _ in warps])
    shared_check(offsets, np.stack([m for _, m in warps]), nbytes)
