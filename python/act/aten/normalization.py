"""Normalization: LayerNorm, BatchNorm (1.13's native_batch_norm and
2.x's _native_batch_norm_legit family) and their backwards."""

import math

from ..mlir import Sym
from .core import lowering, require

__all__ = ['native_batch_norm', 'native_batch_norm_backward', 'native_batch_norm_legit', 'native_batch_norm_legit_functional', 'native_batch_norm_legit_no_stats', 'native_batch_norm_legit_no_training', 'native_layer_norm', 'native_layer_norm_backward']


def _mean_f64(g, x, axes, count):
    """The mean of f32 x over axes, accumulated in f64 (ATen's CPU
    statistics accumulate in double), rounded to f32 once."""
    s = g.reduce(x, axes, hint="sum64", acc="f64")
    return g.ew([s], lambda b, v: b.cast("arith.truncf", b.op("arith.divf", v, b.c(count, "f64"),
                                                                ty="f64"), "f64", "f32"))


def _moments(g, x, axes, bshape, eps, hint):
    """mean and 1/sqrt(biased var + eps) over axes, shaped bshape."""
    count = math.prod(x.shape[a] for a in axes)  # (k * N over the batch: act.mlir.Sym)
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


def _unbiased_momentum(g, m, count):
    """m * count / max(count - 1, 1) as an f32 scalar computed at run time
    (in f64, as ATen computes it) where count depends on the batch; None
    where it is a number (the caller writes the constant)."""
    if not isinstance(count, Sym):
        return None
    s = g.scalars()
    c = s.c(count, "f64")
    den = s.op("arith.maximumf", s.op("arith.subf", c, s.c(1.0, "f64"), ty="f64"),
               s.c(1.0, "f64"), ty="f64")
    return s.cast("arith.truncf", s.op("arith.mulf", s.c(m, "f64"),
                                       s.op("arith.divf", c, den, ty="f64"), ty="f64"),
                  "f64", "f32")


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
        scale = _unbiased_momentum(g, m, count)
        updates = g.__dict__.setdefault("buffer_updates", {})
        updates[running_mean.name] = g.ew(
            [running_mean, mean1], lambda b, r, u: b.add(b.mul(r, b.c(1.0 - m)), b.mul(u, b.c(m))),
            hint=node.name + "_running_mean")
        var = g.reshape(g.last_variance, (x.shape[1],))
        updates[running_var.name] = g.ew(
            [running_var, var],
            lambda b, r, u: b.add(b.mul(r, b.c(1.0 - m)), b.mul(scale or b.c(m * unbias), u)),
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
    count = math.prod(x.shape[a] for a in axes)
    return _norm_backward(g, grad, x, g.reshape(save_mean, bshape), g.reshape(save_invstd, bshape),
                          w, bshape, axes, axes, count, mask, node.name)
