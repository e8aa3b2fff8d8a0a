//===- Step.cpp - compile a training step once, run it many times ---------===//

#include "act/Execution/Step.h"

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/runtime/Memory.h"
#include "act/runtime/Sensitivity.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include <cstring>
#include <map>

#include <unistd.h>

using namespace mlir;
using namespace mlir::act;
namespace rt = ::act::rt;

static llvm::Error fail(const std::string &message) {
  return llvm::createStringError(message);
}

//===----------------------------------------------------------------------===//
// Step
//===----------------------------------------------------------------------===//

/// The dynamic dimensions of `func`'s arguments that its ops require to be
/// equal, as groups of (argument, dimension): linalg ops tie their
/// operands' dimensions through their loops, element-wise ops tie their
/// operands and results, tensor.empty ties a size to the tensor.dim it
/// reads.
static std::vector<std::vector<std::pair<unsigned, unsigned>>>
findEqualDynamicDims(func::FuncOp func) {
  using Node = std::pair<const void *, int64_t>;
  llvm::EquivalenceClasses<Node> classes;
  auto node = [](Value v, int64_t dim) {
    return Node(v.getAsOpaquePointer(), dim);
  };
  auto isDynamic = [](Value v, int64_t dim) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && dim < type.getRank() && type.isDynamicDim(dim);
  };
  func.walk([&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isa<RankedTensorType>(operand.get().getType()))
          continue;
        AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
        for (auto [i, expr] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(expr);
              d && isDynamic(operand.get(), i))
            classes.unionSets(node(operand.get(), i),
                              Node(op, d.getPosition()));
      }
      for (OpResult result : op->getResults())
        for (int64_t i = 0,
                     e = cast<RankedTensorType>(result.getType()).getRank();
             i < e; ++i)
          if (isDynamic(result, i))
            classes.unionSets(
                node(result, i),
                node(
                    linalgOp.getDpsInitOperand(result.getResultNumber())->get(),
                    i));
      return;
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      for (auto [i, size] : llvm::enumerate(empty.getMixedSizes()))
        if (auto value = dyn_cast<Value>(size))
          if (auto dim = value.getDefiningOp<tensor::DimOp>())
            if (std::optional<int64_t> index = dim.getConstantIndex())
              classes.unionSets(node(empty.getResult(), i),
                                node(dim.getSource(), *index));
      return;
    }
    if (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1) {
      Value result = op->getResult(0);
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        return;
      for (Value operand : op->getOperands()) {
        auto operandType = dyn_cast<RankedTensorType>(operand.getType());
        if (!operandType || operandType.getRank() != type.getRank())
          continue;
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (isDynamic(operand, i) && isDynamic(result, i))
            classes.unionSets(node(operand, i), node(result, i));
      }
    }
  });
  std::map<Node, std::vector<std::pair<unsigned, unsigned>>> groups;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        groups[classes.getOrInsertLeaderValue(node(arg, i))].push_back(
            {arg.getArgNumber(), unsigned(i)});
  }
  std::vector<std::vector<std::pair<unsigned, unsigned>>> result;
  for (auto &[leader, members] : groups)
    if (members.size() > 1)
      result.push_back(members);
  return result;
}

