//===- Kernels.cpp - compute kernels the CPU pipeline calls ---------------===//
//
// GEMMs are oneDNN's dnnl_sgemm (row-major, OpenMP-threaded, the library
// PyTorch's CPU convolutions run on). A convolution becomes GEMMs over
// gathered windows; scratch buffers come from the counted allocator, so
// act-run's peak includes them (oneDNN's own GEMM packing buffers are not
// counted).
//
// Parallel loops are OpenMP (libgomp, oneDNN's runtime): a kernel with as
// many independent GEMMs as threads runs them side by side (a GEMM inside a
// parallel region runs on its thread alone); otherwise the GEMMs run one
// after the other, each on every thread.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Kernels.h"

#include "oneapi/dnnl/dnnl.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

extern "C" {
int omp_get_max_threads(void);
int omp_get_num_procs(void);
int omp_get_thread_num(void);
void omp_set_num_threads(int);
}

using namespace act::rt;

bool act::rt::setThreads(int n) {
  if (n > kMaxThreads)
    return false;
  omp_set_num_threads(n > 0 ? n : std::min(omp_get_num_procs(), kMaxThreads));
  return true;
}

int act::rt::getThreads() { return omp_get_max_threads(); }

namespace {

/// Scratch memory from the counted allocator, freed on scope exit.
struct Scratch {
  explicit Scratch(size_t floats)
      : data(static_cast<float *>(_mlir_memref_to_llvm_aligned_alloc(
            64, std::max<size_t>(floats, 1) * sizeof(float)))) {
    if (!data)
      std::abort();
  }
  ~Scratch() { _mlir_memref_to_llvm_free(data); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  float *data;
};

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
           float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    if (beta == 0)
      for (int64_t i = 0; i < m; ++i)
        std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, a,
             std::max<int64_t>(lda, 1), b, std::max<int64_t>(ldb, 1), beta, c,
             std::max<int64_t>(ldc, 1));
}

/// Runs body(i) for i in [0, count): in parallel when there are enough
/// iterations to give every thread one, else in sequence (each iteration's
/// GEMM then uses every thread). body gets (i, thread).
template <typename Body> void forEach(int64_t count, Body body) {
  int threads = getThreads();
  if (count >= threads && threads > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i)
      body(i, omp_get_thread_num());
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    body(i, 0);
}

/// Threads forEach gives `count` iterations.
int threadsFor(int64_t count) {
  int threads = getThreads();
  return count >= threads && threads > 1 ? threads : 1;
}

/// Floats of gathered windows a convolution keeps per thread: GEMMs run on
/// bands of output rows (PerImage) or of images (PerChannel) that fit, so
/// the scratch stays small next to the step's tensors (a full im2col of a
/// 32-channel 32x32 map is 1.2 MB per thread) while the GEMMs stay large.
constexpr int64_t kWindowFloats = 64 * 1024;

/// The j in [0, ow) whose column j * stride + x0 lies in [0, w): [lo, hi).
void validColumns(const ConvShape &s, int64_t x0, int64_t &lo, int64_t &hi) {
  int64_t step = s.stride[1];
  lo = x0 >= 0 ? 0 : (-x0 + step - 1) / step;
  hi = s.w - x0 <= 0 ? 0 : std::min(s.ow, (s.w - x0 + step - 1) / step);
  lo = std::min(lo, hi);
}

/// Output rows [i0, i1) of in[n, g] (strided, read as if padded) gathered
/// as the CKK x (i1 - i0) OW matrix of their windows.
void im2col(const ConvShape &s, const float *x, int64_t i0, int64_t i1,
            float *col) {
  int64_t p = (i1 - i0) * s.ow;
  const int64_t *st = s.inStride;
  int64_t step = s.stride[1] * st[4];
  for (int64_t c = 0; c < s.c; ++c)
    for (int64_t u = 0; u < s.kh; ++u)
      for (int64_t v = 0; v < s.kw; ++v) {
        float *row = col + ((c * s.kh + u) * s.kw + v) * p;
        int64_t x0 = v * s.dilation[1] - s.pad[1], lo, hi;
        validColumns(s, x0, lo, hi);
        for (int64_t i = i0; i < i1; ++i) {
          float *dst = row + (i - i0) * s.ow;
          int64_t y = i * s.stride[0] + u * s.dilation[0] - s.pad[0];
          if (y < 0 || y >= s.h) {
            std::fill_n(dst, s.ow, 0.0f);
            continue;
          }
          std::fill_n(dst, lo, 0.0f);
          std::fill(dst + hi, dst + s.ow, 0.0f);
          const float *src =
              x + c * st[2] + y * st[3] + (lo * s.stride[1] + x0) * st[4];
          if (step == 1)
            std::memcpy(dst + lo, src, (hi - lo) * sizeof(float));
          else
            for (int64_t j = lo; j < hi; ++j)
              dst[j] = src[(j - lo) * step];
        }
      }
}

/// A GEMM per image, group and band of output rows: out[n, g] (F x P) +=
/// weight[g] (F x CKK) * im2col(in[n, g]) (CKK x P), P in bands.
void convPerImage(const ConvShape &s, const float *in, const float *wt,
                  float *out) {
  int64_t p = s.oh * s.ow, ckk = s.c * s.kh * s.kw;
  bool pointwise = s.kh == 1 && s.kw == 1 && s.stride[0] == 1 &&
                   s.stride[1] == 1 && s.oh == s.h && s.ow == s.w &&
                   !s.pad[0] && !s.pad[1] && s.inStride[4] == 1 &&
                   s.inStride[3] == s.w && s.inStride[2] == s.h * s.w;
  int64_t band = std::clamp<int64_t>(kWindowFloats / (ckk * s.ow), 1, s.oh);
  int64_t count = s.n * s.g;
  Scratch col(pointwise ? 0 : size_t(threadsFor(count)) * ckk * band * s.ow);
  forEach(count, [&](int64_t idx, int thread) {
    int64_t g = idx % s.g;
    const float *x = in + idx / s.g * s.inStride[0] + g * s.inStride[1];
    float *y = out + idx / s.g * s.outStride[0] + g * s.outStride[1];
    if (pointwise)
      return sgemm(false, false, s.f, p, ckk, wt + g * s.f * ckk, ckk, x, p,
                   1.0f, y, s.outStride[2]);
    float *buffer = col.data + thread * ckk * band * s.ow;
    for (int64_t i0 = 0; i0 < s.oh; i0 += band) {
      int64_t i1 = std::min(i0 + band, s.oh), cols = (i1 - i0) * s.ow;
      im2col(s, x, i0, i1, buffer);
      sgemm(false, false, s.f, cols, ckk, wt + g * s.f * ckk, ckk, buffer, cols,
            1.0f, y + i0 * s.ow, s.outStride[2]);
    }
  });
}

/// The KH x KW window of channel `x` (strided) at rows y0 + u d0, columns
/// x0 + v d1 into dst, row after row; outside the input (padding): zeros.
void gatherWindow(const ConvShape &s, const float *x, int64_t y0, int64_t x0,
                  float *dst) {
  const int64_t *st = s.inStride;
  int64_t step = s.dilation[1] * st[4];
  bool columnsInside = x0 >= 0 && x0 + (s.kw - 1) * s.dilation[1] < s.w;
  for (int64_t u = 0; u < s.kh; ++u, dst += s.kw) {
    int64_t y = y0 + u * s.dilation[0];
    if (y < 0 || y >= s.h) {
      std::fill_n(dst, s.kw, 0.0f);
      continue;
    }
    const float *row = x + y * st[3];
    if (columnsInside && step == 1)
      std::memcpy(dst, row + x0 * st[4], s.kw * sizeof(float));
    else
      for (int64_t v = 0; v < s.kw; ++v) {
        int64_t c = x0 + v * s.dilation[1];
        dst[v] = c >= 0 && c < s.w ? row[c * st[4]] : 0.0f;
      }
  }
}

