//===- KernelsTest.cpp - the compute kernels against plain loops ----------===//

#include "act/runtime/Kernels.h"
#include "act/runtime/Memory.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

using namespace act::rt;

namespace {

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// `x` (batch x channels x `spatial` elements) with its first two
/// dimensions swapped: channels x batch x spatial (how a weight gradient
/// reads its operands).
std::vector<float> swapBatchAndChannels(const std::vector<float> &x,
                                        int64_t batch, int64_t channels,
                                        int64_t spatial) {
  std::vector<float> t(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t e = 0; e < spatial; ++e)
        t[(c * batch + b) * spatial + e] = x[(b * channels + c) * spatial + e];
  return t;
}

/// A row-major a x b x c x d descriptor of `v`.
MemRef<4> rowMajor(std::vector<float> &v, int64_t a, int64_t b, int64_t c,
                   int64_t d) {
  return {v.data(), v.data(), 0, {a, b, c, d}, {b * c * d, c * d, d, 1}};
}

/// The definition, in double.
std::vector<double> referenceConv(const ConvShape &s,
                                  const std::vector<float> &in,
                                  const std::vector<float> &wt,
                                  const std::vector<float> &init) {
  std::vector<double> out(init.begin(), init.end());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.g; ++g)
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t i = 0; i < s.oh; ++i)
          for (int64_t j = 0; j < s.ow; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < s.c; ++c)
              for (int64_t u = 0; u < s.kh; ++u)
                for (int64_t v = 0; v < s.kw; ++v) {
                  // Zeros outside the input (its padding).
                  int64_t y = i * s.stride[0] + u * s.dilation[0] - s.pad[0];
                  int64_t x = j * s.stride[1] + v * s.dilation[1] - s.pad[1];
                  if (y < 0 || y >= s.h || x < 0 || x >= s.w)
                    continue;
                  acc +=
                      double(
                          in[(((n * s.g + g) * s.c + c) * s.h + y) * s.w + x]) *
                      wt[(((g * s.f + f) * s.c + c) * s.kh + u) * s.kw + v];
                }
            out[(((n * s.g + g) * s.f + f) * s.oh + i) * s.ow + j] += acc;
          }
  return out;
}

void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  EXPECT_LE(err, tolerance * std::max(scale, 1.0));
}

struct ConvCase {
  const char *name;
  ConvShape shape;
  ConvAlgorithm algorithm;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesTheDefinitionOnAnyThreadCount) {
  ConvShape s = GetParam().shape;
  EXPECT_EQ(chooseConvAlgorithm(s), GetParam().algorithm);
  std::vector<float> in = randomVector(s.n * s.g * s.c * s.h * s.w, 1);
  std::vector<float> wt = randomVector(s.g * s.f * s.c * s.kh * s.kw, 2);
  // linalg accumulates into its output: start from a non-zero one.
  std::vector<float> init = randomVector(s.n * s.g * s.f * s.oh * s.ow, 3);
  std::vector<double> want = referenceConv(s, in, wt, init);
  // The algorithm itself, and whatever conv2d dispatches to (oneDNN's
  // primitive where the shape takes it).
  for (bool primitives : {false, true}) {
    setConvPrimitives(primitives);
    for (int threads : {1, 2, 3}) {
      setThreads(threads);
      std::vector<float> out = init;
      conv2d(s, in.data(), wt.data(), out.data());
      expectClose(out, want, 1e-5);
    }
  }
  setThreads(0);
}

