"""What differs between the PyTorch versions act's front end runs on:
Debian 12's torch 1.13 (the normal test command), Debian 13's 2.6
(scripts/torch2.sh) and a GPU machine's 2.x. Every test of the version in
the Python front end is here; the rest of act reads these names.
"""

import operator

import torch

VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
TORCH2 = VERSION >= (2, 0)


def overload(name):
    """aten's `op.overload` by its name ("upsample_linear1d_backward.vec"),
    or None where this version has no such overload (a decomposition or
    lowering of it is then not registered)."""
    packet, _, over = name.partition(".")
    packet = getattr(torch.ops.aten, packet, None)
    try:
        return getattr(packet, over or "default") if packet is not None else None
    except AttributeError:
        return None


# Ops act lowers itself in every version (act.aten) whose names differ by
# version: 2.x traces BatchNorm as the `_native_batch_norm_legit` family
# (functionalized: the running statistics' new values are results), 1.13
# as native_batch_norm; act lowers both alike.
BATCH_NORM_OPS = ("_native_batch_norm_legit_functional", "_native_batch_norm_legit",
                  "_native_batch_norm_legit_no_training")


def aot_trace(step, args, decompositions):
    """Runs `step(*args)` traced by AOTAutograd (functorch's aot_function,
    the default partition, `decompositions`); returns (graphs, result,
    mutated): graphs["forward"] now and graphs["backward"] once the caller
    has run the result's backward; `mutated` the number of arguments the
    step wrote (drop_mutation_outputs)."""
    import warnings

    from functorch.compile import aot_function, default_partition
    graphs = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind] = gm
            return gm
        return compiler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = aot_function(step, keep("forward"), keep("backward"),
                          partition_fn=default_partition, decompositions=decompositions)
        versions = [a._version for a in args]
        result = fn(*args)
    mutated = sum(a._version != v for a, v in zip(args, versions))
    return graphs, result, mutated


def normalize_forward(forward, mutated):
    """The forward graph as 1.13 traces it, for 2.x: its first `mutated`
    outputs, the new values of the inputs the step writes (its runtime
    wrapper copies them back; act's lowering of batch norm gives the
    running statistics' updates itself), are removed; a training-mode
    batch norm's new running statistics, which 2.x saves for
    native_batch_norm_backward (training mode does not read them), are
    replaced by the old ones, arguments as in 1.13 (nothing saved)."""
    if not TORCH2:
        return
    out = next(n for n in forward.graph.nodes if n.op == "output")
    values = list(out.args[0][mutated:])
    for i, v in enumerate(values):
        if (v.op == "call_function" and v.target is operator.getitem and v.args[1] in (3, 4)
                and str(v.args[0].target) == "aten._native_batch_norm_legit_functional.default"
                and v.args[0].args[5]):
            values[i] = v.args[0].args[v.args[1]]
    out.args = (tuple(values),)
    forward.graph.eliminate_dead_code()
    forward.recompile()
