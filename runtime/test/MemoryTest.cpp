//===- MemoryTest.cpp - allocation accounting -----------------------------===//

#include "act/runtime/Memory.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace act::rt;

TEST(Memory, CountsLiveAndPeak) {
  MemoryStats before = getMemoryStats();
  resetPeak();
  void *a = _mlir_memref_to_llvm_alloc(1000);
  void *b = _mlir_memref_to_llvm_aligned_alloc(64, 5000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  std::memset(a, 1, 1000);
  std::memset(b, 2, 5000);
  MemoryStats during = getMemoryStats();
  EXPECT_EQ(during.liveBytes - before.liveBytes, 6000);
  EXPECT_EQ(during.allocations - before.allocations, 2);
  _mlir_memref_to_llvm_free(a);
  void *c = _mlir_memref_to_llvm_alloc(100);
  MemoryStats after = getMemoryStats();
  EXPECT_EQ(after.liveBytes - before.liveBytes, 5100);
  EXPECT_EQ(after.peakBytes - before.liveBytes, 6000);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(nullptr);
  EXPECT_EQ(getMemoryStats().liveBytes, before.liveBytes);
}

TEST(Memory, HooksAreListed) {
  size_t count = 0;
  const HookSymbol *hooks = getAllocationHooks(count);
  ASSERT_EQ(count, 6u);
  EXPECT_STREQ(hooks[0].name, "_mlir_memref_to_llvm_alloc");
  EXPECT_EQ(hooks[2].address,
            reinterpret_cast<void *>(&_mlir_memref_to_llvm_free));
  EXPECT_STREQ(hooks[3].name, "act_record_storage");
  EXPECT_STREQ(hooks[4].name, "act_shrink_buffer");
  EXPECT_STREQ(hooks[5].name, "act_release_argument");
}

// act_release_argument reaches this thread's handler, and nothing without
// one (or on another thread).
TEST(Memory, ArgumentReleaseReachesTheThreadsHandler) {
  std::vector<int64_t> released;
  auto handler = [](void *context, int64_t index) {
    static_cast<std::vector<int64_t> *>(context)->push_back(index);
  };
  act_release_argument(3); // no handler: nothing
  auto previous = act::rt::setArgumentRelease(handler, &released);
  EXPECT_EQ(previous.first, nullptr);
  act_release_argument(2);
  std::thread([] { act_release_argument(7); }).join();
  act_release_argument(0);
  act::rt::setArgumentRelease(previous.first, previous.second);
  act_release_argument(5);
  EXPECT_EQ(released, (std::vector<int64_t>{2, 0}));
}

// A shrunk block keeps its address and its first bytes; the counters drop
// by the tail; the tail is reused by the allocator; sizes at or above the
// block's, and backings that cannot shrink, change nothing.
TEST(Memory, ShrinkKeepsTheHeadInPlace) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's realloc always moves: no shrinking";
#endif
#endif
  MemoryStats before = getMemoryStats();
  resetPeak();
  const size_t big = size_t(4) << 20;
  auto *a =
      static_cast<unsigned char *>(_mlir_memref_to_llvm_aligned_alloc(64, big));
  ASSERT_NE(a, nullptr);
  for (size_t i = 0; i < big; ++i)
    a[i] = static_cast<unsigned char>(i * 7);
  act_shrink_buffer(int64_t(reinterpret_cast<uintptr_t>(a)), int64_t(big));
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, int64_t(big));
  act_shrink_buffer(int64_t(reinterpret_cast<uintptr_t>(a)), 1 << 20);
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, 1 << 20);
  EXPECT_EQ(getMemoryStats().peakBytes - before.liveBytes, int64_t(big));
  bool same = true;
  for (size_t i = 0; i < (size_t(1) << 20); ++i)
    same &= a[i] == static_cast<unsigned char>(i * 7);
  EXPECT_TRUE(same);
  // The freed tail serves the next block: it lies inside the old block.
  void *b = _mlir_memref_to_llvm_aligned_alloc(64, size_t(2) << 20);
  EXPECT_GT(reinterpret_cast<uintptr_t>(b), reinterpret_cast<uintptr_t>(a));
  EXPECT_LT(reinterpret_cast<uintptr_t>(b),
            reinterpret_cast<uintptr_t>(a) + big);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(getMemoryStats().liveBytes, before.liveBytes);

  // A backing that keeps headers apart: nothing is written around the
  // block (managed memory stays where the GPU last touched it), and the
  // hooks still count and free it.
  static std::vector<std::pair<unsigned char *, size_t>> blocks;
  Backing apart{[](size_t bytes) -> void * {
                  auto *block =
                      static_cast<unsigned char *>(std::malloc(bytes));
                  std::memset(block, 0xab, bytes);
                  blocks.push_back({block, bytes});
                  return block;
                },
                std::free};
  apart.headersApart = true;
  setBacking(apart);
  auto *p = static_cast<unsigned char *>(
      _mlir_memref_to_llvm_aligned_alloc(64, 4096));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, 4096);
  ASSERT_EQ(blocks.size(), 1u);
  bool untouched = true;
  for (size_t i = 0; i < blocks[0].second; ++i)
    untouched &= blocks[0].first[i] == 0xab;
  EXPECT_TRUE(untouched);
  act_shrink_buffer(int64_t(reinterpret_cast<uintptr_t>(p)), 10);
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, 4096);
  _mlir_memref_to_llvm_free(p);
  EXPECT_EQ(getMemoryStats().liveBytes, before.liveBytes);

  setBacking({std::malloc, std::free});
  void *c = _mlir_memref_to_llvm_alloc(1000);
  act_shrink_buffer(int64_t(reinterpret_cast<uintptr_t>(c)), 10);
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, 1000);
  _mlir_memref_to_llvm_free(c);
  setBacking(getMallocBacking());
}

// Encodes report their storage by slot; a value stored twice (mask and
// value) reports from two slots; a later run's report replaces the slot's.
TEST(Memory, StorageRecordsBySlot) {
  clearStorageRecords();
  act_record_storage(/*id=*/4, /*slot=*/0, 8192);
  act_record_storage(4, 1, 139264);
  act_record_storage(9, 2, 100);
  act_record_storage(9, 2, 120);
  std::vector<StorageRecord> records = getStorageRecords();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, 4);
  EXPECT_EQ(records[0].bytes, 8192);
  EXPECT_EQ(records[1].slot, 1);
  EXPECT_EQ(records[1].bytes, 139264);
  EXPECT_EQ(records[2].id, 9);
  EXPECT_EQ(records[2].bytes, 120);
  clearStorageRecords();
  EXPECT_TRUE(getStorageRecords().empty());
}

namespace {
int backingAllocations = 0, backingReleases = 0;
void *countingAllocate(size_t bytes) {
  ++backingAllocations;
  return std::malloc(bytes);
}
void countingRelease(void *base) {
  ++backingReleases;
  std::free(base);
}
} // namespace

TEST(Memory, HooksTakeMemoryFromTheBacking) {
  // act-run's GPU mode swaps in managed memory; the accounting is the same.
  MemoryStats before = getMemoryStats();
  setBacking({countingAllocate, countingRelease});
  void *a = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(getMemoryStats().liveBytes - before.liveBytes, 1000);
  _mlir_memref_to_llvm_free(a);
  setBacking(getMallocBacking());
  EXPECT_EQ(backingAllocations, 1);
  EXPECT_EQ(backingReleases, 1);
  EXPECT_EQ(getMemoryStats().liveBytes, before.liveBytes);
}
