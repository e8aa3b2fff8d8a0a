//===- TrainingGraph.cpp - forward/backward split and saved values --------===//
//
// Joint form: the forward ops are exactly the ops the loss depends on; every
// other op (but the terminator) is backward. Split form: the forward function
// is forward, the backward function backward, and the saved values are the
// forward function's last `act.num_saved` results.
//
// Everything here is linear in the size of the function (one walk for the
// loss slice, one pass over the uses of each forward value).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/ActStorage.h"

#include "act/Dialect/Act/IR/Act.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::act;

StringRef mlir::act::stringifySaveStatus(SaveStatus status) {
  switch (status) {
  case SaveStatus::Encodable:
    return "encodable";
  case SaveStatus::Encoded:
    return "encoded";
  case SaveStatus::LossHead:
    return "loss-head";
  case SaveStatus::StaysLive:
    return "stays-live";
  case SaveStatus::Interleaved:
    return "interleaved";
  case SaveStatus::Unranked:
    return "unranked";
  case SaveStatus::ComparedExactly:
    return "compared-exactly";
  case SaveStatus::RowStatistics:
    return "row-statistics";
  }
  llvm_unreachable("unknown save status");
}

/// Whether `read` holds for a linalg.generic input operand reading `value`,
/// directly or through the ops `through` accepts (views of it).
static bool
anyGenericRead(Value value, function_ref<bool(Operation *)> through,
               function_ref<bool(linalg::GenericOp, OpOperand &)> read) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (through(user)) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (generic && generic.isDpsInput(&use) && read(generic, use))
        return true;
    }
  }
  return false;
}

/// Whether a linalg.generic among `value`'s users (through reshapes and
/// casts of it) compares the element for (in)equality with something other
/// than a constant: `arith.cmpf oeq/ueq/one/une` on the block argument.
static bool isComparedExactly(Value value) {
  auto views = [](Operation *op) {
    return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
               tensor::ExtractSliceOp>(op);
  };
  return anyGenericRead(
      value, views, [](linalg::GenericOp generic, OpOperand &use) {
        BlockArgument arg = generic.getMatchingBlockArgument(&use);
        return llvm::any_of(arg.getUsers(), [&](Operation *user) {
          auto cmp = dyn_cast<arith::CmpFOp>(user);
          if (!cmp)
            return false;
          switch (cmp.getPredicate()) {
          case arith::CmpFPredicate::OEQ:
          case arith::CmpFPredicate::UEQ:
          case arith::CmpFPredicate::ONE:
          case arith::CmpFPredicate::UNE:
            break;
          default:
            return false;
          }
          Value other = cmp.getLhs() == arg ? cmp.getRhs() : cmp.getLhs();
          return other != arg && !matchPattern(other, m_Constant());
        });
      });
}

/// Whether `value` is a row's statistics (SaveStatus::RowStatistics): a
/// float tensor [..., K, 1], K > 1, that a linalg.generic among its users
/// (through casts) reads broadcast along the unit dimension: as x[..., 0]
/// in a loop nest with a dimension it does not index.
static bool isRowStatistic(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() < 2 ||
      type.getShape().back() != 1 || type.getShape()[type.getRank() - 2] == 1)
    return false;
  auto casts = [](Operation *op) { return isa<tensor::CastOp>(op); };
  return anyGenericRead(
      value, casts, [&](linalg::GenericOp generic, OpOperand &use) {
        AffineMap map = generic.getMatchingIndexingMap(&use);
        auto last = dyn_cast<AffineConstantExpr>(map.getResults().back());
        return map.getNumResults() == type.getRank() && last &&
               last.getValue() == 0 &&
               llvm::count_if(map.getResults(), llvm::IsaPred<AffineDimExpr>) <
                   int64_t(generic.getNumLoops());
      });
}

RankedTensorType SavedValue::getTensorType() const {
  return dyn_cast<RankedTensorType>(origin.getType());
}

std::optional<int64_t>
mlir::act::getTensorBytes(RankedTensorType type,
                          std::optional<int64_t> dynamicSize) {
  if (!type || (!type.hasStaticShape() && !dynamicSize))
    return std::nullopt;
  Type element = type.getElementType();
  int64_t bits;
  if (element.isIndex())
    bits = 64;
  else if (element.isIntOrFloat())
    bits = element.getIntOrFloatBitWidth();
  else
    return std::nullopt;
  // Memory holds every element in whole bytes (i1 too); shapes too large to
  // size are of unknown size (their bytes would overflow).
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = *dynamicSize;
  std::optional<int64_t> n = getSizedElementCount(shape);
  if (!n)
    return std::nullopt;
  return *n * ((bits + 7) / 8);
}

