#!/usr/bin/env python3
"""Writes act's example training graphs (linalg on tensors) to examples/.

Each graph is one training step: forward pass, loss, and the backward pass
written out by hand (the gradients of every parameter), in the joint form of
DESIGN.md (the loss is result 0, marked `act.loss`) and, for the MLP, also in
the split form that AOTAutograd produces.

    python3 examples/graphgen.py            # rewrite examples/*.mlir

The committed .mlir files are the source of truth for tests; this script only
saves typing. Builders emit plain textual MLIR.
"""

import math
import os
import sys


class V:
    """An SSA value: its name and tensor shape (f32 unless dtype says)."""

    def __init__(self, name, shape, dtype="f32"):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return ttype(self.shape, self.dtype)


def ttype(shape, dtype="f32"):
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"tensor<{dims}x{dtype}>" if shape else f"tensor<{dtype}>"


def amap(rank, results):
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


class Body:
    """Scalar code inside a linalg.generic region."""

    def __init__(self, graph):
        self.g, self.lines = graph, []

    def op(self, name, *args, ty="f32"):
        r = self.g.fresh()
        self.lines.append(f"{r} = {name} {', '.join(args)} : {ty}")
        return r

    def add(self, a, b): return self.op("arith.addf", a, b)
    def sub(self, a, b): return self.op("arith.subf", a, b)
    def mul(self, a, b): return self.op("arith.mulf", a, b)
    def div(self, a, b): return self.op("arith.divf", a, b)
    def max(self, a, b): return self.op("arith.maximumf", a, b)
    def exp(self, a): return self.op("math.exp", a)
    def log(self, a): return self.op("math.log", a)
    def erf(self, a): return self.op("math.erf", a)
    def sqrt(self, a): return self.op("math.sqrt", a)
    def neg(self, a): return self.op("arith.negf", a)
    def c(self, value): return self.g.const(value)

    def select_gt(self, a, b, t, f):
        p = self.g.fresh()
        self.lines.append(f"{p} = arith.cmpf ogt, {a}, {b} : f32")
        return self.op("arith.select", p, t, f)

    def select_eq(self, a, b, t, f):
        p = self.g.fresh()
        self.lines.append(f"{p} = arith.cmpf oeq, {a}, {b} : f32")
        return self.op("arith.select", p, t, f)


