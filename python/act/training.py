"""act.compile: a compiled, compressed training step inside an ordinary
PyTorch loop.

    step = act.compile(model, loss_fn, example_inputs, example_targets,
                       encoding="#act.quant<bits=4>")
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        loss = step(x, y)          # forward + backward, saved activations encoded
        optimizer.step()

The step is exported (act.export: AOTAutograd with PyTorch's decompositions),
act-insert-encode-decode inserts the encodings, and the C API
(libActCAPI.so, act.capi) compiles it once. A call reads the parameters,
buffers and batch in place, runs forward and backward, writes the gradients
into the parameters' .grad (a view of the step's result, no copy, when .grad
is None; added to it otherwise, as autograd accumulates), copies BatchNorm's
updated running statistics into the module's buffers (and counts
num_batches_tracked), and returns the loss. Every call draws new seeds for
stochastic rounding and dropout. A batch of another shape (the last, partial
one) is exported and compiled once more and cached by shape.
"""

import json
import os
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from . import capi, driver
from .export import Exporter, Traced, header
from .models import Workload
from .tune import allocate, measure


class Step:
    def __init__(self, module, loss_fn, encoding=None, seed=0, work_dir=None, average_bits=None,
                 measure_bits=4, few_bit=0, compute_bits=None):
        if encoding is not None and average_bits is not None:
            raise ValueError("give encoding= or average_bits=, not both")
        if few_bit and (average_bits is not None or encoding in (None, "none")):
            raise ValueError("few_bit= goes with a lossy encoding= (the values it does "
                             "not apply to get that encoding)")
        if not 0 <= few_bit <= 8:
            raise ValueError(f"few_bit must be in 0..8, got {few_bit}")
        self.few_bit = few_bit
        # FracTrain's compute quantization: (forward bits, backward bits) of
        # the contractions' operands, or None for float. Settable between
        # calls (PFQ): each setting compiles once and is cached.
        self.compute_bits = compute_bits
        self.cost = {}  # compute_bits -> act-quantize-compute's totals
        self.effective_macs = 0.0  # summed over calls
        self.fp32_macs = 0.0
        self.module, self.loss_fn = module, loss_fn
        self.encoding = encoding
        self.average_bits, self.measure_bits = average_bits, measure_bits
        self.allocation = None  # act-allocate-bits' report, with average_bits
        self.seed = seed
        self.calls = 0
        self.records = {}  # the last call's act.export.record values
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="act-compile-")
        # (shapes, compute_bits, encoding) -> (CompiledStep, layout, saved bytes)
        self.compiled = {}
        self.last_peak_bytes = 0
        self.peak_bytes = 0  # the most any call's step had allocated at once
        # (before, after) encoding, act's memory report, of the last call's
        # variant, and summed over calls (PFQ and partial batches change them).
        self.saved_bytes = None
        self.saved_sum = [0, 0]
        self.batch_norms = [m for m in module.modules()
                            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                            and m.num_batches_tracked is not None]

    def _compile(self, inputs, targets):
        key = (tuple(inputs.shape), str(inputs.dtype), tuple(targets.shape), str(targets.dtype),
               self.compute_bits, self.encoding)
        if key in self.compiled:
            return self.compiled[key]
        name = f"step{len(self.compiled)}"
        # Tracing leaves the module's buffers alone (it substitutes copies).
        traced = Traced(Workload(name, self.module, inputs, targets, self.loss_fn), self.seed)
        ex = Exporter(traced)
        src = os.path.join(self.work_dir, f"{name}.mlir")
        with open(src, "w") as f:
            f.write(header(name, "joint", ["act.compile"]) + ex.joint())
        params = dict(self.module.named_parameters())
        buffers = dict(self.module.named_buffers())
        layout = {
            "params": [params[n] for n in traced.param_names],
            "buffers": [buffers[n] for n in traced.buffer_names],
            "constants": [traced.constants[k].numpy() for k in traced.large_constants],
            "has_dropout": traced.has_dropout,
            "updated": [buffers[traced.buffer_names[i]] for i, _ in ex.updated],
            "records": list(traced.record_names),
        }
        if self.average_bits is not None:
            mlir = self._tune(name, src, self._arguments(layout, inputs, targets, self.seed))
        else:
            options = ("policy=none" if self.encoding in (None, "none")
                       else f"encoding={self.encoding}")
            if self.few_bit:
                options += f" few-bit={self.few_bit}"
            mlir = driver.insert(src, os.path.join(self.work_dir, f"{name}_encoded.mlir"),
                                 options)
        if self.compute_bits is not None:
            fw, bw = self.compute_bits
            report = os.path.join(self.work_dir, f"{name}_cost.json")
            quantized = os.path.join(self.work_dir, f"{name}_compute.mlir")
            driver.run("act-opt", mlir, "-act-quantize-compute=forward-bits="
                       f"{fw} backward-bits={bw} report={report}", "-o", quantized)
            with open(report) as f:
                self.cost[self.compute_bits] = json.load(f)["totals"]
            mlir = quantized
        step = capi.CompiledStep.from_file(mlir)
        report = driver.memory_report(mlir, os.path.join(self.work_dir, f"{name}_report.json"))
        totals = report["graphs"][0]["totals"]
        self.compiled[key] = (step, layout,
                              (totals["saved_bytes_before"], totals["saved_bytes_after"]))
        return self.compiled[key]

    def _tune(self, name, src, args):
        """GACT's allocation for this graph, as act-tune makes it: sensitivities
        measured by act-run on this batch at measure_bits, bits chosen by
        act-allocate-bits for the average budget. The loss head (logits'
        bias, softmax, the loss) stays f32: measured into the budget, it got
        4 bits and a bias training does not survive (docs/Training.md)."""
        paths = []
        for i, a in enumerate(args):
            path = os.path.join(self.work_dir, f"{name}_arg{i:03d}.npy")
            np.save(path, np.asarray(a.detach().numpy() if hasattr(a, "detach") else a))
            paths.append(path)
        profile = os.path.join(self.work_dir, f"{name}_profile.json")
        measure(src, paths, [], profile, self.measure_bits)
        tuned = os.path.join(self.work_dir, f"{name}_tuned.mlir")
        _, self.allocation = allocate(src, profile, self.average_bits, tuned,
                                      os.path.join(self.work_dir, f"{name}_allocation.json"))
        return tuned

    @staticmethod
    def _arguments(layout, inputs, targets, call_seed):
        return ([p.detach() for p in layout["params"]] + [b.detach() for b in layout["buffers"]]
                + layout["constants"]
                + ([np.array(call_seed, dtype=np.int64)] if layout["has_dropout"] else [])
                + [inputs.detach(), targets.detach()])

    def __call__(self, inputs, targets):
        inputs, targets = inputs.contiguous(), targets.contiguous()
        step, layout, self.saved_bytes = self._compile(inputs, targets)
        self.saved_sum[0] += self.saved_bytes[0]
        self.saved_sum[1] += self.saved_bytes[1]
        self.calls += 1
        call_seed = (self.seed * 1000003 + self.calls) & 0x7FFFFFFFFFFFFFFF
        run = step.run(self._arguments(layout, inputs, targets, call_seed), seed=call_seed)
        if self.compute_bits is not None:
            cost = self.cost[self.compute_bits]
            self.effective_macs += cost["effective_macs"]
            self.fp32_macs += cost["macs"]
        self.last_peak_bytes = run.peak_bytes
        self.peak_bytes = max(self.peak_bytes, run.peak_bytes)
        results = run.results
        nparams = len(layout["params"])
        for p, g in zip(layout["params"], results[1:1 + nparams]):
            grad = torch.from_numpy(g)  # a view of the run's memory
            if p.grad is None:
                p.grad = grad
            else:
                p.grad.add_(grad)
        nupdated = len(layout["updated"])
        for b, value in zip(layout["updated"], results[1 + nparams:]):
            b.data.copy_(torch.from_numpy(value))
        # What the forward recorded (act.export.record), by name.
        self.records = {name: torch.from_numpy(value) for name, value in
                        zip(layout["records"], results[1 + nparams + nupdated:])}
        for m in self.batch_norms:
            if m.training:
                m.num_batches_tracked.add_(1)
        return torch.tensor(float(results[step.loss_index]))


