//===- Step.cpp - act's C API over the step engine ------------------------===//
//
// Handles own what the engine needs alive: the MLIRContext and module a step
// was compiled from, the Step; a run owns its StepOutputs. Every failure is
// a message (diagnostics with their locations, engine errors), never an
// abort.
//
//===----------------------------------------------------------------------===//

#include "act-c/Step.h"

#include "Support.h"

#include "act/Analysis/Profile.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Execution/Step.h"
#include "act/InitAll.h"
#include "act/runtime/Cuda.h"
#include "act/runtime/Kernels.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

using namespace mlir;
using namespace mlir::act;

namespace {
struct StepHandle {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<Step> step;
  /// The graph before lowering, kept when it has no encodings (the exact
  /// step few-bit variants are measured against), and those variants by
  /// bits, compiled on first use.
  OwningOpRef<ModuleOp> graph;
  std::string entry;
  std::map<unsigned, std::unique_ptr<FewBitVariants>> fewBit;
  /// The caller's arguments: positions among the step's, and shapes (-1
  /// for a dynamic dimension).
  std::vector<unsigned> callerArgs;
  std::vector<std::vector<int64_t>> callerShapes;
  /// Split form: the backward's argument shapes (-1 dynamic).
  std::vector<std::vector<int64_t>> backwardShapes;
};

struct RunHandle {
  StepOutputs outputs;
};
} // namespace

using ::act::capi::setError;

/// Live handles by id. A handle's pointer is an id, never an address: a
/// handle used after its destroy (or one never created) is found missing
/// and reported, instead of being dereferenced; ids are not reused, so a
/// stale handle never reaches a newer object at the same address.
template <typename T> class HandleTable {
public:
  void *insert(std::unique_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mutex);
    uintptr_t id = ++last;
    live.emplace(id, std::move(object));
    return reinterpret_cast<void *>(id);
  }
  T *lookup(void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(reinterpret_cast<uintptr_t>(ptr));
    return it == live.end() ? nullptr : it->second.get();
  }
  /// The object, out of the table (null if it was not live).
  std::unique_ptr<T> take(void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live.end())
      return nullptr;
    std::unique_ptr<T> object = std::move(it->second);
    live.erase(it);
    return object;
  }

private:
  std::mutex mutex;
  uintptr_t last = 0;
  std::unordered_map<uintptr_t, std::unique_ptr<T>> live;
};

static HandleTable<StepHandle> &steps() {
  static auto *table = new HandleTable<StepHandle>(); // outlives exit
  return *table;
}
static HandleTable<RunHandle> &runs() {
  static auto *table = new HandleTable<RunHandle>();
  return *table;
}

static StepHandle *unwrap(ActStep step) { return steps().lookup(step.ptr); }
static RunHandle *unwrap(ActRun run) { return runs().lookup(run.ptr); }

static constexpr const char *kNoStep =
    "not a live step (never compiled, or already destroyed)";

/// actSetCacheDir's directory; unset: ACT_CACHE_DIR's.
static std::mutex cacheDirMutex;
static std::optional<std::string> cacheDir;

/// What the C API compiles for by default: the host, with the code cache.
static JitTarget getHostTarget() {
  JitTarget target;
  std::lock_guard<std::mutex> lock(cacheDirMutex);
  if (cacheDir)
    target.cacheDir = *cacheDir;
  else if (const char *env = std::getenv("ACT_CACHE_DIR"))
    target.cacheDir = env;
  return target;
}

/// The target of actStepCompileSourceOn's `device`: the host, or a CUDA
/// device on device tensors.
static llvm::Expected<JitTarget> getTarget(llvm::StringRef device) {
  if (device == "cpu")
    return getHostTarget();
  if (device != "cuda" && device != "cuda-kernels")
    return llvm::createStringError(
        "unknown device '" + device.str() +
        "' (expected cpu, cuda, or cuda-kernels: act's generated kernels "
        "without cuBLAS/cuDNN)");
  JitTarget target;
  target.gpu = true;
  target.deviceTensors = true;
  target.gpuLibraries = device == "cuda";
  return target;
}

