//===- FakeCudaLibraries.cpp - cuBLAS/cuDNN stand-ins on host memory ------===//
//
// The entry points of CudaLibrarySymbols.def with the libraries' own
// semantics (column-major cuBLAS GEMMs with leading dimensions and
// transposes; cuDNN tensor descriptors with strides, packed NCHW filters,
// cross-correlation with padding, strides, dilations and groups; alpha and
// beta), computed on the host in plain loops. They check what the real
// libraries check (leading dimensions, the output's size against the
// convolution's, the filter's channels against the groups) and return the
// real error codes, so the runtime's argument translation is tested without
// a GPU: the runtime's tests and `act-run --device=gpu-emulated
// --gpu-libraries` load this library through ACT_CUBLAS_LIBRARY and
// ACT_CUDNN_LIBRARY, on host memory.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kCublasInvalidValue = 7;
constexpr int kCudnnBadParam = 3;
constexpr int kCudnnNotSupported = 9;

struct Tensor {
  int rank = 0;
  int dims[8] = {};
  int strides[8] = {};
};
struct Filter {
  int k = 0, c = 0, h = 0, w = 0;
};
struct Conv {
  int pad[2] = {}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int groups = 1, math = 0;
};

struct AlgoPerf {
  int algo, status;
  float time;
  size_t memory;
  int determinism, mathType, reserved[3];
};

int dummy;

/// The forward output's dims for x, w and conv, or false if inconsistent.
bool outputDims(const Tensor &x, const Filter &w, const Conv &conv,
                int out[4]) {
  if (x.rank != 4 || conv.groups < 1 || w.k % conv.groups ||
      x.dims[1] != w.c * conv.groups)
    return false;
  out[0] = x.dims[0];
  out[1] = w.k;
  int kernel[2] = {w.h, w.w};
  for (int i = 0; i < 2; ++i) {
    int span = conv.dilation[i] * (kernel[i] - 1) + 1;
    int padded = x.dims[2 + i] + 2 * conv.pad[i];
    if (padded < span || conv.stride[i] < 1)
      return false;
    out[2 + i] = (padded - span) / conv.stride[i] + 1;
  }
  return true;
}

bool sameDims(const Tensor &t, const int dims[4]) {
  if (t.rank != 4)
    return false;
  for (int i = 0; i < 4; ++i)
    if (t.dims[i] != dims[i])
      return false;
  return true;
}

int64_t at(const Tensor &t, int n, int c, int h, int w) {
  return int64_t(n) * t.strides[0] + int64_t(c) * t.strides[1] +
         int64_t(h) * t.strides[2] + int64_t(w) * t.strides[3];
}

/// Calls body(n, k, oh, ow, c, u, v, ih, iw) for every product of the
/// convolution that lands inside the input.
template <typename Body>
void forEachProduct(const Tensor &x, const Filter &w, const Conv &conv,
                    const int out[4], Body body) {
  int perGroupK = w.k / conv.groups;
  for (int n = 0; n < out[0]; ++n)
    for (int k = 0; k < out[1]; ++k) {
      int g = k / perGroupK;
      for (int oh = 0; oh < out[2]; ++oh)
        for (int ow = 0; ow < out[3]; ++ow)
          for (int c = 0; c < w.c; ++c)
            for (int u = 0; u < w.h; ++u)
              for (int v = 0; v < w.w; ++v) {
                int ih =
                    oh * conv.stride[0] + u * conv.dilation[0] - conv.pad[0];
                int iw =
                    ow * conv.stride[1] + v * conv.dilation[1] - conv.pad[1];
                if (ih < 0 || iw < 0 || ih >= x.dims[2] || iw >= x.dims[3])
                  continue;
                body(n, k, oh, ow, g * w.c + c, c, u, v, ih, iw);
              }
    }
}

int64_t filterAt(const Filter &w, int k, int c, int u, int v) {
  return ((int64_t(k) * w.c + c) * w.h + u) * w.w + v;
}

/// dst = alpha acc + beta dst, elementwise over a tensor's elements.
void blend(const Tensor &t, float *dst, const std::vector<double> &acc,
           float alpha, float beta) {
  size_t e = 0;
  for (int n = 0; n < t.dims[0]; ++n)
    for (int c = 0; c < t.dims[1]; ++c)
      for (int h = 0; h < t.dims[2]; ++h)
        for (int w = 0; w < t.dims[3]; ++w, ++e) {
          float &y = dst[at(t, n, c, h, w)];
          y = float(alpha * acc[e] + (beta == 0.0f ? 0.0 : beta * double(y)));
        }
}

