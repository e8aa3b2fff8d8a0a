//===- Insertion.cpp - place act.encode / act.decode ----------------------===//

#include "act/Dialect/Act/Transforms/Insertion.h"

#include "act/Analysis/FewBit.h"
#include "act/Analysis/MemoryEstimate.h"
#include "act/Support/OptionLoc.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Mutex.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::act;

bool mlir::act::isEncodingCandidate(const SavedValue &saved, bool lossHead,
                                    int64_t minBytes) {
  if (saved.status != SaveStatus::Encodable &&
      !(saved.status == SaveStatus::LossHead && lossHead))
    return false;
  // (A dynamic batch counts as the batch the step was traced at.)
  std::optional<int64_t> bytes =
      getTensorBytes(saved.getTensorType(), getBatchHint(saved.origin));
  return !bytes || *bytes >= minBytes;
}

FailureOr<EncodingAttrInterface>
mlir::act::parseValueEncoding(MLIRContext *context, StringRef pass,
                              StringRef option, StringRef text) {
  if (text.empty())
    return EncodingAttrInterface();
  Location loc = getOptionLoc(context, pass, option);
  Attribute attr = parseAttribute(text, context);
  if (!attr)
    return emitError(loc) << pass << ": cannot parse " << option << " '" << text
                          << "'";
  auto encoding = dyn_cast<EncodingAttrInterface>(attr);
  if (!encoding)
    return emitError(loc) << pass << ": " << attr << " is not an act encoding";
  // The value is replaced by its decoded form, so the encoding must decode
  // to the value itself (a mask decodes to a predicate).
  auto probe = RankedTensorType::get({1}, Float32Type::get(context));
  if (encoding.getDecodedType(probe) != probe)
    return emitError(loc) << pass << ": " << attr << " decodes to "
                          << encoding.getDecodedType(probe).getElementType()
                          << " elements (a predicate of the value, for any "
                             "tensor), not to the value; the "
                          << option << " option needs a value encoding";
  return encoding;
}

EncodingAttrInterface mlir::act::getLossHeadEncoding(
    const SavedValue &saved, EncodingAttrInterface lossHead, int64_t minBytes) {
  if (!lossHead || saved.status != SaveStatus::LossHead ||
      !isEncodingCandidate(saved, /*lossHead=*/true, minBytes))
    return nullptr;
  if (failed(lossHead.verifyTensorType(saved.getTensorType(), [&] {
        return emitRemark(saved.value.getLoc(), "act: loss-head value ")
               << saved.id << " is not encoded: ";
      })))
    return nullptr;
  return lossHead;
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

//===----------------------------------------------------------------------===//
// Reads through a function of the value (Few-bit backward)
//===----------------------------------------------------------------------===//

namespace {
/// A backward op that reads the saved value only through phi: an
/// elementwise linalg.generic whose `operands` hold x or functions of it
/// alone, and in whose body `frontier` is the only value computed from them
/// that the rest of the body reads.
struct PhiConsumer {
  linalg::GenericOp generic;
  SmallVector<OpOperand *> operands;
  Value frontier;
};

/// How the backward reads a saved float x when it needs only phi(x):
/// `chain` computes functions of x alone (elementwise generics, all of
/// whose inputs are x or such functions), `consumers` combine phi(x) with
/// other values.
struct DerivativeRead {
  SmallVector<Value> roots;
  SmallVector<linalg::GenericOp> chain;
  SmallVector<PhiConsumer> consumers;
  ScalarFunction phi;
};
} // namespace

/// Whether `generic` reads its input `operand` element for element (the
/// same indexing as its single output, all loops parallel) from a tensor of
/// `type`, without linalg.index or its output's value.
static bool isElementwiseRead(linalg::GenericOp generic, OpOperand &operand,
                              RankedTensorType type) {
  if (generic.getNumDpsInits() != 1 || !generic.isDpsInput(&operand) ||
      operand.get().getType() != type ||
      generic.getResult(0).getType() != type ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  if (generic.getMatchingIndexingMap(&operand) !=
          generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)) ||
      !generic.getMatchingIndexingMap(&operand).isIdentity())
    return false;
  Block &body = generic.getRegion().front();
  if (!body.getArguments().back().use_empty())
    return false;
  return !body.walk([](linalg::IndexOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
}

/// The constant scalar a tensor is filled with (`linalg.fill` of a
/// constant: the exporter's tensors of ones), or null.
static Value getFillConstant(Value tensor) {
  auto fill = tensor.getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.value(), m_Constant()))
    return nullptr;
  return fill.value();
}

/// The constant a scalar in a generic's body is: itself when a constant,
/// the fill of the input whose block argument it is, else null.
static Value getScalarConstant(Value v) {
  if (matchPattern(v, m_Constant()))
    return v;
  auto arg = dyn_cast<BlockArgument>(v);
  auto generic =
      arg ? dyn_cast<linalg::GenericOp>(arg.getOwner()->getParentOp())
          : linalg::GenericOp();
  if (!generic)
    return nullptr;
  OpOperand *operand = generic.getMatchingOpOperand(arg);
  return generic.isDpsInput(operand) ? getFillConstant(operand->get())
                                     : Value();
}

/// A constant scalar in a generic's body: a constant, or the block argument
/// of an input filled with one.
static bool isConstantScalar(Value v) { return bool(getScalarConstant(v)); }