static ActStep compile(std::unique_ptr<llvm::MemoryBuffer> buffer,
                       const char *entry, const char *device, char **error,
                       bool cacheOnly = false) {
  auto target = getTarget(device ? device : "cpu");
  if (!target) {
    setError(error, llvm::toString(target.takeError()));
    return {nullptr};
  }
  target->cacheOnly = cacheOnly;
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto handle = std::make_unique<StepHandle>();
  DialectRegistry registry;
  registerAllDialects(registry);
  handle->context = std::make_unique<MLIRContext>(registry);
  handle->context->loadAllAvailableDialects();
  // Diagnostics (with their locations) become the error message.
  std::string messages;
  llvm::raw_string_ostream os(messages);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, handle->context.get(), os);
  handle->module = parseSourceFile<ModuleOp>(sourceMgr, handle->context.get());
  if (!handle->module) {
    setError(error, messages.empty() ? "cannot parse the module" : messages);
    return {nullptr};
  }
  if (!hasEncodings(*handle->module))
    handle->graph = handle->module->clone();
  handle->entry = entry ? entry : "";
  auto step = Step::compile(*handle->module, entry ? entry : "", *target);
  if (!step) {
    std::string message = llvm::toString(step.takeError());
    setError(error, messages.empty() ? message : messages + message);
    return {nullptr};
  }
  if (!*step) // (cacheOnly: not in the code cache)
    return {nullptr};
  handle->step = std::move(*step);
  // The lowered module is not read again (a large step's IR holds tens of
  // MB).
  handle->module = nullptr;
  for (auto [i, spec] : llvm::enumerate(handle->step->getArguments()))
    if (!spec.isRuntimeFilled()) {
      handle->callerArgs.push_back(unsigned(i));
      auto &shape = handle->callerShapes.emplace_back(spec.shape);
      for (int64_t &d : shape)
        d = ShapedType::isDynamic(d) ? -1 : d;
    }
  for (const ValueSpec &spec : handle->step->getBackwardArguments()) {
    auto &shape = handle->backwardShapes.emplace_back(spec.shape);
    for (int64_t &d : shape)
      d = ShapedType::isDynamic(d) ? -1 : d;
  }
  return {steps().insert(std::move(handle))};
}

/// compile() on the file at `path`.
static ActStep compileFile(const char *path, const char *entry,
                           const char *device, char **error, bool cacheOnly) {
  std::string message;
  auto file = openInputFile(path ? path : "", &message);
  if (!file) {
    setError(error, message);
    return {nullptr};
  }
  return compile(std::move(file), entry, device, error, cacheOnly);
}

ActStep actStepCompileFileOn(const char *path, const char *entry,
                             const char *device, char **error) {
  return compileFile(path, entry, device, error, /*cacheOnly=*/false);
}

ActStep actStepLoadCachedFileOn(const char *path, const char *entry,
                                const char *device, char **error) {
  return compileFile(path, entry, device, error, /*cacheOnly=*/true);
}

ActStep actStepCompileFile(const char *path, const char *entry, char **error) {
  return actStepCompileFileOn(path, entry, "cpu", error);
}

ActStep actStepCompileSourceOn(const char *source, size_t length,
                               const char *entry, const char *device,
                               char **error) {
  if (!source) {
    setError(error, "no source");
    return {nullptr};
  }
  return compile(llvm::MemoryBuffer::getMemBufferCopy(
                     llvm::StringRef(source, length), "<source>"),
                 entry, device, error);
}

ActStep actStepCompileSource(const char *source, size_t length,
                             const char *entry, char **error) {
  return actStepCompileSourceOn(source, length, entry, "cpu", error);
}

int actStepIsOnDevice(ActStep step) {
  StepHandle *handle = unwrap(step);
  return handle && handle->step->isOnDevice() ? 1 : 0;
}

