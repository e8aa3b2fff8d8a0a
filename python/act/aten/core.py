"""The registry of lowerings (LOWERINGS, @lowering), the checks every lowering
uses, and typed arithmetic: dtypes of nodes, conversions, promotion and
element-wise generics with PyTorch's type rules."""

import math

from ..dtypes import WIDENED, mlir_dtype
from ..mlir import V, scalar_literal, ttype

__all__ = ['FLOAT_TYPES', 'LOWERINGS', 'UnsupportedError', 'arith', 'compare', 'convert', 'lowering', 'meta_shape', 'node_dtype', 'promote', 'require', 'resolve_sizes', 'typed_ew']


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
    """The shape PyTorch says `node` (its first output) has: with
    act.mlir.Sym dims where the step is exported for every batch size
    (export/dynamic.py)."""
    sym = node.meta.get("act_shape")
    if sym is not None:
        return sym[0] if sym and isinstance(sym[0], tuple) else sym
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


# What PyTorch's decompositions (act.export.DECOMPOSITIONS) leave: typed
# element-wise ops with broadcasting and type promotion, factories, views and
# indexing, pooling and grouped/dilated convolution. See docs/Exporter.md.

FLOAT_TYPES = ("f32", "f64", "f16", "bf16")


def node_dtype(node):
    """The MLIR element type PyTorch says `node` (its first output) has."""
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


def dense_constant(g, value, name):
    """A constant tensor captured by tracing, as an arith.constant."""
    dtype = mlir_dtype(value.dtype)
    flat = [scalar_literal(x, dtype) for x in value.flatten().tolist()]
    shape = tuple(value.shape)
    r = g.fresh("const_" + name)
    g.emit(f"{r} = arith.constant dense<[{', '.join(flat)}]> : {ttype((len(flat),), dtype)}")
    return g.reshape(V(r, (len(flat),), dtype), shape, hint="const")
