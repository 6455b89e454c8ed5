"""JAX's persistent compilation cache for jaxsimt: compiled machines kept on disk, so that a new process does not
compile again the kernels an earlier one compiled.

The `jaxsimt` command turns it on at start. A library user opts in with `jaxsimt.enable_compile_cache()`: importing
jaxsimt never changes JAX's configuration. The folder is `$XDG_CACHE_HOME/jaxsimt/jax` (by default
`~/.cache/jaxsimt/jax`); `JAXSIMT_NO_COMPILE_CACHE=1` turns it off; a cache folder the user already gave JAX
(`jax_compilation_cache_dir`, `JAX_COMPILATION_CACHE_DIR`) is left as it is.
"""
from __future__ import annotations

import os
from typing import Optional

ENV_OFF = "JAXSIMT_NO_COMPILE_CACHE"

# Compilations shorter than this are not written: a machine's compilation takes seconds, the many small helper
# programs a launch also compiles take milliseconds each and would only fill the folder.
MIN_COMPILE_SECONDS = 0.25


def default_dir() -> str:
    """`$XDG_CACHE_HOME/jaxsimt/jax`, or `~/.cache/jaxsimt/jax` where XDG_CACHE_HOME is unset or not absolute."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxsimt", "jax")


def disabled() -> bool:
    return os.environ.get(ENV_OFF, "").strip().lower() not in ("", "0", "false", "no", "off")


def enable_compile_cache(path: Optional[str] = None) -> Optional[str]:
    """Turn on JAX's persistent compilation cache in `path` (default: `default_dir()`); returns the folder in use,
    or None where it stays off (JAXSIMT_NO_COMPILE_CACHE set, or the folder cannot be created). Changes two JAX
    options: `jax_compilation_cache_dir` and, unless already changed from JAX's default,
    `jax_persistent_cache_min_compile_time_secs` (to MIN_COMPILE_SECONDS)."""
    import jax

    if disabled():
        return None
    current = jax.config.jax_compilation_cache_dir
    if current and path is None:
        return current  # the user's own choice wins
    path = os.path.abspath(os.path.expanduser(path or default_dir()))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None  # a read-only home: run without the cache rather than fail
    if not os.access(path, os.W_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    if jax.config.jax_persistent_cache_min_compile_time_secs == 1.0:  # JAX's default, not the user's
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return path