llvm::Expected<std::unique_ptr<Step>>
Step::compile(ModuleOp module, llvm::StringRef entry, const JitTarget &target) {
  std::unique_ptr<Step> step(new Step());
  // Which functions run: the named one, or the module's training graph.
  unsigned numSaved = 0;
  if (!entry.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func)
      return fail("no function @" + entry.str() + " in the module");
    step->forwardName = entry.str();
    if (auto ref = func->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName)) {
      step->backwardName = ref.getValue().str();
      if (auto n = func->getAttrOfType<IntegerAttr>(kNumSavedAttrName))
        numSaved = n.getInt();
    }
  } else {
    FailureOr<SmallVector<TrainingGraph>> graphs =
        analyzeTrainingGraphs(module);
    if (failed(graphs))
      return fail("the module holds no training graph act can run");
    if (graphs->empty())
      return fail("no entry function: the module has no public function with "
                  "a body (name one with --entry)");
    TrainingGraph &graph = graphs->front();
    step->forwardName = graph.forward.getSymName().str();
    if (graph.backward) {
      step->backwardName = graph.backward.getSymName().str();
      numSaved = graph.getNumSaved();
    }
    step->fingerprint = getGraphFingerprint(graph);
    if (graph.loss)
      for (OpOperand &use : graph.loss.getUses())
        if (isa<func::ReturnOp>(use.getOwner()) &&
            use.getOwner()->getParentOp() == graph.forward)
          step->lossIndex = use.getOperandNumber();
  }
  auto forwardFunc = module.lookupSymbol<func::FuncOp>(step->forwardName);
  if (!forwardFunc)
    return fail("no function @" + step->forwardName + " in the module");
  if (forwardFunc.getNumResults() < numSaved)
    return fail("@" + step->forwardName + " returns fewer values than the " +
                std::to_string(numSaved) + " it saves");
  step->numOutputs = forwardFunc.getNumResults() - numSaved;
  // The stochastically quantized tensors (before lowering erases them):
  // every stochastic encoding with a quantizer (#act.quant, #act.division).
  forwardFunc.walk([&](EncodeOp encode) {
    EncodingAttrInterface encoding = encode.getType().getEncoding();
    auto type = dyn_cast<RankedTensorType>(encode.getInput().getType());
    std::optional<unsigned> bits = encoding.getQuantizerBits();
    if (bits && encoding.isStochastic() && type && type.hasStaticShape()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      // (a run-time width measures #act.quant's family: its codes are
      // #act.quant's at the width, the profile's family)
      if (auto runtime = dyn_cast<RuntimeQuantEncodingAttr>(encoding))
        Attribute(runtime.getQuantAt(*bits)).print(os);
      else
        encoding.print(os);
      step->stochastic.push_back(
          {int64_t(encode.getId()), type.getNumElements(), *bits, text});
    }
  });

  step->equalDims = findEqualDynamicDims(forwardFunc);
  for (unsigned i = 0; i < forwardFunc.getNumArguments(); ++i) {
    auto range =
        forwardFunc.getArgAttrOfType<DictionaryAttr>(i, kIndexRangeAttrName);
    if (!range)
      continue;
    auto lower = range.getAs<IntegerAttr>("lower");
    auto upper = range.getAs<IntegerAttr>("upper");
    if (!lower || !upper)
      return fail("argument " + std::to_string(i) + ": " +
                  kIndexRangeAttrName.str() +
                  " needs integer 'lower' and 'upper' entries");
    Step::IndexRange r{i,
                       lower.getInt(),
                       upper.getInt(),
                       std::nullopt,
                       bool(range.get("unsigned")),
                       ""};
    if (auto ignore = range.getAs<IntegerAttr>("ignore"))
      r.ignore = ignore.getInt();
    if (auto use = range.getAs<StringAttr>("use"))
      r.use = use.str();
    step->indexRanges.push_back(std::move(r));
  }

  std::vector<std::string> names = {step->forwardName};
  if (!step->backwardName.empty()) {
    names.push_back(step->backwardName);
    // (CPU: the backward tells runBackward's caller when each saved value
    // is read for the last time: act-release-arguments.)
    if (!target.gpu)
      if (auto backward = module.lookupSymbol<func::FuncOp>(step->backwardName))
        backward->setAttr("act.release_arguments",
                          UnitAttr::get(module.getContext()));
  }
  auto jits = JitFunction::compileAll(module, names,
                                      /*countAllocations=*/true, target);
  if (!jits)
    return jits.takeError();
  if (jits->empty()) // (JitTarget::cacheOnly: not in the cache)
    return std::unique_ptr<Step>();
  step->jits = std::move(*jits);
  step->onDevice = target.deviceTensors;
  step->forward = step->jits[0].get();
  if (step->jits.size() > 1)
    step->backward = step->jits[1].get();
  for (auto [i, spec] : llvm::enumerate(step->forward->getArguments())) {
    if (spec.isSeeds)
      step->seedsIndex = unsigned(i);
    if (spec.isBits) {
      step->bitsIndex = unsigned(i);
      step->bits = HostTensor::allocate(ElementKind::I32, spec.shape);
      llvm::copy(spec.plannedBits, step->bits.as<int32_t>());
    }
  }
  return std::move(step);
}

