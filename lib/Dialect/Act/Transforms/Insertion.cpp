//===- Insertion.cpp - place act.encode / act.decode ----------------------===//

#include "act/Dialect/Act/Transforms/Insertion.h"

#include "act/Analysis/MemoryEstimate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

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

/// The predicate through which `use` reads its tensor, if it is a
/// linalg.generic input whose block argument only feeds `arith.cmpf P, x, 0`
/// with one P of ogt (positive), oge (nonnegative), une (nonzero): ReLU's
/// backward reading the saved output, for example.
static std::optional<MaskPredicate> getSignTest(OpOperand &use) {
  auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!generic || !generic.isDpsInput(&use))
    return std::nullopt;
  BlockArgument arg = generic.getMatchingBlockArgument(&use);
  if (!isa<FloatType>(arg.getType()) || arg.use_empty())
    return std::nullopt;
  std::optional<MaskPredicate> predicate;
  for (Operation *user : arg.getUsers()) {
    auto cmp = dyn_cast<arith::CmpFOp>(user);
    if (!cmp || cmp.getLhs() != arg || cmp.getRhs() == arg ||
        !matchPattern(cmp.getRhs(), m_AnyZeroFloat()))
      return std::nullopt;
    MaskPredicate p;
    switch (cmp.getPredicate()) {
    case arith::CmpFPredicate::OGT:
      p = MaskPredicate::Positive;
      break;
    case arith::CmpFPredicate::OGE:
      p = MaskPredicate::NonNegative;
      break;
    case arith::CmpFPredicate::UNE:
      p = MaskPredicate::NonZero;
      break;
    default:
      return std::nullopt;
    }
    if (predicate && *predicate != p)
      return std::nullopt;
    predicate = p;
  }
  return predicate;
}

/// Makes the generic of `use` read `mask` (the predicate, i1) instead.
static void readMask(OpOperand &use, Value mask) {
  auto generic = cast<linalg::GenericOp>(use.getOwner());
  BlockArgument arg = generic.getMatchingBlockArgument(&use);
  use.set(mask);
  arg.setType(IntegerType::get(arg.getContext(), 1));
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
    user->getResult(0).replaceAllUsesWith(arg);
    user->erase();
  }
}

using SignTests = SmallVector<std::pair<OpOperand *, MaskPredicate>>;

/// The backward uses of `saved` that read it only through a sign test, and
/// (in `numUses`) how many backward uses it has in all (joint form: the uses
/// outside the forward pass and its encodes; split form: the uses of its
/// backward arguments).
static SignTests findSignTests(TrainingGraph &graph, const SavedValue &saved,
                               size_t &numUses) {
  SignTests tests;
  numUses = 0;
  auto scan = [&](Value v, Block *body) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = body->findAncestorOpInBlock(*use.getOwner());
      if (graph.form == GraphForm::Joint &&
          (!user || graph.isForward(user) || isa<EncodeOp>(user)))
        continue;
      ++numUses;
      if (std::optional<MaskPredicate> p = getSignTest(use))
        tests.push_back({&use, *p});
    }
  };
  if (graph.form == GraphForm::Joint) {
    scan(saved.value, &graph.forward.getBody().front());
  } else {
    Block &bwd = graph.backward.getBody().front();
    for (unsigned k : saved.savedPositions)
      scan(bwd.getArgument(k), &bwd);
  }
  return tests;
}

