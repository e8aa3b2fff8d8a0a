//===- bench_kernels.cpp - encode/decode throughput on the CPU ------------===//
//
// For every encoding: JIT-compiles act.encode and act.decode of an N-element
// tensor (f32: normal data, a ReLU output for #act.sparse, N x 64 x 32 x 32
// maps for #act.division; i32 window indices for #act.index) through
// act-cpu-pipeline (static storage and the decoded tensor in preallocated
// buffers), runs them on one core, and prints GB/s counting bytes read plus
// written, next to memcpy of the same tensor measured in the same run.
//
//   act-bench-kernels [--mib=256 | --kib=N [--calls=K]] [--runs=5]
//                     [--workers=1] [--prefetch-ahead=4096] [--only=TEXT]
//                     [--cpu-features=-avx512f]
//
// --kib with --calls measures the kernels in cache (their compute).
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/IR/EncodingLowering.h"
#include "act/Execution/Jit.h"
#include "act/InitAll.h"
#include "act/Pipelines/Pipelines.h"
#include "act/Support/CpuFeatures.h"
#include "act/runtime/Memory.h"

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
static cl::opt<unsigned>
    kib("kib", cl::init(0),
        cl::desc("tensor size in KiB of f32, instead of --mib (with "
                 "--calls: the kernels' speed in cache)"));
static cl::opt<unsigned>
    calls("calls", cl::init(1),
          cl::desc("calls per timed run (each kernel and each memcpy), the "
                   "time divided by them"));
static cl::opt<unsigned> runs("runs", cl::init(5),
                              cl::desc("timed runs per kernel (median)"));
static cl::opt<std::string>
    only("only", cl::desc("run encodings whose attribute contains this"));
static cl::opt<unsigned>
    threads("workers", cl::init(1),
            cl::desc("workers of the encodes' and decodes' chunks "
                     "(act-cpu-pipeline{threads}; libLLVM has a --threads of "
                     "its own); memcpy "
                     "stays on one core"));
static cl::opt<std::string> cpuFeatures(
    "cpu-features",
    cl::desc("changes to the host's CPU features the kernels are compiled "
             "for, LLVM's names (-avx512f: an AVX2 machine's code); default: "
             "ACT_CPU_FEATURES, else the host's"));
static cl::opt<int64_t> prefetchDistance(
    "prefetch-ahead", cl::init(4096),
    cl::desc("act-cpu-pipeline{prefetch-distance}: bytes the encodes' and "
             "decodes' loops prefetch ahead; 0: none"));

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

