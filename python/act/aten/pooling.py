"""Pooling: max pools with their indices (narrow when only the backward
reads them), average and adaptive pools, unpooling, and their backwards."""

import itertools
import math

from ..mlir import dims
from .core import lowering, meta_shape, require

__all__ = ['adaptive_avg_pool2d', 'adaptive_avg_pool2d_backward', 'avg_pool2d', 'avg_pool2d_backward', 'avg_pool3d', 'avg_pool3d_backward', 'max_pool2d', 'max_pool2d_backward', 'max_pool3d', 'max_pool3d_backward', 'max_unpool2d']


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