/// A GEMM per group and output position: T (N x F) = windows (N x CKK) *
/// weight[g]^T, added to out[:, g, :, i, j]. For few output positions and
/// many images (a weight gradient computed as a convolution).
void convPerPosition(const ConvShape &s, const float *in, const float *wt,
                     float *out) {
  int64_t p = s.oh * s.ow, ckk = s.c * s.kh * s.kw, kk = s.kh * s.kw;
  int64_t count = s.g * p;
  int threads = threadsFor(count);
  Scratch windows(size_t(threads) * s.n * ckk);
  Scratch products(size_t(threads) * s.n * s.f);
  forEach(count, [&](int64_t idx, int thread) {
    int64_t g = idx / p, pos = idx % p, i = pos / s.ow, j = pos % s.ow;
    float *a = windows.data + thread * s.n * ckk;
    float *t = products.data + thread * s.n * s.f;
    const int64_t *st = s.inStride;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c) {
        gatherWindow(s, in + n * st[0] + g * st[1] + c * st[2],
                     i * s.stride[0] - s.pad[0], j * s.stride[1] - s.pad[1],
                     a + n * ckk + c * kk);
      }
    const int64_t *os = s.outStride;
    float *o = out + g * os[1] + pos;
    // The products in the order the output holds them: T^T (F x N) =
    // weight[g] * windows^T for an output with f outer (a weight gradient
    // written into its transposed place), so the scatter's inner loop
    // steps through the smaller stride.
    if (os[2] > os[0]) {
      sgemm(false, true, s.f, s.n, ckk, wt + g * s.f * ckk, ckk, a, ckk, 0.0f,
            t, s.n);
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t n = 0; n < s.n; ++n)
          o[n * os[0] + f * os[2]] += t[f * s.n + n];
      return;
    }
    sgemm(false, true, s.n, s.f, ckk, a, ckk, wt + g * s.f * ckk, ckk, 0.0f, t,
          s.f);
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t f = 0; f < s.f; ++f)
        o[n * os[0] + f * os[2]] += t[n * s.f + f];
  });
}

/// A GEMM per group and input channel, accumulated over the channels: T (F
/// x N P) += weight[g, :, c] (F x KK) * windows(c)^T (KK x N P), then added
/// to out. For large kernels over few channels: a weight gradient computed
/// as a convolution (its kernel is the output gradient's image, its channels
/// the batch), the way im2col GEMMs compute weight gradients.
///
/// When out holds T's layout (a weight gradient written into its transposed
/// place: f outer, then n, then the positions), the GEMMs add into out
/// itself, the threads taking bands of F: no F x N P scratch, which was as
/// large as the weight (act-chunk-in-passes sums a weight gradient over
/// chunks of the batch, one call per chunk, with the stage's other
/// tensors live). Each output element then sums the channels in order, on
/// any thread count.
void convPerChannel(const ConvShape &s, const float *in, const float *wt,
                    float *out) {
  int64_t p = s.oh * s.ow, kk = s.kh * s.kw, np = s.n * p;
  int64_t band = std::clamp<int64_t>(kWindowFloats / (p * kk), 1, s.n);
  bool windowsRowMajor =
      (s.kw == 1 || s.weightStride[4] == 1) &&
      (s.kh == 1 || s.weightStride[3] == s.kw * s.weightStride[4]);
  const int64_t *os = s.outStride;
  bool direct = os[2] == np && os[0] == p;
  int64_t fBands = direct ? std::min<int64_t>(s.f, getThreads()) : 1;
  int64_t fBand = (s.f + fBands - 1) / fBands;
  int threads = direct ? threadsFor(fBands) : threadsFor(s.c);
  // (Below: a GEMM per image, where the maps are this large.)
  constexpr int64_t kMinImagePositions = 64;
  bool perImage = !direct && p >= kMinImagePositions;
  Scratch windows(perImage ? 0 : size_t(threads) * band * p * kk);
  Scratch sums(direct || perImage ? 0 : size_t(threads) * s.f * np);
  Scratch weights(windowsRowMajor || perImage ? 0 : size_t(threads) * s.f * kk);
  const int64_t *st = s.inStride;
  // weight[g, f0:f1, c] as an (f1 - f0) x KK matrix and its row stride:
  // in place when its windows are row-major, else gathered into `buffer`.
  auto weightMatrix = [&](int64_t g, int64_t c, int64_t f0, int64_t f1,
                          float *buffer) -> std::pair<const float *, int64_t> {
    const int64_t *ws = s.weightStride;
    const float *w = wt + g * ws[0] + c * ws[2] + f0 * ws[1];
    if (windowsRowMajor)
      return {w, ws[1]};
    for (int64_t f = f0; f < f1; ++f)
      for (int64_t u = 0; u < s.kh; ++u)
        for (int64_t v = 0; v < s.kw; ++v)
          buffer[((f - f0) * s.kh + u) * s.kw + v] =
              w[(f - f0) * ws[1] + u * ws[3] + v * ws[4]];
    return {buffer, kk};
  };
  // T[f0:f1] += weight[g, f0:f1, c] * windows(c)^T into `t` (row stride np).
  auto channel = [&](int64_t g, int64_t c, int64_t f0, int64_t f1, int thread,
                     float *t) {
    auto [w, lda] =
        weightMatrix(g, c, f0, f1, weights.data + thread * s.f * kk);
    // windows[(n, i, j), (u, v)] = in[n, g, c, i s0 + u d0, j s1 + v d1],
    // a band of images at a time.
    float *a = windows.data + thread * band * p * kk;
    for (int64_t n0 = 0; n0 < s.n; n0 += band) {
      int64_t n1 = std::min(n0 + band, s.n);
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t i = 0; i < s.oh; ++i)
          for (int64_t j = 0; j < s.ow; ++j) {
            gatherWindow(s, in + n * st[0] + g * st[1] + c * st[2],
                         i * s.stride[0] - s.pad[0], j * s.stride[1] - s.pad[1],
                         a + (((n - n0) * s.oh + i) * s.ow + j) * kk);
          }
      sgemm(false, true, f1 - f0, (n1 - n0) * p, kk, w, lda, a, kk, 1.0f,
            t + n0 * p, np);
    }
  };
  // An output in the forward's order (image, channel, positions) on maps
  // of at least kMinImagePositions positions: a GEMM per image, added into out
  // itself, the threads taking images. No F x N P sums, which were as large
  // as the output (98 MiB for the first convolution of a 28x28 CNN at
  // batch 1024, the step's peak), and every thread busy where there are
  // fewer channels than threads (the threads above take channels). Each
  // output element sums the channels in order, on any thread count.
  if (perImage) {
    int imageThreads = threadsFor(s.n * s.g);
    Scratch imageWindows(size_t(imageThreads) * p * kk);
    Scratch imageWeights(windowsRowMajor ? 0 : size_t(imageThreads) * s.f * kk);
    forEach(s.n * s.g, [&](int64_t idx, int thread) {
      int64_t n = idx / s.g, g = idx % s.g;
      float *a = imageWindows.data + thread * p * kk;
      for (int64_t c = 0; c < s.c; ++c) {
        auto [w, lda] =
            weightMatrix(g, c, 0, s.f, imageWeights.data + thread * s.f * kk);
        for (int64_t i = 0; i < s.oh; ++i)
          for (int64_t j = 0; j < s.ow; ++j)
            gatherWindow(s, in + n * st[0] + g * st[1] + c * st[2],
                         i * s.stride[0] - s.pad[0], j * s.stride[1] - s.pad[1],
                         a + (i * s.ow + j) * kk);
        sgemm(false, true, s.f, p, kk, w, lda, a, kk, 1.0f,
              out + n * os[0] + g * os[1], os[2]);
      }
    });
    return;
  }
  for (int64_t g = 0; g < s.g; ++g) {
    if (direct) {
      forEach(fBands, [&](int64_t b, int thread) {
        int64_t f0 = b * fBand, f1 = std::min(f0 + fBand, s.f);
        for (int64_t c = 0; c < s.c && f0 < f1; ++c)
          channel(g, c, f0, f1, thread, out + g * os[1] + f0 * os[2]);
      });
      continue;
    }
    std::fill_n(sums.data, size_t(threads) * s.f * np, 0.0f);
    forEach(s.c, [&](int64_t c, int thread) {
      channel(g, c, 0, s.f, thread, sums.data + thread * s.f * np);
    });
    for (int t = 1; t < threads; ++t)
      for (int64_t e = 0; e < s.f * np; ++e)
        sums.data[e] += sums.data[t * s.f * np + e];
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t f = 0; f < s.f; ++f) {
        float *o = out + n * os[0] + g * os[1] + f * os[2];
        const float *t = sums.data + f * np + n * p;
        for (int64_t e = 0; e < p; ++e)
          o[e] += t[e];
      }
  }
}

