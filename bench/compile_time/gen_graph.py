#!/usr/bin/env python3
"""Writes a deep synthetic training step (joint form) with about N ops.

Each layer is h' = tanh(h @ W_k) on tensor<16x16xf32> (the W_k cycle through
four parameters); the loss is sum(h_last). The backward pass is written out:
da = dh (1 - h'^2), dW_k = h^T da accumulated per parameter, dh = da W_k^T.
Every layer's output is saved (h' for tanh's derivative, and as the next
layer's h for its dW). Built with act.mlir (python/act/mlir.py).

    gen_graph.py OPS > graph.mlir
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from act.mlir import Graph, func  # noqa: E402

OPS_PER_LAYER = 19  # forward 5 (fill, matmul, tanh), backward 14
SHAPE = (16, 16)


def generate(target):
    """Returns (MLIR text, number of top-level ops) for about `target` ops."""
    layers = max(1, target // OPS_PER_LAYER)
    g = Graph()
    x = g.arg("x", SHAPE)
    ws = [g.arg(f"w{k}", SHAPE) for k in range(4)]
    hs = [x]
    for i in range(layers):
        hs.append(g.ew([g.matmul(hs[-1], ws[i % 4])], lambda b, u: b.tanh(u), hint="h"))
    loss = g.reduce(hs[-1], [0, 1], hint="loss")
    dh = g.fill(SHAPE, 1.0, hint="seed")
    acc = [None] * 4
    for i in reversed(range(layers)):
        da = g.ew([dh, hs[i + 1]], lambda b, d, y: b.mul(d, b.sub(b.c(1.0), b.mul(y, y))),
                  hint="da")
        dw = g.matmul(g.transpose(hs[i], [1, 0]), da, hint="dw")
        k = i % 4
        acc[k] = dw if acc[k] is None else g.ew([acc[k], dw], lambda b, u, v: b.add(u, v),
                                                 hint="acc")
        if i > 0:
            dh = g.matmul(da, g.transpose(ws[k], [1, 0]), hint="dh")
    grads = [a if a is not None else g.fill(SHAPE, 0.0) for a in acc]
    text = func("deep_step", [x] + ws, [loss] + grads, g.lines, result_attrs={0: "act.loss"})
    # Top-level ops: lines that define values (region bodies are indented),
    # and the return.
    return text, sum(line.startswith("%") for line in g.lines) + 1


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]))[0])
