"""Ranks candidate quantizers for a transformer's saved activations before
any of them is built into act (issue 52: "measure each on the language model
before keeping it"). PyTorch eager trains act.train's python-lm (the task's
recipe: 1,000 AdamW steps, batch 16, the same initial weights and batches as
act.train's seeds) with every saved activation replaced, between the forward
and the backward, by its quantize-dequantize round trip
(torch.autograd.graph.saved_tensors_hooks), which is what act's encode and
decode do to the backward's reads. Skipped, as act does: parameters, integer
tensors, LayerNorm's per-row statistics (kept exact) and the loss head
(log-softmax of the logits). A tensor saved twice (the attention
probabilities, read by softmax's backward and by the matmul with v) is
quantized once per step.

Quantizers (--config, ";"-separated; each "NAME" or "ROLE=NAME,ROLE=NAME,..."
with roles by shape: x (rows of --width features: residual stream, LayerNorm
outputs, attention outputs), qkv (q, k^T, v), p (attention probabilities),
h (the MLP's rows of 4 x width: GELU input and output), "*" the rest):

  none          float32
  q<B>g<G>      act's #act.quant<bits=B, group=G>: groups of G consecutive
                elements of the row-major flattened tensor, min and scale per
                group, stochastic rounding
  q<B>c<R>      groups along the feature dimension: per channel (the last
                dimension) over blocks of R rows
  q<B>h<K>g<G>  a normalized Walsh-Hadamard rotation of blocks of K values
                along the last dimension, then q<B>g<G>; decoded and rotated
                back
  f32           float32 (as none, for one role)

Prints the validation loss per seed, mean +- std, against "none" in the same
run, and each configuration's bits per saved element (codes plus the f32
minimum and scale per group).

    /usr/bin/python3 bench/accuracy/quant_sim.py --seeds 0,1,2 \\
        --config "none;q2g256;q2c256;q2h64g256"
"""
import argparse
import functools
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from act import train as T  # noqa: E402


def storage(x):
    """The address of x's storage (views of one tensor share it)."""
    return (x.untyped_storage() if hasattr(x, "untyped_storage") else x.storage()).data_ptr()


def hadamard(k):
    h = torch.ones(1, 1)
    while h.shape[0] < k:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h / math.sqrt(k)


def quant_groups(x, bits, gen):
    """x: (groups, G): min/max per row, stochastic rounding to 2^bits - 1
    steps, decoded."""
    lo = x.amin(1, keepdim=True)
    hi = x.amax(1, keepdim=True)
    levels = 2 ** bits - 1
    scale = (hi - lo) / levels
    inv = torch.where(hi > lo, levels / (hi - lo), torch.zeros_like(hi))
    u = torch.rand(x.shape, generator=gen)
    q = torch.clamp(torch.floor((x - lo) * inv + u), 0, levels)
    return q * scale + lo


def flat(x, bits, group, gen):
    n = x.numel()
    pad = (-n) % group
    v = x.reshape(-1)
    if pad:
        v = torch.cat([v, v[-1:].expand(pad)])
    return quant_groups(v.reshape(-1, group), bits, gen).reshape(-1)[:n].reshape(x.shape)


def channel(x, bits, rows, gen):
    c = x.shape[-1]
    v = x.reshape(-1, c)
    n = v.shape[0]
    pad = (-n) % rows
    if pad:
        v = torch.cat([v, v[-1:].expand(pad, c)])
    g = v.reshape(-1, rows, c).transpose(1, 2).reshape(-1, rows)
    d = quant_groups(g, bits, gen).reshape(-1, c, rows).transpose(1, 2).reshape(-1, c)
    return d[:n].reshape(x.shape)


