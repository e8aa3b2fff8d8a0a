//===- StorageLayoutTest.cpp - storage arithmetic of every encoding -------===//
//
// Exact byte counts of every encoding, including element counts that are not
// multiples of the group size or of the 32-bit word packing.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::act;

namespace {

class StorageLayoutTest : public ::testing::Test {
protected:
  StorageLayoutTest() { context.loadDialect<ActDialect>(); }

  StorageLayout quant(unsigned bits, int64_t group, int64_t n) {
    return cast<EncodingAttrInterface>(
               QuantEncodingAttr::get(&context, bits, group,
                                      Rounding::Stochastic, StatFormat::F32))
        .getStorageLayout(n, b().getF32Type());
  }
  StorageLayout flt(FloatFormat format, int64_t n) {
    return cast<EncodingAttrInterface>(FloatEncodingAttr::get(&context, format))
        .getStorageLayout(n, b().getF32Type());
  }
  StorageLayout mask(int64_t n) {
    return cast<EncodingAttrInterface>(
               MaskEncodingAttr::get(&context, MaskPredicate::Positive))
        .getStorageLayout(n, b().getF32Type());
  }
  Builder b() { return Builder(&context); }

  MLIRContext context;
};

StorageLayout layout(int64_t payload, int64_t metadata, int64_t padding) {
  return {payload, metadata, padding};
}

TEST_F(StorageLayoutTest, QuantWholeGroups) {
  // 4 bits, 1024 elements: 512 payload bytes, 4 groups x (min, scale) f32.
  EXPECT_EQ(quant(4, 256, 1024), layout(512, 32, 0));
  // 8 bits, group 256: a quarter of f32 plus 8 bytes per 256 elements.
  EXPECT_EQ(quant(8, 256, 4096), layout(4096, 128, 0));
  EXPECT_EQ(quant(1, 256, 256).getTotalBytes(), 32 + 8);
  EXPECT_EQ(quant(2, 128, 512), layout(128, 32, 0));
}

TEST_F(StorageLayoutTest, QuantTailGroup) {
  // 1000 elements in groups of 256: 3 full groups and a tail of 232.
  EXPECT_EQ(quant(4, 256, 1000), layout(500, 4 * 8, 0));
  // A group of 7 elements: 100 elements are 15 groups (the last has 2).
  EXPECT_EQ(quant(8, 7, 100), layout(100, 15 * 8, 0));
  // One element is one group and one 32-bit word.
  EXPECT_EQ(quant(8, 256, 1), layout(1, 8, 3));
}

TEST_F(StorageLayoutTest, QuantPartialWord) {
  // 2 bits, 17 elements: 34 bits = 5 payload bytes in two words (8 bytes).
  EXPECT_EQ(quant(2, 256, 17), layout(5, 8, 3));
  // 1 bit, 33 elements: 5 bytes of bits, two words.
  EXPECT_EQ(quant(1, 256, 33), layout(5, 8, 3));
  // 4 bits, 9 elements: 36 bits, 5 bytes, two words.
  EXPECT_EQ(quant(4, 4, 9), layout(5, 3 * 8, 3));
  // The total is always whole 32-bit words plus the metadata.
  for (unsigned bits : {1u, 2u, 4u, 8u})
    for (int64_t n = 1; n < 300; ++n) {
      StorageLayout s = quant(bits, 64, n);
      int64_t perWord = 32 / bits;
      EXPECT_EQ(s.payloadBytes + s.paddingBytes,
                4 * ((n + perWord - 1) / perWord));
      EXPECT_EQ(s.metadataBytes, 8 * ((n + 63) / 64));
      EXPECT_EQ(s.payloadBytes, (n * bits + 7) / 8);
    }
}

TEST_F(StorageLayoutTest, RuntimeQuantAtItsPlannedWidth) {
  // #act.runtime_quant: #act.quant's storage at the planned width plus the
  // width (4 bytes of metadata); at 32 the elements as they are (and the
  // group statistics, which the encode's type keeps).
  auto runtime = [&](unsigned bits, int64_t n) {
    return cast<EncodingAttrInterface>(
               RuntimeQuantEncodingAttr::get(&context, {1, 2, 4, 8, 32}, bits,
                                             256, Rounding::Stochastic,
                                             StatFormat::F32))
        .getStorageLayout(n, b().getF32Type());
  };
  for (unsigned bits : {1u, 2u, 4u, 8u})
    for (int64_t n : {1, 17, 1000, 4096}) {
      StorageLayout q = quant(bits, 256, n);
      EXPECT_EQ(runtime(bits, n),
                layout(q.payloadBytes, q.metadataBytes + 4, q.paddingBytes));
    }
  EXPECT_EQ(runtime(32, 1000), layout(4000, 4 * 8 + 4, 0));
  // Its quantizer: the planned width (none at 32); another width is an
  // option only among the choices.
  auto attr = cast<EncodingAttrInterface>(RuntimeQuantEncodingAttr::get(
      &context, {2, 4, 32}, 4, 256, Rounding::Stochastic, StatFormat::F32));
  EXPECT_EQ(attr.getQuantizerBits(), std::optional<unsigned>(4));
  EXPECT_TRUE(attr.hasRuntimeBits());
  EXPECT_FALSE(attr.withQuantizerBits(8));
  EXPECT_EQ(attr.withQuantizerBits(32).getQuantizerBits(), std::nullopt);
}
TEST_F(StorageLayoutTest, QuantEmpty) {
  EXPECT_EQ(quant(4, 256, 0), layout(0, 0, 0));
}

TEST_F(StorageLayoutTest, FloatSixteenBit) {
  // An array of 16-bit codes: no padding, odd counts included.
  EXPECT_EQ(flt(FloatFormat::F16, 1000), layout(2000, 0, 0));
  EXPECT_EQ(flt(FloatFormat::BF16, 1001), layout(2002, 0, 0));
  EXPECT_EQ(flt(FloatFormat::F16, 1), layout(2, 0, 0));
}

TEST_F(StorageLayoutTest, FloatFp10) {
  // Three per 32-bit word, two bits of each word unused.
  EXPECT_EQ(flt(FloatFormat::FP10, 3).getTotalBytes(), 4);
  EXPECT_EQ(flt(FloatFormat::FP10, 4).getTotalBytes(), 8);
  // 300 elements: 100 words; 3000 bits = 375 bytes of payload.
  EXPECT_EQ(flt(FloatFormat::FP10, 300), layout(375, 0, 25));
  // 1000 elements: 334 words (the last holds one element).
  EXPECT_EQ(flt(FloatFormat::FP10, 1000), layout(1250, 0, 86));
  EXPECT_EQ(flt(FloatFormat::FP10, 1000).getTotalBytes(), 334 * 4);
}

TEST_F(StorageLayoutTest, FloatFp8) {
  for (FloatFormat f : {FloatFormat::E4M3, FloatFormat::E5M2}) {
    EXPECT_EQ(flt(f, 1024), layout(1024, 0, 0));
    // An array of byte codes: no padding.
    EXPECT_EQ(flt(f, 1025), layout(1025, 0, 0));
    EXPECT_EQ(flt(f, 6), layout(6, 0, 0));
  }
}

TEST_F(StorageLayoutTest, Mask) {
  // 32 per word.
  EXPECT_EQ(mask(32), layout(4, 0, 0));
  EXPECT_EQ(mask(33), layout(5, 0, 3));
  EXPECT_EQ(mask(1000), layout(125, 0, 3));
  EXPECT_EQ(mask(1), layout(1, 0, 3));
}

TEST_F(StorageLayoutTest, FewBit) {
  auto fewbit = [&](unsigned bits, int64_t n) {
    std::vector<float> boundaries, values(size_t(1) << bits, 0.5f);
    for (unsigned j = 1; j < (1u << bits); ++j)
      boundaries.push_back(float(j));
    auto enc = cast<EncodingAttrInterface>(FewBitEncodingAttr::get(
        &context, bits, DenseF32ArrayAttr::get(&context, boundaries),
        DenseF32ArrayAttr::get(&context, values)));
    return enc.getStorageLayout(n, b().getF32Type());
  };
  // The packed layout of `bits`-bit codes, no metadata (the table is in
  // the IR).
  EXPECT_EQ(fewbit(1, 64), layout(8, 0, 0));
  EXPECT_EQ(fewbit(2, 1000), layout(250, 0, 2));
  // 3 bits: ten codes to a word, two bits unused: 100 words for 1000.
  EXPECT_EQ(fewbit(3, 1000), layout(375, 0, 25));
  EXPECT_EQ(fewbit(4, 9), layout(5, 0, 3));
}

TEST_F(StorageLayoutTest, Index) {
  auto index = [&](unsigned bits, int64_t n) {
    return cast<EncodingAttrInterface>(IndexEncodingAttr::get(&context, bits))
        .getStorageLayout(n, b().getI64Type());
  };
  // 2x2 pool windows: 2 bits, 16 per word (against 8 bytes each as i64).
  EXPECT_EQ(index(2, 1024), layout(256, 0, 0));
  // 3x3: 4 bits.
  EXPECT_EQ(index(4, 9), layout(5, 0, 3));
  // 10 bits: three to a word, two bits unused.
  EXPECT_EQ(index(10, 300), layout(375, 0, 25));
}

TEST_F(StorageLayoutTest, Sparse) {
  auto sparse = [&](double density, int64_t n, Type type,
                    std::optional<FloatFormat> format = std::nullopt) {
    return cast<EncodingAttrInterface>(
               SparseEncodingAttr::get(&context, llvm::APFloat(density),
                                       format))
        .getStorageLayout(n, type);
  };
  auto estimated = [&](int64_t payload, int64_t padding) {
    StorageLayout l = layout(payload, 0, padding);
    l.estimated = true;
    return l;
  };
  // Half of 1000 f32: a 125-byte bitmap (32 words: 3 bytes of padding) and
  // 500 values.
  EXPECT_EQ(sparse(0.5, 1000, b().getF32Type()), estimated(125 + 2000, 3));
  // All zero: the bitmap alone.
  EXPECT_EQ(sparse(0.0, 1024, b().getF32Type()), estimated(128, 0));
  // Denser than n - ceil(n / 32): the dense fallback, the tensor's bytes.
  EXPECT_EQ(sparse(0.99, 1000, b().getF32Type()), estimated(4000, 0));
  EXPECT_EQ(sparse(1.0, 1000, b().getF16Type()), estimated(2000, 0));
  // With a format (Gist's precision reduction): the values in it. 500
  // bf16 values (1000 bytes); 500 fp10 values, three to a word (167 words:
  // 625 bytes of codes, 43 of padding); the dense fallback's 1000 in fp10.
  EXPECT_EQ(sparse(0.5, 1000, b().getF32Type(), FloatFormat::BF16),
            estimated(125 + 1000, 3));
  EXPECT_EQ(sparse(0.5, 1000, b().getF32Type(), FloatFormat::FP10),
            estimated(125 + 625, 3 + 43));
  EXPECT_EQ(sparse(1.0, 1000, b().getF32Type(), FloatFormat::FP10),
            estimated(1250, 86));
  EXPECT_TRUE(isSparseDenseFallback(1000, 969));
  EXPECT_FALSE(isSparseDenseFallback(1000, 968));
}

TEST_F(StorageLayoutTest, Division) {
  auto division = [&](int64_t block, unsigned bits, int64_t group,
                      SpatialLayout spatial, ArrayRef<int64_t> shape,
                      Type element) {
    return *cast<EncodingAttrInterface>(
                DivisionEncodingAttr::get(&context, block, bits, group,
                                          Rounding::Stochastic, spatial))
                .getStorageLayout(RankedTensorType::get(shape, element));
  };
  // 2x16x32x32 f32 at B = 8, Q = 2: payload 8192 bytes of codes and
  // 2 * 16 * 4 * 4 f32 averages, metadata 128 groups of (min, scale).
  EXPECT_EQ(division(8, 2, 256, SpatialLayout::NCHW, {2, 16, 32, 32},
                     b().getF32Type()),
            layout(8192 + 512 * 4, 128 * 8, 0));
  // Partial blocks count as blocks: 10x12 maps at B = 4 have 3x3 averages.
  EXPECT_EQ(
      division(4, 4, 64, SpatialLayout::NCHW, {1, 1, 10, 12}, b().getF32Type()),
      layout(60 + 9 * 4, 2 * 8, 0));
  // NHWC: H and W are dimensions 1 and 2; bf16 averages take 2 bytes.
  EXPECT_EQ(division(8, 2, 256, SpatialLayout::NHWC, {1, 9, 9, 16},
                     b().getBF16Type()),
            layout(324 + 4 * 16 * 2, 6 * 8, 0));
  // The paper's formula (B^-2 + Q/32)^-1 = 12.8x at B = 8, Q = 2, less the
  // per-group metadata: (1/64 + 2/32 + 2/256)^-1 = 11.64x.
  StorageLayout l = division(8, 2, 256, SpatialLayout::NCHW, {4, 64, 32, 32},
                             b().getF32Type());
  EXPECT_NEAR(4.0 * 4 * 64 * 32 * 32 / double(l.getTotalBytes()), 11.64, 0.01);
}

TEST_F(StorageLayoutTest, QuantBf16Statistics) {
  // Two bf16 statistics a group: 4 bytes instead of 8; the payload is the
  // same, and so is the runtime form's at any width.
  for (int64_t n : {1, 1000, 6400}) {
    auto bf16 = cast<EncodingAttrInterface>(QuantEncodingAttr::get(
        &context, 2, 256, Rounding::Stochastic, StatFormat::BF16));
    StorageLayout f32 = quant(2, 256, n),
                  l = bf16.getStorageLayout(n, b().getF32Type());
    EXPECT_EQ(l,
              layout(f32.payloadBytes, (n + 255) / 256 * 4, f32.paddingBytes));
    auto runtime = cast<EncodingAttrInterface>(
        RuntimeQuantEncodingAttr::get(&context, {1, 2, 4, 8, 32}, 2, 256,
                                      Rounding::Stochastic, StatFormat::BF16));
    EXPECT_EQ(runtime.getStorageLayout(n, b().getF32Type()),
              layout(l.payloadBytes, l.metadataBytes + 4, l.paddingBytes));
    // Its quantizer at another width keeps the format.
    EXPECT_EQ(cast<QuantEncodingAttr>(bf16.withQuantizerBits(4)).getStats(),
              StatFormat::BF16);
  }
}

TEST_F(StorageLayoutTest, WholeTensor) {
  auto enc = cast<EncodingAttrInterface>(QuantEncodingAttr::get(
      &context, 2, 256, Rounding::Nearest, StatFormat::F32));
  auto type = RankedTensorType::get({64, 100}, b().getF32Type());
  std::optional<StorageLayout> s = enc.getStorageLayout(type);
  ASSERT_TRUE(s.has_value());
  // 6400 elements: 1600 bytes of 2-bit codes, 25 groups.
  EXPECT_EQ(*s, layout(1600, 25 * 8, 0));
  // Dynamic shapes have no static size.
  auto dynamic =
      RankedTensorType::get({ShapedType::kDynamic, 100}, b().getF32Type());
  EXPECT_FALSE(enc.getStorageLayout(dynamic).has_value());
}

TEST_F(StorageLayoutTest, DecodedTypeAndLosslessness) {
  auto f32 = RankedTensorType::get({4, 4}, b().getF32Type());
  auto q = cast<EncodingAttrInterface>(QuantEncodingAttr::get(
      &context, 8, 256, Rounding::Nearest, StatFormat::F32));
  auto m = cast<EncodingAttrInterface>(
      MaskEncodingAttr::get(&context, MaskPredicate::Positive));
  auto h = cast<EncodingAttrInterface>(
      FloatEncodingAttr::get(&context, FloatFormat::F16));
  auto bf = cast<EncodingAttrInterface>(
      FloatEncodingAttr::get(&context, FloatFormat::BF16));
  EXPECT_EQ(q.getDecodedType(f32), f32);
  EXPECT_EQ(h.getDecodedType(f32), f32);
  EXPECT_EQ(m.getDecodedType(f32),
            RankedTensorType::get({4, 4}, b().getI1Type()));
  EXPECT_FALSE(q.isLossless(b().getF32Type()));
  EXPECT_TRUE(m.isLossless(b().getF32Type()));
  EXPECT_FALSE(h.isLossless(b().getF32Type()));
  EXPECT_TRUE(h.isLossless(b().getF16Type()));
  EXPECT_FALSE(h.isLossless(b().getBF16Type()));
  EXPECT_TRUE(bf.isLossless(b().getBF16Type()));
}

} // namespace
