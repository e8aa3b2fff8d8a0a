//===- Kernels.h - compute kernels the CPU pipeline calls -------*- C++ -*-===//
//
// The f32 contractions and convolutions of a training step, which
// convert-linalg-to-act-kernels turns into calls: matrix products through
// oneDNN's GEMM (dnnl_sgemm), convolutions as GEMMs over gathered windows
// (im2col), threaded with OpenMP (libgomp, the runtime oneDNN uses).
//
// Each entry point has linalg's semantics: it accumulates into its output
// (C += A B), reads operands of any strides (packing them first where the
// GEMM needs unit strides), and leaves encodings alone.
//
// Threads: setThreads(n) for every kernel (and oneDNN); results of a kernel
// depend on the thread count only through how oneDNN splits a GEMM's
// reduction (float32 reassociation); act's encodings never depend on it.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_KERNELS_H
#define ACT_RUNTIME_KERNELS_H

#include "act/runtime/Memory.h"

#include <cstddef>
#include <cstdint>

namespace act::rt {

/// A rank-N f32 memref descriptor, laid out as MLIR's (allocated, aligned,
/// offset, sizes, strides).
template <int N> struct MemRef {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// The most threads the kernels take: each OpenMP thread, and oneDNN's
/// scratch per thread, takes address space (act-run --threads=100000 ended
/// in a segfault inside oneDNN under an 8 GB address-space limit).
constexpr int kMaxThreads = 256;

/// The threads every kernel uses from now on (n <= 0: all cores); false,
/// and nothing changed, when n > kMaxThreads.
bool setThreads(int n);
/// The threads kernels use.
int getThreads();

/// out[n, g, f, i, j] += sum over c, u, v of
///   in[n, g, c, i * stride0 + u * dilation0, j * stride1 + v * dilation1] *
///   weight[g, f, c, u, v]
/// on row-major weight and output (linalg.conv_2d_ngchw_gfchw; G = 1 is
/// linalg.conv_2d_nchw_fchw). Chooses a GEMM per image (im2col), a GEMM per
/// output position (few positions, as in weight gradients) or direct loops
/// (tiny reductions, as in depthwise convolutions).
/// The input may be any strided view (inStride, in elements, for n, g, c,
/// h, w; all zero: contiguous), as a transposed or windowed operand is: it is
/// read in place, never packed.
struct ConvShape {
  int64_t n, g, c, h, w; // input
  int64_t f, kh, kw;     // weight: g x f x c x kh x kw
  int64_t oh, ow;        // output: n x g x f x oh x ow
  int64_t stride[2], dilation[2];
  /// Zeros above and left of the input (those below and right follow from
  /// oh, ow): the input is read as if padded, without a padded copy.
  int64_t pad[2] = {0, 0};
  int64_t inStride[5] = {0, 0, 0, 0, 0};
  /// With weightStrided, the weight's (g, f, c, kh, kw) strides, which
  /// PerChannel reads it through (e.g. a weight gradient's transposed
  /// output gradient, in place); without, it is packed g x f x c x kh x kw.
  bool weightStrided = false;
  int64_t weightStride[5] = {0, 0, 0, 0, 0};
  /// The output's (n, g, f) strides, in elements; its rows and columns are
  /// row-major (OH OW contiguous). All zero: contiguous. A weight gradient
  /// written straight into its transposed place (f, n swapped) has them.
  int64_t outStride[3] = {0, 0, 0};
};
void conv2d(const ConvShape &shape, const float *in, const float *weight,
            float *out);

/// The input gradient of the convolution `forward` describes:
///   inGrad[n, g, c, i * stride0 + u * dilation0 - pad0,
///                   j * stride1 + v * dilation1 - pad1] +=
///     outGrad[n, g, f, i, j] * weight[g, f, c, u, v]
/// (positions outside the input dropped), on row-major operands. A GEMM per
/// image, group and band of output rows, weight[g]^T (C KH KW x F) *
/// outGrad (F x P), scattered back into the windows (col2im): no flipped
/// weight, and a strided convolution's gradient is not computed over the
/// zeros of a dilated copy. outGrad is read through `gradStride` (n, g, f,
/// i, j; null: row-major), a band of rows gathered when its rows are not
/// one matrix (the interior of a padded buffer); the others are row-major.
void conv2dBackwardData(const ConvShape &forward, const float *outGrad,
                        const int64_t *gradStride, const float *weight,
                        float *inGrad);
/// Whether conv2d and conv2dBackwardData may run ordinary convolutions
/// (one group, at least 8 channels in and out, kernels up to 7x7, weights
/// up to 1 MB, the per-image GEMM form) on oneDNN's direct convolution
/// primitives, in the blocked layouts they choose, on chunks of images
/// whose blocked copies take about what the GEMMs' gathered windows would
/// (from the counted allocator; at least one image); the GEMMs otherwise.
/// On by default;
/// the convolutions they ran (a count, for tests).
void setConvPrimitives(bool enabled);
int64_t getConvPrimitiveRuns();
/// How conv2d computes a shape: the algorithm whose GEMM (M, N, K) has the
/// largest smallest dimension (then the larger M N); below 4, loops.
///   PerImage:    M = F, N = OH OW, K = C KH KW, per image and group (im2col)
///   PerPosition: M = N, N = F, K = C KH KW, per output position and group
///   PerChannel:  M = F, N = N OH OW, K = KH KW, per input channel and group
enum class ConvAlgorithm { PerImage, PerPosition, PerChannel, Direct };
ConvAlgorithm chooseConvAlgorithm(const ConvShape &shape);

/// C (m x n) += A (m x k) B (k x n), row-major with leading dimensions; A
/// and B transposed when transA/transB.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
          int64_t ldc);

/// dst = src for views of `rank` dims of `sizes` with element strides (any
/// sign: transposed and reversed views of one buffer).
void copy(int64_t rank, const int64_t *sizes, const float *src,
          const int64_t *srcStrides, float *dst, const int64_t *dstStrides);

/// The _mlir_ciface_act_kernel_* entry points, for the JIT's symbol map.
const HookSymbol *getKernelHooks(size_t &count);

} // namespace act::rt

