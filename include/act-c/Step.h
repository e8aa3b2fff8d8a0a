/*===-- act-c/Step.h - compile a training step once, run it many times ---===*\
|*                                                                            *|
|* act's C API over the step engine (include/act/Execution/Step.h), in the    *|
|* style of MLIR's C API: opaque handles passed by value, `...Create`/        *|
|* `...Destroy` pairs, plain C types. It is what Python's act.compile loads   *|
|* with ctypes (libActCAPI.so).                                               *|
|*                                                                            *|
|* A step is compiled once from MLIR (a joint or split training step, before  *|
|* or after act's passes) and run many times on caller-owned buffers: the     *|
|* arguments are read in place, never copied; the results belong to the run  *|
|* handle until it is destroyed (no copy either). Errors cross as messages:   *|
|* a function that can fail returns a null handle or a non-zero status and,   *|
|* when `error` is not null, stores a message the caller frees with           *|
|* actStringFree. Nothing here aborts on bad input. Handles are checked: a    *|
|* handle used after its destroy (or never created) gets the failure result  *|
|* ("not a live step"), a second destroy does nothing. Destroying a handle    *|
|* while another thread uses it is the one misuse left to the caller.         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ACT_C_STEP_H
#define ACT_C_STEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_CAPI_EXPORTED __attribute__((visibility("default")))

/// A compiled step.
typedef struct ActStep {
  void *ptr;
} ActStep;

/// The results of one run of a step.
typedef struct ActRun {
  void *ptr;
} ActRun;

/// Element types (the engine's ElementKind, same order).
typedef enum ActElementKind {
  ActElementF32 = 0,
  ActElementF64 = 1,
  ActElementI64 = 2,
  ActElementI32 = 3,
  ActElementI16 = 4,
  ActElementI8 = 5,
  ActElementI1 = 6, /* one byte per element */
} ActElementKind;

/// A dense row-major tensor. Arguments: the caller's memory. Results: the
/// run's memory. Shapes: -1 for a dynamic dimension of an argument's spec.
typedef struct ActTensor {
  ActElementKind kind;
  intptr_t rank;
  const int64_t *shape;
  void *data;
} ActTensor;

/// Compiles the training step in the MLIR file `path` (or, `entry` not
/// null, its function `entry` and the backward it names) for the CPU
/// (actStepCompileFileOn: for a CUDA device).
ACT_CAPI_EXPORTED ActStep actStepCompileFile(const char *path,
                                             const char *entry, char **error);
/// The same from MLIR text (`length` bytes).
ACT_CAPI_EXPORTED ActStep actStepCompileSource(const char *source,
                                               size_t length, const char *entry,
                                               char **error);
ACT_CAPI_EXPORTED void actStepDestroy(ActStep step);

/// actStepCompileFile/Source for `device`: "cpu" (the same as those), or
/// "cuda": act-gpu-pipeline on CUDA device 0, matmuls and convolutions
/// through cuBLAS/cuDNN ("cuda-kernels": act's generated kernels alone).
/// A CUDA step runs on device tensors: the arguments' `data` are device
/// pointers (a PyTorch CUDA tensor's data_ptr()), read in place; its
/// results' `data` are device pointers into act's pool of device blocks,
/// owned by the run; a run returns once its work is queued on the step's
/// stream (actStepSetStream), without waiting for it and without any copy
/// from or to the host. Act.index_range is not checked on device tensors.
/// A step whose host code reads a tensor the caller gives (not the seeds
/// or widths the runtime fills) cannot be compiled for CUDA: an error.
ACT_CAPI_EXPORTED ActStep actStepCompileFileOn(const char *path,
                                               const char *entry,
                                               const char *device,
                                               char **error);
ACT_CAPI_EXPORTED ActStep actStepCompileSourceOn(const char *source,
                                                 size_t length,
                                                 const char *entry,
                                                 const char *device,
                                                 char **error);
