"""The load/store unit: loads, stores and atomics of whole warps on word-addressed memory.

Memory (global, or the shared memory of all blocks of a wave) is a flat uint32 array of 4-byte words,
little-endian, addressed by byte. An access of `size` bytes (1, 2, 4, 8 or 16; vectors included) must be
aligned to its size, as on the hardware. Functions here take per-lane word indices and byte offsets
[warps, lanes], an active mask [warps, lanes], and return new memory / loaded values; inactive lanes
never read, write or count.

Ordering rules where lanes collide (the hardware leaves them unspecified; we fix one):
- stores: every byte written by several active lanes of one step (any warps) ends with the value of the
  last writer in (warp, lane) order: the highest warp of the step, then its highest lane. Sub-word stores
  (narrower than the 4-byte word) merge per byte, so neighbouring bytes written by other lanes or warps
  in the same step, or not written at all, survive exactly. Word stores pick the same last writer before
  they scatter, so no backend's order for duplicate scatter indices can change the result;
- atomics: all active lanes of the step are serialised in (warp, lane) order per address, so every lane
  gets the old value it would see in that order and the final value is the last one.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxsimt import types as T
from jaxsimt.types import DType
from jaxsimt.units.intops import take_along

_U = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}


def split_address(byte_addr):
    """int64 byte addresses -> (word index int32, byte offset within the word uint32)."""
    return (byte_addr >> 2).astype(jnp.int32), (byte_addr & 3).astype(jnp.uint32)


def _gather(words, idx, active):
    safe = jnp.where(active, idx, 0)
    return words[safe]


def _bits_to(x_uint, dtype: DType):
    if dtype == T.pred:
        return x_uint != 0
    return lax.bitcast_convert_type(x_uint.astype(_U[dtype.size]), dtype.np_dtype)


def _to_bits(x, dtype: DType):
    if dtype == T.pred:
        return x.astype(jnp.uint8)
    return lax.bitcast_convert_type(x.astype(dtype.np_dtype), _U[dtype.size])


def load(words, widx, boff, active, dtype: DType, vec: int):
    """Load `vec` consecutive elements of `dtype` per lane. Returns a list of `vec` arrays [W, L]."""
    es = dtype.size
    nbytes = es * vec
    if nbytes < 4:
        w = _gather(words, widx, active)
        out = []
        for k in range(vec):
            sh = (boff + k * es) * 8
            out.append(_bits_to((w >> sh) & ((1 << (8 * es)) - 1), dtype))
        return out
    nw = nbytes // 4
    ws = [_gather(words, widx + j, active) for j in range(nw)]
    out = []
    for k in range(vec):
        if es == 8:
            lo, hi = ws[2 * k].astype(jnp.uint64), ws[2 * k + 1].astype(jnp.uint64)
            out.append(_bits_to(lo | (hi << 32), dtype))
        elif es == 4:
            out.append(_bits_to(ws[k], dtype))
        else:  # several small elements per word
            per = 4 // es
            w = ws[k // per]
            sh = (k % per) * es * 8
            out.append(_bits_to((w >> sh) & ((1 << (8 * es)) - 1), dtype))
    return out


# Word stores find each word's last writer by a scatter-max over a table of the memory's words where the table
# is at most this many times the step's lanes (writing it costs less than sorting the lanes), else by a sort.
LAST_WRITER_TABLE_PER_LANE = 16


def _last_writers(widx, active, n: int):
    """[W, L] bool: the active lanes whose store lands: of all lanes of the step writing the same first
    word (aligned accesses of one width are identical or disjoint), the last in (warp, lane) order. The
    winner is chosen before the scatter, so duplicate indices never reach a scatter whose order a backend
    leaves unspecified (XLA:GPU applies duplicate updates in any order). n: words in the memory (inactive
    lanes' key). Either each word keeps the highest (warp, lane) order that writes it (a scatter-max, whose
    result no order changes), or, for a memory many times the step's lanes, sorting the step's (word, order)
    pairs puts each word's last writer at the end of its run."""
    prio = jnp.arange(widx.size, dtype=jnp.int32).reshape(widx.shape)
    key = jnp.where(active, widx, n).astype(jnp.int32)
    if n + 1 <= LAST_WRITER_TABLE_PER_LANE * widx.size:
        # a lane outside the memory writes nothing in either way (the store drops it)
        last = jnp.full((n + 1,), -1, jnp.int32).at[key.reshape(-1)].max(prio.reshape(-1), mode="drop")
        return active & (jnp.take(last, key, mode="clip") == prio)
    k, p = lax.sort((key.reshape(-1), prio.reshape(-1)), num_keys=2)
    last = jnp.concatenate([k[1:] != k[:-1], jnp.ones((1,), bool)])
    won = jnp.zeros((widx.size,), bool).at[p].set(last)  # p is a permutation: no duplicate indices
    return active & won.reshape(widx.shape)


def _segmented_inclusive_or(vals, starts):
    """Inclusive OR-scan of uint32 `vals` [E] restarting where `starts` [E] bool."""

    def comb(x, y):
        fx, vx = x
        fy, vy = y
        return fx | fy, jnp.where(fy, vy, vx | vy)

    return lax.associative_scan(comb, (starts, vals))[1]


