//===- Jit.cpp - compile and call a function on host data -----------------===//

#include "act/Execution/Jit.h"

#include "act/Analysis/TrainingGraph.h"
#include "act/Conversion/Passes.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Execution/CodeCache.h"
#include "act/Pipelines/Pipelines.h"
#include "act/Support/CpuFeatures.h"
#include "act/runtime/Cuda.h"
#include "act/runtime/CudaLibraries.h"
#include "act/runtime/Kernels.h"
#include "act/runtime/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unistd.h>

using namespace mlir;
using namespace mlir::act;

#ifndef ACT_C_RUNNER_UTILS
#define ACT_C_RUNNER_UTILS "libmlir_c_runner_utils.so"
#endif
#ifndef ACT_ASYNC_RUNTIME
#define ACT_ASYNC_RUNTIME "libmlir_async_runtime.so"
#endif

/// The async runtime's entry points (empty if its library did not load).
static const llvm::StringMap<void *> &getAsyncRuntimeSymbols() {
  // The library's own registration function, called once: it lists the
  // runtime's entry points. Its destroy function is never called.
  static const llvm::StringMap<void *> *symbols = []() {
    auto *map = new llvm::StringMap<void *>();
    std::string error;
    auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(
        ACT_ASYNC_RUNTIME, &error);
    if (!library.isValid())
      return static_cast<const llvm::StringMap<void *> *>(map);
    using Init = void (*)(llvm::StringMap<void *> &);
    if (auto init = reinterpret_cast<Init>(
            library.getAddressOfSymbol("__mlir_execution_engine_init")))
      init(*map);
    return static_cast<const llvm::StringMap<void *> *>(map);
  }();
  return *symbols;
}

void mlir::act::quiesceAsyncRuntime() {
  const llvm::StringMap<void *> &symbols = getAsyncRuntimeSymbols();
  auto execute = reinterpret_cast<void (*)(void *, void (*)(void *))>(
      symbols.lookup("mlirAsyncRuntimeExecute"));
  auto workers = reinterpret_cast<int64_t (*)()>(
      symbols.lookup("mlirAsyncRuntimGetNumWorkerThreads"));
  if (!execute || !workers)
    return;
  // One sentinel task per worker, each holding its worker until all have
  // arrived: a worker takes one only once its earlier task has returned.
  // The barrier lives until its last user (this thread or a sentinel) is
  // done with it.
  struct Barrier {
    std::mutex mutex;
    std::condition_variable cv;
    int64_t total = 0, arrived = 0;
  };
  auto barrier = std::make_shared<Barrier>();
  barrier->total = std::max<int64_t>(1, workers());
  auto sentinel = [](void *handle) {
    auto *owned = static_cast<std::shared_ptr<Barrier> *>(handle);
    {
      Barrier &b = **owned;
      std::unique_lock<std::mutex> lock(b.mutex);
      ++b.arrived;
      b.cv.notify_all();
      b.cv.wait(lock, [&] { return b.arrived >= b.total; });
    }
    delete owned;
  };
  for (int64_t i = 0; i < barrier->total; ++i)
    execute(new std::shared_ptr<Barrier>(barrier), sentinel);
  std::unique_lock<std::mutex> lock(barrier->mutex);
  barrier->cv.wait(lock, [&] { return barrier->arrived >= barrier->total; });
}

/// Fails if the async runtime's library did not load.
static llvm::Error checkAsyncRuntime() {
  if (!getAsyncRuntimeSymbols().empty())
    return llvm::Error::success();
  return llvm::createStringError("MLIR's async runtime (" +
                                 std::string(ACT_ASYNC_RUNTIME) +
                                 ") could not be loaded");
}

/// The async runtime's entry points as absolute symbols (empty if its
/// library did not load: checkAsyncRuntime).
static llvm::orc::SymbolMap
getAsyncRuntimeSymbolMap(llvm::orc::MangleAndInterner &interner) {
  llvm::orc::SymbolMap map;
  for (const auto &entry : getAsyncRuntimeSymbols())
    map[interner(entry.getKey())] = {
        llvm::orc::ExecutorAddr::fromPtr(entry.getValue()),
        llvm::JITSymbolFlags::Exported};
  return map;
}

llvm::Error mlir::act::registerAsyncRuntime(ExecutionEngine &engine) {
  if (llvm::Error error = checkAsyncRuntime())
    return error;
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    return getAsyncRuntimeSymbolMap(interner);
  });
  return llvm::Error::success();
}

/// The entry points compiled code calls into act's runtime (allocation
/// hooks, CUDA, kernels), as absolute symbols.
static llvm::orc::SymbolMap
getRuntimeSymbols(llvm::orc::MangleAndInterner &interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const ::act::rt::HookSymbol *hooks, size_t count) {
    for (size_t i = 0; i < count; ++i)
      map[interner(hooks[i].name)] = {
          llvm::orc::ExecutorAddr::fromPtr(hooks[i].address),
          llvm::JITSymbolFlags::Exported};
  };
  size_t count = 0;
  const ::act::rt::HookSymbol *hooks = ::act::rt::getAllocationHooks(count);
  add(hooks, count);
  hooks = ::act::rt::getCudaHooks(count);
  add(hooks, count);
  hooks = ::act::rt::getKernelHooks(count);
  add(hooks, count);
  hooks = ::act::rt::getGpuKernelHooks(count);
  add(hooks, count);
  return map;
}