size_t packedIndex(const Tensor &t, int n, int c, int h, int w) {
  return ((size_t(n) * t.dims[1] + c) * t.dims[2] + h) * t.dims[3] + w;
}

size_t count(const Tensor &t) {
  size_t e = 1;
  for (int i = 0; i < t.rank; ++i)
    e *= size_t(t.dims[i]);
  return e;
}

} // namespace

extern "C" {

// cuBLAS

int cublasCreate_v2(void **handle) {
  *handle = &dummy;
  return kSuccess;
}
int cublasSetStream_v2(void *, void *) { return kSuccess; }
int cublasSetMathMode(void *, int) { return kSuccess; }

int cublasSgemmStridedBatched(void *, int transa, int transb, int m, int n,
                              int k, const float *alpha, const float *a,
                              int lda, long long strideA, const float *b,
                              int ldb, long long strideB, const float *beta,
                              float *c, int ldc, long long strideC, int batch) {
  auto rowsOf = [](int trans, int rows, int cols) {
    return trans ? cols : rows;
  };
  if (m < 0 || n < 0 || k < 0 || batch < 0 || (transa != 0 && transa != 1) ||
      (transb != 0 && transb != 1) || lda < std::max(1, rowsOf(transa, m, k)) ||
      ldb < std::max(1, rowsOf(transb, k, n)) || ldc < std::max(1, m))
    return kCublasInvalidValue;
  for (int p = 0; p < batch; ++p) {
    const float *A = a + p * strideA, *B = b + p * strideB;
    float *C = c + p * strideC;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int l = 0; l < k; ++l) {
          float x = transa ? A[l + int64_t(i) * lda] : A[i + int64_t(l) * lda];
          float y = transb ? B[j + int64_t(l) * ldb] : B[l + int64_t(j) * ldb];
          sum += double(x) * y;
        }
        float &out = C[i + int64_t(j) * ldc];
        out = float(*alpha * sum + (*beta == 0.0f ? 0.0 : *beta * double(out)));
      }
  }
  return kSuccess;
}

// cuDNN

int cudnnCreate(void **handle) {
  *handle = &dummy;
  return kSuccess;
}
int cudnnSetStream(void *, void *) { return kSuccess; }
const char *cudnnGetErrorString(int status) {
  switch (status) {
  case kSuccess:
    return "CUDNN_STATUS_SUCCESS";
  case kCudnnBadParam:
    return "CUDNN_STATUS_BAD_PARAM (stand-in)";
  case kCudnnNotSupported:
    return "CUDNN_STATUS_NOT_SUPPORTED (stand-in)";
  }
  return "CUDNN_STATUS_? (stand-in)";
}

int cudnnCreateTensorDescriptor(void **desc) {
  *desc = new Tensor;
  return kSuccess;
}
int cudnnSetTensorNdDescriptor(void *desc, int dataType, int rank,
                               const int *dims, const int *strides) {
  if (dataType != 0 || rank < 3 || rank > 8)
    return kCudnnBadParam;
  auto &t = *static_cast<Tensor *>(desc);
  t.rank = rank;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] <= 0 || strides[i] <= 0)
      return kCudnnBadParam;
    t.dims[i] = dims[i];
    t.strides[i] = strides[i];
  }
  return kSuccess;
}
int cudnnCreateFilterDescriptor(void **desc) {
  *desc = new Filter;
  return kSuccess;
}
int cudnnSetFilter4dDescriptor(void *desc, int dataType, int format, int k,
                               int c, int h, int w) {
  if (dataType != 0 || format != 0 || k <= 0 || c <= 0 || h <= 0 || w <= 0)
    return kCudnnBadParam;
  *static_cast<Filter *>(desc) = Filter{k, c, h, w};
  return kSuccess;
}
int cudnnCreateConvolutionDescriptor(void **desc) {
  *desc = new Conv;
  return kSuccess;
}
int cudnnSetConvolution2dDescriptor(void *desc, int padH, int padW, int u,
                                    int v, int dilH, int dilW, int mode,
                                    int computeType) {
  // Cross-correlation in float only: what act asks for.
  if (padH < 0 || padW < 0 || u < 1 || v < 1 || dilH < 1 || dilW < 1 ||
      mode != 1 || computeType != 0)
    return kCudnnBadParam;
  auto &c = *static_cast<Conv *>(desc);
  c.pad[0] = padH, c.pad[1] = padW, c.stride[0] = u, c.stride[1] = v;
  c.dilation[0] = dilH, c.dilation[1] = dilW;
  return kSuccess;
}
int cudnnSetConvolutionGroupCount(void *desc, int groups) {
  if (groups < 1)
    return kCudnnBadParam;
  static_cast<Conv *>(desc)->groups = groups;
  return kSuccess;
}
int cudnnSetConvolutionMathType(void *desc, int math) {
  static_cast<Conv *>(desc)->math = math;
  return kSuccess;
}

