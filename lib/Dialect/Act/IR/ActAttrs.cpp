//===- ActAttrs.cpp - act encodings ---------------------------------------===//
//
// The encodings' parameters, their storage arithmetic and what they decode
// to. The storage layout is documented in docs/Encodings.md; how each
// encoding lowers is its model in lib/Conversion/ActToLinalg/
// Encoding<Name>.cpp.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::act;

#include "act/Dialect/Act/IR/ActEnums.cpp.inc"
#include "act/Dialect/Act/IR/ActInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "act/Dialect/Act/IR/ActAttrs.cpp.inc"

void ActDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "act/Dialect/Act/IR/ActAttrs.cpp.inc"
      >();
}

/// Value encodings (quant, float) hold floating-point tensors.
static LogicalResult
verifyFloatElements(StringRef encoding, RankedTensorType type,
                    function_ref<InFlightDiagnostic()> emitError) {
  if (isa<FloatType>(type.getElementType()))
    return success();
  return emitError() << "#act." << encoding
                     << " encodes floating-point tensors, not " << type;
}

//===----------------------------------------------------------------------===//
// QuantEncodingAttr
//===----------------------------------------------------------------------===//

/// The code widths a quantizer packs into 32-bit words.
static bool isQuantizerBits(unsigned bits) {
  return bits == 1 || bits == 2 || bits == 4 || bits == 8;
}

/// The quantization parameters of #act.quant, and of the residual of
/// #act.division (`encoding` names which in the message).
static LogicalResult
verifyQuantParameters(function_ref<InFlightDiagnostic()> emitError,
                      StringRef encoding, unsigned bits, int64_t group) {
  if (!isQuantizerBits(bits))
    // A negative literal wraps around the unsigned parameter: print it as
    // written (bits = -1, not 4294967295).
    return emitError() << "#act." << encoding
                       << " bits must be one of 1, 2, 4, 8; got "
                       << static_cast<int32_t>(bits);
  if (group <= 0)
    return emitError() << "#act." << encoding
                       << " group size must be positive; got " << group;
  return success();
}

LogicalResult
QuantEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          unsigned bits, int64_t group, Rounding, StatFormat) {
  return verifyQuantParameters(emitError, "quant", bits, group);
}

LogicalResult QuantEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("quant", type, emitError);
}

RankedTensorType
QuantEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool QuantEncodingAttr::isLossless(Type) const { return false; }

bool QuantEncodingAttr::isStochastic() const {
  return getRounding() == Rounding::Stochastic;
}

std::optional<unsigned> QuantEncodingAttr::getQuantizerBits() const {
  return getBits();
}

EncodingAttrInterface
QuantEncodingAttr::withQuantizerBits(unsigned bits) const {
  if (!isQuantizerBits(bits))
    return nullptr;
  return QuantEncodingAttr::get(getContext(), bits, getGroup(), getRounding(),
                                getStats());
}

StorageLayout QuantEncodingAttr::getStorageLayout(int64_t numElements,
                                                  Type) const {
  // Two statistics per group, the minimum and the scale: f32 or bf16.
  int64_t groups = (numElements + getGroup() - 1) / getGroup();
  return StorageLayout::packed(numElements, getBits(), 32 / getBits(),
                               groups * 2 * getStatBytes(getStats()));
}

//===----------------------------------------------------------------------===//
// RuntimeQuantEncodingAttr
//===----------------------------------------------------------------------===//

/// f32 stored as it is: the widest choice of #act.runtime_quant.
static constexpr unsigned kUncompressedBits = 32;

LogicalResult
RuntimeQuantEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<unsigned> choices, unsigned bits,
                                 int64_t group, Rounding, StatFormat) {
  if (choices.empty())
    return emitError() << "#act.runtime_quant needs at least one width";
  for (auto [i, c] : llvm::enumerate(choices)) {
    if (!isQuantizerBits(c) && c != kUncompressedBits)
      return emitError() << "#act.runtime_quant widths must be 1, 2, 4, 8 or "
                            "32; got "
                         << static_cast<int32_t>(c);
    if (llvm::is_contained(choices.take_front(i), c))
      return emitError() << "#act.runtime_quant lists width " << c << " twice";
  }
  if (!llvm::is_contained(choices, bits))
    return emitError() << "#act.runtime_quant bits = "
                       << static_cast<int32_t>(bits)
                       << " is not one of its widths";
  if (group <= 0)
    return emitError() << "#act.runtime_quant group size must be positive; got "
                       << group;
  return success();
}

