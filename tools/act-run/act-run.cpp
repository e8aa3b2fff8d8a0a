//===- act-run.cpp - run a training step and measure it --------------------===//
//
// Runs one training step of a module in either graph form, before or after
// act's passes: lowers it through act-cpu-pipeline, JIT-compiles it, feeds
// inputs from .npy files or seeded random data, writes every result as .npy,
// and reports the loss, the wall time and the live and peak bytes the step
// allocated (counted by runtime/'s allocation hooks).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/Profile.h"
#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Execution/Jit.h"
#include "act/InitAll.h"
#include "act/runtime/Memory.h"
#include "act/runtime/Npy.h"
#include "act/runtime/Sensitivity.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>

using namespace mlir;
using namespace mlir::act;
namespace cl = llvm::cl;
namespace rt = ::act::rt;

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<training step .mlir>"),
                                      cl::Required);
static cl::opt<std::string>
    entry("entry", cl::desc("the step function, or the split forward "
                            "function (default: the module's training graph)"));
static cl::list<std::string>
    inputs("inputs", cl::CommaSeparated,
           cl::desc("the arguments as .npy files, in order (act.seeds "
                    "excepted); default: seeded random data"));
static cl::opt<uint64_t> dataSeed("seed", cl::init(0),
                                  cl::desc("seed of the random inputs"));
static cl::opt<std::string>
    init("init", cl::init("normal"),
         cl::desc("random inputs: 'normal' (N(0, 0.5^2)) or 'int' (integers "
                  "in [-2, 2], exact in every float encoding of 8+ bits)"));
static cl::opt<int64_t>
    dynamicSize("dynamic-size", cl::init(8),
                cl::desc("size of dynamic dimensions of random inputs"));
static cl::opt<uint64_t>
    stepSeed("step-seed", cl::init(1),
             cl::desc("seed of the step's stochastic rounding; tensor id l "
                      "gets splitmix64(step-seed + l)"));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("write result_<i>.npy here"));
static cl::opt<std::string> sensitivityFile(
    "sensitivity",
    cl::desc("estimate each stochastically encoded tensor's sensitivity "
             "(GACT Alg. 1: one base step and one re-draw per tensor, per "
             "mini-batch) and write the profile to this file"));
static cl::list<std::string> batchInputs(
    "batch-inputs",
    cl::desc("one more mini-batch for --sensitivity: .npy files (comma "
             "separated) replacing the last arguments; repeat per batch"));
static cl::opt<unsigned> varianceRuns(
    "variance-runs", cl::init(0),
    cl::desc("run the step this many times with step seeds step-seed, "
             "step-seed + 1, ... and report the gradient's variance over them "
             "(the compression variance)"));
static cl::opt<std::string>
    device("device", cl::init("cpu"),
           cl::desc("'cpu' (act-cpu-pipeline, the host), 'gpu' "
                    "(act-gpu-pipeline, CUDA device 0; allocations in "
                    "managed memory, counted the same way) or "
                    "'gpu-emulated' (the host, the encodings lowered to the "
                    "GPU kernels run as loops: checks them without a GPU)"));
static cl::opt<std::string> gpuChip("gpu-chip", cl::init("sm_90"),
                                    cl::desc("--device=gpu: the NVIDIA "
                                             "architecture"));
static cl::opt<std::string> gpuFeatures("gpu-features", cl::init("+ptx80"),
                                        cl::desc("--device=gpu: PTX "
                                                 "features"));
static cl::opt<unsigned> repeat("repeat", cl::init(1),
                                cl::desc("run the step this many times and "
                                         "report the median time"));

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int fail(const std::string &message) {
  llvm::errs() << "act-run: error: " << message << "\n";
  return 1;
}

