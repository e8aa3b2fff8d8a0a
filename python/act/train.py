"""Train with act: a compiled, compressed step in an ordinary PyTorch loop,
next to PyTorch eager on the same data, initial weights and batches.

    python3 -m act.train TASK [--encoding E;E;...] [--epochs N]
                         [--seeds S,S,...] [--batch B] [--lr LR]
                         [--pfq-eps 0.05] [--pfq-alpha 0.3] [--pfq-window 5]
                         [--adapt-interval N] [--adapt-backoff F] [--adapt-batches K]
                         [--sensitivity variance|error]
                         [--processes P] [--schedule constant|cosine]
                         [--log FILE.jsonl [--resume]] [--plot FILE.svg]

TASK: a name of TASKS (digits-mlp, digits-cnn, digits-vgg, fmnist-cnn,
fmnist-resnet20, fmnist-vit, python-lm, python-lm-large; docs/Training.md).
The digits tasks train on the handwritten digits scikit-learn ships
(sklearn.datasets.load_digits, 1,797 8x8 images, no download; fixed split:
a permutation by
numpy.random.RandomState(0), the first 1,437 images train, the other 360
test), the fmnist tasks on Debian's Fashion-MNIST, python-lm on the standard
library's sources. Prints, per configuration (PyTorch eager fp32, and act
with each encoding; "none" is act without encodings), the final test
accuracy as mean +- std over the seeds, the measured peak of act's step and
its median step time.

FracTrain: a configuration may end in "+compute=F/B" (the contractions'
operands quantized at F forward / B backward bits, act-quantize-compute) or
"+pfq=STAGES" (PFQ: the stages in order, switched when the epoch loss
plateaus, FracTrain Alg. 1, act.pfq). A stage is "F/B" (compute bits),
"@S" (the saved activations' #act.quant at S bits) or "F/B@S" (both):
"#act.quant<bits=2>+pfq=@2,@4,@8" raises the saved-activation bits,
"none+pfq=3/6,4/8,6/12,8/16" the compute precision. The table then gives
FracTrain's computational cost (effective MACs over the run) saved against
fp32 and against fixed FW-8/BW-8, and the saved bytes averaged over the
steps.

GACT: "average-bits=B" allocates bits per tensor from sensitivities act-run
measures; with --adapt-interval N it measures again every N steps (on the
newest batch, the last K for the gradient variance; F times later after
a re-allocation that changed nothing, at most 8 N) and swaps in the
re-allocated step (GACT's adaptive loop; the table gives the allocations,
how many changed, the variance alerts and the share of training time
adapting took, apart from the first step's compile, which every
configuration pays, and with it).

Data-parallel: --processes P splits every batch over P processes
(torch.distributed, gloo on localhost); each runs its act step on its
share and the gradients are all-reduced (weighted by share) before the
optimizer, so the update is the whole batch's.

A progress bar (tqdm) runs on a terminal; --log writes every run's epochs
(loss, test accuracy, seconds, peak, saved bytes, bits) and PFQ switches
as JSON lines, a line per run as it ends; --resume keeps the runs such a
log has (made by the same command) and runs only the others, so a long
table is made over several sittings; --plot draws the loss and accuracy
curves of all configurations and the PFQ schedules on one figure.
"""

import argparse
import functools
import json
import os
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .dfq import DFQ
from .pfq import PlateauSchedule, parse_schedule, parse_stages
from .training import compile as act_compile


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    # A fixed shuffle (the file is ordered by writer: its last 360 images
    # come from writers the first 1,437 barely cover).
    order = torch.from_numpy(np.random.RandomState(0).permutation(len(y)))
    x, y = x[order], y[order]
    return (x[:1437], y[:1437]), (x[1437:], y[1437:])


def digits_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))


