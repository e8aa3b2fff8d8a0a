"""Export a PyTorch training step to act's input IR (docs/Design.md's two forms).

    python3 -m act.export MODEL [--batch N] [--seed S] [-o DIR] [--dynamic-batch]

MODEL is one of act.models.MODELS or `file.py:factory`. AOTAutograd
(functorch's aot_function with the default partition) traces the step
`loss_fn(module(inputs), targets)` with the parameters as explicit inputs
into an aten forward graph returning `(loss, *saved)` and a backward graph
taking `(*saved, tangent)`; act.aten lowers each node. Written to DIR:

- `NAME.mlir`: the joint form, `@NAME_step(params..., inputs, targets) ->
  (loss {act.loss}, grads...)` with the gradients in parameter order;
- `NAME_split.mlir`: `@NAME_forward` -> (loss, saved...) marked
  `act.backward = @NAME_backward, act.num_saved`, and `@NAME_backward(saved...,
  tangent) -> grads...`;
- `NAME_inputs/*.npy`: the arguments (parameters, inputs, targets), and with
  `--batches K` the inputs and targets of K - 1 more mini-batches;
- `NAME_reference/`: loss.npy and grad_<i>.npy by eager autograd in float64;
- `NAME.json`: the manifest (arguments, files, saved-tensor bytes).

With --dynamic-batch both forms take every batch size (the batch dimension
`?`, `act.batch_hint` the traced batch; `dynamic`, below).

A saved value that is only a view of an argument (a transposed weight, a
flattened input) is not saved: the backward re-derives it from the argument,
as eager PyTorch would hold the argument itself.

The package, one layer per module (each imports only those before it, and
act.aten, act.dtypes and act.errors below them): `standins` (what the
trace runs in place of PyTorch's own: decompositions, traceable losses and
resizing, packed sequences, checkpoints), `randomness` (act's Philox
randomness in the trace and the reference), `trace` (Traced:
AOTAutograd's trace of the step and its checks), `dynamic` (which dims
and numbers of a trace are the batch: one step for every batch size),
`emit` (Lowerer and Exporter: the graphs as act's IR); above them `cli` (export() of a
model by name, act.models, and the command line: `from act.export.cli
import export`), which the package does not import, as it is a layer above
(python/tests/test_layers.py).
"""

from ..aten.core import dense_constant
from ..dtypes import DTYPES, UINT8_PRESERVING, WIDENED, argument_dtype, mlir_dtype
from ..errors import ExportError
from .standins import (OWN_LOWERINGS, affine_grid_traceable, copy_module, ctc_loss_static,
                       cross_entropy_static, decompositions, embedding_traceable,
                       gaussian_nll_static, grid_sample_traceable, interpolate_traceable,
                       local_response_norm_static, multi_margin_static, nll_loss_static,
                       one_hot_static, packed_sequences, pdist_static, quantile_static,
                       reentrant_checkpoints, reference_precision, static_losses,
                       substituted, traced_loss)
from .randomness import philox_keep, philox_uniform, random_ops
from .trace import (CHECK_BATCH, MAX_INLINE_CONSTANT, SHAPES_ONLY_ABOVE, VIEW_OPS, Traced,
                    check_classification, external_buffers_kept, external_modules,
                    first_examples, record, target_range)
from .dynamic import DynamicBatchError, batch_symbols, other_batch
from .emit import Exporter, Lowerer, header

__all__ = [
    "ExportError", "OWN_LOWERINGS", "affine_grid_traceable", "copy_module", "ctc_loss_static",
    "cross_entropy_static", "decompositions", "embedding_traceable", "gaussian_nll_static",
    "grid_sample_traceable", "interpolate_traceable", "local_response_norm_static",
    "multi_margin_static", "nll_loss_static", "one_hot_static", "packed_sequences",
    "pdist_static", "philox_keep", "philox_uniform", "quantile_static", "random_ops",
    "reentrant_checkpoints", "reference_precision", "static_losses", "substituted",
    "traced_loss", "CHECK_BATCH", "DTYPES", "MAX_INLINE_CONSTANT", "SHAPES_ONLY_ABOVE",
    "UINT8_PRESERVING", "VIEW_OPS", "WIDENED", "Traced", "argument_dtype",
    "check_classification", "external_buffers_kept", "external_modules", "first_examples",
    "mlir_dtype", "record", "target_range", "Exporter", "Lowerer", "dense_constant", "header",
    "DynamicBatchError", "batch_symbols", "other_batch",
]
