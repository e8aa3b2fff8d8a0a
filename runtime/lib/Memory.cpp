//===- Memory.cpp - allocation accounting ---------------------------------===//
//
// Every block carries a 16-byte header right before the returned pointer:
// the pointer malloc returned and the requested size. Counters are atomics,
// so lowered code may allocate from several threads.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Memory.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include <malloc.h>

namespace {

std::atomic<int64_t> liveBytes{0}, peakBytes{0}, allocations{0};

void *mallocAllocate(size_t bytes) {
  act::rt::keepFreedMemory();
  return std::malloc(bytes);
}
void mallocRelease(void *base) { std::free(base); }
/// glibc shrinks a heap block where it is: the tail becomes a free chunk
/// (keepFreedMemory leaves no block to mmap). A block that moved anyway
/// would leave the caller's pointer dangling: that is fatal.
bool mallocShrink(void *base, size_t bytes) {
#if defined(__SANITIZE_ADDRESS__) || defined(__has_feature)
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
  // AddressSanitizer's realloc always moves a block: it stays whole (the
  // accounting keeps its size; scripts/test.sh --sanitize).
  (void)base;
  (void)bytes;
  return false;
#endif
#endif
  void *same = std::realloc(base, bytes);
  if (same != base) {
    std::fprintf(stderr, "act runtime: realloc moved a block it was asked "
                         "to shrink in place\n");
    std::abort();
  }
  return true;
}
constexpr act::rt::Backing mallocBacking{mallocAllocate, mallocRelease,
                                         mallocShrink};
act::rt::Backing backing = mallocBacking;

struct Header {
  void *base;
  size_t size;
};
static_assert(sizeof(Header) == 16, "header keeps 16-byte alignment");

void account(int64_t delta) {
  int64_t live = liveBytes.fetch_add(delta) + delta;
  int64_t peak = peakBytes.load();
  while (live > peak && !peakBytes.compare_exchange_weak(peak, live)) {
  }
}

/// Headers of the blocks of a backing with headersApart, by block.
std::mutex apartMutex;
std::unordered_map<uintptr_t, Header> apart;
std::atomic<size_t> apartCount{0};

void *allocate(size_t alignment, size_t size) {
  if (alignment < alignof(Header))
    alignment = alignof(Header);
  size_t extra = backing.headersApart ? 0 : sizeof(Header);
  char *base = static_cast<char *>(backing.allocate(size + extra + alignment));
  if (!base)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(base) + extra;
  uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  if (backing.headersApart) {
    std::lock_guard<std::mutex> lock(apartMutex);
    apart[aligned] = {base, size};
    apartCount.store(apart.size());
  } else {
    auto *header = reinterpret_cast<Header *>(aligned) - 1;
    header->base = base;
    header->size = size;
  }
  allocations.fetch_add(1);
  account(int64_t(size));
  return reinterpret_cast<void *>(aligned);
}

/// The header of the block at `ptr` (an aligned pointer allocate returned),
/// where it is kept; `take` removes a header kept apart.
Header getHeader(void *ptr, bool take) {
  if (apartCount.load()) {
    std::lock_guard<std::mutex> lock(apartMutex);
    auto it = apart.find(reinterpret_cast<uintptr_t>(ptr));
    if (it != apart.end()) {
      Header header = it->second;
      if (take) {
        apart.erase(it);
        apartCount.store(apart.size());
      }
      return header;
    }
  }
  return *(static_cast<Header *>(ptr) - 1);
}

} // namespace

/// A training step frees and allocates the same large buffers every step.
/// glibc serves blocks above its mmap threshold with mmap and returns freed
/// heap tops to the OS, so each step page-faulted and zeroed its
/// activations afresh (measured: the VGG-style CIFAR step took 101 ms
/// instead of 56). Like PyTorch's caching allocators, act keeps freed memory
/// for reuse: everything from the heap, no trimming. Done once, before the
/// first block.
void act::rt::keepFreedMemory() {
  static const bool once = [] {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    return true;
  }();
  (void)once;
}

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(16, size);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  return allocate(alignment, size);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  Header header = getHeader(ptr, /*take=*/true);
  account(-int64_t(header.size));
  backing.release(header.base);
}

extern "C" void act_shrink_buffer(int64_t ptr, int64_t bytes) {
  // (A backing that keeps headers apart is device memory: it cannot
  // shrink.)
  if (backing.headersApart || !backing.shrink)
    return;
  auto *header = reinterpret_cast<Header *>(ptr) - 1;
  if (bytes < 0 || size_t(bytes) >= header->size)
    return;
  size_t offset = size_t(ptr) - reinterpret_cast<uintptr_t>(header->base);
  if (!backing.shrink(header->base, offset + size_t(bytes)))
    return;
  account(int64_t(bytes) - int64_t(header->size));
  header->size = size_t(bytes);
}

namespace {
thread_local act::rt::ArgumentRelease releaseHandler = nullptr;
thread_local void *releaseContext = nullptr;
} // namespace

extern "C" void act_release_argument(int64_t index) {
  if (releaseHandler)
    releaseHandler(releaseContext, index);
}

std::pair<act::rt::ArgumentRelease, void *>
act::rt::setArgumentRelease(ArgumentRelease handler, void *context) {
  std::pair<ArgumentRelease, void *> previous{releaseHandler, releaseContext};
  releaseHandler = handler;
  releaseContext = context;
  return previous;
}

namespace {
std::mutex storageMutex;
/// slot -> (id, bytes).
std::map<int64_t, std::pair<int64_t, int64_t>> storageBytes;
} // namespace

extern "C" void act_record_storage(int64_t id, int64_t slot, int64_t bytes) {
  std::lock_guard<std::mutex> lock(storageMutex);
  storageBytes[slot] = {id, bytes};
}

std::vector<act::rt::StorageRecord> act::rt::getStorageRecords() {
  std::lock_guard<std::mutex> lock(storageMutex);
  std::vector<StorageRecord> records;
  for (auto &[slot, record] : storageBytes)
    records.push_back({record.first, slot, record.second});
  return records;
}

void act::rt::clearStorageRecords() {
  std::lock_guard<std::mutex> lock(storageMutex);
  storageBytes.clear();
}

void act::rt::setBacking(Backing b) { backing = b; }

act::rt::Backing act::rt::getMallocBacking() { return mallocBacking; }

act::rt::MemoryStats act::rt::getMemoryStats() {
  return {liveBytes.load(), peakBytes.load(), allocations.load()};
}

void act::rt::resetPeak() { peakBytes.store(liveBytes.load()); }

void act::rt::notePeakAbove(int64_t bytes) {
  int64_t most = liveBytes.load() + bytes;
  int64_t peak = peakBytes.load();
  while (most > peak && !peakBytes.compare_exchange_weak(peak, most)) {
  }
}

const act::rt::HookSymbol *act::rt::getAllocationHooks(size_t &count) {
  static const HookSymbol hooks[] = {
      {"_mlir_memref_to_llvm_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc)},
      {"_mlir_memref_to_llvm_aligned_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc)},
      {"_mlir_memref_to_llvm_free",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_free)},
      {"act_record_storage", reinterpret_cast<void *>(&act_record_storage)},
      {"act_shrink_buffer", reinterpret_cast<void *>(&act_shrink_buffer)},
      {"act_release_argument", reinterpret_cast<void *>(&act_release_argument)},
  };
  count = sizeof(hooks) / sizeof(hooks[0]);
  return hooks;
}
