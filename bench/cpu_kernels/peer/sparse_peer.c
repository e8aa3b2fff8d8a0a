// The #act.sparse encode's two passes written by hand with AVX-512
// intrinsics: the ceiling act-bench-kernels' lowered encode is held to.
// Pass 1: one bitmap word per 32 elements (a compare per 16); pass 2: each
// 16 elements compressed (vcompressps) and stored under a mask of their
// count. "NT" also tries pass 2 with non-temporal stores of whole lines
// (compressed into a 16 KiB staging buffer first): no gain on this
// machine. Prints, per run, memcpy and both passes, and the encode's rate
// relative to memcpy as act-bench-kernels counts it (input + storage over
// memcpy's 2 x input).
//
//   gcc -O2 -march=native bench/cpu_kernels/peer/sparse_peer.c -o /tmp/sparse_peer
//   /tmp/sparse_peer [MIB] [RUNS]      (needs AVX-512)
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 64;
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  size_t n = mib << 18; // f32 elements
  float *x = aligned_alloc(64, n * 4), *y = aligned_alloc(64, n * 4);
  float *values = aligned_alloc(64, n * 4);
  uint16_t *bitmap = aligned_alloc(64, n / 8);
  srand(1);
  for (size_t i = 0; i < n; i++) // ReLU-like: half zeros, as the bench's
    x[i] = (rand() & 1) ? (float)i : 0.0f;
  memset(y, 1, n * 4);
  memset(values, 1, n * 4);
  memset(bitmap, 0, n / 8);
  static float stage[4096] __attribute__((aligned(64)));
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    memcpy(y, x, n * 4);
    double t1 = now();
    for (size_t w = 0; w < n / 16; w++)
      bitmap[w] = _mm512_cmpneq_epi32_mask(
          _mm512_castps_si512(_mm512_load_ps(x + 16 * w)),
          _mm512_setzero_si512());
    double t2 = now();
    size_t at = 0;
    for (size_t w = 0; w < n / 16; w++) {
      __mmask16 m = bitmap[w];
      int count = __builtin_popcount(m);
      _mm512_mask_storeu_ps(values + at, (__mmask16)((1u << count) - 1),
                            _mm512_maskz_compress_ps(m, _mm512_load_ps(x + 16 * w)));
      at += count;
    }
    double t3 = now();
    size_t staged = 0, out = 0;
    for (size_t w = 0; w < n / 16; w++) {
      __mmask16 m = bitmap[w];
      int count = __builtin_popcount(m);
      _mm512_mask_storeu_ps(stage + staged, (__mmask16)((1u << count) - 1),
                            _mm512_maskz_compress_ps(m, _mm512_load_ps(x + 16 * w)));
      staged += count;
      if (staged >= 2048) {
        size_t full = staged & ~(size_t)15;
        for (size_t j = 0; j < full; j += 16)
          _mm512_stream_ps(values + out + j, _mm512_load_ps(stage + j));
        out += full;
        memmove(stage, stage + full, (staged - full) * 4);
        staged -= full;
      }
    }
    double t4 = now();
    double storage = n / 8.0 + at * 4.0, scale = (n * 4.0 + storage) / (2.0 * n * 4.0);
    printf("memcpy %.2f ms (%.1f GB/s)  bitmap %.2f ms  values %.2f ms  "
           "values NT %.2f ms  encode/memcpy %.2f  with NT %.2f\n",
           (t1 - t0) * 1e3, 2.0 * n * 4 / (t1 - t0) / 1e9, (t2 - t1) * 1e3,
           (t3 - t2) * 1e3, (t4 - t3) * 1e3, (t1 - t0) / (t3 - t1) * scale,
           (t1 - t0) / ((t2 - t1) + (t4 - t3)) * scale);
  }
  return 0;
}
