"""Scale-out: the waves of one launch spread over several JAX devices with `jax.shard_map`.

The grid already runs as waves of blocks that may not depend on each other's order; here the wave axis
is split over a one-axis device mesh ("waves"): device d runs waves d*k .. d*k+k-1 (k = waves per device,
the last padded with empty waves) as a `while_loop` around the machine's own wave loop. Global memory is
replicated: every device starts from the same copy and the copies are merged at the end by summing each
device's word deltas (`psum`, modulo 2^32). That merge is exact for stores to words that only one
device writes (a block's own outputs, whatever their width: a word's value is linear in its bytes) and
for 32-bit integer atomic adds from several devices (integer addition commutes). Other global atomics
(float adds, min/max, exch, cas, bitwise, inc/dec) do not merge by deltas: a kernel with one is refused
(`check_mergeable`) before it runs.
Counters are summed across devices (`psum`, `pmax` for the stack depth); the first fault in wave order
wins, as in the single-device run.

Shapes: gmem [global_words] uint32 (replicated), cta table [waves * ctas_per_wave] int32 (replicated).
"""
from __future__ import annotations

from typing import Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec

from jaxsimt import exact
from jaxsimt.units import isa

AXIS = "waves"


def resolve_devices(devices: Union[int, Sequence]) -> list:
    """An int n: the first n devices of the default backend; else the given devices."""
    if isinstance(devices, (int, np.integer)):
        avail = jax.devices()
        if not 1 <= devices <= len(avail):
            raise ValueError(f"devices={devices}: {len(avail)} {avail[0].platform} devices are available")
        return list(avail[:devices])
    devs = list(devices)
    if not devs:
        raise ValueError("devices: empty")
    return devs


def check_mergeable(prog) -> None:
    """Raise LaunchConfigError when a global atomic of `prog` cannot be merged across devices."""
    from jaxsimt import errors, types as T

    for _, outer in prog.instructions():
        ins = outer.operation
        if isa.memory(ins) != "atomic" or ins.attr("space") == "shared":
            continue
        t = T.BY_NAME[ins.attr("type")]
        if ins.attr("aop") != "add" or t.kind not in ("s", "u"):
            raise errors.LaunchConfigError(
                f"kernel {prog.name}: the global atomic {ins.attr('aop')}.{t.name}"
                f"{f' at {ins.loc}' if ins.loc else ''} cannot be merged across devices (only integer adds "
                f"can); run it on one device")


def _sharded_runner(m, devs: list, waves_per_device: int):
    """The compiled sharded run of `m` over `devs` (cached on the machine)."""
    cache = m.__dict__.setdefault("_sharded", {})
    key = (tuple(d.id for d in devs), devs[0].platform, waves_per_device)
    if key in cache:
        return cache[key]
    mesh = Mesh(np.array(devs), (AXIS,))
    k = waves_per_device

    from jaxsimt import errors
    from jaxsimt.machine.core import Counters, Fault

    def per_device(gmem, dyn, zero):
        first = lax.axis_index(AXIS) * k

        def cond(c):
            i, _, _, fault, _ = c
            return (i < k) & (fault.code == errors.NONE)

        def body(c):
            i, g, cnt, _, steps = c
            g, cnt, fault, st, *_ = m._run_wave(g, cnt, first + i, dyn, zero)
            return i + 1, g, cnt, fault, steps + st.astype(jnp.int64)

        c0 = (jnp.int32(0), gmem, m.zero_counters(), Fault.of(errors.NONE, 0, pc=0), jnp.int64(0))
        _, g, cnt, fault, steps = lax.while_loop(cond, body, c0)
        merged = gmem + lax.psum(g - gmem, AXIS)  # uint32: wraps modulo 2^32
        warp_exec, thread_exec, divergent, max_depth, mem = cnt
        cnt = Counters(lax.psum(warp_exec, AXIS), lax.psum(thread_exec, AXIS), lax.psum(divergent, AXIS),
                       lax.pmax(max_depth, AXIS), lax.psum(mem, AXIS))
        return merged, cnt, lax.all_gather(fault, AXIS), lax.psum(steps, AXIS)

    rep = PartitionSpec()
    fn = exact.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(rep, rep, rep), out_specs=(rep, rep, rep, rep),
                               check_vma=False))
    cache[key] = (fn, mesh)
    m.compiles += 1  # compiled at its first call: one per device set and waves per device
    return cache[key]


def run_sharded(m, gmem, dyn, cta_table: np.ndarray, devices):
    """Run every wave of a launch over `devices`. Returns (gmem, counters, the first fault (`machine.Fault` of
    ints), total steps), as the single-device loop over waves would."""
    from jaxsimt.machine.core import Fault

    check_mergeable(m.program)
    devs = resolve_devices(devices)
    cpw = m.geo.ctas_per_wave
    n_waves = len(cta_table) // cpw
    k = -(-n_waves // len(devs))
    empty = m.geo.items * int(dyn.n_ctas)  # the id of a padding block (starts finished)
    table = np.full(k * len(devs) * cpw, empty, np.int32)
    table[:len(cta_table)] = cta_table
    fn, mesh = _sharded_runner(m, devs, k)
    rep = jax.sharding.NamedSharding(mesh, PartitionSpec())
    args = jax.device_put((gmem, dyn._replace(ctas=jnp.asarray(table)), jnp.uint32(0)), rep)
    g, cnt, faults, steps = fn(*args)
    faults = np.asarray(faults.rec)  # [devices, 6]: each device's first fault, in wave order
    hit = np.nonzero(faults[:, 0])[0]
    fault = Fault(faults[hit[0] if hit.size else 0])
    return g, cnt, fault, int(steps)
