//===- ProfileFuzzer.cpp - libFuzzer target: the profile reader -----------===//
//
// Any bytes: readProfile either fails with a message or returns a profile
// whose fields it validated; it never crashes, however deep or large the
// input.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "act/Analysis/Profile.h"

#include <cmath>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  act::fuzz::FuzzFile file(data, size);
  if (!file.ok())
    return 0;
  llvm::Expected<mlir::act::Profile> profile =
      mlir::act::readProfile(file.path());
  if (!profile) {
    if (llvm::toString(profile.takeError()).empty())
      std::abort(); // A failure says why.
    return 0;
  }
  for (const mlir::act::ProfileTensor &t : profile->tensors)
    if (t.elements < 0 || !(t.sensitivity >= 0) || std::isinf(t.sensitivity))
      std::abort(); // readProfile promises validated fields.
  return 0;
}
