"""A model written outside the exporter's models, as a user would (issue 19's
check on something the tests do not cover): conv blocks with biases, max
pooling, SiLU, self-attention. docs/benchmarks.md, "A user's CNN"."""

import torch, torch.nn as nn, torch.nn.functional as F

class Net(nn.Module):
    """A user's model: two equal-channel conv blocks with max pooling, then a
    self-attention over the 8x8 positions, then a classifier."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 24, 3, padding=1)
        self.c2 = nn.Conv2d(24, 24, 3, padding=1)
        self.bn = nn.BatchNorm2d(24)
        self.c3 = nn.Conv2d(24, 24, 3, padding=1)
        self.attn = nn.MultiheadAttention(24, 4, batch_first=True)
        self.head = nn.Linear(24, 7)
    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.bn(self.c2(x)))
        x = F.max_pool2d(x, 2)
        x = F.silu(self.c3(x))
        x = F.max_pool2d(x, 2)             # n x 24 x 8 x 8
        t = x.flatten(2).transpose(1, 2)   # n x 64 x 24
        a, _ = self.attn(t, t, t)
        return self.head((t + a).mean(1))

def make(batch):
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 7, (batch,))
    return m, x, y