/// Links cached CPU object code (CodeCache) into a JIT of its own,
/// resolving what the ExecutionEngine resolves for a CPU step it compiles:
/// act's runtime, the async runtime, MLIR's C runner utilities and the
/// process's own symbols.
static llvm::Expected<std::shared_ptr<llvm::orc::LLJIT>>
loadCachedCode(std::unique_ptr<llvm::MemoryBuffer> object) {
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  auto created =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*machine))
          .setObjectLinkingLayerCreator(
              [](llvm::orc::ExecutionSession &es)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                    es, [](const llvm::MemoryBuffer &) {
                      return std::make_unique<llvm::SectionMemoryManager>();
                    });
              })
          .create();
  if (!created)
    return created.takeError();
  std::shared_ptr<llvm::orc::LLJIT> jit(std::move(*created));
  llvm::orc::JITDylib &main = jit->getMainJITDylib();
  char prefix = jit->getDataLayout().getGlobalPrefix();
  llvm::orc::MangleAndInterner interner(jit->getExecutionSession(),
                                        jit->getDataLayout());
  if (llvm::Error error = checkAsyncRuntime())
    return std::move(error);
  llvm::orc::SymbolMap symbols = getRuntimeSymbols(interner);
  llvm::orc::SymbolMap async = getAsyncRuntimeSymbolMap(interner);
  symbols.insert(async.begin(), async.end());
  if (llvm::Error error =
          main.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return std::move(error);
  auto utils = llvm::orc::DynamicLibrarySearchGenerator::Load(
      ACT_C_RUNNER_UTILS, prefix);
  if (!utils)
    return utils.takeError();
  main.addGenerator(std::move(*utils));
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process)
    return process.takeError();
  main.addGenerator(std::move(*process));
  if (llvm::Error error = jit->addObjectFile(std::move(object)))
    return std::move(error);
  if (llvm::Error error = jit->initialize(main))
    return std::move(error);
  return jit;
}

std::function<llvm::Error(llvm::Module *)>
mlir::act::makeHostOptimizingTransformer(unsigned optLevel,
                                         std::string cpuFeatures) {
  std::shared_ptr<llvm::TargetMachine> machine;
  if (auto builder = llvm::orc::JITTargetMachineBuilder::detectHost()) {
    if (auto created = builder->createTargetMachine())
      machine = std::move(*created);
    else
      llvm::consumeError(created.takeError());
  } else {
    llvm::consumeError(builder.takeError());
  }
  auto optimize = makeOptimizingTransformer(optLevel, 0, machine.get());
  return [machine, optimize, cpuFeatures](llvm::Module *module) {
    if (!cpuFeatures.empty())
      for (llvm::Function &fn : *module)
        if (!fn.isDeclaration())
          fn.addFnAttr("target-features", cpuFeatures);
    return optimize(module);
  };
}

static std::optional<ElementKind> getKind(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(64) || type.isIndex())
    return ElementKind::I64;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(16))
    return ElementKind::I16;
  if (type.isInteger(8))
    return ElementKind::I8;
  if (type.isInteger(1))
    return ElementKind::I1;
  return std::nullopt;
}

static llvm::Error getSpec(Type type, ValueSpec &spec) {
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    spec.isTensor = true;
    spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    type = tensor.getElementType();
  }
  std::optional<ElementKind> kind = getKind(type);
  if (!kind) {
    std::string error;
    llvm::raw_string_ostream os(error);
    os << "values of type " << type
       << " cannot be exchanged (supported: f32, f64, i64, i32, i16, i8, i1 "
          "and ranked tensors of them)";
    return llvm::createStringError(error);
  }
  spec.kind = *kind;
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<JitFunction>>
JitFunction::compile(ModuleOp module, llvm::StringRef name,
                     bool countAllocations, const JitTarget &target) {
  auto all = compileAll(module, {name.str()}, countAllocations, target);
  if (!all)
    return all.takeError();
  if (all->empty()) // (JitTarget::cacheOnly: not in the cache)
    return nullptr;
  return std::move(all->front());
}

