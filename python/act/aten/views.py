"""Views and layout (reshape, transpose, permute, expand, slicing, concat),
indexing and gathers."""

from ..mlir import Sym, V, broadcast_shape, dims, is_dynamic
from .core import LOWERINGS, arith, convert, lowering, meta_shape, require, resolve_sizes

__all__ = ['BOOLEAN_MASK', 'RESHAPE_VIEWS', 'STORAGE_SPLITS', 'STORAGE_VIEWS', 'as_strided', 'as_strided_scatter', 'cat', 'constant_pad_nd', 'embedding', 'expand', 'gather', 'identity', 'index', 'index_put', 'index_select', 'permute', 'reshape_alias', 'reshape_like_meta', 'reshape_to_meta', 'roll', 'scatter_add', 'select', 'select_scatter', 'slice_', 'slice_scatter', 'split', 'split_with_sizes', 'stack', 'storage_root', 't', 'transpose', 'unbind', 'view']


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
    return g.ew([x], lambda b, u: u, shape=shape, out_dtype=x.dtype, hint=node.name)


@lowering("aten.split.Tensor")
def split(g, node, x, size, dim=0):
    n = x.shape[dim % x.rank]
    return split_with_sizes(g, node, x, [min(size, n - s) for s in range(0, n, size)], dim)


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


