"""The traced graphs as act's input IR: each FX node lowered by act.aten
(Lowerer), the joint and split forms (Exporter)."""

import operator

from torch.fx.node import map_arg

from .. import aten
from ..mlir import Graph, Sym, V, func, is_dynamic
from ..errors import ExportError
from ..aten.core import dense_constant
from ..dtypes import WIDENED, argument_dtype
from .dynamic import DynamicBatchError, apply, other_batch
from .trace import Traced


class Lowerer:
    """Lowers FX nodes into a Graph; env maps nodes to values."""

    def __init__(self, graph, where, constants=None):
        self.g, self.where, self.env = graph, where, {}
        self.constants = constants or {}

    def run(self, nodes):
        for n in nodes:
            if n.op == "call_function":
                self.env[n] = self.lower(n)
            elif n.op == "get_attr" and n not in self.env:
                self.env[n] = self.constants[n.target](self.g)

    def lower(self, n):
        if n.target is operator.getitem:
            return self.env[n.args[0]][n.args[1]]
        key = str(n.target)
        fn = aten.LOWERINGS.get(key)
        if fn is None:
            shapes = [list(a.meta["tensor_meta"].shape) for a in n.all_input_nodes
                      if "tensor_meta" in a.meta]
            raise ExportError(f"unsupported aten op '{key}': node '{n.name}' of the {self.where} "
                              f"graph, operand shapes {shapes}")
        args = map_arg(n.args, lambda a: self.env[a])
        kwargs = map_arg(n.kwargs, lambda a: self.env[a])
        self.g.value_of = self.env.get  # for lowerings that read a view's storage
        try:
            result = fn(self.g, n, *args, **kwargs)
        except aten.UnsupportedError as e:
            raise ExportError(f"{e} in the {self.where} graph") from None
        expected = aten.meta_shape(n)
        if isinstance(result, V) and expected is not None and (
                tuple(expected) != result.shape
                or list(map(is_dynamic, expected)) != list(map(is_dynamic, result.shape))):
            raise ExportError(f"internal: {key} ({n.name}) lowered to shape {result.shape}, "
                              f"PyTorch says {tuple(expected)}")
        return result