/// The values of `generic`'s body computed from the block arguments of
/// `operands` and constants alone (the arguments included), in body order;
/// null when the body has regions.
static std::optional<llvm::SetVector<Value>>
getPhiSlice(linalg::GenericOp generic, ArrayRef<OpOperand *> operands) {
  llvm::SetVector<Value> slice;
  for (OpOperand *operand : operands)
    slice.insert(generic.getMatchingBlockArgument(operand));
  for (Operation &op : generic.getRegion().front().without_terminator()) {
    if (op.getNumRegions() || op.getNumResults() != 1)
      return std::nullopt;
    bool reads = false, other = false;
    for (Value v : op.getOperands()) {
      if (slice.contains(v))
        reads = true;
      else if (!isConstantScalar(v))
        other = true;
    }
    if (reads && !other)
      slice.insert(op.getResult(0));
  }
  return slice;
}

/// Where ScalarFunction::compile finds a value of a function computed
/// across elementwise generics: `roots` (x's copies) stand for the first;
/// the result of a generic in the set (`isMember`) for the scalar its body
/// yields; a generic's block argument for its input operand (a constant
/// fill: for the constant), when `mayRead` allows that operand; anything
/// else defined outside a body is not part of the function (failure).
static FailureOr<Value>
resolveAcrossGenerics(Value v, ArrayRef<Value> roots,
                      function_ref<bool(Operation *)> isMember,
                      function_ref<bool(OpOperand &)> mayRead) {
  if (llvm::is_contained(roots, v))
    return roots.front();
  if (auto result = dyn_cast<OpResult>(v)) {
    if (isMember(result.getOwner()))
      return cast<linalg::GenericOp>(result.getOwner())
          .getRegion()
          .front()
          .getTerminator()
          ->getOperand(0);
    return Value();
  }
  auto arg = cast<BlockArgument>(v);
  auto generic = dyn_cast<linalg::GenericOp>(arg.getOwner()->getParentOp());
  if (!generic)
    return failure();
  OpOperand *operand = generic.getMatchingOpOperand(arg);
  if (!generic.isDpsInput(operand))
    return failure();
  if (Value c = getFillConstant(operand->get()))
    return c;
  if (!mayRead(*operand))
    return failure();
  return operand->get();
}

/// Finds how the backward reads `saved` if it reads it only through one
/// elementwise function phi(x) of floats that is not x itself.
static std::optional<DerivativeRead>
findDerivativeRead(TrainingGraph &graph, const SavedValue &saved) {
  RankedTensorType type = saved.getTensorType();
  if (!isa<FloatType>(type.getElementType()))
    return std::nullopt;
  DerivativeRead read;
  Block *body;
  if (graph.form == GraphForm::Joint) {
    body = &graph.forward.getBody().front();
    read.roots.push_back(saved.value);
  } else {
    body = &graph.backward.getBody().front();
    for (unsigned k : saved.savedPositions)
      read.roots.push_back(body->getArgument(k));
  }
  auto isBackwardUse = [&](OpOperand &use) {
    Operation *user = body->findAncestorOpInBlock(*use.getOwner());
    return user && !(graph.form == GraphForm::Joint &&
                     (graph.isForward(user) || isa<EncodeOp>(user)));
  };
  // The chain: generics (in program order) whose inputs are all x or
  // functions of x alone. In the joint form the forward's own functions of
  // x count too (SiLU's sigmoid(x), which its backward reuses), unless the
  // backward also reads one otherwise (GELU's output, read by a matmul):
  // that one is a saved value of its own, opaque here.
  llvm::DenseSet<Value> functions, opaque;
  llvm::DenseSet<Operation *> inChain;
  for (int round = 0; round < 8; ++round) {
    functions = llvm::DenseSet<Value>(read.roots.begin(), read.roots.end());
    inChain.clear();
    read.chain.clear();
    for (Operation &op : *body) {
      auto generic = dyn_cast<linalg::GenericOp>(&op);
      if (!generic || generic.getNumDpsInputs() == 0 ||
          generic.getNumResults() != 1 || opaque.contains(generic.getResult(0)))
        continue;
      // Inputs: x or functions of it, and constant fills.
      SmallVector<OpOperand *> reads;
      bool other = false;
      for (OpOperand *in : generic.getDpsInputOperands()) {
        if (functions.contains(in->get()) &&
            isElementwiseRead(generic, *in, type))
          reads.push_back(in);
        else if (!getFillConstant(in->get()))
          other = true;
      }
      if (other || reads.empty() || !getPhiSlice(generic, reads))
        continue;
      read.chain.push_back(generic);
      inChain.insert(generic);
      functions.insert(generic.getResult(0));
    }
    bool changed = false;
    for (linalg::GenericOp generic : read.chain) {
      if (graph.form != GraphForm::Joint || !graph.isForward(generic))
        continue;
      Value v = generic.getResult(0);
      bool otherRead = llvm::any_of(v.getUses(), [&](OpOperand &use) {
        if (!isBackwardUse(use) || inChain.contains(use.getOwner()))
          return false;
        auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
        return !reader || reader->getBlock() != body ||
               !isElementwiseRead(reader, use, type);
      });
      if (otherRead)
        changed |= opaque.insert(v).second;
    }
    if (!changed)
      break;
  }
  // Every other backward use is an elementwise read by a consumer.
  llvm::MapVector<Operation *, SmallVector<OpOperand *>> consumers;
  for (Value v : functions)
    for (OpOperand &use : v.getUses()) {
      if (!isBackwardUse(use) || inChain.contains(use.getOwner()))
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!generic || generic->getBlock() != body ||
          !isElementwiseRead(generic, use, type))
        return std::nullopt;
      consumers[generic].push_back(&use);
    }
  if (consumers.empty())
    return std::nullopt;
  // Each consumer reads one value computed from them: phi(x).
  for (auto &[op, operands] : consumers) {
    auto generic = cast<linalg::GenericOp>(op);
    std::optional<llvm::SetVector<Value>> slice =
        getPhiSlice(generic, operands);
    if (!slice)
      return std::nullopt;
    Value frontier;
    for (Value v : *slice) {
      bool readOutside = llvm::any_of(v.getUsers(), [&](Operation *user) {
        return user->getNumResults() != 1 ||
               !slice->contains(user->getResult(0));
      });
      if (!readOutside)
        continue;
      if (frontier)
        return std::nullopt;
      frontier = v;
    }
    if (!frontier || !isa<FloatType>(frontier.getType()))
      return std::nullopt;
    read.consumers.push_back({generic, operands, frontier});
  }
  // phi, compiled across the chain: a tensor in it stands for the scalar its
  // generic yields, a block argument for its operand.
  Value root = read.roots.front();
  auto resolve = [&](Value v) {
    return resolveAcrossGenerics(
        v, read.roots, [&](Operation *op) { return inChain.contains(op); },
        [&](OpOperand &operand) { return functions.contains(operand.get()); });
  };
  std::optional<ScalarFunction> phi;
  for (PhiConsumer &consumer : read.consumers) {
    std::string error;
    FailureOr<ScalarFunction> f =
        ScalarFunction::compile(root, consumer.frontier, resolve, error);
    if (failed(f) || f->isIdentity())
      return std::nullopt;
    // Several consumers must read the same phi.
    if (phi)
      for (int i = -64; i <= 64; ++i)
        if ((*phi)(i / 4.0) != (*f)(i / 4.0))
          return std::nullopt;
    if (!phi)
      phi = std::move(*f);
  }
  read.phi = std::move(*phi);
  return read;
}

