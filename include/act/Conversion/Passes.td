//===- Passes.td - act conversions -------------------------*- tablegen -*-===//

#ifndef ACT_CONVERSION_PASSES_TD
#define ACT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertActToLinalgPass : Pass<"convert-act-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower act.encode/act.decode to linalg on tensors with "
                "explicit storage";
  let description = [{
    Replaces every `!act.encoded<T, enc>` value by its explicit storage
    (`EncodingAttrInterface::getStorageTypes`: the packed 32-bit payload
    words, then per-group metadata, plus a `tensor<Dxindex>` of the dynamic
    dimensions when `T` has any), and every `act.encode` / `act.decode` by
    the linalg, tensor and arith ops its encoding builds
    (`buildEncode`/`buildDecode`). Function signatures, calls and returns
    that carry encoded values are converted 1:N.

    ```mlir
    %e = act.encode %x, id = 0 : tensor<1000xf32>
           -> !act.encoded<tensor<1000xf32>, #act.float<format = bf16>>
    // becomes
    %padded = tensor.pad %x low[0] high[0] { ... } : tensor<1000xf32> to tensor<1000xf32>
    %words = linalg.generic ... -> tensor<500xi32>
    ```

    `target` picks how the work is laid out: `cpu` (act-cpu-pipeline) builds
    chunks of small static kernels for act-vectorize; `gpu`
    (act-gpu-pipeline) builds `gpu.launch` kernels over buffers of the
    tensors (`bufferization.to_buffer read_only` in, new buffers out through
    `bufferization.to_tensor restrict writable`): a thread per four payload
    words of a tile or per 16 bytes of a byte code, 16-byte vector loads and
    stores when the buffers are aligned, group statistics combined across a
    group's threads with clustered `gpu.subgroup_reduce`, lowered here to
    butterfly `gpu.shuffle`s; `generic` builds flat parallel generics only.
    Every target computes the same bits.
  }];
  let options = [
    Option<"target", "target", "::mlir::act::LoweringTarget",
           /*default=*/"::mlir::act::LoweringTarget::CPU",
           "How packed and byte-coded encodings lower",
           [{::llvm::cl::values(
             clEnumValN(::mlir::act::LoweringTarget::CPU, "cpu",
                        "whole chunks (a quantization group, a tile of 16 "
                        "words) in an scf.forall of small static kernels "
                        "marked for act-vectorize"),
             clEnumValN(::mlir::act::LoweringTarget::GPU, "gpu",
                        "gpu.launch kernels on buffers: a thread per four "
                        "words of a tile, 16-byte loads and stores, group "
                        "statistics by warp shuffles; the rest as generic"),
             clEnumValN(::mlir::act::LoweringTarget::Generic, "generic",
                        "one flat parallel linalg.generic per step, per "
                        "word or element"),
             clEnumValN(::mlir::act::LoweringTarget::GPUEmulated,
                        "gpu-emulated",
                        "the gpu kernels as loops over blocks and threads "
                        "for the CPU (each thread recomputes its cluster's "
                        "parts of the group statistics instead of "
                        "shuffling): checks the GPU kernels without a GPU"))}]>,
    Option<"gpuBlockSize", "gpu-block-size", "int64_t", /*default=*/"256",
           "Threads per block of the target=gpu kernels (a multiple of 32)">,
    Option<"recordStorage", "record-storage", "bool", /*default=*/"false",
           "each encode calls the runtime's act_record_storage(id, bytes) "
           "with its storage's size at run time (what data-dependent "
           "encodings, #act.sparse, really store; act-run --storage)">,
    Option<"decodeIntoConsumers", "decode-into-consumers", "bool",
           /*default=*/"false",
           "target=cpu: an elementwise generic reading a decoded value "
           "gets its own per-element decode for act-fuse-elementwise to "
           "fuse (encodings whose decodesPerElement holds)">,
    Option<"cpuFeatures", "cpu-features", "std::string", /*default=*/"\"\"",
           "target=cpu: changes to the host's CPU features the code is "
           "for, LLVM's names (-avx512f: an AVX2 machine's); empty: "
           "ACT_CPU_FEATURES, else the host's. #act.sparse compacts with "
           "vcompressps/vexpandps under AVX-512, with a permutation table "
           "under AVX2">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect",
    // Sparse storage on the CPU: llvm.call_intrinsic of vector.compress.
    "::mlir::LLVM::LLVMDialect", "::mlir::ub::UBDialect",
  ];
}

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

