//===- CudaLibraries.cpp - GPU matmuls and convolutions via cuBLAS/cuDNN --===//

#include "act/runtime/CudaLibraries.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

using namespace act::rt;

namespace {

constexpr int kCudnnFloat = 0;        // CUDNN_DATA_FLOAT
constexpr int kCudnnNchw = 0;         // CUDNN_TENSOR_NCHW
constexpr int kCudnnCrossCorr = 1;    // CUDNN_CROSS_CORRELATION
constexpr int kCudnnFmaMath = 3;      // CUDNN_FMA_MATH: no TF32
constexpr int kCublasDefaultMath = 0; // CUBLAS_DEFAULT_MATH: no TF32
constexpr int kCublasOpN = 0, kCublasOpT = 1;
/// The most workspace a convolution algorithm may take (from the counted
/// allocator, so it shows in the peak).
constexpr size_t kMaxWorkspace = size_t(256) << 20;

struct Libraries {
#define ACT_CUBLAS_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#define ACT_CUDNN_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "act/runtime/CudaLibrarySymbols.def"
  void *cublas = nullptr, *cudnn = nullptr; // handles
  void *stream = nullptr;
  bool loaded = false;
  std::string error;
  std::mutex mutex;
  GpuLibraryCalls calls;
};

/// dlopen of $envVar's path, else each name on the loader's path, then in
/// /usr/local/cuda/lib64; what was tried goes into `tried`.
void *openLibrary(const char *envVar, std::initializer_list<const char *> names,
                  std::string &tried) {
  if (const char *path = std::getenv(envVar); path && *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      tried = std::string(path) + " (" + envVar + "): " + (why ? why : "?");
    }
    return lib;
  }
  for (const char *name : names)
    for (std::string candidate :
         {std::string(name), "/usr/local/cuda/lib64/" + std::string(name)}) {
      if (void *lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
        return lib;
      tried += (tried.empty() ? "" : ", ") + candidate;
    }
  tried = "tried " + tried + "; set " + envVar +
          " or LD_LIBRARY_PATH (a PyTorch installation keeps it in "
          "site-packages/nvidia/*/lib)";
  return nullptr;
}

Libraries &libraries() {
  static auto *l = new Libraries;
  static std::once_flag once;
  std::call_once(once, [] {
    Libraries &d = *l;
    std::string tried;
    void *cublas = openLibrary(
        "ACT_CUBLAS_LIBRARY",
        {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, tried);
    if (!cublas) {
      d.error = "cannot load cuBLAS: " + tried;
      return;
    }
    tried.clear();
    void *cudnn = openLibrary("ACT_CUDNN_LIBRARY",
                              {"libcudnn.so.9", "libcudnn.so"}, tried);
    if (!cudnn) {
      d.error = "cannot load cuDNN: " + tried;
      return;
    }
#define ACT_RESOLVE(lib, name, ret, params)                                    \
  d.name = reinterpret_cast<ret(*) params>(dlsym(lib, #name));                 \
  if (!d.name) {                                                               \
    d.error = "the " #lib " library lacks " #name;                             \
    return;                                                                    \
  }
#define ACT_CUBLAS_SYMBOL(name, ret, params)                                   \
  ACT_RESOLVE(cublas, name, ret, params)
#define ACT_CUDNN_SYMBOL(name, ret, params)                                    \
  ACT_RESOLVE(cudnn, name, ret, params)
#include "act/runtime/CudaLibrarySymbols.def"
#undef ACT_RESOLVE
    if (int r = d.cublasCreate_v2(&d.cublas)) {
      d.error = "cublasCreate failed (status " + std::to_string(r) + ")";
      return;
    }
    if (int r = d.cudnnCreate(&d.cudnn)) {
      d.error = std::string("cudnnCreate failed: ") + d.cudnnGetErrorString(r);
      return;
    }
    d.cublasSetMathMode(d.cublas, kCublasDefaultMath);
    d.loaded = true;
  });
  return *l;
}

/// The libraries, locked for one call, or a clear message and abort:
/// lowered code has no way to handle their absence.
struct Session {
  Session() : d(libraries()), lock(d.mutex) {
    if (!d.loaded) {
      std::fprintf(stderr, "act runtime: %s\n", d.error.c_str());
      std::abort();
    }
    d.cublasSetStream_v2(d.cublas, d.stream);
    d.cudnnSetStream(d.cudnn, d.stream);
  }
  Libraries &d;
  std::lock_guard<std::mutex> lock;
};

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "act runtime: %s\n", message.c_str());
  std::abort();
}

void checkCudnn(Libraries &d, int status, const char *what) {
  if (status != 0)
    fail(std::string(what) + " failed: " + d.cudnnGetErrorString(status));
}

/// Device (or, under the stand-in, host) scratch from the counted
/// allocator. Freed as soon as the call is queued: the step's later work
/// is ordered after it on the GPU, and the host never touches it.
struct Scratch {
  Scratch() = default;
  explicit Scratch(size_t bytes) { allocate(bytes); }
  ~Scratch() {
    if (data)
      _mlir_memref_to_llvm_free(data);
  }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  float *allocate(size_t bytes) {
    if (data)
      _mlir_memref_to_llvm_free(data);
    data = bytes ? _mlir_memref_to_llvm_aligned_alloc(256, bytes) : nullptr;
    if (bytes && !data)
      fail("out of memory for " + std::to_string(bytes) + " bytes of scratch");
    return static_cast<float *>(data);
  }
  void *data = nullptr;
};

/// A strided f32 view: data, then sizes and strides (elements) per dim.
struct View {
  float *data;
  std::vector<int64_t> sizes, strides;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  bool isPacked() const {
    int64_t expect = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      if (sizes[d] != 1 && strides[d] != expect)
        return false;
      expect *= sizes[d];
    }
    return true;
  }
  View packedLike(float *at) const {
    View v{at, sizes, sizes};
    int64_t expect = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      v.strides[d] = expect;
      expect *= sizes[d];
    }
    return v;
  }
  void swap01() {
    std::swap(sizes[0], sizes[1]);
    std::swap(strides[0], strides[1]);
  }
  /// The same view without dim `dim` (of size 1).
  View without(size_t dim) const {
    View v = *this;
    v.sizes.erase(v.sizes.begin() + dim);
    v.strides.erase(v.strides.begin() + dim);
    return v;
  }
};

