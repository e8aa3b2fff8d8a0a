//===- ActLowering.cpp - building blocks of encoding lowerings ------------===//
//
// Everything is built on tensors with linalg.generic, so that one-shot
// bufferization and the upstream CPU and GPU pipelines take it from there,
// and CPU and GPU compute the same bits. Here: the shared slicing helpers
// and byte-aligned codes; Philox in Philox.cpp, narrow floats in
// NarrowFloats.cpp, packed codes in PackedCodes.cpp, sparse storage in
// SparseStorage.cpp, quantized compute in FakeQuant.cpp.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/ActLowering.h"

#include "LoweringSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::act;
using namespace mlir::act::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Offsets (`offset` along dim 0, 0 elsewhere) and unit strides of a slice
/// of a rank-`rank` tensor.
static std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
dim0Slice(OpBuilder &b, int64_t rank, Value offset) {
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = getAsOpFoldResult(offset);
  return {offsets, SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
}

Value mlir::act::detail::slice(OpBuilder &b, Location loc, Value t,
                               Value offset, Value size) {
  auto type = cast<RankedTensorType>(t.getType());
  auto [offsets, strides] = dim0Slice(b, type.getRank(), offset);
  SmallVector<OpFoldResult> sizes = {getAsOpFoldResult(size)};
  for (int64_t d = 1; d < type.getRank(); ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  return tensor::ExtractSliceOp::create(b, loc, t, offsets, sizes, strides);
}

/// Inserts `part` into `into` at `offset` along dim 0.
Value mlir::act::detail::insert(OpBuilder &b, Location loc, Value part,
                                Value into, Value offset) {
  auto [offsets, strides] =
      dim0Slice(b, cast<RankedTensorType>(part.getType()).getRank(), offset);
  return tensor::InsertSliceOp::create(b, loc, part, into, offsets,
                                       tensor::getMixedSizes(b, loc, part),
                                       strides);
}

void mlir::act::detail::parallelInsert(OpBuilder &b, Location loc, Value part,
                                       Value into, Value offset) {
  auto [offsets, strides] =
      dim0Slice(b, cast<RankedTensorType>(part.getType()).getRank(), offset);
  tensor::ParallelInsertSliceOp::create(b, loc, part, into, offsets,
                                        tensor::getMixedSizes(b, loc, part),
                                        strides);
}

//===----------------------------------------------------------------------===//
// Byte-aligned codes
//===----------------------------------------------------------------------===//

Value mlir::act::detail::buildFromFlatIndex(
    OpBuilder &b, Location loc, RankedTensorType type,
    function_ref<Value(OpBuilder &, Location, Value)> element) {
  unsigned rank = type.getRank();
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
             ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank)},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange) {
               IndexMath ix{nb, nl};
               Value i = ix.c(0);
               int64_t stride = 1;
               for (int64_t d = rank - 1; d >= 0; --d) {
                 i = ix.add(i,
                            ix.mul(linalg::IndexOp::create(nb, nl, d), stride));
                 stride *= type.getDimSize(d);
               }
               linalg::YieldOp::create(nb, nl, element(nb, nl, i));
             })
      .getResult(0);
}

Value mlir::act::detail::nonEmpty(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  Type element = type.getElementType();
  Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      b.createOrFold<tensor::DimOp>(loc, t, 0),
                                      indexConst(b, loc, 0));
  auto pick = scf::IfOp::create(b, loc, TypeRange{type}, empty, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(pick.thenBlock());
  Value zero = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({1}, element),
                             b.getZeroAttr(element)));
  scf::YieldOp::create(b, loc,
                       tensor::CastOp::create(b, loc, type, zero).getResult());
  b.setInsertionPointToStart(pick.elseBlock());
  scf::YieldOp::create(b, loc, t);
  return pick.getResult(0);
}

Value mlir::act::detail::flatten(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t n =
      type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic;
  auto flatType = RankedTensorType::get({n}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatType, input,
                                         collapseAll(0));
  if (type.getRank() > 1)
    return tensor::CollapseShapeOp::create(b, loc, flatType, input,
                                           collapseAll(type.getRank()));
  return input;
}

/// An element-wise parallel generic over `in`'s shape into a new tensor of
/// `elementType`.
static Value elementwise(OpBuilder &b, Location loc, Value in, Type elementType,
                         function_ref<Value(OpBuilder &, Location, Value)> fn) {
  auto type = cast<RankedTensorType>(in.getType());
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, in, d));
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), elementType, dyn);
  auto map = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{in}, ValueRange{init},
             ArrayRef<AffineMap>{map, map}, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, fn(nb, nl, args[0]));
             })
      .getResult(0);
}

