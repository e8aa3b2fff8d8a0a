"""More of the set: selection reductions, repeat, scatter, nearest and
bilinear upsampling, embedding backward."""

import math

import numpy as np
import torch

from ..mlir import V, dims
from .core import dense_constant, lowering, meta_shape, require
from .reductions import amin
from .pooling import _adaptive_weights, _index_expr, max_pool2d, max_pool2d_backward

__all__ = ['adaptive_max_pool2d', 'adaptive_max_pool2d_backward', 'argmax', 'argmin', 'linalg_vector_norm', 'max_all', 'max_dim', 'min_all', 'min_dim', 'prelu', 'repeat', 'scatter', 'upsample_bilinear2d_backward', 'upsample_nearest2d', 'upsample_nearest2d_backward']


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
