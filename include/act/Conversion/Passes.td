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
