"""Element-wise ops: the typed forward ops (arithmetic, comparisons,
activations) and the f32 element-wise backward formulas."""

import math

from ..mlir import V
from .core import FLOAT_TYPES, LOWERINGS, UnsupportedError, _CMP, _binary_typed, arith, compare, convert, lowering, node_dtype, promote, require, typed_ew
from .views import expand

__all__ = ['INV_SQRT_2PI', 'SQRT1_2', 'SQRT_2_OVER_PI', 'clamp', 'clamp_max', 'clamp_min', 'copy', 'gelu', 'gelu_backward', 'gelu_tanh', 'gelu_tanh_backward', 'hardtanh', 'leaky_relu', 'logical_not', 'masked_fill', 'mish', 'mish_backward', 'pow_scalar', 'softplus', 'threshold_backward', 'to_copy', 'where']


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