template <int N> View viewOf(const MemRef<N> &m) {
  View v{m.aligned + m.offset, {}, {}};
  v.sizes.assign(m.sizes, m.sizes + N);
  v.strides.assign(m.strides, m.strides + N);
  for (int d = 0; d < N; ++d)
    if (v.sizes[d] > 1 && v.strides[d] < 0)
      fail("a GPU library call got an operand with a negative stride");
  return v;
}

/// Descriptors live for the process, one per distinct shape and layout
/// (a step's calls repeat them every run).
using Key = std::vector<int64_t>;

int toInt(int64_t v) {
  if (v < 0 || v > INT32_MAX)
    fail("a GPU library call's size or stride " + std::to_string(v) +
         " does not fit cuDNN's int");
  return int(v);
}

/// A cuDNN tensor descriptor of `v` (at least 4 dims: leading 1s added).
void *tensorDescriptor(Libraries &d, const View &v) {
  static std::map<Key, void *> cache;
  Key key = v.sizes;
  key.insert(key.end(), v.strides.begin(), v.strides.end());
  void *&desc = cache[key];
  if (desc)
    return desc;
  std::vector<int> dims, strides;
  for (size_t i = v.sizes.size(); i < 4; ++i)
    dims.push_back(1),
        strides.push_back(toInt(std::max<int64_t>(v.numElements(), 1)));
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    dims.push_back(toInt(v.sizes[i]));
    // A dim of one element: any stride, cuDNN wants a positive one.
    strides.push_back(toInt(v.sizes[i] == 1 ? std::max<int64_t>(1, v.strides[i])
                                            : v.strides[i]));
  }
  checkCudnn(d, d.cudnnCreateTensorDescriptor(&desc),
             "cudnnCreateTensorDescriptor");
  checkCudnn(d,
             d.cudnnSetTensorNdDescriptor(desc, kCudnnFloat, int(dims.size()),
                                          dims.data(), strides.data()),
             "cudnnSetTensorNdDescriptor");
  return desc;
}

