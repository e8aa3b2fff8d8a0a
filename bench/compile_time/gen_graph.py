#!/usr/bin/env python3
"""Writes a deep synthetic training step (joint form) with about N ops.

Each layer is h' = tanh(h @ W_k) on tensor<16x16xf32> (the W_k cycle through
four parameters); the backward pass is written out: dtanh, dW_k = h^T da
accumulated per parameter, dh = da W_k^T. Every layer saves two activations
(h for dW, tanh's output for its derivative).

    gen_graph.py OPS > graph.mlir
"""

import sys

OPS_PER_LAYER = 19  # 4 forward + 15 backward


def generate(target):
    """Returns (MLIR text, number of top-level ops) for about `target` ops."""
    layers = max(1, target // OPS_PER_LAYER)
    t = "tensor<16x16xf32>"
    out = []
    emit = out.append
    emit(f"func.func @deep_step(%x: {t}, %w0: {t}, %w1: {t}, %w2: {t}, %w3: {t})"
         f" -> (f32 {{act.loss}}, {t}, {t}, {t}, {t}) {{")
    emit("  %zero = arith.constant 0.0 : f32")
    emit(f"  %ones = arith.constant dense<1.0> : {t}")
    h = "%x"
    hs = [h]
    for i in range(layers):
        w = f"%w{i % 4}"
        emit(f"  %e{i} = tensor.empty() : {t}")
        emit(f"  %z{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t}) -> {t}")
        emit(f"  %a{i} = linalg.matmul ins({h}, {w} : {t}, {t}) outs(%z{i} : {t}) -> {t}")
        emit(f"  %h{i} = math.tanh %a{i} : {t}")
        h = f"%h{i}"
        hs.append(h)
    emit(f"  %se = tensor.empty() : tensor<f32>")
    emit(f"  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>")
    emit(f"  %s = linalg.reduce ins({h} : {t}) outs(%s0 : tensor<f32>) dimensions = [0, 1]")
    emit(f"    (%in: f32, %init: f32) {{")
    emit(f"      %r = arith.addf %in, %init : f32")
    emit(f"      linalg.yield %r : f32")
    emit(f"    }}")
    emit(f"  %loss = tensor.extract %s[] : tensor<f32>")
    dh = "%ones"
    acc = {k: None for k in range(4)}
    for i in reversed(range(layers)):
        w = f"%w{i % 4}"
        emit(f"  %sq{i} = arith.mulf %h{i}, %h{i} : {t}")
        emit(f"  %om{i} = arith.subf %ones, %sq{i} : {t}")
        emit(f"  %da{i} = arith.mulf {dh}, %om{i} : {t}")
        emit(f"  %te{i} = tensor.empty() : {t}")
        emit(f"  %ht{i} = linalg.transpose ins({hs[i]} : {t}) outs(%te{i} : {t}) permutation = [1, 0]")
        emit(f"  %ge{i} = tensor.empty() : {t}")
        emit(f"  %gz{i} = linalg.fill ins(%zero : f32) outs(%ge{i} : {t}) -> {t}")
        emit(f"  %dw{i} = linalg.matmul ins(%ht{i}, %da{i} : {t}, {t}) outs(%gz{i} : {t}) -> {t}")
        k = i % 4
        if acc[k] is None:
            emit(f"  %acc{i} = arith.addf %dw{i}, %dw{i} : {t}")
        else:
            emit(f"  %acc{i} = arith.addf {acc[k]}, %dw{i} : {t}")
        acc[k] = f"%acc{i}"
        emit(f"  %we{i} = tensor.empty() : {t}")
        emit(f"  %wt{i} = linalg.transpose ins({w} : {t}) outs(%we{i} : {t}) permutation = [1, 0]")
        emit(f"  %de{i} = tensor.empty() : {t}")
        emit(f"  %dz{i} = linalg.fill ins(%zero : f32) outs(%de{i} : {t}) -> {t}")
        emit(f"  %dh{i} = linalg.matmul ins(%da{i}, %wt{i} : {t}, {t}) outs(%dz{i} : {t}) -> {t}")
        emit(f"  %keep{i} = arith.addf %dh{i}, %dh{i} : {t}")
        dh = f"%keep{i}"
    accs = [acc[k] if acc[k] else "%w0" for k in range(4)]
    emit(f"  return %loss, {', '.join(accs)} : f32, {t}, {t}, {t}, {t}")
    emit("}")
    # Top-level ops: 2 constants, the layers, 4 for the loss, the return.
    return "\n".join(out) + "\n", 2 + layers * OPS_PER_LAYER + 4 + 1


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]))[0])
