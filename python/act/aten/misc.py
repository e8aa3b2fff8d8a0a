"""Flips, scans, diagonals, sorting, rounding division."""

import math

from ..mlir import dims
from .core import FLOAT_TYPES, LOWERINGS, _binary_typed, arith, convert, lowering, meta_shape, node_dtype, require, typed_ew

__all__ = ['diagonal', 'diagonal_scatter', 'div_mode', 'flip', 'prod', 'rot90', 'sort', 'topk']


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