/// dst = alpha src + beta dst over two views of the same sizes.
void transform(Libraries &d, const View &src, const View &dst, float beta) {
  float alpha = 1.0f;
  checkCudnn(d,
             d.cudnnTransformTensor(d.cudnn, &alpha, tensorDescriptor(d, src),
                                    src.data, &beta, tensorDescriptor(d, dst),
                                    dst.data),
             "cudnnTransformTensor");
}

/// `v` packed row-major: itself if it is, else a copy in `scratch`.
View packed(Libraries &d, const View &v, Scratch &scratch) {
  if (v.isPacked())
    return v;
  View p =
      v.packedLike(scratch.allocate(size_t(v.numElements()) * sizeof(float)));
  transform(d, v, p, 0.0f);
  ++d.calls.packs;
  return p;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// A batch of rows x cols matrices as cuBLAS reads them: column-major,
/// either the matrix (transposed == false) or its transpose, ld apart.
struct Operand {
  const float *data;
  bool transposed;
  int64_t ld, batchStride;
};

/// How cuBLAS reads the matrices of a batch x rows x cols view, or nothing
/// when neither of a matrix's strides is 1.
std::optional<Operand> asColumnMajor(const View &v) {
  int64_t rows = v.sizes[1], cols = v.sizes[2];
  int64_t rs = v.strides[1], cs = v.strides[2];
  int64_t batchStride = v.sizes[0] == 1 ? 0 : v.strides[0];
  if (rows == 1)
    rs = cs == 1 ? std::max<int64_t>(cols, 1) : 1;
  if (cols == 1)
    cs = rs == 1 ? std::max<int64_t>(rows, 1) : 1;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1))
    return Operand{v.data, true, rs, batchStride};
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1))
    return Operand{v.data, false, cs, batchStride};
  return std::nullopt;
}

/// c[b] += a[b] * b[b] for batch x M x K, batch x K x N, batch x M x N views.
void gemm(View a, View b, View c) {
  Session s;
  Libraries &d = s.d;
  int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2], k = a.sizes[2];
  if (batch == 0 || m == 0 || n == 0 || k == 0)
    return;
  // Operands cuBLAS cannot read in place are packed first; C is then
  // accumulated in its packed copy and written back.
  Scratch aScratch, bScratch, cScratch;
  auto operand = [&](View &v, Scratch &scratch) {
    if (auto op = asColumnMajor(v))
      return *op;
    v = packed(d, v, scratch);
    return *asColumnMajor(v);
  };
  View target = c;
  Operand opA = operand(a, aScratch), opB = operand(b, bScratch),
          opC = operand(target, cScratch);
  float one = 1.0f;
  int status;
  if (opC.transposed) {
    // C is stored as the column-major C^T (N x M) = B^T A^T.
    status = d.cublasSgemmStridedBatched(
        d.cublas, opB.transposed ? kCublasOpN : kCublasOpT,
        opA.transposed ? kCublasOpN : kCublasOpT, toInt(n), toInt(m), toInt(k),
        &one, opB.data, toInt(opB.ld), opB.batchStride, opA.data, toInt(opA.ld),
        opA.batchStride, &one, const_cast<float *>(opC.data), toInt(opC.ld),
        opC.batchStride, toInt(batch));
  } else {
    // C is stored column-major (M x N) = A B.
    status = d.cublasSgemmStridedBatched(
        d.cublas, opA.transposed ? kCublasOpT : kCublasOpN,
        opB.transposed ? kCublasOpT : kCublasOpN, toInt(m), toInt(n), toInt(k),
        &one, opA.data, toInt(opA.ld), opA.batchStride, opB.data, toInt(opB.ld),
        opB.batchStride, &one, const_cast<float *>(opC.data), toInt(opC.ld),
        opC.batchStride, toInt(batch));
  }
  if (status != 0)
    fail("cublasSgemmStridedBatched failed (status " + std::to_string(status) +
         ")");
  ++d.calls.gemms;
  if (target.data != c.data)
    transform(d, target, c, 0.0f);
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