llvm::ArrayRef<int32_t> Step::getBits() const {
  if (!bitsIndex)
    return {};
  return {bits.as<int32_t>(), size_t(bits.numElements())};
}

llvm::Error Step::setBits(int64_t id, int32_t width) {
  if (!bitsIndex)
    return fail("the step has no run-time widths (no act.bits argument: "
                "encode with #act.runtime_quant)");
  const ValueSpec &spec = getArguments()[*bitsIndex];
  if (id < 0 || id >= int64_t(spec.bitChoices.size()) || !spec.bitChoices[id])
    return fail("saved tensor " + std::to_string(id) +
                " has no run-time width");
  bool allowed = width > 0 && llvm::isPowerOf2_32(uint32_t(width)) &&
                 (spec.bitChoices[id] >> llvm::Log2_32(uint32_t(width))) & 1;
  if (!allowed) {
    std::string choices;
    for (int b = 0; b < 31; ++b)
      if ((spec.bitChoices[id] >> b) & 1)
        choices += (choices.empty() ? "" : ", ") + std::to_string(1 << b);
    return fail("saved tensor " + std::to_string(id) + " takes widths " +
                choices + "; got " + std::to_string(width));
  }
  bits.as<int32_t>()[id] = width;
  return llvm::Error::success();
}

/// Element `i` of an integer tensor, widened.
static std::optional<int64_t> integerAt(const HostTensor &t, int64_t i,
                                        bool isUnsigned) {
  switch (t.getKind()) {
  case ElementKind::I64:
    return t.as<int64_t>()[i];
  case ElementKind::I32:
    return t.as<int32_t>()[i];
  case ElementKind::I16:
    return t.as<int16_t>()[i];
  case ElementKind::I8:
    return isUnsigned ? int64_t(t.as<uint8_t>()[i])
                      : int64_t(t.as<int8_t>()[i]);
  default:
    return std::nullopt;
  }
}

llvm::Error Step::checkIndexRanges(llvm::ArrayRef<HostTensor> args) const {
  for (const IndexRange &r : indexRanges) {
    if (r.argument >= args.size())
      continue; // the argument count is checked by the call
    const HostTensor &t = args[r.argument];
    for (int64_t i = 0, n = t.numElements(); i < n; ++i) {
      std::optional<int64_t> v = integerAt(t, i, r.isUnsigned);
      if (!v)
        break; // not integers: the call reports the kind
      if ((*v >= r.lower && *v < r.upper) || (r.ignore && *v == *r.ignore))
        continue;
      return fail("argument " + std::to_string(r.argument) + " holds " +
                  std::to_string(*v) + " at element " + std::to_string(i) +
                  ", outside [" + std::to_string(r.lower) + ", " +
                  std::to_string(r.upper) + ")" +
                  (r.ignore ? " (or " + std::to_string(*r.ignore) + ")" : "") +
                  (r.use.empty() ? "" : ": " + r.use));
    }
  }
  return llvm::Error::success();
}

void Step::setStream(void *s) {
  stream = s;
  for (auto &jit : jits)
    jit->setStream(s);
}

llvm::Error Step::setGraphs(bool on) {
  for (auto &jit : jits)
    if (llvm::Error e = jit->setGraphs(on))
      return e;
  return llvm::Error::success();
}

llvm::Expected<StepOutputs> Step::runForward(llvm::ArrayRef<HostTensor> args) {
  // Dynamic sizes the step's ops need equal are equal (7 rows of inputs and
  // 9 of labels used to run and report a wrong loss).
  for (const auto &group : equalDims) {
    auto size = [&](std::pair<unsigned, unsigned> at) -> int64_t {
      if (at.first >= args.size() ||
          at.second >= args[at.first].getShape().size())
        return -1;
      return args[at.first].getShape()[at.second];
    };
    for (const auto &member : group)
      if (size(member) != size(group.front()))
        return fail("argument " + std::to_string(group.front().first) +
                    " dimension " + std::to_string(group.front().second) +
                    " (size " + std::to_string(size(group.front())) +
                    ") and argument " + std::to_string(member.first) +
                    " dimension " + std::to_string(member.second) + " (size " +
                    std::to_string(size(member)) +
                    ") must agree: the step's ops use them together");
  }
  if (!onDevice)
    if (llvm::Error e = checkIndexRanges(args))
      return std::move(e);
  // The run-time widths: the step's table, unless the caller gave them.
  std::vector<HostTensor> withBits;
  if (bitsIndex && *bitsIndex < args.size() && !args[*bitsIndex].data()) {
    withBits.assign(args.begin(), args.end());
    withBits[*bitsIndex] =
        HostTensor::view(ElementKind::I32, bits.getShape(), bits.data());
    args = withBits;
  }
  StepOutputs result;
  rt::resetPeak();
  int64_t base = rt::getMemoryStats().liveBytes;
  auto outs = forward->call(args);
  if (!outs)
    return outs.takeError();
  result.peakBytes = rt::getMemoryStats().peakBytes - base;
  result.deviceSeconds = forward->getLastDeviceSeconds();
  result.values = std::move(*outs);
  return std::move(result);
}