def rotated(x, bits, k, group, gen):
    c = x.shape[-1]
    k = min(k, c)
    if c % k:
        return flat(x, bits, group, gen)
    h = hadamard(k)
    v = x.contiguous().reshape(-1, c // k, k) @ h
    d = flat(v, bits, group, gen)
    return (d @ h.T).reshape(x.shape)


def parse_quantizer(name):
    """A function x, gen -> decoded x, and its bits per element."""
    if name in ("none", "f32"):
        return None, 32.0
    bits = int(name[1])
    rest = name[2:]
    if rest.startswith("g"):
        g = int(rest[1:])
        return (lambda x, gen: flat(x, bits, g, gen)), bits + 64 / g
    if rest.startswith("c"):
        r = int(rest[1:])
        return (lambda x, gen: channel(x, bits, r, gen)), bits + 64 / r
    if rest.startswith("h"):
        k, g = rest[1:].split("g")
        k, g = int(k), int(g)
        return (lambda x, gen: rotated(x, bits, k, g, gen)), bits + 64 / g
    raise ValueError(f"unknown quantizer {name!r}")


def role(x, width):
    """The saved value's role in a CharLM of this width (4 heads) by shape.
    PyTorch 1.13 saves softmax's output as (B, H, T, T) and the attention
    matmuls' operands as 3-d batches: q and v (B*H, T, width/4), k^T (B*H,
    width/4, T), the probabilities' (B*H, T, T) view (its codes are the
    (B, H, T, T) tensor's: Hooks quantizes a stored value once)."""
    if x.shape[-1] == 4 * width:
        return "h"
    if x.dim() == 4 and x.shape[-1] == x.shape[-2]:
        return "p"
    if width // 4 in x.shape[-2:]:
        return "qkv"
    if x.shape[-1] == width:
        return "x"
    return "*"


def parse_config(text):
    parts = {}
    if "=" not in text:
        parts["*"] = text
    else:
        for item in text.split(","):
            r, q = item.split("=")
            parts[r.strip()] = q.strip()
    return {r: parse_quantizer(q) for r, q in parts.items()}


class Hooks:
    """saved_tensors_hooks that quantize each saved activation once per
    step and count its elements and bits."""

    def __init__(self, config, params, gen, width=64):
        self.config, self.gen, self.width = config, gen, width
        self.params = {storage(p) for p in params}
        self.cache, self.elements, self.bits = {}, 0, 0.0

    def pack(self, x):
        if (not x.is_floating_point() or x.dim() < 2 or x.shape[-1] in (1, T.VOCAB)
                or storage(x) in self.params):
            return x
        # One quantization per stored value: a second view of the same
        # contiguous elements (the probabilities as (B, H, T, T) for
        # softmax, (B*H, T, T) for the matmul) reads the same codes.
        key = (storage(x), x.storage_offset(), x.numel(), x._version)
        hit = self.cache.get(key)
        if hit is not None and x.is_contiguous():
            return hit[1].reshape(x.shape)
        fn, bits = self.config.get(role(x, self.width), self.config.get("*", (None, 32.0)))
        self.elements += x.numel()
        self.bits += bits * x.numel()
        out = x if fn is None else fn(x.detach(), self.gen)
        if x.is_contiguous():
            # (x kept alive for the step, so that its address is not
            # reused by another tensor while the key is in the cache)
            self.cache[key] = (x, out.contiguous())
        return out

    @staticmethod
    def unpack(x):
        return x


def recomputing(model):
    """CharLM whose cheap derived values are recomputed in the backward from
    the stored (quantized) ones instead of stored (torch.utils.checkpoint
    around each: the LayerNorm outputs from the residual stream, the
    attention probabilities from q and k, the GELU output from its input):
    what act's recompute-cost does. Stored: the residual stream, q, k, v,
    the attention output and the GELU input."""
    from torch.utils.checkpoint import checkpoint

    def block(self, x):
        B, Tn, C = x.shape
        q, k, v = checkpoint(lambda x: self.qkv(self.n1(x)), x).split(C, dim=2)

        def attend(q, k, v):
            q, k, v = (t.view(B, Tn, self.heads, C // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5 + self.mask[:Tn, :Tn]
            return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, Tn, C)

        x = x + self.proj(checkpoint(attend, q, k, v))
        h = checkpoint(lambda x: self.fc1(self.n2(x)), x)
        return x + checkpoint(lambda h: self.fc2(F.gelu(h)), h)

    def forward(self, idx):
        B, Tn = idx.shape
        x = self.blocks(self.emb(idx) + self.pos[:Tn])
        return checkpoint(lambda x: self.head(self.norm(x)), x).reshape(B * Tn, T.VOCAB)

    for b in model.blocks:
        b.forward = block.__get__(b)
    model.forward = forward.__get__(model)
    return model


def plain_elements(model, x, y, loss_fn):
    """The elements the step of `model` (without recomputation) quantizes
    (its saved activations, as Hooks counts them): the denominator of the
    bits per saved element when some are recomputed."""
    hooks = Hooks({"*": (lambda x, gen: x.clone(), 32.0)}, model.parameters(), None)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        loss_fn(model(x), y)
    return hooks.elements


@functools.lru_cache(maxsize=None)
def data():
    """python-lm's windows (read once per process, not per run)."""
    return T.TASKS["python-lm"].data()


def run(config_text, seed, steps_per_epoch=100, epochs=10, recompute=False, width=64,
        layers=2):
    task = T.TASKS["python-lm"]
    (xtr, ytr), (xte, yte) = data()
    torch.manual_seed(seed)
    model = T.CharLM(d=width, heads=4, layers=layers)
    plain = plain_elements(model, xtr[:task.batch], ytr[:task.batch], task.loss_fn)
    if recompute:
        model = recomputing(model)
    opt = torch.optim.AdamW(model.parameters(), lr=task.lr)
    gen = torch.Generator().manual_seed(seed)
    noise = torch.Generator().manual_seed(10_000 + seed)
    hooks = Hooks(parse_config(config_text), model.parameters(), noise, width)
    batch = task.batch
    samples = steps_per_epoch * batch
    for epoch in range(epochs):
        order = torch.randperm(len(xtr), generator=gen)[:samples]
        for start in range(0, samples, batch):
            idx = order[start:start + batch]
            opt.zero_grad(set_to_none=True)
            hooks.cache.clear()
            with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
                loss = task.loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
    value = T.evaluate(task, model, xte, yte)
    steps = steps_per_epoch * epochs
    return value, hooks.bits / max(hooks.elements, 1), hooks.bits / steps / plain


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--config", default="none;q2g256")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--width", type=int, default=64, help="CharLM's d (the task's: 64)")
    p.add_argument("--layers", type=int, default=2, help="CharLM's blocks (the task's: 2)")
    p.add_argument("--recompute", action="store_true",
                   help="recompute the LayerNorm outputs, attention probabilities and GELU "
                        "outputs in the backward (recomputing(); 'none' stays plain)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    seeds = [int(s) for s in a.seeds.split(",")]
    configs = [c.strip() for c in a.config.split(";") if c.strip()]
    base = None
    print("| configuration | validation loss per seed | mean +- std | vs none "
          "| bits per stored element | bits per saved element of the plain step |")
    print("|---|---|---|---|---|---|")
    for c in configs:
        t = time.perf_counter()
        results = [run(c, s, recompute=a.recompute and c != "none", width=a.width,
                       layers=a.layers) for s in seeds]
        losses = [r[0] for r in results]
        mean = statistics.mean(losses)
        # (A diverged run's loss is NaN: statistics.stdev cannot take it.)
        std = (statistics.stdev(losses) if len(losses) > 1 and all(map(math.isfinite, losses))
               else float("nan") if len(losses) > 1 else 0.0)
        if c == "none":
            base = mean
        rel = f"{100 * (mean / base - 1):+.2f} %" if base else ""
        print(f"| {c} | {', '.join(f'{v:.4f}' for v in losses)} | {mean:.4f} +- {std:.4f} "
              f"| {rel} | {results[0][1]:.2f} | {results[0][2]:.2f} | ({time.perf_counter() - t:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
