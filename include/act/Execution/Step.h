//===- Step.h - compile a step once, run it many times ----------*- C++ -*-===//
//
// act's execution engine: a training step of either graph form
// (docs/TrainingGraphs.md), before or after act's passes, compiled once
// through act-cpu-pipeline (or act-gpu-pipeline) and run many times on
// caller-owned host tensors. It holds the saved values between a split
// form's forward and backward, feeds the backward its tangents, seeds the
// stochastic encodings (Step::setSeeds, docs/Design.md "Randomness"), and
// measures each run's peak memory through runtime/'s allocation hooks.
// GACT's sensitivity estimator and the compression-variance measurement
// run on top of it. Nothing here prints: results are values, failures
// llvm::Error. act-run is a command line over this library.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_EXECUTION_STEP_H
#define ACT_EXECUTION_STEP_H

#include "act/Analysis/FewBit.h"
#include "act/Analysis/Profile.h"
#include "act/Execution/HostTensor.h"
#include "act/Execution/Jit.h"
#include "act/runtime/Sensitivity.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/FunctionExtras.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mlir::act {

/// What one run of a step gives.
struct StepOutputs {
  /// The forward's outputs (the loss among them), then, in the split form,
  /// the backward's results (the gradients). The joint form's results as
  /// they are.
  std::vector<HostTensor> values;
  /// The most bytes the step had allocated at once (saved values held
  /// between forward and backward included).
  int64_t peakBytes = 0;
  /// GPU: the seconds the compiled step ran (launches and library calls to
  /// the final synchronization), without staging its inputs in device
  /// memory before; the joint form's one call. 0 on the CPU.
  double deviceSeconds = 0;
};

/// A stochastically encoded tensor of a step (a candidate for GACT's
/// sensitivity estimate): its id, element count and bits.
using StochasticTensor = ::act::rt::SensitivityEstimator::Tensor;

class Step {
public:
  /// Compiles the step of `module` (lowered in place): the function `entry`
  /// (with its split backward, if it names one), or the module's training
  /// graph when `entry` is empty. JitTarget::cacheOnly: a null step where
  /// the code is not in the cache.
  static llvm::Expected<std::unique_ptr<Step>>
  compile(ModuleOp module, llvm::StringRef entry, const JitTarget &target = {});

  /// The forward (joint form: the step) and, split form, backward function.
  llvm::StringRef getForwardName() const { return forwardName; }
  llvm::StringRef getBackwardName() const { return backwardName; }
  bool isSplit() const { return backward != nullptr; }
  /// Whether the code was loaded from JitTarget::cacheDir, not compiled.
  bool isFromCache() const { return forward->isFromCache(); }
  /// The graph's fingerprint (empty when compiled from `entry`).
  llvm::StringRef getFingerprint() const { return fingerprint; }
  /// The arguments a run takes (the forward's).
  const std::vector<ValueSpec> &getArguments() const {
    return forward->getArguments();
  }
  /// Whether runs take and give device tensors (JitTarget::deviceTensors).
  bool isOnDevice() const { return onDevice; }
  /// Device tensors: the CUDA stream later runs are queued on (null: the
  /// runtime's own). A run returns once its work is queued.
  void setStream(void *stream);
  /// Device tensors: CUDA graphs for later runs (JitFunction::setGraphs,
  /// for the forward and the backward), on or off.
  llvm::Error setGraphs(bool on);
  /// The position of the act.seeds argument, if the step has one.
  std::optional<unsigned> getSeedsIndex() const { return seedsIndex; }
  /// The position of the act.bits argument, if the step has one.
  std::optional<unsigned> getBitsIndex() const { return bitsIndex; }
  /// The widths the run-time-width encodings (#act.runtime_quant) use, by
  /// id (0: an id without one); they start at the planned widths.
  llvm::ArrayRef<int32_t> getBits() const;
  /// Sets tensor `id`'s width for the next runs: an error when `id` takes
  /// none or `bits` is not one of its encoding's choices.
  llvm::Error setBits(int64_t id, int32_t bits);
  /// The position of the loss among StepOutputs::values.
  unsigned getLossIndex() const { return lossIndex; }
  /// The stochastically quantized tensors with static shapes.
  llvm::ArrayRef<StochasticTensor> getStochasticTensors() const {
    return stochastic;
  }