/// Random data for an argument.
static bool randomValue(const ValueSpec &spec, std::mt19937_64 &gen,
                        HostValue &value, std::string &error) {
  value.isTensor = spec.isTensor;
  value.kind = spec.kind;
  for (int64_t d : spec.shape)
    value.shape.push_back(ShapedType::isDynamic(d) ? int64_t(dynamicSize) : d);
  int64_t n = value.numElements();
  value.data.resize(size_t(n) * getElementBytes(spec.kind));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::uniform_int_distribution<int> ints(-2, 2);
  for (int64_t i = 0; i < n; ++i) {
    double v = init == "int" ? double(ints(gen)) : double(normal(gen));
    char *at = value.data.data() + i * getElementBytes(spec.kind);
    switch (spec.kind) {
    case ElementKind::F32: {
      float f = float(v);
      std::memcpy(at, &f, 4);
      break;
    }
    case ElementKind::F64:
      std::memcpy(at, &v, 8);
      break;
    case ElementKind::I64: {
      int64_t x = int64_t(std::lround(v));
      std::memcpy(at, &x, 8);
      break;
    }
    case ElementKind::I32: {
      int32_t x = int32_t(std::lround(v));
      std::memcpy(at, &x, 4);
      break;
    }
    case ElementKind::I16: {
      int16_t x = int16_t(std::lround(v));
      std::memcpy(at, &x, 2);
      break;
    }
    case ElementKind::I8:
      *at = char(std::lround(v));
      break;
    case ElementKind::I1:
      *at = v > 0;
      break;
    }
  }
  if (init != "normal" && init != "int") {
    error = "unknown --init '" + init + "' (normal or int)";
    return false;
  }
  return true;
}

static bool loadNpy(const std::string &path, const ValueSpec &spec,
                    unsigned index, HostValue &value, std::string &error) {
  rt::NpyArray array;
  if (!rt::readNpy(path, array, error))
    return false;
  if (array.descr != getNpyDescr(spec.kind)) {
    error = "argument " + std::to_string(index) + " ('" + path + "') has dtype " +
            array.descr + ", expected " + getNpyDescr(spec.kind);
    return false;
  }
  if (array.shape.size() != spec.shape.size()) {
    error = "argument " + std::to_string(index) + " ('" + path + "') has rank " +
            std::to_string(array.shape.size()) + ", expected " +
            std::to_string(spec.shape.size());
    return false;
  }
  for (size_t d = 0; d < spec.shape.size(); ++d)
    if (!ShapedType::isDynamic(spec.shape[d]) && spec.shape[d] != array.shape[d]) {
      error = "argument " + std::to_string(index) + " ('" + path +
              "') has dimension " + std::to_string(d) + " of size " +
              std::to_string(array.shape[d]) + ", expected " +
              std::to_string(spec.shape[d]);
      return false;
    }
  value.isTensor = spec.isTensor;
  value.kind = spec.kind;
  value.shape = array.shape;
  value.data = std::move(array.data);
  return true;
}

static bool writeResult(const HostValue &value, unsigned index,
                        std::string &error) {
  rt::NpyArray array;
  array.descr = getNpyDescr(value.kind);
  array.shape = value.shape;
  array.data = value.data;
  llvm::SmallString<256> path(outputDir);
  llvm::sys::path::append(path, "result_" + std::to_string(index) + ".npy");
  return rt::writeNpy(std::string(path), array, error);
}

static std::string describeScalar(const HostValue &v) {
  if (v.numElements() != 1)
    return "";
  switch (v.kind) {
  case ElementKind::F32: {
    float f;
    std::memcpy(&f, v.data.data(), 4);
    return llvm::formatv("{0:g9}", f).str();
  }
  case ElementKind::F64: {
    double f;
    std::memcpy(&f, v.data.data(), 8);
    return llvm::formatv("{0:g17}", f).str();
  }
  default:
    return "";
  }
}

using StepFn = std::function<bool(const std::vector<HostValue> &,
                                  std::vector<HostValue> &, int64_t &)>;

/// The step's gradient: every floating-point result but the loss, flattened.
static std::vector<double> flattenGradient(const std::vector<HostValue> &outs,
                                           unsigned lossIndex) {
  std::vector<double> g;
  for (auto [i, v] : llvm::enumerate(outs)) {
    if (i == lossIndex)
      continue;
    if (v.kind == ElementKind::F32) {
      const float *f = reinterpret_cast<const float *>(v.data.data());
      g.insert(g.end(), f, f + v.numElements());
    } else if (v.kind == ElementKind::F64) {
      const double *d = reinterpret_cast<const double *>(v.data.data());
      g.insert(g.end(), d, d + v.numElements());
    }
  }
  return g;
}

