//===- act-run.cpp - run a training step and measure it -------------------===//
//
// The command line over act's execution engine (act/Execution/Step.h): runs
// a training step of a module in either graph form, before or after act's
// passes, on inputs from .npy files or seeded random data; writes every
// result as .npy and reports the loss, the wall time and the peak bytes the
// step allocated. --sensitivity and --variance-runs run GACT's estimator and
// the compression-variance measurement. Option parsing and printing only.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Execution/Step.h"
#include "act/InitAll.h"
#include "act/runtime/Cuda.h"
#include "act/runtime/CudaLibraries.h"
#include "act/runtime/Kernels.h"
#include "act/runtime/Memory.h"
#include "act/runtime/Sensitivity.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <map>

using namespace mlir;
using namespace mlir::act;
namespace cl = llvm::cl;
namespace rt = ::act::rt;

namespace {
enum class Device { CPU, GPU, GPUEmulated };
} // namespace

static cl::OptionCategory runCategory("act-run options");
static cl::OptionCategory measureCategory("act-run measurements");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<training step .mlir>"),
                                      cl::Required, cl::cat(runCategory));
static cl::opt<std::string>
    entry("entry",
          cl::desc("the step function, or the split forward function "
                   "(default: the module's training graph)"),
          cl::cat(runCategory));
static cl::list<std::string>
    inputs("inputs", cl::CommaSeparated,
           cl::desc("the arguments as .npy files, in order (act.seeds "
                    "excepted); default: seeded random data"),
           cl::cat(runCategory));
static cl::opt<uint64_t> dataSeed("seed", cl::init(0),
                                  cl::desc("seed of the random inputs"),
                                  cl::cat(runCategory));
static cl::opt<RandomInit>
    init("init", cl::init(RandomInit::Normal), cl::desc("random inputs:"),
         cl::values(clEnumValN(RandomInit::Normal, "normal", "N(0, 0.5^2)"),
                    clEnumValN(RandomInit::Int, "int",
                               "integers in [-2, 2], exact in every float "
                               "encoding of 8+ bits")),
         cl::cat(runCategory));
static cl::opt<int64_t>
    dynamicSize("dynamic-size", cl::init(8),
                cl::desc("size of dynamic dimensions of random inputs"),
                cl::cat(runCategory));
static cl::opt<uint64_t>
    stepSeed("step-seed", cl::init(1),
             cl::desc("seed of the step's stochastic rounding; tensor id l "
                      "gets splitmix64(step-seed + l)"),
             cl::cat(runCategory));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("write result_<i>.npy here"),
                                      cl::cat(runCategory));
static cl::opt<Device> device(
    "device", cl::init(Device::CPU), cl::desc("where the step runs:"),
    cl::values(
        clEnumValN(Device::CPU, "cpu", "act-cpu-pipeline, the host"),
        clEnumValN(Device::GPU, "gpu",
                   "act-gpu-pipeline, CUDA device 0 (allocations in managed "
                   "memory, counted the same way)"),
        clEnumValN(Device::GPUEmulated, "gpu-emulated",
                   "the host, the encodings lowered to the GPU kernels run "
                   "as loops: checks them without a GPU")),
    cl::cat(runCategory));
static cl::opt<bool> deviceTensors(
    "device-tensors",
    cl::desc("--device=gpu: the step on device tensors, as act.compile runs "
             "it on CUDA tensors: the arguments staged in device memory once, "
             "before the runs; each run on one stream without a host "
             "synchronization inside, timed to its completion, its buffers "
             "plain device memory from the runtime's pool; the results "
             "copied to the host after the last run"),
    cl::cat(runCategory));
static cl::opt<bool> gpuGraphs(
    "gpu-graphs",
    cl::desc("--device-tensors: the second run captured in a CUDA graph, "
             "each later one a launch of that graph (its blocks, the "
             "results' among them, the graph's own: they stay live while "
             "the step does); a 'cuda graphs:' line counts them. Also "
             "ACT_GPU_GRAPHS=1"),
    cl::cat(runCategory));
static cl::opt<std::string> gpuChip("gpu-chip", cl::init(defaults::kGpuChip),
                                    cl::desc("--device=gpu: the NVIDIA "
                                             "architecture"),
                                    cl::cat(runCategory));
