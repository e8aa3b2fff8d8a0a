"""The training steps of issue 16's table that the exporter does not name:
factories for `python3 -m act.export bench/step_speed/models.py:NAME`."""

import torch
import torch.nn as nn


def vgg(batch):
    """VGG-style CIFAR CNN: 3 stages of two 3x3 conv-BN-ReLU (32, 64, 128
    channels) with 2x2 max pooling, 32x32 RGB, 10 classes."""
    layers, c = [], 3
    for width in (32, 64, 128):
        for _ in range(2):
            layers += [nn.Conv2d(c, width, 3, padding=1, bias=False),
                       nn.BatchNorm2d(width), nn.ReLU()]
            c = width
        layers.append(nn.MaxPool2d(2))
    module = nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, 10))
    return module, torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))


class PreNormBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self, dim=64, heads=4, depth=2, classes=10):
        super().__init__()
        self.blocks = nn.Sequential(*[PreNormBlock(dim, heads) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.blocks(x).mean(1))


def encoder(batch):
    """Two pre-norm encoder blocks, d 64, 4 heads, sequence 64."""
    return Encoder(), torch.randn(batch, 64, 64), torch.randint(0, 10, (batch,))
