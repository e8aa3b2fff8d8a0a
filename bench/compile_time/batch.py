"""act.compile's time against the batch size (issue 53: a batch dimension
should not change compile time): for each workload and batch, a fresh
process-level compile through act.compile (export by AOTAutograd, act-opt's
insertion, the C API's pipeline and JIT), split into its parts, the same
act.compile in a second process that finds the step in the code cache, and
the first step's time. Prints a table; figures in docs/benchmarks.md.

    /usr/bin/python3 bench/compile_time/batch.py [--workloads cnn,resnet18,encoder]
        [--batches 16,32,64,128,512] [--encoding "#act.quant<bits=4>"]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
os.environ.setdefault("ACT_PROGRESS", "0")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from act import capi, driver, training  # noqa: E402
from act import models  # noqa: E402
import fmnist_cnn  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench", "step_speed"))
import models as step_models  # noqa: E402

WORKLOADS = {
    "cnn": lambda b: fmnist_cnn.make(b),  # the Fashion-MNIST CNN, 28x28
    "resnet18": lambda b: models.resnet18(b)[:3],  # torchvision's, 32x32
    "encoder": lambda b: step_models.encoder(b)[:3],  # 2 pre-norm blocks
}


def compile_once(name, batch, encoding):
    """act.compile's seconds in this process, whether its code came from
    the cache, and the first step's seconds."""
    torch.manual_seed(0)
    module, x, y = WORKLOADS[name](batch)
    t0 = time.perf_counter()
    step = training.compile(module, F.cross_entropy, x, y, encoding=encoding)
    t1 = time.perf_counter()
    step(x, y)
    t2 = time.perf_counter()
    return t1 - t0, step.compiled[step.variant][0].from_cache, t2 - t1


def measure(name, batch, encoding):
    torch.manual_seed(0)
    module, x, y = WORKLOADS[name](batch)
    step = training.Step(module, F.cross_entropy, encoding)
    t0 = time.perf_counter()
    _, src, _ = step._export(x, y)
    t1 = time.perf_counter()
    mlir = driver.insert(src, src + ".encoded.mlir",
                         "encoding=" + driver.option_value(encoding))
    t2 = time.perf_counter()
    capi.set_cache_dir("")
    capi.CompiledStep.from_file(mlir)
    t3 = time.perf_counter()
    # act.compile with an empty code cache (it compiles and stores), then a
    # second process with that cache (it loads).
    with tempfile.TemporaryDirectory(prefix="act-bench-cache-") as cache:
        capi.set_cache_dir(cache)
        total, cached, first = compile_once(name, batch, encoding)
        assert not cached
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, str(batch), encoding],
            env=dict(os.environ, ACT_CACHE_DIR=cache), check=True, capture_output=True,
            text=True).stdout.split()
        if out[1] != "True":
            raise SystemExit(f"{name} at batch {batch}: the second process compiled again")
        second = float(out[0])
    return t1 - t0, t2 - t1, t3 - t2, total, second, first


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default="cnn,resnet18,encoder")
    p.add_argument("--batches", default="16,32,64,128,512")
    p.add_argument("--encoding", default="#act.quant<bits=4>")
    p.add_argument("--child", nargs=3, metavar=("WORKLOAD", "BATCH", "ENCODING"),
                   help=argparse.SUPPRESS)  # the second process
    args = p.parse_args()
    torch.set_num_threads(2)
    if args.child:
        total, cached, _ = compile_once(args.child[0], int(args.child[1]), args.child[2])
        print(f"{total:.3f} {cached}")
        return 0
    print("| workload | batch | export s | insert s | pipeline + JIT s | "
          "act.compile s | act.compile s, second process | first step ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        for batch in map(int, args.batches.split(",")):
            export, insert, pipeline, total, second, first = measure(name, batch,
                                                                     args.encoding)
            print(f"| {name} | {batch} | {export:.1f} | {insert:.1f} | {pipeline:.1f} | "
                  f"{total:.1f} | {second:.1f} | {first * 1000:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