/// Loops, for convolutions whose GEMMs would be degenerate (depthwise: one
/// channel in and out per group).
void convDirect(const ConvShape &s, const float *in, const float *wt,
                float *out) {
  const int64_t *st = s.inStride;
  int64_t step = s.stride[1] * st[4];
  forEach(s.n * s.g * s.f, [&](int64_t idx, int) {
    int64_t f = idx % s.f, ng = idx / s.f, g = ng % s.g, n = ng / s.g;
    float *o =
        out + n * s.outStride[0] + g * s.outStride[1] + f * s.outStride[2];
    for (int64_t c = 0; c < s.c; ++c) {
      const float *x = in + n * st[0] + g * st[1] + c * st[2];
      const float *w = wt + ((g * s.f + f) * s.c + c) * s.kh * s.kw;
      for (int64_t u = 0; u < s.kh; ++u)
        for (int64_t v = 0; v < s.kw; ++v) {
          float k = w[u * s.kw + v];
          int64_t x0 = v * s.dilation[1] - s.pad[1], lo, hi;
          validColumns(s, x0, lo, hi);
          for (int64_t i = 0; i < s.oh; ++i) {
            int64_t y = i * s.stride[0] + u * s.dilation[0] - s.pad[0];
            if (y < 0 || y >= s.h)
              continue;
            const float *src = x + y * st[3] + (lo * s.stride[1] + x0) * st[4];
            float *dst = o + i * s.ow;
            if (step == 1)
              for (int64_t j = lo; j < hi; ++j)
                dst[j] += k * src[j - lo];
            else
              for (int64_t j = lo; j < hi; ++j)
                dst[j] += k * src[(j - lo) * step];
          }
        }
    }
  });
}

/// The CKK x (i1 - i0) OW matrix of windows `col` (rows `ld` apart) added
/// back into the image `x` (row-major C x H x W) they were gathered from:
/// im2col's adjoint, positions outside the image (padding) dropped.
void col2im(const ConvShape &s, const float *col, int64_t ld, int64_t i0,
            int64_t i1, float *x) {
  for (int64_t c = 0; c < s.c; ++c)
    for (int64_t u = 0; u < s.kh; ++u)
      for (int64_t v = 0; v < s.kw; ++v) {
        const float *row = col + ((c * s.kh + u) * s.kw + v) * ld;
        int64_t x0 = v * s.dilation[1] - s.pad[1], lo, hi;
        validColumns(s, x0, lo, hi);
        for (int64_t i = i0; i < i1; ++i) {
          int64_t y = i * s.stride[0] + u * s.dilation[0] - s.pad[0];
          if (y < 0 || y >= s.h)
            continue;
          const float *src = row + (i - i0) * s.ow;
          float *dst = x + (c * s.h + y) * s.w + lo * s.stride[1] + x0;
          if (s.stride[1] == 1)
            for (int64_t j = lo; j < hi; ++j)
              dst[j - lo] += src[j];
          else
            for (int64_t j = lo; j < hi; ++j)
              dst[(j - lo) * s.stride[1]] += src[j];
        }
      }
}

//===----------------------------------------------------------------------===//
// oneDNN's direct convolution
//===----------------------------------------------------------------------===//

bool primitivesEnabled = true;
/// The largest weight (bytes) the primitives take.
constexpr int64_t kPrimitiveWeightBytes = 1 << 20;
int64_t primitiveRuns = 0;

/// The padding below and right of the input that the output reads.
void getFarPadding(const ConvShape &s, int64_t far[2]) {
  far[0] = (s.oh - 1) * s.stride[0] + (s.kh - 1) * s.dilation[0] + 1 - s.h -
           s.pad[0];
  far[1] = (s.ow - 1) * s.stride[1] + (s.kw - 1) * s.dilation[1] + 1 - s.w -
           s.pad[1];
}

/// Whether conv2d (or, `backward`, conv2dBackwardData) runs `s` on oneDNN's
/// direct convolution primitive (the one PyTorch's CPU convolutions run
/// on): ordinary convolutions (one group, at least 8 channels in and out,
/// kernels up to 7x7, no padding beyond what the output reads, weights up
/// to kPrimitiveWeightBytes, the per-image GEMM form for the forward, or
/// the per-position one with a kernel no larger than the output: small
/// maps at a large batch, ResNet-20's 7x7 at batch 128, 13 % of its step on
/// one thread with the weight gradients below, docs/benchmarks.md).
/// act-bench-conv measured it 1.2-2x faster than the GEMMs over gathered
/// windows on such layers, and slower on 3-channel inputs.
bool isPrimitiveShape(const ConvShape &s, bool backward = false) {
  int64_t far[2];
  getFarPadding(s, far);
  // (The blocked copy of the weight is made per call: large weights, as
  // on small maps in deep layers, keep the GEMMs.)
  if (!primitivesEnabled || s.g != 1 || s.c < 8 || s.f < 8 || s.kh > 7 ||
      s.kw > 7 || far[0] < 0 || far[1] < 0 ||
      s.f * s.c * s.kh * s.kw * 4 > kPrimitiveWeightBytes)
    return false;
  if (backward)
    return true;
  ConvAlgorithm algorithm = chooseConvAlgorithm(s);
  return algorithm == ConvAlgorithm::PerImage ||
         (algorithm == ConvAlgorithm::PerPosition && s.kh <= s.oh &&
          s.kw <= s.ow);
}

/// A convolution's primitive, forward or input gradient, for a batch of
/// `n` images of the shape, with the reorders between the operands' own
/// layouts (through their strides) and the blocked ones it computes in; the
/// result's reorder adds (a sum post-op), as linalg accumulates. `in` is
/// what it reads (the source, or the output gradient), `out` what it
/// writes (the output, or the input gradient).
struct ConvPrimitive {
  dnnl_primitive_t conv = nullptr, inIn = nullptr, weiIn = nullptr,
                   outOut = nullptr;
  dnnl_memory_desc_t in, wei, out, inBlocked, weiBlocked, outBlocked;
  bool ok = false;
};

dnnl_engine_t getEngine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    if (dnnl_engine_create(&e, dnnl_cpu, 0) != dnnl_success)
      return (dnnl_engine_t) nullptr;
    return e;
  }();
  return engine;
}

bool makeReorder(dnnl_primitive_t *r, const dnnl_memory_desc_t *from,
                 const dnnl_memory_desc_t *to, bool sum) {
  dnnl_engine_t engine = getEngine();
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  if (sum && (dnnl_primitive_attr_create(&attr) != dnnl_success ||
              dnnl_post_ops_create(&ops) != dnnl_success ||
              dnnl_post_ops_append_sum(ops, 1.0f) != dnnl_success ||
              dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success))
    return false;
  dnnl_primitive_desc_t pd = nullptr;
  bool ok = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine,
                                               attr) == dnnl_success &&
            dnnl_primitive_create(r, pd) == dnnl_success;
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (ops)
    dnnl_post_ops_destroy(ops);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return ok;
}

