#!/usr/bin/env python3
"""Writes act's example training graphs (linalg on tensors) to examples/.

Each graph is one training step: forward pass, loss, and the backward pass
written out by hand (the gradients of every parameter), in the joint form of
docs/Design.md (the loss is result 0, marked `act.loss`) and, for the MLP, also in
the split form that AOTAutograd produces.

    python3 examples/graphgen.py            # rewrite examples/*.mlir

The committed .mlir files are the source of truth for tests; this script only
saves typing. It builds them with act.mlir (python/act/mlir.py), the
exporter's builder of textual MLIR.
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from act.mlir import Graph, func  # noqa: E402


# ---------------------------------------------------------------------------
# Building blocks: forward pieces and their hand-written derivatives.
# ---------------------------------------------------------------------------

SQRT1_2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def add(b, u, v): return b.add(u, v)
def sub(b, u, v): return b.sub(u, v)
def mul(b, u, v): return b.mul(u, v)


def gelu(b, u):
    # 0.5 u (1 + erf(u / sqrt 2)), PyTorch's exact GELU.
    return b.mul(b.mul(b.c(0.5), u), b.add(b.c(1.0), b.erf(b.mul(u, b.c(SQRT1_2)))))


def gelu_grad(b, d, u):
    # d * (Phi(u) + u phi(u))
    cdf = b.mul(b.c(0.5), b.add(b.c(1.0), b.erf(b.mul(u, b.c(SQRT1_2)))))
    pdf = b.mul(b.exp(b.mul(b.c(-0.5), b.mul(u, u))), b.c(INV_SQRT_2PI))
    return b.mul(d, b.add(cdf, b.mul(u, pdf)))


def argmax_body(b, x, _window, best, arg):
    """Running (max, argmax) over a 2x2 window (d4, d5); the first maximum
    wins, as in PyTorch."""
    kh, kw = b.index(4), b.index(5)
    k = b.index_cast(b.addi(b.muli(kh, b.c(2, "index")), kw), "i32")
    p = b.cmpf("ogt", x, best)
    return b.select(p, x, best), b.select(p, k, arg, ty="i32")


def maxpool_relu_grad_body(b, r, idx, d, o):
    """d where this element is its window's argmax and positive, else 0."""
    h, w, c2 = b.index(2), b.index(3), b.c(2, "index")
    hm, wm = b.remui(h, c2), b.remui(w, c2)
    s = b.addi(b.muli(hm, c2), wm)
    hit = b.cmpi("eq", idx, b.index_cast(s, "i32"), "i32")
    both = b.andi(hit, b.cmpf("ogt", r, b.c(0.0)))
    return b.select(both, d, b.c(0.0))


def linear(g, x, w, bias):
    """x @ w + bias over the last dim of a 2-D x."""
    return g.ew([g.matmul(x, w), (bias, [1])], add)


def batch_scale(g, x):
    """1 / (rows of x) as an f32 scalar (rows may be dynamic)."""
    if x.shape[0] is not None:
        return g.const(1.0 / x.shape[0])
    s = g.scalars()
    rows = s.cast("arith.uitofp", s.index_cast(g.dim(x, 0), "i64"), "i64", "f32")
    return s.div(s.c(1.0), rows)


def log_softmax(g, z):
    m = g.reduce(z, [1], kind="max")
    s = g.ew([z, (m, [0])], sub)
    lse = g.ew([g.reduce(g.ew([s], lambda b, u: b.exp(u)), [1])],
               lambda b, u: b.log(u))
    return g.ew([s, (lse, [0])], sub)


def cross_entropy(g, logp, onehot, scale):
    """mean over rows of -sum(onehot * logp): a 0-d loss."""
    nll = g.reduce(g.ew([logp, onehot], mul), [0, 1])
    return g.ew([nll], lambda b, u: b.mul(b.neg(u), scale), hint="loss")


def cross_entropy_grad(g, logp, onehot, scale, seed=None):
    """d loss / d logits = (softmax - onehot) * scale (* seed)."""
    def body(b, lp, y, *s):
        d = b.mul(b.sub(b.exp(lp), y), scale)
        return b.mul(d, s[0]) if s else d
    ins = [logp, onehot] + ([(seed, [])] if seed is not None else [])
    return g.ew(ins, body)


