//===- Jit.cpp - compile and call a function on host data ------------------===//

#include "act/Execution/Jit.h"

#include "act/Analysis/TrainingGraph.h"
#include "act/Conversion/Passes.h"
#include "act/Pipelines/Pipelines.h"
#include "act/runtime/Cuda.h"
#include "act/runtime/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace mlir;
using namespace mlir::act;

#ifndef ACT_C_RUNNER_UTILS
#define ACT_C_RUNNER_UTILS "libmlir_c_runner_utils.so"
#endif

unsigned mlir::act::getElementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::I16:
    return 2;
  case ElementKind::I8:
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

const char *mlir::act::getNpyDescr(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "<f4";
  case ElementKind::F64:
    return "<f8";
  case ElementKind::I64:
    return "<i8";
  case ElementKind::I32:
    return "<i4";
  case ElementKind::I16:
    return "<i2";
  case ElementKind::I8:
    return "|i1";
  case ElementKind::I1:
    return "|b1";
  }
  return "";
}

int64_t HostValue::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::function<llvm::Error(llvm::Module *)>
mlir::act::makeHostOptimizingTransformer() {
  std::shared_ptr<llvm::TargetMachine> machine;
  if (auto builder = llvm::orc::JITTargetMachineBuilder::detectHost()) {
    if (auto created = builder->createTargetMachine())
      machine = std::move(*created);
    else
      llvm::consumeError(created.takeError());
  } else {
    llvm::consumeError(builder.takeError());
  }
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  return [machine, optimize](llvm::Module *module) { return optimize(module); };
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

static bool getSpec(Type type, ValueSpec &spec, std::string &error) {
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    spec.isTensor = true;
    spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    type = tensor.getElementType();
  }
  std::optional<ElementKind> kind = getKind(type);
  if (!kind) {
    llvm::raw_string_ostream os(error);
    os << "values of type " << type
       << " cannot be exchanged (supported: f32, f64, i64, i32, i1 and "
          "ranked tensors of them)";
    return false;
  }
  spec.kind = *kind;
  return true;
}

std::unique_ptr<JitFunction>
JitFunction::compile(ModuleOp module, llvm::StringRef name,
                     bool countAllocations, std::string &error,
                     const JitTarget &target) {
  std::vector<std::unique_ptr<JitFunction>> all =
      compileAll(module, {name.str()}, countAllocations, error, target);
  if (all.empty())
    return nullptr;
  return std::move(all.front());
}

std::vector<std::unique_ptr<JitFunction>>
JitFunction::compileAll(ModuleOp module, llvm::ArrayRef<std::string> names,
                        bool countAllocations, std::string &error,
                        const JitTarget &target) {
  std::vector<std::unique_ptr<JitFunction>> jits;
  if (target.gpu) {
    // Fail before compiling: no driver, no device.
    std::string why;
    if (!::act::rt::loadCuda(why)) {
      error = "cannot run on the GPU: " + why;
      return {};
    }
    // The host code allocates through the hooks (act-gpu-pipeline); they
    // must hand out memory the kernels reach.
    countAllocations = true;
    ::act::rt::setBacking(::act::rt::getManagedBacking());
  }
  for (const std::string &name : names) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func || func.isExternal()) {
      error = "no function @" + name + " with a body in the module";
      return {};
    }
  }
  // Encoded values in the signature become their storage tensors first.
  {
    PassManager pm(module.getContext());
    // The target the pipeline below lowers for (its own conversion then
    // finds nothing left to convert).
    ConvertActToLinalgPassOptions lowering;
    lowering.target = target.gpu                 ? LoweringTarget::GPU
                      : target.emulateGpuKernels ? LoweringTarget::GPUEmulated
                                                 : LoweringTarget::CPU;
    pm.addPass(createConvertActToLinalgPass(lowering));
    if (failed(pm.run(module))) {
      error = "lowering the act ops failed";
      return {};
    }
  }
  for (const std::string &name : names) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    auto jit = std::unique_ptr<JitFunction>(new JitFunction());
    jit->name = name;
    jit->countAllocations = countAllocations;
    jit->gpu = target.gpu;
    FunctionType type = func.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      ValueSpec spec;
      if (!getSpec(type.getInput(i), spec, error))
        return {};
      spec.isSeeds = bool(func.getArgAttr(i, kSeedsAttrName));
      jit->arguments.push_back(spec);
    }
    for (Type result : type.getResults()) {
      ValueSpec spec;
      if (!getSpec(result, spec, error))
        return {};
      jit->results.push_back(spec);
    }
    jits.push_back(std::move(jit));
  }

  PassManager pm(module.getContext());
  if (target.gpu) {
    GPUPipelineOptions options;
    options.chip = target.chip;
    options.features = target.features;
    buildGPUPipeline(pm, options);
  } else {
    CPUPipelineOptions options;
    options.countAllocations = countAllocations;
    options.emulateGpuKernels = target.emulateGpuKernels;
    buildCPUPipeline(pm, options);
  }
  if (failed(pm.run(module))) {
    error = target.gpu ? "the GPU pipeline failed on the module"
                       : "the CPU pipeline failed on the module";
    return {};
  }

  auto transformer = makeHostOptimizingTransformer();
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  llvm::StringRef libs[] = {ACT_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine) {
    error = "JIT compilation failed: " + llvm::toString(engine.takeError());
    return {};
  }
  std::shared_ptr<ExecutionEngine> shared = std::move(*engine);
  shared->registerSymbols([](llvm::orc::MangleAndInterner interner) {
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
    return map;
  });
  shared->initialize();
  for (auto &jit : jits)
    jit->engine = shared;
  return jits;
}

