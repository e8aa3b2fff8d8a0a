//===- CudaLibrariesTest.cpp - GPU library calls against the CPU kernels --===//
//
// The _mlir_ciface_act_gpu_kernel_* entry points over the cuBLAS/cuDNN
// stand-ins (FakeCudaLibraries.cpp, host memory, loaded through
// ACT_CUBLAS_LIBRARY / ACT_CUDNN_LIBRARY by this executable's main): each
// case runs the same memrefs through the CPU kernel and the GPU entry point
// and compares. The stand-ins check the arguments as the libraries do
// (leading dimensions, the output's size against the convolution, the
// filter's channels against the groups), so a wrong translation fails here.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/CudaLibraries.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
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

/// A descriptor of `data` with the given sizes and strides.
template <int N>
MemRef<N> view(std::vector<float> &data, std::array<int64_t, N> sizes,
               std::array<int64_t, N> strides, int64_t offset = 0) {
  MemRef<N> m{data.data(), data.data(), offset, {}, {}};
  for (int d = 0; d < N; ++d)
    m.sizes[d] = sizes[d], m.strides[d] = strides[d];
  return m;
}

/// Row-major strides of `sizes`.
template <int N> std::array<int64_t, N> rowMajor(std::array<int64_t, N> sizes) {
  std::array<int64_t, N> s;
  int64_t e = 1;
  for (int d = N - 1; d >= 0; --d)
    s[d] = e, e *= sizes[d];
  return s;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 float tolerance = 1e-4f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i])))
        << "at " << i;
}

/// Runs `cpu` and `gpu` on copies of `out` (the accumulated operand) and
/// compares.
template <typename Cpu, typename Gpu>
void compare(std::vector<float> &out, Cpu cpu, Gpu gpu) {
  std::vector<float> init = out;
  cpu();
  std::vector<float> want = out;
  out = init;
  gpu();
  expectClose(out, want);
}

TEST(CudaLibrariesTest, MatmulInEveryLayout) {
  const int64_t m = 5, k = 7, n = 6;
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2);
  // A, B, C row-major (ld = cols) or transposed in memory (ld = rows).
  for (bool aT : {false, true})
    for (bool bT : {false, true})
      for (bool cT : {false, true}) {
        std::vector<float> c = randomVector(m * n, 3);
        auto ma = view<2>(a, {m, k},
                          aT ? std::array<int64_t, 2>{1, m}
                             : std::array<int64_t, 2>{k, 1});
        auto mb = view<2>(b, {k, n},
                          bT ? std::array<int64_t, 2>{1, k}
                             : std::array<int64_t, 2>{n, 1});
        auto mc = view<2>(c, {m, n},
                          cT ? std::array<int64_t, 2>{1, m}
                             : std::array<int64_t, 2>{n, 1});
        SCOPED_TRACE(testing::Message() << aT << bT << cT);
        compare(
            c, [&] { _mlir_ciface_act_kernel_matmul_f32(&ma, &mb, &mc); },
            [&] { _mlir_ciface_act_gpu_kernel_matmul_f32(&ma, &mb, &mc); });
      }
}

TEST(CudaLibrariesTest, OperandsWithoutAUnitStrideArePacked) {
  // A is every other column of a wider buffer at an offset, C a strided
  // window: neither is a column-major matrix cuBLAS reads in place.
  const int64_t m = 4, k = 3, n = 5;
  std::vector<float> a = randomVector(2 * m * 2 * k + 1, 4);
  std::vector<float> b = randomVector(k * n, 5);
  std::vector<float> c = randomVector(2 * m * 2 * n, 6);
  auto ma = view<2>(a, {m, k}, {4 * k, 2}, 1);
  auto mb = view<2>(b, {k, n}, {n, 1});
  auto mc = view<2>(c, {m, n}, {4 * n, 2});
  int64_t packs = getGpuLibraryCalls().packs;
  compare(
      c, [&] { _mlir_ciface_act_kernel_matmul_f32(&ma, &mb, &mc); },
      [&] { _mlir_ciface_act_gpu_kernel_matmul_f32(&ma, &mb, &mc); });
  EXPECT_EQ(getGpuLibraryCalls().packs - packs, 2); // A, and C
}

