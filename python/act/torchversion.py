"""What differs between the PyTorch versions act's front end runs on:
Debian 12's torch 1.13 (the normal test command), Debian 13's 2.6
(scripts/torch2.sh) and a GPU machine's 2.x. Every test of the version in
the Python front end is here; the rest of act reads these names.
"""

import contextlib
import math
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


def aot_trace(step, args, decompositions, shapes_only=False):
    """Runs `step(*args)` traced by AOTAutograd (functorch's aot_function,
    the default partition, `decompositions`); returns (graphs, result,
    mutated): graphs["forward"] now and graphs["backward"] once the caller
    has run the result's backward; `mutated` the positions of the arguments
    the step wrote (normalize_forward).

    shapes_only: nothing is computed at the arguments' size. The trace runs
    on fake tensors (2.x always does; 1.13 with functorch's
    use_fake_tensor and meta kernels for what it lacks, meta_kernels), and
    the traced forward and backward, as PyTorch runs them after tracing,
    only return empty tensors of their outputs' shapes: the result and the
    gradients hold no values. A trace 1.13's fake tensors refuse (a real
    tensor the step captured, a shape that depends on the data) raises
    FakeTraceError: the caller traces with real tensors instead."""
    import warnings

    from functorch.compile import aot_function, default_partition
    graphs = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind] = gm
            return _shapes_of_outputs(gm) if shapes_only else _runnable(gm)
        return compiler

    with warnings.catch_warnings(), _traced_as_in_1_13(), _fake_in_1_13(shapes_only):
        warnings.simplefilter("ignore")
        fn = aot_function(step, keep("forward"), keep("backward"),
                          partition_fn=default_partition, decompositions=decompositions)
        versions = [a._version for a in args]
        if shapes_only and not TORCH2:
            try:
                result = fn(*args)
            except FakeTraceError:
                raise
            except Exception as e:  # noqa: BLE001 (whatever 1.13's fake tensors refuse)
                raise FakeTraceError(f"{type(e).__name__}: {e}") from e
        else:
            result = fn(*args)
    mutated = [i for i, (a, v) in enumerate(zip(args, versions)) if a._version != v]
    return graphs, result, mutated


class FakeTraceError(Exception):
    """1.13's fake tensors could not trace the step (aot_trace's
    shapes_only)."""


def _shapes_of_outputs(gm):
    """A stand-in for running traced graph `gm`: empty tensors of its
    outputs' shapes and dtypes (from the trace's tensor_meta)."""
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    metas = [getattr(n, "meta", {}).get("tensor_meta") if n is not None else None
             for n in out]
    if any(n is not None and m is None for n, m in zip(out, metas)):
        raise FakeTraceError("an output of the traced graph has no shape")

    def run(*args):
        return [None if m is None else torch.empty(m.shape, dtype=m.dtype) for m in metas]
    return run


_META_LIBRARY = []


def meta_kernels():
    """Meta kernels 1.13 lacks for ops its fake tensors meet in a training
    step (2.x has them): without one, a fake tensor runs the op's real
    kernel on zeros of the full size (convolution_backward: most of a CNN's
    trace at batch 512). Registered once per process."""
    if TORCH2 or _META_LIBRARY:
        return
    lib = torch.library.Library("aten", "IMPL", "Meta")

    def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
                             dilation, transposed, output_padding, groups, output_mask):
        grads = (input.new_empty(input.shape) if output_mask[0] else None,
                 weight.new_empty(weight.shape) if output_mask[1] else None,
                 grad_output.new_empty(bias_sizes) if output_mask[2] and bias_sizes is not None
                 else None)
        return grads
    lib.impl("convolution_backward", convolution_backward)
    _META_LIBRARY.append(lib)


@contextlib.contextmanager
def _fake_in_1_13(enabled):
    """1.13: AOTAutograd traces on fake tensors (functorch's config), with
    the meta kernels it lacks."""
    if TORCH2 or not enabled:
        yield
        return
    from functorch._src import config
    meta_kernels()
    previous = config.use_fake_tensor
    config.use_fake_tensor = True
    try:
        yield
    finally:
        config.use_fake_tensor = previous


