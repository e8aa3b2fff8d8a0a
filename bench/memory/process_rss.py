"""The memory a user sees (issue 51): the peak resident memory of a whole
process training the Fashion-MNIST CNN (act.train's fmnist-cnn model) for a
few steps on random batches, with PyTorch eager, act.compile and act.Module,
each in a fresh process; next to each, the step's own peak (act's
allocation hooks; eager: the preloaded heap counter, act.mallocpeak) and
the process's resident memory after `import torch` alone.

    ACT_BIN_DIR=build/bin ACT_LIB_DIR=build/lib python3 bench/memory/process_rss.py \
        [--batch 128] [--steps 20] [--encoding "#act.quant<bits=4>"]
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
def rss():  # peak resident set so far, bytes
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
def rss_now():  # resident set now, bytes
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
after_import = rss()
import act
from act.train import fashion_cnn
mode, encoding, batch, steps = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
encoding = None if encoding == "none" else encoding
torch.manual_seed(0)
model = fashion_cnn()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
step_peak = 0
if mode == "compile":
    step = act.compile(model, F.cross_entropy, x, y, encoding=encoding)
elif mode == "module":
    wrapped = act.Module(model, x, encoding=encoding)
after_compile = rss()
for i in range(steps):
    opt.zero_grad(set_to_none=True)
    if mode == "eager":
        from act import mallocpeak
        mallocpeak.reset(); before = mallocpeak.live()
        F.cross_entropy(model(x), y).backward()
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


def measure(mode, encoding, batch, steps, cache):
    argv = [sys.executable, "-c", WORKER, os.path.abspath(PYTHON), mode, encoding, str(batch),
            str(steps)]
    env = dict(os.environ, ACT_PROGRESS="0", ACT_CACHE_DIR=cache)
    if mode == "eager":
        sys.path.insert(0, os.path.abspath(PYTHON))
        from act import mallocpeak
        env = mallocpeak.environment(env)
    run = subprocess.run(argv, capture_output=True, text=True, env=env)
    if run.returncode:
        sys.exit(f"{mode} failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--encoding", default="#act.quant<bits=4>")
    args = p.parse_args()
    # act's rows start with an empty code cache (compiled in the process);
    # the "cache warm" rows are a second process finding the step there
    # (docs/Running.md, "The code cache").
    rows = [("PyTorch eager", "eager", "none"), ("act.compile, none", "compile", "none"),
            (f"act.compile, {args.encoding}", "compile", args.encoding),
            (f"act.compile, {args.encoding}, cache warm", "compile", args.encoding),
            (f"act.Module, {args.encoding}", "module", args.encoding),
            (f"act.Module, {args.encoding}, cache warm", "module", args.encoding)]
    print(f"| fmnist-cnn, batch {args.batch}, {args.steps} steps | process peak RSS | "
          f"RSS after import torch | peak after compile | RSS at the end | step's own peak |")
    print("|---|---|---|---|---|---|")
    eager = None
    with tempfile.TemporaryDirectory(prefix="act-rss-cache-") as cache:
        for label, mode, encoding in rows:
            m = measure(mode, encoding, args.batch, args.steps, cache)
            eager = eager or m
            mib = 2 ** 20
            print(f"| {label} | {m['peak_rss'] / mib:.0f} MiB "
                  f"({m['peak_rss'] / eager['peak_rss']:.2f}x eager) | "
                  f"{m['after_import'] / mib:.0f} MiB | {m['after_compile'] / mib:.0f} MiB | "
                  f"{m['rss_now'] / mib:.0f} MiB | {m['step_peak'] / mib:.1f} MiB |", flush=True)


if __name__ == "__main__":
    main()