enum class ConvKind { Forward, BackwardData, BackwardFilter };

/// A convolution's descriptors and algorithm, by shape, layout and kind.
struct ConvPlan {
  void *x, *w, *y, *conv; // y: the forward output (or its gradient)
  int algo;
  size_t workspace;
};

/// x: N x C x H x W, w: packed K x C/G x KH x KW, y: N x K x OH x OW.
ConvPlan &plan(Libraries &d, ConvKind kind, const View &x, const View &w,
               const View &y, int64_t groups, const int64_t stride[2],
               const int64_t dilation[2], const int64_t pad[2]) {
  static std::map<Key, ConvPlan> cache;
  Key key{int64_t(kind), groups,      stride[0], stride[1],
          dilation[0],   dilation[1], pad[0],    pad[1]};
  for (const View *v : {&x, &w, &y}) {
    key.insert(key.end(), v->sizes.begin(), v->sizes.end());
    key.insert(key.end(), v->strides.begin(), v->strides.end());
  }
  auto [it, inserted] = cache.try_emplace(key);
  ConvPlan &p = it->second;
  if (!inserted)
    return p;
  for (int i = 0; i < 2; ++i)
    if (cudnnOutputSize(x.sizes[2 + i], w.sizes[2 + i], stride[i], dilation[i],
                        pad[i]) != y.sizes[2 + i])
      fail("a GPU convolution's padding is not symmetric (cuDNN's): input " +
           std::to_string(x.sizes[2 + i]) + ", kernel " +
           std::to_string(w.sizes[2 + i]) + ", output " +
           std::to_string(y.sizes[2 + i]));
  p.x = tensorDescriptor(d, x);
  p.y = tensorDescriptor(d, y);
  checkCudnn(d, d.cudnnCreateFilterDescriptor(&p.w),
             "cudnnCreateFilterDescriptor");
  checkCudnn(d,
             d.cudnnSetFilter4dDescriptor(p.w, kCudnnFloat, kCudnnNchw,
                                          toInt(w.sizes[0]), toInt(w.sizes[1]),
                                          toInt(w.sizes[2]), toInt(w.sizes[3])),
             "cudnnSetFilter4dDescriptor");
  checkCudnn(d, d.cudnnCreateConvolutionDescriptor(&p.conv),
             "cudnnCreateConvolutionDescriptor");
  checkCudnn(d,
             d.cudnnSetConvolution2dDescriptor(
                 p.conv, toInt(pad[0]), toInt(pad[1]), toInt(stride[0]),
                 toInt(stride[1]), toInt(dilation[0]), toInt(dilation[1]),
                 kCudnnCrossCorr, kCudnnFloat),
             "cudnnSetConvolution2dDescriptor");
  checkCudnn(d, d.cudnnSetConvolutionGroupCount(p.conv, toInt(groups)),
             "cudnnSetConvolutionGroupCount");
  checkCudnn(d, d.cudnnSetConvolutionMathType(p.conv, kCudnnFmaMath),
             "cudnnSetConvolutionMathType");
  CudnnAlgoPerf perf[16];
  int returned = 0;
  const char *what;
  int status;
  switch (kind) {
  case ConvKind::Forward:
    what = "cudnnGetConvolutionForwardAlgorithm_v7";
    status = d.cudnnGetConvolutionForwardAlgorithm_v7(d.cudnn, p.x, p.w, p.conv,
                                                      p.y, 16, &returned, perf);
    break;
  case ConvKind::BackwardData:
    what = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    status = d.cudnnGetConvolutionBackwardDataAlgorithm_v7(
        d.cudnn, p.w, p.y, p.conv, p.x, 16, &returned, perf);
    break;
  case ConvKind::BackwardFilter:
    what = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    status = d.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        d.cudnn, p.x, p.y, p.conv, p.w, 16, &returned, perf);
    break;
  }
  checkCudnn(d, status, what);
  // The heuristics' order, first that works within the workspace limit
  // and keeps float32 FMA math; ACT_CUDNN_ALGOS=exact: no FFT or Winograd
  // algorithm either (their transforms round differently).
  static const bool exact = [] {
    const char *v = std::getenv("ACT_CUDNN_ALGOS");
    return v && std::string(v) == "exact";
  }();
  static const bool log = std::getenv("ACT_GPU_LIBRARY_LOG") != nullptr;
  auto transformBased = [&](int algo) {
    switch (kind) {
    case ConvKind::Forward: // FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED
      return algo >= 4;
    case ConvKind::BackwardData: // FFT, FFT_TILING, WINOGRAD(_NONFUSED)
      return algo >= 2;
    case ConvKind::BackwardFilter: // FFT, WINOGRAD(_NONFUSED), FFT_TILING
      return algo == 2 || algo >= 4;
    }
    return false;
  };
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == 0 && perf[i].memory <= kMaxWorkspace &&
        perf[i].mathType != /*CUDNN_TENSOR_OP_MATH*/ 1 &&
        perf[i].mathType != /*CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION*/ 2 &&
        !(exact && transformBased(perf[i].algo))) {
      p.algo = perf[i].algo;
      p.workspace = perf[i].memory;
      if (log) {
        auto dims = [](const View &v) {
          std::string s;
          for (int64_t size : v.sizes)
            s += (s.empty() ? "" : "x") + std::to_string(size);
          return s;
        };
        std::fprintf(stderr,
                     "act runtime: %s algorithm %d (workspace %zu B), x %s, "
                     "w %s, y %s, stride %lld, dilation %lld, groups %lld\n",
                     what, p.algo, p.workspace, dims(x).c_str(),
                     dims(w).c_str(), dims(y).c_str(), (long long)stride[0],
                     (long long)dilation[0], (long long)groups);
      }
      return p;
    }
  // None for these layouts: runConv packs the tensors.
  p.algo = -1;
  return p;
}