int actStepIsArgumentOnHost(ActStep step, intptr_t pos) {
  StepHandle *handle = unwrap(step);
  if (!handle || pos < 0 || pos >= intptr_t(handle->callerArgs.size()))
    return 0;
  return handle->step->isOnDevice() &&
         handle->step->getArguments()[handle->callerArgs[pos]].hostRead;
}

int actStepSetStream(ActStep step, void *stream, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (!handle->step->isOnDevice()) {
    setError(error, "the step runs on the CPU: it has no CUDA stream");
    return 1;
  }
  handle->step->setStream(stream);
  return 0;
}

int actStepSetGraphs(ActStep step, int on, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (llvm::Error e = handle->step->setGraphs(on != 0)) {
    setError(error, llvm::toString(std::move(e)));
    return 1;
  }
  return 0;
}

void actGetDevicePoolBytes(int64_t *reserved, int64_t *peakReserved) {
  ::act::rt::DevicePoolStats stats = ::act::rt::getDevicePoolStats();
  if (reserved)
    *reserved = stats.reservedBytes;
  if (peakReserved)
    *peakReserved = stats.peakReservedBytes;
}

void actGetGpuGraphCounts(int64_t *captures, int64_t *launches,
                          int64_t *failed) {
  ::act::rt::GraphStats stats = ::act::rt::getGraphStats();
  if (captures)
    *captures = stats.captures;
  if (launches)
    *launches = stats.launches;
  if (failed)
    *failed = stats.failedCaptures;
}

/// Non-zero, with a message, for a step on device tensors: `what` reads
/// gradients on the host.
static int refuseOnDevice(StepHandle *handle, const char *what, char **error) {
  if (!handle->step->isOnDevice())
    return 0;
  setError(error, std::string(what) +
                      " reads the step's gradients on the host: measure it "
                      "with the step compiled for the CPU");
  return 1;
}

void actStepDestroy(ActStep step) {
  std::unique_ptr<StepHandle> handle = steps().take(step.ptr);
  if (!handle)
    return;
  // The step's code before the context that described it.
  handle->fewBit.clear();
  handle->step.reset();
  handle->module = nullptr;
  handle->graph = nullptr;
}

intptr_t actStepGetNumArguments(ActStep step) {
  return unwrap(step) ? intptr_t(unwrap(step)->callerArgs.size()) : 0;
}

int actStepGetArgument(ActStep step, intptr_t pos, ActTensor *spec) {
  StepHandle *handle = unwrap(step);
  if (!handle || !spec || pos < 0 || pos >= intptr_t(handle->callerArgs.size()))
    return 1;
  const ValueSpec &value =
      handle->step->getArguments()[handle->callerArgs[pos]];
  spec->kind = ActElementKind(value.kind);
  spec->rank = intptr_t(value.shape.size());
  spec->shape = handle->callerShapes[pos].data();
  spec->data = nullptr;
  return 0;
}

intptr_t actStepGetLossIndex(ActStep step) {
  return unwrap(step) ? intptr_t(unwrap(step)->step->getLossIndex()) : -1;
}

int actStepHasSeeds(ActStep step) {
  return unwrap(step) && unwrap(step)->step->getSeedsIndex() ? 1 : 0;
}

intptr_t actStepGetBits(ActStep step, int32_t *bits, intptr_t capacity) {
  StepHandle *handle = unwrap(step);
  if (!handle)
    return 0;
  llvm::ArrayRef<int32_t> widths = handle->step->getBits();
  if (bits)
    std::copy_n(widths.begin(), std::min<intptr_t>(capacity, widths.size()),
                bits);
  return intptr_t(widths.size());
}

/// Sets the step's run-time widths back to `before` (getBits' earlier
/// copy; 0: a value without one).
static void restoreBits(Step &step, llvm::ArrayRef<int32_t> before) {
  for (auto [id, width] : llvm::enumerate(before))
    if (width)
      llvm::consumeError(step.setBits(int64_t(id), width));
}

