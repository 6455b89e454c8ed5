"""Issue 9's machine features: register banks, constant cache, read-only/texture cache, carve-out,
generic addressing. Expected numbers are counted by hand from the models in docs/machine-features.md."""
import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import Const, Ptr, f32, s32
from jaxsimt.ptx import launch as ptx_launch

HEADER = ".version 7.8\n.target sm_90\n.address_size 64\n"

# ---------------------------------------------------------------------------------------------
# Register-bank conflicts
# ---------------------------------------------------------------------------------------------

BANKS_PTX = HEADER + """
.visible .entry banks(.param .u64 out)
{
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.f32 %f0, 0f3F800000;
    mov.f32 %f2, 0f40000000;
    mov.f32 %f6, 0f40400000;
    mov.f32 %f3, 0f40800000;
    fma.rn.f32 %f4, %f0, %f2, %f6;
    fma.rn.f32 %f5, %f0, %f3, %f4;
    add.f32 %f1, %f5, %f5;
    st.global.f32 [%rd2], %f1;
    ret;
}
"""

# Extra read cycles per instruction, by hand (bank = register number % banks, one read per bank per cycle):
#                              h200 (2 banks)            g80 (4 banks)
# fma %f4, %f0, %f2, %f6       0,0,0 -> 3 cycles: 2      0,2,2 -> 2 cycles: 1
# fma %f5, %f0, %f3, %f4       0,1,0 -> 2 cycles: 1      0,3,0 -> 2 cycles: 1
# add %f1, %f5, %f5            one register: 0           0
# st [%rd2], %f1               0,1: 0                    2,1: 0
BANK_HAND = {"h200": [2, 1, 0, 0], "g80": [1, 1, 0, 0], "fermi": [1, 1, 0, 0]}


@pytest.mark.parametrize("arch", ["h200", "g80", "fermi"])
def test_register_bank_conflicts_equal_hand_count(arch):
    out = np.zeros(1, np.float32)
    r = ptx_launch(BANKS_PTX, "banks", 1, 64, [out], arch=arch)
    assert r["out"][0] == 2 * (1 * 4 + (1 * 2 + 3))
    rows = [row for row in r.per_instruction if row["op"] in ("fma", "add", "st")]
    assert [row["register_bank_conflicts"] for row in rows] == BANK_HAND[arch]
    # two warps execute each instruction once
    assert r.stats["emulator__register_bank_conflicts"] == 2 * sum(BANK_HAND[arch])


def test_register_bank_extra_cycles_array_for_timing():
    from jaxsimt.arch import get_arch
    from jaxsimt.ptx.lower import lower
    from jaxsimt.units.regbanks import extra_cycles
    prog = lower(BANKS_PTX, "banks", [np.zeros(1, np.float32)])
    cyc = extra_cycles(prog, get_arch("h200"))
    assert cyc.shape == (len(prog.instructions()),) and cyc.sum() == 3


# ---------------------------------------------------------------------------------------------
# Constant memory
# ---------------------------------------------------------------------------------------------


@js.kernel
def const_lookup(c: Const[f32], idx: Ptr[s32], out: Ptr[f32]):
    t = js.threadIdx.x
    out[t] = c[idx[t]] * 2.0


