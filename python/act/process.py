"""The process's own resources."""

import ctypes
import gc

_libc = None


def release_freed_memory():
    """Gives the memory the process has freed back to the system (Python's
    cycles collected, then glibc's malloc_trim): tracing a step and
    compiling it free hundreds of MB (the fmnist-cnn at batch 128: 570 MiB
    resident after its export, 300 once trimmed) that glibc would otherwise
    keep resident, and count in the process's peak, for the rest of the
    run. Called after each export and each compile (docs/benchmarks.md,
    "The memory a user sees")."""
    global _libc
    gc.collect()
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6")
        except OSError:
            _libc = False
    if _libc and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)
