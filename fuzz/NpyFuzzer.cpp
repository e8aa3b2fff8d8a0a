//===- NpyFuzzer.cpp - libFuzzer target: the .npy reader ------------------===//
//
// Any bytes: readNpy either fails with a message or returns an array whose
// data is exactly what its shape and dtype say, never crashes, never
// allocates more than the file holds.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "act/runtime/Npy.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  act::fuzz::FuzzFile file(data, size);
  if (!file.ok())
    return 0;
  act::rt::NpyArray array;
  std::string error;
  if (!act::rt::readNpy(file.path(), array, error)) {
    if (error.empty())
      std::abort(); // A failure says why.
    return 0;
  }
  if (array.data.size() > size ||
      array.data.size() != size_t(array.numElements()) * array.elementBytes())
    std::abort();
  return 0;
}
