//===- OptionLoc.h - the location of a pass option --------------*- C++ -*-===//
//
// A pass option comes from the command line or a pipeline string, not from
// the IR, so an error about it has no file:line:col in the input. It is
// reported at a location whose "file" names the option as the user wrote it,
// so diagnostics read "act-allocate-bits option 'group':0:0: error: ...",
// never "<unknown>:0:". (A NameLoc would print as "<unknown>:0: error:
// loc(...)" through the source manager's handler.)
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_OPTIONLOC_H
#define ACT_SUPPORT_OPTIONLOC_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <utility>

namespace mlir::act {

/// The location of option `option` of pass (or pipeline) `pass`.
inline Location getOptionLoc(MLIRContext *context, llvm::StringRef pass,
                             llvm::StringRef option) {
  return FileLineColLoc::get(
      StringAttr::get(context, llvm::Twine(pass) + " option '" + option + "'"),
      0, 0);
}

/// Options (name, value) of pass `pass` that may be 0 but not negative:
/// success, or an error at the first negative one.
inline LogicalResult checkNonNegativeOptions(
    MLIRContext *context, llvm::StringRef pass,
    llvm::ArrayRef<std::pair<llvm::StringRef, int64_t>> options) {
  for (auto [name, value] : options)
    if (value < 0)
      return emitError(getOptionLoc(context, pass, name))
             << pass << ": " << name << " must be 0 or positive, got " << value;
  return success();
}

} // namespace mlir::act

#endif // ACT_SUPPORT_OPTIONLOC_H
