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
    are.

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
    below `min-bytes`, the loss head unless `encode-loss-head` (values
    computed after the last contraction or convolution of the forward pass:
    the logits' bias, softmax and loss computation, whose saved tensors GACT
    found the most sensitive),
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

    The allocation's table (each tensor's sensitivity and bits, both
    objectives, the predicted variance) goes to stderr (or `table`), its
    JSON to `report`.

    Run it on the graph before act-insert-encode-decode. A tensor missing
    from the profile gets `default-bits` and a warning; loss-head tensors are
    allocated only when the profile has them. A profile of a different
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
    Option<"defaultBits", "default-bits", "unsigned", "8",
           "bits of a tensor the profile does not have">,
    Option<"minBytes", "min-bytes", "int64_t", "1024",
           "leave saved tensors smaller than this many bytes unencoded">,
    Option<"reportFile", "report", "std::string", "\"\"",
           "write the allocation as JSON to this file">,
    Option<"tableFile", "table", "std::string", "\"\"",
           "write the table to this file ('-' for stdout; default stderr)">,
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

def ActEarlyDeallocPass : Pass<"act-early-dealloc", "::mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    The ownership-based buffer deallocation pipeline frees a block's buffers
    at the end of the block. In a training step (one block) that keeps every
    activation alive for the whole step, which defeats storing saved
    activations encoded. This pass moves each unconditional `memref.dealloc`
    up to right after the last op of its block that uses the buffer or any
    view of it (`BufferViewFlowAnalysis`), the placement Gist's liveness
    analysis assumes. Buffers used in other blocks stay where they are.

    ```mlir
    %a = memref.alloc() : memref<64xf32>
    linalg.generic ... outs(%a ...)
    "use"(%a) ...          // last use
    ... long backward pass ...
    memref.dealloc %a
    // becomes
    "use"(%a) ...
    memref.dealloc %a
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ActReleaseArgumentsPass
    : Pass<"act-release-arguments", "::mlir::func::FuncOp"> {
  let summary = "Let the caller free a function's arguments after their "
                "last use";
  let description = [{
    A split step's backward receives the saved activations as arguments,
    which the ownership-based deallocation never frees (the caller owns
    them): the whole set stays allocated until the backward returns, where
    the joint step frees each after its last use. In a function marked
    `act.release_arguments` (a unit attribute; act's step engine marks the
    backward it runs for act.Module), this pass inserts, after the last op
    of the entry block that uses a memref argument or any view of it
    (`BufferViewFlowAnalysis`), a call `act_release_argument(index)`: act's
    runtime then drops the caller's reference to that argument, which frees
    it when nothing else holds it. Arguments a result aliases, or used
    inside `async.execute` (which may still be running), are left alone.
    Runs after bufferization, act-early-dealloc and the passes that match a
    buffer dying right after its reader (act-pool-in-place, the kernels'
    conversion), whose patterns its calls would interrupt.

    ```mlir
    func.func @bwd(%s: memref<64xf32>, %t: memref<f32>) -> memref<64xf32>
        attributes {act.release_arguments} {
      "use"(%s) ...          // last use of %s
      // becomes: "use"(%s); call @act_release_argument(%c0)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def ActChunkBuffersToStackPass
    : Pass<"act-chunk-buffers-to-stack", "::mlir::func::FuncOp"> {
  let summary = "Temporaries of parallel loop bodies on the stack";
  let description = [{
    Each iteration of an `scf.forall` or `scf.parallel` (the chunks of an
    encode or decode) may run on another thread; its temporaries (a chunk's
    per-group statistics, a decoded tile) are `memref.alloc`s of the body.
    This pass turns every static-shaped `memref.alloc` of such a body whose
    uses all lie in the body (none yielded) and whose size is at most
    `max-bytes` into a `memref.alloca`: no chunk calls the allocator (whose
    counters every thread would share), and nothing is left for the
    deallocation pipeline to free inside the parallel loop (it would not:
    any other heap buffer of such a body, dynamic, escaping or larger than
    `max-bytes`, is an error rather than a leak per iteration). Run on
    buffers, before deallocation; act-hoist-stack-buffers then gives each
    task one set. Part of act-cpu-pipeline{threads > 1}.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"65536",
           "largest temporary moved to the stack">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ActHoistStackBuffersPass
    : Pass<"act-hoist-stack-buffers", "::mlir::func::FuncOp"> {
  let summary = "Move a loop body's static stack buffers to the function's "
                "entry";
  let description = [{
    A `memref.alloca` inside an `scf.for` body allocates afresh every
    iteration and is freed only when the function returns: over a loop of
    many iterations the stack grows with the trip count. This pass moves
    each static-shaped `memref.alloca` whose uses all lie in its own loop
    body (none yielded, none a terminator's operand) to the start of the
    function, where one buffer serves every iteration in turn. It is what
    `buffer-loop-hoisting` does for allocas, but safe after deallocations
    exist (that pass would hoist a heap buffer and leave its dealloc in the
    loop) and it never crosses `scf.forall` / `scf.parallel` (iterations
    that run at once). act-cpu-pipeline{threads > 1} runs it on the
    functions `async-parallel-for` outlines: the per-chunk statistics of an
    encode, promoted to the stack, are then allocated once per task.

    ```mlir
    scf.for %i = %lo to %hi step %c1 {
      %t = memref.alloca() : memref<1xf32>
      ... uses of %t ...
    }
    // becomes
    %t = memref.alloca() : memref<1xf32>
    scf.for %i = %lo to %hi step %c1 {
      ... uses of %t ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ActInPlacePass : Pass<"act-in-place", "::mlir::func::FuncOp"> {
  let summary = "Elementwise ops and convolutions write into an input that "
                "dies there";
  let description = [{
    Gist's in-place computation, through bufferization: an elementwise
    `linalg.generic` (parallel iterators) whose init is a `tensor.empty`
    it never reads takes as init instead an input of the same type and
    indexing map whose value has no later use, and its payload reads that
    input as the init (so tiling reads and writes the same slice). One-Shot
    Bufferize then writes the result into that input's buffer instead of
    allocating one:
    ReLU's and BatchNorm's backward, the GELU derivative times the
    gradient, the residual adds, each reuse the buffer of the tensor they
    consume, so the backward holds one full-size temporary fewer at a time.

    ```mlir
    %g = linalg.generic ... outs(%e0 : tensor<16x32xf32>)  // %g dies below
    %e = tensor.empty() : tensor<16x32xf32>
    %r = linalg.generic {maps = [id, id, id]} ins(%g, %mask : ...) outs(%e : ...)
    // becomes
    %r = linalg.generic {maps = [id, id]} ins(%mask : ...) outs(%g : ...)
    ```

    Convolutions too: a stride-1 `linalg.conv_2d_nchw_fchw` whose output
    has its (unpadded) input's shape, as between two layers of equal
    channels with "same" padding, and whose input dies there (zero-padded
    by `tensor.pad` or by `tensor.insert_slice` into a zero fill, as the
    exported backward pads) becomes a loop over chunks of the batch
    (`chunk-bytes` of input each), each chunk padded on its own and its
    output inserted over its input chunk:

    ```mlir
    %y = scf.for %i = %c0 to %c128 step %c4 iter_args(%acc = %x) {
      %c = tensor.extract_slice %acc[%i, 0, 0, 0] [4, 32, 32, 32] [1, 1, 1, 1]
      %p = tensor.pad %c low[0, 0, 1, 1] high[0, 0, 1, 1] { ... 0.0 }
      %o = linalg.conv_2d_nchw_fchw ins(%p, %w) outs(%zeros)
      %n = tensor.insert_slice %o into %acc[%i, 0, 0, 0] [4, 32, 32, 32] [1, 1, 1, 1]
      scf.yield %n
    }
    ```

    (A loop, not the chunks unrolled: unrolled, the chains of insert_slices
    grew with the batch, and one-shot bufferization's analysis of them with
    its square: 124 of 148 s of a Fashion-MNIST CNN's compile at batch
    128.)

    A chunk is copied (padded) before its output is written, so One-Shot
    Bufferize writes every output chunk into the input's buffer: the
    forward's convolution and the backward's input gradient hold one
    full-size tensor and a chunk, not two full tensors (what set the VGG
    CNN's peak). Readers of the input after the convolution that need
    nothing computed after it but their own zero-filled init (a conv bias's
    gradient, summed from the output gradient) move before it first. Each
    image is computed as before. A convolution not
    rewritten so (its output has fewer channels) whose input is padded by
    `tensor.insert_slice` into a zero fill reads a `tensor.pad` instead:
    bufferized, a copy that convert-linalg-to-act-kernels drops by reading
    the unpadded buffer with padding, where empty-tensor elimination had
    computed the gradient into the larger padded buffer.

    Inputs that are function arguments (the caller's tensors), constants
    or slices of other tensors are never chosen; a reshape
    (`tensor.expand_shape`/`collapse_shape`) is, when its source dies too. Whether
    the write really lands in place stays One-Shot Bufferize's decision,
    which copies on a conflict, so the rewrite cannot change a result.
  }];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"131072",
           "Largest input chunk of a convolution computed in place (the "
           "batch is split into the largest divisor whose images fit; "
           "its padded copy and its kernel's blocked copies are live "
           "beside the step's tensors)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def ActPoolInPlacePass : Pass<"act-pool-in-place", "::mlir::func::FuncOp"> {
  let summary = "A max pool whose input dies there writes into the input's "
                "buffer, which then gives back its tail";
  let description = [{
    Gist's in-place idea for the one op it cannot reach through
    bufferization: a window reduction (the exporter's 2-d max pool) whose
    windows tile its input exactly (stride = window, no padding) reads a
    4 x larger input than it writes, and that input usually dies there (the
    VGG's first pool reads the 4 MiB BatchNorm/ReLU output at batch 32 and
    writes 1 MiB: with the encodings live, that moment was the step's
    peak).

    After bufferization (memrefs, after `act-early-dealloc`), such a
    `linalg.generic` (loops `[parallel x 4, reduction x 2]`, input read
    through `(d0, d1, d2 * k0 + d4, d3 * k1 + d5)` with a `k0 x k1` window,
    outputs through `(d0, d1, d2, d3)`, each output a fresh buffer whose
    only earlier use is a `linalg.fill` of its initial value) whose input
    is a buffer of the block with no use after it but its `memref.dealloc`
    becomes a loop nest over the outputs in row-major order that reduces
    each window in registers (the payload as it was, from the fills'
    values) and stores the first output (of the input's element type) at
    its row-major place in the input's buffer. That place is never after
    an element a later window still reads, so the loops read every input
    element before it is overwritten. Then `memref.realloc` shrinks the
    buffer to the output's size and the output is that buffer:

    ```mlir
    linalg.fill ins(%ninf : f32) outs(%out : memref<32x32x16x16xf32>)
    linalg.generic {...} ins(%x, %window : memref<32x32x32x32xf32>, ...)
        outs(%out, %idx : memref<32x32x16x16xf32>, memref<32x32x16x16xi8>)
    memref.dealloc %x : memref<32x32x32x32xf32>
    // becomes
    scf.for %n ... scf.for %ow ... { (2 x 2 loop with the payload); stores }
    %flat = memref.collapse_shape %x [[0, 1, 2, 3]] : ... into memref<1048576xf32>
    %small = memref.realloc %flat : memref<1048576xf32> to memref<262144xf32>
    %out = memref.expand_shape %small [[0, 1, 2, 3]] output_shape [32, 32, 16, 16] : ...
    ```

    The results are those of the generic, bit for bit (the same payload
    over the window in the same order). Whether the tail really goes back
    to the allocator is `act-shrink-reallocs`'s lowering: the CPU pipeline
    runs this pass only where it allocates through act's runtime
    (`count-allocations`).
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ActShrinkReallocsPass : Pass<"act-shrink-reallocs", "::mlir::ModuleOp"> {
  let summary = "memref.realloc to a smaller static size as a call of act's "
                "runtime, which gives the tail back in place";
  let description = [{
    Upstream's `expand-realloc` lowers a `memref.realloc` that shrinks to
    a cast of the same buffer: its memory stays allocated. A buffer of act's
    allocation hooks (`_mlir_memref_to_llvm_aligned_alloc`) can do better:
    this pass replaces each `memref.realloc` of a static 1-d buffer with
    identity layout to a smaller static size by a call
    `act_shrink_buffer(aligned pointer, bytes)` (act's runtime shrinks the
    block where it is, glibc's `realloc` of a heap block, and counts the
    tail as freed) and a `memref.reinterpret_cast` of the source, so the
    buffer keeps its address. Other reallocs are left to `expand-realloc`.

    ```mlir
    %small = memref.realloc %flat : memref<1048576xf32> to memref<262144xf32>
    // becomes
    %p = memref.extract_aligned_pointer_as_index %flat : memref<1048576xf32> -> index
    func.call @act_shrink_buffer(%p64, %c1048576_i64) : (i64, i64) -> ()
    %small = memref.reinterpret_cast %flat to offset: [0], sizes: [262144], strides: [1]
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def ActFuseElementwisePass
    : Pass<"act-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Compute an elementwise op read by one other op inside it";
  let description = [{
    Upstream's producer-consumer fusion of `linalg.generic` ops on tensors
    (`linalg::populateElementwiseOpsFusionPatterns`), for producers with a
    single use and nothing else: no reshape propagation, no constant
    folding (upstream's `linalg-fuse-elementwise-ops` does both, and its
    reshape propagation moved the exported steps' contractions off the
    kernels: 6-10x slower steps). The fused temporary is never
    materialized: softmax's backward `sum(dP * P)` reads dP and P in the
    reduction instead of holding a third attention-sized tensor. A
    producer with several readers is recomputed inside each of them when
    every reader can fuse it and the tensors it reads would not live
    longer in total than its result (BatchNorm's normalized input, read
    by two ops of its backward).

    A fusion whose result would read more than `max-operands` tensors is
    left out: an unrolled recurrence's backward otherwise fuses the
    elementwise chains of all its timesteps into loop nests reading
    hundreds of buffers, whose code generation dominated compile time
    (docs/benchmarks.md, "Repeated code").
  }];
  let options = [
    Option<"maxOperands", "max-operands", "int64_t", /*default=*/"16",
           "largest number of operands (inputs and outputs) of a fused "
           "generic; 0: no limit">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
}
def ActChunkBatchPass : Pass<"act-chunk-batch", "::mlir::func::FuncOp"> {
  let summary = "Compute batch-parallel regions one chunk of the batch at a "
                "time";
  let description = [{
    Linalg ops on tensors that all treat dimension 0 of every tensor
    operand as one parallel batch (their loop 0 indexes it and nothing
    else: `linalg.batch_matmul`, `linalg.transpose` keeping it first,
    `linalg.fill`, elementwise ops and reductions over the other
    dimensions, per-element decodes), connected by the values they pass,
    form a region. When a tensor the region keeps to itself is larger than
    `chunk-bytes`, the region is computed after its last op, once per chunk
    of the batch (the largest divisor whose share of that tensor fits):
    every tensor it reads from outside is sliced, its ops are cloned on the
    slices (a `linalg.index` of loop 0 offset by the chunk's first index),
    and only the values read outside it are assembled whole, by
    `tensor.insert_slice` into a `tensor.empty` (into which
    empty-tensor-elimination then has each chunk computed).

    The attention backward is such a region: dP = dO V^T, dS = P (dP -
    rowsum(dP P)), dQ = dS K, dK = dS^T Q over batch x heads. Its
    attention-sized dP and dS then exist one chunk at a time (the way a
    fused attention backward keeps one block), and the decoded K, Q and P,
    decoded per element for their batch-matmul readers, one chunk at a time
    too. An op whose value is read outside the region before the region's
    last op stays where it is. Each batch element is computed as before:
    the same results, so lossless encodings stay bitwise identical. Up to
    `max-unrolled` chunks are written out one after the other (static
    offsets); more are one `scf.for` over the chunks carrying the
    assembled values, so that the step does not grow with the batch.
  }];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"131072",
           "Largest share of a region's internal tensor one chunk may hold">,
    Option<"maxUnrolled", "max-unrolled", "int64_t", /*default=*/"4",
           "Most chunks written out one after the other; more chunks are a "
           "loop">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ActChunkInPassesPass
    : Pass<"act-chunk-in-passes", "::mlir::func::FuncOp"> {
  let summary = "Compute a backward stage one chunk of the batch at a time, "
                "in one loop per level of batch reductions";
  let description = [{
    A backward stage starts where an op spreads a small batch tensor into
    one at least twice as large: a max pool's backward (the pooled
    gradient into the block's), an upsampling's, a linear layer's input
    gradient. The ops after it that compute along the same batch join its
    region, in block order: elementwise ops and reductions over the other
    dimensions, convolutions, matmuls and transposes that keep the batch
    (any dimension of it, as long as one loop runs over it and reads each
    operand's batch plainly), zero paddings, reshapes keeping it as a
    dimension of its own, and reductions over the batch (BatchNorm's sums,
    a weight gradient: a convolution whose reduction channel is the batch).
    The region stops at a waist, a batch value at most half its largest
    (the previous stage's input gradient), and at ops that read its values
    otherwise.

    Only the widest regions are chunked (their largest tensor as large as
    the largest of any region in the function; `all-regions`: every one):
    the backward's peak is where its gradients are largest, and chunking a
    narrower stage costs its recomputation without lowering the step's
    peak (measured on the VGG-style CNN: its other two stages chunked too,
    the step 30 % slower and its peak higher; docs/benchmarks.md).

    The region is then computed after its last op by loops over chunks of
    the batch (`scf.for`, chunks of the largest divisor of the batch whose
    share of the largest tensor the region keeps to itself fits
    `chunk-bytes`). A batch reduction sums chunk by chunk into its loop's
    carried value; an op that reads a reduction's result (BatchNorm's
    input gradient reads both sums) is computed by the next loop, which
    recomputes the batch-parallel ops it needs from the stage's input:
    one loop per level, at most `max-passes` (an op that would need more
    is left outside, and the values it reads are assembled whole). Only
    the values read outside the region are assembled whole, chunk by
    chunk; ops outside it that read its sums move after the loop that
    completes them. Producers of the region's inputs that nothing else
    reads and that only compute element by element (a per-element decode,
    the padding and transpose of a weight gradient's input) run inside the
    loops too, so a decoded activation exists a chunk at a time.

    The VGG-style CNN's first block: its 2 MiB gradients (the max pool's,
    the ReLUs', BatchNorm's, the convolution's input gradient) exist a
    chunk at a time; the price is the second convolution's input gradient
    and the decodes computed again in the later loops (three loops: the
    second BatchNorm's sums, then its input gradient, the weight gradient
    and the first BatchNorm's sums, then the first's input gradient and
    weight gradient). Sums over the batch are taken chunk by chunk
    (float32 reassociation), so a region is chunked only where it decodes
    a lossy encoding element by element (a generic without inputs, as
    convert-act-to-linalg{decode-into-consumers} builds): steps without
    encodings or with lossless ones stay bitwise as they were. Nor is one
    chunked when the values it reads from outside and that die inside it
    (held until its loops) outweigh the largest tensor it keeps from
    existing whole.
  }];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"262144",
           "Largest share of a region's internal tensor one chunk may hold">,
    Option<"maxPasses", "max-passes", "int64_t", /*default=*/"3",
           "Most loops over the batch (levels of batch reductions) one "
           "region takes">,
    Option<"allRegions", "all-regions", "bool", /*default=*/"false",
           "Chunk every region, not only those whose largest tensor is as "
           "large as the widest region's">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}
def ActTileDecodedConvolutionsPass
    : Pass<"act-tile-decoded-convolutions", "::mlir::func::FuncOp"> {
  let summary = "Decode a weight gradient's input one chunk of the batch at "
                "a time";
  let description = [{
    A weight gradient computed as `linalg.conv_2d_nchw_fchw` reads its input
    transposed (batch and channels swapped: the batch is the convolution's
    reduction channel), often zero-padded. When that input is a per-element
    decode (a `linalg.generic` without inputs, as
    `convert-act-to-linalg{decode-into-consumers}` builds for a lossy
    encoding), the convolution becomes a sum of convolutions over chunks of
    the batch, each reading its own decode (the generic over the chunk, its
    batch index shifted), pad and transpose, and its slice of the filter.
    Up to `max-unrolled` chunks are unrolled (static offsets); more are one
    `scf.for` over the chunks, so the step's size, and its compile time, do
    not grow with the batch. The pad is not guarded by an `scf.if` (it pads
    only the image's border, the same for every chunk), unlike upstream's
    tile-and-fuse. The decoded input exists one chunk of `chunk-bytes` at a
    time instead of whole. The sum over the batch is then taken chunk by
    chunk (float32 reassociation; lossless encodings are never decoded this
    way, so their steps stay bitwise those without encodings).
  }];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"524288",
           "Largest decoded chunk (the batch is split into the largest "
           "divisor whose images fit)">,
    Option<"maxUnrolled", "max-unrolled", "int64_t", /*default=*/"4",
           "Most chunks written out one after the other; more chunks are a "
           "loop">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
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
def ActTransposeViewsPass
    : Pass<"act-transpose-views", "::mlir::func::FuncOp"> {
  let summary = "Contractions read transposed operands, and write transposed "
                "results, through strided views";
  let description = [{
    On buffers, before deallocation is placed: a `linalg.transpose` into
    a fresh buffer read only by matmuls, batch matmuls and convolutions
    (which act's kernels read through any strides) becomes a strided view
    of its source (`memref.reinterpret_cast`: unlike `memref.transpose` it
    is a `ViewLikeOpInterface`, so deallocation sees the alias). The exported backward
    transposes every weight gradient's operands (a convolution's
    weight gradient reads its padded input and output gradient with batch
    and channels swapped); as views they cost neither a copy nor memory.
    The source must not be written between the transpose and the view's
    last reader (checked through the buffers' allocations; an op with
    unknown effects keeps the copy).

    The other direction: a transpose of a buffer allocated for a kernel's
    result (only filled and written by matmuls and convolutions as their
    output before it) into a fresh buffer makes the result buffer the
    transposed view of the target, so the kernel writes in place (act's
    kernels write a convolution's output through its (n, f) strides and a
    transposed matmul result as C^T += B^T A^T). The exported backward
    computes every convolution's weight gradient with batch and channels
    swapped and transposes it into the weight's layout this way.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}
def ActBufferPeakPass : Pass<"act-buffer-peak", "::mlir::ModuleOp"> {
  let summary = "Report the peak of a bufferized step's own buffers";
  let description = [{
    The peak-memory estimate of the step as the pipeline lowers it: on
    buffers, after deallocation is placed (and after
    convert-linalg-to-act-kernels, which drops padded copies), each
    function's `memref.alloc`s are live from the allocation to their
    `memref.dealloc` (or to the end: results), in block order; allocations
    inside loops count, all of them, at the op holding the loop. Arguments
    are not counted (as in act-run). What this cannot see: the compute
    kernels' scratch (bounded by the kernels, e.g. 256 KB of gathered
    windows per thread for a convolution) and allocations of dynamic size
    (counted as 0, and said). act-memory-report's estimate models the graph
    before bufferization; this is what the lowered step allocates.

    Prints, per function with allocations, the peak, the op where it is
    reached and the largest buffers live there, to `report` ("-": stderr),
    as text or, for a `.json` path, as JSON with the timeline (bytes live
    at each op; `python3 -m act.memory_plot --buffers` draws it).
    act-cpu-pipeline runs it with its `peak-report` option.
  }];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"\"-\"",
           "where to write the report (- for stderr; a .json path for JSON)">,
  ];
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
