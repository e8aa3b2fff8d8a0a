"""PyTorch eager as the peer of act's benchmarks: the BLAS its matmuls run
on, its thread count (OpenBLAS's pool too) and its step time on a model of
act.models, measured as act-run --repeat measures act's.
"""

import ctypes
import statistics
import time

import torch

from . import models


def _blas():
    """The BLAS library PyTorch loaded (libblas.so.3), or None."""
    try:
        return ctypes.CDLL("libblas.so.3")
    except OSError:
        return None


def torch_blas():
    """The BLAS PyTorch's matmuls run on here: "OpenBLAS <config>", or
    "the reference BLAS" (Debian's torch links libblas.so.3, which is
    OpenBLAS once libopenblas0-pthread is installed; scripts/setup.sh
    installs it)."""
    lib = _blas()
    if lib is None:
        return "an unknown BLAS"
    if hasattr(lib, "openblas_get_config"):
        lib.openblas_get_config.restype = ctypes.c_char_p
        return lib.openblas_get_config().decode().strip()  # "OpenBLAS 0.3.21 ..."
    return "the reference BLAS"


def set_torch_threads(threads):
    """torch.set_num_threads(threads), and OpenBLAS's own pool to the same
    count (PyTorch does not set it: without this a "1-thread" peer's
    matmuls run on every core)."""
    torch.set_num_threads(threads)
    lib = _blas()
    if lib is not None and hasattr(lib, "openblas_set_num_threads"):
        lib.openblas_set_num_threads(int(threads))


def torch_step_ms(spec, batch, threads, runs):
    """PyTorch eager forward + loss + backward of the exporter's workload
    `spec` at `batch` on `threads` threads (set_torch_threads): the median ms
    of `runs` steps after two warm-up steps (the peer of act-run --repeat)."""
    set_torch_threads(threads)
    w = models.load(spec, batch, 0)
    w.module.train()
    times = []
    for i in range(runs + 2):
        w.module.zero_grad(set_to_none=True)
        start = time.perf_counter()
        w.loss_fn(w.module(w.inputs), w.targets).backward()
        if i >= 2:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)
