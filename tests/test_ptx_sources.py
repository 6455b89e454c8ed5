"""`.file` directives never make jaxsimt read a file the user did not allow: only the PTX file's folder and
the `source_dirs` given; absolute paths, `..` and symbolic links out of those folders are not opened."""
import os

import numpy as np
import pytest

import jaxsimt as js
from jaxsimt import ptx
from jaxsimt.ptx.run import load_module

SECRET = "the secret line of a private file"


def _ptx(file_path: str) -> str:
    return f"""
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    .loc 1 1 0
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    .loc 1 2 0
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
}}
    .file 1 "{file_path}"
"""


def _texts(ptx_path, **kw):
    prog = ptx.lower(load_module(str(ptx_path)), "k", [np.zeros(4, np.uint32)], **kw)
    return " | ".join(ins.loc.text for _, ins in prog.instructions() if ins.loc is not None)


def _setup(tmp_path, file_path):
    secret_dir = tmp_path / "private"
    secret_dir.mkdir()
    (secret_dir / "secret.cu").write_text(SECRET + "\n" + SECRET + " (2)\n")
    work = tmp_path / "work"
    work.mkdir()
    path = work / "k.ptx"
    path.write_text(_ptx(file_path.format(secret=secret_dir / "secret.cu")))
    return path, secret_dir


def test_an_absolute_file_path_is_not_opened(tmp_path):
    path, secret_dir = _setup(tmp_path, "{secret}")
    assert SECRET not in _texts(path)
    assert SECRET in _texts(path, source_dirs=[str(secret_dir)])  # the user allows that folder


def test_a_relative_path_out_of_the_ptx_folder_is_not_opened(tmp_path):
    path, secret_dir = _setup(tmp_path, "../private/secret.cu")
    assert SECRET not in _texts(path)
    assert SECRET in _texts(path, source_dirs=[secret_dir])


def test_a_symbolic_link_out_of_the_ptx_folder_is_not_followed(tmp_path):
    path, secret_dir = _setup(tmp_path, "link.cu")
    os.symlink(secret_dir / "secret.cu", path.parent / "link.cu")
    assert SECRET not in _texts(path)


def test_sources_beside_the_ptx_file_are_read(tmp_path):
    path, _ = _setup(tmp_path, "src/k.cu")
    (path.parent / "src").mkdir()
    (path.parent / "src" / "k.cu").write_text("int first;\nout[0] = threadIdx.x;\n")
    assert "out[0] = threadIdx.x;" in _texts(path)


def test_ptx_text_reads_no_file_relative_to_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / "secret.cu").write_text(SECRET + "\n")
    monkeypatch.chdir(tmp_path)
    prog = ptx.lower(_ptx("secret.cu"), "k", [np.zeros(4, np.uint32)])
    assert all(SECRET not in ins.loc.text for _, ins in prog.instructions() if ins.loc is not None)


def test_fault_messages_show_no_disallowed_line(tmp_path):
    path, secret_dir = _setup(tmp_path, "{secret}")
    text = path.read_text().replace("st.global.u32 [%rd2], %r1;", "st.global.u32 [%rd2+64], %r1;")
    path.write_text(text)
    with pytest.raises(js.MemoryFault) as e:
        ptx.launch(str(path), "k", 1, 32, (np.zeros(4, np.uint32),))
    assert SECRET not in str(e.value)


def test_a_relative_path_resolves_by_its_trailing_part_inside_an_allowed_folder(tmp_path):
    # nvcc run in a project's root names `project/cuda/k.cu`; the user allows the folder holding `cuda/`
    path, _ = _setup(tmp_path, "project/cuda/k.cu")
    lib = tmp_path / "lib"
    (lib / "cuda").mkdir(parents=True)
    (lib / "cuda" / "k.cu").write_text("int first;\nout[0] = threadIdx.x;\n")
    assert "out[0] = threadIdx.x;" not in _texts(path)
    assert "out[0] = threadIdx.x;" in _texts(path, source_dirs=[str(lib)])


def test_the_shipped_ladder_ptx_shows_its_cuda_lines_in_jaxsimt_run():
    import jaxsimt.kernels
    from jaxsimt.cli.run import shipped_sources

    root = os.path.dirname(jaxsimt.kernels.__file__)
    ladder = os.path.join(root, "ptx", "gemm_ladder.ptx")
    assert shipped_sources(ladder) == (os.path.realpath(root),)
    assert shipped_sources(__file__) == ()
    module = load_module(ladder)
    entry = next(f.name for f in module.functions if f.is_entry and "naive" in f.name)
    n = 32
    args = [np.zeros(n * n, np.float32), np.zeros(n * n, np.float32), np.zeros(n * n, np.float32), n, n, n]
    prog = ptx.lower(module, entry, args, source_dirs=shipped_sources(ladder))
    cu = [ins.loc.text for _, ins in prog.instructions() if ins.loc is not None and ins.loc.text.strip()]
    assert any("threadIdx" in t or "blockIdx" in t for t in cu)