TEST(CudaLibrariesTest, BatchMatmulWithATransposedOperand) {
  const int64_t batch = 3, m = 4, k = 6, n = 5;
  std::vector<float> a = randomVector(batch * m * k, 7);
  std::vector<float> b = randomVector(batch * k * n, 8); // stored batch x n x k
  std::vector<float> c = randomVector(batch * m * n, 9);
  auto ma = view<3>(a, {batch, m, k}, rowMajor<3>({batch, m, k}));
  auto mb = view<3>(b, {batch, k, n}, {k * n, 1, k});
  auto mc = view<3>(c, {batch, m, n}, rowMajor<3>({batch, m, n}));
  int64_t gemms = getGpuLibraryCalls().gemms;
  compare(
      c, [&] { _mlir_ciface_act_kernel_batch_matmul_f32(&ma, &mb, &mc); },
      [&] { _mlir_ciface_act_gpu_kernel_batch_matmul_f32(&ma, &mb, &mc); });
  EXPECT_EQ(getGpuLibraryCalls().gemms - gemms, 1); // one strided batch
}

struct ConvCase {
  int64_t n, c, h, w, f, kh, kw, stride, dilation, pad;
  int64_t out(int64_t size, int64_t k) const {
    return (size + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  }
};

TEST(CudaLibrariesTest, StridedDilatedPaddedConvolutions) {
  for (ConvCase s : {ConvCase{2, 3, 9, 8, 4, 3, 3, 2, 1, 1},
                     ConvCase{1, 4, 10, 10, 2, 3, 2, 1, 2, 2},
                     ConvCase{3, 2, 7, 7, 5, 1, 1, 2, 1, 0}}) {
    int64_t oh = s.out(s.h, s.kh), ow = s.out(s.w, s.kw);
    std::vector<float> x = randomVector(s.n * s.c * s.h * s.w, 10);
    std::vector<float> wt = randomVector(s.f * s.c * s.kh * s.kw, 11);
    std::vector<float> y = randomVector(s.n * s.f * oh * ow, 12);
    auto mx =
        view<4>(x, {s.n, s.c, s.h, s.w}, rowMajor<4>({s.n, s.c, s.h, s.w}));
    auto mw = view<4>(wt, {s.f, s.c, s.kh, s.kw},
                      rowMajor<4>({s.f, s.c, s.kh, s.kw}));
    auto my = view<4>(y, {s.n, s.f, oh, ow}, rowMajor<4>({s.n, s.f, oh, ow}));
    int64_t forward = getGpuLibraryCalls().convForward;
    compare(
        y,
        [&] {
          _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
              &mx, &mw, &my, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        },
        [&] {
          _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
              &mx, &mw, &my, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        });
    EXPECT_EQ(getGpuLibraryCalls().convForward - forward, 1);

    // The input gradient of the same convolution.
    std::vector<float> dx = randomVector(x.size(), 13);
    auto mdx =
        view<4>(dx, {s.n, s.c, s.h, s.w}, rowMajor<4>({s.n, s.c, s.h, s.w}));
    int64_t backward = getGpuLibraryCalls().convBackwardData;
    compare(
        dx,
        [&] {
          _mlir_ciface_act_kernel_conv_2d_nchw_fchw_backward_data_f32(
              &my, &mw, &mdx, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        },
        [&] {
          _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_backward_data_f32(
              &my, &mw, &mdx, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        });
    EXPECT_EQ(getGpuLibraryCalls().convBackwardData - backward, 1);

    // The weight gradient as the exporter writes it: a convolution of the
    // input with channels and batch swapped (a transposed view) by the
    // output gradient likewise swapped, stride and dilation exchanged,
    // into the weight gradient's transposed place. It runs as cuDNN's
    // backward filter.
    std::vector<float> dw = randomVector(wt.size(), 14);
    auto inT =
        view<4>(x, {s.c, s.n, s.h, s.w}, {s.h * s.w, s.c * s.h * s.w, s.w, 1});
    auto dyT = view<4>(y, {s.f, s.n, oh, ow}, {oh * ow, s.f * oh * ow, ow, 1});
    auto dwT = view<4>(dw, {s.c, s.f, s.kh, s.kw},
                       {s.kh * s.kw, s.c * s.kh * s.kw, s.kw, 1});
    int64_t filter = getGpuLibraryCalls().convBackwardFilter;
    compare(
        dw,
        [&] {
          _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
              &inT, &dyT, &dwT, s.dilation, s.dilation, s.stride, s.stride,
              s.pad, s.pad);
        },
        [&] {
          _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
              &inT, &dyT, &dwT, s.dilation, s.dilation, s.stride, s.stride,
              s.pad, s.pad);
        });
    EXPECT_EQ(getGpuLibraryCalls().convBackwardFilter - filter, 1);

    // A weight stored with its channels outermost (c, f): cuDNN's filter
    // must be packed, so it is packed first.
    std::vector<float> wtT(wt.size());
    for (int64_t f = 0; f < s.f; ++f)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t e = 0; e < s.kh * s.kw; ++e)
          wtT[(c * s.f + f) * s.kh * s.kw + e] =
              wt[(f * s.c + c) * s.kh * s.kw + e];
    auto mwT = view<4>(wtT, {s.f, s.c, s.kh, s.kw},
                       {s.kh * s.kw, s.f * s.kh * s.kw, s.kw, 1});
    int64_t packs = getGpuLibraryCalls().packs;
    compare(
        y,
        [&] {
          _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
              &mx, &mw, &my, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        },
        [&] {
          _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
              &mx, &mwT, &my, s.stride, s.stride, s.dilation, s.dilation, s.pad,
              s.pad);
        });
    EXPECT_EQ(getGpuLibraryCalls().packs - packs, 1);
  }
}

