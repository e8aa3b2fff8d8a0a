//===- bench_kernels.cpp - encode/decode throughput on the CPU ------------===//
//
// For every encoding: JIT-compiles act.encode and act.decode of an N-element
// f32 tensor through act-cpu-pipeline (results written into preallocated
// buffers), runs them on one core, and prints GB/s counting bytes read plus
// written, next to memcpy of the same tensor measured in the same run.
//
//   act-bench-kernels [--mib=256] [--runs=5]
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/EncodingLowering.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Execution/Jit.h"
#include "act/InitAll.h"
#include "act/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<unsigned> mib("mib", cl::init(256),
                             cl::desc("tensor size in MiB of f32"));
static cl::opt<unsigned> runs("runs", cl::init(5),
                              cl::desc("timed runs per kernel (median)"));
static cl::opt<std::string>
    only("only", cl::desc("run encodings whose attribute contains this"));

namespace {

/// A 1-D or 2-D memref descriptor over caller-owned memory.
struct Memref {
  std::vector<int64_t> fields;
  Memref(void *data, std::vector<int64_t> shape) {
    auto p = reinterpret_cast<int64_t>(data);
    fields = {p, p, 0};
    fields.insert(fields.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    fields.insert(fields.end(), strides.begin(), strides.end());
  }
  void pack(std::vector<void *> &args) {
    for (int64_t &f : fields)
      args.push_back(&f);
  }
};

void *allocTouched(size_t bytes) {
  void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  std::memset(p, 0, bytes);
  return p;
}

template <typename Fn> double medianSeconds(Fn fn) {
  fn(); // warm up
  std::vector<double> t;
  for (unsigned r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  cl::ParseCommandLineOptions(argc, argv, "act CPU kernel bandwidth\n");

  int64_t n = int64_t(mib) * 1024 * 1024 / 4;
  size_t bytes = size_t(n) * 4;
  float *x = static_cast<float *>(allocTouched(bytes));
  float *y = static_cast<float *>(allocTouched(bytes));
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = dist(gen);

  double copy = medianSeconds([&] { std::memcpy(y, x, bytes); });
  double copyRate = 2.0 * double(bytes) / copy / 1e9;
  llvm::outs() << llvm::formatv(
      "tensor: {0} f32 ({1} MiB); one core; median of {2} runs; GB/s count "
      "bytes read + written\n",
      n, mib, unsigned(runs));
  llvm::outs() << llvm::formatv("memcpy: {0:f2} GB/s\n\n", copyRate);
  llvm::outs() << llvm::formatv("{0,-44} {1,9} {2,8} {3,9} {4,8}\n", "encoding",
                                "encode", "/memcpy", "decode", "/memcpy");

  DialectRegistry registry;
  act::registerAllDialects(registry);
  const char *encodings[] = {
      "#act.quant<bits = 1>",
      "#act.quant<bits = 2>",
      "#act.quant<bits = 4>",
      "#act.quant<bits = 8>",
      "#act.quant<bits = 4, rounding = nearest>",
      "#act.quant<bits = 8, rounding = nearest>",
      "#act.float<format = f16>",
      "#act.float<format = bf16>",
      "#act.float<format = fp10>",
      "#act.float<format = e4m3>",
      "#act.float<format = e5m2>",
      "#act.mask<predicate = positive>",
  };
  for (const char *enc : encodings) {
    if (!only.empty() && !llvm::StringRef(enc).contains(only))
      continue;
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    std::string t = "tensor<" + std::to_string(n) + "xf32>";
    std::string e = "!act.encoded<" + t + ", " + enc + ">";
    bool isMask = llvm::StringRef(enc).starts_with("#act.mask");
    std::string elem = isMask ? "i1" : "f32";
    std::string d = "tensor<" + std::to_string(n) + "x" + elem + ">";
    std::string m = "memref<" + std::to_string(n) + "x" + elem + ">";
    // Decoding writes into the caller's buffer (destination-passing style).
    std::string text =
        "func.func @encode(%x: " + t + ", %s: i64) -> " + e +
        " {\n %e = act.encode %x, id = 0, seed %s : " + t + " -> " + e +
        "\n return %e : " + e + "\n}\nfunc.func @decode(%e: " + e +
        ", %out: " + m + ") {\n %d = act.decode %e : " + e + " -> " + d +
        "\n bufferization.materialize_in_destination %d in restrict writable "
        "%out : (" +
        d + ", " + m + ") -> ()\n return\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    auto encoding = cast<act::EncodingAttrInterface>(
        cast<act::EncodedType>(
            module->lookupSymbol<func::FuncOp>("encode").getResultTypes()[0])
            .getEncoding());
    auto tensorType = RankedTensorType::get({n}, Float32Type::get(&context));
    SmallVector<Type> storageTypes;
    cast<act::EncodingLoweringAttrInterface>(encoding).getStorageTypes(
        tensorType, storageTypes);
    int64_t storageBytes =
        encoding.getStorageLayout(tensorType)->getTotalBytes();

    PassManager pm(&context);
    act::CPUPipelineOptions options;
    options.countAllocations = false;
    options.resultsToOutParams = true;
    act::buildCPUPipeline(pm, options);
    if (failed(pm.run(*module))) {
      llvm::errs() << "lowering failed for " << enc << "\n";
      return 1;
    }
    auto transformer = act::makeHostOptimizingTransformer();
    ExecutionEngineOptions engineOptions;
    engineOptions.transformer = transformer;
    auto engine = ExecutionEngine::create(*module, engineOptions);
    if (!engine) {
      llvm::errs() << "JIT failed: " << llvm::toString(engine.takeError())
                   << "\n";
      return 1;
    }
    (*engine)->initialize();

    // Storage buffers, allocated once.
    std::vector<void *> storage;
    std::vector<Memref> storageRefs;
    for (Type type : storageTypes) {
      auto st = cast<RankedTensorType>(type);
      size_t b = size_t(st.getNumElements()) * 4;
      storage.push_back(allocTouched(b));
      storageRefs.emplace_back(
          storage.back(),
          std::vector<int64_t>(st.getShape().begin(), st.getShape().end()));
    }
    int64_t seed = 42;
    Memref xr(x, {n});
    std::vector<void *> encArgs;
    xr.pack(encArgs);
    encArgs.push_back(&seed);
    for (Memref &m : storageRefs)
      m.pack(encArgs);
    void *out = isMask ? allocTouched(size_t(n)) : y;
    Memref outRef(out, {n});
    std::vector<void *> decArgs;
    for (Memref &m : storageRefs)
      m.pack(decArgs);
    outRef.pack(decArgs);

    double tEnc = medianSeconds([&] {
      if (llvm::Error err = (*engine)->invokePacked("encode", encArgs))
        llvm::report_fatal_error(std::move(err));
    });
    double tDec = medianSeconds([&] {
      if (llvm::Error err = (*engine)->invokePacked("decode", decArgs))
        llvm::report_fatal_error(std::move(err));
    });
    double outBytes = isMask ? double(n) : double(bytes);
    double encRate = (double(bytes) + double(storageBytes)) / tEnc / 1e9;
    double decRate = (double(storageBytes) + outBytes) / tDec / 1e9;
    llvm::outs() << llvm::formatv(
        "{0,-44} {1,9:f2} {2,8:f2} {3,9:f2} {4,8:f2}\n", enc, encRate,
        encRate / copyRate, decRate, decRate / copyRate);
    for (void *p : storage)
      std::free(p);
    if (isMask)
      std::free(out);
  }
  std::free(x);
  std::free(y);
  return 0;
}
