// A chunk-bytes option that is not positive is an error at the option,
// with a non-zero exit, for the four passes that split a batch into chunks;
// so is act-chunk-in-passes' max-passes.
// RUN: not act-opt %s -act-chunk-batch=chunk-bytes=0 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: not act-opt %s -act-in-place=chunk-bytes=-5 2>&1 | FileCheck %s --check-prefix=INPLACE
// RUN: not act-opt %s -act-tile-decoded-convolutions=chunk-bytes=0 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not act-opt %s -act-chunk-in-passes=chunk-bytes=0 2>&1 | FileCheck %s --check-prefix=PASSES
// RUN: not act-opt %s -act-chunk-in-passes=max-passes=0 2>&1 | FileCheck %s --check-prefix=MAXPASSES
// BATCH: act-chunk-batch option 'chunk-bytes':0:0: error: act-chunk-batch: chunk-bytes must be positive, got 0
// INPLACE: act-in-place option 'chunk-bytes':0:0: error: act-in-place: chunk-bytes must be positive, got -5
// TILE: act-tile-decoded-convolutions option 'chunk-bytes':0:0: error: act-tile-decoded-convolutions: chunk-bytes must be positive, got 0
// PASSES: act-chunk-in-passes option 'chunk-bytes':0:0: error: act-chunk-in-passes: chunk-bytes must be positive, got 0
// MAXPASSES: act-chunk-in-passes option 'max-passes':0:0: error: act-chunk-in-passes: max-passes must be positive, got 0

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
