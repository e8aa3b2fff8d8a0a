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

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::act {

/// The encoding of a saved value, or null to keep it as is.
using EncodingChoice =
    llvm::function_ref<EncodingAttrInterface(const SavedValue &)>;

/// Encodes the chosen saved values of `graph` (one training graph) and
/// updates the split form's function types. Under a lossy encoding, backward
/// ops that read a float value only through a sign test (`cmpf ogt|oge|une
/// x, 0` in a linalg.generic: ReLU's backward) read an exact 1-bit
/// `#act.mask` of it instead; a value read only that way is stored as the
/// mask alone (split form: in the value's place); otherwise the split form
/// adds the mask as one more saved value (act.num_saved grows).
void insertEncodings(TrainingGraph &graph, EncodingChoice choose);

/// Whether every backward use of the saved value reads it only through a
/// sign test (ReLU's backward; split form: of one predicate): under any lossy
/// encoding insertEncodings then stores a 1-bit #act.mask alone.
bool isReadOnlyThroughSignTests(TrainingGraph &graph, const SavedValue &saved);

/// Whether a saved value may be encoded at all: not an argument-like or
/// interleaved value; loss-head values only when `lossHead`; not below
/// `minBytes` (tensors of unknown size are never skipped by it).
bool isEncodingCandidate(const SavedValue &saved, bool lossHead,
                         int64_t minBytes);

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_TRANSFORMS_INSERTION_H
