"""Recomputation on the language model (issue 52): act's measured step peak,
saved bytes and median step time at each recompute cost and loss-head
encoding, next to PyTorch eager's step (its peak by the preloaded heap
counter, act.mallocpeak; eager with torch.utils.checkpoint on each block,
the usual way to trade compute for memory) on the same batch, in the same
process and thread count.

    ACT_LIB_DIR=build/lib python3 bench/memory/recompute.py [--batch 16] [--steps 40]
        [--threads 1] [--width 64 --layers 2] [--only NAME,...]

Every configuration trains act.train's python-lm model from the same
initial weights on the same batches (AdamW, the task's learning rate) for
--steps steps; the first step (compile, GACT's measurement) is not timed.
The printed table is the one in docs/benchmarks.md.
"""

import argparse
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from act import mallocpeak  # noqa: E402

BF16 = "#act.float<format = bf16>"
Q4 = "#act.quant<bits = 4>"
# name -> act.compile's keyword arguments (None: PyTorch eager; "checkpoint":
# eager with each block under torch.utils.checkpoint)
CONFIGS = {
    "eager": None,
    "eager, checkpointed blocks": "checkpoint",
    "act, none": dict(encoding="none"),
    "act, 4 bits": dict(encoding=Q4),
    "act, 4 bits, R=4": dict(encoding=Q4, recompute_cost=4),
    "act, 4 bits, R=20": dict(encoding=Q4, recompute_cost=20),
    "act, 4 bits, R=20, bf16 loss head": dict(encoding=Q4, recompute_cost=20, loss_head=BF16),
    "act, average 2 bits, R=20": dict(average_bits=2, recompute_cost=20),
    "act, average 2 bits, R=20, bf16 loss head": dict(average_bits=2, recompute_cost=20,
                                                      loss_head=BF16),
    "act, average 1.5 bits, R=80, bf16 loss head": dict(average_bits=1.5, recompute_cost=80,
                                                        loss_head=BF16),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=40, help="timed steps per configuration")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated configuration names")
    args = p.parse_args()
    if not mallocpeak.available():
        # Restart under the counter (it must be preloaded at process start).
        sys.exit(mallocpeak.run([sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
                 .returncode)
    warnings.simplefilter("ignore")
    import torch
    from torch.utils.checkpoint import checkpoint
    import act
    from act.train import TASKS, CharLM
    torch.set_num_threads(args.threads)
    task = TASKS["python-lm"]
    (xtr, ytr), _ = task.data()
    gen = torch.Generator().manual_seed(0)
    batches = [torch.randint(len(xtr), (args.batch,), generator=gen)
               for _ in range(args.steps + 1)]
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in only if n not in CONFIGS]
    if unknown:
        sys.exit(f"recompute.py: no configuration {unknown}; there are {list(CONFIGS)}")
    print(f"python-lm model, width {args.width}, {args.layers} blocks, batch {args.batch}, "
          f"{args.threads} thread(s), median of {args.steps} steps")
    print("| configuration | saved activations B | step peak B | peak vs eager | "
          "step ms | time vs eager |")
    print("|---|---|---|---|---|---|")
    eager = None
    for name, config in CONFIGS.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = CharLM(d=args.width, layers=args.layers)
        opt = torch.optim.AdamW(model.parameters(), lr=task.lr)
        step, saved, peaks, times = None, "", [], []
        if isinstance(config, dict):
            step = act.compile(model, task.loss_fn, xtr[batches[0]], ytr[batches[0]],
                               seed=0, **config)
        for i, idx in enumerate(batches):
            x, y = xtr[idx], ytr[idx]
            mallocpeak.reset()
            before = mallocpeak.live()
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if step is not None:
                loss = step(x, y)
            elif config == "checkpoint":
                h = model.emb(x) + model.pos[:x.shape[1]]
                for block in model.blocks:
                    h = checkpoint(block, h, use_reentrant=False)
                logits = model.head(model.norm(h)).reshape(-1, model.head.out_features)
                loss = task.loss_fn(logits, y)
                loss.backward()
            else:
                loss = task.loss_fn(model(x), y)
                loss.backward()
            opt.step()
            elapsed = time.perf_counter() - t
            if i == 0:
                continue  # compile, GACT's measurement, first touches
            times.append(elapsed)
            peaks.append(step.last_peak_bytes if step is not None
                         else mallocpeak.peak() - before)
        if not float(loss) == float(loss):
            sys.exit(f"recompute.py: {name}: the loss is not a number")
        peak = statistics.median(peaks)
        ms = 1000 * statistics.median(times)
        if config is None:
            eager = (peak, ms)
        if step is not None and step.saved_bytes:
            before, after = step.saved_bytes
            saved = f"{after:,} ({before / after:.1f}x)"
        vs = (f"{eager[0] / peak:.2f}x lower", f"{ms / eager[1]:.2f}") if eager else ("", "")
        print(f"| {name} | {saved} | {peak:,.0f} | {vs[0]} | {ms:.1f} | {vs[1]} |", flush=True)


if __name__ == "__main__":
    main()
