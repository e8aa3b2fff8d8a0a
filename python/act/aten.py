"""Lowerings of aten ops (as AOTAutograd's FX graphs hold them) to MLIR.

One function per op, registered by name in LOWERINGS. A lowering gets the
Graph builder, the FX node, and the node's operands with FX nodes replaced by
their values (`V`, or a tuple for multi-result ops); it returns a V or a tuple
(None where an output is not computed). Formulas follow ATen's CPU kernels
and derivatives.yaml; every lowering is checked against autograd by the
gradient oracle (python/tests).
"""

import math

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
    tm = node.meta.get("tensor_meta")
    return tuple(tm.shape) if tm is not None else None


def resolve_sizes(sizes, numel):
    sizes = list(sizes)
    if -1 in sizes:
        known = math.prod(d for d in sizes if d != -1)
        sizes[sizes.index(-1)] = numel // known
    return tuple(sizes)


# -- element-wise -------------------------------------------------------------

def _binary(fn):
    def lower(g, node, a, b, alpha=1):
        def body(bb, x, y):
            if alpha != 1:
                y = bb.mul(y, bb.c(alpha))
            return fn(bb, x, y)
        return g.ew([a, b], body, hint=node.name)
    return lower


LOWERINGS["aten.add.Tensor"] = _binary(lambda b, x, y: b.add(x, y))
LOWERINGS["aten.add.Scalar"] = _binary(lambda b, x, y: b.add(x, y))
LOWERINGS["aten.sub.Tensor"] = _binary(lambda b, x, y: b.sub(x, y))
LOWERINGS["aten.sub.Scalar"] = _binary(lambda b, x, y: b.sub(x, y))
LOWERINGS["aten.mul.Tensor"] = _binary(lambda b, x, y: b.mul(x, y))
LOWERINGS["aten.mul.Scalar"] = _binary(lambda b, x, y: b.mul(x, y))
LOWERINGS["aten.div.Tensor"] = _binary(lambda b, x, y: b.div(x, y))
LOWERINGS["aten.div.Scalar"] = _binary(lambda b, x, y: b.div(x, y))


def _unary(fn):
    def lower(g, node, x):
        return g.ew([x], fn, hint=node.name)
    return lower


LOWERINGS["aten.neg.default"] = _unary(lambda b, x: b.neg(x))
LOWERINGS["aten.exp.default"] = _unary(lambda b, x: b.exp(x))
LOWERINGS["aten.log.default"] = _unary(lambda b, x: b.log(x))
LOWERINGS["aten.tanh.default"] = _unary(lambda b, x: b.tanh(x))
LOWERINGS["aten.sqrt.default"] = _unary(lambda b, x: b.sqrt(x))
LOWERINGS["aten.rsqrt.default"] = _unary(lambda b, x: b.rsqrt(x))
LOWERINGS["aten.relu.default"] = _unary(lambda b, x: b.max(x, b.c(0.0)))
LOWERINGS["aten.sigmoid.default"] = _unary(
    lambda b, x: b.div(b.c(1.0), b.add(b.c(1.0), b.exp(b.neg(x)))))

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
    require(approximate == "none", node, f"approximate='{approximate}'")
    return g.ew([x], lambda b, u: b.mul(u, _gelu_cdf(b, u)), hint=node.name)


@lowering("aten.gelu_backward.default")
def gelu_backward(g, node, grad, x, approximate="none"):
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
    return g.ew([x], lambda b, u: u, shape=shape, hint=node.name)


@lowering("aten.split.Tensor")
def split(g, node, x, size, dim=0):
    dim %= x.rank
    out, start = [], 0
    while start < x.shape[dim]:
        n = min(size, x.shape[dim] - start)
        offsets = [start if i == dim else 0 for i in range(x.rank)]
        sizes = [n if i == dim else d for i, d in enumerate(x.shape)]
        out.append(g.extract_slice(x, offsets, sizes, hint=node.name))
        start += n
    return tuple(out)


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

@lowering("aten.sum.dim_IntList")
def sum_dims(g, node, x, axes, keepdim=False, dtype=None):
    axes = list(range(x.rank)) if not axes else axes
    return g.reduce(x, axes, keepdim, hint=node.name)


@lowering("aten.sum.default")
def sum_all(g, node, x, dtype=None):
    return g.reduce(x, list(range(x.rank)), hint=node.name)


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


