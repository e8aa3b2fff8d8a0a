"""act.compile: a compiled, compressed training step inside an ordinary
PyTorch loop.

    step = act.compile(model, loss_fn, example_inputs, example_targets,
                       encoding="#act.quant<bits=4>")
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        loss = step(x, y)          # forward + backward, saved activations encoded
        optimizer.step()

A model and batch on a CUDA device run a step compiled for that device
(act-gpu-pipeline, cuBLAS/cuDNN), on CUDA tensors read in place and queued
on PyTorch's current stream; docs/Training.md, "act.compile on a GPU".

The step is exported (act.export: AOTAutograd with PyTorch's decompositions),
act-insert-encode-decode inserts the encodings, and the C API
(libActCAPI.so, act.capi) compiles it once. A call reads the parameters,
buffers and batch in place, runs forward and backward, writes the gradients
into the parameters' .grad (a view of the step's result, no copy, when .grad
is None; added to it otherwise, as autograd accumulates), copies BatchNorm's
updated running statistics into the module's buffers (and counts
num_batches_tracked), and returns the loss. Every call draws new seeds for
stochastic rounding and dropout. Batches of another size than the first
(the last, partial one, evaluation batches) share one step exported and
compiled for every batch size (a `?` batch dimension, export/dynamic.py),
where the step can be exported so (dynamic_batch=False: one step per size);
other shapes compile once more and are cached by shape; so is a change
of mode (model.train() / eval(), a BatchNorm's own .eval()), of which
parameters require gradients (unfreezing), or of the parameters themselves
(a replaced layer).

GACT's adaptive loop (average_bits= with adapt_interval=N): every N calls
the sensitivities are measured again (act-run's estimator, in process
through the C API) on the newest training batch and the current
parameters (the last adapt_batches batches give the gradient variance),
act-allocate-bits re-allocates the budget, and the step compiled for the new allocation (cached by
allocation) takes over. Every (re-)allocation is logged in
`step.adaptations` with its bits per tensor, predicted and gradient
variance and GACT's variance alert; `step.adapt_seconds` is its cost,
`step.adapt_overhead_seconds` the part a step with a fixed encoding does
not pay (all but the first allocation's compile of its step). A
re-allocation that changes nothing makes the next one wait adapt_backoff
times longer (at most ADAPT_BACKOFF_LIMIT intervals).
"""

import collections
import copy
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
import weakref

import numpy as np
import torch
import torch.nn.functional as F

from . import capi, driver
from .ahead import Ahead
from .export import Exporter, Traced, external_modules, header
from .export.dynamic import DynamicBatchError, batch_symbols, other_batch
from .mlir import Sym
from .workload import Workload, not_tensors, rebuilt, tensors_of
from .tune import allocate, measuring_step


def _saved_ids(include):
    """include= as sorted unique saved-value ids (non-negative integers),
    or a ValueError that names include=."""
    if isinstance(include, (str, bytes)) or not hasattr(include, "__iter__"):
        raise ValueError(f"include= is a list of saved-value ids (integers from "
                         f"step.report), not {include!r}")
    ids = set()
    for i in include:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
            raise ValueError(f"include= is a list of saved-value ids (non-negative "
                             f"integers from step.report); got {i!r}")
        ids.add(int(i))
    return tuple(sorted(ids))