QuantEncodingAttr RuntimeQuantEncodingAttr::getQuantAt(unsigned width) const {
  return QuantEncodingAttr::get(getContext(), width, getGroup(), getRounding(),
                                getStats());
}

LogicalResult RuntimeQuantEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("runtime_quant", type, emitError);
}

RankedTensorType
RuntimeQuantEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool RuntimeQuantEncodingAttr::isLossless(Type) const { return false; }

bool RuntimeQuantEncodingAttr::isStochastic() const {
  return getRounding() == Rounding::Stochastic;
}

bool RuntimeQuantEncodingAttr::hasRuntimeBits() const { return true; }

std::optional<unsigned> RuntimeQuantEncodingAttr::getQuantizerBits() const {
  if (getBits() == kUncompressedBits)
    return std::nullopt;
  return getBits();
}

EncodingAttrInterface
RuntimeQuantEncodingAttr::withQuantizerBits(unsigned bits) const {
  if (!llvm::is_contained(getChoices(), bits))
    return nullptr;
  return RuntimeQuantEncodingAttr::get(getContext(), getChoices(), bits,
                                       getGroup(), getRounding(), getStats());
}

StorageLayout RuntimeQuantEncodingAttr::getStorageLayout(int64_t numElements,
                                                         Type type) const {
  // At the planned width: #act.quant's (its group statistics), or the
  // elements as they are at 32, plus the width itself.
  StorageLayout layout =
      getBits() == kUncompressedBits
          ? StorageLayout::packed(numElements, kUncompressedBits, 1,
                                  (numElements + getGroup() - 1) / getGroup() *
                                      2 * getStatBytes(getStats()))
          : getQuantAt(getBits()).getStorageLayout(numElements, type);
  layout.metadataBytes += sizeof(int32_t);
  return layout;
}

//===----------------------------------------------------------------------===//
// FloatEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult FloatEncodingAttr::verify(function_ref<InFlightDiagnostic()>,
                                        FloatFormat) {
  return success();
}

unsigned FloatEncodingAttr::getElementBits() const {
  switch (getFormat()) {
  case FloatFormat::F16:
  case FloatFormat::BF16:
    return 16;
  case FloatFormat::FP10:
    return 10;
  case FloatFormat::E4M3:
  case FloatFormat::E5M2:
    return 8;
  }
  llvm_unreachable("unknown float format");
}

unsigned FloatEncodingAttr::getElementsPerWord() const {
  // fp10 packs three to a word and leaves two bits unused.
  return 32 / getElementBits();
}

LogicalResult FloatEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("float", type, emitError);
}

RankedTensorType
FloatEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool FloatEncodingAttr::isLossless(Type elementType) const {
  switch (getFormat()) {
  case FloatFormat::F16:
    return elementType.isF16();
  case FloatFormat::BF16:
    return elementType.isBF16();
  default:
    return false;
  }
}

bool FloatEncodingAttr::isByteArray() const {
  return getElementBits() == 8 || getElementBits() == 16;
}

bool FloatEncodingAttr::isStochastic() const { return false; }

StorageLayout FloatEncodingAttr::getStorageLayout(int64_t numElements,
                                                  Type) const {
  if (isByteArray())
    return {numElements * getElementBits() / 8, 0, 0};
  return StorageLayout::packed(numElements, getElementBits(),
                               getElementsPerWord());
}

//===----------------------------------------------------------------------===//
// MaskEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult MaskEncodingAttr::verify(function_ref<InFlightDiagnostic()>,
                                       MaskPredicate) {
  return success();
}

LogicalResult MaskEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  if (type.getElementType().isIntOrFloat())
    return success();
  return emitError()
         << "#act.mask needs integer or floating-point elements, not " << type;
}

RankedTensorType MaskEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type.clone(IntegerType::get(getContext(), 1));
}

bool MaskEncodingAttr::isLossless(Type) const { return true; }

bool MaskEncodingAttr::isStochastic() const { return false; }

StorageLayout MaskEncodingAttr::getStorageLayout(int64_t numElements,
                                                 Type) const {
  return StorageLayout::packed(numElements, 1, 32);
}