llvm::Expected<std::vector<std::unique_ptr<JitFunction>>>
JitFunction::compileAll(ModuleOp module, llvm::ArrayRef<std::string> names,
                        bool countAllocations, const JitTarget &target) {
  std::vector<std::unique_ptr<JitFunction>> jits;
  // The code's CPU features, checked before anything is compiled for them.
  std::string cpuFeatures;
  if (!target.gpu) {
    auto features = getCpuFeatures(target.cpuFeatures);
    if (!features)
      return features.takeError();
    cpuFeatures = std::move(*features);
  }
  if (target.deviceTensors && !target.gpu)
    return llvm::createStringError(
        "device tensors need the GPU target (JitTarget::gpu)");
  if (target.gpu) {
    // Fail before compiling: no driver, no device.
    std::string why;
    if (!::act::rt::loadCuda(why))
      return llvm::createStringError("cannot run on the GPU: " + why);
    // The host code allocates through the hooks (act-gpu-pipeline); they
    // must hand out memory the kernels reach.
    countAllocations = true;
    ::act::rt::setBacking(::act::rt::getGpuBacking());
  }
  if ((target.gpu && target.gpuLibraries) ||
      (target.emulateGpuKernels && target.emulateGpuLibraries)) {
    std::string why;
    if (!::act::rt::loadCudaLibraries(why))
      return llvm::createStringError(
          "the GPU's matmuls and convolutions need cuBLAS and cuDNN: " + why +
          " (or compile without them: act-run --gpu-libraries=false, the C "
          "API's device \"cuda-kernels\")");
  }
  for (const std::string &name : names) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func || func.isExternal())
      return llvm::createStringError("no function @" + name +
                                     " with a body in the module");
  }
  // CPU code compiled before for this module and target: loaded, not
  // compiled (CodeCache.h). The key is the module as given: what the
  // lowering and the pipeline make of it is a function of the module, the
  // target and the build, all in the key, so a hit skips the lowering too
  // (a third of a cached step's load) unless a signature holds encoded
  // values, whose storage tensors the arguments' specs need.
  std::optional<CodeCache> cache;
  std::string key;
  std::unique_ptr<llvm::MemoryBuffer> cachedObject;
  bool usesTasks = !target.gpu && target.threads != 1;
  if (!target.gpu && !target.cacheDir.empty() && target.peakReport.empty()) {
    cache.emplace(target.cacheDir);
    key =
        CodeCache::getKey(module, names, countAllocations, target, cpuFeatures);
    cachedObject = cache->lookup(key);
  }
  bool encodedSignature = false;
  for (const std::string &name : names) {
    FunctionType type =
        module.lookupSymbol<func::FuncOp>(name).getFunctionType();
    for (TypeRange types :
         {TypeRange(type.getInputs()), TypeRange(type.getResults())})
      encodedSignature |= llvm::any_of(types, llvm::IsaPred<EncodedType>);
  }
  bool lowered = false;
  // Encoded values in the signature become their storage tensors first.
  auto lower = [&]() -> llvm::Error {
    lowered = true;
    PassManager pm(module.getContext());
    // The target the pipeline below lowers for (its own conversion then
    // finds nothing left to convert).
    ConvertActToLinalgPassOptions lowering;
    lowering.target = target.gpu                 ? LoweringTarget::GPU
                      : target.emulateGpuKernels ? LoweringTarget::GPUEmulated
                                                 : LoweringTarget::CPU;
    lowering.recordStorage = target.recordStorage;
    lowering.decodeIntoConsumers = target.decodeIntoConsumers;
    lowering.cpuFeatures = getCpuFeatureChanges(target.cpuFeatures);
    // As the pipelines do before their own lowering: saved values encoded
    // as soon as they are computed, so their last forward reader may write
    // in place (lowered here, the pipelines' act-hoist-encodes would find
    // no encode left).
    pm.addNestedPass<func::FuncOp>(createActHoistEncodesPass());
    pm.addPass(createConvertActToLinalgPass(lowering));
    if (failed(pm.run(module)))
      return llvm::createStringError("lowering the act ops failed");
    return llvm::Error::success();
  };
  // (Nothing lowered for a caller that compiles elsewhere on a miss.)
  if (target.cacheOnly && !cachedObject)
    return std::vector<std::unique_ptr<JitFunction>>();
  if (!cachedObject || encodedSignature)
    if (llvm::Error e = lower())
      return std::move(e);
  for (const std::string &name : names) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    auto jit = std::unique_ptr<JitFunction>(new JitFunction());
    jit->name = name;
    jit->countAllocations = countAllocations;
    jit->gpu = target.gpu;
    // (Here, before the code cache's early return: a step loaded from the
    // cache refuses graphs as a compiled one does.)
    if (!target.deviceTensors)
      jit->graphsRefused = "@" + name +
                           " is not compiled for device tensors: CUDA " +
                           "graphs replay a step on CUDA tensors";
    FunctionType type = func.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      ValueSpec spec;
      if (llvm::Error e = getSpec(type.getInput(i), spec))
        return std::move(e);
      spec.isSeeds = bool(func.getArgAttr(i, kSeedsAttrName));
      if (auto planned = dyn_cast_or_null<DenseI32ArrayAttr>(
              func.getArgAttr(i, kBitsAttrName))) {
        auto allowed = dyn_cast_or_null<DenseI32ArrayAttr>(
            func.getArgAttr(i, kBitChoicesAttrName));
        if (!allowed || allowed.size() != planned.size() ||
            spec.shape != std::vector<int64_t>{planned.size()} ||
            spec.kind != ElementKind::I32)
          return llvm::createStringError(
              "@" + name + " argument " + std::to_string(i) +
              ": `act.bits` needs a tensor<K x i32> with K planned widths "
              "and K masks in `act.bit_choices`");
        spec.isBits = true;
        spec.plannedBits.assign(planned.asArrayRef().begin(),
                                planned.asArrayRef().end());
        spec.bitChoices.assign(allowed.asArrayRef().begin(),
                               allowed.asArrayRef().end());
      }
      jit->arguments.push_back(spec);
    }
    for (auto [i, result] : llvm::enumerate(type.getResults())) {
      ValueSpec spec;
      if (llvm::Error e = getSpec(result, spec))
        return std::move(e);
      jit->results.push_back(spec);
      // Read (the training graph's loss); LLVM's translation would warn
      // about an attribute it does not know on a lone result.
      func.removeResultAttr(unsigned(i),
                            StringAttr::get(func.getContext(), kLossAttrName));
    }
    jits.push_back(std::move(jit));
  }

  // The cached code, where there was some. An entry that fails to load is
  // compiled anew and replaced.
  if (cachedObject) {
    auto loaded = loadCachedCode(std::move(cachedObject));
    if (loaded) {
      std::shared_ptr<llvm::orc::LLJIT> jit = std::move(*loaded);
      // (Tasks may return through the code after a call: see below.)
      std::shared_ptr<void> code(jit.get(), [jit, usesTasks](void *) mutable {
        if (usesTasks)
          quiesceAsyncRuntime();
        llvm::consumeError(jit->deinitialize(jit->getMainJITDylib()));
        jit.reset();
      });
      bool found = true;
      for (auto &fn : jits) {
        auto address = jit->lookup("_mlir_" + fn->name);
        if (!address) {
          llvm::consumeError(address.takeError());
          found = false;
          break;
        }
        fn->entry = address->toPtr<void (*)(void **)>();
        fn->code = code;
        fn->fromCache = true;
      }
      if (found)
        return std::move(jits);
    } else {
      llvm::consumeError(loaded.takeError());
    }
  }

  if (target.cacheOnly)
    return std::vector<std::unique_ptr<JitFunction>>();
  if (!lowered)
    if (llvm::Error e = lower())
      return std::move(e);
  PassManager pm(module.getContext());
  if (target.gpu) {
    GPUPipelineOptions options;
    options.chip = target.chip;
    options.features = target.features;
    options.maxPartialBytes = target.maxPartialBytes;
    options.libraries = target.gpuLibraries;
    buildGPUPipeline(pm, options);
  } else {
    CPUPipelineOptions options;
    options.countAllocations = countAllocations;
    options.emulateGpuKernels = target.emulateGpuKernels;
    options.gpuLibraries =
        target.emulateGpuKernels && target.emulateGpuLibraries;
    options.recordStorage = target.recordStorage;
    options.peakReport = target.peakReport;
    options.decodeIntoConsumers = target.decodeIntoConsumers;
    options.outlineMinLoops = target.outlineMinLoops;
    options.fuseMaxOperands = target.fuseMaxOperands;
    options.chunkPasses = target.chunkPasses;
    options.poolInPlace = target.poolInPlace;
    options.prefetchDistance = target.prefetchDistance;
    options.cpuFeatures = getCpuFeatureChanges(target.cpuFeatures);
    options.threads =
        target.threads
            ? int64_t(target.threads)
            : int64_t(std::max(
                  1u, llvm::hardware_concurrency().compute_thread_count()));
    buildCPUPipeline(pm, options);
  }
  if (failed(pm.run(module)))
    return llvm::createStringError(
        target.gpu ? "the GPU pipeline failed on the module"
                   : "the CPU pipeline failed on the module");

  // Stream-ordered mode is opt-in (ACT_GPU_STREAM_ORDERED=1): on an H200
  // its VGG and ResNet-18 steps differed from the CPU's by 1e-2 where the
  // same steps synchronized per region agreed to 4e-6 (docs/benchmarks.md,
  // "GPU steps through cuBLAS and cuDNN"); not understood yet.
  const char *ordered = std::getenv("ACT_GPU_STREAM_ORDERED");
  for (auto &jit : jits)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(jit->name))
      jit->streamOrdered = target.gpu && fn->hasAttr("act.stream_ordered") &&
                           ordered && std::string(ordered) == "1";
  // Device tensors: the arguments the host code reads are host tensors.
  if (target.deviceTensors)
    for (auto &jit : jits) {
      auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(jit->name);
      if (!fn || !fn->hasAttr("act.stream_ordered"))
        return llvm::createStringError(
            "@" + jit->name +
            " cannot run on device tensors: its host code reads or writes "
            "buffers (act-mark-stream-ordered did not mark it)");
      if (auto both = fn->getAttrOfType<DenseI64ArrayAttr>(
              "act.kernel_read_host_arguments"))
        return llvm::createStringError(
            "@" + jit->name + " cannot run on device tensors: argument " +
            std::to_string(both[0]) +
            " is read by its host code and by its kernels (a step that "
            "returns without waiting cannot stage it for both)");
      if (auto reads =
              fn->getAttrOfType<DenseI64ArrayAttr>("act.host_read_arguments"))
        for (int64_t i : reads.asArrayRef())
          if (size_t(i) < jit->arguments.size())
            jit->arguments[i].hostRead = true;
      jit->deviceTensors = true;
      jit->streamOrdered = true;
      // A graph replays the kernel parameters of its capture: a function
      // whose host code reads an argument (a dropout seed) runs without.
      static const bool graphsByEnvironment = [] {
        const char *v = std::getenv("ACT_GPU_GRAPHS");
        return v && std::string(v) == "1";
      }();
      if (auto reads =
              fn->getAttrOfType<DenseI64ArrayAttr>("act.host_read_arguments"))
        jit->graphsRefused =
            "@" + jit->name + "'s host code reads argument " +
            std::to_string(reads[0]) +
            " (a dropout seed): a CUDA graph would replay its first value";
      jit->graphs = (target.gpuGraphs || graphsByEnvironment) &&
                    jit->graphsRefused.empty();
    }
  // The ExecutionEngine calls each entry through a wrapper that unpacks an
  // array of argument pointers: a call with every memref descriptor's
  // fields as scalars (thousands for a model's step), whose code generation
  // (the outgoing arguments' stores, checked against each other) took 15 s
  // of MobileNetV2's compile. The entry is inlined into its wrapper
  // instead: the wrapper's loads feed the step's code directly.
  for (const std::string &name : names)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name)) {
      SmallVector<Attribute> passthrough;
      if (ArrayAttr existing = fn.getPassthroughAttr())
        passthrough.assign(existing.begin(), existing.end());
      passthrough.push_back(
          StringAttr::get(module.getContext(), "alwaysinline"));
      fn.setPassthroughAttr(ArrayAttr::get(module.getContext(), passthrough));
    }
  auto transformer =
      makeHostOptimizingTransformer(target.optLevel, cpuFeatures);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      llvm::CodeGenOpt::getLevel(int(target.optLevel))
          .value_or(llvm::CodeGenOptLevel::Aggressive);
  // memrefCopy and friends (the async runtime: registerAsyncRuntime).
  llvm::StringRef libs[] = {ACT_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = libs;
  // Kept for the code cache.
  engineOptions.enableObjectDump = cache.has_value();
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return llvm::createStringError("JIT compilation failed: " +
                                   llvm::toString(engine.takeError()));
  // Tasks of the async runtime may still be returning through the
  // engine's code when the call that awaited them has returned: the code
  // is freed only once every worker has finished its task.
  std::shared_ptr<ExecutionEngine> shared(engine->release(),
                                          [usesTasks](ExecutionEngine *e) {
                                            if (usesTasks)
                                              quiesceAsyncRuntime();
                                            delete e;
                                          });
  shared->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    return getRuntimeSymbols(interner);
  });
  if (!target.gpu)
    if (llvm::Error error = registerAsyncRuntime(*shared))
      return std::move(error);
  shared->initialize();
  // Compiled now rather than at the first call: the engine materializes the
  // module at the first lookup of one of its functions, which would
  // otherwise be in the first run's time (act-run's one-run "time:" was the
  // compilation, ~1 s for a small transformer, against 0.4 ms for the step).
  for (auto &jit : jits) {
    auto fn = shared->lookupPacked(jit->name);
    if (!fn)
      return llvm::createStringError("JIT compilation failed: " +
                                     llvm::toString(fn.takeError()));
    jit->entry = *fn;
    jit->code = shared;
  }
  if (cache) {
    // The object the engine generated, stored for the next process. The
    // cache only saves time: a directory act cannot write leaves the
    // compiled step as it is.
    llvm::SmallString<128> dump;
    int fd;
    if (!llvm::sys::fs::createTemporaryFile("act-object", "o", fd, dump)) {
      ::close(fd);
      shared->dumpToObjectFile(dump);
      if (auto object =
              llvm::MemoryBuffer::getFile(dump, /*IsText=*/false, false))
        llvm::consumeError(cache->store(key, (*object)->getBuffer()));
      llvm::sys::fs::remove(dump);
    }
  }
  return std::move(jits);
}