/// One call's stream and the memories made for it (on operands' own
/// pointers), released with it.
struct PrimitiveCall {
  PrimitiveCall() {
    if (dnnl_stream_create(&stream, getEngine(), dnnl_stream_default_flags) !=
        dnnl_success)
      stream = nullptr;
  }
  ~PrimitiveCall() {
    for (dnnl_memory_t m : memories)
      dnnl_memory_destroy(m);
    if (stream)
      dnnl_stream_destroy(stream);
  }
  PrimitiveCall(const PrimitiveCall &) = delete;
  PrimitiveCall &operator=(const PrimitiveCall &) = delete;
  dnnl_memory_t memory(const dnnl_memory_desc_t &desc, const void *data) {
    dnnl_memory_t m = nullptr;
    dnnl_memory_create(&m, &desc, getEngine(), const_cast<void *>(data));
    memories.push_back(m);
    return m;
  }
  /// Runs `p` on `args` and waits.
  bool run(dnnl_primitive_t p, std::initializer_list<dnnl_exec_arg_t> args) {
    return dnnl_primitive_execute(p, stream, int(args.size()), args.begin()) ==
               dnnl_success &&
           dnnl_stream_wait(stream) == dnnl_success;
  }
  /// Runs `p` once the result has begun to accumulate: a failure then
  /// cannot fall back to the GEMMs (they would add to a partial result), so
  /// it aborts with a message, like a failed scratch allocation.
  void runOrDie(dnnl_primitive_t p,
                std::initializer_list<dnnl_exec_arg_t> args) {
    if (run(p, args))
      return;
    std::fprintf(stderr, "act: a oneDNN convolution primitive failed after "
                         "writing part of its result\n");
    std::abort();
  }
  dnnl_stream_t stream = nullptr;
  std::vector<dnnl_memory_t> memories;
};

/// The primitive `make()` builds for `key` (shape, layouts, thread count:
/// oneDNN partitions its work when a primitive is made), made once.
template <typename T, typename Make>
const T &getCached(std::vector<int64_t> key, Make make) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, T> cache;
  key.push_back(getThreads());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, make()).first;
  return it->second;
}

/// oneDNN's own layouts (format `any`) for a convolution's source, weights
/// and destination of these sizes.
struct AnyLayouts {
  dnnl_memory_desc_t src, wei, dst;
};

/// The forward convolution's primitive descriptor on `any`'s layouts (made
/// here): the forward primitive itself, or the hint a backward primitive is
/// made from. Null if oneDNN refuses the shape.
dnnl_primitive_desc_t
createForwardDesc(dnnl_engine_t engine, const dnnl_dims_t src,
                  const dnnl_dims_t wei, const dnnl_dims_t dst,
                  const dnnl_dims_t strides, const dnnl_dims_t dilations,
                  const dnnl_dims_t padL, const dnnl_dims_t padR,
                  AnyLayouts &any) {
  dnnl_convolution_desc_t forward;
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_memory_desc_init_by_tag(&any.src, 4, src, dnnl_f32,
                                   dnnl_format_tag_any) != dnnl_success ||
      dnnl_memory_desc_init_by_tag(&any.wei, 4, wei, dnnl_f32,
                                   dnnl_format_tag_any) != dnnl_success ||
      dnnl_memory_desc_init_by_tag(&any.dst, 4, dst, dnnl_f32,
                                   dnnl_format_tag_any) != dnnl_success ||
      dnnl_dilated_convolution_forward_desc_init(
          &forward, dnnl_forward_training, dnnl_convolution_direct, &any.src,
          &any.wei, nullptr, &any.dst, strides, dilations, padL,
          padR) != dnnl_success ||
      dnnl_primitive_desc_create(&pd, &forward, nullptr, engine, nullptr) !=
          dnnl_success)
    return nullptr;
  return pd;
}

/// `inStrides` and `outStrides`: the (n, channel, row, column) strides of
/// what the primitive reads and writes.
ConvPrimitive createConvPrimitive(const ConvShape &s, int64_t n, bool backward,
                                  const int64_t inStrides[4],
                                  const int64_t outStrides[4]) {
  ConvPrimitive p;
  dnnl_engine_t engine = getEngine();
  if (!engine)
    return p;
  int64_t far[2];
  getFarPadding(s, far);
  dnnl_dims_t srcDims{n, s.c, s.h, s.w}, weiDims{s.f, s.c, s.kh, s.kw},
      dstDims{n, s.f, s.oh, s.ow};
  dnnl_dims_t inS{inStrides[0], inStrides[1], inStrides[2], inStrides[3]};
  dnnl_dims_t outS{outStrides[0], outStrides[1], outStrides[2], outStrides[3]};
  dnnl_dims_t strides{s.stride[0], s.stride[1]};
  dnnl_dims_t dilations{s.dilation[0] - 1, s.dilation[1] - 1};
  dnnl_dims_t padL{s.pad[0], s.pad[1]}, padR{far[0], far[1]};
  if (dnnl_memory_desc_init_by_strides(&p.in, 4, backward ? dstDims : srcDims,
                                       dnnl_f32, inS) != dnnl_success ||
      dnnl_memory_desc_init_by_tag(&p.wei, 4, weiDims, dnnl_f32, dnnl_oihw) !=
          dnnl_success ||
      dnnl_memory_desc_init_by_strides(&p.out, 4, backward ? srcDims : dstDims,
                                       dnnl_f32, outS) != dnnl_success)
    return p;
  AnyLayouts any;
  dnnl_primitive_desc_t hint = createForwardDesc(
      engine, srcDims, weiDims, dstDims, strides, dilations, padL, padR, any);
  if (!hint)
    return p;
  dnnl_convolution_desc_t inputGradient;
  dnnl_primitive_desc_t pd = nullptr;
  if (backward) {
    if (dnnl_dilated_convolution_backward_data_desc_init(
            &inputGradient, dnnl_convolution_direct, &any.src, &any.wei,
            &any.dst, strides, dilations, padL, padR) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &inputGradient, nullptr, engine,
                                   hint) != dnnl_success) {
      dnnl_primitive_desc_destroy(hint);
      return p;
    }
    dnnl_primitive_desc_destroy(hint);
  } else {
    pd = hint;
  }
  p.inBlocked = *dnnl_primitive_desc_query_md(
      pd, backward ? dnnl_query_diff_dst_md : dnnl_query_src_md, 0);
  p.weiBlocked = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  p.outBlocked = *dnnl_primitive_desc_query_md(
      pd, backward ? dnnl_query_diff_src_md : dnnl_query_dst_md, 0);
  p.ok = dnnl_primitive_create(&p.conv, pd) == dnnl_success &&
         makeReorder(&p.inIn, &p.in, &p.inBlocked, false) &&
         makeReorder(&p.weiIn, &p.wei, &p.weiBlocked, false) &&
         makeReorder(&p.outOut, &p.outBlocked, &p.out, true);
  dnnl_primitive_desc_destroy(pd);
  return p;
}

/// The primitive for `s` on `n` images, made once per shape, layout and
/// thread count (oneDNN partitions its work when a primitive is made).
const ConvPrimitive &getConvPrimitive(const ConvShape &s, int64_t n,
                                      bool backward, const int64_t in[4],
                                      const int64_t out[4]) {
  std::vector<int64_t> key = {
      backward,    n,           s.c,           s.h,           s.w,
      s.f,         s.kh,        s.kw,          s.oh,          s.ow,
      s.stride[0], s.stride[1], s.dilation[0], s.dilation[1], s.pad[0],
      s.pad[1]};
  key.insert(key.end(), in, in + 4);
  key.insert(key.end(), out, out + 4);
  return getCached<ConvPrimitive>(
      key, [&] { return createConvPrimitive(s, n, backward, in, out); });
}

