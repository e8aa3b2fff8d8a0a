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


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for CIFAR (3x3 stem, no max pool; He et al.'s CIFAR
    variant as in most CIFAR training code), without torchvision."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(64), nn.ReLU())
        blocks, c = [], 64
        for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(c, width, stride), BasicBlock(width, width, 1)]
            c = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(x.mean((2, 3)))


def resnet18(batch):
    """ResNet-18 (CIFAR), 32x32 RGB, 10 classes."""
    return ResNet18(), torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))


class DecoderBlock(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """A GPT-style decoder: token and position embeddings, pre-norm blocks
    with causal attention written out, next-token logits."""

    def __init__(self, vocab=256, dim=512, heads=8, depth=6, context=256):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(context, dim) * 0.02)
        self.blocks = nn.Sequential(*[DecoderBlock(dim, heads, context) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        B, T = idx.shape
        x = self.blocks(self.emb(idx) + self.pos[:T])
        return self.head(self.ln(x)).view(B * T, -1)


def gpt(batch):
    """6 decoder blocks, width 512, 8 heads, context 256, 256 tokens."""
    return (GPT(), torch.randint(0, 256, (batch, 256)),
            torch.randint(0, 256, (batch * 256,)))


def resnet20(batch):
    """act.train's fmnist-resnet20: ResNet-20 on 28x28 grayscale images."""
    from act.train import fashion_resnet20
    return (fashion_resnet20(), torch.randn(batch, 1, 28, 28),
            torch.randint(0, 10, (batch,)))