class Exporter:
    def __init__(self, traced):
        self.t = traced
        self.name = traced.workload.name
        self.batch_hint = None  # the traced batch of a step for every batch size (dynamic)

    def _hint_attr(self):
        """`act.batch_hint` (TrainingGraph.h), for a step for every batch size."""
        return f"act.batch_hint = {self.batch_hint} : i64" if self.batch_hint else None

    def _arguments(self, g):
        # SSA names after the arguments' names (parameters prefixed p_).
        nparams = len(self.t.params)
        names = ["p_" + n for n in self.t.param_names] + self.t.arg_names[nparams:]
        shapes = [tuple(a.shape) for a in self.t.args]
        for i, ph in zip(self.t.placeholder_args, self.t.fw_placeholders):
            if "act_shape" in ph.meta:  # the batch's dims: Sym (export/dynamic.py)
                shapes[i] = ph.meta["act_shape"]
        args = [V(g.fresh(nm), s, argument_dtype(a.dtype))
                for nm, s, a in zip(names, shapes, self.t.args)]
        _set_batch(g, args)
        if self.t.has_dropout:
            g.dropout_seed = args[self.t.arg_names.index("dropout_seed")]
        # Constants: large ones read their argument, small ones are inlined.
        first = len(self.t.params) + len(self.t.buffers)
        by_name = dict(zip(self.t.large_constants, args[first:]))
        self.constants = {}
        for k, value in self.t.constants.items():
            if k in by_name:
                self.constants[k] = (lambda arg: lambda gr: arg)(by_name[k])
            else:
                self.constants[k] = (lambda v: lambda gr: dense_constant(gr, v, k))(value)
        return args

    def _buffer_updates(self, g, args):
        """The new values of the buffers the step updates (BatchNorm's running
        statistics), in buffer order: [(buffer index, V)]."""
        nparams = len(self.t.params)
        updates = getattr(g, "buffer_updates", {})
        out = []
        for i in range(len(self.t.buffers)):
            name = args[nparams + i].name
            if name in updates:
                out.append((i, updates[name]))
        return out

    def _records(self, fw):
        """The values the model recorded (act.export.record), after the
        buffer updates."""
        return [fw.env[n] for n in self.t.record_nodes]

    def _saved_in_backward(self, low, fw_env, bw_args=None):
        """Binds the backward graph's saved placeholders: views of arguments
        are re-derived from the argument."""
        for i, (s, ph) in enumerate(zip(self.t.saved, self.t.bw_saved)):
            chain = self.t.view_chain(s)
            value = bw_args[i] if bw_args is not None else fw_env[chain[0] if chain else s]
            if chain:
                replay = Lowerer(low.g, "backward", self.constants)
                replay.env[chain[0]] = value
                replay.run(chain[1])
                value = replay.env[chain[1][-1]] if chain[1] else value
            low.env[ph] = value

    def _index_range_attrs(self):
        """`act.index_range` argument attributes (Traced.index_ranges): the
        runtime refuses data outside them before the step runs."""
        attrs = {}
        for arg, (lower, upper, ignore, uses) in self.t.index_ranges().items():
            fields = [f"lower = {lower} : i64", f"upper = {upper} : i64"]
            if ignore is not None:
                fields.append(f"ignore = {ignore} : i64")
            if self.t.args[arg].dtype in WIDENED:
                fields.append("unsigned")
            what = "; ".join(uses).replace("\\", "\\\\").replace('"', '\\"')
            fields.append(f'use = "{self.t.arg_names[arg]} indexes {what}"')
            attrs[arg] = f"act.index_range = {{{', '.join(fields)}}}"
        return attrs

    def _saved_roots(self, fw_env):
        """(backward placeholder, forward root node) for saved views whose
        storage the backward addresses (as_strided with absolute offsets,
        from decompositions such as prod's backward): the views' roots."""
        out = []
        for s, ph in zip(self.t.saved, self.t.bw_saved):
            root = aten.storage_root(s)
            if (root is not s and isinstance(fw_env.get(root), V)
                    and any(str(u.target) == "aten.as_strided.default" for u in ph.users)):
                out.append((ph, root))
        return out

    def _gradients(self, low):
        outs = Traced._output(self.t.backward)[:len(self.t.params)]
        grads = []
        for node, p in zip(outs, self.t.params):
            grads.append(low.env[node] if node is not None else low.g.fill(tuple(p.shape), 0.0))
        return grads

    def _forward(self):
        """A new function body with the forward graph lowered into it:
        (graph, arguments, forward lowerer)."""
        g = Graph()
        args = self._arguments(g)
        fw = Lowerer(g, "forward", self.constants)
        values = []
        for i in self.t.placeholder_args:
            a, t = args[i], self.t.args[i].dtype
            if t in WIDENED:  # uint8: zero-extended where the step reads it
                a = g.ew([a], lambda b, u: b.cast("arith.extui", u, a.dtype, WIDENED[t][1]),
                         out_dtype=WIDENED[t][1], hint="widened")
            values.append(a)
        fw.env.update(zip(self.t.fw_placeholders, values))
        fw.run(self.t.forward.graph.nodes)
        return g, args, fw

    def joint(self):
        g, args, fw = self._forward()
        self.updated = self._buffer_updates(g, args)
        bw = Lowerer(g, "backward", self.constants)
        self._saved_in_backward(bw, fw.env)
        # A saved view's storage is its forward root's, which the joint
        # function still holds (as_strided in the backward addresses it).
        g.storage_of = {ph: (root, fw.env[root]) for ph, root in self._saved_roots(fw.env)}
        bw.env[self.t.bw_tangents[0]] = g.fill((), 1.0, hint="tangent")
        bw.run(self.t.backward.graph.nodes)
        results = ([fw.env[self.t.loss_node]] + self._gradients(bw) + [v for _, v in self.updated]
                   + self._records(fw))
        return func(f"{self.name}_step", args, results, g.lines, result_attrs={0: "act.loss"},
                    arg_attrs=self._index_range_attrs(), attrs=self._hint_attr())

    def split(self):
        g, args, fw = self._forward()
        saved = []
        for s in self.t.saved:
            chain = self.t.view_chain(s)
            saved.append(fw.env[chain[0] if chain else s])
        # rand_like in the backward draws from the step's seed: the forward
        # passes it on as the last saved value (an i64 scalar).
        seed_saved = self.t.has_dropout and any(
            n.op == "call_function" and str(n.target) == "aten.rand_like.default"
            for n in self.t.backward.graph.nodes)
        roots = self._saved_roots(fw.env)
        saved += [fw.env[root] for _, root in roots]
        if seed_saved:
            saved.append(g.dropout_seed)
        # Arguments the backward reads as they are: {argument index: saved
        # positions} (act.Module hands the backward its incoming gradient in
        # the place of the tangent arguments it exports the module with).
        self.saved_arguments = {}
        for i, v in enumerate(saved):
            for k, a in enumerate(args):
                if v is a:
                    self.saved_arguments.setdefault(k, []).append(i)
        updated = [v for _, v in self._buffer_updates(g, args)]
        fwd = func(f"{self.name}_forward", args,
                   [fw.env[self.t.loss_node]] + updated + self._records(fw) + saved,
                   g.lines,
                   attrs=", ".join(filter(None, [
                       f"act.backward = @{self.name}_backward, act.num_saved = {len(saved)} : i64",
                       self._hint_attr()])),
                   result_attrs={0: "act.loss"}, arg_attrs=self._index_range_attrs())
        g = Graph()
        bargs = [V(g.fresh(f"saved{i}"), v.shape, v.dtype) for i, v in enumerate(saved)]
        _set_batch(g, bargs)
        tangent = V(g.fresh("tangent"), (), "f32")
        if seed_saved:
            g.dropout_seed = bargs[-1]
        bw = Lowerer(g, "backward", self.constants)
        self._saved_in_backward(bw, None, bargs[:len(self.t.saved)])
        n = len(self.t.saved)
        g.storage_of = {ph: (root, bargs[n + i]) for i, (ph, root) in enumerate(roots)}
        bw.env[self.t.bw_tangents[0]] = tangent
        bw.run(self.t.backward.graph.nodes)
        bwd = func(f"{self.name}_backward", bargs + [tangent], self._gradients(bw), g.lines,
                   attrs=self._hint_attr())
        return fwd + "\n" + bwd

    def dynamic(self, spec, batch, form="joint"):
        """The joint (or split) form for every batch size: the trace's
        symbols (spec, from dynamic.batch_symbols) at `batch`, which the
        step's `act.batch_hint` records. Lowered at batch and another batch,
        which must give the same text: a lowering that wrote a number
        derived from the batch into the step is refused, with the line."""
        texts = []
        self.batch_hint = batch  # (the heuristics' size of `?`: TrainingGraph.h)
        for n in (batch, other_batch(batch)):
            apply(spec, n)
            texts.append(getattr(self, form)())
        apply(spec, batch)
        if texts[0] != texts[1]:
            for la, lb in zip(texts[0].splitlines(), texts[1].splitlines()):
                if la != lb:
                    break
            raise DynamicBatchError(
                f"a lowering writes a size that depends on the batch into the step "
                f"(at batch {batch}: `{la.strip()}`; at {other_batch(batch)}: `{lb.strip()}`)")
        if not any(isinstance(d, Sym) for ph in self.t.fw_placeholders
                   for d in ph.meta.get("act_shape") or ()):
            raise DynamicBatchError("no argument of the step has the batch as a dimension")
        return texts[0]

    def saved_argument_bytes(self):
        """Bytes of the non-parameter arguments the backward reads (act's
        report leaves arguments out: their memory exists anyway)."""
        roots = set()
        nparams = len(self.t.params)
        for s in self.t.saved:
            chain = self.t.view_chain(s)
            if chain:
                index = self.t.fw_placeholders.index(chain[0])
                if index >= nparams:
                    roots.add(self.t.placeholder_args[index])
        return sum(self.t.args[i].numel() * self.t.args[i].element_size() for i in roots)


def _set_batch(g, args):
    """The graph's batch N (Graph.batch): the first argument dim that is N."""
    for v in args:
        for i, d in enumerate(v.shape):
            if isinstance(d, Sym) and d.k == 1:
                g.batch = (v, i)
                return
    if any(isinstance(d, Sym) for v in args for d in v.shape):
        raise DynamicBatchError("no argument of the step has the batch itself as a dimension "
                                "(only multiples of it)")


def header(name, form, args):
    return (f"// {name}: {form} form, exported by python3 -m act.export "
            f"{' '.join(args)}\n")
