//===- ReferenceTest.cpp - the reference encoders -------------------------===//
//
// The reference is the oracle of the lowering tests, so it is checked here
// against independent facts: Random123's known-answer vector, hardware f16
// conversion, published fp8 values, exhaustive code round trips.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <vector>

using namespace act::rt;

TEST(Philox, KnownAnswer) {
  // Random123 kat_vectors: philox4x32_10, counter and key all zero / all ones.
  uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0}, out[4];
  philox4x32Raw(c0, k0, out);
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
  uint32_t c1[4] = {~0u, ~0u, ~0u, ~0u}, k1[2] = {~0u, ~0u};
  philox4x32Raw(c1, k1, out);
  EXPECT_EQ(out[0], 0x408f276du);
  EXPECT_EQ(out[1], 0x41c83b0eu);
  EXPECT_EQ(out[2], 0xa20bc7c6u);
  EXPECT_EQ(out[3], 0x6d5451fdu);
}

TEST(Philox, KeyingSeparatesTensorsAndSeeds) {
  EXPECT_NE(philox(0, 256, 8, 1, 0), philox(0, 256, 8, 1, 1));
  EXPECT_NE(philox(0, 256, 8, 1, 0), philox(0, 256, 8, 2, 0));
  EXPECT_NE(philox(0, 256, 8, 1, 0), philox(1, 256, 8, 1, 0));
  EXPECT_EQ(philox(5, 256, 8, 7, 9), philox(5, 256, 8, 7, 9));
}

TEST(Packed, LayoutIsABijectionAndRandomBitsAreDistinct) {
  // Every element gets its own (word, lane) and its own 8 bits (counter,
  // word, byte) of the generator, for full and partial tiles alike.
  for (unsigned perWord : {3u, 4u, 8u, 16u, 32u})
    for (int64_t n : {1, 5, 47, 48, 100, 512, 1000, 1031}) {
      std::set<std::pair<int64_t, int64_t>> slots;
      std::set<std::tuple<uint64_t, unsigned, unsigned>> randoms;
      for (int64_t i = 0; i < n; ++i) {
        PackedPosition p = locatePacked(i, n, perWord);
        ASSERT_LT(p.lane, int64_t(perWord)) << n << " " << i;
        int64_t word = p.tile * 16 + p.word;
        ASSERT_LT(word, (n + perWord - 1) / perWord) << n << " " << i;
        slots.insert({word, p.lane});
        RandomSlot r = locateRandom(i, n, perWord);
        ASSERT_LT(r.word, 4u);
        ASSERT_LT(r.byte, 4u);
        randoms.insert({r.counter, r.word, r.byte});
        ASSERT_LT(philox(i, n, perWord, 3, 4), 256u);
      }
      EXPECT_EQ(int64_t(slots.size()), n) << perWord << " " << n;
      EXPECT_EQ(int64_t(randoms.size()), n) << perWord << " " << n;
    }
  // Lane l of a full tile holds 16 consecutive elements.
  PackedPosition p = locatePacked(128 + 16 * 3 + 5, 1000, 8);
  EXPECT_EQ(p.tile, 1);
  EXPECT_EQ(p.lane, 3);
  EXPECT_EQ(p.word, 5);
  // One Philox block serves 16 lanes: at 2 bits (16 lanes) every lane of a
  // word reads the same block; at 1 bit (32 lanes) two blocks.
  for (unsigned lane = 0; lane < 16; ++lane)
    EXPECT_EQ(locateRandom(16 * lane + 3, 4096, 16).counter, 3u);
  EXPECT_EQ(locateRandom(16 * 17 + 3, 4096, 32).counter, 16u + 3u);
  // At 4 bits (8 lanes) two consecutive tiles share a word's block, the
  // second taking its bytes 8..15; at 8 bits (4 lanes) four tiles.
  RandomSlot first = locateRandom(16 * 2 + 3, 4096, 8);
  RandomSlot second = locateRandom(128 + 16 * 2 + 3, 4096, 8);
  EXPECT_EQ(first.counter, 3u);
  EXPECT_EQ(second.counter, 3u);
  EXPECT_EQ(first.word * 4 + first.byte, 2u);
  EXPECT_EQ(second.word * 4 + second.byte, 10u);
  EXPECT_EQ(locateRandom(64 * 3 + 16 * 1 + 5, 4096, 4).counter, 5u);
  EXPECT_EQ(locateRandom(64 * 4 + 5, 4096, 4).counter, 16u + 5u);
}