static cl::opt<int64_t> gpuMaxPartialBytes(
    "gpu-max-partial-bytes", cl::init(defaults::kGpuMaxPartialBytes),
    cl::desc("--device=gpu: act-gpu-pipeline{max-partial-bytes}, the most "
             "bytes of partial results a split reduction keeps"),
    cl::cat(runCategory));
static cl::opt<std::string> cpuFeatures(
    "cpu-features",
    cl::desc("--device=cpu, gpu-emulated: changes to the host's CPU features "
             "the step is compiled for, LLVM's names (-avx512f: the AVX2 "
             "code paths on an AVX-512 host); default: ACT_CPU_FEATURES, "
             "else the host's"),
    cl::cat(runCategory));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("--device=cpu, gpu-emulated: a directory of compiled steps kept "
             "between runs (docs/Running.md, \"The code cache\"): a step "
             "compiled before for the same target is loaded, not compiled; "
             "default: ACT_CACHE_DIR, else none"),
    cl::cat(runCategory));
static cl::opt<cl::boolOrDefault> gpuLibraries(
    "gpu-libraries",
    cl::desc("--device=gpu: matmuls and convolutions through cuBLAS and "
             "cuDNN (default; false: generated kernels). --device="
             "gpu-emulated: through the same calls on host memory, which only "
             "their stand-ins run (ACT_CUBLAS_LIBRARY, ACT_CUDNN_LIBRARY; "
             "default false: oneDNN)"),
    cl::cat(runCategory));
static cl::opt<std::string> gpuFeatures("gpu-features",
                                        cl::init(defaults::kGpuFeatures),
                                        cl::desc("--device=gpu: PTX features"),
                                        cl::cat(runCategory));
static cl::opt<std::string> peakReport(
    "peak-report",
    cl::desc("name where the step's peak is: the lowered step's buffers at "
             "their peak, by allocation site (act-cpu-pipeline{peak-report}; "
             "- for stderr, a .json path for JSON with the timeline)"),
    cl::value_desc("file"), cl::cat(measureCategory));

static cl::opt<bool> decodeIntoConsumers(
    "decode-into-consumers", cl::init(defaults::kDecodeIntoConsumers),
    cl::desc("--device=cpu: an elementwise reader of a decoded value decodes "
             "for itself inside its loop (act-cpu-pipeline{decode-into-"
             "consumers}); false: every reader shares one decoded tensor"),
    cl::cat(runCategory));

static cl::opt<unsigned> jitOpt(
    "jit-opt", cl::init(defaults::kJitOptLevel),
    cl::desc("LLVM's optimization level (0-3) for the lowered step, its IR "
             "passes and code generation: lower compiles faster"),
    cl::cat(runCategory));

static cl::opt<int64_t> fuseMaxOperands(
    "fuse-max-operands", cl::init(defaults::kFuseMaxOperands),
    cl::desc("--device=cpu: the most operands of a fused elementwise loop "
             "nest (act-cpu-pipeline{fuse-max-operands}: an unrolled "
             "recurrence's backward otherwise fuses across all its "
             "timesteps, and compiles slowly); 0: no limit"),
    cl::cat(runCategory));

static cl::opt<int64_t> chunkPasses(
    "chunk-passes", cl::init(defaults::kChunkPasses),
    cl::desc("--device=cpu: a backward stage (from a max pool's input "
             "gradient to the next stage's) is computed one chunk of the "
             "batch at a time, in up to this many loops "
             "(act-cpu-pipeline{chunk-passes}); 0: whole"),
    cl::cat(runCategory));

static cl::opt<bool> poolInPlace(
    "pool-in-place", cl::init(defaults::kPoolInPlace),
    cl::desc("--device=cpu: a max pool whose input dies there writes into "
             "the input's buffer, which then gives back its tail "
             "(act-cpu-pipeline{pool-in-place})"),
    cl::cat(runCategory));

static cl::opt<int64_t> prefetchAhead(
    "prefetch-ahead", cl::init(defaults::kPrefetchDistance),
    cl::desc("--device=cpu: loops that stream through a buffer (an encode's "
             "chunks) prefetch this many bytes ahead "
             "(act-cpu-pipeline{prefetch-distance}); 0: none"),
    cl::cat(runCategory));

static cl::opt<int64_t> outlineMinLoops(
    "outline-min-loops", cl::init(defaults::kOutlineMinLoops),
    cl::desc("--device=cpu: each top-level loop nest of a step with at least "
             "this many becomes a function of its own before LLVM "
             "(act-cpu-pipeline{outline-min-loops}: a large step compiles "
             "several times faster); 0: never"),
    cl::cat(runCategory));

