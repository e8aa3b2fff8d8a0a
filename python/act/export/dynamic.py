"""One exported step for every batch size (docs/DynamicBatch.md): which dims
and numbers of a trace are the batch.

PyTorch 1.13 traces one concrete batch. Two traces of the same step, at
batch B and at B2 = other_batch(B) = 2B + 1, are compared node for node
(batch_symbols): a shape dim or an integer argument that is k * B in the
first and k * B2 in the second is k * N (act.mlir.Sym); a float argument
c / B or c * B in the first and c / B2 or c * B2 in the second is c / N or
c * N (act.mlir.SymFloat); everything else must be equal in both. (B2 is
not B + 1: N // 2 is the same at 8 and 9, not at 8 and 17.) Anything else
(an N + 1, a graph that changes with the batch, a slice or an index along
a batch dimension, whose bounds hold only for some batches) is refused
with the node named. The lowering then runs with these symbols in place of
the traced numbers (apply), printing `?` for the batch dims and computing
sizes and batch-dependent scalars from the batch at run time.

A lowering that turns a symbol into a plain number (arithmetic act.mlir.Sym
does not keep) would write the traced batch into the step: the exporter
lowers the step at two batches (apply with B and B2) and refuses it unless
the two texts are the same (Exporter.dynamic).
"""

import math

import torch
from torch.fx.node import Node

from ..aten import storage_root
from ..errors import ExportError
from ..mlir import Sym, SymFloat


class DynamicBatchError(ExportError):
    """The step cannot be exported for every batch size (it depends on the
    batch otherwise than through k * N); per-shape exports still work."""


def other_batch(batch):
    """The batch of the second trace."""
    return 2 * batch + 1


# Ops that address positions along a dim (their bounds, offsets and
# strides are absolute): refused along a batch dimension. {target: the
# position of the dim argument, or None: every dim of the input}.
_ALONG_DIM = {
    "aten.slice.Tensor": 1, "aten.select.int": 1, "aten.narrow.default": 1,
    "aten.split.Tensor": 2, "aten.split_with_sizes.default": 2, "aten.unbind.int": 1,
    "aten.slice_scatter.default": 2, "aten.select_scatter.default": 2,
    "aten.slice_backward.default": 2, "aten.select_backward.default": 2,
    "aten.roll.default": None, "aten.flip.default": None,
    "aten.as_strided.default": None, "aten.as_strided_scatter.default": None,
    "aten.diagonal.default": None, "aten.unfold.default": 1,
}


_SLICES = {"aten.slice.Tensor", "aten.slice_scatter.default", "aten.slice_backward.default"}


class _SymInt:
    def __init__(self, k):
        self.k = k

    def at(self, batch):
        return Sym(self.k, batch)


class _SymFloat:
    def __init__(self, c, power):
        self.c, self.power = c, power

    def at(self, batch):
        return SymFloat(self.c, self.power, batch)


def _symbol(va, vb, batches, where):
    """The symbolic form of a value that is va at batches[0] and vb at
    batches[1]."""
    b1, b2 = batches
    if isinstance(va, Node) or isinstance(vb, Node):
        if not (isinstance(va, Node) and isinstance(vb, Node) and va.name == vb.name):
            raise DynamicBatchError(f"{where}: the graphs at batches {b1} and {b2} differ "
                                    f"({va} against {vb})")
        return va
    if isinstance(va, (list, tuple)) and type(va) is type(vb):
        if len(va) != len(vb):
            raise DynamicBatchError(f"{where}: {va} at batch {b1}, {vb} at {b2}")
        kind = tuple if isinstance(va, torch.Size) else type(va)
        return kind(_symbol(a, b, batches, where) for a, b in zip(va, vb))
    if type(va) is int and type(vb) is int:
        if va == vb:
            return va
        k = (vb - va) // (b2 - b1)
        if k > 0 and va == k * b1 and vb == k * b2:
            return _SymInt(k)
        raise DynamicBatchError(f"{where}: {va} at batch {b1} and {vb} at batch {b2} is not "
                                f"a multiple of the batch")
    if type(va) is float and type(vb) is float:
        if va == vb or (math.isnan(va) and math.isnan(vb)):
            return va
        if math.isclose(va * b1, vb * b2, rel_tol=1e-12):
            return _SymFloat(va * b1, -1)
        if math.isclose(va / b1, vb / b2, rel_tol=1e-12):
            return _SymFloat(va / b1, 1)
        raise DynamicBatchError(f"{where}: the number {va} at batch {b1} and {vb} at batch "
                                f"{b2} is neither c * N nor c / N")
    if va != vb:
        raise DynamicBatchError(f"{where}: {va!r} at batch {b1}, {vb!r} at {b2}")
    return va


def _at(spec, batch):
    if isinstance(spec, (_SymInt, _SymFloat)):
        return spec.at(batch)
    if isinstance(spec, (list, tuple)):
        return type(spec)(_at(s, batch) for s in spec)
    if isinstance(spec, dict):
        return {k: _at(v, batch) for k, v in spec.items()}
    return spec


def _shapes(node):
    """The shapes PyTorch says the node's outputs have (a tuple of them for
    a multi-output op), or None."""
    tm = node.meta.get("tensor_meta")
    if tm is None:
        return None
    if hasattr(tm, "shape"):
        return tuple(tm.shape)
    return tuple(tuple(t.shape) if hasattr(t, "shape") else None for t in tm)


def _strides(node):
    tm = node.meta.get("tensor_meta")
    return tuple(tm.stride) if hasattr(tm, "stride") else None


