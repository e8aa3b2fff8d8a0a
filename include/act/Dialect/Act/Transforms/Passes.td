//===- Passes.td - act passes ------------------------------*- tablegen -*-===//

#ifndef ACT_DIALECT_ACT_TRANSFORMS_PASSES_TD
#define ACT_DIALECT_ACT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ActInsertEncodeDecodePass
    : Pass<"act-insert-encode-decode", "::mlir::ModuleOp"> {
  let summary = "Store every saved activation encoded between its forward "
                "and backward uses";
  let description = [{
    Finds the training graphs of the module (joint form: the loss is the
    result marked `act.loss`, default result 0; split form: a forward
    function with `act.backward` and `act.num_saved`), and the values the
    forward pass saves for the backward pass. Each saved value gets an
    `act.encode` right after its last forward use and an `act.decode` right
    before its first backward use; every backward use reads the decoded value,
    so the full-precision value is dead after the encode. In the split form
    the encoded value crosses the function boundary and both signatures
    change. When an encoding is stochastic, the step (or split forward)
    function gets a last argument `%seeds: tensor<K x i64> {act.seeds}`
    indexed by id, and each encode reads its seed from it, so the runtime
    can re-draw any one tensor's noise.

    Under a lossy encoding, backward ops that read a float saved value only
    through a sign test (`arith.cmpf ogt|oge|une x, 0` in a linalg.generic,
    ReLU's backward) read an exact 1-bit `#act.mask` of it instead, which is
    all that is stored if nothing else in the backward reads the value.

    `policy=lossless` stores only what decodes bit for bit (Gist's
    lossless encodings): sign masks for the values read through sign
    tests, the narrow integers below, and `#act.sparse` (a bitmap and the
    nonzero values) for float values the backward needs in full whose zeros
    the IR makes structural (`hasStructuralZeros`: ReLU outputs, max pools
    of them, views and zero padding of those), at the density
    `sparse-density` for the static estimate. Other values stay as they
    are. With `float-format=F` (Gist's delayed precision reduction, lossy)
    the lossless policy also stores what it would store in full in the
    narrow float format F: `#act.sparse<format = F>` (the bitmap exact, the
    nonzero values in F) and `#act.float<format = F>` for the other float
    values; sign masks and narrow integers stay exact, as Gist leaves its
    Binarize data and CSR meta arrays.

    With `recompute-cost=R` (joint form), a value whose producer
    slice can be recomputed from the step's arguments, constants and the
    values that are stored anyway, at most R operations (a linalg op's
    iterations times its body's ops) per byte of the value, is not stored:
    `#act.recompute` (zero bytes), and the backward runs a copy of the slice
    before its first use, marked `act.recomputed` (GACT's and checkpointing's
    trade of compute for memory; bitwise the same value when what it reads
    is stored losslessly). Even without it (R = 0), a saved value that is
    only a reshape (`tensor.expand_shape`/`collapse_shape`) of a value
    stored anyway is re-derived from it in the backward, never stored (and
    encoded) a second time: the exporter saves softmax's output and the
    batch-matmul operand it is reshaped into, the same buffer.

    Integer saved values whose range the IR proves to be [0, 2^b) for a b
    below their width (argmax indices: the exporter's window-local max-pool
    indices) are stored as b-bit `#act.index` codes under any policy:
    lossless, 2 bits for a 2x2 pool's i64 indices.

    With `few-bit=B`, a float value that the backward reads only through
    one elementwise function phi(x) (GELU's, SiLU's, tanh's, ... derivative:
    found in the linalg.generic bodies, not in a list of activations) is
    stored as B-bit interval codes, `#act.fewbit`, with phi's optimal
    piecewise-constant table (Few-bit backward, docs/FewBit.md); the
    backward reads the table's value in place of phi(x). phi must flatten
    out at both ends of `few-bit-range` (a derivative, not a product's
    linear backward).

    Not encoded: function arguments (their memory exists anyway), tensors
    below `min-bytes`, the loss head (values computed after the last
    contraction or convolution of the forward pass: the logits' bias,
    softmax and loss computation, whose saved tensors GACT found the most
    sensitive) unless `encode-loss-head` (the policy's encoding) or
    `loss-head` (its own: `#act.float<format = bf16>` halves a language
    model's float32 logits and keeps their error far below a quantizer's
    bias),
    values also returned by the step, values whose first backward use comes
    before their last forward use, and tensors the encoding cannot hold.

    Before (joint form):
    ```mlir
    %h = linalg.matmul ins(%x, %w1 : ...) outs(...) -> tensor<64x256xf32>
    %y = linalg.matmul ins(%h, %w2 : ...) ...   // last forward use of %h
    ...
    %dw2 = linalg.matmul ins(%ht, %dy : ...) ... // first backward use of %h
    ```
    After (`policy=uniform encoding="#act.quant<bits = 4>"`):
    ```mlir
    %h = linalg.matmul ...
    %y = linalg.matmul ins(%h, %w2 : ...) ...
    %e = act.encode %h, id = 0 : tensor<64x256xf32>
           -> !act.encoded<tensor<64x256xf32>, #act.quant<bits = 4>>
    ...
    %hd = act.decode %e : ... -> tensor<64x256xf32>
    %dw2 = linalg.matmul ins(%hd ...) ...
    ```
  }];
  let dependentDialects = ["::mlir::act::ActDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"policy", "policy", "::mlir::act::EncodingPolicy",
           "::mlir::act::EncodingPolicy::Uniform",
           "which encoding each saved value gets",
           [{::llvm::cl::values(
             clEnumValN(::mlir::act::EncodingPolicy::None, "none",
                        "encode nothing (the IR is left unchanged)"),
             clEnumValN(::mlir::act::EncodingPolicy::Uniform, "uniform",
                        "the same `encoding` for every saved value"),
             clEnumValN(::mlir::act::EncodingPolicy::Lossless, "lossless",
                        "only bitwise-lossless encodings (Gist): sign masks, "
                        "narrow integers, sparse storage of values with "
                        "structural zeros"))}]>,
    Option<"encoding", "encoding", "std::string",
           "\"#act.quant<bits = 4>\"",
           "the encoding attribute of the uniform policy, e.g. "
           "'#act.quant<bits = 2, group = 128>' or '#act.float<format = bf16>'">,
    Option<"sparseDensity", "sparse-density", "double", "0.5",
           "the fraction of nonzero elements the static estimate assumes "
           "for values with structural zeros (ReLU outputs) under the "
           "lossless policy; the run time stores what the data needs">,
    Option<"floatFormat", "float-format", "std::string", "\"\"",
           "under the lossless policy, store the float values it keeps in "
           "full in this narrow format (Gist's delayed precision reduction: "
           "f16, bf16, fp10, e4m3, e5m2); sparse storage keeps its bitmap "
           "exact and stores its nonzeros in it (default: none, lossless)">,
    Option<"recomputeCost", "recompute-cost", "double", "0",
           "recompute in the backward, instead of storing, every value whose "
           "recomputation from the step's arguments and the stored values "
           "costs at most this many operations per byte of it "
           "(#act.recompute, zero bytes; joint form); 0: only reshapes of "
           "values stored anyway">,
    Option<"minBytes", "min-bytes", "int64_t", "1024",
           "leave saved tensors smaller than this many bytes unencoded">,
    Option<"encodeLossHead", "encode-loss-head", "bool", "false",
           "also encode the loss head's saved values">,
    Option<"lossHead", "loss-head", "std::string", "\"\"",
           "the encoding of the loss head's saved values under the uniform "
           "and lossless policies, e.g. '#act.float<format = bf16>' (default: none, they "
           "stay as they are)">,
    ListOption<"includeIds", "include", "int64_t",
               "encode only these saved-value ids (default: all)">,
    ListOption<"excludeIds", "exclude", "int64_t",
               "never encode these saved-value ids">,
    Option<"fewBits", "few-bit", "unsigned", "0",
           "store values the backward reads only through an elementwise "
           "function phi(x) (an activation's derivative) as interval codes "
           "of this many bits (1-8) whose decode is phi's optimal "
           "piecewise-constant table (Few-bit backward); 0: off">,
    ListOption<"fewBitRange", "few-bit-range", "double",
               "A,B: the range the few-bit tables are optimal on "
               "(default -10,10)">,
    Option<"fewBitSigma", "few-bit-sigma", "double", "1.0",
           "weight the few-bit tables' error by the density of "
           "N(0, sigma^2) (where pre-activations lie); 0: uniform weight on "
           "the range (the paper's Table 3)">,
  ];
}

def ActAllocateBitsPass : Pass<"act-allocate-bits", "::mlir::ModuleOp"> {
  let summary = "Choose each saved tensor's quantization bits from measured "
                "sensitivities (GACT)";
  let description = [{
    Reads sensitivity profiles (`act-run --sensitivity`, schema in
    docs/Profile.md) measured on this graph, one per encoding family
    (`profile=quant.json,division.json`: the graph measured once with
    #act.quant and once with #act.division), and chooses for every saved
    tensor one option: a measured family at a width b in `bits` (default
    1, 2, 4, 8, 32; 32 = f32, not compressed) to minimize the predicted
    compression variance sum_l c_l^family S(b_l), S(b) = (2^b - 1)^-2,
    subject to sum_l W_l <= average-bits * sum_l D_l (GACT Eq. 4), where W_l
    counts element data: b_l D_l for #act.quant, the residual's codes plus
    the block averages for #act.division (per-group metadata is not
    counted). `solver=exact` (default) solves this multiple-choice knapsack
    by branch and bound and proves optimality; `solver=greedy` uses
    ActNN/GACT's greedy. Both objectives are reported. Each tensor then gets
    its chosen encoding (`#act.quant<bits = b_l, group = G>`, the measured
    `#act.division` at b_l, or stays in f32), placed like
    act-insert-encode-decode places encodings.

    Few-bit codes are a family too (`act-run --fewbit-sensitivity`): a
    tensor the backward reads only through an activation's derivative
    phi(x) can be stored as b-bit interval codes (b in `bits`, at most 4)
    whose decode is phi's optimal table (act/Analysis/FewBit.h, with
    `few-bit-range` and `few-bit-sigma` as measured). Its error is a bias,
    not a variance: the profile gives c = ||g_fewbit - g||^2 / L(B), the
    squared gradient error of the B-bit table per unit of the table's
    error, and the option costs c * L(b) with W = b D_l; the measured table
    must be the one this pass computes at B (else an error).

    With `recompute-cost=R` (as act-insert-encode-decode's), the values
    whose producer slices cost at most R operations per byte are
    recomputed in the backward from what is stored (#act.recompute, 0 bytes)
    and the allocation is over the others; the budget stays average-bits
    times the elements the step would store without R (recomputed values
    count at 0 bits), so the bits they free go to the stored tensors.
    Measure the profile on the graph with the same recompute-cost (the
    stored tensors' sensitivities then include what is recomputed from
    them). Not with a few-bit profile (a recomputed value may read the
    tensor the codes would replace).

    With `runtime-bits`, a measured tensor whose choice is #act.quant or
    f32 gets `#act.runtime_quant<[bits...], bits = b_l>` instead: the step
    compiled once takes every later allocation of the same families as
    new contents of its `act.bits` argument, without recompiling (GACT's
    adaptive loop); the report marks those tensors `"runtime": true`.

    The allocation's table (each tensor's sensitivity and bits, both
    objectives, the predicted variance) goes to stderr (or `table`), its
    JSON to `report`.

    Run it on the graph before act-insert-encode-decode. A tensor missing
    from the profile gets `default-bits` and a warning; loss-head tensors are
    allocated only when the profile has them, and otherwise get `loss-head`'s
    encoding (default: none) outside the budget. A profile of a different
    graph (other function, other saved values: the fingerprint) is an error.
    When the predicted compression variance exceeds 10% of the profile's
    gradient variance (GACT's rule), a warning names the tensors that
    contribute most.
  }];
  let dependentDialects = ["::mlir::act::ActDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    ListOption<"profileFiles", "profile", "std::string",
               "the sensitivity profiles (required): one per encoding "
               "family measured (act-run --sensitivity)">,
    Option<"averageBits", "average-bits", "double", "4.0",
           "the budget: average bits per element over the allocated tensors">,
    Option<"solver", "solver", "::mlir::act::BitSolver",
           /*default=*/"::mlir::act::BitSolver::Exact",
           "how the knapsack is solved",
           [{::llvm::cl::values(
             clEnumValN(::mlir::act::BitSolver::Exact, "exact",
                        "branch and bound with an LP bound: optimal"),
             clEnumValN(::mlir::act::BitSolver::Greedy, "greedy",
                        "ActNN/GACT's greedy"))}]>,
    ListOption<"bitChoices", "bits", "unsigned",
               "the allowed bit widths (default 1,2,4,8,32)">,
    Option<"group", "group", "int64_t", "256",
           "quantization group size of the chosen encodings">,
    Option<"stats", "stats", "::mlir::act::StatFormat",
           /*default=*/"::mlir::act::StatFormat::F32",
           "how the chosen #act.quant encodings store their group statistics",
           [{::llvm::cl::values(
             clEnumValN(::mlir::act::StatFormat::F32, "f32",
                        "two f32 a group"),
             clEnumValN(::mlir::act::StatFormat::BF16, "bf16",
                        "two bf16 a group (minimum rounded down, scale up)"))}]>,
    Option<"defaultBits", "default-bits", "unsigned", "8",
           "bits of a tensor the profile does not have">,
    Option<"minBytes", "min-bytes", "int64_t", "1024",
           "leave saved tensors smaller than this many bytes unencoded">,
    Option<"reportFile", "report", "std::string", "\"\"",
           "write the allocation as JSON to this file">,
    Option<"tableFile", "table", "std::string", "\"\"",
           "write the table to this file ('-' for stdout; default stderr)">,
    Option<"lossHead", "loss-head", "std::string", "\"\"",
           "the encoding of the loss head's saved values the profile does "
           "not measure (outside the budget), as act-insert-encode-decode's "
           "loss-head (default: none, they stay as they are)">,
    Option<"recomputeCost", "recompute-cost", "double", "0",
           "recompute in the backward, instead of storing, every value whose "
           "producer slice costs at most this many operations per byte, as "
           "act-insert-encode-decode's recompute-cost (joint form); they "
           "take 0 bits of the budget, which stays average-bits times the "
           "elements stored without it">,
    Option<"runtimeBits", "runtime-bits", "bool", "false",
           "place #act.runtime_quant (widths: `bits`) where the choice is "
           "#act.quant or f32, so that a later allocation only changes the "
           "step's act.bits argument">,
    ListOption<"fewBitRange", "few-bit-range", "double",
               "A,B: the range of the few-bit tables (as measured; default "
               "-10,10)">,
    Option<"fewBitSigma", "few-bit-sigma", "double", "1.0",
           "the few-bit tables' weight, as measured (N(0, sigma^2); 0: "
           "uniform)">,
  ];
}

def ActMemoryReportPass : Pass<"act-memory-report", "::mlir::ModuleOp"> {
  let summary = "Report saved activations and the step's peak memory";
  let description = [{
    For every training graph of the module: each saved value's id, producer,
    shape, element type, bytes before and after encoding, encoding and
    status; the totals and the compression ratio of the saved activations;
    and a peak-memory estimate of the whole step from a static liveness
    analysis over program order, with and without the encodings (the model
    is in docs/MemoryReport.md). The table goes to stderr (or `table`), the
    JSON (schema in docs/MemoryReport.md) to `json`. The IR is unchanged.
  }];
  let options = [
    Option<"jsonFile", "json", "std::string", "\"\"",
           "write the report as JSON to this file ('-' for stdout)">,
    Option<"tableFile", "table", "std::string", "\"\"",
           "write the table to this file ('-' for stdout; default stderr)">,
  ];
}

def ActForwardOnlyPass : Pass<"act-forward-only", "::mlir::func::FuncOp"> {
  let summary = "Keep only the listed results of a step (default: the "
                "loss): its backward, and every saved value, go away";
  let description = [{
    A joint training step reduced to the results at positions `keep`
    (default: 0, the loss): the function returns only those, and the ops
    that only the dropped results needed (the gradients' backward) are
    erased, so nothing is saved for a backward any more. act.compile's
    step under `torch.no_grad()` (an evaluation loss, BatchNorm's running
    statistics still updated in training mode as eager updates them) is
    the joint step through this pass with the loss, the updated buffers
    and the recorded values kept.

    Before (`keep=0`):
    ```mlir
    func.func @step(%x: tensor<4xf32>) -> (f32 {act.loss}, tensor<4xf32>) {
      %loss = ...(%x)
      %grad = ...(%x, saved values)
      return %loss, %grad : f32, tensor<4xf32>
    }
    ```
    After:
    ```mlir
    func.func @step(%x: tensor<4xf32>) -> (f32 {act.loss}) {
      %loss = ...(%x)
      return %loss : f32
    }
    ```
    Only functions named by `function` (default: every public function
    with a body) change; a position past the results is an error.
  }];
  let options = [
    ListOption<"keep", "keep", "int64_t",
               "positions of the results kept (default: 0)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "the function to reduce (default: every public one)">,
  ];
}

def ActHoistEncodesPass : Pass<"act-hoist-encodes", "::mlir::func::FuncOp"> {
  let summary = "Encode each saved value as soon as it is computed";
  let description = [{
    Moves every `act.encode` of the function's top-level block up to just
    after the last definition of its operands (the saved value, the seed),
    encodes that follow the same op keeping their order.
    `act-insert-encode-decode` places an encode after the value's last
    forward use; encoded first, the value's last forward reader (a GELU, a
    bias add) is its last reader and `act-in-place` lets it write into
    the value's buffer. The storage, a fraction of the value, lives a few
    ops longer.
  }];
}
def ActSinkToUsersPass : Pass<"act-sink-to-users", "::mlir::func::FuncOp"> {
  let summary = "Move tensor ops down to their first user when that never "
                "raises the live bytes";
  let description = [{
    A memory-aware schedule of the function's top-level block, on tensors:
    from the bottom up, an op free of memory effects (linalg, tensor,
    arith, a lowered decode) moves to just before its first user when (1)
    its results (static tensors) hold more bytes than the operands it
    would keep alive longer (captured values included), so every program
    point it crosses holds fewer live bytes, and (2) what the crossed ops
    allocate and is still live at its new place holds no more bytes than
    what dies among them, so its own point does not rise either (a pad
    does not move below the fill of its convolution's output). The
    exported backward computes a linear layer's input gradient before its
    weight gradient; moved down to the activation's backward that reads it,
    the input gradient is no longer live beside the decoded activation the
    weight gradient reads. Scalars, dynamic shapes and ops whose users are
    all in nested regions of it stay where they are.
  }];
}
def ActQuantizeComputePass
    : Pass<"act-quantize-compute", "::mlir::ModuleOp"> {
  let summary = "Quantize the operands of contractions and convolutions "
                "(FracTrain) and report the effective MACs";
  let description = [{
    Compute quantization, FracTrain's axis (papers/fractrain.txt): in every
    joint-form training graph, each contraction and convolution (linalg ops
    that are contractions or convolutions: matmuls, batch matmuls, the
    convolutions of the forward and their gradients) reads its two operands
    through `act.fake_quant`: at `forward-bits` in the forward pass (weights
    and activations) and in the backward at `backward-bits` for operands
    computed by the backward (gradients) and `forward-bits` for forward
    values it reads (weights, saved activations, traced through views,
    transposes, padding and act.decode). Everything else (BatchNorm, the
    loss, the elementwise ops) stays in float. Composes with the encodings:
    run it before or after act-insert-encode-decode.

    Forward operands round to the nearest level. Gradients round
    stochastically (unbiased, as in SBM, the 8-bit training FracTrain builds
    on, whose gradient quantizer adds uniform noise before rounding; nearest
    rounding of 8-bit gradients costs the character-level language model of
    docs/Training.md 20% of its validation loss): each gradient's
    act.fake_quant takes a new slot of the step's `act.seeds` argument
    (added, or widened, as the encodings' seeds) and a Philox id from 2^32
    on, apart from every encoding's stream; the runtime draws new seeds per
    step. `stochastic-gradients=false` rounds them to the nearest too.

    It prints FracTrain's cost model (Sec. 4.1): per op its MACs (a linalg
    op's iterations), the bits of its two operands and its effective MACs,
    MACs * bits_a / 32 * bits_b / 32; the totals, and the saving against
    fp32 (32 x 32 bits) and against a fixed 8-bit step (forward and backward
    at 8 bits). `report=FILE` writes the same as JSON (what act.train's PFQ
    schedule reads). `forward-bits` or `backward-bits` 32 leaves that side in
    float (counted at 32 bits).
  }];
  let dependentDialects = ["::mlir::act::ActDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"forwardBits", "forward-bits", "unsigned", "8",
           "bits of the forward's operands (weights, activations): 1-32">,
    Option<"backwardBits", "backward-bits", "unsigned", "8",
           "bits of the backward's gradients: 1-32">,
    Option<"reportFile", "report", "std::string", "\"\"",
           "write the cost report as JSON to this file">,
    Option<"stochasticGradients", "stochastic-gradients", "bool", "true",
           "round the backward's gradients stochastically (SBM); false: to "
           "the nearest, as the forward's operands">,
  ];
}

#endif // ACT_DIALECT_ACT_TRANSFORMS_PASSES_TD
