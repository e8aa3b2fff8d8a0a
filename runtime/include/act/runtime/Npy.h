//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes version 1.0 .npy files (little-endian, C order) of the
// element types act-run exchanges: f32, f64, i64, i32, bool.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_NPY_H
#define ACT_RUNTIME_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace act::rt {

struct NpyArray {
  /// NumPy type string: "<f4", "<f8", "<i8", "<i4", "|b1".
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<char> data;

  int64_t numElements() const;
  unsigned elementBytes() const;
};

/// Reads `path`; on failure returns false and says why in `error`.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

} // namespace act::rt

#endif // ACT_RUNTIME_NPY_H
