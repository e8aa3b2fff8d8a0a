"""Train with act: a compiled, compressed step in an ordinary PyTorch loop,
next to PyTorch eager on the same data, initial weights and batches.

    python3 -m act.train digits-mlp|digits-cnn [--encoding E;E;...] [--epochs N]
                         [--seeds S,S,...] [--batch B] [--lr LR]

Data: the handwritten digits scikit-learn ships (sklearn.datasets.load_digits,
1,797 8x8 images, no download); fixed split: a permutation by
numpy.random.RandomState(0), the first 1,437 images train, the other 360
test. Prints, per configuration (PyTorch eager fp32, and act
with each encoding; "none" is act without encodings), the final test
accuracy as mean +- std over the seeds, the measured peak of act's step and
its median step time.
"""

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    # A fixed shuffle (the file is ordered by writer: its last 360 images
    # come from writers the first 1,437 barely cover).
    order = torch.from_numpy(np.random.RandomState(0).permutation(len(y)))
    x, y = x[order], y[order]
    return (x[:1437], y[:1437]), (x[1437:], y[1437:])


def digits_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))


def digits_cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


TASKS = {"digits-mlp": digits_mlp, "digits-cnn": digits_cnn}


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        acc = float((model(x).argmax(1) == y).float().mean())
    model.train()
    return acc


def train(task, encoding, seed, epochs=10, batch=64, lr=0.05, log=None):
    """Trains `task` with act (encoding: an act encoding, "none" for act
    without encodings, or None for PyTorch eager); returns (test accuracy,
    act's measured step peak or None, median step seconds, saved bytes
    (before, after) or None)."""
    (xtr, ytr), (xte, yte) = digits()
    torch.manual_seed(seed)
    model = TASKS[task]()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    step = None
    if encoding is not None:
        from . import compile as act_compile
        if encoding.startswith("average-bits="):
            step = act_compile(model, F.cross_entropy, xtr[:batch], ytr[:batch], seed=seed,
                               average_bits=float(encoding.split("=", 1)[1]))
        else:
            # "ENCODING+few-bit=B": Few-bit codes where the backward reads
            # phi(x), ENCODING elsewhere.
            encoding, _, few = encoding.partition("+few-bit=")
            step = act_compile(model, F.cross_entropy, xtr[:batch], ytr[:batch],
                               encoding=None if encoding == "none" else encoding, seed=seed,
                               few_bit=int(few) if few else 0)
    gen = torch.Generator().manual_seed(seed)
    times = []
    for epoch in range(epochs):
        order = torch.randperm(len(xtr), generator=gen)
        for start in range(0, len(xtr), batch):
            idx = order[start:start + batch]
            xb, yb = xtr[idx], ytr[idx]
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if step is None:
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
            else:
                loss = step(xb, yb)
            opt.step()
            times.append(time.perf_counter() - t)
            if log is not None:
                log.append(float(loss))
    return accuracy(model, xte, yte), (step.peak_bytes if step else None), \
        statistics.median(times), (step.saved_bytes if step else None)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m act.train", description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("--encoding", default="none;#act.quant<bits=8>;#act.quant<bits=4>;"
                   "#act.quant<bits=2>;#act.float<format=bf16>;average-bits=2",
                   help="';'-separated: none, an act encoding, ENCODING+few-bit=B (few-bit "
                        "codes where the backward reads an activation's derivative, "
                        "ENCODING elsewhere), or average-bits=B (GACT's allocation from "
                        "measured sensitivities)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in a.seeds.split(",")]
    print(f"{a.task}: {a.epochs} epochs, batch {a.batch}, SGD lr {a.lr} momentum 0.9, "
          f"seeds {seeds}; test accuracy on 360 held-out digits")
    print("| configuration | test accuracy (mean +- std) | saved activations B | "
          "act step peak B | step ms |")
    print("|---|---|---|---|---|")
    for enc in [None] + a.encoding.split(";"):
        accs, peaks, times, saved = [], [], [], None
        for s in seeds:
            acc, peak, t, saved = train(a.task, enc, s, a.epochs, a.batch, a.lr)
            accs.append(acc)
            peaks.append(peak)
            times.append(t)
        name = "PyTorch eager fp32" if enc is None else f"act {enc}"
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        peak = f"{max(peaks):,}" if enc is not None else ""
        ratio = (f"{saved[1]:,} ({saved[0] / max(saved[1], 1):.1f}x smaller)" if saved else "")
        print(f"| {name} | {100 * statistics.mean(accs):.2f} +- {100 * std:.2f} % | {ratio} | "
              f"{peak} | {1000 * statistics.median(times):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