class Step:
    def __init__(self, module, loss_fn, encoding=None, seed=0, work_dir=None, average_bits=None,
                 measure_bits=4, few_bit=0, compute_bits=None, adapt_interval=0,
                 adapt_batches=2, keep_work_dir=False, include=None, dynamic_batch=True,
                 compile_ahead=None, runtime_bits=None, recompute_cost=0, loss_head=None,
                 adapt_backoff=2, sensitivity="variance", cuda_graphs=False, stats="f32"):
        _refuse_wrappers(module)
        if encoding is not None and average_bits is not None:
            raise ValueError("give encoding= or average_bits=, not both")
        if include is not None:
            include = _saved_ids(include)
            if not include or encoding in (None, "none") or average_bits is not None:
                raise ValueError("include= names the saved values (ids of step.report) that "
                                 "encoding= applies to: at least one id, with an encoding")
        self.include = include
        if adapt_interval and average_bits is None:
            raise ValueError("adapt_interval= re-allocates average_bits=; give average_bits=")
        if adapt_interval < 0 or adapt_batches < 1:
            raise ValueError("adapt_interval must be >= 0 and adapt_batches >= 1")
        if (isinstance(adapt_backoff, bool) or not isinstance(adapt_backoff, int)
                or adapt_backoff < 1):
            raise ValueError(f"adapt_backoff= is an integer >= 1 (1: re-allocate every "
                             f"adapt_interval calls), got {adapt_backoff!r}")
        # GACT's adaptive loop: re-measure and re-allocate every
        # adapt_interval calls (on the newest batch); after a
        # re-allocation that changed nothing, adapt_backoff times later
        # (up to ADAPT_BACKOFF_LIMIT intervals), after one that moved,
        # adapt_interval calls later again.
        self.adapt_interval, self.adapt_batches = adapt_interval, adapt_batches
        self.adapt_backoff = adapt_backoff
        # shapes -> (the call of that shape that re-allocates next, its
        # interval): intervals count a shape's own calls, so that an epoch's
        # last, partial batch (its own shape, once an epoch) is not
        # re-estimated at every appearance.
        self._next_adapt = {}
        self._shape_calls = collections.Counter()  # shapes -> its training calls so far
        # The current call's index among its shape's (0 before the first
        # call too: act.compile's example batch allocates ahead of it).
        self._shape_call = 0
        # Re-allocation without recompiling: the allocation's #act.quant and
        # f32 choices placed as #act.runtime_quant, so that a later
        # allocation of the same families only sets the step's widths.
        # True: from the first allocation; None (default): from the first
        # re-allocation that moves (the first compile stays #act.quant's,
        # 2-3x quicker); False: never.
        if runtime_bits and average_bits is None:
            raise ValueError("runtime_bits= places average_bits='s allocation; give average_bits=")
        self.runtime_bits = runtime_bits
        self._runtime_shapes = set()  # shapes whose allocations are placed with run-time widths
        self._widths = {}  # shapes -> the allocation's run-time widths {id: bits}
        # compiled's key -> (its memory report, the widths its step was last
        # given, its saved bytes at them)
        self._widths_set = {}
        self.adaptations = []  # one entry per (re-)allocation, in order
        self.adapt_seconds = 0.0  # measuring, allocating, compiling new allocations
        # What adapting cost beyond what any step costs: adapt_seconds less
        # the first allocation's compile of its step (a step with a fixed
        # encoding compiles one too).
        self.adapt_overhead_seconds = 0.0
        self._compiled_how = None  # how the last step was compiled: "here", "ahead"
        self.step_seconds = 0.0  # running the compiled steps
        self._recent = {}  # shapes -> the last adapt_batches batches of that shape
        if few_bit and average_bits is None and encoding in (None, "none"):
            raise ValueError("few_bit= goes with a lossy encoding= (the values it does "
                             "not apply to get that encoding) or with average_bits= (few-bit "
                             "codes become the allocator's choice per tensor)")
        if not 0 <= few_bit <= 8 or (average_bits is not None and few_bit > 4):
            raise ValueError(f"few_bit must be in 0..8 (0..4 with average_bits=), got {few_bit}")
        self.few_bit = few_bit
        # Cheap saved values recomputed in the backward instead of stored
        # (act-insert-encode-decode's and act-allocate-bits' recompute-cost).
        if (isinstance(recompute_cost, bool) or not isinstance(recompute_cost, (int, float))
                or not recompute_cost >= 0 or recompute_cost == float("inf")):
            raise ValueError(f"recompute_cost= is a non-negative number of operations per "
                             f"byte, got {recompute_cost!r}")
        if recompute_cost and average_bits is not None and few_bit:
            raise ValueError("recompute_cost= with average_bits= does not combine with "
                             "few_bit= yet (a recomputed value may read the tensor the "
                             "few-bit codes would replace); give one or the other")
        self.recompute_cost = recompute_cost
        # The loss head's encoding (act-insert-encode-decode's and
        # act-allocate-bits' loss-head; the attribute is checked there).
        if loss_head is not None and not isinstance(loss_head, str):
            raise ValueError(f"loss_head= is an act encoding such as "
                             f"'#act.float<format = bf16>', got {loss_head!r}")
        self.loss_head = loss_head
        # What GACT's sensitivities measure: "variance" (GACT's seed
        # re-draws) or "error" (each tensor alone against the step without
        # compression, its bias included; the measuring step then takes
        # run-time widths).
        if sensitivity not in ("variance", "error"):
            raise ValueError(f"sensitivity= is 'variance' or 'error', got {sensitivity!r}")
        if stats not in ("f32", "bf16"):
            raise ValueError(f"stats= is 'f32' or 'bf16' (the allocation's group statistics), "
                             f"not {stats!r}")
        if stats != "f32" and average_bits is None:
            raise ValueError("stats= stores average_bits='s #act.quant statistics; give "
                             "average_bits= (a fixed encoding says it itself: "
                             "#act.quant<bits=2, stats=bf16>)")
        self.stats = stats
        if sensitivity != "variance" and average_bits is None:
            raise ValueError("sensitivity= measures for average_bits='s allocation; "
                             "give average_bits=")
        self.sensitivity = sensitivity
        self.cuda_graphs = cuda_graphs
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
        self._exports = {}  # shapes -> (name, exported joint graph, argument layout)
        # Batches of another size than the first (the partial last batch,
        # evaluation batches) share one step exported for every batch size,
        # per mode ({mode: its data's shape pattern, or None: refused}).
        self.dynamic_batch = dynamic_batch
        self._dynamic = {}
        self._refusals = {}  # mode -> why its step for every batch size was refused
        self.dynamic_refused = None  # why the step cannot serve every batch size
        # After the first step of a training mode compiles, the steps for
        # every batch size that the loop will want next (its partial last
        # batch; evaluation under no_grad in eval mode) are exported here
        # and compiled by a background process (act/ahead.py).
        if compile_ahead is None and os.environ.get("ACT_COMPILE_AHEAD") == "0":
            compile_ahead = False
        self.compile_ahead = compile_ahead  # None: where the first compile was slow
        self._ahead_modes = set()  # training modes whose next steps were started
        self._prepared = {}  # compiled's key -> (name, graph to compile), lowered ahead
        self._ahead = {}  # graph to compile -> the background process compiling it
        self._workers = []  # every background process started
        self._fresh = None  # (shapes, Traced) of the last static export, until ahead reuses it
        self._lowered = 0  # variants lowered (their files' numbers)
        self._main_batch = None  # the first batch's size
        self._per_example = {}  # encoding -> saved bytes (before, after) per example
        self._allocated = {}  # shapes -> (tuned graph, allocation signature)
        self._measuring = {}  # shapes -> the compiled step that measures sensitivities
        self._exact = {}  # shapes -> the step without encodings (few-bit codes' reference)
        self._in_use = {}  # shapes -> the allocation in use (its report's tensors, as set)
        self._runtime_keys = {}  # shapes -> the key of its step with run-time widths
        self.variant = None  # the key of the compiled variant in use
        self.seed = seed
        self.calls = 0
        self.records = {}  # the last call's act.export.record values
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="act-compile-")
        os.makedirs(self.work_dir, exist_ok=True)  # a work_dir given may not exist yet
        # A directory act made is removed with the step (or at exit); one
        # the caller named, or keep_work_dir=True / ACT_KEEP_WORK_DIR=1, stays.
        # Background compiles stop then too.
        remove = not (work_dir or keep_work_dir or os.environ.get("ACT_KEEP_WORK_DIR"))
        weakref.finalize(self, _clean_up, self._workers, self.work_dir if remove else None)
        # (shapes, compute_bits, encoding) -> (CompiledStep, layout, saved bytes)
        self.compiled = {}
        self.last_peak_bytes = 0
        self.peak_bytes = 0  # the most any call's step had allocated at once
        # (before, after) encoding, act's memory report, of the last call's
        # variant, and summed over calls (PFQ and partial batches change them).
        self.saved_bytes = None
        self.saved_sum = [0, 0]
        self.report = None  # act's memory report of the last variant compiled (JSON)
        # Modules outside `module` that the loss or the model reach by name
        # (a criterion with weights, a GAN's discriminator): their
        # parameters and buffers are the step's too (Traced), and their
        # training flags part of the cache key.
        self.externals = [m for _, m in external_modules(Workload("", module, None, None, loss_fn))]
        self.batch_norms = [m for top in [module] + self.externals for m in top.modules()
                            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                            and m.num_batches_tracked is not None]
        # Where the model is (the CPU, or one CUDA device: checked when a
        # step is traced, the batch against it at every call).
        self.device = None

    def _shapes(self, inputs, targets):
        """The cache key of a batch: its tensors' shapes and dtypes (inputs
        and targets may each be a tensor or a tuple of tensors), then the
        modules' training flags and the parameters (which, and whether each
        requires a gradient): a step traced under model.train() (batch
        statistics, dropout) does not serve model.eval() or a BatchNorm
        frozen by its own .eval(), one traced with a layer frozen does not
        train it once unfrozen, and a replaced layer's new parameters are
        not the old ones the step reads; nor one traced on the CPU a model
        moved to a GPU. Any such change exports and compiles once more, as
        torch.compile's guards do."""
        return tuple((isinstance(v, (tuple, list)),
                      tuple((tuple(t.shape), str(t.dtype)) for t in tensors_of(v)))
                     for v in (inputs, targets)) + (
                         tuple(m.training for top in [self.module] + self.externals
                               for m in top.modules()),
                         tuple((id(p), p.requires_grad) for top in [self.module] + self.externals
                               for p in top.parameters()),
                         str(_module_device(self.module)))

    def _key(self, inputs, targets, forward_only=False):
        """The cache key of this batch's step, exporting the step on first
        use: the batch's shapes (_shapes), for a batch of the first batch's
        size; for one of any other size, the key of the step exported for
        every batch size (_dynamic_key), where the step can be exported so.
        forward_only: a batch of the first batch's size too takes the step
        for every batch size of its mode where that was exported (ahead)
        and its own was not."""
        shapes = self._shapes(inputs, targets)
        if shapes in self._exports:
            return shapes
        data = tensors_of(inputs) + tensors_of(targets)
        first = data[0].shape[0] if data and data[0].dim() else None
        if self._main_batch is None:
            self._main_batch = first
        elif first != self._main_batch or (forward_only
                                           and self._dynamic.get(shapes[2:]) is not None):
            key = self._dynamic_key(inputs, targets, shapes)
            if key is not None:
                return key
        traced = self._trace(inputs, targets)
        self._exports[shapes] = self._write(traced, Exporter(traced), lambda ex: ex.joint())
        self._fresh = (shapes, traced)
        return shapes

    def _export(self, inputs, targets):
        """The step's joint graph for this batch (exported once)."""
        return self._exports[self._key(inputs, targets)]

    def _trace(self, inputs, targets, real_tensors=False, checked=True):
        self.device = placement("act.compile's step", (), self.module)
        module, inputs, targets = self._traced_module(inputs, targets)
        # Tracing leaves the module's buffers alone (it substitutes copies).
        traced = Traced(Workload(f"step{len(self._exports)}", module, inputs, targets,
                                 self.loss_fn), self.seed, real_tensors, checked)
        if traced.external and not self._exports:
            sizes = sorted({tuple(p.shape) for p in traced.external.values()})
            warnings.warn(
                f"act.compile: the step reads {len(traced.external)} parameters or buffers of "
                f"modules it does not reach by name (shapes {', '.join(map(str, sizes[:4]))}"
                f"{', ...' if len(sizes) > 4 else ''}; held by an object that is not a module): "
                f"their current values are read at every call, but their gradients are not "
                f"computed and their running statistics not updated; name the module in the "
                f"loss or the model's code (a global or a closure variable)",
                stacklevel=_outside_act())
        return traced

    def _write(self, traced, ex, joint):
        """Writes the joint form (joint(ex): its text) into the work
        directory: (name, path, argument layout)."""
        name = f"step{len(self._exports)}"
        text = joint(ex)
        src = os.path.join(self.work_dir, f"{name}.mlir")
        with open(src, "w") as f:
            f.write(header(name, "joint", ["act.compile"]) + text)
        layout = {
            **self._on_device(step_layout(traced, ex), traced),
            "records": list(traced.record_names),
            # BatchNorms that a torch.utils.checkpoint region runs again in
            # the backward: eager updates their statistics that many times.
            "bn_updates": {id(self.module.get_submodule(name)): k
                           for name, k in traced.bn_updates.items()},
        }
        return name, src, layout

    def _traced_module(self, inputs, targets):
        """What a step is traced on: the model and the batch on the CPU;
        for a model on a GPU, a CPU copy of it and of the batch (the trace
        runs eager and float64 references there), whose tensors _on_device
        maps back to the model's by name."""
        if self.device.type == "cpu":
            return self.module, inputs, targets
        if self.device.index not in (None, 0):
            raise ValueError(f"act.compile's step: the model is on {self.device}; act's steps run "
                             f"on CUDA device 0 (cuda:0) for now: move it there, or make the GPU "
                             f"device 0 with CUDA_VISIBLE_DEVICES")
        if self.externals:
            raise ValueError(
                "act.compile's step: the loss or the model reach modules outside the model "
                "by name; on a GPU act compiles only the model's own parameters (train on "
                "the CPU, or make those modules part of the model)")
        return copy.deepcopy(self.module).cpu(), _to_cpu(inputs), _to_cpu(targets)

    def _on_device(self, layout, traced):
        """A layout of a step traced on a copy of the model (_traced_module)
        in terms of the model's own tensors (by name), its large constants
        on the model's device; as it is otherwise."""
        if traced.workload.module is self.module:
            return layout
        own = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        of = {id(t): own[n] for n, t in zip(traced.param_names + traced.buffer_names,
                                            traced.params + traced.buffers)}
        return {**layout,
                "params": [of[id(t)] for t in layout["params"]],
                "buffers": [of[id(t)] for t in layout["buffers"]],
                "updated": [of[id(t)] for t in layout["updated"]],
                "constants": [torch.as_tensor(c).to(self.device) for c in layout["constants"]]}

    def _dynamic_wanted(self):
        """Whether batches may share a step for every batch size: not with
        dynamic_batch=False, nor average_bits=, few_bit= and compute_bits=,
        whose choices are made per shape."""
        return (self.dynamic_batch and self.average_bits is None and not self.few_bit
                and self.compute_bits is None)

    def _dynamic_key(self, inputs, targets, shapes, traced=None, ahead=False):
        """The key of the step exported for every batch size in this mode
        (exported on first use: two traces, export/dynamic.py; `traced`, a
        trace of this batch, is the first), if this batch fits it; None
        where it does not, where such a step cannot be exported
        (dynamic_refused says why; warned once, when a batch needs it, not
        when exported `ahead`) or is not wanted (_dynamic_wanted)."""
        if not self._dynamic_wanted():
            return None
        mode = shapes[2:]
        if mode not in self._dynamic:
            self._dynamic[mode] = self._export_dynamic(inputs, targets, mode, traced)
        pattern = self._dynamic[mode]
        if pattern is None:
            if not ahead and mode in self._refusals:
                self._refuse_dynamic(self._refusals.pop(mode))
            return None
        n = _batch_of(pattern, shapes)
        if n is None or (n == 1 and any(m.training for m in self.batch_norms)):
            # (BatchNorm at a batch of 1: PyTorch's trace refuses what it
            # refuses, a 2-d input, as eager does.)
            return None
        return (EVERY_BATCH_SIZE, pattern) + mode

    def _export_dynamic(self, inputs, targets, mode, traced=None):
        """Exports the step for every batch size in this mode from this
        batch's examples, repeated to two sizes and traced at both
        (export/dynamic.py; `traced`, a trace of this batch, is the first
        where the batch has 2 examples or more); its key goes into
        _exports. Returns the shape pattern of its data (static dims, and
        -k for k * N), or None where it is refused (_refusals[mode] says
        why)."""
        def refused(reason):
            self._refusals[mode] = reason
            return None
        data = tensors_of(inputs) + tensors_of(targets)
        if any(t.dim() == 0 for t in data) or len({t.shape[0] for t in data}) != 1:
            return refused("its inputs and targets do not all have the batch as their first "
                           "dimension")
        batch = data[0].shape[0]
        size = max(batch, 2)  # (PyTorch specializes dims of size 1)

        def resized(value, n):  # the batch's examples, repeated to n of them
            index = torch.arange(n) % batch
            return rebuilt(value, [t.index_select(0, index.to(t.device))
                                   for t in tensors_of(value)])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if traced is None or size != batch:
                    traced = self._trace(resized(inputs, size), resized(targets, size))
                traces = [traced]
                # (Both real or both shapes only: the fake tensors' shapes
                # of some results differ from the real kernels', eval-mode
                # BatchNorm's saved statistics. The first trace checked
                # PyTorch's trace on the same first examples.)
                n = other_batch(size)
                traces.append(self._trace(resized(inputs, n), resized(targets, n),
                                          real_tensors=not traces[0].shapes_only,
                                          checked=False))
            spec = batch_symbols(traces[0], traces[1], size)
            exporter = Exporter(traces[0])
            exporter.name = f"step{len(self._exports)}"  # (a trace reused keeps its own)
            exported = self._write(traces[0], exporter, lambda ex: ex.dynamic(spec, size))
        except DynamicBatchError as e:
            return refused(str(e))
        except Exception as e:  # (a model that runs at some batch sizes only)
            return refused(f"tracing it at batches {size} and {other_batch(size)} failed with "
                           f"{type(e).__name__}: {e}")
        t = traces[0]
        shapes = [ph.meta["act_shape"] for ph in t.fw_placeholders[len(t.fw_placeholders)
                                                                      - t.n_data:]]
        pattern = (tuple((isinstance(v, (tuple, list)), len(tensors_of(v)))
                         for v in (inputs, targets)),
                   tuple((tuple(-d.k if isinstance(d, Sym) else int(d) for d in shape),
                          str(x.dtype)) for shape, x in zip(shapes, data)))
        self._exports[(EVERY_BATCH_SIZE, pattern) + mode] = exported
        return pattern

    def _refuse_dynamic(self, reason):
        self.dynamic_refused = reason
        warnings.warn(f"act.compile: each batch size other than the first compiles a step of "
                      f"its own: the step cannot be exported for every batch size ({reason})",
                      stacklevel=_outside_act())
        return None

    def _compile(self, inputs, targets):
        shapes = self._key(inputs, targets)
        if self.average_bits is not None:
            if shapes not in self._allocated:
                self._allocate(shapes, [(inputs, targets)])
            mlir, variant = self._allocated[shapes]
        else:
            mlir, variant = None, self.encoding
        key = shapes + (self.compute_bits, variant)
        self.variant = key  # the compiled variant in use
        if key in self.compiled:
            return self._at_widths(shapes, key)
        if not self._compile_variant(shapes, key, mlir, variant if isinstance(variant, str)
                                     else "allocated bits"):
            return self._compile(inputs, targets)
        return self._at_widths(shapes, key)

    def _compile_variant(self, shapes, key, mlir, what):
        """Compiles the variant `key` of the step exported for `shapes` (its
        graph lowered ahead, else `mlir`, average_bits' placement, lowered
        now) into self.compiled, with its memory report (the saved bytes
        before and after); False where _compile_file refused it."""
        name, src, layout = self._exports[shapes]
        name, mlir = self._prepared.pop(key, None) or self._lower(name, src, mlir)
        step = self._compile_file(mlir, shapes, f"compiling {name} ({_describe(shapes)}, {what})")
        if step is None:
            return False
        report = driver.memory_report(mlir, os.path.join(self.work_dir, f"{name}_report.json"))
        self.report = report  # the last compiled variant's (docs/MemoryReport.md)
        if self.include:
            ids = {t["id"] for g in report["graphs"] for t in g["saved"]}
            unknown = [i for i in self.include if i not in ids]
            if unknown:
                raise ValueError(
                    f"include= names saved values {unknown} that this step does not have "
                    f"(its saved values are ids 0..{len(ids) - 1}: step.report)")
        totals = report["graphs"][0]["totals"]
        self.compiled[key] = (step, layout,
                              (totals["saved_bytes_before"], totals["saved_bytes_after"]))
        self._widths_set[key] = (report, step.bits, self.compiled[key][2])  # (as planned)
        return True

    def _at_widths(self, shapes, key):
        """The compiled entry of `key` with the allocation's run-time widths
        for `shapes` set, and its saved bytes at them (both once per change
        of widths, not per call)."""
        step, layout, saved = self.compiled[key]
        widths = self._widths.get(shapes) if self.average_bits is not None else None
        if not widths or key not in self._widths_set:
            return self.compiled[key]
        report, current, at = self._widths_set[key]
        if current != widths:
            step.set_bits(widths)
            after = saved[1]
            for t in report["graphs"][0]["saved"]:
                if t["id"] in widths and t["encoding"].startswith("#act.runtime_quant"):
                    group = re.search(r"group = (\d+)", t["encoding"])
                    after += (_runtime_quant_bytes(t["shape"], widths[t["id"]],
                                                   int(group.group(1)) if group else 256,
                                                   "stats = bf16" in t["encoding"])
                              - t["bytes_after"])
            at = (saved[0], after)
            self._widths_set[key] = (report, dict(widths), at)
        return step, layout, at

    def _lower(self, name, src, mlir=None):
        """The graph to compile for the exported step `src` in the current
        variant (`mlir`: average_bits='s, allocated), and its name: the
        encodings inserted, FracTrain's compute quantization applied."""
        name = f"{name}_v{self._lowered}"
        self._lowered += 1
        if self.average_bits is None:
            # "lossless": Gist's lossless encodings only (sign masks, narrow
            # indices, sparse storage of values with structural zeros).
            options = driver.insertion_options(self.encoding, self.few_bit, self.include,
                                               self.recompute_cost, self.loss_head)
            mlir = driver.insert(src, os.path.join(self.work_dir, f"{name}_encoded.mlir"),
                                 options)
        if self.compute_bits is not None:
            fw, bw = self.compute_bits
            report = os.path.join(self.work_dir, f"{name}_cost.json")
            quantized = os.path.join(self.work_dir, f"{name}_compute.mlir")
            driver.passes(mlir, quantized, "act-quantize-compute",
                          f"forward-bits={fw} backward-bits={bw} "
                          f"report={driver.option_value(report)}")
            with open(report) as f:
                self.cost[self.compute_bits] = json.load(f)["totals"]
            mlir = quantized
        return name, mlir

    def _compile_file(self, mlir, shapes, what):
        """The compiled step of the graph `mlir`, exported for `shapes`
        (`what` it is, for the progress output): loaded from the code cache
        where a background process compiled it ahead (waiting for it if it
        has not finished), else compiled here. None where a step for every
        batch size fails to compile (a lowering act has for static sizes
        only): refused for its mode, so that the caller's next try compiles
        a step for the batch's size."""
        try:
            ahead = self._ahead.pop(mlir, None)
            self._compiled_how = "here" if ahead is None else "ahead"
            if ahead is None:
                with _progress(what):
                    step = capi.CompiledStep.from_file(mlir, device=self.device.type)
                if self.cuda_graphs and step.device == "cuda":
                    try:
                        step.set_graphs(True)
                    except capi.ActError as e:
                        warnings.warn(f"act.compile: {str(e).strip()}; this step runs "
                                      f"without CUDA graphs")
                return step
            if not ahead.done(mlir):
                with _progress(f"{what}, compiling in the background", after=1.0):
                    while not ahead.done(mlir):
                        time.sleep(0.02)
            with capi.cache_dir(ahead.cache), _progress(what):
                return capi.CompiledStep.from_file(mlir)
        except capi.ActError as e:
            if shapes[0] != EVERY_BATCH_SIZE:
                raise
            self._dynamic[shapes[2:]] = None
            self._refuse_dynamic(f"compiling it failed: {str(e).strip().splitlines()[0]}")
            return None

    def _lower_forward_only(self, shapes):
        """The forward-only graph (act-forward-only) of the exported step
        of `shapes`: the loss, the updated buffers and the records kept."""
        name, src, layout = self._exports[shapes]
        nparams, nupdated = len(layout["params"]), len(layout["updated"])
        keep = [0] + list(range(1 + nparams, 1 + nparams + nupdated + len(layout["records"])))
        mlir = os.path.join(self.work_dir, f"{name}_forward_only.mlir")
        driver.passes(src, mlir, "act-forward-only", "keep=" + ",".join(map(str, keep)))
        return mlir

    def _compile_ahead(self, inputs, targets, seconds):
        """After the first step of a training mode compiles (compile_ahead;
        by default where exporting and compiling it took `seconds` >=
        AHEAD_AFTER, so that compiling the others later would be a wait):
        the steps the loop will want next, exported and lowered here and
        compiled by a background process into the code cache (act/ahead.py;
        with the cache off, a cache of the work directory's): the step for
        every batch size in this mode (the partial last batch), and the
        forward-only step for every batch size in eval mode (evaluation
        under torch.no_grad() after model.eval()). Where either cannot be
        exported, nothing is said until a batch needs it."""
        if self._fresh is None or not torch.is_grad_enabled():
            return  # (no step was exported since the last time)
        fresh, self._fresh = self._fresh, None
        shapes = self._shapes(inputs, targets)
        mode = shapes[2:]
        if (self.compile_ahead is False or not self._dynamic_wanted() or mode in self._ahead_modes
                or self.device.type != "cpu"):  # (the code cache is the CPU's)
            return
        self._ahead_modes.add(mode)
        if self.compile_ahead is None and seconds < AHEAD_AFTER:
            return
        graphs = []
        key = self._dynamic_key(inputs, targets, shapes, ahead=True,
                                traced=fresh[1] if fresh and fresh[0] == shapes else None)
        # (Ahead is only ahead: a step that fails to lower or compile here
        # is left to the batch that needs it, which reports the error.)
        if key is not None:
            key += (self.compute_bits, self.encoding)
            if key not in self.compiled and key not in self._prepared:
                name, src, _ = self._exports[key[:-2]]
                try:
                    self._prepared[key] = self._lower(name, src)
                    graphs.append(self._prepared[key][1])
                except driver.ToolError:
                    pass
        # Eval mode: every module's training flag off while it is traced.
        modules = [m for top in [self.module] + self.externals for m in top.modules()]
        flags = [m.training for m in modules]
        try:
            for m in modules:
                m.training = False
            eval_shapes = self._shapes(inputs, targets)
            key = self._dynamic_key(inputs, targets, eval_shapes, ahead=True,
                                    traced=fresh[1] if fresh and fresh[0] == eval_shapes
                                    else None)
        finally:
            for m, flag in zip(modules, flags):
                m.training = flag
        if key is not None:
            key += ("forward-only",)
            if key not in self.compiled and key not in self._prepared:
                try:
                    mlir = self._lower_forward_only(key[:-1])
                    self._prepared[key] = (self._exports[key[:-1]][0], mlir)
                    graphs.append(mlir)
                except driver.ToolError:
                    pass
        if graphs:
            self._start_ahead(graphs)

    def _start_ahead(self, graphs):
        """A background process compiling `graphs` (lowered .mlir files)
        into the code cache (with the cache off, the work directory's), for
        _compile_file to load from; none where no process can start (they
        are then compiled when needed)."""
        cache = capi.get_cache_dir() or os.path.join(self.work_dir, "code-cache")
        try:
            worker = Ahead(graphs, cache)
        except OSError:
            return
        self._workers.append(worker)
        self._ahead.update((g, worker) for g in graphs)

    def _allocate(self, shapes, batches):
        """GACT's allocation for this batch shape, as act-tune makes it:
        sensitivities measured in process (act-run's estimator through the
        C API, the measuring step compiled once per shape) on `batches` (the first with the
        current parameters and buffers, the others replacing its inputs and
        targets) at measure_bits, bits chosen by act-allocate-bits for the
        average budget. The loss head (logits' bias, softmax, the loss) stays
        f32: measured into the budget, it got 4 bits and a bias training
        does not survive (docs/Training.md). Logged in self.adaptations."""
        name, src, layout = self._exports[shapes]
        tag = f"{name}_a{len(self.adaptations)}"
        began = time.perf_counter()
        if shapes not in self._measuring:
            # The step with every tensor stochastically quantized at
            # measure_bits (the loss head f32), compiled once per shape and
            # run in process (the C API) at every re-estimation.
            # (the error estimate switches each tensor's compression off
            # through its run-time width: 32)
            encoding = (f"#act.runtime_quant<[{self.measure_bits}, 32], bits = "
                        f"{self.measure_bits}>" if self.sensitivity == "error" else None)
            measured = measuring_step(src, os.path.join(self.work_dir, f"{name}_measure.mlir"),
                                      self.measure_bits, recompute_cost=self.recompute_cost,
                                      loss_head_encoding=self.loss_head, encoding=encoding)
            self._measuring[shapes] = capi.CompiledStep.from_file(measured)
        # The current parameters and buffers (read in place) with each
        # batch's inputs and targets.
        first = self._arguments(layout, batches[0][0], batches[0][1], self.seed)
        data = len(tensors_of(batches[0][0])) + len(tensors_of(batches[0][1]))
        lists = [first] + [first[:-data] + [t.detach() for t in tensors_of(inputs)
                                            + tensors_of(targets)]
                           for inputs, targets in batches[1:]]
        if self.device.type != "cpu":
            # Measured on the CPU (the estimator reads gradients there): a
            # copy of the parameters and batches per re-estimation, none
            # per step.
            lists = [[a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
                     for args in lists]
        profile = os.path.join(self.work_dir, f"{tag}_profile.json")
        # act-run's default step seed (1): the estimator's streams. The
        # per-tensor sensitivities are the newest batch's (GACT's Alg. 1:
        # L + 1 runs on the current batch); the other recent batches are
        # run once each, for the gradient variance the alert compares with.
        self._measuring[shapes].estimate_sensitivity(lists, profile, seed=1,
                                                     estimator=self.sensitivity,
                                                     per_tensor_batches=1)
        profiles = [profile]
        if self.few_bit:
            # Few-bit codes as the allocator's other family: their gradient
            # error against the step without encodings (variants compiled
            # once per shape, in the C API).
            profiles.append(os.path.join(self.work_dir, f"{tag}_fewbit.json"))
            try:
                # (Dropout's seed is an argument: the same noise in both.)
                self._exact_step(shapes).estimate_fewbit_sensitivity(lists, profiles[-1],
                                                                self.few_bit)
            except capi.ActError as e:
                if "nothing to store as few-bit codes" not in str(e):
                    raise
                # A model without such values (ReLU's derivative is a sign,
                # stored as a 1-bit mask already): the allocator without
                # the family, said once.
                warnings.warn(f"act.compile: few_bit={self.few_bit} has nothing to encode: no "
                              f"saved value is read only through a smooth activation's "
                              f"derivative (ReLU's sign is stored as a 1-bit mask anyway); the "
                              f"allocation goes on without few-bit codes",
                              stacklevel=_outside_act())
                self.few_bit = 0
                profiles.pop()
        tuned = os.path.join(self.work_dir, f"{tag}_tuned.mlir")
        previous = self._allocated.get(shapes)
        measured_at = time.perf_counter()

        def place(runtime, bits=None):
            _, self.allocation = allocate(src, profiles, self.average_bits, tuned,
                                          os.path.join(self.work_dir, f"{tag}_allocation.json"),
                                          runtime_bits=runtime,
                                          recompute_cost=self.recompute_cost,
                                          loss_head=self.loss_head, bits=bits,
                                          stats=self.stats)
            tensors = self.allocation["tensors"]
            return tensors, _signature(tensors)

        runtime = self.runtime_bits is True or shapes in self._runtime_shapes
        tensors, signature = place(runtime)
        # Uniform bits at equal bytes: the widest width whose placement on
        # every value the allocation can set fits its budget.
        uniform, spent = _uniform_width(self.allocation)
        uniform_first = (previous is None and self._check_on() and uniform is not None
                         and spent >= UNIFORM_FIRST_SPENT)
        if uniform_first:
            # The first allocation, made at initialization, goes stale
            # fast (docs/Tuning.md: 2.6-9.4x uniform bits' gradient error a
            # few hundred steps later): uniform bits until the first
            # re-allocation's check measures the allocator's proposal
            # against them (whose step with run-time widths is compiled
            # ahead from this proposal).
            if runtime:
                tensors = [{**t, "bits": uniform} if t.get("runtime") else t for t in tensors]
            else:
                tensors, signature = place(False, [uniform])
        previous_widths = self._widths.get(shapes)
        held = check = None
        if previous is not None and self._check_on():
            # The whole step decides (ALLOCATION_CHECK_RUNS): the proposal,
            # the widths in use and uniform bits, each measured as the
            # gradient error of the step with run-time widths against the
            # step without encodings.
            began_check = time.perf_counter()
            in_use = {t["id"]: t["bits"] for t in self._in_use[shapes]}

            def candidates_of(tensors):
                proposed = {t["id"]: t["bits"] for t in tensors if _settable(t)}
                found = {"proposed": proposed,
                         "current": {i: in_use.get(i, 32) for i in proposed}}
                if uniform is not None:
                    found["uniform"] = {i: uniform for i in proposed}
                return found
            candidates = candidates_of(tensors)
            if all(c == candidates["current"] for c in candidates.values()):
                # (nothing to choose between: nothing measured, and neither
                # the placement nor the step with run-time widths needed)
                check = {"errors": {}, "runs": ALLOCATION_CHECK_RUNS, "measured": 0}
                best = "current"
            else:
                if not runtime:
                    tensors, signature = place(True)
                    candidates = candidates_of(tensors)  # (the step's own ids)
                step, key = self._runtime_step(shapes, tuned, signature)
                check = self._measure_widths(shapes, step, lists[0], candidates)
                best = min(check["errors"], key=check["errors"].get)
            if (best == "current" or check["errors"][best]
                    > (1 - ADAPT_HYSTERESIS) * check["errors"]["current"]):
                best = "current"
            check.update(chosen=best, seconds=time.perf_counter() - began_check)
            if best == "current":
                # (in use as it is: a static step stays static)
                if candidates["proposed"] != candidates["current"]:
                    held = {"proposed": candidates["proposed"],
                            "proposed_error": check["errors"]["proposed"],
                            "current_error": check["errors"]["current"]}
                signature, tensors = previous[1], self._in_use[shapes]
                widths = previous_widths or {}
            else:
                if not runtime:
                    # (moved: run-time widths from now on, the step compiled)
                    self._runtime_shapes.add(shapes)
                widths = candidates[best]
                tensors = [{**t, "bits": widths[t["id"]]} if t["id"] in widths else t
                           for t in tensors]
        elif (self.runtime_bits is None and self.adapt_interval and not runtime
                and previous is not None and previous[1] != signature):
            # The allocation moved: its step, and every later one's, takes
            # the widths at run time (one compile now, none after).
            self._runtime_shapes.add(shapes)
            tensors, signature = place(True)
        if check is None:
            widths = {t["id"]: t["bits"] for t in tensors if t.get("runtime")}
        if (check is None and previous is not None and previous[1] == signature
                and previous_widths and widths != previous_widths):
            # Other widths only: moved to when they predict clearly less
            # compression variance than the widths in use, both under the
            # new sensitivities (a one-batch estimate's noise would
            # otherwise move widths back and forth, and every move resets
            # the back-off). The quantizer's c_l from the profile (the
            # report gives the chosen family's: 0 where f32 was chosen).
            with open(profile) as f:
                c = {t["id"]: t["sensitivity"] for t in json.load(f)["tensors"]
                     if t.get("encoding", "#act.quant").startswith("#act.quant")}
            proposed, current = _quant_variance(c, widths), _quant_variance(c, previous_widths)
            if proposed > (1 - ADAPT_HYSTERESIS) * current:
                held = {"proposed": widths, "proposed_variance": proposed,
                        "current_variance": current}
                widths = previous_widths
                tensors = [{**t, "bits": widths[t["id"]]} if t["id"] in widths else t
                           for t in tensors]
        if previous is None or previous[1] != signature:
            self._allocated[shapes] = (tuned, signature)
        self._widths[shapes] = widths
        self._in_use[shapes] = tensors
        predicted = self.allocation["predicted_variance"]
        gradient = self.allocation["gradient_variance"]
        alert = None
        if gradient and predicted > 0.1 * gradient:
            # GACT's alert: compression variance above 10% of the gradient's;
            # the tensors that contribute most.
            top = sorted((t for t in tensors if t["variance"] is not None),
                         key=lambda t: -t["variance"])[:3]
            alert = [{"id": t["id"], "bits": t["bits"], "share": t["variance"] / predicted}
                     for t in top]
        self.adaptations.append({
            "call": self.calls, "batches": len(batches),
            # [inputs' shape, targets' shape] (a list of shapes for a tuple)
            "shapes": [[list(shape) for shape, _ in parts] if is_tuple else list(parts[0][0])
                       for is_tuple, parts in shapes[:2]],
            "bits": {str(t["id"]): t["bits"] for t in tensors},
            "encodings": {str(t["id"]): t["encoding"] for t in tensors},
            "predicted_variance": predicted, "gradient_variance": gradient,
            "alert": alert, "changed": previous is not None and previous[1] != signature,
            # (the same families, other widths: set at run time)
            "widths_changed": (previous is not None and previous[1] == signature
                               and previous_widths != widths),
            # (other widths proposed and not taken: ADAPT_HYSTERESIS)
            "held": held,
            # (the whole-step check: each candidate's measured gradient
            # error, the one chosen, its seconds; None where not made)
            "check": check,
            # (the first allocation placed as uniform bits, the allocator's
            # proposal compiled ahead for the first check)
            "uniform_first": uniform_first,
            # (the seconds it took: compiling the measuring step and the
            # estimates; act-allocate-bits' placements; compiling the
            # allocated step, set by _charge)
            "seconds": None, "measure_seconds": measured_at - began, "allocate_seconds": None,
            "compile_seconds": None, "first": previous is None})
        if (previous is None and self.runtime_bits is None and self.adapt_interval
                and not runtime):
            self._runtime_ahead(shapes, src, name, profiles, tag)
        self.adaptations[-1]["allocate_seconds"] = time.perf_counter() - measured_at
        if self.adapt_interval:
            # When the next re-allocation of this shape is due: adapt_interval
            # calls after one that moved (or the first), adapt_backoff times
            # the last interval (at most ADAPT_BACKOFF_LIMIT intervals) after
            # one that changed nothing (GACT: sensitivities settle early in
            # training, so a settled allocation is checked less often).
            entry = self.adaptations[-1]
            interval = self.adapt_interval
            if shapes in self._next_adapt and not (entry["changed"] or entry["widths_changed"]):
                interval = min(self._next_adapt[shapes][1] * self.adapt_backoff,
                               self.adapt_interval * ADAPT_BACKOFF_LIMIT)
            self._next_adapt[shapes] = (self._shape_call + interval, interval)

    def _check_on(self):
        """Whether re-allocations are decided by the whole-step check: with
        the adaptive loop on the CPU, run-time widths allowed and the
        quantizer's family alone (every choice a run-time width); from the
        first re-allocation on (a step with run-time widths to measure on,
        compiled ahead after the first)."""
        return bool(ALLOCATION_CHECK_RUNS > 0 and self.adapt_interval
                    and self.runtime_bits is not False and not self.few_bit
                    and self.device.type == "cpu")

    def _runtime_pending(self, shapes):
        """Whether the whole-step check of `shapes` would wait for its step
        with run-time widths, still compiling in the background: the
        re-allocation then waits instead (tried again at the next calls),
        at most ADAPT_WAIT_LIMIT intervals past when it was due."""
        key = self._runtime_keys.get(shapes)
        if key is None or key in self.compiled or key not in self._prepared:
            return False
        ahead = self._ahead.get(self._prepared[key][1])
        due = self._next_adapt[shapes][0]
        return (ahead is not None and not ahead.done(self._prepared[key][1])
                and self._shape_call < due + ADAPT_WAIT_LIMIT * self.adapt_interval)

    def _runtime_step(self, shapes, tuned, signature):
        """The step of `shapes` with run-time widths (placed in `tuned`,
        of `signature`), and its key: compiled before, loaded from the
        background compile that _runtime_ahead started, or compiled now."""
        key = shapes + (self.compute_bits, signature)
        if key not in self.compiled:
            self._compile_variant(shapes, key, tuned, "run-time widths")
        return self.compiled[key][0], key

    def _measure_widths(self, shapes, step, args, candidates):
        """The gradient error of `step` (run-time widths) at each of
        `candidates` ({name: {id: bits}}) on `args`: the mean squared
        distance of its gradient from the step without encodings' over
        ALLOCATION_CHECK_RUNS step seeds (the same seeds for every
        candidate; equal widths measured once), the step's widths restored
        after."""
        # (equal widths measured once; one run of the reference for all)
        sets = {name: tuple(sorted(w.items())) for name, w in candidates.items()}
        distinct = list(dict.fromkeys(sets.values()))
        measured = dict(zip(distinct, step.measure_errors(
            args, [dict(w) for w in distinct], ALLOCATION_CHECK_RUNS, self._exact_step(shapes),
            seed=1)))
        return {"errors": {name: measured[w] for name, w in sets.items()},
                "runs": ALLOCATION_CHECK_RUNS, "measured": len(measured)}

    def _exact_step(self, shapes):
        """The step exported for `shapes` without encodings (the reference
        of few-bit codes' estimate and of the whole-step check), compiled
        once."""
        if shapes not in self._exact:
            self._exact[shapes] = capi.CompiledStep.from_file(self._exports[shapes][1])
        return self._exact[shapes]

    def _runtime_ahead(self, shapes, src, name, profiles, tag):
        """With the adaptive loop and runtime_bits=None, after the first
        allocation of `shapes`: the same allocation placed with run-time
        widths, compiled by a background process (act/ahead.py) into the
        code cache, so that the first re-allocation that moves (which
        switches to run-time widths) loads it and sets its widths instead of
        compiling (2-3x the plain step's compile) while training waits.
        It serves every later allocation of the same families; one that
        changes a family compiles as before. Not where nothing is compiled
        ahead (compile_ahead=False, a GPU step)."""
        if self.compile_ahead is False or self.device.type != "cpu":
            return
        tuned = os.path.join(self.work_dir, f"{tag}_runtime_tuned.mlir")
        try:
            _, allocation = allocate(src, profiles, self.average_bits, tuned,
                                     os.path.join(self.work_dir, f"{tag}_runtime_allocation.json"),
                                     runtime_bits=True, recompute_cost=self.recompute_cost,
                                     loss_head=self.loss_head, stats=self.stats)
            key = shapes + (self.compute_bits, _signature(allocation["tensors"]))
            self._runtime_keys[shapes] = key
            if key in self.compiled or key in self._prepared:
                return
            self._prepared[key] = self._lower(name, src, tuned)
        except driver.ToolError:
            return  # (ahead is only ahead: compiled, and reported, when needed)
        self._start_ahead([self._prepared[key][1]])

    def _prepare(self, inputs, targets):
        """The compiled step for this batch (exported, allocated and compiled
        on first use; the first allocation counts as adaptation time)."""
        began = time.perf_counter()
        self._export(inputs, targets)
        start = time.perf_counter()
        fresh = (self.average_bits is not None
                 and self._key(inputs, targets) not in self._allocated)
        self._compiled_how = None
        compiled = self._compile(inputs, targets)
        if fresh:
            self._charge(start)
        self._compile_ahead(inputs, targets, time.perf_counter() - began)
        return compiled

    def _charge(self, start):
        """The last (re-)allocation took from `start` until now (measuring,
        allocating and compiling what it chose: "compiled" says whether its
        step was compiled here, loaded from a background process's compile,
        or not compiled at all: None)."""
        entry = self.adaptations[-1]
        entry["seconds"] = time.perf_counter() - start
        entry["compiled"] = self._compiled_how
        entry["compile_seconds"] = max(
            0.0, entry["seconds"] - entry["measure_seconds"] - entry["allocate_seconds"])
        self.adapt_seconds += entry["seconds"]
        # (the first allocation's compile is the step's own, as with a
        # fixed encoding; a re-allocation's compile is adaptation)
        self.adapt_overhead_seconds += entry["seconds"] - (
            entry["compile_seconds"] if entry["first"] else 0.0)

    @staticmethod
    def _arguments(layout, inputs, targets, call_seed):
        return ([p.detach() for p in layout["params"]] + [b.detach() for b in layout["buffers"]]
                + [c.detach() if isinstance(c, torch.Tensor) else c for c in layout["constants"]]
                + ([np.array(call_seed, dtype=np.int64)] if layout["has_dropout"] else [])
                + [t.detach() for t in tensors_of(inputs) + tensors_of(targets)])

    def __call__(self, inputs, targets):
        """One step on a batch: inputs (the model is called as
        module(*inputs) for a tuple) and targets (given to the loss as they
        are), each a tensor or a tuple of tensors."""
        if torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled():
            # Tracing under autocast would make a bf16/f16 graph; act
            # computes in float32 and chooses the saved activations'
            # formats itself (encoding=, compute_bits=).
            if not getattr(self, "_autocast_warned", False):
                warnings.warn("act.compile: the step ignores torch.autocast (it computes in "
                              "float32; act chooses the saved activations' formats itself: "
                              "encoding=, compute_bits=)", stacklevel=2)
                self._autocast_warned = True
            with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
                return self(inputs, targets)
        inputs, targets = _contiguous(inputs), _contiguous(targets, "targets")
        _same_device("act.compile's step", tensors_of(inputs) + tensors_of(targets),
                     self.module)
        if not torch.is_grad_enabled():
            return self._forward_only(inputs, targets)
        shapes = self._shapes(inputs, targets)
        if self.adapt_interval:
            recent = self._recent.setdefault(
                shapes, collections.deque(maxlen=self.adapt_batches))
            recent.append((_cloned(inputs), _cloned(targets)))
            self._shape_call = self._shape_calls[shapes]
            self._shape_calls[shapes] += 1
            if (shapes in self._next_adapt and self._shape_call >= self._next_adapt[shapes][0]
                    and not self._runtime_pending(shapes)):
                # Re-estimate on the recent batches of this shape (the
                # current one first: its arguments carry the parameters).
                start = time.perf_counter()
                self._compiled_how = None
                self._allocate(shapes, list(reversed(recent)))
                self._compile(inputs, targets)  # a new allocation compiles here
                self._charge(start)
        step, layout, self.saved_bytes = self._prepare(inputs, targets)
        per_example = self._per_example.get(self.encoding)
        if self.variant[0] == EVERY_BATCH_SIZE and per_example:
            # (act's report cannot size the step for every batch size:
            # the first batch's bytes per example, times this batch.)
            n = _batch_of(self.variant[1], self._shapes(inputs, targets))
            self.saved_bytes = tuple(round(b * n) for b in per_example)
        elif per_example is None and self.variant[0] != EVERY_BATCH_SIZE:
            data = tensors_of(inputs) + tensors_of(targets)
            if data and data[0].dim() and data[0].shape[0]:
                self._per_example[self.encoding] = tuple(b / data[0].shape[0]
                                                         for b in self.saved_bytes)
        run_start = time.perf_counter()
        self.saved_sum[0] += self.saved_bytes[0]
        self.saved_sum[1] += self.saved_bytes[1]
        self.calls += 1
        call_seed = (self.seed * 1000003 + self.calls) & 0x7FFFFFFFFFFFFFFF
        self.last_seed = call_seed  # (dropout and rand_like's noise of this call)
        run = self._run(step, layout, inputs, targets, call_seed)
        self.step_seconds += time.perf_counter() - run_start
        if self.compute_bits is not None:
            cost = self.cost[self.compute_bits]
            self.effective_macs += cost["effective_macs"]
            self.fp32_macs += cost["macs"]
        self.last_peak_bytes = run.peak_bytes
        self.peak_bytes = max(self.peak_bytes, run.peak_bytes)
        results = [_as_torch(r) for r in run.results]
        nparams = len(layout["params"])
        for i, (p, grad) in enumerate(zip(layout["params"], results[1:1 + nparams])):
            if i in layout["without_gradient"]:
                continue
            # (a view of the run's memory)
            if p.grad is None:
                p.grad = grad
            else:
                p.grad.add_(grad)
        return self._finish(layout, results[step.loss_index], results[1 + nparams:],
                            backward=True)

    def _finish(self, layout, loss, rest, backward):
        """After a run: the updated buffers (BatchNorm's running statistics,
        the first of `rest`) copied into the module, the recorded values
        (the others) by name, num_batches_tracked counted; the loss. With
        `backward`, a BatchNorm that a checkpointed region runs again there
        is updated as often as eager updates it (with the same batch
        statistics, as eager's recomputation computes them)."""
        nupdated = len(layout["updated"])
        update_buffers(layout["updated"], rest[:nupdated],
                       [m for m in self.batch_norms if m.training],
                       layout.get("bn_updates", {}) if backward else {})
        # What the forward recorded (act.export.record), by name.
        self.records = dict(zip(layout["records"], rest[nupdated:]))
        # (A copy: a loss kept by the caller does not keep the run's
        # memory. On a GPU, made there: no synchronization.)
        return loss.clone() if loss.is_cuda else torch.tensor(float(loss))

    def _forward_only(self, inputs, targets):
        """The step under torch.no_grad(): the same export, through
        act-forward-only (the loss, the updated buffers and the records
        kept; no backward, nothing saved), compiled once per batch shape
        and mode. No .grad is written; BatchNorm in training mode updates
        its running statistics, as eager does under no_grad."""
        with torch.enable_grad():  # (the export traces the training step)
            shapes = self._key(inputs, targets, forward_only=True)
        key = shapes + ("forward-only",)
        name, src, layout = self._exports[shapes]
        if key not in self.compiled:
            _, mlir = self._prepared.pop(key, None) or (name, self._lower_forward_only(shapes))
            step = self._compile_file(mlir, shapes, f"compiling the forward-only step of {name}")
            if step is None:
                return self._forward_only(inputs, targets)
            self.compiled[key] = (step, layout, (0, 0))
        step = self.compiled[key][0]
        self.calls += 1
        call_seed = (self.seed * 1000003 + self.calls) & 0x7FFFFFFFFFFFFFFF
        self.last_seed = call_seed
        run = self._run(step, layout, inputs, targets, call_seed)
        self.last_peak_bytes = run.peak_bytes
        results = [_as_torch(r) for r in run.results]
        return self._finish(layout, results[step.loss_index], results[1:], backward=False)

    def _run(self, step, layout, inputs, targets, call_seed):
        """One run of a compiled step on this batch; on a GPU queued on
        PyTorch's current stream (ordered with the caller's work, no
        synchronization)."""
        args = self._arguments(layout, inputs, targets, call_seed)
        if step.device == "cuda":
            step.set_stream(torch.cuda.current_stream(self.device).cuda_stream)
            # Where the step reads each argument: the host (what its host
            # code reads: the dropout seed), else the device.
            args = [(a.cpu() if isinstance(a, torch.Tensor) else a) if i in step.host_arguments
                    else torch.as_tensor(a, device=self.device) if isinstance(a, np.ndarray)
                    else a for i, a in enumerate(args)]
        return step.run(args, seed=call_seed)


def step_layout(traced, exporter):
    """Where an exported step's arguments come from and where its updated
    buffers go: the module's own tensors in the step's argument order
    (frozen parameters among the buffers: Traced); which parameters get
    no gradient (their .grad stays None, as in eager autograd: optimizers
    skip them, weight decay and momentum included); the large constants
    (parameters of other modules: live, read at every call); whether the
    step takes a dropout seed; the buffers it updates (after
    exporter.joint() or .split())."""
    return {
        "params": list(traced.params),
        "without_gradient": set(traced.without_gradient()),
        "buffers": list(traced.buffers),
        "constants": [traced.external[k] if k in traced.external
                      else traced.constants[k].numpy() for k in traced.large_constants],
        "has_dropout": traced.has_dropout,
        "updated": [traced.buffers[i] for i, _ in exporter.updated],
    }


def _quant_variance(sensitivities, widths):
    """The compression variance of run-time widths {id: bits} by #act.quant
    sensitivities {id: c_l}: sum of c_l S(b), S(b) = (2^b - 1)^-2, none at
    32 bits (stored as it is)."""
    return sum(0.0 if b >= 32 else sensitivities[i] / (2 ** b - 1) ** 2
               for i, b in widths.items())


def _settable(t):
    """Whether the allocation's tensor `t` (act-allocate-bits' report) takes
    any width as run-time widths would: measured, not a sign mask, placed as
    #act.quant or f32 (act-allocate-bits' isRuntime)."""
    return t.get("runtime") or (t["sensitivity"] is not None and not t["sign_only"]
                                and (t["encoding"] == "f32"
                                     or t["encoding"].startswith("#act.quant")))


def _uniform_width(report):
    """Uniform bits at equal bytes for act-allocate-bits' `report`: the
    widest of CHECK_WIDTHS that fits its budget on every settable tensor
    (the others as placed), and the share of the budget it spends; (None,
    0) where none fits."""
    fixed = sum(t["bits"] * t["elements"] for t in report["tensors"] if not _settable(t))
    free = sum(t["elements"] for t in report["tensors"] if _settable(t))
    budget = report["budget_bits"]
    fits = [w for w in CHECK_WIDTHS if free and fixed + w * free <= budget]
    if not fits:
        return None, 0.0
    return max(fits), (fixed + max(fits) * free) / budget


def _signature(tensors):
    """What the step compiled for an allocation (act-allocate-bits' report's
    tensors) depends on: each tensor's encoding, or "runtime" for run-time
    widths. The step compiled for an allocation serves every later one of
    the same signature (one that differs only in run-time widths: those are
    set, not compiled)."""
    return tuple((t["id"], "runtime" if t.get("runtime") else t["encoding"]) for t in tensors)


def _runtime_quant_bytes(shape, bits, group=256, bf16_stats=False):
    """What #act.runtime_quant stores of an f32 tensor of `shape` at `bits`
    (docs/Encodings.md): the codes packed 32 / bits to a word (the elements
    as they are at 32), two f32 (bf16_stats: two bf16) per group of `group`
    and the width."""
    n = int(np.prod(shape))
    words = n if bits >= 32 else -(-n // (32 // bits))
    return 4 * words + (4 if bf16_stats else 8) * -(-n // group) + 4


def _contiguous(value, what="inputs"):
    wrong = not_tensors(what, value)
    if wrong:
        raise TypeError(f"act.compile's step: {wrong}")
    return rebuilt(value, [t.contiguous() for t in tensors_of(value)])


def placement(api, tensors, module=None):
    """The device act's step runs on: that of a module's parameters and
    buffers and of a batch's tensors, which must all be on the CPU or all on
    one CUDA device; otherwise a ValueError saying what to move, before
    PyTorch fails inside the C API."""
    named = [] if module is None else [
        (f"{kind} '{name}'", t) for kind, items in
        (("parameter", module.named_parameters()), ("buffer", module.named_buffers()))
        for name, t in items]
    named += [(f"batch tensor {i}", t) for i, t in enumerate(tensors)]
    where = next(((what, t.device) for what, t in named if t.device.type not in ("cpu", "cuda")),
                 None)
    if where is not None:
        raise ValueError(
            f"{api}: {where[0]} is on {where[1]}; act runs training steps on the CPU or a CUDA "
            f"GPU: move the model and the batches there with .cpu() or .cuda()")
    first = named[0] if named else None
    other = next(((what, t.device) for what, t in named if t.device != first[1].device), None)
    if other is not None:
        raise ValueError(f"{api}: {first[0]} is on {first[1].device} and {other[0]} on "
                         f"{other[1]}: act's step runs where the model and its batches all are")
    return first[1].device if first else torch.device("cpu")


def require_cpu(api, tensors, module=None):
    """act.Module's steps run on the CPU: a batch, or a module (checked
    when a step is compiled), elsewhere is refused with what to do."""
    device = placement(api, tensors, module)
    if device.type != "cpu":
        raise ValueError(f"{api}: the model or the batch is on {device}; act.Module runs on "
                         f"the CPU for now (act.compile runs on CUDA devices too): move them "
                         f"there with .cpu()")


def _module_device(module):
    """The device of a module's first parameter or buffer (the CPU for one
    without either)."""
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return torch.device("cpu")


def _same_device(api, tensors, module):
    """A batch's tensors are where the model is (placement's rule, with the
    model's tensors checked when its step is traced)."""
    model = _module_device(module)
    if model.type not in ("cpu", "cuda"):
        placement(api, (), module)  # (names the tensor)
    placement(api, tensors)
    where = next(((i, t.device) for i, t in enumerate(tensors) if t.device != model), None)
    if where is not None:
        raise ValueError(f"{api}: batch tensor {where[0]} is on {where[1]} and the model on "
                         f"{model}: act's step runs where the model and its batches all are")


def _as_torch(value):
    """A run's result as a torch tensor of its memory (no copy): a NumPy
    array's on the CPU, a DeviceTensor's (DLPack) on a GPU."""
    if isinstance(value, torch.Tensor):
        return value
    return value.to_torch() if hasattr(value, "to_torch") else torch.from_numpy(value)


def _to_cpu(value):
    return rebuilt(value, [t.cpu() for t in tensors_of(value)])


def update_buffers(buffers, values, norms, again):
    """After a run: the step's updated buffers (BatchNorm's running
    statistics) copied into the module's `buffers`, and each BatchNorm of
    `norms` (those in training mode) counting its batch; one that a
    checkpointed region runs again in the backward (`again`: id -> how
    often it runs) is updated as often as eager updates it, with the same
    batch statistics, as eager's recomputation computes them."""
    before = {id(m): (m.running_mean.clone(), m.running_var.clone(),
                      int(m.num_batches_tracked)) for m in norms if id(m) in again}
    for b, value in zip(buffers, values):
        b.data.copy_(_as_torch(value))
    for m in norms:
        updates = again.get(id(m), 1)
        if updates > 1:
            _update_again(m, before[id(m)], updates)
        m.num_batches_tracked.add_(updates)


def _update_again(bn, before, updates):
    """BatchNorm `bn`'s running statistics, updated once by the step from
    `before` (mean, var, num_batches_tracked), updated `updates` times in
    all with the same batch statistics, as eager's forward and a
    checkpointed region's recomputation do (momentum, or the cumulative
    average when momentum is None)."""
    mean0, var0, n0 = before
    for stat, old in ((bn.running_mean, mean0), (bn.running_var, var0)):
        once = stat.detach().clone()
        if bn.momentum is None:
            t = n0 + 1
            batch = old + (once - old) * t
            value = once
            for j in range(1, updates):
                value = value + (batch - value) / (t + j)
        else:
            m = bn.momentum
            batch = (once - (1 - m) * old) / m
            value = once
            for _ in range(1, updates):
                value = (1 - m) * value + m * batch
        stat.data.copy_(value)


def _clean_up(workers, work_dir):
    """When a step is destroyed (or at exit): its background compiles
    stopped, the work directory act made (`work_dir`, None: kept) removed."""
    for worker in workers:
        worker.stop()
    if work_dir is not None:
        shutil.rmtree(work_dir, ignore_errors=True)


def _refuse_wrappers(module):
    """act's step writes .grad itself: a wrapper whose work happens in
    autograd's hooks would silently do nothing (DistributedDataParallel's
    all-reduce: its ranks would train unsynchronised)."""
    name = type(module).__name__
    if name in ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"):
        raise TypeError(
            f"act.compile: the module is wrapped in {name}, whose work runs in autograd hooks "
            f"that act's step never calls (it writes .grad itself): its ranks would train "
            f"unsynchronised. Compile the module itself (act.compile(model.module, ...)) and "
            f"average the gradients after each step (torch.distributed.all_reduce of every "
            f".grad, divided by the world size), or train data-parallel with "
            f"`python3 -m act.train TASK --processes N`")
    hooked = [n for n, m in module.named_modules() if m._backward_hooks
              or getattr(m, "_backward_pre_hooks", None)]
    hooked += [n for n, p in module.named_parameters() if p._backward_hooks]
    if hooked:
        warnings.warn(
            f"act.compile: backward hooks on {', '.join(hooked[:4])}"
            f"{', ...' if len(hooked) > 4 else ''} will not run: act's step computes the "
            f"gradients without autograd and writes .grad directly", stacklevel=3)


def _describe(shapes):
    """A batch's shapes (a _shapes key) in words: `inputs 128x1x28x28`;
    `inputs Nx784` for the step exported for every batch size."""
    if shapes[0] == EVERY_BATCH_SIZE:
        (flags, dims) = shapes[1]
        inputs = dims[:flags[0][1]]
        text = ", ".join("x".join(("N" if d == -1 else f"{-d}N") if d < 0 else str(d)
                                  for d in shape) or "scalar" for shape, _ in inputs)
        return f"inputs {'(' + text + ')' if flags[0][0] else text}"

    def one(part):
        is_tuple, tensors = part
        text = ", ".join("x".join(map(str, shape)) or "scalar" for shape, _ in tensors)
        return f"({text})" if is_tuple else text
    return f"inputs {one(shapes[0])}"


class _progress:
    """Says on stderr (as `who`) what is being compiled once it has taken
    `after` seconds, and how long it took when it ends (ACT_PROGRESS=0:
    never)."""

    def __init__(self, what, after=3.0, who="act.compile"):
        self.what, self.after, self.who = what, after, who
        self.shown = False
        self.lock = threading.Lock()

    def _show(self):
        with self.lock:
            if self.timer is not None:
                print(f"{self.who}: {self.what} ...", file=sys.stderr, flush=True)
                self.shown = True

    def __enter__(self):
        self.start = time.perf_counter()
        self.timer = None
        if os.environ.get("ACT_PROGRESS", "1") != "0":
            self.timer = threading.Timer(self.after, self._show)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc):
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.shown:
                print(f"{self.who}: {self.what}: done in "
                      f"{time.perf_counter() - self.start:.1f} s", file=sys.stderr, flush=True)
        return False


def _outside_act():
    """warnings.warn's stacklevel, called where this is called, that names
    the first caller outside act (the user's loop)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


# compile_ahead=None: the steps for every batch size are compiled ahead where
# the first step of a training mode took this long to export and compile
# (below, compiling them when a batch needs them is about as quick).
AHEAD_AFTER = 2.0
# A settled allocation is re-measured at most this many adapt_intervals apart.
ADAPT_BACKOFF_LIMIT = 8
# A re-allocation that changes only run-time widths takes them when they
# predict at least this much less compression variance (a share of the
# widths' in use, both from the new sensitivities); otherwise the widths in
# use stay ("held" in its adaptations entry).
ADAPT_HYSTERESIS = 0.1

# A re-allocation due while the step it is checked on (run-time widths)
# still compiles in the background may wait for it, at most this many
# adapt_intervals (then training waits for the compile). 0 (the default):
# training waits, so that a run's result does not depend on how fast this
# machine compiles (the same seed, the same allocations).
ADAPT_WAIT_LIMIT = 0

# A re-allocation of the adaptive loop is decided on the whole step: the
# proposed widths, the widths in use and uniform bits at equal bytes
# (CHECK_WIDTHS, below), each the mean squared error of the step's
# gradient against the step without encodings on the newest batch, over
# this many step seeds (the same for each). The lowest is taken; one that
# is not ADAPT_HYSTERESIS lower than the widths in use is not. The
# per-tensor model the allocator solves adds up each tensor's variance
# measured at one width; the whole step also sees how errors combine
# through nonlinear backward reads and bias at low widths (docs/Tuning.md).
# 0: no check (the allocator's proposal, held by predicted variance); else
# at least 2 (measure_variance's least).
ALLOCATION_CHECK_RUNS = 2

# Uniform bits, a candidate of every check, are the widest of these widths
# whose placement fits the allocation's budget (the average itself, unless
# recomputed values, at 0 bits, or 1-bit masks leave more for the rest). The
# first allocation, before any check, is uniform bits where they spend at
# least UNIFORM_FIRST_SPENT of the budget (else the allocator's: uniform 1
# bit at average 1.5 would not be the same bytes).
CHECK_WIDTHS = (1, 2, 4, 8)
UNIFORM_FIRST_SPENT = 0.9

# The first element of the keys of the step exported for every batch size.
EVERY_BATCH_SIZE = "every batch size"


def _batch_of(pattern, shapes):
    """The batch N at which a batch of these shapes (Step._shapes) fits the
    shape pattern of a step exported for every batch size (static dims
    equal, -k for k * N), or None."""
    (flags, dims) = pattern
    got = [(is_tuple, len(parts)) for is_tuple, parts in shapes[:2]]
    if tuple(got) != flags:
        return None
    tensors = [t for _, parts in shapes[:2] for t in parts]
    n = None
    for (want, dtype), (shape, got_dtype) in zip(dims, tensors):
        if dtype != got_dtype or len(want) != len(shape):
            return None
        for w, d in zip(want, shape):
            if w >= 0:
                if w != d:
                    return None
            elif d % -w or (n is not None and d // -w != n) or d == 0:
                return None
            else:
                n = d // -w
    return n


def _cloned(value):
    return rebuilt(value, [t.detach().clone() for t in tensors_of(value)])


def compile(module, loss_fn=F.cross_entropy, example_inputs=None, example_targets=None,
            encoding=None, seed=0, work_dir=None, average_bits=None, measure_bits=4, few_bit=0,
            compute_bits=None, adapt_interval=0, adapt_batches=2, keep_work_dir=False,
            include=None, dynamic_batch=True, compile_ahead=None, runtime_bits=None,
            recompute_cost=0, loss_head=None, adapt_backoff=2, sensitivity="variance",
            cuda_graphs=False, stats="f32"):
    """A compiled training step of `module` under `loss_fn` (see the module
    docstring). encoding: an act encoding for every saved activation
    (act-insert-encode-decode's uniform policy), "lossless" for Gist's
    lossless encodings only (its lossless policy), or None for none.
    average_bits: instead, GACT's per-tensor bits for that average budget,
    from sensitivities act-run measures on the first batch of each shape
    (at measure_bits; act-allocate-bits; `step.allocation` is its report).
    few_bit: with a lossy encoding, the values the backward reads only
    through an activation's derivative phi(x) get few_bit-bit interval codes
    with phi's optimal table instead (Few-bit backward, docs/FewBit.md).
    With average_bits (few_bit 1..4): few-bit codes are a family of the
    allocator, their gradient error measured against the step without
    encodings at few_bit bits, chosen per tensor against quantization.
    compute_bits: (forward, backward) bits of FracTrain's compute
    quantization (act-quantize-compute), or None; `step.compute_bits` may be
    changed between calls (PFQ), each setting compiled once and cached (so
    may `step.encoding`: PFQ's saved-activation bits);
    `step.effective_macs` / `step.fp32_macs` sum FracTrain's cost over calls.
    adapt_interval: with average_bits, GACT's adaptive loop: every
    adapt_interval calls of a batch shape, re-measure (each tensor on the
    newest batch, as GACT's Alg. 1 on the current one; the gradient
    variance over the last adapt_batches batches), re-allocate and swap in
    the step of the new allocation (cached by allocation); `step.adaptations` logs each allocation (bits per tensor,
    predicted and gradient variance, the variance alert, seconds),
    `step.adapt_seconds` against `step.step_seconds` is its cost
    (`step.adapt_overhead_seconds`: less the first allocation's compile,
    which a fixed encoding's step pays too). adapt_backoff: after a
    re-allocation that changed nothing (the same families and widths),
    the next waits adapt_backoff times the last interval (at most
    ADAPT_BACKOFF_LIMIT = 8 adapt_intervals); after one that moved,
    adapt_interval calls again (GACT: sensitivities settle early in
    training); 1: every adapt_interval calls. From the first
    re-allocation on (on the CPU, without few_bit, runtime_bits not False)
    the whole step decides: the proposed widths, those in use and uniform
    bits at equal bytes (the widest of 1, 2, 4, 8 that fits the budget)
    are each measured as the gradient's mean squared error against the
    step without encodings on the newest batch, on the step with run-time
    widths (the entry's "check"); the lowest is taken unless the widths in
    use are within ADAPT_HYSTERESIS (10 %) of it (the entry's "held"); the
    first allocation, before any check, is those uniform bits where they
    spend at least 90 % of the budget (the entry's "uniform_first"). Without the check,
    new widths that predict less than ADAPT_HYSTERESIS less compression
    variance than those in use are not taken.
    runtime_bits: with average_bits, the allocation's #act.quant and f32
    choices are compiled as #act.runtime_quant (widths 1, 2, 4, 8, 32 read
    at run time, codes bit for bit #act.quant's), so that a re-allocation
    that keeps each tensor's family only sets the step's widths instead of
    compiling a new step. True: from the first allocation; None (the
    default): with adapt_interval, from the first re-allocation that moves
    (the step with run-time widths compiles 2-3x longer: it is compiled by
    a background process after the first allocation, unless
    compile_ahead=False, and loaded by that re-allocation; a run whose
    allocation never moves never waits for it); False: a step per
    allocation. `step.adaptations[i]["compiled"]` says where each
    allocation's step was compiled ("here", "ahead") or None.
    recompute_cost: saved values whose producers cost at most this many
    operations per byte (a linalg op's iterations times its body's ops) are
    recomputed in the backward from what is stored instead of stored
    (#act.recompute; act-insert-encode-decode's recompute-cost): about 4
    takes elementwise ops (a LayerNorm's output, GELU's), about 20 also a
    small attention's softmax(q k^T) from the stored q and k. With
    average_bits, the budget stays average_bits times the elements the step
    would store without it (recomputed values at 0 bits), so the bits they
    free go to the tensors stored (not with few_bit). 0: only reshapes.
    loss_head: the encoding of the loss head's saved values (the logits'
    bias, softmax and loss; act-insert-encode-decode's loss-head), with
    encoding= or average_bits= (outside its budget): None keeps them
    float32, '#act.float<format = bf16>' halves them (a language model's
    logits are a third of what it stores at average 2 bits).
    sensitivity: with average_bits, what each tensor's sensitivity
    measures: "variance" (GACT's: the gradient variance its codes add,
    from seed re-draws) or "error" (its codes alone against the step
    without compression: the variance and the squared bias a nonlinear
    backward read, softmax's or LayerNorm's, makes of unbiased codes; the
    same L + 1 step evaluations a batch, on a measuring step with run-time
    widths, which compiles about 2x longer; docs/Tuning.md).
    work_dir: where the exported and encoded graphs go (kept); by default
    a temporary directory removed with the step (keep_work_dir=True or
    ACT_KEEP_WORK_DIR=1 keeps it).
    include: with encoding=, the ids of the saved values it applies to (the
    others stay float32; ids as `step.report` lists them, act's memory
    report of the last variant compiled: docs/MemoryReport.md); None: all.
    dynamic_batch: batches of another size than the first share one step
    compiled for every batch size (exported from two traces; refused with a
    warning, and `step.dynamic_refused` saying why, where the graph depends
    on the batch otherwise than through its size); False: one step per
    batch size. The first batch's size keeps a step of its own (the
    fastest). Not with average_bits=, few_bit= or compute_bits=.
    compile_ahead: with dynamic_batch, once the first step of a training
    mode is compiled, the steps for every batch size that a loop wants next
    (its partial last batch; evaluation under torch.no_grad() in eval mode)
    are compiled by a background process at a low priority, and loaded from
    the code cache when a batch first needs them; False: compiled then;
    None (the default): ahead where the first step took 2 s or more to
    export and compile (AHEAD_AFTER), unless ACT_COMPILE_AHEAD=0.
    cuda_graphs: on CUDA tensors, each compiled step's runs in CUDA graphs
    from its second run on: captured once, then one graph launch per run
    (CompiledStep.set_graphs; docs/Running.md, "CUDA graphs"); the batch
    and other arguments that move between calls are copied into the
    graph's blocks, a step whose host code reads a dropout seed runs
    without (a warning). Ignored on the CPU.
    stats: with average_bits, how the allocation's #act.quant encodings
    store their group statistics: "f32" (8 bytes a group) or "bf16" (4:
    the minimum rounded down, the step up; docs/Encodings.md).
    The example batch, if given, compiles the step now (and `saved_bytes`
    is known from then on)."""
    step = Step(module, loss_fn, encoding, seed, work_dir, average_bits, measure_bits, few_bit,
                compute_bits, adapt_interval, adapt_batches, keep_work_dir, include,
                dynamic_batch, compile_ahead, runtime_bits, recompute_cost, loss_head,
                adapt_backoff, sensitivity, cuda_graphs, stats)
    if example_inputs is not None and example_targets is not None:
        inputs, targets = _contiguous(example_inputs), _contiguous(example_targets, "targets")
        placement("act.compile", tensors_of(inputs) + tensors_of(targets), module)
        _, _, step.saved_bytes = step._prepare(inputs, targets)
    return step
