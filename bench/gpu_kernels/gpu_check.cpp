//===- gpu_check.cpp - check act's GPU kernels and time them --------------===//
//
// Linked with an object file that act-gpu-pipeline{results-to-out-params} +
// mlir-translate + llc made from @enc_<name>_<size> / @dec_<name>_<size>
// (build.sh writes them, one pair per encoding and size), and with runtime/
// (CUDA through dlopen, the reference encoders). Needs no MLIR at run time.
//
// For every encoding:
//  - check: encode ACT_CHECK_ELEMENTS floats (whole tiles and a ragged
//    tail) on the GPU, decode the GPU's payload on the GPU, and compare both
//    bit for bit with the CPU reference (runtime/Reference.h);
//  - bench: encode and decode ACT_BENCH_ELEMENTS floats, buffers in device
//    memory, median of several calls each (a call: stream, launches, sync),
//    as bytes moved per second and as a ratio of a device-to-device copy of
//    the input measured in the same run.
// Exit status 0 when every check agrees, 2 otherwise, 1 without a GPU.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Cuda.h"
#include "act/runtime/Reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {
template <typename T, int Rank> struct Memref {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};
using Words = Memref<uint32_t, 1>;
using Floats = Memref<float, 1>;
using Meta = Memref<float, 2>;

Floats floats(float *p, int64_t n) { return {p, p, 0, {n}, {1}}; }
template <typename T> Memref<T, 1> vec(void *p, int64_t n) {
  auto *t = static_cast<T *>(p);
  return {t, t, 0, {n}, {1}};
}
Meta rows(void *p, int64_t groups) {
  auto *t = static_cast<float *>(p);
  return {t, t, 0, {groups, 2}, {2, 1}};
}
} // namespace

// The kernels' C interfaces (results through caller-owned buffers).
#define QUANT(name, size)                                                      \
  extern "C" void _mlir_ciface_enc_##name##_##size(Floats *, int64_t, Words *, \
                                                   Meta *);                    \
  extern "C" void _mlir_ciface_dec_##name##_##size(Words *, Meta *, Floats *);
#define NOSEED_QUANT(name, size)                                               \
  extern "C" void _mlir_ciface_enc_##name##_##size(Floats *, Words *, Meta *); \
  extern "C" void _mlir_ciface_dec_##name##_##size(Words *, Meta *, Floats *);
#define CODES(name, size, T, Out)                                              \
  extern "C" void _mlir_ciface_enc_##name##_##size(Floats *, Memref<T, 1> *);  \
  extern "C" void _mlir_ciface_dec_##name##_##size(Memref<T, 1> *,             \
                                                   Memref<Out, 1> *);
#define ALL(size)                                                              \
  QUANT(q1, size)                                                              \
  QUANT(q2, size)                                                              \
  QUANT(q4, size)                                                              \
  QUANT(q8, size)                                                              \
  NOSEED_QUANT(q4n, size)                                                      \
  CODES(f16, size, uint16_t, float)                                            \
  CODES(bf16, size, uint16_t, float)                                           \
  CODES(fp10, size, uint32_t, float)                                           \
  CODES(e4m3, size, uint8_t, float)                                            \
  CODES(e5m2, size, uint8_t, float)                                            \
  CODES(mask, size, uint32_t, bool)
ALL(check)
ALL(bench)

namespace {
using act::rt::FloatFormat;
const uint64_t kSeed = 0x5eed, kId = 7;

enum class Kind { Quant, Codes, Mask };

/// One encoding: its storage, reference and kernels at both sizes.
struct Codec {
  const char *name;
  Kind kind;
  unsigned bits = 0;       // quant
  bool stochastic = false; // quant
  FloatFormat format{};    // codes
  // The kernels, on device buffers: input, payload, metadata, output.
  std::function<void(float *, void *, void *, int64_t)> encode[2];
  std::function<void(void *, void *, void *, int64_t)> decode[2];

