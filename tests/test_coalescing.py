"""Global-memory coalescing: the seeds' patterns on Hopper, Fermi and G80 rules, and properties."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsimt.arch import get_arch
from jaxsimt.units.coalescing import Coalescing, coalesce, count_distinct, counters

H200, FERMI, G80 = get_arch("h200"), get_arch("fermi"), get_arch("g80")
TID = np.arange(32, dtype=np.int32)
ALL = np.ones(32, bool)
BASE = 1 << 20  # 256-byte aligned, as the allocator lays arrays out

_jitted = jax.jit(coalesce, static_argnums=(0, 2, 4))


def run(arch, addresses, size=4, active=ALL, op="ld") -> Coalescing:
    out = _jitted(arch, jnp.asarray(addresses, jnp.int32), size, jnp.asarray(active), op)
    return Coalescing(*(int(x) for x in out))


# --- Hopper (sectors), the Nsight Compute l1tex__t_{requests,sectors} counts ---
@pytest.mark.parametrize(
    "stride, sectors",
    [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32), (33, 32)],
)
def test_float_strides(stride, sectors):
    r = run(H200, BASE + stride * TID * 4)
    assert (r.requests, r.sectors) == (1, sectors)
    assert r.transactions == sectors and r.transaction_bytes == 32 * sectors


def test_unit_stride_float_one_line():
    r = run(H200, BASE + TID * 4)
    assert r == Coalescing(requests=1, sectors=4, lines=1, transactions=4, transaction_bytes=128)


def test_misaligned_warp_touches_one_more_sector():
    r = run(H200, BASE + 4 + TID * 4)
    assert (r.requests, r.sectors, r.lines) == (1, 5, 2)


@pytest.mark.parametrize("size, sectors, lines", [(1, 1, 1), (2, 2, 1), (4, 4, 1), (8, 8, 2), (16, 16, 4)])
def test_element_sizes_unit_stride(size, sectors, lines):
    r = run(H200, BASE + TID * size, size=size)
    assert (r.requests, r.sectors, r.lines) == (1, sectors, lines)


def test_straddling_accesses_touch_both_sectors():
    # 8-byte elements shifted by 4 bytes: every fourth lane straddles a sector boundary
    r = run(H200, BASE + 4 + TID * 8, size=8)
    assert r.sectors == 9
    # one lane, 16 bytes starting 8 bytes before a sector boundary
    one = TID == 0
    assert run(H200, np.full(32, BASE + 24), size=16, active=one).sectors == 2
    assert run(H200, np.full(32, BASE + 16), size=16, active=one).sectors == 1


def test_all_lanes_one_address_one_sector():
    for size in (1, 4, 16):
        r = run(H200, np.full(32, BASE + 64), size=size)
        assert (r.requests, r.sectors, r.lines) == (1, 1, 1)


def test_stores_count_like_loads_on_hopper():
    for addresses in (BASE + TID * 4, BASE + TID * 128, BASE + 4 + TID * 4):
        assert run(H200, addresses, op="st") == run(H200, addresses, op="ld")


def test_inactive_warp_costs_nothing_and_partial_warp():
    assert run(H200, BASE + TID * 4, active=np.zeros(32, bool)) == Coalescing(0, 0, 0, 0, 0)
    r = run(H200, BASE + TID * 4, active=TID < 9)  # 36 bytes: two sectors
    assert (r.requests, r.sectors) == (1, 2)


def test_counter_names():
    names = counters(run(H200, BASE + TID * 4), "ld")
    assert names == {
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4,
    }


# --- Fermi: 128-byte L1 lines per request; 8/16-byte requests split per half/quarter-warp ---
def test_fermi_lines():
    assert run(FERMI, BASE + TID * 4)[:4] == (1, 4, 1, 1)
    assert run(FERMI, BASE + TID * 8).transactions == 2
    assert run(FERMI, BASE + TID * 128).transaction_bytes == 32 * 128
    assert run(FERMI, BASE + 4 + TID * 4).transactions == 2
    double = run(FERMI, BASE + TID * 8, size=8)
    assert (double.requests, double.transactions) == (2, 2)
    quad = run(FERMI, BASE + TID * 16, size=16)
    assert (quad.requests, quad.transactions, quad.transaction_bytes) == (4, 4, 512)
    # stores go to L2 in 32-byte segments
    store = run(FERMI, BASE + TID * 4, op="st")
    assert (store.transactions, store.transaction_bytes) == (4, 128)


# --- G80 / compute capability 1.2-1.3 segments, per half-warp (CUDA programming guide examples) ---
def test_g80_segments():
    # unit-stride floats: each half-warp uses 64 bytes of a 128-byte segment -> one 64-byte transaction
    r = run(G80, BASE + TID * 4)
    assert (r.requests, r.transactions, r.transaction_bytes) == (2, 2, 128)
    # misaligned by 4 bytes: half-warp 0 spans both halves of a segment (128 B); half-warp 1 needs the
    # upper half of that segment (64 B) and the first 32 bytes of the next one
    r = run(G80, BASE + 4 + TID * 4)
    assert (r.transactions, r.transaction_bytes) == (3, 128 + 64 + 32)
    # stride 2 floats: each half-warp spans a full 128-byte segment
    assert run(G80, BASE + TID * 8)[3:] == (2, 256)
    # stride of 32 floats: one 32-byte transaction per lane
    assert run(G80, BASE + TID * 128)[3:] == (32, 32 * 32)
    # one address for every lane: one 32-byte transaction per half-warp
    assert run(G80, np.full(32, BASE + 8))[3:] == (2, 64)
    # chars: a half-warp's 16 bytes fit one 32-byte segment; shorts: 32 bytes of a 64-byte segment
    assert run(G80, BASE + TID, size=1)[3:] == (2, 64)
    assert run(G80, BASE + TID * 2, size=2)[3:] == (2, 64)
    # 16-byte elements: a half-warp covers 256 bytes, two 128-byte segments
    assert run(G80, BASE + TID * 16, size=16)[3:] == (4, 512)
    # lanes permuted within the segment are still one transaction (the cc 1.2/1.3 rule)
    perm = (TID * 7) % 16 + 16 * (TID // 16)
    assert run(G80, BASE + perm * 4)[3:] == (2, 128)


def test_g80_only_active_lanes_are_served():
    r = run(G80, BASE + TID * 4, active=TID < 4)  # 16 bytes in the lower quarter
    assert (r.requests, r.transactions, r.transaction_bytes) == (1, 1, 32)


# --- helpers, jit / vmap, 64-bit addresses ---
def test_count_distinct():
    keys = jnp.asarray([[5, 5, 7, 1], [3, 3, 3, 3]], jnp.int32)
    valid = jnp.asarray([[True, True, False, True], [False] * 4])
    assert count_distinct(keys, valid).tolist() == [2, 0]


class JitVariants(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_same_with_and_without_jit(self):
        fn = self.variant(lambda a, m: coalesce(H200, a, 4, m))
        out = fn(jnp.asarray(BASE + 4 + TID * 4), jnp.asarray(ALL))
        assert (int(out.requests), int(out.sectors)) == (1, 5)


@pytest.mark.parametrize("arch", [G80, H200], ids=lambda a: a.name)
def test_vmap_batch_of_1000_patterns(arch):
    rng = np.random.default_rng(1)
    strides = rng.integers(0, 40, size=1000)
    addresses = jnp.asarray(BASE + strides[:, None] * TID[None, :] * 4, jnp.int32)
    active = jnp.asarray(rng.random((1000, 32)) < 0.9)
    batched = jax.jit(jax.vmap(lambda a, m: coalesce(arch, a, 4, m)))(addresses, active)
    assert batched.sectors.shape == (1000,)
    for k in (0, 3, 500, 999):
        assert int(batched.transactions[k]) == run(arch, addresses[k], active=active[k]).transactions


def test_64_bit_addresses():
    with jax.enable_x64(True):
        addresses = jnp.asarray(TID, jnp.int64) * 4 + (1 << 40) + 4
        out = _jitted(H200, addresses, 4, jnp.asarray(ALL), "ld")
        assert (int(out.requests), int(out.sectors)) == (1, 5)
        # lanes 4 GiB apart share their low 32 bits but not their sectors
        far = jnp.asarray(TID, jnp.int64) << 32
        assert int(_jitted(H200, far, 4, jnp.asarray(ALL), "ld").sectors) == 32


def test_bad_arguments():
    with pytest.raises(ValueError):
        coalesce(H200, TID, 3, ALL)
    with pytest.raises(ValueError):
        coalesce(H200, TID, 4, ALL, op="atom")


# --- properties (they reuse the compiled functions of the examples above) ---
_offsets = st.lists(st.integers(0, 1 << 16), min_size=32, max_size=32)
_masks = st.lists(st.booleans(), min_size=32, max_size=32)


# every size on Hopper; the sizes the examples above already compiled for Fermi and G80
_configs = [("h200", size) for size in (1, 2, 4, 8, 16)] + [("fermi", 4), ("fermi", 8), ("fermi", 16)]
_configs += [("g80", 1), ("g80", 2), ("g80", 4), ("g80", 16)]


@settings(max_examples=40, deadline=None)
@given(_offsets, _masks, st.sampled_from(_configs))
def test_sectors_bounded_and_inactive_lanes_ignored(offsets, mask, config):
    name, size = config
    arch = get_arch(name)
    addresses = BASE + np.asarray(offsets)
    mask = np.asarray(mask)
    r = run(arch, addresses, size, mask)
    per_access = 1 + (size - 1 + arch.sector_size - 1) // arch.sector_size  # sectors one access can touch
    assert r.sectors <= mask.sum() * per_access
    assert r.lines <= r.sectors
    assert (r.requests == 0) == (not mask.any())
    scrambled = np.where(mask, addresses, addresses * 3 + 1000)
    assert run(arch, scrambled, size, mask) == r


@settings(max_examples=30, deadline=None)
@given(_offsets, _masks)
def test_aligned_sectors_are_distinct_sector_indices(offsets, mask):
    addresses = BASE + np.asarray(offsets) // 4 * 4
    mask = np.asarray(mask)
    expected = len({a // 32 for a, m in zip(addresses, mask) if m})
    assert run(H200, addresses, 4, mask).sectors == expected
