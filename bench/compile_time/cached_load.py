"""How long a step takes to load from the code cache, per kind of step
act.compile makes for GACT's adaptive loop on the character language model
(python-lm: average 1.5 bits, recompute cost 80, bf16 loss head): the
exported step without encodings (the check's reference), the measuring
step, the allocated step and the step with run-time widths. Each is
compiled into a cache of its own, then loaded `--loads` times (median).

    /usr/bin/python3 bench/compile_time/cached_load.py [--loads 7]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
os.environ.setdefault("ACT_PROGRESS", "0")

import torch  # noqa: E402

import act  # noqa: E402
from act import capi  # noqa: E402
from act.train import TASKS  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--loads", type=int, default=7)
    a = p.parse_args()
    task = TASKS["python-lm"]
    (x, y), _ = task.data()
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as cache:
        capi.set_cache_dir(cache)
        torch.manual_seed(0)
        step = act.compile(task.model(), task.loss_fn, x[:16], y[:16], work_dir=work,
                           average_bits=1.5, adapt_interval=250, recompute_cost=80,
                           loss_head="#act.float<format = bf16>")
        step(x[:16], y[:16])
        kinds = {"step without encodings": "step0.mlir", "measuring step": "step0_measure.mlir",
                 "allocated step": "step0_a0_tuned.mlir",
                 "step with run-time widths": "step0_a0_runtime_tuned.mlir"}
        print("| step | compiled | loaded from the cache (median) | bytes of IR |")
        print("|---|---|---|---|")
        for kind, name in kinds.items():
            path = os.path.join(work, name)
            with tempfile.TemporaryDirectory() as own, capi.cache_dir(own):
                began = time.perf_counter()
                first = capi.CompiledStep.from_file(path)
                compiled = time.perf_counter() - began
                assert not first.from_cache, path
                del first
                times = []
                for _ in range(a.loads):
                    began = time.perf_counter()
                    loaded = capi.CompiledStep.from_file(path)
                    times.append(time.perf_counter() - began)
                    assert loaded.from_cache, path
                    del loaded
            print(f"| {kind} | {compiled:.2f} s | {1000 * statistics.median(times):.0f} ms | "
                  f"{os.path.getsize(path):,} |", flush=True)


if __name__ == "__main__":
    main()