/// out += conv(in, wt) (forward) or out += the input gradient of the
/// convolution from the output gradient `in` (backward) through oneDNN's
/// primitive, on chunks of images whose blocked copies (from the counted
/// allocator) take about what the GEMMs' windows would; false (nothing
/// written) if oneDNN has none. A failure after the result has begun to
/// accumulate aborts (PrimitiveCall::runOrDie). Strides of `in` and `out`: (n,
/// channel, row, column).
bool convWithPrimitive(const ConvShape &s, bool backward, const float *in,
                       const int64_t inStrides[4], const float *wt, float *out,
                       const int64_t outStrides[4]) {
  // Chunks take about what the GEMMs' gathered windows would (a band of
  // output rows of C KH KW windows), at least an image.
  int64_t perImage = (s.c * s.h * s.w + s.f * s.oh * s.ow) * 4;
  int64_t ckk = s.c * s.kh * s.kw;
  int64_t windows = ckk *
                    std::clamp<int64_t>(kWindowFloats / (ckk * s.ow), 1, s.oh) *
                    s.ow * 4;
  int64_t chunk = std::clamp<int64_t>(windows / perImage, 1, s.n);
  const ConvPrimitive &full =
      getConvPrimitive(s, chunk, backward, inStrides, outStrides);
  int64_t rest = s.n % chunk;
  if (!full.ok ||
      (rest && !getConvPrimitive(s, rest, backward, inStrides, outStrides).ok))
    return false;
  PrimitiveCall call;
  if (!call.stream)
    return false;
  Scratch weights(dnnl_memory_desc_get_size(&full.weiBlocked) / 4 + 1);
  dnnl_memory_t weiBlocked = call.memory(full.weiBlocked, weights.data);
  bool ok = call.run(full.weiIn, {{DNNL_ARG_FROM, call.memory(full.wei, wt)},
                                  {DNNL_ARG_TO, weiBlocked}});
  Scratch inCopy(dnnl_memory_desc_get_size(&full.inBlocked) / 4 + 1);
  Scratch outCopy(dnnl_memory_desc_get_size(&full.outBlocked) / 4 + 1);
  if (!ok)
    return false; // nothing written yet: the GEMMs take it
  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const ConvPrimitive &p =
        n0 + chunk <= s.n
            ? full
            : getConvPrimitive(s, s.n - n0, backward, inStrides, outStrides);
    dnnl_memory_t inBlocked = call.memory(p.inBlocked, inCopy.data);
    dnnl_memory_t outBlocked = call.memory(p.outBlocked, outCopy.data);
    call.runOrDie(p.inIn,
                  {{DNNL_ARG_FROM, call.memory(p.in, in + n0 * inStrides[0])},
                   {DNNL_ARG_TO, inBlocked}});
    call.runOrDie(p.conv,
                  {{backward ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC, inBlocked},
                   {DNNL_ARG_WEIGHTS, weiBlocked},
                   {backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST, outBlocked}});
    call.runOrDie(p.outOut, {{DNNL_ARG_FROM, outBlocked},
                             {DNNL_ARG_TO,
                              call.memory(p.out, out + n0 * outStrides[0])}});
  }
  ++primitiveRuns;
  return true;
}

/// A weight gradient computed as a convolution, conv(x^T, dy^T) -> dw^T
/// with batch and channels swapped (how the exported backward writes it),
/// through oneDNN's backward-weights primitive on x, dy and dw themselves.
/// In `s` (the convolution as called): n = the forward's input channels,
/// c = the batch, (h, w) = its input, f = its output channels, (kh, kw) =
/// its output, (oh, ow) = its kernel, stride = its dilation, dilation = its
/// stride, pad = its padding. The strides are the call's (n, c, h, w) of
/// the input, (f, c, kh, kw) of the weight operand (dy^T) and (n, f, oh,
/// ow) of the output.
struct WeightGradientPrimitive {
  dnnl_primitive_t conv = nullptr, srcIn = nullptr, dyIn = nullptr,
                   dwOut = nullptr;
  dnnl_memory_desc_t src, dy, dw, srcBlocked, dyBlocked, dwBlocked;
  bool ok = false;
};

WeightGradientPrimitive createWeightGradientPrimitive(const ConvShape &s,
                                                      int64_t batch,
                                                      const int64_t in[4],
                                                      const int64_t wt[4],
                                                      const int64_t out[4]) {
  WeightGradientPrimitive p;
  dnnl_engine_t engine = getEngine();
  if (!engine)
    return p;
  int64_t far[2];
  getFarPadding(s, far);
  dnnl_dims_t srcDims{batch, s.n, s.h, s.w}, dyDims{batch, s.f, s.kh, s.kw},
      dwDims{s.f, s.n, s.oh, s.ow};
  dnnl_dims_t srcStrides{in[1], in[0], in[2], in[3]};
  dnnl_dims_t dyStrides{wt[1], wt[0], wt[2], wt[3]};
  dnnl_dims_t dwStrides{out[1], out[0], out[2], out[3]};
  dnnl_dims_t strides{s.dilation[0], s.dilation[1]};
  dnnl_dims_t dilations{s.stride[0] - 1, s.stride[1] - 1};
  dnnl_dims_t padL{s.pad[0], s.pad[1]}, padR{far[0], far[1]};
  if (dnnl_memory_desc_init_by_strides(&p.src, 4, srcDims, dnnl_f32,
                                       srcStrides) != dnnl_success ||
      dnnl_memory_desc_init_by_strides(&p.dy, 4, dyDims, dnnl_f32, dyStrides) !=
          dnnl_success ||
      dnnl_memory_desc_init_by_strides(&p.dw, 4, dwDims, dnnl_f32, dwStrides) !=
          dnnl_success)
    return p;
  // (The forward of this swapped-batch form: dW is its weights, dY its
  // destination.)
  AnyLayouts any;
  dnnl_primitive_desc_t hint = createForwardDesc(
      engine, srcDims, dwDims, dyDims, strides, dilations, padL, padR, any);
  if (!hint)
    return p;
  dnnl_convolution_desc_t weights;
  dnnl_primitive_desc_t pd = nullptr;
  bool made =
      dnnl_dilated_convolution_backward_weights_desc_init(
          &weights, dnnl_convolution_direct, &any.src, &any.wei, nullptr,
          &any.dst, strides, dilations, padL, padR) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &weights, nullptr, engine, hint) ==
          dnnl_success;
  dnnl_primitive_desc_destroy(hint);
  if (!made)
    return p;
  p.srcBlocked = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  p.dyBlocked = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0);
  p.dwBlocked =
      *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
  p.ok = dnnl_primitive_create(&p.conv, pd) == dnnl_success &&
         makeReorder(&p.srcIn, &p.src, &p.srcBlocked, false) &&
         makeReorder(&p.dyIn, &p.dy, &p.dyBlocked, false) &&
         makeReorder(&p.dwOut, &p.dwBlocked, &p.dw, true);
  dnnl_primitive_desc_destroy(pd);
  return p;
}

const WeightGradientPrimitive &
getWeightGradientPrimitive(const ConvShape &s, int64_t batch,
                           const int64_t in[4], const int64_t wt[4],
                           const int64_t out[4]) {
  std::vector<int64_t> key = {
      batch,       s.n,           s.h,           s.w,      s.f,
      s.kh,        s.kw,          s.oh,          s.ow,     s.stride[0],
      s.stride[1], s.dilation[0], s.dilation[1], s.pad[0], s.pad[1]};
  key.insert(key.end(), in, in + 4);
  key.insert(key.end(), wt, wt + 4);
  key.insert(key.end(), out, out + 4);
  return getCached<WeightGradientPrimitive>(key, [&] {
    return createWeightGradientPrimitive(s, batch, in, wt, out);
  });
}

/// Whether `s` is a weight gradient (see WeightGradientPrimitive) oneDNN's
/// backward-weights primitive takes, and takes faster than the GEMMs: one
/// group, at least 8 channels in and out, the forward's kernel up to 7x7
/// and its output at least 7 wide or high (a "kernel" that large marks a
/// weight gradient: a forward convolution on a small map, whose kernel is
/// larger than its output, is not one and is slower on this primitive), at
/// least 1024 output positions over the batch (the VGG's 32x32 to 8x8 maps
/// at batch 16 run faster on it), the weight up to 1 MB. (ResNet-20's 7x7
/// maps at batch 128: its step 9 % faster on one thread than with the
/// GEMMs over gathered windows.)
bool isWeightGradientShape(const ConvShape &s) {
  int64_t far[2];
  getFarPadding(s, far);
  return primitivesEnabled && s.g == 1 && s.n >= 8 && s.f >= 8 && s.oh <= 7 &&
         s.ow <= 7 && std::max(s.kh, s.kw) >= 7 && s.c * s.kh * s.kw >= 1024 &&
         far[0] >= 0 && far[1] >= 0 &&
         s.f * s.n * s.oh * s.ow * 4 <= kPrimitiveWeightBytes;
}