/// Runs one convolution of `kind` with y accumulated (beta = 1).
void runConv(Libraries &d, ConvKind kind, const View &x, const View &w,
             const View &y, int64_t groups, const int64_t stride[2],
             const int64_t dilation[2], const int64_t pad[2]) {
  ConvPlan &p = plan(d, kind, x, w, y, groups, stride, dilation, pad);
  if (p.algo < 0) {
    // No algorithm reads these strided layouts: the same convolution on
    // packed copies, the output written back.
    if (x.isPacked() && y.isPacked())
      fail("cuDNN has no float32 algorithm for this convolution");
    Scratch xScratch, yScratch;
    View px = packed(d, x, xScratch), py = packed(d, y, yScratch);
    runConv(d, kind, px, w, py, groups, stride, dilation, pad);
    if (kind == ConvKind::Forward && py.data != y.data)
      transform(d, py, y, 0.0f);
    if (kind == ConvKind::BackwardData && px.data != x.data)
      transform(d, px, x, 0.0f);
    return;
  }
  Scratch workspace(p.workspace);
  float one = 1.0f;
  int status;
  switch (kind) {
  case ConvKind::Forward:
    status = d.cudnnConvolutionForward(d.cudnn, &one, p.x, x.data, p.w, w.data,
                                       p.conv, p.algo, workspace.data,
                                       p.workspace, &one, p.y, y.data);
    ++d.calls.convForward;
    break;
  case ConvKind::BackwardData:
    status = d.cudnnConvolutionBackwardData(
        d.cudnn, &one, p.w, w.data, p.y, y.data, p.conv, p.algo, workspace.data,
        p.workspace, &one, p.x, x.data);
    ++d.calls.convBackwardData;
    break;
  case ConvKind::BackwardFilter:
    status = d.cudnnConvolutionBackwardFilter(
        d.cudnn, &one, p.x, x.data, p.y, y.data, p.conv, p.algo, workspace.data,
        p.workspace, &one, p.w, w.data);
    ++d.calls.convBackwardFilter;
    break;
  }
  checkCudnn(d, status, "a cuDNN convolution");
}

