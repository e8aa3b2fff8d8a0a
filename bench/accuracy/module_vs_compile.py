"""act.Module against act.compile on one task: the same model, batches and
initial weights trained through both in lockstep (act.compile: the loss
inside the step; act.Module: the module inside autograd, the loss eager),
for each seed; test accuracy (mean +- std), median step time of each and their
ratio, measured in the same run. Issue 50's goal: the same accuracy, and
act.Module's step within 10 % of act.compile's.

    ACT_BIN_DIR=build/bin ACT_LIB_DIR=build/lib python3 bench/accuracy/module_vs_compile.py \
        [--task digits-vgg] [--encoding "#act.quant<bits=4>"] [--seeds 0,1,2] [--epochs N] \
        [--batch B]
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import act  # noqa: E402
from act.train import TASKS, evaluate  # noqa: E402


def run(task, encoding, seed, epochs, batch=None):
    """Both APIs trained in lockstep (the same batches, one step of each in
    turn, so that the shared machine's load falls on both alike): (test
    accuracy, median step seconds) of each."""
    (xtr, ytr), (xte, yte) = task.data()
    models, opts = {}, {}
    for api in ("compile", "module"):
        torch.manual_seed(seed)
        models[api] = task.model()
        opts[api] = torch.optim.SGD(models[api].parameters(), lr=task.lr, momentum=0.9)
    batch = batch or task.batch
    step = act.compile(models["compile"], task.loss_fn, xtr[:batch], ytr[:batch],
                       encoding=encoding, seed=seed)
    wrapped = act.Module(models["module"], xtr[:batch], encoding=encoding, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    times = {"compile": [], "module": []}
    for _ in range(epochs):
        order = torch.randperm(len(xtr), generator=gen)
        for start in range(0, len(xtr), batch):
            idx = order[start:start + batch]
            xb, yb = xtr[idx], ytr[idx]
            for api in ("compile", "module"):
                t = time.perf_counter()
                opts[api].zero_grad(set_to_none=True)
                if api == "compile":
                    step(xb, yb)
                else:
                    task.loss_fn(wrapped(xb), yb).backward()
                opts[api].step()
                if len(idx) == batch:  # (the partial batch compiles once more)
                    times[api].append(time.perf_counter() - t)
    peaks = {"compile": step.peak_bytes, "module": wrapped.peak_bytes}
    return {api: (evaluate(task, models[api], xte, yte), statistics.median(times[api][1:]),
                  peaks[api]) for api in models}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="digits-vgg")
    parser.add_argument("--encoding", default="#act.quant<bits=4>")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch", type=int, default=None, help="default: the task's")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    os.environ.setdefault("ACT_PROGRESS", "0")
    torch.set_num_threads(int(os.environ.get("ACT_THREADS", "2")))
    task = TASKS[args.task]
    epochs = args.epochs or task.epochs
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {"compile": [], "module": []}
    for seed in seeds:
        for api, result in run(task, args.encoding, seed, epochs, args.batch).items():
            results[api].append(result)
            accuracy, seconds, peak = result
            print(f"{args.task} seed {seed} act.{api if api == 'compile' else 'Module'}: "
                  f"test accuracy {100 * accuracy:.2f} %, median step {1e3 * seconds:.2f} ms, "
                  f"act's peak {peak} bytes", flush=True)
    print(f"\n| {args.task}, {args.encoding}, batch {args.batch or task.batch}, {epochs} epochs, "
          f"seeds {args.seeds} "
          f"| test accuracy | median step ms | act's peak |")
    print("|---|---|---|---|")
    for api, rows in results.items():
        acc = [100 * r[0] for r in rows]
        ms = statistics.median(1e3 * r[1] for r in rows)
        peak = max(r[2] for r in rows)
        spread = statistics.stdev(acc) if len(acc) > 1 else 0.0
        print(f"| act.{'compile' if api == 'compile' else 'Module'} | "
              f"{statistics.mean(acc):.2f} +- {spread:.2f} % | {ms:.2f} | {peak:,} B |")
    ratio = (statistics.median(r[1] for r in results["module"])
             / statistics.median(r[1] for r in results["compile"]))
    print(f"\nact.Module step / act.compile step: {ratio:.3f} (goal <= 1.10: "
          f"{'met' if ratio <= 1.10 else 'missed'})")


if __name__ == "__main__":
    main()
