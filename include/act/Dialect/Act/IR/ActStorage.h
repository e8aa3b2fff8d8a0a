//===- ActStorage.h - storage of an encoded tensor --------------*- C++ -*-===//
//
// The byte count an encoding needs, split into its parts. Returned by
// EncodingAttrInterface::getStorageLayout.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTSTORAGE_H
#define ACT_DIALECT_ACT_IR_ACTSTORAGE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cstdint>
#include <optional>

namespace mlir::act {

/// The largest element count act sizes (2^50: a petabyte of f32). Larger
/// static shapes exist only on paper; their byte counts would overflow
/// 64-bit arithmetic, so reports treat them as of unknown size.
constexpr int64_t kMaxSizedElements = int64_t(1) << 50;

/// The element count of a static `shape`, or std::nullopt when it exceeds
/// kMaxSizedElements (checked, never overflowing).
inline std::optional<int64_t>
getSizedElementCount(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    std::optional<int64_t> product = llvm::checkedMul(n, d);
    if (!product || *product > kMaxSizedElements)
      return std::nullopt;
    n = *product;
  }
  return n;
}

/// Exact storage of an encoded tensor, in bytes.
struct StorageLayout {
  /// Bytes that carry element bits: ceil(elements * bits / 8).
  int64_t payloadBytes = 0;
  /// Per-group side data (quantization minimum and scale).
  int64_t metadataBytes = 0;
  /// Bytes the payload's 32-bit word packing adds beyond `payloadBytes`.
  int64_t paddingBytes = 0;
  /// The sizes depend on the data (#act.sparse): an estimate at the
  /// encoding's declared density; the run time stores what the data needs.
  bool estimated = false;

  int64_t getTotalBytes() const {
    return payloadBytes + metadataBytes + paddingBytes;
  }
  bool operator==(const StorageLayout &other) const {
    return payloadBytes == other.payloadBytes &&
           metadataBytes == other.metadataBytes &&
           paddingBytes == other.paddingBytes && estimated == other.estimated;
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

/// #act.sparse: true when `nonzeros` of `numElements` elements are stored
/// densely, without a bitmap, because the bitmap (ceil(n / 32) words) would
/// cost more than the zeros it saves.
inline bool isSparseDenseFallback(int64_t numElements, int64_t nonzeros) {
  return nonzeros > numElements - (numElements + 31) / 32;
}

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_IR_ACTSTORAGE_H