llvm::Expected<StepOutputs>
Step::runBackward(llvm::MutableArrayRef<HostTensor> args, bool release) {
  if (!backward)
    return fail("the step is in the joint form: it has no backward function "
                "of its own to run");
  // The saved values are held from the start (its peak counts them, as a
  // whole step's does), whatever it then releases.
  int64_t held = 0;
  for (const HostTensor &saved :
       args.take_front(std::min<size_t>(getNumSaved(), args.size())))
    held += int64_t(saved.byteSize());
  rt::resetPeak();
  int64_t base = rt::getMemoryStats().liveBytes;
  // With `release`, the backward drops each argument after its last use
  // (act-release-arguments); its memory goes when nothing else holds it.
  std::pair<rt::ArgumentRelease, void *> previous{nullptr, nullptr};
  if (release)
    previous = rt::setArgumentRelease(
        [](void *context, int64_t index) {
          auto *values =
              static_cast<llvm::MutableArrayRef<HostTensor> *>(context);
          if (index >= 0 && size_t(index) < values->size())
            (*values)[index] = HostTensor();
        },
        &args);
  auto grads = backward->call(args);
  if (release)
    rt::setArgumentRelease(previous.first, previous.second);
  if (!grads)
    return grads.takeError();
  StepOutputs result;
  result.peakBytes = held + rt::getMemoryStats().peakBytes - base;
  result.values = std::move(*grads);
  return std::move(result);
}

llvm::Expected<StepOutputs> Step::run(llvm::ArrayRef<HostTensor> args) {
  auto forwardOutputs = runForward(args);
  if (!forwardOutputs || !backward)
    return forwardOutputs;
  StepOutputs result;
  result.peakBytes = forwardOutputs->peakBytes;
  std::vector<HostTensor> &outs = forwardOutputs->values;
  // Split form: the saved values are held between the two calls; the
  // backward function gets them and a tangent per output (1 for the loss,
  // 0 for the others).
  std::vector<HostTensor> bargs(
      std::make_move_iterator(outs.begin() + numOutputs),
      std::make_move_iterator(outs.end()));
  size_t numSaved = bargs.size();
  for (size_t t = numSaved; t < backward->getArguments().size(); ++t) {
    const ValueSpec &spec = backward->getArguments()[t];
    if (t - numSaved >= numOutputs)
      return fail("the backward takes more tangents than the forward has "
                  "outputs");
    bool one = t - numSaved == lossIndex && spec.kind == ElementKind::F32;
    llvm::ArrayRef<int64_t> shape = outs[t - numSaved].getShape();
    if (onDevice && spec.isTensor) {
      bargs.push_back(allocateDeviceTensor(spec.kind, shape,
                                           one ? 0x3f800000u : 0u, stream));
      continue;
    }
    HostTensor tangent = HostTensor::allocate(spec.kind, shape, spec.isTensor);
    if (one)
      std::fill_n(tangent.as<float>(), tangent.numElements(), 1.0f);
    bargs.push_back(std::move(tangent));
  }
  // The forward's outputs are held (live) during the backward; its peak
  // counts the saved values it reads.
  auto grads = runBackward(bargs);
  if (!grads)
    return grads.takeError();
  result.peakBytes = std::max(result.peakBytes, grads->peakBytes);
  outs.resize(numOutputs);
  result.values = std::move(outs);
  for (HostTensor &g : grads->values)
    result.values.push_back(std::move(g));
  return std::move(result);
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t Step::getTensorSeed(uint64_t stepSeed, uint64_t batch, int64_t id,
                             bool redraw) {
  uint64_t s =
      splitmix64(stepSeed + batch * 0x9E3779B97F4A7C15ull + uint64_t(id));
  return redraw ? splitmix64(s ^ 0xD1B54A32D192ED03ull) : s;
}

void Step::setSeeds(HostTensor &seeds, uint64_t stepSeed, uint64_t batch,
                    int64_t redrawId) {
  for (int64_t id = 0; id < seeds.numElements(); ++id)
    seeds.as<uint64_t>()[id] =
        getTensorSeed(stepSeed, batch, id, id == redrawId);
}

HostTensor Step::makeSeeds(const ValueSpec &spec, uint64_t stepSeed,
                           uint64_t batch) {
  HostTensor seeds = HostTensor::allocate(ElementKind::I64, spec.shape);
  setSeeds(seeds, stepSeed, batch);
  return seeds;
}

//===----------------------------------------------------------------------===//
// Arguments
//===----------------------------------------------------------------------===//

static std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "(";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? "x" : "") + std::to_string(d);
  return text + ")";
}

