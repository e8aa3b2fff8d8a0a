"""One training step of a Fashion-MNIST network (act.train's fmnist-cnn, or
fmnist-resnet20 with --model) per encoding, in one process on the same random batch: act's measured step
peak (its allocation hooks), the median step time next to PyTorch eager's
(same threads), the loss, and each encoding's largest relative gradient
difference from the first encoding's (0.0: bit for bit).

    ACT_BIN_DIR=build/bin ACT_LIB_DIR=build/lib python3 bench/memory/encoding_peaks.py \\
        [--model fmnist-cnn] [--batch 128] [--steps 6] [--threads 1] \\
        [--encodings "#act.float<format = fp10>;lossless+fp10;lossless"]

("none": act without encodings; "average-bits=B" or "average-bits=B,stats=bf16":
GACT's allocation, measured on the batch, as act.train's.)
"""

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=("fmnist-cnn", "fmnist-resnet20"), default="fmnist-cnn")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=6, help="timed steps (after one warm-up)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--encodings", default="#act.float<format = fp10>;lossless+fp10;lossless",
                   help="act.compile encoding= values, ';'-separated")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    import torch
    import torch.nn.functional as F
    import act
    from act import peer
    from act.train import _average_bits, fashion_cnn, fashion_resnet20
    peer.set_torch_threads(a.threads)
    torch.manual_seed(0)
    model = {"fmnist-cnn": fashion_cnn, "fmnist-resnet20": fashion_resnet20}[a.model]()
    # ReLU maps with zeros where the CNN's activations have them; inputs
    # clipped below as normalized Fashion-MNIST images are (its background).
    x = torch.randn(a.batch, 1, 28, 28).clamp(min=-1.0)
    y = torch.randint(0, 10, (a.batch,))

    def timed(step):
        times = []
        for i in range(a.steps + 1):
            for q in model.parameters():
                q.grad = None
            t = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t)
        return float(loss), statistics.median(times[1:]), [q.grad.clone()
                                                          for q in model.parameters()]

    def eager():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    _, eager_s, _ = timed(eager)
    print(f"{a.model}, batch {a.batch}, {a.threads} thread(s); PyTorch eager's step "
          f"{1000 * eager_s:.1f} ms ({peer.torch_blas()})")
    print("| encoding | act's step peak | saved activations (smaller) | step ms (vs eager) | loss "
          "| gradients vs the first row's |")
    print("|---|---|---|---|---|---|")
    first = None
    for enc in a.encodings.split(";"):
        if enc.startswith("average-bits="):
            bits, stats = _average_bits(enc)
            step = act.compile(model, F.cross_entropy, x, y, average_bits=bits, stats=stats)
        else:
            step = act.compile(model, F.cross_entropy, x, y,
                               encoding=None if enc == "none" else enc)
        peaks = []

        def run():
            loss = step(x, y)
            peaks.append(step.peak_bytes)
            return loss

        loss, seconds, grads = timed(run)
        if first is None:
            first, diff = grads, "(the reference)"
        else:
            d = max(float((g - r).abs().max() / r.abs().max().clamp(min=1e-30))
                    for g, r in zip(grads, first))
            diff = "bit for bit" if d == 0 else f"{d:.2g} relative"
        before, after = step.saved_bytes
        print(f"| {enc} | {max(peaks):,} B | {after:,} B ({before / after:.2f}x) | "
              f"{1000 * seconds:.1f} ({seconds / eager_s:.2f}x) | "
              f"{loss:.6f} | {diff} |", flush=True)


if __name__ == "__main__":
    main()
