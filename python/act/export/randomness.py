"""act's randomness in the trace and in the reference: dropout and
rand_like traced as the ops act lowers to Philox4x32-10 streams from the
step's seed, and the same numbers drawn in NumPy for the float64 reference
(act.aten.random is the lowering's side)."""

import contextlib
import math
import sys

import numpy as np
import torch

from .. import torchversion
from ..aten import (DROPOUT_STREAM, PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1,
                   RANDOM_STREAM)
from .standins import _MaskedSequence, _masked_rnn


def philox_uniform(seed, k, stream, shape):
    """u in [0, 1) per element of `shape` (row-major i): word 0 of
    Philox4x32-10(counter = (i, i >> 32, k, stream), key = (seed, seed >>
    32)) >> 8, times 2^-24: the lowering's stream (act.aten.random._philox_uniform),
    in NumPy, float32."""
    M = np.uint64(0xFFFFFFFF)
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    c0, c1 = i & M, i >> np.uint64(32)
    c2 = np.full(n, k, dtype=np.uint64)
    c3 = np.full(n, stream, dtype=np.uint64)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0, p1 = np.uint64(PHILOX_M0) * c0, np.uint64(PHILOX_M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M)
        k0, k1 = (k0 + np.uint64(PHILOX_W0)) & M, (k1 + np.uint64(PHILOX_W1)) & M
    u = (c0 >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return u.reshape(shape)


def philox_keep(seed, k, shape, p):
    """The keep mask of the k-th dropout of a step with seed `seed` (the
    lowering's Philox4x32-10 stream, act.aten.native_dropout), in NumPy."""
    return philox_uniform(seed, k, DROPOUT_STREAM, shape) >= np.float32(p)


@contextlib.contextmanager
def random_ops(mode, seed=0, counts=None, math_attention=True):
    """How randomness is traced. F.dropout (also inside
    nn.MultiheadAttention and nn.TransformerEncoderLayer) becomes
    aten.native_dropout, which act lowers to a Philox mask from the step's
    dropout seed (mode "trace"), or multiplies by that same mask computed in
    NumPy (mode "reference", the float64 autograd the step is checked
    against). Channel-wise dropout (dropout1d/2d/3d), alpha dropout (plain
    and feature) and torchvision's stochastic depth multiply by such a mask
    of ones of their noise's shape (one element per channel, per sample),
    ATen's formulas around it.
    torch.rand_like (stochastic rounding in a custom backward: act.dfq) is
    traced as itself, which act lowers to Philox noise from the same seed
    (aten.RANDOM_STREAM), and in "reference" mode returns that noise;
    torch.rand, randn, randn_like (Box-Muller from two uniforms), normal and
    bernoulli are written with it, and so are the in-place draws
    Tensor.exponential_ (F.gumbel_softmax), uniform_ and normal_. A stacked
    nn.LSTM/GRU/RNN with dropout between layers runs layer by layer
    (_masked_rnn) with F.dropout's masks.
    PyTorch 2's F.scaled_dot_product_attention (nn.MultiheadAttention's
    path there) is written as its math with F.dropout (math_attention).
    counts: {"dropout": n, "rand": r}, per eager step."""
    import torch.nn.functional as F
    counts = counts if counts is not None else {}
    counts.setdefault("dropout", 0)
    counts.setdefault("rand", 0)
    patched = []
    rands = [0]  # this context's rand_like calls (the k of the next one)

    def rand_like(x, *args, dtype=None, **kwargs):
        k = rands[0]
        rands[0] += 1
        counts["rand"] += 1
        u = torch.from_numpy(philox_uniform(seed, k, RANDOM_STREAM, tuple(x.shape)))
        return u.to(dtype or x.dtype)
    if mode == "reference":
        patched.append((torch, "rand_like", torch.rand_like))
        torch.rand_like = rand_like

    # Other random tensors from torch.rand_like (whichever it is now: traced
    # as aten.rand_like, or the reference's NumPy Philox): normal noise by
    # Box-Muller from two uniform draws, uniform and normal tensors of a
    # shape, Bernoulli draws.
    def size_of(size):
        return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list,
                                                                          torch.Size)) else size

    def randn_like(x, *args, dtype=None, **kwargs):
        like = torch.zeros(x.shape, dtype=dtype or x.dtype)
        u1, u2 = torch.rand_like(like), torch.rand_like(like)
        return torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos((2.0 * math.pi) * u2)

    def rand(*size, dtype=None, **kwargs):
        return torch.rand_like(torch.zeros(size_of(size), dtype=dtype or torch.float32))

    def randn(*size, dtype=None, **kwargs):
        return randn_like(torch.zeros(size_of(size), dtype=dtype or torch.float32))

    def normal(mean, std=1.0, *args, **kwargs):
        like = mean if isinstance(mean, torch.Tensor) else std
        if not isinstance(like, torch.Tensor):
            return mean + std * randn(*args, **kwargs)
        return mean + std * randn_like(like)

    def bernoulli(p, *args, **kwargs):
        return (torch.rand_like(p) < p).to(p.dtype)
    for name, fn in (("randn_like", randn_like), ("rand", rand), ("randn", randn),
                     ("normal", normal), ("bernoulli", bernoulli)):
        patched.append((torch, name, getattr(torch, name)))
        setattr(torch, name, fn)

    # In-place draws into a tensor (F.gumbel_softmax's
    # `empty_like(logits).exponential_()`, noise by `.normal_()`).
    def exponential_(self, lambd=1.0, generator=None):
        return self.copy_(-torch.log1p(-torch.rand_like(self)) / lambd)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        return self.copy_(a + (b - a) * torch.rand_like(self))

    def normal_(self, mean=0.0, std=1.0, generator=None):
        return self.copy_(mean + std * randn_like(self))
    for name, fn in (("exponential_", exponential_), ("uniform_", uniform_),
                     ("normal_", normal_)):
        patched.append((torch.Tensor, name, getattr(torch.Tensor, name)))
        setattr(torch.Tensor, name, fn)

    # A stacked nn.LSTM/GRU/RNN with dropout between its layers draws its
    # masks inside ATen (aten.bernoulli_): run it layer by layer
    # (_masked_rnn) with F.dropout's masks, the same in the trace and the
    # reference.
    for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
        def rnn_forward(self, input, hx=None, _original=cls.forward):
            if (self.training and self.dropout and self.num_layers > 1
                    and isinstance(input, torch.Tensor) and input.dim() == 3):
                x = input.transpose(0, 1) if self.batch_first else input
                full = torch.full((x.shape[1],), x.shape[0], dtype=torch.int64)
                out, state = _masked_rnn(self, _MaskedSequence(x, full, None, None), hx)
                out = out.data
                return (out.transpose(0, 1) if self.batch_first else out), state
            return _original(self, input, hx)
        patched.append((cls, "forward", cls.forward))
        cls.forward = rnn_forward

    def arguments(args, kwargs, p_index, training_index):
        p = kwargs.get("p", args[p_index - 1] if len(args) >= p_index else 0.5)
        training = kwargs.get("training", args[training_index - 1]
                              if len(args) >= training_index else True)
        return p, training

    def scaled_keep(x, shape, p):
        """The k-th dropout's keep mask of `shape`, scaled by 1 / (1 - p):
        native_dropout of ones (trace) or the same mask in NumPy."""
        k = counts["dropout"]
        counts["dropout"] += 1
        if mode == "trace":
            return torch.ops.aten.native_dropout(torch.ones(shape, dtype=x.dtype), p, True)[0]
        keep = torch.from_numpy(philox_keep(seed, k, tuple(shape), p))
        return keep.to(x.dtype) / (1.0 - p)

    def trivial(x, p, training):
        """x itself (eval, p = 0), zeros (p = 1), or None: draw a mask."""
        if not training or p == 0:
            return x
        return x * 0 if p == 1 else None

    def dropout(x, *args, **kwargs):
        p, training = arguments(args, kwargs, 1, 2)
        if (t := trivial(x, p, training)) is not None:
            return t
        if mode == "trace":
            counts["dropout"] += 1
            return torch.ops.aten.native_dropout(x, p, True)[0]
        return x * scaled_keep(x, x.shape, p)

    def feature_shape(x, unbatched_rank):
        """One mask element per channel (and sample): x's first two dims
        (one for an unbatched input), ones after."""
        lead = 1 if x.dim() == unbatched_rank else 2
        return tuple(x.shape[:lead]) + (1,) * (x.dim() - lead)

    def channel_dropout(unbatched_rank):
        def fn(x, *args, **kwargs):
            p, training = arguments(args, kwargs, 1, 2)
            if (t := trivial(x, p, training)) is not None:
                return t
            return x * scaled_keep(x, feature_shape(x, unbatched_rank), p)
        return fn

    def alpha(feature):
        """ATen's alpha dropout (_dropout_impl): x * keep * a + b with
        b = (keep - 1) alpha' a + alpha' a p, so SELU's mean and variance
        are kept; `feature` draws one mask element per channel."""
        def fn(x, *args, **kwargs):
            p, training = arguments(args, kwargs, 1, 2)
            if (t := trivial(x, p, training)) is not None:
                return t
            alpha_ = 1.7580993408473766
            a = 1.0 / math.sqrt((alpha_ * alpha_ * p + 1) * (1 - p))
            shape = feature_shape(x, -1) if feature else x.shape
            keep = scaled_keep(x, shape, p) * (1 - p)
            return x * (keep * a) + ((keep - 1) * (alpha_ * a) + alpha_ * a * p)
        return fn

    def rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
        """Training mode: a slope per element drawn uniformly from [lower,
        upper] (torch.rand_like: the step's seed); eval: their mean."""
        if not training:
            return F.leaky_relu(x, (lower + upper) / 2)
        slope = lower + (upper - lower) * torch.rand_like(x)
        return torch.where(x >= 0, x, x * slope)

    def stochastic_depth(x, p, sd_mode, training=True):
        """torchvision's: one mask element per sample ("row") or one for
        the batch, scaled by 1 / (1 - p)."""
        if p < 0.0 or p > 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if (t := trivial(x, p, training)) is not None:
            return t
        shape = ([x.shape[0]] if sd_mode == "row" else [1]) + [1] * (x.dim() - 1)
        return x * scaled_keep(x, shape, p)

    patched.append((F, "dropout", F.dropout))
    F.dropout = dropout
    if math_attention and hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2
        patched.append((F, "scaled_dot_product_attention", F.scaled_dot_product_attention))
        F.scaled_dot_product_attention = torchversion.scaled_dot_product_attention
    for name, fn in (("dropout1d", channel_dropout(2)), ("dropout2d", channel_dropout(-1)),
                     ("dropout3d", channel_dropout(4)), ("alpha_dropout", alpha(False)),
                     ("feature_alpha_dropout", alpha(True)), ("rrelu", rrelu)):
        if hasattr(F, name):
            patched.append((F, name, getattr(F, name)))
            setattr(F, name, fn)
    try:
        import torchvision.ops  # noqa: F401 (the package shadows its module's name)
        sd = sys.modules["torchvision.ops.stochastic_depth"]
        patched.append((sd, "stochastic_depth", sd.stochastic_depth))
        sd.stochastic_depth = stochastic_depth
    except ImportError:
        pass
    try:
        yield counts
    finally:
        for owner, name, fn in reversed(patched):
            setattr(owner, name, fn)
