"""act.Module: a module whose forward and backward are act's, inside
autograd, so the rest of a user's loop is unchanged.

    model = act.Module(backbone, example_inputs, encoding="#act.quant<bits=4>")
    for x, y in loader:
        loss = my_loss(head(model(x)), y)   # any loss, any modules around it
        optimizer.zero_grad(set_to_none=True)
        loss.backward()                     # act's backward, through autograd
        optimizer.step()

How it works. The module is exported once per input signature in act's
split form (docs/TrainingGraphs.md): a forward function that returns the
module's outputs and the saved activations (encoded by
act-insert-encode-decode) and a backward function that takes them. The
exporter's split form has one scalar loss; act.Module exports the module
under the loss <outputs, T>, whose gradient with respect to the outputs is
T. The backward reads T only as the saved argument it is, so at backward
time act.Module puts autograd's incoming output gradient in T's place: the
backward is then exactly the module's vector-Jacobian product. (The cost is
one multiply-add over the outputs in the forward, with T a zero buffer,
and one copy in the backward.) Inputs that need a gradient (the module in
the middle of a network) are exported as parameters, so the backward
returns their gradients too.

A torch.autograd.Function runs the compiled forward (the saved values stay
in act's run, outside autograd's saved tensors) and, in its backward, the
compiled backward; it returns the input gradients and the parameter
gradients, which autograd accumulates into .grad, so every gradient hook
fires (DistributedDataParallel's all-reduce among them). The saved values
are freed as soon as the backward has run. Under torch.no_grad() (or when
nothing needs a gradient) a forward-only variant runs (act-forward-only:
nothing saved). BatchNorm's running statistics are updated as eager
updates them; dropout draws new seeds every call.

A change of input shape, dtype or requires_grad, of train/eval mode, or of
which parameters require gradients exports and compiles once more (cached),
as act.compile and torch.compile do.
"""

import os
import shutil
import tempfile
import weakref

import numpy as np
import torch
import torch.nn as nn

from . import capi, driver
from .export import (ExportError, Exporter, Traced, copy_module, header, random_ops,
                     record)
from .workload import Workload, not_tensors, tensors_of
from .training import _progress, require_cpu, step_layout, update_buffers


class _Exported(nn.Module):
    """What is exported: the user's module called on the inputs (the ones
    that need a gradient read from parameters named input<i>, so that the
    step returns their gradients), its outputs recorded (act.export.record)
    and returned as a tuple."""

    def __init__(self, module, grad_inputs):
        super().__init__()
        for i, t in grad_inputs.items():
            self.register_parameter(f"input{i}", nn.Parameter(t.detach().clone()))
        self.module = module

    def forward(self, *data):
        out = self.module(*[self._parameters.get(f"input{i}", d) for i, d in enumerate(data)])
        outs = tensors_of(out)
        for i, o in enumerate(outs):
            record(f"output{i}", o)
        return outs


def _inner_product(outs, tangents):
    """The exported loss: <outputs, T> (its gradient in the outputs is T)."""
    total = None
    for o, t in zip(outs, tangents):
        term = (o * t).sum()
        total = term if total is None else total + term
    return total


class _Variant:
    """One compiled signature: the split step, its forward-only variant
    (compiled on first use), and where each of its arguments comes from."""

    def __init__(self, step, layout, forward_only_source, saved_bytes, tangent_saved):
        self.step, self.layout = step, layout
        self.forward_only_source, self.forward_only = forward_only_source, None
        self.saved_bytes = saved_bytes  # (before, after) encoding
        # Output i's tangent: its positions among the saved values (none:
        # the backward never reads it, the output depends on nothing that
        # needs a gradient).
        self.tangent_saved = tangent_saved


class _Apply(torch.autograd.Function):
    """act's forward and backward as one autograd node: the arguments are
    the module (ignored by autograd), then the inputs and the trainable
    parameters, so that autograd hands their gradients on."""

    @staticmethod
    def forward(ctx, owner, variant, ninputs, *tensors):
        inputs = tensors[:ninputs]  # (the parameters are read where they live)
        run, outputs = owner._run_forward(variant, inputs)
        ctx.owner, ctx.variant, ctx.run = owner, variant, run
        return outputs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grad_outputs):
        if ctx.run is None:
            raise RuntimeError(
                "act.Module: this forward's backward has run already and its saved "
                "activations are freed (loss.backward(retain_graph=True) followed by a "
                "second backward through an act.Module is not supported: run the forward "
                "again)")
        run, ctx.run = ctx.run, None
        grads = ctx.owner._run_backward(ctx.variant, run, grad_outputs)
        return (None, None, None) + tuple(grads)


