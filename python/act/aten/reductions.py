"""Reductions: sums and means, and the others (max, min, var, norms, any/all)."""

import math

from ..mlir import dims
from .core import FLOAT_TYPES, LOWERINGS, compare, lowering, meta_shape, node_dtype, typed_ew

__all__ = ['amax', 'amin', 'mean_all', 'mean_dims', 'sum_all', 'sum_dims']


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
    return g.ew([s], lambda b, u: b.div(u, b.c(count)), hint=node.name)


@lowering("aten.mean.default")
def mean_all(g, node, x, dtype=None):
    return mean_dims(g, node, x, list(range(x.rank)))


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