static bool isPacked(const Tensor &t) {
  int64_t expect = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    if (t.dims[i] != 1 && t.strides[i] != expect)
      return false;
    expect *= t.dims[i];
  }
  return true;
}

/// One algorithm (0), with a little workspace so that the runtime's
/// workspace path runs; its descriptors checked as the real query does.
/// With ACT_FAKE_CUDNN_PACKED_ONLY set, it does not support tensors that
/// are not packed (as some of cuDNN's algorithms), so the runtime's
/// fallback runs.
static int oneAlgorithm(const Tensor &x, const Filter &w, const Conv &conv,
                        const Tensor &y, int requested, int *returned,
                        AlgoPerf *perf) {
  int out[4];
  if (requested < 1 || !outputDims(x, w, conv, out) || !sameDims(y, out))
    return kCudnnBadParam;
  *returned = 1;
  bool packedOnly = std::getenv("ACT_FAKE_CUDNN_PACKED_ONLY") != nullptr;
  int status = packedOnly && (!isPacked(x) || !isPacked(y)) ? kCudnnNotSupported
                                                            : kSuccess;
  perf[0] = AlgoPerf{0, status, 0.0f, 4096, 1, conv.math, {0, 0, 0}};
  return kSuccess;
}
int cudnnGetConvolutionForwardAlgorithm_v7(void *, void *x, void *w, void *conv,
                                           void *y, int requested,
                                           int *returned, AlgoPerf *perf) {
  return oneAlgorithm(*static_cast<Tensor *>(x), *static_cast<Filter *>(w),
                      *static_cast<Conv *>(conv), *static_cast<Tensor *>(y),
                      requested, returned, perf);
}
int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *, void *w, void *dy,
                                                void *conv, void *dx,
                                                int requested, int *returned,
                                                AlgoPerf *perf) {
  return oneAlgorithm(*static_cast<Tensor *>(dx), *static_cast<Filter *>(w),
                      *static_cast<Conv *>(conv), *static_cast<Tensor *>(dy),
                      requested, returned, perf);
}
int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *, void *x, void *dy,
                                                  void *conv, void *dw,
                                                  int requested, int *returned,
                                                  AlgoPerf *perf) {
  return oneAlgorithm(*static_cast<Tensor *>(x), *static_cast<Filter *>(dw),
                      *static_cast<Conv *>(conv), *static_cast<Tensor *>(dy),
                      requested, returned, perf);
}

int cudnnConvolutionForward(void *, const void *alpha, void *xDesc,
                            const void *xData, void *wDesc, const void *wData,
                            void *convDesc, int algo, void *workspace,
                            size_t workspaceBytes, const void *beta,
                            void *yDesc, void *yData) {
  const auto &x = *static_cast<Tensor *>(xDesc);
  const auto &y = *static_cast<Tensor *>(yDesc);
  const auto &w = *static_cast<Filter *>(wDesc);
  const auto &conv = *static_cast<Conv *>(convDesc);
  int out[4];
  if (algo != 0 || (workspaceBytes && !workspace) ||
      !outputDims(x, w, conv, out) || !sameDims(y, out))
    return kCudnnBadParam;
  auto *X = static_cast<const float *>(xData);
  auto *W = static_cast<const float *>(wData);
  std::vector<double> acc(count(y), 0.0);
  forEachProduct(x, w, conv, out,
                 [&](int n, int k, int oh, int ow, int ic, int c, int u, int v,
                     int ih, int iw) {
                   acc[packedIndex(y, n, k, oh, ow)] +=
                       double(X[at(x, n, ic, ih, iw)]) *
                       W[filterAt(w, k, c, u, v)];
                 });
  blend(y, static_cast<float *>(yData), acc, *static_cast<const float *>(alpha),
        *static_cast<const float *>(beta));
  return kSuccess;
}

