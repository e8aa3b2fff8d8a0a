"""One-step gradient error and bias of act's encodings on a task's model
at initialization: for each configuration, N steps on one batch with
different step seeds; prints the relative error of one step's gradient
against the step without encodings, of the mean of the N gradients, the
mean's noise floor (sqrt(trace Var / N), relative) and their ratio (about 1
for an unbiased encoding; well above 1 when the mean does not converge to
the exact gradient: a bias).

    cd python && ACT_BIN_DIR=../build/bin ACT_LIB_DIR=../build/lib \\
      /usr/bin/python3 ../bench/accuracy/gradient_bias.py python-lm \\
      "#act.quant<bits=4>;average-bits=4;#act.quant<bits=2>" [N]
"""
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from act import train as T  # noqa: E402
from act.training import compile  # noqa: E402


def gradient(step, x, y):
    """The step's parameter gradients (float64, concatenated); every call
    draws new step seeds."""
    for p in step.module.parameters():
        p.grad = None
    step(x, y)
    return np.concatenate([p.grad.detach().double().numpy().ravel()
                           for p in step.module.parameters()])


def main():
    task = T.TASKS[sys.argv[1]]
    configs = sys.argv[2].split(";")
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 48
    torch.manual_seed(0)
    (xs, ys), _ = task.data()
    x, y = xs[:task.batch], ys[:task.batch]
    model = task.model()
    work = tempfile.mkdtemp(prefix="act-bias-")
    exact = gradient(compile(model, task.loss_fn, x, y, work_dir=work), x, y)
    norm = np.linalg.norm(exact)
    print(f"{sys.argv[1]}: batch {task.batch}, {n} step seeds, initial weights (seed 0)")
    print("| configuration | one step | mean of N | noise floor of the mean | ratio |")
    print("|---|---|---|---|---|")
    for c in configs:
        kw = ({"average_bits": float(c.split("=")[1])} if c.startswith("average-bits=")
              else {"encoding": c})
        step = compile(model, task.loss_fn, x, y, work_dir=work, **kw)
        g = np.stack([gradient(step, x, y) for _ in range(n)])
        mean = g.mean(0)
        err = np.linalg.norm(mean - exact) / norm
        floor = np.sqrt(g.var(0, ddof=1).sum() / n) / norm
        one = np.linalg.norm(g[0] - exact) / norm
        print(f"| {c} | {one:.4f} | {err:.4f} | {floor:.4f} | {err / floor:.2f} |")


if __name__ == "__main__":
    main()
