"""Shared-memory bank model: the worked examples of seeds 000 and 003, and properties."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsimt.arch import get_arch
from jaxsimt.units.banks import BankAccess, bank_access, counters

H200, FERMI, G80 = get_arch("h200"), get_arch("fermi"), get_arch("g80")
TID = np.arange(32, dtype=np.int32)
ALL = np.ones(32, bool)

_jitted = jax.jit(bank_access, static_argnums=(0, 2))


def run(arch, addresses, size=4, active=ALL) -> BankAccess:
    out = _jitted(arch, jnp.asarray(addresses, jnp.int32), size, jnp.asarray(active))
    return BankAccess(*(int(x) for x in out))


# --- seed 003, Ex. 1: linear addressing shared[base + s * tid] is conflict-free exactly when s is odd ---
@pytest.mark.parametrize("arch", [H200, FERMI], ids=lambda a: a.name)
@pytest.mark.parametrize("stride", range(1, 34))
def test_stride_conflict_free_iff_odd_32_banks(arch, stride):
    base = 7
    r = run(arch, (base + stride * TID) * 4)
    assert (r.wavefronts == 1) == (stride % 2 == 1)
    assert r.conflicts == r.wavefronts - 1
    # degree of an even stride: gcd with the bank count decides the way of the conflict
    assert r.degree == np.gcd(stride, 32)


@pytest.mark.parametrize("stride", range(1, 18))
def test_stride_on_g80_per_half_warp(stride):
    r = run(G80, stride * TID * 4)
    assert r.degree == np.gcd(stride, 16)
    assert r.wavefronts == 2 * np.gcd(stride, 16)  # two half-warps, served separately


# --- seed 000: 32x32 float tile read down a column: 32-way, fixed by padding rows to 33 ---
@pytest.mark.parametrize("i", [0, 1, 5, 31])
def test_tile_column_32_way_and_padding(i):
    unpadded = run(H200, (TID * 32 + i) * 4)
    assert (unpadded.wavefronts, unpadded.conflicts, unpadded.degree) == (32, 31, 32)
    padded = run(H200, (TID * 33 + i) * 4)
    assert (padded.wavefronts, padded.conflicts, padded.degree) == (1, 0, 1)


# --- seed 003, Ex. 2: char and short arrays indexed by threadIdx.x ---
def test_char_short_on_g80_4_and_2_way():
    char = run(G80, TID, size=1)
    short = run(G80, TID * 2, size=2)
    word = run(G80, TID * 4, size=4)
    assert char.degree == 4 and char.wavefronts == 8  # 4 steps per half-warp
    assert short.degree == 2 and short.wavefronts == 4
    assert word.degree == 1 and word.conflicts == 0
    # char data = shared[base + 4 * tid] does not conflict
    assert run(G80, 4 * TID, size=1).degree == 1


@pytest.mark.parametrize("arch", [H200, FERMI], ids=lambda a: a.name)
def test_sub_word_broadcast_within_a_word_fermi_and_later(arch):
    for size in (1, 2):
        r = run(arch, TID * size, size=size)
        assert (r.wavefronts, r.conflicts) == (1, 0)


# --- seed 003, Ex. 3: structs ---
def test_structs_on_g80():
    # struct vector {float x, y, z;}: each member read is stride 3 words
    for member in range(3):
        r = run(G80, (3 * TID + member) * 4)
        assert r.degree == 1 and r.conflicts == 0
    # struct myType {float f; int c;}: stride 2 words, 2-way
    for member in range(2):
        r = run(G80, (2 * TID + member) * 4)
        assert r.degree == 2


# --- seed 003, Ex. 4: 2*tid interleaved store is 2-way; blockDim-strided stores are free ---
@pytest.mark.parametrize("arch", [G80, FERMI, H200], ids=lambda a: a.name)
def test_interleaved_vs_strided_loads(arch):
    block = 256
    assert run(arch, 2 * TID * 4).degree == 2
    assert run(arch, (2 * TID + 1) * 4).degree == 2
    assert run(arch, TID * 4).conflicts == 0
    assert run(arch, (TID + block) * 4).conflicts == 0


# --- seed 003, Ex. 5: 16x16 array, each thread walking its row: the column access is 16-way on G80 ---
def test_16x16_column_on_g80_and_padding():
    rows = TID % 16  # each half-warp holds 16 threads, one per row
    column = run(G80, (rows * 16 + 3) * 4)
    assert column.degree == 16 and column.wavefronts == 32
    padded = run(G80, (rows * 17 + 3) * 4)
    assert padded.degree == 1 and padded.conflicts == 0


# --- broadcast of one word ---
@pytest.mark.parametrize("arch", [G80, FERMI, H200], ids=lambda a: a.name)
def test_broadcast_one_word(arch):
    half_warps = arch.warp_size // arch.bank_group_threads
    for size in (1, 2, 4):
        r = run(arch, np.full(32, 40), size=size)
        assert r.wavefronts == half_warps and r.conflicts == 0 and r.degree == 1


# --- reduction: interleaved addressing conflicts grow with the stride, sequential addressing has none ---
@pytest.mark.parametrize("arch", [G80, H200], ids=lambda a: a.name)
def test_reduction_interleaved_vs_sequential(arch):
    block = 512
    interleaved = []
    for s in (1, 2, 4, 8, 16):
        index = 2 * s * TID  # reduction #2: sdata[index] += sdata[index + s] for index < blockDim
        r = run(arch, index * 4, active=index < block)
        interleaved.append(r.degree)
        assert r.conflicts > 0
    assert interleaved == sorted(interleaved) and interleaved[-1] > interleaved[0]
    for s in (256, 128, 64, 32, 16, 8, 4, 2, 1):
        r = run(arch, (TID + s) * 4, active=TID < s)  # sdata[tid] += sdata[tid + s] for tid < s
        assert r.conflicts == 0 and r.degree == 1


# --- wider accesses ---
def test_wide_accesses_on_fermi_and_later():
    assert run(H200, TID * 8, size=8) == BankAccess(2, 0, 1)
    assert run(H200, TID * 16, size=16) == BankAccess(4, 0, 1)
    # all lanes reading one double still costs one wavefront per half-warp
    assert run(H200, np.zeros(32), size=8) == BankAccess(2, 0, 1)
    # a 16-byte access with a row stride of 128 bytes: each quarter-warp puts 8 quads on the same 4 banks
    assert run(H200, TID * 128, size=16) == BankAccess(32, 28, 8)


def test_double_on_g80_two_requests_per_half_warp():
    r = run(G80, TID * 8, size=8)
    assert r.wavefronts == 4 and r.degree == 2 and r.conflicts == 0


def test_no_active_lane_costs_nothing_to_be_measured():
    for arch in (G80, H200):
        assert run(arch, TID * 4, active=np.zeros(32, bool)) == BankAccess(0, 0, 0)


def test_partial_warp():
    active = TID < 3
    assert run(H200, TID * 32 * 4, active=active) == BankAccess(3, 2, 3)
    # G80: only the first half-warp has active lanes
    assert run(G80, TID * 16 * 4, active=active) == BankAccess(3, 2, 3)


def test_counter_names():
    names = counters(run(H200, TID * 4), "st")
    assert names == {
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 1,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
    }


@pytest.mark.parametrize("size", [3, 32])
def test_bad_size(size):
    with pytest.raises(ValueError):
        bank_access(H200, TID, size, ALL)


# --- jit / vmap ---
class JitVariants(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_same_with_and_without_jit(self):
        fn = self.variant(lambda a, m: bank_access(H200, a, 4, m))
        out = fn(jnp.asarray(TID * 64), jnp.asarray(TID < 20))
        assert (int(out.wavefronts), int(out.conflicts), int(out.degree)) == (10, 9, 10)


@pytest.mark.parametrize("arch", [G80, H200], ids=lambda a: a.name)
def test_vmap_batch_of_1000_patterns(arch):
    rng = np.random.default_rng(0)
    strides = rng.integers(1, 40, size=1000)
    addresses = jnp.asarray(strides[:, None] * TID[None, :] * 4, jnp.int32)
    active = jnp.asarray(rng.random((1000, 32)) < 0.9)
    batched = jax.jit(jax.vmap(lambda a, m: bank_access(arch, a, 4, m)))(addresses, active)
    assert batched.wavefronts.shape == (1000,)
    for k in (0, 1, 17, 999):
        assert int(batched.wavefronts[k]) == run(arch, addresses[k], active=active[k]).wavefronts


def test_int64_addresses_under_x64():
    with jax.enable_x64(True):
        out = _jitted(H200, jnp.asarray(TID, jnp.int64) * 4 + 2**36, 4, jnp.asarray(ALL))
        assert int(out.wavefronts) == 1
    out = _jitted(H200, jnp.asarray(TID, jnp.uint32) * 132, 4, jnp.asarray(ALL))
    assert int(out.wavefronts) == 1


# --- properties (they reuse the compiled functions of the examples above) ---
_addresses = st.lists(st.integers(0, 48 * 1024 - 16), min_size=32, max_size=32)
_masks = st.lists(st.booleans(), min_size=32, max_size=32)


@settings(max_examples=40, deadline=None)
@given(_addresses, _masks, st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from(["g80", "fermi", "h200"]))
def test_wavefronts_bounded_and_inactive_lanes_ignored(addresses, mask, size, name):
    arch = get_arch(name)
    addresses = (np.asarray(addresses) // size) * size  # naturally aligned
    mask = np.asarray(mask)
    scrambled = np.where(mask, addresses, (addresses * 7 + 1234) // size * size)
    first = run(arch, addresses, size, mask)
    assert first == run(arch, scrambled, size, mask)  # an inactive lane's address changes nothing
    if mask.any():
        assert 1 <= first.wavefronts <= 32
        assert first.conflicts >= 0 and first.degree >= 1
    else:
        assert first == BankAccess(0, 0, 0)


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(32)), st.lists(st.integers(0, 300), min_size=32, max_size=32), _masks)
def test_distinct_banks_are_one_wavefront(perm, rows, mask):
    mask = np.asarray(mask)
    words = np.asarray(rows) * 32 + np.asarray(perm)
    assert run(H200, words * 4, active=mask).wavefronts == (1 if mask.any() else 0)
    # G80: 16 banks, served per half-warp; distinct banks within each half-warp
    half_perm = np.argsort(perm[:16])  # a permutation of the 16 banks
    g80_words = np.asarray(rows) * 16 + np.concatenate([half_perm, half_perm[::-1]])
    expected = int(mask[:16].any()) + int(mask[16:].any())
    assert run(G80, g80_words * 4, active=mask).wavefronts == expected
