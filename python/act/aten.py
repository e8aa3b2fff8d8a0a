"""Lowerings of aten ops (as AOTAutograd's FX graphs hold them) to MLIR.

One function per op, registered by name in LOWERINGS. A lowering gets the
Graph builder, the FX node, and the node's operands with FX nodes replaced by
their values (`V`, or a tuple for multi-result ops); it returns a V or a tuple
(None where an output is not computed). Formulas follow ATen's CPU kernels
and derivatives.yaml; every lowering is checked against autograd by the
gradient oracle (python/tests).
"""

import itertools
import math

import numpy as np
import torch

from .mlir import V, dims

LOWERINGS = {}


class UnsupportedError(Exception):
    """An op or an operand configuration the exporter cannot lower."""


def lowering(*names):
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn
    return register


def require(cond, node, what):
    if not cond:
        raise UnsupportedError(f"{node.target}: {what} is not supported (node '{node.name}')")


def meta_shape(node):
    """The shape PyTorch says `node` (its first output) has."""
    tm = node.meta.get("tensor_meta")
    if tm is not None and not hasattr(tm, "shape"):
        tm = tm[0]  # a multi-output op
    return tuple(tm.shape) if tm is not None else None


def resolve_sizes(sizes, numel):
    sizes = list(sizes)
    if -1 in sizes:
        known = math.prod(d for d in sizes if d != -1)
        sizes[sizes.index(-1)] = numel // known
    return tuple(sizes)


# -- element-wise backward (f32; the forward ops are typed, below) ------------

def _binary(fn):
    def lower(g, node, a, b, alpha=1):
        def body(bb, x, y):
            if alpha != 1:
                y = bb.mul(y, bb.c(alpha))
            return fn(bb, x, y)
        return g.ew([a, b], body, hint=node.name)
    return lower


LOWERINGS["aten.tanh_backward.default"] = _binary(
    lambda b, d, y: b.mul(d, b.sub(b.c(1.0), b.mul(y, y))))
LOWERINGS["aten.sigmoid_backward.default"] = _binary(
    lambda b, d, y: b.mul(d, b.mul(y, b.sub(b.c(1.0), y))))

SQRT1_2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_cdf(b, x):
    return b.mul(b.c(0.5), b.add(b.c(1.0), b.erf(b.mul(x, b.c(SQRT1_2)))))


@lowering("aten.gelu.default")
def gelu(g, node, x, approximate="none"):
    if approximate == "tanh":
        return gelu_tanh(g, node, x)
    require(approximate == "none", node, f"approximate='{approximate}'")
    return g.ew([x], lambda b, u: b.mul(u, _gelu_cdf(b, u)), hint=node.name)


@lowering("aten.gelu_backward.default")
def gelu_backward(g, node, grad, x, approximate="none"):
    if approximate == "tanh":
        return gelu_tanh_backward(g, node, grad, x)
    require(approximate == "none", node, f"approximate='{approximate}'")

    def body(b, d, u):
        pdf = b.mul(b.exp(b.mul(b.c(-0.5), b.mul(u, u))), b.c(INV_SQRT_2PI))
        return b.mul(d, b.add(_gelu_cdf(b, u), b.mul(u, pdf)))
    return g.ew([grad, x], body, hint=node.name)


@lowering("aten.threshold_backward.default")
def threshold_backward(g, node, grad, x, threshold):
    return g.ew([grad, x], lambda b, d, u: b.select(b.cmpf("ogt", u, b.c(threshold)), d, b.c(0.0)),
                hint=node.name)


# -- views and layout ---------------------------------------------------------

@lowering("aten.detach.default", "aten.clone.default", "aten.alias.default",
          "aten.lift_fresh_copy.default")
def identity(g, node, x, *args, **kwargs):
    return x


