"""act's own aten-to-aten decompositions, for ops whose only decomposition
in Debian's torch 1.13 is a torch._refs one (down to prims and strided views,
which act does not lower) or none at all.

Each is written with torch ops that reach act.aten's closed set (or another
decomposition): the exporter passes DECOMPOSITIONS to AOTAutograd beside
PyTorch's own aten-to-aten table (export.decompositions()). They run below
autograd: a forward op's derivative is still ATen's formula, so an op whose
backward is itself an op (`reflection_pad2d_backward`, `_cdist_backward`,
`smooth_l1_loss_backward`) has its decomposition here too. Formulas follow
ATen's CPU kernels; every entry is checked against float64 autograd by a
model of act.zoo's `ops_*` groups (python/tests/test_zoo.py).
"""

import math

import torch

from .torchversion import overload

aten = torch.ops.aten

DECOMPOSITIONS = {}

# ATen's loss reduction enum (at::Reduction).
_NONE, _MEAN, _SUM = 0, 1, 2


def _registrar(table):
    def register(*ops):
        """`fn` as the decomposition of `ops` in `table` (overloads, or their
        names where an overload exists in only some PyTorch versions:
        act.torchversion)."""
        def add(fn):
            for op in ops:
                op = overload(op) if isinstance(op, str) else op
                if op is not None:
                    table[op] = fn
            return fn
        return add
    return register


register = _registrar(DECOMPOSITIONS)


def _reduce(loss, reduction):
    if reduction == _MEAN:
        return loss.mean()
    if reduction == _SUM:
        return loss.sum()
    return loss


# -- element-wise -----------------------------------------------------------

@register(aten.lerp.Scalar, aten.lerp.Tensor)
def lerp(start, end, weight):
    """ATen: weight < 0.5 ? start + weight (end - start) : end - (end - start) (1 - weight)."""
    diff = end - start
    if isinstance(weight, torch.Tensor):
        return torch.where(weight.abs() < 0.5, start + weight * diff, end - diff * (1 - weight))
    return start + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)


@register(aten.hardshrink.default)
def hardshrink(x, lambd=0.5):
    return torch.where((x >= -lambd) & (x <= lambd), torch.zeros_like(x), x)


@register(aten.softshrink.default)
def softshrink(x, lambd=0.5):
    zero = torch.zeros_like(x)
    return torch.where(x > lambd, x - lambd, torch.where(x < -lambd, x + lambd, zero))


@register(aten.glu.default)
def glu(x, dim=-1):
    a, b = x.chunk(2, dim)
    return a * torch.sigmoid(b)


@register(aten.clamp.Tensor)
def clamp_tensor(x, min=None, max=None):
    if min is not None:
        x = torch.maximum(x, min)
    if max is not None:
        x = torch.minimum(x, max)
    return x


@register(aten.isnan.default)
def isnan(x):
    return x != x


@register(aten.isinf.default)
def isinf(x):
    if not x.is_floating_point():
        return torch.zeros_like(x, dtype=torch.bool)
    return x.abs() == math.inf


@register(aten.isfinite.default)
def isfinite(x):
    if not x.is_floating_point():
        return torch.ones_like(x, dtype=torch.bool)
    return (x == x) & (x.abs() != math.inf)


@register(aten.isposinf.default)
def isposinf(x):
    return x == math.inf


@register(aten.isneginf.default)
def isneginf(x):
    return x == -math.inf


@register(aten.nan_to_num.default)
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    big = torch.finfo(x.dtype)
    posinf = big.max if posinf is None else posinf
    neginf = big.min if neginf is None else neginf
    x = torch.where(x != x, torch.full_like(x, nan), x)
    x = torch.where(x == math.inf, torch.full_like(x, posinf), x)
    return torch.where(x == -math.inf, torch.full_like(x, neginf), x)


@register(aten.threshold.default)
def threshold(x, threshold, value):
    return torch.where(x > threshold, x, torch.full_like(x, value))


