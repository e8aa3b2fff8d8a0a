//===- HostTensor.cpp - a typed array in host memory ----------------------===//

#include "act/Execution/HostTensor.h"

#include "act/runtime/Npy.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;
using namespace mlir::act;

unsigned mlir::act::getElementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::I16:
    return 2;
  case ElementKind::I8:
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

static constexpr ElementKind kAllKinds[] = {
    ElementKind::F32, ElementKind::F64, ElementKind::I64, ElementKind::I32,
    ElementKind::I16, ElementKind::I8,  ElementKind::I1};

const char *mlir::act::getNpyDescr(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "<f4";
  case ElementKind::F64:
    return "<f8";
  case ElementKind::I64:
    return "<i8";
  case ElementKind::I32:
    return "<i4";
  case ElementKind::I16:
    return "<i2";
  case ElementKind::I8:
    return "|i1";
  case ElementKind::I1:
    return "|b1";
  }
  return "";
}

std::optional<ElementKind> mlir::act::getKindOfNpyDescr(llvm::StringRef descr) {
  // uint8 arrays (images) are read as their bytes: the step's i8 argument
  // is signless, and the exporter's steps zero-extend it where they read it.
  if (descr == "|u1")
    return ElementKind::I8;
  for (ElementKind kind : kAllKinds)
    if (descr == getNpyDescr(kind))
      return kind;
  return std::nullopt;
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::allocate(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                                bool isTensor) {
  HostTensor t;
  t.tensor = isTensor;
  t.kind = kind;
  t.shape.assign(shape.begin(), shape.end());
  // 64-byte aligned, as the compiled code's own allocations.
  size_t bytes = (std::max<size_t>(t.byteSize(), 1) + 63) / 64 * 64;
  void *data = std::aligned_alloc(64, bytes);
  if (!data)
    llvm::report_bad_alloc_error("act: cannot allocate a host tensor");
  std::memset(data, 0, bytes);
  t.bytes = static_cast<char *>(data);
  t.owner = std::shared_ptr<void>(data, std::free);
  return t;
}

HostTensor HostTensor::view(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                            void *data, bool isTensor) {
  HostTensor t;
  t.tensor = isTensor;
  t.kind = kind;
  t.shape.assign(shape.begin(), shape.end());
  t.bytes = static_cast<char *>(data);
  return t;
}

HostTensor HostTensor::adopt(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                             void *data, std::function<void(void *)> release) {
  HostTensor t = view(kind, shape, data);
  t.owner = std::shared_ptr<void>(data, std::move(release));
  return t;
}

HostTensor HostTensor::fromBytes(ElementKind kind,
                                 llvm::ArrayRef<int64_t> shape,
                                 std::vector<char> bytes, bool isTensor) {
  auto holder = std::make_shared<std::vector<char>>(std::move(bytes));
  HostTensor t = view(kind, shape, holder->data(), isTensor);
  t.owner = holder;
  return t;
}

HostTensor HostTensor::clone() const {
  HostTensor t = allocate(kind, shape, tensor);
  if (byteSize())
    std::memcpy(t.bytes, bytes, byteSize());
  return t;
}

llvm::Expected<HostTensor> mlir::act::readNpyTensor(const std::string &path,
                                                    std::string *descr) {
  ::act::rt::NpyArray array;
  std::string error;
  if (!::act::rt::readNpy(path, array, error))
    return llvm::createStringError(error);
  if (descr)
    *descr = array.descr;
  std::optional<ElementKind> kind = getKindOfNpyDescr(array.descr);
  if (!kind)
    return llvm::createStringError("'" + path + "' has dtype " + array.descr +
                                   ", which act does not exchange");
  return HostTensor::fromBytes(*kind, array.shape, std::move(array.data));
}

llvm::Error mlir::act::writeNpyTensor(const std::string &path,
                                      const HostTensor &tensor) {
  ::act::rt::NpyArray array;
  array.descr = getNpyDescr(tensor.getKind());
  array.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  array.data.assign(tensor.data(), tensor.data() + tensor.byteSize());
  std::string error;
  if (!::act::rt::writeNpy(path, array, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}
