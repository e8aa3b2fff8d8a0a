"""Factories: full, zeros, arange, eye, empty, scalar tensors and copies."""

from ..mlir import dims
from .core import LOWERINGS, arith, convert, lowering, meta_shape, node_dtype

__all__ = ['arange', 'diag_embed', 'eye', 'fill_tensor', 'full', 'full_like', 'ones', 'scalar_tensor', 'unfold', 'unfold_backward', 'zeros']


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