@lowering("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def view(g, node, x, sizes):
    return g.reshape(x, resolve_sizes(sizes, x.numel), hint=node.name)


@lowering("aten._reshape_alias.default")
def reshape_alias(g, node, x, sizes, strides):
    return g.reshape(x, resolve_sizes(sizes, x.numel), hint=node.name)


@lowering("aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
          "aten.flatten.using_ints")
def reshape_like_meta(g, node, x, *args):
    return g.reshape(x, meta_shape(node), hint=node.name)


@lowering("aten.t.default")
def t(g, node, x):
    return g.transpose(x, [1, 0], hint=node.name) if x.rank == 2 else x


@lowering("aten.transpose.int")
def transpose(g, node, x, d0, d1):
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.transpose(x, perm, hint=node.name)


@lowering("aten.permute.default")
def permute(g, node, x, perm):
    return g.transpose(x, perm, hint=node.name)


@lowering("aten.expand.default")
def expand(g, node, x, sizes, implicit=False):
    off = len(sizes) - x.rank
    shape = tuple(x.shape[i - off] if (s == -1) else s for i, s in enumerate(sizes))
    if shape == x.shape:
        return x
    return g.ew([x], lambda b, u: u, shape=shape, out_dtype=x.dtype, hint=node.name)


@lowering("aten.split.Tensor")
def split(g, node, x, size, dim=0):
    n = x.shape[dim % x.rank]
    return split_with_sizes(g, node, x, [min(size, n - s) for s in range(0, n, size)], dim)


@lowering("aten.slice.Tensor")
def slice_(g, node, x, dim=0, start=None, end=None, step=1):
    dim %= x.rank
    n = x.shape[dim]
    start = 0 if start is None else (start + n if start < 0 else min(start, n))
    end = n if end is None else (end + n if end < 0 else min(end, n))
    count = max(0, (end - start + step - 1) // step)
    offsets = [start if i == dim else 0 for i in range(x.rank)]
    sizes = [count if i == dim else d for i, d in enumerate(x.shape)]
    strides = [step if i == dim else 1 for i in range(x.rank)]
    return g.extract_slice(x, offsets, sizes, strides, hint=node.name)


@lowering("aten.cat.default")
def cat(g, node, tensors, dim=0):
    tensors = [x for x in tensors if x.numel > 0 or x.rank > 1]
    dim %= tensors[0].rank
    shape = list(tensors[0].shape)
    shape[dim] = sum(x.shape[dim] for x in tensors)
    out = g.empty(shape, tensors[0].dtype)
    start = 0
    for x in tensors:
        out = g.insert_slice(x, out, [start if i == dim else 0 for i in range(x.rank)],
                             hint=node.name)
        start += x.shape[dim]
    return out


# -- reductions -----------------------------------------------------------------

def _as_result_type(g, node, x):
    """x converted to the type PyTorch gives `node`'s result (a sum of
    booleans or small integers is an i64, sum(dtype=...) converts first)."""
    out = node_dtype(node)
    return typed_ew(g, node, [x], lambda b, u: u, out, out) if out != x.dtype else x


@lowering("aten.sum.dim_IntList")
def sum_dims(g, node, x, axes, keepdim=False, dtype=None):
    axes = list(range(x.rank)) if not axes else axes
    return g.reduce(_as_result_type(g, node, x), axes, keepdim, hint=node.name)


@lowering("aten.sum.default")
def sum_all(g, node, x, dtype=None):
    return g.reduce(_as_result_type(g, node, x), list(range(x.rank)), hint=node.name)


@lowering("aten.mean.dim")
def mean_dims(g, node, x, axes, keepdim=False, dtype=None):
    axes = list(range(x.rank)) if not axes else axes
    count = math.prod(x.shape[a % x.rank] for a in axes)
    s = g.reduce(x, axes, keepdim)
    return g.ew([s], lambda b, u: b.div(u, b.c(float(count))), hint=node.name)


@lowering("aten.mean.default")
def mean_all(g, node, x, dtype=None):
    return mean_dims(g, node, x, list(range(x.rank)))


# -- contractions -----------------------------------------------------------

@lowering("aten.mm.default")
def mm(g, node, a, b):
    return g.matmul(a, b, hint=node.name)


@lowering("aten.bmm.default")
def bmm(g, node, a, b):
    return g.batch_matmul(a, b, hint=node.name)


def _scaled_sum(g, node, prod, bias, beta, alpha):
    """alpha * prod + beta * bias (bias ignored when beta is 0, as in
    PyTorch)."""
    def body(bb, p, c):
        if alpha != 1:
            p = bb.mul(p, bb.c(alpha))
        if beta == 0:
            return p
        if beta != 1:
            c = bb.mul(c, bb.c(beta))
        return bb.add(p, c)
    return g.ew([prod, bias], body, hint=node.name)


@lowering("aten.baddbmm.default")
def baddbmm(g, node, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(g, node, g.batch_matmul(a, b), bias, beta, alpha)


@lowering("aten.addmm.default")
def addmm(g, node, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(g, node, g.matmul(a, b), bias, beta, alpha)


def _conv_args(node, stride, padding, dilation, transposed, output_padding, groups, w):
    require(w.rank in (4, 5), node, f"a {w.rank - 2}-d convolution (only 1-d, 2-d and 3-d)")
    require(w.rank == 4 or not transposed, node, "a transposed 3-d convolution")
    return list(stride), list(padding), list(dilation)


def _correlate(g, xp, w, shape, stride, dilation, groups, hint):
    """y[n, f, i, j] = sum over the group's channels c and the window of
    xp[n, (f floordiv F/G) * C/G + c, i * s + u * d, j * s + v * d] *
    w[f, c, u, v], for an already padded xp and an output `shape`: a linalg
    named convolution (mlir.Graph.conv2d)."""
    return g.conv2d(xp, w, stride, dilation, groups, shape, hint=hint)


def _input_gradient(g, grad, w, shape, stride, padding, dilation, groups, hint):
    """The input gradient of a convolution with weight w (F, C/G, k) whose
    output gradient is grad, for an input of `shape`: the correlation (stride
    1, the convolution's dilation) of the stride-dilated, padded gradient
    with the weight read backwards and with its two channel dims swapped
    within each group. (Also the forward of a transposed convolution.)"""
    (s0, s1), (p0, p1), (e0, e1) = stride, padding, dilation
    n, c, h, wd = shape
    f, cg, k0, k1 = w.shape
    fg = f // groups
    oh, ow = grad.shape[2:]
    r0, r1 = (k0 - 1) * e0, (k1 - 1) * e1
    lh = max(h + p0 + r0, r0 + (oh - 1) * s0 + 1)
    lw = max(wd + p1 + r1, r1 + (ow - 1) * s1 + 1)
    if p0 <= r0 and p1 <= r1:  # (padding within the kernel's reach: the usual case)
        gp = g.insert_slice(grad, g.fill((n, f, h + r0, wd + r1), 0.0),
                            [0, 0, r0 - p0, r1 - p1], [1, 1, s0, s1], hint=hint + "_dilated")
    else:
        gp = g.insert_slice(grad, g.fill((n, f, lh, lw), 0.0), [0, 0, r0, r1], [1, 1, s0, s1],
                            hint=hint + "_dilated")
        gp = g.extract_slice(gp, [0, 0, p0, p1], [n, f, h + r0, wd + r1], hint=hint + "_window")
    # flipped[g * C/G + c, f, u, v] = w[g * F/G + f, c, k0 - 1 - u, k1 - 1 - v]
    fexpr = f"(d0 floordiv {cg}) * {fg} + d1" if groups > 1 else "d1"
    cexpr = f"d0 mod {cg}" if groups > 1 else "d0"
    flipped = g.generic((c, fg, k0, k1), [(w, [fexpr, cexpr, f"{k0 - 1} - d2", f"{k1 - 1} - d3"])],
                        lambda b, u, o: u, hint=hint + "_flipped")
    return g.conv2d(gp, flipped, (1, 1), (e0, e1), groups, tuple(shape), hint=hint)


def _weight_gradient(g, grad, xp, wshape, stride, dilation, groups, hint):
    """The weight gradient (wshape: F, C/G, k) of a convolution of the padded
    input xp whose output gradient is grad: gw[f, c, u, v] = sum over n, i, j
    of grad[n, f, i, j] * xp[n, (f floordiv F/G) * C/G + c, i * s + u * d,
    j * s + v * d]. A convolution too, with the batch and channel dims
    swapped: xp's channels (C/G, G x N) as its batch and channels, grad (F,
    N) as its weight, the dilation as its stride and the stride as its
    dilation."""
    (s0, s1), (e0, e1) = stride, dilation
    f, cg, k0, k1 = wshape
    n, c = xp.shape[:2]
    oh, ow = grad.shape[2:]
    # Only the rows and columns some window reads.
    eh, ew = (k0 - 1) * e0 + (oh - 1) * s0 + 1, (k1 - 1) * e1 + (ow - 1) * s1 + 1
    if (eh, ew) != tuple(xp.shape[2:]):
        xp = g.extract_slice(xp, [0] * 4, [n, c, eh, ew], hint=hint + "_window")
    if groups == 1:
        xt = g.transpose(xp, [1, 0, 2, 3], hint=hint + "_input_t")
    else:
        x5 = g.expand_shape(xp, [[0], [1, 2], [3], [4]], (n, groups, cg, eh, ew),
                            hint=hint + "_groups")
        xt = g.collapse_shape(g.transpose(x5, [2, 1, 0, 3, 4], hint=hint + "_input_t"),
                              [[0], [1, 2], [3], [4]], hint=hint + "_input_t")
    gt = g.transpose(grad, [1, 0, 2, 3], hint=hint + "_grad_t")
    out = g.conv2d(xt, gt, (e0, e1), (s0, s1), groups, (cg, f, k0, k1), hint=hint)
    return g.transpose(out, [1, 0, 2, 3], hint=hint + "_t")


def _depth_planes(g, x, kd, do, sd, ed, hint):
    """The (N Do) x C x H x W planes of a depth-padded N x C x D x H x W
    tensor that depth tap kd of a 3-d convolution reads: depths kd * ed +
    od * sd for od < Do, output depths leading the batch."""
    n, c, _, h, w = x.shape
    planes = g.extract_slice(x, [0, 0, kd * ed, 0, 0], [n, c, do, h, w], [1, 1, sd, 1, 1],
                             hint=hint + f"_depth{kd}")
    planes = g.transpose(planes, [0, 2, 1, 3, 4], hint=hint + f"_depth{kd}_t")
    return g.reshape(planes, (n * do, c, h, w), hint=hint + f"_planes{kd}")


def _from_planes(g, y, n, hint):
    """(N Do) x F x H x W back to N x F x Do x H x W."""
    nd, f, h, w = y.shape
    y = g.reshape(y, (n, nd // n, f, h, w), hint=hint + "_depths")
    return g.transpose(y, [0, 2, 1, 3, 4], hint=hint + "_ncdhw")


def _tap(g, w, kd, hint):
    """Depth tap kd of a 3-d convolution's weight: F x C/G x kh x kw."""
    f, cg, _, kh, kw = w.shape
    tap = g.extract_slice(w, [0, 0, kd, 0, 0], [f, cg, 1, kh, kw], hint=hint + f"_tap{kd}")
    return g.reshape(tap, (f, cg, kh, kw), hint=hint + f"_tap{kd}_2d")


def _add(g, a, b, hint):
    return b if a is None else g.ew([a, b], lambda bb, u, v: bb.add(u, v), hint=hint)


def _conv3d(g, node, x, w, bias, stride, padding, dilation, groups):
    """A 3-d convolution as 2-d ones: output depth od sums, over the depth
    taps kd, the 2-d convolution of input depth kd * ed + od * sd (of the
    depth-padded input) with the weight's tap kd; each tap one 2-d
    convolution over all (N, Do) planes as its batch."""
    (sd, sh, sw), (pd, ph, pw), (ed, eh, ew) = stride, padding, dilation
    n, _, d, _, _ = x.shape
    kd = w.shape[2]
    do = (d + 2 * pd - ed * (kd - 1) - 1) // sd + 1
    xp = g.pad(x, [0, 0, pd, ph, pw], [0, 0, pd, ph, pw], hint=node.name + "_pad")
    y = None
    for k in range(kd):
        planes = _depth_planes(g, xp, k, do, sd, ed, node.name)
        y = _add(g, y, g.conv2d(planes, _tap(g, w, k, node.name), (sh, sw), (eh, ew), groups,
                                hint=node.name + f"_conv{k}"), node.name + f"_sum{k}")
    return _add_bias(g, _from_planes(g, y, n, node.name), bias, node.name)


def _conv3d_backward(g, node, grad, x, w, stride, padding, dilation, groups, output_mask):
    """The gradients of _conv3d, tap by tap: the weight gradient of tap kd
    is the 2-d weight gradient of its planes, the input gradient the sum of
    each tap's 2-d input gradient put back at the depths the tap read."""
    (sd, sh, sw), (pd, ph, pw), (ed, eh, ew) = stride, padding, dilation
    n, c, d, h, wd = x.shape
    f, cg, kd, kh, kw = w.shape
    do = grad.shape[2]
    g2 = g.reshape(g.transpose(grad, [0, 2, 1, 3, 4], hint=node.name + "_grad_t"),
                   (n * do,) + tuple(grad.shape[1:2]) + tuple(grad.shape[3:]),
                   hint=node.name + "_grad_planes")
    gi = gw = gb = None
    if output_mask[1]:
        xp = g.pad(x, [0, 0, pd, ph, pw], [0, 0, pd, ph, pw], hint=node.name + "_pad")
        gw = g.fill((f, cg, kd, kh, kw), 0.0, hint=node.name + "_weight_init")
        for k in range(kd):
            planes = _depth_planes(g, xp, k, do, sd, ed, node.name)
            tap = _weight_gradient(g, g2, planes, (f, cg, kh, kw), (sh, sw), (eh, ew), groups,
                                   node.name + f"_weight{k}")
            gw = g.insert_slice(g.reshape(tap, (f, cg, 1, kh, kw), hint=node.name + f"_w{k}"),
                                gw, [0, 0, k, 0, 0], hint=node.name + f"_weight_tap{k}")
    if output_mask[0]:
        dp = d + 2 * pd
        for k in range(kd):
            planes = _input_gradient(g, g2, _tap(g, w, k, node.name), (n * do, c, h, wd),
                                     (sh, sw), (ph, pw), (eh, ew), groups,
                                     node.name + f"_input{k}")
            depths = _from_planes(g, planes, n, node.name + f"_input{k}")
            placed = g.insert_slice(depths, g.fill((n, c, dp, h, wd), 0.0,
                                                   hint=node.name + f"_input{k}_init"),
                                    [0, 0, k * ed, 0, 0], [1, 1, sd, 1, 1],
                                    hint=node.name + f"_input{k}_placed")
            gi = _add(g, gi, placed, node.name + f"_input_sum{k}")
        if pd:
            gi = g.extract_slice(gi, [0, 0, pd, 0, 0], [n, c, d, h, wd], hint=node.name + "_unpad")
    if output_mask[2]:
        gb = g.reduce(grad, [0, 2, 3, 4], hint=node.name + "_bias")
    return gi, gw, gb


def _as_2d(g, x):
    """N x C x L as N x C x 1 x L."""
    return g.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))


def _add_bias(g, y, bias, hint):
    if bias is None:
        return y
    return g.ew([y, g.reshape(bias, (bias.shape[0],) + (1,) * (y.rank - 2))],
                lambda b, u, c: b.add(u, c), hint=hint)


@lowering("aten.convolution.default")
def convolution(g, node, x, w, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    """linalg.conv_2d_nchw_fchw of the padded input (any stride and
    dilation); grouped: a generic whose channel index is (f floordiv F/G) *
    C/G + c. Transposed: the input gradient of the convolution it
    transposes (weight Cin x Cout/G x k). 1-d: 2-d over a height of 1."""
    if w.rank == 3:
        y = convolution(g, node, _as_2d(g, x), _as_2d(g, w), bias, [1] + list(stride),
                        [0] + list(padding), [1] + list(dilation), transposed,
                        [0] + list(output_padding), groups)
        return g.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    stride, padding, dilation = _conv_args(node, stride, padding, dilation, transposed,
                                           output_padding, groups, w)
    if w.rank == 5:
        return _conv3d(g, node, x, w, bias, stride, padding, dilation, groups)
    if transposed:
        n, _, h, wd = x.shape
        shape = (n, w.shape[1] * groups) + tuple(
            (i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
                (h, wd), stride, padding, dilation, w.shape[2:], output_padding))
        y = _input_gradient(g, x, w, shape, stride, padding, dilation, groups, node.name)
        return _add_bias(g, y, bias, node.name)
    xp = g.pad(x, [0, 0] + padding, [0, 0] + padding, hint=node.name + "_pad")
    y = g.conv2d(xp, w, stride, dilation, groups, hint=node.name)
    return _add_bias(g, y, bias, node.name)


@lowering("aten.convolution_backward.default")
def convolution_backward(g, node, grad, x, w, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """Regular: the input gradient (_input_gradient), the weight gradient
    (the correlation of the padded input with the gradient), the bias
    gradient (the gradient summed). Transposed: the roles swap (the input
    gradient is the correlation of the padded gradient with the weight).
    1-d: 2-d over a height of 1."""
    if w.rank == 3:
        gi, gw, gb = convolution_backward(
            g, node, _as_2d(g, grad), _as_2d(g, x), _as_2d(g, w), bias_sizes,
            [1] + list(stride), [0] + list(padding), [1] + list(dilation), transposed,
            [0] + list(output_padding), groups, output_mask)
        return (g.reshape(gi, x.shape) if gi is not None else None,
                g.reshape(gw, w.shape) if gw is not None else None, gb)
    stride, padding, dilation = _conv_args(node, stride, padding, dilation, transposed,
                                           output_padding, groups, w)
    if w.rank == 5:
        return _conv3d_backward(g, node, grad, x, w, stride, padding, dilation, groups,
                                output_mask)
    (p0, p1) = padding
    gi = gw = gb = None
    if transposed:
        gp = g.pad(grad, [0, 0, p0, p1], [0, 0, p0, p1], hint=node.name + "_pad")
        if output_mask[0]:
            gi = _correlate(g, gp, w, x.shape, stride, dilation, groups, node.name + "_input")
        if output_mask[1]:
            gw = _weight_gradient(g, x, gp, w.shape, stride, dilation, groups,
                                  node.name + "_weight")
    else:
        # The weight gradient first: the input (decoded, when act stores it
        # encoded) and its padded copy die before the input gradient is
        # allocated, so the three are never live together.
        if output_mask[1]:
            xp = g.pad(x, [0, 0, p0, p1], [0, 0, p0, p1], hint=node.name + "_pad")
            gw = _weight_gradient(g, grad, xp, w.shape, stride, dilation, groups,
                                  node.name + "_weight")
        if output_mask[0]:
            gi = _input_gradient(g, grad, w, x.shape, stride, padding, dilation, groups,
                                 node.name + "_input")
    if output_mask[2]:
        gb = g.reduce(grad, [0, 2, 3], hint=node.name + "_bias")
    return gi, gw, gb


# -- pooling ------------------------------------------------------------------

def _pool_args(node, kernel, stride, padding, dilation, ceil_mode):
    kernel = list(kernel) * (2 // len(kernel))
    stride = list(stride or kernel) * (2 // len(stride or kernel))
    padding = list(padding) * (2 // len(padding))
    require(all(d == 1 for d in dilation) or "max_pool" in str(node.target), node,
            f"dilation={list(dilation)}")
    return kernel, stride, padding


def _pool_size(n, k, s, p, ceil_mode, dilation=1):
    """ATen's pooling_output_shape: with ceil_mode the last window may run
    past the end, but must start inside the input or its left padding."""
    out = (n + 2 * p - dilation * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _index_expr(b, dim, scale, offset):
    """index(dim) * scale + offset, as index."""
    i = b.index(dim)
    if scale != 1:
        i = b.op("arith.muli", i, b.c(scale, "index"), ty="index")
    if offset:
        i = b.op("arith.addi", i, b.c(offset, "index"), ty="index")
    return i


def _index_readers(node):
    """The nodes that read a max pool's indices (its second result)."""
    for user in node.users:
        if user.target is getattr(__import__("operator"), "getitem") and user.args[1] == 1:
            yield from user.users


def _backward_only_reader(reader):
    name = str(reader.target)
    return (reader.op == "output" or "max_pool2d_with_indices_backward" in name
            or "max_pool3d_with_indices_backward" in name
            or "adaptive_max_pool2d_backward" in name)


def _indices_only_for_backward(node):
    """The indices of a max pool are window-local (Gist): the position i * k1
    + j of the maximum in its k0 x k1 window, not ATen's h * W + w. That is
    exact for the pool's backward, and makes them small integers a narrow
    encoding stores in ceil(log2(k0 k1)) bits. Any other reader gets an
    error (2-d max pooling instead gives ATen's indices then:
    _flat_pool_indices)."""
    for reader in _index_readers(node):
        require(_backward_only_reader(reader), node,
                f"its indices read by {reader.target} (act keeps max-pool indices "
                "window-local, for the pool's backward only)")


def _flat_pool_indices(node):
    """Whether a 2-d max pool gives ATen's indices h * W + w (i64): when
    something besides its backward reads them (nn.MaxUnpool2d, whose
    backward gathers with them; a user's own use), else window-local ones
    (_indices_only_for_backward). The pool's backward reads either."""
    return not all(_backward_only_reader(r) for r in _index_readers(node))


def _pool_index_type(k0, k1):
    """The integer type of window-local indices: i8 for windows of up to
    127 positions (every pool in practice), else i32. A saved index tensor
    is then 1 byte per element before its encode, not ATen's 8 (at batch 64
    the VGG's first pool materialized 4 MB of i64 indices beside its 8 MB
    input, the forward's peak)."""
    return "i8" if k0 * k1 <= 127 else "i32"


@lowering("aten.max_pool2d_with_indices.default")
def max_pool2d(g, node, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """Max and the window-local index i * k1 + j of the first maximum of
    each window (ATen's order of the window; _indices_only_for_backward), or
    ATen's index h * W + w when more than its backward reads it;
    padding reads -inf."""
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, dilation, ceil_mode)
    flat = _flat_pool_indices(node)
    d0, d1 = (list(dilation) * 2)[:2] if dilation else (1, 1)
    n, c, h, w = x.shape
    oh = _pool_size(h, k0, s0, p0, ceil_mode, d0)
    ow = _pool_size(w, k1, s1, p1, ceil_mode, d1)
    e0 = max(0, (oh - 1) * s0 + d0 * (k0 - 1) + 1 - h - 2 * p0)
    e1 = max(0, (ow - 1) * s1 + d1 * (k1 - 1) + 1 - w - 2 * p1)
    xp = g.pad(x, [0, 0, p0, p1], [0, 0, p0 + e0, p1 + e1], value=-math.inf,
               hint=node.name + "_pad")
    window = g.empty((k0, k1))
    best = g.fill((n, c, oh, ow), -math.inf)
    ity = "i64" if flat else _pool_index_type(k0, k1)
    arg = g.fill((n, c, oh, ow), 0, ity)

    def body(b, v, _w, m, a):
        if flat:
            # (oh s0 - p0 + i d0) * W + ow s1 - p1 + j d1: never in the
            # padding, which reads -inf.
            row = b.op("arith.addi", _index_expr(b, 2, s0, 0), _index_expr(b, 4, d0, 0),
                       ty="index")
            col = b.op("arith.addi", _index_expr(b, 3, s1, 0), _index_expr(b, 5, d1, 0),
                       ty="index")
            local = b.op("arith.subi", b.op("arith.addi", b.op(
                "arith.muli", row, b.c(w, "index"), ty="index"), col, ty="index"),
                b.c(p0 * w + p1, "index"), ty="index")
        else:
            local = b.op("arith.addi", _index_expr(b, 4, k1, 0), b.index(5), ty="index")
        greater = b.cmpf("ogt", v, m)
        return [b.select(greater, v, m), b.select(greater, b.index_cast(local, ity), a, ty=ity)]
    return tuple(g.generic_multi(
        [(n, c, oh, ow)] * 2, ["f32", ity],
        [(xp, ["d0", "d1", f"d2 * {s0} + d4 * {d0}", f"d3 * {s1} + d5 * {d1}"]),
         (window, ["d4", "d5"])],
        body, ["parallel"] * 4 + ["reduction"] * 2, [dims(4)] * 2, [best, arg], hint=node.name))


def _dilated_max_pool_backward(g, node, grad, indices, shape, k, s, p, dil):
    """Dilated max pooling's input gradient: input (h, w) is kernel offset
    (i, j) of window ((h + p0 - i d0) / s0, ...) when that divides and is
    in range; it takes the window's gradient where the window's local
    index is i * k1 + j (read with tensor.extract)."""
    (k0, k1), (s0, s1), (p0, p1), (d0, d1) = k, s, p, dil
    oh, ow = grad.shape[-2:]
    ity = indices.dtype
    window = g.empty((k0, k1))

    def body(b, _w, o):
        def source(dim, kdim, pad, stride, dl, n_out):
            pos = b.op("arith.subi", _index_expr(b, dim, 1, pad), _index_expr(b, kdim, dl, 0),
                       ty="index")
            posi = b.index_cast(pos, "i64")
            ok = b.andi(b.cmpi("sge", posi, b.c(0, "i64"), "i64"),
                        b.cmpi("eq", b.op("arith.remsi", posi, b.c(stride, "i64"), ty="i64"),
                               b.c(0, "i64"), "i64"))
            q = b.op("arith.divsi", posi, b.c(stride, "i64"), ty="i64")
            ok = b.andi(ok, b.cmpi("slt", q, b.c(n_out, "i64"), "i64"))
            safe = b.select(ok, q, b.c(0, "i64"), ty="i64")
            return ok, b.cast("arith.index_cast", safe, "i64", "index")
        ok_r, r = source(2, 4, p0, s0, d0, oh)
        ok_c, cc = source(3, 5, p1, s1, d1, ow)
        at = f"{b.index(0)}, {b.index(1)}, {r}, {cc}"
        d = b.line("t", f"tensor.extract {grad.name}[{at}] : {grad.type}")
        idx = b.line("t", f"tensor.extract {indices.name}[{at}] : {indices.type}")
        if ity == "i64":  # ATen's indices (_flat_pool_indices): this element's own
            local = b.op("arith.addi", _index_expr(b, 2, shape[3], 0), b.index(3), ty="index")
        else:
            local = b.op("arith.addi", _index_expr(b, 4, k1, 0), b.index(5), ty="index")
        hit = b.andi(b.andi(ok_r, ok_c), b.cmpi("eq", idx, b.index_cast(local, ity), ity))
        return b.add(o, b.select(hit, d, b.c(0.0)))
    return g.generic(shape, [(window, ["d4", "d5"])], body,
                     iterators=["parallel"] * 4 + ["reduction"] * 2, out_exprs=dims(4),
                     init=g.fill(shape, 0.0), hint=node.name)


@lowering("aten.max_pool2d_with_indices_backward.default")
def max_pool2d_backward(g, node, grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    return _max_pool2d_scatter(g, node, grad, indices, x.shape, kernel, stride, padding,
                               dilation, ceil_mode)


@lowering("aten.max_unpool2d.default")
def max_unpool2d(g, node, x, indices, output_size):
    """nn.MaxUnpool2d: each element of `x` to the place its window's
    maximum came from, zeros elsewhere: the pool's backward with `x` as
    the gradient (its own backward is ATen's gather with the same
    indices). The indices must come from a 2-d max pool in this graph
    (which then gives ATen's h * W + w: _flat_pool_indices), unpooled to
    the pool's input size."""
    src = node.args[1]
    pool = src.args[0] if src.op == "call_function" and "getitem" in str(src.target) else None
    require(pool is not None and "max_pool2d_with_indices" in str(pool.target), node,
            "indices that are not a 2-d max pool's of this graph")
    in_shape = meta_shape(pool.args[0])
    require(in_shape is not None and list(output_size) == list(in_shape[2:]), node,
            f"output_size {list(output_size)} other than the pool's input "
            f"{list(in_shape[2:]) if in_shape else '(unknown)'}")
    kernel, stride, padding, dilation, ceil_mode = _max_pool2d_arguments(
        *pool.args[1:], **pool.kwargs)
    require(all(d == 1 for d in dilation), node, "unpooling a dilated max pool")
    # Where windows overlap, one place can be the maximum of several: ATen
    # writes the windows in order, and the last one stays.
    return _max_pool2d_scatter(g, node, x, indices, in_shape, kernel, stride, padding,
                               dilation, ceil_mode, last_wins=True)


def _max_pool2d_arguments(kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """A max_pool2d_with_indices node's arguments, with ATen's defaults."""
    return kernel, stride, padding, dilation, ceil_mode


def _max_pool2d_scatter(g, node, grad, indices, shape, kernel, stride, padding, dilation,
                        ceil_mode, last_wins=False):
    """Each input element sums the gradients of the windows whose argmax it
    is (`last_wins`: takes the value of the last such window, in ATen's
    order). The candidate windows of row h are (h + p) / s - i for i below
    ceil(k / s); the gradient and indices are padded (index -1) so every
    candidate is in bounds. Window-local indices or ATen's (i64)."""
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, dilation, ceil_mode)
    n, c, h, w = shape
    _, _, oh, ow = grad.shape
    if any(d != 1 for d in dilation):
        return _dilated_max_pool_backward(g, node, grad, indices, shape, (k0, k1), (s0, s1),
                                          (p0, p1), (list(dilation) * 2)[:2])
    c0, c1 = -(-k0 // s0), -(-k1 // s1)
    low = [0, 0, c0 - 1, c1 - 1]
    high = [0, 0, max(0, (h - 1 + p0) // s0 - (oh - 1)), max(0, (w - 1 + p1) // s1 - (ow - 1))]
    gp = g.pad(grad, low, high, hint=node.name + "_pad")
    ip = g.pad(indices, low, high, value=-1, hint=node.name + "_pad")
    window = g.empty((c0, c1))
    init = g.fill((n, c, h, w), 0.0)
    rows = f"(d2 + {p0}) floordiv {s0} - d4 + {c0 - 1}"
    cols = f"(d3 + {p1}) floordiv {s1} - d5 + {c1 - 1}"
    if last_wins:
        # The candidates in ATen's order of windows (rows, then columns,
        # ascending), the last hit kept. (ATen's indices only.)
        require(indices.dtype == "i64", node, "window-local indices")
        rows = f"(d2 + {p0}) floordiv {s0} + d4"
        cols = f"(d3 + {p1}) floordiv {s1} + d5"

    def body(b, d, idx, _w, o):
        # This element's place in candidate window (oh, ow) = ((h + p0) //
        # s0 - d4, ...): row (h + p0) % s0 + d4 * s0, column likewise; a hit
        # needs it inside the window and equal to the window-local index.
        def offset(dim, pad, stride, cand):
            moved = _index_expr(b, dim, 1, pad)
            rem = b.op("arith.remui", moved, b.c(stride, "index"), ty="index")
            return b.op("arith.addi", rem, _index_expr(b, cand, stride, 0), ty="index")
        ity = indices.dtype
        if ity == "i64":
            # ATen's indices: a hit is this element's own h * W + w (padded
            # windows hold -1).
            at = b.op("arith.addi", _index_expr(b, 2, w, 0), b.index(3), ty="index")
            hit = b.cmpi("eq", idx, b.index_cast(at, ity), ity)
            if last_wins:
                return b.select(hit, d, o)
            return b.add(o, b.select(hit, d, b.c(0.0)))
        kh, kw = offset(2, p0, s0, 4), offset(3, p1, s1, 5)
        local = b.op("arith.addi", b.op("arith.muli", kh, b.c(k1, "index"), ty="index"), kw,
                     ty="index")
        inside = b.op("arith.andi", b.cmpi("ult", kh, b.c(k0, "index"), "index"),
                      b.cmpi("ult", kw, b.c(k1, "index"), "index"), ty="i1")
        hit = b.op("arith.andi", inside,
                   b.cmpi("eq", idx, b.index_cast(local, ity), ity), ty="i1")
        return b.add(o, b.select(hit, d, b.c(0.0)))
    return g.generic((n, c, h, w),
                     [(gp, ["d0", "d1", rows, cols]), (ip, ["d0", "d1", rows, cols]),
                      (window, ["d4", "d5"])],
                     body, iterators=["parallel"] * 4 + ["reduction"] * 2,
                     out_exprs=dims(4), init=init, hint=node.name)


def _pool3d_args(node, kernel, stride, padding, dilation, ceil_mode):
    """3-d max pooling's window: kernel, stride and padding per dim (a
    single value for all three), dilation 1 and floor mode only."""
    def three(v, default):
        v = list(v or default)
        return v * 3 if len(v) == 1 else v
    require(all(d == 1 for d in (dilation or [1])), node, f"dilation={list(dilation)}")
    require(not ceil_mode, node, "ceil_mode=True (3-d)")
    kernel = three(kernel, None)
    return kernel, three(stride, kernel), three(padding, [0])


@lowering("aten.max_pool3d_with_indices.default")
def max_pool3d(g, node, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """Max and the window-local index (a * kh + b) * kw + c of the first
    maximum of each kd x kh x kw window (ATen's order; read only by the
    pool's backward, as for 2-d); padding reads -inf."""
    k, s, p = _pool3d_args(node, kernel, stride, padding, dilation, ceil_mode)
    _indices_only_for_backward(node)
    n, c = x.shape[:2]
    out = tuple(_pool_size(x.shape[2 + i], k[i], s[i], p[i], False) for i in range(3))
    xp = g.pad(x, [0, 0] + p, [0, 0] + p, value=-math.inf, hint=node.name + "_pad")
    window = g.empty(tuple(k))
    ity = "i8" if k[0] * k[1] * k[2] <= 127 else "i32"
    best = g.fill((n, c) + out, -math.inf)
    arg = g.fill((n, c) + out, 0, ity)

    def body(b, v, _w, m, a):
        local = b.op("arith.addi", b.op("arith.muli", b.op(
            "arith.addi", _index_expr(b, 5, k[1], 0), b.index(6), ty="index"),
            b.c(k[2], "index"), ty="index"), b.index(7), ty="index")
        greater = b.cmpf("ogt", v, m)
        return [b.select(greater, v, m), b.select(greater, b.index_cast(local, ity), a, ty=ity)]
    return tuple(g.generic_multi(
        [(n, c) + out] * 2, ["f32", ity],
        [(xp, ["d0", "d1"] + [f"d{2 + i} * {s[i]} + d{5 + i}" for i in range(3)]),
         (window, ["d5", "d6", "d7"])],
        body, ["parallel"] * 5 + ["reduction"] * 3, [dims(5)] * 2, [best, arg], hint=node.name))


@lowering("aten.max_pool3d_with_indices_backward.default")
def max_pool3d_backward(g, node, grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    """Each input element sums the gradients of the windows whose argmax it
    is: along each dim, the candidate windows of position h are (h + p) / s
    - i for i below ceil(k / s), the gradient and indices padded (index -1)
    so every candidate is in bounds (the 2-d form in three dims)."""
    k, s, p = _pool3d_args(node, kernel, stride, padding, dilation, ceil_mode)
    n, c = x.shape[:2]
    size, out = x.shape[2:], grad.shape[2:]
    cand = [-(-k[i] // s[i]) for i in range(3)]
    low = [0, 0] + [cand[i] - 1 for i in range(3)]
    high = [0, 0] + [max(0, (size[i] - 1 + p[i]) // s[i] - (out[i] - 1)) for i in range(3)]
    gp = g.pad(grad, low, high, hint=node.name + "_pad")
    ip = g.pad(indices, low, high, value=-1, hint=node.name + "_pad")
    window = g.empty(tuple(cand))
    at = ["d0", "d1"] + [f"(d{2 + i} + {p[i]}) floordiv {s[i]} - d{5 + i} + {cand[i] - 1}"
                         for i in range(3)]
    ity = indices.dtype

    def body(b, d, idx, _w, o):
        # Its offset in candidate window i: (h + p) % s + d * s per dim;
        # a hit needs all three inside the window and the local index.
        offs = []
        for i in range(3):
            rem = b.op("arith.remui", _index_expr(b, 2 + i, 1, p[i]), b.c(s[i], "index"),
                       ty="index")
            offs.append(b.op("arith.addi", rem, _index_expr(b, 5 + i, s[i], 0), ty="index"))
        local = b.op("arith.addi", b.op("arith.muli", b.op(
            "arith.addi", b.op("arith.muli", offs[0], b.c(k[1], "index"), ty="index"),
            offs[1], ty="index"), b.c(k[2], "index"), ty="index"), offs[2], ty="index")
        inside = b.cmpi("ult", offs[0], b.c(k[0], "index"), "index")
        for i in (1, 2):
            inside = b.op("arith.andi", inside,
                          b.cmpi("ult", offs[i], b.c(k[i], "index"), "index"), ty="i1")
        hit = b.op("arith.andi", inside, b.cmpi("eq", idx, b.index_cast(local, ity), ity), ty="i1")
        return b.add(o, b.select(hit, d, b.c(0.0)))
    return g.generic(tuple(x.shape), [(gp, at), (ip, at), (window, ["d5", "d6", "d7"])], body,
                     iterators=["parallel"] * 5 + ["reduction"] * 3, out_exprs=dims(5),
                     init=g.fill(tuple(x.shape), 0.0), hint=node.name)


@lowering("aten.avg_pool3d.default")
def avg_pool3d(g, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The window's sum (zeros for padding) over ATen's divisor."""
    k, s, p = _pool3d_args(node, kernel, stride, padding, (1,), ceil_mode)
    n, c = x.shape[:2]
    size = x.shape[2:]
    out = tuple(_pool_size(size[i], k[i], s[i], p[i], False) for i in range(3))
    xp = g.pad(x, [0, 0] + p, [0, 0] + p, hint=node.name + "_pad")
    window = g.empty(tuple(k))
    total = g.generic((n, c) + out,
                      [(xp, ["d0", "d1"] + [f"d{2 + i} * {s[i]} + d{5 + i}" for i in range(3)]),
                       (window, ["d5", "d6", "d7"])],
                      lambda b, u, _w, o: b.add(o, u),
                      iterators=["parallel"] * 5 + ["reduction"] * 3, out_exprs=dims(5),
                      init=g.fill((n, c) + out, 0.0), hint=node.name + "_sum")
    return _divide_by(g, total, _avg_divisors(g, size, out, k, s, p, count_include_pad,
                                              divisor_override), node.name)


@lowering("aten.avg_pool3d_backward.default")
def avg_pool3d_backward(g, node, grad, x, kernel, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    """Each padded-input position sums the divided gradients of the windows
    covering it (candidate windows as in the 2-d form), then the padding is
    cropped."""
    k, s, p = _pool3d_args(node, kernel, stride, padding, (1,), ceil_mode)
    n, c = x.shape[:2]
    size, out = x.shape[2:], grad.shape[2:]
    grad = _divide_by(g, grad, _avg_divisors(g, size, out, k, s, p, count_include_pad,
                                             divisor_override), node.name + "_scaled")
    padded = tuple(size[i] + 2 * p[i] for i in range(3))
    cand = [-(-k[i] // s[i]) for i in range(3)]
    low = [0, 0] + [cand[i] - 1 for i in range(3)]
    high = [0, 0] + [max(0, (padded[i] - 1) // s[i] - (out[i] - 1)) for i in range(3)]
    gp = g.pad(grad, low, high, hint=node.name + "_pad")
    window = g.empty(tuple(cand))
    at = ["d0", "d1"] + [f"d{2 + i} floordiv {s[i]} - d{5 + i} + {cand[i] - 1}" for i in range(3)]

    def body(b, d, _w, o):
        # Window (h floordiv s - j) covers h when h - its start < k.
        ok = None
        for i in range(3):
            r = b.line("t", f"affine.apply affine_map<(d0, d1) -> (d0 - (d0 floordiv {s[i]} - d1)"
                            f" * {s[i]})>({b.index(2 + i)}, {b.index(5 + i)})")
            inside = b.cmpi("slt", r, b.c(k[i], "index"), "index")
            ok = inside if ok is None else b.andi(ok, inside)
        return b.add(o, b.select(ok, d, b.c(0.0)))
    full = g.generic((n, c) + padded, [(gp, at), (window, ["d5", "d6", "d7"])], body,
                     iterators=["parallel"] * 5 + ["reduction"] * 3, out_exprs=dims(5),
                     init=g.fill((n, c) + padded, 0.0), hint=node.name + "_full")
    return g.extract_slice(full, [0, 0] + p, [n, c] + list(size), hint=node.name)


# -- normalization ------------------------------------------------------------

def _mean_f64(g, x, axes, count):
    """The mean of f32 x over axes, accumulated in f64 (ATen's CPU
    statistics accumulate in double), rounded to f32 once."""
    s = g.reduce(x, axes, hint="sum64", acc="f64")
    return g.ew([s], lambda b, v: b.cast("arith.truncf", b.op("arith.divf", v, b.c(count, "f64"),
                                                                ty="f64"), "f64", "f32"))


def _moments(g, x, axes, bshape, eps, hint):
    """mean and 1/sqrt(biased var + eps) over axes, shaped bshape."""
    count = float(math.prod(x.shape[a] for a in axes))
    mean = _mean_f64(g, x, axes, count)
    mean = g.reshape(mean, bshape)
    sq = g.ew([x, mean], lambda b, u, m: b.mul(b.sub(u, m), b.sub(u, m)))
    var = _mean_f64(g, sq, axes, count)
    rstd = g.ew([var], lambda b, v: b.rsqrt(b.add(v, b.c(eps))), hint=hint + "_rstd")
    g.last_variance = var
    return mean, g.reshape(rstd, bshape), count


def _affine_out(g, x, mean, rstd, w, bias, wshape, hint):
    ins = [x, mean, rstd] + ([g.reshape(w, wshape)] if w is not None else []) \
        + ([g.reshape(bias, wshape)] if bias is not None else [])

    def body(b, u, m, r, *wb):
        y = b.mul(b.sub(u, m), r)
        if w is not None:
            y = b.mul(y, wb[0])
        if bias is not None:
            y = b.add(y, wb[-1])
        return y
    return g.ew(ins, body, hint=hint)


def _affine_grads(g, grad, xhat, w, axes, mask):
    """A normalization's weight and bias gradients: sum(grad * xhat) and
    sum(grad) over `axes` (None where the mask or the affine is off)."""
    gw = gb = None
    if mask[1] and w is not None:
        gw = g.reshape(g.reduce(g.ew([grad, xhat], lambda b, u, v: b.mul(u, v)), axes), w.shape)
    if mask[2]:
        gb = g.reduce(grad, axes)
        if w is not None:
            gb = g.reshape(gb, w.shape)
    return gw, gb


def _norm_backward(g, grad, x, mean, rstd, w, wshape, axes, other_axes, count, mask, hint):
    """grad_input = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)) over
    axes, wg = w * grad; grad_weight = sum(grad * xhat), grad_bias =
    sum(grad), both over other_axes. The parameters' gradients come first:
    grad is then last read by wg (which can take its buffer), so the input
    gradient is computed with two full-size tensors live, not three."""
    xhat = g.ew([x, mean, rstd], lambda b, u, m, r: b.mul(b.sub(u, m), r))
    gi = None
    gw, gb = _affine_grads(g, grad, xhat, w, other_axes, mask)
    if mask[0]:
        wv = g.reshape(w, wshape) if w is not None else None
        wg = g.ew([grad, wv], lambda b, d, v: b.mul(d, v)) if wv is not None else grad
        keep = [1 if i in axes else d for i, d in enumerate(x.shape)]
        s1 = g.reshape(g.reduce(wg, axes), keep)
        s2 = g.reshape(g.reduce(g.ew([wg, xhat], lambda b, u, v: b.mul(u, v)), axes), keep)

        def body(b, d, xh, r, a, c):
            inner = b.sub(b.sub(d, b.div(a, b.c(count))), b.mul(xh, b.div(c, b.c(count))))
            return b.mul(r, inner)
        gi = g.ew([wg, xhat, rstd, s1, s2], body, hint=hint + "_input")
    return gi, gw, gb


@lowering("aten.native_layer_norm.default")
def native_layer_norm(g, node, x, normalized_shape, w, bias, eps):
    k = len(normalized_shape)
    axes = list(range(x.rank - k, x.rank))
    bshape = x.shape[:x.rank - k] + (1,) * k
    mean, rstd, _ = _moments(g, x, axes, bshape, eps, node.name)
    out = _affine_out(g, x, mean, rstd, w, bias, tuple(normalized_shape), node.name)
    return out, mean, rstd


@lowering("aten.native_layer_norm_backward.default")
def native_layer_norm_backward(g, node, grad, x, normalized_shape, mean, rstd, w, bias, mask):
    k = len(normalized_shape)
    axes = list(range(x.rank - k, x.rank))
    count = float(math.prod(normalized_shape))
    return _norm_backward(g, grad, x, mean, rstd, w, tuple(normalized_shape), axes,
                          list(range(x.rank - k)), count, mask, node.name)


def _bn_shapes(x):
    axes = [0] + list(range(2, x.rank))
    return axes, (x.shape[1],) + (1,) * (x.rank - 2)


def _running_stats(g, running_mean, running_var, bshape, eps):
    """(mean, 1 / sqrt(var + eps)) from the running statistics, shaped
    for broadcasting over x."""
    mean = g.reshape(running_mean, bshape)
    rstd = g.ew([g.reshape(running_var, bshape)], lambda b, v: b.rsqrt(b.add(v, b.c(float(eps)))))
    return mean, rstd


@lowering("aten.native_batch_norm.default")
def native_batch_norm(g, node, x, w, bias, running_mean, running_var, training, momentum, eps):
    """Training mode: the batch's statistics; running statistics, when the
    module tracks them, are updated as ATen does ((1 - momentum) * running +
    momentum * batch, the variance unbiased) and become results of the step
    (g.buffer_updates, by argument name)."""
    axes, bshape = _bn_shapes(x)
    if not training:
        # Eval mode (a frozen BatchNorm in a training step): the running
        # statistics normalize; nothing is updated; ATen's saved mean and
        # invstd are empty.
        require(running_mean is not None and running_var is not None, node,
                "batch norm in eval mode without running statistics")
        mean, rstd = _running_stats(g, running_mean, running_var, bshape, eps)
        out = _affine_out(g, x, mean, rstd, w, bias, bshape, node.name)
        return out, g.empty((0,)), g.empty((0,))
    mean, rstd, count = _moments(g, x, axes, bshape, eps, node.name)
    out = _affine_out(g, x, mean, rstd, w, bias, bshape, node.name)
    mean1 = g.reshape(mean, (x.shape[1],))
    rstd1 = g.reshape(rstd, (x.shape[1],))
    if running_mean is not None and running_var is not None:
        m = float(momentum)
        unbias = count / max(count - 1.0, 1.0)
        updates = g.__dict__.setdefault("buffer_updates", {})
        updates[running_mean.name] = g.ew(
            [running_mean, mean1], lambda b, r, u: b.add(b.mul(r, b.c(1.0 - m)), b.mul(u, b.c(m))),
            hint=node.name + "_running_mean")
        var = g.reshape(g.last_variance, (x.shape[1],))
        updates[running_var.name] = g.ew(
            [running_var, var],
            lambda b, r, u: b.add(b.mul(r, b.c(1.0 - m)), b.mul(b.c(m * unbias), u)),
            hint=node.name + "_running_var")
    return out, mean1, rstd1


@lowering("aten._native_batch_norm_legit_functional.default")
def native_batch_norm_legit_functional(g, node, x, w, bias, running_mean, running_var, training,
                                       momentum, eps):
    """PyTorch 2's functionalized BatchNorm: native_batch_norm whose
    results also hold the running statistics' new values."""
    out, mean, rstd = native_batch_norm(g, node, x, w, bias, running_mean, running_var, training,
                                        momentum, eps)
    updates = getattr(g, "buffer_updates", {})
    return (out, mean, rstd, updates.get(running_mean.name, running_mean),
            updates.get(running_var.name, running_var))


@lowering("aten._native_batch_norm_legit.default")
def native_batch_norm_legit(g, node, x, w, bias, running_mean, running_var, training, momentum,
                            eps):
    return native_batch_norm(g, node, x, w, bias, running_mean, running_var, training, momentum,
                             eps)


@lowering("aten._native_batch_norm_legit.no_stats")
def native_batch_norm_legit_no_stats(g, node, x, w, bias, training, momentum, eps):
    return native_batch_norm(g, node, x, w, bias, None, None, training, momentum, eps)


@lowering("aten._native_batch_norm_legit_no_training.default")
def native_batch_norm_legit_no_training(g, node, x, w, bias, running_mean, running_var, momentum,
                                        eps):
    return native_batch_norm(g, node, x, w, bias, running_mean, running_var, False, momentum,
                             eps)


@lowering("aten.native_batch_norm_backward.default")
def native_batch_norm_backward(g, node, grad, x, w, running_mean, running_var, save_mean,
                               save_invstd, train, eps, mask):
    axes, bshape = _bn_shapes(x)
    if not train:
        # ATen's eval-mode backward: the running statistics are constants,
        # grad_input = grad * w * invstd.
        mean, rstd = _running_stats(g, running_mean, running_var, bshape, eps)
        gi = None
        if mask[0]:
            wv = g.reshape(w, bshape) if w is not None else None
            ins = [grad, rstd] + ([wv] if wv is not None else [])
            gi = g.ew(ins, lambda b, d, r, *v: b.mul(b.mul(d, r), v[0]) if v else b.mul(d, r),
                      hint=node.name + "_input")
        xhat = g.ew([x, mean, rstd], lambda b, u, m, r: b.mul(b.sub(u, m), r))
        return (gi,) + _affine_grads(g, grad, xhat, w, axes, mask)
    count = float(math.prod(x.shape[a] for a in axes))
    return _norm_backward(g, grad, x, g.reshape(save_mean, bshape), g.reshape(save_invstd, bshape),
                          w, bshape, axes, axes, count, mask, node.name)


# -- softmax and losses -----------------------------------------------------

@lowering("aten._softmax.default")
def softmax(g, node, x, dim, half_to_float=False):
    m = g.reduce(x, [dim], keepdim=True, kind="max")
    e = g.ew([x, m], lambda b, u, v: b.exp(b.sub(u, v)))
    s = g.reduce(e, [dim], keepdim=True)
    return g.ew([e, s], lambda b, u, v: b.div(u, v), hint=node.name)


@lowering("aten._softmax_backward_data.default")
def softmax_backward(g, node, grad, out, dim, input_dtype):
    s = g.reduce(g.ew([grad, out], lambda b, u, v: b.mul(u, v)), [dim], keepdim=True)
    return g.ew([grad, out, s], lambda b, d, y, t: b.mul(y, b.sub(d, t)), hint=node.name)


@lowering("aten._log_softmax.default")
def log_softmax(g, node, x, dim, half_to_float=False):
    m = g.reduce(x, [dim], keepdim=True, kind="max")
    s = g.reduce(g.ew([x, m], lambda b, u, v: b.exp(b.sub(u, v))), [dim], keepdim=True)
    return g.ew([x, m, s], lambda b, u, v, t: b.sub(b.sub(u, v), b.log(t)), hint=node.name)


@lowering("aten._log_softmax_backward_data.default")
def log_softmax_backward(g, node, grad, out, dim, input_dtype):
    s = g.reduce(grad, [dim], keepdim=True)
    return g.ew([grad, out, s], lambda b, d, y, t: b.sub(d, b.mul(b.exp(y), t)), hint=node.name)


def _nll_args(node, x, weight, reduction):
    require(x.rank == 2, node, f"input of rank {x.rank} (only [N, C])")
    require(weight is None or (weight.rank == 1 and weight.shape[0] == x.shape[1]), node,
            "a class weight of another shape than [C]")
    require(reduction in (0, 1, 2), node, f"reduction={reduction}")


def _hit(b, t, ignore_index):
    """Whether the generic's class index d1 is row d0's target, not ignored."""
    c = b.index_cast(b.index(1), "i64")
    return b.andi(b.cmpi("eq", c, t, "i64"), b.cmpi("ne", t, b.c(ignore_index, "i64"), "i64"))


def _total_weight(g, x, target, weight, ignore_index):
    """ATen's total_weight: the non-ignored rows' class weights summed
    (their count without weights)."""
    if weight is None:
        init = g.fill((), 0.0)
        return g.generic((), [(target, ["d0"])],
                         lambda b, t, o: b.add(o, b.select(
                             b.cmpi("ne", t, b.c(ignore_index, "i64"), "i64"), b.c(1.0), b.c(0.0))),
                         iterators=["reduction"], out_exprs=[], init=init, hint="total_weight")
    init = g.fill((), 0.0)
    return g.generic((), [(target, ["d0"]), (weight, ["d1"]), (x, ["d0", "d1"])],
                     lambda b, t, w, _, o: b.add(o, b.select(_hit(b, t, ignore_index), w,
                                                             b.c(0.0))),
                     iterators=["reduction", "reduction"], out_exprs=[], init=init,
                     hint="total_weight")


@lowering("aten.nll_loss_forward.default")
def nll_loss_forward(g, node, x, target, weight, reduction, ignore_index):
    """-w[target[n]] x[n, target[n]] summed (or averaged over the
    non-ignored rows' weights), w = 1 without class weights."""
    _nll_args(node, x, weight, reduction)
    n, _ = x.shape
    init = g.fill((n,), 0.0)

    def pick(b, v, t, *rest):
        *w, o = rest
        value = b.mul(v, w[0]) if w else v
        return b.sub(o, b.select(_hit(b, t, ignore_index), value, b.c(0.0)))
    operands = [(x, ["d0", "d1"]), (target, ["d0"])] + ([(weight, ["d1"])] if weight else [])
    picked = g.generic((n,), operands, pick, iterators=["parallel", "reduction"],
                       out_exprs=["d0"], init=init)
    total = _total_weight(g, x, target, weight, ignore_index)
    if reduction == 0:
        return picked, total
    s = g.reduce(picked, [0])
    if reduction == 2:
        return s, total
    return g.ew([s, total], lambda b, u, v: b.div(u, v), hint=node.name), total


@lowering("aten.nll_loss_backward.default")
def nll_loss_backward(g, node, grad, x, target, weight, reduction, ignore_index, total_weight):
    _nll_args(node, x, weight, reduction)
    scale = grad
    if reduction == 1:
        scale = g.ew([grad, total_weight], lambda b, u, v: b.div(u, v))
    sexprs = ["d0"] if reduction == 0 else []

    def body(b, t, s, *rest):
        *w, o = rest
        value = b.mul(s, w[0]) if w else s
        return b.select(_hit(b, t, ignore_index), b.neg(value), b.c(0.0))
    operands = [(target, ["d0"]), (scale, sexprs)] + ([(weight, ["d1"])] if weight else [])
    return g.generic(x.shape, operands, body, hint=node.name)


# == The closed core set beyond the ops above ==================================
# What PyTorch's decompositions (act.export.DECOMPOSITIONS) leave: typed
# element-wise ops with broadcasting and type promotion, factories, views and
# indexing, pooling and grouped/dilated convolution. See docs/Exporter.md.

FLOAT_TYPES = ("f32", "f64", "f16", "bf16")


def node_dtype(node):
    """The MLIR element type PyTorch says `node` (its first output) has."""
    from .export import WIDENED, mlir_dtype
    tm = node.meta.get("tensor_meta")
    if tm is not None and not hasattr(tm, "dtype"):
        tm = tm[0]  # a multi-output op
    if tm is not None and tm.dtype in WIDENED:
        return WIDENED[tm.dtype][1]  # uint8 values, widened where the step read them
    return mlir_dtype(tm.dtype) if tm is not None else "f32"


def convert(b, x, src, dst):
    """Scalar x of type src as type dst (PyTorch's conversion rules)."""
    if src == dst:
        return x
    sf, df = src in FLOAT_TYPES, dst in FLOAT_TYPES
    if sf and df:
        return b.cast("arith.extf" if dst == "f64" else "arith.truncf", x, src, dst)
    if df:
        return b.cast("arith.uitofp" if src == "i1" else "arith.sitofp", x, src, dst)
    if dst == "i1":
        return b.cmpf("une", x, b.c(0.0, src)) if sf else b.cmpi("ne", x, b.c(0, src), src)
    if sf:
        return b.cast("arith.fptosi", x, src, dst)
    wide = {"i1": 1, "i8": 8, "i32": 32, "i64": 64}
    if wide[src] < wide[dst]:
        return b.cast("arith.extui" if src == "i1" else "arith.extsi", x, src, dst)
    return b.cast("arith.trunci", x, src, dst)


_FLOAT_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf",
              "max": "arith.maximumf", "min": "arith.minimumf", "pow": "math.powf",
              "rem": "arith.remf", "atan2": "math.atan2"}
_INT_OPS = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli", "div": "arith.divsi",
            "max": "arith.maxsi", "min": "arith.minsi", "rem": "arith.remsi",
            "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}
_BOOL_OPS = {"add": "arith.ori", "mul": "arith.andi", "max": "arith.ori", "min": "arith.andi",
             "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}
_CMP = {"eq": ("oeq", "eq"), "ne": ("une", "ne"), "gt": ("ogt", "sgt"), "ge": ("oge", "sge"),
        "lt": ("olt", "slt"), "le": ("ole", "sle")}


def arith(b, op, x, y, dtype):
    if op == "mod":
        # Python's (torch.remainder's) modulo: the sign of the divisor. ATen:
        # m = fmod(x, y); m + y where m != 0 and its sign differs from y's.
        m = arith(b, "rem", x, y, dtype)
        zero = b.c(0.0 if dtype in FLOAT_TYPES else 0, dtype)
        differ = b.op("arith.xori", compare(b, "lt", m, zero, dtype),
                      compare(b, "lt", y, zero, dtype), ty="i1")
        fix = b.andi(compare(b, "ne", m, zero, dtype), differ)
        return b.select(fix, arith(b, "add", m, y, dtype), m, ty=dtype)
    if dtype in FLOAT_TYPES:
        table = _FLOAT_OPS
    else:
        table = _BOOL_OPS if dtype == "i1" else _INT_OPS
    if op not in table:
        raise UnsupportedError(f"'{op}' on {dtype} elements")
    return b.op(table[op], x, y, ty=dtype)


def compare(b, op, x, y, dtype):
    fp, ip = _CMP[op]
    if dtype in FLOAT_TYPES:
        return b.line("p", f"arith.cmpf {fp}, {x}, {y} : {dtype}")
    return b.cmpi(ip, x, y, dtype)


def _operand_dtype(x):
    if isinstance(x, V):
        return x.dtype
    if isinstance(x, bool):
        return "i1"
    return "i64" if isinstance(x, int) else "f32"


def promote(*operands):
    """PyTorch's result type for tensors and Python scalars: tensors decide
    unless a scalar is of a higher kind (bool < int < float)."""
    kind = {"i1": 0, "i32": 1, "i64": 1, "f32": 2, "f16": 2, "bf16": 2, "f64": 2}
    tensors = [x.dtype for x in operands if isinstance(x, V)]
    best = max(tensors, key=lambda d: kind[d]) if tensors else "f32"
    for x in operands:
        if not isinstance(x, V) and x is not None and kind[_operand_dtype(x)] > kind[best]:
            best = "f32" if _operand_dtype(x) == "f32" else "i64"
    if "f32" in tensors and kind[best] == 2:
        best = "f32"
    return best


def typed_ew(g, node, operands, fn, compute, out):
    """Element-wise over tensors and Python scalars: each operand converted
    to `compute`, fn(b, *scalars) yields an `out` scalar."""
    tensors = [x for x in operands if isinstance(x, V)]

    def body(b, *args):
        it = iter(args)
        scalars = [convert(b, next(it), x.dtype, compute) if isinstance(x, V)
                   else b.c(x, compute) for x in operands]
        return fn(b, *scalars)
    if not tensors:
        raise UnsupportedError(f"{node.target}: no tensor operand (node '{node.name}')")
    return g.ew(tensors, body, out_dtype=out, hint=node.name)


def _binary_typed(op):
    def lower(g, node, a, b, alpha=1):
        out = node_dtype(node)
        compute = out if op != "div" or out in FLOAT_TYPES else promote(a, b)

        def fn(bb, x, y):
            if alpha != 1:
                y = arith(bb, "mul", y, bb.c(alpha, compute), compute)
            return arith(bb, op, x, y, compute)
        return typed_ew(g, node, [a, b], fn, compute, out)
    return lower


for _op in ("add", "sub", "mul", "div"):
    for _v in ("Tensor", "Scalar"):
        LOWERINGS[f"aten.{_op}.{_v}"] = _binary_typed(_op)
for _name, _op in (("maximum", "max"), ("minimum", "min"), ("pow", "pow"),
                   ("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor"),
                   ("logical_and", "and"), ("logical_or", "or"), ("logical_xor", "xor"),
                   ("remainder", "mod"), ("fmod", "rem"), ("atan2", "atan2")):
    for _v in ("Tensor", "Scalar", "Tensor_Scalar", "Tensor_Tensor", "default"):
        LOWERINGS[f"aten.{_name}.{_v}"] = _binary_typed(_op)


@lowering("aten.pow.Scalar")
def pow_scalar(g, node, base, x):
    out = node_dtype(node)
    return typed_ew(g, node, [x], lambda b, u: arith(b, "pow", b.c(base, out), u, out), out, out)


def _compare(op):
    def lower(g, node, a, b):
        compute = promote(a, b)
        return typed_ew(g, node, [a, b], lambda bb, x, y: compare(bb, op, x, y, compute),
                        compute, "i1")
    return lower


for _op in _CMP:
    for _v in ("Tensor", "Scalar"):
        LOWERINGS[f"aten.{_op}.{_v}"] = _compare(_op)


@lowering("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther",
          "aten.where.Scalar")
def where(g, node, cond, a, b):
    out = node_dtype(node)

    def body(bb, c, *xs):
        it = iter(xs)
        x, y = [convert(bb, next(it), v.dtype, out) if isinstance(v, V) else bb.c(v, out)
                for v in (a, b)]
        return bb.select(c, x, y, ty=out)
    return g.ew([cond] + [v for v in (a, b) if isinstance(v, V)], body, out_dtype=out,
                hint=node.name)


@lowering("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def masked_fill(g, node, x, mask, value):
    return where(g, node, mask, value, x)


_UNARY_FLOAT = {
    "neg": lambda b, x, t: b.op("arith.negf", x, ty=t),
    "exp": lambda b, x, t: b.op("math.exp", x, ty=t),
    "log": lambda b, x, t: b.op("math.log", x, ty=t),
    "log1p": lambda b, x, t: b.op("math.log1p", x, ty=t),
    "expm1": lambda b, x, t: b.op("math.expm1", x, ty=t),
    "tanh": lambda b, x, t: b.op("math.tanh", x, ty=t),
    "sqrt": lambda b, x, t: b.op("math.sqrt", x, ty=t),
    "rsqrt": lambda b, x, t: b.op("math.rsqrt", x, ty=t),
    "abs": lambda b, x, t: b.op("math.absf", x, ty=t),
    "erf": lambda b, x, t: b.op("math.erf", x, ty=t),
    "sin": lambda b, x, t: b.op("math.sin", x, ty=t),
    "cos": lambda b, x, t: b.op("math.cos", x, ty=t),
    **{name: (lambda op: lambda b, x, t: b.op(op, x, ty=t))("math." + name)
       for name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                    "erfc", "exp2", "log2", "log10")},
    "floor": lambda b, x, t: b.op("math.floor", x, ty=t),
    "ceil": lambda b, x, t: b.op("math.ceil", x, ty=t),
    "round": lambda b, x, t: b.op("math.roundeven", x, ty=t),
    "trunc": lambda b, x, t: b.op("math.trunc", x, ty=t),
    "reciprocal": lambda b, x, t: b.op("arith.divf", b.c(1.0, t), x, ty=t),
    "relu": lambda b, x, t: b.op("arith.maximumf", x, b.c(0.0, t), ty=t),
    "sigmoid": lambda b, x, t: b.op("arith.divf", b.c(1.0, t), b.op(
        "arith.addf", b.c(1.0, t), b.op("math.exp", b.op("arith.negf", x, ty=t), ty=t), ty=t),
        ty=t),
    "sign": lambda b, x, t: b.select(b.cmpf("ogt", x, b.c(0.0)), b.c(1.0), b.select(
        b.cmpf("olt", x, b.c(0.0)), b.c(-1.0), b.c(0.0))),
}


def _unary_typed(name):
    def lower(g, node, x):
        out = node_dtype(node)
        if out not in FLOAT_TYPES:
            if name == "neg":
                return typed_ew(g, node, [x], lambda b, u: b.op("arith.subi", b.c(0, out), u,
                                                                  ty=out), out, out)
            if name == "abs":
                return typed_ew(g, node, [x], lambda b, u: b.op(
                    "math.absi", u, ty=out), out, out)
            if name == "relu":
                return typed_ew(g, node, [x], lambda b, u: b.op(
                    "arith.maxsi", u, b.c(0, out), ty=out), out, out)
            raise UnsupportedError(f"{node.target} on {out} elements (node '{node.name}')")
        return typed_ew(g, node, [x], lambda b, u: _UNARY_FLOAT[name](b, u, out), out, out)
    return lower


for _name in _UNARY_FLOAT:
    LOWERINGS[f"aten.{_name}.default"] = _unary_typed(_name)


@lowering("aten.logical_not.default", "aten.bitwise_not.default")
def logical_not(g, node, x):
    out = node_dtype(node)
    if out == "i1" or str(node.target).startswith("aten.logical"):
        return typed_ew(g, node, [x], lambda b, u: b.op("arith.xori", u, b.c(True, "i1"),
                                                         ty="i1"), "i1", "i1")
    return typed_ew(g, node, [x], lambda b, u: b.op("arith.xori", u, b.c(-1, out), ty=out),
                    out, out)


def _clamp_body(lo, hi, t):
    def fn(b, x):
        if lo is not None:
            x = arith(b, "max", x, b.c(lo, t), t)
        if hi is not None:
            x = arith(b, "min", x, b.c(hi, t), t)
        return x
    return fn


@lowering("aten.clamp.default")
def clamp(g, node, x, lo=None, hi=None):
    out = node_dtype(node)
    return typed_ew(g, node, [x], _clamp_body(lo, hi, out), out, out)


@lowering("aten.clamp_min.default")
def clamp_min(g, node, x, lo):
    return clamp(g, node, x, lo, None)


@lowering("aten.clamp_max.default")
def clamp_max(g, node, x, hi):
    return clamp(g, node, x, None, hi)


@lowering("aten.hardtanh.default")
def hardtanh(g, node, x, lo=-1.0, hi=1.0):
    return clamp(g, node, x, lo, hi)


@lowering("aten.leaky_relu.default")
def leaky_relu(g, node, x, slope=0.01):
    return g.ew([x], lambda b, u: b.select(b.cmpf("ogt", u, b.c(0.0)), u,
                                           b.mul(u, b.c(slope))), hint=node.name)


def _softplus(b, u, beta, threshold):
    bu = b.mul(u, b.c(beta))
    soft = b.div(b.op("math.log1p", b.exp(bu)), b.c(beta))
    return b.select(b.cmpf("ogt", bu, b.c(threshold)), u, soft)


@lowering("aten.softplus.default")
def softplus(g, node, x, beta=1, threshold=20):
    return g.ew([x], lambda b, u: _softplus(b, u, beta, threshold), hint=node.name)


@lowering("aten.mish.default")
def mish(g, node, x):
    return g.ew([x], lambda b, u: b.mul(u, b.tanh(_softplus(b, u, 1.0, 20.0))), hint=node.name)


@lowering("aten.mish_backward.default")
def mish_backward(g, node, grad, x):
    def body(b, d, u):
        sp = _softplus(b, u, 1.0, 20.0)
        t = b.tanh(sp)
        sig = b.div(b.c(1.0), b.add(b.c(1.0), b.exp(b.neg(u))))
        return b.mul(d, b.add(t, b.mul(u, b.mul(sig, b.sub(b.c(1.0), b.mul(t, t))))))
    return g.ew([grad, x], body, hint=node.name)


SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu_tanh_inner(b, u):
    cube = b.mul(b.mul(u, u), u)
    return b.mul(b.c(SQRT_2_OVER_PI), b.add(u, b.mul(b.c(0.044715), cube)))


def gelu_tanh(g, node, x):
    return g.ew([x], lambda b, u: b.mul(b.mul(b.c(0.5), u),
                                        b.add(b.c(1.0), b.tanh(_gelu_tanh_inner(b, u)))),
                hint=node.name)


def gelu_tanh_backward(g, node, grad, x):
    """ATen's derivative of 0.5 x (1 + tanh(k (x + 0.044715 x^3)))."""
    def body(b, d, u):
        t = b.tanh(_gelu_tanh_inner(b, u))
        dinner = b.mul(b.c(SQRT_2_OVER_PI),
                       b.add(b.c(1.0), b.mul(b.c(3 * 0.044715), b.mul(u, u))))
        left = b.mul(b.c(0.5), b.add(b.c(1.0), t))
        right = b.mul(b.mul(b.c(0.5), u), b.mul(b.sub(b.c(1.0), b.mul(t, t)), dinner))
        return b.mul(d, b.add(left, right))
    return g.ew([grad, x], body, hint=node.name)


@lowering("aten._to_copy.default")
def to_copy(g, node, x, dtype=None, **kwargs):
    out = node_dtype(node)
    return typed_ew(g, node, [x], lambda b, u: u, out, out) if out != x.dtype else x


@lowering("aten.copy.default")
def copy(g, node, x, src, non_blocking=False):
    """PyTorch 2's functionalized `x.copy_(src)` (an in-place assignment):
    src in x's dtype, broadcast to x's shape."""
    out = node_dtype(node)
    if src.dtype != out:
        src = typed_ew(g, node, [src], lambda b, u: u, out, out)
    return expand(g, node, src, list(x.shape))


# -- factories ----------------------------------------------------------------

def _factory(g, node, value):
    shape = meta_shape(node)
    return g.fill(shape, value, node_dtype(node), hint=node.name)


@lowering("aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
          "aten.zero.default",
          "aten.empty_like.default", "aten.empty.memory_format", "aten.new_empty.default",
          "aten.empty_strided.default", "aten.new_empty_strided.default")
def zeros(g, node, *args, **kwargs):
    # empty_*: PyTorch leaves the contents undefined; act defines them as 0.
    return _factory(g, node, 0)


@lowering("aten.ones.default", "aten.ones_like.default", "aten.new_ones.default")
def ones(g, node, *args, **kwargs):
    return _factory(g, node, 1)


@lowering("aten.full.default", "aten.new_full.default")
def full(g, node, *args, **kwargs):
    value = args[-1] if str(node.target) == "aten.full.default" else args[2]
    return _factory(g, node, value)


@lowering("aten.fill.Tensor")
def fill_tensor(g, node, x, value):
    return g.ew([(value, [])], lambda b, u: convert(b, u, value.dtype, node_dtype(node)),
                shape=x.shape, out_dtype=node_dtype(node), hint=node.name)


@lowering("aten.full_like.default", "aten.fill.Scalar")
def full_like(g, node, x, value, **kwargs):
    return _factory(g, node, value)


@lowering("aten.scalar_tensor.default")
def scalar_tensor(g, node, value, **kwargs):
    return _factory(g, node, value)


@lowering("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def arange(g, node, *args, **kwargs):
    nums = [a for a in args if isinstance(a, (int, float))]
    start, step = (0, 1)
    if len(nums) >= 2:
        start = nums[0]
    if len(nums) >= 3:
        step = nums[2]
    out = node_dtype(node)
    (n,) = meta_shape(node)

    def body(b, o):
        i = b.cast("arith.index_cast", b.index(0), "index", "i64")
        i = convert(b, i, "i64", out)
        return arith(b, "add", b.c(start, out), arith(b, "mul", i, b.c(step, out), out), out)
    return g.generic((n,), [], body, out_dtype=out, hint=node.name)


@lowering("aten.unfold.default")
def unfold(g, node, x, dim, size, step):
    """Tensor.unfold: windows of `size` every `step` along dim, as a new
    last dim: out[.., i, .., k] = x[.., i * step + k, ..]."""
    dim %= max(x.rank, 1)
    r = x.rank
    exprs = [f"d{dim} * {step} + d{r}" if k == dim else f"d{k}" for k in range(r)]
    return g.generic(meta_shape(node), [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.unfold_backward.default")
def unfold_backward(g, node, grad, input_sizes, dim, size, step):
    """The sum over the windows that hold each element: input position j
    gets grad[.., i, .., k] for every k < size with j = i * step + k."""
    shape = tuple(input_sizes)
    r = len(shape)
    dim %= max(r, 1)
    windows = grad.shape[dim]
    block = g.empty((size,))

    def body(b, _w, o):
        j, k = b.index(dim), b.index(r)
        jk = b.op("arith.subi", j, k, ty="index")
        i = b.op("arith.divui", jk, b.c(step, "index"), ty="index")
        ok = b.andi(b.cmpi("sge", jk, b.c(0, "index"), "index"),
                    b.andi(b.cmpi("eq", b.op("arith.remui", jk, b.c(step, "index"), ty="index"),
                                  b.c(0, "index"), "index"),
                           b.cmpi("slt", i, b.c(windows, "index"), "index")))
        i = b.select(ok, i, b.c(0, "index"), ty="index")
        ivs = [i if d == dim else b.index(d) for d in range(r)] + [k]
        v = b.line("t", f"tensor.extract {grad.name}[{', '.join(ivs)}] : {grad.type}")
        return b.add(o, b.select(ok, v, b.c(0.0)))
    return g.generic(shape, [(block, [f"d{r}"])], body, iterators=["parallel"] * r + ["reduction"],
                     out_exprs=dims(r), init=g.fill(shape, 0.0), hint=node.name)


@lowering("aten.diag_embed.default")
def diag_embed(g, node, x, offset=0, dim1=-2, dim2=-1):
    """x's last dim on the diagonal `offset` of two new dims (dim1, dim2)
    of the result, zeros elsewhere."""
    shape = meta_shape(node)
    r = len(shape)
    dim1, dim2 = dim1 % r, dim2 % r
    rest = [k for k in range(r) if k not in (dim1, dim2)]

    def body(b, o):
        i, j = b.index(dim1), b.index(dim2)
        # the diagonal: j - i == offset; its position k = min(i, j)
        on = b.cmpi("eq", b.op("arith.subi", j, i, ty="index"), b.c(offset, "index"), "index")
        k = b.op("arith.minsi", i, j, ty="index")
        k = b.select(on, k, b.c(0, "index"), ty="index")
        ivs = [b.index(d) for d in rest] + [k]
        v = b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
        return b.select(on, v, b.c(0, x.dtype), ty=x.dtype)
    return g.generic(shape, [], body, out_dtype=x.dtype, hint=node.name)


@lowering("aten.eye.default", "aten.eye.m")
def eye(g, node, *args, **kwargs):
    """torch.eye(n[, m]): ones where the row and column are equal."""
    out = node_dtype(node)

    def body(b, o):
        on = b.cmpi("eq", b.index(0), b.index(1), "index")
        return b.select(on, b.c(1, out), b.c(0, out), ty=out)
    return g.generic(meta_shape(node), [], body, out_dtype=out, hint=node.name)


def _tri(upper):
    def lower(g, node, x, diagonal=0):
        r, c = x.rank - 2, x.rank - 1

        def body(b, u, o):
            i = b.cast("arith.index_cast", b.index(r), "index", "i64")
            j = b.cast("arith.index_cast", b.index(c), "index", "i64")
            diff = b.op("arith.subi", j, i, ty="i64")
            keep = b.cmpi("sge" if upper else "sle", diff, b.c(diagonal, "i64"), "i64")
            return b.select(keep, u, b.c(0, x.dtype), ty=x.dtype)
        return g.generic(x.shape, [(x, dims(x.rank))], body, out_dtype=x.dtype, hint=node.name)
    return lower


LOWERINGS["aten.triu.default"] = _tri(True)
LOWERINGS["aten.tril.default"] = _tri(False)


# -- views, slicing, indexing -------------------------------------------------

@lowering("aten.roll.default")
def roll(g, node, x, shifts, dims_=()):
    """out[.., i, ..] = x[.., (i - shift) mod n, ..] along each rolled dim."""
    require(len(dims_) == len(shifts), node, "roll without dims")
    exprs = [f"d{k}" for k in range(x.rank)]
    for shift, d in zip(shifts, dims_):
        d %= x.rank
        n = x.shape[d]
        exprs[d] = f"(d{d} + {(-shift) % n}) mod {n}"
    return g.generic(x.shape, [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.constant_pad_nd.default")
def constant_pad_nd(g, node, x, pad, value=0):
    """pad: (low, high) pairs from the last dim backwards; negative ones
    crop."""
    low, high = [0] * x.rank, [0] * x.rank
    for k in range(len(pad) // 2):
        low[x.rank - 1 - k], high[x.rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    crop_lo = [max(0, -v) for v in low]
    crop_hi = [max(0, -v) for v in high]
    if any(crop_lo) or any(crop_hi):
        x = g.extract_slice(x, crop_lo, [d - a - b for d, a, b in zip(x.shape, crop_lo, crop_hi)])
    return g.pad(x, [max(0, v) for v in low], [max(0, v) for v in high], value=value,
                 hint=node.name)


@lowering("aten.select.int")
def select(g, node, x, dim, index):
    dim %= x.rank
    index %= x.shape[dim]
    offsets = [index if i == dim else 0 for i in range(x.rank)]
    sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
    s = g.extract_slice(x, offsets, sizes, hint=node.name)
    return g.reshape(s, meta_shape(node), hint=node.name)


LOWERINGS["aten.unsafe_split.Tensor"] = split


@lowering("aten.split_with_sizes.default", "aten.unsafe_split_with_sizes.default")
def split_with_sizes(g, node, x, sizes, dim=0):
    dim %= x.rank
    out, start = [], 0
    for n in sizes:
        offsets = [start if i == dim else 0 for i in range(x.rank)]
        shape = [n if i == dim else d for i, d in enumerate(x.shape)]
        out.append(g.extract_slice(x, offsets, shape, hint=node.name))
        start += n
    return tuple(out)


@lowering("aten.unbind.int")
def unbind(g, node, x, dim=0):
    dim %= x.rank
    shape = tuple(d for i, d in enumerate(x.shape) if i != dim)
    out = []
    for k in range(x.shape[dim]):
        offsets = [k if i == dim else 0 for i in range(x.rank)]
        sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
        out.append(g.reshape(g.extract_slice(x, offsets, sizes, hint=node.name), shape))
    return tuple(out)


@lowering("aten.stack.default")
def stack(g, node, tensors, dim=0):
    rank = tensors[0].rank + 1
    dim %= rank
    shape = list(tensors[0].shape)
    shape.insert(dim, 1)
    return cat(g, node, [g.reshape(t, tuple(shape)) for t in tensors], dim)


@lowering("aten.squeeze.dims", "aten.view_as.default", "aten.narrow.default")
def reshape_to_meta(g, node, x, *args):
    if str(node.target) == "aten.narrow.default":
        dim, start, length = args
        return slice_(g, node, x, dim, start, start + length)
    return g.reshape(x, meta_shape(node), hint=node.name)


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


# Ops whose result shares its operand's storage (PyTorch views).
STORAGE_VIEWS = {
    "aten.slice.Tensor", "aten.select.int", "aten.transpose.int", "aten.permute.default",
    "aten.t.default", "aten.view.default", "aten._unsafe_view.default",
    "aten._reshape_alias.default", "aten.unsqueeze.default", "aten.squeeze.dim",
    "aten.squeeze.dims", "aten.squeeze.default", "aten.expand.default", "aten.alias.default",
    "aten.as_strided.default", "aten.detach.default", "aten.narrow.default",
    "aten.unfold.default",
}
STORAGE_SPLITS = {"aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int",
                  "aten.unsafe_split.Tensor"}


def storage_root(node):
    """The node whose result owns the storage `node` views."""
    import operator
    while node.op == "call_function":
        if str(node.target) in STORAGE_VIEWS:
            node = node.args[0]
        elif node.target is operator.getitem and str(node.args[0].target) in STORAGE_SPLITS:
            node = node.args[0].args[0]
        else:
            break
    return node


RESHAPE_VIEWS = {"aten.view.default", "aten._reshape_alias.default", "aten._unsafe_view.default",
                 "aten.reshape.default", "aten.unsqueeze.default", "aten.squeeze.dim",
                 "aten.squeeze.default", "aten.flatten.using_ints", "aten.alias.default"}


def _reshapes_of_root(node):
    """Whether `node` is its storage's root or reshapes of it only: a
    contiguous `node` then starts at the storage's first element (the
    offsets of as_strided_scatter are relative to it)."""
    while node.op == "call_function" and str(node.target) in STORAGE_VIEWS:
        if str(node.target) not in RESHAPE_VIEWS:
            return False
        node = node.args[0]
    return storage_root(node) is node


@lowering("aten.as_strided.default")
def as_strided(g, node, x, size, stride, offset=0):
    """Element i reads storage[offset + sum(i_k * stride_k)] (offset and
    strides are absolute in the storage the operand views). The storage is
    that of the operand's root (through view ops: slices, transposes,
    reshapes, splits), permuted into the order of the root's strides, which
    must be dense: a contiguous tensor or a transpose of one (PyTorch's
    layout, from the trace's metadata). The decompositions emit it for views
    of such tensors."""
    base = node.args[0]
    tm = base.meta.get("tensor_meta")
    if tm is not None and storage_root(base) is base and not offset \
            and list(size) == list(x.shape) and list(stride) == list(tm.stride):
        return x  # the operand itself, which owns its storage
    root = storage_root(base)
    # A saved view read in the backward: its storage is the forward's root
    # (Exporter.joint maps the backward's placeholder to it).
    root, value = getattr(g, "storage_of", {}).get(
        root, (root, getattr(g, "value_of", lambda n: None)(root)))
    rtm = root.meta.get("tensor_meta")
    require(rtm is not None and isinstance(value, V), node,
            "as_strided of a tensor without layout metadata")
    rstride = list(rtm.stride)
    perm = sorted(range(value.rank), key=lambda k: (-rstride[k], k))
    dense = _contiguous_strides([value.shape[k] for k in perm]) == [rstride[k] for k in perm]
    require(dense, node, f"as_strided of a view of a tensor with strides {rstride} (not a "
                         f"permutation of a dense layout)")
    storage = g.reshape(g.transpose(value, perm), (value.numel,))
    # Read from the span the view covers (from its offset): an expression
    # that is a plain dim (stride 1, the others 0) then has that dim's
    # size, which linalg infers loop bounds from.
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if offset or span != value.numel:
        storage = g.extract_slice(storage, [offset or 0], [span])
    expr = " + ".join([f"d{k} * {s}" for k, s in enumerate(stride)] + ["0"])
    return g.generic(tuple(size), [(storage, [expr])], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.as_strided_scatter.default")
def as_strided_scatter(g, node, x, src, size, stride, offset=0):
    """x (contiguous) with storage[offset + sum(i_k * stride_k)] = src[i]:
    every element of x looks through src's positions (a reduction), so it
    is quadratic; refused beyond 2^24 pairs."""
    tm = node.args[0].meta.get("tensor_meta")
    require(tm is not None and list(tm.stride) == _contiguous_strides(list(x.shape))
            and _reshapes_of_root(node.args[0]), node,
            "as_strided_scatter into a view other than a reshape")
    require(x.numel * src.numel <= 1 << 24, node,
            f"as_strided_scatter of {src.numel} into {x.numel} elements (quadratic here)")
    flat = g.reshape(x, (x.numel,))
    r = src.rank
    target = " + ".join([f"d{1 + k} * {s}" for k, s in enumerate(stride)] + [str(offset or 0)])

    def body(b, u, o):
        j = b.index(0)
        t = b.line("t", f"affine.apply affine_map<({', '.join(f'd{k}' for k in range(r + 1))}) -> "
                        f"({target})>({', '.join(b.index(k) for k in range(r + 1))})")
        return b.select(b.cmpi("eq", j, t, "index"), u, o, ty=x.dtype)
    out = g.generic((x.numel,), [(src, [f"d{1 + k}" for k in range(r)])], body,
                    out_dtype=x.dtype, iterators=["parallel"] + ["reduction"] * r,
                    out_exprs=["d0"], init=flat, hint=node.name)
    return g.reshape(out, x.shape)


@lowering("aten.index_select.default")
def index_select(g, node, x, dim, index):
    dim %= x.rank
    out_shape = meta_shape(node)
    return _gather_dim(g, node, x, dim, index, out_shape)


def _from_end(b, k, n, ty):
    """Index k of a dim of size n with PyTorch's negative indices (counted
    from the end): k + n where k < 0."""
    neg = b.cmpi("slt", k, b.c(0, ty), ty)
    return b.select(neg, b.op("arith.addi", k, b.c(n, ty), ty=ty), k, ty=ty)


def _read_index(b, k, n):
    """A data index k (an `index` value) of a dim of size n, as a position
    to read: negative ones from the end, and clamped into [0, n), so that
    an index out of range never reads outside the tensor (act-run and
    act.compile refuse such data before the step runs where the exporter
    could bound it: the `act.index_range` argument attribute)."""
    k = _from_end(b, k, n, "index")
    k = b.op("arith.maxsi", k, b.c(0, "index"), ty="index")
    return b.op("arith.minsi", k, b.c(n - 1, "index"), ty="index")


def _gather_dim(g, node, x, dim, index, out_shape):
    """out[..., i, ...] = x[..., index[i], ...] along dim (index 1-D)."""
    n = x.shape[dim]

    def body(b, idx, o):
        k = _read_index(b, b.cast("arith.index_cast", idx, index.dtype, "index"), n)
        ivs = [b.index(i) for i in range(len(out_shape))]
        ivs[dim] = k
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(tuple(out_shape), [(index, [f"d{dim}"])], body, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.embedding.default")
def embedding(g, node, weight, indices, padding_idx=-1, *args):
    flat = g.reshape(indices, (indices.numel,))
    rows = _gather_dim(g, node, weight, 0, flat, (indices.numel, weight.shape[1]))
    return g.reshape(rows, meta_shape(node), hint=node.name)


BOOLEAN_MASK = ("indexing with a boolean mask, x[mask] (the result's shape depends on the "
                "data; write the masked computation with the mask as a factor, e.g. "
                "((o - y) ** 2 * m).sum() / m.sum() for F.mse_loss(o[m], y[m]))")


@lowering("aten.index.Tensor")
def index(g, node, x, indices):
    """x[i0, i1, ...] with index tensors (None for ':') that broadcast
    together; the indexed dims are adjacent or the first (PyTorch's rule:
    the result's indexed block sits where the first index was, if adjacent)."""
    pos = [k for k, i in enumerate(indices) if i is not None]
    # x[mask] keeps the elements where the mask is set: how many depends on
    # the data, but the trace fixed the count of the example batch.
    require(all(indices[k].dtype != "i1" for k in pos), node, BOOLEAN_MASK)
    require(pos == list(range(pos[0], pos[-1] + 1)), node, "non-adjacent index tensors")
    from .mlir import broadcast_shape
    ishape = broadcast_shape([indices[k].shape for k in pos])
    out_shape = meta_shape(node)
    lead = pos[0]
    r = len(ishape)

    def body(b, *args):
        idx = args[:-1]
        ivs = []
        for d in range(x.rank):
            if d < lead:
                ivs.append(b.index(d))
            elif d in pos:
                t = indices[d]
                k = b.cast("arith.index_cast", idx[pos.index(d)], t.dtype, "index")
                ivs.append(_read_index(b, k, x.shape[d]))
            else:
                ivs.append(b.index(d - len(pos) + r))
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    ins = []
    for k in pos:
        t = indices[k]
        exprs = ["0" if (dd == 1 and ishape[j] != 1) else f"d{lead + j}"
                 for dd, j in zip(t.shape, range(r - t.rank, r))]
        ins.append((t, exprs))
    return g.generic(tuple(out_shape), ins, body, out_dtype=x.dtype, hint=node.name)


@lowering("aten.index_put.default", "aten._index_put_impl.default")
def index_put(g, node, x, indices, values, accumulate=False, *args):
    """x with x[indices] = values (or += with accumulate): every element of x
    looks through all index positions (a reduction over them), so repeated
    indices accumulate in a fixed order."""
    pos = [k for k, i in enumerate(indices) if i is not None]
    if any(indices[k].dtype == "i1" for k in pos):
        return _masked_put(g, node, x, pos, indices[pos[0]], values, accumulate)
    require(pos == list(range(pos[0], pos[0] + len(pos))), node, "non-adjacent index tensors")
    from .mlir import broadcast_shape
    ishape = broadcast_shape([indices[k].shape for k in pos])
    r, p, lead = len(ishape), len(pos), pos[0]
    tail = x.rank - lead - p
    # values broadcast to x's leading dims, the indices' shape, x's tail.
    vshape = tuple(x.shape[:lead]) + tuple(ishape) + tuple(x.shape[lead + p:])
    vals = g.ew([values], lambda b, u: u, shape=vshape, out_dtype=values.dtype) \
        if values.shape != vshape else values
    # loops: x's dims (parallel), then the index positions (reduction)
    ins = []
    for k in pos:
        t = indices[k]
        ins.append((t, ["0" if (dd == 1 and ishape[j] != 1) else f"d{x.rank + j}"
                        for dd, j in zip(t.shape, range(r - t.rank, r))]))
    ins.append((vals, [f"d{j}" for j in range(lead)] + [f"d{x.rank + j}" for j in range(r)]
                + [f"d{lead + p + j}" for j in range(tail)]))
    acc = x if accumulate else None

    def body(b, *args):
        idx, v, o = args[:p], args[p], args[p + 1]
        hit = None
        for j, k in enumerate(pos):
            t = indices[k]
            i = b.cast("arith.index_cast", b.index(k), "index", t.dtype)
            h = b.cmpi("eq", i, _from_end(b, idx[j], x.shape[k], t.dtype), t.dtype)
            hit = h if hit is None else b.andi(hit, h)
        if accumulate:
            return b.select(hit, arith(b, "add", o, v, x.dtype), o, ty=x.dtype)
        return b.select(hit, v, o, ty=x.dtype)
    init = acc if acc is not None else x
    return g.generic(x.shape, ins, body, out_dtype=x.dtype,
                     iterators=["parallel"] * x.rank + ["reduction"] * r,
                     out_exprs=dims(x.rank), init=init, hint=node.name)


def _masked_put(g, node, x, pos, mask, values, accumulate):
    """x[mask] = values (+= with accumulate), `mask` a boolean tensor over
    x's dims from pos[0] on: an elementwise select, as long as the values do
    not depend on how many elements the mask selects (one value, or one per
    element of x's dims after the mask's, broadcast over the selected ones)."""
    lead = pos[0]
    require(len(pos) == 1 and tuple(mask.shape) == tuple(x.shape[lead:lead + mask.rank]), node,
            "a boolean mask with other index tensors, or not of the indexed dims' shape,")
    tail = x.rank - lead - mask.rank
    if isinstance(values, V) and values.numel == 1 and values.rank:
        values = g.reshape(values, ())
    require(not isinstance(values, V) or values.rank <= tail, node,
            "x[mask] = values with one value per selected element (their count depends on the "
            "data; write it as torch.where(mask, values, x) with values of x's shape)")
    operands = [x, (mask, list(range(lead, lead + mask.rank))), values]

    def body(b, o, m, v):
        v = convert(b, v, values.dtype, x.dtype) if isinstance(values, V) else v
        return b.select(m, arith(b, "add", o, v, x.dtype) if accumulate else v, o, ty=x.dtype)
    if not isinstance(values, V):
        operands.pop()
        return g.ew(operands, lambda b, o, m: body(b, o, m, b.c(values, x.dtype)),
                    out_dtype=x.dtype, hint=node.name)
    return g.ew(operands, body, out_dtype=x.dtype, hint=node.name)


@lowering("aten.slice_scatter.default")
def slice_scatter(g, node, x, src, dim=0, start=None, end=None, step=1):
    dim %= x.rank
    n = x.shape[dim]
    start = 0 if start is None else (start + n if start < 0 else min(start, n))
    offsets = [start if i == dim else 0 for i in range(x.rank)]
    strides = [step if i == dim else 1 for i in range(x.rank)]
    if src.numel == 0:
        return x
    return g.insert_slice(src, x, offsets, strides, hint=node.name)


@lowering("aten.select_scatter.default")
def select_scatter(g, node, x, src, dim, index):
    dim %= x.rank
    index %= x.shape[dim]
    shape = list(x.shape)
    shape[dim] = 1
    return g.insert_slice(g.reshape(src, tuple(shape)), x,
                          [index if i == dim else 0 for i in range(x.rank)], hint=node.name)


@lowering("aten.gather.default")
def gather(g, node, x, dim, index, sparse_grad=False):
    dim %= x.rank

    def body(b, idx, o):
        ivs = [b.index(i) for i in range(x.rank)]
        ivs[dim] = _read_index(b, b.cast("arith.index_cast", idx, index.dtype, "index"),
                               x.shape[dim])
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(index.shape, [(index, dims(index.rank))], body, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.scatter_add.default")
def scatter_add(g, node, x, dim, index, src):
    """x[.., index[i], ..] += src[i]: each element of x reduces over index's
    positions along dim."""
    dim %= x.rank
    # loops: x's dims, then j over index's dim `dim`
    iexprs = [f"d{x.rank}" if k == dim else f"d{k}" for k in range(x.rank)]

    def body(b, idx, s, o):
        i = b.cast("arith.index_cast", b.index(dim), "index", index.dtype)
        return b.select(b.cmpi("eq", i, idx, index.dtype), arith(b, "add", o, s, x.dtype), o,
                        ty=x.dtype)
    require(index.shape == src.shape and all(
        index.shape[k] == x.shape[k] for k in range(x.rank) if k != dim), node,
        "index and src shapes other than x's (but along dim)")
    return g.generic(x.shape, [(index, iexprs), (src, iexprs)], body, out_dtype=x.dtype,
                     iterators=["parallel"] * x.rank + ["reduction"], out_exprs=dims(x.rank),
                     init=x, hint=node.name)


# -- reductions beyond sum and mean ---------------------------------------------

@lowering("aten.amax.default")
def amax(g, node, x, axes=(), keepdim=False):
    axes = list(range(x.rank)) if not axes else list(axes)
    return g.reduce(x, axes, keepdim, kind="max", hint=node.name)


def _truth_reduction(kind):
    def lower(g, node, x, dim=None, keepdim=False):
        """any / all: an or (and) over i1 of x != 0 (the result is bool)."""
        axes = list(range(x.rank)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
        axes = axes or list(range(x.rank))
        truth = x if x.dtype == "i1" else g.ew(
            [x], lambda b, u: compare(b, "ne", u, b.c(0.0 if x.dtype in FLOAT_TYPES else 0,
                                                      x.dtype), x.dtype), out_dtype="i1")
        keep = [i for i in range(x.rank) if i not in [a % x.rank for a in axes]]
        shape = tuple(x.shape[i] for i in keep)
        its = ["parallel" if i in keep else "reduction" for i in range(x.rank)]
        op = "arith.ori" if kind == "any" else "arith.andi"
        r = g.generic(shape, [(truth, dims(x.rank))], lambda b, u, o: b.op(op, u, o, ty="i1"),
                      out_dtype="i1", iterators=its, out_exprs=[f"d{i}" for i in keep],
                      init=g.fill(shape, kind == "all", "i1"), hint=node.name)
        return g.reshape(r, meta_shape(node)) if keepdim else r
    return lower


for _kind in ("any", "all"):
    for _overload in ("default", "dim"):
        LOWERINGS[f"aten.{_kind}.{_overload}"] = _truth_reduction(_kind)


@lowering("aten.amin.default")
def amin(g, node, x, axes=(), keepdim=False):
    neg = g.ew([x], lambda b, u: b.neg(u))
    m = g.reduce(neg, list(range(x.rank)) if not axes else list(axes), keepdim, kind="max")
    return g.ew([m], lambda b, u: b.neg(u), hint=node.name)


# -- pooling ------------------------------------------------------------------

def _adaptive_bounds(n_in, n_out, i):
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _adaptive_weights(g, h, w, oh, ow):
    """A (oh, ow, h, w) f32 tensor: 1/count where input (h, w) is in output
    (i, j)'s window (PyTorch's start = floor(i h / oh), end = ceil((i+1) h /
    oh)), else 0; built from index arithmetic, no constants."""
    def body(b, o):
        i, j, y, x = (b.index(k) for k in range(4))

        def inside(idx, out_i, n_in, n_out):
            lo = b.line("t", f"affine.apply affine_map<(d0) -> ((d0 * {n_in}) floordiv {n_out})>"
                             f"({out_i})")
            hi = b.line("t", f"affine.apply affine_map<(d0) -> ((d0 * {n_in} + {n_in} + "
                             f"{n_out} - 1) floordiv {n_out})>({out_i})")
            return (b.andi(b.cmpi("sge", idx, lo, "index"), b.cmpi("slt", idx, hi, "index")),
                    b.op("arith.subi", hi, lo, ty="index"))
        in_r, nr = inside(y, i, h, oh)
        in_c, nc = inside(x, j, w, ow)
        count = b.cast("arith.index_cast", b.op("arith.muli", nr, nc, ty="index"), "index", "i64")
        inv = b.div(b.c(1.0), b.cast("arith.sitofp", count, "i64", "f32"))
        return b.select(b.andi(in_r, in_c), inv, b.c(0.0))
    return g.generic((oh, ow, h, w), [], body, hint="adaptive_weights")


@lowering("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(g, node, x, size):
    n, c, h, w = x.shape[-4:] if x.rank == 4 else (1,) + x.shape
    oh, ow = size
    if (oh, ow) == (1, 1):
        s = g.reduce(x, [x.rank - 2, x.rank - 1], keepdim=True)
        return g.ew([s], lambda b, u: b.div(u, b.c(float(h * w))), hint=node.name)
    wts = _adaptive_weights(g, h, w, oh, ow)
    shape = x.shape[:-2] + (oh, ow)
    lead = x.rank - 2
    init = g.fill(shape, 0.0)
    ld = [f"d{k}" for k in range(lead)]
    return g.generic(shape, [(x, ld + [f"d{lead + 2}", f"d{lead + 3}"]),
                             (wts, [f"d{lead}", f"d{lead + 1}", f"d{lead + 2}", f"d{lead + 3}"])],
                     lambda b, u, v, o: b.add(o, b.mul(u, v)),
                     iterators=["parallel"] * (lead + 2) + ["reduction"] * 2,
                     out_exprs=dims(lead + 2), init=init, hint=node.name)


@lowering("aten._adaptive_avg_pool2d_backward.default")
def adaptive_avg_pool2d_backward(g, node, grad, x):
    h, w = x.shape[-2:]
    oh, ow = grad.shape[-2:]
    lead = x.rank - 2
    if (oh, ow) == (1, 1):
        return g.ew([(grad, list(range(x.rank)))],
                    lambda b, u: b.div(u, b.c(float(h * w))), shape=x.shape, hint=node.name)
    wts = _adaptive_weights(g, h, w, oh, ow)
    init = g.fill(x.shape, 0.0)
    ld = [f"d{k}" for k in range(lead)]
    return g.generic(x.shape, [(grad, ld + [f"d{lead + 2}", f"d{lead + 3}"]),
                               (wts, [f"d{lead + 2}", f"d{lead + 3}", f"d{lead}", f"d{lead + 1}"])],
                     lambda b, u, v, o: b.add(o, b.mul(u, v)),
                     iterators=["parallel"] * (lead + 2) + ["reduction"] * 2,
                     out_exprs=dims(lead + 2), init=init, hint=node.name)


def _avg_divisors(g, size, out, k, s, p, count_include_pad, divisor_override):
    """ATen's divisor per output position of an average pool (avg_pool2d's
    and avg_pool3d's CPU kernels) over the spatial dims `size` with output
    `out`: the window clipped to the padded input (its size counts
    padding), or to the input (count_include_pad=False), or the override.
    An `out`-shaped f32 tensor, or a Python float when every window has the
    same divisor."""
    if divisor_override:
        return float(divisor_override)

    def extents(d):
        """The divisor's factor along dim d at each output position."""
        sizes = set()
        for i in range(out[d]):
            start = i * s[d] - p[d]
            end = min(start + k[d], size[d] + p[d])
            sizes.add(end - start if count_include_pad
                      else min(end, size[d]) - max(start, 0))
        return sizes
    divisors = {math.prod(f) for f in itertools.product(*map(extents, range(len(size))))}
    if len(divisors) == 1:
        return float(divisors.pop())

    def dim_size(b, d):
        i = b.index_cast(b.index(d), "i64")
        start = b.op("arith.subi", b.op("arith.muli", i, b.c(s[d], "i64"), ty="i64"),
                     b.c(p[d], "i64"), ty="i64")
        end = b.op("arith.minsi", b.op("arith.addi", start, b.c(k[d], "i64"), ty="i64"),
                   b.c(size[d] + p[d], "i64"), ty="i64")
        if not count_include_pad:
            start = b.op("arith.maxsi", start, b.c(0, "i64"), ty="i64")
            end = b.op("arith.minsi", end, b.c(size[d], "i64"), ty="i64")
        return b.op("arith.subi", end, start, ty="i64")

    def body(b, o):
        total = dim_size(b, 0)
        for d in range(1, len(size)):
            total = b.op("arith.muli", total, dim_size(b, d), ty="i64")
        return b.cast("arith.sitofp", total, "i64", "f32")
    return g.generic(tuple(out), [], body, hint="avg_divisor")


def _divide_by(g, x, divisor, hint):
    """x (N x C x spatial) over an average pool's divisor (_avg_divisors)."""
    if isinstance(divisor, float):
        return g.ew([x], lambda b, u: b.div(u, b.c(divisor)), hint=hint)
    return g.ew([x, (divisor, list(range(2, x.rank)))], lambda b, u, d: b.div(u, d),
                shape=x.shape, hint=hint)


@lowering("aten.avg_pool2d.default")
def avg_pool2d(g, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, (1,), ceil_mode)
    n, c, h, w = x.shape
    oh, ow = _pool_size(h, k0, s0, p0, ceil_mode), _pool_size(w, k1, s1, p1, ceil_mode)
    # Zeros around the input; with ceil_mode the last windows may reach
    # past the padding (those positions count for nothing).
    hi0, hi1 = max(p0, (oh - 1) * s0 + k0 - h - p0), max(p1, (ow - 1) * s1 + k1 - w - p1)
    xp = g.pad(x, [0, 0, p0, p1], [0, 0, hi0, hi1], hint=node.name + "_pad")
    window = g.empty((k0, k1))
    init = g.fill((n, c, oh, ow), 0.0)
    s = g.generic((n, c, oh, ow), [(xp, ["d0", "d1", f"d2 * {s0} + d4", f"d3 * {s1} + d5"]),
                                   (window, ["d4", "d5"])],
                  lambda b, u, _w, o: b.add(o, u), iterators=["parallel"] * 4 + ["reduction"] * 2,
                  out_exprs=dims(4), init=init)
    div = _avg_divisors(g, (h, w), (oh, ow), (k0, k1), (s0, s1), (p0, p1), count_include_pad,
                        divisor_override)
    return _divide_by(g, s, div, node.name)


@lowering("aten.avg_pool2d_backward.default")
def avg_pool2d_backward(g, node, grad, x, kernel, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, (1,), ceil_mode)
    n, c, h, w = x.shape
    _, _, oh, ow = grad.shape
    grad = _divide_by(g, grad, _avg_divisors(g, (h, w), (oh, ow), (k0, k1), (s0, s1), (p0, p1),
                                             count_include_pad, divisor_override),
                      node.name + "_scaled")
    # d(input)[h] = sum over windows covering h: scatter through the padded
    # input's shape, then crop.
    hp, wp = h + 2 * p0, w + 2 * p1
    init = g.fill((n, c, hp, wp), 0.0)
    c0, c1 = -(-k0 // s0), -(-k1 // s1)
    low = [0, 0, c0 - 1, c1 - 1]
    high = [0, 0, max(0, (hp - 1) // s0 - (oh - 1)), max(0, (wp - 1) // s1 - (ow - 1))]
    gp = g.pad(grad, low, high)
    window = g.empty((c0, c1))
    rows = f"d2 floordiv {s0} - d4 + {c0 - 1}"
    cols = f"d3 floordiv {s1} - d5 + {c1 - 1}"

    def body(b, d, _w, o):
        # window (d2 floordiv s - d4) covers d2 if d2 - start < k
        r0 = b.line("t", f"affine.apply affine_map<(d0, d1) -> (d0 - (d0 floordiv {s0} - d1) * {s0})>"
                         f"({b.index(2)}, {b.index(4)})")
        r1 = b.line("t", f"affine.apply affine_map<(d0, d1) -> (d0 - (d0 floordiv {s1} - d1) * {s1})>"
                         f"({b.index(3)}, {b.index(5)})")
        ok = b.andi(b.cmpi("slt", r0, b.c(k0, "index"), "index"),
                    b.cmpi("slt", r1, b.c(k1, "index"), "index"))
        return b.add(o, b.select(ok, d, b.c(0.0)))
    full = g.generic((n, c, hp, wp), [(gp, ["d0", "d1", rows, cols]), (window, ["d4", "d5"])],
                     body, iterators=["parallel"] * 4 + ["reduction"] * 2, out_exprs=dims(4),
                     init=init)
    return g.extract_slice(full, [0, 0, p0, p1], [n, c, h, w], hint=node.name)


# -- more of the set: selection reductions, repeat, scatter, nearest
# upsampling, adaptive max pooling ------------------------------------

def _select_reduce(g, node, x, dim, keepdim, greater):
    """(values, indices) of the first maximum (or minimum) along dim."""
    dim %= x.rank
    keep = [k for k in range(x.rank) if k != dim]
    shape = tuple(x.shape[k] for k in keep)
    best = g.fill(shape, -math.inf if greater else math.inf)
    arg = g.fill(shape, 0, "i64")

    def body(b, v, m, a):
        better = b.cmpf("ogt" if greater else "olt", v, m)
        i = b.index_cast(b.index(dim), "i64")
        return [b.select(better, v, m), b.select(better, i, a, ty="i64")]
    vals, idx = g.generic_multi(
        [shape, shape], ["f32", "i64"], [(x, dims(x.rank))], body,
        ["reduction" if k == dim else "parallel" for k in range(x.rank)],
        [[f"d{k}" for k in keep]] * 2, [best, arg], hint=node.name)
    if keepdim:
        kshape = tuple(1 if k == dim else d for k, d in enumerate(x.shape))
        vals, idx = g.reshape(vals, kshape), g.reshape(idx, kshape)
    return vals, idx


@lowering("aten.max.dim")
def max_dim(g, node, x, dim, keepdim=False):
    return _select_reduce(g, node, x, dim, keepdim, True)


@lowering("aten.min.dim")
def min_dim(g, node, x, dim, keepdim=False):
    return _select_reduce(g, node, x, dim, keepdim, False)


@lowering("aten.argmax.default")
def argmax(g, node, x, dim=None, keepdim=False):
    require(dim is not None, node, "argmax over all elements")
    return _select_reduce(g, node, x, dim, keepdim, True)[1]


@lowering("aten.argmin.default")
def argmin(g, node, x, dim=None, keepdim=False):
    require(dim is not None, node, "argmin over all elements")
    return _select_reduce(g, node, x, dim, keepdim, False)[1]


@lowering("aten.max.default")
def max_all(g, node, x):
    return g.reduce(x, list(range(x.rank)), kind="max", hint=node.name)


@lowering("aten.min.default")
def min_all(g, node, x):
    return amin(g, node, x)


@lowering("aten.scatter.src", "aten.scatter.value")
def scatter(g, node, x, dim, index, src):
    """x with x[.., index[i], ..] = src[i] along dim (for repeated indices
    the last position wins; PyTorch leaves that undefined)."""
    dim %= x.rank
    iexprs = [f"d{x.rank}" if k == dim else f"d{k}" for k in range(x.rank)]
    require(all(index.shape[k] == x.shape[k] for k in range(x.rank) if k != dim), node,
            "an index smaller than x along other dims")
    ins = [(index, iexprs)]
    if isinstance(src, V):
        ins.append((src, iexprs))

    def body(b, idx, *rest):
        o = rest[-1]
        s = rest[0] if isinstance(src, V) else b.c(src, x.dtype)
        i = b.cast("arith.index_cast", b.index(dim), "index", index.dtype)
        return b.select(b.cmpi("eq", i, idx, index.dtype), s, o, ty=x.dtype)
    return g.generic(x.shape, ins, body, out_dtype=x.dtype,
                     iterators=["parallel"] * x.rank + ["reduction"], out_exprs=dims(x.rank),
                     init=x, hint=node.name)


@lowering("aten.repeat.default")
def repeat(g, node, x, repeats):
    """out[.., i, ..] = x[.., i mod n, ..]; leading repeats add dims."""
    shape = meta_shape(node)
    lead = len(repeats) - x.rank
    exprs = [f"d{lead + k} mod {x.shape[k]}" if repeats[lead + k] != 1 else f"d{lead + k}"
             for k in range(x.rank)]
    return g.generic(shape, [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype, hint=node.name)


def _nearest_sources(n_in, n_out, scale):
    """ATen's nearest source index of each output position along one dim
    (nearest_idx: the same position, i // 2 for twice the size, else
    min(floor(i * s), n_in - 1) in float32, s = 1 / scale_factor when one
    was given, n_in / n_out otherwise)."""
    i = np.arange(n_out)
    if n_out == n_in:
        return i
    if n_out == 2 * n_in:
        return i >> 1
    s = np.float32(1.0 / scale) if scale and scale > 0 else np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(i.astype(np.float32) * s).astype(np.int64), n_in - 1)


def _nearest_scales(args):
    """The scale factors of upsample_nearest2d's .vec (output_size,
    scale_factors) or .default (output_size, scales_h, scales_w) form."""
    if len(args) >= 2 and isinstance(args[1], (list, tuple)):
        return list(args[1])
    if len(args) >= 2:
        return list(args[1:3]) + [None] * (3 - len(args))
    return [None, None]


def _nearest_plan(h, w, oh, ow, scales):
    """(source rows, source columns, integer factors or None) of a nearest
    resize from h x w to oh x ow: the factors when every output reads
    input i // factor (a plain affine map serves), else tables."""
    src_h, src_w = _nearest_sources(h, oh, scales[0]), _nearest_sources(w, ow, scales[1])
    factors = None
    if oh % h == 0 and ow % w == 0 and (src_h == np.arange(oh) // (oh // h)).all() and (
            src_w == np.arange(ow) // (ow // w)).all():
        factors = (oh // h, ow // w)
    return src_h, src_w, factors


def _index_table(g, values, hint):
    """A small i64 constant tensor of `values` (per-position tables)."""
    from .export import dense_constant
    return dense_constant(g, torch.tensor(np.asarray(values), dtype=torch.int64), hint)


@lowering("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def upsample_nearest2d(g, node, x, *args):
    shape = meta_shape(node)
    (h, w), (oh, ow) = x.shape[-2:], shape[-2:]
    r = x.rank
    lead = [f"d{k}" for k in range(r - 2)]
    src_h, src_w, factors = _nearest_plan(h, w, oh, ow, _nearest_scales(args))
    if factors:
        f0, f1 = factors
        return g.generic(shape, [(x, lead + [f"d{r - 2} floordiv {f0}", f"d{r - 1} floordiv {f1}"])],
                         lambda b, u, o: u, out_dtype=x.dtype, hint=node.name)
    # Other sizes: the source of each row and column from a table.
    th, tw = _index_table(g, src_h, "nearest_rows"), _index_table(g, src_w, "nearest_cols")

    def body(b, i, j, o):
        ivs = [b.index(k) for k in range(r - 2)] + [b.cast("arith.index_cast", i, "i64", "index"), b.cast("arith.index_cast", j, "i64", "index")]
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(shape, [(th, [f"d{r - 2}"]), (tw, [f"d{r - 1}"])], body,
                     out_dtype=x.dtype, hint=node.name)


@lowering("aten.upsample_nearest2d_backward.vec", "aten.upsample_nearest2d_backward.default")
def upsample_nearest2d_backward(g, node, grad, output_size, input_size, *args):
    shape = tuple(input_size)
    (h, w), (oh, ow) = shape[-2:], grad.shape[-2:]
    r = len(shape)
    lead = [f"d{k}" for k in range(r - 2)]
    # (its scales after input_size, as the forward's after output_size)
    src_h, src_w, factors = _nearest_plan(h, w, oh, ow, _nearest_scales((None,) + tuple(args)))
    if factors:
        f0, f1 = factors
        block = g.empty((f0, f1))
        return g.generic(shape, [(grad, lead + [f"d{r - 2} * {f0} + d{r}", f"d{r - 1} * {f1} + d{r + 1}"]),
                                 (block, [f"d{r}", f"d{r + 1}"])],
                         lambda b, u, _w, o: b.add(o, u), iterators=["parallel"] * r + ["reduction"] * 2,
                         out_exprs=dims(r), init=g.fill(shape, 0.0), hint=node.name)
    # Other sizes: the outputs that read input row y are a run starting at
    # first_h[y] of count_h[y] (sources never decrease); sum over the
    # longest run, masked.
    first_h, count_h = np.searchsorted(src_h, np.arange(h)), np.bincount(src_h, minlength=h)
    first_w, count_w = np.searchsorted(src_w, np.arange(w)), np.bincount(src_w, minlength=w)
    kh, kw = max(1, int(count_h.max())), max(1, int(count_w.max()))
    tables = [_index_table(g, t, n) for t, n in ((first_h, "first_rows"), (count_h, "count_rows"),
                                                  (first_w, "first_cols"), (count_w, "count_cols"))]
    block = g.empty((kh, kw))

    def body(b, fh, ch, fw, cw, _w, o):
        a, c = b.index(r), b.index(r + 1)
        ok = b.andi(b.cmpi("slt", a, b.cast("arith.index_cast", ch, "i64", "index"), "index"),
                    b.cmpi("slt", c, b.cast("arith.index_cast", cw, "i64", "index"), "index"))
        i = b.op("arith.minsi", b.op("arith.addi", b.cast("arith.index_cast", fh, "i64", "index"), a, ty="index"),
                 b.c(oh - 1, "index"), ty="index")
        j = b.op("arith.minsi", b.op("arith.addi", b.cast("arith.index_cast", fw, "i64", "index"), c, ty="index"),
                 b.c(ow - 1, "index"), ty="index")
        ivs = [b.index(k) for k in range(r - 2)] + [i, j]
        v = b.line("t", f"tensor.extract {grad.name}[{', '.join(ivs)}] : {grad.type}")
        return b.add(o, b.select(ok, v, b.c(0.0)))
    return g.generic(shape, [(tables[0], [f"d{r - 2}"]), (tables[1], [f"d{r - 2}"]),
                             (tables[2], [f"d{r - 1}"]), (tables[3], [f"d{r - 1}"]),
                             (block, [f"d{r}", f"d{r + 1}"])], body,
                     iterators=["parallel"] * r + ["reduction"] * 2, out_exprs=dims(r),
                     init=g.fill(shape, 0.0), hint=node.name)


@lowering("aten.adaptive_max_pool2d.default")
def adaptive_max_pool2d(g, node, x, size):
    """Sizes that divide: the max pool with that kernel (window-local
    indices). Otherwise PyTorch's floor/ceil windows, each output the first
    maximum over its window (_adaptive_weights marks membership), with
    ATen's index into the input's plane (h * W + w, i64)."""
    h, w = x.shape[-2:]
    if h % size[0] == 0 and w % size[1] == 0:
        k = [h // size[0], w // size[1]]
        return max_pool2d(g, node, x, k, k, [0, 0], [1, 1], False)
    require(x.rank == 4, node, "adaptive max pooling of an unbatched input")
    n, c = x.shape[:2]
    oh, ow = size
    inside = _adaptive_weights(g, h, w, oh, ow)

    def body(b, v, m_in, m, a):
        better = b.andi(b.cmpf("ogt", m_in, b.c(0.0)), b.cmpf("ogt", v, m))
        flat = b.op("arith.addi", _index_expr(b, 4, w, 0), b.index(5), ty="index")
        return [b.select(better, v, m), b.select(better, b.index_cast(flat, "i64"), a, ty="i64")]
    return tuple(g.generic_multi(
        [(n, c, oh, ow)] * 2, ["f32", "i64"],
        [(x, ["d0", "d1", "d4", "d5"]), (inside, ["d2", "d3", "d4", "d5"])], body,
        ["parallel"] * 4 + ["reduction"] * 2, [dims(4)] * 2,
        [g.fill((n, c, oh, ow), -math.inf), g.fill((n, c, oh, ow), 0, "i64")], hint=node.name))


@lowering("aten.adaptive_max_pool2d_backward.default")
def adaptive_max_pool2d_backward(g, node, grad, x, indices):
    h, w = x.shape[-2:]
    oh, ow = grad.shape[-2:]
    if h % oh == 0 and w % ow == 0:
        k = [h // oh, w // ow]
        return max_pool2d_backward(g, node, grad, x, k, k, [0, 0], [1, 1], False, indices)
    # Each input element sums the gradients of the outputs whose index
    # names it (h * W + w).

    def body(b, d, idx, o):
        flat = b.op("arith.addi", _index_expr(b, 2, w, 0), b.index(3), ty="index")
        hit = b.cmpi("eq", idx, b.index_cast(flat, "i64"), "i64")
        return b.add(o, b.select(hit, d, b.c(0.0)))
    return g.generic(x.shape, [(grad, ["d0", "d1", "d4", "d5"]), (indices, ["d0", "d1", "d4", "d5"])],
                     body, iterators=["parallel"] * 4 + ["reduction"] * 2, out_exprs=dims(4),
                     init=g.fill(x.shape, 0.0), hint=node.name)


@lowering("aten.prelu.default", "aten._prelu_kernel.default")
def prelu(g, node, x, w):
    """x where x > 0, else w * x; w has one value or one per channel (dim 1)."""
    wv = (w, [1]) if w.numel > 1 else (g.reshape(w, ()), [])
    return g.ew([x, wv], lambda b, u, a: b.select(b.cmpf("ogt", u, b.c(0.0)), u, b.mul(a, u)),
                shape=x.shape, hint=node.name)


@lowering("aten.linalg_vector_norm.default")
def linalg_vector_norm(g, node, x, ord=2, dim=None, keepdim=False, dtype=None):
    axes = list(range(x.rank)) if dim is None or len(dim) == 0 else list(dim)
    require(ord != 0, node, f"ord={ord}")
    if ord in (math.inf, -math.inf):
        # The largest (smallest) magnitude: a max of |x| (of -|x|, negated).
        sign = 1.0 if ord > 0 else -1.0
        mags = g.ew([x], lambda b, u: b.mul(b.c(sign), b.op("math.absf", u)))
        top = g.reduce(mags, axes, keepdim, kind="max", hint=node.name)
        return top if sign > 0 else g.ew([top], lambda b, u: b.neg(u), hint=node.name)
    p = float(ord)
    powed = g.ew([x], lambda b, u: b.mul(u, u) if p == 2 else b.op(
        "math.powf", b.op("math.absf", u), b.c(p)))
    s = g.reduce(powed, axes, keepdim)
    return g.ew([s], lambda b, u: b.sqrt(u) if p == 2 else b.op("math.powf", u, b.c(1.0 / p)),
                hint=node.name)


def _bilinear_matrix(n_in, output_size, align_corners, scale, axis):
    """The (n_out, n_in) matrix of PyTorch's bilinear interpolation along one
    axis, from PyTorch's own kernel on a basis (bilinear is separable and its
    rows sum to 1)."""
    import torch
    basis = torch.eye(n_in).reshape(n_in, 1, n_in, 1) if axis == 0 else \
        torch.eye(n_in).reshape(n_in, 1, 1, n_in)
    size = None
    if output_size is not None:
        size = [output_size[0], 1] if axis == 0 else [1, output_size[1]]
    scales = None
    if scale is not None:
        scales = [scale[0], 1.0] if axis == 0 else [1.0, scale[1]]
    out = torch.ops.aten.upsample_bilinear2d.vec(basis, size, align_corners, scales)
    m = out[:, 0, :, 0] if axis == 0 else out[:, 0, 0, :]
    return m.t().contiguous()  # (n_out, n_in)


@lowering("aten.upsample_bilinear2d_backward.vec")
def upsample_bilinear2d_backward(g, node, grad, output_size, input_size, align_corners,
                                 scale_factors):
    """grad_input = Wh^T grad Ww, with PyTorch's interpolation matrices
    (constants of the step), in two contractions."""
    from .export import dense_constant
    n, c, h, w = input_size
    oh, ow = grad.shape[-2:]
    size = output_size if output_size is not None else None
    wh = dense_constant(g, _bilinear_matrix(h, size, align_corners, scale_factors, 0), "wh")
    ww = dense_constant(g, _bilinear_matrix(w, size, align_corners, scale_factors, 1), "ww")
    require(wh.shape == (oh, h) and ww.shape == (ow, w), node,
            "bilinear sizes that do not match the gradient")
    t = g.generic((n, c, h, ow), [(grad, ["d0", "d1", "d4", "d3"]), (wh, ["d4", "d2"])],
                  lambda b, u, v, o: b.add(o, b.mul(u, v)),
                  iterators=["parallel"] * 4 + ["reduction"], out_exprs=dims(4),
                  init=g.fill((n, c, h, ow), 0.0))
    return g.generic((n, c, h, w), [(t, ["d0", "d1", "d2", "d4"]), (ww, ["d4", "d3"])],
                     lambda b, u, v, o: b.add(o, b.mul(u, v)),
                     iterators=["parallel"] * 4 + ["reduction"], out_exprs=dims(4),
                     init=g.fill((n, c, h, w), 0.0), hint=node.name)


# -- dropout: Philox4x32-10 from the step's seed ------------------------------
# Element i of the k-th dropout of the forward pass keeps its value when
# u >= p, u = (word 0 of Philox4x32-10(counter = (i, i >> 32, k, 0x80000000),
# key = (seed, seed >> 32)) >> 8) * 2^-24: the runtime's Philox with the
# dropout's number, top bit set, as its stream (encodings use tensor ids),
# so the mask is reproducible from the seed and checkable
# (act.export.philox_keep computes the same mask in NumPy).

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
DROPOUT_STREAM = 0x80000000
# torch.rand_like: the k-th in the step (forward, then backward, in graph
# order: eager's call order) draws u from counter (i, i >> 32, k,
# 0x40000000), the same word and scaling as dropout's (act.export.
# philox_uniform). Stochastic rounding in a custom backward (act.dfq's
# gradient quantizer) is traced this way.
RANDOM_STREAM = 0x40000000


def _philox_word0(b, c0, c1, c2, c3, keys):
    """Word 0 of Philox4x32-10 on i32 scalars; keys: the 10 round keys."""
    for k0, k1 in keys:
        p0 = b.g.fresh("mul")
        b.lines.append(f"{p0}:2 = arith.mului_extended {c0}, {b.c(PHILOX_M0 - (1 << 32), 'i32')} : i32")
        p1 = b.g.fresh("mul")
        b.lines.append(f"{p1}:2 = arith.mului_extended {c2}, {b.c(PHILOX_M1 - (1 << 32), 'i32')} : i32")
        n0 = b.op("arith.xori", b.op("arith.xori", f"{p1}#1", c1, ty="i32"), k0, ty="i32")
        n2 = b.op("arith.xori", b.op("arith.xori", f"{p0}#1", c3, ty="i32"), k1, ty="i32")
        c0, c1, c2, c3 = n0, f"{p1}#0", n2, f"{p0}#0"
    return c0


def _signed32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _philox_keys(g, seed):
    """The 10 round keys of Philox4x32-10 keyed by the step's i64 seed,
    computed once at the top of the function and shared by its random ops."""
    cached = g.__dict__.get("philox_keys")
    if cached is not None and cached[0] is seed:
        return cached[1]
    top = g.scalars()
    s = top.line("seed", f"tensor.extract {seed.name}[] : {seed.type}")
    s_lo = top.cast("arith.trunci", s, "i64", "i32")
    s_hi = top.cast("arith.trunci", top.op("arith.shrui", s, top.c(32, "i64"), ty="i64"),
                    "i64", "i32")
    keys = []
    k0, k1 = s_lo, s_hi
    for _ in range(10):
        keys.append((k0, k1))
        k0 = top.op("arith.addi", k0, top.c(_signed32(PHILOX_W0), "i32"), ty="i32")
        k1 = top.op("arith.addi", k1, top.c(_signed32(PHILOX_W1), "i32"), ty="i32")
    g.philox_keys = (seed, keys)
    return keys


def _philox_uniform(b, shape, k, stream, keys):
    """In a generic's body over `shape` (row-major element i): u in [0, 1),
    word 0 of Philox4x32-10(counter = (i, i >> 32, k, stream)) >> 8, times
    2^-24 (f32, exact)."""
    strides = [math.prod(shape[j + 1:]) for j in range(len(shape))]
    i = b.c(0, "index")
    for j, st in enumerate(strides):
        i = b.op("arith.addi", i, b.op("arith.muli", b.index(j), b.c(st, "index"),
                                        ty="index"), ty="index")
    i64 = b.index_cast(i, "i64")
    c0 = b.cast("arith.trunci", i64, "i64", "i32")
    c1 = b.cast("arith.trunci", b.op("arith.shrui", i64, b.c(32, "i64"), ty="i64"),
                "i64", "i32")
    w = _philox_word0(b, c0, c1, b.c(k, "i32"), b.c(_signed32(stream), "i32"), keys)
    r = b.op("arith.shrui", w, b.c(8, "i32"), ty="i32")
    return b.mul(b.cast("arith.uitofp", r, "i32", "f32"), b.c(1.0 / 16777216.0))


@lowering("aten.rand_like.default")
def rand_like(g, node, x, dtype=None, **kwargs):
    """Uniform [0, 1) noise from the step's seed (RANDOM_STREAM)."""
    seed = getattr(g, "dropout_seed", None)
    require(seed is not None, node, "rand_like without the step's random seed")
    require(dtype is None or str(dtype) == "torch.float32", node,
            f"rand_like of dtype {dtype}")
    k = node.meta.get("act_random")
    require(k is not None, node, "internal: rand_like without its number in the step")
    keys = _philox_keys(g, seed)
    return g.generic(x.shape, [(x, dims(x.rank))],
                     lambda b, u, o: _philox_uniform(b, x.shape, k, RANDOM_STREAM, keys),
                     hint=node.name)


@lowering("aten.native_dropout.default")
def native_dropout(g, node, x, p, train):
    """(x * mask / (1 - p), mask), mask from the step's dropout seed."""
    seed = getattr(g, "dropout_seed", None)
    require(seed is not None, node, "dropout without the step's dropout seed")
    k = g.__dict__.setdefault("dropout_count", 0)
    g.dropout_count = k + 1
    if not train or p == 0:
        return x, g.fill(x.shape, 1, "i1")
    require(p < 1, node, f"p={p}")
    keys = _philox_keys(g, seed)
    scale = 1.0 / (1.0 - p)

    def body(b, u, o, m):
        uf = _philox_uniform(b, x.shape, k, DROPOUT_STREAM, keys)
        keep = b.cmpf("oge", uf, b.c(float(p)))
        return [b.select(keep, b.mul(u, b.c(scale)), b.c(0.0)), keep]
    out, mask = g.generic_multi([x.shape, x.shape], ["f32", "i1"], [(x, dims(x.rank))], body,
                                ["parallel"] * x.rank, [dims(x.rank)] * 2,
                                [g.empty(x.shape), g.empty(x.shape, "i1")], hint=node.name)
    return out, mask


# -- flips, scans, diagonals, sorting, rounding division ----------------------

@lowering("aten.flip.default")
def flip(g, node, x, dims_):
    """out[.., i, ..] = x[.., n - 1 - i, ..] along each flipped dim."""
    exprs = [f"d{k}" for k in range(x.rank)]
    for d in dims_:
        d %= x.rank
        exprs[d] = f"{x.shape[d] - 1} - d{d}"
    return g.generic(x.shape, [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.rot90.default")
def rot90(g, node, x, k=1, dims_=(0, 1)):
    """torch.rot90 as one generic: k = 1 is x.flip(d1).transpose(d0, d1),
    k = 2 flips both, k = 3 is x.flip(d0).transpose(d0, d1) (its backward
    is rot90 by -k)."""
    d0, d1 = dims_[0] % x.rank, dims_[1] % x.rank
    n0, n1 = x.shape[d0], x.shape[d1]
    k %= 4
    exprs = [f"d{i}" for i in range(x.rank)]
    shape = list(x.shape)
    if k == 1:
        exprs[d0], exprs[d1] = f"d{d1}", f"{n1 - 1} - d{d0}"
    elif k == 2:
        exprs[d0], exprs[d1] = f"{n0 - 1} - d{d0}", f"{n1 - 1} - d{d1}"
    elif k == 3:
        exprs[d0], exprs[d1] = f"{n0 - 1} - d{d1}", f"d{d0}"
    if k % 2:
        shape[d0], shape[d1] = n1, n0
    return g.generic(tuple(shape), [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


def _scan(op, identity):
    """`combine(b, accumulated, value, type)`, or an `arith` op's name."""
    combine = op if callable(op) else (lambda b, o, v, acc: arith(b, op, o, v, acc))

    def lower(g, node, x, dim, dtype=None):
        """out[.., i, ..] = x[.., 0, ..] op .. op x[.., i, ..], accumulated in
        f64 for floats as ATen's CPU kernels do (i64 for integers): a
        reduction over k masked to k <= i (n^2 work along dim: fine for the
        sequence and channel lengths it meets in models)."""
        out = node_dtype(node)
        dim %= max(x.rank, 1)
        n = x.rank
        acc = "f64" if out in FLOAT_TYPES else "i64"
        exprs = [f"d{n}" if k == dim else f"d{k}" for k in range(n)]

        def body(b, u, o):
            v = convert(b, u, x.dtype, acc)
            hit = b.cmpi("ule", b.index(n), b.index(dim), "index")
            return b.select(hit, combine(b, o, v, acc), o, ty=acc)
        total = g.generic(x.shape, [(x, exprs)], body, out_dtype=acc,
                          iterators=["parallel"] * n + ["reduction"], out_exprs=dims(n),
                          init=g.fill(x.shape, identity, acc), hint=node.name + "_acc")
        return typed_ew(g, node, [total], lambda b, u: u, out, out)
    return lower


LOWERINGS["aten.cumsum.default"] = _scan("add", 0)
LOWERINGS["aten.cumprod.default"] = _scan("mul", 1)


def _cumulative_extreme(pred):
    def lower(g, node, x, dim):
        """cummax / cummin: the running extreme along dim and its index, the
        later one on ties and any NaN taken, as ATen's cummax_helper (a
        reduction over k <= i, in order)."""
        dim %= max(x.rank, 1)
        n = x.rank
        exprs = [f"d{n}" if k == dim else f"d{k}" for k in range(n)]

        def body(b, u, o, a):
            nan_u = b.cmpf("uno", u, u)
            nan_o = b.cmpf("uno", o, o)
            better = b.cmpf(pred, u, o)
            take = b.op("arith.ori", nan_u, b.andi(b.op("arith.xori", nan_o, b.c(True, "i1"), ty="i1"),
                                                 better), ty="i1")
            take = b.andi(take, b.cmpi("ule", b.index(n), b.index(dim), "index"))
            k = b.index_cast(b.index(n), "i64")
            return [b.select(take, u, o), b.select(take, k, a, ty="i64")]
        start = -math.inf if pred == "oge" else math.inf
        return tuple(g.generic_multi(
            [x.shape] * 2, ["f32", "i64"], [(x, exprs)], body,
            ["parallel"] * n + ["reduction"], [dims(n)] * 2,
            [g.fill(x.shape, start), g.fill(x.shape, 0, "i64")], hint=node.name))
    return lower


LOWERINGS["aten.cummax.default"] = _cumulative_extreme("oge")
LOWERINGS["aten.cummin.default"] = _cumulative_extreme("ole")


def _log_add_exp(b, o, v, acc):
    """log(e^o + e^v) = max + log1p(exp(min - max)); -inf while both are."""
    hi = b.op("arith.maximumf", o, v, ty=acc)
    lo = b.op("arith.minimumf", o, v, ty=acc)
    added = b.op("arith.addf", hi, b.op("math.log1p", b.op(
        "math.exp", b.op("arith.subf", lo, hi, ty=acc), ty=acc), ty=acc), ty=acc)
    empty = b.line("p", f"arith.cmpf oeq, {hi}, {b.c(-math.inf, acc)} : {acc}")
    return b.select(empty, hi, added, ty=acc)


# logcumsumexp: log of the running sum of exp, in f64 as cumsum.
LOWERINGS["aten.logcumsumexp.default"] = _scan(_log_add_exp, -math.inf)


@lowering("aten.diagonal.default")
def diagonal(g, node, x, offset=0, dim1=0, dim2=1):
    """The diagonal of dims (dim1, dim2), last in the result: out[.., i] =
    x[.., i + max(0, -offset), i + max(0, offset), ..] (read with
    tensor.extract: a map (d0, d0) over dims of different sizes does not
    verify)."""
    dim1, dim2 = dim1 % x.rank, dim2 % x.rank
    rest = [k for k in range(x.rank) if k not in (dim1, dim2)]
    shape = meta_shape(node)
    i = len(rest)

    def body(b, o):
        ivs = [None] * x.rank
        for pos, k in enumerate(rest):
            ivs[k] = b.index(pos)
        ivs[dim1] = b.op("arith.addi", b.index(i), b.c(max(0, -offset), "index"), ty="index")
        ivs[dim2] = b.op("arith.addi", b.index(i), b.c(max(0, offset), "index"), ty="index")
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(shape, [], body, out_dtype=x.dtype, hint=node.name)


def _ranks(g, x, dim, descending, hint):
    """Each element's position in a stable sort along dim: the number of
    elements before it in the order (smaller, or equal and earlier; NaN
    sorts last ascending, first descending, as in PyTorch), an index."""
    n = x.rank
    other = [f"d{n}" if k == dim else f"d{k}" for k in range(n)]

    def body(b, u, v, o):
        i, j = b.index(dim), b.index(n)
        if x.dtype not in FLOAT_TYPES:  # integers (an argsort's indices): signed order
            less = b.cmpi("sgt" if descending else "slt", v, u, x.dtype)
            earlier = b.andi(b.cmpi("eq", u, v, x.dtype), b.cmpi("ult", j, i, "index"))
            before = b.op("arith.ori", less, earlier, ty="i1")
            return b.select(before, b.op("arith.addi", o, b.c(1, "i64"), ty="i64"), o, ty="i64")
        # v before u: v < u (NaN is largest), or equal and j < i.
        u_nan, v_nan = b.cmpf("uno", u, u), b.cmpf("uno", v, v)
        less = b.cmpf("ogt" if descending else "olt", v, u)
        if descending:
            less = b.op("arith.ori", less, b.andi(v_nan, b.op("arith.xori", u_nan, b.c(True, "i1"),
                                                              ty="i1")), ty="i1")
        else:
            less = b.op("arith.ori", less, b.andi(u_nan, b.op("arith.xori", v_nan, b.c(True, "i1"),
                                                              ty="i1")), ty="i1")
        same = b.op("arith.ori", b.cmpf("oeq", u, v), b.andi(u_nan, v_nan), ty="i1")
        earlier = b.andi(same, b.cmpi("ult", j, i, "index"))
        before = b.op("arith.ori", less, earlier, ty="i1")
        return b.select(before, b.op("arith.addi", o, b.c(1, "i64"), ty="i64"), o, ty="i64")
    return g.generic(x.shape, [(x, dims(n)), (x, other)], body, out_dtype="i64",
                     iterators=["parallel"] * n + ["reduction"], out_exprs=dims(n),
                     init=g.fill(x.shape, 0, "i64"), hint=hint + "_rank")


def _sorted(g, x, dim, descending, count, hint):
    """(values, indices) of the first `count` positions of x's stable sort
    along dim: position p takes the element whose rank is p (n^2 work
    along dim)."""
    n = x.rank
    rank = _ranks(g, x, dim, descending, hint)
    shape = tuple(count if k == dim else d for k, d in enumerate(x.shape))
    src = [f"d{n}" if k == dim else f"d{k}" for k in range(n)]

    def body(b, u, r, ov, oi):
        hit = b.cmpi("eq", r, b.index_cast(b.index(dim), "i64"), "i64")
        j = b.index_cast(b.index(n), "i64")
        return [b.select(hit, u, ov, ty=x.dtype), b.select(hit, j, oi, ty="i64")]
    return g.generic_multi([shape, shape], [x.dtype, "i64"], [(x, src), (rank, src)], body,
                           ["parallel"] * n + ["reduction"], [dims(n), dims(n)],
                           [g.fill(shape, 0, x.dtype), g.fill(shape, 0, "i64")], hint=hint)


@lowering("aten.sort.default", "aten.sort.stable")
def sort(g, node, x, *args, **kwargs):
    """aten.sort(x, dim=-1, descending=False) and aten.sort.stable(x, *,
    stable, dim, descending): always stable."""
    if str(node.target) == "aten.sort.stable":
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
        if args:
            dim = args[1] if len(args) > 1 else dim
            descending = args[2] if len(args) > 2 else descending
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    require(x.dtype in FLOAT_TYPES or x.dtype in ("i64", "i32"), node,
            f"sorting {x.dtype} elements")
    dim %= max(x.rank, 1)
    return tuple(_sorted(g, x, dim, descending, x.shape[dim], node.name))


@lowering("aten.topk.default")
def topk(g, node, x, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) along dim, in order; among equal values the
    earlier index first."""
    require(x.dtype in FLOAT_TYPES or x.dtype in ("i64", "i32"), node,
            f"topk of {x.dtype} elements")
    dim %= max(x.rank, 1)
    return tuple(_sorted(g, x, dim, largest, k, node.name))


@lowering("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def div_mode(g, node, a, b, rounding_mode=None):
    """Division rounded toward zero ("trunc") or down ("floor"); floats
    as ATen's CPU kernel (the quotient rounded), integers exactly."""
    out = node_dtype(node)
    if rounding_mode is None:
        return _binary_typed("div")(g, node, a, b)

    def fn(bb, x, y):
        if out in FLOAT_TYPES:
            q = arith(bb, "div", x, y, out)
            return bb.op("math.trunc" if rounding_mode == "trunc" else "math.floor", q, ty=out)
        return bb.op("arith.divsi" if rounding_mode == "trunc" else "arith.floordivsi", x, y,
                     ty=out)
    return typed_ew(g, node, [a, b], fn, out, out)


@lowering("aten.prod.dim_int", "aten.prod.default")
def prod(g, node, x, dim=None, keepdim=False, dtype=None):
    """The product over dim (or all elements), in x's type (i64 for
    integers and booleans, as in PyTorch)."""
    out = node_dtype(node)
    axes = list(range(x.rank)) if dim is None else [dim % max(x.rank, 1)]
    keep = [k for k in range(x.rank) if k not in axes]
    shape = tuple(x.shape[k] for k in keep)
    r = g.generic(shape, [(x, dims(x.rank))],
                  lambda b, u, o: arith(b, "mul", o, convert(b, u, x.dtype, out), out),
                  out_dtype=out,
                  iterators=["reduction" if k in axes else "parallel" for k in range(x.rank)],
                  out_exprs=[f"d{k}" for k in keep], init=g.fill(shape, 1, out), hint=node.name)
    if keepdim and dim is not None:
        r = g.reshape(r, tuple(1 if k in axes else d for k, d in enumerate(x.shape)))
    return r


@lowering("aten.diagonal_scatter.default")
def diagonal_scatter(g, node, x, src, offset=0, dim1=0, dim2=1):
    """x with its diagonal of (dim1, dim2) replaced by src (diagonal's
    layout: the other dims, then the diagonal)."""
    dim1, dim2 = dim1 % x.rank, dim2 % x.rank
    rest = [k for k in range(x.rank) if k not in (dim1, dim2)]
    lo1, lo2 = max(0, -offset), max(0, offset)
    count = src.shape[-1]

    def body(b, u, o):
        i1 = b.op("arith.subi", b.index(dim1), b.c(lo1, "index"), ty="index")
        i2 = b.op("arith.subi", b.index(dim2), b.c(lo2, "index"), ty="index")
        on = b.andi(b.cmpi("eq", i1, i2, "index"),
                    b.andi(b.cmpi("sge", i1, b.c(0, "index"), "index"),
                           b.cmpi("slt", i1, b.c(count, "index"), "index")))
        safe = b.select(on, i1, b.c(0, "index"), ty="index")
        ivs = [b.index(k) for k in rest] + [safe]
        v = b.line("t", f"tensor.extract {src.name}[{', '.join(ivs)}] : {src.type}")
        return b.select(on, v, u, ty=x.dtype)
    return g.generic(x.shape, [(x, dims(x.rank))], body, out_dtype=x.dtype, hint=node.name)