int actStepSetBits(ActStep step, const int64_t *ids, const int32_t *bits,
                   intptr_t count, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (count < 0 || (count && (!ids || !bits))) {
    setError(error, "the ids or widths are null");
    return 1;
  }
  std::vector<int32_t> before = handle->step->getBits().vec();
  for (intptr_t i = 0; i < count; ++i)
    if (llvm::Error e = handle->step->setBits(ids[i], bits[i])) {
      restoreBits(*handle->step, before);
      setError(error, llvm::toString(std::move(e)));
      return 1;
    }
  return 0;
}

/// The caller's tensor `a` as a view of its memory, or none if `a` is
/// malformed (a negative rank, a missing shape, an unknown kind).
static std::optional<HostTensor> viewTensor(const ActTensor &a, bool isTensor) {
  if (a.rank < 0 || (a.rank && !a.shape) || int(a.kind) < 0 ||
      int(a.kind) > int(ActElementI1))
    return std::nullopt;
  return HostTensor::view(ElementKind(a.kind),
                          llvm::ArrayRef<int64_t>(a.shape, a.rank), a.data,
                          isTensor);
}

/// The caller's `args` as the step's argument list (views of the caller's
/// memory; the act.seeds slot left empty), or an error message.
static std::optional<std::vector<HostTensor>>
viewArguments(StepHandle *handle, const ActTensor *args, intptr_t numArgs,
              char **error) {
  if (numArgs != intptr_t(handle->callerArgs.size())) {
    setError(error, "the step takes " +
                        std::to_string(handle->callerArgs.size()) +
                        " arguments, got " + std::to_string(numArgs));
    return std::nullopt;
  }
  if (numArgs && !args) {
    setError(error, "the arguments are null (the step takes " +
                        std::to_string(numArgs) + ")");
    return std::nullopt;
  }
  const auto &specs = handle->step->getArguments();
  std::vector<HostTensor> values(specs.size());
  for (intptr_t i = 0; i < numArgs; ++i) {
    const ValueSpec &spec = specs[handle->callerArgs[i]];
    std::optional<HostTensor> view = viewTensor(args[i], spec.isTensor);
    if (!view) {
      setError(error, "argument " + std::to_string(i) + " is malformed");
      return std::nullopt;
    }
    values[handle->callerArgs[i]] = std::move(*view);
  }
  return values;
}

/// A run handle holding `outputs`, or null and the error.
static ActRun wrapRun(llvm::Expected<StepOutputs> outputs, char **error) {
  if (!outputs) {
    setError(error, llvm::toString(outputs.takeError()));
    return {nullptr};
  }
  auto run = std::make_unique<RunHandle>();
  run->outputs = std::move(*outputs);
  return {runs().insert(std::move(run))};
}

/// The whole step, or (`forwardOnly`) a split step's forward, on the
/// caller's arguments with its seeds drawn from `stepSeed`.
static ActRun runStep(ActStep step, const ActTensor *args, intptr_t numArgs,
                      uint64_t stepSeed, bool forwardOnly, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return {nullptr};
  }
  if (forwardOnly && !handle->step->isSplit()) {
    setError(error, "the step is in the joint form: its forward and backward "
                    "are one function (actStepRun runs it)");
    return {nullptr};
  }
  auto values = viewArguments(handle, args, numArgs, error);
  if (!values)
    return {nullptr};
  const auto &specs = handle->step->getArguments();
  if (std::optional<unsigned> seeds = handle->step->getSeedsIndex())
    (*values)[*seeds] = Step::makeSeeds(specs[*seeds], stepSeed);
  return wrapRun(forwardOnly ? handle->step->runForward(*values)
                             : handle->step->run(*values),
                 error);
}

ActRun actStepRun(ActStep step, const ActTensor *args, intptr_t numArgs,
                  uint64_t stepSeed, char **error) {
  return runStep(step, args, numArgs, stepSeed, /*forwardOnly=*/false, error);
}

