"""Dropout and rand_like: Philox4x32-10 streams from the step's seed."""

import math

from ..mlir import dims
from .core import lowering, require

__all__ = ['DROPOUT_STREAM', 'PHILOX_M0', 'PHILOX_M1', 'PHILOX_W0', 'PHILOX_W1', 'RANDOM_STREAM', 'native_dropout', 'rand_like']


# Element i of the k-th dropout of the forward pass keeps its value when
# u >= p, u = (word 0 of Philox4x32-10(counter = (i, i >> 32, k, 0x80000000),
# key = (seed, seed >> 32)) >> 8) * 2^-24: the runtime's Philox with the
# dropout's number, top bit set, as its stream (encodings use tensor ids),
# so the mask is reproducible from the seed and checkable
# (act.export.philox_keep computes the same mask in NumPy).

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57


PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


DROPOUT_STREAM = 0x80000000


# torch.rand_like: the k-th in the step (forward, then backward, in graph
# order: eager's call order) draws u from counter (i, i >> 32, k,
# 0x40000000), the same word and scaling as dropout's (act.export.
# philox_uniform). Stochastic rounding in a custom backward (act.dfq's
# gradient quantizer) is traced this way.
RANDOM_STREAM = 0x40000000


def _philox_word0(b, c0, c1, c2, c3, keys):
    """Word 0 of Philox4x32-10 on i32 scalars; keys: the 10 round keys."""
    for k0, k1 in keys:
        p0 = b.g.fresh("mul")
        b.lines.append(f"{p0}:2 = arith.mului_extended {c0}, {b.c(PHILOX_M0 - (1 << 32), 'i32')} : i32")
        p1 = b.g.fresh("mul")
        b.lines.append(f"{p1}:2 = arith.mului_extended {c2}, {b.c(PHILOX_M1 - (1 << 32), 'i32')} : i32")
        n0 = b.op("arith.xori", b.op("arith.xori", f"{p1}#1", c1, ty="i32"), k0, ty="i32")
        n2 = b.op("arith.xori", b.op("arith.xori", f"{p0}#1", c3, ty="i32"), k1, ty="i32")
        c0, c1, c2, c3 = n0, f"{p1}#0", n2, f"{p0}#0"
    return c0


def _signed32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _philox_keys(g, seed):
    """The 10 round keys of Philox4x32-10 keyed by the step's i64 seed,
    computed once at the top of the function and shared by its random ops."""
    cached = g.__dict__.get("philox_keys")
    if cached is not None and cached[0] is seed:
        return cached[1]
    top = g.scalars()
    s = top.line("seed", f"tensor.extract {seed.name}[] : {seed.type}")
    s_lo = top.cast("arith.trunci", s, "i64", "i32")
    s_hi = top.cast("arith.trunci", top.op("arith.shrui", s, top.c(32, "i64"), ty="i64"),
                    "i64", "i32")
    keys = []
    k0, k1 = s_lo, s_hi
    for _ in range(10):
        keys.append((k0, k1))
        k0 = top.op("arith.addi", k0, top.c(_signed32(PHILOX_W0), "i32"), ty="i32")
        k1 = top.op("arith.addi", k1, top.c(_signed32(PHILOX_W1), "i32"), ty="i32")
    g.philox_keys = (seed, keys)
    return keys


def _philox_uniform(b, shape, k, stream, keys):
    """In a generic's body over `shape` (row-major element i): u in [0, 1),
    word 0 of Philox4x32-10(counter = (i, i >> 32, k, stream)) >> 8, times
    2^-24 (f32, exact)."""
    strides = [math.prod(shape[j + 1:]) for j in range(len(shape))]
    i = b.c(0, "index")
    for j, st in enumerate(strides):
        i = b.op("arith.addi", i, b.op("arith.muli", b.index(j), b.c(st, "index"),
                                        ty="index"), ty="index")
    i64 = b.index_cast(i, "i64")
    c0 = b.cast("arith.trunci", i64, "i64", "i32")
    c1 = b.cast("arith.trunci", b.op("arith.shrui", i64, b.c(32, "i64"), ty="i64"),
                "i64", "i32")
    w = _philox_word0(b, c0, c1, b.c(k, "i32"), b.c(_signed32(stream), "i32"), keys)
    r = b.op("arith.shrui", w, b.c(8, "i32"), ty="i32")
    return b.mul(b.cast("arith.uitofp", r, "i32", "f32"), b.c(1.0 / 16777216.0))


@lowering("aten.rand_like.default")
def rand_like(g, node, x, dtype=None, **kwargs):
    """Uniform [0, 1) noise from the step's seed (RANDOM_STREAM)."""
    seed = getattr(g, "dropout_seed", None)
    require(seed is not None, node, "rand_like without the step's random seed")
    require(dtype is None or str(dtype) == "torch.float32", node,
            f"rand_like of dtype {dtype}")
    k = node.meta.get("act_random")
    require(k is not None, node, "internal: rand_like without its number in the step")
    keys = _philox_keys(g, seed)
    return g.generic(x.shape, [(x, dims(x.rank))],
                     lambda b, u, o: _philox_uniform(b, x.shape, k, RANDOM_STREAM, keys),
                     hint=node.name)


@lowering("aten.native_dropout.default")
def native_dropout(g, node, x, p, train):
    """(x * mask / (1 - p), mask), mask from the step's dropout seed."""
    seed = getattr(g, "dropout_seed", None)
    require(seed is not None, node, "dropout without the step's dropout seed")
    k = g.__dict__.setdefault("dropout_count", 0)
    g.dropout_count = k + 1
    if not train or p == 0:
        return x, g.fill(x.shape, 1, "i1")
    require(p < 1, node, f"p={p}")
    keys = _philox_keys(g, seed)
    scale = 1.0 / (1.0 - p)

    def body(b, u, o, m):
        uf = _philox_uniform(b, x.shape, k, DROPOUT_STREAM, keys)
        keep = b.cmpf("oge", uf, b.c(float(p)))
        return [b.select(keep, b.mul(u, b.c(scale)), b.c(0.0)), keep]
    out, mask = g.generic_multi([x.shape, x.shape], ["f32", "i1"], [(x, dims(x.rank))], body,
                                ["parallel"] * x.rank, [dims(x.rank)] * 2,
                                [g.empty(x.shape), g.empty(x.shape, "i1")], hint=node.name)
    return out, mask
