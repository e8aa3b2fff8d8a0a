"""Softmax, log-softmax and the NLL loss, with their backwards."""
from .core import lowering, require

__all__ = ['log_softmax', 'log_softmax_backward', 'nll_loss_backward', 'nll_loss_forward', 'softmax', 'softmax_backward']


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
