"""Three more models written outside act's model lists, as a user would:
a MobileNet-style block (depthwise convolution, Hardswish, ReLU6, adaptive
average pooling), an MLP-Mixer (LayerNorm, GELU, token mixing through
transposes) and a 1-D audio net (Conv1d, GroupNorm, SiLU, max pooling,
LeakyReLU, amax). Each is exported at batch 8 and stepped by act-run
without encodings and at uniform 4 and 2 bits (one thread): the largest
gradient error against the exporter's float64 reference over the norm of
all gradients, act-run's measured peak, and the step's time next to
PyTorch 1.13 eager forward + loss + backward (one thread, same run).
docs/benchmarks.md, "A user's CNN".

    /usr/bin/python3 bench/memory/outside_models.py [--runs 20]

Exit status 1 when a model does not export or run, or when a step without
encodings is off the reference by more than 1e-4.
"""

import argparse
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402
from act.peer import torch_step_ms  # noqa: E402


class DWNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.pw = nn.Conv2d(16, 32, 1)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.hardswish(self.bn(self.stem(x)))
        x = F.relu6(self.pw(self.dw(x)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def dwnet(batch):
    torch.manual_seed(0)
    return DWNet(), torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))


class Mixer(nn.Module):
    def __init__(self, tokens=16, dim=32):
        super().__init__()
        self.embed = nn.Linear(12, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 64), nn.GELU(), nn.Linear(64, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.ch = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, dim))
        self.head = nn.Linear(dim, 5)

    def forward(self, x):
        x = self.embed(x)
        x = x + self.tok(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.ch(self.norm2(x))
        return self.head(x.mean(dim=1))


def mixer(batch):
    torch.manual_seed(0)
    return Mixer(), torch.randn(batch, 16, 12), torch.randint(0, 5, (batch,))


class Audio(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 16, 9, padding=4)
        self.gn = nn.GroupNorm(4, 16)
        self.c2 = nn.Conv1d(16, 32, 5, stride=2, padding=2)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        x = F.max_pool1d(F.silu(self.gn(self.c1(x))), 2)
        x = F.leaky_relu(self.c2(x), 0.1)
        return self.fc(x.amax(dim=2))


def audio(batch):
    torch.manual_seed(0)
    return Audio(), torch.randn(batch, 1, 256), torch.randint(0, 4, (batch,))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--runs", type=int, default=20, help="steps per time")
    args = p.parse_args()
    print("| model | config | gradient error | act-run peak | peak / none | act step | "
          "PyTorch eager | act / PyTorch |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in ["dwnet", "mixer", "audio"]:
            spec = f"{os.path.abspath(__file__)}:{name}"
            out = os.path.join(tmp, name)
            manifest = export(spec, args.batch, 0, out)
            reference = driver.reference(manifest)
            count = 1 + manifest["parameters"]
            peer = torch_step_ms(spec, args.batch, 1, args.runs)
            base = None
            for config, options in [("none", "policy=none"),
                                    ("uniform 4", "encoding=#act.quant<bits=4>"),
                                    ("uniform 2", "encoding=#act.quant<bits=2>")]:
                mlir = driver.insert(manifest["files"]["joint"],
                                     os.path.join(out, f"{config[-4:].strip()}.mlir"), options)
                results, peak, ms = driver.step(mlir, manifest["inputs"],
                                                os.path.join(out, config[-4:].strip()), count,
                                                f"--repeat={args.runs}", "--threads=1")
                _, error, _ = driver.scaled_errors(results, reference, manifest["parameters"])
                base = base or peak
                if config == "none" and error > 1e-4:
                    failed = True
                print(f"| {name} | {config} | {error:.1e} | {peak:,} B | {peak / base:.2f} | "
                      f"{ms:.2f} ms | {peer:.2f} ms | {ms / peer:.2f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