/// actStepCompileFileOn where the code cache (actSetCacheDir) holds the
/// step's code; where it does not (a CUDA step, no cache, a miss) a null
/// step and no error, and nothing is compiled. An error is set where the
/// file cannot be read or parsed. (act's Python front end compiles in a
/// child process on a miss and loads the result with this: the compiler's
/// memory is never the training process's.)
ACT_CAPI_EXPORTED ActStep actStepLoadCachedFileOn(const char *path,
                                                  const char *entry,
                                                  const char *device,
                                                  char **error);
/// 1 for a step compiled for CUDA (device tensors), 0 otherwise.
ACT_CAPI_EXPORTED int actStepIsOnDevice(ActStep step);
/// 1 where a CUDA step's argument `pos` (actStepGetArgument's) is read by
/// its host code (a dropout seed), so the caller gives it in host memory;
/// 0 otherwise (a device pointer; every argument of a CPU step).
ACT_CAPI_EXPORTED int actStepIsArgumentOnHost(ActStep step, intptr_t pos);
/// A CUDA step's stream for its later runs (a CUstream, such as PyTorch's
/// torch.cuda.current_stream().cuda_stream, so the step orders with the
/// caller's work; null: one the runtime creates). A run on another stream
/// than the run before first waits for that one. Non-zero for a CPU step.
ACT_CAPI_EXPORTED int actStepSetStream(ActStep step, void *stream,
                                       char **error);
/// A CUDA step's later runs in CUDA graphs (`on` non-zero) or not: from
/// the second run on, a run is captured once and replayed with one launch
/// (docs/Running.md, "CUDA graphs"). Non-zero with why for a CPU step and
/// for one whose host code reads an argument (a dropout seed).
ACT_CAPI_EXPORTED int actStepSetGraphs(ActStep step, int on, char **error);
/// The device pool's bytes (live and cached blocks) now and at most.
/// A run's live peak is actRunGetPeakBytes, as on the CPU.
ACT_CAPI_EXPORTED void actGetDevicePoolBytes(int64_t *reserved,
                                             int64_t *peakReserved);
/// CUDA graphs of steps on device tensors (ACT_GPU_GRAPHS=1): calls
/// captured in a graph, graph launches (a captured call's and each
/// replay's), and captures the driver refused, so far in the process.
ACT_CAPI_EXPORTED void actGetGpuGraphCounts(int64_t *captures,
                                            int64_t *launches, int64_t *failed);

/// The arguments a run takes from the caller (an act.seeds argument is not
/// one: the run fills it from its step seed).
ACT_CAPI_EXPORTED intptr_t actStepGetNumArguments(ActStep step);
/// Argument `pos`'s kind, rank and shape (data null); non-zero if out of
/// range. The shape stays valid while the step lives.
ACT_CAPI_EXPORTED int actStepGetArgument(ActStep step, intptr_t pos,
                                         ActTensor *spec);
/// The position of the loss among a run's results.
ACT_CAPI_EXPORTED intptr_t actStepGetLossIndex(ActStep step);
/// Non-zero if the step has stochastic encodings (an act.seeds argument).
ACT_CAPI_EXPORTED int actStepHasSeeds(ActStep step);
/// The run-time widths of the step's #act.runtime_quant encodings (an
/// act.bits argument), by saved-tensor id (0: an id without one): their
/// count, and the widths into `bits` when it is not null (`capacity`
/// of them at most). 0 for a step without run-time widths.
ACT_CAPI_EXPORTED intptr_t actStepGetBits(ActStep step, int32_t *bits,
                                          intptr_t capacity);
/// Sets the widths of `count` saved tensors (`ids`, `bits`) for the next
/// runs, without recompiling. Non-zero and `*error` (free with actFree)
/// when an id takes no run-time width or a width is not one of its
/// encoding's choices; then no width changes.
ACT_CAPI_EXPORTED int actStepSetBits(ActStep step, const int64_t *ids,
                                     const int32_t *bits, intptr_t count,
                                     char **error);

/// Runs the step on `args` (numArgs of them, in actStepGetArgument's
/// order); `stepSeed` seeds its stochastic encodings (docs/Design.md
/// "Randomness": tensor id's seed is splitmix64(stepSeed + id)).
ACT_CAPI_EXPORTED ActRun actStepRun(ActStep step, const ActTensor *args,
                                    intptr_t numArgs, uint64_t stepSeed,
                                    char **error);