HostTensor mlir::act::allocateDeviceTensor(ElementKind kind,
                                           llvm::ArrayRef<int64_t> shape,
                                           uint32_t word, void *stream) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  size_t bytes = size_t(n) * getElementBytes(kind);
  void *data = nullptr;
  if (bytes) {
    bool wasDevice = ::act::rt::setDeviceAllocations(true);
    data = _mlir_memref_to_llvm_aligned_alloc(64, bytes);
    ::act::rt::setDeviceAllocations(wasDevice);
    // (Blocks are whole 512-byte steps: the last word is inside.)
    mgpuMemset32(data, word, (bytes + 3) / 4, stream);
  }
  return HostTensor::adopt(kind, shape, data, [](void *p) {
    if (p)
      _mlir_memref_to_llvm_free(p);
  });
}

namespace {
/// A memref descriptor: allocated, aligned, offset, sizes..., strides...
struct Descriptor {
  std::vector<int64_t> fields;
};

/// Calls copy(element, offset, count) for each run of `count` elements of
/// the strided view (`shape`, `strides` in elements) that are consecutive
/// in memory, in row-major order: the innermost dimension's where its
/// stride is 1, else one element at a time. `element` is the run's first
/// element in row-major order, `offset` its position in the view.
void forEachRun(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> strides,
                llvm::function_ref<void(int64_t, int64_t, int64_t)> copy) {
  size_t rank = shape.size();
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  int64_t run = rank && strides[rank - 1] == 1 ? shape[rank - 1] : 1;
  size_t outer = run > 1 ? rank - 1 : rank; // the dims the runs step over
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < n; e += run) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d)
      at += index[d] * strides[d];
    copy(e, at, run);
    for (int64_t d = int64_t(outer) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}
} // namespace

