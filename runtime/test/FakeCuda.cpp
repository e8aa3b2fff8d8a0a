//===- FakeCuda.cpp - a CUDA driver stand-in for the runtime's tests ------===//
//
// Every entry point of CudaSymbols.def, over host memory: allocations are
// malloc'ed, copies and fills run at once, streams, events, modules and
// functions are dummies. FakeCudaTest loads it through ACT_CUDA_DRIVER, so
// the runtime's CUDA layer (the argument passing, the error paths) is
// tested without a GPU. ACT_FAKE_CUDA_UNLOAD_ERROR sets what
// cuModuleUnload returns (4, CUDA_ERROR_DEINITIALIZED, is what a driver
// that has shut down at process exit returns).
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {
int dummy;
void *handle() { return &dummy; }
} // namespace

extern "C" {
int cuInit(unsigned) { return 0; }
int cuDeviceGet(int *device, int) {
  *device = 0;
  return 0;
}
int cuCtxCreate_v2(void **context, unsigned, int) {
  *context = handle();
  return 0;
}
int cuCtxSetCurrent(void *) { return 0; }
int cuGetErrorString(int error, const char **message) {
  *message = error == 4 ? "driver shutting down" : "fake error";
  return 0;
}
int cuStreamCreate(void **stream, unsigned) {
  *stream = handle();
  return 0;
}
int cuStreamDestroy_v2(void *) { return 0; }
int cuStreamSynchronize(void *) { return 0; }
int cuStreamWaitEvent(void *, void *, unsigned) { return 0; }
int cuEventCreate(void **event, unsigned) {
  *event = handle();
  return 0;
}
int cuEventDestroy_v2(void *) { return 0; }
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return 0; }
int cuMemAlloc_v2(uint64_t *ptr, size_t bytes) {
  *ptr = reinterpret_cast<uint64_t>(std::malloc(bytes));
  return *ptr ? 0 : 2; // CUDA_ERROR_OUT_OF_MEMORY
}
int cuMemAllocManaged(uint64_t *ptr, size_t bytes, unsigned) {
  return cuMemAlloc_v2(ptr, bytes);
}
int cuMemFree_v2(uint64_t ptr) {
  std::free(reinterpret_cast<void *>(ptr));
  return 0;
}
int cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void *) {
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  return 0;
}
int cuMemsetD32Async(uint64_t dst, unsigned value, size_t count, void *) {
  auto *words = reinterpret_cast<uint32_t *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return 0;
}
int cuModuleLoadData(void **module, const void *) {
  *module = handle();
  return 0;
}
int cuModuleLoadDataEx(void **module, const void *, unsigned, int *, void **) {
  *module = handle();
  return 0;
}
int cuModuleUnload(void *) {
  const char *error = std::getenv("ACT_FAKE_CUDA_UNLOAD_ERROR");
  return error ? std::atoi(error) : 0;
}
int cuModuleGetFunction(void **function, void *, const char *) {
  *function = handle();
  return 0;
}
int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, void *, void **, void **) {
  return 0;
}
}
