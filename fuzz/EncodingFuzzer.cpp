//===- EncodingFuzzer.cpp - libFuzzer target: encoding attributes ---------===//
//
// Any text: parsed as an attribute with act's dialect loaded. An encoding
// that parses verified, so its storage arithmetic and type checks must hold
// for any tensor: sizes never negative, never overflowing.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"
#include "act/InitAll.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdlib>
#include <memory>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context for many inputs (creating one per input would dominate),
  // renewed every 20,000: a context keeps every attribute and type it ever
  // uniqued, so a single one grows without bound over millions of inputs.
  static std::unique_ptr<MLIRContext> owner;
  static unsigned uses = 0;
  if (!owner || ++uses % 20000 == 0) {
    DialectRegistry registry;
    act::registerAllDialects(registry);
    owner = std::make_unique<MLIRContext>(registry);
    owner->loadAllAvailableDialects();
    // Parse errors are the expected outcome of most inputs.
    owner->getDiagEngine().registerHandler([](Diagnostic &) {});
  }
  MLIRContext *context = owner.get();
  std::string text(reinterpret_cast<const char *>(data), size);
  Attribute attr = parseAttribute(text, context);
  auto encoding = dyn_cast_or_null<act::EncodingAttrInterface>(attr);
  if (!encoding)
    return 0;
  Type f32 = Float32Type::get(context), f16 = Float16Type::get(context);
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(4099), int64_t(1) << 40,
                    act::kMaxSizedElements})
    for (Type element : {f32, f16}) {
      act::StorageLayout layout = encoding.getStorageLayout(n, element);
      if (layout.payloadBytes < 0 || layout.metadataBytes < 0 ||
          layout.paddingBytes < 0 || layout.getTotalBytes() < 0)
        std::abort();
    }
  auto type = RankedTensorType::get({3, ShapedType::kDynamic, 5}, f32);
  (void)encoding.verifyTensorType(
      type, [&] { return emitError(UnknownLoc::get(context)); });
  (void)encoding.getDecodedType(type);
  (void)encoding.isLossless(f32);
  return 0;
}