TEST(CudaLibrariesTest, WeightGradientOfALargeImage) {
  // 16x16 images, 3x3 kernel, stride 1, pad 1: the weight gradient's
  // "kernel" (the output gradient, 16x16) is larger than its "output"
  // (3x3): backward filter.
  ConvCase s{2, 3, 16, 16, 4, 3, 3, 1, 1, 1};
  int64_t oh = 16, ow = 16;
  std::vector<float> x = randomVector(s.n * s.c * s.h * s.w, 15);
  std::vector<float> dy = randomVector(s.n * s.f * oh * ow, 16);
  std::vector<float> dw = randomVector(s.f * s.c * s.kh * s.kw, 17);
  auto inT =
      view<4>(x, {s.c, s.n, s.h, s.w}, {s.h * s.w, s.c * s.h * s.w, s.w, 1});
  auto dyT = view<4>(dy, {s.f, s.n, oh, ow}, {oh * ow, s.f * oh * ow, ow, 1});
  auto dwT = view<4>(dw, {s.c, s.f, s.kh, s.kw},
                     {s.kh * s.kw, s.c * s.kh * s.kw, s.kw, 1});
  int64_t filter = getGpuLibraryCalls().convBackwardFilter;
  compare(
      dw,
      [&] {
        _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(&inT, &dyT, &dwT, 1, 1, 1,
                                                      1, 1, 1);
      },
      [&] {
        _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(&inT, &dyT, &dwT, 1,
                                                          1, 1, 1, 1, 1);
      });
  EXPECT_EQ(getGpuLibraryCalls().convBackwardFilter - filter, 1);
}