/// Merges dims 1 and 2 of a 5-D view (groups, channels) into one when its
/// layout allows; false otherwise.
bool mergeGroups(const View &v5, View &v4) {
  if (v5.sizes[1] != 1 && v5.sizes[2] != 1 &&
      v5.strides[1] != v5.sizes[2] * v5.strides[2])
    return false;
  int64_t channelStride = v5.sizes[2] != 1 ? v5.strides[2] : v5.strides[1];
  if (v5.sizes[2] == 1 && v5.sizes[1] == 1)
    channelStride = 1;
  v4 = View{v5.data,
            {v5.sizes[0], v5.sizes[1] * v5.sizes[2], v5.sizes[3], v5.sizes[4]},
            {v5.strides[0], channelStride, v5.strides[3], v5.strides[4]}};
  return true;
}

/// out[n, g, f] += conv(in[n, g], weight[g, f]) on 5-D views (linalg's
/// conv_2d_ngchw_gfchw; G = 1 for conv_2d_nchw_fchw).
void conv(View in, View weight, View out, const int64_t stride[2],
          const int64_t dilation[2], const int64_t pad[2]) {
  Session s;
  Libraries &d = s.d;
  if (in.numElements() == 0 || weight.numElements() == 0 ||
      out.numElements() == 0)
    return;
  int64_t groups = in.sizes[1];
  Scratch inScratch, weightScratch, outScratch;
  View x, w, y;
  const int64_t inSize[2] = {in.sizes[3], in.sizes[4]},
                kernelSize[2] = {weight.sizes[3], weight.sizes[4]},
                outSize[2] = {out.sizes[3], out.sizes[4]};
  if (getCudnnConvReading(inSize, kernelSize, outSize, stride, dilation, pad,
                          groups == 1) == CudnnConvReading::WeightGradient) {
    // A weight gradient written as a convolution: in = x^T (channels,
    // batch), weight = dy^T, out = dW^T; its stride is the forward
    // convolution's dilation and the other way round.
    // The group dim (of one) dropped, then the first two swapped.
    View x4 = in.without(1), dy = weight.without(0), dw = out.without(1);
    x4.swap01(), dy.swap01(), dw.swap01();
    View target = packed(d, dw, outScratch);
    runConv(d, ConvKind::BackwardFilter, x4, target, dy, 1, dilation, stride,
            pad);
    if (target.data != dw.data)
      transform(d, target, dw, 0.0f);
    return;
  }
  if (!mergeGroups(in, x)) {
    in = packed(d, in, inScratch);
    mergeGroups(in, x);
  }
  // The filter: K = G F, C, KH, KW, packed.
  weight = packed(d, weight, weightScratch);
  w = View{weight.data,
           {weight.sizes[0] * weight.sizes[1], weight.sizes[2], weight.sizes[3],
            weight.sizes[4]},
           {}};
  w = w.packedLike(w.data);
  View target = out;
  if (!mergeGroups(out, y)) {
    target = packed(d, out, outScratch);
    mergeGroups(target, y);
  }
  runConv(d, ConvKind::Forward, x, w, y, groups, stride, dilation, pad);
  if (target.data != out.data)
    transform(d, target, out, 0.0f);
}

} // namespace

