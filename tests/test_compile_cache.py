"""JAX's persistent compilation cache: off on import, on through `jaxsimt.enable_compile_cache()` (which the
`jaxsimt` command calls) in the per-user cache folder, off with JAXSIMT_NO_COMPILE_CACHE=1."""
import os
import subprocess
import sys

import jax
import pytest

import jaxsimt
from jaxsimt.run import compile_cache


@pytest.fixture
def restore_jax_config():
    keep = (jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs)
    yield
    # nothing is compiled in between, so JAX's cache is never initialised with the test's folder
    jax.config.update("jax_compilation_cache_dir", keep[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", keep[1])


def test_default_folder_honours_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_dir() == os.path.join(str(tmp_path), "jaxsimt", "jax")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as the XDG spec says
    assert compile_cache.default_dir() == os.path.join(os.path.expanduser("~"), ".cache", "jaxsimt", "jax")


def test_enable_and_the_switch_to_turn_it_off(monkeypatch, tmp_path, restore_jax_config):
    jax.config.update("jax_compilation_cache_dir", None)
    monkeypatch.setenv("JAXSIMT_NO_COMPILE_CACHE", "1")
    assert jaxsimt.enable_compile_cache(str(tmp_path / "c")) is None
    assert jax.config.jax_compilation_cache_dir is None and not (tmp_path / "c").exists()
    monkeypatch.delenv("JAXSIMT_NO_COMPILE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    got = jaxsimt.enable_compile_cache()
    assert got == os.path.join(str(tmp_path), "jaxsimt", "jax") and os.path.isdir(got)
    assert jax.config.jax_compilation_cache_dir == got
    assert jax.config.jax_persistent_cache_min_compile_time_secs == compile_cache.MIN_COMPILE_SECONDS
    assert jaxsimt.enable_compile_cache() == got  # a folder already set is kept


def test_import_leaves_jax_config_alone():
    code = ("import jax; before = (jax.config.jax_compilation_cache_dir, jax.config.jax_enable_x64); import jaxsimt; "
            "assert (jax.config.jax_compilation_cache_dir, jax.config.jax_enable_x64) == before, before")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