//===----------------------------------------------------------------------===//
// FewBitEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
FewBitEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           unsigned bits, DenseF32ArrayAttr boundaries,
                           DenseF32ArrayAttr values) {
  if (bits < 1 || bits > 8)
    return emitError() << "#act.fewbit bits must be in 1..8; got "
                       << static_cast<int32_t>(bits);
  if (!boundaries || !values)
    return emitError() << "#act.fewbit needs boundaries and values";
  int64_t pieces = int64_t(1) << bits;
  if (int64_t(values.size()) != pieces)
    return emitError() << "#act.fewbit<bits = " << bits << "> needs " << pieces
                       << " values; got " << values.size();
  if (int64_t(boundaries.size()) != pieces - 1)
    return emitError() << "#act.fewbit<bits = " << bits << "> needs "
                       << pieces - 1 << " boundaries; got "
                       << boundaries.size();
  ArrayRef<float> b = boundaries.asArrayRef();
  for (size_t j = 0; j < b.size(); ++j) {
    if (!std::isfinite(b[j]))
      return emitError() << "#act.fewbit boundary " << j << " is not finite";
    if (j > 0 && b[j] < b[j - 1])
      return emitError() << "#act.fewbit boundaries must be sorted: "
                         << "boundary " << j << " (" << b[j]
                         << ") is below boundary " << j - 1 << " (" << b[j - 1]
                         << ")";
  }
  for (auto [j, v] : llvm::enumerate(values.asArrayRef()))
    if (!std::isfinite(v))
      return emitError() << "#act.fewbit value " << j << " is not finite";
  return success();
}

LogicalResult FewBitEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("fewbit", type, emitError);
}

RankedTensorType
FewBitEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool FewBitEncodingAttr::isLossless(Type) const { return false; }

bool FewBitEncodingAttr::isStochastic() const { return false; }

StorageLayout FewBitEncodingAttr::getStorageLayout(int64_t numElements,
                                                   Type) const {
  return StorageLayout::packed(numElements, getBits(), getElementsPerWord());
}

//===----------------------------------------------------------------------===//
// IndexEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
IndexEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          unsigned bits) {
  if (bits < 1 || bits > 16)
    return emitError() << "#act.index bits must be in 1..16; got "
                       << static_cast<int32_t>(bits);
  return success();
}

LogicalResult IndexEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (!integer || integer.getWidth() <= getBits())
    return emitError() << "#act.index<bits = " << getBits()
                       << "> encodes integers wider than " << getBits()
                       << " bits, not " << type;
  return success();
}

RankedTensorType
IndexEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

// Exact for the values it promises to hold: [0, 2^bits).
bool IndexEncodingAttr::isLossless(Type) const { return true; }

bool IndexEncodingAttr::isStochastic() const { return false; }

StorageLayout IndexEncodingAttr::getStorageLayout(int64_t numElements,
                                                  Type) const {
  return StorageLayout::packed(numElements, getBits(), getElementsPerWord());
}

//===----------------------------------------------------------------------===//
// SparseEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
SparseEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           APFloat densityFloat, std::optional<FloatFormat>) {
  double density = densityFloat.convertToDouble();
  if (!(density >= 0.0 && density <= 1.0))
    return emitError() << "#act.sparse density must be in [0, 1]; got "
                       << density;
  return success();
}

FloatEncodingAttr SparseEncodingAttr::getValuesEncoding() const {
  if (!getFormat())
    return nullptr;
  return FloatEncodingAttr::get(getContext(), *getFormat());
}

LogicalResult SparseEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  // With a format, the values are a float encoding's: float elements.
  if (getFormat() && !isa<FloatType>(type.getElementType()))
    return emitError() << "#act.sparse with format = "
                       << stringifyFloatFormat(*getFormat())
                       << " encodes floating-point tensors, not " << type;
  Type element = type.getElementType();
  if ((isa<FloatType>(element) || isa<IntegerType>(element)) &&
      element.getIntOrFloatBitWidth() >= 8 &&
      element.getIntOrFloatBitWidth() <= 64)
    return success();
  return emitError() << "#act.sparse encodes tensors of 8- to 64-bit floats "
                        "or integers, not "
                     << type;
}

RankedTensorType
SparseEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

// Every bit pattern (NaN payloads, -0.0) comes back, unless a narrower
// format rounds the values.
bool SparseEncodingAttr::isLossless(Type elementType) const {
  FloatEncodingAttr values = getValuesEncoding();
  return !values || values.isLossless(elementType);
}

bool SparseEncodingAttr::isStochastic() const { return false; }

