//===- InsertEncodeDecode.cpp - encode saved activations ------------------===//
//
// Places an act.encode right after the last forward use of every saved value
// and an act.decode right before its first backward use (Gist's delayed
// precision reduction), in both training-graph forms.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OptionLoc.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

namespace mlir::act {
#define GEN_PASS_DEF_ACTINSERTENCODEDECODEPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;

namespace {

struct InsertEncodeDecodePass
    : act::impl::ActInsertEncodeDecodePassBase<InsertEncodeDecodePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The encoding `saved` gets, or null (with a remark) when it stays as is.
  EncodingAttrInterface chooseEncoding(TrainingGraph &graph,
                                       const SavedValue &saved);

  EncodingAttrInterface uniform;
  /// The loss-head option's encoding (null: none).
  EncodingAttrInterface lossHeadEncoding;
  /// The float-format option's format (Gist's precision reduction under the
  /// lossless policy; nullopt: none).
  std::optional<FloatFormat> reducedFormat;
  llvm::SmallSet<int64_t, 8> include, exclude;
  FewBitPolicy fewBit;
};

} // namespace

LogicalResult InsertEncodeDecodePass::initialize(MLIRContext *context) {
  auto loc = [&](StringRef option) {
    return getOptionLoc(context, "act-insert-encode-decode", option);
  };
  for (auto [name, ids] :
       {std::pair<StringRef, ArrayRef<int64_t>>{"include", includeIds},
        {"exclude", excludeIds}})
    for (int64_t id : ids)
      if (id < 0)
        return emitError(loc(name), "act-insert-encode-decode: saved-value "
                                    "ids are not negative, got ")
               << id;
  include.insert(includeIds.begin(), includeIds.end());
  exclude.insert(excludeIds.begin(), excludeIds.end());
  if (!(recomputeCost >= 0.0) || !std::isfinite(recomputeCost))
    return emitError(loc("recompute-cost"),
                     "act-insert-encode-decode: recompute-cost must "
                     "be a finite number >= 0, got ")
           << double(recomputeCost);
  if (!(sparseDensity >= 0.0 && sparseDensity <= 1.0))
    return emitError(loc("sparse-density"),
                     "act-insert-encode-decode: sparse-density must be in "
                     "[0, 1], got ")
           << double(sparseDensity);
  if (minBytes < 0)
    return emitError(loc("min-bytes"),
                     "act-insert-encode-decode: min-bytes must not be "
                     "negative, got ")
           << int64_t(minBytes);
  reducedFormat = std::nullopt;
  if (!floatFormat.empty()) {
    reducedFormat = symbolizeFloatFormat(floatFormat);
    if (!reducedFormat)
      return emitError(loc("float-format"),
                       "act-insert-encode-decode: float-format must be one "
                       "of f16, bf16, fp10, e4m3, e5m2, got '")
             << floatFormat << "'";
    if (policy != EncodingPolicy::Lossless)
      return emitError(loc("float-format"),
                       "act-insert-encode-decode: float-format goes with "
                       "policy=lossless (Gist's precision reduction over its "
                       "lossless encodings); the uniform policy takes "
                       "encoding='#act.float<format = ")
             << floatFormat << ">'";
  }
  if (fewBits > 8)
    return emitError(loc("few-bit"),
                     "act-insert-encode-decode: few-bit must be in 0..8, got ")
           << unsigned(fewBits);
  fewBit.bits = fewBits;
  FailureOr<FewBitOptions> options = getFewBitOptions(
      context, "act-insert-encode-decode", fewBitRange, fewBitSigma);
  if (failed(options))
    return failure();
  fewBit.options = *options;
  FailureOr<EncodingAttrInterface> parsed = parseValueEncoding(
      context, "act-insert-encode-decode", "encoding", encoding);
  if (failed(parsed))
    return failure();
  if (!*parsed)
    return emitError(loc("encoding"),
                     "act-insert-encode-decode: give an encoding (the "
                     "uniform policy's), e.g. '#act.quant<bits = 4>'");
  uniform = *parsed;
  FailureOr<EncodingAttrInterface> head = parseValueEncoding(
      context, "act-insert-encode-decode", "loss-head", lossHead);
  if (failed(head))
    return failure();
  lossHeadEncoding = *head;
  if (lossHeadEncoding && encodeLossHead)
    return emitError(loc("loss-head"),
                     "act-insert-encode-decode: loss-head gives the loss "
                     "head its own encoding, encode-loss-head gives it the "
                     "policy's: give one or the other");
  if (lossHeadEncoding && policy == EncodingPolicy::None)
    return emitError(loc("loss-head"),
                     "act-insert-encode-decode: policy=none encodes nothing; "
                     "loss-head goes with the uniform or lossless policy");
  return success();
}

