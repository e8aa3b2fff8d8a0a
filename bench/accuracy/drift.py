"""act's ResNet-20 step (no encodings) and eager PyTorch side by side from
the same weights on the same Fashion-MNIST batches (20 full batches, the
partial batch of 96, 3 more): each step's two losses, and the largest
difference of the parameters and of the buffers (BatchNorm's statistics),
relative to the largest value, and num_batches_tracked on both sides. How
fast the two runs drift apart, and whether the partial batch moves the
BatchNorm statistics apart (docs/Training.md, ResNet-20 without encodings).

    /usr/bin/python3 bench/accuracy/drift.py
"""

import copy
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_PROGRESS", "0")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import act  # noqa: E402
from act import train  # noqa: E402


def largest(a, b):
    return max(float((p.float() - q.float()).abs().max() / (q.float().abs().max() + 1e-12))
               for p, q in zip(a, b))


def tracked(m):
    return [int(x) for n, x in m.named_buffers() if n.endswith("num_batches_tracked")][0]


def main():
    warnings.simplefilter("ignore")
    (xt, yt), _ = train.fashion_mnist()
    torch.manual_seed(0)
    m = train.fashion_resnet20()
    e = copy.deepcopy(m)
    oa = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    oe = torch.optim.SGD(e.parameters(), lr=0.05, momentum=0.9)
    step = act.compile(m, F.cross_entropy)
    perm = torch.randperm(len(xt), generator=torch.Generator().manual_seed(0))
    start = 0
    for i, n in enumerate([128] * 20 + [96] + [128] * 3):
        idx = perm[start:start + n]
        start += n
        x, y = xt[idx], yt[idx]
        oa.zero_grad(set_to_none=True)
        oe.zero_grad(set_to_none=True)
        la = float(step(x, y))
        le = F.cross_entropy(e(x), y)
        le.backward()
        oa.step()
        oe.step()
        print(f"{i:2d} batch {n}: loss act {la:.5f} eager {float(le):.5f}; parameters "
              f"{largest(m.parameters(), e.parameters()):.2e}, buffers "
              f"{largest(m.buffers(), e.buffers()):.2e}; num_batches_tracked "
              f"{tracked(m)} / {tracked(e)}", flush=True)


if __name__ == "__main__":
    main()
