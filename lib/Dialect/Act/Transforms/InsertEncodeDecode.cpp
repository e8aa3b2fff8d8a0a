//===- InsertEncodeDecode.cpp - encode saved activations -------------------===//
//
// Places an act.encode right after the last forward use of every saved value
// and an act.decode right before its first backward use (Gist's delayed
// precision reduction), in both training-graph forms.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

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
  EncodingAttrInterface chooseEncoding(const SavedValue &saved);
  /// Creates the act.encode of `saved` right after its last forward use,
  /// reading its seed from the graph's seeds argument if it is stochastic.
  EncodeOp createEncode(OpBuilder &builder, TrainingGraph &graph,
                        const SavedValue &saved, EncodedType type);
  /// The graph's `act.seeds` argument (tensor<K x i64>, indexed by id),
  /// added on first use.
  Value getSeeds(TrainingGraph &graph);
  void encodeJoint(TrainingGraph &graph, const SavedValue &saved,
                   EncodedType type);
  void encodeSplit(TrainingGraph &graph, const SavedValue &saved,
                   EncodedType type);

  EncodingAttrInterface uniform;
  llvm::SmallSet<int64_t, 8> include, exclude;
  /// The last act.encode placed after an op, to keep them in id order.
  DenseMap<Operation *, Operation *> lastEncodeAfter;
  /// The seeds argument of the graph being rewritten.
  Value seeds;
};

} // namespace

LogicalResult InsertEncodeDecodePass::initialize(MLIRContext *context) {
  include.insert(includeIds.begin(), includeIds.end());
  exclude.insert(excludeIds.begin(), excludeIds.end());
  Location loc = UnknownLoc::get(context);
  Attribute attr = parseAttribute(encoding, context);
  if (!attr)
    return emitError(loc, "act-insert-encode-decode: cannot parse encoding '")
           << encoding << "'";
  uniform = dyn_cast<EncodingAttrInterface>(attr);
  if (!uniform)
    return emitError(loc, "act-insert-encode-decode: ")
           << attr << " is not an act encoding";
  // The uniform policy replaces values by their decoded form, so the
  // encoding must decode to the value itself (a mask decodes to a predicate).
  auto probe = RankedTensorType::get({1}, Float32Type::get(context));
  if (uniform.getDecodedType(probe) != probe)
    return emitError(loc, "act-insert-encode-decode: ")
           << attr << " decodes to " << uniform.getDecodedType(probe)
           << ", not to the value; the uniform policy needs a value encoding";
  return success();
}

EncodingAttrInterface
InsertEncodeDecodePass::chooseEncoding(const SavedValue &saved) {
  if (saved.status != SaveStatus::Encodable &&
      !(saved.status == SaveStatus::LossHead && encodeLossHead))
    return nullptr;
  if ((!include.empty() && !include.contains(saved.id)) ||
      exclude.contains(saved.id))
    return nullptr;
  RankedTensorType type = saved.getTensorType();
  std::optional<int64_t> bytes = getTensorBytes(type);
  if (bytes && *bytes < minBytes)
    return nullptr;
  if (failed(uniform.verifyTensorType(type, [&] {
        return emitRemark(saved.value.getLoc(), "act: saved value ")
               << saved.id << " is not encoded: ";
      })))
    return nullptr;
  return uniform;
}

Value InsertEncodeDecodePass::getSeeds(TrainingGraph &graph) {
  if (seeds)
    return seeds;
  int64_t count = 0;
  for (const SavedValue &saved : graph.saved)
    count = std::max(count, saved.id + 1);
  func::FuncOp func = graph.forward;
  auto type = RankedTensorType::get({count}, IntegerType::get(&getContext(), 64));
  unsigned index = func.getNumArguments();
  auto attrs = DictionaryAttr::get(
      &getContext(), {NamedAttribute(StringAttr::get(&getContext(),
                                                     kSeedsAttrName),
                                     UnitAttr::get(&getContext()))});
  if (failed(func.insertArgument(index, type, attrs, func.getLoc())))
    return nullptr;
  seeds = func.getArgument(index);
  return seeds;
}

