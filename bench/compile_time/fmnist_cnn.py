"""The Fashion-MNIST CNN of issue 53 (a user's first hour): four 3x3
convolutions with BatchNorm, two max pools, two linear layers, dropout, on
28x28 grayscale images. bench/compile_time/batch.py compiles it at growing
batch sizes."""

import torch
import torch.nn as nn


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()

        def block(i, o):
            return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
        self.features = nn.Sequential(*block(1, 32), *block(32, 32), nn.MaxPool2d(2),
                                      *block(32, 64), *block(64, 64), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                                  nn.Dropout(0.3), nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.features(x))


def make(batch=128):
    torch.manual_seed(0)
    return FashionCNN(), torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
