"""Models for bench/fewbit: MLPs whose activations the exporter writes as
ordinary arith/math (no act code names them), for
`python3 -m act.export bench/fewbit/models.py:NAME`."""

import torch
import torch.nn as nn


def _mlp(activation, batch, width=256):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(64, width), activation(), nn.Linear(width, width),
                           activation(), nn.Linear(width, 10))
    return module, torch.randn(batch, 64), torch.randint(0, 10, (batch,))


class Mish(nn.Module):
    """Written out by hand, as a user would: x * tanh(softplus(x))."""
    def forward(self, x):
        return x * torch.tanh(nn.functional.softplus(x))


def gelu(batch):
    return _mlp(nn.GELU, batch)


def silu(batch):
    return _mlp(nn.SiLU, batch)


def tanh(batch):
    return _mlp(nn.Tanh, batch)


def mish(batch):
    return _mlp(Mish, batch)


def elu(batch):
    return _mlp(nn.ELU, batch)


def softplus(batch):
    return _mlp(nn.Softplus, batch)


def selu(batch):
    return _mlp(nn.SELU, batch)
