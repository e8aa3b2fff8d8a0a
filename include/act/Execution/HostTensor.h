//===- HostTensor.h - a typed array in host memory --------------*- C++ -*-===//
//
// The values act's execution engine exchanges with compiled code: an element
// kind, a shape and the bytes, row-major and contiguous. A HostTensor either
// owns its bytes (allocated, or adopted from a step's result buffer with the
// function that releases it) or views memory its caller owns, so a step can
// run on caller-owned buffers without copies. Copies of a HostTensor share
// the bytes, as torch tensors do; clone() copies them.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_EXECUTION_HOSTTENSOR_H
#define ACT_EXECUTION_HOSTTENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::act {

/// Element types exchanged with compiled code.
enum class ElementKind { F32, F64, I64, I32, I16, I8, I1 };
unsigned getElementBytes(ElementKind kind);
/// The NumPy type string of a kind ("<f4", ...).
const char *getNpyDescr(ElementKind kind);
/// The kind of a NumPy type string, if act exchanges it.
std::optional<ElementKind> getKindOfNpyDescr(llvm::StringRef descr);

class HostTensor {
public:
  /// An empty f32 scalar with no bytes.
  HostTensor() = default;

  /// A zero-filled tensor (or, with `isTensor` false and an empty shape, a
  /// scalar) that owns its bytes.
  static HostTensor allocate(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                             bool isTensor = true);
  /// A view of `data`, which the caller owns and keeps alive.
  static HostTensor view(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                         void *data, bool isTensor = true);
  /// Takes ownership of `data`; `release` frees it with the last copy.
  static HostTensor adopt(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                          void *data, std::function<void(void *)> release);
  /// Takes ownership of `bytes` (which must hold the tensor's byte count).
  static HostTensor fromBytes(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                              std::vector<char> bytes, bool isTensor = true);
  /// A scalar holding `value`.
  template <typename T> static HostTensor scalar(ElementKind kind, T value) {
    HostTensor t = allocate(kind, {}, /*isTensor=*/false);
    *t.as<T>() = value;
    return t;
  }

  /// A copy that owns its bytes.
  HostTensor clone() const;

  bool isTensor() const { return tensor; }
  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t numElements() const;
  size_t byteSize() const {
    return size_t(numElements()) * getElementBytes(kind);
  }

  char *data() const { return bytes; }
  template <typename T> T *as() const { return reinterpret_cast<T *>(bytes); }
  /// The elements as a vector of `T` (whose size must be the element's).
  template <typename T> std::vector<T> values() const {
    return std::vector<T>(as<T>(), as<T>() + numElements());
  }

private:
  bool tensor = false;
  ElementKind kind = ElementKind::F32;
  std::vector<int64_t> shape;
  char *bytes = nullptr;
  /// Keeps owned bytes alive; null for views.
  std::shared_ptr<void> owner;
};

/// Reads a .npy file into a tensor (its dtype must be one act exchanges).
/// `descr`, when given, receives the file's dtype as written (`|u1` for a
/// uint8 array read as its bytes).
llvm::Expected<HostTensor> readNpyTensor(const std::string &path,
                                         std::string *descr = nullptr);
/// Writes `tensor` as a .npy file.
llvm::Error writeNpyTensor(const std::string &path, const HostTensor &tensor);

} // namespace mlir::act

#endif // ACT_EXECUTION_HOSTTENSOR_H
