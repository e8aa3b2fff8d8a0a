//===- ActStorage.h - storage of an encoded tensor --------------*- C++ -*-===//
//
// The byte count an encoding needs, split into its parts. Returned by
// EncodingAttrInterface::getStorageLayout.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTSTORAGE_H
#define ACT_DIALECT_ACT_IR_ACTSTORAGE_H

#include <cstdint>

namespace mlir::act {

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

/// How an encoding lowers (EncodingAttrInterface::buildEncode/buildDecode).
struct LoweringOptions {
  LoweringTarget target = LoweringTarget::CPU;
  /// Threads per block of the GPU kernels.
  int64_t gpuBlockSize = 256;
};

/// Exact storage of an encoded tensor, in bytes.
struct StorageLayout {
  /// Bytes that carry element bits: ceil(elements * bits / 8).
  int64_t payloadBytes = 0;
  /// Per-group side data (quantization minimum and scale).
  int64_t metadataBytes = 0;
  /// Bytes the payload's 32-bit word packing adds beyond `payloadBytes`.
  int64_t paddingBytes = 0;

  int64_t getTotalBytes() const {
    return payloadBytes + metadataBytes + paddingBytes;
  }
  bool operator==(const StorageLayout &other) const {
    return payloadBytes == other.payloadBytes &&
           metadataBytes == other.metadataBytes &&
           paddingBytes == other.paddingBytes;
  }

  /// Storage of `numElements` elements of `bitsPerElement` bits packed
  /// `elementsPerWord` to a 32-bit word, plus `metadataBytes`.
  static StorageLayout packed(int64_t numElements, unsigned bitsPerElement,
                              unsigned elementsPerWord,
                              int64_t metadataBytes = 0) {
    int64_t words = (numElements + elementsPerWord - 1) / elementsPerWord;
    int64_t payload = (numElements * bitsPerElement + 7) / 8;
    return {payload, metadataBytes, words * 4 - payload};
  }
};

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_IR_ACTSTORAGE_H
