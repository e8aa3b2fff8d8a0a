"""The trace of a training step: PyTorch's AOTAutograd on the model and
the loss with the parameters and buffers as arguments (Traced), its
checks, and what the step reads outside the model."""

import contextlib
import dataclasses
import dis
import math
import types
import warnings

import torch

from .. import aten, torchversion
from ..process import release_freed_memory
from ..workload import rebuilt, tensors_of
from ..dtypes import DTYPES, UINT8_PRESERVING, WIDENED
from ..errors import ExportError
from .randomness import random_ops
from .standins import (_ORIGINAL_F, _closure_cells, _forward_functions, copy_module,
                       decompositions, packed_sequences, reentrant_checkpoints,
                       reference_precision, static_losses, substituted, traced_loss)


VIEW_OPS = {
    "aten.t.default", "aten.view.default", "aten._reshape_alias.default",
    "aten._unsafe_view.default", "aten.transpose.int", "aten.permute.default",
    "aten.detach.default", "aten.unsqueeze.default", "aten.expand.default",
    "aten.alias.default", "aten.clone.default", "aten.reshape.default",
}


# Constant tensors captured by tracing with at most this many elements are
# arith.constants of the step; larger ones are arguments (.npy files).
MAX_INLINE_CONSTANT = 64

# Batches larger than this are traced for their shapes only (fake tensors:
# nothing computed at the batch's size, so a batch of 512 traces as fast
# as one of 16), and PyTorch's trace is checked against eager autograd on
# the first CHECK_BATCH examples (Traced).
SHAPES_ONLY_ABOVE = 32
CHECK_BATCH = 8

_RECORDS = []  # the (name, tensor) list of the trace under way, or None


def record(name, value):
    """Makes `value` (detached) an output of the exported step, named
    `name`: how a model reports what its forward decided (DFQ's executed
    bits) without changing the loss. A no-op outside act's export; AOTAutograd
    itself drops in-place writes to buffers other than BatchNorm's running
    statistics, so a buffer cannot carry it."""
    if _RECORDS and _RECORDS[-1] is not None:
        _RECORDS[-1].append((name, value.detach()))


def _buffer_read_again(who, which=""):
    """The refusal of a forward that updates a buffer in place and reads it
    again (`which`: the buffer, where known)."""
    return (f"{who} cannot run a forward that updates a buffer in place which the backward "
            f"also reads ({which}spectral normalization's power iteration, "
            f"nn.utils.spectral_norm and nn.utils.parametrizations.spectral_norm, does): "
            f"normalize the weight between steps instead, or drop it")


def target_range(targets):
    """(min, max) of class-index targets, None for other targets."""
    if isinstance(targets, torch.Tensor) and not targets.is_floating_point() and targets.numel():
        return int(targets.min()), int(targets.max())
    return None


def check_classification(out, targets, classes=None):
    """What the default loss (cross-entropy) needs, said before PyTorch
    fails somewhere inside it; `classes`: the targets' target_range (the
    values of the example batch, read before tracing)."""
    if not isinstance(out, torch.Tensor):
        raise ExportError(f"the model returns a {type(out).__name__}, not a tensor of logits: "
                          f"return the logits, or give the factory a fourth element, a "
                          f"loss_fn(outputs, targets) that reduces the outputs to a scalar")
    if out.dim() < 2:
        raise ExportError(f"the model's output has shape {list(out.shape)}; cross-entropy "
                          f"needs [N, classes, ...] logits (or give a loss_fn)")
    if classes is not None and (classes[0] < 0 or classes[1] >= out.shape[1]):
        raise ExportError(f"targets must be class indices in [0, {out.shape[1]}) for the "
                          f"model's {out.shape[1]} outputs; found {classes[0]}..{classes[1]}")


def _data_names(kind, value):
    """Argument names of a workload's inputs or targets: `inputs`, or
    `inputs_0`, `inputs_1`, ... for a tuple."""
    if isinstance(value, (tuple, list)):
        return [f"{kind}_{i}" for i in range(len(value))]
    return [kind]


