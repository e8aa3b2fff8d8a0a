//===- TrainingGraph.h - forward/backward split, saved values ---*- C++ -*-===//
//
// Finds the training graphs of a module (docs/Design.md: joint and split
// forms), classifies their ops as forward or backward, and lists the saved
// activations: tensors defined in the forward pass and used in the backward
// pass, each with a stable id.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_TRAININGGRAPH_H
#define ACT_ANALYSIS_TRAININGGRAPH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::act {

/// Attribute names of the training-graph conventions (docs/Design.md).
/// A result attribute marking the loss of a joint step (default: result 0).
inline constexpr llvm::StringLiteral kLossAttrName = "act.loss";
/// On a split forward function: the symbol of its backward function.
inline constexpr llvm::StringLiteral kBackwardAttrName = "act.backward";
/// On a split forward function: how many of its last results are saved for
/// the backward function, which takes them as its first arguments.
inline constexpr llvm::StringLiteral kNumSavedAttrName = "act.num_saved";

/// On a step whose batch dimension is dynamic (`?`): the batch it was traced
/// at (an i64), written by the exporter. Heuristics that weigh bytes and
/// operations (which values to encode, recompute) size its dynamic dims
/// with it, so that they decide as for the static step of that batch.
inline constexpr llvm::StringLiteral kBatchHintAttrName = "act.batch_hint";

/// An argument attribute: the tensor<K x i64> of per-tensor seeds (indexed by
/// id) that stochastic encodings draw from; act-run and the runtime fill it.
inline constexpr llvm::StringLiteral kSeedsAttrName = "act.seeds";

/// An argument attribute: the tensor<K x i32> of per-tensor bit widths
/// (indexed by id) that #act.runtime_quant encodes read. Its value is the
/// widths the step is planned for (array<i32>, 0 for ids that take none);
/// the runtime fills the argument from its own table, which starts there.
inline constexpr llvm::StringLiteral kBitsAttrName = "act.bits";
/// Beside act.bits: per id, the widths its encoding allows, a mask with bit
/// log2(b) set for width b (0 for ids that take none).
inline constexpr llvm::StringLiteral kBitChoicesAttrName = "act.bit_choices";

/// An argument attribute on integer data (token ids, class targets) that an
/// op indexes with: {lower, upper : i64, [ignore : i64], [unsigned], use :
/// string}. Every element must lie in [lower, upper) (or equal `ignore`);
/// the step engine refuses other data before the step runs, naming `use`.
/// `unsigned`: the argument's i8 elements are uint8 data.
inline constexpr llvm::StringLiteral kIndexRangeAttrName = "act.index_range";

enum class GraphForm { Joint, Split };

/// Why a saved value is (not) encoded, as far as the graph alone decides.
enum class SaveStatus {
  /// Can be encoded.
  Encodable,
  /// Already held in encoded form (`value` is an `!act.encoded`).
  Encoded,
  /// Computed after the forward pass's last contraction or convolution (the
  /// logits and the loss computation): kept exact by default (GACT, Sec. 6).
  LossHead,
  /// Also a result of the function: its full-precision copy stays live.
  StaysLive,
  /// A backward use comes before the last forward use in program order.
  Interleaved,
  /// Not a ranked tensor: there is no layout to encode.
  Unranked,
  /// A backward op compares it for equality with another value (the
  /// gradient mask of amax, amin, max): a lossy encoding would change the
  /// comparison (no decoded element equals the exact maximum, 0/0).
  ComparedExactly,
  /// Per-row statistics: a float tensor of shape [..., K, 1] (K > 1) that a
  /// linalg.generic reads broadcast along its unit dimension (LayerNorm's
  /// mean and reciprocal standard deviation, a softmax's maximum or sum).
  /// The backward shifts or scales every element of a row by them, so a
  /// code's error is the whole row's and does not average out (a bias:
  /// docs/Tuning.md); they are 1/C of their rows' bytes. Kept exact.
  RowStatistics,
};

llvm::StringRef stringifySaveStatus(SaveStatus status);

