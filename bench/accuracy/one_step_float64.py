"""One step of act's ResNet-20 (no encodings) and of eager PyTorch in
float32, each against eager PyTorch in float64 from the same weights and
batch: per parameter, the largest gradient difference relative to the
float64 gradient's largest value, and the BatchNorm running statistics'.
Whether act's float32 step is as accurate as eager's (docs/Training.md,
ResNet-20 without encodings).

    /usr/bin/python3 bench/accuracy/one_step_float64.py
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


def relative(x, reference):
    return float((x.double() - reference).abs().max() / (reference.abs().max() + 1e-30))


def main():
    warnings.simplefilter("ignore")
    (xt, yt), _ = train.fashion_mnist()
    torch.manual_seed(0)
    m = train.fashion_resnet20()
    e, d = copy.deepcopy(m), copy.deepcopy(m).double()
    step = act.compile(m, F.cross_entropy)
    x, y = xt[:128], yt[:128]
    la = step(x, y)
    le = F.cross_entropy(e(x), y)
    le.backward()
    ld = F.cross_entropy(d(x.double()), y)
    ld.backward()
    print(f"loss: act {float(la):.9f}, eager {float(le):.9f}, float64 {float(ld):.9f}")
    rows = sorted(((relative(pa.grad, pd.grad), relative(pe.grad, pd.grad), n)
                   for (n, pa), pe, pd in zip(m.named_parameters(), e.parameters(),
                                              d.parameters())), reverse=True)
    print("gradient, largest difference to float64 relative to its largest value:")
    for a, b, n in rows[:10]:
        print(f"  {n:24s} act {a:.2e}  eager {b:.2e}")
    print(f"  over all {len(rows)} parameters: act {max(r[0] for r in rows):.2e}, "
          f"eager {max(r[1] for r in rows):.2e}")
    stats = [(relative(ba, bd), relative(be, bd)) for ba, be, bd in
             zip(m.buffers(), e.buffers(), d.buffers()) if ba.dtype.is_floating_point]
    print(f"BatchNorm running statistics: act {max(s[0] for s in stats):.2e}, "
          f"eager {max(s[1] for s in stats):.2e}")


if __name__ == "__main__":
    main()