/// How the backward reads a saved float x when all it computes from x is
/// one tensor F(g, x) = g * phi(x), linear in one incoming gradient g: the
/// backward generics (elementwise, program order) that read x, g, constant
/// fills or results of earlier ones, with exactly one result read
/// elsewhere. This covers backward formulas that mix g in early (softplus's
/// `where(x > t, g, g * e / (e + 1))`), where no single phi(x) is read.
struct LinearRead {
  SmallVector<linalg::GenericOp> ops;
  Value gradient, output;
  ScalarFunction phi;
};

static std::optional<LinearRead> findLinearRead(TrainingGraph &graph,
                                                const SavedValue &saved) {
  RankedTensorType type = saved.getTensorType();
  if (!isa<FloatType>(type.getElementType()))
    return std::nullopt;
  Block *body;
  SmallVector<Value> roots;
  if (graph.form == GraphForm::Joint) {
    body = &graph.forward.getBody().front();
    roots.push_back(saved.value);
  } else {
    body = &graph.backward.getBody().front();
    for (unsigned k : saved.savedPositions)
      roots.push_back(body->getArgument(k));
  }
  auto isBackward = [&](Operation *op) {
    Operation *user = body->findAncestorOpInBlock(*op);
    return user && !(graph.form == GraphForm::Joint &&
                     (graph.isForward(user) || isa<EncodeOp>(user)));
  };
  // Elementwise over x's shape, any element type (i1 tests included).
  auto elementwise = [&](linalg::GenericOp generic, OpOperand &in) {
    auto t = dyn_cast<RankedTensorType>(in.get().getType());
    auto r = dyn_cast<RankedTensorType>(generic.getResult(0).getType());
    if (!t || !r || t.getShape() != type.getShape() ||
        r.getShape() != type.getShape())
      return false;
    return generic.getMatchingIndexingMap(&in).isIdentity() &&
           generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
               .isIdentity();
  };
  LinearRead read;
  llvm::DenseSet<Value> computed(roots.begin(), roots.end());
  llvm::DenseSet<Operation *> inSet, scaling;
  // A tensor computed elementwise from one other tensor and constants
  // (SELU's `g * 1.0`): that tensor, and the generics on the way.
  auto source = [&](Value v, SmallVectorImpl<linalg::GenericOp> &chain) {
    while (auto generic = v.getDefiningOp<linalg::GenericOp>()) {
      if (generic.getNumDpsInits() != 1 || generic.getNumResults() != 1 ||
          generic.getNumParallelLoops() != generic.getNumLoops() ||
          !generic.getRegion().front().getArguments().back().use_empty())
        break;
      Value next;
      for (OpOperand *in : generic.getDpsInputOperands()) {
        if (getFillConstant(in->get()))
          continue;
        if (next || !elementwise(generic, *in))
          return v;
        next = in->get();
      }
      if (!next || next.getType() != type)
        break;
      chain.push_back(generic);
      v = next;
    }
    return v;
  };
  for (Operation &op : *body) {
    auto generic = dyn_cast<linalg::GenericOp>(&op);
    if (!generic || !isBackward(generic) || generic.getNumDpsInits() != 1 ||
        generic.getNumResults() != 1 ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      continue;
    bool reads = false, ok = true;
    Value other;
    for (OpOperand *in : generic.getDpsInputOperands()) {
      if (computed.contains(in->get()) && elementwise(generic, *in))
        reads = true;
      else if (getFillConstant(in->get()))
        continue;
      else if (elementwise(generic, *in) && in->get().getType() == type) {
        SmallVector<linalg::GenericOp> chain;
        Value from = source(in->get(), chain);
        if (other && other != from)
          ok = false;
        other = from;
        for (linalg::GenericOp op : chain)
          scaling.insert(op);
      } else {
        ok = false;
      }
    }
    if (!reads)
      continue;
    Block &region = generic.getRegion().front();
    if (!ok || (other && read.gradient && other != read.gradient) ||
        !region.getArguments().back().use_empty() ||
        region
            .walk([](Operation *inner) {
              return inner->getNumRegions() || isa<linalg::IndexOp>(inner)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted())
      return std::nullopt;
    if (other)
      read.gradient = other;
    read.ops.push_back(generic);
    inSet.insert(generic);
    computed.insert(generic.getResult(0));
  }
  if (!read.gradient || read.ops.empty())
    return std::nullopt;
  // Exactly one value leaves the set, a float tensor of x's type; x itself
  // is read by nothing else in the backward.
  for (Value v : computed)
    for (OpOperand &use : v.getUses()) {
      if (!isBackward(use.getOwner()) || inSet.contains(use.getOwner()))
        continue;
      if (llvm::is_contained(roots, v) || (read.output && read.output != v) ||
          v.getType() != type)
        return std::nullopt;
      read.output = v;
    }
  if (!read.output)
    return std::nullopt;
  // F(x, g), compiled across the set.
  auto member = [&](Operation *op) {
    return inSet.contains(op) || scaling.contains(op);
  };
  auto resolve = [&](Value v) {
    return resolveAcrossGenerics(v, roots, member, [&](OpOperand &operand) {
      return member(operand.getOwner());
    });
  };
  std::string error;
  FailureOr<ScalarFunction> f = ScalarFunction::compile(
      {roots.front(), read.gradient}, read.output, resolve, error);
  if (failed(f))
    return std::nullopt;
  // Linear in g: F(x, 0) = 0 and F(x, a) = a F(x, 1).
  for (int i = -40; i <= 40; ++i) {
    double x = i / 4.0, one = f->evaluate(x, {1.0});
    if (!std::isfinite(one) || f->evaluate(x, {0.0}) != 0.0)
      return std::nullopt;
    for (double a : {2.0, -1.5})
      if (std::fabs(f->evaluate(x, {a}) - a * one) >
          1e-12 * std::max(1.0, std::fabs(a * one)))
        return std::nullopt;
  }
  read.phi = f->bindLast(1.0);
  if (read.phi.isIdentity())
    return std::nullopt;
  return read;
}

/// Makes `read`'s consumers read `decoded` (the table's phi(x)) in place of
/// the values they computed phi(x) from, and erases what is left dead.
static void readTable(DerivativeRead &read, Value decoded) {
  for (PhiConsumer &consumer : read.consumers) {
    BlockArgument first =
        consumer.generic.getMatchingBlockArgument(consumer.operands.front());
    for (OpOperand *operand : consumer.operands)
      operand->set(decoded);
    if (consumer.frontier != first)
      consumer.frontier.replaceAllUsesWith(first);
    SmallVector<Operation *> ops = llvm::to_vector(llvm::make_pointer_range(
        consumer.generic.getRegion().front().without_terminator()));
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && isPure(op))
        op->erase();
  }
  for (linalg::GenericOp generic : llvm::reverse(read.chain))
    if (generic->use_empty())
      generic->erase();
}

//===----------------------------------------------------------------------===//
// Small integers (Gist's narrow max-pool indices)
//===----------------------------------------------------------------------===//

namespace {
/// A closed range of integers.
struct Interval {
  int64_t lo, hi;
  Interval join(Interval o) const {
    return {std::min(lo, o.lo), std::max(hi, o.hi)};
  }
};
} // namespace

/// The range of `v`, an integer or index in the body of `generic` whose
/// output `carried` (the block argument of the result being computed)
/// holds values in `carriedRange`: linalg.index over static loop ranges,
/// constants, +, -, *, casts and selects. Bounded magnitudes only (2^40).
static std::optional<Interval> rangeOf(Value v, linalg::GenericOp generic,
                                       BlockArgument carried,
                                       Interval carriedRange, int depth = 0) {
  const int64_t limit = int64_t(1) << 40;
  auto bounded = [&](Interval r) -> std::optional<Interval> {
    if (r.lo < -limit || r.hi > limit)
      return std::nullopt;
    return r;
  };
  if (depth > 64)
    return std::nullopt;
  if (v == carried)
    return carriedRange;
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return bounded({constant.getSExtValue(), constant.getSExtValue()});
  Operation *op = v.getDefiningOp();
  if (!op || op->getParentOp() != generic)
    return std::nullopt;
  auto sub = [&](Value x) {
    return rangeOf(x, generic, carried, carriedRange, depth + 1);
  };
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    int64_t n = ranges[index.getDim()];
    if (ShapedType::isDynamic(n) || n < 1)
      return std::nullopt;
    return bounded({0, n - 1});
  }
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(op))
    return sub(op->getOperand(0));
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    std::optional<Interval> a = sub(op->getOperand(0)),
                            b = sub(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    if (isa<arith::AddIOp>(op))
      return bounded({a->lo + b->lo, a->hi + b->hi});
    if (isa<arith::SubIOp>(op))
      return bounded({a->lo - b->hi, a->hi - b->lo});
    int64_t c[] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
    return bounded({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    std::optional<Interval> a = sub(select.getTrueValue()),
                            b = sub(select.getFalseValue());
    if (!a || !b)
      return std::nullopt;
    return a->join(*b);
  }
  return std::nullopt;
}

/// The range of the integer tensor `v` if a linalg.generic computes it with
/// an output initialized by a constant fill (an argmax: max-pool indices).
static std::optional<Interval> getTensorRange(Value v) {
  auto result = dyn_cast<OpResult>(v);
  auto generic =
      result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
  if (!generic)
    return std::nullopt;
  OpOperand *init = generic.getDpsInitOperand(result.getResultNumber());
  auto fill = init->get().getDefiningOp<linalg::FillOp>();
  APInt start;
  if (!fill || !matchPattern(fill.value(), m_ConstantInt(&start)))
    return std::nullopt;
  BlockArgument carried = generic.getMatchingBlockArgument(init);
  Value yielded = generic.getRegion().front().getTerminator()->getOperand(
      result.getResultNumber());
  Interval range{start.getSExtValue(), start.getSExtValue()};
  // The output starts at the fill and takes yielded values: iterate to the
  // union's fixed point (selects between a new value and the carried one).
  for (int round = 0; round < 8; ++round) {
    std::optional<Interval> next = rangeOf(yielded, generic, carried, range);
    if (!next)
      return std::nullopt;
    Interval joined = range.join(*next);
    if (joined.lo == range.lo && joined.hi == range.hi)
      return range;
    range = joined;
  }
  return std::nullopt;
}

IndexEncodingAttr mlir::act::getIndexEncoding(const SavedValue &saved) {
  RankedTensorType type = saved.getTensorType();
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (!integer)
    return nullptr;
  std::optional<Interval> range = getTensorRange(saved.value);
  if (!range || range->lo < 0)
    return nullptr;
  unsigned bits = std::max(1u, unsigned(llvm::Log2_64_Ceil(range->hi + 1)));
  if (bits > 16 || bits >= integer.getWidth())
    return nullptr;
  return IndexEncodingAttr::get(type.getContext(), bits);
}

/// Whether `v` (a scalar in a generic's body) is a constant zero: a
/// constant, or the block argument of an input filled with one.
static bool isZeroScalar(Value v) {
  Value c = getScalarConstant(v);
  return c && (matchPattern(c, m_AnyZeroFloat()) || matchPattern(c, m_Zero()));
}

bool mlir::act::hasStructuralZeros(Value v) {
  // Views and zero padding keep the zeros.
  while (true) {
    Operation *op = v.getDefiningOp();
    if (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                        tensor::ExtractSliceOp, tensor::ReshapeOp,
                        tensor::CastOp>(op)) {
      v = op->getOperand(0);
      continue;
    }
    if (auto pad = dyn_cast_or_null<tensor::PadOp>(op)) {
      Value padding = pad.getConstantPaddingValue();
      if (!padding || !isZeroScalar(padding))
        return false;
      v = pad.getSource();
      continue;
    }
    break;
  }
  auto result = dyn_cast<OpResult>(v);
  auto generic = result ? dyn_cast<linalg::GenericOp>(result.getOwner())
                        : linalg::GenericOp();
  if (!generic)
    return false;
  Block &body = generic.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(result.getResultNumber());
  Value out =
      body.getArgument(generic.getNumDpsInputs() + result.getResultNumber());
  Operation *op = yielded.getDefiningOp();
  if (!op)
    return false;
  // ReLU-like: max(a, 0) or a select with a zero branch.
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(op) &&
      llvm::any_of(op->getOperands(), isZeroScalar))
    return true;
  if (auto select = dyn_cast<arith::SelectOp>(op);
      select && (isZeroScalar(select.getTrueValue()) ||
                 isZeroScalar(select.getFalseValue())))
    return true;
  // A max reduction (max pool) of a value with structural zeros:
  // max(a, out) or select(a > out, a, out), `a` read from the input.
  if (!llvm::is_contained(generic.getIteratorTypesArray(),
                          utils::IteratorType::reduction))
    return false;
  SmallVector<Value, 2> operands;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    operands.assign(op->getOperands().begin(), op->getOperands().end());
  else if (auto select = dyn_cast<arith::SelectOp>(op))
    operands = {select.getTrueValue(), select.getFalseValue()};
  if (operands.size() != 2 || !llvm::is_contained(operands, out))
    return false;
  Value a = operands[0] == out ? operands[1] : operands[0];
  auto arg = dyn_cast<BlockArgument>(a);
  if (!arg || arg.getOwner() != &body)
    return false;
  OpOperand *operand = generic.getMatchingOpOperand(arg);
  return generic.isDpsInput(operand) && hasStructuralZeros(operand->get());
}

/// Operations an op computes, for the recompute cost: a linalg op's
/// iteration count times the operations of its body, else 0 (views,
/// padding, constants). Dynamic loop ranges count as `dynamicSize` (-1
/// without one).
static int64_t countOperations(Operation *op,
                               std::optional<int64_t> dynamicSize) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return 0;
  uint64_t iterations = 1;
  for (int64_t range : linalgOp.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range) && !dynamicSize)
      return -1;
    if (ShapedType::isDynamic(range))
      range = *dynamicSize;
    iterations = llvm::SaturatingMultiply(iterations, uint64_t(range));
  }
  uint64_t bodyOps =
      std::max<uint64_t>(1, linalgOp.getBlock()->getOperations().size() - 1);
  return int64_t(std::min<uint64_t>(
      llvm::SaturatingMultiply(iterations, bodyOps), uint64_t(INT64_MAX)));
}

