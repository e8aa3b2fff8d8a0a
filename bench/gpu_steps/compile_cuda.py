"""act.compile on CUDA tensors, next to PyTorch eager on the same GPU
(issue 49): the same models, initial weights and batches trained both
ways in one process, inside an ordinary PyTorch loop (SGD or AdamW,
zero_grad, step):

- the Fashion-MNIST CNN of `act.train fmnist-cnn` at batch 128 (the images
  from fmnist.npz beside this script, which prepare.sh writes from Debian's
  dataset-fashion-mnist; random images where it is missing),
- the character language model of `act.train python-lm` (random tokens:
  the loss curves are compared, not what they learn), batch 16,

each without encodings (its loss curve within --tolerance of eager's, step
by step), with every saved activation at 4 bits and at 2 bits, each with
and without CUDA graphs (act.compile's cuda_graphs; the graph counts
printed beside the encoding: a run whose results the loop still holds
runs without its graph). Printed per
run: the last loss, the largest relative difference from eager's loss over
the steps, the median step time, act's peak (its hooks' live bytes and its
device pool's) against eager's torch.cuda.max_memory_allocated, and the
host copies the CUDA profiler sees during act's steps (none expected: the
binding reads parameters and batches in place and writes the gradients on
the device; the seeds' small copy from pinned memory excepted). Exit status 1 when a run without encodings leaves the
tolerance or act's steps copy from or to the host.

    ACT_LIB_DIR=lib python3 compile_cuda.py [--steps 100] [--device cuda]

`--device cpu` runs the same comparison on the CPU (the script's own
check, without a GPU).
"""

import argparse
import copy
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for root in (HERE, os.path.join(HERE, "..", "..", "python")):
    if os.path.isdir(os.path.join(root, "act")):
        sys.path.insert(0, root)
        break

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import act  # noqa: E402
from act import capi  # noqa: E402
from act.train import CONTEXT, VOCAB, CharLM, fashion_cnn, next_character_loss  # noqa: E402


def fmnist_batches(steps, batch, device, seed):
    path = os.path.join(HERE, "fmnist.npz")
    g = torch.Generator().manual_seed(seed)
    if os.path.exists(path):
        data = np.load(path)
        x = torch.from_numpy(data["x"].astype(np.float32) / 255.0).unsqueeze(1)
        x = (x - x.mean()) / x.std()
        y = torch.from_numpy(data["y"].astype(np.int64))
    else:
        x = torch.randn(steps * batch, 1, 28, 28, generator=g)
        y = torch.randint(0, 10, (steps * batch,), generator=g)
    order = torch.randperm(len(x), generator=g)
    out = []
    for s in range(steps):
        idx = order[(s * batch) % len(x):][:batch]
        if len(idx) < batch:
            idx = order[:batch]
        out.append((x[idx].to(device), y[idx].to(device)))
    return out


def lm_batches(steps, batch, device, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        w = torch.randint(0, VOCAB, (batch, CONTEXT + 1), generator=g)
        out.append((w[:, :-1].contiguous().to(device), w[:, 1:].contiguous().to(device)))
    return out


TASKS = {
    "fmnist-cnn": (fashion_cnn, F.cross_entropy, fmnist_batches, 128, "sgd", 0.02),
    "python-lm": (CharLM, next_character_loss, lm_batches, 16, "adamw", 3e-3),
}


def optimizer(kind, model, lr):
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    return torch.optim.AdamW(model.parameters(), lr=lr)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(model, loss_fn, batches, kind, lr, device, step=None):
    """Losses (floats, read after the last step), median step seconds."""
    opt = optimizer(kind, model, lr)
    losses, times = [], []
    for x, y in batches:
        synchronize(device)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if step is None:
            loss = loss_fn(model(x), y)
            loss.backward()
        else:
            loss = step(x, y)
        opt.step()
        synchronize(device)
        times.append(time.perf_counter() - start)
        losses.append(loss.detach())
    return [float(v) for v in losses], statistics.median(times[len(times) // 4:])


def host_copies(fn, device):
    """Copies from or to the host (the CUDA profiler's memcpy activities)
    while `fn` runs; None on the CPU."""
    if device.type != "cuda":
        fn()
        return None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        synchronize(device)
    # (The seeds' copy from pinned staging memory is expected: act's
    # kernels read each call's seeds on the device.)
    names = [e.name for e in prof.events()]
    return sum(1 for n in names
               if ("Memcpy DtoH" in n or "Memcpy HtoD" in n) and "Pinned" not in n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tasks", default="fmnist-cnn,python-lm")
    ap.add_argument("--encodings", default="none,#act.quant<bits = 4>,#act.quant<bits = 2>")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--cuda-graphs", default="off,on",
                    help="act.compile's cuda_graphs for each encoding: off, on or off,on")
    args = ap.parse_args()
    device = torch.device(args.device)
    status = 0
    print(f"device {device}" + (f" ({torch.cuda.get_device_name(device)})"
                                if device.type == "cuda" else ""))
    print("task | encoding | last loss (act, eager) | largest relative loss difference | "
          "median step act / eager (ms) | act peak / pool / eager peak (MiB) | "
          "host copies in 5 act steps")
    for name in args.tasks.split(","):
        make, loss_fn, batches_of, batch, kind, lr = TASKS[name]
        batches = batches_of(args.steps, batch, device, seed=0)
        torch.manual_seed(0)
        initial = make().to(device)
        # The loss curves are compared step by step: dropout's random
        # streams differ (act's Philox against PyTorch's), so it is off.
        for m in initial.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        eager_model = copy.deepcopy(initial)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
        eager, eager_time = train(eager_model, loss_fn, batches, kind, lr, device)
        eager_peak = (torch.cuda.max_memory_allocated(device) - base
                      if device.type == "cuda" else None)
        for encoding, graphs in [(e, g) for e in args.encodings.split(",")
                                 for g in args.cuda_graphs.split(",")]:
            model = copy.deepcopy(initial)
            step = act.compile(model, loss_fn, encoding=None if encoding == "none" else encoding,
                               cuda_graphs=graphs == "on")
            before = capi.gpu_graph_counts() if device.type == "cuda" else None
            losses, act_time = train(model, loss_fn, batches, kind, lr, device, step)
            if before is not None and graphs == "on":
                after = capi.gpu_graph_counts()
                encoding += (f" (graphs: {after['captures'] - before['captures']} captured, "
                             f"{after['launches'] - before['launches']} launches, "
                             f"{after['failed'] - before['failed']} refused)")
            diff = max(abs(a - e) / max(abs(e), 1e-12) for a, e in zip(losses, eager))
            copies = host_copies(lambda: train(model, loss_fn, batches[:5], kind, lr, device,
                                               step), device)
            pool = capi.device_pool_bytes()[1] if device.type == "cuda" else 0
            mib = 1 << 20
            print(f"{name} | {encoding} | {losses[-1]:.5f}, {eager[-1]:.5f} | {diff:.2e} | "
                  f"{act_time * 1e3:.2f} / {eager_time * 1e3:.2f} "
                  f"({act_time / eager_time:.2f}x) | {step.peak_bytes / mib:.1f} / "
                  f"{pool / mib:.1f} / "
                  f"{'-' if eager_peak is None else f'{eager_peak / mib:.1f}'} | "
                  f"{'-' if copies is None else copies}", flush=True)
            if encoding.startswith("none") and diff > args.tolerance:
                print(f"  FAIL: act without encodings differs from eager by {diff:.2e} "
                      f"(tolerance {args.tolerance:g})")
                status = 1
            if copies:
                print(f"  FAIL: {copies} host copies during act's steps")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