llvm::Expected<HostTensor> mlir::act::makeRandomArgument(const ValueSpec &spec,
                                                         std::mt19937_64 &gen,
                                                         RandomInit init,
                                                         int64_t dynamicSize) {
  if (dynamicSize < 0)
    return fail("the size of dynamic dimensions must not be negative, got " +
                std::to_string(dynamicSize));
  // What the argument needs, checked against the machine before allocating
  // (a huge size used to abort, or overflow into a crash in the step).
  std::vector<int64_t> shape;
  uint64_t bytes = getElementBytes(spec.kind);
  bool overflow = false;
  for (int64_t d : spec.shape) {
    int64_t size = ShapedType::isDynamic(d) ? dynamicSize : d;
    shape.push_back(size);
    if (size != 0 && bytes > uint64_t(INT64_MAX) / uint64_t(size))
      overflow = true;
    else
      bytes *= uint64_t(size);
  }
  uint64_t memory =
      uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
  if (overflow || bytes > memory)
    return fail(
        "a random argument of shape " + formatShape(shape) + " would need " +
        (overflow ? std::string("more than 2^63") : std::to_string(bytes)) +
        " bytes, more than this machine's " + std::to_string(memory) +
        " bytes of memory");
  HostTensor value = HostTensor::allocate(spec.kind, shape, spec.isTensor);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::uniform_int_distribution<int> ints(-2, 2);
  int64_t n = value.numElements();
  for (int64_t i = 0; i < n; ++i) {
    double v =
        init == RandomInit::Int ? double(ints(gen)) : double(normal(gen));
    switch (spec.kind) {
    case ElementKind::F32:
      value.as<float>()[i] = float(v);
      break;
    case ElementKind::F64:
      value.as<double>()[i] = v;
      break;
    case ElementKind::I64:
      value.as<int64_t>()[i] = int64_t(std::lround(v));
      break;
    case ElementKind::I32:
      value.as<int32_t>()[i] = int32_t(std::lround(v));
      break;
    case ElementKind::I16:
      value.as<int16_t>()[i] = int16_t(std::lround(v));
      break;
    case ElementKind::I8:
      value.as<int8_t>()[i] = int8_t(std::lround(v));
      break;
    case ElementKind::I1:
      value.as<char>()[i] = v > 0;
      break;
    }
  }
  return value;
}

llvm::Expected<HostTensor> mlir::act::loadArgument(const std::string &path,
                                                   const ValueSpec &spec,
                                                   unsigned index) {
  std::string what = "argument " + std::to_string(index) + " ('" + path + "')";
  std::string descr;
  auto array = readNpyTensor(path, &descr);
  if (!array)
    return array.takeError();
  if (array->getKind() != spec.kind)
    return fail(what + " has dtype " + descr + ", expected " +
                getNpyDescr(spec.kind));
  llvm::ArrayRef<int64_t> shape = array->getShape();
  if (shape.size() != spec.shape.size())
    return fail(what + " has rank " + std::to_string(shape.size()) +
                ", expected " + std::to_string(spec.shape.size()));
  for (size_t d = 0; d < spec.shape.size(); ++d)
    if (!ShapedType::isDynamic(spec.shape[d]) && spec.shape[d] != shape[d])
      return fail(what + " has dimension " + std::to_string(d) + " of size " +
                  std::to_string(shape[d]) + ", expected " +
                  std::to_string(spec.shape[d]));
  if (!spec.isTensor)
    return HostTensor::fromBytes(
        spec.kind, {},
        std::vector<char>(array->data(), array->data() + array->byteSize()),
        /*isTensor=*/false);
  return array;
}