@register(aten.celu.default)
def celu(x, alpha=1.0):
    return aten.elu(x, alpha, 1.0, 1.0 / alpha)


@register(aten.frac.default)
def frac(x):
    return x - torch.trunc(x)


@register(aten.sgn.default)
def sgn(x):
    return torch.sign(x)


@register(aten.logit.default)
def logit(x, eps=None):
    if eps is not None:
        x = x.clamp(eps, 1.0 - eps)
    return torch.log(x / (1 - x))


@register(aten.addcdiv.default)
def addcdiv(x, t1, t2, value=1):
    return x + value * (t1 / t2)


@register(aten.logaddexp.default)
def logaddexp(a, b):
    m = torch.maximum(a, b)
    return m + torch.log1p(torch.exp(-(a - b).abs()))


@register(aten.hypot.default)
def hypot(a, b):
    return torch.sqrt(a * a + b * b)


@register(aten.xlogy.Tensor)
def xlogy(x, y):
    """ATen: NaN where y is NaN, 0 where x is 0, else x log(y)."""
    out = torch.where(x == 0, torch.zeros_like(x * y), x * torch.log(y))
    return torch.where(y != y, y, out)


@register(aten.floor_divide.default)
def floor_divide(a, b):
    return torch.div(a, b, rounding_mode="floor")


# -- reductions and moments ---------------------------------------------------

@register(aten.var_mean.correction)
def var_mean(x, dim=None, *, correction=None, keepdim=False):
    dim = list(range(x.dim())) if dim is None else dim
    correction = 1 if correction is None else correction
    return (torch.var(x, dim, correction=correction, keepdim=keepdim),
            torch.mean(x, dim, keepdim=keepdim))


@register(aten.std_mean.correction)
def std_mean(x, dim=None, *, correction=None, keepdim=False):
    var, mean = var_mean(x, dim, correction=correction, keepdim=keepdim)
    return torch.sqrt(var), mean


@register(aten.trace.default)
def trace(x):
    return x.diagonal().sum()


@register(aten.diag.default)
def diag(x, diagonal=0):
    """A 1-d x on the diagonal of a square matrix, or a 2-d x's diagonal."""
    if x.dim() == 2:
        return x.diagonal(diagonal).clone()
    n, d = x.shape[0], diagonal
    m = n + abs(d)
    i = torch.arange(m)
    on = (i.unsqueeze(0) - i.unsqueeze(1)) == d                  # [row, col]: col - row == d
    src = (i if d >= 0 else i - (-d)).clamp(0, n - 1)            # x's index on row i
    return torch.where(on, x.index_select(0, src).unsqueeze(1).expand(m, m),
                       x.new_zeros(()).expand(m, m))


@register(aten.median.dim)
def median_dim(x, dim=-1, keepdim=False):
    """The lower median and its index, from a stable sort (PyTorch's index
    among equal values may differ; the value is the same)."""
    values, indices = torch.sort(x, stable=True, dim=dim)
    k = (x.shape[dim] - 1) // 2
    v, i = values.narrow(dim, k, 1), indices.narrow(dim, k, 1)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


@register(aten.median.default)
def median_all(x):
    return median_dim(x.reshape(-1), 0)[0]


@register(aten.kthvalue.default)
def kthvalue(x, k, dim=-1, keepdim=False):
    values, indices = torch.sort(x, stable=True, dim=dim)
    v, i = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


@register(aten.msort.default)
def msort(x):
    return torch.sort(x, 0)[0]


# -- layout -----------------------------------------------------------------

@register(aten.pixel_shuffle.default)
def pixel_shuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


@register(aten.pixel_unshuffle.default)
def pixel_unshuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


@register(aten.upsample_linear1d.vec)
def upsample_linear1d(x, output_size, align_corners, scale_factors):
    """1-d linear interpolation as the 2-d bilinear one over a height of 1."""
    size = None if output_size is None else [1, output_size[0]]
    scales = None if scale_factors is None else [1.0, scale_factors[0]]
    return aten.upsample_bilinear2d.vec(x.unsqueeze(2), size, align_corners,
                                        scales).squeeze(2)


