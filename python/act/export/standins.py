"""What the trace runs in place of PyTorch's own: the decompositions it
takes, traceable stand-ins for functions AOTAutograd cannot trace as they
are (losses with data-dependent shapes, resizing, packed sequences,
checkpoints), the reference's precision, and the substitution of a
module's tensors by the step's arguments. act's Philox randomness is in
randomness.py."""

import contextlib
import copy
import math
import types

import numpy as np
import torch
import torch.nn.functional as F

from .. import torchversion
from ..decomp import DECOMPOSITIONS, FALLBACKS
from ..errors import ExportError


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
