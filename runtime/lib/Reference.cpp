//===- Reference.cpp - reference encoders in plain C++ --------------------===//
//
// Mirrors lib/Dialect/Act/IR/ActLowering.cpp and ActAttrs.cpp operation by
// operation (separate statements, so no fused multiply-add changes a bit).
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace act::rt;

static uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
static float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

void act::rt::philox4x32Raw(const uint32_t c[4], const uint32_t k[2],
                            uint32_t out[4]) {
  uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], k0 = k[0], k1 = k[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = uint32_t(p1);
    c2 = n2;
    c3 = uint32_t(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

void act::rt::philox4x32(uint64_t index, uint64_t seed, uint64_t id,
                         uint32_t out[4]) {
  uint32_t c[4] = {uint32_t(index), uint32_t(index >> 32), uint32_t(id),
                   uint32_t(id >> 32)};
  uint32_t k[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  philox4x32Raw(c, k, out);
}

act::rt::PackedPosition act::rt::locatePacked(int64_t i, int64_t n,
                                              unsigned perWord) {
  int64_t tile = 16 * int64_t(perWord);
  int64_t t = i / tile, j = i % tile;
  int64_t remaining = n - t * tile;
  int64_t width = remaining >= tile ? 16 : (remaining + perWord - 1) / perWord;
  return {t, j / width, j % width};
}

act::rt::RandomSlot act::rt::locateRandom(int64_t i, int64_t n,
                                          unsigned perWord) {
  PackedPosition p = locatePacked(i, n, perWord);
  // The global lane over tiles of P lanes (perWord rounded up to a power
  // of two): 16 consecutive global lanes of one word share a block.
  int64_t padded = 1;
  while (padded < int64_t(perWord))
    padded *= 2;
  int64_t lane = p.tile * padded + p.lane;
  return {uint64_t(lane / 16 * 16 + p.word), unsigned(lane % 16 / 4),
          unsigned(lane % 4)};
}

uint32_t act::rt::philox(int64_t i, int64_t n, unsigned perWord, uint64_t seed,
                         uint64_t id) {
  RandomSlot slot = locateRandom(i, n, perWord);
  uint32_t out[4];
  philox4x32(slot.counter, seed, id, out);
  return (out[slot.word] >> (8 * slot.byte)) & 255u;
}

//===----------------------------------------------------------------------===//
// Floats
//===----------------------------------------------------------------------===//

namespace {
struct MiniFloat {
  int expBits, manBits;
  bool ieee;
};

MiniFloat getMiniFloat(FloatFormat format) {
  switch (format) {
  case FloatFormat::FP10:
    return {5, 4, true};
  case FloatFormat::E4M3:
    return {4, 3, false};
  default:
    return {5, 2, true};
  }
}

int bias(MiniFloat f) { return (1 << (f.expBits - 1)) - 1; }

float maxFinite(MiniFloat f) {
  int maxExp = (1 << f.expBits) - 1 - (f.ieee ? 1 : 0) - bias(f);
  double mantissa = f.ieee ? 2.0 - std::ldexp(1.0, -f.manBits)
                           : 2.0 - std::ldexp(2.0, -f.manBits);
  return float(std::ldexp(mantissa, maxExp));
}

uint32_t miniEncode(float x, MiniFloat f) {
  int M = f.manBits, b = bias(f), emin = 1 - b;
  uint32_t sign = (bitsOf(x) >> 31) << (f.expBits + M);
  if (std::isnan(x)) {
    uint32_t nan = f.ieee ? (((1u << f.expBits) - 1) << M) | (1u << (M - 1))
                          : (1u << (f.expBits + M)) - 1;
    return sign | nan;
  }
  float a = std::min(std::fabs(x), maxFinite(f));
  int e = int(bitsOf(a) >> 23) - 127;
  e = std::max(e, emin);
  float invUlp = floatOf(uint32_t(127 + M - e) << 23);
  float t = a * invUlp;
  int32_t r = int32_t(std::nearbyint(t));
  if (r >= (2 << M)) {
    e += 1;
    r >>= 1;
  }
  uint32_t biased = r >= (1 << M) ? uint32_t(e + b) : 0;
  uint32_t mant = uint32_t(r) & ((1u << M) - 1);
  return sign | (biased << M) | mant;
}

float miniDecode(uint32_t code, MiniFloat f) {
  int M = f.manBits, b = bias(f), emin = 1 - b;
  uint32_t expMask = (1u << f.expBits) - 1;
  uint32_t sign = ((code >> (f.expBits + M)) & 1u) << 31;
  uint32_t biased = (code >> M) & expMask;
  uint32_t mant = code & ((1u << M) - 1);
  uint32_t magnitude;
  if (biased == 0) {
    float sub = float(mant);
    float scale = std::ldexp(1.0f, emin - M);
    magnitude = bitsOf(sub * scale);
  } else {
    magnitude = ((biased + 127 - b) << 23) | (mant << (23 - M));
  }
  if (f.ieee && biased == expMask)
    magnitude = mant == 0 ? 0x7F800000u : 0x7FC00000u;
  if (!f.ieee && biased == expMask && mant == (1u << M) - 1)
    magnitude = 0x7FC00000u;
  return floatOf(sign | magnitude);
}

/// Finite magnitudes above `limit` saturate to it; NaN and the infinities
/// stay themselves (an f16 or bf16 tensor's encoding is bitwise lossless).
float clampTo(float x, float limit) {
  if (std::isnan(x) || std::isinf(x))
    return x;
  return std::max(std::min(x, limit), -limit);
}
} // namespace

unsigned act::rt::getElementBits(FloatFormat format) {
  switch (format) {
  case FloatFormat::F16:
  case FloatFormat::BF16:
    return 16;
  case FloatFormat::FP10:
    return 10;
  default:
    return 8;
  }
}

unsigned act::rt::getElementsPerWord(FloatFormat format) {
  return 32 / getElementBits(format);
}

uint32_t act::rt::encodeFloat(float x, FloatFormat format) {
  switch (format) {
  case FloatFormat::F16: {
    _Float16 h = _Float16(clampTo(x, 65504.0f));
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  case FloatFormat::BF16: {
    float c = clampTo(x, floatOf(0x7F7F0000u));
    uint32_t u = bitsOf(c);
    if (std::isnan(c))
      return (u >> 16) | 0x40u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  }
  default:
    return miniEncode(x, getMiniFloat(format));
  }
}

float act::rt::decodeFloat(uint32_t code, FloatFormat format) {
  switch (format) {
  case FloatFormat::F16: {
    uint16_t u = uint16_t(code);
    _Float16 h;
    std::memcpy(&h, &u, 2);
    return float(h);
  }
  case FloatFormat::BF16:
    return floatOf(code << 16);
  default:
    return miniDecode(code, getMiniFloat(format));
  }
}

/// The word and bit offset of element i: 8- and 16-bit float codes are an
/// array of codes (element i at byte offset i * bits / 8), packed codes
/// follow the tile layout.
static std::pair<int64_t, unsigned> slotOf(int64_t i, int64_t n, unsigned bits,
                                           unsigned perWord, bool codeArray) {
  if (codeArray)
    return {i / perWord, unsigned(i % perWord) * bits};
  act::rt::PackedPosition p = act::rt::locatePacked(i, n, perWord);
  return {p.tile * 16 + p.word, unsigned(p.lane) * bits};
}

/// Packs `code(i)` for i < n, `perWord` per word of `bits` each.
template <typename Fn>
static std::vector<uint32_t> pack(int64_t n, unsigned bits, unsigned perWord,
                                  bool codeArray, Fn code) {
  std::vector<uint32_t> words((n + perWord - 1) / perWord, 0);
  for (int64_t i = 0; i < n; ++i) {
    auto [word, shift] = slotOf(i, n, bits, perWord, codeArray);
    words[word] |= code(i) << shift;
  }
  return words;
}

static uint32_t unpack(const uint32_t *words, int64_t i, int64_t n,
                       unsigned bits, unsigned perWord,
                       bool codeArray = false) {
  auto [word, shift] = slotOf(i, n, bits, perWord, codeArray);
  return (words[word] >> shift) & uint32_t((uint64_t(1) << bits) - 1);
}

std::vector<uint32_t> act::rt::encodeFloats(const float *x, int64_t n,
                                            FloatFormat format) {
  unsigned bits = getElementBits(format);
  return pack(n, bits, getElementsPerWord(format), bits % 8 == 0,
              [&](int64_t i) { return encodeFloat(x[i], format); });
}

void act::rt::decodeFloats(const uint32_t *words, int64_t n, FloatFormat format,
                           float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = decodeFloat(unpack(words, i, n, getElementBits(format),
                                getElementsPerWord(format),
                                getElementBits(format) % 8 == 0),
                         format);
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// 1 - 2^-20: shortens the step of a group whose range overflows.
static constexpr float kOverflowStepFactor = 1.0f - 0x1p-20f;

float act::rt::roundToBf16(float x, bool up) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t rounded = u & 0xFFFF0000u;
  // Dropping the low half rounds toward zero: one bf16 step away from it
  // for a positive value rounded up or a negative one rounded down.
  if ((u & 0xFFFFu) != 0 && bool(u >> 31) != up)
    rounded += 0x10000u;
  if ((rounded & 0x7FFFFFFFu) == 0x7F800000u)
    rounded = (rounded & 0x80000000u) | 0x7F7F0000u; // the largest finite
  float y;
  std::memcpy(&y, &rounded, 4);
  return y;
}

void act::rt::encodeQuant(const float *x, int64_t n, const QuantParams &p,
                          std::vector<uint32_t> &words,
                          std::vector<float> &meta) {
  int64_t groups = (n + p.group - 1) / p.group;
  float levels = float((1u << p.bits) - 1);
  meta.assign(2 * groups, 0.0f);
  std::vector<float> inverse(groups);
  for (int64_t g = 0; g < groups; ++g) {
    // Finite elements only; a group without any quantizes as 0.
    float mn = std::numeric_limits<float>::infinity(), mx = -mn;
    for (int64_t i = g * p.group; i < std::min(n, (g + 1) * p.group); ++i)
      if (std::isfinite(x[i])) {
        mn = std::min(mn, x[i]);
        mx = std::max(mx, x[i]);
      }
    if (!(mn <= mx))
      mn = mx = 0.0f;
    if (p.bf16Stats)
      mn = roundToBf16(mn, /*up=*/false);
    float range = mx - mn;
    // Extremes more than the largest float apart: the step from halves.
    bool overflow = std::isinf(range);
    float half = mx * 0.5f - mn * 0.5f;
    meta[2 * g] = mn;
    // Shortened by 2^-20 of itself so that fma(levels, step, mn) stays at
    // or below mx rather than rounding past the largest float.
    float step = overflow ? std::min(half / (levels * 0.5f),
                                     std::numeric_limits<float>::max()) *
                                kOverflowStepFactor
                          : range / levels;
    if (p.bf16Stats) {
      // The step rounded up (the grid covers [mn, mx]), or down where the
      // top code's decode would overflow; the codes read its inverse.
      float up = roundToBf16(step, /*up=*/true);
      step = std::isfinite(std::fma(levels, up, mn))
                 ? up
                 : roundToBf16(step, /*up=*/false);
      meta[2 * g + 1] = step;
      inverse[g] = step > 0.0f ? 1.0f / step : 0.0f;
      continue;
    }
    meta[2 * g + 1] = step;
    float inv = overflow ? (levels * 0.5f) / half : levels / range;
    inverse[g] = range > 0.0f ? inv : 0.0f;
  }
  words = pack(n, p.bits, 32 / p.bits, false, [&](int64_t i) {
    float offset = 0.5f;
    if (p.stochastic)
      offset = stochasticOffset(philox(i, n, 32 / p.bits, p.seed, p.id));
    // v = (x - min) * inverse + 1 + u in one rounding, then floor(v) - 1
    // clamped to [0, levels]: v is clamped to [1, levels + 1] first, and a
    // NaN (a NaN element, or an infinity in a constant group) takes 1.
    float v = std::fma(x[i] - meta[2 * (i / p.group)], inverse[i / p.group],
                       1.0f + offset);
    v = v > 1.0f ? std::min(v, levels + 1.0f) : 1.0f;
    return uint32_t(v) - 1;
  });
}

void act::rt::decodeQuant(const uint32_t *words, const float *meta, int64_t n,
                          const QuantParams &p, float *out) {
  for (int64_t i = 0; i < n; ++i) {
    float q = float(unpack(words, i, n, p.bits, 32 / p.bits));
    float mn = meta[2 * (i / p.group)], scale = meta[2 * (i / p.group) + 1];
    out[i] = std::fma(q, scale, mn); // one rounding, never overflows
  }
}

//===----------------------------------------------------------------------===//
// DIVISION
//===----------------------------------------------------------------------===//

namespace {
/// Row-major positions of a map and of its block averages.
struct DivisionShape {
  const act::rt::DivisionParams &p;
  int64_t averagesShape[4];

  explicit DivisionShape(const act::rt::DivisionParams &p) : p(p) {
    for (int d = 0; d < 4; ++d)
      averagesShape[d] = p.shape[d];
    for (unsigned d : {p.hDim, p.wDim})
      averagesShape[d] = (p.shape[d] + p.block - 1) / p.block;
  }
  static int64_t flat(const int64_t *shape, const int64_t *at) {
    int64_t i = 0;
    for (int d = 0; d < 4; ++d)
      i = i * shape[d] + at[d];
    return i;
  }
  /// The inverse of flat: the position `at` of row-major index `i`.
  static void unflat(const int64_t *shape, int64_t i, int64_t *at) {
    for (int d = 3; d >= 0; --d) {
      at[d] = i % shape[d];
      i /= shape[d];
    }
  }
  int64_t elements() const {
    return p.shape[0] * p.shape[1] * p.shape[2] * p.shape[3];
  }
  int64_t averages() const {
    return averagesShape[0] * averagesShape[1] * averagesShape[2] *
           averagesShape[3];
  }
  /// The position of element i's block average.
  int64_t averageOf(int64_t i) const {
    int64_t at[4];
    unflat(p.shape, i, at);
    at[p.hDim] /= p.block;
    at[p.wDim] /= p.block;
    return flat(averagesShape, at);
  }
};
} // namespace

void act::rt::encodeDivision(const float *x, const DivisionParams &p,
                             std::vector<uint32_t> &words,
                             std::vector<float> &meta,
                             std::vector<float> &averages) {
  DivisionShape s(p);
  averages.assign(s.averages(), 0.0f);
  for (int64_t a = 0; a < s.averages(); ++a) {
    int64_t at[4];
    DivisionShape::unflat(s.averagesShape, a, at);
    int64_t h0 = at[p.hDim] * p.block, w0 = at[p.wDim] * p.block;
    int64_t h1 = std::min(h0 + p.block, p.shape[p.hDim]);
    int64_t w1 = std::min(w0 + p.block, p.shape[p.wDim]);
    // Each column's sum down the block's rows, then the column sums left
    // to right (the order every target uses; columns first so that a
    // vector of columns sums a block row at once).
    float sum = 0.0f;
    int64_t element[4] = {at[0], at[1], at[2], at[3]};
    for (int64_t w = w0; w < w1; ++w) {
      float column = 0.0f;
      for (int64_t h = h0; h < h1; ++h) {
        element[p.hDim] = h;
        element[p.wDim] = w;
        column += x[DivisionShape::flat(p.shape, element)];
      }
      sum += column;
    }
    averages[a] = sum / float((h1 - h0) * (w1 - w0));
  }
  std::vector<float> residual(s.elements());
  for (int64_t i = 0; i < s.elements(); ++i)
    residual[i] = x[i] - averages[s.averageOf(i)];
  encodeQuant(residual.data(), s.elements(), p.quant, words, meta);
}

void act::rt::decodeDivision(const uint32_t *words, const float *meta,
                             const float *averages, const DivisionParams &p,
                             float *out) {
  DivisionShape s(p);
  decodeQuant(words, meta, s.elements(), p.quant, out);
  for (int64_t i = 0; i < s.elements(); ++i)
    out[i] = averages[s.averageOf(i)] + out[i];
}

//===----------------------------------------------------------------------===//
// Compute quantization
//===----------------------------------------------------------------------===//

void act::rt::fakeQuant(const float *x, int64_t n, int bits, float *out,
                        bool stochastic, uint64_t seed, uint64_t id) {
  float mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) < INFINITY) {
      mn = std::fmin(mn, x[i]);
      mx = std::fmax(mx, x[i]);
    }
  int clamped = std::max(1, std::min(bits, 23));
  float levels = float((uint32_t(1) << clamped) - 1);
  float range = mx - mn;
  bool keep = bits >= 24 || !(range > 0.0f) || !(std::fabs(range) < INFINITY);
  float scale = range / levels, inverse = levels / range;
  for (int64_t i = 0; i < n; ++i) {
    if (keep || !(std::fabs(x[i]) < INFINITY)) {
      out[i] = x[i];
      continue;
    }
    float u = 0.5f;
    if (stochastic) {
      // Byte i % 4 of word (i / 4) % 4 of the block with counter i / 16.
      uint32_t block[4];
      philox4x32(uint64_t(i) >> 4, seed, id, block);
      u = stochasticOffset((block[(i >> 2) & 3] >> (8 * (i & 3))) & 255u);
    }
    float q = std::floor((x[i] - mn) * inverse + u);
    q = std::min(std::max(q, 0.0f), levels);
    out[i] = std::fma(q, scale, mn);
  }
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

std::vector<uint32_t> act::rt::encodeMask(const float *x, int64_t n,
                                          MaskPredicate predicate) {
  return pack(n, 1, 32, false, [&](int64_t i) -> uint32_t {
    switch (predicate) {
    case MaskPredicate::Positive:
      return x[i] > 0.0f;
    case MaskPredicate::NonNegative:
      return x[i] >= 0.0f;
    case MaskPredicate::NonZero:
      return !(x[i] == 0.0f);
    }
    return 0;
  });
}

void act::rt::decodeMask(const uint32_t *words, int64_t n, bool *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = unpack(words, i, n, 1, 32) != 0;
}

std::vector<uint32_t>
act::rt::encodeFewBit(const float *x, int64_t n, unsigned bits,
                      const std::vector<float> &boundaries) {
  return pack(n, bits, 32 / bits, false, [&](int64_t i) -> uint32_t {
    uint32_t code = 0;
    while (code < boundaries.size() && x[i] >= boundaries[code])
      ++code;
    return code;
  });
}

void act::rt::decodeFewBit(const uint32_t *words, int64_t n, unsigned bits,
                           const std::vector<float> &values, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = values[unpack(words, i, n, bits, 32 / bits)];
}

std::vector<uint32_t> act::rt::encodeIndex(const int64_t *x, int64_t n,
                                           unsigned bits) {
  return pack(n, bits, 32 / bits, false, [&](int64_t i) {
    return uint32_t(uint64_t(x[i]) & ((uint64_t(1) << bits) - 1));
  });
}

void act::rt::decodeIndex(const uint32_t *words, int64_t n, unsigned bits,
                          int64_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = int64_t(unpack(words, i, n, bits, 32 / bits));
}

act::rt::SparseStorage act::rt::encodeSparse(const void *x, int64_t n,
                                             unsigned elementBytes) {
  const auto *bytes = static_cast<const uint8_t *>(x);
  auto isSet = [&](int64_t i) {
    for (unsigned k = 0; k < elementBytes; ++k)
      if (bytes[i * elementBytes + k])
        return true;
    return false;
  };
  SparseStorage s;
  int64_t words = (n + 31) / 32, set = 0;
  s.bitmap.assign(words, 0);
  for (int64_t i = 0; i < n; ++i)
    if (isSet(i)) {
      s.bitmap[i / 32] |= uint32_t(1) << (i % 32);
      ++set;
    }
  if (set > n - words) {
    // Dense fallback: the bitmap would cost more than the zeros it saves.
    s.bitmap.clear();
    s.values.assign(bytes, bytes + n * elementBytes);
    return s;
  }
  for (int64_t i = 0; i < n; ++i)
    if (isSet(i))
      s.values.insert(s.values.end(), bytes + i * elementBytes,
                      bytes + (i + 1) * elementBytes);
  return s;
}

void act::rt::decodeSparse(const SparseStorage &s, int64_t n,
                           unsigned elementBytes, void *out) {
  auto *bytes = static_cast<uint8_t *>(out);
  if (s.bitmap.empty()) {
    std::memcpy(bytes, s.values.data(), s.values.size());
    return;
  }
  std::memset(bytes, 0, size_t(n) * elementBytes);
  size_t next = 0;
  for (int64_t i = 0; i < n; ++i)
    if (s.bitmap[i / 32] >> (i % 32) & 1) {
      std::memcpy(bytes + i * elementBytes, s.values.data() + next,
                  elementBytes);
      next += elementBytes;
    }
}