/// Split form: how many saved values the forward returns after its outputs
/// (0 for a joint step).
ACT_CAPI_EXPORTED intptr_t actStepGetNumSaved(ActStep step);
/// Split form, the two halves apart (act.Module runs them inside autograd):
/// the forward alone, arguments and seed as actStepRun. The run's results
/// are the forward's outputs, then its saved values as they cross to the
/// backward (encoded storage included).
ACT_CAPI_EXPORTED ActRun actStepRunForward(ActStep step, const ActTensor *args,
                                           intptr_t numArgs, uint64_t stepSeed,
                                           char **error);
/// The backward alone on `args`, the backward function's arguments: the
/// saved values (a forward run's results after its outputs, passed back as
/// it gave them: that run must live until this returns), then a tangent
/// per output the backward takes. Kinds and shapes are checked. The run's
/// results are the backward's (the gradients).
ACT_CAPI_EXPORTED ActRun actStepRunBackward(ActStep step, const ActTensor *args,
                                            intptr_t numArgs, char **error);
/// The backward of `forward` (a live actStepRunForward run of this step) on
/// `args` (numArgs: the backward's arguments): an argument whose data is
/// null is that run's saved value at its position, as it crossed (the
/// tangents must be given). With `releaseSaved` non-zero the run's saved
/// values are freed when the backward has run (its outputs stay).
ACT_CAPI_EXPORTED ActRun actStepRunBackwardOf(ActStep step, ActRun forward,
                                              const ActTensor *args,
                                              intptr_t numArgs,
                                              int releaseSaved, char **error);
/// Argument `pos` of the backward's (kind, rank, shape; data null), as
/// actStepGetArgument; non-zero if out of range or the step is joint.
ACT_CAPI_EXPORTED int actStepGetBackwardArgument(ActStep step, intptr_t pos,
                                                 ActTensor *spec);
ACT_CAPI_EXPORTED intptr_t actStepGetNumBackwardArguments(ActStep step);
/// GACT's sensitivity estimate in process (what `act-run --sensitivity`
/// does, without compiling the step again): `batches` holds numBatches
/// argument lists of numArgs tensors each (actStepRun's order; typically
/// the same parameters with each mini-batch's inputs and targets). The step
/// must have stochastic encodings; each tensor's gradient noise is redrawn
/// alone from `stepSeed`'s streams. Writes the profile file (docs/
/// Profile.md) that act-allocate-bits reads to `profilePath`; non-zero and
/// a message on failure.
ACT_CAPI_EXPORTED int actStepEstimateSensitivity(
    ActStep step, const ActTensor *const *batches, intptr_t numBatches,
    intptr_t numArgs, uint64_t stepSeed, const char *profilePath, char **error);
/// actStepEstimateSensitivity with the estimator named: "variance" (GACT's
/// seed re-draws, what actStepEstimateSensitivity measures) or "error" (each
/// tensor compressed alone against the step without compression, so that
/// its bias counts; the step's stochastic encodings must be
/// #act.runtime_quant with 32 among their widths, which are as they were
/// afterwards): act-run --sensitivity-estimator. `perTensorBatches` (0:
/// all): the per-tensor evaluations on the first that many batches only,
/// the others evaluated once for the gradient variance (act.compile's
/// adaptive loop measures the newest batch so).
ACT_CAPI_EXPORTED int actStepEstimateSensitivityWith(
    ActStep step, const char *estimator, const ActTensor *const *batches,
    intptr_t numBatches, intptr_t perTensorBatches, intptr_t numArgs,
    uint64_t stepSeed, const char *profilePath, char **error);
/// Few-bit codes' gradient error in process (what `act-run
/// --fewbit-sensitivity` does): `step` must be compiled from a graph without
/// encodings (the exact step). For every value its backward reads only
/// through an activation's derivative, the step with only that value as
/// `bits`-bit codes (1..4; the tables of act-insert-encode-decode's default
/// few-bit-range and few-bit-sigma) is compiled on the first call for these
/// bits and kept; each call runs them and the exact step on `batches` and
/// writes act-allocate-bits' #act.fewbit profile to `profilePath`
/// (docs/Profile.md). Non-zero and a message on failure.
ACT_CAPI_EXPORTED int
actStepEstimateFewBitSensitivity(ActStep step, unsigned bits,
                                 const ActTensor *const *batches,
                                 intptr_t numBatches, intptr_t numArgs,
                                 const char *profilePath, char **error);