//===----------------------------------------------------------------------===//
// Sensitivity and variance
//===----------------------------------------------------------------------===//

std::vector<double> mlir::act::flattenGradient(llvm::ArrayRef<HostTensor> outs,
                                               unsigned lossIndex) {
  std::vector<double> g;
  for (auto [i, v] : llvm::enumerate(outs)) {
    if (i == lossIndex)
      continue;
    if (v.getKind() == ElementKind::F32)
      g.insert(g.end(), v.as<float>(), v.as<float>() + v.numElements());
    else if (v.getKind() == ElementKind::F64)
      g.insert(g.end(), v.as<double>(), v.as<double>() + v.numElements());
  }
  return g;
}

static llvm::Error needSeeds(const Step &step) {
  if (step.getSeedsIndex())
    return llvm::Error::success();
  return fail("the step has no stochastic encodings (no act.seeds "
              "argument): run act-insert-encode-decode with #act.quant first");
}

llvm::Expected<SensitivityEstimate> mlir::act::estimateSensitivity(
    Step &step, std::vector<std::vector<HostTensor>> batches, uint64_t stepSeed,
    llvm::unique_function<void(size_t, size_t, size_t)> progress,
    SensitivityMethod method, unsigned perTensorBatches) {
  if (llvm::Error e = needSeeds(step))
    return std::move(e);
  llvm::ArrayRef<StochasticTensor> stochastic = step.getStochasticTensors();
  if (stochastic.empty())
    return fail("no stochastically quantized tensor with a static shape in @" +
                step.getForwardName().str());
  if (batches.empty())
    return fail("no mini-batch to estimate sensitivities on");
  std::vector<StochasticTensor> tensors(stochastic.begin(), stochastic.end());
  bool alone = method == SensitivityMethod::Error;
  // The error estimate switches each tensor's compression on and off
  // through the step's run-time widths (32: stored as it is); the widths
  // the caller set are restored at the end, whatever happens.
  std::vector<int32_t> widths(step.getBits().begin(), step.getBits().end());
  llvm::scope_exit restore([&] {
    for (auto [id, width] : llvm::enumerate(widths))
      if (width)
        llvm::consumeError(step.setBits(int64_t(id), width));
  });
  for (const StochasticTensor &t : tensors)
    if (alone)
      if (llvm::Error e = step.setBits(t.id, 32))
        return fail("the error estimate compresses one tensor at a time: "
                    "every stochastically quantized tensor must be "
                    "#act.runtime_quant with 32 among its widths (" +
                    llvm::toString(std::move(e)) + ")");
  rt::SensitivityEstimator estimator(tensors);
  unsigned seeds = *step.getSeedsIndex();
  size_t measured = perTensorBatches
                        ? std::min<size_t>(perTensorBatches, batches.size())
                        : batches.size();
  size_t total = measured * tensors.size() + batches.size(), done = 0;
  auto runAt = [&](std::vector<HostTensor> &args, size_t batch,
                   int64_t redrawId) -> llvm::Expected<std::vector<double>> {
    Step::setSeeds(args[seeds], stepSeed, batch, redrawId);
    auto outs = step.run(args);
    if (!outs)
      return outs.takeError();
    if (progress)
      progress(++done, total, batch);
    return flattenGradient(outs->values, step.getLossIndex());
  };
  for (auto [b, args] : llvm::enumerate(batches)) {
    // The batch's own seeds tensor (the arguments may be shared).
    args[seeds] = args[seeds].clone();
    // Variance: the base seeds; error: nothing compressed.
    auto base = runAt(args, b, -1);
    if (!base)
      return base.takeError();
    if (!estimator.beginBatch(std::move(*base)))
      return fail("the gradient's size changed between mini-batches");
    if (b >= measured)
      continue; // (the base run only: the gradient variance)
    for (auto [l, t] : llvm::enumerate(tensors)) {
      if (alone)
        if (llvm::Error e = step.setBits(t.id, int32_t(t.bits)))
          return std::move(e);
      auto other = runAt(args, b, alone ? -1 : t.id);
      if (alone)
        if (llvm::Error e = step.setBits(t.id, 32))
          return std::move(e);
      if (!other)
        return other.takeError();
      if (alone)
        estimator.addAlone(l, *other);
      else
        estimator.addRedraw(l, *other);
    }
  }

  SensitivityEstimate result;
  Profile &profile = result.profile;
  profile.function = step.getForwardName().str();
  profile.fingerprint = step.getFingerprint().str();
  profile.batches = unsigned(batches.size());
  profile.stepSeed = stepSeed;
  profile.evaluations = total;
  profile.estimator = method;
  profile.gradientVariance = estimator.getGradientVariance();
  std::vector<unsigned> bits;
  for (auto [l, t] : llvm::enumerate(tensors)) {
    profile.tensors.push_back({t.id, t.elements, t.bits,
                               estimator.getSensitivity(l),
                               estimator.getSamples(l), t.encoding});
    bits.push_back(t.bits);
  }
  result.predictedVariance = estimator.predictVariance(bits);
  return std::move(result);
}