static cl::opt<bool> storage(
    "storage",
    cl::desc("report the bytes each encoded tensor was stored in, as the "
             "run produced them (data-dependent encodings such as "
             "#act.sparse included), and their total"),
    cl::cat(measureCategory));
static cl::opt<unsigned> repeat("repeat", cl::init(1),
                                cl::desc("run the step this many times and "
                                         "report the median time"),
                                cl::cat(measureCategory));
static cl::opt<std::string> sensitivityFile(
    "sensitivity",
    cl::desc("estimate each stochastically encoded tensor's sensitivity "
             "(GACT Alg. 1: one base step and one re-draw per tensor, per "
             "mini-batch) and write the profile to this file"),
    cl::cat(measureCategory));
static cl::opt<std::string> sensitivityEstimator(
    "sensitivity-estimator", cl::init("variance"),
    cl::desc("what --sensitivity measures per tensor: 'variance' (GACT's seed "
             "re-draws) or 'error' (the tensor compressed alone against the "
             "step without compression, its bias included; the step's "
             "#act.runtime_quant widths include 32)"),
    cl::value_desc("variance|error"), cl::cat(measureCategory));
static cl::list<std::string> batchInputs(
    "batch-inputs",
    cl::desc("one more mini-batch for --sensitivity: .npy files (comma "
             "separated) replacing the last arguments; repeat per batch"),
    cl::cat(measureCategory));
static cl::opt<std::string> fewBitSensitivityFile(
    "fewbit-sensitivity",
    cl::desc("on a graph without encodings: measure the gradient error of "
             "few-bit codes (--few-bit bits) of every value the backward "
             "reads only through an activation's derivative, one step "
             "variant per value against the exact step, per mini-batch, and "
             "write it as act-allocate-bits' #act.fewbit profile to this file"),
    cl::value_desc("file"), cl::cat(measureCategory));
static cl::opt<unsigned> fewBitBits(
    "few-bit", cl::init(2),
    cl::desc("bits of the few-bit codes --fewbit-sensitivity measures (1-4)"),
    cl::cat(measureCategory));
static cl::list<double> fewBitRange(
    "few-bit-range", cl::CommaSeparated,
    cl::desc("A,B: the few-bit tables' range, as act-insert-encode-decode's "
             "(default -10,10)"),
    cl::cat(measureCategory));
static cl::opt<double>
    fewBitSigma("few-bit-sigma", cl::init(1.0),
                cl::desc("the few-bit tables' weight N(0, sigma^2), as "
                         "act-insert-encode-decode's; 0: uniform"),
                cl::cat(measureCategory));
static cl::opt<unsigned> varianceRuns(
    "variance-runs", cl::init(0),
    cl::desc("run the step this many times with step seeds step-seed, "
             "step-seed + 1, ... and report the gradient's variance over them "
             "(the compression variance)"),
    cl::cat(measureCategory));

static cl::list<std::string> runtimeBits(
    "bits", cl::CommaSeparated,
    cl::desc("ID=B,...: the width of saved tensor ID's run-time-width "
             "encoding (#act.runtime_quant) for the runs; the others keep "
             "their planned widths"),
    cl::value_desc("id=bits"));