/// `fn` element-wise from flat `in` into a new flat tensor of `type`
/// elements: on the GPU a kernel whose threads each store one 16-byte piece
/// (a warp's store is then 512 contiguous bytes) and a generic for the
/// rest, else one generic. (Pieces of 16 input bytes, which made an fp8
/// decode store 64 bytes per thread, measured 0.54 of a device copy on an
/// H100.)
static Value
byteElementwise(OpBuilder &b, Location loc, Value in, Type type,
                const LoweringOptions &options,
                function_ref<Value(OpBuilder &, Location, Value)> fn) {
  if (!isGpu(options))
    return elementwise(b, loc, in, type, fn);
  IndexMath ix{b, loc};
  int64_t perThread = 16 / elementBytes(type);
  Value n = b.createOrFold<tensor::DimOp>(loc, in, 0);
  Value count = ix.mul(ix.div(n, perThread), perThread);
  if (staticOr(count) == 0)
    return elementwise(b, loc, in, type, fn);
  Value out =
      buildGpuElementwise(b, loc, in, n, count, perThread, type, options, fn);
  Value rest = ix.sub(n, count);
  if (staticOr(rest) == 0)
    return out;
  Value tail = elementwise(b, loc, slice(b, loc, in, count, rest), type, fn);
  return insert(b, loc, tail, out, count);
}

Value mlir::act::buildByteEncode(
    OpBuilder &b, Location loc, Value input, unsigned bits,
    const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value)> code) {
  Value flat = flatten(b, loc, input);
  Type codeType = b.getIntegerType(bits);
  return byteElementwise(
      b, loc, flat, codeType, options,
      [&](OpBuilder &nb, Location nl, Value x) -> Value {
        Value c = code(nb, nl, x);
        return bits == 32 ? c : arith::TruncIOp::create(nb, nl, codeType, c);
      });
}

Value mlir::act::unflatten(OpBuilder &b, Location loc, Value flat,
                           RankedTensorType type, ValueRange dynamicSizes) {
  auto flatType = cast<RankedTensorType>(flat.getType());
  auto shapedType = type.clone(flatType.getElementType());
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, shapedType, flat,
                                           collapseAll(0));
  if (type.getRank() == 1)
    return flat;
  SmallVector<OpFoldResult> sizes;
  unsigned next = 0;
  for (int64_t d : type.getShape())
    sizes.push_back(ShapedType::isDynamic(d)
                        ? OpFoldResult(dynamicSizes[next++])
                        : OpFoldResult(b.getIndexAttr(d)));
  if (type.getNumDynamicDims() > 1) {
    // An expand_shape whose one group has several dynamic sizes crashes
    // upstream's expand-strided-metadata (LLVM 22): reshape by a shape
    // tensor instead, which bufferizes to memref.reshape.
    SmallVector<Value> shape;
    for (OpFoldResult size : sizes)
      shape.push_back(isa<Value>(size)
                          ? cast<Value>(size)
                          : indexConst(b, loc, *getConstantIntValue(size)));
    Value shapeTensor = tensor::FromElementsOp::create(b, loc, shape);
    return tensor::ReshapeOp::create(b, loc, shapedType, flat, shapeTensor);
  }
  return tensor::ExpandShapeOp::create(b, loc, shapedType, flat,
                                       collapseAll(type.getRank()), sizes);
}

Value mlir::act::buildByteDecode(
    OpBuilder &b, Location loc, Value payload, RankedTensorType type,
    ValueRange dynamicSizes, const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value)> value) {
  auto decodeOne = [&](OpBuilder &nb, Location nl, Value c) -> Value {
    if (!c.getType().isInteger(32))
      c = arith::ExtUIOp::create(nb, nl, nb.getI32Type(), c);
    return value(nb, nl, c);
  };
  if (!isGpu(options)) {
    Value shaped = unflatten(b, loc, payload, type, dynamicSizes);
    return elementwise(b, loc, shaped, type.getElementType(), decodeOne);
  }
  Value flat = byteElementwise(b, loc, payload, type.getElementType(), options,
                               decodeOne);
  return unflatten(b, loc, flat, type, dynamicSizes);
}