def data_dependent_shape(error):
    """Whether `error` is 2.x's refusal to trace an op whose result's shape
    depends on the data (x[mask], nonzero, masked_select: its fake tensors
    have no data; 1.13 traced the example batch's shape)."""
    return type(error).__name__ in ("DynamicOutputShapeException", "DataDependentOutputException")


def _runnable(gm):
    """What PyTorch runs of a traced graph (the step's result and its
    backward while tracing, the check against eager): 2.x's graph as
    traced, its views as reshapes. The trace follows the strides of
    PyTorch's meta functions, and some of 2.x's differ from its CPU
    kernels' (_log_softmax_backward_data's output: the trace views what the
    kernel gives as not viewable). act reads values, not strides: the
    exported graph is the traced one."""
    if not TORCH2:
        return gm
    import copy
    run = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    views = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default}
    for n in run.graph.nodes:
        if n.op == "call_function" and n.target in views:
            n.target = torch.ops.aten.reshape.default
    run.recompile()
    return run


@contextlib.contextmanager
def math_kernels():
    """2.x: scaled_dot_product_attention as its math (matmuls, softmax,
    dropout: ops act lowers, differentiated by autograd, as 1.13's
    attention was), not the fused CPU kernel and its backward; recurrent
    layers as their cells, not oneDNN's fused layer (mkldnn_rnn_layer).
    The trace runs under it, and so does the eager count of saved bytes
    that is compared with act's (hooks_bytes_as_traced)."""
    if not TORCH2:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.MATH]), torch.backends.mkldnn.flags(enabled=False):
        yield


@contextlib.contextmanager
def _traced_as_in_1_13():
    """2.x's differences while tracing: fake tensors refuse a real one made
    inside the step (`torch.tensor([1, -1])` as an index, a constant mask),
    allowed as 1.13 allowed it (the trace captures it as a constant); the
    math kernels."""
    if not TORCH2:
        yield
        return
    import torch._functorch.aot_autograd as aot
    construct = aot.construct_fake_mode

    def allowing(*args, **kwargs):
        mode, shape_env = construct(*args, **kwargs)
        mode.allow_non_fake_inputs = True
        return mode, shape_env
    aot.construct_fake_mode = allowing
    # nn.Transformer's decoder asks whether its mask is the causal one by
    # reading it (data-dependent, which fake tensors refuse): not causal,
    # so the mask itself is applied (the same attention).
    import torch.nn.modules.transformer as transformer
    detect = transformer._detect_is_causal_mask
    transformer._detect_is_causal_mask = lambda mask, is_causal=None, size=None: bool(is_causal)
    try:
        with math_kernels():
            yield
    finally:
        aot.construct_fake_mode = construct
        transformer._detect_is_causal_mask = detect


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """PyTorch 2's F.scaled_dot_product_attention written as ATen's math
    kernel (_scaled_dot_product_attention_math), its dropout through
    F.dropout: export.random_ops puts it in place so that attention's
    dropout draws act's Philox masks, the same in the trace and in the
    float64 reference (ATen's kernel would draw from torch's generator)."""
    import torch.nn.functional as F
    length, source = query.size(-2), key.size(-2)
    s = math.sqrt(1.0 / math.sqrt(query.size(-1)) if scale is None else scale)
    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    attn = (query * s) @ (key.transpose(-2, -1) * s)
    if is_causal:
        causal = torch.ones(length, source, dtype=torch.bool).tril()
        attn = attn.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        attn = (attn.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                else attn + attn_mask)
    attn = torch.softmax(attn, -1)
    if dropout_p > 0:
        attn = F.dropout(attn, dropout_p)
    return attn @ value


@contextlib.contextmanager
def checkpoint_regions():
    """Yields [depth]: how many torch.utils.checkpoint regions (the
    non-reentrant form, where export.reentrant_checkpoints sends the
    reentrant one) are running. 1.13's trace recomputes a region in the
    traced backward; 2.x's AOTAutograd saves its values instead, so what
    eager recomputes (a BatchNorm that counts its batches twice) is told
    by this."""
    import torch.utils.checkpoint as ckpt
    depth = [0]
    name = "_checkpoint_without_reentrant_generator" if TORCH2 else "_checkpoint_without_reentrant"
    original = getattr(ckpt, name)

    if TORCH2:
        def wrapped(*args, **kwargs):
            depth[0] += 1
            try:
                yield from original(*args, **kwargs)
            finally:
                depth[0] -= 1
    else:
        def wrapped(*args, **kwargs):
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
    setattr(ckpt, name, wrapped)
    try:
        yield depth
    finally:
        setattr(ckpt, name, original)


