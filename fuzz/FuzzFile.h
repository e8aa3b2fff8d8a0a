//===- FuzzFile.h - a fuzzer's input as a file ------------------*- C++ -*-===//
//
// The readers under test take paths: the input is written to an anonymous
// in-memory file and read back through /proc/self/fd.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_FUZZ_FUZZFILE_H
#define ACT_FUZZ_FUZZFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace act::fuzz {

/// A file holding `size` bytes of `data` for as long as it lives.
class FuzzFile {
public:
  FuzzFile(const uint8_t *data, size_t size) : fd(memfd_create("act-fuzz", 0)) {
    if (fd >= 0 && size)
      (void)!write(fd, data, size);
  }
  ~FuzzFile() {
    if (fd >= 0)
      close(fd);
  }
  FuzzFile(const FuzzFile &) = delete;
  FuzzFile &operator=(const FuzzFile &) = delete;

  bool ok() const { return fd >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd;
};

} // namespace act::fuzz

#endif // ACT_FUZZ_FUZZFILE_H