def linear_grad(g, x, w, dy):
    """Gradients of x @ w + b: (dx, dw, db)."""
    dw = g.matmul(g.transpose(x, [1, 0]), dy)
    db = g.reduce(dy, [0])
    dx = g.matmul(dy, g.transpose(w, [1, 0]))
    return dx, dw, db


# ---------------------------------------------------------------------------
# MLP: linear -> GELU -> linear -> softmax cross-entropy.
# ---------------------------------------------------------------------------

def mlp_forward(g, x, onehot, w1, b1, w2, b2):
    h = linear(g, x, w1, b1)
    a = g.ew([h], gelu)
    z = linear(g, a, w2, b2)
    logp = log_softmax(g, z)
    loss = cross_entropy(g, logp, onehot, batch_scale(g, x))
    return loss, dict(h=h, a=a, logp=logp)


def mlp_backward(g, x, onehot, w1, w2, h, a, logp, seed=None):
    dz = cross_entropy_grad(g, logp, onehot, batch_scale(g, x), seed)
    da, dw2, db2 = linear_grad(g, a, w2, dz)
    dh = g.ew([da, h], gelu_grad)
    dw1 = g.matmul(g.transpose(x, [1, 0]), dh)
    db1 = g.reduce(dh, [0])
    return [dw1, db1, dw2, db2]


def mlp_params(g, batch, din, dh, dout):
    x = g.arg("x", (batch, din))
    onehot = g.arg("labels", (batch, dout))
    w1, b1 = g.arg("w1", (din, dh)), g.arg("b1", (dh,))
    w2, b2 = g.arg("w2", (dh, dout)), g.arg("b2", (dout,))
    return x, onehot, w1, b1, w2, b2


def mlp_joint(batch=32, din=64, dh=128, dout=10, name="mlp_step"):
    g = Graph()
    args = mlp_params(g, batch, din, dh, dout)
    x, onehot, w1, b1, w2, b2 = args
    loss, s = mlp_forward(g, x, onehot, w1, b1, w2, b2)
    grads = mlp_backward(g, x, onehot, w1, w2, s["h"], s["a"], s["logp"])
    return func(name, args, [loss] + grads, g.lines, result_attrs={0: "act.loss"})


def mlp_split(batch=32, din=64, dh=128, dout=10):
    """AOTAutograd's form: forward returns (loss, *saved); backward takes
    (*saved, grad_loss)."""
    f = Graph()
    args = mlp_params(f, batch, din, dh, dout)
    x, onehot, w1, b1, w2, b2 = args
    loss, s = mlp_forward(f, x, onehot, w1, b1, w2, b2)
    saved = [x, onehot, w2, s["h"], s["a"], s["logp"]]
    fwd = func("mlp_forward", args, [loss] + saved, f.lines,
               attrs=f"act.backward = @mlp_backward, act.num_saved = {len(saved)} : i64",
               result_attrs={0: "act.loss"})
    g = Graph()
    bargs = [g.arg(n, v.shape) for n, v in zip(("x", "labels", "w2", "h", "a", "logp"), saved)]
    seed = g.arg("grad_loss", ())
    grads = mlp_backward(g, *bargs[:2], None, *bargs[2:], seed)
    bwd = func("mlp_backward", bargs + [seed], grads, g.lines)
    return fwd + "\n" + bwd


# ---------------------------------------------------------------------------
# CNN: conv 3x3 -> bias -> ReLU -> max-pool 2x2 -> linear -> cross-entropy.
# ---------------------------------------------------------------------------

def pad2d(g, x, p=1):
    """Zero padding of the two spatial dims of an NCHW tensor."""
    return g.pad(x, [0, 0, p, p], [0, 0, p, p])


def conv2d(g, x, w):
    """Valid 3x3 convolution, stride 1: NCHW x FCHW -> NFHW."""
    return g.conv2d(x, w, (1, 1))