std::optional<int64_t> mlir::act::getBatchHint(Value value) {
  Region *region = value.getParentRegion();
  auto func = region ? region->getParentOfType<func::FuncOp>() : func::FuncOp();
  auto hint = func ? func->getAttrOfType<IntegerAttr>(kBatchHintAttrName)
                   : IntegerAttr();
  if (!hint || hint.getInt() < 1)
    return std::nullopt;
  return hint.getInt();
}

bool TrainingGraph::isForward(Operation *op) const {
  return forwardOps.contains(op);
}

bool mlir::act::isContractionLike(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalg::isaContractionOpInterface(linalgOp) ||
           linalg::isaConvolutionOpInterface(linalgOp);
  return isa<tosa::MatMulOp, tosa::Conv2DOp, tosa::Conv3DOp,
             tosa::DepthwiseConv2DOp>(op);
}

void mlir::act::forEachValueRead(Operation *op, Block *block,
                                 function_ref<void(Value)> fn) {
  for (Value v : op->getOperands())
    fn(v);
  if (op->getNumRegions() == 0)
    return;
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value v : nested->getOperands())
      if (v.getParentBlock() == block)
        fn(v);
  });
}

static bool isSavableType(Type type) {
  return isa<TensorType, EncodedType>(type);
}

/// The value a saved value stands for: the input of its act.encode, if any.
static std::pair<Value, SaveStatus> getOrigin(Value value) {
  if (auto encode = value.getDefiningOp<EncodeOp>())
    return {encode.getInput(), SaveStatus::Encoded};
  return {value, SaveStatus::Encodable};
}

namespace mlir::act {

/// Builds TrainingGraphs; a friend of TrainingGraph.
class TrainingGraphBuilder {
public:
  explicit TrainingGraphBuilder(int64_t &nextId) : nextId(nextId) {}

  FailureOr<TrainingGraph> buildJoint(func::FuncOp func);
  FailureOr<TrainingGraph> buildSplit(func::FuncOp forward,
                                      func::FuncOp backward, unsigned numSaved);

private:
  /// Finds the loss among `func`'s results: the one marked `act.loss`, else
  /// result 0 if it is a scalar. Returns -1 if there is none; emits an error
  /// and fails only for conflicting markers.
  FailureOr<int> findLoss(func::FuncOp func);
  void numberOps(TrainingGraph &graph, Block &body);
  /// Position of the last contraction among forward ops, if any.
  std::optional<unsigned> lastContraction(TrainingGraph &graph, Block &body);
  void assignIds(TrainingGraph &graph);

  int64_t &nextId;
};

} // namespace mlir::act

static LogicalResult requireSingleBlock(func::FuncOp func) {
  if (func.getBody().hasOneBlock())
    return success();
  return func.emitError("act: training graph @")
         << func.getSymName() << " has " << func.getBody().getBlocks().size()
         << " blocks; only single-block functions (structured control flow) "
            "are supported";
}

FailureOr<int> TrainingGraphBuilder::findLoss(func::FuncOp func) {
  int marked = -1;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    if (!func.getResultAttr(i, kLossAttrName))
      continue;
    if (marked >= 0)
      return func.emitError("act: @")
             << func.getSymName() << " marks results " << marked << " and " << i
             << " as `" << kLossAttrName << "`; mark one";
    marked = i;
  }
  if (marked >= 0)
    return marked;
  if (func.getNumResults() == 0)
    return -1;
  Type type = func.getResultTypes()[0];
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (tensor.getRank() == 0)
      type = tensor.getElementType();
  return isa<FloatType>(type) ? 0 : -1;
}

void TrainingGraphBuilder::numberOps(TrainingGraph &graph, Block &body) {
  graph.position.reserve(body.getOperations().size());
  graph.forwardOps.reserve(body.getOperations().size());
  unsigned i = 0;
  for (Operation &op : body)
    graph.position[&op] = ++i;
}

std::optional<unsigned>
TrainingGraphBuilder::lastContraction(TrainingGraph &graph, Block &body) {
  std::optional<unsigned> last;
  for (Operation &op : body)
    if (graph.isForward(&op) && isContractionLike(&op))
      last = graph.getPosition(&op);
  return last;
}