def _identity_view(node):
    """An as_strided that views its operand exactly as its layout is (the
    decompositions' view of a stacked or transposed result): it addresses
    nothing the operand does not hold, at any batch."""
    base = node.args[0]
    size, stride = node.args[1], node.args[2]
    offset = node.args[3] if len(node.args) > 3 else 0
    return (not offset and _shapes(base) == tuple(size)
            and _strides(base) == tuple(stride))


def _in_bounds_at_every_batch(node, spec, batches):
    """Whether an as_strided's positions lie inside its storage at every
    batch N >= 1: its last position and the storage's size are affine in N
    (sizes, strides and offset are k * N or numbers), so inside at N = 1
    and growing no faster than the storage is inside everywhere (x[:4]
    along the batch is not: at N = 1 it reads past the end)."""
    root = storage_root(node.args[0])
    shape = spec.get(root, (None,))[0]
    if not isinstance(shape, tuple) or any(isinstance(d, tuple) for d in shape):
        return False
    args = spec[node][1]
    size, stride = args[1], args[2]
    offset = args[3] if len(args) > 3 and args[3] is not None else 0

    def room(n):  # storage elements past the view's last position
        sizes = [int(d) for d in _at(size, n)]
        if 0 in sizes:
            return None
        last = int(_at(offset, n)) + sum((d - 1) * int(t) for d, t in zip(sizes, _at(stride, n)))
        return math.prod(int(d) for d in _at(shape, n)) - 1 - last
    first, at_b, at_b2 = room(1), room(batches[0]), room(batches[1])
    return None not in (first, at_b, at_b2) and first >= 0 and at_b >= 0 and at_b2 >= at_b


def _check_along_batch(node, other, spec, where, batches):
    """Refuses an op of _ALONG_DIM along a batch dimension of its input
    (`other`: the node in the second trace)."""
    target = str(node.target)
    if target not in _ALONG_DIM or not node.args or not isinstance(node.args[0], Node):
        return
    if target == "aten.as_strided.default" and (
            (_identity_view(node) and _identity_view(other))
            or _in_bounds_at_every_batch(node, spec, batches)):
        return
    shape = spec.get(node.args[0], (None,))[0]
    if not isinstance(shape, tuple) or (shape and isinstance(shape[0], tuple)):
        return
    position = _ALONG_DIM[target]
    dims = range(len(shape))
    if position is not None:
        dim = node.args[position] if len(node.args) > position else node.kwargs.get("dim", 0)
        dims = [dim % len(shape)] if isinstance(dim, int) and shape else []
        if target in _SLICES and dims:
            # x[:] along a dim (its forward, scatter and backward): the whole dim.
            rest = list(node.args[position + 1:position + 4])
            start, end, step = rest + [None, None, 1][len(rest):]
            size = shape[dims[0]]
            whole = end is None or (isinstance(end, int) and end >= 2**62) or (
                isinstance(end, _SymInt) and isinstance(size, _SymInt) and end.k == size.k)
            if start in (None, 0) and whole and step == 1:
                return
    if any(isinstance(shape[d], _SymInt) for d in dims):
        raise DynamicBatchError(f"{where} addresses positions along a batch dimension (its "
                                f"bounds hold only for some batch sizes)")


def batch_symbols(a, b, batch):
    """Compares Traced `a` (at `batch`) with Traced `b`, its trace at
    other_batch(batch), and returns the symbolic form of `a` (for apply):
    {node: (shapes, args, kwargs)} over its forward and backward graphs."""
    batches = (batch, other_batch(batch))
    spec = {}
    for which, ga, gb in (("forward", a.forward, b.forward), ("backward", a.backward, b.backward)):
        # (By name: AOTAutograd lists the saved values, the forward's
        # outputs and the backward's placeholders, in an order that changes
        # from trace to trace.)
        na, nb = list(ga.graph.nodes), {n.name: n for n in gb.graph.nodes}
        if len(na) != len(nb):
            raise DynamicBatchError(f"the {which} graph has {len(na)} nodes at batch {batch} and "
                                    f"{len(nb)} at batch {batches[1]}")
        for x in na:
            where = f"node '{x.name}' ({x.target}) of the {which} graph"
            y = nb.get(x.name)
            if y is None or x.op != y.op or str(x.target) != str(y.target):
                raise DynamicBatchError(f"{where}: the graphs at batches {batch} and "
                                        f"{batches[1]} differ there")
            if x.op == "output":
                if sorted(map(str, x.args[0])) != sorted(map(str, y.args[0])):
                    raise DynamicBatchError(f"the {which} graph's outputs differ at batches "
                                            f"{batch} and {batches[1]}")
                continue
            spec[x] = (_symbol(_shapes(x), _shapes(y), batches, where),
                       _symbol(x.args, y.args, batches, where),
                       {k: _symbol(v, y.kwargs.get(k), batches, where)
                        for k, v in x.kwargs.items()},
                       _symbol(_strides(x), _strides(y), batches, where))
            _check_along_batch(x, y, spec, where, batches)
    for k in a.constants:
        if k not in b.constants or not torch.equal(a.constants[k], b.constants[k]):
            raise DynamicBatchError(f"the constant '{k}' the trace captured depends on the batch")
    return spec


def apply(spec, batch):
    """Sets every node's symbolic shapes (meta "act_shape", read by
    act.aten.meta_shape), strides (meta "act_stride") and arguments at
    `batch`."""
    for node, (shapes, args, kwargs, strides) in spec.items():
        node.meta["act_shape"] = _at(shapes, batch)
        node.meta["act_stride"] = _at(strides, batch)
        node.args = _at(args, batch)
        node.kwargs = _at(kwargs, batch)