def conv2d_grad_weight(g, xp, dy):
    """dW[f, c, kh, kw] = sum_{n, h, w} dy[n, f, h, w] xp[n, c, h + kh, w + kw]."""
    shape = (dy.shape[1], xp.shape[1], 3, 3)
    return g.generic(shape, [(dy, ["d4", "d0", "d5", "d6"]),
                             (xp, ["d4", "d1", "d5 + d2", "d6 + d3"])],
                     lambda b, d, xv, o: b.add(o, b.mul(d, xv)),
                     iterators=["parallel"] * 4 + ["reduction"] * 3,
                     out_exprs=["d0", "d1", "d2", "d3"], init=g.fill(shape, 0.0))


def conv2d_grad_input(g, dy, w):
    """dx of a padded-by-1 3x3 convolution: dy correlated with the flipped,
    channel-swapped kernel."""
    f, c = w.shape[0], w.shape[1]
    wt = g.generic((c, f, 3, 3), [(w, ["d1", "d0", "2 - d2", "2 - d3"])],
                   lambda b, u, o: u)
    return conv2d(g, pad2d(g, dy), wt)


def cnn_joint(batch=16, chans=(1, 8, 8, 8), size=8, classes=10):
    """Three 'same' 3x3 convolutions with ReLU, a 2x2 max-pool, a linear
    classifier, softmax cross-entropy."""
    g = Graph()
    x = g.arg("x", (batch, chans[0], size, size))
    onehot = g.arg("labels", (batch, classes))
    ws = []
    for i in range(1, len(chans)):
        ws.append((g.arg(f"conv{i}_w", (chans[i], chans[i - 1], 3, 3)),
                   g.arg(f"conv{i}_b", (chans[i],))))
    half = size // 2
    feat = chans[-1] * half * half
    fw, fb = g.arg("fc_w", (feat, classes)), g.arg("fc_b", (classes,))
    args = [x, onehot] + [v for pair in ws for v in pair] + [fw, fb]

    # Forward.
    h, inputs, outputs = x, [], []
    for w, bias in ws:
        hp = pad2d(g, h)
        inputs.append(hp)
        h = g.ew([g.ew([conv2d(g, hp, w), (bias, [1])], add)],
                 lambda b, u: b.max(u, b.c(0.0)))
        outputs.append(h)
    # 2x2 max-pool keeping the argmax (0..3 in the window) as PyTorch does,
    # so the backward pass needs no equality test on saved values.
    pshape = (batch, chans[-1], half, half)
    its = ["parallel"] * 4 + ["reduction"] * 2
    win = ["d0", "d1", "d2 * 2 + d4", "d3 * 2 + d5"]
    out = ["d0", "d1", "d2", "d3"]
    pinit = g.fill(pshape, -math.inf)
    iinit = g.fill(pshape, 0, "i32")
    window = g.empty((2, 2))  # gives the window loops their extent
    p, idx = g.generic_multi([pshape, pshape], ["f32", "i32"],
                             [(h, win), (window, ["d4", "d5"])], argmax_body, its,
                             [out, out], [pinit, iinit], hint="pool")
    flat = g.collapse_shape(p, [[0], [1, 2, 3]])
    logp = log_softmax(g, linear(g, flat, fw, fb))
    scale = batch_scale(g, x)
    loss = cross_entropy(g, logp, onehot, scale)

    # Backward.
    dz = cross_entropy_grad(g, logp, onehot, scale)
    dflat, dfw, dfb = linear_grad(g, flat, fw, dz)
    dp = g.expand_shape(dflat, [[0], [1, 2, 3]], pshape)
    # Max-pool and ReLU: the gradient flows to each window's argmax, where
    # the ReLU output is positive.
    up = ["d0", "d1", "d2 floordiv 2", "d3 floordiv 2"]
    r = outputs[-1]
    dh = g.generic(r.shape, [(r, out), (idx, up), (dp, up)], maxpool_relu_grad_body)
    grads = []
    for i in reversed(range(len(ws))):
        w, _ = ws[i]
        grads = [conv2d_grad_weight(g, inputs[i], dh), g.reduce(dh, [0, 2, 3])] + grads
        if i == 0:
            break
        dx = conv2d_grad_input(g, dh, w)
        dh = g.ew([dx, outputs[i - 1]],
                  lambda b, d, u: b.select(b.cmpf("ogt", u, b.c(0.0)), d, b.c(0.0)))
    return func("cnn_step", args, [loss] + grads + [dfw, dfb], g.lines,
                result_attrs={0: "act.loss"})


