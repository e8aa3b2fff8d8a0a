//===- EncodingLowering.h - how an encoding lowers --------------*- C++ -*-===//
//
// The lowering side of an encoding: the target and options of
// convert-act-to-linalg and the EncodingLoweringAttrInterface that every
// encoding attribute implements through an external model. The dialect
// defines and promises the interface; the conversion attaches the models
// (act/Conversion/ActToLinalg/EncodingLoweringImpl.h), as upstream's
// BufferizableOpInterface lives with bufferization's IR and its models with
// each dialect's transforms.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ENCODINGLOWERING_H
#define ACT_DIALECT_ACT_IR_ENCODINGLOWERING_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace mlir {
namespace act {

/// What the encode/decode IR is built for (convert-act-to-linalg{target}).
enum class LoweringTarget {
  /// Packed encodings: whole chunks in an scf.forall of small static kernels
  /// that act-vectorize turns into vector code.
  CPU,
  /// gpu.launch kernels on buffers (a thread per four payload words, 16-byte
  /// accesses, group statistics by warp shuffles), the ragged rest as
  /// Generic.
  GPU,
  /// One flat parallel generic per step, per word or element.
  Generic,
  /// The GPU kernels run on the CPU, to check them without a GPU: launches
  /// become loops over blocks and threads, and a group's statistics combine
  /// the same per-thread parts as on the GPU, each thread recomputing its
  /// cluster's parts instead of exchanging them by shuffles.
  GPUEmulated,
};

/// How an encoding lowers (EncodingLoweringAttrInterface::buildEncode and
/// buildDecode).
struct LoweringOptions {
  LoweringTarget target = LoweringTarget::CPU;
  /// Threads per block of the GPU kernels.
  int64_t gpuBlockSize = 256;
  /// Every encode reports its storage's bytes at run time through
  /// act_record_storage(id, bytes) (act-run --storage).
  bool recordStorage = false;
  /// Decode (target CPU, static shapes) as parallel generics over the
  /// decoded shape, each element reading its own word and group row, for an
  /// elementwise consumer to fuse (EncodingLoweringAttrInterface::
  /// decodesPerElement says which encodings do).
  bool perElementDecode = false;
  /// CPU: the target has AVX-512's vector compress/expand (vcompressps,
  /// vexpandps); without them but with AVX2, #act.sparse of 32-bit elements
  /// compacts through vpermps and a permutation table.
  bool cpuVectorCompress = true;
  bool cpuAvx2 = true;
};

} // namespace act
} // namespace mlir

#include "act/Dialect/Act/IR/EncodingLowering.h.inc"

#endif // ACT_DIALECT_ACT_IR_ENCODINGLOWERING_H