/// A call captured in a CUDA graph (JitTarget::gpuGraphs): the graph, the
/// arguments it reads in place (pointers, scalars' values), its blocks for
/// the others (the seeds, arguments that moved between calls: copied in
/// before each launch), its results as the capture
/// returned them (the same blocks at every launch), and the most bytes the
/// capture held above what was live before it. Results handed out hold it:
/// while they do, a replay would overwrite them.
struct mlir::act::CapturedCall {
  ::act::rt::Graph *graph = ::act::rt::createGraph();
  std::vector<std::pair<size_t, int64_t>> inPlace; // index -> pointer/value
  std::map<size_t, void *> copiedIn;               // index -> block
  std::vector<int64_t> resultStorage;
  /// The blocks the results hold (freed through the hooks with the graph).
  std::set<int64_t> resultBlocks;
  /// The results copied out at each launch (smaller than kLentResultBytes,
  /// views, returned arguments): the graph gathers them into `gathered`,
  /// at these offsets, which each launch copies out whole.
  std::map<size_t, size_t> gatheredAt; // result index -> byte offset
  void *gathered = nullptr;
  size_t gatheredBytes = 0;
  int64_t peakAbove = 0;
  ~CapturedCall() {
    if (gathered)
      ::act::rt::getGpuBacking().release(gathered);
    for (int64_t block : resultBlocks)
      _mlir_memref_to_llvm_free(reinterpret_cast<void *>(block));
    for (auto &[index, block] : copiedIn)
      ::act::rt::getGpuBacking().release(block);
    ::act::rt::destroyGraph(graph);
  }
};

llvm::Error JitFunction::setGraphs(bool on) {
  if (on && !graphsRefused.empty())
    return llvm::createStringError(graphsRefused);
  graphs = on;
  if (!on) {
    captured.reset();
    lastArguments.clear();
  }
  return llvm::Error::success();
}

/// Results of this size or more are a graph's own blocks, lent out; smaller
/// ones (the loss, a bias's gradient) are copied out at each launch, all
/// with one copy, so that holding them does not stop replays.
static constexpr size_t kLentResultBytes = size_t(64) << 10;