// n g c h w | f kh kw | oh ow | stride | dilation
INSTANTIATE_TEST_SUITE_P(
    Kernels, ConvTest,
    ::testing::Values(
        // A GEMM per image (im2col); strided, dilated; 1x1 without a copy.
        ConvCase{"PerImage",
                 {2, 1, 8, 9, 9, 16, 3, 3, 7, 7, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerImage},
        ConvCase{"Strided",
                 {3, 1, 4, 11, 10, 16, 3, 2, 5, 5, {2, 2}, {1, 1}},
                 ConvAlgorithm::PerImage},
        ConvCase{"Dilated",
                 {2, 1, 4, 10, 10, 16, 3, 3, 2, 6, {3, 1}, {2, 2}},
                 ConvAlgorithm::PerImage},
        ConvCase{"Pointwise",
                 {2, 1, 8, 5, 6, 16, 1, 1, 5, 6, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerImage},
        ConvCase{"Grouped",
                 {2, 4, 8, 6, 6, 16, 3, 3, 4, 4, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerImage},
        // A GEMM per output position (many channels, few positions).
        ConvCase{"PerPosition",
                 {16, 1, 32, 5, 5, 12, 3, 3, 3, 3, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerPosition},
        ConvCase{"PerPositionStrided",
                 {16, 2, 16, 7, 9, 12, 3, 3, 3, 3, {2, 1}, {1, 2}},
                 ConvAlgorithm::PerPosition},
        // A GEMM per input channel (a weight gradient: the kernel is a
        // whole image, the channels are the batch).
        ConvCase{"PerChannel",
                 {12, 1, 4, 14, 14, 10, 12, 12, 3, 3, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerChannel},
        // Gathered windows beyond the scratch budget: GEMMs on bands of
        // output rows (PerImage) and of images (PerChannel).
        ConvCase{"PerImageBands",
                 {1, 1, 64, 10, 130, 16, 3, 3, 8, 128, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerImage},
        ConvCase{"PerChannelBands",
                 {8, 1, 4, 40, 40, 6, 32, 32, 9, 9, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerChannel},
        // Read as if padded (zeros around, none copied): each algorithm,
        // with strides and dilations, windows partly and wholly outside.
        ConvCase{"PaddedPerImage",
                 {2, 1, 8, 9, 9, 16, 3, 3, 9, 9, {1, 1}, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerImage},
        ConvCase{"PaddedStridedDilated",
                 {2, 1, 8, 9, 10, 16, 3, 3, 6, 5, {2, 3}, {2, 1}, {3, 2}},
                 ConvAlgorithm::PerImage},
        ConvCase{"PaddedPerPosition",
                 {16, 1, 32, 3, 3, 12, 3, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerPosition},
        ConvCase{"PaddedPerChannel",
                 {8, 1, 4, 12, 12, 6, 12, 12, 3, 3, {1, 1}, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerChannel},
        ConvCase{"PaddedDepthwise",
                 {2, 6, 1, 9, 9, 1, 3, 3, 5, 5, {2, 2}, {1, 1}, {1, 1}},
                 ConvAlgorithm::Direct},
        ConvCase{"PerChannelGrouped",
                 {8, 2, 3, 14, 14, 6, 6, 6, 4, 4, {1, 1}, {2, 2}},
                 ConvAlgorithm::PerChannel},
        // A CNN's first convolution (one channel in, large maps): a GEMM
        // per image into the output, grouped and not.
        ConvCase{"PerChannelFirstLayer",
                 {5, 1, 1, 28, 28, 32, 3, 3, 28, 28, {1, 1}, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerChannel},
        ConvCase{"PerChannelFirstLayerGrouped",
                 {3, 2, 2, 12, 12, 4, 3, 3, 10, 10, {1, 1}, {1, 1}},
                 ConvAlgorithm::PerChannel},
        // Loops (depthwise: a channel per group).
        ConvCase{"Depthwise",
                 {2, 6, 1, 9, 9, 1, 3, 3, 4, 4, {2, 2}, {1, 1}},
                 ConvAlgorithm::Direct}),
    [](const ::testing::TestParamInfo<ConvCase> &info) {
      return std::string(info.param.name);
    });

/// Inputs read through their strides: a batch/channel-transposed view (how
/// a weight gradient reads its input) and a window of a wider buffer, for
/// each of the three algorithms.
TEST(KernelsTest, StridedInputsAreReadInPlace) {
  for (ConvShape s :
       {ConvShape{2, 1, 3, 9, 9, 8, 3, 3, 7, 7, {1, 1}, {1, 1}},
        ConvShape{16, 1, 8, 10, 10, 12, 8, 8, 3, 3, {1, 1}, {1, 1}},
        ConvShape{2, 6, 1, 9, 9, 1, 3, 3, 4, 4, {2, 2}, {1, 1}}}) {
    std::vector<float> wt = randomVector(s.g * s.f * s.c * s.kh * s.kw, 2);
    std::vector<float> init = randomVector(s.n * s.g * s.f * s.oh * s.ow, 3);
    // Stored as (c, g, n, h, w + 3): n and c swapped, rows padded.
    int64_t wp = s.w + 3;
    std::vector<float> stored = randomVector(s.c * s.g * s.n * s.h * wp, 4);
    std::vector<float> dense(s.n * s.g * s.c * s.h * s.w);
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t g = 0; g < s.g; ++g)
        for (int64_t c = 0; c < s.c; ++c)
          for (int64_t y = 0; y < s.h; ++y)
            for (int64_t x = 0; x < s.w; ++x)
              dense[(((n * s.g + g) * s.c + c) * s.h + y) * s.w + x] =
                  stored[(((c * s.g + g) * s.n + n) * s.h + y) * wp + x];
    std::vector<double> want = referenceConv(s, dense, wt, init);
    s.inStride[0] = s.h * wp;
    s.inStride[1] = s.n * s.h * wp;
    s.inStride[2] = s.g * s.n * s.h * wp;
    s.inStride[3] = wp;
    s.inStride[4] = 1;
    std::vector<float> out = init;
    conv2d(s, stored.data(), wt.data(), out.data());
    expectClose(out, want, 1e-5);
  }
}

/// A weight gradient as the exported backward computes it: the convolution
/// of the input with the output gradient, both with batch and channels
/// swapped (strided views, as act-transpose-views passes them). PerChannel
/// reads the weight operand through its strides: the call allocates less
/// than a packed copy of it would take.
TEST(KernelsTest, TransposedWeightIsReadInPlaceByPerChannel) {
  const int64_t batch = 4, cin = 3, cout = 5, h = 10, k = 3, oh = h - k + 1;
  // x: batch x cin x h x h; g: batch x cout x oh x oh; gradient: cout x cin
  // x k x k = conv(x^T (cin x batch x h x h), g^T (cout x batch x oh x oh)).
  std::vector<float> x = randomVector(batch * cin * h * h, 7);
  std::vector<float> g = randomVector(batch * cout * oh * oh, 8);
  ConvShape s{cin, 1, batch, h, h, cout, oh, oh, k, k, {1, 1}, {1, 1}};
  ASSERT_EQ(chooseConvAlgorithm(s), ConvAlgorithm::PerChannel);
  std::vector<float> xt = swapBatchAndChannels(x, batch, cin, h * h);
  std::vector<float> gt = swapBatchAndChannels(g, batch, cout, oh * oh);
  std::vector<float> init(cin * cout * k * k, 0.0f);
  std::vector<double> want = referenceConv(s, xt, gt, init);
  MemRef<4> in{
      x.data(), x.data(), 0, {cin, batch, h, h}, {h * h, cin * h * h, h, 1}};
  MemRef<4> weight{g.data(),
                   g.data(),
                   0,
                   {cout, batch, oh, oh},
                   {oh * oh, cout * oh * oh, oh, 1}};
  // The scratch of one call, and its result.
  auto call = [&](MemRef<4> w, int64_t &scratch) {
    std::vector<float> out = init;
    MemRef<4> result{out.data(),
                     out.data(),
                     0,
                     {cin, cout, k, k},
                     {cout * k * k, k * k, k, 1}};
    resetPeak();
    int64_t before = getMemoryStats().liveBytes;
    _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(&in, &w, &result, 1, 1, 1, 1,
                                                  0, 0);
    scratch = getMemoryStats().peakBytes - before;
    return out;
  };
  setThreads(1);
  int64_t viewScratch = 0, packedScratch = 0;
  std::vector<float> viaView = call(weight, viewScratch);
  MemRef<4> packed{gt.data(),
                   gt.data(),
                   0,
                   {cout, batch, oh, oh},
                   {batch * oh * oh, oh * oh, oh, 1}};
  std::vector<float> viaPacked = call(packed, packedScratch);
  // The output gradient inside a padded buffer (where the input gradient's
  // convolution reads it): its windows are not row-major, and one
  // channel's at a time are gathered instead of a packed copy of all.
  const int64_t op = oh + 2;
  std::vector<float> padded(batch * cout * op * op, 0.0f);
  for (int64_t bf = 0; bf < batch * cout; ++bf)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < oh; ++x)
        padded[(bf * op + y + 1) * op + x + 1] = g[(bf * oh + y) * oh + x];
  MemRef<4> inPadded{padded.data(),
                     padded.data(),
                     op + 1,
                     {cout, batch, oh, oh},
                     {op * op, cout * op * op, op, 1}};
  int64_t paddedScratch = 0;
  std::vector<float> viaPadded = call(inPadded, paddedScratch);
  setThreads(0);
  expectClose(viaView, want, 1e-5);
  expectClose(viaPacked, want, 1e-5);
  expectClose(viaPadded, want, 1e-5);
  // Without reading it in place, the view costs a packed copy more.
  EXPECT_EQ(viewScratch, packedScratch);
  EXPECT_GT(packedScratch, 0);
  EXPECT_LT(paddedScratch,
            packedScratch + int64_t(g.size() * sizeof(float)) / batch + 1);
}

/// A convolution's output written through its (n, f) strides: a weight
/// gradient computed as a convolution lands in its transposed place (f and
/// n swapped) without a copy, for each algorithm, and PerChannel (a weight
/// gradient summed over a chunk of the batch) without output-sized sums.
TEST(KernelsTest, OutputIsWrittenThroughItsStrides) {
  for (ConvShape s :
       {ConvShape{2, 1, 3, 9, 9, 8, 3, 3, 7, 7, {1, 1}, {1, 1}},
        ConvShape{2, 1, 8, 5, 6, 16, 1, 1, 5, 6, {1, 1}, {1, 1}},
        ConvShape{16, 1, 32, 5, 5, 12, 3, 3, 3, 3, {1, 1}, {1, 1}},
        ConvShape{12, 1, 4, 14, 14, 10, 12, 12, 3, 3, {1, 1}, {1, 1}},
        ConvShape{2, 1, 1, 9, 9, 1, 3, 3, 4, 4, {2, 2}, {1, 1}}}) {
    std::vector<float> in = randomVector(s.n * s.c * s.h * s.w, 1);
    std::vector<float> wt = randomVector(s.f * s.c * s.kh * s.kw, 2);
    int64_t p = s.oh * s.ow;
    std::vector<float> init = randomVector(s.n * s.f * p, 3);
    std::vector<double> want = referenceConv(s, in, wt, init);
    // Stored f x n x oh x ow.
    std::vector<float> stored(init.size());
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t e = 0; e < p; ++e)
          stored[(f * s.n + n) * p + e] = init[(n * s.f + f) * p + e];
    MemRef<4> min = rowMajor(in, s.n, s.c, s.h, s.w);
    MemRef<4> mw = rowMajor(wt, s.f, s.c, s.kh, s.kw);
    MemRef<4> mout{stored.data(),
                   stored.data(),
                   0,
                   {s.n, s.f, s.oh, s.ow},
                   {p, s.n * p, s.ow, 1}};
    // The scratch of a call.
    auto scratch = [&](MemRef<4> out) {
      resetPeak();
      int64_t before = getMemoryStats().liveBytes;
      _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
          &min, &mw, &out, s.stride[0], s.stride[1], s.dilation[0],
          s.dilation[1], 0, 0);
      return getMemoryStats().peakBytes - before;
    };
    for (int threads : {1, 2}) {
      setThreads(threads);
      std::vector<float> start = stored, dense = init;
      int64_t denseScratch = scratch(rowMajor(dense, s.n, s.f, s.oh, s.ow));
      // No row-major copy of the output is made; PerChannel's GEMMs add
      // into the transposed place itself, without the output-sized sums
      // the row-major output takes (one per thread; a zero-sized scratch
      // is one float).
      if (chooseConvAlgorithm(s) == ConvAlgorithm::PerChannel)
        EXPECT_LE(scratch(mout),
                  denseScratch - int64_t(init.size() * sizeof(float)) + 4);
      else
        EXPECT_EQ(scratch(mout), denseScratch);
      std::vector<float> got(init.size());
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t f = 0; f < s.f; ++f)
          for (int64_t e = 0; e < p; ++e)
            got[(n * s.f + f) * p + e] = stored[(f * s.n + n) * p + e];
      expectClose(got, want, 1e-5);
      stored = start;
    }
    setThreads(0);
  }
}

/// A CNN's first convolution (one channel in, 28x28 maps) takes scratch
/// of a few images' windows, not of its output: its output-sized sums were
/// the fmnist-cnn step's peak at large batches (98 MiB at batch 1024).
TEST(KernelsTest, FirstLayerTakesNoOutputSizedScratch) {
  ConvShape s{64, 1, 1, 28, 28, 32, 3, 3, 28, 28, {1, 1}, {1, 1}, {1, 1}};
  ASSERT_EQ(chooseConvAlgorithm(s), ConvAlgorithm::PerChannel);
  std::vector<float> in = randomVector(s.n * s.c * s.h * s.w, 1);
  std::vector<float> wt = randomVector(s.f * s.c * s.kh * s.kw, 2);
  std::vector<float> init = randomVector(s.n * s.f * s.oh * s.ow, 3);
  std::vector<double> want = referenceConv(s, in, wt, init);
  for (int threads : {1, 2}) {
    setThreads(threads);
    std::vector<float> out = init;
    MemRef<4> min = rowMajor(in, s.n, s.c, s.h, s.w);
    MemRef<4> mw = rowMajor(wt, s.f, s.c, s.kh, s.kw);
    MemRef<4> mout = rowMajor(out, s.n, s.f, s.oh, s.ow);
    resetPeak();
    int64_t before = getMemoryStats().liveBytes;
    _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(&min, &mw, &mout, 1, 1, 1, 1,
                                                  1, 1);
    int64_t scratch = getMemoryStats().peakBytes - before;
    // Windows of one image per thread: 28 * 28 * 9 floats.
    EXPECT_LE(scratch, int64_t(threads * 28 * 28 * 9 * sizeof(float) + 1024));
    expectClose(out, want, 1e-5);
  }
  setThreads(0);
}

/// The definition of a convolution's input gradient, in double.
std::vector<double> referenceBackwardData(const ConvShape &s,
                                          const std::vector<float> &dy,
                                          const std::vector<float> &wt,
                                          const std::vector<float> &init) {
  std::vector<double> dx(init.begin(), init.end());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.g; ++g)
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t i = 0; i < s.oh; ++i)
          for (int64_t j = 0; j < s.ow; ++j)
            for (int64_t c = 0; c < s.c; ++c)
              for (int64_t u = 0; u < s.kh; ++u)
                for (int64_t v = 0; v < s.kw; ++v) {
                  int64_t y = i * s.stride[0] + u * s.dilation[0] - s.pad[0];
                  int64_t x = j * s.stride[1] + v * s.dilation[1] - s.pad[1];
                  if (y < 0 || y >= s.h || x < 0 || x >= s.w)
                    continue;
                  dx[(((n * s.g + g) * s.c + c) * s.h + y) * s.w + x] +=
                      double(dy[(((n * s.g + g) * s.f + f) * s.oh + i) * s.ow +
                                j]) *
                      wt[(((g * s.f + f) * s.c + c) * s.kh + u) * s.kw + v];
                }
  return dx;
}

/// The input gradient (GEMM + col2im) against the definition: strided,
/// dilated, padded (beyond the kernel too), pointwise, grouped, in bands,
/// on any thread count; through the entry point for rank 4, with the output
/// gradient dense and as the interior of a padded buffer.
TEST(KernelsTest, BackwardDataMatchesTheDefinition) {
  // n g c h w | f kh kw | oh ow | stride | dilation | pad
  for (ConvShape s :
       {ConvShape{2, 1, 8, 9, 9, 16, 3, 3, 9, 9, {1, 1}, {1, 1}, {1, 1}},
        ConvShape{3, 1, 4, 11, 10, 16, 3, 3, 6, 5, {2, 2}, {1, 1}, {1, 1}},
        ConvShape{2, 1, 4, 8, 8, 6, 3, 3, 4, 4, {2, 2}, {1, 1}, {1, 1}},
        ConvShape{2, 1, 4, 10, 10, 16, 3, 3, 4, 6, {3, 1}, {2, 2}, {2, 1}},
        ConvShape{2, 1, 8, 8, 8, 16, 1, 1, 4, 4, {2, 2}, {1, 1}, {0, 0}},
        ConvShape{2, 1, 3, 5, 5, 4, 3, 3, 7, 7, {1, 1}, {1, 1}, {3, 3}},
        ConvShape{2, 4, 8, 6, 6, 16, 3, 3, 4, 4, {1, 1}, {1, 1}},
        ConvShape{1, 1, 64, 10, 130, 16, 3, 3, 8, 128, {1, 1}, {1, 1}}}) {
    std::vector<float> dy = randomVector(s.n * s.g * s.f * s.oh * s.ow, 1);
    std::vector<float> wt = randomVector(s.g * s.f * s.c * s.kh * s.kw, 2);
    std::vector<float> init = randomVector(s.n * s.g * s.c * s.h * s.w, 3);
    std::vector<double> want = referenceBackwardData(s, dy, wt, init);
    for (int threads : {1, 2, 3}) {
      setThreads(threads);
      std::vector<float> dx = init;
      if (s.g == 1) {
        MemRef<4> mdy = rowMajor(dy, s.n, s.f, s.oh, s.ow);
        MemRef<4> mw = rowMajor(wt, s.f, s.c, s.kh, s.kw);
        MemRef<4> mdx = rowMajor(dx, s.n, s.c, s.h, s.w);
        _mlir_ciface_act_kernel_conv_2d_nchw_fchw_backward_data_f32(
            &mdy, &mw, &mdx, s.stride[0], s.stride[1], s.dilation[0],
            s.dilation[1], s.pad[0], s.pad[1]);
        expectClose(dx, want, 1e-5);
        // The output gradient as the interior of a zero-padded buffer
        // (where the backward computes it): read through its strides.
        int64_t ph = s.oh + 2, pw = s.ow + 3;
        std::vector<float> padded(s.n * s.f * ph * pw, 0.0f);
        for (int64_t nf = 0; nf < s.n * s.f; ++nf)
          for (int64_t i = 0; i < s.oh; ++i)
            for (int64_t j = 0; j < s.ow; ++j)
              padded[(nf * ph + i + 1) * pw + j + 2] =
                  dy[(nf * s.oh + i) * s.ow + j];
        MemRef<4> interior{padded.data(),
                           padded.data(),
                           pw + 2,
                           {s.n, s.f, s.oh, s.ow},
                           {s.f * ph * pw, ph * pw, pw, 1}};
        dx = init;
        mdx.aligned = mdx.allocated = dx.data();
        _mlir_ciface_act_kernel_conv_2d_nchw_fchw_backward_data_f32(
            &interior, &mw, &mdx, s.stride[0], s.stride[1], s.dilation[0],
            s.dilation[1], s.pad[0], s.pad[1]);
      } else {
        conv2dBackwardData(s, dy.data(), nullptr, wt.data(), dx.data());
      }
      expectClose(dx, want, 1e-5);
    }
    setThreads(0);
  }
}

/// A matmul whose result is transposed in memory (C^T += B^T A^T).
TEST(KernelsTest, MatmulIntoATransposedResult) {
  const int64_t m = 5, k = 7, n = 6;
  std::vector<float> a = randomVector(m * k, 4);
  std::vector<float> b = randomVector(k * n, 5);
  std::vector<float> c = randomVector(m * n, 6); // stored n x m
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = c[j * m + i];
      for (int64_t l = 0; l < k; ++l)
        acc += double(a[i * k + l]) * b[l * n + j];
      want[i * n + j] = acc;
    }
  MemRef<2> ma{a.data(), a.data(), 0, {m, k}, {k, 1}};
  MemRef<2> mb{b.data(), b.data(), 0, {k, n}, {n, 1}};
  MemRef<2> mc{c.data(), c.data(), 0, {m, n}, {1, m}};
  resetPeak();
  int64_t before = getMemoryStats().liveBytes;
  _mlir_ciface_act_kernel_matmul_f32(&ma, &mb, &mc);
  EXPECT_EQ(getMemoryStats().peakBytes - before, 0);
  std::vector<float> got(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      got[i * n + j] = c[j * m + i];
  expectClose(got, want, 1e-5);
}

/// Ordinary convolutions run on oneDNN's direct convolution primitive (in
/// chunks of images, here one image each),
/// accumulating into the output, and agree with the GEMMs and with the
/// definition; an output written through its strides too.
TEST(KernelsTest, OrdinaryConvolutionsRunOnTheDirectPrimitive) {
  ConvShape s{9, 1, 16, 40, 40, 24, 3, 3, 20, 20, {2, 2}, {1, 1}, {1, 1}};
  ASSERT_EQ(chooseConvAlgorithm(s), ConvAlgorithm::PerImage);
  std::vector<float> in = randomVector(s.n * s.c * s.h * s.w, 1);
  std::vector<float> wt = randomVector(s.f * s.c * s.kh * s.kw, 2);
  std::vector<float> init = randomVector(s.n * s.f * s.oh * s.ow, 3);
  std::vector<double> want = referenceConv(s, in, wt, init);
  for (int threads : {1, 2}) {
    setThreads(threads);
    int64_t before = getConvPrimitiveRuns();
    std::vector<float> viaPrimitive = init;
    conv2d(s, in.data(), wt.data(), viaPrimitive.data());
    EXPECT_EQ(getConvPrimitiveRuns(), before + 1);
    expectClose(viaPrimitive, want, 1e-5);
    setConvPrimitives(false);
    std::vector<float> viaGemm = init;
    conv2d(s, in.data(), wt.data(), viaGemm.data());
    setConvPrimitives(true);
    EXPECT_EQ(getConvPrimitiveRuns(), before + 1);
    expectClose(viaGemm, want, 1e-5);
  }
  setThreads(0);
  // The input gradient of the same convolution: the primitive's backward
  // data, accumulating into the input gradient.
  std::vector<float> dy = randomVector(s.n * s.f * s.oh * s.ow, 6);
  std::vector<float> dxInit = randomVector(in.size(), 7);
  std::vector<double> dxWant = referenceBackwardData(s, dy, wt, dxInit);
  int64_t runs = getConvPrimitiveRuns();
  std::vector<float> dx = dxInit;
  conv2dBackwardData(s, dy.data(), nullptr, wt.data(), dx.data());
  EXPECT_EQ(getConvPrimitiveRuns(), runs + 1);
  expectClose(dx, dxWant, 1e-5);
  // Small maps at a large batch (ResNet-20's last stage, 7x7): the GEMM
  // per output position would be chosen, the primitive is faster.
  ConvShape small{64, 1, 16, 7, 7, 32, 3, 3, 7, 7, {1, 1}, {1, 1}, {1, 1}};
  ASSERT_EQ(chooseConvAlgorithm(small), ConvAlgorithm::PerPosition);
  std::vector<float> smallIn = randomVector(64 * 16 * 49, 8);
  std::vector<float> smallWt = randomVector(32 * 16 * 9, 9);
  std::vector<float> smallOut = randomVector(64 * 32 * 49, 10);
  std::vector<double> smallWant =
      referenceConv(small, smallIn, smallWt, smallOut);
  runs = getConvPrimitiveRuns();
  conv2d(small, smallIn.data(), smallWt.data(), smallOut.data());
  EXPECT_EQ(getConvPrimitiveRuns(), runs + 1);
  expectClose(smallOut, smallWant, 1e-5);
  // Three input channels: the GEMMs (faster there).
  ConvShape first{2, 1, 3, 9, 9, 16, 3, 3, 9, 9, {1, 1}, {1, 1}, {1, 1}};
  int64_t before = getConvPrimitiveRuns();
  std::vector<float> out(2 * 16 * 81, 0.0f);
  conv2d(first, randomVector(2 * 3 * 81, 4).data(),
         randomVector(16 * 3 * 9, 5).data(), out.data());
  EXPECT_EQ(getConvPrimitiveRuns(), before);
}

/// A weight gradient as the exported backward computes it (a convolution
/// of the input and the output gradient with batch and channels swapped,
/// into the weight gradient's transposed place) runs on oneDNN's
/// backward-weights primitive, reading all three through their strides,
/// in chunks of the batch: plain, with the forward's stride 2 and padding
/// 1, and on a 7x7 map (ResNet-20's last stage at batch 32). (A forward
/// convolution whose kernel is larger than its output keeps the GEMMs:
/// ConvTest's PerPosition cases.)
TEST(KernelsTest, WeightGradientsRunOnTheBackwardWeightsPrimitive) {
  // batch, input channels, output channels, input size, forward stride.
  for (auto [batch, cin, cout, h, stride] :
       {std::array<int64_t, 5>{16, 8, 12, 10, 1},
        std::array<int64_t, 5>{16, 16, 8, 17, 2},
        std::array<int64_t, 5>{32, 16, 8, 9, 1}}) {
    const int64_t k = 3, pad = stride == 1 ? 0 : 1;
    const int64_t oh = (h + 2 * pad - k) / stride + 1;
    std::vector<float> x = randomVector(batch * cin * h * h, 7);
    std::vector<float> g = randomVector(batch * cout * oh * oh, 8);
    ConvShape s{cin,       1,  batch, h, h,      cout,
                oh,        oh, k,     k, {1, 1}, {stride, stride},
                {pad, pad}};
    std::vector<float> xt = swapBatchAndChannels(x, batch, cin, h * h);
    std::vector<float> gt = swapBatchAndChannels(g, batch, cout, oh * oh);
    std::vector<float> init = randomVector(cin * cout * k * k, 9);
    std::vector<double> want = referenceConv(s, xt, gt, init);
    // The gradient stored cout x cin x k x k (the weight's layout).
    std::vector<float> stored(init.size());
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t f = 0; f < cout; ++f)
        for (int64_t e = 0; e < k * k; ++e)
          stored[(f * cin + c) * k * k + e] = init[(c * cout + f) * k * k + e];
    MemRef<4> in{
        x.data(), x.data(), 0, {cin, batch, h, h}, {h * h, cin * h * h, h, 1}};
    MemRef<4> weight{g.data(),
                     g.data(),
                     0,
                     {cout, batch, oh, oh},
                     {oh * oh, cout * oh * oh, oh, 1}};
    MemRef<4> out{stored.data(),
                  stored.data(),
                  0,
                  {cin, cout, k, k},
                  {k * k, cin * k * k, k, 1}};
    int64_t runs = getConvPrimitiveRuns();
    _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(&in, &weight, &out, 1, 1,
                                                  stride, stride, pad, pad);
    EXPECT_EQ(getConvPrimitiveRuns(), runs + 1);
    std::vector<float> got(init.size());
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t f = 0; f < cout; ++f)
        for (int64_t e = 0; e < k * k; ++e)
          got[(c * cout + f) * k * k + e] = stored[(f * cin + c) * k * k + e];
    expectClose(got, want, 1e-5);
  }
}

/// A matmul through its entry point on strided and transposed views.
TEST(KernelsTest, MatmulOnStridedAndTransposedViews) {
  const int64_t m = 5, k = 7, n = 6;
  std::vector<float> a = randomVector(m * k * 2, 4); // every other column
  std::vector<float> b = randomVector(k * n, 5);     // stored n x k
  std::vector<float> c = randomVector(m * n * 3, 6); // every third element
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = c[(i * n + j) * 3];
      for (int64_t l = 0; l < k; ++l)
        acc += double(a[(i * k + l) * 2]) * b[j * k + l];
      want[i * n + j] = acc;
    }
  MemRef<2> ma{a.data(), a.data(), 0, {m, k}, {2 * k, 2}};
  MemRef<2> mb{b.data(), b.data(), 0, {k, n}, {1, k}};
  MemRef<2> mc{c.data(), c.data(), 0, {m, n}, {3 * n, 3}};
  _mlir_ciface_act_kernel_matmul_f32(&ma, &mb, &mc);
  std::vector<float> got(m * n);
  for (int64_t i = 0; i < m * n; ++i)
    got[i] = c[i * 3];
  expectClose(got, want, 1e-5);
}

TEST(KernelsTest, BatchMatmulMatchesLoops) {
  const int64_t bs = 4, m = 3, k = 9, n = 17;
  std::vector<float> a = randomVector(bs * m * k, 7);
  std::vector<float> b = randomVector(bs * k * n, 8);
  std::vector<float> c(bs * m * n, 0.5f);
  std::vector<double> want(bs * m * n, 0.5);
  for (int64_t q = 0; q < bs; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l)
          want[(q * m + i) * n + j] +=
              double(a[(q * m + i) * k + l]) * b[(q * k + l) * n + j];
  MemRef<3> ma{a.data(), a.data(), 0, {bs, m, k}, {m * k, k, 1}};
  MemRef<3> mb{b.data(), b.data(), 0, {bs, k, n}, {k * n, n, 1}};
  MemRef<3> mc{c.data(), c.data(), 0, {bs, m, n}, {m * n, n, 1}};
  _mlir_ciface_act_kernel_batch_matmul_f32(&ma, &mb, &mc);
  expectClose(c, want, 1e-5);
}

/// Copies through transposed and reversed views (a weight read backwards
/// with its two channel dims swapped), against indexing by hand.
TEST(KernelsTest, CopyThroughTransposedAndReversedViews) {
  const int64_t f = 5, c = 7, k = 3;
  std::vector<float> w = randomVector(f * c * k * k, 9);
  // flipped[c][f][u][v] = w[f][c][k-1-u][k-1-v]
  int64_t sizes[4] = {c, f, k, k};
  int64_t srcStrides[4] = {k * k, c * k * k, -k, -1};
  int64_t dstStrides[4] = {f * k * k, k * k, k, 1};
  const float *origin = w.data() + (k - 1) * k + (k - 1);
  for (int threads : {1, 2}) {
    setThreads(threads);
    std::vector<float> flipped(w.size(), 0.0f);
    copy(4, sizes, origin, srcStrides, flipped.data(), dstStrides);
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < f; ++j)
        for (int64_t u = 0; u < k; ++u)
          for (int64_t v = 0; v < k; ++v)
            ASSERT_EQ(flipped[((i * f + j) * k + u) * k + v],
                      w[((j * c + i) * k + (k - 1 - u)) * k + (k - 1 - v)]);
  }
  setThreads(0);
  // Many rows (the threaded path), size-1 dims, a transposed 2-d view.
  const int64_t rows = 300, cols = 40;
  std::vector<float> m = randomVector(rows * cols, 10), t(rows * cols);
  int64_t tSizes[3] = {cols, 1, rows}, tSrc[3] = {1, 999, cols},
          tDst[3] = {rows, 999, 1};
  copy(3, tSizes, m.data(), tSrc, t.data(), tDst);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(t[j * rows + i], m[i * cols + j]);
}

} // namespace