EncodingAttrInterface
InsertEncodeDecodePass::chooseEncoding(TrainingGraph &graph,
                                       const SavedValue &saved) {
  if ((!include.empty() && !include.contains(saved.id)) ||
      exclude.contains(saved.id))
    return nullptr;
  if (lossHeadEncoding && saved.status == SaveStatus::LossHead)
    return getLossHeadEncoding(saved, lossHeadEncoding, minBytes);
  if (!isEncodingCandidate(saved, encodeLossHead, minBytes))
    return nullptr;
  RankedTensorType type = saved.getTensorType();
  // Integers proven small (max-pool indices) are narrowed, losslessly,
  // whatever the uniform encoding is.
  if (IndexEncodingAttr narrow = getIndexEncoding(saved))
    return narrow;
  if (policy == EncodingPolicy::Lossless) {
    // Sparse storage where the IR makes zeros structural; for a value read
    // only through sign tests it carries the masks (nothing else is stored).
    // With a float format (Gist's DPR), the nonzeros in it, and the other
    // float values as #act.float of it.
    if (!isa<FloatType>(type.getElementType()))
      return nullptr;
    if (hasStructuralZeros(saved.value) ||
        isReadOnlyThroughSignTests(graph, saved))
      return SparseEncodingAttr::get(type.getContext(),
                                     llvm::APFloat(double(sparseDensity)),
                                     reducedFormat);
    if (!reducedFormat)
      return nullptr;
    auto reduced = FloatEncodingAttr::get(type.getContext(), *reducedFormat);
    if (reduced.isLossless(type.getElementType()))
      return nullptr;
    return reduced;
  }
  if (failed(uniform.verifyTensorType(type, [&] {
        return emitRemark(saved.value.getLoc(), "act: saved value ")
               << saved.id << " is not encoded: ";
      })))
    return nullptr;
  return uniform;
}

void InsertEncodeDecodePass::runOnOperation() {
  FailureOr<SmallVector<TrainingGraph>> graphs =
      analyzeTrainingGraphs(getOperation());
  if (failed(graphs))
    return signalPassFailure();
  if (policy == EncodingPolicy::None)
    return markAllAnalysesPreserved();

  // An id that names no saved value is likely a mistake the user must hear
  // about (include=999 used to encode nothing without a word); a warning, as
  // one option may serve several modules (-split-input-file).
  for (int64_t id : llvm::concat<const int64_t>(include, exclude)) {
    bool found = llvm::any_of(*graphs, [&](const TrainingGraph &graph) {
      return llvm::any_of(
          graph.saved, [&](const SavedValue &saved) { return saved.id == id; });
    });
    if (!found) {
      int64_t count = 0;
      for (const TrainingGraph &graph : *graphs)
        count += int64_t(graph.saved.size());
      emitWarning(getOperation().getLoc(), "act-insert-encode-decode: no "
                                           "saved value has id ")
          << id << " (the module's training graphs save " << count
          << " values, ids 0.." << count - 1 << ")";
    }
  }
  RecomputePolicy recompute;
  recompute.maxOperationsPerByte = recomputeCost;
  recompute.isCandidate = [&](const SavedValue &saved) {
    return isEncodingCandidate(saved, encodeLossHead, minBytes) &&
           (include.empty() || include.contains(saved.id)) &&
           !exclude.contains(saved.id);
  };
  for (TrainingGraph &graph : *graphs)
    insertEncodings(
        graph,
        [&](const SavedValue &saved) { return chooseEncoding(graph, saved); },
        fewBit, recompute);
}