TEST(Philox, EightBitsPerElementAreUniformAndIndependent) {
  // The bytes an encode draws: uniform over 0..255 (chi-square, 255
  // degrees of freedom, below the 0.1% critical value 330) and
  // uncorrelated between neighbouring lanes of a word (elements i and
  // i + 16 at 16 lanes: bytes of the same Philox word or block).
  const int64_t n = 1 << 18;
  std::vector<uint32_t> r(n);
  std::vector<int64_t> counts(256, 0);
  for (int64_t i = 0; i < n; ++i)
    ++counts[r[i] = philox(i, n, 16, 11, 5)];
  double expected = double(n) / 256, chi2 = 0.0;
  for (int64_t c : counts)
    chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 330.0);
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, pairs = 0;
  for (int64_t i = 0; i + 16 < n; ++i) {
    if (i % 256 >= 240)
      continue;
    double x = r[i], y = r[i + 16];
    sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, ++pairs;
  }
  double cov = sxy / pairs - (sx / pairs) * (sy / pairs);
  double corr = cov / std::sqrt((sxx / pairs - (sx / pairs) * (sx / pairs)) *
                                (syy / pairs - (sy / pairs) * (sy / pairs)));
  EXPECT_LT(std::abs(corr), 0.01);
}

TEST(Float, F16MatchesHardwareAndClamps) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  for (int i = 0; i < 10000; ++i) {
    float x = dist(gen);
    float r = decodeFloat(encodeFloat(x, FloatFormat::F16), FloatFormat::F16);
    if (std::fabs(x) <= 65504.0f)
      EXPECT_EQ(r, float(_Float16(x)));
    else
      EXPECT_EQ(std::fabs(r), 65504.0f);
  }
  // Infinities stay infinities (f16 and bf16 are lossless on their own
  // tensors, specials included); finite values beyond 65504 saturate.
  EXPECT_EQ(
      decodeFloat(encodeFloat(INFINITY, FloatFormat::F16), FloatFormat::F16),
      INFINITY);
  EXPECT_EQ(encodeFloat(-INFINITY, FloatFormat::F16), 0xFC00u);
  EXPECT_EQ(decodeFloat(encodeFloat(1e30f, FloatFormat::F16), FloatFormat::F16),
            65504.0f);
  EXPECT_TRUE(std::isnan(
      decodeFloat(encodeFloat(NAN, FloatFormat::F16), FloatFormat::F16)));
}

TEST(Float, BF16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(decodeFloat(encodeFloat(1.0f + 0x1p-8f, FloatFormat::BF16),
                        FloatFormat::BF16),
            1.0f);
  // 1 + 3 * 2^-8 ties to 1 + 2^-6 (even mantissa).
  EXPECT_EQ(decodeFloat(encodeFloat(1.0f + 3 * 0x1p-8f, FloatFormat::BF16),
                        FloatFormat::BF16),
            1.0f + 0x1p-6f);
  EXPECT_EQ(encodeFloat(-2.0f, FloatFormat::BF16), 0xC000u);
  EXPECT_TRUE(std::isnan(
      decodeFloat(encodeFloat(NAN, FloatFormat::BF16), FloatFormat::BF16)));
  EXPECT_EQ(
      decodeFloat(encodeFloat(INFINITY, FloatFormat::BF16), FloatFormat::BF16),
      INFINITY);
  EXPECT_EQ(encodeFloat(-INFINITY, FloatFormat::BF16), 0xFF80u);
  EXPECT_EQ(decodeFloat(encodeFloat(std::numeric_limits<float>::max(),
                                    FloatFormat::BF16),
                        FloatFormat::BF16),
            0x1.fep127f);
}

TEST(Float, Fp8KnownValues) {
  // OCP FP8: e4m3fn max 448, e5m2 max 57344; 0.1 and subnormals.
  EXPECT_EQ(encodeFloat(1.0f, FloatFormat::E4M3), 0x38u);
  EXPECT_EQ(encodeFloat(448.0f, FloatFormat::E4M3), 0x7Eu);
  EXPECT_EQ(encodeFloat(1e6f, FloatFormat::E4M3), 0x7Eu);
  EXPECT_EQ(encodeFloat(-INFINITY, FloatFormat::E4M3), 0xFEu);
  EXPECT_EQ(encodeFloat(NAN, FloatFormat::E4M3) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(
      decodeFloat(encodeFloat(0.1f, FloatFormat::E4M3), FloatFormat::E4M3),
      0.1015625f);
  EXPECT_EQ(encodeFloat(0x1p-9f, FloatFormat::E4M3), 0x01u);
  EXPECT_EQ(encodeFloat(0x1p-11f, FloatFormat::E4M3), 0x00u); // ties to even 0
  EXPECT_EQ(encodeFloat(1.0f, FloatFormat::E5M2), 0x3Cu);
  EXPECT_EQ(encodeFloat(57344.0f, FloatFormat::E5M2), 0x7Bu);
  EXPECT_EQ(encodeFloat(INFINITY, FloatFormat::E5M2), 0x7Bu);
  EXPECT_EQ(
      decodeFloat(encodeFloat(0.1f, FloatFormat::E5M2), FloatFormat::E5M2),
      0.09375f);
  EXPECT_EQ(encodeFloat(0x1p-16f, FloatFormat::E5M2), 0x01u);
}

TEST(Float, Fp10Layout) {
  // 1 sign, 5 exponent (bias 15), 4 mantissa bits.
  EXPECT_EQ(encodeFloat(1.0f, FloatFormat::FP10), 15u << 4);
  EXPECT_EQ(encodeFloat(-1.5f, FloatFormat::FP10), (1u << 9) | (15u << 4) | 8u);
  EXPECT_EQ(
      decodeFloat(encodeFloat(1e9f, FloatFormat::FP10), FloatFormat::FP10),
      63488.0f);
}

TEST(Float, EveryCodeRoundTrips) {
  for (FloatFormat f : {FloatFormat::FP10, FloatFormat::E4M3, FloatFormat::E5M2,
                        FloatFormat::F16, FloatFormat::BF16}) {
    uint32_t codes = 1u << getElementBits(f);
    for (uint32_t code = 0; code < codes; ++code) {
      float v = decodeFloat(code, f);
      if (std::isnan(v) || std::isinf(v))
        continue;
      EXPECT_EQ(encodeFloat(v, f), code)
          << "format " << int(f) << " code " << code;
    }
  }
}

TEST(Float, PackingThreeFp10PerWord) {
  float x[4] = {1.0f, 2.0f, -1.0f, 0.5f};
  std::vector<uint32_t> words = encodeFloats(x, 4, FloatFormat::FP10);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0] >> 30, 0u); // two unused bits
  float out[4];
  decodeFloats(words.data(), 4, FloatFormat::FP10, out);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], x[i]);
}

