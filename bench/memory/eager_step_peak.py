"""PyTorch eager's peak heap bytes during one training step (forward,
loss, backward, SGD update) of an act.train task's model on its first
training batch, measured by the preloaded heap counter (act.mallocpeak)
as act's own step peak is measured by its allocation hooks: the "eager's
peak" column next to act's step peak in docs/Training.md.

    ACT_LIB_DIR=build/lib python3 bench/memory/eager_step_peak.py fmnist-resnet20 \
        [--batch 128] [--steps 4] [--threads 2]
"""

import argparse
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from act import mallocpeak  # noqa: E402
from act.train import TASKS  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("--batch", type=int, help="default: the task's")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    if not mallocpeak.available():
        # Restart under the counter (it must be preloaded at process start).
        sys.exit(mallocpeak.run([sys.executable, os.path.abspath(__file__)] + sys.argv[1:]).returncode)
    warnings.simplefilter("ignore")
    import torch
    task = TASKS[args.task]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    (x, y), _ = task.data()
    batch = args.batch or task.batch
    x, y = x[:batch], y[:batch]
    model = task.model()
    optimizer = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=0.9)
    peaks = []
    for _ in range(args.steps):
        mallocpeak.reset()
        before = mallocpeak.live()
        optimizer.zero_grad()
        task.loss_fn(model(x), y).backward()
        optimizer.step()
        peaks.append(mallocpeak.peak() - before)
    peak = sorted(peaks)[len(peaks) // 2]
    print(f"{args.task}, batch {batch}: PyTorch eager's step peak {peak:,} B "
          f"({peak / 2**20:.1f} MiB; median of {args.steps} steps: {peaks})")


if __name__ == "__main__":
    main()