/// out += the weight gradient (see WeightGradientPrimitive), on chunks of
/// the batch whose blocked copies take about what the GEMMs' windows would
/// (each chunk's gradient added through the sum post-op); false (nothing
/// written) if oneDNN has no primitive.
bool weightGradientWithPrimitive(const ConvShape &s, const float *in,
                                 const int64_t inStrides[4], const float *wt,
                                 const int64_t wtStrides[4], float *out,
                                 const int64_t outStrides[4]) {
  int64_t perImage = (s.n * s.h * s.w + s.f * s.kh * s.kw) * 4;
  int64_t chunk = std::clamp<int64_t>(kWindowFloats * 4 / perImage, 1, s.c);
  const WeightGradientPrimitive &full =
      getWeightGradientPrimitive(s, chunk, inStrides, wtStrides, outStrides);
  int64_t rest = s.c % chunk;
  if (!full.ok || (rest && !getWeightGradientPrimitive(s, rest, inStrides,
                                                       wtStrides, outStrides)
                                .ok))
    return false;
  PrimitiveCall call;
  if (!call.stream)
    return false;
  Scratch srcCopy(dnnl_memory_desc_get_size(&full.srcBlocked) / 4 + 1);
  Scratch dyCopy(dnnl_memory_desc_get_size(&full.dyBlocked) / 4 + 1);
  Scratch dwCopy(dnnl_memory_desc_get_size(&full.dwBlocked) / 4 + 1);
  for (int64_t b0 = 0; b0 < s.c; b0 += chunk) {
    const WeightGradientPrimitive &p =
        b0 + chunk <= s.c ? full
                          : getWeightGradientPrimitive(s, s.c - b0, inStrides,
                                                       wtStrides, outStrides);
    dnnl_memory_t src = call.memory(p.srcBlocked, srcCopy.data);
    dnnl_memory_t dy = call.memory(p.dyBlocked, dyCopy.data);
    dnnl_memory_t dw = call.memory(p.dwBlocked, dwCopy.data);
    call.runOrDie(p.srcIn,
                  {{DNNL_ARG_FROM, call.memory(p.src, in + b0 * inStrides[1])},
                   {DNNL_ARG_TO, src}});
    call.runOrDie(p.dyIn,
                  {{DNNL_ARG_FROM, call.memory(p.dy, wt + b0 * wtStrides[1])},
                   {DNNL_ARG_TO, dy}});
    call.runOrDie(p.conv, {{DNNL_ARG_SRC, src},
                           {DNNL_ARG_DIFF_DST, dy},
                           {DNNL_ARG_DIFF_WEIGHTS, dw}});
    call.runOrDie(p.dwOut,
                  {{DNNL_ARG_FROM, dw}, {DNNL_ARG_TO, call.memory(p.dw, out)}});
  }
  ++primitiveRuns;
  return true;
}

} // namespace

void act::rt::conv2dBackwardData(const ConvShape &s, const float *outGrad,
                                 const int64_t *gradStride, const float *weight,
                                 float *inGrad) {
  int64_t p = s.oh * s.ow, ckk = s.c * s.kh * s.kw;
  if (s.n == 0 || s.g == 0 || s.c == 0 || s.h == 0 || s.w == 0 || p == 0)
    return;
  int64_t dense[5] = {s.g * s.f * p, s.f * p, p, s.ow, 1};
  const int64_t *gs = gradStride ? gradStride : dense;
  if (isPrimitiveShape(s, /*backward=*/true)) {
    int64_t inStrides[4] = {gs[0], gs[2], gs[3], gs[4]};
    int64_t outStrides[4] = {s.c * s.h * s.w, s.h * s.w, s.w, 1};
    if (convWithPrimitive(s, /*backward=*/true, outGrad, inStrides, weight,
                          inGrad, outStrides))
      return;
  }
  // GEMMs on bands of output rows of one image, or, on small maps (where
  // one image's GEMM would be little more than a matrix times a vector), on
  // bands of images of at least kMinColumns output positions together.
  constexpr int64_t kMinColumns = 64;
  int64_t rowBand = std::clamp<int64_t>(kWindowFloats / (ckk * s.ow), 1, s.oh);
  int64_t imageBand =
      p >= kMinColumns ? 1
                       : std::clamp<int64_t>((kMinColumns + p - 1) / p, 1, s.n);
  int64_t bands = (s.n + imageBand - 1) / imageBand;
  int64_t cols = std::max(rowBand * s.ow, imageBand * p);
  // The output gradient's rows as an F x cols matrix in place (one image,
  // rows contiguous), else gathered (images together, or the interior of a
  // padded buffer).
  bool matrix = imageBand == 1 && (s.ow == 1 || gs[4] == 1) &&
                (s.oh == 1 || gs[3] == s.ow);
  int64_t count = bands * s.g;
  int threads = threadsFor(count);
  Scratch col(size_t(threads) * ckk * cols);
  Scratch rows(matrix ? 0 : size_t(threads) * s.f * cols);
  forEach(count, [&](int64_t idx, int thread) {
    int64_t n0 = idx / s.g * imageBand, g = idx % s.g;
    int64_t n1 = std::min(n0 + imageBand, s.n);
    float *buffer = col.data + thread * ckk * cols;
    for (int64_t i0 = 0; i0 < s.oh; i0 += rowBand) {
      int64_t i1 = std::min(i0 + rowBand, s.oh);
      int64_t width = (i1 - i0) * s.ow, total = (n1 - n0) * width;
      const float *b = outGrad + n0 * gs[0] + g * gs[1] + i0 * gs[3];
      int64_t ldb = gs[2];
      if (!matrix) {
        float *packed = rows.data + thread * s.f * cols;
        for (int64_t f = 0; f < s.f; ++f)
          for (int64_t n = n0; n < n1; ++n)
            for (int64_t i = i0; i < i1; ++i)
              for (int64_t j = 0; j < s.ow; ++j)
                packed[f * total + (n - n0) * width + (i - i0) * s.ow + j] =
                    outGrad[n * gs[0] + g * gs[1] + f * gs[2] + i * gs[3] +
                            j * gs[4]];
        b = packed, ldb = total;
      }
      // windows (CKK x total) = weight[g]^T (CKK x F) * dy (F x total).
      sgemm(true, false, ckk, total, s.f, weight + g * s.f * ckk, ckk, b, ldb,
            0.0f, buffer, total);
      for (int64_t n = n0; n < n1; ++n)
        col2im(s, buffer + (n - n0) * width, total, i0, i1,
               inGrad + (n * s.g + g) * s.c * s.h * s.w);
    }
  });
}

void act::rt::setConvPrimitives(bool enabled) { primitivesEnabled = enabled; }

int64_t act::rt::getConvPrimitiveRuns() { return primitiveRuns; }

void act::rt::gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t lda, const float *b, int64_t ldb,
                   float *c, int64_t ldc) {
  sgemm(transA, transB, m, n, k, a, lda, b, ldb, 1.0f, c, ldc);
}

ConvAlgorithm act::rt::chooseConvAlgorithm(const ConvShape &s) {
  int64_t p = s.oh * s.ow, kk = s.kh * s.kw, ckk = s.c * kk;
  struct Choice {
    int64_t m, n, k;
    ConvAlgorithm algorithm;
    int64_t smallest() const { return std::min({m, n, k}); }
  } choices[] = {{s.f, p, ckk, ConvAlgorithm::PerImage},
                 {s.n, s.f, ckk, ConvAlgorithm::PerPosition},
                 {s.f, s.n * p, kk, ConvAlgorithm::PerChannel}};
  const Choice *best = &choices[0];
  for (const Choice &c : choices)
    if (c.smallest() > best->smallest() ||
        (c.smallest() == best->smallest() && c.m * c.n > best->m * best->n))
      best = &c;
  return best->smallest() < 4 ? ConvAlgorithm::Direct : best->algorithm;
}