llvm::Expected<std::unique_ptr<FewBitVariants>>
FewBitVariants::compile(ModuleOp module, llvm::StringRef entry,
                        const JitTarget &target, unsigned bits,
                        const FewBitOptions &options) {
  if (bits < 1 || bits > 8)
    return fail("few-bit codes have 1 to 8 bits, not " + std::to_string(bits));
  if (hasEncodings(module))
    return fail("the module already has encodings: measure few-bit codes on "
                "the graph without them (the exporter's joint or split form)");
  // The graph and its candidates, on the caller's module (not modified).
  FailureOr<SmallVector<TrainingGraph>> graphs = analyzeTrainingGraphs(module);
  if (failed(graphs) || graphs->empty())
    return fail("the module holds no training graph act can run");
  TrainingGraph *graph = &graphs->front();
  if (!entry.empty()) {
    graph = nullptr;
    for (TrainingGraph &g : *graphs)
      if (g.forward.getSymName() == entry)
        graph = &g;
    if (!graph)
      return fail("@" + entry.str() + " is not a training graph's forward");
  }
  std::unique_ptr<FewBitVariants> result(new FewBitVariants());
  result->forwardName = graph->forward.getSymName().str();
  result->fingerprint = getGraphFingerprint(*graph);
  result->bits = bits;
  FewBitPolicy policy{bits, options};
  for (const SavedValue &saved : graph->saved) {
    RankedTensorType type = saved.getTensorType();
    if (!type || !type.hasStaticShape() ||
        !isEncodingCandidate(saved, /*lossHead=*/true, /*minBytes=*/0))
      continue;
    SmallVector<FewBitTable> tables = getFewBitTables(*graph, saved, policy);
    if (tables.empty())
      continue;
    // The step with only this value as codes, compiled from a clone.
    FewBitEncodingAttr table = tables.back().encoding;
    OwningOpRef<ModuleOp> clone = module.clone();
    FailureOr<SmallVector<TrainingGraph>> cloned =
        analyzeTrainingGraphs(*clone);
    if (failed(cloned))
      return fail("the module's copy holds no training graph");
    for (TrainingGraph &g : *cloned)
      if (g.forward.getSymName() == result->forwardName)
        insertEncodings(g, [&](const SavedValue &other) {
          return other.id == saved.id ? cast<EncodingAttrInterface>(table)
                                      : EncodingAttrInterface();
        });
    auto step = Step::compile(*clone, entry, target);
    if (!step)
      return step.takeError();
    if ((*step)->getSeedsIndex())
      return fail("few-bit codes of tensor " + std::to_string(saved.id) +
                  " made the step stochastic");
    Variant &v = result->variants.emplace_back();
    v.id = saved.id;
    v.elements = type.getNumElements();
    llvm::raw_string_ostream os(v.encoding);
    Attribute(table).print(os);
    v.tableError = tables.back().error;
    v.step = std::move(*step);
  }
  if (result->variants.empty())
    return fail("no saved value of @" + result->forwardName +
                " is read by the backward only through an activation's "
                "derivative phi(x): nothing to store as few-bit codes");
  return std::move(result);
}