  /// Runs one step on `args` (read in place, never copied on the CPU).
  /// Integer data outside an argument's act.index_range is an error before
  /// anything runs (not checked on device tensors, which the host does not
  /// read).
  llvm::Expected<StepOutputs> run(llvm::ArrayRef<HostTensor> args);
  /// Split form, the two halves apart (what act.Module runs inside
  /// autograd): the forward alone on `args` (run()'s checks included); its
  /// values are the forward's results, the outputs then the saved values
  /// (getNumOutputs() of the first).
  llvm::Expected<StepOutputs> runForward(llvm::ArrayRef<HostTensor> args);
  /// The backward alone on its arguments: the saved values a runForward
  /// gave (their storage as it crossed), then a tangent per output the
  /// backward takes. An error for the joint form. With `release`, each
  /// argument is reset after its last use in the backward (CPU,
  /// act-release-arguments): a saved value `args` alone holds is freed
  /// there, as the joint step frees it. Its peak counts the saved values
  /// from the start, as run()'s does.
  llvm::Expected<StepOutputs>
  runBackward(llvm::MutableArrayRef<HostTensor> args, bool release = false);
  /// The forward's results before the saved values (all of them, joint form).
  unsigned getNumOutputs() const { return numOutputs; }
  /// Split form: the saved values the forward returns after its outputs
  /// (the backward's first arguments; its others are tangents).
  /// After lowering: an encoded value may cross as several buffers.
  unsigned getNumSaved() const {
    return backward ? unsigned(forward->getResults().size()) - numOutputs : 0;
  }
  /// The backward's arguments (none, joint form).
  llvm::ArrayRef<ValueSpec> getBackwardArguments() const {
    return backward ? llvm::ArrayRef<ValueSpec>(backward->getArguments())
                    : llvm::ArrayRef<ValueSpec>();
  }
  /// The act.index_range check of run().
  llvm::Error checkIndexRanges(llvm::ArrayRef<HostTensor> args) const;

  /// Tensor `id`'s seed for mini-batch (or run) `batch`: batch 0 is the
  /// documented splitmix64(stepSeed + id); `redraw` gives a second,
  /// independent stream of the same tensor.
  static uint64_t getTensorSeed(uint64_t stepSeed, uint64_t batch, int64_t id,
                                bool redraw = false);
  /// Fills an act.seeds tensor: every id's seed, `redrawId`'s re-drawn.
  static void setSeeds(HostTensor &seeds, uint64_t stepSeed, uint64_t batch,
                       int64_t redrawId = -1);
  /// A new act.seeds argument of `spec`, filled by setSeeds.
  static HostTensor makeSeeds(const ValueSpec &spec, uint64_t stepSeed,
                              uint64_t batch = 0);

private:
  Step() = default;
  std::vector<std::unique_ptr<JitFunction>> jits;
  JitFunction *forward = nullptr, *backward = nullptr;
  std::string forwardName, backwardName, fingerprint;
  unsigned numOutputs = 0, lossIndex = 0;
  std::optional<unsigned> seedsIndex, bitsIndex;
  bool onDevice = false;
  void *stream = nullptr;
  /// The act.bits argument's contents (what runs read when the caller
  /// leaves its slot empty).
  HostTensor bits;
  std::vector<StochasticTensor> stochastic;
  /// Groups of (argument, dimension) whose dynamic sizes must agree.
  std::vector<std::vector<std::pair<unsigned, unsigned>>> equalDims;
  /// The act.index_range attributes of the forward's arguments.
  struct IndexRange {
    unsigned argument;
    int64_t lower, upper;
    std::optional<int64_t> ignore;
    bool isUnsigned;
    std::string use;
  };
  std::vector<IndexRange> indexRanges;
};

/// How random arguments are drawn.
enum class RandomInit {
  /// N(0, 0.5^2).
  Normal,
  /// Integers in [-2, 2]: exact in every float encoding of 8+ bits.
  Int,
};

/// A random argument of `spec`, dynamic dimensions of size `dynamicSize`.
llvm::Expected<HostTensor> makeRandomArgument(const ValueSpec &spec,
                                              std::mt19937_64 &gen,
                                              RandomInit init,
                                              int64_t dynamicSize);
/// Argument `index` of `spec` from the .npy file `path` (dtype, rank and
/// static dimensions checked).
llvm::Expected<HostTensor> loadArgument(const std::string &path,
                                        const ValueSpec &spec, unsigned index);

