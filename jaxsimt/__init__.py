"""jaxsimt: a vectorized SIMT (GPU) emulator in JAX."""
from jaxsimt import arch

__all__ = ["arch"]
__version__ = "0.1.0"
