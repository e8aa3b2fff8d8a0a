//===- CudaLibraries.h - GPU contractions via cuBLAS and cuDNN --*- C++ -*-===//
//
// The GPU counterparts of Kernels.h: convert-linalg-to-act-kernels
// {target=gpu} turns f32 linalg.matmul, linalg.batch_matmul and the 2-D
// convolutions (forward, and the input gradient it recognizes) of a step
// lowered by act-gpu-pipeline into calls of _mlir_ciface_act_gpu_kernel_*,
// which run them through cuBLAS (cublasSgemmStridedBatched) and cuDNN
// (cudnnConvolutionForward / BackwardData / BackwardFilter), as the CPU
// pipeline runs them through oneDNN. Same semantics as the CPU kernels:
// the output accumulates (beta = 1), operands are any strided views (read
// in place where the library can, otherwise packed first with
// cudnnTransformTensor into scratch from the counted allocator), results
// in float32 without TF32 (CUBLAS_DEFAULT_MATH, CUDNN_FMA_MATH), so they
// agree with the CPU's within float32 reassociation.
//
// A convolution whose kernel is larger than its output is a weight
// gradient written as a convolution (the exporter's form: the batch is the
// reduced channel, the output gradient the kernel); it runs as
// cudnnConvolutionBackwardFilter of the forward convolution it came from.
//
// Both libraries are loaded with dlopen at the first call: the paths in
// ACT_CUBLAS_LIBRARY / ACT_CUDNN_LIBRARY if set (the tests' host stand-in,
// runtime/test/FakeCudaLibraries.cpp), else libcublas.so.{13,12} and
// libcudnn.so.9 from the loader's path (LD_LIBRARY_PATH: a PyTorch
// installation's nvidia/*/lib folders), then /usr/local/cuda/lib64. Without
// them the first call says what was tried and aborts; loadCudaLibraries()
// says so without aborting (act-run checks it before compiling).
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_CUDALIBRARIES_H
#define ACT_RUNTIME_CUDALIBRARIES_H

#include "act/runtime/Kernels.h"
#include "act/runtime/Memory.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace act::rt {

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t.
struct CudnnAlgoPerf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

/// cuDNN's output size of a convolution along one dim (its padding is
/// symmetric; act's kernels pad above and left, the rest implied).
inline int64_t cudnnOutputSize(int64_t in, int64_t kernel, int64_t stride,
                               int64_t dilation, int64_t pad) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

/// How the GPU runtime runs a convolution (linalg's semantics) of `in`
/// (h, w) by a kernel (kh, kw) into `out` (oh, ow) through cuDNN: as the
/// weight gradient of the convolution it transposes (cudnnConvolution-
/// BackwardFilter, one group only: preferred when the kernel is larger
/// than the output, the exporter's weight gradients), as a forward
/// convolution, or not at all (cuDNN's symmetric padding gives other
/// sizes both ways). Both readings compute the same sums.
/// convert-linalg-to-act-kernels{gpu} calls only what this accepts.
enum class CudnnConvReading { None, Forward, WeightGradient };
inline CudnnConvReading
getCudnnConvReading(const int64_t in[2], const int64_t kernel[2],
                    const int64_t out[2], const int64_t stride[2],
                    const int64_t dilation[2], const int64_t pad[2],
                    bool oneGroup) {
  auto fits = [&](const int64_t k[2], const int64_t o[2], const int64_t s[2],
                  const int64_t d[2]) {
    return cudnnOutputSize(in[0], k[0], s[0], d[0], pad[0]) == o[0] &&
           cudnnOutputSize(in[1], k[1], s[1], d[1], pad[1]) == o[1];
  };
  bool weightGradient = oneGroup && fits(out, kernel, dilation, stride);
  if (weightGradient && kernel[0] * kernel[1] > out[0] * out[1])
    return CudnnConvReading::WeightGradient;
  if (fits(kernel, out, stride, dilation))
    return CudnnConvReading::Forward;
  return weightGradient ? CudnnConvReading::WeightGradient
                        : CudnnConvReading::None;
}

/// Loads cuBLAS and cuDNN and creates their handles. Idempotent; false and
/// the reason when it cannot.
bool loadCudaLibraries(std::string &error);

/// The stream the library calls are queued on (default: null, CUDA's
/// legacy default stream, which the lowered step's streams order with).
void setLibraryStream(void *stream);

/// Library calls made so far, by kind (for tests).
struct GpuLibraryCalls {
  int64_t gemms = 0;
  int64_t convForward = 0, convBackwardData = 0, convBackwardFilter = 0;
  /// Operands packed (cudnnTransformTensor) because the library could not
  /// read them in place.
  int64_t packs = 0;
};
GpuLibraryCalls getGpuLibraryCalls();

/// The _mlir_ciface_act_gpu_kernel_* entry points, for the JIT's symbol
/// map.
const HookSymbol *getGpuKernelHooks(size_t &count);

} // namespace act::rt

extern "C" {
void _mlir_ciface_act_gpu_kernel_matmul_f32(act::rt::MemRef<2> *a,
                                            act::rt::MemRef<2> *b,
                                            act::rt::MemRef<2> *c);
void _mlir_ciface_act_gpu_kernel_batch_matmul_f32(act::rt::MemRef<3> *a,
                                                  act::rt::MemRef<3> *b,
                                                  act::rt::MemRef<3> *c);
void _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_f32(
    act::rt::MemRef<4> *in, act::rt::MemRef<4> *weight, act::rt::MemRef<4> *out,
    int64_t stride0, int64_t stride1, int64_t dilation0, int64_t dilation1,
    int64_t pad0, int64_t pad1);
void _mlir_ciface_act_gpu_kernel_conv_2d_ngchw_gfchw_f32(
    act::rt::MemRef<5> *in, act::rt::MemRef<5> *weight, act::rt::MemRef<5> *out,
    int64_t stride0, int64_t stride1, int64_t dilation0, int64_t dilation1,
    int64_t pad0, int64_t pad1);
void _mlir_ciface_act_gpu_kernel_conv_2d_nchw_fchw_backward_data_f32(
    act::rt::MemRef<4> *outGrad, act::rt::MemRef<4> *weight,
    act::rt::MemRef<4> *inGrad, int64_t stride0, int64_t stride1,
    int64_t dilation0, int64_t dilation1, int64_t pad0, int64_t pad1);
}

#endif // ACT_RUNTIME_CUDALIBRARIES_H