@contextlib.contextmanager
def _in_precision(modules, dtype):
    """`modules`' floating tensors in `dtype` during the block (in place: the
    code that calls them holds these objects), then back to their dtypes."""
    tensors = [t for m in modules for t in list(m.parameters()) + list(m.buffers())]
    kinds = [t.dtype for t in tensors]
    for m in modules:
        m.to(dtype)
    try:
        yield
    finally:
        with torch.no_grad():
            for t, kind in zip(tensors, kinds):
                if t.dtype != kind:
                    t.data = t.data.to(kind)


def external_modules(workload):
    """(prefix, module) of the modules other than the workload's module and
    its submodules that its loss or its model's code reach by name: the
    loss itself when it is a module ("loss"), then "external0", ...."""
    own = {id(m) for m in workload.module.modules()}
    found, out = set(), []
    for fn in [workload.loss_fn] + _forward_functions(workload.module):
        for m in _modules_referenced(fn):
            if id(m) in own or id(m) in found:
                continue
            found.add(id(m))
            prefix = "loss" if m is workload.loss_fn else f"external{len(out)}"
            out.append((prefix, m))
    return out


def _modules_referenced(fn, seen=None):
    """nn.Modules a function reaches by name: its closure cells, the globals
    its code (and the code it nests) names, and the same for functions it
    holds (a loss calling a helper)."""
    seen = seen if seen is not None else set()
    if id(fn) in seen:
        return []
    seen.add(id(fn))
    if isinstance(fn, torch.nn.Module):
        return [fn]
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    values = [value for _, value in _closure_cells(fn)]
    names, stack = set(), [code]
    while stack:  # the globals the code loads (co_names also holds attributes)
        c = stack.pop()
        names.update(i.argval for i in dis.get_instructions(c)
                     if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    scope = getattr(fn, "__globals__", {})
    values += [scope[n] for n in names if n in scope]
    found = []
    for v in values:
        if isinstance(v, torch.nn.Module):
            found.append(v)
        elif isinstance(v, types.FunctionType):
            found += _modules_referenced(v, seen)
    return found


@contextlib.contextmanager
def external_buffers_kept(modules):
    """Buffers of `modules` (external_modules: the loss's and the model's
    code reach them by name) restored after the block: running them to
    trace and check the step must not move another model's BatchNorm
    statistics."""
    buffers = {id(b): (b, b.detach().clone()) for _, m in modules for b in m.buffers()}
    try:
        yield {k: b for k, (b, _) in buffers.items()}
    finally:
        with torch.no_grad():
            for b, value in buffers.values():
                b.copy_(value)


def first_examples(workload, count, above):
    """`workload` cut to the first `count` examples when its batch is larger
    than `above`: every input and target a tensor whose first dimension is
    that batch. None otherwise (a sequence-first recurrent input, an
    unbatched argument: the batch is not known)."""
    tensors = tensors_of(workload.inputs) + tensors_of(workload.targets)
    if not tensors or any(t.dim() == 0 for t in tensors):
        return None
    batch = tensors[0].shape[0]
    if batch <= above or any(t.shape[0] != batch for t in tensors):
        return None

    def cut(value):
        return rebuilt(value, [t[:count] for t in tensors_of(value)])
    return dataclasses.replace(workload, inputs=cut(workload.inputs),
                               targets=cut(workload.targets))


class Traced:
    """The aten graphs of a workload and the values around them."""

    def __init__(self, workload, seed=0, real_tensors=False, checked=True):
        """A batch larger than SHAPES_ONLY_ABOVE whose inputs and targets
        can all be cut to CHECK_BATCH along their first dimension is traced
        for its shapes only (torchversion.aot_trace: nothing computed at the
        batch's size), PyTorch's check against eager running on a real
        trace of those first examples; a step 1.13's fake tensors refuse is
        traced with real ones. real_tensors: a real trace whatever the
        batch (the check on the step itself). checked=False: no check (a
        second trace of the same model and first examples at another batch
        size, whose check the first trace ran)."""
        # Tracing and the checks run the model and the loss several times:
        # other modules they call (a GAN's discriminator in the loss) keep
        # their buffers (BatchNorm's running statistics) as they were.
        self.external_modules = external_modules(workload)
        check = None if real_tensors else first_examples(workload, CHECK_BATCH,
                                                         SHAPES_ONLY_ABOVE)
        with external_buffers_kept(self.external_modules) as kept:
            self._external_buffers = kept
            self.shapes_only = check is not None
            if self.shapes_only:
                try:
                    self._trace(workload, seed)
                except torchversion.FakeTraceError:
                    self.shapes_only, check = False, None
            if not self.shapes_only:
                self._trace(workload, seed)
        if check is not None and not self.random and checked:
            # (It raises as this trace's check would; its warnings are about
            # its batch, not the step's.)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Traced(check, seed, real_tensors=True)
        # The trace ran the step on real tensors: its activations are freed
        # now, and the process need not keep their pages.
        release_freed_memory()

    def _trace(self, workload, seed):
        self.workload = workload
        self.seed = seed
        module = workload.module
        self.param_names = [n for n, p in module.named_parameters() if p.requires_grad]
        params = dict(module.named_parameters())
        self.params = [params[n] for n in self.param_names]
        # Trainable parameters of other modules the loss or the model reach
        # by name (a criterion with weights, ArcFace's class centres; a
        # head kept outside the model; a GAN's discriminator in the
        # generator's loss) are parameters of the step too, named
        # `loss.<name>` (the loss module itself) or `external<i>.<name>`,
        # with gradients as eager autograd gives them.
        seen = {id(p) for p in module.parameters()}
        routes = [(module, n) for n in self.param_names]  # where each is substituted
        for prefix, m in self.external_modules:
            for n, p in m.named_parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    self.param_names.append(f"{prefix}.{n}")
                    self.params.append(p)
                    routes.append((m, n))
        # Buffers (BatchNorm's running statistics, masks, positional tables)
        # are arguments of the step; running statistics come back updated.
        # So are frozen parameters (requires_grad False), without gradients:
        # read at every call, not constants of the trace, since the user may
        # change them between steps (a mean teacher's or a momentum
        # encoder's moving average, a checkpoint loaded into a backbone).
        frozen = [(n, p) for n, p in module.named_parameters() if not p.requires_grad]
        self.buffer_names = [n for n, _ in module.named_buffers()] + [n for n, _ in frozen]
        buffers = {**dict(module.named_buffers()), **dict(frozen)}
        self.buffers = [buffers[n] for n in self.buffer_names]
        routes += [(module, n) for n in self.buffer_names]
        # The other modules' buffers and frozen parameters too: read at
        # every call, and a BatchNorm among them (a discriminator's in the
        # generator's loss) comes back updated, as in eager.
        seen.update(id(b) for b in self.buffers)
        for prefix, m in self.external_modules:
            tensors = list(m.named_buffers()) + [(n, p) for n, p in m.named_parameters()
                                                 if not p.requires_grad]
            for n, b in tensors:
                if id(b) not in seen:
                    seen.add(id(b))
                    self.buffer_names.append(f"{prefix}.{n}")
                    self.buffers.append(b)
                    routes.append((m, n))
        for n, b in zip(self.buffer_names, self.buffers):
            if b.dtype not in DTYPES:
                raise ExportError(f"buffer '{n}' has dtype {b.dtype}, which act does not support")
        names = self.param_names + self.buffer_names
        # The model's inputs and the loss's targets, flattened into the
        # step's arguments (module(*inputs); a tuple of targets given to the
        # loss as a tuple).
        inputs, targets = tensors_of(workload.inputs), tensors_of(workload.targets)
        n_inputs = len(inputs)
        self.n_data = n_inputs + len(targets)

        self.record_names = []
        # The targets' values, read before tracing (checked against the
        # logits' classes in the trace, before the loss reads them).
        classes = target_range(workload.targets)

        # The substitutions of the step's calls stay in place until their
        # backward has run (close_substitutions): a region under
        # torch.utils.checkpoint runs the module again during the backward,
        # which must read the step's arguments, not the module's own
        # tensors (they became constants, and its BatchNorm updated the
        # module's real running statistics while tracing).
        self._substitutions = []

        def step(*args):
            _RECORDS.append([])
            stack = contextlib.ExitStack()
            self._substitutions.append(stack)
            try:
                # (The loss too may read the module's parameters and buffers:
                # a penalty term, DFQ's beta.)
                by_owner = {}
                for (owner, name), value in zip(routes, args[:len(names)]):
                    by_owner.setdefault(id(owner), (owner, {}))[1][name] = value
                for owner, tensors in by_owner.values():
                    stack.enter_context(substituted(owner, tensors))
                data = args[len(names):]
                self._in_forward = True
                out = module(*data[:n_inputs])
                targets = rebuilt(workload.targets, data[n_inputs:])
                if workload.loss_fn is _ORIGINAL_F["cross_entropy"]:
                    check_classification(out, targets, classes)
                loss = traced_loss(workload.loss_fn)(out, targets)
                self._in_forward = False
            except BaseException:
                self._in_forward = False
                self.close_substitutions(len(self._substitutions) - 1)
                raise
            finally:
                records = _RECORDS.pop()
            self.record_names = [n for n, _ in records]
            return (loss, *[v for _, v in records]) if records else loss

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            primals = [p.detach().requires_grad_(True) for p in self.params]
            # Dropout becomes aten.native_dropout (a Philox mask from the
            # step's dropout seed).
            # How often each BatchNorm in training mode runs in the trace's
            # forward and backward together: twice under
            # torch.utils.checkpoint (its region runs again in the
            # backward), where eager updates the running statistics twice
            # per step (bn_updates; act.compile applies them so).
            norms = [m for m in module.modules()
                     if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training
                     and m.track_running_stats]
            runs = {id(m): 0 for m in norms}
            checkpointed = set()  # run inside a checkpoint region's forward
            self._in_forward = False

            def count(m, _):
                if not self._in_forward:
                    runs[id(m)] += 1
                elif regions[0]:
                    checkpointed.add(id(m))
            hooks = [m.register_forward_pre_hook(count) for m in norms]
            with random_ops("trace"), static_losses(), packed_sequences(module), \
                    reentrant_checkpoints(), torchversion.checkpoint_regions() as regions:
                try:
                    graphs, loss, mutated = torchversion.aot_trace(
                        step, [*primals, *[b.clone() for b in self.buffers], *inputs, *targets],
                        decompositions(), shapes_only=self.shapes_only)
                except Exception as e:
                    if torchversion.data_dependent_shape(e):
                        raise ExportError(f"{getattr(e, 'func', 'an op')}: {aten.BOOLEAN_MASK} "
                                          f"is not supported") from None
                    raise
                finally:
                    self.close_substitutions(0)  # (the trace's backward has run)
                    for h in hooks:
                        h.remove()
            # (Runs outside the step's forward are the backward's: one
            # joint backward is traced. PyTorch 2's traces no recomputation:
            # a region's module counts once more, as eager recomputes it.)
            self.bn_updates = {name: 1 + max(runs[id(m)], id(m) in checkpointed)
                               for name, m in module.named_modules()
                               if runs.get(id(m)) or id(m) in checkpointed}
            if self.record_names:
                loss = loss[0]
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                what = (f"has shape {list(loss.shape)}" if isinstance(loss, torch.Tensor)
                        else f"is a {type(loss).__name__}")
                raise ExportError(f"the loss of '{workload.name}' {what}; a scalar tensor is "
                                  f"expected (return one tensor from the model, or give a "
                                  f"loss_fn that reduces its outputs to a scalar)")
            try:
                loss.backward()
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    raise
                # torch 1.13's AOTAutograd writes the buffers the forward
                # updates back into its inputs, which its backward saved.
                raise ExportError(_buffer_read_again("PyTorch's trace of the step "
                                                     "(AOTAutograd)")) from None
        self.forward, self.backward = graphs["forward"], graphs["backward"]
        # PyTorch 2 traces a forward that updates a buffer in place as one
        # returning its new value. act's step gives BatchNorm's statistics'
        # updates itself (act.compile counts its batches); an update the
        # forward does not read again is dropped, as 1.13's trace dropped it
        # (DFQ's `executed`: act.export.record carries it); one it reads
        # again is refused, as 1.13 (which failed on it above) refused it.
        statistics = {id(t) for m in norms for t in m.buffers(recurse=False)}
        nparams = len(self.params)
        for i in torchversion.normalize_forward(self.forward, mutated):
            if nparams <= i < nparams + len(self.buffers) and \
                    id(self.buffers[i - nparams]) not in statistics:
                raise ExportError(_buffer_read_again(
                    "act", f"'{self.buffer_names[i - nparams]}'; "))
        self.random = any(n.op == "call_function" and str(n.target) in (
            "aten.native_dropout.default", "aten.rand_like.default")
            for gm in (self.forward, self.backward) for n in gm.graph.nodes)
        if not self.shapes_only:
            self._check_against_eager(step, primals)
        elif any(isinstance(getattr(gm, n.target), torch._subclasses.FakeTensor)
                 for gm in (self.forward, self.backward) for n in gm.graph.nodes
                 if n.op == "get_attr"):
            raise torchversion.FakeTraceError("the trace captured a fake constant")
        # Constant tensors the trace captured: small ones are arith.constants
        # of the step, large ones arguments (written with the inputs).
        self.constants = {}
        self.external = {}  # name -> a parameter of another module (the live object)
        for gm in (self.forward, self.backward):
            for n in gm.graph.nodes:
                if n.op == "get_attr":
                    value = getattr(gm, n.target)
                    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
                        value = value.float()  # a Python float captured as a tensor
                        n.meta["tensor_meta"] = n.meta["tensor_meta"]._replace(
                            dtype=torch.float32) if "tensor_meta" in n.meta else None
                    if not isinstance(value, torch.Tensor) or value.dtype not in DTYPES:
                        raise ExportError(f"the traced graph reads '{n.target}', a "
                                          f"{getattr(value, 'dtype', type(value).__name__)} "
                                          f"constant act does not support")
                    self.constants.setdefault(n.target, value.detach().clone())
                    if isinstance(value, torch.nn.Parameter) or id(value) in self._external_buffers:
                        self.external.setdefault(n.target, value)
        # Parameters and buffers of other modules the model or the loss
        # reads (a GAN's discriminator in the generator's loss): arguments
        # of the step whatever their size, so that act.compile reads their
        # current values at every call (their optimizer moves them in place,
        # their own steps update their running statistics).
        self.large_constants = [k for k, v in self.constants.items()
                                if v.numel() > MAX_INLINE_CONSTANT or k in self.external]
        # A step with dropout or rand_like takes its seed (an i64 scalar)
        # before the inputs. The k-th rand_like of the step (forward, then
        # backward: eager's order) draws Philox stream k.
        self.has_dropout = any(
            n.op == "call_function" and str(n.target) == "aten.native_dropout.default"
            for n in self.forward.graph.nodes)
        rands = [n for gm in (self.forward, self.backward) for n in gm.graph.nodes
                 if n.op == "call_function" and str(n.target) == "aten.rand_like.default"]
        for k, n in enumerate(rands):
            n.meta["act_random"] = k
        self.has_dropout = self.has_dropout or bool(rands)
        seed_arg = [torch.tensor(seed, dtype=torch.int64)] if self.has_dropout else []
        self.args = ([p.detach() for p in self.params] + [b.detach().clone() for b in self.buffers]
                     + [self.constants[k] for k in self.large_constants] + seed_arg
                     + list(inputs) + list(targets))
        self.arg_names = (self.param_names + ["buffer_" + n for n in self.buffer_names]
                          + ["const_" + k for k in self.large_constants]
                          + (["dropout_seed"] if self.has_dropout else [])
                          + _data_names("inputs", workload.inputs)
                          + _data_names("targets", workload.targets))
        # The positions among args of the traced function's arguments (its
        # placeholders): parameters, buffers, inputs, targets; constants and
        # the dropout seed are the step's own.
        nstate = len(self.params) + len(self.buffers)
        self.placeholder_args = list(range(nstate)) + list(
            range(len(self.args) - self.n_data, len(self.args)))
        self._check_widened()
        fw_out = self._output(self.forward)
        nrec = len(self.record_names)
        self.loss_node, self.saved = fw_out[0], list(fw_out[1 + nrec:])
        self.record_nodes = list(fw_out[1:1 + nrec])
        bw_ph = [n for n in self.backward.graph.nodes if n.op == "placeholder"]
        self.bw_saved, self.bw_tangents = bw_ph[:len(self.saved)], bw_ph[len(self.saved):]
        # (1.13's AOTAutograd gives the recorded outputs tangents too, 2.x's
        # none; they are detached, so the backward never reads them.)
        self.bw_record_tangents = self.bw_tangents[1:]
        self.bw_tangents = self.bw_tangents[:1]
        if (len(fw_out) != 1 + nrec + len(self.saved)
                or len(self.bw_record_tangents) not in (0, nrec)
                or any(n.users for n in self.bw_record_tangents)):
            raise ExportError("unexpected AOTAutograd partition (one loss output expected)")
        self.fw_placeholders = [n for n in self.forward.graph.nodes if n.op == "placeholder"]
        # AOTAutograd's partition lists the saved values in set order, which
        # changes from run to run; in forward-graph order the exported files
        # (and the split form's saved positions, hence the tensor ids) are
        # the same for every export of a model.
        order = {n: i for i, n in enumerate(self.forward.graph.nodes)}
        pairs = sorted(zip(self.saved, self.bw_saved), key=lambda p: order[p[0]])
        self.saved = [s for s, _ in pairs]
        self.bw_saved = [b for _, b in pairs]

    @staticmethod
    def _output(gm):
        return [n for n in gm.graph.nodes if n.op == "output"][0].args[0]

    def _check_widened(self):
        """uint8 data is widened to i32 where the step reads it; that is
        exact only while no op computes new uint8 values (PyTorch wraps
        them modulo 256)."""
        for gm in (self.forward, self.backward):
            for n in gm.graph.nodes:
                tm = n.meta.get("tensor_meta")
                if (n.op == "call_function" and getattr(tm, "dtype", None) in WIDENED
                        and str(n.target) not in UINT8_PRESERVING):
                    raise ExportError(
                        f"'{n.target}' (node '{n.name}') computes {tm.dtype} values, which "
                        f"act does not support (it reads {tm.dtype} data widened to int32, "
                        f"exact for conversions, comparisons and views); convert the "
                        f"tensor first, e.g. x.float() or x.long()")

    def index_ranges(self):
        """{step argument index: (lower, upper, ignore, what)}: the values
        an integer argument (token ids, class targets) must lie in because
        an op indexes with it unchanged (through reshapes, copies and
        conversions; not slices, which may index with only part of it):
        an embedding's rows, index_select's and gather's dim, x[idx]
        (negative from the end), nll_loss's classes (or its ignore_index).
        The runtime checks them before the step runs: an id out of range
        is an error there, as in PyTorch, not a silently clamped read."""
        passthrough = {"aten._to_copy.default", "aten.view.default", "aten._unsafe_view.default",
                       "aten._reshape_alias.default", "aten.reshape.default",
                       "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
                       "aten.clone.default", "aten.expand.default", "aten.permute.default",
                       "aten.transpose.int", "aten.t.default", "aten.alias.default",
                       "aten.detach.default", "aten.lift_fresh_copy.default"}
        placeholder_arg = dict(zip(self.fw_placeholders, self.placeholder_args))
        first_data = len(self.args) - self.n_data

        def source(node):
            while node.op == "call_function" and str(node.target) in passthrough:
                node = node.args[0]
            arg = placeholder_arg.get(node)
            return arg if arg is not None and arg >= first_data else None

        def shape(node):
            tm = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
            return tuple(tm.shape) if hasattr(tm, "shape") else None

        def size(node, dim):
            return shape(node)[dim]

        names = dict(zip(self.fw_placeholders, self.arg_names[:len(self.params)]))

        def indexed(node, dim):
            """What an index along `dim` of `node` picks from."""
            n = size(node, dim)
            if names.get(node) and dim == 0:
                return f"the {n} rows of {names[node]}"
            if str(getattr(node, "target", "")).startswith("aten.eye"):
                return f"the {n} classes of a one-hot (F.one_hot)"
            return f"a dim of size {n} ('{node.name}')"

        ranges = {}

        def bound(index_node, lower, upper, what, ignore=None):
            arg = source(index_node) if isinstance(index_node, torch.fx.Node) else None
            if arg is None:
                return
            lo, hi, ign, uses = ranges.get(arg, (lower, upper, ignore, []))
            ranges[arg] = (max(lo, lower), min(hi, upper),
                           ign if ign == ignore else None, uses + [what])

        for n in self.forward.graph.nodes:
            if n.op != "call_function":
                continue
            key, a = str(n.target), n.args
            if not a or shape(a[0]) is None:  # no layout metadata: not bounded
                continue
            if key == "aten.embedding.default":
                bound(a[1], 0, size(a[0], 0), indexed(a[0], 0))
            elif key in ("aten.index_select.default", "aten.gather.default"):
                dim = a[1] % len(shape(a[0]))
                bound(a[2], 0, size(a[0], dim), indexed(a[0], dim))
            elif key == "aten.index.Tensor":
                for k, i in enumerate(a[1]):
                    tm = i.meta.get("tensor_meta") if isinstance(i, torch.fx.Node) else None
                    if tm is not None and getattr(tm, "dtype", None) != torch.bool:
                        bound(i, -size(a[0], k), size(a[0], k), indexed(a[0], k))
            elif key in ("aten.nll_loss_forward.default", "aten.nll_loss2d_forward.default"):
                logits = shape(a[0])
                classes = logits[1] if len(logits) > 1 else logits[0]
                bound(a[1], 0, classes, f"the loss's {classes} classes",
                      ignore=a[4] if len(a) > 4 else -100)
        return ranges

    def without_gradient(self):
        """Indices of the parameters the loss does not read (eager autograd
        leaves their .grad None; the step returns zeros for them)."""
        outs = Traced._output(self.backward)[:len(self.params)]
        return [i for i, node in enumerate(outs) if node is None]

    def view_chain(self, node):
        """(placeholder, [view nodes from it to node]) if node is a view of
        a forward argument, else None."""
        chain = []
        while node.op == "call_function" and str(node.target) in VIEW_OPS:
            chain.append(node)
            node = node.args[0]
        if node.op == "placeholder":
            return node, list(reversed(chain))
        return None

    def reference(self):
        """The loss and parameter gradients by eager autograd in float64 (the
        exact answer act's float32 step is compared with), and the relative
        error of eager autograd in float32 against it, per gradient."""
        with external_buffers_kept(self.external_modules):
            return self._reference()

    def _reference(self):
        w = self.workload

        def run(dtype):
            module = copy_module(w.module).to(dtype)
            x = [t.to(dtype) if t.is_floating_point() else t for t in tensors_of(w.inputs)]
            y = rebuilt(w.targets, [t.to(dtype) if t.is_floating_point() else t
                                    for t in tensors_of(w.targets)])
            # Counts the random calls of one eager step (tracing runs twice).
            # (The backward inside too: its rand_like calls draw the step's
            # noise.)
            # A loss module (nn.CrossEntropyLoss(weight=...)) in the same
            # precision as the model.
            loss_fn = (copy_module(w.loss_fn).to(dtype)
                       if isinstance(w.loss_fn, torch.nn.Module) else w.loss_fn)
            # Other modules the loss or the model reach (external_modules)
            # run in this precision too, in place, and are restored.
            others = [m for prefix, m in self.external_modules if prefix != "loss"]
            params = dict(module.named_parameters())
            if isinstance(loss_fn, torch.nn.Module):
                params.update((f"loss.{n}", p) for n, p in loss_fn.named_parameters())
            for prefix, m in self.external_modules:
                if prefix != "loss":
                    params.update((f"{prefix}.{n}", p) for n, p in m.named_parameters())
            # (_in_precision outermost: reference_precision turns .to(float32)
            # into float64 while it lasts.)
            with _in_precision(others, dtype), \
                    random_ops("reference", self.seed,
                               self.random_counts if dtype == torch.float32 else None), \
                    reference_precision(dtype), reentrant_checkpoints():
                loss = loss_fn(module(*x), y)
                wrt = [params[n] for n in self.param_names]
                # A parameter the loss does not read has a zero gradient.
                grads = torch.autograd.grad(loss, wrt, allow_unused=True)
            return loss.detach(), [torch.zeros_like(p).detach() if g is None else g.detach()
                                   for p, g in zip(wrt, grads)]
        self.random_counts = {}
        loss, grads = run(torch.float64)
        _, grads32 = run(torch.float32)
        f32_error = [float((a.double() - b).norm() / max(float(b.norm()), 1e-300))
                     for a, b in zip(grads32, grads)]
        return loss, grads, f32_error

    def hooked_saved_bytes(self, as_traced=False):
        """Bytes autograd saves for backward in eager mode, counted with
        saved_tensors_hooks: each storage once, parameters excluded.
        as_traced: with the kernels the trace used (PyTorch 2's fused
        attention saves less than its math: torchversion.math_kernels)."""
        w = self.workload
        module = copy_module(w.module)
        param_ptrs = {torchversion.storage(p)[0] for p in list(module.parameters()) + self.params}
        seen = {}

        def pack(t):
            key, nbytes = torchversion.storage(t)
            if key not in param_ptrs and nbytes > 0:
                seen[key] = nbytes
            return t
        kernels = torchversion.math_kernels() if as_traced else contextlib.nullcontext()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                random_ops("reference", self.seed, math_attention=as_traced), kernels:
            loss = w.loss_fn(module(*tensors_of(w.inputs)), w.targets)
        del loss
        return sum(seen.values())

    def close_substitutions(self, keep):
        """Ends the step's substitutions opened after the first `keep`, the
        latest first (each restores what the one before it substituted)."""
        while len(self._substitutions) > keep:
            self._substitutions.pop().close()

    def _check_against_eager(self, step, primals):
        """The traced graphs' gradients (PyTorch running them, float32)
        against eager autograd on the same arguments: torch 1.13's
        AOTAutograd can trace a wrong graph (an in-place assignment through
        advanced indexing into a view, functionalized wrongly), and act would
        then compute those wrong gradients faithfully. Steps that draw
        random numbers are skipped (the graph and eager draw differently)."""
        if self.random:
            return
        w = self.workload

        def eager_grads(dtype):
            def cast(t):
                return t.to(dtype) if t.is_floating_point() else t
            params = [cast(p.detach()).requires_grad_(True) for p in self.params]
            # (A step's substitutions, when it keeps them: Traced's does.)
            stacks = getattr(self, "_substitutions", [])
            opened = len(stacks)
            try:
                with warnings.catch_warnings(), reference_precision(dtype), \
                        reentrant_checkpoints():
                    warnings.simplefilter("ignore")
                    loss = step(*params, *[cast(b.clone()) for b in self.buffers],
                                *[cast(t) for t in tensors_of(w.inputs)],
                                *[cast(t) for t in tensors_of(w.targets)])
                loss = loss[0] if isinstance(loss, tuple) else loss
                return torch.autograd.grad(loss, params, allow_unused=True)
            finally:
                while len(stacks) > opened:
                    stacks.pop().close()

        def distance(grads, reference):
            """(largest difference over the scale of `reference`, where)."""
            scale = math.sqrt(sum(float((e.double() ** 2).sum())
                                  for e in reference if e is not None))
            worst, where = 0.0, None
            for name, e, t in zip(self.param_names, reference, grads):
                if e is None and t is None:
                    continue  # a parameter the loss does not read, in both
                e = torch.zeros_like(t) if e is None else e
                t = torch.zeros_like(e) if t is None else t
                err = float((t.double() - e.double()).norm()) / max(scale, 1e-30)
                if err > worst:
                    worst, where = err, name
            return worst, where

        eager = eager_grads(torch.float32)
        traced = [p.grad for p in primals]
        worst, where = distance(traced, eager)
        if worst <= 1e-3:
            return
        # Two float32 computations of an ill-conditioned step (BatchNorm
        # over two values) differ this much too: against float64 eager
        # autograd, a right trace is about as far as eager float32 is.
        try:
            exact = eager_grads(torch.float64)
        except Exception:  # noqa: BLE001 (a model that only runs in float32)
            exact = None
        if exact is not None:
            traced_error, _ = distance(traced, exact)
            eager_error, _ = distance(eager, exact)
            if traced_error <= max(10 * eager_error, 1e-3):
                warnings.warn(
                    f"'{w.name}': float32 gradients here are ill-conditioned (eager autograd in "
                    f"float32 is {eager_error:.1e} off float64, PyTorch's trace {traced_error:.1e}); "
                    f"a larger batch or input usually helps (BatchNorm over few values)")
                return
        raise ExportError(
            f"PyTorch's own trace of the step (AOTAutograd, torch {torch.__version__}) "
            f"computes gradients {worst:.1e} off eager autograd (against the gradients' "
            f"scale; worst: '{where}'): act would compute the same wrong gradients. Known "
            f"cause: an in-place assignment through index tensors into a view "
            f"(x[:, idx] = v); write it out of place (torch.where, index_put, scatter)")