class Module(nn.Module):
    """`module` with act's compiled, compressed forward and backward, as an
    nn.Module inside autograd (see the module docstring). encoding: an act
    encoding for every saved activation ("#act.quant<bits = 4>", ...),
    "lossless" for Gist's lossless encodings only ("lossless+fp10": with
    Gist's precision reduction to fp10, bf16, ...), or None for none;
    few_bit: with a lossy encoding, few-bit codes for the values the backward
    reads only through an activation's derivative (as act.compile).
    example_inputs, if given, compiles now (saved_bytes is known from then
    on). The wrapped module is `.module`; its parameters are this module's,
    so optimizers, state_dict and DistributedDataParallel see them as they
    are."""

    def __init__(self, module, example_inputs=None, encoding=None, few_bit=0, seed=0,
                 work_dir=None, keep_work_dir=False, average_bits=None):
        super().__init__()
        if average_bits is not None:
            raise NotImplementedError(
                "act.Module: average_bits= (GACT's allocation) measures the gradient of the "
                "loss the step computes, which act.Module leaves to the caller: use "
                "act.compile(model, loss_fn, ..., average_bits=...) or a fixed encoding=")
        if isinstance(module, Module):
            raise TypeError("act.Module: the module is an act.Module already")
        name = type(module).__name__
        if name in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
            raise TypeError(f"act.Module: wrap the module first and {name} around it "
                            f"({name}(act.Module(model)), so that its hooks see act's "
                            f"gradients), not act.Module({name}(model))")
        if few_bit and (encoding in (None, "none") or encoding.startswith("lossless")):
            raise ValueError("few_bit= goes with a lossy encoding= (the values it does not "
                             "apply to get that encoding)")
        self.module = module
        # (Plain attributes, not submodules or buffers: no state of their own.)
        object.__setattr__(self, "_config", dict(encoding=encoding, few_bit=few_bit))
        object.__setattr__(self, "_variants", {})
        self.seed = seed
        self.calls = 0
        # The most bytes act's forward, or its backward with the saved values
        # it reads, had allocated at once: in the last call, over all calls.
        self.last_peak_bytes = self.peak_bytes = 0
        self.saved_bytes = None  # (before, after) encoding, of the last signature used
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="act-module-")
        os.makedirs(self.work_dir, exist_ok=True)
        if not (work_dir or keep_work_dir or os.environ.get("ACT_KEEP_WORK_DIR")):
            weakref.finalize(self, shutil.rmtree, self.work_dir, ignore_errors=True)
        if example_inputs is not None:
            inputs = _inputs(example_inputs)
            self.saved_bytes = self._variant(inputs).saved_bytes

    # -- compiling ---------------------------------------------------------

    def _key(self, inputs):
        return (tuple((tuple(t.shape), str(t.dtype), t.requires_grad) for t in inputs),
                tuple(m.training for m in self.module.modules()),
                tuple((id(p), p.requires_grad) for p in self.module.parameters()))

    def _variant(self, inputs):
        key = self._key(inputs)
        variant = self._variants.get(key)
        if variant is None:
            variant = self._variants[key] = self._compile(inputs, f"module{len(self._variants)}")
        return variant

    def _compile(self, inputs, name):
        require_cpu("act.Module", (), self.module)
        grad_inputs = {i: t for i, t in enumerate(inputs) if t.requires_grad}
        for i, t in grad_inputs.items():
            if not t.is_floating_point():
                raise TypeError(f"act.Module: input {i} is {t.dtype} and requires a gradient")
        exported = _Exported(self.module, grad_inputs)
        # The outputs' shapes (one eager forward, on a copy: BatchNorm's
        # statistics stay as they are).
        with torch.no_grad(), random_ops("reference", self.seed):
            outs = _Exported(copy_module(self.module), grad_inputs)(*inputs)
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor) or o.dtype != torch.float32:
                raise TypeError(
                    f"act.Module: output {i} of the module is "
                    f"{o.dtype if isinstance(o, torch.Tensor) else type(o).__name__}; act "
                    f"differentiates float32 outputs (a tensor or a tuple of tensors)")
        # Traced checks its graphs' gradients against eager autograd's on
        # the example: random tangents, so that the check sees every output.
        gen = torch.Generator().manual_seed(self.seed)
        example_tangents = tuple(torch.randn(o.shape, generator=gen) for o in outs)
        tangents = tuple(torch.zeros_like(o) for o in outs)  # what the forward reads
        data = tuple(t.detach() for t in inputs)
        with torch.enable_grad():
            traced = Traced(Workload(name, exported, data, example_tangents, _inner_product),
                            self.seed)
        ex = Exporter(traced)
        split = ex.split()
        joint = ex.joint()
        src = os.path.join(self.work_dir, f"{name}_split.mlir")
        with open(src, "w") as f:
            f.write(header(name, "split", ["act.Module"]) + split)
        joint_src = os.path.join(self.work_dir, f"{name}.mlir")
        with open(joint_src, "w") as f:
            f.write(header(name, "joint", ["act.Module"]) + joint)
        params = list(traced.params)
        ninputs = len(inputs)
        position = {id(p): k for k, p in enumerate(params)}
        input_params = {i: position[id(exported._parameters[f"input{i}"])]
                        for i in grad_inputs}
        # The arguments: parameters (input<i> among them: the input itself),
        # buffers, large constants, the dropout seed, the inputs, the
        # tangents (zeros in the forward).
        layout = {
            **step_layout(traced, ex),
            # Parameter position -> the input it reads; the others, in
            # order (what _Apply takes after the inputs).
            "param_inputs": {k: i for i, k in input_params.items()},
            "trainable": [p for k, p in enumerate(params) if k not in input_params.values()],
            # The BatchNorms that count batches (training mode is part of the
            # variant's key, so the list holds for the variant).
            "norms": [m for m in self.module.modules()
                      if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training
                      and m.num_batches_tracked is not None],
            "tangents": tangents,
            "ninputs": ninputs,
            "bn_updates": {id(self.module.get_submodule(n[len("module."):])): k
                           for n, k in traced.bn_updates.items() if n.startswith("module.")},
        }
        # The placeholders' own memory is not needed any more (each call
        # reads the input in their place).
        for i in grad_inputs:
            exported._parameters[f"input{i}"].data = torch.empty(0)
        first_tangent = len(traced.args) - len(tangents)
        tangent_saved = [ex.saved_arguments.get(first_tangent + i, [])
                         for i in range(len(tangents))]
        # A saved value the forward computed from a tangent (rather than the
        # tangent itself, or a view the backward re-derives from it) would
        # carry the forward's zeros into the backward: refuse.
        placeholders = set(traced.fw_placeholders[-len(tangents):])
        for node in traced.saved:
            chain = traced.view_chain(node)
            if chain and chain[0] in placeholders:
                continue
            stack, seen = [node], set()
            while stack:
                n = stack.pop()
                if n in seen:
                    continue
                seen.add(n)
                if n in placeholders and n is not node:
                    raise ExportError(
                        f"act.Module: the backward reads {node.name}, which the forward "
                        f"computes from an output's gradient (which it does not have yet)")
                stack.extend(n.all_input_nodes)
        options = driver.insertion_options(self._config["encoding"], self._config["few_bit"])
        mlir = driver.insert(src, os.path.join(self.work_dir, f"{name}_encoded.mlir"), options)
        with _progress(f"compiling {name} ({type(self.module).__name__})", who="act.Module"):
            step = capi.CompiledStep.from_file(mlir)
        report = driver.memory_report(mlir, os.path.join(self.work_dir, f"{name}_report.json"))
        totals = report["graphs"][0]["totals"]
        nrec = len(traced.record_names)
        nupdated = len(layout["updated"])
        # The forward's results: the loss, the updated buffers, the records
        # (the module's outputs), the saved values.
        layout["outputs"] = list(range(1 + nupdated, 1 + nupdated + nrec))
        if step.num_saved != len(step.backward_arguments) - 1:
            raise capi.ActError("act.Module: the compiled backward takes "
                                f"{len(step.backward_arguments)} arguments for "
                                f"{step.num_saved} saved values")
        return _Variant(step, layout, joint_src,
                        (totals["saved_bytes_before"], totals["saved_bytes_after"]),
                        tangent_saved)

    def _forward_only(self, variant):
        if variant.forward_only is None:
            layout = variant.layout
            nparams, nupdated = len(layout["params"]), len(layout["updated"])
            keep = [0] + list(range(1 + nparams,
                                    1 + nparams + nupdated + len(layout["outputs"])))
            mlir = variant.forward_only_source.replace(".mlir", "_forward_only.mlir")
            with _progress("compiling the forward-only step", who="act.Module"):
                driver.passes(variant.forward_only_source, mlir, "act-forward-only",
                              "keep=" + ",".join(map(str, keep)))
                variant.forward_only = capi.CompiledStep.from_file(mlir)
        return variant.forward_only

    # -- running -----------------------------------------------------------

    def _arguments(self, variant, inputs, seed):
        layout = variant.layout
        by_input = layout["param_inputs"]
        args = [inputs[by_input[k]].detach() if k in by_input else p.detach()
                for k, p in enumerate(layout["params"])]
        return (args + [b.detach() for b in layout["buffers"]]
                + [c.detach() if isinstance(c, torch.Tensor) else c for c in layout["constants"]]
                + ([np.array(seed, dtype=np.int64)] if layout["has_dropout"] else [])
                + [t.detach() for t in inputs] + list(layout["tangents"]))

    def _next_seed(self):
        self.calls += 1
        return (self.seed * 1000003 + self.calls) & 0x7FFFFFFFFFFFFFFF

    @staticmethod
    def _update_buffers(layout, updated, backward):
        update_buffers(layout["updated"], updated, layout["norms"],
                       layout["bn_updates"] if backward else {})

    def _run_forward(self, variant, inputs):
        """The compiled forward: (the run holding the saved values, the
        outputs as tensors)."""
        layout = variant.layout
        seed = self._next_seed()
        run = variant.step.forward(self._arguments(variant, inputs, seed), seed=seed)
        self.last_peak_bytes = run.peak_bytes
        nupdated = len(layout["updated"])
        self._update_buffers(layout, [run.result(1 + i) for i in range(nupdated)],
                             backward=True)
        outputs = tuple(torch.from_numpy(run.result(i)) for i in layout["outputs"])
        return run, outputs

    def _run_backward(self, variant, run, grad_outputs):
        """The compiled backward on `run`'s saved values (read in C) with
        the outputs' gradients in the tangents' places; the saved values
        are freed after it. The gradients of the inputs, then of the
        parameters."""
        layout, step = variant.layout, variant.step
        args = [None] * step.num_saved + [np.array(1.0, dtype=np.float32)]
        for i, g in enumerate(grad_outputs):
            positions = variant.tangent_saved[i]
            if not positions:
                continue  # (the output depends on nothing that needs a gradient)
            if g is None:
                g = torch.zeros(step.backward_arguments[positions[0]][1], dtype=torch.float32)
            g = g.detach().to(torch.float32).contiguous()
            for k in positions:
                args[k] = g
        # (Its peak counts the saved values it holds, as act.compile's does.)
        grads = step.backward_of(run, args)
        self.last_peak_bytes = max(self.last_peak_bytes, grads.peak_bytes)
        self.peak_bytes = max(self.peak_bytes, self.last_peak_bytes)
        values = [torch.from_numpy(g) for g in grads.results]
        input_grads = [None] * layout["ninputs"]
        param_grads = []
        for k, g in enumerate(values[:len(layout["params"])]):
            inputs_at = layout["param_inputs"].get(k)
            if inputs_at is not None:
                input_grads[inputs_at] = g
            else:
                param_grads.append(None if k in layout["without_gradient"] else g)
        return input_grads + param_grads

    def forward(self, *inputs):
        wrong = not_tensors("inputs", inputs)
        if wrong:
            raise TypeError(f"act.Module: {wrong}")
        inputs = tuple(t.contiguous() for t in inputs)
        require_cpu("act.Module", inputs)
        with torch.autocast("cpu", enabled=False):
            variant = self._variant(inputs)
        layout = variant.layout
        self.saved_bytes = variant.saved_bytes
        params = layout["trainable"]
        needs = torch.is_grad_enabled() and (any(t.requires_grad for t in inputs)
                                             or any(p.requires_grad for p in params))
        if not needs:
            return self._forward_only_call(variant, inputs)
        outputs = _Apply.apply(self, variant, len(inputs), *inputs, *params)
        return outputs[0] if len(outputs) == 1 else outputs

    def _forward_only_call(self, variant, inputs):
        step = self._forward_only(variant)
        layout = variant.layout
        seed = self._next_seed()
        run = step.run(self._arguments(variant, inputs, seed), seed=seed)
        self.last_peak_bytes = run.peak_bytes
        nupdated = len(layout["updated"])
        self._update_buffers(layout, [run.result(1 + i) for i in range(nupdated)],
                             backward=False)
        outputs = tuple(torch.from_numpy(run.result(i))
                        for i in range(1 + nupdated, run.num_results))
        return outputs[0] if len(outputs) == 1 else outputs


def _inputs(value):
    wrong = not_tensors("example_inputs", value)
    if wrong:
        raise TypeError(f"act.Module: {wrong}")
    return tuple(t.contiguous() for t in tensors_of(value))