EncodeOp InsertEncodeDecodePass::createEncode(OpBuilder &builder,
                                              TrainingGraph &graph,
                                              const SavedValue &saved,
                                              EncodedType type) {
  Operation *anchor =
      saved.lastForwardUse ? saved.lastForwardUse : saved.getProducer();
  Operation *&last = lastEncodeAfter[anchor];
  builder.setInsertionPointAfter(last ? last : anchor);
  Location loc = saved.value.getLoc();
  Value seed;
  if (type.getEncoding().isStochastic()) {
    // Read at the top of the function, so the encode itself still follows
    // the last forward use directly.
    OpBuilder::InsertionGuard guard(builder);
    Value seedsArg = getSeeds(graph);
    builder.setInsertionPointToStart(seedsArg.getParentBlock());
    Value index = arith::ConstantIndexOp::create(builder, loc, saved.id);
    seed = tensor::ExtractOp::create(builder, loc, seedsArg, ValueRange{index});
  }
  auto encode =
      EncodeOp::create(builder, loc, type, saved.value, saved.id, seed);
  last = encode;
  return encode;
}

void InsertEncodeDecodePass::encodeJoint(TrainingGraph &graph,
                                         const SavedValue &saved,
                                         EncodedType type) {
  OpBuilder builder(&getContext());
  EncodeOp encode = createEncode(builder, graph, saved, type);
  builder.setInsertionPoint(saved.firstBackwardUse);
  auto decode = DecodeOp::create(builder, saved.firstBackwardUse->getLoc(),
                                 type.getDecodedType(), encode);
  Block *body = encode->getBlock();
  Value value = saved.value;
  value.replaceUsesWithIf(decode, [&](OpOperand &use) {
    Operation *user = body->findAncestorOpInBlock(*use.getOwner());
    return user != encode && !graph.isForward(user);
  });
}

void InsertEncodeDecodePass::encodeSplit(TrainingGraph &graph,
                                         const SavedValue &saved,
                                         EncodedType type) {
  OpBuilder builder(&getContext());
  EncodeOp encode = createEncode(builder, graph, saved, type);
  Operation *fwdReturn = graph.forward.getBody().front().getTerminator();
  Block &bwd = graph.backward.getBody().front();
  unsigned firstSaved = fwdReturn->getNumOperands() - graph.getNumSaved();
  for (unsigned k : saved.savedPositions) {
    fwdReturn->setOperand(firstSaved + k, encode);
    BlockArgument arg = bwd.getArgument(k);
    arg.setType(type);
    if (arg.use_empty())
      continue;
    // The users' common ancestor that comes first in the block.
    Operation *first = nullptr;
    for (Operation *user : arg.getUsers()) {
      user = bwd.findAncestorOpInBlock(*user);
      if (!first || user->isBeforeInBlock(first))
        first = user;
    }
    builder.setInsertionPoint(first);
    auto decode = DecodeOp::create(builder, first->getLoc(),
                                   type.getDecodedType(), arg);
    arg.replaceAllUsesExcept(decode, decode);
  }
}

void InsertEncodeDecodePass::runOnOperation() {
  FailureOr<SmallVector<TrainingGraph>> graphs =
      analyzeTrainingGraphs(getOperation());
  if (failed(graphs))
    return signalPassFailure();
  if (policy == EncodingPolicy::None)
    return markAllAnalysesPreserved();

  for (TrainingGraph &graph : *graphs) {
    seeds = nullptr;
    for (const SavedValue &saved : graph.saved) {
      EncodingAttrInterface encodingAttr = chooseEncoding(saved);
      if (!encodingAttr)
        continue;
      auto type = EncodedType::get(&getContext(), saved.getTensorType(),
                                   encodingAttr);
      if (graph.form == GraphForm::Joint)
        encodeJoint(graph, saved, type);
      else
        encodeSplit(graph, saved, type);
    }
    if (graph.form == GraphForm::Split) {
      // Both signatures follow the encoded values across the boundary.
      for (func::FuncOp func : {graph.forward, graph.backward}) {
        Block &body = func.getBody().front();
        func.setFunctionType(FunctionType::get(
            &getContext(), body.getArgumentTypes(),
            body.getTerminator()->getOperandTypes()));
      }
    }
  }
  lastEncodeAfter.clear();
}
