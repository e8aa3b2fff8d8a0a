"""Export a PyTorch training step to act's input IR (docs/Design.md's two forms).

    python3 -m act.export MODEL [--batch N] [--seed S] [-o DIR]

MODEL is one of act.models.MODELS or `file.py:factory`. AOTAutograd
(functorch's aot_function with the default partition) traces the step
`loss_fn(module(inputs), targets)` with the parameters as explicit inputs
into an aten forward graph returning `(loss, *saved)` and a backward graph
taking `(*saved, tangent)`; act.aten lowers each node. Written to DIR:

- `NAME.mlir`: the joint form, `@NAME_step(params..., inputs, targets) ->
  (loss {act.loss}, grads...)` with the gradients in parameter order;
- `NAME_split.mlir`: `@NAME_forward` -> (loss, saved...) marked
  `act.backward = @NAME_backward, act.num_saved`, and `@NAME_backward(saved...,
  tangent) -> grads...`;
- `NAME_inputs/*.npy`: the arguments (parameters, inputs, targets), and with
  `--batches K` the inputs and targets of K - 1 more mini-batches;
- `NAME_reference/`: loss.npy and grad_<i>.npy by eager autograd in float64;
- `NAME.json`: the manifest (arguments, files, saved-tensor bytes).

A saved value that is only a view of an argument (a transposed weight, a
flattened input) is not saved: the backward re-derives it from the argument,
as eager PyTorch would hold the argument itself.
"""

import argparse
import contextlib
import copy
import dataclasses
import dis
import json
import math
import operator
import os
import sys
import types
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.node import map_arg

from . import aten, torchversion
from .capi import release_freed_memory
from .mlir import Graph, V, func
from .models import load, rebuilt, tensors_of

VIEW_OPS = {
    "aten.t.default", "aten.view.default", "aten._reshape_alias.default",
    "aten._unsafe_view.default", "aten.transpose.int", "aten.permute.default",
    "aten.detach.default", "aten.unsqueeze.default", "aten.expand.default",
    "aten.alias.default", "aten.clone.default", "aten.reshape.default",
}

DTYPES = {torch.float32: "f32", torch.int64: "i64", torch.int32: "i32", torch.bool: "i1"}
# uint8 data (images, Atari frames, token bytes) crosses the step's boundary
# as its bytes (i8) and is widened to i32 (zero-extended) where the step
# reads it: every op reading it then computes what it computes on uint8, as
# long as no op produces new uint8 values (wrapping arithmetic): only the
# value-preserving ops below may have uint8 results (checked at tracing).
WIDENED = {torch.uint8: ("i8", "i32")}
UINT8_PRESERVING = {
    "aten.view.default", "aten._unsafe_view.default", "aten._reshape_alias.default",
    "aten.reshape.default", "aten.permute.default", "aten.transpose.int", "aten.t.default",
    "aten.slice.Tensor", "aten.select.int", "aten.expand.default", "aten.unsqueeze.default",
    "aten.squeeze.dim", "aten.squeeze.default", "aten.clone.default", "aten.alias.default",
    "aten.cat.default", "aten.stack.default", "aten.flip.default", "aten.roll.default",
    "aten.index.Tensor", "aten.gather.default", "aten.index_select.default",
    "aten.detach.default", "aten.split.Tensor", "aten.split_with_sizes.default",
    "aten.unbind.int", "aten.repeat.default", "aten.lift_fresh_copy.default",
    "aten.rot90.default", "aten._to_copy.default", "aten.contiguous.default",
}

# Ops act lowers itself (act.aten) although PyTorch has a decomposition for
# them: ATen's own kernels' formulas, fewer and larger ops, or a decomposition
# into views (as_strided) that value semantics cannot express.
OWN_LOWERINGS = {
    "_log_softmax", "_log_softmax_backward_data", "_softmax", "_softmax_backward_data",
    "nll_loss_forward", "nll_loss_backward", "native_batch_norm",
    "native_batch_norm_backward", "native_layer_norm_backward", "gelu_backward",
    "tanh_backward", "sigmoid_backward", "threshold_backward", "addmm", "slice",
    "split", "split_with_sizes", "_reshape_alias", "_unsafe_view", "detach", "_to_copy",
    "_adaptive_avg_pool2d", "native_dropout",
}

# Constant tensors captured by tracing with at most this many elements are
# arith.constants of the step; larger ones are arguments (.npy files).
MAX_INLINE_CONSTANT = 64

# Batches larger than this are traced for their shapes only (fake tensors:
# nothing computed at the batch's size, so a batch of 512 traces as fast
# as one of 16), and PyTorch's trace is checked against eager autograd on
# the first CHECK_BATCH examples (Traced).
SHAPES_ONLY_ABOVE = 32
CHECK_BATCH = 8


def decompositions():
    """PyTorch's own decompositions (torch._decomp, aten to aten; not the
    torch._refs ones, which go down to prims and strided views), less the
    ops act lowers itself, plus act's own (act.decomp, for ops whose only
    decomposition is a torch._refs one): what reaches act.aten is the closed
    set of docs/Exporter.md. Under PyTorch 2, only the ops 1.13 decomposed
    (torchversion.DECOMPOSED_1_13) and ops new in 2 (NEW_IN_2); those it
    moved to torch._refs or decomposes differently, by 1.13's formulas
    (act.decomp.FALLBACKS)."""
    from torch._decomp import decomposition_table

    from .decomp import DECOMPOSITIONS, FALLBACKS
    def taken(op, fn):
        short = op.name().split("::")[-1]
        return (getattr(fn, "__module__", "") == "torch._decomp.decompositions"
                and short not in OWN_LOWERINGS and short not in torchversion.BATCH_NORM_OPS
                and torchversion.takes_decomposition(str(op).removeprefix("aten.")))
    table = {op: fn for op, fn in decomposition_table.items() if taken(op, fn)}
    if torchversion.TORCH2:
        table.update(FALLBACKS)
    table.update(DECOMPOSITIONS)
    return table