intptr_t actStepGetNumSaved(ActStep step) {
  StepHandle *handle = unwrap(step);
  if (!handle)
    return 0;
  return intptr_t(handle->step->getNumSaved());
}

intptr_t actStepGetNumBackwardArguments(ActStep step) {
  StepHandle *handle = unwrap(step);
  return handle ? intptr_t(handle->step->getBackwardArguments().size()) : 0;
}

int actStepGetBackwardArgument(ActStep step, intptr_t pos, ActTensor *spec) {
  StepHandle *handle = unwrap(step);
  if (!handle || !spec || pos < 0 ||
      pos >= intptr_t(handle->backwardShapes.size()))
    return 1;
  const ValueSpec &value = handle->step->getBackwardArguments()[pos];
  spec->kind = ActElementKind(value.kind);
  spec->rank = intptr_t(value.shape.size());
  spec->shape = handle->backwardShapes[pos].data();
  spec->data = nullptr;
  return 0;
}

ActRun actStepRunForward(ActStep step, const ActTensor *args, intptr_t numArgs,
                         uint64_t stepSeed, char **error) {
  return runStep(step, args, numArgs, stepSeed, /*forwardOnly=*/true, error);
}

static ActRun runBackward(StepHandle *handle, RunHandle *forward,
                          const ActTensor *args, intptr_t numArgs,
                          bool releaseSaved, char **error) {
  llvm::ArrayRef<ValueSpec> specs = handle->step->getBackwardArguments();
  if (!handle->step->isSplit()) {
    setError(error, "the step is in the joint form: it has no backward "
                    "function of its own (actStepRun runs the step)");
    return {nullptr};
  }
  if (numArgs != intptr_t(specs.size()) || (numArgs && !args)) {
    setError(error, "the backward takes " + std::to_string(specs.size()) +
                        " arguments, got " +
                        (args || !numArgs ? std::to_string(numArgs)
                                          : std::string("null")));
    return {nullptr};
  }
  std::vector<HostTensor> values;
  unsigned numOutputs = handle->step->getNumOutputs();
  unsigned numSaved = handle->step->getNumSaved();
  for (intptr_t i = 0; i < numArgs; ++i) {
    const ActTensor &a = args[i];
    if (forward && !a.data && i < intptr_t(numSaved)) {
      const HostTensor &saved = forward->outputs.values[numOutputs + i];
      if (!saved.data() && saved.numElements()) {
        setError(error, "saved value " + std::to_string(i) +
                            " of the forward run was released already");
        return {nullptr};
      }
      values.push_back(saved); // (a copy: the run's is reset below)
      continue;
    }
    std::optional<HostTensor> view = viewTensor(a, specs[i].isTensor);
    if (!view) {
      setError(error,
               "backward argument " + std::to_string(i) + " is malformed");
      return {nullptr};
    }
    values.push_back(std::move(*view));
  }
  // Released: the run's saved values move into the arguments, which the
  // backward drops one by one after their last use (act-release-arguments).
  if (forward && releaseSaved)
    for (unsigned i = 0; i < numSaved; ++i)
      forward->outputs.values[numOutputs + i] = HostTensor();
  auto outputs = handle->step->runBackward(values, forward && releaseSaved);
  values.clear();
  return wrapRun(std::move(outputs), error);
}

ActRun actStepRunBackward(ActStep step, const ActTensor *args, intptr_t numArgs,
                          char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return {nullptr};
  }
  return runBackward(handle, nullptr, args, numArgs, false, error);
}

ActRun actStepRunBackwardOf(ActStep step, ActRun forward, const ActTensor *args,
                            intptr_t numArgs, int releaseSaved, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return {nullptr};
  }
  RunHandle *run = unwrap(forward);
  if (!run || run->outputs.values.size() !=
                  handle->step->getNumOutputs() + handle->step->getNumSaved()) {
    setError(error, "not a live forward run of this step");
    return {nullptr};
  }
  return runBackward(handle, run, args, numArgs, releaseSaved != 0, error);
}