def compile(module, loss_fn=F.cross_entropy, example_inputs=None, example_targets=None,
            encoding=None, seed=0, work_dir=None, average_bits=None, measure_bits=4, few_bit=0,
            compute_bits=None):
    """A compiled training step of `module` under `loss_fn` (see the module
    docstring). encoding: an act encoding for every saved activation
    (act-insert-encode-decode's uniform policy), or None for none.
    average_bits: instead, GACT's per-tensor bits for that average budget,
    from sensitivities act-run measures on the first batch of each shape
    (at measure_bits; act-allocate-bits; `step.allocation` is its report).
    few_bit: with a lossy encoding, the values the backward reads only
    through an activation's derivative phi(x) get few_bit-bit interval codes
    with phi's optimal table instead (Few-bit backward, docs/FewBit.md).
    compute_bits: (forward, backward) bits of FracTrain's compute
    quantization (act-quantize-compute), or None; `step.compute_bits` may be
    changed between calls (PFQ), each setting compiled once and cached (so
    may `step.encoding`: PFQ's saved-activation bits);
    `step.effective_macs` / `step.fp32_macs` sum FracTrain's cost over calls.
    The example batch, if given, compiles the step now."""
    step = Step(module, loss_fn, encoding, seed, work_dir, average_bits, measure_bits, few_bit,
                compute_bits)
    if example_inputs is not None and example_targets is not None:
        step._compile(example_inputs.contiguous(), example_targets.contiguous())
    return step
