"""A training step's time in act next to PyTorch eager, same model, same
batch, same threads, same run: issue 16's table.

For each workload and thread count: act-run --repeat (median) of the
exported step without encodings and with 4-bit quantization, and PyTorch
1.13 eager forward + loss + backward (median over the same number of runs
after warm-up) on the same threads (torch.set_num_threads and OpenBLAS's
own pool: PyTorch's matmuls on OpenBLAS); the three alternate for
--rounds rounds and each reports its median round. Prints act / PyTorch; a ratio
above --limit is marked (exit status 1 with --check).

    /usr/bin/python3 bench/step_speed/run.py [--threads 1,2] [--runs 10]
"""

import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402
from act.peer import torch_blas, torch_step_ms  # noqa: E402

WORKLOADS = [  # (label, exporter spec, batch)
    ("cnn", "cnn", 16),
    ("transformer", "transformer", 8),
    ("resnet18 32x32", "resnet18", 8),
    ("VGG-style CIFAR CNN", os.path.join(HERE, "models.py:vgg"), 16),
    ("2 pre-norm encoder blocks", os.path.join(HERE, "models.py:encoder"), 8),
    ("ResNet-20 28x28", os.path.join(HERE, "models.py:resnet20"), 128),
]


def act_ms(manifest, out, options, threads, runs):
    mlir = driver.insert(manifest["files"]["joint"], os.path.join(out, "step.mlir"), options)
    _, peak, ms = driver.step(mlir, manifest["inputs"], os.path.join(out, "run"), 1,
                              f"--repeat={runs}", f"--threads={threads}")
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default=f"1,{os.cpu_count()}")
    p.add_argument("--runs", type=int, default=10, help="steps per measurement")
    p.add_argument("--rounds", type=int, default=3, help="alternating measurements")
    p.add_argument("--limit", type=float, default=1.0, help="act / PyTorch goal")
    p.add_argument("--check", action="store_true", help="exit 1 if a ratio is above --limit")
    p.add_argument("--only", default="", help="comma-separated labels (substrings)")
    args = p.parse_args()
    threads = sorted({int(t) for t in args.threads.split(",")})
    blas = torch_blas()
    print(f"PyTorch {__import__('torch').__version__}, matmuls on {blas}")
    if "OpenBLAS" not in blas:
        print("warning: PyTorch's matmuls run on the reference BLAS, a weak peer "
              "(install libopenblas0-pthread: scripts/setup.sh does)")
    print("| workload | threads | act, none | act, 4-bit | PyTorch eager | "
          "act none / PyTorch | act 4-bit / PyTorch |")
    print("|---|---|---|---|---|---|---|")
    over = False
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec, batch in WORKLOADS:
            if args.only and not any(s in label for s in args.only.split(",")):
                continue
            out = os.path.join(tmp, str(len(os.listdir(tmp))))
            manifest = export(spec, batch, 0, out)
            for t in threads:
                # Rounds alternate the three, so a burst of load on this
                # shared machine hits each about equally; the median round
                # is reported.
                rounds = [(act_ms(manifest, out, "policy=none", t, args.runs),
                           act_ms(manifest, out, "encoding=#act.quant<bits=4>", t, args.runs),
                           torch_step_ms(spec, batch, t, args.runs)) for _ in range(args.rounds)]
                none, quant, peer = (statistics.median(r[i] for r in rounds) for i in range(3))
                ratios = (none / peer, quant / peer)
                marks = ["" if r <= args.limit else " (over)" for r in ratios]
                over |= any(marks)
                print(f"| {label}, batch {batch} | {t} | {none:.2f} ms | {quant:.2f} ms | "
                      f"{peer:.2f} ms | {ratios[0]:.2f}{marks[0]} | {ratios[1]:.2f}{marks[1]} |",
                      flush=True)
    print(f"\ntimes: median over {args.rounds} alternating rounds of the median of "
          f"{args.runs} steps; goal: act / PyTorch at most {args.limit}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