/// Whether the masks of `tests` are all that needs storing: every backward
/// use is a sign test (split form: of one predicate, so that one mask can
/// cross in the value's place).
static bool onlySignTests(TrainingGraph &graph, const SignTests &tests,
                          size_t numUses) {
  if (tests.empty() || tests.size() != numUses)
    return false;
  return graph.form == GraphForm::Joint ||
         llvm::all_of(tests, [&](const auto &t) {
           return t.second == tests.front().second;
         });
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

  /// Stores the sign of `saved` as a 1-bit mask (lossless for the
  /// predicate) for the backward ops that read only it; they read the
  /// decoded mask instead of the lossy decoded value.
  /// `inPlace` (split form, every backward use a test of one predicate):
  /// the mask crosses instead of the value.
  void encodeSignMask(const SavedValue &saved,
                      ArrayRef<std::pair<OpOperand *, MaskPredicate>> tests,
                      bool inPlace = false) {
    OpBuilder builder(ctx);
    llvm::SmallDenseMap<unsigned, SmallVector<OpOperand *>> byPredicate;
    for (auto [use, p] : tests)
      byPredicate[unsigned(p)].push_back(use);
    for (auto &[p, uses] : byPredicate) {
      auto type =
          EncodedType::get(ctx, saved.getTensorType(),
                           MaskEncodingAttr::get(ctx, MaskPredicate(p)));
      EncodeOp encode = createEncode(builder, saved, type);
      Value stored = encode;
      Block *body = &graph.forward.getBody().front();
      if (graph.form == GraphForm::Split && inPlace) {
        // Only the mask is needed: it crosses where the value did.
        Operation *fwdReturn = body->getTerminator();
        unsigned firstSaved = fwdReturn->getNumOperands() - graph.getNumSaved();
        body = &graph.backward.getBody().front();
        for (unsigned k : saved.savedPositions) {
          fwdReturn->setOperand(firstSaved + k, encode);
          body->getArgument(k).setType(type);
        }
        stored = body->getArgument(saved.savedPositions.front());
      } else if (graph.form == GraphForm::Split) {
        // The mask crosses as one more saved value, after the others.
        Operation *fwdReturn = body->getTerminator();
        unsigned result = graph.forward.getNumResults();
        fwdReturn->insertOperands(fwdReturn->getNumOperands(), {encode});
        // Keeps the result attributes (act.loss) in step.
        (void)graph.forward.insertResult(result, type, DictionaryAttr());
        unsigned index = graph.getNumSaved() + addedSaved++;
        (void)graph.backward.insertArgument(index, type, {}, encode.getLoc());
        body = &graph.backward.getBody().front();
        stored = body->getArgument(index);
      }
      Operation *first = nullptr;
      for (OpOperand *use : uses) {
        Operation *user = body->findAncestorOpInBlock(*use->getOwner());
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
      builder.setInsertionPoint(first);
      auto decode = DecodeOp::create(builder, first->getLoc(),
                                     type.getDecodedType(), stored);
      for (OpOperand *use : uses) {
        Value old = use->get();
        readMask(*use, decode);
        if (auto oldDecode = old.getDefiningOp<DecodeOp>();
            oldDecode && oldDecode->use_empty())
          oldDecode->erase();
      }
    }
  }

  void finish() {
    if (graph.form != GraphForm::Split)
      return;
    if (addedSaved)
      graph.forward->setAttr(
          kNumSavedAttrName,
          IntegerAttr::get(IntegerType::get(ctx, 64),
                           graph.getNumSaved() + addedSaved));
    // Both signatures follow the encoded values across the boundary.
    for (func::FuncOp func : {graph.forward, graph.backward}) {
      Block &body = func.getBody().front();
      func.setFunctionType(
          FunctionType::get(ctx, body.getArgumentTypes(),
                            body.getTerminator()->getOperandTypes()));
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
      seed =
          tensor::ExtractOp::create(builder, loc, seedsArg, ValueRange{index});
    }
    auto encode =
        EncodeOp::create(builder, loc, type, saved.value, saved.id, seed);
    last = encode;
    return encode;
  }

  /// The first backward op (in `body`) that reads `value`, or null.
  Operation *firstBackwardUser(Value value, Block *body) {
    Operation *first = nullptr;
    for (Operation *user : value.getUsers()) {
      user = body->findAncestorOpInBlock(*user);
      // Encodes placed by this pass belong to the forward pass.
      if (!user || graph.isForward(user) || isa<EncodeOp>(user))
        continue;
      if (!first || user->isBeforeInBlock(first))
        first = user;
    }
    return first;
  }

  void encodeJoint(const SavedValue &saved, EncodedType type) {
    OpBuilder builder(ctx);
    Block *block = graph.forward.getBody().empty()
                       ? nullptr
                       : &graph.forward.getBody().front();
    Operation *firstUse = firstBackwardUser(saved.value, block);
    if (!firstUse)
      return; // every backward use reads a sign mask instead
    EncodeOp encode = createEncode(builder, saved, type);
    builder.setInsertionPoint(firstUse);
    auto decode = DecodeOp::create(builder, firstUse->getLoc(),
                                   type.getDecodedType(), encode);
    Block *body = encode->getBlock();
    Value value = saved.value;
    value.replaceUsesWithIf(decode, [&](OpOperand &use) {
      Operation *user = body->findAncestorOpInBlock(*use.getOwner());
      return !isa<EncodeOp>(user) && !graph.isForward(user);
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
  unsigned addedSaved = 0;
  DenseMap<Operation *, Operation *> lastEncodeAfter;
};
} // namespace

bool mlir::act::isReadOnlyThroughSignTests(TrainingGraph &graph,
                                           const SavedValue &saved) {
  size_t numUses;
  SignTests tests = findSignTests(graph, saved, numUses);
  return onlySignTests(graph, tests, numUses);
}

void mlir::act::insertEncodings(TrainingGraph &graph, EncodingChoice choose) {
  Inserter inserter(graph);
  // Backward ops that read a lossily encoded value only through its sign
  // (ReLU's backward) read an exact 1-bit mask instead: rounding a small
  // positive value to zero would flip the sign test, a bias rather than
  // noise (docs/Exporter.md).
  SmallVector<std::pair<const SavedValue *, SignTests>> signTests;
  for (const SavedValue &saved : graph.saved) {
    EncodingAttrInterface encoding = choose(saved);
    if (!encoding)
      continue;
    RankedTensorType type = saved.getTensorType();
    if (isa<FloatType>(type.getElementType()) &&
        !encoding.isLossless(type.getElementType())) {
      size_t numUses;
      SignTests tests = findSignTests(graph, saved, numUses);
      if (!tests.empty()) {
        // Joint form: rewire first, so the value's encode covers only the
        // uses that need its value (none when all are sign tests).
        if (graph.form == GraphForm::Joint) {
          inserter.encodeSignMask(saved, tests);
        } else if (onlySignTests(graph, tests, numUses)) {
          inserter.encodeSignMask(saved, tests, /*inPlace=*/true);
          continue;
        } else {
          signTests.push_back({&saved, std::move(tests)});
        }
      }
    }
    inserter.encode(saved, encoding);
  }
  // Split form: masks cross after the other saved values.
  for (auto &[saved, tests] : signTests)
    inserter.encodeSignMask(*saved, tests);
  inserter.finish();
}
