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
