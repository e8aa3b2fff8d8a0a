"""The models the exporter covers, each a training step on seeded data.

A workload is a module, an input batch, its targets and a loss. A user's own
model is given as `file.py:factory`: `factory(batch_size)` returns
`(module, inputs, targets)` or `(module, inputs, targets, loss_fn)`; the loss
defaults to cross-entropy.
"""

import importlib.util
import inspect
import os

import torch
import torch.nn as nn

from .workload import Workload, not_tensors, rebuilt, tensors_of
from .zoo import ZOO

__all__ = ["MODELS", "Workload", "load", "not_tensors", "rebuilt", "tensors_of"]


def _classification_batch(batch, shape, classes=10):
    return torch.randn(batch, *shape), torch.randint(0, classes, (batch,))


def mlp(batch):
    """Flatten, Linear(64, 128), GELU, Linear(128, 10): digits-sized input."""
    module = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))
    return (module, *_classification_batch(batch, (1, 8, 8)))


def cnn(batch):
    """Two conv-ReLU-maxpool stages and a linear classifier."""
    module = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10))
    return (module, *_classification_batch(batch, (1, 8, 8)))


def without_running_stats(module):
    """BatchNorm normalizes with the batch's statistics only (the running
    statistics are not part of a training step's gradient)."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.track_running_stats = False
            m.running_mean = m.running_var = m.num_batches_tracked = None
    return module


def resnet18(batch):
    """torchvision's resnet18 (10 classes) on 32x32 RGB images."""
    import torchvision
    module = without_running_stats(torchvision.models.resnet18(num_classes=10))
    return (module, *_classification_batch(batch, (3, 32, 32)))


class EncoderBlock(nn.Module):
    """A pre-norm transformer encoder block with a classification head:
    LayerNorm, multi-head self-attention, residual, LayerNorm, GELU MLP,
    residual, mean over the sequence, linear."""

    def __init__(self, dim=32, heads=4, classes=10):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(x.mean(1))


def transformer(batch):
    return (EncoderBlock(), *_classification_batch(batch, (8, 32)))


MODELS = {"mlp": mlp, "cnn": cnn, "resnet18": resnet18, "transformer": transformer}


def load(spec, batch, seed):
    """A named model or `file.py:factory`, built under torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    if spec.startswith("zoo."):
        if spec[4:] not in ZOO:
            raise ValueError(f"unknown zoo model '{spec[4:]}' (one of {', '.join(ZOO)})")
        name, made = spec[4:], ZOO[spec[4:]](batch)
    elif spec in MODELS:
        name, made = spec, MODELS[spec](batch)
    elif ":" in spec:
        path, factory = spec.rsplit(":", 1)
        if not os.path.exists(path):
            raise ValueError(f"model file '{path}' does not exist")
        mod_spec = importlib.util.spec_from_file_location("act_user_model", path)
        if mod_spec is None:
            raise ValueError(f"'{path}' is not a Python file")
        mod = importlib.util.module_from_spec(mod_spec)
        try:
            mod_spec.loader.exec_module(mod)
        except Exception as e:
            raise ValueError(f"'{path}' raised {type(e).__name__} when imported: {e}") from None
        if not hasattr(mod, factory):
            raise ValueError(f"'{path}' defines no '{factory}'")
        fn = getattr(mod, factory)
        try:
            made = fn(batch) if inspect.signature(fn).parameters else fn()
        except Exception as e:
            raise ValueError(f"the factory '{factory}' in '{path}' raised "
                             f"{type(e).__name__}: {e}") from None
        name = factory
    else:
        raise ValueError(f"unknown model '{spec}' (one of {', '.join(MODELS)}, or file.py:factory)")
    if not isinstance(made, tuple) or len(made) not in (3, 4) or not isinstance(made[0], nn.Module):
        raise ValueError(f"'{spec}' must give (module, inputs, targets[, loss_fn])")
    module, inputs, targets = made[:3]
    for what, value in (("inputs", inputs), ("targets", targets)):
        wrong = not_tensors(what, value)
        if wrong:
            raise ValueError(f"'{spec}': {wrong}")
    if isinstance(inputs, list) or isinstance(targets, list):
        made = (module, rebuilt(inputs, tensors_of(inputs)),
                rebuilt(targets, tensors_of(targets))) + tuple(made[3:])
        inputs, targets = made[1], made[2]
    if not any(p.requires_grad for p in module.parameters()):
        raise ValueError(f"'{spec}': the module has no trainable parameters, so a "
                         f"training step has nothing to compute")
    for what, t in (("module parameter", next(module.parameters())),
                    *(("input", x) for x in tensors_of(inputs))):
        if t.is_floating_point() and t.dtype != torch.float32:
            raise ValueError(f"'{spec}': a {what} is {t.dtype}; the exporter traces "
                             f"float32 models (call .float() on the module and inputs; "
                             f"act encodes activations in narrower formats itself)")
    return Workload(name, *made)