StorageLayout SparseEncodingAttr::getStorageLayout(int64_t numElements,
                                                   Type elementType) const {
  // The bitmap (one bit per element, in 32-bit words) and the nonzero
  // values at full width or in `format`, at the declared density; the dense
  // fallback (values only) bounds it by the values' bytes. (The encode
  // decides the fallback on the elements themselves, before the values'
  // format.)
  int64_t nonzeros = static_cast<int64_t>(
      std::ceil(getDensityValue() * static_cast<double>(numElements)));
  bool dense = isSparseDenseFallback(numElements, nonzeros);
  int64_t stored = dense ? numElements : nonzeros;
  StorageLayout values;
  if (FloatEncodingAttr format = getValuesEncoding())
    values = format.getStorageLayout(stored, elementType);
  else
    values.payloadBytes = stored * (elementType.getIntOrFloatBitWidth() / 8);
  StorageLayout layout =
      dense ? StorageLayout() : StorageLayout::packed(numElements, 1, 32);
  layout.payloadBytes += values.payloadBytes;
  layout.paddingBytes += values.paddingBytes;
  layout.estimated = true;
  return layout;
}

//===----------------------------------------------------------------------===//
// DivisionEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
DivisionEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t block, unsigned bits, int64_t group,
                             Rounding, SpatialLayout) {
  if (block < 1 || block > 1024)
    return emitError() << "#act.division block must be in 1..1024; got "
                       << block;
  return verifyQuantParameters(emitError, "division", bits, group);
}

std::optional<unsigned> DivisionEncodingAttr::getQuantizerBits() const {
  return getBits();
}

EncodingAttrInterface
DivisionEncodingAttr::withQuantizerBits(unsigned bits) const {
  if (!isQuantizerBits(bits))
    return nullptr;
  return DivisionEncodingAttr::get(getContext(), getBlock(), bits, getGroup(),
                                   getRounding(), getLayout());
}

QuantEncodingAttr DivisionEncodingAttr::getResidualEncoding() const {
  return QuantEncodingAttr::get(getContext(), getBits(), getGroup(),
                                getRounding(), StatFormat::F32);
}

std::pair<unsigned, unsigned> DivisionEncodingAttr::getSpatialDims() const {
  if (getLayout() == SpatialLayout::NHWC)
    return {1, 2};
  return {2, 3};
}

SmallVector<int64_t>
DivisionEncodingAttr::getAveragesShape(ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> averages(shape);
  auto [h, w] = getSpatialDims();
  for (unsigned d : {h, w})
    if (!ShapedType::isDynamic(averages[d]))
      averages[d] = llvm::divideCeil(averages[d], getBlock());
  return averages;
}

LogicalResult DivisionEncodingAttr::verifyTensorType(
    RankedTensorType type, function_ref<InFlightDiagnostic()> emitError) const {
  if (failed(verifyFloatElements("division", type, emitError)))
    return failure();
  auto [h, w] = getSpatialDims();
  if (type.getRank() != 4 || type.isDynamicDim(h) || type.isDynamicDim(w))
    return emitError() << "#act.division encodes spatial maps (rank 4, "
                       << stringifySpatialLayout(getLayout())
                       << ", static H and W), not " << type;
  return success();
}

RankedTensorType
DivisionEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool DivisionEncodingAttr::isLossless(Type) const { return false; }

bool DivisionEncodingAttr::isStochastic() const {
  return getRounding() == Rounding::Stochastic;
}

StorageLayout DivisionEncodingAttr::getStorageLayout(int64_t numElements,
                                                     Type elementType) const {
  // Without the shape: maps whose sides are multiples of the block.
  StorageLayout layout =
      getResidualEncoding().getStorageLayout(numElements, elementType);
  layout.payloadBytes +=
      llvm::divideCeil(numElements, getBlock() * getBlock()) *
      llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  return layout;
}

StorageLayout
DivisionEncodingAttr::getShapedStorageLayout(ArrayRef<int64_t> shape,
                                             Type elementType) const {
  // The residual's quantization, then the block averages: element data
  // (payload) in the element type, not per-group side data.
  int64_t n = *getSizedElementCount(shape);
  StorageLayout layout = getResidualEncoding().getStorageLayout(n, elementType);
  int64_t averages = *getSizedElementCount(getAveragesShape(shape));
  layout.payloadBytes +=
      averages * llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  return layout;
}

//===----------------------------------------------------------------------===//
// RecomputeEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult RecomputeEncodingAttr::verifyTensorType(
    RankedTensorType, function_ref<InFlightDiagnostic()>) const {
  return success();
}

RankedTensorType
RecomputeEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

// The same ops on the same inputs: the same bits.
bool RecomputeEncodingAttr::isLossless(Type) const { return true; }

bool RecomputeEncodingAttr::isStochastic() const { return false; }

StorageLayout RecomputeEncodingAttr::getStorageLayout(int64_t, Type) const {
  return {};
}
