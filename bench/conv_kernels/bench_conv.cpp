//===- bench_conv.cpp - act's convolution kernels next to oneDNN's --------===//
//
// For the VGG-style CNN's convolutions (batch 16, 3x3, padding 1): the
// forward convolution and the input gradient as act's GEMM kernels compute
// them (act::rt::conv2d: GEMMs over gathered windows;
// act::rt::conv2dBackwardData: GEMM + col2im; act::rt::setConvPrimitives
// (false)), as act's kernels dispatch them (the primitives below where they
// apply), and oneDNN's direct convolution primitives in the blocked layouts
// oneDNN chooses (format "any"), reorders from and to NCHW included, as
// PyTorch 1.13 runs them (ONEDNN_VERBOSE=1 shows jit:avx512_core on
// aBcd16b), all on one thread in the same run. Prints median times and the
// ratios to oneDNN (docs/benchmarks.md).
//
//   act-bench-conv [runs]
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Kernels.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check(dnnl_status_t status, const char *what) {
  if (status != dnnl_success) {
    std::fprintf(stderr, "act-bench-conv: oneDNN failed: %s (%d)\n", what,
                 int(status));
    std::exit(1);
  }
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// A plain tensor and its blocked copy, with the reorders between them.
struct Operand {
  dnnl_memory_t plain = nullptr, blocked = nullptr;
  dnnl_primitive_t in = nullptr, out = nullptr;
};

Operand makeOperand(dnnl_engine_t engine, const dnnl_memory_desc_t *plainDesc,
                    const dnnl_memory_desc_t *blockedDesc, float *data) {
  Operand o;
  check(dnnl_memory_create(&o.plain, plainDesc, engine, data), "memory");
  check(
      dnnl_memory_create(&o.blocked, blockedDesc, engine, DNNL_MEMORY_ALLOCATE),
      "memory");
  dnnl_primitive_desc_t pd;
  check(dnnl_reorder_primitive_desc_create(&pd, plainDesc, engine, blockedDesc,
                                           engine, nullptr),
        "reorder");
  check(dnnl_primitive_create(&o.in, pd), "reorder");
  dnnl_primitive_desc_destroy(pd);
  check(dnnl_reorder_primitive_desc_create(&pd, blockedDesc, engine, plainDesc,
                                           engine, nullptr),
        "reorder");
  check(dnnl_primitive_create(&o.out, pd), "reorder");
  dnnl_primitive_desc_destroy(pd);
  return o;
}

void reorder(dnnl_stream_t stream, dnnl_primitive_t r, dnnl_memory_t from,
             dnnl_memory_t to) {
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  check(dnnl_primitive_execute(r, stream, 2, args), "reorder");
}

} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 11;
  act::rt::setThreads(1);
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine");
  check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags),
        "stream");
  std::printf("| layer (batch 16, 3x3, pad 1) | pass | act GEMMs | act as "
              "dispatched | oneDNN direct (blocked, reorders included) | "
              "GEMMs / oneDNN | dispatched / oneDNN |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  struct Layer {
    int64_t c, h, f;
  } layers[] = {{3, 32, 32},  {32, 32, 32}, {32, 16, 64},
                {64, 16, 64}, {64, 8, 128}, {128, 8, 128}};
  for (const Layer &l : layers) {
    const int64_t n = 16, k = 3, h = l.h;
    std::vector<float> x(n * l.c * h * h), w(l.f * l.c * k * k),
        y(n * l.f * h * h), dx(x.size());
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float &v : x)
      v = dist(rng);
    for (float &v : w)
      v = dist(rng);
    for (float &v : y)
      v = dist(rng);
    act::rt::ConvShape s{n, 1, l.c, h,      h,      l.f,   k,
                         k, h, h,   {1, 1}, {1, 1}, {1, 1}};

    dnnl_dims_t src{n, l.c, h, h}, wei{l.f, l.c, k, k}, dst{n, l.f, h, h};
    dnnl_dims_t strides{1, 1}, pad{1, 1};
    dnnl_memory_desc_t srcPlain, weiPlain, dstPlain, srcAny, weiAny, dstAny;
    check(dnnl_memory_desc_init_by_tag(&srcPlain, 4, src, dnnl_f32, dnnl_nchw),
          "md");
    check(dnnl_memory_desc_init_by_tag(&weiPlain, 4, wei, dnnl_f32, dnnl_oihw),
          "md");
    check(dnnl_memory_desc_init_by_tag(&dstPlain, 4, dst, dnnl_f32, dnnl_nchw),
          "md");
    check(dnnl_memory_desc_init_by_tag(&srcAny, 4, src, dnnl_f32,
                                       dnnl_format_tag_any),
          "md");
    check(dnnl_memory_desc_init_by_tag(&weiAny, 4, wei, dnnl_f32,
                                       dnnl_format_tag_any),
          "md");
    check(dnnl_memory_desc_init_by_tag(&dstAny, 4, dst, dnnl_f32,
                                       dnnl_format_tag_any),
          "md");
    // Forward, accumulating into the output like linalg (a sum post-op).
    dnnl_convolution_desc_t fwd;
    check(dnnl_convolution_forward_desc_init(
              &fwd, dnnl_forward_training, dnnl_convolution_direct, &srcAny,
              &weiAny, nullptr, &dstAny, strides, pad, pad),
          "forward desc");
    dnnl_post_ops_t postOps;
    dnnl_primitive_attr_t attr;
    check(dnnl_post_ops_create(&postOps), "post ops");
    check(dnnl_post_ops_append_sum(postOps, 1.0f), "sum");
    check(dnnl_primitive_attr_create(&attr), "attr");
    check(dnnl_primitive_attr_set_post_ops(attr, postOps), "attr");
    dnnl_primitive_desc_t fwdPd, bwdPd;
    check(dnnl_primitive_desc_create(&fwdPd, &fwd, attr, engine, nullptr),
          "forward");
    dnnl_primitive_t fwdPrim, bwdPrim;
    check(dnnl_primitive_create(&fwdPrim, fwdPd), "forward");
    dnnl_convolution_desc_t bwd;
    check(dnnl_convolution_backward_data_desc_init(
              &bwd, dnnl_convolution_direct, &srcAny, &weiAny, &dstAny, strides,
              pad, pad),
          "backward desc");
    check(dnnl_primitive_desc_create(&bwdPd, &bwd, nullptr, engine, fwdPd),
          "backward");
    check(dnnl_primitive_create(&bwdPrim, bwdPd), "backward");
    auto desc = [](dnnl_primitive_desc_t pd, dnnl_query_t what) {
      return *dnnl_primitive_desc_query_md(pd, what, 0);
    };
    dnnl_memory_desc_t fs = desc(fwdPd, dnnl_query_src_md),
                       fw = desc(fwdPd, dnnl_query_weights_md),
                       fd = desc(fwdPd, dnnl_query_dst_md),
                       bs = desc(bwdPd, dnnl_query_diff_src_md),
                       bw = desc(bwdPd, dnnl_query_weights_md),
                       bd = desc(bwdPd, dnnl_query_diff_dst_md);
    std::vector<float> out(y.size()), grad(dx.size());
    Operand fx = makeOperand(engine, &srcPlain, &fs, x.data());
    Operand fW = makeOperand(engine, &weiPlain, &fw, w.data());
    Operand fy = makeOperand(engine, &dstPlain, &fd, out.data());
    Operand bx = makeOperand(engine, &srcPlain, &bs, grad.data());
    Operand bW = makeOperand(engine, &weiPlain, &bw, w.data());
    Operand by = makeOperand(engine, &dstPlain, &bd, y.data());

    std::vector<double> actFwd, dnnlFwd, actBwd, dnnlBwd, dispFwd, dispBwd;
    for (int r = 0; r < runs; ++r) {
      std::fill(out.begin(), out.end(), 0.0f);
      act::rt::setConvPrimitives(false);
      double t0 = nowMs();
      act::rt::conv2d(s, x.data(), w.data(), out.data());
      actFwd.push_back(nowMs() - t0);
      t0 = nowMs();
      act::rt::conv2dBackwardData(s, y.data(), nullptr, w.data(), grad.data());
      actBwd.push_back(nowMs() - t0);
      act::rt::setConvPrimitives(true);
      t0 = nowMs();
      act::rt::conv2d(s, x.data(), w.data(), out.data());
      dispFwd.push_back(nowMs() - t0);
      t0 = nowMs();
      act::rt::conv2dBackwardData(s, y.data(), nullptr, w.data(), grad.data());
      dispBwd.push_back(nowMs() - t0);
      std::fill(out.begin(), out.end(), 0.0f);
      t0 = nowMs();
      reorder(stream, fx.in, fx.plain, fx.blocked);
      reorder(stream, fW.in, fW.plain, fW.blocked);
      reorder(stream, fy.in, fy.plain, fy.blocked);
      dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, fx.blocked},
                                {DNNL_ARG_WEIGHTS, fW.blocked},
                                {DNNL_ARG_DST, fy.blocked}};
      check(dnnl_primitive_execute(fwdPrim, stream, 3, args), "forward");
      reorder(stream, fy.out, fy.blocked, fy.plain);
      check(dnnl_stream_wait(stream), "wait");
      dnnlFwd.push_back(nowMs() - t0);

      std::fill(grad.begin(), grad.end(), 0.0f);
      t0 = nowMs();
      act::rt::conv2dBackwardData(s, y.data(), nullptr, w.data(), grad.data());
      actBwd.push_back(nowMs() - t0);
      t0 = nowMs();
      reorder(stream, by.in, by.plain, by.blocked);
      reorder(stream, bW.in, bW.plain, bW.blocked);
      dnnl_exec_arg_t bargs[] = {{DNNL_ARG_DIFF_DST, by.blocked},
                                 {DNNL_ARG_WEIGHTS, bW.blocked},
                                 {DNNL_ARG_DIFF_SRC, bx.blocked}};
      check(dnnl_primitive_execute(bwdPrim, stream, 3, bargs), "backward");
      reorder(stream, bx.out, bx.blocked, bx.plain);
      check(dnnl_stream_wait(stream), "wait");
      dnnlBwd.push_back(nowMs() - t0);
    }
    const char *impl = nullptr;
    dnnl_primitive_desc_query(fwdPd, dnnl_query_impl_info_str, 0, &impl);
    std::printf("| %lld -> %lld channels, %lldx%lld (%s) | forward | %.3f ms | "
                "%.3f ms | %.3f ms | %.2f | %.2f |\n",
                (long long)l.c, (long long)l.f, (long long)h, (long long)h,
                impl, median(actFwd), median(dispFwd), median(dnnlFwd),
                median(actFwd) / median(dnnlFwd),
                median(dispFwd) / median(dnnlFwd));
    std::printf("| | input gradient | %.3f ms | %.3f ms | %.3f ms | %.2f | "
                "%.2f |\n",
                median(actBwd), median(dispBwd), median(dnnlBwd),
                median(actBwd) / median(dnnlBwd),
                median(dispBwd) / median(dnnlBwd));
  }
  return 0;
}