llvm::Expected<std::vector<HostTensor>>
JitFunction::call(llvm::ArrayRef<HostTensor> args) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(message);
  };
  if (args.size() != arguments.size())
    return fail("expected " + std::to_string(arguments.size()) +
                " arguments, got " + std::to_string(args.size()));
  std::vector<Descriptor> descriptors(args.size());
  std::vector<void *> packed;
  std::set<int64_t> inputBuffers;
  // GPU: tensors are staged where the kernels reach them (not counted:
  // like host inputs, they are the caller's): a stream-ordered step's
  // float tensors in device memory (copied in by the copy engine; its host
  // code reads none), others in managed memory (the host reads its seeds,
  // and a step that is not stream-ordered may read any).
  std::vector<void *> staged;
  std::map<int64_t, size_t> onDevice; // staged pointer -> bytes
  std::vector<void *> pooled;
  // Device tensors: the seeds the runtime filled on the host, which
  // kernels read (act-seeds-in-kernels); copied to the device below.
  std::vector<size_t> seedArguments;
  llvm::scope_exit releaseStaged([&] {
    for (void *p : staged)
      mgpuMemFree(p, nullptr);
    for (void *p : pooled)
      ::act::rt::getGpuBacking().release(p);
  });
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueSpec &spec = arguments[i];
    const HostTensor &arg = args[i];
    if (arg.getKind() != spec.kind || arg.isTensor() != spec.isTensor ||
        arg.getShape().size() != spec.shape.size())
      return fail("argument " + std::to_string(i) +
                  " has the wrong element type or rank");
    for (size_t d = 0; d < spec.shape.size(); ++d)
      if (!ShapedType::isDynamic(spec.shape[d]) &&
          spec.shape[d] != arg.getShape()[d])
        return fail("argument " + std::to_string(i) + " has dimension " +
                    std::to_string(d) + " of size " +
                    std::to_string(arg.getShape()[d]) + ", expected " +
                    std::to_string(spec.shape[d]));
    if (arg.byteSize() && !arg.data())
      return fail("argument " + std::to_string(i) + " has no data");
    if (!spec.isTensor) {
      packed.push_back(arg.data());
      continue;
    }
    auto ptr = reinterpret_cast<int64_t>(arg.data());
    if (deviceTensors && arg.byteSize() && spec.hostRead) {
      // Host tensors the host code reads (widths the runtime filled, a
      // dropout seed): a managed block of the pool (uncounted, as inputs
      // are).
      void *copy = ::act::rt::getGpuBacking().allocate(arg.byteSize());
      std::memcpy(copy, arg.data(), arg.byteSize());
      pooled.push_back(copy);
      ptr = reinterpret_cast<int64_t>(copy);
    } else if (deviceTensors && arg.byteSize() && spec.isRuntimeFilled()) {
      // Seeds only kernels read: a device block (the pool's, or a CUDA
      // graph's), copied in on the step's stream below.
      seedArguments.push_back(i);
    } else if (gpu && arg.byteSize() && !deviceTensors) {
      // (ACT_GPU_DEVICE_INPUTS=0: managed memory for these too, for
      // bisecting.)
      static const bool deviceInputs = [] {
        const char *v = std::getenv("ACT_GPU_DEVICE_INPUTS");
        return !(v && std::string(v) == "0");
      }();
      bool device =
          streamOrdered && deviceInputs &&
          (spec.kind == ElementKind::F32 || spec.kind == ElementKind::F64);
      void *copy = mgpuMemAlloc(arg.byteSize(), nullptr, !device);
      if (device)
        mgpuMemcpy(copy, const_cast<char *>(arg.data()), arg.byteSize(),
                   nullptr);
      else
        std::memcpy(copy, arg.data(), arg.byteSize());
      staged.push_back(copy);
      ptr = reinterpret_cast<int64_t>(copy);
      if (device)
        onDevice[ptr] = arg.byteSize();
    }
    inputBuffers.insert(ptr);
    llvm::ArrayRef<int64_t> shape = arg.getShape();
    std::vector<int64_t> &f = descriptors[i].fields;
    f = {ptr, ptr, 0};
    f.insert(f.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    f.insert(f.end(), strides.begin(), strides.end());
    for (int64_t &field : f)
      packed.push_back(&field);
  }

  // JitTarget::gpuGraphs: from the second call on, the call is captured in
  // a graph, or the graph it was captured in is launched again. What each
  // argument is (a pointer, a scalar's value) against the call before
  // says which arguments the graph reads in place (the same as then: a
  // model's parameters) and which it copies in before each launch into a
  // block of its own (they moved: a batch, a split step's saved values).
  // Points argument i's descriptor at `block`, where it is copied.
  auto redirect = [&](size_t i, void *block) {
    std::vector<int64_t> &f = descriptors[i].fields;
    inputBuffers.erase(f[0]);
    f[0] = f[1] = reinterpret_cast<int64_t>(block);
    inputBuffers.insert(f[0]);
  };
  enum class Graphed { No, Capture, Replay } graphed = Graphed::No;
  if (graphs) {
    std::vector<int64_t> now(args.size(), 0);
    for (size_t i = 0; i < args.size(); ++i) {
      if (arguments[i].isRuntimeFilled())
        continue;
      now[i] = reinterpret_cast<int64_t>(args[i].data());
      if (!arguments[i].isTensor) {
        now[i] = 0;
        std::memcpy(&now[i], args[i].data(),
                    std::min<size_t>(sizeof(int64_t), args[i].byteSize()));
      }
    }
    std::vector<int64_t> before = std::exchange(lastArguments, now);
    // An argument read in place moved: captured anew (the old graph's
    // blocks go with the last of its results).
    if (captured && llvm::any_of(captured->inPlace, [&](auto &arg) {
          return now[arg.first] != arg.second;
        }))
      captured.reset();
    if (!before.empty() && !captured) {
      graphed = Graphed::Capture;
      captured = std::make_shared<CapturedCall>();
      ::act::rt::Graph *pool = ::act::rt::setGraphPool(captured->graph);
      bool wasDevice = ::act::rt::setDeviceAllocations(true);
      for (size_t i = 0; i < args.size(); ++i) {
        bool copied = arguments[i].isRuntimeFilled() ||
                      (arguments[i].isTensor && args[i].byteSize() &&
                       now[i] != before[i]);
        if (!copied) {
          captured->inPlace.emplace_back(i, now[i]);
          continue;
        }
        if (!args[i].byteSize())
          continue;
        captured->copiedIn[i] =
            ::act::rt::getGpuBacking().allocate(args[i].byteSize());
        redirect(i, captured->copiedIn[i]);
      }
      ::act::rt::setDeviceAllocations(wasDevice);
      ::act::rt::setGraphPool(pool);
    } else if (captured && captured.use_count() == 1) {
      graphed = Graphed::Replay;
    }
    // (Else the first call, as always; or a result the graph lent is
    // still held: this call runs without the graph, which would overwrite
    // it.)
  }
  // The arguments copied to the device before the call: the graph's, or
  // the seeds into blocks of the pool.
  std::map<size_t, void *> copiedIn;
  if (graphed != Graphed::No) {
    copiedIn = captured->copiedIn;
  } else if (!seedArguments.empty()) {
    bool wasDevice = ::act::rt::setDeviceAllocations(true);
    for (size_t i : seedArguments) {
      void *block = ::act::rt::getGpuBacking().allocate(args[i].byteSize());
      pooled.push_back(block);
      copiedIn[i] = block;
      redirect(i, block);
    }
    ::act::rt::setDeviceAllocations(wasDevice);
  }

  // The results come back as one struct in LLVM's layout.
  std::vector<size_t> offsets;
  size_t size = 0;
  for (const ValueSpec &spec : results) {
    size_t fieldSize = spec.isTensor ? 8 * (3 + 2 * spec.shape.size())
                                     : getElementBytes(spec.kind);
    size_t align = spec.isTensor ? 8 : getElementBytes(spec.kind);
    size = (size + align - 1) / align * align;
    offsets.push_back(size);
    size += fieldSize;
  }
  std::vector<int64_t> resultStorage((size + 7) / 8 + 1, 0);
  auto *resultBytes = reinterpret_cast<char *>(resultStorage.data());
  if (!results.empty())
    packed.push_back(resultBytes);

  // A tensor result's descriptor, as the call returned it.
  struct ResultView {
    int64_t allocated;
    char *base;
    std::vector<int64_t> shape, strides;
    bool contiguous = true;
    size_t bytes;
  };
  auto viewOf = [&](size_t r) {
    const ValueSpec &spec = results[r];
    size_t rank = spec.shape.size();
    const auto *f = reinterpret_cast<const int64_t *>(resultBytes + offsets[r]);
    ResultView v;
    v.allocated = f[0];
    unsigned element = getElementBytes(spec.kind);
    v.base = reinterpret_cast<char *>(f[1]) + f[2] * element;
    v.shape.assign(f + 3, f + 3 + rank);
    v.strides.assign(f + 3 + rank, f + 3 + 2 * rank);
    int64_t n = 1;
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      if (v.shape[d] != 1 && v.strides[d] != n)
        v.contiguous = false;
      n *= v.shape[d];
    }
    v.bytes = size_t(n) * element;
    return v;
  };

  // The blocks the call's tensor results hold that are not arguments.
  auto resultBlocks = [&] {
    std::set<int64_t> blocks;
    for (size_t r = 0; r < results.size(); ++r)
      if (results[r].isTensor && !inputBuffers.count(viewOf(r).allocated))
        blocks.insert(viewOf(r).allocated);
    return blocks;
  };

  if (gpu && !deviceTensors)
    mgpuStreamSynchronize(nullptr); // the staging copies
  auto started = std::chrono::steady_clock::now();
  if (gpu && streamOrdered)
    ::act::rt::beginStreamOrdered(deviceTensors ? stream : nullptr);
  void *runStream = ::act::rt::getOrderedStream();
  for (auto [i, block] : copiedIn) {
    if (arguments[i].isRuntimeFilled()) // from the host
      ::act::rt::copyToDevice(block, args[i].data(), args[i].byteSize(),
                              runStream);
    else
      mgpuMemcpy(block, const_cast<char *>(args[i].data()), args[i].byteSize(),
                 runStream);
  }
  if (graphed == Graphed::Replay) {
    ::act::rt::launchGraph(captured->graph);
    ::act::rt::notePeakAbove(captured->peakAbove);
    std::memcpy(resultBytes, captured->resultStorage.data(),
                resultStorage.size() * sizeof(int64_t));
  } else {
    // Device tensors: the step's buffers are plain device memory.
    bool wasDevice = ::act::rt::setDeviceAllocations(deviceTensors);
    int64_t base = ::act::rt::getMemoryStats().liveBytes;
    if (graphed == Graphed::Capture)
      ::act::rt::beginGraphCapture(captured->graph);
    entry(packed.data());
    if (graphed == Graphed::Capture) {
      // The results copied out at each launch, gathered by the graph into
      // one block of its own (a contiguous run at a time).
      std::vector<std::pair<size_t, ResultView>> gather;
      for (size_t r = 0; r < results.size(); ++r) {
        if (!results[r].isTensor)
          continue;
        ResultView v = viewOf(r);
        if (v.bytes < kLentResultBytes || !v.contiguous ||
            inputBuffers.count(v.allocated)) {
          captured->gatheredAt[r] = captured->gatheredBytes;
          captured->gatheredBytes += (v.bytes + 255) / 256 * 256;
          gather.emplace_back(r, std::move(v));
        }
      }
      if (captured->gatheredBytes) {
        captured->gathered =
            ::act::rt::getGpuBacking().allocate(captured->gatheredBytes);
        for (auto &[r, view] : gather) {
          const ResultView &v = view;
          char *to =
              static_cast<char *>(captured->gathered) + captured->gatheredAt[r];
          unsigned element = getElementBytes(results[r].kind);
          forEachRun(
              v.shape, v.strides, [&](int64_t e, int64_t at, int64_t count) {
                mgpuMemcpy(to + size_t(e) * element, v.base + at * element,
                           size_t(count) * element, runStream);
              });
        }
      }
    }
    ::act::rt::setDeviceAllocations(wasDevice);
    std::string error;
    if (graphed == Graphed::Capture &&
        !::act::rt::endGraphCapture(captured->graph, error)) {
      // Nothing of the call ran: its results' blocks go back, and the
      // function runs without graphs from now on.
      for (int64_t block : resultBlocks())
        _mlir_memref_to_llvm_free(reinterpret_cast<void *>(block));
      llvm::errs() << "act: capturing @" << name << " in a CUDA graph failed ("
                   << error << "); it runs without graphs\n";
      graphs = false;
      captured.reset();
      ::act::rt::endStreamOrdered(/*wait=*/false);
      return call(args);
    }
    if (graphed == Graphed::Capture) {
      ::act::rt::launchGraph(captured->graph);
      captured->peakAbove = ::act::rt::getMemoryStats().peakBytes - base;
      captured->resultStorage = resultStorage;
    }
  }
  if (deviceTensors) {
    // Queued, not waited for: the caller's later work on the stream reads
    // the results in order.
    ::act::rt::endStreamOrdered(/*wait=*/false);
    lastDeviceSeconds = 0;
  } else if (gpu) {
    // The results are read on the host: the GPU's work (cuBLAS/cuDNN on
    // the legacy stream outside stream-ordered mode) must be done.
    if (streamOrdered)
      ::act::rt::endStreamOrdered();
    else
      mgpuStreamSynchronize(nullptr);
    lastDeviceSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - started)
                            .count();
  }
  // An argument the function released (act_release_argument: its caller
  // dropped it) may have been freed, and its address reused by a result:
  // that result is the function's own buffer, not an input.
  if (!gpu) {
    inputBuffers.clear();
    for (const HostTensor &arg : args)
      if (arg.isTensor() && arg.data())
        inputBuffers.insert(reinterpret_cast<int64_t>(arg.data()));
  }

  // A buffer the step allocated is released with the last result that
  // holds it (two results may share one).
  std::function<void(void *)> release = [counted = countAllocations](void *p) {
    if (counted)
      _mlir_memref_to_llvm_free(p);
    else
      std::free(p);
  };
  if (graphed != Graphed::No) {
    // The graph's results: the gathered ones copied out with one copy,
    // the others lent (they hold the graph).
    if (graphed == Graphed::Capture)
      captured->resultBlocks = resultBlocks();
    std::shared_ptr<void> gathered;
    if (captured->gatheredBytes) {
      bool wasDevice = ::act::rt::setDeviceAllocations(true);
      void *out =
          _mlir_memref_to_llvm_aligned_alloc(256, captured->gatheredBytes);
      ::act::rt::setDeviceAllocations(wasDevice);
      mgpuMemcpy(out, captured->gathered, captured->gatheredBytes, runStream);
      gathered = std::shared_ptr<void>(out, release);
    }
    std::vector<HostTensor> outs;
    for (size_t r = 0; r < results.size(); ++r) {
      const ValueSpec &spec = results[r];
      if (!spec.isTensor) {
        HostTensor out =
            HostTensor::allocate(spec.kind, {}, /*isTensor=*/false);
        std::memcpy(out.data(), resultBytes + offsets[r],
                    getElementBytes(spec.kind));
        outs.push_back(std::move(out));
        continue;
      }
      ResultView v = viewOf(r);
      auto at = captured->gatheredAt.find(r);
      char *data = at == captured->gatheredAt.end()
                       ? v.base
                       : static_cast<char *>(gathered.get()) + at->second;
      std::shared_ptr<void> owner = at == captured->gatheredAt.end()
                                        ? std::shared_ptr<void>(captured)
                                        : gathered;
      outs.push_back(HostTensor::adopt(
          spec.kind, v.shape, data,
          [keep = std::move(owner)](void *) mutable { keep.reset(); }));
    }
    return std::move(outs);
  }
  std::map<int64_t, std::shared_ptr<void>> owners;
  std::vector<HostTensor> outs;
  for (size_t r = 0; r < results.size(); ++r) {
    const ValueSpec &spec = results[r];
    unsigned bytes = getElementBytes(spec.kind);
    const char *field = resultBytes + offsets[r];
    if (!spec.isTensor) {
      HostTensor out = HostTensor::allocate(spec.kind, {}, /*isTensor=*/false);
      std::memcpy(out.data(), field, bytes);
      outs.push_back(std::move(out));
      continue;
    }
    ResultView v = viewOf(r);
    int64_t allocated = v.allocated;
    const std::vector<int64_t> &shape = v.shape, &strides = v.strides;
    bool contiguous = v.contiguous;
    bool input = inputBuffers.count(allocated);
    std::shared_ptr<void> &owner = owners[allocated];
    if (!input && !owner)
      owner =
          std::shared_ptr<void>(reinterpret_cast<void *>(allocated), release);
    const char *base = v.base;
    if (deviceTensors) {
      if (contiguous && !input) {
        outs.push_back(HostTensor::adopt(
            spec.kind, shape, const_cast<char *>(base),
            [keep = owner](void *) mutable { keep.reset(); }));
        continue;
      }
      // A view or a returned argument: copied into a block of its own,
      // on the device, a contiguous run at a time.
      HostTensor out = allocateDeviceTensor(spec.kind, shape, 0, runStream);
      forEachRun(shape, strides, [&](int64_t e, int64_t at, int64_t count) {
        mgpuMemcpy(out.data() + size_t(e) * bytes,
                   const_cast<char *>(base) + at * bytes, size_t(count) * bytes,
                   runStream);
      });
      outs.push_back(std::move(out));
      continue;
    }
    // An input staged in device memory, returned: read back first.
    std::vector<char> readBack;
    if (auto staged = onDevice.find(allocated);
        input && staged != onDevice.end()) {
      readBack.resize(staged->second);
      mgpuMemcpy(readBack.data(), reinterpret_cast<void *>(allocated),
                 readBack.size(), nullptr);
      mgpuStreamSynchronize(nullptr);
      base = readBack.data() + (v.base - reinterpret_cast<char *>(allocated));
    }
    if (contiguous && !input) {
      // The step's own buffer becomes the result: no copy.
      HostTensor out =
          HostTensor::adopt(spec.kind, shape, const_cast<char *>(base),
                            [keep = owner](void *) mutable { keep.reset(); });
      outs.push_back(std::move(out));
      continue;
    }
    HostTensor out = HostTensor::allocate(spec.kind, shape);
    forEachRun(shape, strides, [&](int64_t e, int64_t at, int64_t count) {
      std::memcpy(out.data() + size_t(e) * bytes, base + at * bytes,
                  size_t(count) * bytes);
    });
    outs.push_back(std::move(out));
  }
  return std::move(outs);
}