/// Tensor id's seed in mini-batch (or variance run) `batch`; batch 0 is the
/// documented splitmix64(step-seed + id). `redraw` gives a second,
/// independent stream for the same tensor.
static uint64_t tensorSeed(uint64_t batch, int64_t id, bool redraw) {
  uint64_t s = splitmix64(stepSeed + batch * 0x9E3779B97F4A7C15ull + uint64_t(id));
  return redraw ? splitmix64(s ^ 0xD1B54A32D192ED03ull) : s;
}

static void setSeeds(HostValue &seeds, uint64_t batch, int64_t redrawId) {
  for (int64_t id = 0; id < seeds.numElements(); ++id) {
    uint64_t s = tensorSeed(batch, id, id == redrawId);
    std::memcpy(seeds.data.data() + id * 8, &s, 8);
  }
}

/// GACT's Alg. 1 over the mini-batches of --inputs and --batch-inputs:
/// per batch one step at the base seeds and one per tensor with only that
/// tensor's seed re-drawn (L + 1 evaluations); writes the profile.
static int estimateSensitivity(
    const std::vector<HostValue> &firstArgs, JitFunction &forward,
    unsigned seedsIndex, const StepFn &runStep, unsigned lossIndex,
    const std::vector<rt::SensitivityEstimator::Tensor> &tensors,
    const std::string &function, const std::string &fingerprint,
    std::string &error) {
  if (tensors.empty())
    return fail("--sensitivity: no stochastically quantized tensor with a "
                "static shape in @" + function);
  // Mini-batches: the first from the arguments, one per --batch-inputs.
  std::vector<std::vector<HostValue>> batches = {firstArgs};
  for (const std::string &list : batchInputs) {
    llvm::SmallVector<llvm::StringRef> files;
    llvm::StringRef(list).split(files, ',', -1, false);
    std::vector<HostValue> args = firstArgs;
    // The files replace the last arguments (act.seeds excepted).
    std::vector<unsigned> slots;
    for (unsigned i = 0; i < args.size(); ++i)
      if (i != seedsIndex)
        slots.push_back(i);
    if (files.empty() || files.size() > slots.size())
      return fail("--batch-inputs '" + list + "': expected 1 to " +
                  std::to_string(slots.size()) + " files");
    for (auto [k, file] : llvm::enumerate(files)) {
      unsigned slot = slots[slots.size() - files.size() + k];
      if (!loadNpy(file.str(), forward.getArguments()[slot], slot, args[slot],
                   error))
        return fail(error);
    }
    batches.push_back(std::move(args));
  }

  rt::SensitivityEstimator estimator(tensors);
  bool tty = llvm::errs().is_displayed();
  size_t total = batches.size() * (tensors.size() + 1), done = 0;
  auto progress = [&](size_t batch) {
    ++done;
    if (tty || done == total || done % (tensors.size() + 1) == 0)
      llvm::errs() << llvm::formatv(
          "{0}act-run: sensitivity: batch {1}/{2}, {3}/{4} step evaluations{5}",
          tty ? "\r" : "", batch + 1, batches.size(), done, total,
          tty && done != total ? "" : "\n");
  };
  for (auto [b, args] : llvm::enumerate(batches)) {
    std::vector<HostValue> outs;
    int64_t peak = 0;
    setSeeds(args[seedsIndex], b, -1);
    if (!runStep(args, outs, peak))
      return fail(error);
    if (!estimator.beginBatch(flattenGradient(outs, lossIndex)))
      return fail("the gradient's size changed between mini-batches");
    progress(b);
    for (size_t l = 0; l < tensors.size(); ++l) {
      setSeeds(args[seedsIndex], b, tensors[l].id);
      if (!runStep(args, outs, peak))
        return fail(error);
      estimator.addRedraw(l, flattenGradient(outs, lossIndex));
      progress(b);
    }
  }

  Profile profile;
  profile.function = function;
  profile.fingerprint = fingerprint;
  profile.batches = unsigned(batches.size());
  profile.stepSeed = stepSeed;
  profile.evaluations = total;
  profile.gradientVariance = estimator.getGradientVariance();
  for (auto [l, t] : llvm::enumerate(tensors))
    profile.tensors.push_back({t.id, t.elements, t.bits,
                               estimator.getSensitivity(l),
                               estimator.getSamples(l)});
  if (llvm::Error e = writeProfile(profile, sensitivityFile))
    return fail(llvm::toString(std::move(e)));

  llvm::outs() << "act-run: sensitivity of @" << function << ": "
               << tensors.size() << " tensors, " << batches.size()
               << " mini-batch(es), " << total << " step evaluations\n";
  llvm::outs() << llvm::formatv("{0,6} {1,10} {2,5} {3,14} {4,14}\n", "id",
                                "elements", "bits", "sensitivity",
                                "c*S(bits)");
  std::vector<unsigned> bits;
  for (auto [l, t] : llvm::enumerate(tensors)) {
    double c = estimator.getSensitivity(l);
    bits.push_back(t.bits);
    llvm::outs() << llvm::formatv("{0,6} {1,10} {2,5} {3,14:e} {4,14:e}\n",
                                  t.id, t.elements, t.bits, c,
                                  c * rt::quantVarianceFactor(t.bits));
  }
  llvm::outs() << llvm::formatv("predicted compression variance: {0:e}\n",
                                estimator.predictVariance(bits));
  if (auto v = estimator.getGradientVariance())
    llvm::outs() << llvm::formatv(
        "gradient variance over {0} mini-batches: {1:e}\n", batches.size(), *v);
  else
    llvm::outs() << "gradient variance: unknown (one mini-batch; give more "
                    "with --batch-inputs)\n";
  llvm::outs() << "profile: " << sensitivityFile << "\n";
  return 0;
}