void act::rt::conv2d(const ConvShape &shape, const float *in,
                     const float *weight, float *out) {
  if (shape.n == 0 || shape.g == 0 || shape.f == 0 || shape.oh == 0 ||
      shape.ow == 0)
    return;
  ConvShape s = shape;
  if (!s.inStride[0] && !s.inStride[1] && !s.inStride[2] && !s.inStride[3] &&
      !s.inStride[4]) {
    s.inStride[4] = 1, s.inStride[3] = s.w, s.inStride[2] = s.h * s.w;
    s.inStride[1] = s.c * s.h * s.w, s.inStride[0] = s.g * s.inStride[1];
  }
  if (!s.outStride[0] && !s.outStride[1] && !s.outStride[2]) {
    s.outStride[2] = s.oh * s.ow, s.outStride[1] = s.f * s.outStride[2];
    s.outStride[0] = s.g * s.outStride[1];
  }
  if (!s.weightStrided || chooseConvAlgorithm(s) != ConvAlgorithm::PerChannel) {
    s.weightStride[4] = 1, s.weightStride[3] = s.kw;
    s.weightStride[2] = s.kh * s.kw, s.weightStride[1] = s.c * s.kh * s.kw;
    s.weightStride[0] = s.f * s.weightStride[1];
  }
  if (isPrimitiveShape(s)) {
    const int64_t *is = s.inStride, *os = s.outStride;
    int64_t inStrides[4] = {is[0], is[2], is[3], is[4]};
    int64_t outStrides[4] = {os[0], os[2], s.ow, 1};
    if (convWithPrimitive(s, /*backward=*/false, in, inStrides, weight, out,
                          outStrides))
      return;
  }
  switch (chooseConvAlgorithm(s)) {
  case ConvAlgorithm::PerImage:
    return convPerImage(s, in, weight, out);
  case ConvAlgorithm::PerPosition:
    return convPerPosition(s, in, weight, out);
  case ConvAlgorithm::PerChannel:
    return convPerChannel(s, in, weight, out);
  case ConvAlgorithm::Direct:
    return convDirect(s, in, weight, out);
  }
}

//===----------------------------------------------------------------------===//
// Entry points on memref descriptors
//===----------------------------------------------------------------------===//

namespace {

template <int N> bool isRowMajor(const MemRef<N> &m) {
  int64_t expected = 1;
  for (int i = N - 1; i >= 0; --i) {
    if (m.sizes[i] != 1 && m.strides[i] != expected)
      return false;
    expected *= m.sizes[i];
  }
  return true;
}

template <int N> int64_t numElements(const MemRef<N> &m) {
  int64_t count = 1;
  for (int i = 0; i < N; ++i)
    count *= m.sizes[i];
  return count;
}

/// A memref's elements as a row-major array: in place when they are laid
/// out so, else a counted copy (act::rt::copy; written back by writeBack for
/// outputs).
template <int N> struct RowMajor {
  explicit RowMajor(const MemRef<N> &m) : m(m) {
    if (isRowMajor(m)) {
      data = m.aligned + m.offset;
      return;
    }
    copy = std::make_unique<Scratch>(numElements(m));
    data = copy->data;
    int64_t stride = 1;
    for (int i = N - 1; i >= 0; stride *= m.sizes[i--])
      dense[i] = stride;
    act::rt::copy(N, m.sizes, m.aligned + m.offset, m.strides, data, dense);
  }
  void writeBack() {
    if (copy)
      act::rt::copy(N, m.sizes, data, dense, m.aligned + m.offset, m.strides);
  }
  MemRef<N> m;
  std::unique_ptr<Scratch> copy;
  float *data;
  int64_t dense[N];
};

/// A 2-d view (strides r, c) as a GEMM operand: row-major with leading
/// dimension r, or transposed with leading dimension c; false if neither.
bool asMatrix(int64_t rows, int64_t cols, int64_t r, int64_t c, bool &trans,
              int64_t &ld) {
  if (c == 1 || cols == 1) {
    trans = false;
    ld = rows == 1 ? cols : r;
    return ld >= cols;
  }
  if (r == 1 || rows == 1) {
    trans = true;
    ld = cols == 1 ? rows : c;
    return ld >= rows;
  }
  return false;
}

/// C (b x m x n) += A (b x m x k) B (b x k x n) for descriptors of any
/// strides (b = 1 and batch strides 0 for linalg.matmul).
void batchMatmul(int64_t batch, MemRef<3> a, MemRef<3> b, MemRef<3> c) {
  int64_t m = c.sizes[1], n = c.sizes[2], k = a.sizes[2];
  bool ta, tb, tc;
  int64_t lda, ldb, ldc;
  std::unique_ptr<RowMajor<3>> pa, pb, pc;
  // Points `v` at a row-major copy of its elements (non-transposed, leading
  // dimension its columns).
  auto pack = [](MemRef<3> &v, std::unique_ptr<RowMajor<3>> &copy, bool &trans,
                 int64_t &ld) {
    copy = std::make_unique<RowMajor<3>>(v);
    v.aligned = copy->data, v.offset = 0;
    v.strides[2] = 1, v.strides[1] = v.sizes[2];
    v.strides[0] = v.sizes[1] * v.sizes[2];
    trans = false, ld = v.sizes[2];
  };
  if (!asMatrix(m, k, a.strides[1], a.strides[2], ta, lda))
    pack(a, pa, ta, lda);
  if (!asMatrix(k, n, b.strides[1], b.strides[2], tb, ldb))
    pack(b, pb, tb, ldb);
  if (!asMatrix(m, n, c.strides[1], c.strides[2], tc, ldc))
    pack(c, pc, tc, ldc);
  forEach(batch, [&](int64_t i, int) {
    const float *ai = a.aligned + a.offset + i * a.strides[0];
    const float *bi = b.aligned + b.offset + i * b.strides[0];
    float *ci = c.aligned + c.offset + i * c.strides[0];
    // A transposed C (a result written into its transposed place) is the
    // row-major C^T += B^T A^T.
    if (tc)
      sgemm(!tb, !ta, n, m, k, bi, ldb, ai, lda, 1.0f, ci, ldc);
    else
      sgemm(ta, tb, m, n, k, ai, lda, bi, ldb, 1.0f, ci, ldc);
  });
  if (pc)
    pc->writeBack();
}

MemRef<3> withBatch(const MemRef<2> &m) {
  return {m.allocated,
          m.aligned,
          m.offset,
          {1, m.sizes[0], m.sizes[1]},
          {0, m.strides[0], m.strides[1]}};
}

template <int N>
void conv(MemRef<N> *in, MemRef<N> *weight, MemRef<N> *out, int64_t stride0,
          int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
          int64_t pad1) {
  // Rank 4: N C H W, F C KH KW, N F OH OW; rank 5: with G after N (input,
  // output) or first (weight).
  constexpr int o = N - 4;
  ConvShape s;
  s.n = in->sizes[0];
  s.g = o ? in->sizes[1] : 1;
  s.c = in->sizes[1 + o], s.h = in->sizes[2 + o], s.w = in->sizes[3 + o];
  s.f = weight->sizes[o], s.kh = weight->sizes[2 + o];
  s.kw = weight->sizes[3 + o];
  s.oh = out->sizes[2 + o], s.ow = out->sizes[3 + o];
  s.stride[0] = stride0, s.stride[1] = stride1;
  s.dilation[0] = dilation0, s.dilation[1] = dilation1;
  s.pad[0] = pad0, s.pad[1] = pad1;
  // The input is read through its strides (rank 4: no group stride).
  for (int i = 0, d = 0; i < 5; ++i)
    s.inStride[i] = i == 1 && !o ? 0 : in->strides[d++];
  // A weight gradient (batch and channels swapped) on oneDNN's
  // backward-weights primitive, reading all three through their strides.
  if constexpr (N == 4) {
    const int64_t *os = out->strides, *ws = weight->strides;
    int64_t inStrides[4] = {in->strides[0], in->strides[1], in->strides[2],
                            in->strides[3]};
    int64_t outStrides[4] = {os[0], os[1], os[2], os[3]};
    if (isWeightGradientShape(s) &&
        weightGradientWithPrimitive(s, in->aligned + in->offset, inStrides,
                                    weight->aligned + weight->offset, ws,
                                    out->aligned + out->offset, outStrides))
      return;
  }
  // PerChannel reads the weight through its strides (a weight gradient's
  // transposed output gradient: no packed copy, at most one channel's
  // windows gathered per thread); the other algorithms read it packed.
  std::unique_ptr<RowMajor<N>> packed;
  const float *w = weight->aligned + weight->offset;
  if (chooseConvAlgorithm(s) == ConvAlgorithm::PerChannel) {
    s.weightStrided = true;
    for (int i = 0, d = 0; i < 5; ++i)
      s.weightStride[i] = i == 0 && !o ? 0 : weight->strides[d++];
  } else {
    packed = std::make_unique<RowMajor<N>>(*weight);
    w = packed->data;
  }
  // The output is written through its (n, g, f) strides when its rows and
  // columns are row-major (a weight gradient written into its transposed
  // place), else through a row-major copy.
  const int64_t *os = out->strides;
  if ((s.ow == 1 || os[3 + o] == 1) && (s.oh == 1 || os[2 + o] == s.ow) &&
      os[0] >= 0 && os[o] >= 0 && os[1 + o] >= 0) {
    s.outStride[0] = os[0], s.outStride[1] = o ? os[1] : 0;
    s.outStride[2] = os[1 + o];
    if (!s.outStride[0] && !s.outStride[1] && !s.outStride[2])
      s.outStride[2] = 1; // (one element: any stride)
    conv2d(s, in->aligned + in->offset, w, out->aligned + out->offset);
    return;
  }
  RowMajor<N> y(*out);
  conv2d(s, in->aligned + in->offset, w, y.data);
  y.writeBack();
}

/// The input gradient of a convolution (conv2dBackwardData) on descriptors:
/// the output gradient read through its strides, the weight row-major
/// (packed if it is not), the input gradient accumulated.
template <int N>
void convBackwardData(MemRef<N> *outGrad, MemRef<N> *weight, MemRef<N> *inGrad,
                      int64_t stride0, int64_t stride1, int64_t dilation0,
                      int64_t dilation1, int64_t pad0, int64_t pad1) {
  constexpr int o = N - 4;
  ConvShape s;
  s.n = inGrad->sizes[0];
  s.g = o ? inGrad->sizes[1] : 1;
  s.c = inGrad->sizes[1 + o], s.h = inGrad->sizes[2 + o];
  s.w = inGrad->sizes[3 + o];
  s.f = weight->sizes[o], s.kh = weight->sizes[2 + o];
  s.kw = weight->sizes[3 + o];
  s.oh = outGrad->sizes[2 + o], s.ow = outGrad->sizes[3 + o];
  s.stride[0] = stride0, s.stride[1] = stride1;
  s.dilation[0] = dilation0, s.dilation[1] = dilation1;
  s.pad[0] = pad0, s.pad[1] = pad1;
  // The output gradient through its strides (the interior of the padded
  // buffer it was computed into), the others row-major.
  int64_t gradStride[5];
  for (int i = 0, d = 0; i < 5; ++i)
    gradStride[i] = i == 1 && !o ? 0 : outGrad->strides[d++];
  RowMajor<N> w(*weight), dx(*inGrad);
  conv2dBackwardData(s, outGrad->aligned + outGrad->offset, gradStride, w.data,
                     dx.data);
  dx.writeBack();
}

/// An unranked memref: the rank and a pointer to a ranked descriptor.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// The (aligned + offset, sizes, strides) of an unranked f32 memref.
struct View {
  explicit View(const UnrankedMemRef &m) : rank(m.rank) {
    auto *words = static_cast<int64_t *>(m.descriptor);
    data = reinterpret_cast<float *>(words[1]) + words[2];
    sizes = words + 3;
    strides = words + 3 + rank;
  }
  int64_t rank;
  float *data;
  const int64_t *sizes, *strides;
};

} // namespace

