// act-gpu-pipeline checks its options before compiling anything: an unknown
// chip used to abort in instruction selection, an unknown format printed an
// error and exited 0 with output written.
// RUN: not act-opt %s -act-gpu-pipeline="chip=sm_9999" -o %t.out 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: act-gpu-pipeline option 'chip':0:0: error: act-gpu-pipeline: unknown NVIDIA chip 'sm_9999' (e.g. sm_80, sm_90)
// RUN: not act-opt %s -act-gpu-pipeline="features=+ptx999" -o %t.out 2>&1 | FileCheck %s --check-prefix=FEATURE
// FEATURE: act-gpu-pipeline option 'features':0:0: error: act-gpu-pipeline: unknown PTX feature 'ptx999' (e.g. +ptx80)
// RUN: not act-opt %s -act-gpu-pipeline="features=ptx80" -o %t.out 2>&1 | FileCheck %s --check-prefix=SIGN
// SIGN: error: act-gpu-pipeline: feature 'ptx80' does not start with + or -
// RUN: rm -f %t.fmt && not act-opt %s -act-gpu-pipeline="format=foo" -o %t.fmt 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not test -s %t.fmt
// FORMAT: for the --format option: Cannot find option named 'foo'!
// A known chip and features compile.
// RUN: act-opt %s -act-gpu-pipeline="chip=sm_80 features=+ptx80" | FileCheck %s --check-prefix=OK
// OK: gpu.binary @double_kernel

func.func @double(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  return %y : tensor<1024xf32>
}