void TrainingGraphBuilder::assignIds(TrainingGraph &graph) {
  // Ids follow program order of the full-precision producers, so that a graph
  // gets the same ids before and after act-insert-encode-decode. Saved values
  // are collected in program order of what crosses; only encoded ones (whose
  // producer comes before their act.encode) can be out of order.
  if (graph.form == GraphForm::Joint) {
    using Key = std::tuple<unsigned, unsigned, unsigned>;
    SmallVector<Key> keys;
    keys.reserve(graph.saved.size());
    for (auto [i, s] : llvm::enumerate(graph.saved)) {
      if (auto result = dyn_cast<OpResult>(s.origin))
        keys.emplace_back(graph.getPosition(result.getOwner()),
                          result.getResultNumber(), i);
      else
        keys.emplace_back(0, cast<BlockArgument>(s.origin).getArgNumber(), i);
    }
    if (!llvm::is_sorted(keys)) {
      llvm::sort(keys);
      SmallVector<SavedValue> sorted;
      sorted.reserve(keys.size());
      for (const Key &key : keys)
        sorted.push_back(graph.saved[std::get<2>(key)]);
      graph.saved = std::move(sorted);
    }
  }
  // A value stored in two encodings (its value and its sign mask, see
  // Insertion.h) is one saved value: one ordinal, one id.
  llvm::SmallDenseMap<Value, int64_t> ordinals;
  for (SavedValue &s : graph.saved) {
    auto [it, inserted] = ordinals.try_emplace(s.origin, nextId);
    if (inserted)
      ++nextId;
    if (auto encode = s.value.getDefiningOp<EncodeOp>())
      s.id = encode.getId();
    else
      s.id = it->second;
  }
}

FailureOr<TrainingGraph> TrainingGraphBuilder::buildJoint(func::FuncOp func) {
  if (failed(requireSingleBlock(func)))
    return failure();
  FailureOr<int> lossIndex = findLoss(func);
  if (failed(lossIndex))
    return failure();
  if (*lossIndex < 0) {
    if (func.getNumResults() == 0)
      return func.emitError("act: training step @")
             << func.getSymName()
             << " has no results, so no loss: mark the loss result with `"
             << kLossAttrName << "`";
    return func.emitError("act: training step @")
           << func.getSymName() << " has no result marked `" << kLossAttrName
           << "` and result 0 (" << func.getResultTypes()[0]
           << ") is not a scalar loss";
  }

  TrainingGraph graph;
  graph.form = GraphForm::Joint;
  graph.forward = func;
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  graph.loss = terminator->getOperand(*lossIndex);
  numberOps(graph, body);

  // Forward ops: the loss's backward slice among the block's ops.
  SmallVector<Operation *> worklist;
  auto visit = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() == &body && graph.forwardOps.insert(def).second)
      worklist.push_back(def);
  };
  visit(graph.loss);
  while (!worklist.empty())
    forEachValueRead(worklist.pop_back_val(), &body, visit);
  // An act.encode of a forward value belongs to the forward pass.
  for (auto encode : body.getOps<EncodeOp>()) {
    Operation *def = encode.getInput().getDefiningOp();
    if (!def || graph.forwardOps.contains(def))
      graph.forwardOps.insert(encode);
  }

  std::optional<unsigned> head = lastContraction(graph, body);
  for (Operation &op : body) {
    // tensor.empty carries a shape, not data: nothing to keep.
    if (!graph.isForward(&op) || isa<tensor::EmptyOp>(op))
      continue;
    for (OpResult result : op.getResults()) {
      Operation *lastFwd = nullptr, *firstBwd = nullptr;
      bool returned = false;
      for (OpOperand &use : result.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        if (user == terminator) {
          returned = true;
        } else if (graph.isForward(user)) {
          if (!lastFwd || graph.getPosition(user) > graph.getPosition(lastFwd))
            lastFwd = user;
        } else if (!firstBwd ||
                   graph.getPosition(user) < graph.getPosition(firstBwd)) {
          firstBwd = user;
        }
      }
      if (!firstBwd)
        continue;
      if (!isSavableType(result.getType())) {
        if (isa<BaseMemRefType>(result.getType()))
          op.emitWarning("act: saved value of type ")
              << result.getType()
              << " is not a tensor and cannot be encoded; act works on "
                 "tensors (run it before bufferization)";
        continue;
      }
      SavedValue saved;
      saved.value = result;
      std::tie(saved.origin, saved.status) = getOrigin(result);
      saved.lastForwardUse = lastFwd;
      saved.firstBackwardUse = firstBwd;
      if (saved.status == SaveStatus::Encodable) {
        if (!saved.getTensorType())
          saved.status = SaveStatus::Unranked;
        else if (returned)
          saved.status = SaveStatus::StaysLive;
        else if (lastFwd &&
                 graph.getPosition(firstBwd) < graph.getPosition(lastFwd))
          saved.status = SaveStatus::Interleaved;
        else if (head && graph.getPosition(&op) > *head)
          saved.status = SaveStatus::LossHead;
        else if (isComparedExactly(result))
          saved.status = SaveStatus::ComparedExactly;
        else if (isRowStatistic(result))
          saved.status = SaveStatus::RowStatistics;
      }
      graph.saved.push_back(saved);
    }
  }
  assignIds(graph);
  return graph;
}

