"""A training step's workload: a module, an input batch, its targets and a
loss, and the helpers that read inputs and targets as tuples of tensors.
Used by the exporter, act.compile and the models alike; imports nothing of
act's.
"""

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Workload:
    """inputs and targets: a tensor, or a tuple of tensors (a model called
    as module(*inputs): tokens and a padding mask, a source and a target
    sequence; a loss given the targets tuple as it is)."""
    name: str
    module: nn.Module
    inputs: object
    targets: object
    loss_fn: Callable = F.cross_entropy


def tensors_of(value):
    """A workload's inputs or targets as a tuple of tensors."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def not_tensors(what, value):
    """None if `value` is a tensor or a tuple/list of tensors; otherwise
    what is wrong with it, as a message about `what` (inputs, targets)."""
    parts = tensors_of(value)
    if parts and all(isinstance(t, torch.Tensor) for t in parts):
        return None
    return (f"{what} must be a tensor or a tuple of tensors, got {type(value).__name__}"
            + (f" of {', '.join(type(t).__name__ for t in parts)}"
               if isinstance(value, (tuple, list)) else ""))


def rebuilt(like, tensors):
    """`tensors` in the structure of `like` (one tensor, or a tuple)."""
    return tuple(tensors) if isinstance(like, (tuple, list)) else tensors[0]