def _store_bytes(words, widx, boff, active, packed, nbytes: int):
    """Store the low `nbytes` (1 or 2, aligned inside one word) bytes of `packed` [W, L] uint32 for every
    active lane of the step, exactly per byte whatever the collisions.

    Each (lane, byte) is an entry; sorting entries by (word, byte, flat lane index w * L + l) puts the
    last writer of each byte at the end of its run, and the winners of one word next to each other, so one
    segmented OR per word builds the bytes to set and the mask to clear, and each written word is replaced
    once (read-modify-write of its own bytes only; scatter order never matters)."""
    n = words.shape[0]
    size = widx.size
    prio = jnp.arange(size, dtype=jnp.int32)  # flat (warp, lane) order: later wins
    a = active.reshape(-1)
    w = jnp.where(a, widx.reshape(-1), n).astype(jnp.int32)  # inactive lanes sort last, then drop
    b0 = boff.reshape(-1).astype(jnp.int32)
    pk = packed.reshape(-1).astype(jnp.uint32)
    cat = jnp.concatenate
    w = cat([w] * nbytes)
    b = cat([b0 + j for j in range(nbytes)])
    v = cat([(pk >> (8 * j)) & 0xFF for j in range(nbytes)])
    prio = cat([prio] * nbytes)
    w, b, _, v = lax.sort((w, b, prio, v), num_keys=3)
    same_byte_next = (w[1:] == w[:-1]) & (b[1:] == b[:-1])
    winner = cat([~same_byte_next, jnp.ones((1,), bool)])
    word_start = cat([jnp.ones((1,), bool), w[1:] != w[:-1]])
    word_end = cat([w[1:] != w[:-1], jnp.ones((1,), bool)])
    sh = (b.astype(jnp.uint32) * 8)
    setv = _segmented_inclusive_or(jnp.where(winner, v << sh, jnp.uint32(0)), word_start)
    clear = _segmented_inclusive_or(jnp.where(winner, jnp.uint32(0xFF) << sh, jnp.uint32(0)), word_start)
    old = words[jnp.minimum(w, n - 1)]
    new = (old & ~clear) | setv
    return words.at[jnp.where(word_end & (w < n), w, n)].set(new, mode="drop")


def store(words, widx, boff, active, values, dtype: DType):
    """Store `len(values)` consecutive elements of `dtype` per lane (one vector access)."""
    es = dtype.size
    vec = len(values)
    nbytes = es * vec
    n = words.shape[0]
    bits = [_to_bits(v, dtype).astype(jnp.uint64 if es == 8 else jnp.uint32) for v in values]
    if nbytes < 4:
        packed = jnp.zeros_like(bits[0], jnp.uint32)
        for k in range(vec):
            packed = packed | (bits[k].astype(jnp.uint32) << (k * es * 8))
        return _store_bytes(words, widx, boff, active, packed, nbytes)
    act = _last_writers(widx, active, n)
    nw = nbytes // 4
    wvals = []
    for k in range(vec):
        if es == 8:
            wvals += [(bits[k] & 0xFFFFFFFF).astype(jnp.uint32), (bits[k] >> 32).astype(jnp.uint32)]
        elif es == 4:
            wvals.append(bits[k])
        else:
            per = 4 // es
            if k % per == 0:
                wvals.append(jnp.zeros_like(bits[k]))
            wvals[-1] = wvals[-1] | (bits[k] << ((k % per) * es * 8))
    assert len(wvals) == nw
    idx = jnp.stack([jnp.where(act, widx + j, n) for j in range(nw)], axis=-1)
    val = jnp.stack(wvals, axis=-1)
    return words.at[idx].set(val, mode="drop")


# ---------------------------------------------------------------------------------------------
# Atomics
# ---------------------------------------------------------------------------------------------


def _segmented_exclusive(op, vals, starts, identity):
    """Exclusive segmented scan of `vals` with associative `op`; segments begin where `starts`."""

    def comb(x, y):
        fx, vx = x
        fy, vy = y
        return fx | fy, jnp.where(fy, vy, op(vx, vy))

    _, incl = lax.associative_scan(comb, (starts, vals))
    prev = jnp.concatenate([jnp.full((1,), identity, vals.dtype), incl[:-1]])
    return jnp.where(starts, jnp.asarray(identity, vals.dtype), prev)