namespace {
/// A memref descriptor: allocated, aligned, offset, sizes..., strides...
struct Descriptor {
  std::vector<int64_t> fields;
};
} // namespace

bool JitFunction::call(const std::vector<HostValue> &args,
                       std::vector<HostValue> &outs, std::string &error) {
  if (args.size() != arguments.size()) {
    error = "expected " + std::to_string(arguments.size()) +
            " arguments, got " + std::to_string(args.size());
    return false;
  }
  std::vector<Descriptor> descriptors(args.size());
  std::vector<void *> packed;
  std::set<int64_t> inputBuffers;
  // GPU: tensors are staged in managed memory the kernels reach (not
  // counted: like host inputs, they are the caller's).
  std::vector<void *> staged;
  llvm::scope_exit releaseStaged([&] {
    for (void *p : staged)
      mgpuMemFree(p, nullptr);
  });
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueSpec &spec = arguments[i];
    const HostValue &arg = args[i];
    if (arg.kind != spec.kind || arg.isTensor != spec.isTensor ||
        arg.shape.size() != spec.shape.size()) {
      error = "argument " + std::to_string(i) +
              " has the wrong element type or rank";
      return false;
    }
    for (size_t d = 0; d < spec.shape.size(); ++d)
      if (!ShapedType::isDynamic(spec.shape[d]) &&
          spec.shape[d] != arg.shape[d]) {
        error = "argument " + std::to_string(i) + " has dimension " +
                std::to_string(d) + " of size " +
                std::to_string(arg.shape[d]) + ", expected " +
                std::to_string(spec.shape[d]);
        return false;
      }
    if (int64_t(arg.data.size()) != arg.numElements() * getElementBytes(arg.kind)) {
      error = "argument " + std::to_string(i) + " holds the wrong byte count";
      return false;
    }
    if (!spec.isTensor) {
      packed.push_back(const_cast<char *>(arg.data.data()));
      continue;
    }
    auto ptr = reinterpret_cast<int64_t>(arg.data.data());
    if (gpu && !arg.data.empty()) {
      void *copy = mgpuMemAlloc(arg.data.size(), nullptr, /*isHostShared=*/true);
      std::memcpy(copy, arg.data.data(), arg.data.size());
      staged.push_back(copy);
      ptr = reinterpret_cast<int64_t>(copy);
    }
    inputBuffers.insert(ptr);
    std::vector<int64_t> &f = descriptors[i].fields;
    f = {ptr, ptr, 0};
    f.insert(f.end(), arg.shape.begin(), arg.shape.end());
    std::vector<int64_t> strides(arg.shape.size(), 1);
    for (int64_t d = int64_t(arg.shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * arg.shape[d + 1];
    f.insert(f.end(), strides.begin(), strides.end());
    for (int64_t &field : f)
      packed.push_back(&field);
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

  if (llvm::Error err = engine->invokePacked(name, packed)) {
    error = "call failed: " + llvm::toString(std::move(err));
    return false;
  }

  outs.clear();
  std::set<int64_t> released;
  for (size_t r = 0; r < results.size(); ++r) {
    const ValueSpec &spec = results[r];
    HostValue out;
    out.kind = spec.kind;
    out.isTensor = spec.isTensor;
    unsigned bytes = getElementBytes(spec.kind);
    const char *field = resultBytes + offsets[r];
    if (!spec.isTensor) {
      out.data.assign(field, field + bytes);
      outs.push_back(std::move(out));
      continue;
    }
    size_t rank = spec.shape.size();
    const auto *f = reinterpret_cast<const int64_t *>(field);
    int64_t allocated = f[0], aligned = f[1], offset = f[2];
    out.shape.assign(f + 3, f + 3 + rank);
    std::vector<int64_t> strides(f + 3 + rank, f + 3 + 2 * rank);
    int64_t n = out.numElements();
    out.data.resize(size_t(n) * bytes);
    std::vector<int64_t> index(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = offset;
      for (size_t d = 0; d < rank; ++d)
        at += index[d] * strides[d];
      std::memcpy(&out.data[size_t(e) * bytes],
                  reinterpret_cast<const char *>(aligned) + at * bytes, bytes);
      for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    if (!inputBuffers.count(allocated) && released.insert(allocated).second) {
      if (countAllocations)
        _mlir_memref_to_llvm_free(reinterpret_cast<void *>(allocated));
      else
        std::free(reinterpret_cast<void *>(allocated));
    }
    outs.push_back(std::move(out));
  }
  return true;
}