# ---------------------------------------------------------------------------
# Transformer encoder block (pre-norm): x + Attn(LN(x)), then + MLP(LN(.)),
# single-head attention with softmax, GELU MLP; loss = mean squared error.
# ---------------------------------------------------------------------------

def layernorm(g, x, gamma, beta, eps=1e-5):
    """Over the last dim of a rank-3 x; returns (y, xhat, rstd)."""
    d = x.shape[2]
    mean = g.ew([g.reduce(x, [2])], lambda b, u: b.mul(u, b.c(1.0 / d)))
    xc = g.ew([x, (mean, [0, 1])], sub)
    var = g.ew([g.reduce(g.ew([xc], lambda b, u: b.mul(u, u)), [2])],
               lambda b, u: b.mul(u, b.c(1.0 / d)))
    rstd = g.ew([var], lambda b, u: b.div(b.c(1.0), b.sqrt(b.add(u, b.c(eps)))))
    xhat = g.ew([xc, (rstd, [0, 1])], mul)
    y = g.ew([xhat, (gamma, [2]), (beta, [2])], lambda b, u, s, t: b.add(b.mul(u, s), t))
    return y, xhat, rstd


def layernorm_grad(g, dy, xhat, rstd, gamma):
    """(dx, dgamma, dbeta) of layernorm."""
    d = dy.shape[2]
    dgamma = g.reduce(g.ew([dy, xhat], mul), [0, 1])
    dbeta = g.reduce(dy, [0, 1])
    dxhat = g.ew([dy, (gamma, [2])], mul)
    m1 = g.reduce(dxhat, [2])
    m2 = g.reduce(g.ew([dxhat, xhat], mul), [2])
    inv = 1.0 / d
    dx = g.ew([dxhat, xhat, (m1, [0, 1]), (m2, [0, 1]), (rstd, [0, 1])],
              lambda b, dh, xh, a1, a2, r: b.mul(r, b.sub(b.sub(dh, b.mul(a1, b.c(inv))),
                                                       b.mul(xh, b.mul(a2, b.c(inv))))))
    return dx, dgamma, dbeta


