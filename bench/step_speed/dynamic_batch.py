"""The step for every batch size (act.compile's batches of another size than
the first: a `?` batch dimension) against the step compiled for that size,
in the same process: its extra compile, its step time and its measured peak
at the same batch, as ratios (medians of alternating calls). The first
batch's size keeps a step of its own; this is what a partial last batch or
an evaluation batch size costs instead of a compile of its own.

    /usr/bin/python3 bench/step_speed/dynamic_batch.py [--workloads cnn,resnet20,lm,mlp]
        [--main 128] [--batch 100] [--calls 7] [--encoding "#act.quant<bits=4>"]

And what compile_ahead=True (the default where the first compile takes 2 s
or more) changes: the first call's time
with and without it (the steps for every batch size exported then, their
compile started in a background process), and the first call at the other
size after --steps calls at the first size (loaded from the code cache the
background process filled, or waiting for it), against compiling it then.

With --zoo NAMES (zoo models, `all` for every one), the coverage instead:
for each model, through act.compile at batches 6, 4 and 9, whether it
shares one step (or why it is refused) and its largest difference from the
per-size steps (loss, and gradients relative to the largest gradient).
"""

import argparse
import copy
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
os.environ.setdefault("ACT_PROGRESS", "0")
os.environ.setdefault("ACT_CACHE_DIR", "")  # (compile times without the code cache)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import act  # noqa: E402
from act import train  # noqa: E402

WORKLOADS = {  # (model, loss, a batch of n)
    "mlp": (train.digits_mlp, F.cross_entropy,
            lambda n: (torch.randn(n, 64), torch.randint(0, 10, (n,)))),
    "cnn": (train.fashion_cnn, F.cross_entropy,
            lambda n: (torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,)))),
    "resnet20": (train.fashion_resnet20, F.cross_entropy,
                 lambda n: (torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,)))),
    "lm": (train.CharLM, train.next_character_loss,
           lambda n: (torch.randint(0, train.VOCAB, (n, train.CONTEXT)),
                      torch.randint(0, train.VOCAB, (n, train.CONTEXT)))),
}


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def zoo_coverage(names):
    import warnings
    from act import models
    from act.zoo.models import ZOO
    for name in list(ZOO) if names == "all" else names.split(","):
        try:
            torch.manual_seed(0)
            w = models.load("zoo." + name, 6, 0)
            module, twin = w.module, copy.deepcopy(w.module)
            step = act.compile(module, w.loss_fn)
            per_size = act.compile(twin, w.loss_fn, dynamic_batch=False)
            worst = 0.0
            for n in (6, 4, 9):
                batch = models.load("zoo." + name, n, 1)
                module.zero_grad(set_to_none=True)
                twin.zero_grad(set_to_none=True)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    a = float(step(batch.inputs, batch.targets))
                    b = float(per_size(batch.inputs, batch.targets))
                grads = [(p.grad, q.grad) for p, q in zip(module.parameters(), twin.parameters())
                         if q.grad is not None]
                scale = max([float(q.abs().max()) for _, q in grads] + [1e-30])
                worst = max([worst, abs(a - b) / max(abs(b), 1e-30)]
                            + [float((p - q).abs().max()) / scale for p, q in grads])
            shared = step.dynamic_refused is None
            print(f"| {name} | {'one step' if shared else 'per size: ' + step.dynamic_refused[:160]}"
                  f" | {worst:.1e} |", flush=True)
        except Exception as e:  # (a row, not the end of the table)
            print(f"| {name} | error: {type(e).__name__}: {str(e)[:160]} | |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default="mlp,cnn,resnet20,lm")
    p.add_argument("--main", type=int, default=128, help="the first batch's size")
    p.add_argument("--batch", type=int, default=100, help="the other size, measured")
    p.add_argument("--calls", type=int, default=7)
    p.add_argument("--encoding", default=None)
    p.add_argument("--steps", type=int, default=30,
                   help="calls at the first size before the other size (compile_ahead)")
    p.add_argument("--zoo", default=None, help="zoo models (or all): the coverage table")
    a = p.parse_args()
    if a.zoo:
        print("| zoo model | step for every batch size | largest difference from per-size |")
        print("|---|---|---|")
        return zoo_coverage(a.zoo)
    print(f"threads {torch.get_num_threads()}, first batch {a.main}, measured batch {a.batch}, "
          f"encoding {a.encoding}")
    print("| workload | compile: every size / this size | step: every size / this size "
          "| peak: every size / this size | first call: compile_ahead / without "
          f"| first call at {a.batch} after {a.steps}: compiled ahead / then |")
    print("|---|---|---|---|---|---|")
    for name in a.workloads.split(","):
        make, loss_fn, batch = WORKLOADS[name]
        torch.manual_seed(0)
        model = make()
        twin, third = copy.deepcopy(model), copy.deepcopy(model)
        dynamic = act.compile(model, loss_fn, encoding=a.encoding, compile_ahead=False)
        per_size = act.compile(twin, loss_fn, encoding=a.encoding, dynamic_batch=False)
        ahead = act.compile(third, loss_fn, encoding=a.encoding, compile_ahead=True)
        first = batch(a.main)
        first_plain = timed(lambda: dynamic(*first))
        first_ahead = timed(lambda: ahead(*first))
        for _ in range(a.steps):
            ahead(*first)
        x, y = batch(a.batch)
        other_ahead = timed(lambda: ahead(x, y))
        assert ahead.compiled[ahead.variant][0].from_cache, "not compiled ahead"
        compile_dynamic = timed(lambda: dynamic(x, y))
        compile_static = timed(lambda: per_size(x, y))
        assert dynamic.variant[0] == "every batch size", dynamic.dynamic_refused
        times = {id(dynamic): [], id(per_size): []}
        for _ in range(a.calls):
            for step in (dynamic, per_size):
                times[id(step)].append(timed(lambda: step(x, y)))
        td, ts = (statistics.median(times[id(s)]) for s in (dynamic, per_size))
        print(f"| {name} | {compile_dynamic:.1f} / {compile_static:.1f} s "
              f"({compile_dynamic / compile_static:.2f}x) | {td * 1e3:.1f} / {ts * 1e3:.1f} ms "
              f"({td / ts:.2f}x) | {dynamic.last_peak_bytes / 2**20:.1f} / "
              f"{per_size.last_peak_bytes / 2**20:.1f} MiB "
              f"({dynamic.last_peak_bytes / per_size.last_peak_bytes:.2f}x) | "
              f"{first_ahead:.1f} / {first_plain:.1f} s ({first_ahead / first_plain:.2f}x) | "
              f"{other_ahead:.2f} / {compile_dynamic:.2f} s "
              f"({other_ahead / compile_dynamic:.2f}x) |", flush=True)


if __name__ == "__main__":
    main()