/// The gradient's variance over --variance-runs step seeds on one batch.
static int measureVariance(std::vector<HostValue> args, unsigned seedsIndex,
                           const StepFn &runStep, unsigned lossIndex,
                           std::string &error) {
  rt::VarianceAccumulator acc;
  for (unsigned r = 0; r < varianceRuns; ++r) {
    setSeeds(args[seedsIndex], r, /*redrawId=*/-1);
    std::vector<HostValue> outs;
    int64_t peak = 0;
    if (!runStep(args, outs, peak))
      return fail(error);
    acc.add(flattenGradient(outs, lossIndex));
  }
  std::optional<double> v = acc.getVariance();
  if (!v)
    return fail("--variance-runs needs at least 2 runs");
  double norm2 = 0;
  for (double m : acc.getMean())
    norm2 += m * m;
  llvm::outs() << llvm::formatv(
      "gradient variance over {0} step seeds: {1:e} (squared norm of the "
      "mean gradient {2:e})\n",
      varianceRuns, *v, norm2);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  cl::ParseCommandLineOptions(argc, argv,
                              "act-run: run a training step and measure it\n");

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + inputFile + "'");

  // Which functions run: the named one, or the module's training graph.
  std::string forwardName, backwardName, fingerprint;
  unsigned numSaved = 0, lossIndex = 0;
  if (!entry.empty()) {
    auto func = module->lookupSymbol<func::FuncOp>(entry);
    if (!func)
      return fail("no function @" + entry + " in '" + inputFile + "'");
    forwardName = entry;
    if (auto ref = func->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName)) {
      backwardName = ref.getValue().str();
      if (auto n = func->getAttrOfType<IntegerAttr>(kNumSavedAttrName))
        numSaved = n.getInt();
    }
  } else {
    FailureOr<SmallVector<TrainingGraph>> graphs =
        analyzeTrainingGraphs(*module);
    if (failed(graphs))
      return fail("'" + inputFile + "' holds no training graph act can run");
    if (graphs->empty())
      return fail("no entry function: '" + inputFile +
                  "' has no public function with a body (use --entry)");
    TrainingGraph &graph = graphs->front();
    forwardName = graph.forward.getSymName().str();
    if (graph.backward) {
      backwardName = graph.backward.getSymName().str();
      numSaved = graph.getNumSaved();
    }
    fingerprint = getGraphFingerprint(graph);
    if (graph.loss)
      for (OpOperand &use : graph.loss.getUses())
        if (isa<func::ReturnOp>(use.getOwner()) &&
            use.getOwner()->getParentOp() == graph.forward)
          lossIndex = use.getOperandNumber();
  }
  auto forwardFunc = module->lookupSymbol<func::FuncOp>(forwardName);
  unsigned numOutputs = forwardFunc.getNumResults() - numSaved;
  // The stochastically quantized tensors (before lowering erases them).
  std::vector<rt::SensitivityEstimator::Tensor> stochastic;
  forwardFunc.walk([&](EncodeOp encode) {
    auto quant = dyn_cast<QuantEncodingAttr>(encode.getType().getEncoding());
    auto type = dyn_cast<RankedTensorType>(encode.getInput().getType());
    if (quant && quant.isStochastic() && type && type.hasStaticShape())
      stochastic.push_back({int64_t(encode.getId()), type.getNumElements(),
                            unsigned(quant.getBits())});
  });

  std::vector<std::string> names = {forwardName};
  if (!backwardName.empty())
    names.push_back(backwardName);
  if (device != "cpu" && device != "gpu" && device != "gpu-emulated")
    return fail("--device must be 'cpu', 'gpu' or 'gpu-emulated', not '" +
                device + "'");
  JitTarget target;
  target.gpu = device == "gpu";
  target.emulateGpuKernels = device == "gpu-emulated";
  target.chip = gpuChip;
  target.features = gpuFeatures;
  std::vector<std::unique_ptr<JitFunction>> jits = JitFunction::compileAll(
      *module, names, /*countAllocations=*/true, error, target);
  if (jits.empty())
    return fail(error);
  JitFunction &forward = *jits[0];

  // Arguments: .npy files or random data; seeds from the step seed.
  size_t expected = llvm::count_if(
      forward.getArguments(), [](const ValueSpec &s) { return !s.isSeeds; });
  if (!inputs.empty() && inputs.size() != expected)
    return fail("--inputs gives " + std::to_string(inputs.size()) +
                " files but @" + forwardName + " takes " +
                std::to_string(expected) + " arguments (act.seeds excepted)");
  std::vector<HostValue> args;
  std::mt19937_64 gen(dataSeed);
  unsigned fileIndex = 0;
  for (auto [i, spec] : llvm::enumerate(forward.getArguments())) {
    HostValue value;
    if (spec.isSeeds) {
      value.isTensor = true;
      value.kind = ElementKind::I64;
      value.shape = spec.shape;
      value.data.resize(size_t(value.numElements()) * 8);
      setSeeds(value, /*batch=*/0, /*redrawId=*/-1);
    } else if (!inputs.empty()) {
      if (!loadNpy(inputs[fileIndex++], spec, unsigned(i), value, error))
        return fail(error);
    } else if (!randomValue(spec, gen, value, error)) {
      return fail(error);
    }
    args.push_back(std::move(value));
  }

  // One step: the forward (or joint) call and, in the split form, the
  // backward call with the saved values held in between. `outs`: the
  // forward outputs, then the backward results.
  auto runStep = [&](const std::vector<HostValue> &stepArgs,
                     std::vector<HostValue> &outs, int64_t &stepPeak) {
    rt::resetPeak();
    int64_t base = rt::getMemoryStats().liveBytes;
    outs.clear();
    if (!forward.call(stepArgs, outs, error))
      return false;
    stepPeak = rt::getMemoryStats().peakBytes - base;
    if (jits.size() > 1) {
      // Split form: the saved values are held between the two calls; the
      // backward function gets them and a tangent per output (1 for the
      // loss, 0 for the others).
      JitFunction &backward = *jits[1];
      std::vector<HostValue> bargs(outs.begin() + numOutputs, outs.end());
      int64_t savedBytes = 0;
      for (const HostValue &v : bargs)
        savedBytes += int64_t(v.data.size());
      for (size_t t = bargs.size(); t < backward.getArguments().size(); ++t) {
        const ValueSpec &spec = backward.getArguments()[t];
        HostValue tangent;
        tangent.isTensor = spec.isTensor;
        tangent.kind = spec.kind;
        tangent.shape = outs[t - bargs.size() + 0].shape;
        tangent.data.assign(size_t(tangent.numElements()) *
                                getElementBytes(spec.kind),
                            0);
        if (t == bargs.size() && spec.kind == ElementKind::F32)
          for (int64_t e = 0; e < tangent.numElements(); ++e) {
            float one = 1.0f;
            std::memcpy(tangent.data.data() + e * 4, &one, 4);
          }
        bargs.push_back(std::move(tangent));
      }
      rt::resetPeak();
      std::vector<HostValue> grads;
      if (!backward.call(bargs, grads, error))
        return false;
      stepPeak = std::max(stepPeak, savedBytes + rt::getMemoryStats().peakBytes -
                                        base);
      outs.resize(numOutputs);
      outs.insert(outs.end(), grads.begin(), grads.end());
    }
    return true;
  };

  if (!sensitivityFile.empty() || varianceRuns > 0) {
    int seedsIndex = -1;
    for (auto [i, spec] : llvm::enumerate(forward.getArguments()))
      if (spec.isSeeds)
        seedsIndex = int(i);
    if (seedsIndex < 0)
      return fail("--sensitivity and --variance-runs need a step with "
                  "stochastic encodings (an act.seeds argument): run "
                  "act-insert-encode-decode with #act.quant first");
    if (!sensitivityFile.empty())
      return estimateSensitivity(args, forward, unsigned(seedsIndex), runStep,
                                 lossIndex, stochastic, forwardName,
                                 fingerprint, error);
    return measureVariance(args, unsigned(seedsIndex), runStep, lossIndex,
                           error);
  }

  std::vector<HostValue> results;
  std::vector<double> times;
  int64_t peak = 0, liveAfter = 0;
  for (unsigned run = 0; run < std::max(1u, unsigned(repeat)); ++run) {
    int64_t base = rt::getMemoryStats().liveBytes;
    auto start = std::chrono::steady_clock::now();
    std::vector<HostValue> outs;
    int64_t stepPeak = 0;
    if (!runStep(args, outs, stepPeak))
      return fail(error);
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
    peak = stepPeak;
    liveAfter = rt::getMemoryStats().liveBytes - base;
    results = std::move(outs);
  }

  if (!outputDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + ec.message());
    for (auto [i, value] : llvm::enumerate(results))
      if (!writeResult(value, unsigned(i), error))
        return fail(error);
  }

  std::sort(times.begin(), times.end());
  llvm::outs() << "act-run: @" << forwardName
               << (backwardName.empty() ? " (joint form)"
                                        : " / @" + backwardName + " (split form)")
               << ", " << args.size() << " arguments ("
               << (inputs.empty() ? "random, seed " + std::to_string(dataSeed)
                                  : std::string("from .npy"))
               << ")\n";
  if (!results.empty()) {
    std::string loss = describeScalar(results.front());
    if (!loss.empty())
      llvm::outs() << "loss: " << loss << "\n";
  }
  llvm::outs() << "results: " << results.size();
  if (!outputDir.empty())
    llvm::outs() << " written to " << outputDir << "/result_<i>.npy";
  llvm::outs() << "\n";
  llvm::outs() << llvm::formatv("time: median {0:f3} ms over {1} run(s)\n",
                                times[times.size() / 2], times.size());
  llvm::outs() << "memory: peak " << peak << " bytes, live after " << liveAfter
               << " bytes (allocated by the step"
               << (target.gpu ? ", CUDA managed memory" : "") << ")\n";
  return 0;
}