@pytest.mark.parametrize("pattern, accesses", [("broadcast", 1), ("scattered", 32), ("pairs", 16)])
def test_constant_cache_broadcast_and_serialization(pattern, accesses):
    c = np.arange(64, dtype=np.float32) + 0.5
    idx = {"broadcast": np.full(64, 7), "scattered": np.arange(64)[::-1],
           "pairs": np.arange(64) // 2}[pattern].astype(np.int32)
    r = js.launch(const_lookup, 1, 64, (c, idx, np.zeros(64, np.float32)))
    np.testing.assert_array_equal(r["out"], c[idx] * 2)
    assert r.stats["emulator__const_requests.sum"] == 2  # one request per warp
    assert r.stats["emulator__const_accesses.sum"] == 2 * accesses
    # constant loads are not global traffic
    row = next(row for row in r.per_instruction if row.get("space") == "const")
    assert (row["const_requests"], row["const_accesses"], row["requests"], row["sectors"]) == (2, 2 * accesses, 0, 0)


def test_constant_memory_is_read_only_and_bounded():
    with pytest.raises(js.KernelTraceError, match="constant memory"):
        @js.kernel
        def bad(c: Const[f32]):
            c[0] = 1.0
        bad.program
    with pytest.raises(js.LaunchConfigError, match="constant memory"):
        js.launch(const_lookup, 1, 32, (np.zeros(20000, np.float32), np.zeros(32, np.int32),
                                        np.zeros(32, np.float32)))


CONST_PTX = HEADER + """
.const .align 4 .f32 table[4] = {1.0, 2.0, 3.0, 4.0};
.visible .entry ctab(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mul.wide.u32 %rd3, %r2, 4;
    mov.u64 %rd4, table;
    add.s64 %rd5, %rd4, %rd3;
    ld.const.f32 %f1, [%rd5];
    ld.const.f32 %f2, [table+8];
    add.f32 %f3, %f1, %f2;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f3;
    ret;
}
"""


def test_ptx_const_with_initializer_counts():
    out = np.zeros(64, np.float32)
    r = ptx_launch(CONST_PTX, "ctab", 1, 64, [out])
    np.testing.assert_array_equal(r["out"], (np.arange(64) % 4 + 1) + 3.0)
    rows = [row for row in r.per_instruction if row.get("space") == "const"]
    # indexed load: 4 distinct addresses per warp; immediate address: one broadcast
    assert [(row["const_requests"], row["const_accesses"]) for row in rows] == [(2, 8), (2, 2)]
    assert r.stats["emulator__const_accesses.sum"] == 10


# ---------------------------------------------------------------------------------------------
# Read-only / texture cache
# ---------------------------------------------------------------------------------------------


@js.kernel
def ldg_pattern(a: Ptr[f32], out: Ptr[f32]):
    t = js.threadIdx.x
    v1 = js.ldg(a, t)  # one line, 4 sectors: 4 misses
    v2 = js.ldg(a, t)  # the same sectors: 4 hits
    v3 = js.ldg(a, t * 32)  # 32 lines, sector 0 of each: line 0's is valid (1 hit), 31 misses
    out[t] = v1 + v2 + v3


def test_ldg_hits_and_misses_by_hand():
    a = np.arange(1024, dtype=np.float32)
    r = js.launch(ldg_pattern, 1, 32, (a, np.zeros(32, np.float32)))
    t = np.arange(32)
    np.testing.assert_array_equal(r["out"], 2 * a[t] + a[t * 32])
    rows = [row for row in r.per_instruction if row["op"] == "ld"]
    assert [(row["cache_hits"], row["cache_misses"]) for row in rows] == [(0, 4), (4, 0), (1, 31)]
    assert r.stats["emulator__ro_cache_sector_hits.sum"] == 5
    assert r.stats["emulator__ro_cache_sector_misses.sum"] == 35
    # an ldg is still a global load for the coalescer
    assert [row["sectors"] for row in rows] == [4, 4, 32]


@js.kernel
def stencil_tex(img: js.Tex2D[f32], out: Ptr[f32], w: s32):
    """5-point stencil 4c - l - r - u - d; one fetch instruction in a loop over the five taps."""
    x = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
    y = js.blockIdx.y * js.blockDim.y + js.threadIdx.y
    acc = js.var(0.0)
    for k in js.range(5):
        dx = js.where(k == 1, -1, js.where(k == 2, 1, 0))
        dy = js.where(k == 3, -1, js.where(k == 4, 1, 0))
        acc += js.where(k == 0, 4.0, -1.0) * js.tex2d(img, x + dx, y + dy)
    out[y * w + x] = acc


@js.kernel
def strided_tex(img: js.Tex2D[f32], out: Ptr[f32], w: s32):
    """Five fetches per thread at 1D positions a tile row (8 texels) apart: no two fetches share a sector."""
    x = js.blockIdx.x * js.blockDim.x + js.threadIdx.x
    y = js.blockIdx.y * js.blockDim.y + js.threadIdx.y
    acc = js.var(0.0)
    for k in js.range(5):
        j = ((y * w + x) * 5 + k) * 8
        acc += js.tex2d(img, j % w, j // w)
    out[y * w + x] = acc


def _image(h, w):
    return np.random.default_rng(3).standard_normal((h, w)).astype(np.float32)


def test_texture_2d_stencil_more_hits_than_1d_strided():
    H, W = 16, 64
    grid, block = (2, 4), (32, 4)
    img = _image(H, W)
    out = np.zeros(H * W, np.float32)
    st = js.launch(stencil_tex, grid, block, (img, out, W))
    p = np.pad(img, 1, mode="edge")
    ref = 4 * img - p[1:-1, :-2] - p[1:-1, 2:] - p[:-2, 1:-1] - p[2:, 1:-1]
    np.testing.assert_allclose(st["out"].reshape(H, W), ref, rtol=1e-6, atol=1e-5)
    big = _image(H * 5 * 8 + 8, W)
    sd = js.launch(strided_tex, grid, block, (big, out, W))
    flat = big.reshape(-1)
    i = (np.arange(H)[:, None] * W + np.arange(W)[None, :]) * 5
    np.testing.assert_allclose(sd["out"].reshape(H, W), sum(flat[(i + k) * 8] for k in range(5)), rtol=1e-5)
    hits = lambda r: r.stats["emulator__tex_cache_sector_hits.sum"]  # noqa: E731
    misses = lambda r: r.stats["emulator__tex_cache_sector_misses.sum"]  # noqa: E731
    # strided: every fetch its own sector, never seen before
    assert (hits(sd), misses(sd)) == (0, 5 * H * W)
    # stencil: a cold miss per sector of the block's footprint, hits for the rest
    assert hits(st) > 2 * misses(st) > 0
    # the footprint of a 32x4 block: rows y-1..y+4 (6, clamped at the edges) x 5-6 tile columns of 8 texels
    assert misses(st) <= 8 * 6 * 6


# ---------------------------------------------------------------------------------------------
# Generic addressing
# ---------------------------------------------------------------------------------------------


@js.kernel
def generic_mix(g: Ptr[f32], out: Ptr[f32]):
    t = js.threadIdx.x
    sh = js.shared(64, f32)
    sh[t] = g[t] * 10.0
    js.syncthreads()
    # even lanes hold a generic pointer into shared memory, odd lanes one into global memory
    p = js.where(t % 2 == 0, js.address_of(sh, t), js.address_of(g, t))
    v = js.load(p, f32)
    js.store(p, v + 0.5)  # generic stores land in the memory the pointer names
    js.syncthreads()
    out[t] = v + sh[t] + g[t]


def test_generic_pointers_to_shared_and_global_dsl():
    g = np.arange(64, dtype=np.float32)
    r = js.launch(generic_mix, 1, 64, (g, np.zeros(64, np.float32)))
    t = np.arange(64)
    even = t % 2 == 0
    v = np.where(even, g * 10, g)
    sh = np.where(even, g * 10 + 0.5, g * 10)
    g_after = np.where(even, g, g + 0.5)
    np.testing.assert_array_equal(r["out"], v + sh + g_after)
    np.testing.assert_array_equal(r["g"], g_after)
    row = next(row for row in r.per_instruction if row["op"] == "ld" and row["space"] == "generic")
    # one load instruction per warp: the odd lanes' part coalesces (global), the even lanes' part is
    # one shared wavefront
    assert (row["requests"], row["wavefronts"]) == (2, 2)
    assert r.stats["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 2 + 2  # + the sh[t] load


GENERIC_PTX = HEADER + """
.visible .entry gmix(.param .u64 g, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<4>;
    .reg .f32 %f<12>;
    .reg .b64 %rd<16>;
    .shared .align 4 .f32 sh[64];
    .local .align 4 .b8 buf[16];
    ld.param.u64 %rd1, [g];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.nc.f32 %f1, [%rd5];
    mul.f32 %f2, %f1, 0f41200000;
    mov.u64 %rd6, sh;
    add.s64 %rd7, %rd6, %rd4;
    st.shared.f32 [%rd7], %f2;
    bar.sync 0;
    cvta.shared.u64 %rd8, %rd7;
    add.s64 %rd10, %rd1, %rd4;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    selp.b64 %rd9, %rd8, %rd10, %p1;
    ld.f32 %f3, [%rd9];
    isspacep.shared %p2, %rd9;
    selp.f32 %f4, 0f42C80000, 0f00000000, %p2;
    add.f32 %f5, %f3, %f4;
    cvta.to.shared.u64 %rd11, %rd8;
    ld.shared.f32 %f6, [%rd11];
    add.f32 %f7, %f5, %f6;
    mov.u64 %rd13, buf;
    cvta.local.u64 %rd14, %rd13;
    st.f32 [%rd14], %f7;
    ld.local.f32 %f8, [%rd13];
    isspacep.local %p3, %rd14;
    selp.f32 %f9, 0f3F800000, 0f00000000, %p3;
    add.f32 %f10, %f8, %f9;
    add.s64 %rd12, %rd2, %rd4;
    st.f32 [%rd12], %f10;
    ret;
}
"""


def test_generic_pointers_to_shared_and_global_ptx():
    g = np.arange(64, dtype=np.float32)
    r = ptx_launch(GENERIC_PTX, "gmix", 1, 64, [g, np.zeros(64, np.float32)])
    even = np.arange(64) % 2 == 0
    # generic load (shared for even lanes) + 100 where isspacep.shared + sh[t] read back through
    # cvta.to.shared, stored through a generic pointer to local memory and read back by ld.local, + 1 where
    # isspacep.local
    np.testing.assert_array_equal(r["out"], np.where(even, g * 10 + 100, g) + g * 10 + 1)
    # the ld.global.nc went through the read-only cache: two warps, one line of 4 sectors each, cold
    assert r.stats["emulator__ro_cache_sector_misses.sum"] == 8
    assert r.stats["emulator__ro_cache_sector_hits.sum"] == 0


def test_generic_addressing_refused_without_unified_space():
    with pytest.raises(js.LaunchConfigError, match="unified address space"):
        js.launch(generic_mix, 1, 64, (np.zeros(64, np.float32), np.zeros(64, np.float32)), arch="g80")


# ---------------------------------------------------------------------------------------------
# L1 / shared-memory carve-out
# ---------------------------------------------------------------------------------------------


@js.kernel
def smem_user(out: Ptr[f32]):
    sh = js.shared(3072, f32)  # 12 KB per block
    t = js.threadIdx.x
    sh[t] = 1.0
    js.syncthreads()
    out[t] = sh[t]


@pytest.mark.parametrize("arch, carveout_kb, blocks", [("fermi", 48, 4), ("fermi", 16, 1), ("h200", 228, 17),
                                                        ("h200", 100, 7), ("h200", 32, 2)])
def test_carveout_sets_occupancy_as_the_calculator(arch, carveout_kb, blocks):
    from jaxsimt.units.occupancy import occupancy
    r = js.launch(smem_user, 1, 64, (np.zeros(64, np.float32),), arch=arch, carveout=carveout_kb * 1024,
                  counters=False)
    calc = occupancy(arch, 64, r.stats["launch__registers_per_thread"], 12 * 1024, carveout=carveout_kb * 1024)
    # by hand: fermi 12 KB blocks in 48 KB -> 4, in 16 KB -> 1; h200 (12 KB + 1 KB reserved) in 228/100/32 KB
    assert r.stats["active_blocks_per_sm"] == calc["active_blocks_per_sm"] == blocks
    assert r.stats["launch__shared_mem_config_size"] == carveout_kb * 1024


def test_carveout_default_is_largest_and_bad_values_refused():
    r = js.launch(smem_user, 1, 64, (np.zeros(64, np.float32),), arch="fermi", counters=False)
    assert r.stats["launch__shared_mem_config_size"] == 48 * 1024
    with pytest.raises(js.LaunchConfigError, match="carveout"):
        js.launch(smem_user, 1, 64, (np.zeros(64, np.float32),), arch="fermi", carveout=64 * 1024)


def test_occupancy_cli_carveout(capsys):
    import json
    from jaxsimt.cli.occupancy import cli
    for kb, blocks in ((48, 4), (16, 1)):
        assert cli(["--arch", "fermi", "--threads", "64", "--regs", "8", "--smem", str(12 * 1024), "--carveout",
                    str(kb), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["active_blocks_per_sm"] == blocks


def test_run_cli_carveout(tmp_path, capsys):
    import json
    from jaxsimt.cli.run import main
    path = tmp_path / "banks.ptx"
    path.write_text(BANKS_PTX)
    assert main([str(path), "--kernel", "banks", "--grid", "1", "--block", "32", "--arg", "f32[1]:zeros",
                 "--arch", "fermi", "--carveout", "16", "--no-timing", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    stats = stats.get("stats", stats)
    assert stats["launch__shared_mem_config_size"] == 16 * 1024
    assert stats["emulator__register_bank_conflicts"] == 2  # fermi: 1 + 1 extra cycles, one warp


@js.kernel
def two_passes(a: Ptr[f32], out: Ptr[f32], n: s32):
    """Read n * blockDim floats through the read-only path twice."""
    t = js.threadIdx.x
    acc = js.var(0.0)
    for _ in js.range(2):
        for k in js.range(n):
            acc += js.ldg(a, k * js.blockDim.x + t)
    out[t] = acc


def test_carveout_sets_the_l1_size_of_the_read_only_cache():
    # 32 KB read twice: with 48 KB of shared memory Fermi keeps a 16 KB L1 (the second pass misses again,
    # LRU), with 16 KB of shared memory a 48 KB L1 holds it all (the second pass hits)
    n, tpb = 32, 256
    a = np.ones(n * tpb, np.float32)
    res = {}
    for kb in (48, 16):
        r = js.launch(two_passes, 1, tpb, (a, np.zeros(tpb, np.float32), n), arch="fermi", carveout=kb * 1024)
        np.testing.assert_array_equal(r["out"], 2 * n)
        res[kb] = (r.stats["emulator__ro_cache_sector_hits.sum"], r.stats["emulator__ro_cache_sector_misses.sum"])
    sectors = n * tpb * 4 // 32
    assert res[16] == (sectors, sectors)  # cold misses, then every sector hits
    assert res[48] == (0, 2 * sectors)


def _reference_lru(cs, blocks_addr, nbytes):
    """A plain-Python sectored LRU cache per block: the independent reference for jaxsimt.units.rocache."""
    hits = misses = 0
    caches = [[[] for _ in range(cs.sets)] for _ in range(len(blocks_addr))]  # per set: [line, sectors] MRU last
    per = cs.line // cs.sector
    for c, warps in enumerate(blocks_addr):
        for addrs, acts in warps:  # steps in order
            for w_addr, w_act in zip(addrs, acts):  # warps of the block in order
                wanted = {}
                for a, on in zip(w_addr, w_act):
                    if on:
                        line = a // cs.line
                        bits = {(x % cs.line) // cs.sector for x in (a, a + nbytes - 1)}
                        wanted.setdefault(line, set()).update(bits)
                for line, secs in wanted.items():  # dict order = first lane touching the line
                    st = caches[c][line % cs.sets]
                    entry = next((e for e in st if e[0] == line), None)
                    if entry is None:
                        if len(st) == cs.ways:
                            st.pop(0)
                        entry = [line, set()]
                    else:
                        st.remove(entry)
                    hits += len(secs & entry[1])
                    misses += len(secs - entry[1])
                    entry[1] |= secs
                    st.append(entry)
                    assert all(0 <= b < per for b in secs)
    return hits, misses


def test_read_only_cache_matches_a_reference_lru():
    import jax
    import jax.numpy as jnp
    from jaxsimt.units import rocache
    cs = rocache.CacheShape(sets=2, ways=2, line=128, sector=32)
    C, WPB, L, STEPS = 2, 2, 32, 6
    rng = np.random.default_rng(7)
    # addresses from a small pool of lines, so that sets overflow and LRU evictions happen
    addr = (rng.integers(0, 12, (STEPS, C * WPB, L)) * 128 + rng.integers(0, 32, (STEPS, C * WPB, L)) * 4)
    act = rng.random((STEPS, C * WPB, L)) < 0.7
    step = jax.jit(lambda cache, a, m: rocache.access(cache, cs, a, 4, m, WPB))
    with jax.enable_x64(True):
        cache = rocache.init(C, cs)
        hits = misses = 0
        for s in range(STEPS):
            cache, h, m = step(cache, jnp.asarray(addr[s], jnp.int64), jnp.asarray(act[s]))
            hits, misses = hits + int(h.sum()), misses + int(m.sum())
    ref = _reference_lru(cs, [[(addr[s, c * WPB:(c + 1) * WPB], act[s, c * WPB:(c + 1) * WPB])
                               for s in range(STEPS)] for c in range(C)], 4)
    assert (hits, misses) == ref
    assert hits > 0 and misses > 0