int actStepEstimateSensitivity(ActStep step, const ActTensor *const *batches,
                               intptr_t numBatches, intptr_t numArgs,
                               uint64_t stepSeed, const char *profilePath,
                               char **error) {
  return actStepEstimateSensitivityWith(step, "variance", batches, numBatches,
                                        /*perTensorBatches=*/0, numArgs,
                                        stepSeed, profilePath, error);
}

int actStepEstimateSensitivityWith(ActStep step, const char *estimator,
                                   const ActTensor *const *batches,
                                   intptr_t numBatches,
                                   intptr_t perTensorBatches, intptr_t numArgs,
                                   uint64_t stepSeed, const char *profilePath,
                                   char **error) {
  llvm::StringRef name = estimator ? estimator : "";
  std::optional<SensitivityMethod> method = parseSensitivityMethod(name);
  if (!method) {
    setError(error, "the sensitivity estimator is \"variance\" or "
                    "\"error\", not \"" +
                        name.str() + "\"");
    return 1;
  }
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (refuseOnDevice(handle, "GACT's sensitivity estimate", error))
    return 1;
  if (numBatches < 1 || !batches || !profilePath) {
    setError(error, "the sensitivity estimate needs at least one mini-batch "
                    "and a profile path");
    return 1;
  }
  if (perTensorBatches < 0 || perTensorBatches > numBatches) {
    setError(error, "the per-tensor evaluations' batches are 0 (all) to the " +
                        std::to_string(numBatches) + " given, not " +
                        std::to_string(perTensorBatches));
    return 1;
  }
  std::vector<std::vector<HostTensor>> lists;
  const auto &specs = handle->step->getArguments();
  for (intptr_t b = 0; b < numBatches; ++b) {
    auto values = viewArguments(handle, batches[b], numArgs, error);
    if (!values)
      return 1;
    // estimateSensitivity draws every run's seeds into this tensor.
    if (std::optional<unsigned> seeds = handle->step->getSeedsIndex())
      (*values)[*seeds] = Step::makeSeeds(specs[*seeds], stepSeed);
    lists.push_back(std::move(*values));
  }
  auto estimate =
      estimateSensitivity(*handle->step, std::move(lists), stepSeed, nullptr,
                          *method, unsigned(perTensorBatches));
  if (!estimate) {
    setError(error, llvm::toString(estimate.takeError()));
    return 1;
  }
  if (llvm::Error e = writeProfile(estimate->profile, profilePath)) {
    setError(error, llvm::toString(std::move(e)));
    return 1;
  }
  return 0;
}

/// The flattened gradient of `reference` (a live step without stochastic
/// encodings) on `args`, what the measurements compare against; none and a
/// message otherwise.
static std::optional<std::vector<double>>
referenceGradient(ActStep reference, const ActTensor *args, intptr_t numArgs,
                  char **error) {
  StepHandle *ref = unwrap(reference);
  if (!ref) {
    setError(error, "the reference is not a live step");
    return std::nullopt;
  }
  if (ref->step->getSeedsIndex()) {
    setError(error, "the reference step has stochastic encodings: give the "
                    "step of the graph without them");
    return std::nullopt;
  }
  auto refValues = viewArguments(ref, args, numArgs, error);
  if (!refValues)
    return std::nullopt;
  auto outs = ref->step->run(*refValues);
  if (!outs) {
    setError(error, llvm::toString(outs.takeError()));
    return std::nullopt;
  }
  return flattenGradient(outs->values, ref->step->getLossIndex());
}

