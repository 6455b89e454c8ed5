"""`jaxsimt.cuda.load` and `jaxsimt run FILE.cu`: CUDA source compiled by the local nvcc, then run as PTX;
without nvcc a clear error (where nvcc was looked for, how to run the PTX instead)."""
import json
import os

import numpy as np
import pytest

import jaxsimt
from jaxsimt import cli, cuda

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "ptx", "src",
                   "vector_add.cu")
HAVE_NVCC = True
try:
    cuda.find_nvcc()
except cuda.NvccNotFoundError:
    HAVE_NVCC = False
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not installed")


@needs_nvcc
def test_load_file_and_launch():
    m = jaxsimt.cuda.load(SRC)
    assert m.kernels == ("vector_add",)
    assert m is not None and jaxsimt.cuda.load(SRC).ptx is m.ptx  # one nvcc run per source
    a, b = np.arange(300, dtype=np.float32), np.ones(300, np.float32)
    r = m.launch("vector_add", 2, 128, [a, b, np.zeros(300, np.float32), np.int32(300)])
    np.testing.assert_array_equal(r.outputs["vector_add_param_2"], a + b)


@pytest.mark.slow
@needs_nvcc
def test_load_source_text_and_compile_error():
    m = cuda.load('extern "C" __global__ void twice(int* a) { a[threadIdx.x] *= 2; }\n')
    r = m.launch("twice", 1, 32, [np.arange(32, dtype=np.int32)])
    assert r.outputs["twice_param_0"].tolist() == [2 * i for i in range(32)]
    with pytest.raises(cuda.CompileError, match="nvcc failed"):
        cuda.load("this is not CUDA\n")


@pytest.mark.slow
@needs_nvcc
def test_cli_runs_a_cu_file(capsys):
    assert cli.main(["run", SRC, "--grid", "2", "--block", "128", "--arg", "f32[256]:ones", "--arg", "f32[256]:ones",
                     "--arg", "f32[256]:zeros", "--arg", "s32:256", "--json", "--no-timing"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel"] == "vector_add" and out["stats"]["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 8


def test_without_nvcc_the_error_says_where_it_looked(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("NVCC", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cuda.os.path, "isfile", lambda p: p == SRC)
    monkeypatch.setattr(cuda, "_LOADED", {})  # no compiled source to reuse
    with pytest.raises(cuda.NvccNotFoundError, match="nvcc not found.*PATH"):
        cuda.load(SRC)
    assert cli.main(["run", SRC, "--grid", "1", "--block", "32"]) == 2
    err = capsys.readouterr().err
    assert "is CUDA source, which needs nvcc" in err and "looked at $NVCC, PATH" in err and "run the .ptx" in err
