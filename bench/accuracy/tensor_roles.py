"""Where the low-bit error of a transformer comes from (issue 52): the
character language model's saved activations (act.train python-lm: two
pre-norm GPT blocks, d 64, 4 heads, context 64) grouped by their role, each
group alone stochastically quantized (#act.quant, the others float32,
act.compile's include=), against act without encodings:

1. the gradient of one step, at initialization and after --warm steps of
   training without encodings: its error relative to the exact gradient,
   the error of the mean of N step seeds, the mean's noise floor
   (sqrt(trace Var / N), relative) and their ratio (about 1 for an
   unbiased encoding, well above 1 for a bias), as gradient_bias.py does;
2. --train: the validation loss after the task's recipe (1,000 AdamW
   steps) with only that group encoded, per seed, next to no encoding and
   every group encoded.

Prints markdown tables; figures in docs/Tuning.md ("Where a transformer's
low-bit error comes from").

    cd python && ACT_BIN_DIR=../build/bin ACT_LIB_DIR=../build/lib \\
      /usr/bin/python3 ../bench/accuracy/tensor_roles.py [--bits 1,2,4] [--seeds N]
        [--warm 300] [--train 2] [--train-bits 2] [--only-train]
        [--roles ROLE,...] [--all-but ROLE]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from act import train as T  # noqa: E402
from act.training import compile  # noqa: E402
from gradient_bias import gradient  # noqa: E402 (one step's gradient, as there)


def roles(report):
    """The saved values' ids of CharLM's step by role, from act's memory
    report (the order of the exported step: per block the LayerNorm input
    and its statistics, the normalized input of qkv, q, k^T, the attention
    probabilities, v, the attention output, the second LayerNorm's input,
    statistics and output, the GELU input and output; then the final
    LayerNorm's). Recomputed values and the loss head are not roles."""
    saved = [t for t in report["graphs"][0]["saved"]
             if t["status"] not in ("loss-head",) and t["encoding"] != "#act.recompute"]
    out = {}
    previous = None
    for t in saved:
        shape = t["shape"]
        if len(shape) == 3 and shape[2] == 1:
            role = "LayerNorm statistics"
        elif len(shape) == 4:
            role = "attention probabilities"
        elif len(shape) == 3 and t["producer"] == "linalg.generic":
            role = "residual stream (LayerNorm inputs)"
        elif len(shape) == 3 and shape[2] == 4 * 64:
            role = "GELU inputs"
        elif len(shape) == 2 and shape[1] == 4 * 64:
            role = "GELU outputs (fc2 inputs)"
        elif len(shape) == 3:
            role = "q, k, v"
        elif previous == "LayerNorm statistics":
            role = "LayerNorm outputs (qkv, fc1, head inputs)"
        else:
            role = "attention outputs (proj inputs)"
        out.setdefault(role, []).append(t["id"])
        previous = role
    return out


def warm_up(model, task, steps, seed):
    """`steps` AdamW steps of the task's recipe in eager PyTorch."""
    (xs, ys), _ = task.data()
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=task.lr)
    for _ in range(steps):
        idx = torch.randint(0, len(xs), (task.batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        task.loss_fn(model(xs[idx]), ys[idx]).backward()
        opt.step()


def gradient_table(task, model, groups, bits, n, work, title):
    (xs, ys), _ = task.data()
    x, y = xs[:task.batch], ys[:task.batch]
    exact = gradient(compile(model, task.loss_fn, x, y, work_dir=work), x, y)
    norm = np.linalg.norm(exact)
    print(f"\n{title}: batch {task.batch}, {n} step seeds\n")
    print("| saved values | ids | bits | one step | mean of N | noise floor | ratio |")
    print("|---|---|---|---|---|---|---|")
    for role, ids in [("all", None)] + list(groups.items()):
        for b in bits:
            step = compile(model, task.loss_fn, x, y, work_dir=work,
                           encoding=f"#act.quant<bits={b}>", include=ids)
            g = np.stack([gradient(step, x, y) for _ in range(n)])
            mean = g.mean(0)
            err = np.linalg.norm(mean - exact) / norm
            floor = np.sqrt(g.var(0, ddof=1).sum() / n) / norm
            one = float(np.median([np.linalg.norm(gi - exact) / norm for gi in g]))
            shown = "all" if ids is None else ",".join(map(str, ids))
            print(f"| {role} | {shown} | {b} | {one:.4f} | {err:.4f} | {floor:.4f} | "
                  f"{err / floor:.2f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bits", default="1,2,4")
    ap.add_argument("--seeds", type=int, default=16, help="step seeds per gradient mean")
    ap.add_argument("--warm", type=int, default=300, help="eager steps before the second table")
    ap.add_argument("--train", type=int, default=0, help="training seeds (0: no training)")
    ap.add_argument("--train-bits", type=int, default=2)
    ap.add_argument("--only-train", action="store_true")
    ap.add_argument("--roles", help="train only these roles (comma-separated names of the "
                                    "first table; none and all are always trained)")
    ap.add_argument("--all-but", action="append", default=[], metavar="ROLE",
                    help="also train every role but ROLE encoded (repeatable)")
    args = ap.parse_args()
    bits = [int(b) for b in args.bits.split(",")]
    task = T.TASKS["python-lm"]
    (xs, ys), _ = task.data()
    work = tempfile.mkdtemp(prefix="act-roles-")
    torch.manual_seed(0)
    model = task.model()
    probe = compile(model, task.loss_fn, xs[:task.batch], ys[:task.batch], work_dir=work,
                    encoding="#act.quant<bits=4>")
    groups = roles(probe.report)
    total = {t["id"]: t["bytes_before"] for t in probe.report["graphs"][0]["saved"]}
    print("python-lm's saved values by role (float32 bytes at batch 16):\n")
    print("| role | ids | bytes |")
    print("|---|---|---|")
    for role, ids in groups.items():
        print(f"| {role} | {','.join(map(str, ids))} | {sum(total[i] for i in ids):,} |")
    if not args.only_train:
        gradient_table(task, model, groups, bits, args.seeds, work,
                       "At initialization (seed 0)")
        warm_up(model, task, args.warm, 0)
        gradient_table(task, model, groups, bits, args.seeds, work,
                       f"After {args.warm} steps without encodings")
    if args.train:
        print(f"\nValidation loss after the recipe ({task.epochs} x {task.steps_per_epoch} "
              f"AdamW steps), only these values at {args.train_bits} bits, "
              f"{args.train} seeds\n")
        print("| saved values | per seed | mean | vs none |")
        print("|---|---|---|---|")
        enc = f"#act.quant<bits={args.train_bits}>"
        baseline = None
        rows = [(r, i) for r, i in groups.items()
                if args.roles is None or r in args.roles.split(",")]
        for role in args.all_but:
            if role not in groups:
                sys.exit(f"tensor_roles.py: no role '{role}' (roles: {', '.join(groups)})")
            rows.append((f"all but {role}",
                         sorted(i for r, ids in groups.items() if r != role for i in ids)))
        for role, ids in [("none", None), ("all", None)] + rows:
            losses = []
            for seed in range(args.train):
                start = time.perf_counter()
                loss, *_ = T.train("python-lm", "none" if role == "none" else enc, seed,
                                   include=ids)
                losses.append(loss)
                print(f"  ({role}, seed {seed}: {loss:.4f}, "
                      f"{time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
            mean = statistics.mean(losses)
            baseline = baseline or mean
            print(f"| {role} | {', '.join(f'{v:.4f}' for v in losses)} | {mean:.4f} | "
                  f"{100 * (mean / baseline - 1):+.2f} % |", flush=True)


if __name__ == "__main__":
    main()
