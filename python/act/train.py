"""Train with act: a compiled, compressed step in an ordinary PyTorch loop,
next to PyTorch eager on the same data, initial weights and batches.

    python3 -m act.train digits-mlp|digits-cnn [--encoding E;E;...] [--epochs N]
                         [--seeds S,S,...] [--batch B] [--lr LR]
                         [--pfq-eps 0.05] [--pfq-alpha 0.3] [--pfq-window 5]
                         [--log FILE.jsonl]

Data: the handwritten digits scikit-learn ships (sklearn.datasets.load_digits,
1,797 8x8 images, no download); fixed split: a permutation by
numpy.random.RandomState(0), the first 1,437 images train, the other 360
test. Prints, per configuration (PyTorch eager fp32, and act
with each encoding; "none" is act without encodings), the final test
accuracy as mean +- std over the seeds, the measured peak of act's step and
its median step time.

FracTrain: a configuration may end in "+compute=F/B" (the contractions'
operands quantized at F forward / B backward bits, act-quantize-compute) or
"+pfq=F/B,F/B,..." (PFQ: the stages in order, switched when the epoch loss
plateaus, FracTrain Alg. 1, act.pfq); the table then gives FracTrain's
computational cost (effective MACs over the run) saved against fp32 and
against fixed FW-8/BW-8, and --log writes each epoch (loss, stage) and each
switch as JSON lines.
"""

import argparse
import json
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


def train(task, encoding, seed, epochs=10, batch=64, lr=0.05, log=None, pfq=None,
          info=None):
    """Trains `task` with act (encoding: an act encoding, "none" for act
    without encodings, or None for PyTorch eager; "+compute=F/B" or
    "+pfq=STAGES" appended for FracTrain); returns (test accuracy, act's
    measured step peak or None, median step seconds, saved bytes (before,
    after) or None). pfq: PlateauSchedule options (eps, alpha, window).
    info, a dict, receives FracTrain's cost and the PFQ epochs/switches."""
    from .pfq import PlateauSchedule, parse_stages
    schedule, compute_bits = None, None
    if encoding is not None and "+pfq=" in encoding:
        encoding, _, stages = encoding.partition("+pfq=")
        schedule = PlateauSchedule(parse_stages(stages), **(pfq or {}))
        compute_bits = schedule.stage
    elif encoding is not None and "+compute=" in encoding:
        encoding, _, bits = encoding.partition("+compute=")
        compute_bits = parse_stages(bits)[0]
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
                               few_bit=int(few) if few else 0, compute_bits=compute_bits)
    gen = torch.Generator().manual_seed(seed)
    times = []
    epochs_log = []
    for epoch in range(epochs):
        epoch_losses = []
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
            epoch_losses.append(float(loss))
            if log is not None:
                log.append(float(loss))
        mean_loss = statistics.mean(epoch_losses)
        epochs_log.append({"epoch": epoch + 1, "loss": mean_loss,
                           "compute_bits": list(step.compute_bits)
                           if step is not None and step.compute_bits else None})
        if schedule is not None and schedule.update(mean_loss):
            step.compute_bits = schedule.stage
    if info is not None:
        info["epochs"] = epochs_log
        if schedule is not None:
            info["switches"] = [{"epoch": e, "stage": list(st), "eps": eps}
                                for e, st, eps in schedule.switches]
        if step is not None and step.fp32_macs:
            # FW-8/BW-8: every operand at 8 bits.
            info["effective_macs"] = step.effective_macs
            info["fp32_macs"] = step.fp32_macs
            info["saved_vs_fp32"] = 1 - step.effective_macs / step.fp32_macs
            info["saved_vs_8bit"] = 1 - step.effective_macs / (step.fp32_macs / 16)
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
    p.add_argument("--pfq-eps", type=float, default=0.05)
    p.add_argument("--pfq-alpha", type=float, default=0.3)
    p.add_argument("--pfq-window", type=int, default=5)
    p.add_argument("--log", help="write every run's epochs and PFQ switches as JSON lines")
    a = p.parse_args(argv)
    pfq = {"eps": a.pfq_eps, "alpha": a.pfq_alpha, "window": a.pfq_window}
    log = open(a.log, "w") if a.log else None
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in a.seeds.split(",")]
    print(f"{a.task}: {a.epochs} epochs, batch {a.batch}, SGD lr {a.lr} momentum 0.9, "
          f"seeds {seeds}; test accuracy on 360 held-out digits")
    print("| configuration | test accuracy (mean +- std) | saved activations B | "
          "act step peak B | step ms | compute saved vs fp32 / vs FW-8/BW-8 |")
    print("|---|---|---|---|---|---|")
    for enc in [None] + a.encoding.split(";"):
        accs, peaks, times, saved, infos = [], [], [], None, []
        for s in seeds:
            info = {}
            acc, peak, t, saved = train(a.task, enc, s, a.epochs, a.batch, a.lr, pfq=pfq,
                                        info=info)
            accs.append(acc)
            peaks.append(peak)
            times.append(t)
            infos.append(info)
            if log:
                log.write(json.dumps({"configuration": enc or "eager", "seed": s,
                                      "accuracy": acc, **info}) + "\n")
                log.flush()
        name = "PyTorch eager fp32" if enc is None else f"act {enc}"
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        peak = f"{max(peaks):,}" if enc is not None else ""
        ratio = (f"{saved[1]:,} ({saved[0] / max(saved[1], 1):.1f}x smaller)" if saved else "")
        cost = ""
        if infos and "saved_vs_fp32" in infos[0]:
            cost = (f"{100 * statistics.mean(i['saved_vs_fp32'] for i in infos):.1f}% / "
                    f"{100 * statistics.mean(i['saved_vs_8bit'] for i in infos):.1f}%")
            switches = [[sw["epoch"] for sw in i.get("switches", [])] for i in infos]
            if any(switches):
                cost += f" (switches at epochs {switches})"
        print(f"| {name} | {100 * statistics.mean(accs):.2f} +- {100 * std:.2f} % | {ratio} | "
              f"{peak} | {1000 * statistics.median(times):.2f} | {cost} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