int cudnnConvolutionBackwardData(void *, const void *alpha, void *wDesc,
                                 const void *wData, void *dyDesc,
                                 const void *dyData, void *convDesc, int algo,
                                 void *workspace, size_t workspaceBytes,
                                 const void *beta, void *dxDesc, void *dxData) {
  const auto &dx = *static_cast<Tensor *>(dxDesc);
  const auto &dy = *static_cast<Tensor *>(dyDesc);
  const auto &w = *static_cast<Filter *>(wDesc);
  const auto &conv = *static_cast<Conv *>(convDesc);
  int out[4];
  if (algo != 0 || (workspaceBytes && !workspace) ||
      !outputDims(dx, w, conv, out) || !sameDims(dy, out))
    return kCudnnBadParam;
  auto *DY = static_cast<const float *>(dyData);
  auto *W = static_cast<const float *>(wData);
  std::vector<double> acc(count(dx), 0.0);
  forEachProduct(dx, w, conv, out,
                 [&](int n, int k, int oh, int ow, int ic, int c, int u, int v,
                     int ih, int iw) {
                   acc[packedIndex(dx, n, ic, ih, iw)] +=
                       double(DY[at(dy, n, k, oh, ow)]) *
                       W[filterAt(w, k, c, u, v)];
                 });
  blend(dx, static_cast<float *>(dxData), acc,
        *static_cast<const float *>(alpha), *static_cast<const float *>(beta));
  return kSuccess;
}

int cudnnConvolutionBackwardFilter(void *, const void *alpha, void *xDesc,
                                   const void *xData, void *dyDesc,
                                   const void *dyData, void *convDesc, int algo,
                                   void *workspace, size_t workspaceBytes,
                                   const void *beta, void *dwDesc,
                                   void *dwData) {
  const auto &x = *static_cast<Tensor *>(xDesc);
  const auto &dy = *static_cast<Tensor *>(dyDesc);
  const auto &w = *static_cast<Filter *>(dwDesc);
  const auto &conv = *static_cast<Conv *>(convDesc);
  int out[4];
  if (algo != 0 || (workspaceBytes && !workspace) ||
      !outputDims(x, w, conv, out) || !sameDims(dy, out))
    return kCudnnBadParam;
  auto *X = static_cast<const float *>(xData);
  auto *DY = static_cast<const float *>(dyData);
  std::vector<double> acc(size_t(w.k) * w.c * w.h * w.w, 0.0);
  forEachProduct(x, w, conv, out,
                 [&](int n, int k, int oh, int ow, int ic, int c, int u, int v,
                     int ih, int iw) {
                   acc[filterAt(w, k, c, u, v)] +=
                       double(X[at(x, n, ic, ih, iw)]) *
                       DY[at(dy, n, k, oh, ow)];
                 });
  auto *DW = static_cast<float *>(dwData);
  float a = *static_cast<const float *>(alpha),
        b = *static_cast<const float *>(beta);
  for (size_t e = 0; e < acc.size(); ++e)
    DW[e] = float(a * acc[e] + (b == 0.0f ? 0.0 : b * double(DW[e])));
  return kSuccess;
}

int cudnnTransformTensor(void *, const void *alpha, void *xDesc,
                         const void *xData, const void *beta, void *yDesc,
                         void *yData) {
  const auto &x = *static_cast<Tensor *>(xDesc);
  const auto &y = *static_cast<Tensor *>(yDesc);
  if (x.rank != y.rank)
    return kCudnnBadParam;
  for (int i = 0; i < x.rank; ++i)
    if (x.dims[i] != y.dims[i])
      return kCudnnBadParam;
  auto *X = static_cast<const float *>(xData);
  auto *Y = static_cast<float *>(yData);
  float a = *static_cast<const float *>(alpha),
        b = *static_cast<const float *>(beta);
  std::vector<int> index(size_t(x.rank), 0);
  for (size_t e = 0, n = count(x); e < n; ++e) {
    int64_t from = 0, to = 0;
    for (int i = 0; i < x.rank; ++i)
      from += int64_t(index[i]) * x.strides[i],
          to += int64_t(index[i]) * y.strides[i];
    Y[to] = float(a * double(X[from]) + (b == 0.0f ? 0.0 : b * double(Y[to])));
    for (int i = x.rank - 1; i >= 0; --i) {
      if (++index[i] < x.dims[i])
        break;
      index[i] = 0;
    }
  }
  return kSuccess;
}

} // extern "C"