def transformer_joint(batch=4, seq=16, dim=32, hidden=128):
    g = Graph()
    x = g.arg("x", (batch, seq, dim))
    target = g.arg("target", (batch, seq, dim))
    g1, be1 = g.arg("ln1_g", (dim,)), g.arg("ln1_b", (dim,))
    wq, wk, wv, wo = (g.arg(n, (dim, dim)) for n in ("wq", "wk", "wv", "wo"))
    g2, be2 = g.arg("ln2_g", (dim,)), g.arg("ln2_b", (dim,))
    w1, b1 = g.arg("w1", (dim, hidden)), g.arg("b1", (hidden,))
    w2, b2 = g.arg("w2", (hidden, dim)), g.arg("b2", (dim,))
    args = [x, target, g1, be1, wq, wk, wv, wo, g2, be2, w1, b1, w2, b2]
    rows = batch * seq
    flat = lambda v: g.collapse_shape(v, [[0, 1], [2]])
    unflat = lambda v: g.expand_shape(v, [[0, 1], [2]], (batch, seq, v.shape[1]))
    att_scale = 1.0 / math.sqrt(dim)

    # Forward: attention.
    ln1, xhat1, rstd1 = layernorm(g, x, g1, be1)
    ln1f = flat(ln1)
    q, k, v = (unflat(g.matmul(ln1f, w)) for w in (wq, wk, wv))
    s = g.ew([g.batch_matmul(q, g.transpose(k, [0, 2, 1]))],
             lambda b, u: b.mul(u, b.c(att_scale)))
    m = g.reduce(s, [2], kind="max")
    e = g.ew([s, (m, [0, 1])], lambda b, u, w: b.exp(b.sub(u, w)))
    p = g.ew([e, (g.reduce(e, [2]), [0, 1])], lambda b, u, w: b.div(u, w))
    o = g.batch_matmul(p, v)
    of = flat(o)
    r1 = g.ew([x, unflat(g.matmul(of, wo))], add)
    # Forward: MLP.
    ln2, xhat2, rstd2 = layernorm(g, r1, g2, be2)
    ln2f = flat(ln2)
    h = linear(g, ln2f, w1, b1)
    a = g.ew([h], gelu)
    y = g.ew([r1, unflat(linear(g, a, w2, b2))], add)
    diff = g.ew([y, target], sub)
    scale = 1.0 / (rows * dim)
    loss = g.ew([g.reduce(g.ew([diff], lambda b, u: b.mul(u, u)), [0, 1, 2])],
                lambda b, u: b.mul(u, b.c(scale)), hint="loss")

    # Backward.
    dy = g.ew([diff], lambda b, u: b.mul(u, b.c(2.0 * scale)))
    da, dw2, db2 = linear_grad(g, a, w2, flat(dy))
    dh = g.ew([da, h], gelu_grad)
    dln2f, dw1, db1 = linear_grad(g, ln2f, w1, dh)
    dr1_ln, dg2, dbe2 = layernorm_grad(g, unflat(dln2f), xhat2, rstd2, g2)
    dr1 = g.ew([dy, dr1_ln], add)
    dr1f = flat(dr1)
    dwo = g.matmul(g.transpose(of, [1, 0]), dr1f)
    do = unflat(g.matmul(dr1f, g.transpose(wo, [1, 0])))
    dp = g.batch_matmul(do, g.transpose(v, [0, 2, 1]))
    dv = g.batch_matmul(g.transpose(p, [0, 2, 1]), do)
    dpp = g.reduce(g.ew([dp, p], mul), [2])
    ds = g.ew([p, dp, (dpp, [0, 1])],
              lambda b, pv, d, t: b.mul(b.mul(pv, b.sub(d, t)), b.c(att_scale)))
    dq = g.batch_matmul(ds, k)
    dk = g.batch_matmul(g.transpose(ds, [0, 2, 1]), q)
    ln1t = g.transpose(ln1f, [1, 0])
    dws, dln1 = [], None
    for dproj, w in ((dq, wq), (dk, wk), (dv, wv)):
        df = flat(dproj)
        dws.append(g.matmul(ln1t, df))
        part = g.matmul(df, g.transpose(w, [1, 0]))
        dln1 = part if dln1 is None else g.ew([dln1, part], add)
    _, dg1, dbe1 = layernorm_grad(g, unflat(dln1), xhat1, rstd1, g1)
    grads = [dg1, dbe1] + dws + [dwo, dg2, dbe2, dw1, db1, dw2, db2]
    return func("transformer_step", args, [loss] + grads, g.lines,
                result_attrs={0: "act.loss"})


HEADER = """// Generated by examples/graphgen.py: {what}
// A training step in linalg on tensors, forward and hand-written backward.
"""


def write(path, what, text):
    with open(path, "w") as f:
        f.write(HEADER.format(what=what))
        f.write(text)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "mlp.mlir"),
          "MLP (64 -> 128 GELU -> 10, softmax cross-entropy), batch 32, joint form",
          mlp_joint())
    write(os.path.join(here, "mlp_split.mlir"),
          "the MLP of mlp.mlir in split (forward/backward) form",
          mlp_split())
    write(os.path.join(here, "mlp_dynamic.mlir"),
          "the MLP of mlp.mlir with a dynamic batch dimension",
          mlp_joint(batch=None, name="mlp_dynamic_step"))
    write(os.path.join(here, "cnn.mlir"),
          "CNN (three 3x3 convolutions x8 with ReLU, max-pool 2x2, linear, cross-entropy) on 8x8 images, batch 16, joint form",
          cnn_joint())
    write(os.path.join(here, "transformer.mlir"),
          "pre-norm transformer encoder block (single-head attention, GELU MLP, residuals), "
          "batch 4 x 16 tokens x 32, MSE loss, joint form",
          transformer_joint())


if __name__ == "__main__":
    sys.exit(main())