TEST(CudaLibrariesTest, StridedLayoutsNoAlgorithmReadsArePacked) {
  // A weight gradient whose input is the interior of a padded buffer (a
  // strided view), where (the stand-in told so) no algorithm reads strided
  // tensors: the runtime packs the input and runs again.
  setenv("ACT_FAKE_CUDNN_PACKED_ONLY", "1", 1);
  const int64_t n = 2, c = 2, h = 6, w = 6, f = 3, k = 3;
  const int64_t ph = h + 2, pw = w + 2;
  std::vector<float> x = randomVector(n * c * ph * pw, 23);
  std::vector<float> dy = randomVector(n * f * h * w, 24);
  std::vector<float> dw = randomVector(f * c * k * k, 25);
  auto inT = view<4>(x, {c, n, h, w}, {ph * pw, c * ph * pw, pw, 1}, pw + 1);
  auto dyT = view<4>(dy, {f, n, h, w}, {h * w, f * h * w, w, 1});
  auto dwT = view<4>(dw, {c, f, k, k}, {k * k, c * k * k, k, 1});
  GpuLibraryCalls before = getGpuLibraryCalls();
  compare(
      dw,
      [&] {
        _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(&inT, &dyT, &dwT, 1, 1, 1,
                                                      1, 1, 1);
      },
      [&] {
        _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(&inT, &dyT, &dwT, 1,
                                                          1, 1, 1, 1, 1);
      });
  unsetenv("ACT_FAKE_CUDNN_PACKED_ONLY");
  GpuLibraryCalls after = getGpuLibraryCalls();
  EXPECT_EQ(after.convBackwardFilter - before.convBackwardFilter, 1);
  EXPECT_EQ(after.packs - before.packs, 1);
}

TEST(CudaLibrariesTest, GroupedConvolution) {
  // n g c h w, weight g f c kh kw, stride 2, pad 1.
  const int64_t n = 2, g = 3, c = 2, h = 7, w = 6, f = 4, kh = 3, kw = 3;
  const int64_t oh = (h + 2 - 3) / 2 + 1, ow = (w + 2 - 3) / 2 + 1;
  std::vector<float> x = randomVector(n * g * c * h * w, 18);
  std::vector<float> wt = randomVector(g * f * c * kh * kw, 19);
  std::vector<float> y = randomVector(n * g * f * oh * ow, 20);
  auto mx = view<5>(x, {n, g, c, h, w}, rowMajor<5>({n, g, c, h, w}));
  auto mw = view<5>(wt, {g, f, c, kh, kw}, rowMajor<5>({g, f, c, kh, kw}));
  auto my = view<5>(y, {n, g, f, oh, ow}, rowMajor<5>({n, g, f, oh, ow}));
  compare(
      y,
      [&] {
        _mlir_ciface_act_kernel_conv_2d_ngchw_gfchw_f32(&mx, &mw, &my, 2, 2, 1,
                                                        1, 1, 1);
      },
      [&] {
        _mlir_ciface_act_gpu_kernel_conv_2d_ngchw_gfchw_f32(&mx, &mw, &my, 2, 2,
                                                            1, 1, 1, 1);
      });
}

TEST(CudaLibrariesTest, AsymmetricPaddingIsAClearError) {
  // 5x5, 3x3, stride 2, padding 1 above and left only: 2x2 outputs, where
  // cuDNN's symmetric padding gives 3x3.
  std::vector<float> x = randomVector(1 * 1 * 5 * 5, 21);
  std::vector<float> wt = randomVector(9, 22);
  std::vector<float> y(4, 0.0f);
  auto mx = view<4>(x, {1, 1, 5, 5}, rowMajor<4>({1, 1, 5, 5}));
  auto mw = view<4>(wt, {1, 1, 3, 3}, rowMajor<4>({1, 1, 3, 3}));
  auto my = view<4>(y, {1, 1, 2, 2}, rowMajor<4>({1, 1, 2, 2}));
  EXPECT_DEATH(_mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
                   &mx, &mw, &my, 2, 2, 1, 1, 1, 1),
               "padding is not symmetric");
}

} // namespace