static cl::opt<std::string> referenceFile(
    "reference",
    cl::desc("with --variance-runs: the same graph without encodings (.mlir); "
             "also report the mean squared error of the gradient against "
             "it (variance plus squared bias)"),
    cl::value_desc("file"), cl::cat(measureCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "act-run: error: " << message << "\n";
  return 1;
}
static int fail(llvm::Error error) {
  return fail(llvm::toString(std::move(error)));
}

static std::string describeScalar(const HostTensor &v) {
  if (v.numElements() != 1)
    return "";
  if (v.getKind() == ElementKind::F32)
    return llvm::formatv("{0:g9}", *v.as<float>()).str();
  if (v.getKind() == ElementKind::F64)
    return llvm::formatv("{0:g17}", *v.as<double>()).str();
  return "";
}

/// The mini-batches of --sensitivity: the arguments, then one per
/// --batch-inputs, whose files replace the last arguments.
static llvm::Expected<std::vector<std::vector<HostTensor>>>
loadBatches(const Step &step, const std::vector<HostTensor> &first) {
  std::vector<std::vector<HostTensor>> batches = {first};
  std::vector<unsigned> slots;
  for (auto [i, spec] : llvm::enumerate(step.getArguments()))
    if (!spec.isRuntimeFilled())
      slots.push_back(unsigned(i));
  for (const std::string &list : batchInputs) {
    llvm::SmallVector<llvm::StringRef> files;
    llvm::StringRef(list).split(files, ',', -1, false);
    if (files.empty() || files.size() > slots.size())
      return llvm::createStringError("--batch-inputs '" + list +
                                     "': expected 1 to " +
                                     std::to_string(slots.size()) + " files");
    std::vector<HostTensor> args = first;
    for (auto [k, file] : llvm::enumerate(files)) {
      unsigned slot = slots[slots.size() - files.size() + k];
      auto value = loadArgument(file.str(), step.getArguments()[slot], slot);
      if (!value)
        return value.takeError();
      args[slot] = std::move(*value);
    }
    batches.push_back(std::move(args));
  }
  return batches;
}

static int runSensitivity(Step &step, const std::vector<HostTensor> &args) {
  std::optional<SensitivityMethod> method =
      parseSensitivityMethod(sensitivityEstimator);
  if (!method)
    return fail("--sensitivity-estimator: expected 'variance' or 'error', "
                "got '" +
                sensitivityEstimator + "'");
  auto batches = loadBatches(step, args);
  if (!batches)
    return fail(batches.takeError());
  bool tty = llvm::errs().is_displayed();
  size_t perBatch = step.getStochasticTensors().size() + 1;
  size_t numBatches = batches->size();
  auto estimate = estimateSensitivity(
      step, std::move(*batches), stepSeed,
      [&](size_t done, size_t total, size_t batch) {
        if (tty || done == total || done % perBatch == 0)
          llvm::errs() << llvm::formatv(
              "{0}act-run: sensitivity: batch {1}/{2}, {3}/{4} step "
              "evaluations{5}",
              tty ? "\r" : "", batch + 1, numBatches, done, total,
              tty && done != total ? "" : "\n");
      },
      *method);
  if (!estimate)
    return fail(estimate.takeError());
  const Profile &profile = estimate->profile;
  if (llvm::Error e = writeProfile(profile, sensitivityFile))
    return fail(std::move(e));

  llvm::outs() << "act-run: sensitivity of @" << profile.function << ": "
               << profile.tensors.size() << " tensors, " << profile.batches
               << " mini-batch(es), " << profile.evaluations
               << " step evaluations ("
               << getSensitivityMethodName(profile.estimator) << ")\n";
  llvm::outs() << llvm::formatv("{0,6} {1,10} {2,5} {3,14} {4,14}\n", "id",
                                "elements", "bits", "sensitivity", "c*S(bits)");
  for (const ProfileTensor &t : profile.tensors)
    llvm::outs() << llvm::formatv(
        "{0,6} {1,10} {2,5} {3,14:e} {4,14:e}\n", t.id, t.elements, t.bits,
        t.sensitivity, t.sensitivity * rt::quantVarianceFactor(t.bits));
  llvm::outs() << llvm::formatv("predicted compression variance: {0:e}\n",
                                estimate->predictedVariance);
  if (profile.gradientVariance)
    llvm::outs() << llvm::formatv(
        "gradient variance over {0} mini-batches: {1:e}\n", profile.batches,
        *profile.gradientVariance);
  else
    llvm::outs() << "gradient variance: unknown (one mini-batch; give more "
                    "with --batch-inputs)\n";
  llvm::outs() << "profile: " << sensitivityFile << "\n";
  return 0;
}

static int runFewBitSensitivity(ModuleOp graph, Step &step,
                                const JitTarget &target,
                                const std::vector<HostTensor> &args) {
  if (fewBitBits < 1 || fewBitBits > 4)
    return fail("--few-bit must be 1, 2, 3 or 4, got " +
                llvm::Twine(unsigned(fewBitBits)));
  std::vector<double> range(fewBitRange.begin(), fewBitRange.end());
  FailureOr<FewBitOptions> options =
      getFewBitOptions(graph.getContext(), "act-run", range, fewBitSigma);
  if (failed(options))
    return 1;
  auto batches = loadBatches(step, args);
  if (!batches)
    return fail(batches.takeError());
  auto variants =
      FewBitVariants::compile(graph, entry, target, fewBitBits, *options);
  if (!variants)
    return fail(variants.takeError());
  auto estimate =
      (*variants)->estimate(step, *batches, [&](size_t done, size_t total) {
        if (llvm::errs().is_displayed() || done == total)
          llvm::errs() << llvm::formatv(
              "\ract-run: few-bit sensitivity: {0}/{1} step evaluations{2}",
              done, total, done == total ? "\n" : "");
      });
  if (!estimate)
    return fail(estimate.takeError());
  const Profile &profile = estimate->profile;
  if (llvm::Error e = writeProfile(profile, fewBitSensitivityFile))
    return fail(std::move(e));
  llvm::outs() << "act-run: few-bit sensitivity of @" << profile.function
               << ": " << profile.tensors.size() << " tensors, "
               << profile.batches << " mini-batch(es), " << profile.evaluations
               << " step evaluations\n";
  llvm::outs() << llvm::formatv("{0,6} {1,10} {2,5} {3,14} {4,14} {5,14}\n",
                                "id", "elements", "bits", "sensitivity",
                                "table error", "||g_l - g||^2");
  for (auto [i, t] : llvm::enumerate(profile.tensors))
    llvm::outs() << llvm::formatv(
        "{0,6} {1,10} {2,5} {3,14:e} {4,14:e} {5,14:e}\n", t.id, t.elements,
        t.bits, t.sensitivity, estimate->tableErrors[i],
        estimate->squaredErrors[i]);
  llvm::outs() << "profile: " << fewBitSensitivityFile << "\n";
  return 0;
}

/// The module in the file `path`, parsed into `sources` (whose diagnostic
/// handler names the file's lines).
static llvm::Expected<OwningOpRef<ModuleOp>>
parseModule(llvm::StringRef path, MLIRContext &context,
            llvm::SourceMgr &sources) {
  std::string error;
  // A file or a pipe (- or /dev/stdin), not a device: /dev/zero would be
  // read without end.
  llvm::sys::fs::file_status status;
  if (path != "-" && !llvm::sys::fs::status(path, status) &&
      (status.type() == llvm::sys::fs::file_type::character_file ||
       status.type() == llvm::sys::fs::file_type::block_file))
    return llvm::createStringError("'" + path.str() +
                                   "' is a device, not a file");
  auto file = openInputFile(path, &error);
  if (!file)
    return llvm::createStringError(error);
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
  if (!module)
    return llvm::createStringError("cannot parse '" + path.str() + "'");
  return std::move(module);
}

/// The gradient of the graph in --reference on `args` (act.seeds left
/// out).
static llvm::Expected<std::vector<double>>
getReferenceGradient(MLIRContext &context, const Step &step,
                     const std::vector<HostTensor> &args) {
  // Its own source manager: parse errors name its lines.
  llvm::SourceMgr referenceSources;
  SourceMgrDiagnosticHandler handler(referenceSources, &context);
  auto module = parseModule(referenceFile, context, referenceSources);
  if (!module)
    return module.takeError();
  if (hasEncodings(**module))
    return llvm::createStringError("--reference '" + referenceFile +
                                   "' has encodings: give the graph without "
                                   "them");
  auto reference = Step::compile(**module, entry, {});
  if (!reference)
    return reference.takeError();
  std::vector<HostTensor> referenceArgs;
  for (auto [i, value] : llvm::enumerate(args))
    if (!step.getArguments()[i].isRuntimeFilled())
      referenceArgs.push_back(value);
  auto outs = (*reference)->run(referenceArgs);
  if (!outs)
    return outs.takeError();
  return flattenGradient(outs->values, (*reference)->getLossIndex());
}

static int runVariance(Step &step, const std::vector<HostTensor> &args,
                       const std::vector<double> *reference) {
  auto measured =
      measureVariance(step, args, varianceRuns, stepSeed, reference);
  if (!measured)
    return fail(measured.takeError());
  if (measured->meanSquaredError)
    llvm::outs() << llvm::formatv(
        "mean squared error against the reference over {0} step seeds: "
        "{1:e}\n",
        unsigned(varianceRuns), *measured->meanSquaredError);
  llvm::outs() << llvm::formatv(
      "gradient variance over {0} step seeds: {1:e} (squared norm of the "
      "mean gradient {2:e})\n",
      unsigned(varianceRuns), measured->variance, measured->meanNorm2);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // --help shows act-run's options, not LLVM's (--help-hidden has them).
  // libLLVM registers a hidden --threads of its own (LTO); act-run's is the
  // kernels' thread count, so LLVM's moves aside before act-run's exists.
  if (cl::Option *llvmThreads = cl::getRegisteredOptions().lookup("threads"))
    llvmThreads->setArgStr("llvm-threads");
  static cl::opt<int> threads(
      "threads", cl::init(0),
      cl::desc("threads of the compute kernels (matmuls, convolutions); 0: "
               "every core"),
      cl::cat(runCategory));
  static cl::opt<unsigned> encodeThreads(
      "encode-threads", cl::init(unsigned(defaults::kThreads)),
      cl::desc("workers of the encodes' and decodes' chunks (MLIR's async "
               "runtime); 0: every core, 1: the calling thread. Encodings "
               "give the same bits on any count"),
      cl::cat(runCategory));
  cl::HideUnrelatedOptions({&runCategory, &measureCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "act-run: run a training step and measure it\n");
  if (threads < 0)
    return fail("--threads must be 0 (every core) or positive, not " +
                llvm::Twine(int(threads)));
  if (encodeThreads > unsigned(rt::kMaxThreads))
    return fail("--encode-threads must be at most " +
                llvm::Twine(rt::kMaxThreads) + ", not " +
                llvm::Twine(unsigned(encodeThreads)));
  if (!rt::setThreads(threads))
    return fail("--threads must be at most " + llvm::Twine(rt::kMaxThreads) +
                ", not " + llvm::Twine(int(threads)));
  if (prefetchAhead < 0)
    return fail("--prefetch-ahead must be 0 (no prefetch) or positive, not " +
                llvm::Twine(int64_t(prefetchAhead)));
  if (gpuMaxPartialBytes < 0)
    return fail("--gpu-max-partial-bytes must be 0 or positive, not " +
                llvm::Twine(int64_t(gpuMaxPartialBytes)));

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A diagnostic names its location, not the whole op in generic form.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto parsed = parseModule(inputFile, context, sourceMgr);
  if (!parsed)
    return fail(parsed.takeError());
  OwningOpRef<ModuleOp> module = std::move(*parsed);

  if (!peakReport.empty() && device == Device::GPU)
    return fail("--peak-report reads act-cpu-pipeline's buffers: use it with "
                "--device=cpu or gpu-emulated");
  if (deviceTensors && device != Device::GPU)
    return fail("--device-tensors goes with --device=gpu");
  if (gpuGraphs && !deviceTensors)
    return fail("--gpu-graphs goes with --device-tensors");
  JitTarget target;
  target.gpu = device == Device::GPU;
  target.deviceTensors = deviceTensors;
  target.gpuGraphs = gpuGraphs;
  target.emulateGpuKernels = device == Device::GPUEmulated;
  target.recordStorage = storage;
  target.peakReport = peakReport;
  target.decodeIntoConsumers = decodeIntoConsumers;
  if (jitOpt > 3)
    return fail("--jit-opt must be 0, 1, 2 or 3, got " +
                std::to_string(jitOpt));
  target.optLevel = jitOpt;
  if (outlineMinLoops < 0)
    return fail("--outline-min-loops must not be negative, got " +
                std::to_string(outlineMinLoops));
  target.outlineMinLoops = outlineMinLoops;
  if (fuseMaxOperands < 0)
    return fail("--fuse-max-operands must not be negative, got " +
                std::to_string(fuseMaxOperands));
  target.fuseMaxOperands = fuseMaxOperands;
  if (chunkPasses < 0)
    return fail("--chunk-passes must not be negative, got " +
                std::to_string(chunkPasses));
  target.chunkPasses = chunkPasses;
  target.poolInPlace = poolInPlace;
  target.prefetchDistance = prefetchAhead;
  target.threads = unsigned(encodeThreads);
  if (storage && target.gpu)
    return fail("--storage is not available with --device=gpu (use "
                "--device=cpu or gpu-emulated: the same storage)");
  target.chip = gpuChip;
  target.maxPartialBytes = gpuMaxPartialBytes;
  target.features = gpuFeatures;
  target.gpuLibraries = gpuLibraries != cl::BOU_FALSE;
  target.emulateGpuLibraries = gpuLibraries == cl::BOU_TRUE;
  target.cpuFeatures = cpuFeatures;
  target.cacheDir = cacheDir;
  if (cacheDir.getNumOccurrences() == 0)
    if (const char *env = std::getenv("ACT_CACHE_DIR"))
      target.cacheDir = env;
  // --fewbit-sensitivity compiles variants of the graph as it is now.
  OwningOpRef<ModuleOp> graph;
  if (!fewBitSensitivityFile.empty()) {
    if (!sensitivityFile.empty() || varianceRuns > 0)
      return fail("--fewbit-sensitivity measures the graph without "
                  "encodings; --sensitivity and --variance-runs measure a "
                  "graph with stochastic ones: run them separately");
    graph = module->clone();
  }
  auto compileStart = std::chrono::steady_clock::now();
  auto compiled = Step::compile(*module, entry, target);
  if (!compiled)
    return fail(compiled.takeError());
  Step &step = **compiled;
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();

  // Arguments: .npy files or random data; seeds from the step seed.
  size_t expected = llvm::count_if(step.getArguments(), [](const ValueSpec &s) {
    return !s.isRuntimeFilled();
  });
  if (!inputs.empty() && inputs.size() != expected)
    return fail("--inputs gives " + std::to_string(inputs.size()) +
                " files but @" + step.getForwardName() + " takes " +
                std::to_string(expected) +
                " arguments (act.seeds and act.bits excepted)");
  std::vector<HostTensor> args;
  std::mt19937_64 gen(dataSeed);
  unsigned fileIndex = 0;
  for (auto [i, spec] : llvm::enumerate(step.getArguments())) {
    llvm::Expected<HostTensor> value =
        spec.isBits      ? HostTensor() // the step's table (--bits)
        : spec.isSeeds   ? Step::makeSeeds(spec, stepSeed)
        : inputs.empty() ? makeRandomArgument(spec, gen, init, dynamicSize)
                         : loadArgument(inputs[fileIndex++], spec, unsigned(i));
    if (!value)
      return fail(value.takeError());
    args.push_back(std::move(*value));
  }

  // --device-tensors: the caller's tensors in device memory, as a training
  // loop keeps them (the arguments the step's host code reads stay).
  if (deviceTensors) {
    for (auto [arg, spec] : llvm::zip(args, step.getArguments())) {
      if (spec.isRuntimeFilled() || spec.hostRead || !spec.isTensor ||
          !arg.byteSize())
        continue;
      void *data = mgpuMemAlloc(arg.byteSize(), nullptr, false);
      mgpuMemcpy(data, arg.data(), arg.byteSize(), nullptr);
      arg = HostTensor::adopt(arg.getKind(), arg.getShape(), data,
                              [](void *p) { mgpuMemFree(p, nullptr); });
    }
    mgpuStreamSynchronize(nullptr);
  }

  for (const std::string &item : runtimeBits) {
    auto [idText, bitsText] = llvm::StringRef(item).split('=');
    int64_t id;
    int32_t width;
    if (idText.trim().getAsInteger(10, id) ||
        bitsText.trim().getAsInteger(10, width))
      return fail("--bits '" + item + "': expected ID=BITS");
    if (llvm::Error e = step.setBits(id, width))
      return fail("--bits: " + llvm::toString(std::move(e)));
  }

  if (!referenceFile.empty() && varianceRuns == 0)
    return fail("--reference goes with --variance-runs");
  if ((!sensitivityFile.empty() ||
       (varianceRuns > 0 && referenceFile.empty())) &&
      !step.getSeedsIndex())
    return fail("--sensitivity and --variance-runs need a step with "
                "stochastic encodings (an act.seeds argument): run "
                "act-insert-encode-decode with #act.quant first");
  if (varianceRuns == 1)
    return fail("--variance-runs needs at least 2 runs");
  if (graph)
    return runFewBitSensitivity(*graph, step, target, args);
  if (!sensitivityFile.empty())
    return runSensitivity(step, args);
  if (varianceRuns > 0) {
    if (referenceFile.empty())
      return runVariance(step, args, nullptr);
    auto reference = getReferenceGradient(context, step, args);
    if (!reference)
      return fail(reference.takeError());
    return runVariance(step, args, &*reference);
  }

  std::vector<HostTensor> results;
  std::vector<double> times;
  int64_t peak = 0;
  int64_t base = rt::getMemoryStats().liveBytes;
  for (unsigned run = 0; run < std::max(1u, unsigned(repeat)); ++run) {
    results.clear();
    auto start = std::chrono::steady_clock::now();
    auto outs = step.run(args);
    if (!outs)
      return fail(outs.takeError());
    // Device tensors: the run returned once queued; timed to its end.
    if (deviceTensors)
      mgpuStreamSynchronize(rt::getOrderedStream());
    // GPU: the step on the device (its inputs, staged before, are resident
    // in a training loop).
    times.push_back(target.gpu && !deviceTensors
                        ? outs->deviceSeconds * 1e3
                        : std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count());
    peak = outs->peakBytes;
    results = std::move(outs->values);
  }

  if (deviceTensors) {
    // The results to the host, once (they stay on the device in a loop).
    for (HostTensor &value : results) {
      if (!value.isTensor() || !value.byteSize())
        continue;
      HostTensor host = HostTensor::allocate(value.getKind(), value.getShape());
      mgpuMemcpy(host.data(), value.data(), value.byteSize(),
                 rt::getOrderedStream());
      mgpuStreamSynchronize(rt::getOrderedStream());
      value = std::move(host);
    }
  }

  if (!outputDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + ec.message());
    for (auto [i, value] : llvm::enumerate(results)) {
      llvm::SmallString<256> path(outputDir);
      llvm::sys::path::append(path, "result_" + std::to_string(i) + ".npy");
      if (llvm::Error e = writeNpyTensor(std::string(path), value))
        return fail(std::move(e));
    }
  }

  std::sort(times.begin(), times.end());
  llvm::outs() << "act-run: @" << step.getForwardName()
               << (step.isSplit()
                       ? " / @" + step.getBackwardName().str() + " (split form)"
                       : std::string(" (joint form)"))
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
  // (The step is compiled before its first run: the runs' times are the
  // step's own, the first one with its warm-up: page faults, kernel
  // library primitives.)
  llvm::outs() << llvm::formatv(
      "time: median {0:f3} ms over {1} run(s) ({2} in {3:f1} s)\n",
      times[times.size() / 2], times.size(),
      step.isFromCache() ? "loaded from the cache" : "compiled",
      compileSeconds);
  if ((target.gpu && target.gpuLibraries) ||
      (target.emulateGpuKernels && target.emulateGpuLibraries)) {
    rt::GpuLibraryCalls calls = rt::getGpuLibraryCalls();
    llvm::outs() << llvm::formatv(
        "gpu libraries: {0} GEMMs, {1} convolutions, {2} input gradients, {3} "
        "weight gradients, {4} operands packed (over {5} run(s))\n",
        calls.gemms, calls.convForward, calls.convBackwardData,
        calls.convBackwardFilter, calls.packs, times.size());
  }
  // What the step left allocated once its results are released.
  results.clear();
  int64_t liveAfter = rt::getMemoryStats().liveBytes - base;
  llvm::outs() << "memory: peak " << peak << " bytes, live after " << liveAfter
               << " bytes (allocated by the step"
               << (deviceTensors ? ", plain device memory; inputs staged apart"
                   : target.gpu  ? ", CUDA managed memory; inputs staged apart"
                                 : "")
               << ")\n";
  if (deviceTensors)
    llvm::outs() << "device pool: "
                 << rt::getDevicePoolStats().peakReservedBytes
                 << " bytes at most (live and cached blocks)\n";
  if (deviceTensors && (gpuGraphs || rt::getGraphStats().launches)) {
    rt::GraphStats graphs = rt::getGraphStats();
    llvm::outs() << "cuda graphs: " << graphs.captures << " captured, "
                 << graphs.launches << " launches, " << graphs.failedCaptures
                 << " refused\n";
  }
  if (storage) {
    // By id: a value stored twice (sign mask and value) is one line.
    std::map<int64_t, int64_t> byId;
    int64_t total = 0;
    for (const rt::StorageRecord &r : rt::getStorageRecords()) {
      byId[r.id] += r.bytes;
      total += r.bytes;
    }
    for (auto [id, bytes] : byId)
      llvm::outs() << "storage: id " << id << ": " << bytes << " bytes\n";
    llvm::outs() << "storage: " << byId.size() << " encoded values, " << total
                 << " bytes\n";
  }
  return 0;
}
