"""PyTorch's element types as act's IR writes them (the exporter's and
act.aten's one table)."""

import torch

from .errors import ExportError

DTYPES = {torch.float32: "f32", torch.int64: "i64", torch.int32: "i32", torch.bool: "i1"}
# uint8 data (images, Atari frames, token bytes) crosses the step's boundary
# as its bytes (i8) and is widened to i32 (zero-extended) where the step
# reads it: every op reading it then computes what it computes on uint8, as
# long as no op produces new uint8 values (wrapping arithmetic): only the
# value-preserving ops below may have uint8 results (checked at tracing).
WIDENED = {torch.uint8: ("i8", "i32")}
UINT8_PRESERVING = {
    "aten.view.default", "aten._unsafe_view.default", "aten._reshape_alias.default",
    "aten.reshape.default", "aten.permute.default", "aten.transpose.int", "aten.t.default",
    "aten.slice.Tensor", "aten.select.int", "aten.expand.default", "aten.unsqueeze.default",
    "aten.squeeze.dim", "aten.squeeze.default", "aten.clone.default", "aten.alias.default",
    "aten.cat.default", "aten.stack.default", "aten.flip.default", "aten.roll.default",
    "aten.index.Tensor", "aten.gather.default", "aten.index_select.default",
    "aten.detach.default", "aten.split.Tensor", "aten.split_with_sizes.default",
    "aten.unbind.int", "aten.repeat.default", "aten.lift_fresh_copy.default",
    "aten.rot90.default", "aten._to_copy.default", "aten.contiguous.default",
}


def argument_dtype(t):
    """The element type of a step argument holding a tensor of dtype t."""
    return WIDENED[t][0] if t in WIDENED else mlir_dtype(t)


def mlir_dtype(t):
    if t not in DTYPES:
        raise ExportError(f"tensors of dtype {t} are not supported")
    return DTYPES[t]