std::optional<RecomputeSlice>
mlir::act::getRecomputeSlice(TrainingGraph &graph, const SavedValue &saved,
                             function_ref<bool(Value)> isStored,
                             function_ref<bool(Value)> isSaved,
                             double maxOperationsPerByte) {
  RankedTensorType type = saved.getTensorType();
  // (Sizes and operations of a dynamic batch at the traced batch: their
  // ratio, which decides, is the static step's at that batch.)
  std::optional<int64_t> hint = getBatchHint(saved.origin);
  std::optional<int64_t> bytes =
      type ? getTensorBytes(type, hint) : std::nullopt;
  if (graph.form != GraphForm::Joint || !bytes || *bytes == 0 ||
      saved.value != saved.origin || !saved.getProducer())
    return std::nullopt;
  Block *body = &graph.forward.getBody().front();
  constexpr size_t kMaxOps = 48;
  RecomputeSlice slice;
  llvm::SetVector<Operation *> ops;
  SmallVector<Operation *> worklist = {saved.getProducer()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (ops.contains(op))
      continue;
    // A copy must compute the same thing: no side effects, no values from
    // nested regions it cannot see.
    if (op->getBlock() != body || !graph.isForward(op) ||
        !isMemoryEffectFree(op) || op->getNumResults() == 0)
      return std::nullopt;
    int64_t count = countOperations(op, hint);
    if (count < 0)
      return std::nullopt;
    slice.operations = int64_t(std::min<uint64_t>(
        llvm::SaturatingAdd(uint64_t(slice.operations), uint64_t(count)),
        uint64_t(INT64_MAX)));
    ops.insert(op);
    if (ops.size() > kMaxOps)
      return std::nullopt;
    bool failed = false;
    forEachValueRead(op, body, [&](Value v) {
      if (failed || isa<BlockArgument>(v) || isStored(v))
        return; // the step's arguments; values the backward has anyway
      Operation *def = v.getDefiningOp();
      // Through a saved value that is not stored and not walked through
      // (`isSaved`): its producer is not the copy's to compute.
      if (!def || isSaved(v)) {
        failed = true;
        return;
      }
      worklist.push_back(def);
    });
    if (failed)
      return std::nullopt;
  }
  if (double(slice.operations) > maxOperationsPerByte * double(*bytes))
    return std::nullopt;
  slice.ops.assign(ops.begin(), ops.end());
  llvm::sort(slice.ops,
             [&](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return slice;
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

  /// Stores `saved` as few-bit interval codes whose decode is the table of
  /// phi(x) that `read`'s consumers read instead (split form: in the
  /// value's place).
  void encodeDerivative(const SavedValue &saved, DerivativeRead &read,
                        FewBitEncodingAttr table) {
    auto type = EncodedType::get(ctx, saved.getTensorType(), table);
    OpBuilder builder(ctx);
    Value stored = placeInPlace(builder, saved, type);
    Operation *first = nullptr;
    for (PhiConsumer &consumer : read.consumers)
      if (!first || consumer.generic->isBeforeInBlock(first))
        first = consumer.generic;
    builder.setInsertionPoint(first);
    auto decode = DecodeOp::create(builder, first->getLoc(),
                                   type.getDecodedType(), stored);
    readTable(read, decode);
  }

  /// The same for a read linear in the incoming gradient: the set's result
  /// becomes gradient * decoded.
  void encodeLinear(const SavedValue &saved, LinearRead &read,
                    FewBitEncodingAttr table) {
    auto type = EncodedType::get(ctx, saved.getTensorType(), table);
    OpBuilder builder(ctx);
    Value stored = placeInPlace(builder, saved, type);
    auto producer = read.output.getDefiningOp<linalg::GenericOp>();
    builder.setInsertionPoint(producer);
    Location loc = producer.getLoc();
    auto decode = DecodeOp::create(builder, loc, type.getDecodedType(), stored);
    RankedTensorType tensorType = saved.getTensorType();
    Value init = tensor::EmptyOp::create(
        builder, loc, tensor::getMixedSizes(builder, loc, read.gradient),
        tensorType.getElementType());
    auto map = builder.getMultiDimIdentityMap(tensorType.getRank());
    auto product = linalg::GenericOp::create(
        builder, loc, TypeRange{tensorType}, ValueRange{read.gradient, decode},
        ValueRange{init}, SmallVector<AffineMap>(3, map),
        SmallVector<utils::IteratorType>(tensorType.getRank(),
                                         utils::IteratorType::parallel),
        [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l, ValueRange{arith::MulFOp::create(b, l, args[0], args[1])});
        });
    read.output.replaceAllUsesWith(product.getResult(0));
    for (linalg::GenericOp generic : llvm::reverse(read.ops))
      if (generic->use_empty())
        generic->erase();
  }

  /// Recomputes `saved` in the backward: a copy of `slice` right before
  /// its first backward use, reading the step's arguments and the other
  /// saved values (whose decodes, placed later, come before it), marked
  /// with act.recomputed as the #act.recompute value of `saved` (zero
  /// bytes). Joint form.
  void encodeRecompute(const SavedValue &saved, const RecomputeSlice &slice) {
    Block *block = &graph.forward.getBody().front();
    Operation *firstUse = firstBackwardUser(saved.value, block);
    if (!firstUse)
      return;
    OpBuilder builder(ctx);
    auto type = EncodedType::get(ctx, saved.getTensorType(),
                                 RecomputeEncodingAttr::get(ctx));
    EncodeOp encode = createEncode(builder, saved, type);
    builder.setInsertionPoint(firstUse);
    IRMapping mapping;
    llvm::SmallPtrSet<Operation *, 16> copies;
    for (Operation *op : slice.ops)
      copies.insert(builder.clone(*op, mapping));
    Value recomputed = mapping.lookup(saved.value);
    auto marked = RecomputedOp::create(
        builder, firstUse->getLoc(), recomputed.getType(), encode, recomputed);
    Value value = saved.value;
    value.replaceUsesWithIf(marked, [&](OpOperand &use) {
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      return user != encode && !graph.isForward(user) &&
             !copies.contains(user) && user != marked;
    });
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
  /// The encode of `saved` as `type`, and what the backward reads it from:
  /// the encode (joint form) or, in the split form, the backward argument
  /// that now carries it in the value's place.
  Value placeInPlace(OpBuilder &builder, const SavedValue &saved,
                     EncodedType type) {
    EncodeOp encode = createEncode(builder, saved, type);
    if (graph.form != GraphForm::Split)
      return encode;
    Block *body = &graph.forward.getBody().front();
    Operation *fwdReturn = body->getTerminator();
    unsigned firstSaved = fwdReturn->getNumOperands() - graph.getNumSaved();
    Block &bwd = graph.backward.getBody().front();
    for (unsigned k : saved.savedPositions) {
      fwdReturn->setOperand(firstSaved + k, encode);
      bwd.getArgument(k).setType(type);
    }
    return bwd.getArgument(saved.savedPositions.front());
  }

  /// The graph's `act.seeds` argument (tensor<K x i64>, indexed by id),
  /// added on first use.
  Value getSeeds() {
    if (seeds)
      return seeds;
    int64_t count = 0;
    for (const SavedValue &saved : graph.saved)
      count = std::max(count, saved.id + 1);
    seeds = getOrCreateSeeds(graph.forward, count);
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
    Value bits;
    if (auto runtime = dyn_cast<RuntimeQuantEncodingAttr>(type.getEncoding())) {
      // The width, read like the seed from the act.bits argument (which
      // records the planned width and the choices for the runtime).
      OpBuilder::InsertionGuard guard(builder);
      Value bitsArg = getOrCreateBits(graph.forward, saved.id,
                                      runtime.getBits(), runtime.getChoices());
      builder.setInsertionPointToStart(bitsArg.getParentBlock());
      Value index = arith::ConstantIndexOp::create(builder, loc, saved.id);
      bits =
          tensor::ExtractOp::create(builder, loc, bitsArg, ValueRange{index});
    }
    auto encode =
        EncodeOp::create(builder, loc, type, saved.value, saved.id, seed, bits);
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

bool mlir::act::hasEncodings(Operation *root) {
  return root->walk([](EncodeOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

FailureOr<FewBitOptions> mlir::act::getFewBitOptions(MLIRContext *context,
                                                     StringRef pass,
                                                     ArrayRef<double> range,
                                                     double sigma) {
  FewBitOptions options;
  if (!range.empty()) {
    if (range.size() != 2 || !(range[0] < range[1]) ||
        !std::isfinite(range[0]) || !std::isfinite(range[1]))
      return emitError(getOptionLoc(context, pass, "few-bit-range"))
             << pass << ": few-bit-range must be two finite numbers A,B with "
             << "A < B";
    options.lo = range[0];
    options.hi = range[1];
  }
  if (!(sigma >= 0) || !std::isfinite(sigma))
    return emitError(getOptionLoc(context, pass, "few-bit-sigma"))
           << pass << ": few-bit-sigma must be a finite number >= 0, got "
           << sigma;
  if (sigma > 0) {
    options.weight = FewBitOptions::Weight::Normal;
    options.sigma = sigma;
  }
  return options;
}

/// The optimal few-bit tables (1..policy.bits bits, element b - 1) of the
/// derivatives met so far, by phi's values on a probe grid (every GELU of a
/// model shares one dynamic program).
static SmallVector<FewBitTable> getTables(MLIRContext *ctx,
                                          const ScalarFunction &phi,
                                          const FewBitPolicy &policy) {
  static llvm::sys::SmartMutex<true> mutex;
  static std::map<std::vector<double>, std::vector<PiecewiseConstant>> cache;
  std::vector<double> key = {
      double(policy.bits), policy.options.lo, policy.options.hi,
      policy.options.weight == FewBitOptions::Weight::Normal
          ? policy.options.sigma
          : 0.0};
  for (int i = 0; i <= 256; ++i)
    key.push_back(phi(policy.options.lo +
                      (policy.options.hi - policy.options.lo) * i / 256.0));
  std::vector<PiecewiseConstant> tables;
  {
    llvm::sys::SmartScopedLock<true> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end())
      tables = it->second;
  }
  if (tables.empty()) {
    tables = optimalPiecewiseConstant([&](double x) { return phi(x); },
                                      policy.bits, policy.options);
    if (tables.empty())
      return {};
    llvm::sys::SmartScopedLock<true> lock(mutex);
    cache[key] = tables;
  }
  SmallVector<FewBitTable> result;
  for (auto [i, t] : llvm::enumerate(tables)) {
    SmallVector<float> boundaries(t.boundaries.begin(), t.boundaries.end());
    SmallVector<float> values(t.values.begin(), t.values.end());
    result.push_back(
        {FewBitEncodingAttr::get(ctx, unsigned(i + 1),
                                 DenseF32ArrayAttr::get(ctx, boundaries),
                                 DenseF32ArrayAttr::get(ctx, values)),
         t.error});
  }
  return result;
}

namespace {
/// How the backward reads a saved value through phi(x): one of the two
/// analyses' results.
struct PhiRead {
  std::optional<DerivativeRead> derivative;
  std::optional<LinearRead> linear;
  const ScalarFunction &phi() const {
    return derivative ? derivative->phi : linear->phi;
  }
};
} // namespace

static std::optional<PhiRead> findPhiRead(TrainingGraph &graph,
                                          const SavedValue &saved) {
  PhiRead read;
  if ((read.derivative = findDerivativeRead(graph, saved)) ||
      (read.linear = findLinearRead(graph, saved)))
    return read;
  return std::nullopt;
}

/// The tables `policy` gives `read`'s phi (1..policy.bits bits), or none
/// when it does not apply: few-bit is off, the value is also read through a
/// sign test (a mask stores that exactly), or phi does not saturate.
static SmallVector<FewBitTable> getPolicyTables(TrainingGraph &graph,
                                                const SavedValue &saved,
                                                const PhiRead &read,
                                                const FewBitPolicy &policy) {
  if (!policy.bits)
    return {};
  size_t numUses;
  if (!findSignTests(graph, saved, numUses).empty())
    return {};
  const ScalarFunction &phi = read.phi();
  if (!isSaturating([&](double x) { return phi(x); }, policy.options))
    return {};
  return getTables(graph.forward.getContext(), phi, policy);
}

SmallVector<FewBitTable>
mlir::act::getFewBitTables(TrainingGraph &graph, const SavedValue &saved,
                           const FewBitPolicy &policy) {
  if (!policy.bits)
    return {};
  std::optional<PhiRead> read = findPhiRead(graph, saved);
  return read ? getPolicyTables(graph, saved, *read, policy)
              : SmallVector<FewBitTable>();
}

FewBitEncodingAttr mlir::act::getFewBitEncoding(TrainingGraph &graph,
                                                const SavedValue &saved,
                                                const FewBitPolicy &policy) {
  SmallVector<FewBitTable> tables = getFewBitTables(graph, saved, policy);
  return tables.empty() ? nullptr : tables.back().encoding;
}

SmallVector<std::pair<const SavedValue *, RecomputeSlice>>
mlir::act::planRecomputation(TrainingGraph &graph, const FewBitPolicy &fewBit,
                             const RecomputePolicy &recompute) {
  // In id order: a copy reads the forward values it needs, and the
  // encodings placed after it give it their decoded forms. A value
  // recomputed is not stored, so later copies recompute through it (a
  // LayerNorm output through the residual stream's sum of embeddings, a
  // view of the attention probabilities through their softmax).
  // Without a budget, only reshapes of a value stored anyway are: the
  // exporter saves both a tensor and its reshaped view (softmax's output
  // and the batch-matmul operand it becomes), one buffer that would be
  // stored, and encoded, twice; the view costs nothing to re-derive.
  SmallVector<std::pair<const SavedValue *, RecomputeSlice>> plan;
  if (graph.form != GraphForm::Joint)
    return plan;
  llvm::DenseSet<Value> recomputed;
  // What the backward has anyway: saved values it reads in full (not only
  // their sign or phi(x)), encodable ones and those kept as they are (per-row
  // statistics, the loss head: a LayerNorm output is recomputed from its
  // stored input and exact statistics). A copy must not make it store more.
  // Candidates are the encodable ones: a value kept exact stays stored.
  llvm::DenseSet<Value> savedValues, readInFull;
  for (const SavedValue &saved : graph.saved) {
    savedValues.insert(saved.value);
    if (saved.status == SaveStatus::Encoded ||
        saved.status == SaveStatus::Unranked)
      continue;
    if (saved.status != SaveStatus::Encodable ||
        (!isReadOnlyThroughSignTests(graph, saved) &&
         !getFewBitEncoding(graph, saved, fewBit)))
      readInFull.insert(saved.value);
  }
  auto isStored = [&](Value v) {
    return readInFull.contains(v) && !recomputed.contains(v);
  };
  for (const SavedValue &saved : graph.saved) {
    // A value read only through its sign or phi(x) stores far less than
    // itself: not worth a recomputation.
    if (saved.status != SaveStatus::Encodable ||
        !readInFull.contains(saved.value) ||
        (recompute.isCandidate && !recompute.isCandidate(saved)))
      continue;
    std::optional<RecomputeSlice> slice = getRecomputeSlice(
        graph, saved, [&](Value v) { return v != saved.value && isStored(v); },
        // (A value recomputed before is walked through: the copy computes
        // it again from what is stored; CSE merges the repeats.)
        [&](Value v) {
          return savedValues.contains(v) && !recomputed.contains(v);
        },
        recompute.maxOperationsPerByte);
    // (At no cost: views, and the sizes of a dynamic batch they take.)
    if (!slice || (recompute.maxOperationsPerByte <= 0 &&
                   !llvm::all_of(slice->ops, [](Operation *op) {
                     return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                                tensor::DimOp>(op) ||
                            (isa<arith::ArithDialect>(op->getDialect()) &&
                             llvm::all_of(op->getResultTypes(),
                                          llvm::IsaPred<IndexType>));
                   })))
      continue;
    recomputed.insert(saved.value);
    plan.push_back({&saved, std::move(*slice)});
  }
  return plan;
}

void mlir::act::insertEncodings(TrainingGraph &graph, EncodingChoice choose,
                                const FewBitPolicy &fewBit,
                                const RecomputePolicy &recompute) {
  Inserter inserter(graph);
  // Recompute first (planRecomputation), then encode the rest.
  llvm::DenseSet<Value> recomputed;
  for (auto &[saved, slice] : planRecomputation(graph, fewBit, recompute)) {
    inserter.encodeRecompute(*saved, slice);
    recomputed.insert(saved->value);
  }
  // Backward ops that read an encoded value only through its sign (ReLU's
  // backward) read an exact 1-bit mask instead: under a lossy encoding,
  // rounding a small positive value to zero would flip the sign test, a
  // bias rather than noise (docs/Exporter.md); under a lossless one the
  // mask is smaller (Gist's Binarize).
  SmallVector<std::pair<const SavedValue *, SignTests>> signTests;
  for (const SavedValue &saved : graph.saved) {
    if (recomputed.contains(saved.value))
      continue;
    EncodingAttrInterface encoding = choose(saved);
    if (!encoding)
      continue;
    RankedTensorType type = saved.getTensorType();
    if (isa<FloatType>(type.getElementType()) &&
        !encoding.isLossless(type.getElementType())) {
      // Read only through phi(x) (an activation's derivative): its few-bit
      // table, unless the choice already is one.
      auto chosen = dyn_cast<FewBitEncodingAttr>(encoding);
      if (chosen || fewBit.bits) {
        std::optional<PhiRead> read = findPhiRead(graph, saved);
        SmallVector<FewBitTable> tables;
        if (!chosen && read)
          tables = getPolicyTables(graph, saved, *read, fewBit);
        FewBitEncodingAttr table = chosen           ? chosen
                                   : tables.empty() ? nullptr
                                                    : tables.back().encoding;
        if (read && table) {
          if (read->derivative)
            inserter.encodeDerivative(saved, *read->derivative, table);
          else
            inserter.encodeLinear(saved, *read->linear, table);
          continue;
        }
        // A table decodes to phi(x), never to x: a value read otherwise
        // stays as it is under a chosen #act.fewbit.
        if (chosen)
          continue;
      }
    }
    // Sign tests read a 1-bit mask, under any encoding of a float (lossless
    // ones too: the mask is smaller than any value encoding).
    if (isa<FloatType>(type.getElementType())) {
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