FailureOr<TrainingGraph> TrainingGraphBuilder::buildSplit(func::FuncOp forward,
                                                          func::FuncOp backward,
                                                          unsigned numSaved) {
  if (failed(requireSingleBlock(forward)) ||
      failed(requireSingleBlock(backward)))
    return failure();
  unsigned numResults = forward.getNumResults();
  if (numSaved > numResults || numSaved > backward.getNumArguments())
    return forward.emitError("act: @")
           << forward.getSymName() << " declares " << kNumSavedAttrName << " = "
           << numSaved << " but returns " << numResults << " values and @"
           << backward.getSymName() << " takes " << backward.getNumArguments();
  unsigned firstSaved = numResults - numSaved;
  for (unsigned k = 0; k < numSaved; ++k) {
    Type produced = forward.getResultTypes()[firstSaved + k];
    Type taken = backward.getArgumentTypes()[k];
    if (produced != taken)
      return forward.emitError("act: saved value ")
             << k << " is returned by @" << forward.getSymName() << " as "
             << produced << " but taken by @" << backward.getSymName() << " as "
             << taken;
  }
  FailureOr<int> lossIndex = findLoss(forward);
  if (failed(lossIndex))
    return failure();

  TrainingGraph graph;
  graph.form = GraphForm::Split;
  graph.forward = forward;
  graph.backward = backward;
  graph.numSaved = numSaved;
  Block &body = forward.getBody().front();
  Operation *terminator = body.getTerminator();
  if (*lossIndex >= 0 && unsigned(*lossIndex) < firstSaved)
    graph.loss = terminator->getOperand(*lossIndex);
  numberOps(graph, body);
  for (Operation &op : body)
    if (&op != terminator)
      graph.forwardOps.insert(&op);
  // The loss head is only known when the forward function computes the loss.
  std::optional<unsigned> head;
  if (graph.loss)
    head = lastContraction(graph, body);

  llvm::SmallDenseMap<Value, unsigned> index;
  for (unsigned k = 0; k < numSaved; ++k) {
    Value v = terminator->getOperand(firstSaved + k);
    // Function arguments (parameters, inputs) exist anyway.
    if (isa<BlockArgument>(v))
      continue;
    if (!isSavableType(v.getType())) {
      if (isa<BaseMemRefType>(v.getType()))
        forward.emitWarning("act: saved value ")
            << k << " of type " << v.getType()
            << " is not a tensor and cannot be encoded";
      continue;
    }
    auto [it, inserted] = index.try_emplace(v, graph.saved.size());
    if (!inserted) {
      graph.saved[it->second].savedPositions.push_back(k);
      continue;
    }
    SavedValue saved;
    saved.value = v;
    saved.savedPositions.push_back(k);
    std::tie(saved.origin, saved.status) = getOrigin(v);
    for (Operation *user : saved.origin.getUsers()) {
      user = body.findAncestorOpInBlock(*user);
      if (user != terminator &&
          (!saved.lastForwardUse ||
           graph.getPosition(user) > graph.getPosition(saved.lastForwardUse)))
        saved.lastForwardUse = user;
    }
    if (saved.status == SaveStatus::Encodable) {
      bool alsoOutput =
          llvm::any_of(terminator->getOpOperands().take_front(firstSaved),
                       [&](OpOperand &operand) { return operand.get() == v; });
      if (!saved.getTensorType())
        saved.status = SaveStatus::Unranked;
      else if (alsoOutput)
        saved.status = SaveStatus::StaysLive;
      else if (head && graph.getPosition(v.getDefiningOp()) > *head)
        saved.status = SaveStatus::LossHead;
      else if (llvm::any_of(saved.savedPositions, [&](unsigned k) {
                 return isComparedExactly(backward.getArgument(k));
               }))
        saved.status = SaveStatus::ComparedExactly;
      else if (isRowStatistic(v) ||
               llvm::any_of(saved.savedPositions, [&](unsigned k) {
                 return isRowStatistic(backward.getArgument(k));
               }))
        saved.status = SaveStatus::RowStatistics;
    }
    graph.saved.push_back(saved);
  }
  assignIds(graph);
  return graph;
}