def ActMarkStreamOrderedPass
    : Pass<"act-mark-stream-ordered", "::mlir::func::FuncOp"> {
  let summary = "Mark GPU steps whose host code touches no buffer";
  let description = [{
    In act-gpu-pipeline, after kernel outlining: a function whose host code
    (everything outside gpu.launch_func) reads and writes no buffer, except
    integer function arguments it reads (seeds, which only the host
    writes), and calls nothing but act's GPU library kernels and runtime
    hooks, gets the unit attribute `act.stream_ordered`. With
    `ACT_GPU_STREAM_ORDERED=1` (opt-in until a disagreement seen on an H200
    is understood: docs/Running.md) the JIT runs such a function in the
    runtime's stream-ordered mode: every launch and library call on one
    stream, no host synchronization until the step returns.
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

def ConvertLinalgToActKernelsPass
    : Pass<"convert-linalg-to-act-kernels", "::mlir::ModuleOp"> {
  let summary = "Call act's compute kernels for f32 matmuls and convolutions "
                "on buffers";
  let description = [{
    Replaces `linalg.matmul`, `linalg.batch_matmul`,
    `linalg.conv_2d_nchw_fchw` and `linalg.conv_2d_ngchw_gfchw` on f32
    buffers by calls of the runtime's kernels (`act/runtime/Kernels.h`:
    oneDNN's GEMM, convolutions as GEMMs over gathered windows, OpenMP
    threads), with linalg's semantics (the result accumulates into the
    output). Operands are cast to fully dynamic strided memrefs; the callee
    is declared `llvm.emit_c_interface`, so it is reached as
    `_mlir_ciface_act_kernel_<op>_f32` with descriptor pointers. A
    convolution's strides and dilations follow as i64. Ops with
    user-defined indexing maps, other element types, or fewer than
    `min-macs` multiply-accumulates stay for `convert-linalg-to-loops`.
    A convolution on a zero-padded copy reads the copied buffer with the
    kernel's padding instead. A convolution's input gradient as the
    exported backward writes it (a stride-1 convolution of the output
    gradient spread into zeros, by a strided copy or computed into the
    interior of a padded buffer, with the weight read backwards and
    channels swapped) becomes `act_kernel_conv_2d_nchw_fchw_backward_data`
    on the output gradient and the weight themselves, with the forward
    convolution's strides, dilations and padding: a GEMM and col2im per
    image, no dilated copy and no flipped weight.
    Part of `act-cpu-pipeline` (option `kernels`), after bufferization and
    deallocation.
    ```mlir
    linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x128xf32>)
                  outs(%c : memref<64x128xf32>)
    // becomes
    %0 = memref.cast %a : memref<64x256xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    ...
    call @act_kernel_matmul_f32(%0, %1, %2) : (...) -> ()
    ```
  }];
  let options = [
    Option<"minMacs", "min-macs", "int64_t", /*default=*/"4096",
           "Contractions with fewer multiply-accumulates, and copies of "
           "fewer elements, stay loops (a call's fixed cost)">,
    Option<"gpu", "gpu", "bool", /*default=*/"false",
           "Call the GPU's library kernels (act_gpu_kernel_*: cuBLAS, "
           "cuDNN; act/runtime/CudaLibraries.h) instead of the CPU's: "
           "copies stay loops, and a convolution whose padding cuDNN "
           "cannot express (it pads symmetrically) stays loops">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // ACT_CONVERSION_PASSES_TD
