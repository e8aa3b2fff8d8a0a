//===- Passes.td - act's code generation passes ------------*- tablegen -*-===//
//
// The passes that work on linalg, memref, scf and vector after
// convert-act-to-linalg has lowered the act ops: memory (chunking, in-place
// updates, early deallocation, stack buffers, the peak), elementwise fusion
// and outlining (Common), the CPU's vectorization and prefetch (CPU), the
// GPU's split reductions, launch-ready loops and stream-ordered regions
// (GPU). lib/Codegen/{Common,CPU,GPU}; tests in test/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_CODEGEN_PASSES_TD
#define ACT_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===- Common: memory and structure of the lowered step -------------------===//

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

def ActOutlineLoopsPass : Pass<"act-outline-loops", "::mlir::ModuleOp"> {
  let summary = "Each top-level loop nest of a large function in a function "
                "of its own";
  let description = [{
    A training step lowers to one function with a loop nest per op: a
    thousand nests for a MobileNet. LLVM's loop passes are superlinear in
    the size of the function that holds the loops (`opt -O2
    -time-passes` on MobileNetV2's step: IndVarSimplify 28 s and
    LoopRotate 7 s of 43 s), so the JIT compile of a real model took
    minutes. This pass moves every top-level `scf.for` / `scf.parallel` of
    a function with at least `min-loops` of them into a private function
    of its own (`<name>_loop<k>`, LLVM `noinline` through `passthrough`, its
    call `no_inline`: LLVM's inliner would put it back), called where the loop was: the values it uses
    become arguments, constants are cloned into it. Loops that contain
    `async` ops (the threaded chunks) stay. Nests that are the same code
    (OperationEquivalence, locations aside) on other values share one
    function: a step repeats its nests (an unrolled recurrent network's
    timesteps, a transformer's layers), and LLVM compiles each function it
    is given (a 64-step LSTM: 2,088 nests, 684 functions). Run after the
    loops exist (`convert-linalg-to-loops`, `convert-vector-to-scf`), before
    the conversion to LLVM.

    ```mlir
    func.func @step(%a: memref<8xf32>, %b: memref<8xf32>) {
      scf.for %i = %c0 to %c8 step %c1 { ... %a ... %b ... }
      ...
    }
    // becomes
    func.func private @step_loop0(%a: memref<8xf32>, %b: memref<8xf32>)
        attributes {passthrough = ["noinline"]} {
      scf.for %i = %c0 to %c8 step %c1 { ... }
      return
    }
    func.func @step(%a: memref<8xf32>, %b: memref<8xf32>) {
      call @step_loop0(%a, %b) {no_inline} : (memref<8xf32>, memref<8xf32>) -> ()
      ...
    }
    ```
  }];
  let options = [
    Option<"minLoops", "min-loops", "int64_t", /*default=*/"16",
           "outline the loops of functions with at least this many "
           "top-level loop nests (smaller ones compile fast as they are)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

//===- CPU ----------------------------------------------------------------===//

def ActVectorizePass : Pass<"act-vectorize", "::mlir::func::FuncOp"> {
  let summary = "Turn the small static kernels of act's lowering into "
                "vector code";
  let description = [{
    `convert-act-to-linalg` encodes whole chunks of a packed tensor (a
    quantization group, a tile of 16 words) with small static linalg ops
    marked `act.vectorize`: a chunk's min/max reduction, the 16 words of a
    tile built from `perWord` lanes of 16 consecutive elements, and a tile's
    decode. This pass vectorizes each marked op with upstream
    `linalg::vectorize` (one vector per lane of a tile, a
    `vector.multi_reduction` per group), so the CPU code does not depend on
    what LLVM's loop vectorizer makes of the scalar loops. Ops that do not
    meet the vectorizer's preconditions (dynamic shapes) stay as they are.
    With `width` > 0 it also vectorizes the training graph's own static
    `linalg.generic`s (elementwise ops, reductions): each is tiled with
    `scf::tileUsingSCF` to 1 x ... x 1 x T along its innermost loop (T the
    largest of width, width / 2, ... 4 dividing that loop; generics where an
    operand reads the innermost loop other than contiguously, or with
    non-permutation maps, stay scalar) and the tile vectorized with
    `linalg::vectorize`. Their sums reduce in any order (`reassoc`): float32
    reassociation, nothing more.
    A marked kernel's sums reduce in any order only when each of its float
    additions carries `reassoc`. After vectorization, a `vector.gather`
    whose lane positions are affine in the lane (base + step * lane, through
    division and remainder by constants that no lane crosses: a per-element
    decode's payload word and group row) becomes one contiguous read
    (step 1) or one broadcast element (step 0).

    Part of `act-cpu-pipeline`; runs on tensors, before bufferization.

    ```mlir
    %w = linalg.generic {act.vectorize, iterator_types = ["parallel"]}
           ins(%l0, %l1, ... : tensor<16xf32>, ...) outs(%e : tensor<16xi32>)
    // becomes
    %v0 = vector.transfer_read %l0[%c0], %pad : tensor<16xf32>, vector<16xf32>
    ... arith on vector<16xf32> / vector<16xi32> ...
    %w = vector.transfer_write %acc, %e[%c0] : vector<16xi32>, tensor<16xi32>
    ```
  }];
  let options = [
    Option<"width", "width", "int64_t", /*default=*/"0",
           "Also tile and vectorize the other static generics to this many "
           "elements along their innermost loop (0: only the marked "
           "kernels; act-cpu-pipeline uses 16)">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect"];
}

def ActByteI1VectorsPass : Pass<"act-byte-i1-vectors", "::mlir::ModuleOp"> {
  let summary = "Load and store vectors of i1 as one byte per element";
  let description = [{
    A `memref` of `i1` holds one byte per element (its scalar loads and
    stores are LLVM's `i1`, one byte each), but LLVM stores a vector of `i1`
    as packed bits: a vector load or store of a memref's `i1` elements, as
    `vector-to-llvm` lowers it, would read or write the wrong bytes. This
    pass, run on the LLVM dialect, rewrites every `llvm.load` and
    `llvm.store` of a `vector<N x i1>` into one of `vector<N x i8>` with a
    `trunc` / `zext`, so `act-vectorize` can vectorize kernels that read or
    write `i1` tensors (a mask's decode, ReLU's backward `select`). Masked
    vector loads and stores of `i1` elements (which the lowering never
    emits) are rejected with an error rather than left wrong.

    ```mlir
    llvm.store %m, %p : vector<16xi1>, !llvm.ptr
    // becomes
    %b = llvm.zext %m : vector<16xi1> to vector<16xi8>
    llvm.store %b, %p : vector<16xi8>, !llvm.ptr
    ```
  }];
}

def ActUnitStrideGathersPass
    : Pass<"act-unit-stride-gathers", "::mlir::func::FuncOp"> {
  let summary = "Gathers from a strided memref as gathers from its storage";
  let description = [{
    `vector.gather` from a memref whose last dimension is not unit-stride
    (a column or a diagonal of a buffer, after bufferization of a
    vectorized `tensor.extract`) has no LLVM lowering (`vector-to-llvm`
    needs a unit stride). This pass rewrites such a gather as one from the
    same storage viewed as a 1-D unit-stride memref that starts at the
    gathered row (`memref.extract_strided_metadata` +
    `memref.reinterpret_cast`), its index vector scaled by the stride: the
    same elements, read by one vector gather.

    ```mlir
    %g = vector.gather %col[%c0] [%idx], %m, %p
        : memref<4xf32, strided<[8]>>, vector<4xindex>, vector<4xi1>,
          vector<4xf32> into vector<4xf32>
    // becomes a gather from
    //   memref.reinterpret_cast %buffer to offset: [%off], sizes: [25],
    //   strides: [1]
    // at [%c0] with %idx * 8
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def ActStridedCopiesToLoopsPass
    : Pass<"act-strided-copies-to-loops", "::mlir::func::FuncOp"> {
  let summary = "Copies between non-contiguous buffers as linalg.copy loops";
  let description = [{
    `memref.copy` between buffers that are not both contiguous (a chunk of
    a convolution's input into the interior of its zero-padded buffer,
    after bufferization) lowers to a call of the runner utilities'
    `memrefCopy`, which walks the elements one by one through their
    descriptors. This pass rewrites such a copy as `linalg.copy`, which
    `convert-linalg-to-loops` turns into a loop nest over the static
    strides: LLVM vectorizes its unit-stride innermost loop. Contiguous
    copies stay `memref.copy` (one `llvm.memcpy`).

    ```mlir
    memref.copy %chunk, %interior
        : memref<2x32x32x32xf32> to memref<2x32x32x32xf32, strided<[36992, 1156, 34, 1], offset: 35>>
    // becomes
    linalg.copy ins(%chunk : ...) outs(%interior : ...)
    ```

    With `all`, contiguous copies become `linalg.copy` too: act-gpu-pipeline
    runs it so that every copy becomes a kernel, since host code cannot
    read the device buffers a caller passes (the tail of an encode, copied
    into a padded tile, was read on the host and faulted on an H100).
  }];
  let options = [
    Option<"all", "all", "bool", /*default=*/"false",
           "Rewrite contiguous copies too (every copy becomes linalg.copy)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ActPrefetchStreamsPass
    : Pass<"act-prefetch-streams", "::mlir::func::FuncOp"> {
  let summary = "Software prefetch for loops that stream through a buffer";
  let description = [{
    A loop whose iterations read consecutive blocks of a 1-D buffer (an
    encode's chunks: iteration `i` reads `%x[i * S : (i + 1) * S]`) is a
    stream. On one core, the hardware prefetchers alone do not keep such a
    loop fed once its iterations carry real compute: a stochastic 2-bit
    encode took 0.43 ns per element from memory against 0.31 in cache.
    This pass adds, at the top of each such iteration, a `memref.prefetch`
    of every cache line of the block `distance` bytes ahead (clamped to
    the buffer), so the loads of later iterations are in flight while this
    one computes.

    It takes a `memref.subview` in a loop's body (`scf.for`, `scf.forall`
    or `scf.parallel` with one induction variable) when:
    - its source is a 1-D unit-stride buffer defined outside the loop, of
      at least `min-bytes` bytes (or of dynamic size);
    - it is 1-D with a static size `S` and unit stride, and its offset is
      the induction variable times a constant `a` with `a * step = S`
      (consecutive iterations, consecutive blocks);
    - the block is at least `min-block-bytes` and nothing writes through
      it. A loop that reads a line or so per iteration needs no help: the
      out-of-order core overlaps its iterations' loads by itself. One
      whose iteration reads many lines and then computes on them for
      hundreds of instructions (an encode's chunk: statistics, Philox,
      codes) fills the core's window before the next chunk's loads issue.
    - its iteration runs at least `min-ops-per-line` ops per line of the
      block (nested loops' ops times their static trip counts). A loop
      with little compute per line is bound by memory, which the hardware
      prefetchers already stream at full speed; software prefetches only
      compete with them (a 2-bit few-bit encode, 12 ops per line, fell
      from 0.95 to 0.57 of memcpy with them, a stochastic 2-bit quant
      encode, 49 ops per line, rose from 0.39 to 0.55).

    At most 64 lines are prefetched per iteration, at most 16 in a row:
    the groups are spread evenly over the iteration's ops (32 prefetches
    in a row, more than the core's outstanding misses, stalled a 1-bit
    encode).

    ```mlir
    scf.for %i = %c0 to %c64 step %c1 {
      %o = arith.muli %i, %c256 : index
      %x = memref.subview %in[%o] [256] [1] : memref<16384xf32> to memref<256xf32, strided<[1], offset: ?>>
      ...
    // gets, before the subview, for k in 0 .. 15:
      %p = arith.addi %o, %c(1024 + 16 * k) : index
      %q = arith.minui %p, %c16383 : index
      memref.prefetch %in[%q], read, locality<3>, data : memref<16384xf32>
    ```
  }];
  let options = [
    Option<"distance", "distance", "int64_t", /*default=*/"4096",
           "How far ahead to prefetch, in bytes">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "Buffers of a static size below this many bytes are left alone">,
    Option<"minBlockBytes", "min-block-bytes", "int64_t", /*default=*/"512",
           "Loops reading fewer bytes per iteration are left alone">,
    Option<"minOpsPerLine", "min-ops-per-line", "int64_t", /*default=*/"16",
           "Loops running fewer ops per iteration than this times the "
           "lines they read are left alone">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

//===- GPU ----------------------------------------------------------------===//

def ActSplitReductionsPass
    : Pass<"act-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "A reduction with few outputs as partial results over its "
                "outer reduction loops, then their combination";
  let description = [{
    act-gpu-pipeline maps a linalg op's parallel loops to threads and runs
    its reduction loops inside each thread. A reduction with few outputs
    then ran on a block or two, each thread looping over thousands of
    elements: BatchNorm's sums over batch and image (32 outputs of 16,384
    elements each in the VGG at batch 16), a convolution's weight gradient
    (9,216 outputs summed over the batch and the image). On an H100 such
    one-block launches took 38 of a 95 ms step.

    This pass (on tensors, before bufferization) takes a linalg op (a named
    one is generalized first) with static loops whose parallel loops have
    fewer than `min-threads` iterations and whose every output is combined
    by one op with a neutral element (`arith.addf`, `maximumf`, ...:
    upstream's `matchReduction`, `arith::getNeutralElement`), and makes its
    outermost reduction loops parallel, one at a time while fewer than
    `min-threads` iterations are parallel and each thread keeps at least
    `min-work` iterations, and while the partial results stay within
    `max-partial-bytes` (they are live beside the step's tensors: without
    that bound the VGG's GPU peak at 2 bits rose 7.97 -> 10.34 MB): the op
    then writes partial results (the chosen
    loops' extents before the output's shape, filled with the neutral
    element), and a second op per output combines them into the output's
    initial value with the same combiner, its output's loops outermost. A
    combining op that again has few outputs and many partials is split in
    turn (BatchNorm's 32 sums of 512 partials: 512 threads of 32, then 32
    threads of 16).

    ```mlir
    // sum over n, h, w of a 16x32x32x32 tensor into 32 channels
    %s = linalg.generic {iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x) outs(%zeros : tensor<32xf64>)
    // becomes
    %p = linalg.generic {iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%x) outs(%partial : tensor<16x32x32xf64>)   // (n, h, c): 16,384 threads
    %s = linalg.generic {iterator_types = ["reduction", "reduction", "parallel"]}
        ins(%p) outs(%zeros : tensor<32xf64>)
    ```

    The sums are reassociated (float rounding differs from the loop's
    order, as between any two GPUs' reductions); sums of exactly
    representable values are unchanged.

    Then every `linalg.generic` with a reduction loop outside a parallel
    one is interchanged so that its parallel loops come first (each
    output's reduction keeps its order): upstream's parallel-loop lowering
    makes an `scf.parallel` of the outermost parallel loops only, so an
    outer reduction loop stayed on the host as a loop of launches (9,510
    one-block launches per VGG step on an H200).
  }];
  let options = [
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"32768",
           "Parallel iterations below which reduction loops are made "
           "parallel">,
    Option<"minWork", "min-work", "int64_t", /*default=*/"16",
           "Reduction iterations each thread keeps at least">,
    Option<"maxPartialBytes", "max-partial-bytes", "int64_t",
           /*default=*/"262144",
           "Most bytes of an op's partial results (they are live beside "
           "the step's tensors)">,
    Option<"skipLibraryOps", "skip-library-ops", "bool", /*default=*/"false",
           "Leave f32 linalg.matmul, batch_matmul and 2-D convolutions "
           "alone: convert-linalg-to-act-kernels{gpu} makes them cuBLAS/"
           "cuDNN calls">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ActScalarOpsToKernelsPass
    : Pass<"act-scalar-ops-to-kernels", "::mlir::func::FuncOp"> {
  let summary = "Give linalg ops without a parallel loop a unit parallel loop";
  let description = [{
    On buffers, in act-gpu-pipeline: a linalg op with no parallel loop and
    0-d outputs (a sum to a scalar, such as the loss; a 0-d fill) has no loop
    to map to threads, so it became host code reading and writing device
    buffers. It becomes a generic with one more, outermost, parallel loop of
    one iteration over 1-element views of its outputs (memref.expand_shape),
    hence a one-thread kernel, and the step's host code touches no buffer
    (act-mark-stream-ordered).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ActSeedsInKernelsPass
    : Pass<"act-seeds-in-kernels", "::mlir::func::FuncOp"> {
  let summary = "Read the step's seeds inside the kernels that use them";
  let description = [{
    In act-gpu-pipeline, after the loops become `gpu.launch`: a load from
    the `act.seeds` argument (the Philox seeds the runtime fills for each
    call) at constant indices, in host code, whose value only launches use,
    moves into each of those launches. The kernels then read the seeds
    from device memory, and the host code reads nothing: the seeds are
    not in `act.host_read_arguments`, the runtime copies them to the device
    on the step's stream, and a CUDA graph of the step replays with the
    next call's seeds (the values no longer travel as kernel parameters
    fixed at capture). A load with another user stays.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def ActMarkStreamOrderedPass
    : Pass<"act-mark-stream-ordered", "::mlir::func::FuncOp"> {
  let summary = "Mark GPU steps whose host code touches no buffer";
  let description = [{
    In act-gpu-pipeline, after kernel outlining: a function whose host code
    (everything outside gpu.launch_func) reads and writes no buffer, except
    integer function arguments it reads (seeds, which only the host
    writes), and calls nothing but act's GPU library kernels and runtime
    hooks, gets the unit attribute `act.stream_ordered`, and the integer
    arguments its host code reads are listed in `act.host_read_arguments`
    (a `DenseI64ArrayAttr`, absent when none); those of them a kernel reads
    too (a `gpu.launch_func` operand, or a view of one) also in
    `act.kernel_read_host_arguments`. With
    `ACT_GPU_STREAM_ORDERED=1` (opt-in until a disagreement seen on an H200
    is understood: docs/Running.md) the JIT runs such a function in the
    runtime's stream-ordered mode: every launch and library call on one
    stream, no host synchronization until the step returns. A step on
    device tensors (`JitTarget::deviceTensors`, `act.compile` on CUDA
    tensors) always runs so, takes the arguments in
    `act.host_read_arguments` in host memory (seeds, widths, a dropout
    seed) and refuses a function with `act.kernel_read_host_arguments`.
  }];
}

def ActCollapseParallelLoopsPass
    : Pass<"act-collapse-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "Collapse every outermost scf.parallel into one dimension";
  let description = [{
    act-gpu-pipeline maps a parallel loop nest to a launch by tiling its
    dimensions by the block size: each dimension is then a grid dimension,
    and a block takes `block-size` iterations of the innermost only. An
    NCHW tensor with 32 columns left 224 of a block's 256 threads idle (an
    H100 spent 41 ms of a 150 ms VGG step in such launches). This pass
    collapses each outermost `scf.parallel` into one dimension of all its
    iterations (upstream's `collapseParallelLoops`), so that the launch is
    `ceil(iterations / block-size)` full blocks; the indices are recovered
    by division and remainder.

    ```mlir
    scf.parallel (%n, %c, %h, %w) = (0, 0, 0, 0) to (16, 32, 32, 32) ...
    // becomes
    scf.parallel (%i) = (0) to (524288) step (1) { %w = %i mod 32 ... }
    ```
  }];
  // collapseParallelLoops normalizes the bounds with affine.apply.
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // ACT_CODEGEN_PASSES_TD