def storage(t):
    """(key, bytes) of the storage under tensor t (untyped_storage in 2.x;
    1.13's typed storage counted in elements)."""
    if TORCH2:
        st = t.untyped_storage()
        return st.data_ptr(), st.nbytes()
    st = t.storage()
    return st.data_ptr(), st.size() * t.element_size()


def normalize_forward(forward, mutated):
    """The forward graph as 1.13 traces it, for 2.x: its first outputs (one
    per argument in `mutated`), the new values of the inputs the step
    writes (its runtime wrapper copies them back; act's lowering of batch
    norm gives the running statistics' updates itself), are removed; a training-mode
    batch norm's new running statistics, which 2.x saves for
    native_batch_norm_backward (training mode does not read them), are
    replaced by the old ones, arguments as in 1.13 (nothing saved).
    Returns the arguments in `mutated` whose new value the forward also
    reads (spectral normalization's power iteration): 1.13 could not trace
    those, and the step would not carry the new value to the next."""
    if not TORCH2:
        return []
    out = next(n for n in forward.graph.nodes if n.op == "output")
    reread = [i for i, v in zip(mutated, out.args[0]) if len(v.users) > 1]
    values = list(out.args[0][len(mutated):])
    for i, v in enumerate(values):
        if (v.op == "call_function" and v.target is operator.getitem and v.args[1] in (3, 4)
                and str(v.args[0].target) == "aten._native_batch_norm_legit_functional.default"
                and v.args[0].args[5]):
            values[i] = v.args[0].args[v.args[1]]
    out.args = (tuple(values),)
    forward.graph.eliminate_dead_code()
    forward.recompile()
    return reread


# The aten-to-aten decompositions (torch._decomp.decompositions) of Debian
# 12's torch 1.13, by overload name: the set act's closed op set
# (docs/Exporter.md) was built on. Under 2.x only these of PyTorch's own
# are taken (2.x decomposes more ops, among them ops act lowers itself, and
# moved some of these to torch._refs: act.decomp.FALLBACKS has them), so
# both versions reach act.aten with the same ops. test_torchversion.py
# checks the list against 1.13's table.
# Ops PyTorch 2 traces that 1.13 did not have; PyTorch's own aten-to-aten
# decompositions of them are taken too.
NEW_IN_2 = frozenset((
    "_unsafe_index.Tensor", "_unsafe_index_put.default", "_unsafe_masked_index.default",
    "_unsafe_masked_index_put_accumulate.default", "_safe_softmax.default",
    "_prelu_kernel_backward.default",
))

def takes_decomposition(name):
    """Whether the exporter takes PyTorch's own aten-to-aten decomposition
    of the overload `name` ("rsub.Scalar"): all of 1.13's; under 2.x those
    1.13 had (DECOMPOSED_1_13) and those of ops new in 2.x (NEW_IN_2)."""
    return not TORCH2 or name in DECOMPOSED_1_13 or name in NEW_IN_2