bool act::rt::loadCudaLibraries(std::string &error) {
  Libraries &d = libraries();
  error = d.error;
  return d.loaded;
}

void act::rt::setLibraryStream(void *stream) { libraries().stream = stream; }

GpuLibraryCalls act::rt::getGpuLibraryCalls() {
  Libraries &d = libraries();
  std::lock_guard<std::mutex> lock(d.mutex);
  return d.calls;
}

extern "C" {

void _mlir_ciface_act_gpu_kernel_matmul_f32(MemRef<2> *a, MemRef<2> *b,
                                            MemRef<2> *c) {
  auto batched = [](const MemRef<2> &m) {
    View v = viewOf(m);
    v.sizes.insert(v.sizes.begin(), 1);
    v.strides.insert(v.strides.begin(), 0);
    return v;
  };
  gemm(batched(*a), batched(*b), batched(*c));
}

void _mlir_ciface_act_gpu_kernel_batch_matmul_f32(MemRef<3> *a, MemRef<3> *b,
                                                  MemRef<3> *c) {
  gemm(viewOf(*a), viewOf(*b), viewOf(*c));
}

void _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
    MemRef<4> *in, MemRef<4> *weight, MemRef<4> *out, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  // One group: 5-D views with a group dim of one.
  auto grouped = [](const MemRef<4> &m, size_t at) {
    View v = viewOf(m);
    v.sizes.insert(v.sizes.begin() + at, 1);
    v.strides.insert(v.strides.begin() + at, 0);
    return v;
  };
  int64_t stride[2] = {stride0, stride1}, dilation[2] = {dilation0, dilation1},
          pad[2] = {pad0, pad1};
  conv(grouped(*in, 1), grouped(*weight, 0), grouped(*out, 1), stride, dilation,
       pad);
}

void _mlir_ciface_act_gpu_kernel_conv_2d_ngchw_gfchw_f32(
    MemRef<5> *in, MemRef<5> *weight, MemRef<5> *out, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  int64_t stride[2] = {stride0, stride1}, dilation[2] = {dilation0, dilation1},
          pad[2] = {pad0, pad1};
  conv(viewOf(*in), viewOf(*weight), viewOf(*out), stride, dilation, pad);
}

void _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_backward_data_f32(
    MemRef<4> *outGrad, MemRef<4> *weight, MemRef<4> *inGrad, int64_t stride0,
    int64_t stride1, int64_t dilation0, int64_t dilation1, int64_t pad0,
    int64_t pad1) {
  Session s;
  Libraries &d = s.d;
  View dy = viewOf(*outGrad), w = viewOf(*weight), dx = viewOf(*inGrad);
  if (dy.numElements() == 0 || w.numElements() == 0 || dx.numElements() == 0)
    return;
  Scratch weightScratch;
  w = packed(d, w, weightScratch);
  int64_t stride[2] = {stride0, stride1}, dilation[2] = {dilation0, dilation1},
          pad[2] = {pad0, pad1};
  runConv(d, ConvKind::BackwardData, dx, w, dy, 1, stride, dilation, pad);
}

} // extern "C"

const HookSymbol *act::rt::getGpuKernelHooks(size_t &count) {
#define ACT_GPU_KERNEL(name)                                                   \
  {                                                                            \
    "_mlir_ciface_act_gpu_kernel_" #name,                                      \
        reinterpret_cast<void *>(&_mlir_ciface_act_gpu_kernel_##name)          \
  }
  static const HookSymbol hooks[] = {
      ACT_GPU_KERNEL(matmul_f32),
      ACT_GPU_KERNEL(batch_matmul_f32),
      ACT_GPU_KERNEL(conv_2d_nchw_fchw_f32),
      ACT_GPU_KERNEL(conv_2d_ngchw_gfchw_f32),
      ACT_GPU_KERNEL(conv_2d_nchw_fchw_backward_data_f32),
  };
#undef ACT_GPU_KERNEL
  count = sizeof(hooks) / sizeof(hooks[0]);
  return hooks;
}