@lowering("aten.addmm.default")
def addmm(g, node, bias, a, b, beta=1, alpha=1):
    prod = g.matmul(a, b)

    def body(bb, p, c):
        if alpha != 1:
            p = bb.mul(p, bb.c(alpha))
        if beta != 1:
            c = bb.mul(c, bb.c(beta))
        return bb.add(p, c)
    return g.ew([prod, bias], body, hint=node.name)


def _conv_args(node, stride, padding, dilation, transposed, output_padding, groups, w):
    require(w.rank == 4, node, f"a {w.rank - 2}-d convolution (only 2-d)")
    require(not transposed, node, "a transposed convolution")
    require(groups == 1, node, f"groups={groups}")
    require(all(d == 1 for d in dilation), node, f"dilation={list(dilation)}")
    return list(stride), list(padding)


@lowering("aten.convolution.default")
def convolution(g, node, x, w, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    stride, padding = _conv_args(node, stride, padding, dilation, transposed,
                                 output_padding, groups, w)
    xp = g.pad(x, [0, 0] + padding, [0, 0] + padding, hint=node.name + "_pad")
    y = g.conv2d(xp, w, stride, hint=node.name)
    if bias is not None:
        y = g.ew([y, g.reshape(bias, (bias.shape[0], 1, 1))], lambda b, u, c: b.add(u, c),
                 hint=node.name)
    return y


@lowering("aten.convolution_backward.default")
def convolution_backward(g, node, grad, x, w, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """grad_input: the correlation of the stride-dilated, padded gradient
    with the weight read backwards; grad_weight: the correlation of the
    padded input with the gradient; grad_bias: the gradient summed."""
    (s0, s1), (p0, p1) = _conv_args(node, stride, padding, dilation, transposed,
                                    output_padding, groups, w)
    n, c, h, wd = x.shape
    f, _, k0, k1 = w.shape
    _, _, oh, ow = grad.shape
    gi = gw = gb = None
    if output_mask[0]:
        lh = max(h + p0 + k0 - 1, (k0 - 1) + (oh - 1) * s0 + 1)
        lw = max(wd + p1 + k1 - 1, (k1 - 1) + (ow - 1) * s1 + 1)
        zeros = g.fill((n, f, lh, lw), 0.0)
        gp = g.insert_slice(grad, zeros, [0, 0, k0 - 1, k1 - 1], [1, 1, s0, s1],
                            hint=node.name + "_dilated")
        init = g.fill((n, c, h, wd), 0.0)
        gi = g.generic((n, c, h, wd),
                       [(gp, ["d0", "d4", f"d2 - d5 + {p0 + k0 - 1}", f"d3 - d6 + {p1 + k1 - 1}"]),
                        (w, ["d4", "d1", "d5", "d6"])],
                       lambda b, u, v, o: b.add(o, b.mul(u, v)),
                       iterators=["parallel"] * 4 + ["reduction"] * 3,
                       out_exprs=dims(4), init=init, hint=node.name + "_input")
    if output_mask[1]:
        xp = g.pad(x, [0, 0, p0, p1], [0, 0, p0, p1], hint=node.name + "_pad")
        init = g.fill(w.shape, 0.0)
        gw = g.generic(w.shape,
                       [(grad, ["d4", "d0", "d5", "d6"]),
                        (xp, ["d4", "d1", f"d5 * {s0} + d2", f"d6 * {s1} + d3"])],
                       lambda b, u, v, o: b.add(o, b.mul(u, v)),
                       iterators=["parallel"] * 4 + ["reduction"] * 3,
                       out_exprs=dims(4), init=init, hint=node.name + "_weight")
    if output_mask[2]:
        gb = g.reduce(grad, [0, 2, 3], hint=node.name + "_bias")
    return gi, gw, gb


# -- pooling ------------------------------------------------------------------

def _pool_args(node, kernel, stride, padding, dilation, ceil_mode):
    kernel = list(kernel) * (2 // len(kernel))
    stride = list(stride or kernel) * (2 // len(stride or kernel))
    padding = list(padding) * (2 // len(padding))
    require(all(d == 1 for d in dilation), node, f"dilation={list(dilation)}")
    require(not ceil_mode, node, "ceil_mode=True")
    return kernel, stride, padding


def _index_expr(b, dim, scale, offset):
    """index(dim) * scale + offset, as index."""
    i = b.index(dim)
    if scale != 1:
        i = b.op("arith.muli", i, b.c(scale, "index"), ty="index")
    if offset:
        i = b.op("arith.addi", i, b.c(offset, "index"), ty="index")
    return i


@lowering("aten.max_pool2d_with_indices.default")
def max_pool2d(g, node, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """Max and the flat index h * W + w of the first maximum of each window
    (ATen's order); padding reads -inf."""
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, dilation, ceil_mode)
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p0 - k0) // s0 + 1, (w + 2 * p1 - k1) // s1 + 1
    xp = g.pad(x, [0, 0, p0, p1], [0, 0, p0, p1], value=-math.inf, hint=node.name + "_pad")
    window = g.empty((k0, k1))
    best = g.fill((n, c, oh, ow), -math.inf)
    arg = g.fill((n, c, oh, ow), 0, "i64")

    def body(b, v, _w, m, a):
        hh = b.op("arith.subi", _index_expr(b, 2, s0, 0), b.c(p0, "index"), ty="index")
        hh = b.op("arith.addi", hh, b.index(4), ty="index")
        ww = b.op("arith.subi", _index_expr(b, 3, s1, 0), b.c(p1, "index"), ty="index")
        ww = b.op("arith.addi", ww, b.index(5), ty="index")
        flat = b.op("arith.addi", b.op("arith.muli", hh, b.c(w, "index"), ty="index"), ww, ty="index")
        greater = b.cmpf("ogt", v, m)
        return [b.select(greater, v, m), b.select(greater, b.index_cast(flat, "i64"), a, ty="i64")]
    return tuple(g.generic_multi(
        [(n, c, oh, ow)] * 2, ["f32", "i64"],
        [(xp, ["d0", "d1", f"d2 * {s0} + d4", f"d3 * {s1} + d5"]), (window, ["d4", "d5"])],
        body, ["parallel"] * 4 + ["reduction"] * 2, [dims(4)] * 2, [best, arg], hint=node.name))


@lowering("aten.max_pool2d_with_indices_backward.default")
def max_pool2d_backward(g, node, grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    """Each input element sums the gradients of the windows whose argmax it
    is. The candidate windows of row h are (h + p) / s - i for i below
    ceil(k / s); the gradient and indices are padded (index -1) so every
    candidate is in bounds."""
    (k0, k1), (s0, s1), (p0, p1) = _pool_args(node, kernel, stride, padding, dilation, ceil_mode)
    n, c, h, w = x.shape
    _, _, oh, ow = grad.shape
    c0, c1 = -(-k0 // s0), -(-k1 // s1)
    low = [0, 0, c0 - 1, c1 - 1]
    high = [0, 0, max(0, (h - 1 + p0) // s0 - (oh - 1)), max(0, (w - 1 + p1) // s1 - (ow - 1))]
    gp = g.pad(grad, low, high, hint=node.name + "_pad")
    ip = g.pad(indices, low, high, value=-1, hint=node.name + "_pad")
    window = g.empty((c0, c1))
    init = g.fill((n, c, h, w), 0.0)
    rows = f"(d2 + {p0}) floordiv {s0} - d4 + {c0 - 1}"
    cols = f"(d3 + {p1}) floordiv {s1} - d5 + {c1 - 1}"

    def body(b, d, idx, _w, o):
        flat = b.op("arith.addi", _index_expr(b, 2, w, 0), b.index(3), ty="index")
        hit = b.cmpi("eq", idx, b.index_cast(flat, "i64"), "i64")
        return b.add(o, b.select(hit, d, b.c(0.0)))
    return g.generic((n, c, h, w),
                     [(gp, ["d0", "d1", rows, cols]), (ip, ["d0", "d1", rows, cols]),
                      (window, ["d4", "d5"])],
                     body, iterators=["parallel"] * 4 + ["reduction"] * 2,
                     out_exprs=dims(4), init=init, hint=node.name)


# -- normalization ------------------------------------------------------------

def _moments(g, x, axes, bshape, eps, hint):
    """mean and 1/sqrt(biased var + eps) over axes, shaped bshape."""
    count = float(math.prod(x.shape[a] for a in axes))
    mean = g.ew([g.reduce(x, axes)], lambda b, s: b.div(s, b.c(count)))
    mean = g.reshape(mean, bshape)
    sq = g.ew([x, mean], lambda b, u, m: b.mul(b.sub(u, m), b.sub(u, m)))
    var = g.ew([g.reduce(sq, axes)], lambda b, s: b.div(s, b.c(count)))
    rstd = g.ew([var], lambda b, v: b.rsqrt(b.add(v, b.c(eps))), hint=hint + "_rstd")
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


def _norm_backward(g, grad, x, mean, rstd, w, wshape, axes, other_axes, count, mask, hint):
    """grad_input = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)) over
    axes, wg = w * grad; grad_weight = sum(grad * xhat), grad_bias =
    sum(grad), both over other_axes."""
    xhat = g.ew([x, mean, rstd], lambda b, u, m, r: b.mul(b.sub(u, m), r))
    wv = g.reshape(w, wshape) if w is not None else None
    wg = g.ew([grad, wv], lambda b, d, v: b.mul(d, v)) if wv is not None else grad
    keep = [1 if i in axes else d for i, d in enumerate(x.shape)]
    gi = gw = gb = None
    if mask[0]:
        s1 = g.reshape(g.reduce(wg, axes), keep)
        s2 = g.reshape(g.reduce(g.ew([wg, xhat], lambda b, u, v: b.mul(u, v)), axes), keep)

        def body(b, d, xh, r, a, c):
            inner = b.sub(b.sub(d, b.div(a, b.c(count))), b.mul(xh, b.div(c, b.c(count))))
            return b.mul(r, inner)
        gi = g.ew([wg, xhat, rstd, s1, s2], body, hint=hint + "_input")
    if mask[1] and w is not None:
        gw = g.reshape(g.reduce(g.ew([grad, xhat], lambda b, u, v: b.mul(u, v)), other_axes),
                       w.shape)
    if mask[2]:
        gb = g.reduce(grad, other_axes)
        if w is not None:
            gb = g.reshape(gb, w.shape)
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


@lowering("aten.native_batch_norm.default")
def native_batch_norm(g, node, x, w, bias, running_mean, running_var, training, momentum, eps):
    require(training and running_mean is None and running_var is None, node,
            "batch norm with running statistics (export with track_running_stats=False)")
    axes, bshape = _bn_shapes(x)
    mean, rstd, _ = _moments(g, x, axes, bshape, eps, node.name)
    out = _affine_out(g, x, mean, rstd, w, bias, bshape, node.name)
    return out, g.reshape(mean, (x.shape[1],)), g.reshape(rstd, (x.shape[1],))


@lowering("aten.native_batch_norm_backward.default")
def native_batch_norm_backward(g, node, grad, x, w, running_mean, running_var, save_mean,
                               save_invstd, train, eps, mask):
    require(train, node, "batch norm backward in eval mode")
    axes, bshape = _bn_shapes(x)
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
    require(weight is None, node, "a class weight")
    require(x.rank == 2, node, f"input of rank {x.rank} (only [N, C])")
    require(reduction in (0, 1, 2), node, f"reduction={reduction}")


def _valid_count(g, target, ignore_index):
    init = g.fill((), 0.0)
    return g.generic((), [(target, ["d0"])],
                     lambda b, t, o: b.add(o, b.select(b.cmpi("ne", t, b.c(ignore_index, "i64"), "i64"),
                                                       b.c(1.0), b.c(0.0))),
                     iterators=["reduction"], out_exprs=[], init=init, hint="total_weight")


@lowering("aten.nll_loss_forward.default")
def nll_loss_forward(g, node, x, target, weight, reduction, ignore_index):
    """-x[n, target[n]] summed (or averaged over the non-ignored rows)."""
    _nll_args(node, x, weight, reduction)
    n, _ = x.shape
    init = g.fill((n,), 0.0)

    def pick(b, v, t, o):
        c = b.index_cast(b.index(1), "i64")
        hit = b.andi(b.cmpi("eq", c, t, "i64"), b.cmpi("ne", t, b.c(ignore_index, "i64"), "i64"))
        return b.sub(o, b.select(hit, v, b.c(0.0)))
    picked = g.generic((n,), [(x, ["d0", "d1"]), (target, ["d0"])], pick,
                       iterators=["parallel", "reduction"], out_exprs=["d0"], init=init)
    total = _valid_count(g, target, ignore_index)
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

    def body(b, t, s, o):
        c = b.index_cast(b.index(1), "i64")
        hit = b.andi(b.cmpi("eq", c, t, "i64"), b.cmpi("ne", t, b.c(ignore_index, "i64"), "i64"))
        return b.select(hit, b.neg(s), b.c(0.0))
    return g.generic(x.shape, [(target, ["d0"]), (scale, sexprs)], body, hint=node.name)