/// The compression variance of the step's gradient on one argument list
/// (actStepRun's order) over `runs` (at least 2) step seeds drawn from
/// `stepSeed`, trace(Var[g]), what `act-run --variance-runs` measures: into
/// `variance`, and the squared norm of the mean gradient into `meanNorm2`.
/// With a `reference` step (compiled from the same graph without encodings,
/// taking the same arguments), also the mean squared error against its
/// gradient, mean_r ||g_r - g_ref||^2 (variance plus squared bias), into
/// `meanSquaredError` (act-run --reference); a null reference handle leaves
/// it untouched. Non-zero and a message on failure (a step without
/// stochastic encodings measured without a reference, for one).
ACT_CAPI_EXPORTED int
actStepMeasureVariance(ActStep step, const ActTensor *args, intptr_t numArgs,
                       unsigned runs, uint64_t stepSeed, ActStep reference,
                       double *variance, double *meanNorm2,
                       double *meanSquaredError, char **error);
/// The mean squared error of the step's gradient against `reference`'s
/// (actStepMeasureVariance's `meanSquaredError`) at each of `numSets` sets
/// of run-time widths, in one call: the reference runs once, every set
/// over the same `runs` step seeds drawn from `stepSeed`. Set k is
/// `setSizes[k]` (id, width) pairs, the sets' pairs one after the other in
/// `ids` and `bits`; each set starts from the widths the step had before
/// the call (ids a set leaves out keep them), and those are restored
/// after. Its error into `meanSquaredErrors[k]`. Non-zero and a message on
/// failure (an id without a run-time width or a width its encoding does
/// not allow: "set K of widths: ...").
ACT_CAPI_EXPORTED int
actStepMeasureErrors(ActStep step, const ActTensor *args, intptr_t numArgs,
                     unsigned runs, uint64_t stepSeed, ActStep reference,
                     intptr_t numSets, const intptr_t *setSizes,
                     const int64_t *ids, const int32_t *bits,
                     double *meanSquaredErrors, char **error);
/// Joint form: the step's results; split form: the forward's outputs, then
/// the backward's results.
ACT_CAPI_EXPORTED intptr_t actRunGetNumResults(ActRun run);
ACT_CAPI_EXPORTED int actRunGetResult(ActRun run, intptr_t pos,
                                      ActTensor *result);
/// The most bytes the run had allocated at once.
ACT_CAPI_EXPORTED int64_t actRunGetPeakBytes(ActRun run);
ACT_CAPI_EXPORTED void actRunDestroy(ActRun run);
/// Frees results [first, first + count) of `run` now (a forward run's saved
/// values once its backward has run, while its outputs stay in use); their
/// memory must no longer be read. Non-zero if out of range.
ACT_CAPI_EXPORTED int actRunReleaseResults(ActRun run, intptr_t first,
                                           intptr_t count);

/// The threads the compute kernels (matmuls, convolutions) use from now on;
/// n <= 0: every core. Encodings give the same bits on any count. Non-zero,
/// and nothing changed, for more than 256 (act::rt::kMaxThreads).
ACT_CAPI_EXPORTED int actSetNumThreads(int n);
ACT_CAPI_EXPORTED int actGetNumThreads(void);

/// Where steps compiled from now on keep their code between processes
/// (act/Execution/CodeCache.h): a step compiled before for this machine by
/// this build of act is loaded from there, not compiled; "" or NULL: no
/// cache. Until called: the ACT_CACHE_DIR environment variable, else none.
ACT_CAPI_EXPORTED void actSetCacheDir(const char *directory);
/// 1 if `step`'s code was loaded from the cache, 0 if it was compiled.
ACT_CAPI_EXPORTED int actStepIsFromCache(ActStep step);

ACT_CAPI_EXPORTED void actStringFree(char *string);

#ifdef __cplusplus
}
#endif

#endif /* ACT_C_STEP_H */
