"""The memory a user sees (issue 51): the peak resident memory of a whole
process training a Fashion-MNIST network (act.train's fmnist-cnn, or
fmnist-resnet20 with --model) for a few steps on random batches, with
PyTorch eager, act.compile and act.Module, each in a fresh process; next
to each, the step's own peak (act's allocation hooks; eager: the preloaded
heap counter, act.mallocpeak) and the process's resident memory after
`import torch` alone.

    ACT_BIN_DIR=build/bin ACT_LIB_DIR=build/lib python3 bench/memory/process_rss.py \
        [--model fmnist-cnn|fmnist-resnet20] [--batch 128] [--steps 20]
        [--encoding "#act.quant<bits=4>"]
        [--largest-under MIB --steps 2 [--only act.compile --eager-batch N]]

--largest-under MIB: the largest batch PyTorch eager, eager with
torch.utils.checkpoint on each block (the CNN's four conv-BatchNorm-ReLU
blocks; ResNet-20's stem and nine residual blocks), and act (none, 4 bits,
2 bits) train with while the whole process peaks at most MIB MiB of
resident memory, found by doubling and bisection, each probe a fresh
process. Uniform 2 bits stands in for GACT's average 2 bits (the same
bytes by the allocation's budget; its sensitivity estimate at a batch of
thousands would cost minutes per probe); "--only average-bits" adds
GACT's own row (its first allocation: uniform bits at the budget where
they spend 90 % of it, act.compile's uniform_first).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.join(HERE, "..", "..", "python")

WORKER = r'''
import json, resource, sys, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import torch, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
def checkpointed(model, x):  # each block recomputed in the backward
    mods, i = list(model.children()), 0
    while i < len(mods):
        if isinstance(mods[i], ResidualBlock):
            x, i = checkpoint(mods[i], x, use_reentrant=False), i + 1
        elif isinstance(mods[i], torch.nn.Conv2d):
            x = checkpoint(torch.nn.Sequential(*mods[i:i + 3]), x, use_reentrant=False)
            i += 3
        else:
            x, i = mods[i](x), i + 1
    return x
def rss():  # peak resident set so far, bytes
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
def rss_now():  # resident set now, bytes
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
after_import = rss()
import act
from act.train import ResidualBlock, fashion_cnn, fashion_resnet20
mode, encoding, batch, steps = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
encoding = None if encoding == "none" else encoding
torch.manual_seed(0)
model = {"fmnist-cnn": fashion_cnn, "fmnist-resnet20": fashion_resnet20}[sys.argv[6]]()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
step_peak = 0
if mode == "compile" and encoding and encoding.startswith("average-bits="):
    step = act.compile(model, F.cross_entropy, x, y,
                       average_bits=float(encoding.split("=", 1)[1]))
elif mode == "compile":
    step = act.compile(model, F.cross_entropy, x, y, encoding=encoding)
elif mode == "module":
    wrapped = act.Module(model, x, encoding=encoding)
after_compile = rss()
for i in range(steps):
    opt.zero_grad(set_to_none=True)
    if mode in ("eager", "checkpoint"):
        from act import mallocpeak
        mallocpeak.reset(); before = mallocpeak.live()
        if mode == "eager":
            out = model(x)
        else:
            out = checkpointed(model, x)
        F.cross_entropy(out, y).backward()
        step_peak = max(step_peak, mallocpeak.peak() - before)
    elif mode == "compile":
        step(x, y)
        step_peak = step.peak_bytes
    else:
        F.cross_entropy(wrapped(x), y).backward()
        step_peak = wrapped.peak_bytes
    opt.step()
print(json.dumps({"after_import": after_import, "after_compile": after_compile,
                  "peak_rss": rss(), "rss_now": rss_now(), "step_peak": step_peak}))
'''


MODELS = ("fmnist-cnn", "fmnist-resnet20")


def measure(mode, encoding, batch, steps, cache, model="fmnist-cnn"):
    argv = [sys.executable, "-c", WORKER, os.path.abspath(PYTHON), mode, encoding, str(batch),
            str(steps), model]
    # (act compiles in a child process: its compiler's memory is not the
    # training process's; ACT_COMPILE_IN_CHILD=0 measures it in-process.)
    env = dict(os.environ, ACT_PROGRESS="0", ACT_CACHE_DIR=cache,
               ACT_COMPILE_IN_CHILD=os.environ.get("ACT_COMPILE_IN_CHILD", "1"))
    if mode in ("eager", "checkpoint"):
        sys.path.insert(0, os.path.abspath(PYTHON))
        from act import mallocpeak
        env = mallocpeak.environment(env)
    run = subprocess.run(argv, capture_output=True, text=True, env=env)
    if run.returncode:
        sys.exit(f"{mode} failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def largest_batch(mode, encoding, cap, steps, cache, start=64, resolution=0.125,
                  model="fmnist-cnn"):
    """The largest batch whose fresh process peaks at most `cap` bytes of
    resident memory: doubling from `start`, then bisection until the bounds
    are within `resolution` of each other (batches multiples of 16).
    Returns (batch, its measurement, the probes: (batch, peak RSS))."""
    probes, fits = [], {}

    def fits_at(batch):
        m = measure(mode, encoding, batch, steps, cache, model)
        probes.append((batch, m["peak_rss"]))
        fits[batch] = m
        return m["peak_rss"] <= cap

    low, high = 0, None
    batch = start
    while high is None:
        if fits_at(batch):
            low, batch = batch, 2 * batch
        else:
            high = batch
    while low and high - low > max(16, resolution * low):
        mid = (low + high) // 2 // 16 * 16
        if fits_at(mid):
            low = mid
        else:
            high = mid
    return low, fits.get(low), probes


def largest_table(cap_mib, steps, only=None, eager_batch=None, model="fmnist-cnn"):
    """--largest-under: for PyTorch eager, eager with checkpointing of the
    CNN's four convolution blocks, and act without encodings, at 4 bits and at 2
    bits, the largest batch under the same cap on the process's peak
    resident memory. only: the rows whose label contains it (--only);
    eager_batch: eager's largest batch, for the ratios of a run without
    eager's row."""
    cap = cap_mib * 2 ** 20
    rows = [("PyTorch eager", "eager", "none"),
            ("PyTorch eager, torch.utils.checkpoint per block", "checkpoint", "none"),
            ("act.compile, none", "compile", "none"),
            ("act.compile, #act.quant<bits=4>", "compile", "#act.quant<bits=4>"),
            ("act.compile, #act.quant<bits=2>", "compile", "#act.quant<bits=2>")]
    print(f"| {model}, peak RSS at most {cap_mib} MiB, {steps} steps | largest batch | "
          f"vs eager | its peak RSS | its step's own peak | probes (batch: MiB) |")
    print("|---|---|---|---|---|---|")
    if only and "average-bits" in only:
        rows.append((f"act.compile, {only}", "compile", only))
    eager = eager_batch
    mib = 2 ** 20
    for label, mode, encoding in rows:
        if only and only not in label:
            continue
        with tempfile.TemporaryDirectory(prefix="act-rss-cache-") as cache:
            batch, m, probes = largest_batch(mode, encoding, cap, steps, cache, model=model)
        eager = eager or batch
        shown = ", ".join(f"{b}: {r / mib:.0f}" for b, r in probes)
        print(f"| {label} | {batch} | {batch / max(eager, 1):.2f}x | "
              f"{m['peak_rss'] / mib:.0f} MiB | {m['step_peak'] / mib:.1f} MiB | {shown} |"
              if m else f"| {label} | none fits | | | | {shown} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, default="fmnist-cnn")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--encoding", default="#act.quant<bits=4>")
    p.add_argument("--largest-under", type=int, metavar="MIB",
                   help="instead: the largest batch each configuration trains with under a "
                        "cap of MIB MiB on the process's peak resident memory")
    p.add_argument("--only", help="--largest-under: only the rows whose label contains this "
                                  "(\"act.compile\": act's rows)")
    p.add_argument("--eager-batch", type=int,
                   help="--largest-under with --only: eager's largest batch, measured before, "
                        "for the ratios")
    args = p.parse_args()
    if args.largest_under:
        return largest_table(args.largest_under, args.steps, args.only, args.eager_batch,
                             args.model)
    # act's rows start with an empty code cache (compiled in the process);
    # the "cache warm" rows are a second process finding the step there
    # (docs/Running.md, "The code cache").
    rows = [("PyTorch eager", "eager", "none"), ("act.compile, none", "compile", "none"),
            (f"act.compile, {args.encoding}", "compile", args.encoding),
            (f"act.compile, {args.encoding}, cache warm", "compile", args.encoding),
            (f"act.Module, {args.encoding}", "module", args.encoding),
            (f"act.Module, {args.encoding}, cache warm", "module", args.encoding)]
    print(f"| {args.model}, batch {args.batch}, {args.steps} steps | process peak RSS | "
          f"RSS after import torch | peak after compile | RSS at the end | step's own peak |")
    print("|---|---|---|---|---|---|")
    eager = None
    with tempfile.TemporaryDirectory(prefix="act-rss-cache-") as cache:
        for label, mode, encoding in rows:
            m = measure(mode, encoding, args.batch, args.steps, cache, args.model)
            eager = eager or m
            mib = 2 ** 20
            print(f"| {label} | {m['peak_rss'] / mib:.0f} MiB "
                  f"({m['peak_rss'] / eager['peak_rss']:.2f}x eager) | "
                  f"{m['after_import'] / mib:.0f} MiB | {m['after_compile'] / mib:.0f} MiB | "
                  f"{m['rss_now'] / mib:.0f} MiB | {m['step_peak'] / mib:.1f} MiB |", flush=True)


if __name__ == "__main__":
    main()