  int64_t words(int64_t n) const {
    unsigned perWord = kind == Kind::Quant ? 32 / bits
                       : kind == Kind::Mask
                           ? 32
                           : act::rt::getElementsPerWord(format);
    return (n + perWord - 1) / perWord;
  }
  /// Payload bytes as stored: byte codes are element arrays.
  int64_t payloadBytes(int64_t n) const {
    if (kind == Kind::Codes && act::rt::getElementBits(format) % 8 == 0)
      return n * (act::rt::getElementBits(format) / 8);
    return words(n) * 4;
  }
  int64_t groups(int64_t n) const {
    return kind == Kind::Quant ? (n + 255) / 256 : 0;
  }
  int64_t outBytes(int64_t n) const { return kind == Kind::Mask ? n : n * 4; }
};

template <typename Enc, typename Dec>
void setQuant(Codec &c, int s, Enc enc, Dec dec) {
  c.encode[s] = [=](float *x, void *p, void *m, int64_t n) {
    Floats in = floats(x, n);
    Words w = vec<uint32_t>(p, c.words(n));
    Meta r = rows(m, c.groups(n));
    if constexpr (std::is_invocable_v<Enc, Floats *, int64_t, Words *, Meta *>)
      enc(&in, int64_t(kSeed), &w, &r);
    else
      enc(&in, &w, &r);
  };
  c.decode[s] = [=](void *p, void *m, void *o, int64_t n) {
    Words w = vec<uint32_t>(p, c.words(n));
    Meta r = rows(m, c.groups(n));
    Floats out = floats(static_cast<float *>(o), n);
    dec(&w, &r, &out);
  };
}
/// Codes of type T (uint32_t: packed words) decoded to elements of Out.
template <typename T, typename Out = float, typename Enc, typename Dec>
void setCodes(Codec &c, int s, Enc enc, Dec dec) {
  c.encode[s] = [=](float *x, void *p, void *, int64_t n) {
    Floats in = floats(x, n);
    int64_t len = std::is_same_v<T, uint32_t> ? c.words(n) : n;
    Memref<T, 1> codes = vec<T>(p, len);
    enc(&in, &codes);
  };
  c.decode[s] = [=](void *p, void *, void *o, int64_t n) {
    int64_t len = std::is_same_v<T, uint32_t> ? c.words(n) : n;
    Memref<T, 1> codes = vec<T>(p, len);
    Memref<Out, 1> out = vec<Out>(o, n);
    dec(&codes, &out);
  };
}

std::vector<Codec> makeCodecs() {
  auto quant = [&](const char *name, unsigned bits, bool stochastic) {
    Codec c{name, Kind::Quant};
    c.bits = bits;
    c.stochastic = stochastic;
    return c;
  };
  auto codes = [&](const char *name, FloatFormat f) {
    Codec c{name, Kind::Codes};
    c.format = f;
    return c;
  };
#define SET_QUANT(c, name)                                                     \
  setQuant(c, 0, _mlir_ciface_enc_##name##_check,                              \
           _mlir_ciface_dec_##name##_check);                                   \
  setQuant(c, 1, _mlir_ciface_enc_##name##_bench,                              \
           _mlir_ciface_dec_##name##_bench)
#define SET_CODES(c, name, ...)                                                \
  setCodes<__VA_ARGS__>(c, 0, _mlir_ciface_enc_##name##_check,                 \
                        _mlir_ciface_dec_##name##_check);                      \
  setCodes<__VA_ARGS__>(c, 1, _mlir_ciface_enc_##name##_bench,                 \
                        _mlir_ciface_dec_##name##_bench)
  Codec q1 = quant("quant 1-bit", 1, true);
  SET_QUANT(q1, q1);
  Codec q2 = quant("quant 2-bit", 2, true);
  SET_QUANT(q2, q2);
  Codec q4 = quant("quant 4-bit", 4, true);
  SET_QUANT(q4, q4);
  Codec q8 = quant("quant 8-bit", 8, true);
  SET_QUANT(q8, q8);
  Codec q4n = quant("quant 4-bit nearest", 4, false);
  SET_QUANT(q4n, q4n);
  Codec f16 = codes("f16", FloatFormat::F16);
  SET_CODES(f16, f16, uint16_t);
  Codec bf16 = codes("bf16", FloatFormat::BF16);
  SET_CODES(bf16, bf16, uint16_t);
  Codec fp10 = codes("fp10", FloatFormat::FP10);
  SET_CODES(fp10, fp10, uint32_t);
  Codec e4m3 = codes("e4m3", FloatFormat::E4M3);
  SET_CODES(e4m3, e4m3, uint8_t);
  Codec e5m2 = codes("e5m2", FloatFormat::E5M2);
  SET_CODES(e5m2, e5m2, uint8_t);
  Codec mask{"mask (x > 0)", Kind::Mask};
  SET_CODES(mask, mask, uint32_t, bool);
  return {q1, q2, q4, q8, q4n, f16, bf16, fp10, e4m3, e5m2, mask};
}

void *deviceAlloc(int64_t bytes) {
  return mgpuMemAlloc(std::max<int64_t>(bytes, 4), nullptr, false);
}
void toHost(void *dst, void *src, int64_t bytes, void *stream) {
  mgpuMemcpy(dst, src, bytes, stream);
  mgpuStreamSynchronize(stream);
}

/// Differences between the GPU's and the reference's bytes, as 32-bit
/// (or, for the tail, shorter) units.
int64_t mismatches(const void *a, const void *b, int64_t bytes) {
  int64_t count = 0;
  auto *x = static_cast<const unsigned char *>(a);
  auto *y = static_cast<const unsigned char *>(b);
  for (int64_t i = 0; i < bytes; i += 4)
    count += std::memcmp(x + i, y + i, std::min<int64_t>(4, bytes - i)) != 0;
  return count;
}
/// Decoded floats that differ in their bits (two NaNs agree).
int64_t floatMismatches(const float *a, const float *b, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0 &&
        !(std::isnan(a[i]) && std::isnan(b[i])))
      ++count;
  return count;
}

/// Checks one codec at the check size; prints one line; true when equal.
bool check(const Codec &c, const std::vector<float> &x, void *stream) {
  int64_t n = int64_t(x.size());
  int64_t payloadBytes = c.payloadBytes(n), metaBytes = c.groups(n) * 8;
  float *dx = static_cast<float *>(deviceAlloc(n * 4));
  void *dp = deviceAlloc(payloadBytes), *dm = deviceAlloc(metaBytes);
  void *dout = deviceAlloc(c.outBytes(n));
  mgpuMemcpy(dx, const_cast<float *>(x.data()), n * 4, stream);
  mgpuStreamSynchronize(stream);
  c.encode[0](dx, dp, dm, n);
  c.decode[0](dp, dm, dout, n);
  std::vector<unsigned char> payload(payloadBytes), out(c.outBytes(n));
  std::vector<float> meta(c.groups(n) * 2);
  toHost(payload.data(), dp, payloadBytes, stream);
  if (metaBytes)
    toHost(meta.data(), dm, metaBytes, stream);
  toHost(out.data(), dout, c.outBytes(n), stream);

  // The reference: payload words (byte codes: their first bytes), metadata,
  // and the decode of the reference payload.
  std::vector<uint32_t> refWords;
  std::vector<float> refMeta;
  std::vector<unsigned char> refOut(c.outBytes(n));
  switch (c.kind) {
  case Kind::Quant: {
    act::rt::QuantParams p{c.bits, 256, c.stochastic, kSeed, kId};
    act::rt::encodeQuant(x.data(), n, p, refWords, refMeta);
    act::rt::decodeQuant(refWords.data(), refMeta.data(), n, p,
                         reinterpret_cast<float *>(refOut.data()));
    break;
  }
  case Kind::Codes:
    refWords = act::rt::encodeFloats(x.data(), n, c.format);
    act::rt::decodeFloats(refWords.data(), n, c.format,
                          reinterpret_cast<float *>(refOut.data()));
    break;
  case Kind::Mask:
    refWords =
        act::rt::encodeMask(x.data(), n, act::rt::MaskPredicate::Positive);
    act::rt::decodeMask(refWords.data(), n,
                        reinterpret_cast<bool *>(refOut.data()));
    break;
  }
  int64_t payloadDiff =
      mismatches(payload.data(), refWords.data(), payloadBytes);
  int64_t metaDiff = mismatches(meta.data(), refMeta.data(), metaBytes);
  int64_t outDiff =
      c.kind == Kind::Mask
          ? mismatches(out.data(), refOut.data(), n)
          : floatMismatches(reinterpret_cast<float *>(out.data()),
                            reinterpret_cast<float *>(refOut.data()), n);
  bool same = payloadDiff == 0 && metaDiff == 0 && outDiff == 0;
  std::printf(
      "  %-20s payload %s, metadata %s, decode %s\n", c.name,
      payloadDiff
          ? ("DIFFERS (" + std::to_string(payloadDiff) + " words)").c_str()
          : "same",
      metaBytes == 0 ? "-"
      : metaDiff     ? "DIFFERS"
                     : "same",
      outDiff ? ("DIFFERS (" + std::to_string(outDiff) + " elements)").c_str()
              : "same");
  mgpuMemFree(dx, nullptr);
  mgpuMemFree(dp, nullptr);
  mgpuMemFree(dm, nullptr);
  mgpuMemFree(dout, nullptr);
  return same;
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
/// Median seconds of `runs` calls of `fn` after one warm-up call.
double timeIt(const std::function<void()> &fn, int runs = 9) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return median(t);
}
} // namespace

/// The lowered module loads its kernels from a global constructor (priority
/// 123, SelectObject); without a driver or GPU that would abort. This one
/// runs first and exits with a clear message instead.
__attribute__((constructor(101))) static void requireCuda() {
  std::string error;
  if (!act::rt::loadCuda(error)) {
    std::fprintf(stderr, "gpu_check: cannot run the GPU kernels: %s\n",
                 error.c_str());
    // Not exit(): the module's destructors would unload what never loaded.
    std::fflush(stderr);
    std::_Exit(1);
  }
}

int main() {
  // Line by line, so that a fault leaves the lines before it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Whatever the lowered host code still allocates goes through the
  // runtime's hooks: managed memory, which host and kernels both reach.
  act::rt::setBacking(act::rt::getGpuBacking());
  void *stream = mgpuStreamCreate();
  std::vector<Codec> codecs = makeCodecs();

  // Check: normal data for quantization and the mask; for the float
  // formats also infinities, NaN, subnormals, values beyond each format's
  // range and exact zeros of both signs.
  const int64_t n1 = ACT_CHECK_ELEMENTS;
  std::vector<float> normal(n1), special(n1);
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n1; ++i)
    normal[i] = special[i] = dist(gen);
  const float specials[] = {INFINITY, -INFINITY, NAN,      1e-40f, -3e-39f,
                            0.0f,     -0.0f,     70000.0f, 1e30f,  -500.0f,
                            6e-8f,    448.0f,    57344.0f, 3.0e-5f};
  for (int64_t i = 0, k = 0; i < n1; i += 97, ++k)
    special[i] = specials[k % (sizeof(specials) / sizeof(float))];
  // NaNs with payloads (negative quiet, signaling): an f16 code keeps the
  // sign and the payload's top bits, made quiet, on every target.
  const uint32_t nans[] = {0xFFA12345u, 0x7F800001u};
  for (int64_t i = 48, k = 0; i < n1; i += 1009, ++k)
    std::memcpy(&special[i], &nans[k % 2], 4);
  std::printf("check: %lld elements (whole tiles and a tail), GPU == CPU "
              "reference bit for bit\n",
              (long long)n1);
  bool allSame = true;
  for (const Codec &c : codecs)
    allSame &= check(c, c.kind == Kind::Codes ? special : normal, stream);
  std::printf("GPU == CPU reference bit for bit: %s\n", allSame ? "yes" : "NO");

  // Bench: device buffers, n2 elements.
  const int64_t n2 = ACT_BENCH_ELEMENTS;
  float *dx = static_cast<float *>(deviceAlloc(n2 * 4));
  void *dout = deviceAlloc(n2 * 4);
  void *dp = deviceAlloc(n2 * 2), *dm = deviceAlloc((n2 / 256 + 1) * 8);
  {
    std::vector<float> x(n2);
    uint32_t s = 12345;
    for (int64_t i = 0; i < n2; ++i) {
      s = s * 1664525u + 1013904223u;
      x[i] = float(int32_t(s)) * (1.0f / 2147483648.0f);
    }
    mgpuMemcpy(dx, x.data(), n2 * 4, stream);
    mgpuStreamSynchronize(stream);
  }
  auto copy = [&] {
    mgpuMemcpy(dout, dx, n2 * 4, stream);
    mgpuStreamSynchronize(stream);
  };
  double copyBefore = timeIt(copy);
  struct Row {
    const char *name;
    double encode, decode, encodeBytes, decodeBytes;
  };
  std::vector<Row> table;
  for (const Codec &c : codecs) {
    double moved = double(c.payloadBytes(n2)) + c.groups(n2) * 8.0;
    double e = timeIt([&] { c.encode[1](dx, dp, dm, n2); });
    double d = timeIt([&] { c.decode[1](dp, dm, dout, n2); });
    table.push_back({c.name, e, d, n2 * 4.0 + moved, moved + c.outBytes(n2)});
  }
  double copyAfter = timeIt(copy);
  double copyTime = std::min(copyBefore, copyAfter);
  double copyRate = 2.0 * n2 * 4 / copyTime;
  std::printf("\nbench: %lld elements (f32), device buffers; a call = "
              "stream + launches + sync, median of 9\n",
              (long long)n2);
  std::printf("device-to-device copy of the input: %.3f ms, %.1f GB/s "
              "(read + write; before %.3f ms, after %.3f ms)\n",
              copyTime * 1e3, copyRate / 1e9, copyBefore * 1e3,
              copyAfter * 1e3);
  std::printf("%-20s %10s %9s %7s %10s %9s %7s\n", "encoding", "encode ms",
              "GB/s", "/copy", "decode ms", "GB/s", "/copy");
  for (const Row &r : table)
    std::printf("%-20s %10.3f %9.1f %7.2f %10.3f %9.1f %7.2f\n", r.name,
                r.encode * 1e3, r.encodeBytes / r.encode / 1e9,
                r.encodeBytes / r.encode / copyRate, r.decode * 1e3,
                r.decodeBytes / r.decode / 1e9,
                r.decodeBytes / r.decode / copyRate);
  return allSame ? 0 : 2;
}