void act::rt::copy(int64_t rank, const int64_t *sizes, const float *src,
                   const int64_t *srcStrides, float *dst,
                   const int64_t *dstStrides) {
  // Dims of size 1 dropped, then adjacent dims merged where both views step
  // through them as one (a reversed 3x3 window is 9 elements of stride -1).
  std::vector<int64_t> size(rank), ss(rank), ds(rank);
  int n = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0)
      return;
    if (sizes[d] == 1)
      continue;
    if (n > 0 && ss[n - 1] == sizes[d] * srcStrides[d] &&
        ds[n - 1] == sizes[d] * dstStrides[d]) {
      size[n - 1] *= sizes[d], ss[n - 1] = srcStrides[d];
      ds[n - 1] = dstStrides[d];
      continue;
    }
    size[n] = sizes[d], ss[n] = srcStrides[d], ds[n] = dstStrides[d], ++n;
  }
  if (n == 0) {
    *dst = *src;
    return;
  }
  int64_t inner = size[n - 1], si = ss[n - 1], di = ds[n - 1];
  int64_t rows = 1;
  for (int d = 0; d + 1 < n; ++d)
    rows *= size[d];
  // Rows in chunks (one per thread when there are many), each walked with
  // an odometer.
  int64_t chunks = rows >= 4096 ? 64 : 1;
  forEach(chunks, [&](int64_t chunk, int) {
    int64_t first = rows * chunk / chunks, last = rows * (chunk + 1) / chunks;
    std::vector<int64_t> index(n, 0);
    int64_t so = 0, dof = 0, rest = first;
    for (int d = n - 2; d >= 0; --d) {
      index[d] = rest % size[d];
      rest /= size[d];
      so += index[d] * ss[d];
      dof += index[d] * ds[d];
    }
    for (int64_t row = first; row < last; ++row) {
      const float *from = src + so;
      float *to = dst + dof;
      if (si == 1 && di == 1)
        std::memcpy(to, from, inner * sizeof(float));
      else
        for (int64_t e = 0; e < inner; ++e)
          to[e * di] = from[e * si];
      for (int d = n - 2; d >= 0; --d) {
        so += ss[d], dof += ds[d];
        if (++index[d] < size[d])
          break;
        so -= size[d] * ss[d], dof -= size[d] * ds[d], index[d] = 0;
      }
    }
  });
}

extern "C" {

void _mlir_ciface_act_kernel_copy_f32(UnrankedMemRef *src,
                                      UnrankedMemRef *dst) {
  View from(*src), to(*dst);
  act::rt::copy(to.rank, to.sizes, from.data, from.strides, to.data,
                to.strides);
}

void _mlir_ciface_act_kernel_matmul_f32(MemRef<2> *a, MemRef<2> *b,
                                        MemRef<2> *c) {
  batchMatmul(1, withBatch(*a), withBatch(*b), withBatch(*c));
}

void _mlir_ciface_act_kernel_batch_matmul_f32(MemRef<3> *a, MemRef<3> *b,
                                              MemRef<3> *c) {
  batchMatmul(c->sizes[0], *a, *b, *c);
}

void _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
    MemRef<4> *in, MemRef<4> *weight, MemRef<4> *out, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  conv(in, weight, out, stride0, stride1, dilation0, dilation1, pad0, pad1);
}

void _mlir_ciface_act_kernel_conv_2d_ngchw_gfchw_f32(
    MemRef<5> *in, MemRef<5> *weight, MemRef<5> *out, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  conv(in, weight, out, stride0, stride1, dilation0, dilation1, pad0, pad1);
}

void _mlir_ciface_act_kernel_conv_2d_nchw_fchw_backward_data_f32(
    MemRef<4> *outGrad, MemRef<4> *weight, MemRef<4> *inGrad, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  convBackwardData(outGrad, weight, inGrad, stride0, stride1, dilation0,
                   dilation1, pad0, pad1);
}

} // extern "C"

const HookSymbol *act::rt::getKernelHooks(size_t &count) {
#define ACT_KERNEL(name)                                                       \
  {                                                                            \
    "_mlir_ciface_act_kernel_" #name,                                          \
        reinterpret_cast<void *>(&_mlir_ciface_act_kernel_##name)              \
  }
  static const HookSymbol hooks[] = {
      ACT_KERNEL(copy_f32),
      ACT_KERNEL(matmul_f32),
      ACT_KERNEL(batch_matmul_f32),
      ACT_KERNEL(conv_2d_nchw_fchw_f32),
      ACT_KERNEL(conv_2d_ngchw_gfchw_f32),
      ACT_KERNEL(conv_2d_nchw_fchw_backward_data_f32),
  };
#undef ACT_KERNEL
  count = sizeof(hooks) / sizeof(hooks[0]);
  return hooks;
}