int actStepMeasureVariance(ActStep step, const ActTensor *args,
                           intptr_t numArgs, unsigned runs, uint64_t stepSeed,
                           ActStep reference, double *variance,
                           double *meanNorm2, double *meanSquaredError,
                           char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (refuseOnDevice(handle, "the variance measurement", error))
    return 1;
  if (!variance || !meanNorm2 || (reference.ptr && !meanSquaredError)) {
    setError(error, "the variance measurement's outputs are null");
    return 1;
  }
  auto values = viewArguments(handle, args, numArgs, error);
  if (!values)
    return 1;
  std::optional<std::vector<double>> exact;
  if (reference.ptr) {
    exact = referenceGradient(reference, args, numArgs, error);
    if (!exact)
      return 1;
  }
  // measureVariance sets every run's seeds in this tensor.
  const auto &specs = handle->step->getArguments();
  if (std::optional<unsigned> seeds = handle->step->getSeedsIndex())
    (*values)[*seeds] = Step::makeSeeds(specs[*seeds], stepSeed);
  auto measured = measureVariance(*handle->step, std::move(*values), runs,
                                  stepSeed, exact ? &*exact : nullptr);
  if (!measured) {
    setError(error, llvm::toString(measured.takeError()));
    return 1;
  }
  *variance = measured->variance;
  *meanNorm2 = measured->meanNorm2;
  if (measured->meanSquaredError)
    *meanSquaredError = *measured->meanSquaredError;
  return 0;
}

int actStepMeasureErrors(ActStep step, const ActTensor *args, intptr_t numArgs,
                         unsigned runs, uint64_t stepSeed, ActStep reference,
                         intptr_t numSets, const intptr_t *setSizes,
                         const int64_t *ids, const int32_t *bits,
                         double *meanSquaredErrors, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (refuseOnDevice(handle, "the error measurement", error))
    return 1;
  if (numSets < 1 || !setSizes || !meanSquaredErrors) {
    setError(error, "the error measurement needs at least one set of widths "
                    "and its outputs");
    return 1;
  }
  intptr_t total = 0;
  for (intptr_t k = 0; k < numSets; ++k) {
    if (setSizes[k] < 0) {
      setError(error, "set " + std::to_string(k) + " of widths has " +
                          std::to_string(setSizes[k]) + " entries");
      return 1;
    }
    total += setSizes[k];
  }
  if (total && (!ids || !bits)) {
    setError(error, "the ids or widths are null");
    return 1;
  }
  auto values = viewArguments(handle, args, numArgs, error);
  if (!values)
    return 1;
  // The step without encodings, once for every set.
  std::optional<std::vector<double>> exact =
      referenceGradient(reference, args, numArgs, error);
  if (!exact)
    return 1;
  const auto &specs = handle->step->getArguments();
  std::vector<int32_t> before = handle->step->getBits().vec();
  auto restore = [&] { restoreBits(*handle->step, before); };
  intptr_t at = 0;
  for (intptr_t k = 0; k < numSets; ++k) {
    if (k)
      restore(); // (each set from the widths before the call)
    for (intptr_t i = at; i < at + setSizes[k]; ++i)
      if (llvm::Error e = handle->step->setBits(ids[i], bits[i])) {
        restore();
        setError(error, "set " + std::to_string(k) +
                            " of widths: " + llvm::toString(std::move(e)));
        return 1;
      }
    at += setSizes[k];
    // The same step seeds for every set (common random numbers: the sets'
    // differences are measured more tightly than each set's error).
    std::vector<HostTensor> list = *values;
    if (std::optional<unsigned> seeds = handle->step->getSeedsIndex())
      list[*seeds] = Step::makeSeeds(specs[*seeds], stepSeed);
    auto measured = measureVariance(*handle->step, std::move(list), runs,
                                    stepSeed, &*exact);
    if (!measured) {
      restore();
      setError(error, llvm::toString(measured.takeError()));
      return 1;
    }
    meanSquaredErrors[k] = *measured->meanSquaredError;
  }
  restore();
  return 0;
}