TEST(Quant, ErrorWithinOneStepAndTails) {
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (unsigned bits : {1u, 2u, 4u, 8u})
    for (int64_t n : {1, 255, 256, 1000, 1023}) {
      std::vector<float> x(n), y(n);
      for (float &v : x)
        v = dist(gen);
      for (bool stochastic : {false, true}) {
        QuantParams p{bits, 256, stochastic, 42, 7};
        std::vector<uint32_t> words;
        std::vector<float> meta;
        encodeQuant(x.data(), n, p, words, meta);
        EXPECT_EQ(int64_t(words.size()), (n * bits + 31) / 32);
        EXPECT_EQ(int64_t(meta.size()), 2 * ((n + 255) / 256));
        decodeQuant(words.data(), meta.data(), n, p, y.data());
        for (int64_t i = 0; i < n; ++i) {
          float scale = meta[2 * (i / 256) + 1];
          float bound = stochastic ? scale : scale / 2;
          EXPECT_LE(std::fabs(y[i] - x[i]), bound * 1.0001f + 1e-6f);
        }
      }
    }
}

TEST(Quant, ConstantGroupIsExact) {
  std::vector<float> x(300, 1.25f), y(300);
  QuantParams p{2, 256, true, 1, 0};
  std::vector<uint32_t> words;
  std::vector<float> meta;
  encodeQuant(x.data(), 300, p, words, meta);
  decodeQuant(words.data(), meta.data(), 300, p, y.data());
  EXPECT_EQ(y, x);
}

TEST(Quant, StochasticRoundingIsUnbiased) {
  // Mean of decode(encode(x)) over S seeds: its standard error is at most
  // scale / (2 sqrt(S)); check every element within 5 standard errors.
  const int seeds = 2000;
  std::vector<float> x(256), y(256);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &v : x)
    v = dist(gen);
  std::vector<double> sum(256, 0.0);
  float scale = 0;
  for (int s = 0; s < seeds; ++s) {
    QuantParams p{2, 256, true, uint64_t(s) * 7919 + 1, 3};
    std::vector<uint32_t> words;
    std::vector<float> meta;
    encodeQuant(x.data(), 256, p, words, meta);
    decodeQuant(words.data(), meta.data(), 256, p, y.data());
    scale = meta[1];
    for (int i = 0; i < 256; ++i)
      sum[i] += y[i];
  }
  double bound = 5 * scale / (2 * std::sqrt(double(seeds)));
  for (int i = 0; i < 256; ++i)
    EXPECT_NEAR(sum[i] / seeds, x[i], bound) << "element " << i;
}

TEST(Mask, Predicates) {
  float x[5] = {-1.0f, 0.0f, 2.0f, -0.0f, NAN};
  bool out[5];
  decodeMask(encodeMask(x, 5, MaskPredicate::Positive).data(), 5, out);
  EXPECT_EQ((std::vector<bool>(out, out + 5)),
            (std::vector<bool>{false, false, true, false, false}));
  decodeMask(encodeMask(x, 5, MaskPredicate::NonNegative).data(), 5, out);
  EXPECT_EQ((std::vector<bool>(out, out + 5)),
            (std::vector<bool>{false, true, true, true, false}));
  decodeMask(encodeMask(x, 5, MaskPredicate::NonZero).data(), 5, out);
  EXPECT_EQ((std::vector<bool>(out, out + 5)),
            (std::vector<bool>{true, false, true, false, true}));
}