def atomic(words, widx, active, aop: str, dtype: DType, operands):
    """32-bit atomics (add, min, max, exch, cas, and, or, xor, inc, dec) of all active lanes.

    Returns (new words, old value per lane [W, L] of `dtype`). Lanes hitting one address are
    serialised in (warp, lane) order.
    """
    if dtype.size != 4:
        raise NotImplementedError("atomics are implemented for 32-bit types")
    shape = widx.shape
    n = words.shape[0]
    a = active.reshape(-1)
    key = jnp.where(a, widx.reshape(-1), n)  # inactive lanes sort last
    order = jnp.argsort(key, stable=True)
    k_s = key[order]
    a_s = a[order]
    starts = jnp.concatenate([jnp.ones((1,), bool), k_s[1:] != k_s[:-1]])
    ends = jnp.concatenate([k_s[1:] != k_s[:-1], jnp.ones((1,), bool)])
    init = _bits_to(words[jnp.minimum(k_s, n - 1)], dtype)
    ops = [o.reshape(-1)[order].astype(dtype.np_dtype) for o in operands]
    v = ops[0]

    if aop in ("cas", "inc", "dec") or (aop == "add" and dtype.is_float):
        # Sequential within each address (float rounding, compare-and-swap and the wrapping inc/dec depend
        # on order).
        def body(cur, x):
            start, first_value, operand, new_value, act = x
            cur = jnp.where(start, first_value, cur)
            old = cur
            if aop == "cas":  # operand: the compare value
                new = jnp.where(old == operand, new_value, old)
            elif aop == "inc":  # operand: the wrap limit (unsigned compares, as the PTX ISA defines them)
                new = jnp.where(old >= operand, jnp.zeros_like(old), old + 1)
            elif aop == "dec":
                new = jnp.where((old == 0) | (old > operand), operand, old - 1)
            else:
                new = old + operand
            cur = jnp.where(act, new, cur)
            return cur, (old, cur)

        cas_new = ops[1] if aop == "cas" else jnp.zeros_like(v)
        _, (old, final) = lax.scan(body, jnp.zeros((), dtype.np_dtype), (starts, init, v, cas_new, a_s))
    else:
        assoc = {"add": (jnp.add, 0), "and": (jnp.bitwise_and, -1), "or": (jnp.bitwise_or, 0),
                 "xor": (jnp.bitwise_xor, 0)}
        if aop in assoc:
            f, ident = assoc[aop]
            ident = jnp.asarray(ident).astype(dtype.np_dtype)
            excl = _segmented_exclusive(f, v, starts, ident)
            old = f(init, excl)
            final = f(old, v)
        elif aop in ("min", "max"):
            f = jnp.minimum if aop == "min" else jnp.maximum
            ident = jnp.iinfo(dtype.np_dtype).max if aop == "min" else jnp.iinfo(dtype.np_dtype).min
            excl = _segmented_exclusive(f, v, starts, ident)
            old = f(init, excl)
            final = f(old, v)
        elif aop == "exch":
            prev = jnp.concatenate([init[:1], v[:-1]])
            old = jnp.where(starts, init, prev)
            final = v
        else:
            raise NotImplementedError(f"atomic {aop}")
    # write the value after the last lane of each address
    wr = ends & a_s
    new_words = words.at[jnp.where(wr, k_s, n)].set(_to_bits(final, dtype).astype(jnp.uint32), mode="drop")
    inv = jnp.argsort(order)
    return new_words, old[inv].reshape(shape)


SHFL_LANES = 32  # the lanes shfl.sync's 5-bit lane, clamp and segment fields address (the PTX ISA's warp)


def shuffle_control(mode: str, width, warp_size: int = SHFL_LANES):
    """The packed `c` operand of shfl.sync that CUDA's `__shfl*_sync(..., width)` passes: the segment mask
    (warp_size - width) in bits 8-12 and the clamp value in bits 0-4 (0 for `up`, warp_size - 1 otherwise).
    width: a power of two in [1, warp_size]: a Python int, an array, or a DSL value (then instructions compute it)."""
    seg = (warp_size - width) << 8
    return seg if mode == "up" else seg | (warp_size - 1)


def warp_shuffle_isa(vals, mode: str, b, c, lane):
    """shfl.sync.{up,down,bfly,idx} exactly as the PTX ISA's pseudo-code defines it.

    vals [W, L]; b (source lane, delta or xor mask) and c (clamp in bits 0-4, segment mask in bits 8-12)
    broadcast to [W, L]; lane [1, L] or [W, L]. Returns (values [W, L], valid [W, L] bool): a lane whose
    source j fails the mode's test against maxLane keeps its own value and valid = False."""
    L = vals.shape[-1]
    top = L - 1  # the ISA's 5-bit lane fields, for a 32-lane warp
    b = jnp.broadcast_to(b, vals.shape).astype(jnp.int32) & top
    c = jnp.broadcast_to(c, vals.shape).astype(jnp.int32)
    lane = jnp.broadcast_to(lane, vals.shape).astype(jnp.int32)
    cval, seg = c & top, (c >> 8) & top
    max_lane = (lane & seg) | (cval & ~seg & top)
    min_lane = lane & seg
    if mode == "up":
        src = lane - b
        valid = src >= max_lane
    elif mode == "down":
        src = lane + b
        valid = src <= max_lane
    elif mode == "bfly":
        src = lane ^ b
        valid = src <= max_lane
    elif mode == "idx":
        src = min_lane | (b & ~seg & top)
        valid = src <= max_lane
    else:
        raise ValueError(f"shfl mode {mode!r}; expected one of up, down, bfly, idx")
    src = jnp.clip(jnp.where(valid, src, lane), 0, top)
    return take_along(vals, src, axis=-1), valid


__all__ = ["split_address", "load", "store", "atomic", "SHFL_LANES", "shuffle_control", "warp_shuffle_isa"]