/// One activation the forward pass keeps for the backward pass.
struct SavedValue {
  /// What crosses from forward to backward: the tensor, or after
  /// act-insert-encode-decode its `!act.encoded` form.
  Value value;
  /// The full-precision tensor (`value`, or the input of its act.encode).
  Value origin;
  /// Stable id: the rank of `origin` among the graph's saved values in
  /// program order of their producers (numbering continues across the graphs
  /// of a module). After insertion, the act.encode's `id`.
  int64_t id = -1;
  SaveStatus status = SaveStatus::Encodable;
  /// The last forward op (in the forward function's block) that reads
  /// `origin`; null when only the backward reads it.
  Operation *lastForwardUse = nullptr;
  /// Joint form: the first backward op that reads `value`.
  Operation *firstBackwardUse = nullptr;
  /// Split form: the positions among the forward function's results (and the
  /// backward function's arguments, counted from 0) where it crosses.
  llvm::SmallVector<unsigned, 1> savedPositions;

  /// The op that defines `origin`.
  Operation *getProducer() const { return origin.getDefiningOp(); }
  /// The type of the full-precision tensor (null if not a ranked tensor).
  RankedTensorType getTensorType() const;
};

/// A training graph in one of the two forms of docs/Design.md.
class TrainingGraph {
public:
  GraphForm form = GraphForm::Joint;
  /// Joint: the step function. Split: the forward function.
  func::FuncOp forward;
  /// Split only: the backward function.
  func::FuncOp backward;
  /// The loss (always in joint form; in split form when one can be told).
  Value loss;
  /// The saved values, in id order.
  llvm::SmallVector<SavedValue> saved;

  /// True for ops (of the forward function's block) of the forward pass.
  bool isForward(Operation *op) const;
  /// Position of a top-level op in its block (program order).
  unsigned getPosition(Operation *op) const { return position.lookup(op); }
  /// Number of saved positions of a split forward function.
  unsigned getNumSaved() const { return numSaved; }

private:
  friend class TrainingGraphBuilder;
  llvm::DenseSet<Operation *> forwardOps;
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned numSaved = 0;
};

/// Finds and analyzes every training graph of `module`: each split pair (a
/// function with `act.backward` and `act.num_saved`) and every other public
/// function with a body (joint form). Emits errors with locations and fails
/// on input it cannot handle.
FailureOr<llvm::SmallVector<TrainingGraph>>
analyzeTrainingGraphs(ModuleOp module);

/// Calls `fn` on every value of `block` that `op`, an op of `block`, reads:
/// its operands and the values its regions capture from `block`.
void forEachValueRead(Operation *op, Block *block,
                      function_ref<void(Value)> fn);

/// Bytes of a tensor's full-precision data; std::nullopt if its shape is not
/// static. With `dynamicSize`, dynamic dims count as that size.
std::optional<int64_t>
getTensorBytes(RankedTensorType type,
               std::optional<int64_t> dynamicSize = std::nullopt);

/// The `act.batch_hint` of the function that holds `value`, if any.
std::optional<int64_t> getBatchHint(Value value);

/// The argument of `func` marked `act.seeds`, or null.
BlockArgument getSeedsArgument(func::FuncOp func);

/// The `act.seeds` argument of `func` with at least `count` slots: the
/// existing one, widened if it is shorter (its readers extract slots at
/// constant indices, so they stay valid), or a new last argument. Null if
/// the function cannot take one. Shared by every pass that draws random
/// numbers (the encodings' ids, compute quantization's gradients).
Value getOrCreateSeeds(func::FuncOp func, int64_t count);

/// The argument of `func` marked `act.bits`, or null.
BlockArgument getBitsArgument(func::FuncOp func);

/// The `act.bits` argument of `func` (a new last argument, or the existing
/// one widened) with slot `id` planned at `bits` among `choices`. Null if
/// the function cannot take one.
Value getOrCreateBits(func::FuncOp func, int64_t id, unsigned bits,
                      ArrayRef<unsigned> choices);

/// Contractions and convolutions (linalg ops that are either, TOSA's
/// matmul and convolutions): what ends the forward's loss head and what
/// compute quantization quantizes.
bool isContractionLike(Operation *op);

} // namespace mlir::act

#endif // ACT_ANALYSIS_TRAININGGRAPH_H