class Graph:
    def __init__(self):
        self.lines, self.n, self.consts = [], 0, {}
        self.args = []

    def fresh(self):
        self.n += 1
        return f"%{self.n}"

    def emit(self, line):
        self.lines.append(line)

    def arg(self, name, shape):
        v = V(f"%{name}", shape)
        self.args.append(v)
        return v

    def const(self, value):
        key = float(value)
        if key not in self.consts:
            name = f"%c{len(self.consts)}"
            self.consts[key] = name
            lit = "0xFF800000" if key == -math.inf else f"{key:.9e}"
            self.emit(f"{name} = arith.constant {lit} : f32")
        return self.consts[key]

    def dyn_dims(self, like, shape, src=None):
        """Operands of tensor.empty for the dynamic dims of `shape`: dim i is
        dim src[i] (default i) of `like`."""
        ops = []
        for i, d in enumerate(shape):
            if d is None:
                idx = self.fresh()
                self.emit(f"{idx} = arith.constant {src[i] if src else i} : index")
                dim = self.fresh()
                self.emit(f"{dim} = tensor.dim {like.name}, {idx} : {like.type}")
                ops.append(dim)
        return ops

    def empty(self, shape, like=None, src=None, dtype="f32"):
        r = self.fresh()
        dyn = self.dyn_dims(like, shape, src) if like is not None else []
        self.emit(f"{r} = tensor.empty({', '.join(dyn)}) : {ttype(shape, dtype)}")
        return V(r, shape, dtype)

    def fill(self, shape, value, like=None, src=None):
        c = self.const(value)
        e = self.empty(shape, like, src)
        r = self.fresh()
        self.emit(f"{r} = linalg.fill ins({c} : f32) outs({e.name} : {e.type}) -> {e.type}")
        return V(r, shape)

    def fill_int(self, shape, value):
        c = self.fresh()
        self.emit(f"{c} = arith.constant {value} : i32")
        e = self.empty(shape, dtype="i32")
        r = self.fresh()
        self.emit(f"{r} = linalg.fill ins({c} : i32) outs({e.name} : {e.type}) -> {e.type}")
        return V(r, shape, "i32")

    def generic2(self, out_shape, inputs, iterators, out_dims, inits, body):
        """A generic with two outputs (inits: two V); body(b, *ins, o0, o1)
        returns two scalar names."""
        rank = len(iterators)
        maps = [amap(rank, dims) for _, dims in inputs] + [amap(rank, out_dims)] * 2
        b = Body(self)
        args = [self.fresh() for _ in inputs]
        outs = [self.fresh(), self.fresh()]
        r0, r1 = body(b, *args, *outs)
        r = self.fresh()
        ins = ", ".join(v.name for v, _ in inputs)
        tys = ", ".join(v.type for v, _ in inputs)
        its = ", ".join(f'"{i}"' for i in iterators)
        self.emit(f"{r}:2 = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                  f"iterator_types = [{its}]}} ins({ins} : {tys}) "
                  f"outs({inits[0].name}, {inits[1].name} : {inits[0].type}, {inits[1].type}) {{")
        bargs = ", ".join([f"{a}: f32" for a in args] + [f"{outs[0]}: f32", f"{outs[1]}: i32"])
        self.emit(f"^bb0({bargs}):")
        for line in b.lines:
            self.emit("  " + line)
        self.emit(f"  linalg.yield {r0}, {r1} : f32, i32")
        self.emit(f"}} -> ({inits[0].type}, {inits[1].type})")
        return V(f"{r}#0", out_shape), V(f"{r}#1", out_shape, "i32")

    def matmul(self, a, b, like=None):
        shape = (a.shape[0], b.shape[1])
        acc = self.fill(shape, 0.0, a if None in shape else None)
        r = self.fresh()
        self.emit(f"{r} = linalg.matmul ins({a.name}, {b.name} : {a.type}, {b.type}) "
                  f"outs({acc.name} : {acc.type}) -> {acc.type}")
        return V(r, shape)

    def batch_matmul(self, a, b):
        shape = (a.shape[0], a.shape[1], b.shape[2])
        acc = self.fill(shape, 0.0)
        r = self.fresh()
        self.emit(f"{r} = linalg.batch_matmul ins({a.name}, {b.name} : {a.type}, {b.type}) "
                  f"outs({acc.name} : {acc.type}) -> {acc.type}")
        return V(r, shape)

    def transpose(self, a, perm):
        shape = tuple(a.shape[p] for p in perm)
        init = self.empty(shape, a if None in shape else None, perm)
        r = self.fresh()
        self.emit(f"{r} = linalg.transpose ins({a.name} : {a.type}) outs({init.name} : {init.type}) "
                  f"permutation = [{', '.join(map(str, perm))}]")
        return V(r, shape)

    def generic(self, out_shape, inputs, body, iterators=None, out_dims=None,
                init=None, like=None):
        """inputs: list of (V, index expressions as strings over d0..).
        body(b, *args, out) -> scalar result name."""
        rank = len(iterators) if iterators else len(out_shape)
        iterators = iterators or ["parallel"] * rank
        out_dims = out_dims or [f"d{i}" for i in range(len(out_shape))]
        if init is None:
            init = self.empty(out_shape, like)
        maps = [amap(rank, dims) for _, dims in inputs] + [amap(rank, out_dims)]
        b = Body(self)
        args = [self.fresh() for _ in inputs]
        out = self.fresh()
        result = body(b, *args, out)
        r = self.fresh()
        ins = ", ".join(v.name for v, _ in inputs)
        tys = ", ".join(v.type for v, _ in inputs)
        its = ", ".join(f'"{i}"' for i in iterators)
        self.emit(f"{r} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                  f"iterator_types = [{its}]}} ins({ins} : {tys}) outs({init.name} : {init.type}) {{")
        bargs = ", ".join([f"{a}: {v.dtype}" for a, (v, _) in zip(args, inputs)]
                          + [f"{out}: {init.dtype}"])
        self.emit(f"^bb0({bargs}):")
        for line in b.lines:
            self.emit("  " + line)
        self.emit(f"  linalg.yield {result} : f32")
        self.emit(f"}} -> {init.type}")
        return V(r, out_shape)

    def ew(self, inputs, body, shape=None, like=None):
        """Elementwise over the shape of the first input; other inputs are
        given with the output dims they map to (broadcast)."""
        first = inputs[0] if isinstance(inputs[0], V) else inputs[0][0]
        shape = shape or first.shape
        ins = []
        for x in inputs:
            if isinstance(x, V):
                ins.append((x, [f"d{i}" for i in range(len(x.shape))]))
            else:
                v, dims = x
                ins.append((v, [f"d{i}" for i in dims]))
        if like is None and None in shape:
            like = first
        return self.generic(shape, ins, lambda b, *a: body(b, *a[:-1]), like=like)

    def reduce(self, x, keep, kind="add"):
        """Reduces `x` over the dims not in `keep`."""
        rank = len(x.shape)
        out_shape = tuple(x.shape[i] for i in keep)
        init = self.fill(out_shape, 0.0 if kind == "add" else -math.inf,
                         like=x if None in out_shape else None, src=list(keep))
        its = ["parallel" if i in keep else "reduction" for i in range(rank)]
        fn = (lambda b, a, o: b.add(a, o)) if kind == "add" else (lambda b, a, o: b.max(a, o))
        return self.generic(out_shape, [(x, [f"d{i}" for i in range(rank)])], fn,
                            iterators=its, out_dims=[f"d{i}" for i in keep], init=init)

    def collapse(self, x, groups, shape):
        r = self.fresh()
        self.emit(f"{r} = tensor.collapse_shape {x.name} {groups} : {x.type} into {ttype(shape)}")
        return V(r, shape)

    def expand(self, x, groups, shape):
        r = self.fresh()
        self.emit(f"{r} = tensor.expand_shape {x.name} {groups} output_shape "
                  f"[{', '.join(map(str, shape))}] : {x.type} into {ttype(shape)}")
        return V(r, shape)

    def func(self, name, results, attrs="", result_attrs=None):
        result_attrs = result_attrs or {}
        args = ", ".join(f"{a.name}: {a.type}" for a in self.args)
        res = ", ".join(v.type + (f" {{{result_attrs[i]}}}" if i in result_attrs else "")
                        for i, v in enumerate(results))
        head = f"func.func @{name}({args}) -> ({res})"
        if attrs:
            head += f" attributes {{{attrs}}}"
        body = "\n".join("  " + l for l in self.lines)
        ret = (f"  return {', '.join(v.name for v in results)} : "
               f"{', '.join(v.type for v in results)}")
        return f"{head} {{\n{body}\n{ret}\n}}\n"



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
    k = b.g.fresh()
    kh, kw, t = b.g.fresh(), b.g.fresh(), b.g.fresh()
    b.lines.append(f"{kh} = linalg.index 4 : index")
    b.lines.append(f"{kw} = linalg.index 5 : index")
    c2 = b.g.fresh()
    b.lines.append(f"{c2} = arith.constant 2 : index")
    b.lines.append(f"{t} = arith.muli {kh}, {c2} : index")
    ki = b.g.fresh()
    b.lines.append(f"{ki} = arith.addi {t}, {kw} : index")
    b.lines.append(f"{k} = arith.index_cast {ki} : index to i32")
    p = b.g.fresh()
    b.lines.append(f"{p} = arith.cmpf ogt, {x}, {best} : f32")
    m = b.op("arith.select", p, x, best)
    a = b.op("arith.select", p, k, arg, ty="i32")
    return m, a


def maxpool_relu_grad_body(b, r, idx, d, o):
    """d where this element is its window's argmax and positive, else 0."""
    h, w, c2, hm, wm, t, s, si = (b.g.fresh() for _ in range(8))
    b.lines.append(f"{h} = linalg.index 2 : index")
    b.lines.append(f"{w} = linalg.index 3 : index")
    b.lines.append(f"{c2} = arith.constant 2 : index")
    b.lines.append(f"{hm} = arith.remui {h}, {c2} : index")
    b.lines.append(f"{wm} = arith.remui {w}, {c2} : index")
    b.lines.append(f"{t} = arith.muli {hm}, {c2} : index")
    b.lines.append(f"{s} = arith.addi {t}, {wm} : index")
    b.lines.append(f"{si} = arith.index_cast {s} : index to i32")
    hit, pos, both = b.g.fresh(), b.g.fresh(), b.g.fresh()
    b.lines.append(f"{hit} = arith.cmpi eq, {idx}, {si} : i32")
    b.lines.append(f"{pos} = arith.cmpf ogt, {r}, {b.c(0.0)} : f32")
    b.lines.append(f"{both} = arith.andi {hit}, {pos} : i1")
    return b.op("arith.select", both, d, b.c(0.0))


def linear(g, x, w, bias):
    """x @ w + bias over the last dim of a 2-D x."""
    return g.ew([g.matmul(x, w), (bias, [1])], add)


def batch_scale(g, x):
    """1 / (rows of x) as an f32 scalar (rows may be dynamic)."""
    if x.shape[0] is not None:
        return g.const(1.0 / x.shape[0])
    idx, dim, i, f, r = (g.fresh() for _ in range(5))
    g.emit(f"{idx} = arith.constant 0 : index")
    g.emit(f"{dim} = tensor.dim {x.name}, {idx} : {x.type}")
    g.emit(f"{i} = arith.index_cast {dim} : index to i64")
    g.emit(f"{f} = arith.uitofp {i} : i64 to f32")
    g.emit(f"{r} = arith.divf {g.const(1.0)}, {f} : f32")
    return r


def log_softmax(g, z):
    m = g.reduce(z, keep=[0], kind="max")
    s = g.ew([z, (m, [0])], sub)
    lse = g.ew([g.reduce(g.ew([s], lambda b, u: b.exp(u)), keep=[0])],
               lambda b, u: b.log(u))
    return g.ew([s, (lse, [0])], sub)


def cross_entropy(g, logp, onehot, scale):
    """mean over rows of -sum(onehot * logp): a 0-d loss."""
    nll = g.reduce(g.ew([logp, onehot], mul), keep=[])
    return g.ew([nll], lambda b, u: b.mul(b.neg(u), scale))


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
    db = g.reduce(dy, keep=[1])
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
    db1 = g.reduce(dh, keep=[1])
    return [dw1, db1, dw2, db2]


def mlp_params(g, batch, din, dh, dout):
    x = g.arg("x", (batch, din))
    onehot = g.arg("labels", (batch, dout))
    w1, b1 = g.arg("w1", (din, dh)), g.arg("b1", (dh,))
    w2, b2 = g.arg("w2", (dh, dout)), g.arg("b2", (dout,))
    return x, onehot, w1, b1, w2, b2


def mlp_joint(batch=32, din=64, dh=128, dout=10, name="mlp_step"):
    g = Graph()
    x, onehot, w1, b1, w2, b2 = mlp_params(g, batch, din, dh, dout)
    loss, s = mlp_forward(g, x, onehot, w1, b1, w2, b2)
    grads = mlp_backward(g, x, onehot, w1, w2, s["h"], s["a"], s["logp"])
    return g.func(name, [loss] + grads, result_attrs={0: "act.loss"})


def mlp_split(batch=32, din=64, dh=128, dout=10):
    """AOTAutograd's form: forward returns (loss, *saved); backward takes
    (*saved, grad_loss)."""
    f = Graph()
    x, onehot, w1, b1, w2, b2 = mlp_params(f, batch, din, dh, dout)
    loss, s = mlp_forward(f, x, onehot, w1, b1, w2, b2)
    saved = [x, onehot, w2, s["h"], s["a"], s["logp"]]
    fwd = f.func("mlp_forward", [loss] + saved,
                 attrs=f'act.backward = @mlp_backward, act.num_saved = {len(saved)} : i64',
                 result_attrs={0: "act.loss"})
    g = Graph()
    bx, by, bw2 = g.arg("x", x.shape), g.arg("labels", onehot.shape), g.arg("w2", w2.shape)
    bh, ba, blp = g.arg("h", s["h"].shape), g.arg("a", s["a"].shape), g.arg("logp", s["logp"].shape)
    seed = g.arg("grad_loss", ())
    grads = mlp_backward(g, bx, by, None, bw2, bh, ba, blp, seed)
    bwd = g.func("mlp_backward", grads)
    return fwd + "\n" + bwd


# ---------------------------------------------------------------------------
# CNN: conv 3x3 -> bias -> ReLU -> max-pool 2x2 -> linear -> cross-entropy.
# ---------------------------------------------------------------------------

def pad2d(g, x, p=1):
    """Zero padding of the two spatial dims of an NCHW tensor."""
    n, c, h, w = x.shape
    shape = (n, c, h + 2 * p, w + 2 * p)
    zero = g.const(0.0)
    r = g.fresh()
    idx = [g.fresh() for _ in range(4)]
    g.emit(f"{r} = tensor.pad {x.name} low[0, 0, {p}, {p}] high[0, 0, {p}, {p}] {{")
    g.emit(f"^bb0({', '.join(i + ': index' for i in idx)}):")
    g.emit(f"  tensor.yield {zero} : f32")
    g.emit(f"}} : {x.type} to {ttype(shape)}")
    return V(r, shape)


def conv2d(g, x, w):
    """Valid 3x3 convolution, stride 1: NCHW x FCHW -> NFHW."""
    n, _, h, wd = x.shape
    shape = (n, w.shape[0], h - 2, wd - 2)
    acc = g.fill(shape, 0.0)
    r = g.fresh()
    g.emit(f"{r} = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, "
           f"strides = dense<1> : tensor<2xi64>}} ins({x.name}, {w.name} : {x.type}, {w.type}) "
           f"outs({acc.name} : {acc.type}) -> {acc.type}")
    return V(r, shape)


def conv2d_grad_weight(g, xp, dy):
    """dW[f, c, kh, kw] = sum_{n, h, w} dy[n, f, h, w] xp[n, c, h + kh, w + kw]."""
    shape = (dy.shape[1], xp.shape[1], 3, 3)
    return g.generic(shape, [(dy, ["d4", "d0", "d5", "d6"]),
                             (xp, ["d4", "d1", "d5 + d2", "d6 + d3"])],
                     lambda b, d, xv, o: b.add(o, b.mul(d, xv)),
                     iterators=["parallel"] * 4 + ["reduction"] * 3,
                     out_dims=["d0", "d1", "d2", "d3"], init=g.fill(shape, 0.0))


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
    pinit = g.fill(pshape, -math.inf)
    iinit = g.fill_int(pshape, 0)
    window = g.empty((2, 2))  # gives the window loops their extent
    p, idx = g.generic2(pshape, [(h, win), (window, ["d4", "d5"])], its,
                        ["d0", "d1", "d2", "d3"], [pinit, iinit], argmax_body)
    flat = g.collapse(p, "[[0], [1, 2, 3]]", (batch, feat))
    logp = log_softmax(g, linear(g, flat, fw, fb))
    scale = batch_scale(g, x)
    loss = cross_entropy(g, logp, onehot, scale)

    # Backward.
    dz = cross_entropy_grad(g, logp, onehot, scale)
    dflat, dfw, dfb = linear_grad(g, flat, fw, dz)
    dp = g.expand(dflat, "[[0], [1, 2, 3]]", pshape)
    # Max-pool and ReLU: the gradient flows to each window's argmax, where
    # the ReLU output is positive.
    up = ["d0", "d1", "d2 floordiv 2", "d3 floordiv 2"]
    r = outputs[-1]
    dh = g.generic(r.shape, [(r, ["d0", "d1", "d2", "d3"]), (idx, up), (dp, up)],
                   maxpool_relu_grad_body)
    grads = []
    for i in reversed(range(len(ws))):
        w, _ = ws[i]
        grads = [conv2d_grad_weight(g, inputs[i], dh), g.reduce(dh, keep=[1])] + grads
        if i == 0:
            break
        dx = conv2d_grad_input(g, dh, w)
        dh = g.ew([dx, outputs[i - 1]],
                  lambda b, d, u: b.select_gt(u, b.c(0.0), d, b.c(0.0)))
    return g.func("cnn_step", [loss] + grads + [dfw, dfb],
                  result_attrs={0: "act.loss"})


# ---------------------------------------------------------------------------
# Transformer encoder block (pre-norm): x + Attn(LN(x)), then + MLP(LN(.)),
# single-head attention with softmax, GELU MLP; loss = mean squared error.
# ---------------------------------------------------------------------------

def layernorm(g, x, gamma, beta, eps=1e-5):
    """Over the last dim of a rank-3 x; returns (y, xhat, rstd)."""
    d = x.shape[2]
    mean = g.ew([g.reduce(x, keep=[0, 1])], lambda b, u: b.mul(u, b.c(1.0 / d)))
    xc = g.ew([x, (mean, [0, 1])], sub)
    var = g.ew([g.reduce(g.ew([xc], lambda b, u: b.mul(u, u)), keep=[0, 1])],
               lambda b, u: b.mul(u, b.c(1.0 / d)))
    rstd = g.ew([var], lambda b, u: b.div(b.c(1.0), b.sqrt(b.add(u, b.c(eps)))))
    xhat = g.ew([xc, (rstd, [0, 1])], mul)
    y = g.ew([xhat, (gamma, [2]), (beta, [2])], lambda b, u, s, t: b.add(b.mul(u, s), t))
    return y, xhat, rstd


def layernorm_grad(g, dy, xhat, rstd, gamma):
    """(dx, dgamma, dbeta) of layernorm."""
    d = dy.shape[2]
    dgamma = g.reduce(g.ew([dy, xhat], mul), keep=[2])
    dbeta = g.reduce(dy, keep=[2])
    dxhat = g.ew([dy, (gamma, [2])], mul)
    m1 = g.reduce(dxhat, keep=[0, 1])
    m2 = g.reduce(g.ew([dxhat, xhat], mul), keep=[0, 1])
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
    rows = batch * seq
    flat = lambda v: g.collapse(v, "[[0, 1], [2]]", (rows, v.shape[2]))
    unflat = lambda v: g.expand(v, "[[0, 1], [2]]", (batch, seq, v.shape[1]))
    att_scale = 1.0 / math.sqrt(dim)

    # Forward: attention.
    ln1, xhat1, rstd1 = layernorm(g, x, g1, be1)
    ln1f = flat(ln1)
    q, k, v = (unflat(g.matmul(ln1f, w)) for w in (wq, wk, wv))
    s = g.ew([g.batch_matmul(q, g.transpose(k, [0, 2, 1]))],
             lambda b, u: b.mul(u, b.c(att_scale)))
    m = g.reduce(s, keep=[0, 1], kind="max")
    e = g.ew([s, (m, [0, 1])], lambda b, u, w: b.exp(b.sub(u, w)))
    p = g.ew([e, (g.reduce(e, keep=[0, 1]), [0, 1])], lambda b, u, w: b.div(u, w))
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
    loss = g.ew([g.reduce(g.ew([diff], lambda b, u: b.mul(u, u)), keep=[])],
                lambda b, u: b.mul(u, b.c(scale)))

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
    dpp = g.reduce(g.ew([dp, p], mul), keep=[0, 1])
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
    return g.func("transformer_step", [loss] + grads, result_attrs={0: "act.loss"})


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