/// True if `func`'s only symbol uses in `module` are `allowedUser`'s
/// `act.backward` attribute.
static bool isOnlyReferencedBy(func::FuncOp func, ModuleOp module,
                               Operation *allowedUser) {
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(func, module);
  if (!uses)
    return false;
  return llvm::all_of(*uses, [&](const SymbolTable::SymbolUse &use) {
    return use.getUser() == allowedUser;
  });
}

FailureOr<SmallVector<TrainingGraph>>
mlir::act::analyzeTrainingGraphs(ModuleOp module) {
  SymbolTable symbols(module);
  int64_t nextId = 0;
  TrainingGraphBuilder builder(nextId);
  SmallVector<TrainingGraph> graphs;
  llvm::DenseSet<Operation *> backwards;

  // At most one act.seeds argument per function, a static tensor<K x i64>:
  // what the passes that draw random numbers widen and the runtime fills.
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    bool seen = false;
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), kSeedsAttrName))
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (seen || !type || type.getRank() != 1 || !type.hasStaticShape() ||
          !type.getElementType().isInteger(64))
        return func.emitError("act: @")
               << func.getSymName() << " argument " << arg.getArgNumber()
               << ": `" << kSeedsAttrName
               << "` marks one argument, a static tensor<K x i64>; got "
               << arg.getType() << (seen ? " (a second one)" : "");
      seen = true;
    }
  }

  // Split pairs first, so that their backward functions are not mistaken for
  // joint steps.
  for (auto func : module.getOps<func::FuncOp>()) {
    Attribute backwardAttr = func->getAttr(kBackwardAttrName);
    if (!backwardAttr)
      continue;
    auto ref = dyn_cast<FlatSymbolRefAttr>(backwardAttr);
    auto backward =
        ref ? symbols.lookup<func::FuncOp>(ref.getValue()) : func::FuncOp();
    if (!backward || backward.isExternal())
      return func.emitError("act: `")
             << kBackwardAttrName << "` of @" << func.getSymName()
             << " must name a function with a body in this module; got "
             << backwardAttr;
    auto numSaved = func->getAttrOfType<IntegerAttr>(kNumSavedAttrName);
    if (!numSaved || numSaved.getInt() < 0)
      return func.emitError("act: split forward function @")
             << func.getSymName() << " needs `" << kNumSavedAttrName
             << "`, a non-negative integer";
    if (!isOnlyReferencedBy(func, module, nullptr) ||
        !isOnlyReferencedBy(backward, module, func))
      return func.emitError("act: the split pair @")
             << func.getSymName() << " / @" << backward.getSymName()
             << " is called from elsewhere in the module; act needs the "
                "pair's callers outside the module";
    if (!backwards.insert(backward).second)
      return func.emitError("act: @")
             << backward.getSymName()
             << " is the backward function of more than one forward function";
    FailureOr<TrainingGraph> graph =
        builder.buildSplit(func, backward, numSaved.getInt());
    if (failed(graph))
      return failure();
    graphs.push_back(std::move(*graph));
  }

  // Steps in nested modules are not analyzed: say so rather than ignore
  // them silently.
  for (auto nested : module.getOps<ModuleOp>())
    if (!nested.getOps<func::FuncOp>().empty())
      nested.emitWarning("act: functions in a nested module are not "
                         "analyzed; act's passes work on the top-level "
                         "module's training steps");

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic() ||
        func->hasAttr(kBackwardAttrName) || backwards.contains(func))
      continue;
    // A function called from within the module is a helper, not a step:
    // act would change its signature (act.seeds) under its callers.
    if (!isOnlyReferencedBy(func, module, nullptr)) {
      func.emitWarning("act: @")
          << func.getSymName()
          << " is called from within the module, so it is not treated as a "
             "training step (make it private to silence this)";
      continue;
    }
    FailureOr<TrainingGraph> graph = builder.buildJoint(func);
    if (failed(graph))
      return failure();
    graphs.push_back(std::move(*graph));
  }

  // Ids are unique per full-precision value (several encodings of one value
  // share its id).
  llvm::DenseMap<int64_t, Value> ids;
  for (TrainingGraph &graph : graphs)
    for (SavedValue &saved : graph.saved) {
      auto [it, inserted] = ids.try_emplace(saved.id, saved.origin);
      if (!inserted && it->second != saved.origin)
        return emitError(saved.value.getLoc(), "act: saved-activation id ")
               << saved.id << " is used twice in the module";
    }
  return graphs;
}