int actStepEstimateFewBitSensitivity(ActStep step, unsigned bits,
                                     const ActTensor *const *batches,
                                     intptr_t numBatches, intptr_t numArgs,
                                     const char *profilePath, char **error) {
  StepHandle *handle = unwrap(step);
  if (!handle) {
    setError(error, kNoStep);
    return 1;
  }
  if (refuseOnDevice(handle, "the few-bit sensitivity estimate", error))
    return 1;
  if (!handle->graph) {
    setError(error, "the step has encodings: few-bit codes are measured "
                    "against the step of the graph without them");
    return 1;
  }
  if (bits < 1 || bits > 4) {
    setError(error,
             "few-bit codes of 1 to 4 bits, not " + std::to_string(bits));
    return 1;
  }
  if (numBatches < 1 || !batches || !profilePath) {
    setError(error, "the few-bit estimate needs at least one mini-batch and "
                    "a profile path");
    return 1;
  }
  std::unique_ptr<FewBitVariants> &variants = handle->fewBit[bits];
  if (!variants) {
    std::string messages;
    llvm::raw_string_ostream os(messages);
    ScopedDiagnosticHandler handler(
        handle->context.get(), [&](Diagnostic &diag) {
          os << diag.getLocation() << ": " << diag << "\n";
          return success();
        });
    // act-insert-encode-decode's default tables (N(0, 1) on [-10, 10]).
    FailureOr<FewBitOptions> options =
        getFewBitOptions(handle->context.get(), "act", {}, 1.0);
    assert(succeeded(options) && "the default few-bit options are valid");
    auto compiled = FewBitVariants::compile(*handle->graph, handle->entry,
                                            getHostTarget(), bits, *options);
    if (!compiled) {
      setError(error, messages + llvm::toString(compiled.takeError()));
      handle->fewBit.erase(bits);
      return 1;
    }
    variants = std::move(*compiled);
  }
  std::vector<std::vector<HostTensor>> lists;
  for (intptr_t b = 0; b < numBatches; ++b) {
    auto values = viewArguments(handle, batches[b], numArgs, error);
    if (!values)
      return 1;
    lists.push_back(std::move(*values));
  }
  auto estimate = variants->estimate(*handle->step, lists);
  if (!estimate) {
    setError(error, llvm::toString(estimate.takeError()));
    return 1;
  }
  if (llvm::Error e = writeProfile(estimate->profile, profilePath)) {
    setError(error, llvm::toString(std::move(e)));
    return 1;
  }
  return 0;
}

intptr_t actRunGetNumResults(ActRun run) {
  return unwrap(run) ? intptr_t(unwrap(run)->outputs.values.size()) : 0;
}

int actRunGetResult(ActRun run, intptr_t pos, ActTensor *result) {
  RunHandle *handle = unwrap(run);
  if (!handle || !result || pos < 0 ||
      pos >= intptr_t(handle->outputs.values.size()))
    return 1;
  const HostTensor &value = handle->outputs.values[pos];
  result->kind = ActElementKind(value.getKind());
  result->rank = intptr_t(value.getShape().size());
  result->shape = value.getShape().data();
  result->data = value.data();
  return 0;
}

int64_t actRunGetPeakBytes(ActRun run) {
  return unwrap(run) ? unwrap(run)->outputs.peakBytes : 0;
}

void actRunDestroy(ActRun run) { runs().take(run.ptr); }

int actRunReleaseResults(ActRun run, intptr_t first, intptr_t count) {
  RunHandle *handle = unwrap(run);
  if (!handle || first < 0 || count < 0 ||
      first + count > intptr_t(handle->outputs.values.size()))
    return 1;
  for (intptr_t i = first; i < first + count; ++i)
    handle->outputs.values[i] = HostTensor();
  return 0;
}

void actStringFree(char *string) { std::free(string); }

int actSetNumThreads(int n) { return ::act::rt::setThreads(n) ? 0 : 1; }

int actGetNumThreads(void) { return ::act::rt::getThreads(); }

void actSetCacheDir(const char *directory) {
  std::lock_guard<std::mutex> lock(cacheDirMutex);
  cacheDir = directory ? directory : "";
}

int actStepIsFromCache(ActStep step) {
  StepHandle *handle = unwrap(step);
  return handle && handle->step->isFromCache() ? 1 : 0;
}