/// The step's gradient: every floating-point output but the loss,
/// flattened.
std::vector<double> flattenGradient(llvm::ArrayRef<HostTensor> outputs,
                                    unsigned lossIndex);

/// Per-tensor sensitivities (runtime/Sensitivity.h) over `batches`
/// (argument lists of the step; their seeds are overwritten), L + 1 runs
/// per batch either way:
///  - SensitivityMethod::Variance, GACT's Alg. 1: one run at the base seeds
///    and one per stochastic tensor with only that tensor's seed re-drawn;
///  - SensitivityMethod::Error: one run without compression and one per
///    stochastic tensor with only that tensor compressed (at its planned
///    width), so that its bias counts too. The step's stochastic tensors
///    must all be #act.runtime_quant with 32 among their choices; the
///    step's widths are as they were afterwards.
/// With `perTensorBatches` (0: all), the per-tensor runs are made on the
/// first that many batches only; the others give their base run, which
/// the gradient variance (the variance alert's) needs, at 1 run each: an
/// adaptive loop measures the newest batch's sensitivities and still sees
/// the sampling variance.
/// (SensitivityMethod: Analysis/Profile.h, whose profiles record it.)
struct SensitivityEstimate {
  Profile profile;
  /// The compression variance the profile predicts at the current bits.
  double predictedVariance = 0;
};
llvm::Expected<SensitivityEstimate> estimateSensitivity(
    Step &step, std::vector<std::vector<HostTensor>> batches, uint64_t stepSeed,
    llvm::unique_function<void(size_t done, size_t total, size_t batch)>
        progress = nullptr,
    SensitivityMethod method = SensitivityMethod::Variance,
    unsigned perTensorBatches = 0);

/// Few-bit backward's gradient error, the #act.fewbit family of
/// act-allocate-bits. `compile`: every saved value of `module`'s training
/// graph (the one of `entry`, or the first) that the backward reads only
/// through an activation's derivative phi(x) (getFewBitEncoding at `bits`
/// bits with `options`), with the step compiled with only that value as
/// interval codes; `module` (not lowered, without encodings) is left as it
/// is: the variants are compiled from clones. `estimate`: each variant run
/// on every batch next to `exact`, the step of the graph as it is:
///   c = mean over batches of ||g_l - g||^2 / L(bits)
/// (L: the table's error; the error is a bias, which GACT's seed re-draw
/// cannot see). The profile's gradient variance is the sampling variance
/// of g over the batches. `progress(done, total)` after each evaluation.
/// Compiled once, estimated as often as the caller re-measures (act.compile's
/// adaptive loop).
struct FewBitSensitivityEstimate {
  Profile profile;
  /// Per profile tensor: the mean ||g_l - g||^2 and the table's error L.
  std::vector<double> squaredErrors, tableErrors;
};
class FewBitVariants {
public:
  static llvm::Expected<std::unique_ptr<FewBitVariants>>
  compile(ModuleOp module, llvm::StringRef entry, const JitTarget &target,
          unsigned bits, const FewBitOptions &options);
  llvm::Expected<FewBitSensitivityEstimate>
  estimate(Step &exact, const std::vector<std::vector<HostTensor>> &batches,
           llvm::unique_function<void(size_t done, size_t total)> progress =
               nullptr);

private:
  FewBitVariants() = default;
  struct Variant {
    int64_t id = 0, elements = 0;
    /// The table as printed, and its error L.
    std::string encoding;
    double tableError = 0;
    std::unique_ptr<Step> step;
  };
  std::string forwardName, fingerprint;
  unsigned bits = 0;
  std::vector<Variant> variants;
};

/// With a `reference` gradient (the step without encodings on the same
/// batch), also the mean squared error against it, mean_r ||g_r - g_ref||^2:
/// the variance plus the squared bias (few-bit codes are biased).
struct VarianceMeasurement {
  double variance = 0;
  /// Squared norm of the mean gradient.
  double meanNorm2 = 0;
  std::optional<double> meanSquaredError;
};
llvm::Expected<VarianceMeasurement>
measureVariance(Step &step, std::vector<HostTensor> args, unsigned runs,
                uint64_t stepSeed,
                const std::vector<double> *reference = nullptr);

} // namespace mlir::act

#endif // ACT_EXECUTION_STEP_H