/// The argument of `func` that carries attribute `name`, or null.
static BlockArgument getMarkedArgument(func::FuncOp func, StringRef name) {
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), name))
      return arg;
  return nullptr;
}

/// Gives `arg` of `func` the type `type` (the function's type with it).
static void retypeArgument(func::FuncOp func, BlockArgument arg, Type type) {
  arg.setType(type);
  SmallVector<Type> inputs(func.getArgumentTypes());
  inputs[arg.getArgNumber()] = type;
  func.setType(
      FunctionType::get(func.getContext(), inputs, func.getResultTypes()));
}

BlockArgument mlir::act::getSeedsArgument(func::FuncOp func) {
  return getMarkedArgument(func, kSeedsAttrName);
}

Value mlir::act::getOrCreateSeeds(func::FuncOp func, int64_t count) {
  MLIRContext *ctx = func.getContext();
  auto type = [&](int64_t n) {
    return RankedTensorType::get({n}, IntegerType::get(ctx, 64));
  };
  if (BlockArgument arg = getSeedsArgument(func)) {
    auto current = dyn_cast<RankedTensorType>(arg.getType());
    if (!current || current.getRank() != 1 || current.isDynamicDim(0))
      return nullptr;
    if (current.getDimSize(0) < count)
      retypeArgument(func, arg, type(count));
    return arg;
  }
  unsigned index = func.getNumArguments();
  auto attrs = DictionaryAttr::get(
      ctx, {NamedAttribute(StringAttr::get(ctx, kSeedsAttrName),
                           UnitAttr::get(ctx))});
  if (failed(func.insertArgument(index, type(count), attrs, func.getLoc())))
    return nullptr;
  return func.getArgument(index);
}

BlockArgument mlir::act::getBitsArgument(func::FuncOp func) {
  return getMarkedArgument(func, kBitsAttrName);
}

Value mlir::act::getOrCreateBits(func::FuncOp func, int64_t id, unsigned bits,
                                 ArrayRef<unsigned> choices) {
  MLIRContext *ctx = func.getContext();
  BlockArgument arg = getBitsArgument(func);
  SmallVector<int32_t> planned, allowed;
  if (arg) {
    auto current = dyn_cast<RankedTensorType>(arg.getType());
    auto plannedAttr = dyn_cast_or_null<DenseI32ArrayAttr>(
        func.getArgAttr(arg.getArgNumber(), kBitsAttrName));
    auto allowedAttr = dyn_cast_or_null<DenseI32ArrayAttr>(
        func.getArgAttr(arg.getArgNumber(), kBitChoicesAttrName));
    if (!current || current.getRank() != 1 || current.isDynamicDim(0) ||
        !plannedAttr || !allowedAttr ||
        plannedAttr.size() != current.getDimSize(0) ||
        allowedAttr.size() != current.getDimSize(0))
      return nullptr;
    planned.assign(plannedAttr.asArrayRef().begin(),
                   plannedAttr.asArrayRef().end());
    allowed.assign(allowedAttr.asArrayRef().begin(),
                   allowedAttr.asArrayRef().end());
  }
  if (int64_t(planned.size()) <= id) {
    planned.resize(id + 1, 0);
    allowed.resize(id + 1, 0);
  }
  planned[id] = int32_t(bits);
  allowed[id] = 0;
  for (unsigned c : choices)
    allowed[id] |= int32_t(1) << llvm::Log2_32(c);
  auto type = RankedTensorType::get({int64_t(planned.size())},
                                    IntegerType::get(ctx, 32));
  if (!arg) {
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, type, DictionaryAttr::get(ctx),
                                   func.getLoc())))
      return nullptr;
    arg = func.getArgument(index);
  } else if (arg.getType() != type) {
    retypeArgument(func, arg, type);
  }
  func.setArgAttr(arg.getArgNumber(), kBitsAttrName,
                  DenseI32ArrayAttr::get(ctx, planned));
  func.setArgAttr(arg.getArgNumber(), kBitChoicesAttrName,
                  DenseI32ArrayAttr::get(ctx, allowed));
  return arg;
}
