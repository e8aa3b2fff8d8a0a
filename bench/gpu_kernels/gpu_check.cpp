//===- gpu_check.cpp - run act's GPU encode kernel and check it bitwise ----===//
//
// Linked with an object file that act-gpu-pipeline + mlir-translate + llc
// made from @encode (4-bit stochastic quantization of 2^20 f32), and with
// runtime/ (CUDA through dlopen, reference encoders). Needs no MLIR at run
// time, so it runs on a GPU machine without LLVM installed. Prints whether
// the GPU's payload and metadata equal the CPU reference bit for bit, and
// the kernel time next to a device-to-device copy of the input.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Cuda.h"
#include "act/runtime/Reference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {
template <typename T, int Rank> struct Memref {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};
struct Storage {
  Memref<uint32_t, 1> payload;
  Memref<float, 2> meta;
};
} // namespace

extern "C" void _mlir_ciface_encode(Storage *result, Memref<float, 1> *x,
                                    int64_t seed);

int main() {
  std::string error;
  if (!act::rt::loadCuda(error)) {
    std::fprintf(stderr, "gpu_check: %s\n", error.c_str());
    return 1;
  }
  // The lowered host code allocates through the runtime's hooks: managed
  // memory, which both the host and the kernels reach.
  act::rt::setBacking(act::rt::getManagedBacking());
  const int64_t n = 1 << 20;
  const int64_t seed = 0x5eed;
  auto *x = static_cast<float *>(mgpuMemAlloc(n * 4, nullptr, true));
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = dist(gen);
  Memref<float, 1> input{x, x, 0, {n}, {1}};

  Storage out;
  _mlir_ciface_encode(&out, &input, seed);
  act::rt::QuantParams p{4, 256, true, uint64_t(seed), 7};
  std::vector<uint32_t> words;
  std::vector<float> meta;
  act::rt::encodeQuant(x, n, p, words, meta);
  int64_t wordMismatches = 0, metaMismatches = 0;
  for (int64_t i = 0; i < int64_t(words.size()); ++i)
    wordMismatches += out.payload.aligned[i] != words[i];
  for (int64_t i = 0; i < int64_t(meta.size()); ++i)
    metaMismatches += std::memcmp(&out.meta.aligned[i], &meta[i], 4) != 0;
  std::printf("payload words %zu, mismatches %lld; metadata floats %zu, "
              "mismatches %lld\n",
              words.size(), (long long)wordMismatches, meta.size(),
              (long long)metaMismatches);
  std::printf("GPU == CPU reference bit for bit: %s\n",
              wordMismatches == 0 && metaMismatches == 0 ? "yes" : "NO");

  // Timing: the whole encode call (its launches and syncs) against a
  // device-to-device copy of the input.
  auto time = [](auto fn) {
    fn();
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      auto start = std::chrono::steady_clock::now();
      fn();
      t.push_back(std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count());
    }
    std::sort(t.begin(), t.end());
    return t[2];
  };
  void *stream = mgpuStreamCreate();
  void *a = mgpuMemAlloc(n * 4, stream, false);
  void *b = mgpuMemAlloc(n * 4, stream, false);
  double copy = time([&] {
    mgpuMemcpy(b, a, n * 4, stream);
    mgpuStreamSynchronize(stream);
  });
  double encode = time([&] { _mlir_ciface_encode(&out, &input, seed); });
  double bytes = double(n) * 4 + double(words.size()) * 4 + meta.size() * 4;
  std::printf("encode %.3f ms (%.2f GB/s), d2d copy %.3f ms (%.2f GB/s), "
              "ratio %.3f\n",
              encode * 1e3, bytes / encode / 1e9, copy * 1e3,
              2.0 * n * 4 / copy / 1e9,
              (bytes / encode) / (2.0 * n * 4 / copy));
  return wordMismatches == 0 && metaMismatches == 0 ? 0 : 2;
}
