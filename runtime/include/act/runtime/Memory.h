//===- Memory.h - allocation accounting -------------------------*- C++ -*-===//
//
// Code lowered with `finalize-memref-to-llvm{use-generic-functions=1}`
// allocates through _mlir_memref_to_llvm_alloc / _aligned_alloc / _free. The
// runtime defines them and counts the live and peak bytes of a real run.
// Plain C/C++: no MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_MEMORY_H
#define ACT_RUNTIME_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
/// Called by encodes lowered with convert-act-to-linalg{record-storage}:
/// the encode numbered `slot` in its module stored tensor `id` in `bytes`
/// bytes (its storage tensors' sizes at run time: what data-dependent
/// encodings really took). A tensor stored twice (a sign mask and the
/// value) reports from two slots.
void act_record_storage(int64_t id, int64_t slot, int64_t bytes);
/// Called where a memref.realloc shrinks a buffer (act-shrink-reallocs):
/// the block of `ptr` (an aligned pointer the hooks returned) keeps its
/// first `bytes` bytes, in place, and gives back the rest where the
/// backing can; the counters follow. Otherwise nothing changes.
void act_shrink_buffer(int64_t ptr, int64_t bytes);
/// Called by a function lowered with act-release-arguments after the last
/// use of its argument `index`: the caller's handler (setArgumentRelease)
/// may free it now. Without a handler, nothing happens.
void act_release_argument(int64_t index);
}

namespace act::rt {

struct MemoryStats {
  /// Bytes currently allocated through the hooks.
  int64_t liveBytes = 0;
  /// Largest liveBytes since the last resetPeak().
  int64_t peakBytes = 0;
  /// Number of allocations since start.
  int64_t allocations = 0;
};

MemoryStats getMemoryStats();

/// Where the hooks take memory from: malloc/free by default; act-run's GPU
/// mode sets CUDA managed memory (act::rt::getGpuBacking), which the
/// host code and the kernels both reach, so device memory is counted by the
/// same hooks. Set it before the first allocation, not while blocks from
/// another backing are live.
struct Backing {
  void *(*allocate)(size_t bytes);
  void (*release)(void *base);
  /// Gives back all of the block at `base` beyond its first `bytes`, in
  /// place (the block must not move); false if it cannot. Null: never.
  bool (*shrink)(void *base, size_t bytes) = nullptr;
  /// The hooks keep a block's base and size beside the block (host
  /// memory) instead of in a header before it: a header written by the
  /// host would pull the block's first page of managed memory to the host
  /// at every allocation, and the GPU's first touch would fault it back.
  bool headersApart = false;
};
void setBacking(Backing backing);
/// The default backing: malloc/free, and shrinking in place by realloc.
Backing getMallocBacking();
/// Freed memory stays in the process for reuse (glibc: no mmap, no
/// trimming), as PyTorch's caching allocators do: large buffers freed and
/// allocated again are not page-faulted and zeroed afresh. The default
/// backing does this before its first block; a program timing lowered code
/// outside a step (act-bench-kernels) calls it to run under the same rule.
void keepFreedMemory();
/// Sets the peak to the current live bytes.
void resetPeak();
/// Raises the peak to the live bytes plus `bytes`: what a call that ran
/// without the hooks (a CUDA graph's replay) held at its most, as its
/// capture measured it.
void notePeakAbove(int64_t bytes);

/// The bytes each encode stored, by slot, as the last act_record_storage
/// calls reported them (cleared by clearStorageRecords).
struct StorageRecord {
  int64_t id, slot, bytes;
};
std::vector<StorageRecord> getStorageRecords();
void clearStorageRecords();

/// The handler of act_release_argument calls on this thread (null: none);
/// returns the previous one. A caller that hands a compiled function
/// arguments it may drop early (a split backward's saved values) sets it
/// around the call.
using ArgumentRelease = void (*)(void *context, int64_t index);
std::pair<ArgumentRelease, void *> setArgumentRelease(ArgumentRelease handler,
                                                      void *context);

/// The allocation hooks (and act_record_storage, act_shrink_buffer,
/// act_release_argument) by name,
/// for a JIT's symbol table.
struct HookSymbol {
  const char *name;
  void *address;
};
const HookSymbol *getAllocationHooks(size_t &count);

} // namespace act::rt

#endif // ACT_RUNTIME_MEMORY_H