template <typename Fn> double seconds(Fn fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Seconds per call of `fn`, timed over --calls calls.
template <typename Fn> double secondsPerCall(Fn fn) {
  unsigned count = std::max(1u, unsigned(calls));
  return seconds([&] {
           for (unsigned c = 0; c < count; ++c)
             fn();
         }) /
         count;
}

template <typename Fn> double medianSeconds(Fn fn) {
  fn(); // warm up
  std::vector<double> t;
  for (unsigned r = 0; r < runs; ++r)
    t.push_back(secondsPerCall(fn));
  return median(t);
}

/// The median time of `fn` and the median of its speed relative to a
/// memcpy of `bytes` from `from` to `to` timed just before it in the same
/// run (this machine's memory bandwidth drifts by 2x within minutes; a
/// ratio of neighbours drifts less than a ratio of medians taken apart).
template <typename Fn>
std::pair<double, double> pairedWithCopy(Fn fn, void *to, const void *from,
                                         size_t bytes) {
  fn(); // warm up
  std::vector<double> t, copyOverFn;
  for (unsigned r = 0; r < runs; ++r) {
    double copy = secondsPerCall([&] { std::memcpy(to, from, bytes); });
    t.push_back(secondsPerCall(fn));
    copyOverFn.push_back(copy / t.back());
  }
  return {median(t), median(copyOverFn)};
}

/// The encoding as printed in the table (a few-bit table's numbers cut).
std::string label(llvm::StringRef encoding) {
  if (encoding.starts_with("#act.fewbit"))
    return encoding.substr(0, encoding.find(',')).str() + ", GELU'>";
  return encoding.str();
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  cl::ParseCommandLineOptions(argc, argv, "act CPU kernel bandwidth\n");

  // The encodes' and decodes' buffers come from the heap and are reused
  // once freed, as in every step act runs (act-run, the training engine):
  // a 128 MiB buffer freed and allocated again is not page-faulted afresh.
  ::act::rt::keepFreedMemory();
  int64_t n = kib ? int64_t(kib) * 1024 / 4 : int64_t(mib) * 1024 * 1024 / 4;
  if (n < 4096 || n % 4096) {
    llvm::errs() << "act-bench-kernels: the tensor must be a positive "
                    "multiple of 16 KiB\n";
    return 1;
  }
  size_t bytes = size_t(n) * 4;
  float *x = static_cast<float *>(allocTouched(bytes));
  float *y = static_cast<float *>(allocTouched(bytes));
  std::vector<float> normal(n);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float &v : normal)
    v = dist(gen);
  for (int64_t i = 0; i < n; ++i)
    x[i] = normal[i];

  double copy = medianSeconds([&] { std::memcpy(y, x, bytes); });
  double copyRate = 2.0 * double(bytes) / copy / 1e9;
  llvm::outs() << llvm::formatv(
      "tensor: {0} f32 ({1} KiB); encodes and decodes on {3} worker(s), "
      "memcpy on one core; median of {2} runs of {4} call(s); GB/s count "
      "bytes read + written; /memcpy: the median over runs of the rate "
      "relative to a memcpy timed just before it\n",
      n, n / 256, unsigned(runs), std::max(1u, unsigned(threads)),
      std::max(1u, unsigned(calls)));
  llvm::outs() << llvm::formatv("memcpy: {0:f2} GB/s\n\n", copyRate);
  llvm::outs() << llvm::formatv("{0,-44} {1,9} {2,8} {3,9} {4,8}\n", "encoding",
                                "encode", "/memcpy", "decode", "/memcpy");

  DialectRegistry registry;
  mlir::act::registerAllDialects(registry);
  /// An encoding, the tensor it encodes and its data.
  enum class Data { Normal, Relu, Window };
  struct Case {
    const char *encoding;
    const char *element; // the tensor's element type
    Data data;
    bool spatial; // rank 4: N x 64 x 32 x 32
  };
  const Case cases[] = {
      {"#act.quant<bits = 1>", "f32", Data::Normal, false},
      {"#act.quant<bits = 2>", "f32", Data::Normal, false},
      {"#act.quant<bits = 4>", "f32", Data::Normal, false},
      {"#act.quant<bits = 8>", "f32", Data::Normal, false},
      {"#act.quant<bits = 4, rounding = nearest>", "f32", Data::Normal, false},
      {"#act.quant<bits = 8, rounding = nearest>", "f32", Data::Normal, false},
      {"#act.float<format = f16>", "f32", Data::Normal, false},
      {"#act.float<format = bf16>", "f32", Data::Normal, false},
      {"#act.float<format = fp10>", "f32", Data::Normal, false},
      {"#act.float<format = e4m3>", "f32", Data::Normal, false},
      {"#act.float<format = e5m2>", "f32", Data::Normal, false},
      {"#act.mask<predicate = positive>", "f32", Data::Normal, false},
      // GELU's derivative at 2 bits (act-fewbit-table examples/fewbit/gelu).
      {"#act.fewbit<bits = 2, boundaries = [-0.7, 0.0, 0.7], values = "
       "[-0.05, 0.3, 0.7, 1.05]>",
       "f32", Data::Normal, false},
      // Max-pool indices of a 3x3 window (i32, values in [0, 9)).
      {"#act.index<bits = 4>", "i32", Data::Window, false},
      // A ReLU output: half of the elements are zero.
      {"#act.sparse<density = 0.5>", "f32", Data::Relu, false},
      {"#act.division<block = 8, bits = 2>", "f32", Data::Normal, true},
  };
  for (const Case &item : cases) {
    const char *enc = item.encoding;
    if (!only.empty() && !llvm::StringRef(enc).contains(only))
      continue;
    // The input: the standard normal, its positive part, or window indices.
    for (int64_t i = 0; i < n; ++i) {
      float v = normal[i];
      if (item.data == Data::Relu)
        x[i] = std::max(v, 0.0f);
      else if (item.data == Data::Window)
        reinterpret_cast<int32_t *>(x)[i] = int32_t(i * 7 % 9);
      else
        x[i] = v;
    }
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    std::vector<int64_t> shape = {n};
    // (Below 256 KiB, one image of fewer channels.)
    if (item.spatial)
      shape = n % (64 * 32 * 32)
                  ? std::vector<int64_t>{1, n / 1024, 32, 32}
                  : std::vector<int64_t>{n / (64 * 32 * 32), 64, 32, 32};
    std::string dims;
    for (int64_t d : shape)
      dims += std::to_string(d) + "x";
    std::string t = "tensor<" + dims + item.element + ">";
    std::string e = "!act.encoded<" + t + ", " + enc + ">";
    bool isMask = llvm::StringRef(enc).starts_with("#act.mask");
    std::string elem = isMask ? "i1" : item.element;
    std::string d = "tensor<" + dims + elem + ">";
    // Decoding writes into the caller's buffer (destination-passing style),
    // viewed as 1-D (a value reshaped on its way into a buffer of another
    // shape is copied: empty-tensor elimination does not see through
    // reshapes).
    std::string flat = "tensor<" + std::to_string(n) + "x" + elem + ">";
    std::string m = "memref<" + std::to_string(n) + "x" + elem + ">";
    std::string value = "%d", reshape;
    if (shape.size() > 1) {
      reshape = " %f = tensor.collapse_shape %d [[0, 1, 2, 3]] : " + d +
                " into " + flat + "\n";
      value = "%f";
    }
    std::string text = "func.func @encode(%x: " + t + ", %s: i64) -> " + e +
                       " {\n %e = act.encode %x, id = 0, seed %s : " + t +
                       " -> " + e + "\n return %e : " + e +
                       "\n}\nfunc.func @decode(%e: " + e + ", %out: " + m +
                       ") {\n %d = act.decode %e : " + e + " -> " + d + "\n" +
                       reshape + " bufferization.materialize_in_destination " +
                       value + " in restrict writable %out : (" + flat + ", " +
                       m + ") -> ()\n return\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    if (!module) {
      llvm::errs() << "could not parse the kernels of " << enc << "\n";
      return 1;
    }
    auto encoding = cast<mlir::act::EncodingAttrInterface>(
        cast<mlir::act::EncodedType>(
            module->lookupSymbol<func::FuncOp>("encode").getResultTypes()[0])
            .getEncoding());
    auto tensorType = cast<RankedTensorType>(
        module->lookupSymbol<func::FuncOp>("encode").getArgumentTypes()[0]);
    SmallVector<Type> storageTypes;
    cast<mlir::act::EncodingLoweringAttrInterface>(encoding).getStorageTypes(
        tensorType, storageTypes);
    bool dataDependent = llvm::any_of(storageTypes, [](Type type) {
      return !cast<RankedTensorType>(type).hasStaticShape();
    });
    int64_t storageBytes =
        encoding.getStorageLayout(tensorType)->getTotalBytes();

    PassManager pm(&context);
    mlir::act::CPUPipelineOptions options;
    options.countAllocations = false;
    // Storage whose size depends on the data is allocated by the encode and
    // returned; static storage is the caller's.
    options.resultsToOutParams = !dataDependent;
    options.threads = std::max(1u, unsigned(threads));
    options.prefetchDistance = prefetchDistance;
    options.cpuFeatures = mlir::act::getCpuFeatureChanges(cpuFeatures);
    mlir::act::buildCPUPipeline(pm, options);
    if (failed(pm.run(*module))) {
      llvm::errs() << "lowering failed for " << enc << "\n";
      return 1;
    }
    auto features = mlir::act::getCpuFeatures(cpuFeatures);
    if (!features) {
      llvm::errs() << llvm::toString(features.takeError()) << "\n";
      return 1;
    }
    auto transformer = mlir::act::makeHostOptimizingTransformer(3, *features);
    ExecutionEngineOptions engineOptions;
    engineOptions.transformer = transformer;
    llvm::StringRef libs[] = {ACT_C_RUNNER_UTILS};
    engineOptions.sharedLibPaths = libs;
    auto engine = ExecutionEngine::create(*module, engineOptions);
    if (!engine) {
      llvm::errs() << "JIT failed: " << llvm::toString(engine.takeError())
                   << "\n";
      return 1;
    }
    if (llvm::Error err = mlir::act::registerAsyncRuntime(**engine)) {
      llvm::errs() << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
    (*engine)->initialize();

    int64_t seed = 42;
    Memref xr(x, shape);
    std::vector<void *> encArgs;
    xr.pack(encArgs);
    encArgs.push_back(&seed);
    // Static storage: buffers allocated once. Data-dependent storage: the
    // encode returns 1-D descriptors {allocated, aligned, offset, size,
    // stride}, one per storage tensor, freed after each run but the last.
    std::vector<void *> storage;
    std::vector<Memref> storageRefs;
    std::vector<int64_t> returned(5 * storageTypes.size());
    if (dataDependent) {
      // (The packed interface's last argument is where the result goes.)
      encArgs.push_back(returned.data());
    } else {
      for (Type type : storageTypes) {
        auto st = cast<RankedTensorType>(type);
        storage.push_back(allocTouched(size_t(st.getNumElements()) * 4));
        storageRefs.emplace_back(
            storage.back(),
            std::vector<int64_t>(st.getShape().begin(), st.getShape().end()));
      }
      for (Memref &ref : storageRefs)
        ref.pack(encArgs);
    }
    auto freeReturned = [&] {
      for (size_t r = 0; dataDependent && r < storageTypes.size(); ++r)
        std::free(reinterpret_cast<void *>(returned[5 * r]));
    };
    bool first = true;
    auto [tEnc, copyOverEnc] = pairedWithCopy(
        [&] {
          if (!first)
            freeReturned();
          first = false;
          if (llvm::Error err = (*engine)->invokePacked("encode", encArgs))
            llvm::report_fatal_error(std::move(err));
        },
        y, x, bytes);
    std::vector<int64_t> fields = returned;
    if (dataDependent) {
      // The bytes this data needed (bitmap and values).
      storageBytes = 0;
      for (size_t r = 0; r < storageTypes.size(); ++r)
        storageBytes += returned[5 * r + 3] * 4;
    }
    void *out = isMask ? allocTouched(size_t(n)) : y;
    Memref outRef(out, {n});
    std::vector<void *> decArgs;
    if (dataDependent)
      for (int64_t &f : fields)
        decArgs.push_back(&f);
    for (Memref &ref : storageRefs)
      ref.pack(decArgs);
    outRef.pack(decArgs);
    auto [tDec, copyOverDec] = pairedWithCopy(
        [&] {
          if (llvm::Error err = (*engine)->invokePacked("decode", decArgs))
            llvm::report_fatal_error(std::move(err));
        },
        y, x, bytes);
    // Bytes read and written: the tensor (one byte per element of a mask's
    // decoded i1, four for f32 and i32) and the storage.
    double outBytes = isMask ? double(n) : double(bytes);
    double encBytes = double(bytes) + double(storageBytes);
    double decBytes = double(storageBytes) + outBytes;
    // Rates relative to the memcpy timed beside each run (2 * bytes moved).
    llvm::outs() << llvm::formatv(
        "{0,-44} {1,9:f2} {2,8:f2} {3,9:f2} {4,8:f2}\n", label(enc),
        encBytes / tEnc / 1e9, copyOverEnc * encBytes / (2.0 * double(bytes)),
        decBytes / tDec / 1e9, copyOverDec * decBytes / (2.0 * double(bytes)));
    freeReturned();
    // (Tasks may still be returning through the engine's code.)
    mlir::act::quiesceAsyncRuntime();
    for (void *p : storage)
      std::free(p);
    if (isMask)
      std::free(out);
  }
  std::free(x);
  std::free(y);
  return 0;
}