DECOMPOSED_1_13 = frozenset((
    "_adaptive_avg_pool2d.default", "_adaptive_avg_pool2d.out", "_euclidean_dist.default",
    "_euclidean_dist.out", "_fused_dropout.default", "_fused_dropout.out", "_log_softmax.default",
    "_log_softmax.out", "_log_softmax_backward_data.default", "_log_softmax_backward_data.out",
    "_reshape_alias.default", "_softmax.default", "_softmax.out",
    "_softmax_backward_data.default", "_softmax_backward_data.out", "_to_copy.default",
    "_to_copy.out", "_unsafe_view.default", "_unsafe_view.out", "add_.Scalar", "add_.Tensor",
    "add_.t", "addcmul.default", "addcmul.out", "addmm.default", "addmm.out",
    "binary_cross_entropy.default", "binary_cross_entropy.out",
    "binary_cross_entropy_backward.default", "binary_cross_entropy_backward.grad_input",
    "binary_cross_entropy_with_logits.default", "binary_cross_entropy_with_logits.out",
    "col2im.default", "col2im.out", "cudnn_batch_norm.default", "cudnn_batch_norm.out",
    "cudnn_batch_norm_backward.default", "cudnn_batch_norm_backward.out", "detach.default",
    "diagonal_backward.default", "diagonal_backward.out", "dot.default", "dot.out", "elu.default",
    "elu.out", "elu_backward.default", "elu_backward.grad_input", "embedding.default",
    "embedding.out", "embedding_dense_backward.default", "embedding_dense_backward.out",
    "gelu_backward.default", "gelu_backward.grad_input", "glu_backward.default",
    "glu_backward.grad_input", "grid_sampler_2d.default", "grid_sampler_2d.out",
    "hardshrink_backward.default", "hardshrink_backward.grad_input", "hardsigmoid.default",
    "hardsigmoid.out", "hardsigmoid_backward.default", "hardsigmoid_backward.grad_input",
    "hardswish.default", "hardswish.out", "hardswish_.default", "hardswish_backward.default",
    "hardswish_backward.out", "hardtanh_.default", "hardtanh_backward.default",
    "hardtanh_backward.grad_input", "huber_loss_backward.default", "huber_loss_backward.out",
    "im2col.default", "im2col.out", "index_add_.default", "is_same_size.default",
    "leaky_relu_.default", "leaky_relu_backward.default", "leaky_relu_backward.grad_input",
    "lift.default", "lift.out", "lift_fresh.default", "log_sigmoid_backward.default",
    "log_sigmoid_backward.grad_input", "log_sigmoid_forward.default",
    "log_sigmoid_forward.output", "logit_backward.default", "logsumexp.default",
    "mish_backward.default", "mse_loss.default", "mse_loss.out", "mse_loss_backward.default",
    "mse_loss_backward.grad_input", "mul_.Scalar", "mul_.Tensor", "mul_.t", "mv.default",
    "mv.out", "native_batch_norm.default", "native_batch_norm.out",
    "native_batch_norm_backward.default", "native_batch_norm_backward.out",
    "native_dropout.default", "native_dropout.out", "native_dropout_backward.default",
    "native_dropout_backward.out", "native_group_norm.default",
    "native_group_norm_backward.default", "native_group_norm_backward.out",
    "native_layer_norm_backward.default", "native_layer_norm_backward.out",
    "nll_loss2d_backward.default", "nll_loss2d_backward.grad_input", "nll_loss_backward.default",
    "nll_loss_backward.grad_input", "nll_loss_forward.default", "nll_loss_forward.output",
    "norm.Scalar", "norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype", "norm.ScalarOpt_dtype",
    "norm.ScalarOpt_dtype_out", "norm.Scalar_out", "norm.dtype_out", "norm.names_ScalarOpt_dim",
    "norm.names_ScalarOpt_dim_dtype", "norm.names_dtype_out", "norm.names_out", "norm.out",
    "prelu_backward.default", "prelu_backward.out", "relu_.default",
    "rrelu_with_noise_backward.default", "rrelu_with_noise_backward.out", "rsub.Scalar",
    "rsub.Tensor", "select_backward.default", "select_backward.out", "sigmoid_backward.default",
    "sigmoid_backward.grad_input", "silu.default", "silu.out", "silu_.default",
    "silu_backward.default", "silu_backward.grad_input", "slice.Tensor", "slice_backward.default",
    "slice_backward.out", "soft_margin_loss.default", "soft_margin_loss.out",
    "soft_margin_loss_backward.default", "soft_margin_loss_backward.grad_input",
    "softplus_backward.default", "softplus_backward.grad_input", "softshrink_backward.default",
    "softshrink_backward.grad_input", "split.Tensor", "split_with_sizes.default",
    "std.correction", "sub_.Scalar", "sub_.Tensor", "tanh_backward.default",
    "tanh_backward.grad_input", "threshold_backward.default", "threshold_backward.grad_input",
    "upsample_bicubic2d.default", "upsample_bicubic2d.vec", "upsample_bilinear2d.vec",
    "var.correction", "xlogy.Tensor",
))