def digits_cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def digits_vgg():
    """Two VGG-style stages (3x3 convolution, BatchNorm, ReLU, 2x2 max
    pool) and a linear classifier: 99 +- 0.4 % in eager PyTorch at the
    digits recipe, where digits-cnn's global average pool leaves it
    under-fitted and seed-sensitive (91 +- 9 %)."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10))


FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def _idx(path):
    """An idx file (gzipped), as a uint8 array of its dimensions."""
    import gzip
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(root=FASHION_MNIST):
    """Zalando's Fashion-MNIST (60,000 training and 10,000 test 28x28
    grayscale images, 10 classes) from Debian's dataset-fashion-mnist:
    pixels in [0, 1], normalized by the training set's mean and standard
    deviation."""
    names = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
             "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}
    missing = [n for pair in names.values() for n in pair
               if not os.path.exists(os.path.join(root, n))]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST not found in {root} (missing {', '.join(missing)}): install "
            f"Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist)")
    split = {}
    for part, (images, labels) in names.items():
        x = torch.from_numpy(_idx(os.path.join(root, images)).astype(np.float32) / 255.0)
        y = torch.from_numpy(_idx(os.path.join(root, labels)).astype(np.int64))
        split[part] = (x.unsqueeze(1), y)
    mean, std = split["train"][0].mean(), split["train"][0].std()
    return tuple(((x - mean) / std, y) for x, y in (split["train"], split["test"]))


def fashion_cnn():
    """Four 3x3 convolutions with BatchNorm, two max pools, two linear
    layers with dropout: the CNN a practitioner writes first for
    Fashion-MNIST (bench/compile_time/fmnist_cnn.py compiles it)."""
    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
    return nn.Sequential(*block(1, 32), *block(32, 32), nn.MaxPool2d(2),
                         *block(32, 64), *block(64, 64), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(128, 10))


class ResidualBlock(nn.Module):
    """ResNet's basic block (He et al. 2016): two 3x3 conv-BatchNorm layers
    and the input added back, through a 1x1 conv-BatchNorm projection where
    the shape changes (the paper's option B)."""

    def __init__(self, i, o, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(i, o, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(o)
        self.shortcut = nn.Sequential()
        if stride != 1 or i != o:
            self.shortcut = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False),
                                          nn.BatchNorm2d(o))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def fashion_resnet20():
    """ResNet-20 (the paper's CIFAR network: a 3x3 stem, three stages of
    three basic blocks with 16, 32 and 64 channels, global average pooling,
    one linear layer) on 28x28 grayscale images: stages at 28, 14 and 7
    pixels."""
    layers = [nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    channels = 16
    for width, stride in ((16, 1), (32, 2), (64, 2)):
        for b in range(3):
            layers.append(ResidualBlock(channels, width, stride if b == 0 else 1))
            channels = width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


# The character-level language model: text the Python standard library's
# sources ship (Debian's libpython3.11-stdlib; no download).
CONTEXT = 64
# Characters: newline, then printable ASCII (space to '~'); anything else
# (tabs, non-ASCII) is one "other" symbol.
VOCAB = 97


def python_sources(root=None):
    """The .py files at the top of the running Python's standard library
    (sorted by name); every 10th (names 0, 10, 20, ... in that order) is
    validation, the rest training: a fixed split by file."""
    import sysconfig
    root = root or sysconfig.get_paths()["stdlib"]
    names = sorted(f for f in os.listdir(root) if f.endswith(".py"))
    if len(names) < 20:
        raise RuntimeError(f"{root}: too few Python sources for the language model "
                           f"({len(names)} .py files)")
    train = [os.path.join(root, n) for i, n in enumerate(names) if i % 10]
    valid = [os.path.join(root, n) for i, n in enumerate(names) if not i % 10]
    return train, valid


def encode_text(paths):
    """The files' bytes, concatenated, as character ids (int64)."""
    data = np.frombuffer(b"".join(open(p, "rb").read() for p in paths), dtype=np.uint8)
    ids = np.full(data.shape, VOCAB - 1, dtype=np.int64)
    printable = (data >= 32) & (data <= 126)
    ids[printable] = data[printable].astype(np.int64) - 31
    ids[data == 10] = 0
    return ids


def windows(ids, count=None):
    """Non-overlapping windows of CONTEXT characters (inputs) and the same
    windows shifted by one (next-character targets); `count` evenly spaced
    windows when given."""
    n = (len(ids) - 1) // CONTEXT
    starts = np.arange(n) * CONTEXT
    if count is not None and count < n:
        starts = starts[np.linspace(0, n - 1, count).astype(np.int64)]
    idx = starts[:, None] + np.arange(CONTEXT)[None, :]
    return torch.from_numpy(ids[idx]), torch.from_numpy(ids[idx + 1])


def python_text():
    train, valid = python_sources()
    return windows(encode_text(train)), windows(encode_text(valid), count=256)


class Block(nn.Module):
    """A pre-norm transformer block: LayerNorm, multi-head self-attention
    written out (causal, GPT's, through an additive mask buffer when
    `context` is given; every token sees every other, ViT's, when it is
    None), LayerNorm, GELU MLP."""

    def __init__(self, d, heads, context=None):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads
        self.causal = context is not None
        if self.causal:
            self.register_buffer("mask",
                                 torch.triu(torch.full((context, context), float("-inf")), 1))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.n1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        if self.causal:
            att = att + self.mask[:T, :T]
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


class CharLM(nn.Module):
    """Character embeddings and learned positions, two GPT blocks (d 64, 4
    heads), a final LayerNorm and the next-character logits, (B * T) x
    VOCAB."""

    def __init__(self, d=64, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(0.02 * torch.randn(CONTEXT, d))
        self.blocks = nn.Sequential(*[Block(d, heads, CONTEXT) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, VOCAB)

    def forward(self, idx):
        B, T = idx.shape
        x = self.blocks(self.emb(idx) + self.pos[:T])
        return self.head(self.norm(x)).reshape(B * T, VOCAB)


class FashionViT(nn.Module):
    """A ViT-style classifier (Dosovitskiy et al. 2021) for 28x28 images:
    7x7 patches embedded by a strided convolution (16 tokens), learned
    positions, `layers` pre-norm blocks without a mask, a final LayerNorm,
    the tokens' mean, one linear layer."""

    def __init__(self, d=64, heads=4, layers=4, patch=7):
        super().__init__()
        self.embed = nn.Conv2d(1, d, patch, stride=patch)
        self.pos = nn.Parameter(0.02 * torch.randn((28 // patch) ** 2, d))
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.blocks(x)).mean(1))


def next_character_loss(logits, targets):
    return F.cross_entropy(logits, targets.reshape(-1))


@dataclass
class Task:
    """A training task: data, model, loss, the metric reported on held-out
    data, and the recipe (optimizer, learning rate, batch, epochs; an epoch
    is one pass over the training set, or steps_per_epoch random batches)."""
    data: Callable
    model: Callable
    loss_fn: Callable = F.cross_entropy
    metric: str = "accuracy"  # or "loss": mean loss on the held-out data
    optimizer: str = "sgd"  # SGD with momentum 0.9, or "adamw"
    lr: float = 0.05
    batch: int = 64
    epochs: int = 10
    steps_per_epoch: int = 0
    description: str = ""


TASKS = {
    "digits-mlp": Task(digits, digits_mlp,
                       description="test accuracy on 360 held-out digits"),
    "digits-cnn": Task(digits, digits_cnn,
                       description="test accuracy on 360 held-out digits"),
    "digits-vgg": Task(digits, digits_vgg,
                       description="test accuracy on 360 held-out digits"),
    "fmnist-cnn": Task(fashion_mnist, fashion_cnn, batch=128, epochs=10, lr=0.02,
                       description="test accuracy on Fashion-MNIST's 10,000 test images"),
    "fmnist-resnet20": Task(fashion_mnist, fashion_resnet20, batch=128, epochs=10, lr=0.05,
                            description="test accuracy on Fashion-MNIST's 10,000 test images"),
    # Issue 52: a transformer on the accuracy issue's images.
    "fmnist-vit": Task(fashion_mnist, FashionViT, optimizer="adamw", lr=1e-3, batch=128,
                       epochs=10,
                       description="test accuracy on Fashion-MNIST's 10,000 test images"),
    "python-lm": Task(python_text, CharLM, next_character_loss, metric="loss",
                      optimizer="adamw", lr=3e-3, batch=16, epochs=10, steps_per_epoch=100,
                      description="validation loss (nats per character) on 256 windows of "
                                  "64 characters from the standard library's validation files"),
    # The same recipe on a model 4x wider in its matmuls and twice as deep
    # (issue 52: conclusions not about one tiny model).
    "python-lm-large": Task(python_text, functools.partial(CharLM, d=128, layers=4),
                            next_character_loss, metric="loss", optimizer="adamw", lr=3e-3,
                            batch=16, epochs=10, steps_per_epoch=100,
                            description="python-lm's validation loss, CharLM with 4 blocks of "
                                        "width 128"),
}


# Examples evaluate() runs the model on at once: Fashion-MNIST's 10,000 test
# images in one batch took the process to 5.8 GB of resident memory (the
# convolutions' outputs at 10,000 images) for a metric computed per example.
EVALUATE_BATCH = 1000


# The fixed validation split's generator seed (act.train --validation N).
VALIDATION_SEED = 51


def validation_split(x, y, n):
    """A fixed split of a task's training data for tuning (act.train
    --validation N): N examples held out, the same ones in every run (a
    permutation from VALIDATION_SEED, not the run's seed), and the rest to
    train on. Returns ((x, y) to train on, (x, y) held out)."""
    if not 0 < n < len(x):
        raise ValueError(f"--validation takes between 1 and {len(x) - 1} of the "
                         f"{len(x)} training examples, not {n}")
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(VALIDATION_SEED))
    held, kept = order[:n], order[n:]
    return (x[kept], y[kept]), (x[held], y[held])


def evaluate(task, model, x, y):
    """The task's metric on held-out data: accuracy, or the mean loss."""
    model.eval()
    with torch.no_grad():
        if task.metric == "accuracy":
            correct = sum(int((model(x[i:i + EVALUATE_BATCH]).argmax(1)
                               == y[i:i + EVALUATE_BATCH]).sum())
                          for i in range(0, len(x), EVALUATE_BATCH))
            value = correct / len(x)
        else:
            value = statistics.mean(float(task.loss_fn(model(x[i:i + 64]), y[i:i + 64]))
                                    for i in range(0, len(x), 64))
    model.train()
    return value


def saved_encoding(encoding, bits):
    """`encoding` (an #act.quant) at `bits` bits; #act.quant<bits=B>
    when it is none."""
    if encoding and encoding.startswith("#act.quant") and "bits" in encoding:
        return re.sub(r"bits\s*=\s*\d+", f"bits={bits}", encoding)
    if encoding in (None, "none") or encoding.startswith("#act.quant"):
        return f"#act.quant<bits={bits}>"
    raise ValueError(f"PFQ's saved-activation bits apply to #act.quant, not {encoding}")


def _average_bits(encoding):
    """"average-bits=B" or "average-bits=B,stats=bf16" (the allocation's
    #act.quant group statistics in bf16): (B, the statistics' format)."""
    spec = encoding[len("average-bits="):]
    budget, *options = spec.split(",")
    stats = "f32"
    for option in options:
        key, _, value = option.partition("=")
        if key.strip() != "stats" or value.strip() not in ("f32", "bf16"):
            raise ValueError(f"{encoding!r}: after average-bits=B, only stats=f32 or "
                             f"stats=bf16 (got {option!r})")
        stats = value.strip()
    try:
        return float(budget), stats
    except ValueError:
        raise ValueError(f"{encoding!r}: average-bits= takes a number of bits, "
                         f"not {budget!r}") from None


def progress(total, desc):
    """tqdm's bar on stderr (python3-tqdm); none when tqdm is missing or
    stderr is not a terminal."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not sys.stderr.isatty():
        class Silent:
            update = set_postfix = close = lambda self, *a, **k: None
        return Silent()
    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)


def train(task, encoding, seed, epochs=None, batch=None, lr=None, log=None, pfq=None,
          info=None, adapt_interval=0, adapt_batches=2, rank=0, world=1, steps_per_epoch=None,
          include=None, runtime_bits=None, device="cpu", recompute_cost=0, loss_head=None,
          adapt_backoff=2, sensitivity="variance", lr_schedule="constant", validation=0):
    """Trains `task` (a TASKS name) with act (encoding: an act encoding,
    "none" for act without encodings, or None for PyTorch eager;
    "+compute=F/B" or "+pfq=STAGES" appended for FracTrain); epochs, batch
    and lr (and steps_per_epoch, for tasks that sample batches) default to
    the task's recipe; log, a list, receives every step's loss. Returns (the task's metric on its
    held-out data: test accuracy or validation loss, act's measured step
    peak or None, median step seconds, a full batch's saved bytes (before,
    after; the first step's, of this process) or None).
    pfq: PlateauSchedule options (eps, alpha, window).
    info, a dict, receives FracTrain's cost and the PFQ epochs/switches.
    adapt_interval (average-bits=B only): GACT's adaptive loop, re-allocated
    every adapt_interval steps from the newest batch (adapt_batches and
    adapt_backoff, times later after one that changed nothing: act.compile's);
    runtime_bits: act.compile's (None: widths set at run time with the
    adaptive loop; False: a step compiled per allocation).
    rank, world: data-parallel training in a torch.distributed group of
    `world` processes (the caller has initialized it): every process takes
    its share of each batch (numpy.array_split of the batch's indices),
    runs its own act step and the gradients are summed by all_reduce,
    weighted by share, so the update is the whole batch's, as one process
    would compute it.
    include: with a fixed encoding, the saved values' ids it applies to
    (act.compile's include=).
    recompute_cost: act.compile's (cheap saved values recomputed in the
    backward instead of stored); loss_head: act.compile's (the loss head's
    encoding).
    device: where the model and the batches are ("cuda": act.compile's
    step on CUDA tensors, eager on the GPU; the data set moved there once,
    step times measured to the device's completion).
    lr_schedule: "constant", or "cosine" (the learning rate annealed from
    lr to 0 over the run's steps, step by step: CosineAnnealingLR).
    validation: hold out this many training examples (validation_split,
    the same in every run) and report the metric on them instead of the
    test set: what anything tuned is chosen on."""
    schedule, compute_bits, dfq, targets = None, None, None, None
    if encoding is not None and "+dfq=" in encoding:
        # DFQ at a target cost; several targets: FracTrain (PFQ's plateau
        # rule moves through them, Alg. 2).
        encoding, _, targets = encoding.partition("+dfq=")
        targets = [float(t) for t in targets.split(",")]
        if len(targets) > 1:
            schedule = PlateauSchedule(targets, **(pfq or {}))
    elif encoding is not None and "+pfq=" in encoding:
        encoding, _, stages = encoding.partition("+pfq=")
        schedule = PlateauSchedule(parse_schedule(stages), **(pfq or {}))
        compute_bits = schedule.stage.compute
        if schedule.stage.saved:
            encoding = saved_encoding(encoding, schedule.stage.saved)
    elif encoding is not None and "+compute=" in encoding:
        encoding, _, bits = encoding.partition("+compute=")
        compute_bits = parse_stages(bits)[0]
    if world > 1 and (targets or schedule is not None):
        raise ValueError("data-parallel training runs fixed encodings and average-bits=B, "
                         "not PFQ or DFQ")
    name, task = task, TASKS[task]
    epochs = epochs or task.epochs
    batch = batch or task.batch
    lr = lr or task.lr
    (xtr, ytr), (xte, yte) = task.data()
    if validation:
        if task.metric != "accuracy":
            raise ValueError(f"{name} reports a validation loss on its own validation data; "
                             "validation= holds out training examples of an accuracy task")
        (xtr, ytr), (xte, yte) = validation_split(xtr, ytr, validation)
    device = torch.device(device)
    if device.type != "cpu" and world > 1:
        raise ValueError("data-parallel training runs on the CPU")
    xtr, ytr, xte, yte = (t.to(device) for t in (xtr, ytr, xte, yte))
    torch.manual_seed(seed)
    model = task.model().to(device)
    loss_fn = task.loss_fn
    if targets:
        model = dfq = DFQ(model, targets[0])  # (the gates after the same initial weights)
        loss_fn = dfq.loss_fn(task.loss_fn)
    if task.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    local = len(np.array_split(np.arange(batch), world)[rank])  # this process's share
    step = None
    if encoding is not None:
        # "ENCODING+few-bit=B": Few-bit codes where the backward reads
        # phi(x), ENCODING elsewhere; "average-bits=A+few-bit=B": few-bit
        # codes as the allocator's other family.
        encoding, _, few = encoding.partition("+few-bit=")
        few_bit = int(few) if few else 0
        if encoding.startswith("average-bits="):
            average_bits, stats = _average_bits(encoding)
            step = act_compile(model, task.loss_fn, xtr[:local], ytr[:local],
                               seed=seed + 1000 * rank, average_bits=average_bits, stats=stats,
                               few_bit=few_bit, adapt_interval=adapt_interval,
                               adapt_batches=adapt_batches, runtime_bits=runtime_bits,
                               recompute_cost=recompute_cost, loss_head=loss_head,
                               adapt_backoff=adapt_backoff, sensitivity=sensitivity)
        else:
            step = act_compile(model, loss_fn, xtr[:local], ytr[:local],
                               encoding=None if encoding == "none" else encoding,
                               seed=seed + 1000 * rank,
                               few_bit=few_bit, compute_bits=compute_bits, include=include,
                               recompute_cost=recompute_cost, loss_head=loss_head)
    gen = torch.Generator().manual_seed(seed)
    times = []
    epochs_log = []
    # An epoch: one pass over the training set in a random order, or
    # steps_per_epoch batches of windows drawn without replacement.
    steps_per_epoch = steps_per_epoch or task.steps_per_epoch
    samples = steps_per_epoch * batch if steps_per_epoch else len(xtr)
    batches = (samples + batch - 1) // batch
    if lr_schedule not in ("constant", "cosine"):
        raise ValueError(f"the learning rate schedule is constant or cosine, not {lr_schedule!r}")
    annealing = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * batches)
                 if lr_schedule == "cosine" else None)
    metric_key = ("validation_loss" if task.metric != "accuracy"
                  else "validation_accuracy" if validation else "test_accuracy")
    bar = progress(total=epochs * batches, desc=f"{name} {encoding or 'eager'} seed {seed}")
    train_start = time.perf_counter()
    full_saved = None
    for epoch in range(epochs):
        epoch_losses, epoch_costs = [], []
        epoch_start = time.perf_counter()
        saved_at_start = list(step.saved_sum) if step is not None else None
        calls_at_start = step.calls if step is not None else 0
        order = torch.randperm(len(xtr), generator=gen)[:samples]
        for start in range(0, samples, batch):
            idx = order[start:start + batch]
            share = len(idx)
            if world > 1:
                idx = torch.from_numpy(np.array_split(idx.numpy(), world)[rank])
            xb, yb = xtr[idx.to(device)], ytr[idx.to(device)]
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if step is None:
                loss = task.loss_fn(model(xb), yb)
                loss.backward()
            else:
                loss = step(xb, yb)
                if full_saved is None:
                    full_saved = step.saved_bytes  # a full batch's (per process)
            if world > 1:
                # The batch's mean loss and gradient: each process's mean
                # weighted by its share, summed over the group.
                import torch.distributed as dist
                weight = len(idx) / share
                grads = [p.grad for p in model.parameters() if p.grad is not None]
                flat = torch.cat([g.reshape(-1) for g in grads] + [loss.reshape(1)]) * weight
                dist.all_reduce(flat)
                offset = 0
                for g in grads:
                    g.copy_(flat[offset:offset + g.numel()].view_as(g))
                    offset += g.numel()
                loss = flat[-1]
            if dfq is not None:
                epoch_costs.append(dfq.control(len(xb), step.records if step else None))
                loss = loss - dfq.penalty  # the task's loss, without Eq. 2's penalty
            opt.step()
            if annealing is not None:
                annealing.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t)
            epoch_losses.append(float(loss))
            if log is not None:
                log.append(float(loss))
            bar.update(1)
        mean_loss = statistics.mean(epoch_losses)
        bar.set_postfix(loss=f"{mean_loss:.3f}")
        epochs_log.append({
            "epoch": epoch + 1, "loss": mean_loss,
            metric_key: evaluate(task, model, xte, yte),
            "seconds": time.perf_counter() - epoch_start,
            "lr": opt.param_groups[0]["lr"],  # (after the epoch's last step)
            "peak_bytes": step.last_peak_bytes if step is not None else None,
            # Mean over the epoch's steps (the last, partial batch included).
            "saved_bytes": (step.saved_sum[1] - saved_at_start[1])
            / max(step.calls - calls_at_start, 1) if step is not None else None,
            "compute_bits": list(step.compute_bits)
            if step is not None and step.compute_bits else None,
            "encoding": step.encoding if step is not None else None,
            # average-bits: the bits per tensor of the allocation in force
            # (GACT's adaptive loop changes it).
            "allocation_bits": step.adaptations[-1]["bits"]
            if step is not None and step.adaptations else None,
            # DFQ: the executed cost over fp32's (mean over the epoch's steps),
            # the target, and each layer's forward bits of the last step.
            "dfq_cost": statistics.mean(epoch_costs) if epoch_costs else None,
            "dfq_target": dfq.target_cost if dfq is not None else None,
            "dfq_forward_bits": {l.name: float(l.executed[0]) for l in dfq.layers}
            if dfq is not None else None})
        if dfq is not None:
            if schedule is not None and schedule.update(mean_loss):
                dfq.target_cost = schedule.stage
        elif schedule is not None and schedule.update(mean_loss):
            step.compute_bits = schedule.stage.compute
            if schedule.stage.saved:
                step.encoding = saved_encoding(step.encoding, schedule.stage.saved)
    bar.close()
    train_seconds = time.perf_counter() - train_start
    if info is not None:
        info["epochs"] = epochs_log
        if world > 1:
            # The processes must end with the same parameters.
            import hashlib
            info["parameters_sha1"] = hashlib.sha1(b"".join(
                p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
        if step is not None and step.adaptations:
            # GACT: every (re-)allocation (bits per tensor, variances, alert)
            # and what adapting cost against the whole training loop (the
            # first allocation, made before the loop, included).
            info["adaptations"] = step.adaptations
            info["adapt_seconds"] = step.adapt_seconds
            info["train_seconds"] = train_seconds
            # (the first allocation's compile of its step is outside both,
            # as a fixed encoding's compile is outside its training time;
            # adapt_fraction_total counts it)
            first = step.adaptations[0]
            info["adapt_overhead_seconds"] = step.adapt_overhead_seconds
            info["adapt_fraction"] = step.adapt_overhead_seconds / (
                train_seconds + first["seconds"] - first["compile_seconds"])
            info["adapt_fraction_total"] = step.adapt_seconds / (train_seconds + first["seconds"])
        if schedule is not None:
            info["switches"] = [{"epoch": e, "stage": str(st), "eps": eps}
                                for e, st, eps in schedule.switches]
        if step is not None and step.calls:
            info["saved_sum"] = list(step.saved_sum)
        if dfq is not None and dfq.fp32_macs:
            # The executed cost: the bits the gates chose, batch by batch.
            info["effective_macs"] = dfq.executed_macs
            info["fp32_macs"] = dfq.fp32_macs
            info["saved_vs_fp32"] = 1 - dfq.executed_macs / dfq.fp32_macs
            info["saved_vs_8bit"] = 1 - dfq.executed_macs / (dfq.fp32_macs / 16)
        elif step is not None and step.fp32_macs:
            # FW-8/BW-8: every operand at 8 bits.
            info["effective_macs"] = step.effective_macs
            info["fp32_macs"] = step.fp32_macs
            info["saved_vs_fp32"] = 1 - step.effective_macs / step.fp32_macs
            info["saved_vs_8bit"] = 1 - step.effective_macs / (step.fp32_macs / 16)
    return evaluate(task, model, xte, yte), (step.peak_bytes if step else None), \
        statistics.median(times), full_saved


def _distributed_worker(rank, world, port, kwargs, out):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        warnings.simplefilter("ignore")
        info = {"seed": kwargs["seed"], "rank": rank}
        result = train(**kwargs, info=info, rank=rank, world=world)
        with open(f"{out}.{rank}", "w") as f:
            json.dump({"result": result, "info": info}, f)
    finally:
        dist.destroy_process_group()


def train_distributed(processes, **kwargs):
    """train(**kwargs) data-parallel in `processes` processes on this
    machine (torch.distributed, gloo over localhost TCP): returns rank 0's
    result and info, after checking every rank ended with the same
    parameters."""
    import socket
    import tempfile
    import torch.multiprocessing as mp
    with socket.socket() as sock:  # a free port for the group's rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="act-train-") as tmp:
        out = os.path.join(tmp, "rank")
        mp.spawn(_distributed_worker, args=(processes, port, kwargs, out), nprocs=processes,
                 join=True)
        ranks = []
        for r in range(processes):
            with open(f"{out}.{r}") as f:
                ranks.append(json.load(f))
    hashes = {r["info"]["parameters_sha1"] for r in ranks}
    if len(hashes) != 1:
        raise RuntimeError(f"the {processes} processes ended with different parameters")
    acc, peak, t, saved = ranks[0]["result"]
    info = ranks[0]["info"]
    info["processes"] = processes
    return (acc, peak, t, tuple(saved) if saved else None), info


def plot(runs, path, title):
    """Loss and test accuracy per epoch (mean over seeds) of every
    configuration on one figure; beside them the PFQ schedules (each seed's
    stage bits per epoch) and DFQ's executed cost against its target."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bits_runs = [(n, infos) for n, infos in runs
                 if any(e.get("compute_bits") or e.get("encoding") for i in infos
                        for e in i["epochs"]) and any("switches" in i for i in infos)]
    dfq_runs = [(n, infos) for n, infos in runs
                if any(e.get("dfq_cost") is not None for i in infos for e in i["epochs"])]
    gact_runs = [(n, infos) for n, infos in runs
                 if len(infos[0].get("adaptations", [])) > 1]
    panels = 2 + bool(bits_runs) + bool(dfq_runs) + len(gact_runs)
    fig, axes = plt.subplots(1, panels, figsize=(4.4 * panels, 3.6))
    metric = next(k for k in ("test_accuracy", "validation_accuracy", "validation_loss")
                  if k in runs[0][1][0]["epochs"][0])
    for name, infos in runs:
        epochs = [e["epoch"] for e in infos[0]["epochs"]]
        for ax, key in zip(axes, ("loss", metric)):
            ax.plot(epochs, [statistics.mean(i["epochs"][k][key] for i in infos)
                             for k in range(len(epochs))], label=name, lw=1.2)
    axes[0].set_yscale("log")
    axes[0].set_title("training loss (mean over seeds)", fontsize=9)
    axes[1].set_title(f"{metric.replace('_', ' ')} (mean over seeds)", fontsize=9)
    for ax in axes:
        ax.set_xlabel("epoch")
    axes[1].legend(fontsize=6, loc="upper right" if metric == "validation_loss" else "lower right")
    k = 2
    if bits_runs:
        ax = axes[k]
        k += 1
        for name, infos in bits_runs:
            for i in infos:
                epochs = [e["epoch"] for e in i["epochs"]]
                if any(e["compute_bits"] for e in i["epochs"]):
                    ax.step(epochs, [e["compute_bits"][0] if e["compute_bits"] else 32
                                     for e in i["epochs"]], where="post", lw=1,
                            label=f"{name} seed {i['seed']}: forward bits")
                bits = [int(re.search(r"bits\s*=\s*(\d+)", e["encoding"]).group(1))
                        if e["encoding"] and "bits" in e["encoding"] else None
                        for e in i["epochs"]]
                if any(b is not None for b in bits):
                    ax.step(epochs, bits, where="post", lw=1, ls="--",
                            label=f"{name} seed {i['seed']}: saved bits")
                for sw in i.get("switches", []):
                    ax.axvline(sw["epoch"] + 1, color="grey", lw=0.5, alpha=0.5)
        ax.set_title("PFQ schedule (grey: first epoch of a new stage)", fontsize=9)
        ax.legend(fontsize=6)
    if dfq_runs:
        ax = axes[k]
        for name, infos in dfq_runs:
            epochs = [e["epoch"] for e in infos[0]["epochs"]]
            line, = ax.plot(epochs, [100 * statistics.mean(i["epochs"][j]["dfq_cost"]
                                                           for i in infos)
                                     for j in range(len(epochs))], lw=1.2,
                            label=f"{name}: executed")
            ax.step(epochs, [100 * infos[0]["epochs"][j]["dfq_target"]
                             for j in range(len(epochs))], where="post", ls=":",
                    color=line.get_color(), lw=1, label=f"{name}: target (seed {infos[0]['seed']})")
        ax.set_title("DFQ: cost, % of fp32 (mean over seeds)", fontsize=9)
        ax.legend(fontsize=6)
        k += 1
    for name, infos in gact_runs:
        # GACT's adaptive loop: each tensor's bits at every re-allocation
        # (the first seed; the full-size batches' allocations).
        ax = axes[k]
        k += 1
        info = infos[0]
        first = info["adaptations"][0]["shapes"]
        allocs = [x for x in info["adaptations"] if x["shapes"] == first]
        ids = sorted({t for x in allocs for t in x["bits"]}, key=int)
        steps = [x["call"] for x in allocs]
        for j, t in enumerate(ids):
            bits = [x["bits"].get(t) for x in allocs]
            # A small offset keeps tensors with equal bits apart.
            ax.step(steps, [b * (1 + 0.03 * (j - len(ids) / 2)) if b else None
                            for b in bits], where="post", lw=1, label=f"tensor {t}")
        for x in allocs:
            if x["alert"]:
                ax.axvline(x["call"], color="red", lw=0.5, alpha=0.5)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("step")
        ax.set_title(f"{name}: bits per tensor (seed {info['seed']}; red: alert)", fontsize=8)
        ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def logged_runs(path, options):
    """The runs of act.train's --log `path` (JSON lines; none when it does
    not exist yet) by (configuration, seed), for --resume: every run must
    have been made with `options` (the recipe and the options that change
    a result); a last line cut off mid-write (the run that was stopped) is
    dropped, from the file too (the next run's line goes after the last
    whole one). ValueError naming the line otherwise."""
    runs = {}
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):  # (no newline after it: cut off)
                print(f"{path}:{number}: a run cut off mid-write, run again", file=sys.stderr)
                with open(path, "w") as f:
                    f.write("\n".join(lines[:-1]) + "\n" if number > 1 else "")
                continue
            raise ValueError(f"{path}:{number}: not a JSON line ({e})") from None
        if not isinstance(run, dict) or "median_step_seconds" not in run:
            raise ValueError(f"{path}:{number}: not a run of act.train's --log with its "
                             f"step time and peak (written before --resume existed?)")
        if run.get("options") != options:
            theirs = run.get("options") or {}
            differ = sorted(k for k in set(options) | set(theirs)
                            if options.get(k) != theirs.get(k))
            raise ValueError(f"{path}:{number}: made with other options ({', '.join(differ)}: "
                             + ", ".join(f"{theirs.get(k)!r} there, {options.get(k)!r} here"
                                         for k in differ)
                             + "); resume with the same command, or start another log")
        runs[(run["configuration"], run["seed"])] = run
    return runs


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m act.train", description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS))
    p.add_argument("--encoding", default="none;#act.quant<bits=8>;#act.quant<bits=4>;"
                   "#act.quant<bits=2>;#act.float<format=bf16>;average-bits=2",
                   help="';'-separated: none, an act encoding, ENCODING+few-bit=B (few-bit "
                        "codes where the backward reads an activation's derivative, "
                        "ENCODING elsewhere), or average-bits=B (GACT's allocation from "
                        "measured sensitivities; average-bits=B,stats=bf16: its group "
                        "statistics in bf16; average-bits=B+few-bit=F: few-bit codes "
                        "of F bits are the allocator's choice too); '' for the "
                        "eager row alone")
    p.add_argument("--epochs", type=int, help="default: the task's (10)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--batch", type=int, help="default: the task's (digits 64, python-lm 16)")
    p.add_argument("--lr", type=float, help="default: the task's (digits: SGD 0.05 with "
                   "momentum 0.9, python-lm: AdamW 3e-3)")
    p.add_argument("--pfq-eps", type=float, default=0.05)
    p.add_argument("--pfq-alpha", type=float, default=0.3)
    p.add_argument("--pfq-window", type=int, default=5)
    p.add_argument("--adapt-interval", type=int, default=0,
                   help="average-bits=B: GACT's adaptive loop, re-measure and re-allocate "
                        "every N steps (0: once per batch shape)")
    p.add_argument("--adapt-backoff", type=int, default=2,
                   help="after a re-allocation that changed nothing, the next waits this many "
                        "times longer (at most 8 intervals; 1: every N steps)")
    p.add_argument("--sensitivity", choices=["variance", "error"], default="variance",
                   help="average-bits=B: what each tensor's sensitivity measures: GACT's "
                        "variance (seed re-draws) or its error alone against the step without "
                        "compression, bias included (act.compile's sensitivity=)")
    p.add_argument("--adapt-batches", type=int, default=2,
                   help="a re-estimation measures each tensor on the newest batch; the last "
                        "K batches give the gradient variance (the variance alert's)")
    p.add_argument("--runtime-bits", choices=["auto", "always", "never"], default="auto",
                   help="average-bits=B with --adapt-interval: a re-allocation sets the "
                        "step's widths at run time from the first allocation (always), from "
                        "the first that moves (auto), or compiles a step per allocation "
                        "(never): act.compile's runtime_bits=True/None/False")
    p.add_argument("--recompute-cost", type=float, default=0,
                   help="act.compile's recompute_cost=: saved values whose producers cost at "
                        "most this many operations per byte are recomputed in the backward "
                        "instead of stored (about 20: LayerNorm and GELU outputs and a small "
                        "attention's probabilities); with average-bits=B the budget stays "
                        "B bits per element stored without it")
    p.add_argument("--loss-head",
                   help="act.compile's loss_head=: the encoding of the loss head's saved "
                        "values (the logits' bias, softmax, loss), e.g. "
                        "'#act.float<format = bf16>'; default: float32")
    p.add_argument("--processes", type=int, default=1,
                   help="data-parallel: each batch split over N processes (torch.distributed, "
                        "gloo), gradients all-reduced after act's step")
    p.add_argument("--device", default="cpu",
                   help="where the model and batches are: cpu, or cuda (act.compile's step on "
                        "CUDA tensors, next to eager on the same GPU)")
    p.add_argument("--no-eager", action="store_true",
                   help="leave out the PyTorch eager row (the relative validation loss is "
                        "then against the first configuration)")
    p.add_argument("--log", help="write every run's epochs (loss, test accuracy, time, peak, "
                   "saved bytes, bits) and PFQ switches as JSON lines")
    p.add_argument("--validation", type=int, default=0, metavar="N",
                   help="hold out N training examples (the same ones in every run) and report "
                        "the accuracy on them instead of the test set: for anything tuned")
    p.add_argument("--schedule", choices=["constant", "cosine"], default="constant",
                   help="the learning rate over the run: constant, or cosine (annealed to 0 "
                        "step by step)")
    p.add_argument("--resume", action="store_true",
                   help="with --log: keep the runs the log already has (the same command's: "
                        "its recipe and options must match), run only the missing ones and "
                        "append them; the table covers all")
    p.add_argument("--plot", help="write the loss and accuracy curves of every configuration "
                   "and the PFQ schedules to this .svg/.png")
    a = p.parse_args(argv)
    if a.resume and not a.log:
        p.error("--resume needs --log (the runs to keep are the log's)")
    pfq = {"eps": a.pfq_eps, "alpha": a.pfq_alpha, "window": a.pfq_window}
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in a.seeds.split(",")]
    task = TASKS[a.task]
    epochs, batch, lr = a.epochs or task.epochs, a.batch or task.batch, a.lr or task.lr
    # What a logged run must share with this command for --resume to keep it.
    options = {"task": a.task, "epochs": epochs, "batch": batch, "lr": lr,
               "schedule": a.schedule, "adapt_interval": a.adapt_interval,
               "adapt_backoff": a.adapt_backoff, "adapt_batches": a.adapt_batches,
               "sensitivity": a.sensitivity, "runtime_bits": a.runtime_bits,
               "recompute_cost": a.recompute_cost, "loss_head": a.loss_head,
               "processes": a.processes, "device": a.device,
               "pfq": [a.pfq_eps, a.pfq_alpha, a.pfq_window]}
    if a.validation:
        # (Refused here, before any run, as train() would refuse it in each.)
        if task.metric != "accuracy":
            p.error(f"--validation: {a.task} reports a validation loss on its own "
                    "validation data; --validation holds out training examples of an "
                    "accuracy task")
        try:
            validation_split(*task.data()[0], a.validation)
        except ValueError as e:
            p.error(str(e))
        options["validation"] = a.validation
    done = {}
    if a.resume:
        try:
            done = logged_runs(a.log, options)
        except ValueError as e:
            p.error(str(e))
    log = open(a.log, "a" if a.resume else "w") if a.log else None
    recipe = (f"AdamW lr {lr}" if task.optimizer == "adamw" else f"SGD lr {lr} momentum 0.9")
    if a.schedule == "cosine":
        recipe += ", cosine to 0"
    print(f"{a.task}: {epochs} epochs"
          + (f" of {task.steps_per_epoch} steps" if task.steps_per_epoch else "")
          + f", batch {batch}, {recipe}, seeds {seeds}; "
          + (f"accuracy on {a.validation} training examples held out (--validation)"
             if a.validation else task.description)
          + (f"; data-parallel over {a.processes} processes (torch.distributed, gloo)"
             if a.processes > 1 else ""))
    loss_metric = task.metric == "loss"
    column = ("validation loss" if loss_metric
              else "validation accuracy" if a.validation else "test accuracy")
    print(f"| configuration | {column} "
          "(mean +- std) | saved activations B | "
          "act step peak B | step ms | compute saved vs fp32 / vs FW-8/BW-8, or adaptation |")
    print("|---|---|---|---|---|---|")
    runs, reference = [], None
    encodings = [e for e in a.encoding.split(";") if e.strip()]
    if a.no_eager and not encodings:
        sys.exit("act.train: nothing to run: --no-eager and no --encoding")
    for enc in ([] if a.no_eager else [None]) + encodings:
        accs, peaks, times, saved, infos = [], [], [], None, []
        for s in seeds:
            info = {"seed": s}
            kwargs = dict(task=a.task, encoding=enc, seed=s, epochs=epochs, batch=batch,
                          lr=lr, pfq=pfq, adapt_interval=a.adapt_interval,
                          adapt_batches=a.adapt_batches, adapt_backoff=a.adapt_backoff,
                          sensitivity=a.sensitivity)
            if a.device != "cpu":
                kwargs["device"] = a.device
            if a.runtime_bits != "auto":
                kwargs["runtime_bits"] = a.runtime_bits == "always"
            if a.recompute_cost and enc is not None:
                kwargs["recompute_cost"] = a.recompute_cost
            if a.loss_head and enc is not None and enc != "none":
                kwargs["loss_head"] = a.loss_head
            if a.schedule != "constant":
                kwargs["lr_schedule"] = a.schedule
            if a.validation:
                kwargs["validation"] = a.validation
            metric = "validation_loss" if loss_metric else "accuracy"
            if (enc or "eager", s) in done:
                # (--resume: the log's run)
                run = dict(done[(enc or "eager", s)])
                acc, peak, t, saved = (run.pop(metric), run.pop("peak_bytes"),
                                       run.pop("median_step_seconds"), run.pop("saved_bytes"))
                info = {k: v for k, v in run.items()
                        if k not in ("configuration", "options")}
                print(f"(from {a.log}: {enc or 'eager'}, seed {s})", file=sys.stderr)
            else:
                if a.processes > 1:
                    (acc, peak, t, saved), info = train_distributed(a.processes, **kwargs)
                else:
                    acc, peak, t, saved = train(**kwargs, info=info)
                if log:
                    log.write(json.dumps({
                        "configuration": enc or "eager", "seed": s, metric: acc, **info,
                        "peak_bytes": peak, "median_step_seconds": t,
                        "saved_bytes": list(saved) if saved else None,
                        "options": options}) + "\n")
                    log.flush()
            accs.append(acc)
            peaks.append(peak)
            times.append(t)
            infos.append(info)
        name = "PyTorch eager fp32" if enc is None else f"act {enc}"
        runs.append((name, infos))
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        peak = f"{max(peaks):,}" if enc is not None else ""
        ratio = (f"{saved[1]:,} ({saved[0] / max(saved[1], 1):.1f}x smaller)" if saved else "")
        cost = ""
        if infos and "saved_vs_fp32" in infos[0]:
            cost = (f"{100 * statistics.mean(i['saved_vs_fp32'] for i in infos):.1f}% / "
                    f"{100 * statistics.mean(i['saved_vs_8bit'] for i in infos):.1f}%")
            switches = [[sw["epoch"] for sw in i.get("switches", [])] for i in infos]
            if any(switches):
                cost += f" (switches at epochs {switches})"
        if infos and len(infos[0].get("adaptations", [])) > 1:
            adaptations = [i["adaptations"] for i in infos]
            cost = (f"GACT: {statistics.mean(len(a) for a in adaptations):.0f} allocations, "
                    f"{statistics.mean(sum(x['changed'] for x in a) for a in adaptations):.0f}"
                    f" changed, {sum(bool(x['alert']) for a in adaptations for x in a)} "
                    f"alerts, adapting "
                    f"{100 * statistics.mean(i['adapt_fraction'] for i in infos):.1f}% of "
                    "training time (with the first step's compile "
                    f"{100 * statistics.mean(i['adapt_fraction_total'] for i in infos):.1f}%)")
            # What one re-estimation costs (measuring in process and
            # allocating), apart from the first allocation of each batch
            # shape, which compiles the measuring step.
            again = [x["seconds"] for a in adaptations for k, x in enumerate(a)
                     if x["shapes"] in [y["shapes"] for y in a[:k]]]
            if again:
                cost += f", {1000 * statistics.median(again):.0f} ms per re-estimation"
        if infos and "saved_sum" in infos[0] and (any(i.get("switches") for i in infos)
                                                  or len(infos[0].get("adaptations", [])) > 1):
            before = sum(i["saved_sum"][0] for i in infos)
            after = sum(i["saved_sum"][1] for i in infos)
            ratio += f" (over all steps {before / max(after, 1):.1f}x smaller)"
        if loss_metric:
            # The validation loss, and its mean relative to the first
            # configuration's (PyTorch eager's).
            mean = statistics.mean(accs)
            reference = reference or mean
            value = f"{mean:.4f} +- {std:.4f} ({100 * (mean / reference - 1):+.2f}%)"
        else:
            value = f"{100 * statistics.mean(accs):.2f} +- {100 * std:.2f} %"
        print(f"| {name} | {value} | {ratio} | "
              f"{peak} | {1000 * statistics.median(times):.2f} | {cost} |", flush=True)
    if a.plot:
        plot(runs, a.plot, f"{a.task}: {epochs} epochs, seeds {seeds}")
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
