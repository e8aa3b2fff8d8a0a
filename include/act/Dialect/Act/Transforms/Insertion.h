//===- Insertion.h - place act.encode / act.decode --------------*- C++ -*-===//
//
// The placement every encoding policy shares (act-insert-encode-decode's
// uniform policy, act-allocate-bits' per-tensor bits): given the analyzed
// training graphs and a choice per saved value, put an act.encode right
// after the value's last forward use and an act.decode before its first
// backward use (Gist's delayed precision reduction), in both graph forms;
// stochastic encodings read their seed from the step's `act.seeds`
// argument, which is added on first use.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_TRANSFORMS_INSERTION_H
#define ACT_DIALECT_ACT_TRANSFORMS_INSERTION_H

#include "act/Analysis/FewBit.h"
#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>
#include <optional>

namespace mlir::act {

/// The encoding of a saved value, or null to keep it as is.
using EncodingChoice =
    llvm::function_ref<EncodingAttrInterface(const SavedValue &)>;

/// Few-bit backward (act/Analysis/FewBit.h): a float saved value that the
/// backward reads only through one elementwise function phi(x) (an
/// activation's derivative: linalg.generics computing functions of x alone,
/// then elementwise consumers whose bodies read one value computed from
/// them), phi saturating at both ends of `options`' range and not x
/// itself, is stored as `bits`-bit interval codes (#act.fewbit) with phi's
/// optimal table; the consumers read the decoded table value. `bits` 0: off.
struct FewBitPolicy {
  unsigned bits = 0;
  FewBitOptions options;
};

/// Checks a pass's few-bit options (`range`: empty or A,B; `sigma` > 0: the
/// N(0, sigma^2) weight, 0: uniform) into FewBitOptions; a diagnostic at the
/// option (`pass`: the pass's name) otherwise.
FailureOr<FewBitOptions> getFewBitOptions(MLIRContext *context, StringRef pass,
                                          ArrayRef<double> range, double sigma);

/// An optimal table and its error L (FewBit.h, in the policy's weight).
struct FewBitTable {
  FewBitEncodingAttr encoding;
  double error = 0.0;
};

/// The optimal tables of `saved`'s phi at 1..policy.bits bits (element
/// b - 1, all from the dynamic program of policy.bits), or none when
/// getFewBitEncoding is null.
SmallVector<FewBitTable> getFewBitTables(TrainingGraph &graph,
                                         const SavedValue &saved,
                                         const FewBitPolicy &policy);

/// The #act.fewbit encoding (optimal table of phi) for `saved` under
/// `policy`, or null when the backward does not read it only through phi
/// (or reads it through a sign test, which a mask stores exactly).
FewBitEncodingAttr getFewBitEncoding(TrainingGraph &graph,
                                     const SavedValue &saved,
                                     const FewBitPolicy &policy);

/// Gist's narrow integers: the #act.index encoding of an integer saved
/// value whose range the IR proves to be [0, 2^bits) for a bits below its
/// width (a linalg.generic over static loops whose output, initialized by a
/// constant fill, takes values computed from linalg.index, constants, +, -,
/// * and selects: the exporter's window-local max-pool indices), or null.
/// Lossless by construction.
IndexEncodingAttr getIndexEncoding(const SavedValue &saved);

/// Whether the IR makes `v` zero wherever a ReLU-like op zeroes it, so
/// that sparse storage (#act.sparse) can pay: the result of a generic that
/// yields max(a, 0) or a select with a zero branch, a max reduction (max
/// pool) of such a value, or views and zero padding of one.
bool hasStructuralZeros(Value v);

/// Encodes the chosen saved values of `graph` (one training graph) and
/// updates the split form's function types. Under a lossy encoding, backward
/// ops that read a float value only through a sign test (`cmpf ogt|oge|une
/// x, 0` in a linalg.generic: ReLU's backward) read an exact 1-bit
/// `#act.mask` of it instead; a value read only that way is stored as the
/// mask alone (split form: in the value's place); otherwise the split form
/// adds the mask as one more saved value (act.num_saved grows). Under a
/// lossy choice, a value read only through phi(x) gets `fewBit`'s table
/// instead (getFewBitEncoding); a chosen #act.fewbit is placed that way.
/// Which values are recomputed in the backward instead of stored
/// (#act.recompute): those whose recomputation costs at most
/// `maxOperationsPerByte` operations per byte of the value (0: only
/// reshapes, tensor.expand_shape/collapse_shape, of a value stored anyway:
/// the same buffer, never stored twice), among `isCandidate` (default:
/// all). Joint form only.
struct RecomputePolicy {
  double maxOperationsPerByte = 0;
  std::function<bool(const SavedValue &)> isCandidate;
};

/// The forward ops (in program order) that recompute `saved` from the
/// step's arguments and values `isStored` says the backward has, and what
/// they cost: the slice of `saved`'s producer, memory-effect free, at most
/// 48 ops, not through other saved values (`isSaved`) that are not stored,
/// at most `maxOperationsPerByte` operations (countOperations: a linalg
/// op's iterations times its body's ops) per byte of the value.
struct RecomputeSlice {
  SmallVector<Operation *> ops;
  int64_t operations = 0;
};
std::optional<RecomputeSlice>
getRecomputeSlice(TrainingGraph &graph, const SavedValue &saved,
                  function_ref<bool(Value)> isStored,
                  function_ref<bool(Value)> isSaved,
                  double maxOperationsPerByte);

/// The saved values insertEncodings recomputes instead of storing under
/// `recompute` (joint form; none in the split form), in id order, with
/// their slices. The bit allocator leaves them out of its budget: they
/// cost no storage whatever their bits.
SmallVector<std::pair<const SavedValue *, RecomputeSlice>>
planRecomputation(TrainingGraph &graph, const FewBitPolicy &fewBit = {},
                  const RecomputePolicy &recompute = {});

void insertEncodings(TrainingGraph &graph, EncodingChoice choose,
                     const FewBitPolicy &fewBit = {},
                     const RecomputePolicy &recompute = {});

/// Whether `root` holds an act.encode (a graph act's passes already ran on).
bool hasEncodings(Operation *root);

/// Whether every backward use of the saved value reads it only through a
/// sign test (ReLU's backward; split form: of one predicate): under any lossy
/// encoding insertEncodings then stores a 1-bit #act.mask alone.
bool isReadOnlyThroughSignTests(TrainingGraph &graph, const SavedValue &saved);

/// The value encoding that `text` names (`option` of `pass`): an act encoding
/// whose decode is the value itself (not a predicate such as #act.mask);
/// null for an empty `text`; a diagnostic at the option otherwise.
FailureOr<EncodingAttrInterface> parseValueEncoding(MLIRContext *context,
                                                    StringRef pass,
                                                    StringRef option,
                                                    StringRef text);

/// The encoding a loss-head value gets under the placing passes' `loss-head`
/// option (`lossHead`, null: none): `lossHead` for a loss-head value of at
/// least `minBytes` that it can hold, null otherwise.
EncodingAttrInterface getLossHeadEncoding(const SavedValue &saved,
                                          EncodingAttrInterface lossHead,
                                          int64_t minBytes);

/// Whether a saved value may be encoded at all: not an argument-like or
/// interleaved value; loss-head values only when `lossHead`; not below
/// `minBytes` (tensors of unknown size are never skipped by it).
bool isEncodingCandidate(const SavedValue &saved, bool lossHead,
                         int64_t minBytes);

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_TRANSFORMS_INSERTION_H
