"""Models for bench/division: the VGG-style CIFAR CNN and torchvision's
resnet18 (32x32) on random images and on real images (sklearn's digits,
8x8 grey, upsampled to 32x32 RGB: smooth maps, as natural images are), and
resnet18 at ImageNet's 224x224 (the paper's maps: 112 down to 7), for
`python3 -m act.export bench/division/models.py:NAME`."""

import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "step_speed"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import models as step_models  # noqa: E402  bench/step_speed/models.py
from act import models as act_models  # noqa: E402


def digits_images(batch):
    """`batch` digits (sklearn), 32x32 RGB, normalized, and their labels."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images[:batch], dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    x = ((x - 0.5) / 0.5).repeat(1, 3, 1, 1)
    return x, torch.tensor(d.target[:batch], dtype=torch.int64)


def vgg(batch):
    return step_models.vgg(batch)


def vgg_digits(batch):
    module, _, _ = step_models.vgg(batch)
    return (module, *digits_images(batch))


def resnet18(batch):
    return act_models.resnet18(batch)


def resnet18_digits(batch):
    module, _, _ = act_models.resnet18(batch)
    return (module, *digits_images(batch))


def resnet18_224(batch):
    """torchvision's resnet18 (10 classes) on 224x224 random images."""
    import torchvision
    module = act_models.without_running_stats(torchvision.models.resnet18(num_classes=10))
    g = torch.Generator().manual_seed(0)
    return (module, torch.randn(batch, 3, 224, 224, generator=g),
            torch.randint(0, 10, (batch,), generator=g))