@lowering("aten.roll.default")
def roll(g, node, x, shifts, dims_=()):
    """out[.., i, ..] = x[.., (i - shift) mod n, ..] along each rolled dim."""
    require(len(dims_) == len(shifts), node, "roll without dims")
    exprs = [f"d{k}" for k in range(x.rank)]
    for shift, d in zip(shifts, dims_):
        d %= x.rank
        n = x.shape[d]
        exprs[d] = f"(d{d} + {(-shift) % n}) mod {n}"
    return g.generic(x.shape, [(x, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.constant_pad_nd.default")
def constant_pad_nd(g, node, x, pad, value=0):
    """pad: (low, high) pairs from the last dim backwards; negative ones
    crop."""
    low, high = [0] * x.rank, [0] * x.rank
    for k in range(len(pad) // 2):
        low[x.rank - 1 - k], high[x.rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    crop_lo = [max(0, -v) for v in low]
    crop_hi = [max(0, -v) for v in high]
    if any(crop_lo) or any(crop_hi):
        x = g.extract_slice(x, crop_lo, [d - a - b for d, a, b in zip(x.shape, crop_lo, crop_hi)])
    return g.pad(x, [max(0, v) for v in low], [max(0, v) for v in high], value=value,
                 hint=node.name)


@lowering("aten.select.int")
def select(g, node, x, dim, index):
    dim %= x.rank
    index %= x.shape[dim]
    offsets = [index if i == dim else 0 for i in range(x.rank)]
    sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
    s = g.extract_slice(x, offsets, sizes, hint=node.name)
    return g.reshape(s, meta_shape(node), hint=node.name)


LOWERINGS["aten.unsafe_split.Tensor"] = split


@lowering("aten.split_with_sizes.default", "aten.unsafe_split_with_sizes.default")
def split_with_sizes(g, node, x, sizes, dim=0):
    dim %= x.rank
    out, start = [], 0
    for n in sizes:
        offsets = [start if i == dim else 0 for i in range(x.rank)]
        shape = [n if i == dim else d for i, d in enumerate(x.shape)]
        out.append(g.extract_slice(x, offsets, shape, hint=node.name))
        start += n
    return tuple(out)


@lowering("aten.unbind.int")
def unbind(g, node, x, dim=0):
    dim %= x.rank
    shape = tuple(d for i, d in enumerate(x.shape) if i != dim)
    out = []
    for k in range(x.shape[dim]):
        offsets = [k if i == dim else 0 for i in range(x.rank)]
        sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
        out.append(g.reshape(g.extract_slice(x, offsets, sizes, hint=node.name), shape))
    return tuple(out)


@lowering("aten.stack.default")
def stack(g, node, tensors, dim=0):
    rank = tensors[0].rank + 1
    dim %= rank
    shape = list(tensors[0].shape)
    shape.insert(dim, 1)
    return cat(g, node, [g.reshape(t, tuple(shape)) for t in tensors], dim)


@lowering("aten.squeeze.dims", "aten.view_as.default", "aten.narrow.default")
def reshape_to_meta(g, node, x, *args):
    if str(node.target) == "aten.narrow.default":
        dim, start, length = args
        return slice_(g, node, x, dim, start, start + length)
    return g.reshape(x, meta_shape(node), hint=node.name)


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


# Ops whose result shares its operand's storage (PyTorch views).
STORAGE_VIEWS = {
    "aten.slice.Tensor", "aten.select.int", "aten.transpose.int", "aten.permute.default",
    "aten.t.default", "aten.view.default", "aten._unsafe_view.default",
    "aten._reshape_alias.default", "aten.unsqueeze.default", "aten.squeeze.dim",
    "aten.squeeze.dims", "aten.squeeze.default", "aten.expand.default", "aten.alias.default",
    "aten.as_strided.default", "aten.detach.default", "aten.narrow.default",
    "aten.unfold.default",
}


STORAGE_SPLITS = {"aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int",
                  "aten.unsafe_split.Tensor"}


def storage_root(node):
    """The node whose result owns the storage `node` views."""
    import operator
    while node.op == "call_function":
        if str(node.target) in STORAGE_VIEWS:
            node = node.args[0]
        elif node.target is operator.getitem and str(node.args[0].target) in STORAGE_SPLITS:
            node = node.args[0].args[0]
        else:
            break
    return node


RESHAPE_VIEWS = {"aten.view.default", "aten._reshape_alias.default", "aten._unsafe_view.default",
                 "aten.reshape.default", "aten.unsqueeze.default", "aten.squeeze.dim",
                 "aten.squeeze.default", "aten.flatten.using_ints", "aten.alias.default"}


def _reshapes_of_root(node):
    """Whether `node` is its storage's root or reshapes of it only: a
    contiguous `node` then starts at the storage's first element (the
    offsets of as_strided_scatter are relative to it)."""
    while node.op == "call_function" and str(node.target) in STORAGE_VIEWS:
        if str(node.target) not in RESHAPE_VIEWS:
            return False
        node = node.args[0]
    return storage_root(node) is node


@lowering("aten.as_strided.default")
def as_strided(g, node, x, size, stride, offset=0):
    """Element i reads storage[offset + sum(i_k * stride_k)] (offset and
    strides are absolute in the storage the operand views). The storage is
    that of the operand's root (through view ops: slices, transposes,
    reshapes, splits), permuted into the order of the root's strides, which
    must be dense: a contiguous tensor or a transpose of one (PyTorch's
    layout, from the trace's metadata). The decompositions emit it for views
    of such tensors."""
    base = node.args[0]
    tm = base.meta.get("tensor_meta")
    # (Strides with act.mlir.Sym where the step serves every batch size.)
    base_stride = base.meta.get("act_stride") or (tm.stride if tm is not None else None)
    if tm is not None and storage_root(base) is base and not offset \
            and list(size) == list(x.shape) and list(stride) == list(base_stride):
        return x  # the operand itself, which owns its storage
    root = storage_root(base)
    # A saved view read in the backward: its storage is the forward's root
    # (Exporter.joint maps the backward's placeholder to it).
    root, value = getattr(g, "storage_of", {}).get(
        root, (root, getattr(g, "value_of", lambda n: None)(root)))
    rtm = root.meta.get("tensor_meta")
    require(rtm is not None and isinstance(value, V), node,
            "as_strided of a tensor without layout metadata")
    rstride = list(root.meta.get("act_stride") or rtm.stride)
    perm = sorted(range(value.rank), key=lambda k: (-rstride[k], k))
    dense = _contiguous_strides([value.shape[k] for k in perm]) == [rstride[k] for k in perm]
    require(dense, node, f"as_strided of a view of a tensor with strides {rstride} (not a "
                         f"permutation of a dense layout)")
    # A view that is a permutation of the whole storage (a stacked or
    # transposed result seen in another order): a transpose, not index
    # arithmetic (whose strides would hold a dynamic batch).
    sdims = [value.shape[k] for k in perm]
    order = sorted(range(len(size)), key=lambda k: (-stride[k], k))
    if (not offset and len(size) == value.rank and [size[k] for k in order] == sdims
            and [stride[k] for k in order] == _contiguous_strides(sdims)
            and [is_dynamic(size[k]) for k in order] == [is_dynamic(d) for d in sdims]):
        ordered = g.transpose(value, perm)
        return g.transpose(ordered, [order.index(k) for k in range(len(size))])
    if any(isinstance(v, Sym) for v in list(size) + list(stride) + [offset]):
        # (A step for every batch size: strides that grow with the batch
        # cannot be written into an index expression; a box of the storage
        # split at the view's strides is a slice.)
        box = _storage_box(value.numel, size, stride, offset or 0)
        require(box is not None, node, "as_strided with strides that depend on the batch, "
                                       "other than a box of its storage")
        split, starts, lengths, exprs = box
        flat = g.reshape(g.transpose(value, perm), (value.numel,))
        part = g.extract_slice(g.reshape(flat, tuple(split)), starts, lengths)
        return g.generic(tuple(size), [(part, exprs)], lambda b, u, o: u, out_dtype=x.dtype,
                         hint=node.name)
    storage = g.reshape(g.transpose(value, perm), (value.numel,))
    # Read from the span the view covers (from its offset): an expression
    # that is a plain dim (stride 1, the others 0) then has that dim's
    # size, which linalg infers loop bounds from.
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if offset or span != value.numel:
        storage = g.extract_slice(storage, [offset or 0], [span])
    expr = " + ".join([f"d{k} * {s}" for k, s in enumerate(stride)] + ["0"])
    return g.generic(tuple(size), [(storage, [expr])], lambda b, u, o: u, out_dtype=x.dtype,
                     hint=node.name)


def _ratio(a, b):
    """a / b where it divides exactly, keeping act.mlir.Sym (k * N / c is
    (k / c) * N; k * N / (j * N) is k / j); None otherwise."""
    if isinstance(a, Sym) and isinstance(b, Sym):
        return a.k // b.k if a.k % b.k == 0 else None
    if isinstance(b, Sym) or not b:
        return None
    if isinstance(a, Sym):
        return Sym(a.k // b, a.batch) if a.k % b == 0 else None
    return a // b if a % b == 0 else None


def _storage_box(numel, size, stride, offset):
    """A view (size, stride, offset) of a dense storage of `numel` elements
    that is a box of it: its dims of size > 1, by decreasing stride, split
    the storage row-major (each stride divides the one before). Returns the
    storage's dims so split, the box's starts and lengths in them, and the
    split dims' expressions over the view's loops; None otherwise."""
    order = sorted((k for k, n in enumerate(size) if n != 1 or isinstance(n, Sym)),
                   key=lambda k: -int(stride[k]))
    strides = [stride[k] for k in order]
    dims, above = [], numel
    for t in strides + [1]:
        d = _ratio(above, t)
        if d is None:
            return None
        dims.append(d)
        above = t
    # (dims[i] is the extent of stride strides[i]; the last, strides[-1]
    # elements within it.)
    lengths, exprs = [1] * len(dims), ["0"] * len(dims)
    for i, k in enumerate(order):
        lengths[i], exprs[i] = size[k], f"d{k}"
    starts, rest = [], int(offset)
    for t in strides:
        starts.append(rest // int(t))
        rest %= int(t)
    starts.append(rest)
    if any(st + int(n) > int(d) or (st and isinstance(n, Sym))
           for st, n, d in zip(starts, lengths, dims)):
        return None
    return dims, starts, lengths, exprs


@lowering("aten.as_strided_scatter.default")
def as_strided_scatter(g, node, x, src, size, stride, offset=0):
    """x (contiguous) with storage[offset + sum(i_k * stride_k)] = src[i]:
    every element of x looks through src's positions (a reduction), so it
    is quadratic; refused beyond 2^24 pairs."""
    tm = node.args[0].meta.get("tensor_meta")
    require(tm is not None and list(tm.stride) == _contiguous_strides(list(x.shape))
            and _reshapes_of_root(node.args[0]), node,
            "as_strided_scatter into a view other than a reshape")
    require(x.numel * src.numel <= 1 << 24, node,
            f"as_strided_scatter of {src.numel} into {x.numel} elements (quadratic here)")
    flat = g.reshape(x, (x.numel,))
    r = src.rank
    target = " + ".join([f"d{1 + k} * {s}" for k, s in enumerate(stride)] + [str(offset or 0)])

    def body(b, u, o):
        j = b.index(0)
        t = b.line("t", f"affine.apply affine_map<({', '.join(f'd{k}' for k in range(r + 1))}) -> "
                        f"({target})>({', '.join(b.index(k) for k in range(r + 1))})")
        return b.select(b.cmpi("eq", j, t, "index"), u, o, ty=x.dtype)
    out = g.generic((x.numel,), [(src, [f"d{1 + k}" for k in range(r)])], body,
                    out_dtype=x.dtype, iterators=["parallel"] + ["reduction"] * r,
                    out_exprs=["d0"], init=flat, hint=node.name)
    return g.reshape(out, x.shape)


@lowering("aten.index_select.default")
def index_select(g, node, x, dim, index):
    dim %= x.rank
    out_shape = meta_shape(node)
    return _gather_dim(g, node, x, dim, index, out_shape)


def _from_end(b, k, n, ty):
    """Index k of a dim of size n with PyTorch's negative indices (counted
    from the end): k + n where k < 0."""
    neg = b.cmpi("slt", k, b.c(0, ty), ty)
    return b.select(neg, b.op("arith.addi", k, b.c(n, ty), ty=ty), k, ty=ty)


def _read_index(b, k, n):
    """A data index k (an `index` value) of a dim of size n, as a position
    to read: negative ones from the end, and clamped into [0, n), so that
    an index out of range never reads outside the tensor (act-run and
    act.compile refuse such data before the step runs where the exporter
    could bound it: the `act.index_range` argument attribute)."""
    k = _from_end(b, k, n, "index")
    k = b.op("arith.maxsi", k, b.c(0, "index"), ty="index")
    return b.op("arith.minsi", k, b.c(n - 1, "index"), ty="index")


def _gather_dim(g, node, x, dim, index, out_shape):
    """out[..., i, ...] = x[..., index[i], ...] along dim (index 1-D)."""
    n = x.shape[dim]

    def body(b, idx, o):
        k = _read_index(b, b.cast("arith.index_cast", idx, index.dtype, "index"), n)
        ivs = [b.index(i) for i in range(len(out_shape))]
        ivs[dim] = k
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(tuple(out_shape), [(index, [f"d{dim}"])], body, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.embedding.default")
def embedding(g, node, weight, indices, padding_idx=-1, *args):
    flat = g.reshape(indices, (indices.numel,))
    rows = _gather_dim(g, node, weight, 0, flat, (indices.numel, weight.shape[1]))
    return g.reshape(rows, meta_shape(node), hint=node.name)


BOOLEAN_MASK = ("indexing with a boolean mask, x[mask] (the result's shape depends on the "
                "data; write the masked computation with the mask as a factor, e.g. "
                "((o - y) ** 2 * m).sum() / m.sum() for F.mse_loss(o[m], y[m]))")


@lowering("aten.index.Tensor")
def index(g, node, x, indices):
    """x[i0, i1, ...] with index tensors (None for ':') that broadcast
    together; the indexed dims are adjacent or the first (PyTorch's rule:
    the result's indexed block sits where the first index was, if adjacent)."""
    pos = [k for k, i in enumerate(indices) if i is not None]
    # x[mask] keeps the elements where the mask is set: how many depends on
    # the data, but the trace fixed the count of the example batch.
    require(all(indices[k].dtype != "i1" for k in pos), node, BOOLEAN_MASK)
    require(pos == list(range(pos[0], pos[-1] + 1)), node, "non-adjacent index tensors")
    ishape = broadcast_shape([indices[k].shape for k in pos])
    out_shape = meta_shape(node)
    lead = pos[0]
    r = len(ishape)

    def body(b, *args):
        idx = args[:-1]
        ivs = []
        for d in range(x.rank):
            if d < lead:
                ivs.append(b.index(d))
            elif d in pos:
                t = indices[d]
                k = b.cast("arith.index_cast", idx[pos.index(d)], t.dtype, "index")
                ivs.append(_read_index(b, k, x.shape[d]))
            else:
                ivs.append(b.index(d - len(pos) + r))
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    ins = []
    for k in pos:
        t = indices[k]
        exprs = ["0" if (dd == 1 and ishape[j] != 1) else f"d{lead + j}"
                 for dd, j in zip(t.shape, range(r - t.rank, r))]
        ins.append((t, exprs))
    return g.generic(tuple(out_shape), ins, body, out_dtype=x.dtype, hint=node.name)


@lowering("aten.index_put.default", "aten._index_put_impl.default")
def index_put(g, node, x, indices, values, accumulate=False, *args):
    """x with x[indices] = values (or += with accumulate): every element of x
    looks through all index positions (a reduction over them), so repeated
    indices accumulate in a fixed order."""
    pos = [k for k, i in enumerate(indices) if i is not None]
    if any(indices[k].dtype == "i1" for k in pos):
        return _masked_put(g, node, x, pos, indices[pos[0]], values, accumulate)
    require(pos == list(range(pos[0], pos[0] + len(pos))), node, "non-adjacent index tensors")
    ishape = broadcast_shape([indices[k].shape for k in pos])
    r, p, lead = len(ishape), len(pos), pos[0]
    tail = x.rank - lead - p
    # values broadcast to x's leading dims, the indices' shape, x's tail.
    vshape = tuple(x.shape[:lead]) + tuple(ishape) + tuple(x.shape[lead + p:])
    vals = g.ew([values], lambda b, u: u, shape=vshape, out_dtype=values.dtype) \
        if values.shape != vshape else values
    # loops: x's dims (parallel), then the index positions (reduction)
    ins = []
    for k in pos:
        t = indices[k]
        ins.append((t, ["0" if (dd == 1 and ishape[j] != 1) else f"d{x.rank + j}"
                        for dd, j in zip(t.shape, range(r - t.rank, r))]))
    ins.append((vals, [f"d{j}" for j in range(lead)] + [f"d{x.rank + j}" for j in range(r)]
                + [f"d{lead + p + j}" for j in range(tail)]))
    acc = x if accumulate else None

    def body(b, *args):
        idx, v, o = args[:p], args[p], args[p + 1]
        hit = None
        for j, k in enumerate(pos):
            t = indices[k]
            i = b.cast("arith.index_cast", b.index(k), "index", t.dtype)
            h = b.cmpi("eq", i, _from_end(b, idx[j], x.shape[k], t.dtype), t.dtype)
            hit = h if hit is None else b.andi(hit, h)
        if accumulate:
            return b.select(hit, arith(b, "add", o, v, x.dtype), o, ty=x.dtype)
        return b.select(hit, v, o, ty=x.dtype)
    init = acc if acc is not None else x
    return g.generic(x.shape, ins, body, out_dtype=x.dtype,
                     iterators=["parallel"] * x.rank + ["reduction"] * r,
                     out_exprs=dims(x.rank), init=init, hint=node.name)


def _masked_put(g, node, x, pos, mask, values, accumulate):
    """x[mask] = values (+= with accumulate), `mask` a boolean tensor over
    x's dims from pos[0] on: an elementwise select, as long as the values do
    not depend on how many elements the mask selects (one value, or one per
    element of x's dims after the mask's, broadcast over the selected ones)."""
    lead = pos[0]
    require(len(pos) == 1 and tuple(mask.shape) == tuple(x.shape[lead:lead + mask.rank]), node,
            "a boolean mask with other index tensors, or not of the indexed dims' shape,")
    tail = x.rank - lead - mask.rank
    if isinstance(values, V) and values.numel == 1 and values.rank:
        values = g.reshape(values, ())
    require(not isinstance(values, V) or values.rank <= tail, node,
            "x[mask] = values with one value per selected element (their count depends on the "
            "data; write it as torch.where(mask, values, x) with values of x's shape)")
    operands = [x, (mask, list(range(lead, lead + mask.rank))), values]

    def body(b, o, m, v):
        v = convert(b, v, values.dtype, x.dtype) if isinstance(values, V) else v
        return b.select(m, arith(b, "add", o, v, x.dtype) if accumulate else v, o, ty=x.dtype)
    if not isinstance(values, V):
        operands.pop()
        return g.ew(operands, lambda b, o, m: body(b, o, m, b.c(values, x.dtype)),
                    out_dtype=x.dtype, hint=node.name)
    return g.ew(operands, body, out_dtype=x.dtype, hint=node.name)


@lowering("aten.slice_scatter.default")
def slice_scatter(g, node, x, src, dim=0, start=None, end=None, step=1):
    dim %= x.rank
    n = x.shape[dim]
    start = 0 if start is None else (start + n if start < 0 else min(start, n))
    offsets = [start if i == dim else 0 for i in range(x.rank)]
    strides = [step if i == dim else 1 for i in range(x.rank)]
    if src.numel == 0:
        return x
    return g.insert_slice(src, x, offsets, strides, hint=node.name)


@lowering("aten.select_scatter.default")
def select_scatter(g, node, x, src, dim, index):
    dim %= x.rank
    index %= x.shape[dim]
    shape = list(x.shape)
    shape[dim] = 1
    return g.insert_slice(g.reshape(src, tuple(shape)), x,
                          [index if i == dim else 0 for i in range(x.rank)], hint=node.name)


@lowering("aten.gather.default")
def gather(g, node, x, dim, index, sparse_grad=False):
    dim %= x.rank

    def body(b, idx, o):
        ivs = [b.index(i) for i in range(x.rank)]
        ivs[dim] = _read_index(b, b.cast("arith.index_cast", idx, index.dtype, "index"),
                               x.shape[dim])
        return b.line("t", f"tensor.extract {x.name}[{', '.join(ivs)}] : {x.type}")
    return g.generic(index.shape, [(index, dims(index.rank))], body, out_dtype=x.dtype,
                     hint=node.name)


@lowering("aten.scatter_add.default")
def scatter_add(g, node, x, dim, index, src):
    """x[.., index[i], ..] += src[i]: each element of x reduces over index's
    positions along dim."""
    dim %= x.rank
    # loops: x's dims, then j over index's dim `dim`
    iexprs = [f"d{x.rank}" if k == dim else f"d{k}" for k in range(x.rank)]

    def body(b, idx, s, o):
        i = b.cast("arith.index_cast", b.index(dim), "index", index.dtype)
        return b.select(b.cmpi("eq", i, idx, index.dtype), arith(b, "add", o, s, x.dtype), o,
                        ty=x.dtype)
    require(index.shape == src.shape and all(
        index.shape[k] == x.shape[k] for k in range(x.rank) if k != dim), node,
        "index and src shapes other than x's (but along dim)")
    return g.generic(x.shape, [(index, iexprs), (src, iexprs)], body, out_dtype=x.dtype,
                     iterators=["parallel"] * x.rank + ["reduction"], out_exprs=dims(x.rank),
                     init=x, hint=node.name)