@register("upsample_linear1d_backward.vec")
def upsample_linear1d_backward(grad, output_size, input_size, align_corners, scale_factors):
    size = None if output_size is None else [1, output_size[0]]
    scales = None if scale_factors is None else [1.0, scale_factors[0]]
    n, c, length = input_size
    return aten.upsample_bilinear2d_backward.vec(grad.unsqueeze(2), size, [n, c, 1, length],
                                                 align_corners, scales).squeeze(2)


def _pad_index(n, low, high, mode):
    """For each output position of a dim of size n padded by (low, high):
    the input position it reads (reflect: mirrored without the edge;
    replicate: clamped)."""
    i = torch.arange(-low, n + high)
    if mode == "reflect":
        i = i.abs()
        return (n - 1) - ((n - 1) - i).abs()
    return i.clamp(0, n - 1)


def _pad_pairs(x, padding):
    """(dim, low, high) from PyTorch's padding list (last dim first)."""
    return [(x.dim() - 1 - k, padding[2 * k], padding[2 * k + 1])
            for k in range(len(padding) // 2)]


def _pad(mode):
    def forward(x, padding):
        for dim, low, high in _pad_pairs(x, padding):
            x = x.index_select(dim, _pad_index(x.shape[dim], low, high, mode))
        return x
    return forward


def _pad_backward(mode):
    def backward(grad, x, padding):
        """Each output position's gradient added into the input position it
        read, one padded dim at a time (scatter_add)."""
        for dim, low, high in reversed(_pad_pairs(x, padding)):
            index = _pad_index(x.shape[dim], low, high, mode)
            shape = [1] * grad.dim()
            shape[dim] = index.shape[0]
            index = index.view(shape).expand(grad.shape)
            out = list(grad.shape)
            out[dim] = x.shape[dim]
            grad = grad.new_zeros(out).scatter_add(dim, index, grad)
        return grad
    return backward


for _mode, _ops in (("reflect", ("reflection_pad1d", "reflection_pad2d", "reflection_pad3d")),
                    ("replicate", ("replication_pad1d", "replication_pad2d",
                                   "replication_pad3d"))):
    for _name in _ops:
        DECOMPOSITIONS[getattr(aten, _name).default] = _pad(_mode)
        DECOMPOSITIONS[getattr(aten, _name + "_backward").default] = _pad_backward(_mode)


# -- losses and distances ---------------------------------------------------

@register(aten.smooth_l1_loss.default)
def smooth_l1_loss(x, target, reduction=_MEAN, beta=1.0):
    z = (x - target).abs()
    loss = z if beta == 0 else torch.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)
    return _reduce(loss, reduction)


@register(aten.smooth_l1_loss_backward.default)
def smooth_l1_loss_backward(grad, x, target, reduction, beta):
    norm = 1.0 / x.numel() if reduction == _MEAN else 1.0
    d = x - target
    if beta == 0:
        return torch.sign(d) * (norm * grad)
    return torch.where(d < -beta, -norm * grad,
                       torch.where(d > beta, norm * grad, norm * d * grad / beta))


def _rows(x):
    """[N, C, d1, ..] as [N d1 .., C] (the class dim last)."""
    c = x.shape[1]
    return x.movedim(1, -1).reshape(-1, c)


@register(aten.nll_loss2d_forward.default)
def nll_loss2d_forward(x, target, weight, reduction, ignore_index):
    """NLL over [N, C, H, W] with [N, H, W] targets (a segmentation
    model's cross-entropy) as the 1-d NLL over N H W rows."""
    out, total = aten.nll_loss_forward(_rows(x), target.reshape(-1), weight, reduction,
                                       ignore_index)
    return (out.reshape(target.shape) if reduction == _NONE else out), total


@register(aten.nll_loss2d_backward.default)
def nll_loss2d_backward(grad, x, target, weight, reduction, ignore_index, total_weight):
    g = grad.reshape(-1) if reduction == _NONE else grad
    rows = aten.nll_loss_backward(g, _rows(x), target.reshape(-1), weight, reduction,
                                  ignore_index, total_weight)
    n, c = x.shape[0], x.shape[1]
    return rows.reshape(n, *x.shape[2:], c).movedim(-1, 1)


@register(aten.huber_loss.default)
def huber_loss(x, target, reduction=_MEAN, delta=1.0):
    z = (x - target).abs()
    return _reduce(torch.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction)


@register(aten._cdist_forward.default)
def cdist_forward(x1, x2, p, compute_mode=None):
    """Distances between the rows of x1 [.., P, M] and x2 [.., R, M]:
    ||x1_i - x2_j||_p, computed directly (ATen's exact path)."""
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (diff != 0).to(x1.dtype).sum(-1)
    if p == math.inf:
        return diff.amax(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return torch.sqrt((diff * diff).sum(-1))
    return diff.pow(p).sum(-1).pow(1.0 / p)


@register(aten._cdist_backward.default)
def cdist_backward(grad, x1, x2, p, dist):
    """ATen's gradient for x1: zero where a distance is zero."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    g = grad.unsqueeze(-1)
    d = dist.unsqueeze(-1)
    zero = torch.zeros_like(diff)
    if p == 0:
        return torch.zeros_like(x1)
    if p == 1:
        return (g * torch.sign(diff)).sum(-2)
    if p == 2:
        safe = torch.where(d == 0, torch.ones_like(d), d)
        return torch.where(d == 0, zero, g * diff / safe).sum(-2)
    if p == math.inf:
        hit = (diff.abs() == d).to(x1.dtype)
        return (g * torch.sign(diff) * hit).sum(-2)
    safe = torch.where(d == 0, torch.ones_like(d), d)
    term = g * torch.sign(diff) * diff.abs().pow(p - 1) / safe.pow(p - 1)
    return torch.where(d == 0, zero, term).sum(-2)


@register(aten._trilinear.default)
def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """ATen's _trilinear (nn.Bilinear): each input unsqueezed at its expand
    dims, the product summed over sumdim."""
    total = i1.dim() + len(expand1)
    for x, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        assert x.dim() + len(expand) == total
    ins = []
    for x, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        for d in range(total):
            if d in expand:
                x = x.unsqueeze(d)
        ins.append(x)
    product = ins[0] * ins[1] * ins[2]
    return product.sum(list(sumdim)) if len(sumdim) else product


def _except(v, dim):
    """The dims of v other than `dim` (all of them for dim -1)."""
    return [d for d in range(v.dim()) if dim == -1 or d != dim % v.dim()]


@register(aten._weight_norm_interface.default)
def weight_norm_interface(v, g, dim=0):
    """nn.utils.weight_norm: w = v g / ||v|| with the norm over every dim
    but `dim` (ATen's norm_except_dim); returns (w, norms)."""
    norms = (v * v).sum(_except(v, dim), keepdim=True).sqrt()
    return v * (g / norms), norms


@register(aten._weight_norm_interface_backward.default)
def weight_norm_interface_backward(grad_w, v, g, norms, dim=0):
    """ATen's weight_norm_backward: grad_g = sum(grad_w v) / ||v||,
    grad_v = g / ||v|| (grad_w - v sum(grad_w v) / ||v||^2)."""
    sums = (grad_w * v).sum(_except(v, dim), keepdim=True)
    grad_g = sums / norms
    grad_v = (g / norms) * (grad_w - v * (sums / (norms * norms)))
    return grad_v, grad_g.reshape(g.shape)


# -- embedding bags -------------------------------------------------------------

def _bags(indices, offsets, include_last_offset, counted):
    """For each position of `indices`: its bag (offset2bag), and each bag's
    size (the positions where `counted` holds)."""
    count = offsets.shape[0] - (1 if include_last_offset else 0)
    starts = offsets[:count]
    positions = torch.arange(indices.shape[0])
    bag = (positions.unsqueeze(1) >= starts.unsqueeze(0)).to(torch.int64).sum(1) - 1
    member = bag.unsqueeze(1) == torch.arange(count).unsqueeze(0)
    sizes = (member & counted.unsqueeze(1)).to(torch.int64).sum(0)
    return bag, sizes, count


@register(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """Modes sum (0) and mean (1); rows at padding_idx count for nothing.
    Returns ATen's four results (the last two only as placeholders: the
    backward below recomputes what it needs)."""
    if mode == 2:
        raise NotImplementedError("nn.EmbeddingBag(mode='max') is not supported by act")
    counted = (indices != padding_idx if padding_idx is not None and padding_idx >= 0
               else torch.ones_like(indices, dtype=torch.bool))
    bag, sizes, count = _bags(indices, offsets, include_last_offset, counted)
    rows = weight.index_select(0, indices)
    scale = counted.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    rows = rows * scale.unsqueeze(1)
    out = weight.new_zeros(count, weight.shape[1]).index_add(0, bag, rows)
    if mode == 1:
        out = out / sizes.clamp(min=1).to(weight.dtype).unsqueeze(1)
    return out, bag, sizes, torch.zeros_like(sizes)


@register(aten._embedding_bag_backward.default)
def embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, max_indices,
                           num_weights, scale_grad_by_freq, mode, sparse,
                           per_sample_weights, padding_idx=-1):
    return embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, max_indices,
                                        num_weights, scale_grad_by_freq, mode,
                                        per_sample_weights, padding_idx)


@register(aten._embedding_bag_dense_backward.default)
def embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, max_indices, num_weights,
                                 scale_grad_by_freq, mode, per_sample_weights, padding_idx=-1):
    """d weight[v] = sum over positions p with indices[p] == v of
    grad[bag(p)] (divided by the bag's size in mean mode, times the
    per-sample weight), rows at padding_idx excluded."""
    if scale_grad_by_freq:
        raise NotImplementedError("nn.EmbeddingBag(scale_grad_by_freq=True) is not supported "
                                  "by act")
    rows = grad.index_select(0, offset2bag)
    scale = torch.ones_like(indices, dtype=grad.dtype)
    if mode == 1:
        scale = scale / bag_size.index_select(0, offset2bag).clamp(min=1).to(grad.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    if padding_idx is not None and padding_idx >= 0:
        scale = scale * (indices != padding_idx).to(grad.dtype)
    return grad.new_zeros(num_weights, grad.shape[1]).index_add(0, indices,
                                                               rows * scale.unsqueeze(1))


def _dim_mask(x, dim, index):
    """A bool mask broadcasting over x: true at the positions `index`
    names along dim."""
    n = x.shape[dim]
    hit = (torch.arange(n).unsqueeze(1) == index.reshape(1, -1)).to(torch.int64).sum(1) > 0
    shape = [1] * x.dim()
    shape[dim] = n
    return hit.view(shape)


@register(aten.index_fill.int_Scalar, aten.index_fill.int_Tensor)
def index_fill(x, dim, index, value):
    dim %= max(x.dim(), 1)
    return torch.where(_dim_mask(x, dim, index), value, x)


@register(aten.index_copy.default)
def index_copy(x, dim, index, source):
    """x with source's slices at `index` along dim (a scatter with the index
    broadcast over the other dims)."""
    dim %= max(x.dim(), 1)
    shape = [1] * source.dim()
    shape[dim] = index.shape[0]
    return x.scatter(dim, index.view(shape).expand(source.shape), source)


@register(aten.index_add.default)
def index_add(x, dim, index, source, alpha=1):
    """x with source's slices added at `index` along dim (a scatter_add with
    the index broadcast over the other dims)."""
    dim %= max(x.dim(), 1)
    if alpha != 1:
        source = source * alpha
    shape = [1] * source.dim()
    shape[dim] = index.shape[0]
    return x.scatter_add(dim, index.view(shape).expand(source.shape), source)


# -- 1.13's decompositions, for PyTorch 2 ------------------------------------
# Those 2.x moved to torch._refs (down to prims there) or writes otherwise
# (embedding as weight[indices], which reads negative indices): the same
# formulas, so that both versions reach act.aten with the same ops and
# meaning. Used under 2.x only (export.decompositions(); 1.13's table has
# them all, test_torchversion.py checks they compute the same).

FALLBACKS = {}
fallback = _registrar(FALLBACKS)


@fallback("embedding.default")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if indices.dim() == 1:
        return weight.index_select(0, indices)
    return weight.index_select(0, indices.reshape(-1)).view(list(indices.shape) + [weight.shape[1]])


@fallback("rsub.Scalar", "rsub.Tensor")
def rsub(x, other, alpha=1):
    return torch.sub(other, x, alpha=alpha)


@fallback("var.correction")
def var_correction(x, dim=None, correction=None, keepdim=False):
    dims = [] if dim is None else dim
    correction = 1 if correction is None else correction
    n = math.prod(x.shape) if not dims else math.prod(x.shape[d] for d in dims)
    sub = x - torch.mean(x, dims, True)
    total = torch.sum(sub * sub, dims, keepdim)
    return total / (n - correction) if correction else total / n


@fallback("std.correction")
def std_correction(x, dim=None, correction=None, keepdim=False):
    return torch.sqrt(torch.var(x, dim, correction=correction, keepdim=keepdim))


@fallback("elu.default")
def elu(x, alpha=1, scale=1, input_scale=1):
    return torch.where(x > 0, x * scale, (torch.exp(x * input_scale) - 1) * (alpha * scale))


@fallback("logsumexp.default")
def logsumexp(x, dim, keepdim=False):
    maxes = torch.amax(x, dim, keepdim=True)
    squeezed = maxes
    if not keepdim:
        for d in sorted((d % x.dim() for d in dim), reverse=True):
            squeezed = squeezed.squeeze(d)
    squeezed = torch.masked_fill(squeezed, squeezed.abs() == float("inf"), 0)
    return torch.sum(torch.exp(x - maxes), dim, keepdim).log().add(squeezed)


@fallback("native_group_norm.default")
def native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    shape = x.shape
    y = x.view(n, group, c // group, hxw)
    var = torch.var(y, dim=[2, 3], unbiased=False, keepdim=True)
    mean = torch.mean(y, dim=[2, 3], keepdim=True)
    rstd = torch.rsqrt(var + eps)
    out = ((y - mean) * rstd).view(shape)
    if weight is not None:
        out = out * weight.view(weight.shape + (1,) * (out.dim() - 2))
    if bias is not None:
        out = out + bias.view(bias.shape + (1,) * (out.dim() - 2))
    return out, mean.squeeze(3).squeeze(2), rstd.squeeze(3).squeeze(2)


@fallback("norm.Scalar", "norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype", "norm.ScalarOpt_dtype")
def norm(x, p=None, dim=None, keepdim=False, dtype=None):
    return torch.linalg.vector_norm(x, 2.0 if p is None else p, dim, keepdim, dtype=dtype)


@fallback("addcmul.default")
def addcmul(x, tensor1, tensor2, value=1):
    return x + value * tensor1 * tensor2


@fallback("dot.default")
def dot(x, other):
    return (x * other).sum()


# Real vectors: vdot is dot (PyTorch 2's spectral normalization uses it),
# in every version.
register("vdot.default")(dot)


@fallback("hardshrink_backward.default", "softshrink_backward.default")
def shrink_backward(grad, x, lambd):
    return torch.where((x >= -lambd) & (x <= lambd), 0.0, grad)


@fallback("prelu_backward.default")
def prelu_backward(grad, x, weight):
    w = weight
    for _ in range(2, grad.dim()):
        w = w.unsqueeze(-1)
    out = torch.where(x > 0, 0.0, x * grad).sum_to_size(w.shape)
    while out.dim() > weight.dim():
        out = out.squeeze(-1)
    return torch.where(x > 0, grad, w * grad), out
