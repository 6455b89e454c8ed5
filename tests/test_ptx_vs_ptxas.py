"""The PTX front end accepts and refuses instruction forms as nvcc's assembler does. Each case's verdict was
read from `ptxas -arch=sm_90` (CUDA 13.0) and is checked against jaxsimt here; where `ptxas` is on PATH it
is asked again, so a disagreement with the installed assembler fails too."""
import shutil
import subprocess

import pytest

import jaxsimt.ptx as P

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .f32 %f<4>;
  mov.u32 %r1, 3; mov.u32 %r2, 4; mov.u64 %rd1, 1; mov.u64 %rd2, 2;
  mov.f32 %f1, 0f3F800000; mov.f32 %f2, 0f3F800000;
"""
TAIL = """  ret;
}
"""

# (instruction, ptxas accepts it)
CASES = [
    ("mul.u32 %r3, %r1, %r2;", False),  # integer mul needs .lo, .hi or .wide
    ("mul.lo.u32 %r3, %r1, %r2;", True),
    ("mul.wide.u32 %rd3, %r1, %r2;", True),
    ("mul.hi.s32 %r3, %r1, %r2;", True),
    ("add.b64 %rd3, %rd1, %rd2;", False),  # add has no bit-size types
    ("add.u64 %rd3, %rd1, %rd2;", True),
    ("add.s32 %r3, %r1;", False),  # an operand missing
    ("add.s32 %r3, %r1, %r2, %r2;", False),  # one too many
    ("mul.f32 %f3, %f1, %f2;", True),
    ("mov.u32 %p1, %r1;", False),  # a predicate is not a 32-bit register
    ("setp.lt.s32 %p1, %r1, %r2;", True),
    ("shr.u32 %r3, %r1, %r2;", True),
]


def _jaxsimt_accepts(text: str) -> bool:
    try:
        P.lower(P.parse(text), "k")
    except P.PtxError:
        return False
    return True


def _ptxas_accepts(text: str, tmp_path) -> bool:
    src = tmp_path / "k.ptx"
    src.write_text(text)
    out = subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True, timeout=60)
    return out.returncode == 0


@pytest.mark.parametrize("ins,ptxas_accepts", CASES, ids=[c for c, _ in CASES])
def test_front_end_agrees_with_ptxas(ins, ptxas_accepts, tmp_path):
    text = HEAD + "  " + ins + "\n" + TAIL
    assert _jaxsimt_accepts(text) == ptxas_accepts
    if shutil.which("ptxas"):
        assert _ptxas_accepts(text, tmp_path) == ptxas_accepts
