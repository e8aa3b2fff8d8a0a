#!/usr/bin/env bash
# Builds build/gpu_check: act's GPU encode and decode kernels for every
# encoding (act-gpu-pipeline{results-to-out-params} -> mlir-translate -> llc)
# linked with runtime/ and a checking and timing driver (gpu_check.cpp). The
# binary needs only libc/libdl at run time (CUDA is dlopen'ed), so it can be
# copied to a GPU machine without LLVM and run there.
#
# Two sizes per encoding: CHECK elements (whole tiles and groups plus a
# ragged tail, compared bit for bit with the CPU reference) and BENCH
# elements (timed against a device-to-device copy).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ACT_BUILD_DIR:-$here/build}
out=$build/gpu_check.d
mkdir -p "$out"
llvm=/usr/lib/llvm-22/bin
check=$((1048576 + 1000))
bench=${ACT_GPU_BENCH_ELEMENTS:-268435456}

# name | encoding | the encode takes a seed | decoded element type
encodings=(
  "q1|#act.quant<bits = 1>|seed|f32"
  "q2|#act.quant<bits = 2>|seed|f32"
  "q4|#act.quant<bits = 4>|seed|f32"
  "q8|#act.quant<bits = 8>|seed|f32"
  "q4n|#act.quant<bits = 4, rounding = nearest>||f32"
  "f16|#act.float<format = f16>||f32"
  "bf16|#act.float<format = bf16>||f32"
  "fp10|#act.float<format = fp10>||f32"
  "e4m3|#act.float<format = e4m3>||f32"
  "e5m2|#act.float<format = e5m2>||f32"
  "mask|#act.mask<predicate = positive>||i1"
)
{
  for size in check bench; do
    n=${!size}
    for entry in "${encodings[@]}"; do
      IFS="|" read -r name enc seed decoded <<<"$entry"
      t="tensor<${n}xf32>"
      e="!act.encoded<$t, $enc>"
      if [ -n "$seed" ]; then
        args="%x: $t, %s: i64"; use=", seed %s"
      else
        args="%x: $t"; use=""
      fi
      cat <<MLIR
func.func @enc_${name}_${size}($args) -> $e attributes {llvm.emit_c_interface} {
  %e = act.encode %x, id = 7$use : $t -> $e
  return %e : $e
}
func.func @dec_${name}_${size}(%e: $e) -> tensor<${n}x$decoded> attributes {llvm.emit_c_interface} {
  %d = act.decode %e : $e -> tensor<${n}x$decoded>
  return %d : tensor<${n}x$decoded>
}
MLIR
    done
  done
} > "$out/codec.mlir"
"$build/bin/act-opt" "$out/codec.mlir" \
  -act-gpu-pipeline="chip=${ACT_GPU_CHIP:-sm_90} results-to-out-params=true" \
  -o "$out/codec.llvm.mlir"
"$llvm/mlir-translate" --mlir-to-llvmir "$out/codec.llvm.mlir" -o "$out/codec.ll"
"$llvm/llc" -O3 -filetype=obj -relocation-model=pic "$out/codec.ll" -o "$out/codec.o"
clang++-22 -O2 -std=c++17 -I"$here/runtime/include" \
  -DACT_CHECK_ELEMENTS="$check" -DACT_BENCH_ELEMENTS="$bench" \
  "$here/bench/gpu_kernels/gpu_check.cpp" "$out/codec.o" \
  "$here/runtime/lib/Cuda.cpp" "$here/runtime/lib/CudaLibraries.cpp" \
  "$here/runtime/lib/Memory.cpp" \
  "$here/runtime/lib/Reference.cpp" \
  -ldl -static-libstdc++ -static-libgcc -o "$build/gpu_check"
echo "built $build/gpu_check"