def philox_uniform(seed, k, stream, shape):
    """u in [0, 1) per element of `shape` (row-major i): word 0 of
    Philox4x32-10(counter = (i, i >> 32, k, stream), key = (seed, seed >>
    32)) >> 8, times 2^-24: the lowering's stream (act.aten.random._philox_uniform),
    in NumPy, float32."""
    from .aten import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1
    M = np.uint64(0xFFFFFFFF)
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    c0, c1 = i & M, i >> np.uint64(32)
    c2 = np.full(n, k, dtype=np.uint64)
    c3 = np.full(n, stream, dtype=np.uint64)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0, p1 = np.uint64(PHILOX_M0) * c0, np.uint64(PHILOX_M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M)
        k0, k1 = (k0 + np.uint64(PHILOX_W0)) & M, (k1 + np.uint64(PHILOX_W1)) & M
    u = (c0 >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return u.reshape(shape)


def philox_keep(seed, k, shape, p):
    """The keep mask of the k-th dropout of a step with seed `seed` (the
    lowering's Philox4x32-10 stream, act.aten.native_dropout), in NumPy."""
    from .aten import DROPOUT_STREAM
    return philox_uniform(seed, k, DROPOUT_STREAM, shape) >= np.float32(p)


def _needs_2d(input, target):
    """Class indices over K dims other than 2: PyTorch 1.13's AOTAutograd
    with its decompositions traces nll_loss on (N, C, d1) and (N, C, d1,
    ..., dK>2) inputs, and on (N, C, H, W) ones that are views of them,
    with wrong gradients (its own graph, 0.9-1.4 off eager autograd on a
    per-token or 1-D segmentation loss); plain (N, C, H, W) and (N, C)
    trace right."""
    return (input.dim() >= 3 and input.dim() != 4 and not target.is_floating_point()
            and target.dim() == input.dim() - 1)


def _over_rows(loss_fn, input, target, *args):
    """loss_fn over (N, C, d1, ..., dK) and (N, d1, ..., dK) as (N d1...dK,
    C) and (N d1...dK), a row per element of the target in its order; a
    per-element loss comes back in the target's shape."""
    loss = loss_fn(input.movedim(1, -1).reshape(-1, input.shape[1]), target.reshape(-1), *args)
    return loss.reshape(target.shape) if loss.dim() else loss


def nll_loss_static(input, target, weight=None, size_average=None, ignore_index=-100,
                    reduce=None, reduction="mean", _original=F.nll_loss):
    """F.nll_loss, with K-dimensional inputs other than (N, C, H, W) as
    rows (_needs_2d): the same mean, sum or per-element losses. Anything
    else is PyTorch's own."""
    args = (weight, size_average, ignore_index, reduce, reduction)
    if _needs_2d(input, target):
        return _over_rows(_original, input, target, *args)
    return _original(input, target, *args)


def cross_entropy_static(input, target, weight=None, size_average=None, ignore_index=-100,
                         reduce=None, reduction="mean", label_smoothing=0.0,
                         _original=F.cross_entropy):
    """F.cross_entropy with ATen's formula for label smoothing on class
    indices (cross_entropy_loss_label_smoothing, LossNLL.cpp), written
    without its data-dependent masked_select: the mean over non-ignored
    rows is their sum (ignored rows zeroed, as ATen does) over their count
    (or their weights' sum). The same values for every target, ignored
    ones included; static shapes, so act exports it. Anything else
    (probability targets, the legacy arguments, no smoothing) is
    PyTorch's own function."""
    if _needs_2d(input, target):
        return _over_rows(cross_entropy_static, input, target, weight, size_average,
                          ignore_index, reduce, reduction, label_smoothing, _original)
    if (not label_smoothing or target.is_floating_point() or size_average is not None
            or reduce is not None or reduction not in ("mean", "sum", "none")):
        return _original(input, target, weight, size_average, ignore_index, reduce,
                         reduction, label_smoothing)
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    logp = F.log_softmax(input, class_dim)
    nll = F.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    ignored = target == ignore_index
    if weight is not None:
        shape = [1] * logp.dim()
        shape[class_dim] = classes
        smooth = -(logp * weight.view(shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = torch.where(ignored, torch.zeros_like(smooth), smooth)
    if reduction == "mean":
        if weight is not None:
            safe = torch.where(ignored, torch.zeros_like(target), target)
            count = torch.where(ignored, torch.zeros_like(smooth), weight[safe]).sum()
        else:
            count = (~ignored).sum().to(smooth.dtype)
        smooth = smooth.sum() / count
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / classes)


def copy_module(module):
    """copy.deepcopy of a module that may hold computed tensors as plain
    attributes (nn.utils.weight_norm keeps `weight`, recomputed by a forward
    pre-hook, which deepcopy refuses: not a graph leaf): those are copied
    detached."""
    held = []
    for m in module.modules() if isinstance(module, torch.nn.Module) else ():
        for name, value in list(vars(m).items()):
            if isinstance(value, torch.Tensor) and value.grad_fn is not None:
                held.append((m, name, value))
                setattr(m, name, value.detach())
    try:
        return copy.deepcopy(module)
    finally:
        for m, name, value in held:
            setattr(m, name, value)


def one_hot_static(tensor, num_classes=-1):
    """F.one_hot without ATen's data-dependent range check (its min() and
    max() read the values, which tracing cannot): the rows of an i64
    identity, read as an embedding, so that the range check moves to the
    step (Traced.index_ranges bounds the class indices like token ids).
    num_classes must be given (otherwise it is the data's maximum + 1)."""
    if num_classes < 0:
        raise ValueError("F.one_hot(x) without num_classes depends on the data (its maximum); "
                         "pass num_classes")
    return F.embedding(tensor, torch.eye(num_classes, dtype=torch.int64))


def gaussian_nll_static(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """F.gaussian_nll_loss without its data-dependent check that no
    variance is negative (torch.any(var < 0), which tracing cannot
    evaluate); the same formula otherwise (var clamped to eps without a
    gradient through the clamp)."""
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = torch.unsqueeze(var, -1)
        elif not (input.size()[:-1] == var.size()[:-1] and var.size(-1) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def affine_grid_traceable(theta, size, align_corners=None, _original=F.affine_grid):
    """F.affine_grid for 2-d (N, 2, 3) theta, written with arange and a
    batched matmul (ATen's affine_grid_generator has no decomposition in
    torch 1.13): the base grid's (x, y, 1) rows times theta^T."""
    if theta.dim() != 3 or len(size) != 4:
        return _original(theta, size, align_corners=align_corners)
    n, _, h, w = size

    def axis(k):
        i = torch.arange(k, dtype=theta.dtype)
        if align_corners:
            return i * (2.0 / (k - 1)) - 1.0 if k > 1 else i * 0.0
        return (i * 2.0 + 1.0) / k - 1.0
    xs = axis(w).view(1, w).expand(h, w)
    ys = axis(h).view(h, 1).expand(h, w)
    base = torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(1, h * w, 3)
    return torch.matmul(base.expand(n, h * w, 3), theta.transpose(1, 2)).reshape(n, h, w, 2)


def grid_sample_traceable(input, grid, mode="bilinear", padding_mode="zeros",
                          align_corners=None, _original=F.grid_sample):
    """F.grid_sample (2-d, bilinear, zero padding) written with gathers:
    the four neighbours of each sampling point, weighted, those outside the
    input counting zero. Autograd derives ATen's gradients (through the
    weights for the grid, a scatter-add for the input); other modes are
    PyTorch's own function (outside act's set)."""
    if input.dim() != 4 or mode != "bilinear" or padding_mode != "zeros":
        return _original(input, grid, mode=mode, padding_mode=padding_mode,
                         align_corners=align_corners)
    n, c, h, w = input.shape
    _, ho, wo, _ = grid.shape
    x, y = grid[..., 0], grid[..., 1]
    if align_corners:
        ix, iy = (x + 1) * ((w - 1) / 2.0), (y + 1) * ((h - 1) / 2.0)
    else:
        ix, iy = ((x + 1) * w - 1) / 2.0, ((y + 1) * h - 1) / 2.0
    x0, y0 = torch.floor(ix), torch.floor(iy)
    flat = input.reshape(n, c, h * w)
    out = 0
    for dx in (0, 1):
        for dy in (0, 1):
            cx, cy = x0 + dx, y0 + dy
            # ATen's weights, linear in the point (its gradient is the
            # difference of neighbours, also at integer points).
            weight = ((ix - x0) if dx else (x0 + 1 - ix)) * ((iy - y0) if dy else (y0 + 1 - iy))
            inside = ((cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1)).to(input.dtype)
            index = (cy.clamp(0, h - 1) * w + cx.clamp(0, w - 1)).to(torch.int64)
            index = index.reshape(n, 1, ho * wo).expand(n, c, ho * wo)
            value = torch.gather(flat, 2, index).reshape(n, c, ho, wo)
            out = out + value * (weight * inside).unsqueeze(1)
    return out


def multi_margin_static(input, target, p=1, margin=1.0, weight=None, size_average=None,
                        reduce=None, reduction="mean", _original=F.multi_margin_loss):
    """F.multi_margin_loss as ATen computes it (sum over classes j != y of
    max(0, margin - x[y] + x[j])^p, times weight[y], over the class count),
    with ops act lowers (ATen's op has no decomposition in torch 1.13)."""
    if (input.dim() != 2 or p not in (1, 2) or size_average is not None or reduce is not None
            or reduction not in ("none", "mean", "sum")):
        return _original(input, target, p, margin, weight, size_average, reduce, reduction)
    classes = input.shape[1]
    picked = input.gather(1, target.unsqueeze(1))
    hinge = (margin - picked + input).clamp(min=0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight[target].unsqueeze(1)
    others = target.unsqueeze(1) != torch.arange(classes).unsqueeze(0)
    loss = torch.where(others, hinge, torch.zeros_like(hinge)).sum(1) / classes
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def ctc_loss_static(log_probs, targets, input_lengths, target_lengths, blank=0,
                    reduction="mean", zero_infinity=False, _original=F.ctc_loss):
    """F.ctc_loss (nn.CTCLoss) as Graves et al.'s forward recursion over the
    blank-extended targets in log space, unrolled over the input's T steps
    (ATen's _ctc_loss has no decomposition): each sample's lengths select
    its alpha at t = input_length - 1 and its last two positions, so the
    shapes stay static whatever the lengths; autograd gives the backward.
    Unreachable states hold -1e30, not -inf, so that logsumexp over them
    has a finite gradient (zero where it matters); a sample with no
    alignment (input too short) gets inf, or 0 with zero_infinity, as ATen
    (its gradient is 0 where ATen's is NaN).
    Targets padded to (N, S); the concatenated 1-d form is refused."""
    if log_probs.dim() == 2:  # unbatched (T, C), targets (S,)
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
        input_lengths = torch.as_tensor(input_lengths).reshape(1)
        target_lengths = torch.as_tensor(target_lengths).reshape(1)
    if targets.dim() != 2:
        raise ExportError("F.ctc_loss with targets concatenated into one 1-d tensor: give them "
                          "padded to (N, S) (the lengths say how much of each row counts)")
    if reduction not in ("none", "mean", "sum"):
        return _original(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                         zero_infinity)
    steps, n, _ = log_probs.shape
    width = 2 * targets.shape[1] + 1
    labels = targets.long()
    blanks = torch.full_like(labels, blank)
    ext = torch.cat([torch.stack([blanks, labels], 2).reshape(n, width - 1), blanks[:, :1]], 1)
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(steps, n, width))
    position = torch.arange(width)
    # A label may follow the label two places back when they differ.
    skip = (position % 2 == 1) & torch.cat(
        [torch.zeros(n, 2, dtype=torch.bool), ext[:, 2:] != ext[:, :-2]], 1)
    far = torch.full((n, width), -1e30, dtype=log_probs.dtype)
    lengths = torch.as_tensor(input_lengths).long().reshape(n, 1)
    alpha = torch.where(position < 2, emit[0], far)
    final = torch.where(lengths == 1, alpha, far)
    for t in range(1, steps):
        one = torch.cat([far[:, :1], alpha[:, :-1]], 1)
        two = torch.where(skip, torch.cat([far[:, :2], alpha[:, :-2]], 1), far)
        alpha = torch.logsumexp(torch.stack([alpha, one, two]), 0) + emit[t]
        final = torch.where(lengths == t + 1, alpha, final)
    count = torch.as_tensor(target_lengths).long().reshape(n, 1)
    last = final.gather(1, 2 * count).squeeze(1)
    before = final.gather(1, (2 * count - 1).clamp(min=0)).squeeze(1)
    before = torch.where(count.squeeze(1) > 0, before, far[:, 0])
    loss = -torch.logsumexp(torch.stack([last, before]), 0)
    impossible = loss > 1e29
    loss = torch.where(impossible, torch.zeros_like(loss) if zero_infinity
                       else torch.full_like(loss, math.inf), loss)
    if reduction == "mean":
        return (loss / count.squeeze(1).clamp(min=1).to(loss.dtype)).mean()
    return loss.sum() if reduction == "sum" else loss


def pdist_static(input, p=2.0, _original=F.pdist):
    """F.pdist (ATen's _pdist_forward has no decomposition): the norms of
    the differences of the row pairs i < j, in pdist's order."""
    if input.dim() != 2:
        return _original(input, p)
    i, j = (torch.from_numpy(v) for v in np.triu_indices(input.shape[0], 1))
    return torch.linalg.vector_norm(input[i] - input[j], p, dim=1)


def quantile_static(input, q, dim=None, keepdim=False, *, interpolation="linear",
                    _original=torch.quantile):
    """torch.quantile (Tensor.quantile) without its checks that read the
    data (q in [0, 1]: checked here on q itself, a Python number or a
    constant): the sorted values at q (n - 1), interpolated as ATen does;
    NaN where the row holds one, as ATen."""
    qs = torch.as_tensor(q, dtype=input.dtype)
    if qs.dim() > 1 or interpolation not in ("linear", "lower", "higher", "nearest",
                                             "midpoint"):
        return _original(input, q, dim, keepdim, interpolation=interpolation)
    if not isinstance(q, torch.Tensor) and not all(
            0 <= float(v) <= 1 for v in (q if isinstance(q, (list, tuple)) else [q])):
        raise ValueError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input.movedim(dim, -1)
    n = x.shape[-1]
    ordered = x.sort(-1)[0]
    pos = qs.reshape(-1) * (n - 1)
    lo = pos.floor().long()
    hi = (lo + 1).clamp(max=n - 1)
    a, b = ordered[..., lo], ordered[..., hi]
    frac = pos - lo.to(pos.dtype)
    if interpolation == "lower":
        out = a
    elif interpolation == "higher":
        out = torch.where(frac > 0, b, a)
    elif interpolation == "nearest":  # ATen rounds half to even
        out = ordered[..., pos.round().long()]
    elif interpolation == "midpoint":
        out = torch.where(frac > 0, (a + b) / 2, a)
    else:
        out = a + (b - a) * frac
    out = torch.where(torch.isnan(x).any(-1, keepdim=True), torch.full_like(out, math.nan), out)
    out = out.movedim(-1, 0)  # the quantiles first, as ATen
    if qs.dim() == 0:
        out = out[0]
    if keepdim:
        if dim is None:
            out = out.reshape(out.shape[:1 if qs.dim() else 0] + (1,) * input.dim())
        else:
            out = out.unsqueeze(dim % input.dim() + (1 if qs.dim() else 0))
    return out


def local_response_norm_static(input, size, alpha=1e-4, beta=0.75, k=1.0,
                               _original=F.local_response_norm):
    """F.local_response_norm (nn.LocalResponseNorm) with its sum over a
    window of channels written as `size` shifted slices of the padded
    squares (ATen's own goes through avg_pool3d, outside act's set)."""
    if input.dim() < 3:
        return _original(input, size, alpha, beta, k)
    sq = input * input
    channels = input.shape[1]
    pad = [0, 0] * (input.dim() - 2) + [size // 2, (size - 1) // 2]
    padded = F.pad(sq, pad)
    window = sum(padded.narrow(1, i, channels) for i in range(size))
    return input / (window * (alpha / size) + k).pow(beta)


def _bicubic_axis(x, dim, out_size, align_corners, scale):
    """ATen's bicubic interpolation along one dim (upsample_bicubic2d: cubic
    convolution with A = -0.75, unclamped source coordinates, neighbours
    clamped to the edge) as four index_selects weighted per output. The
    coordinates and weights depend on the sizes only: computed here in
    Python (double, as ATen's scale), constants of the step."""
    n = x.shape[dim]
    a = -0.75

    def w_outer(u):   # |u| in [1, 2)
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a

    def w_inner(u):   # |u| in [0, 1)
        return ((a + 2) * u - (a + 3)) * u * u + 1
    indices, weights = [[] for _ in range(4)], [[] for _ in range(4)]
    for o in range(out_size):
        if align_corners:
            src = o * ((n - 1) / (out_size - 1)) if out_size > 1 else 0.0
        else:
            step = (1.0 / scale) if scale else n / out_size
            src = (o + 0.5) * step - 0.5
        base = math.floor(src)
        t = src - base
        for k, wt in enumerate((w_outer(t + 1), w_inner(t), w_inner(1 - t), w_outer(2 - t))):
            indices[k].append(min(max(base + k - 1, 0), n - 1))
            weights[k].append(wt)
    shape = [1] * x.dim()
    shape[dim] = out_size
    out = 0
    for k in range(4):
        w = torch.tensor(weights[k], dtype=x.dtype).view(shape)
        out = out + x.index_select(dim, torch.tensor(indices[k])) * w
    return out


def interpolate_traceable(input, size=None, scale_factor=None, mode="nearest",
                          align_corners=None, recompute_scale_factor=None, antialias=False,
                          _original=F.interpolate):
    """F.interpolate's bicubic mode (2-d, no antialias) written with ops act
    lowers, so autograd derives its backward (ATen's
    upsample_bicubic2d_backward has no decomposition in torch 1.13); every
    other mode is PyTorch's own (decomposed or lowered by act)."""
    if mode != "bicubic" or input.dim() != 4 or antialias:
        return _original(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                         antialias)
    h, w = input.shape[-2:]
    scales = (None, None)
    if size is None:
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * 2
        size = (int(math.floor(h * factors[0])), int(math.floor(w * factors[1])))
        if not recompute_scale_factor:
            scales = tuple(float(f) for f in factors)
    elif isinstance(size, int):
        size = (size, size)
    y = _bicubic_axis(input, 2, size[0], bool(align_corners), scales[0])
    return _bicubic_axis(y, 3, size[1], bool(align_corners), scales[1])


def embedding_traceable(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False, _original=F.embedding):
    """F.embedding (nn.Embedding) with int32 indices widened to int64 (torch
    1.13's decomposition of its backward indexes with them and refuses
    int32, which eager accepts); `max_norm` refused clearly: it
    renormalizes rows of the weight in place while the forward runs, a
    parameter update inside the step that PyTorch's trace refuses with an
    error about leaf variables."""
    if max_norm is not None:
        raise ExportError(
            "nn.Embedding(max_norm=...) renormalizes rows of its weight in place during the "
            "forward (a parameter update inside the step); PyTorch's trace (AOTAutograd) "
            "refuses it. Drop max_norm, or renormalize the weight between steps "
            "(with torch.no_grad(): weight.data = torch.renorm(weight, 2, 0, max_norm))")
    if not input.is_floating_point() and input.dtype != torch.int64:
        input = input.long()
    return _original(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


def _replacements():
    """The functions static_losses() puts into torch.nn.functional, by name."""
    return {"cross_entropy": cross_entropy_static, "nll_loss": nll_loss_static,
            "one_hot": one_hot_static, "embedding": embedding_traceable,
            "gaussian_nll_loss": gaussian_nll_static,
            "affine_grid": affine_grid_traceable, "grid_sample": grid_sample_traceable,
            "multi_margin_loss": multi_margin_static, "ctc_loss": ctc_loss_static,
            "pdist": pdist_static,
            "local_response_norm": local_response_norm_static,
            "interpolate": interpolate_traceable}


# torch.nn.functional's own functions, before any replacement.
_ORIGINAL_F = {name: getattr(F, name) for name in _replacements()}


def traced_loss(loss_fn):
    """The loss to trace: a function of torch.nn.functional that
    static_losses() replaces, given as the workload's loss (the default
    F.cross_entropy, or `F.multi_margin_loss` passed by a user, both bound
    before the replacement), is its replacement; anything else (a lambda,
    an nn.Module loss: they call F's functions when they run) is itself."""
    for name, fn in _replacements().items():
        if loss_fn is _ORIGINAL_F[name]:
            return fn
    return loss_fn


class _MaskedSequence(torch.nn.utils.rnn.PackedSequence):
    """What pack_padded_sequence gives while tracing: the padded batch
    (time-major) and its lengths, in the caller's order, in place of the
    packed data and batch sizes (which PyTorch computes by reading the
    lengths: a data-dependent shape its trace refuses)."""


def _pack_padded_traceable(input, lengths, batch_first=False, enforce_sorted=True):
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    padded = input.transpose(0, 1) if batch_first else input
    return _MaskedSequence(padded, lengths, None, None)


def _pad_packed_traceable(sequence, batch_first=False, padding_value=0.0, total_length=None,
                          _original=torch.nn.utils.rnn.pad_packed_sequence):
    """The outputs of a masked run, padding_value past each length; as long
    as the input's padded length (or total_length), where PyTorch's is the
    longest length of the batch."""
    if not isinstance(sequence, _MaskedSequence):
        return _original(sequence, batch_first, padding_value, total_length)
    data, lengths = sequence.data, sequence.batch_sizes
    steps = data.shape[0]
    if total_length is not None and total_length > steps:
        data = torch.nn.functional.pad(data, [0, 0, 0, 0, 0, total_length - steps])
    inside = (torch.arange(data.shape[0]).unsqueeze(1) < lengths.unsqueeze(0)).unsqueeze(2)
    data = torch.where(inside, data, torch.full_like(data, padding_value))
    return (data.transpose(0, 1) if batch_first else data), lengths


def _masked_rnn(module, sequence, hx):
    """nn.LSTM/GRU/RNN over a _MaskedSequence: every layer and direction
    steps through the padded length and keeps its state where the step is
    past a sequence's length (so the reverse direction starts at each
    sequence's own end, and h_n is each sequence's last state), as the
    packed run computes; outputs there are 0 (pad_packed_sequence's
    padding)."""
    if getattr(module, "proj_size", 0):
        raise ExportError("a packed sequence through an LSTM with proj_size is not supported")
    x, lengths = sequence.data, sequence.batch_sizes
    steps, batch = x.shape[0], x.shape[1]
    lstm = isinstance(module, torch.nn.LSTM)
    dirs = 2 if module.bidirectional else 1
    size = module.hidden_size
    if hx is None:
        zeros = x.new_zeros(module.num_layers * dirs, batch, size)
        hx = (zeros, zeros) if lstm else zeros
    h0, c0 = hx if lstm else (hx, None)
    live = torch.arange(steps).unsqueeze(1) < lengths.unsqueeze(0)  # (T, N)
    hs, cs = [], []
    for layer in range(module.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = getattr(module, "weight_ih" + sfx), getattr(module, "weight_hh" + sfx)
            b_ih = getattr(module, "bias_ih" + sfx) if module.bias else None
            b_hh = getattr(module, "bias_hh" + sfx) if module.bias else None
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if lstm else None)
            out = [None] * steps
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                gi = torch.nn.functional.linear(x[t], w_ih, b_ih)
                gh = torch.nn.functional.linear(h, w_hh, b_hh)
                if lstm:
                    i, f, g, o = (gi + gh).chunk(4, 1)
                    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                    h_new = torch.sigmoid(o) * torch.tanh(c_new)
                elif isinstance(module, torch.nn.GRU):
                    ir, iz, in_ = gi.chunk(3, 1)
                    hr, hz, hn = gh.chunk(3, 1)
                    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
                    h_new = (1 - z) * torch.tanh(in_ + r * hn) + z * h
                else:
                    h_new = torch.tanh(gi + gh) if module.nonlinearity == "tanh" \
                        else torch.relu(gi + gh)
                on = live[t].unsqueeze(1)
                h = torch.where(on, h_new, h)
                if lstm:
                    c = torch.where(on, c_new, c)
                out[t] = torch.where(on, h_new, torch.zeros_like(h_new))
            outs.append(torch.stack(out))
            hs.append(h)
            cs.append(c)
        x = torch.cat(outs, 2) if dirs == 2 else outs[0]
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = torch.nn.functional.dropout(x, module.dropout, True)
    h_n = torch.stack(hs)
    result = _MaskedSequence(x, lengths, None, None)
    return result, ((h_n, torch.stack(cs)) if lstm else h_n)


@contextlib.contextmanager
def reentrant_checkpoints():
    """torch.utils.checkpoint's reentrant form (use_reentrant=True, torch
    1.13's default) traced as its non-reentrant form: the reentrant one
    runs its region under no_grad and differentiates it again with
    torch.autograd.backward inside the backward, which AOTAutograd's traced
    backward (torch.autograd.grad) refuses ("Checkpointing is not compatible
    with .grad()"). Both compute the same gradients; either way the region
    is recomputed in the step's backward."""
    import torch.utils.checkpoint as ckpt
    function = ckpt.CheckpointFunction
    old = function.__dict__.get("apply")

    def apply(run, preserve_rng_state, *args):
        return ckpt.checkpoint(run, *args, use_reentrant=False,
                               preserve_rng_state=preserve_rng_state)
    function.apply = apply
    try:
        yield
    finally:
        if old is None:
            del function.apply
        else:
            function.apply = old


@contextlib.contextmanager
def packed_sequences(module):
    """While tracing `module`: pack_padded_sequence, nn.LSTM/GRU/RNN on what it
    gives and pad_packed_sequence, with the lengths as data (masks) instead
    of shapes (_masked_rnn). The float64 reference and the check against
    eager autograd run PyTorch's own packed implementation."""
    import torch.nn.utils.rnn as rnn_utils
    patched = [(rnn_utils, "pack_padded_sequence", _pack_padded_traceable),
               (rnn_utils, "pad_packed_sequence", _pad_packed_traceable)]
    for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
        def forward(self, input, hx=None, _original=cls.forward):
            if isinstance(input, _MaskedSequence):
                return _masked_rnn(self, input, hx)
            return _original(self, input, hx)
        patched.append((cls, "forward", forward))
    # Models that imported the functions by name (`from torch.nn.utils.rnn
    # import pack_padded_sequence`) call them through their own globals:
    # those of the module classes' forward methods.
    originals = {id(rnn_utils.pack_padded_sequence): _pack_padded_traceable,
                 id(rnn_utils.pad_packed_sequence): _pad_packed_traceable}
    forwards = _forward_functions(module)
    scopes = {id(fn.__globals__): fn.__globals__ for fn in forwards}
    replaced = [(scope, name, value, originals[id(value)]) for scope in scopes.values()
                for name, value in list(scope.items()) if id(value) in originals]
    # (or as free variables of a forward defined inside a function)
    cells = {id(c): (c, value) for fn in forwards for c, value in _closure_cells(fn)}
    enclosed = [(c, value) for c, value in cells.values() if id(value) in originals]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
    for owner, name, fn in patched:
        setattr(owner, name, fn)
    for scope, name, _, fn in replaced:
        scope[name] = fn
    for cell, value in enclosed:
        cell.cell_contents = originals[id(value)]
    try:
        yield
    finally:
        for owner, name, fn in reversed(saved):
            setattr(owner, name, fn)
        for scope, name, value, _ in replaced:
            scope[name] = value
        for cell, value in enclosed:
            cell.cell_contents = value


@contextlib.contextmanager
def static_losses():
    """While tracing: F.cross_entropy with label smoothing in a form of
    static shapes (cross_entropy_static; nn.CrossEntropyLoss calls it
    too), F.cross_entropy and F.nll_loss over (N, C, d1) or more than two
    spatial dims as rows (_needs_2d, _over_rows), F.embedding with int32
    indices (embedding_traceable), F.one_hot and F.gaussian_nll_loss without their data-dependent
    checks (one_hot_static, gaussian_nll_static), torch.distributions
    without argument validation (it reads values), F.affine_grid,
    F.grid_sample, F.multi_margin_loss, F.ctc_loss, F.local_response_norm and
    F.interpolate's bicubic mode written with ops act lowers."""
    # Each replacement keeps PyTorch's function as its `_original` default
    # where it falls back to it.
    replacements = _replacements()
    originals = {name: getattr(F, name) for name in replacements}
    validate = torch.distributions.Distribution._validate_args
    for name, fn in replacements.items():
        setattr(F, name, fn)
    quantile = (torch.quantile, torch.Tensor.quantile)
    torch.quantile = torch.Tensor.quantile = quantile_static
    # torch.distributions checks arguments and samples by reading their
    # values (constraint.check(...).all()): not while tracing.
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(F, name, fn)
        torch.quantile, torch.Tensor.quantile = quantile
        torch.distributions.Distribution.set_default_validate_args(validate)


@contextlib.contextmanager
def reference_precision(dtype):
    """For the float64 reference: floats the model makes itself
    (`mask.float()`, `torch.zeros(n)`, `torch.arange(n, dtype=...)` left
    to the default) in float64 too, so a model that casts to float32
    explicitly (`.float()`, `.to(torch.float32)`) still runs in one precision (a float32 matmul operand
    against float64 weights fails)."""
    if dtype != torch.float64:
        yield
        return
    default, to_float, to = torch.get_default_dtype(), torch.Tensor.float, torch.Tensor.to
    wider = {torch.float32: torch.float64}

    def to_wider(self, *args, **kwargs):  # x.to(torch.float32), x.to(dtype=...)
        args = [wider.get(a, a) if isinstance(a, torch.dtype) else a for a in args]
        if "dtype" in kwargs:
            kwargs["dtype"] = wider.get(kwargs["dtype"], kwargs["dtype"])
        return to(self, *args, **kwargs)
    torch.set_default_dtype(torch.float64)
    torch.Tensor.float = lambda self, *args, **kwargs: to_float(self, *args, **kwargs).double()
    torch.Tensor.to = to_wider
    try:
        yield
    finally:
        torch.set_default_dtype(default)
        torch.Tensor.float = to_float
        torch.Tensor.to = to


@contextlib.contextmanager
def random_ops(mode, seed=0, counts=None, math_attention=True):
    """How randomness is traced. F.dropout (also inside
    nn.MultiheadAttention and nn.TransformerEncoderLayer) becomes
    aten.native_dropout, which act lowers to a Philox mask from the step's
    dropout seed (mode "trace"), or multiplies by that same mask computed in
    NumPy (mode "reference", the float64 autograd the step is checked
    against). Channel-wise dropout (dropout1d/2d/3d), alpha dropout (plain
    and feature) and torchvision's stochastic depth multiply by such a mask
    of ones of their noise's shape (one element per channel, per sample),
    ATen's formulas around it.
    torch.rand_like (stochastic rounding in a custom backward: act.dfq) is
    traced as itself, which act lowers to Philox noise from the same seed
    (aten.RANDOM_STREAM), and in "reference" mode returns that noise;
    torch.rand, randn, randn_like (Box-Muller from two uniforms), normal and
    bernoulli are written with it, and so are the in-place draws
    Tensor.exponential_ (F.gumbel_softmax), uniform_ and normal_. A stacked
    nn.LSTM/GRU/RNN with dropout between layers runs layer by layer
    (_masked_rnn) with F.dropout's masks.
    PyTorch 2's F.scaled_dot_product_attention (nn.MultiheadAttention's
    path there) is written as its math with F.dropout (math_attention).
    counts: {"dropout": n, "rand": r}, per eager step."""
    import torch.nn.functional as F
    from .aten import RANDOM_STREAM
    counts = counts if counts is not None else {}
    counts.setdefault("dropout", 0)
    counts.setdefault("rand", 0)
    patched = []
    rands = [0]  # this context's rand_like calls (the k of the next one)

    def rand_like(x, *args, dtype=None, **kwargs):
        k = rands[0]
        rands[0] += 1
        counts["rand"] += 1
        u = torch.from_numpy(philox_uniform(seed, k, RANDOM_STREAM, tuple(x.shape)))
        return u.to(dtype or x.dtype)
    if mode == "reference":
        patched.append((torch, "rand_like", torch.rand_like))
        torch.rand_like = rand_like

    # Other random tensors from torch.rand_like (whichever it is now: traced
    # as aten.rand_like, or the reference's NumPy Philox): normal noise by
    # Box-Muller from two uniform draws, uniform and normal tensors of a
    # shape, Bernoulli draws.
    def size_of(size):
        return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list,
                                                                          torch.Size)) else size

    def randn_like(x, *args, dtype=None, **kwargs):
        like = torch.zeros(x.shape, dtype=dtype or x.dtype)
        u1, u2 = torch.rand_like(like), torch.rand_like(like)
        return torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos((2.0 * math.pi) * u2)

    def rand(*size, dtype=None, **kwargs):
        return torch.rand_like(torch.zeros(size_of(size), dtype=dtype or torch.float32))

    def randn(*size, dtype=None, **kwargs):
        return randn_like(torch.zeros(size_of(size), dtype=dtype or torch.float32))

    def normal(mean, std=1.0, *args, **kwargs):
        like = mean if isinstance(mean, torch.Tensor) else std
        if not isinstance(like, torch.Tensor):
            return mean + std * randn(*args, **kwargs)
        return mean + std * randn_like(like)

    def bernoulli(p, *args, **kwargs):
        return (torch.rand_like(p) < p).to(p.dtype)
    for name, fn in (("randn_like", randn_like), ("rand", rand), ("randn", randn),
                     ("normal", normal), ("bernoulli", bernoulli)):
        patched.append((torch, name, getattr(torch, name)))
        setattr(torch, name, fn)

    # In-place draws into a tensor (F.gumbel_softmax's
    # `empty_like(logits).exponential_()`, noise by `.normal_()`).
    def exponential_(self, lambd=1.0, generator=None):
        return self.copy_(-torch.log1p(-torch.rand_like(self)) / lambd)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        return self.copy_(a + (b - a) * torch.rand_like(self))

    def normal_(self, mean=0.0, std=1.0, generator=None):
        return self.copy_(mean + std * randn_like(self))
    for name, fn in (("exponential_", exponential_), ("uniform_", uniform_),
                     ("normal_", normal_)):
        patched.append((torch.Tensor, name, getattr(torch.Tensor, name)))
        setattr(torch.Tensor, name, fn)

    # A stacked nn.LSTM/GRU/RNN with dropout between its layers draws its
    # masks inside ATen (aten.bernoulli_): run it layer by layer
    # (_masked_rnn) with F.dropout's masks, the same in the trace and the
    # reference.
    for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
        def rnn_forward(self, input, hx=None, _original=cls.forward):
            if (self.training and self.dropout and self.num_layers > 1
                    and isinstance(input, torch.Tensor) and input.dim() == 3):
                x = input.transpose(0, 1) if self.batch_first else input
                full = torch.full((x.shape[1],), x.shape[0], dtype=torch.int64)
                out, state = _masked_rnn(self, _MaskedSequence(x, full, None, None), hx)
                out = out.data
                return (out.transpose(0, 1) if self.batch_first else out), state
            return _original(self, input, hx)
        patched.append((cls, "forward", cls.forward))
        cls.forward = rnn_forward

    def arguments(args, kwargs, p_index, training_index):
        p = kwargs.get("p", args[p_index - 1] if len(args) >= p_index else 0.5)
        training = kwargs.get("training", args[training_index - 1]
                              if len(args) >= training_index else True)
        return p, training

    def scaled_keep(x, shape, p):
        """The k-th dropout's keep mask of `shape`, scaled by 1 / (1 - p):
        native_dropout of ones (trace) or the same mask in NumPy."""
        k = counts["dropout"]
        counts["dropout"] += 1
        if mode == "trace":
            return torch.ops.aten.native_dropout(torch.ones(shape, dtype=x.dtype), p, True)[0]
        keep = torch.from_numpy(philox_keep(seed, k, tuple(shape), p))
        return keep.to(x.dtype) / (1.0 - p)

    def trivial(x, p, training):
        """x itself (eval, p = 0), zeros (p = 1), or None: draw a mask."""
        if not training or p == 0:
            return x
        return x * 0 if p == 1 else None

    def dropout(x, *args, **kwargs):
        p, training = arguments(args, kwargs, 1, 2)
        if (t := trivial(x, p, training)) is not None:
            return t
        if mode == "trace":
            counts["dropout"] += 1
            return torch.ops.aten.native_dropout(x, p, True)[0]
        return x * scaled_keep(x, x.shape, p)

    def feature_shape(x, unbatched_rank):
        """One mask element per channel (and sample): x's first two dims
        (one for an unbatched input), ones after."""
        lead = 1 if x.dim() == unbatched_rank else 2
        return tuple(x.shape[:lead]) + (1,) * (x.dim() - lead)

    def channel_dropout(unbatched_rank):
        def fn(x, *args, **kwargs):
            p, training = arguments(args, kwargs, 1, 2)
            if (t := trivial(x, p, training)) is not None:
                return t
            return x * scaled_keep(x, feature_shape(x, unbatched_rank), p)
        return fn

    def alpha(feature):
        """ATen's alpha dropout (_dropout_impl): x * keep * a + b with
        b = (keep - 1) alpha' a + alpha' a p, so SELU's mean and variance
        are kept; `feature` draws one mask element per channel."""
        def fn(x, *args, **kwargs):
            p, training = arguments(args, kwargs, 1, 2)
            if (t := trivial(x, p, training)) is not None:
                return t
            alpha_ = 1.7580993408473766
            a = 1.0 / math.sqrt((alpha_ * alpha_ * p + 1) * (1 - p))
            shape = feature_shape(x, -1) if feature else x.shape
            keep = scaled_keep(x, shape, p) * (1 - p)
            return x * (keep * a) + ((keep - 1) * (alpha_ * a) + alpha_ * a * p)
        return fn

    def rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
        """Training mode: a slope per element drawn uniformly from [lower,
        upper] (torch.rand_like: the step's seed); eval: their mean."""
        if not training:
            return F.leaky_relu(x, (lower + upper) / 2)
        slope = lower + (upper - lower) * torch.rand_like(x)
        return torch.where(x >= 0, x, x * slope)

    def stochastic_depth(x, p, sd_mode, training=True):
        """torchvision's: one mask element per sample ("row") or one for
        the batch, scaled by 1 / (1 - p)."""
        if p < 0.0 or p > 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if (t := trivial(x, p, training)) is not None:
            return t
        shape = ([x.shape[0]] if sd_mode == "row" else [1]) + [1] * (x.dim() - 1)
        return x * scaled_keep(x, shape, p)

    patched.append((F, "dropout", F.dropout))
    F.dropout = dropout
    if math_attention and hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2
        patched.append((F, "scaled_dot_product_attention", F.scaled_dot_product_attention))
        F.scaled_dot_product_attention = torchversion.scaled_dot_product_attention
    for name, fn in (("dropout1d", channel_dropout(2)), ("dropout2d", channel_dropout(-1)),
                     ("dropout3d", channel_dropout(4)), ("alpha_dropout", alpha(False)),
                     ("feature_alpha_dropout", alpha(True)), ("rrelu", rrelu)):
        if hasattr(F, name):
            patched.append((F, name, getattr(F, name)))
            setattr(F, name, fn)
    try:
        import torchvision.ops  # noqa: F401 (the package shadows its module's name)
        sd = sys.modules["torchvision.ops.stochastic_depth"]
        patched.append((sd, "stochastic_depth", sd.stochastic_depth))
        sd.stochastic_depth = stochastic_depth
    except ImportError:
        pass
    try:
        yield counts
    finally:
        for owner, name, fn in reversed(patched):
            setattr(owner, name, fn)


@contextlib.contextmanager
def substituted(module, tensors):
    """The module with its parameters and buffers replaced by `tensors`
    (name -> tensor) while tracing. Unlike stateless.functional_call in
    torch 1.13 this also refreshes nn.LSTM/GRU/RNN's cached flat weights, which
    otherwise enter the graph as constants without gradients."""
    # Every place a tensor is registered: a tied weight (a language model's
    # output layer sharing its embedding, `head.weight = tok.weight`) is one
    # parameter under two names, and named_parameters() gives only the
    # first; substituting that one alone left the other use a constant,
    # without its share of the gradient.
    places = {}
    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for attr, v in table.items():
                if v is not None:
                    places.setdefault(id(v), []).append((table, attr))
    saved = []
    for name, t in tensors.items():
        owner, _, attr = name.rpartition(".")
        m = module.get_submodule(owner) if owner else module
        table = m._parameters if attr in m._parameters else m._buffers
        for shared, shared_attr in places.get(id(table[attr]), [(table, attr)]):
            saved.append((shared, shared_attr, shared[shared_attr]))
            shared[shared_attr] = t
    rnns = [(m, m._flat_weights) for m in module.modules() if isinstance(m, torch.nn.RNNBase)]
    for m, _ in rnns:
        m._flat_weights = [getattr(m, n) if hasattr(m, n) else None
                           for n in m._flat_weights_names]
    try:
        yield module
    finally:
        for table, attr, old in reversed(saved):
            table[attr] = old
        for m, flat in rnns:
            m._flat_weights = flat


_RECORDS = []  # the (name, tensor) list of the trace under way, or None


def record(name, value):
    """Makes `value` (detached) an output of the exported step, named
    `name`: how a model reports what its forward decided (DFQ's executed
    bits) without changing the loss. A no-op outside act's export; AOTAutograd
    itself drops in-place writes to buffers other than BatchNorm's running
    statistics, so a buffer cannot carry it."""
    if _RECORDS and _RECORDS[-1] is not None:
        _RECORDS[-1].append((name, value.detach()))


class ExportError(Exception):
    pass


def _buffer_read_again(who, which=""):
    """The refusal of a forward that updates a buffer in place and reads it
    again (`which`: the buffer, where known)."""
    return (f"{who} cannot run a forward that updates a buffer in place which the backward "
            f"also reads ({which}spectral normalization's power iteration, "
            f"nn.utils.spectral_norm and nn.utils.parametrizations.spectral_norm, does): "
            f"normalize the weight between steps instead, or drop it")


def target_range(targets):
    """(min, max) of class-index targets, None for other targets."""
    if isinstance(targets, torch.Tensor) and not targets.is_floating_point() and targets.numel():
        return int(targets.min()), int(targets.max())
    return None


def check_classification(out, targets, classes=None):
    """What the default loss (cross-entropy) needs, said before PyTorch
    fails somewhere inside it; `classes`: the targets' target_range (the
    values of the example batch, read before tracing)."""
    if not isinstance(out, torch.Tensor):
        raise ExportError(f"the model returns a {type(out).__name__}, not a tensor of logits: "
                          f"return the logits, or give the factory a fourth element, a "
                          f"loss_fn(outputs, targets) that reduces the outputs to a scalar")
    if out.dim() < 2:
        raise ExportError(f"the model's output has shape {list(out.shape)}; cross-entropy "
                          f"needs [N, classes, ...] logits (or give a loss_fn)")
    if classes is not None and (classes[0] < 0 or classes[1] >= out.shape[1]):
        raise ExportError(f"targets must be class indices in [0, {out.shape[1]}) for the "
                          f"model's {out.shape[1]} outputs; found {classes[0]}..{classes[1]}")


def argument_dtype(t):
    """The element type of a step argument holding a tensor of dtype t."""
    return WIDENED[t][0] if t in WIDENED else mlir_dtype(t)


def mlir_dtype(t):
    if t not in DTYPES:
        raise ExportError(f"tensors of dtype {t} are not supported")
    return DTYPES[t]


def _data_names(kind, value):
    """Argument names of a workload's inputs or targets: `inputs`, or
    `inputs_0`, `inputs_1`, ... for a tuple."""
    if isinstance(value, (tuple, list)):
        return [f"{kind}_{i}" for i in range(len(value))]
    return [kind]


@contextlib.contextmanager
def _in_precision(modules, dtype):
    """`modules`' floating tensors in `dtype` during the block (in place: the
    code that calls them holds these objects), then back to their dtypes."""
    tensors = [t for m in modules for t in list(m.parameters()) + list(m.buffers())]
    kinds = [t.dtype for t in tensors]
    for m in modules:
        m.to(dtype)
    try:
        yield
    finally:
        with torch.no_grad():
            for t, kind in zip(tensors, kinds):
                if t.dtype != kind:
                    t.data = t.data.to(kind)


def _forward_functions(module):
    """The Python forward functions of `module` and its submodules (their
    classes' own or inherited; a scripted module's has none)."""
    found = {}
    for m in module.modules():
        try:
            fn = type(m).forward
        except Exception:  # noqa: BLE001 (a scripted module's forward)
            continue
        if isinstance(fn, types.FunctionType):
            found.setdefault(id(fn), fn)
    return list(found.values())


def _closure_cells(fn):
    """(cell, value) of a function's closure cells that hold a value."""
    out = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            out.append((cell, cell.cell_contents))
        except ValueError:  # an empty cell
            pass
    return out


def external_modules(workload):
    """(prefix, module) of the modules other than the workload's module and
    its submodules that its loss or its model's code reach by name: the
    loss itself when it is a module ("loss"), then "external0", ...."""
    own = {id(m) for m in workload.module.modules()}
    found, out = set(), []
    for fn in [workload.loss_fn] + _forward_functions(workload.module):
        for m in _modules_referenced(fn):
            if id(m) in own or id(m) in found:
                continue
            found.add(id(m))
            prefix = "loss" if m is workload.loss_fn else f"external{len(out)}"
            out.append((prefix, m))
    return out


def _modules_referenced(fn, seen=None):
    """nn.Modules a function reaches by name: its closure cells, the globals
    its code (and the code it nests) names, and the same for functions it
    holds (a loss calling a helper)."""
    seen = seen if seen is not None else set()
    if id(fn) in seen:
        return []
    seen.add(id(fn))
    if isinstance(fn, torch.nn.Module):
        return [fn]
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    values = [value for _, value in _closure_cells(fn)]
    names, stack = set(), [code]
    while stack:  # the globals the code loads (co_names also holds attributes)
        c = stack.pop()
        names.update(i.argval for i in dis.get_instructions(c)
                     if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    scope = getattr(fn, "__globals__", {})
    values += [scope[n] for n in names if n in scope]
    found = []
    for v in values:
        if isinstance(v, torch.nn.Module):
            found.append(v)
        elif isinstance(v, types.FunctionType):
            found += _modules_referenced(v, seen)
    return found


@contextlib.contextmanager
def external_buffers_kept(modules):
    """Buffers of `modules` (external_modules: the loss's and the model's
    code reach them by name) restored after the block: running them to
    trace and check the step must not move another model's BatchNorm
    statistics."""
    buffers = {id(b): (b, b.detach().clone()) for _, m in modules for b in m.buffers()}
    try:
        yield {k: b for k, (b, _) in buffers.items()}
    finally:
        with torch.no_grad():
            for b, value in buffers.values():
                b.copy_(value)


def first_examples(workload, count, above):
    """`workload` cut to the first `count` examples when its batch is larger
    than `above`: every input and target a tensor whose first dimension is
    that batch. None otherwise (a sequence-first recurrent input, an
    unbatched argument: the batch is not known)."""
    tensors = tensors_of(workload.inputs) + tensors_of(workload.targets)
    if not tensors or any(t.dim() == 0 for t in tensors):
        return None
    batch = tensors[0].shape[0]
    if batch <= above or any(t.shape[0] != batch for t in tensors):
        return None

    def cut(value):
        return rebuilt(value, [t[:count] for t in tensors_of(value)])
    return dataclasses.replace(workload, inputs=cut(workload.inputs),
                               targets=cut(workload.targets))


class Traced:
    """The aten graphs of a workload and the values around them."""

    def __init__(self, workload, seed=0, shapes_only=None):
        """shapes_only: trace without computing at the batch's size
        (torchversion.aot_trace): PyTorch's check against eager then runs on
        the first CHECK_BATCH examples, traced again with real tensors. None:
        so when the batch is larger than SHAPES_ONLY_ABOVE and every input
        and target can be cut to CHECK_BATCH along its first dimension;
        1.13's fake tensors refusing the step, it is traced with real ones."""
        # Tracing and the checks run the model and the loss several times:
        # other modules they call (a GAN's discriminator in the loss) keep
        # their buffers (BatchNorm's running statistics) as they were.
        self.external_modules = external_modules(workload)
        check = None
        if shapes_only is None:
            check = first_examples(workload, CHECK_BATCH, SHAPES_ONLY_ABOVE)
            shapes_only = check is not None
        self.shapes_only = False
        with external_buffers_kept(self.external_modules) as kept:
            self._external_buffers = kept
            if shapes_only:
                try:
                    self.shapes_only = True
                    self._trace(workload, seed)
                except torchversion.FakeTraceError:
                    self.shapes_only, check = False, None
            if not self.shapes_only:
                self._trace(workload, seed)
        if check is not None and not self.random:
            # (It raises as this trace's check would; its warnings are about
            # its batch, not the step's.)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Traced(check, seed, shapes_only=False)
        # The trace ran the step on real tensors: its activations are freed
        # now, and the process need not keep their pages.
        release_freed_memory()

    def _trace(self, workload, seed):
        self.workload = workload
        self.seed = seed
        module = workload.module
        self.param_names = [n for n, p in module.named_parameters() if p.requires_grad]
        params = dict(module.named_parameters())
        self.params = [params[n] for n in self.param_names]
        # Trainable parameters of other modules the loss or the model reach
        # by name (a criterion with weights, ArcFace's class centres; a
        # head kept outside the model; a GAN's discriminator in the
        # generator's loss) are parameters of the step too, named
        # `loss.<name>` (the loss module itself) or `external<i>.<name>`,
        # with gradients as eager autograd gives them.
        seen = {id(p) for p in module.parameters()}
        routes = [(module, n) for n in self.param_names]  # where each is substituted
        for prefix, m in self.external_modules:
            for n, p in m.named_parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    self.param_names.append(f"{prefix}.{n}")
                    self.params.append(p)
                    routes.append((m, n))
        # Buffers (BatchNorm's running statistics, masks, positional tables)
        # are arguments of the step; running statistics come back updated.
        # So are frozen parameters (requires_grad False), without gradients:
        # read at every call, not constants of the trace, since the user may
        # change them between steps (a mean teacher's or a momentum
        # encoder's moving average, a checkpoint loaded into a backbone).
        frozen = [(n, p) for n, p in module.named_parameters() if not p.requires_grad]
        self.buffer_names = [n for n, _ in module.named_buffers()] + [n for n, _ in frozen]
        buffers = {**dict(module.named_buffers()), **dict(frozen)}
        self.buffers = [buffers[n] for n in self.buffer_names]
        routes += [(module, n) for n in self.buffer_names]
        # The other modules' buffers and frozen parameters too: read at
        # every call, and a BatchNorm among them (a discriminator's in the
        # generator's loss) comes back updated, as in eager.
        seen.update(id(b) for b in self.buffers)
        for prefix, m in self.external_modules:
            tensors = list(m.named_buffers()) + [(n, p) for n, p in m.named_parameters()
                                                 if not p.requires_grad]
            for n, b in tensors:
                if id(b) not in seen:
                    seen.add(id(b))
                    self.buffer_names.append(f"{prefix}.{n}")
                    self.buffers.append(b)
                    routes.append((m, n))
        for n, b in zip(self.buffer_names, self.buffers):
            if b.dtype not in DTYPES:
                raise ExportError(f"buffer '{n}' has dtype {b.dtype}, which act does not support")
        names = self.param_names + self.buffer_names
        # The model's inputs and the loss's targets, flattened into the
        # step's arguments (module(*inputs); a tuple of targets given to the
        # loss as a tuple).
        inputs, targets = tensors_of(workload.inputs), tensors_of(workload.targets)
        n_inputs = len(inputs)
        self.n_data = n_inputs + len(targets)

        self.record_names = []
        # The targets' values, read before tracing (checked against the
        # logits' classes in the trace, before the loss reads them).
        classes = target_range(workload.targets)

        # The substitutions of the step's calls stay in place until their
        # backward has run (close_substitutions): a region under
        # torch.utils.checkpoint runs the module again during the backward,
        # which must read the step's arguments, not the module's own
        # tensors (they became constants, and its BatchNorm updated the
        # module's real running statistics while tracing).
        self._substitutions = []

        def step(*args):
            _RECORDS.append([])
            stack = contextlib.ExitStack()
            self._substitutions.append(stack)
            try:
                # (The loss too may read the module's parameters and buffers:
                # a penalty term, DFQ's beta.)
                by_owner = {}
                for (owner, name), value in zip(routes, args[:len(names)]):
                    by_owner.setdefault(id(owner), (owner, {}))[1][name] = value
                for owner, tensors in by_owner.values():
                    stack.enter_context(substituted(owner, tensors))
                data = args[len(names):]
                self._in_forward = True
                out = module(*data[:n_inputs])
                targets = rebuilt(workload.targets, data[n_inputs:])
                if workload.loss_fn is _ORIGINAL_F["cross_entropy"]:
                    check_classification(out, targets, classes)
                loss = traced_loss(workload.loss_fn)(out, targets)
                self._in_forward = False
            except BaseException:
                self._in_forward = False
                self.close_substitutions(len(self._substitutions) - 1)
                raise
            finally:
                records = _RECORDS.pop()
            self.record_names = [n for n, _ in records]
            return (loss, *[v for _, v in records]) if records else loss

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            primals = [p.detach().requires_grad_(True) for p in self.params]
            # Dropout becomes aten.native_dropout (a Philox mask from the
            # step's dropout seed).
            # How often each BatchNorm in training mode runs in the trace's
            # forward and backward together: twice under
            # torch.utils.checkpoint (its region runs again in the
            # backward), where eager updates the running statistics twice
            # per step (bn_updates; act.compile applies them so).
            norms = [m for m in module.modules()
                     if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training
                     and m.track_running_stats]
            runs = {id(m): 0 for m in norms}
            checkpointed = set()  # run inside a checkpoint region's forward
            self._in_forward = False

            def count(m, _):
                if not self._in_forward:
                    runs[id(m)] += 1
                elif regions[0]:
                    checkpointed.add(id(m))
            hooks = [m.register_forward_pre_hook(count) for m in norms]
            with random_ops("trace"), static_losses(), packed_sequences(module), \
                    reentrant_checkpoints(), torchversion.checkpoint_regions() as regions:
                try:
                    graphs, loss, mutated = torchversion.aot_trace(
                        step, [*primals, *[b.clone() for b in self.buffers], *inputs, *targets],
                        decompositions(), shapes_only=self.shapes_only)
                except Exception as e:
                    if torchversion.data_dependent_shape(e):
                        raise ExportError(f"{getattr(e, 'func', 'an op')}: {aten.BOOLEAN_MASK} "
                                          f"is not supported") from None
                    raise
                finally:
                    self.close_substitutions(0)  # (the trace's backward has run)
                    for h in hooks:
                        h.remove()
            # (Runs outside the step's forward are the backward's: one
            # joint backward is traced. PyTorch 2's traces no recomputation:
            # a region's module counts once more, as eager recomputes it.)
            self.bn_updates = {name: 1 + max(runs[id(m)], id(m) in checkpointed)
                               for name, m in module.named_modules()
                               if runs.get(id(m)) or id(m) in checkpointed}
            if self.record_names:
                loss = loss[0]
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                what = (f"has shape {list(loss.shape)}" if isinstance(loss, torch.Tensor)
                        else f"is a {type(loss).__name__}")
                raise ExportError(f"the loss of '{workload.name}' {what}; a scalar tensor is "
                                  f"expected (return one tensor from the model, or give a "
                                  f"loss_fn that reduces its outputs to a scalar)")
            try:
                loss.backward()
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    raise
                # torch 1.13's AOTAutograd writes the buffers the forward
                # updates back into its inputs, which its backward saved.
                raise ExportError(_buffer_read_again("PyTorch's trace of the step "
                                                     "(AOTAutograd)")) from None
        self.forward, self.backward = graphs["forward"], graphs["backward"]
        # PyTorch 2 traces a forward that updates a buffer in place as one
        # returning its new value. act's step gives BatchNorm's statistics'
        # updates itself (act.compile counts its batches); an update the
        # forward does not read again is dropped, as 1.13's trace dropped it
        # (DFQ's `executed`: act.export.record carries it); one it reads
        # again is refused, as 1.13 (which failed on it above) refused it.
        statistics = {id(t) for m in norms for t in m.buffers(recurse=False)}
        nparams = len(self.params)
        for i in torchversion.normalize_forward(self.forward, mutated):
            if nparams <= i < nparams + len(self.buffers) and \
                    id(self.buffers[i - nparams]) not in statistics:
                raise ExportError(_buffer_read_again(
                    "act", f"'{self.buffer_names[i - nparams]}'; "))
        self.random = any(n.op == "call_function" and str(n.target) in (
            "aten.native_dropout.default", "aten.rand_like.default")
            for gm in (self.forward, self.backward) for n in gm.graph.nodes)
        if not self.shapes_only:
            self._check_against_eager(step, primals)
        elif any(isinstance(getattr(gm, n.target), torch._subclasses.FakeTensor)
                 for gm in (self.forward, self.backward) for n in gm.graph.nodes
                 if n.op == "get_attr"):
            raise torchversion.FakeTraceError("the trace captured a fake constant")
        # Constant tensors the trace captured: small ones are arith.constants
        # of the step, large ones arguments (written with the inputs).
        self.constants = {}
        self.external = {}  # name -> a parameter of another module (the live object)
        for gm in (self.forward, self.backward):
            for n in gm.graph.nodes:
                if n.op == "get_attr":
                    value = getattr(gm, n.target)
                    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
                        value = value.float()  # a Python float captured as a tensor
                        n.meta["tensor_meta"] = n.meta["tensor_meta"]._replace(
                            dtype=torch.float32) if "tensor_meta" in n.meta else None
                    if not isinstance(value, torch.Tensor) or value.dtype not in DTYPES:
                        raise ExportError(f"the traced graph reads '{n.target}', a "
                                          f"{getattr(value, 'dtype', type(value).__name__)} "
                                          f"constant act does not support")
                    self.constants.setdefault(n.target, value.detach().clone())
                    if isinstance(value, torch.nn.Parameter) or id(value) in self._external_buffers:
                        self.external.setdefault(n.target, value)
        # Parameters and buffers of other modules the model or the loss
        # reads (a GAN's discriminator in the generator's loss): arguments
        # of the step whatever their size, so that act.compile reads their
        # current values at every call (their optimizer moves them in place,
        # their own steps update their running statistics).
        self.large_constants = [k for k, v in self.constants.items()
                                if v.numel() > MAX_INLINE_CONSTANT or k in self.external]
        # A step with dropout or rand_like takes its seed (an i64 scalar)
        # before the inputs. The k-th rand_like of the step (forward, then
        # backward: eager's order) draws Philox stream k.
        self.has_dropout = any(
            n.op == "call_function" and str(n.target) == "aten.native_dropout.default"
            for n in self.forward.graph.nodes)
        rands = [n for gm in (self.forward, self.backward) for n in gm.graph.nodes
                 if n.op == "call_function" and str(n.target) == "aten.rand_like.default"]
        for k, n in enumerate(rands):
            n.meta["act_random"] = k
        self.has_dropout = self.has_dropout or bool(rands)
        seed_arg = [torch.tensor(seed, dtype=torch.int64)] if self.has_dropout else []
        self.args = ([p.detach() for p in self.params] + [b.detach().clone() for b in self.buffers]
                     + [self.constants[k] for k in self.large_constants] + seed_arg
                     + list(inputs) + list(targets))
        self.arg_names = (self.param_names + ["buffer_" + n for n in self.buffer_names]
                          + ["const_" + k for k in self.large_constants]
                          + (["dropout_seed"] if self.has_dropout else [])
                          + _data_names("inputs", workload.inputs)
                          + _data_names("targets", workload.targets))
        # The positions among args of the traced function's arguments (its
        # placeholders): parameters, buffers, inputs, targets; constants and
        # the dropout seed are the step's own.
        nstate = len(self.params) + len(self.buffers)
        self.placeholder_args = list(range(nstate)) + list(
            range(len(self.args) - self.n_data, len(self.args)))
        self._check_widened()
        fw_out = self._output(self.forward)
        nrec = len(self.record_names)
        self.loss_node, self.saved = fw_out[0], list(fw_out[1 + nrec:])
        self.record_nodes = list(fw_out[1:1 + nrec])
        bw_ph = [n for n in self.backward.graph.nodes if n.op == "placeholder"]
        self.bw_saved, self.bw_tangents = bw_ph[:len(self.saved)], bw_ph[len(self.saved):]
        # (1.13's AOTAutograd gives the recorded outputs tangents too, 2.x's
        # none; they are detached, so the backward never reads them.)
        self.bw_record_tangents = self.bw_tangents[1:]
        self.bw_tangents = self.bw_tangents[:1]
        if (len(fw_out) != 1 + nrec + len(self.saved)
                or len(self.bw_record_tangents) not in (0, nrec)
                or any(n.users for n in self.bw_record_tangents)):
            raise ExportError("unexpected AOTAutograd partition (one loss output expected)")
        self.fw_placeholders = [n for n in self.forward.graph.nodes if n.op == "placeholder"]
        # AOTAutograd's partition lists the saved values in set order, which
        # changes from run to run; in forward-graph order the exported files
        # (and the split form's saved positions, hence the tensor ids) are
        # the same for every export of a model.
        order = {n: i for i, n in enumerate(self.forward.graph.nodes)}
        pairs = sorted(zip(self.saved, self.bw_saved), key=lambda p: order[p[0]])
        self.saved = [s for s, _ in pairs]
        self.bw_saved = [b for _, b in pairs]

    @staticmethod
    def _output(gm):
        return [n for n in gm.graph.nodes if n.op == "output"][0].args[0]

    def _check_widened(self):
        """uint8 data is widened to i32 where the step reads it; that is
        exact only while no op computes new uint8 values (PyTorch wraps
        them modulo 256)."""
        for gm in (self.forward, self.backward):
            for n in gm.graph.nodes:
                tm = n.meta.get("tensor_meta")
                if (n.op == "call_function" and getattr(tm, "dtype", None) in WIDENED
                        and str(n.target) not in UINT8_PRESERVING):
                    raise ExportError(
                        f"'{n.target}' (node '{n.name}') computes {tm.dtype} values, which "
                        f"act does not support (it reads {tm.dtype} data widened to int32, "
                        f"exact for conversions, comparisons and views); convert the "
                        f"tensor first, e.g. x.float() or x.long()")

    def index_ranges(self):
        """{step argument index: (lower, upper, ignore, what)}: the values
        an integer argument (token ids, class targets) must lie in because
        an op indexes with it unchanged (through reshapes, copies and
        conversions; not slices, which may index with only part of it):
        an embedding's rows, index_select's and gather's dim, x[idx]
        (negative from the end), nll_loss's classes (or its ignore_index).
        The runtime checks them before the step runs: an id out of range
        is an error there, as in PyTorch, not a silently clamped read."""
        passthrough = {"aten._to_copy.default", "aten.view.default", "aten._unsafe_view.default",
                       "aten._reshape_alias.default", "aten.reshape.default",
                       "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
                       "aten.clone.default", "aten.expand.default", "aten.permute.default",
                       "aten.transpose.int", "aten.t.default", "aten.alias.default",
                       "aten.detach.default", "aten.lift_fresh_copy.default"}
        placeholder_arg = dict(zip(self.fw_placeholders, self.placeholder_args))
        first_data = len(self.args) - self.n_data

        def source(node):
            while node.op == "call_function" and str(node.target) in passthrough:
                node = node.args[0]
            arg = placeholder_arg.get(node)
            return arg if arg is not None and arg >= first_data else None

        def shape(node):
            tm = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
            return tuple(tm.shape) if hasattr(tm, "shape") else None

        def size(node, dim):
            return shape(node)[dim]

        names = dict(zip(self.fw_placeholders, self.arg_names[:len(self.params)]))

        def indexed(node, dim):
            """What an index along `dim` of `node` picks from."""
            n = size(node, dim)
            if names.get(node) and dim == 0:
                return f"the {n} rows of {names[node]}"
            if str(getattr(node, "target", "")).startswith("aten.eye"):
                return f"the {n} classes of a one-hot (F.one_hot)"
            return f"a dim of size {n} ('{node.name}')"

        ranges = {}

        def bound(index_node, lower, upper, what, ignore=None):
            arg = source(index_node) if isinstance(index_node, torch.fx.Node) else None
            if arg is None:
                return
            lo, hi, ign, uses = ranges.get(arg, (lower, upper, ignore, []))
            ranges[arg] = (max(lo, lower), min(hi, upper),
                           ign if ign == ignore else None, uses + [what])

        for n in self.forward.graph.nodes:
            if n.op != "call_function":
                continue
            key, a = str(n.target), n.args
            if not a or shape(a[0]) is None:  # no layout metadata: not bounded
                continue
            if key == "aten.embedding.default":
                bound(a[1], 0, size(a[0], 0), indexed(a[0], 0))
            elif key in ("aten.index_select.default", "aten.gather.default"):
                dim = a[1] % len(shape(a[0]))
                bound(a[2], 0, size(a[0], dim), indexed(a[0], dim))
            elif key == "aten.index.Tensor":
                for k, i in enumerate(a[1]):
                    tm = i.meta.get("tensor_meta") if isinstance(i, torch.fx.Node) else None
                    if tm is not None and getattr(tm, "dtype", None) != torch.bool:
                        bound(i, -size(a[0], k), size(a[0], k), indexed(a[0], k))
            elif key in ("aten.nll_loss_forward.default", "aten.nll_loss2d_forward.default"):
                logits = shape(a[0])
                classes = logits[1] if len(logits) > 1 else logits[0]
                bound(a[1], 0, classes, f"the loss's {classes} classes",
                      ignore=a[4] if len(a) > 4 else -100)
        return ranges

    def without_gradient(self):
        """Indices of the parameters the loss does not read (eager autograd
        leaves their .grad None; the step returns zeros for them)."""
        outs = Traced._output(self.backward)[:len(self.params)]
        return [i for i, node in enumerate(outs) if node is None]

    def view_chain(self, node):
        """(placeholder, [view nodes from it to node]) if node is a view of
        a forward argument, else None."""
        chain = []
        while node.op == "call_function" and str(node.target) in VIEW_OPS:
            chain.append(node)
            node = node.args[0]
        if node.op == "placeholder":
            return node, list(reversed(chain))
        return None

    def reference(self):
        """The loss and parameter gradients by eager autograd in float64 (the
        exact answer act's float32 step is compared with), and the relative
        error of eager autograd in float32 against it, per gradient."""
        with external_buffers_kept(self.external_modules):
            return self._reference()

    def _reference(self):
        w = self.workload

        def run(dtype):
            module = copy_module(w.module).to(dtype)
            x = [t.to(dtype) if t.is_floating_point() else t for t in tensors_of(w.inputs)]
            y = rebuilt(w.targets, [t.to(dtype) if t.is_floating_point() else t
                                    for t in tensors_of(w.targets)])
            # Counts the random calls of one eager step (tracing runs twice).
            # (The backward inside too: its rand_like calls draw the step's
            # noise.)
            # A loss module (nn.CrossEntropyLoss(weight=...)) in the same
            # precision as the model.
            loss_fn = (copy_module(w.loss_fn).to(dtype)
                       if isinstance(w.loss_fn, torch.nn.Module) else w.loss_fn)
            # Other modules the loss or the model reach (external_modules)
            # run in this precision too, in place, and are restored.
            others = [m for prefix, m in self.external_modules if prefix != "loss"]
            params = dict(module.named_parameters())
            if isinstance(loss_fn, torch.nn.Module):
                params.update((f"loss.{n}", p) for n, p in loss_fn.named_parameters())
            for prefix, m in self.external_modules:
                if prefix != "loss":
                    params.update((f"{prefix}.{n}", p) for n, p in m.named_parameters())
            # (_in_precision outermost: reference_precision turns .to(float32)
            # into float64 while it lasts.)
            with _in_precision(others, dtype), \
                    random_ops("reference", self.seed,
                               self.random_counts if dtype == torch.float32 else None), \
                    reference_precision(dtype), reentrant_checkpoints():
                loss = loss_fn(module(*x), y)
                wrt = [params[n] for n in self.param_names]
                # A parameter the loss does not read has a zero gradient.
                grads = torch.autograd.grad(loss, wrt, allow_unused=True)
            return loss.detach(), [torch.zeros_like(p).detach() if g is None else g.detach()
                                   for p, g in zip(wrt, grads)]
        self.random_counts = {}
        loss, grads = run(torch.float64)
        _, grads32 = run(torch.float32)
        f32_error = [float((a.double() - b).norm() / max(float(b.norm()), 1e-300))
                     for a, b in zip(grads32, grads)]
        return loss, grads, f32_error

    def hooked_saved_bytes(self, as_traced=False):
        """Bytes autograd saves for backward in eager mode, counted with
        saved_tensors_hooks: each storage once, parameters excluded.
        as_traced: with the kernels the trace used (PyTorch 2's fused
        attention saves less than its math: torchversion.math_kernels)."""
        w = self.workload
        module = copy_module(w.module)
        param_ptrs = {torchversion.storage(p)[0] for p in list(module.parameters()) + self.params}
        seen = {}

        def pack(t):
            key, nbytes = torchversion.storage(t)
            if key not in param_ptrs and nbytes > 0:
                seen[key] = nbytes
            return t
        kernels = torchversion.math_kernels() if as_traced else contextlib.nullcontext()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                random_ops("reference", self.seed, math_attention=as_traced), kernels:
            loss = w.loss_fn(module(*tensors_of(w.inputs)), w.targets)
        del loss
        return sum(seen.values())

    def close_substitutions(self, keep):
        """Ends the step's substitutions opened after the first `keep`, the
        latest first (each restores what the one before it substituted)."""
        while len(self._substitutions) > keep:
            self._substitutions.pop().close()

    def _check_against_eager(self, step, primals):
        """The traced graphs' gradients (PyTorch running them, float32)
        against eager autograd on the same arguments: torch 1.13's
        AOTAutograd can trace a wrong graph (an in-place assignment through
        advanced indexing into a view, functionalized wrongly), and act would
        then compute those wrong gradients faithfully. Steps that draw
        random numbers are skipped (the graph and eager draw differently)."""
        if self.random:
            return
        w = self.workload

        def eager_grads(dtype):
            def cast(t):
                return t.to(dtype) if t.is_floating_point() else t
            params = [cast(p.detach()).requires_grad_(True) for p in self.params]
            # (A step's substitutions, when it keeps them: Traced's does.)
            stacks = getattr(self, "_substitutions", [])
            opened = len(stacks)
            try:
                with warnings.catch_warnings(), reference_precision(dtype), \
                        reentrant_checkpoints():
                    warnings.simplefilter("ignore")
                    loss = step(*params, *[cast(b.clone()) for b in self.buffers],
                                *[cast(t) for t in tensors_of(w.inputs)],
                                *[cast(t) for t in tensors_of(w.targets)])
                loss = loss[0] if isinstance(loss, tuple) else loss
                return torch.autograd.grad(loss, params, allow_unused=True)
            finally:
                while len(stacks) > opened:
                    stacks.pop().close()

        def distance(grads, reference):
            """(largest difference over the scale of `reference`, where)."""
            scale = math.sqrt(sum(float((e.double() ** 2).sum())
                                  for e in reference if e is not None))
            worst, where = 0.0, None
            for name, e, t in zip(self.param_names, reference, grads):
                if e is None and t is None:
                    continue  # a parameter the loss does not read, in both
                e = torch.zeros_like(t) if e is None else e
                t = torch.zeros_like(e) if t is None else t
                err = float((t.double() - e.double()).norm()) / max(scale, 1e-30)
                if err > worst:
                    worst, where = err, name
            return worst, where

        eager = eager_grads(torch.float32)
        traced = [p.grad for p in primals]
        worst, where = distance(traced, eager)
        if worst <= 1e-3:
            return
        # Two float32 computations of an ill-conditioned step (BatchNorm
        # over two values) differ this much too: against float64 eager
        # autograd, a right trace is about as far as eager float32 is.
        try:
            exact = eager_grads(torch.float64)
        except Exception:  # noqa: BLE001 (a model that only runs in float32)
            exact = None
        if exact is not None:
            traced_error, _ = distance(traced, exact)
            eager_error, _ = distance(eager, exact)
            if traced_error <= max(10 * eager_error, 1e-3):
                warnings.warn(
                    f"'{w.name}': float32 gradients here are ill-conditioned (eager autograd in "
                    f"float32 is {eager_error:.1e} off float64, PyTorch's trace {traced_error:.1e}); "
                    f"a larger batch or input usually helps (BatchNorm over few values)")
                return
        raise ExportError(
            f"PyTorch's own trace of the step (AOTAutograd, torch {torch.__version__}) "
            f"computes gradients {worst:.1e} off eager autograd (against the gradients' "
            f"scale; worst: '{where}'): act would compute the same wrong gradients. Known "
            f"cause: an in-place assignment through index tensors into a view "
            f"(x[:, idx] = v); write it out of place (torch.where, index_put, scatter)")


class Lowerer:
    """Lowers FX nodes into a Graph; env maps nodes to values."""

    def __init__(self, graph, where, constants=None):
        self.g, self.where, self.env = graph, where, {}
        self.constants = constants or {}

    def run(self, nodes):
        for n in nodes:
            if n.op == "call_function":
                self.env[n] = self.lower(n)
            elif n.op == "get_attr" and n not in self.env:
                self.env[n] = self.constants[n.target](self.g)

    def lower(self, n):
        if n.target is operator.getitem:
            return self.env[n.args[0]][n.args[1]]
        key = str(n.target)
        fn = aten.LOWERINGS.get(key)
        if fn is None:
            shapes = [list(a.meta["tensor_meta"].shape) for a in n.all_input_nodes
                      if "tensor_meta" in a.meta]
            raise ExportError(f"unsupported aten op '{key}': node '{n.name}' of the {self.where} "
                              f"graph, operand shapes {shapes}")
        args = map_arg(n.args, lambda a: self.env[a])
        kwargs = map_arg(n.kwargs, lambda a: self.env[a])
        self.g.value_of = self.env.get  # for lowerings that read a view's storage
        try:
            result = fn(self.g, n, *args, **kwargs)
        except aten.UnsupportedError as e:
            raise ExportError(f"{e} in the {self.where} graph") from None
        expected = aten.meta_shape(n)
        if isinstance(result, V) and expected is not None and tuple(expected) != result.shape:
            raise ExportError(f"internal: {key} ({n.name}) lowered to shape {result.shape}, "
                              f"PyTorch says {tuple(expected)}")
        return result


class Exporter:
    def __init__(self, traced):
        self.t = traced
        self.name = traced.workload.name

    def _arguments(self, g):
        # SSA names after the arguments' names (parameters prefixed p_).
        nparams = len(self.t.params)
        names = ["p_" + n for n in self.t.param_names] + self.t.arg_names[nparams:]
        args = [V(g.fresh(nm), a.shape, argument_dtype(a.dtype)) for nm, a in zip(names, self.t.args)]
        if self.t.has_dropout:
            g.dropout_seed = args[self.t.arg_names.index("dropout_seed")]
        # Constants: large ones read their argument, small ones are inlined.
        first = len(self.t.params) + len(self.t.buffers)
        by_name = dict(zip(self.t.large_constants, args[first:]))
        self.constants = {}
        for k, value in self.t.constants.items():
            if k in by_name:
                self.constants[k] = (lambda arg: lambda gr: arg)(by_name[k])
            else:
                self.constants[k] = (lambda v: lambda gr: dense_constant(gr, v, k))(value)
        return args

    def _buffer_updates(self, g, args):
        """The new values of the buffers the step updates (BatchNorm's running
        statistics), in buffer order: [(buffer index, V)]."""
        nparams = len(self.t.params)
        updates = getattr(g, "buffer_updates", {})
        out = []
        for i in range(len(self.t.buffers)):
            name = args[nparams + i].name
            if name in updates:
                out.append((i, updates[name]))
        return out

    def _records(self, fw):
        """The values the model recorded (act.export.record), after the
        buffer updates."""
        return [fw.env[n] for n in self.t.record_nodes]

    def _saved_in_backward(self, low, fw_env, bw_args=None):
        """Binds the backward graph's saved placeholders: views of arguments
        are re-derived from the argument."""
        for i, (s, ph) in enumerate(zip(self.t.saved, self.t.bw_saved)):
            chain = self.t.view_chain(s)
            value = bw_args[i] if bw_args is not None else fw_env[chain[0] if chain else s]
            if chain:
                replay = Lowerer(low.g, "backward", self.constants)
                replay.env[chain[0]] = value
                replay.run(chain[1])
                value = replay.env[chain[1][-1]] if chain[1] else value
            low.env[ph] = value

    def _index_range_attrs(self):
        """`act.index_range` argument attributes (Traced.index_ranges): the
        runtime refuses data outside them before the step runs."""
        attrs = {}
        for arg, (lower, upper, ignore, uses) in self.t.index_ranges().items():
            fields = [f"lower = {lower} : i64", f"upper = {upper} : i64"]
            if ignore is not None:
                fields.append(f"ignore = {ignore} : i64")
            if self.t.args[arg].dtype in WIDENED:
                fields.append("unsigned")
            what = "; ".join(uses).replace("\\", "\\\\").replace('"', '\\"')
            fields.append(f'use = "{self.t.arg_names[arg]} indexes {what}"')
            attrs[arg] = f"act.index_range = {{{', '.join(fields)}}}"
        return attrs

    def _saved_roots(self, fw_env):
        """(backward placeholder, forward root node) for saved views whose
        storage the backward addresses (as_strided with absolute offsets,
        from decompositions such as prod's backward): the views' roots."""
        out = []
        for s, ph in zip(self.t.saved, self.t.bw_saved):
            root = aten.storage_root(s)
            if (root is not s and isinstance(fw_env.get(root), V)
                    and any(str(u.target) == "aten.as_strided.default" for u in ph.users)):
                out.append((ph, root))
        return out

    def _gradients(self, low):
        outs = Traced._output(self.t.backward)[:len(self.t.params)]
        grads = []
        for node, p in zip(outs, self.t.params):
            grads.append(low.env[node] if node is not None else low.g.fill(tuple(p.shape), 0.0))
        return grads

    def _forward(self):
        """A new function body with the forward graph lowered into it:
        (graph, arguments, forward lowerer)."""
        g = Graph()
        args = self._arguments(g)
        fw = Lowerer(g, "forward", self.constants)
        values = []
        for i in self.t.placeholder_args:
            a, t = args[i], self.t.args[i].dtype
            if t in WIDENED:  # uint8: zero-extended where the step reads it
                a = g.ew([a], lambda b, u: b.cast("arith.extui", u, a.dtype, WIDENED[t][1]),
                         out_dtype=WIDENED[t][1], hint="widened")
            values.append(a)
        fw.env.update(zip(self.t.fw_placeholders, values))
        fw.run(self.t.forward.graph.nodes)
        return g, args, fw

    def joint(self):
        g, args, fw = self._forward()
        self.updated = self._buffer_updates(g, args)
        bw = Lowerer(g, "backward", self.constants)
        self._saved_in_backward(bw, fw.env)
        # A saved view's storage is its forward root's, which the joint
        # function still holds (as_strided in the backward addresses it).
        g.storage_of = {ph: (root, fw.env[root]) for ph, root in self._saved_roots(fw.env)}
        bw.env[self.t.bw_tangents[0]] = g.fill((), 1.0, hint="tangent")
        bw.run(self.t.backward.graph.nodes)
        results = ([fw.env[self.t.loss_node]] + self._gradients(bw) + [v for _, v in self.updated]
                   + self._records(fw))
        return func(f"{self.name}_step", args, results, g.lines, result_attrs={0: "act.loss"},
                    arg_attrs=self._index_range_attrs())

    def split(self):
        g, args, fw = self._forward()
        saved = []
        for s in self.t.saved:
            chain = self.t.view_chain(s)
            saved.append(fw.env[chain[0] if chain else s])
        # rand_like in the backward draws from the step's seed: the forward
        # passes it on as the last saved value (an i64 scalar).
        seed_saved = self.t.has_dropout and any(
            n.op == "call_function" and str(n.target) == "aten.rand_like.default"
            for n in self.t.backward.graph.nodes)
        roots = self._saved_roots(fw.env)
        saved += [fw.env[root] for _, root in roots]
        if seed_saved:
            saved.append(g.dropout_seed)
        # Arguments the backward reads as they are: {argument index: saved
        # positions} (act.Module hands the backward its incoming gradient in
        # the place of the tangent arguments it exports the module with).
        self.saved_arguments = {}
        for i, v in enumerate(saved):
            for k, a in enumerate(args):
                if v is a:
                    self.saved_arguments.setdefault(k, []).append(i)
        updated = [v for _, v in self._buffer_updates(g, args)]
        fwd = func(f"{self.name}_forward", args,
                   [fw.env[self.t.loss_node]] + updated + self._records(fw) + saved,
                   g.lines,
                   attrs=f"act.backward = @{self.name}_backward, act.num_saved = {len(saved)} : i64",
                   result_attrs={0: "act.loss"}, arg_attrs=self._index_range_attrs())
        g = Graph()
        bargs = [V(g.fresh(f"saved{i}"), v.shape, v.dtype) for i, v in enumerate(saved)]
        tangent = V(g.fresh("tangent"), (), "f32")
        if seed_saved:
            g.dropout_seed = bargs[-1]
        bw = Lowerer(g, "backward", self.constants)
        self._saved_in_backward(bw, None, bargs[:len(self.t.saved)])
        n = len(self.t.saved)
        g.storage_of = {ph: (root, bargs[n + i]) for i, (ph, root) in enumerate(roots)}
        bw.env[self.t.bw_tangents[0]] = tangent
        bw.run(self.t.backward.graph.nodes)
        bwd = func(f"{self.name}_backward", bargs + [tangent], self._gradients(bw), g.lines)
        return fwd + "\n" + bwd

    def saved_argument_bytes(self):
        """Bytes of the non-parameter arguments the backward reads (act's
        report leaves arguments out: their memory exists anyway)."""
        roots = set()
        nparams = len(self.t.params)
        for s in self.t.saved:
            chain = self.t.view_chain(s)
            if chain:
                index = self.t.fw_placeholders.index(chain[0])
                if index >= nparams:
                    roots.add(self.t.placeholder_args[index])
        return sum(self.t.args[i].numel() * self.t.args[i].element_size() for i in roots)


def dense_constant(g, value, name):
    """A constant tensor captured by tracing, as an arith.constant."""
    from .mlir import scalar_literal, ttype
    dtype = mlir_dtype(value.dtype)
    flat = [scalar_literal(x, dtype) for x in value.flatten().tolist()]
    shape = tuple(value.shape)
    r = g.fresh("const_" + name)
    g.emit(f"{r} = arith.constant dense<[{', '.join(flat)}]> : {ttype((len(flat),), dtype)}")
    return g.reshape(V(r, (len(flat),), dtype), shape, hint="const")


def header(name, form, args):
    return (f"// {name}: {form} form, exported by python3 -m act.export "
            f"{' '.join(args)}\n")


def export(spec, batch, seed, out_dir, argv=(), batches=1):
    """Writes the files of the module docstring; returns the manifest.
    batches > 1 adds mini-batches (inputs and targets only, drawn with seeds
    derived from `seed`) for act-run --batch-inputs."""
    workload = load(spec, batch, seed)
    traced = Traced(workload, seed)
    ex = Exporter(traced)
    name = workload.name
    os.makedirs(out_dir, exist_ok=True)
    files = {"joint": os.path.join(out_dir, f"{name}.mlir"),
             "split": os.path.join(out_dir, f"{name}_split.mlir")}
    with open(files["joint"], "w") as f:
        f.write(header(name, "joint", argv) + ex.joint())
    with open(files["split"], "w") as f:
        f.write(header(name, "split", argv) + ex.split())
    in_dir = os.path.join(out_dir, f"{name}_inputs")
    ref_dir = os.path.join(out_dir, f"{name}_reference")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(ref_dir, exist_ok=True)
    arg_names = traced.arg_names
    inputs = []
    for i, (nm, a) in enumerate(zip(arg_names, traced.args)):
        path = os.path.join(in_dir, f"{i:03d}_{nm}.npy")
        np.save(path, a.detach().cpu().numpy())
        inputs.append(path)
    extra = []
    for k in range(1, batches):
        more = load(spec, batch, seed * 1000003 + k)
        paths = []
        for nm, t in zip(_data_names("inputs", more.inputs) + _data_names("targets", more.targets),
                         tensors_of(more.inputs) + tensors_of(more.targets)):
            path = os.path.join(in_dir, f"batch{k}_{nm}.npy")
            np.save(path, t.numpy())
            paths.append(path)
        extra.append(paths)
    loss, grads, f32_error = traced.reference()
    # (Under 1.13 eager runs the traced kernels: counted once.)
    hooks_bytes = traced.hooked_saved_bytes()
    np.save(os.path.join(ref_dir, "loss.npy"), loss.numpy())
    for i, gr in enumerate(grads):
        np.save(os.path.join(ref_dir, f"grad_{i}.npy"), gr.numpy())
    manifest = {
        "model": name, "batch": batch, "seed": seed, "torch": torch.__version__,
        "files": files,
        "arguments": [{"name": nm, "shape": list(a.shape), "dtype": argument_dtype(a.dtype)}
                      for nm, a in zip(arg_names, traced.args)],
        "inputs": inputs,
        "batches": extra,
        "reference": {"loss": float(loss), "dir": ref_dir, "dtype": "f64",
                      "f32_autograd_max_rel_error": max(f32_error, default=0.0)},
        "parameters": len(traced.params),
        "parameters_without_gradient": [traced.param_names[i] for i in traced.without_gradient()],
        "buffers": [{"name": n, "shape": list(b.shape), "dtype": mlir_dtype(b.dtype)}
                    for n, b in zip(traced.buffer_names, traced.buffers)],
        # Results after the gradients (joint form), or after the loss (split
        # forward): the new values of these buffers, in this order.
        "updated_buffers": [traced.buffer_names[i] for i, _ in ex.updated],
        "records": traced.record_names,
        "constants": {"inlined": len(traced.constants) - len(traced.large_constants),
                      "arguments": traced.large_constants},
        "dropout_calls": traced.random_counts["dropout"],
        "saved": {"aot_autograd_values": len(traced.saved),
                  "hooks_bytes": hooks_bytes,
                  "hooks_bytes_as_traced": (traced.hooked_saved_bytes(as_traced=True)
                                            if torchversion.TORCH2 else hooks_bytes),
                  "argument_bytes": ex.saved_argument_bytes()},
    }
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python3 -m act.export", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="mlp, cnn, resnet18, transformer, or file.py:factory")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output-dir", default=".")
    p.add_argument("--batches", type=int, default=1,
                   help="mini-batches to write (the extra ones for act-run --batch-inputs)")
    a = p.parse_args(argv)
    if a.batch < 1:
        p.error("--batch must be positive")
    try:
        m = export(a.model, a.batch, a.seed, a.output_dir, argv, a.batches)
    except (ExportError, ValueError) as e:
        print(f"act.export: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"act.export: error: cannot write the export to '{a.output_dir}': "
              f"{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # Never a traceback: say what failed, and where.
        if os.environ.get("ACT_EXPORT_TRACEBACK"):
            raise
        print(f"act.export: error: tracing '{a.model}' failed with "
              f"{type(e).__name__}: {e} (ACT_EXPORT_TRACEBACK=1 shows where)",
              file=sys.stderr)
        return 1
    print(f"act.export: {m['model']} (batch {a.batch}, seed {a.seed}): {m['parameters']} parameters, "
          f"{m['saved']['aot_autograd_values']} saved values")
    if m["dropout_calls"]:
        print(f"  dropout: {m['dropout_calls']} call(s), masks from the step's dropout_seed "
              f"argument (Philox4x32-10; this export's seed: {a.seed})")
    print(f"  joint: {m['files']['joint']}\n  split: {m['files']['split']}")
    print(f"  inputs: {len(m['inputs'])} .npy files in {os.path.dirname(m['inputs'][0])} "
          f"(manifest {os.path.join(a.output_dir, m['model'] + '.json')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
