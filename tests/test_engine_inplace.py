"""The machine's loop state is updated in place: XLA's compiled wave copies neither a memory nor a register
file. A `lax.switch` whose branches update such an array copies all of it on every step (the cost then grows
with the memory and the register count, not with the work), so the step's branches return only the register
rows they write and stores and atomics run in the memory stage (`jaxsimt.machine.memstage`)."""
import re

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt.machine import core as machine_mod
from jaxsimt.kernels import gemm
import jaxsimt.ptx as ptx_api

SHARED_TILED = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry tile(.param .u64 pin, .param .u64 pout)
{
    .reg .b32 %r<8>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 buf[1024];
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    cvt.u64.u32 %rd3, %r2;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u32 %r3, buf;
    add.s32 %r4, %r3, %r2;
    st.shared.f32 [%r4], %f1;
    bar.sync 0;
    xor.b32 %r5, %r2, 124;
    add.s32 %r6, %r3, %r5;
    ld.shared.f32 %f2, [%r6];
    add.f32 %f3, %f2, %f1;
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f3;
    atom.global.add.f32 %f2, [%rd2], %f1;
    ret;
}
"""


@pytest.fixture
def machines(monkeypatch):
    seen = []
    run = machine_mod.Machine.run_wave

    def spy(self, *a):
        out = run(self, *a)
        seen.append(self)
        return out

    monkeypatch.setattr(machine_mod.Machine, "run_wave", spy)
    return seen


def _big_shapes(m) -> dict:
    """HLO shape text -> name of the machine's memories and register files."""
    g, lay = m.geo, m.layout
    W, L = g.W, g.warp_size
    shapes = {f"u32[{lay.global_words}]": "global memory",
              f"u32[{g.ctas_per_wave * max(lay.shared_words, 1)}]": "shared memory"}
    if lay.local_words:
        shapes[f"u32[{W * L * lay.local_words}]"] = "local memory"
    for n, d in zip(m.file_rows, m.files):
        hlo = {"float32": "f32", "int32": "s32", "uint32": "u32", "int64": "s64", "uint64": "u64", "bool": "pred",
               "float64": "f64", "float16": "f16", "int16": "s16", "uint16": "u16", "int8": "s8", "uint8": "u8",
               "bfloat16": "bf16"}[np.dtype(d).name]
        shapes[f"{hlo}[{n + 1},{W},{L}]"] = f"register file {np.dtype(d).name}"
    return shapes


def _copied(m) -> list:
    text = m._compiled.as_text()
    big = _big_shapes(m)
    found = re.findall(r"= (\w+\[[\d,]*\])\{?[^ ]* copy\(", text)
    return sorted({big[s] for s in found if s in big})


def test_naive_gemm_step_copies_no_memory_or_register_file(machines):
    n = 32
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    js.launch(gemm.BY_NAME["naive_coalesced"].kernel(), (2, 2), (16, 16), (n, n, n, a, b, np.zeros((n, n), np.float32)))
    assert machines and _copied(machines[-1]) == []


@pytest.mark.parametrize("mode", ["stack", "its"])
def test_ptx_shared_and_atomic_step_copies_no_memory_or_register_file(machines, mode):
    x = np.arange(32, dtype=np.float32)
    r = ptx_api.launch(SHARED_TILED, "tile", 1, 32, [x, np.zeros(32, np.float32)], mode=mode)
    want = x + x[np.arange(32) ^ 31]
    want[0] += x.sum()
    np.testing.assert_allclose(r.outputs["pout"], want)
    assert machines and _copied(machines[-1]) == []