llvm::Expected<FewBitSensitivityEstimate>
FewBitVariants::estimate(Step &exact,
                         const std::vector<std::vector<HostTensor>> &batches,
                         llvm::unique_function<void(size_t, size_t)> progress) {
  if (batches.empty())
    return fail("no mini-batch to measure few-bit codes on");
  if (exact.getForwardName() != forwardName || exact.getSeedsIndex())
    return fail("the exact step is not @" + forwardName + " without encodings");
  FewBitSensitivityEstimate result;
  Profile &profile = result.profile;
  profile.function = forwardName;
  profile.fingerprint = fingerprint;
  profile.batches = unsigned(batches.size());
  profile.evaluations = batches.size() * (variants.size() + 1);
  // (few-bit codes' error is a bias: measured against the exact step)
  profile.estimator = SensitivityMethod::Error;
  size_t done = 0;
  auto gradients =
      [&](Step &step) -> llvm::Expected<std::vector<std::vector<double>>> {
    std::vector<std::vector<double>> all;
    for (const std::vector<HostTensor> &args : batches) {
      if (args.size() != step.getArguments().size())
        return fail("a mini-batch gives " + std::to_string(args.size()) +
                    " arguments, the step takes " +
                    std::to_string(step.getArguments().size()));
      auto outs = step.run(args);
      if (!outs)
        return outs.takeError();
      all.push_back(flattenGradient(outs->values, step.getLossIndex()));
      if (progress)
        progress(++done, profile.evaluations);
    }
    return all;
  };
  auto base = gradients(exact);
  if (!base)
    return base.takeError();
  rt::VarianceAccumulator sampling;
  for (const std::vector<double> &g : *base)
    sampling.add(g);
  profile.gradientVariance = sampling.getVariance();
  for (Variant &v : variants) {
    auto measured = gradients(*v.step);
    if (!measured)
      return measured.takeError();
    double error = 0;
    for (auto [g, h] : llvm::zip(*base, *measured)) {
      if (g.size() != h.size())
        return fail("few-bit codes of tensor " + std::to_string(v.id) +
                    " changed the gradient's size");
      error += rt::squaredDistance(h, g);
    }
    error /= double(batches.size());
    profile.tensors.push_back({v.id, v.elements, bits,
                               v.tableError > 0 ? error / v.tableError : 0.0,
                               unsigned(batches.size()), v.encoding});
    result.squaredErrors.push_back(error);
    result.tableErrors.push_back(v.tableError);
  }
  return std::move(result);
}

llvm::Expected<VarianceMeasurement>
mlir::act::measureVariance(Step &step, std::vector<HostTensor> args,
                           unsigned runs, uint64_t stepSeed,
                           const std::vector<double> *reference) {
  // (Against a reference, a deterministic step is measured too: its
  // variance is 0, its error a bias.)
  if (!reference)
    if (llvm::Error e = needSeeds(step))
      return std::move(e);
  if (runs < 2)
    return fail("the variance needs at least 2 runs");
  std::optional<unsigned> seeds = step.getSeedsIndex();
  if (seeds)
    args[*seeds] = args[*seeds].clone();
  rt::VarianceAccumulator acc;
  double meanSquaredError = 0;
  for (unsigned r = 0; r < runs; ++r) {
    if (seeds)
      Step::setSeeds(args[*seeds], stepSeed, r);
    auto outs = step.run(args);
    if (!outs)
      return outs.takeError();
    std::vector<double> g = flattenGradient(outs->values, step.getLossIndex());
    if (reference) {
      if (reference->size() != g.size())
        return fail("the reference gradient has " +
                    std::to_string(reference->size()) +
                    " elements, the step's " + std::to_string(g.size()));
      meanSquaredError += rt::squaredDistance(g, *reference) / runs;
    }
    acc.add(std::move(g));
  }
  VarianceMeasurement result;
  result.variance = *acc.getVariance();
  if (reference)
    result.meanSquaredError = meanSquaredError;
  for (double m : acc.getMean())
    result.meanNorm2 += m * m;
  return result;
}
