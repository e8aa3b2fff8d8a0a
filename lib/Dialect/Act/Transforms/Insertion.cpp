//===- Insertion.cpp - place act.encode / act.decode ----------------------===//

#include "act/Dialect/Act/Transforms/Insertion.h"

#include "act/Analysis/MemoryEstimate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::act;

bool mlir::act::isEncodingCandidate(const SavedValue &saved, bool lossHead,
                                    int64_t minBytes) {
  if (saved.status != SaveStatus::Encodable &&
      !(saved.status == SaveStatus::LossHead && lossHead))
    return false;
  std::optional<int64_t> bytes = getTensorBytes(saved.getTensorType());
  return !bytes || *bytes >= minBytes;
}

namespace {
class Inserter {
public:
  explicit Inserter(TrainingGraph &graph)
      : graph(graph), ctx(graph.forward.getContext()) {}

  void encode(const SavedValue &saved, EncodingAttrInterface encoding) {
    auto type = EncodedType::get(ctx, saved.getTensorType(), encoding);
    if (graph.form == GraphForm::Joint)
      encodeJoint(saved, type);
    else
      encodeSplit(saved, type);
  }

  void finish() {
    if (graph.form != GraphForm::Split)
      return;
    // Both signatures follow the encoded values across the boundary.
    for (func::FuncOp func : {graph.forward, graph.backward}) {
      Block &body = func.getBody().front();
      func.setFunctionType(FunctionType::get(
          ctx, body.getArgumentTypes(), body.getTerminator()->getOperandTypes()));
    }
  }

private:
  /// The graph's `act.seeds` argument (tensor<K x i64>, indexed by id),
  /// added on first use.
  Value getSeeds() {
    if (seeds)
      return seeds;
    int64_t count = 0;
    for (const SavedValue &saved : graph.saved)
      count = std::max(count, saved.id + 1);
    func::FuncOp func = graph.forward;
    auto type = RankedTensorType::get({count}, IntegerType::get(ctx, 64));
    unsigned index = func.getNumArguments();
    auto attrs = DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, kSeedsAttrName),
                             UnitAttr::get(ctx))});
    if (failed(func.insertArgument(index, type, attrs, func.getLoc())))
      return nullptr;
    seeds = func.getArgument(index);
    return seeds;
  }

  /// The act.encode of `saved` right after its last forward use (after the
  /// encodes already placed there, to keep them in id order).
  EncodeOp createEncode(OpBuilder &builder, const SavedValue &saved,
                        EncodedType type) {
    Operation *anchor =
        saved.lastForwardUse ? saved.lastForwardUse : saved.getProducer();
    Operation *&last = lastEncodeAfter[anchor];
    builder.setInsertionPointAfter(last ? last : anchor);
    Location loc = saved.value.getLoc();
    Value seed;
    if (type.getEncoding().isStochastic()) {
      // Read at the top of the function, so the encode itself still
      // follows the last forward use directly.
      OpBuilder::InsertionGuard guard(builder);
      Value seedsArg = getSeeds();
      builder.setInsertionPointToStart(seedsArg.getParentBlock());
      Value index = arith::ConstantIndexOp::create(builder, loc, saved.id);
      seed = tensor::ExtractOp::create(builder, loc, seedsArg, ValueRange{index});
    }
    auto encode =
        EncodeOp::create(builder, loc, type, saved.value, saved.id, seed);
    last = encode;
    return encode;
  }

  void encodeJoint(const SavedValue &saved, EncodedType type) {
    OpBuilder builder(ctx);
    EncodeOp encode = createEncode(builder, saved, type);
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

  void encodeSplit(const SavedValue &saved, EncodedType type) {
    OpBuilder builder(ctx);
    EncodeOp encode = createEncode(builder, saved, type);
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

  TrainingGraph &graph;
  MLIRContext *ctx;
  Value seeds;
  DenseMap<Operation *, Operation *> lastEncodeAfter;
};
} // namespace

void mlir::act::insertEncodings(TrainingGraph &graph, EncodingChoice choose) {
  Inserter inserter(graph);
  for (const SavedValue &saved : graph.saved)
    if (EncodingAttrInterface encoding = choose(saved))
      inserter.encode(saved, encoding);
  inserter.finish();
}