extern "C" {
// The entry points convert-linalg-to-act-kernels calls (C interface:
// descriptor pointers; a convolution's strides, dilations and padding).
void _mlir_ciface_act_kernel_matmul_f32(act::rt::MemRef<2> *a,
                                        act::rt::MemRef<2> *b,
                                        act::rt::MemRef<2> *c);
void _mlir_ciface_act_kernel_batch_matmul_f32(act::rt::MemRef<3> *a,
                                              act::rt::MemRef<3> *b,
                                              act::rt::MemRef<3> *c);
void _mlir_ciface_act_kernel_conv_2d_nchw_fchw_f32(
    act::rt::MemRef<4> *in, act::rt::MemRef<4> *weight, act::rt::MemRef<4> *out,
    int64_t stride0, int64_t stride1, int64_t dilation0, int64_t dilation1,
    int64_t pad0, int64_t pad1);
void _mlir_ciface_act_kernel_conv_2d_ngchw_gfchw_f32(
    act::rt::MemRef<5> *in, act::rt::MemRef<5> *weight, act::rt::MemRef<5> *out,
    int64_t stride0, int64_t stride1, int64_t dilation0, int64_t dilation1,
    int64_t pad0, int64_t pad1);
void _mlir_ciface_act_kernel_conv_2d_nchw_fchw_backward_data_f32(
    act::rt::MemRef<4> *outGrad, act::rt::MemRef<4> *weight,
    act::rt::MemRef<4> *inGrad, int64_t stride0, int64_t stride1,
    int64_t dilation0, int64_t dilation1, int64_t pad0, int64_t pad1);
}

#endif // ACT_RUNTIME_KERNELS_H
