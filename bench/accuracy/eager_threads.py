"""PyTorch eager against itself with another summation order: act.train's
recipe for TASK (its seeds, initial weights and batches) in eager PyTorch
with torch.set_num_threads(THREADS); prints each seed's test metric as a
JSON line. Run at 1 and 2 threads, it sizes how far float rounding alone
moves a run (docs/Training.md, ResNet-20 without encodings).

    /usr/bin/python3 bench/accuracy/eager_threads.py fmnist-resnet20 --threads 2 --epochs 3
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_PROGRESS", "0")

import torch  # noqa: E402

from act import train  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=sorted(train.TASKS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seeds", default="0,1,2")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    for s in (int(x) for x in a.seeds.split(",")):
        log = []
        metric = train.train(a.task, None, s, epochs=a.epochs, log=log)[0]
        print(json.dumps({"task": a.task, "threads": torch.get_num_threads(), "seed": s,
                          "metric": metric, "first_losses": log[:3], "last_loss": log[-1]}),
              flush=True)


if __name__ == "__main__":
    main()
