#!/usr/bin/env bash
# Builds build/gpu_check: act's GPU encode kernel (act-gpu-pipeline ->
# mlir-translate -> llc) linked with runtime/ and a checking driver. The
# binary needs only libc/libdl at run time (CUDA is dlopen'ed), so it can be
# copied to a GPU machine without LLVM and run there.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ACT_BUILD_DIR:-$here/build}
out=$build/gpu_check.d
mkdir -p "$out"
llvm=/usr/lib/llvm-22/bin
cat > "$out/codec.mlir" <<'MLIR'
func.func @encode(%x: tensor<1048576xf32>, %s: i64) -> !act.encoded<tensor<1048576xf32>, #act.quant<bits = 4>> attributes {llvm.emit_c_interface} {
  %e = act.encode %x, id = 7, seed %s : tensor<1048576xf32> -> !act.encoded<tensor<1048576xf32>, #act.quant<bits = 4>>
  return %e : !act.encoded<tensor<1048576xf32>, #act.quant<bits = 4>>
}
MLIR
"$build/bin/act-opt" "$out/codec.mlir" -act-gpu-pipeline="chip=${ACT_GPU_CHIP:-sm_90}" -o "$out/codec.llvm.mlir"
"$llvm/mlir-translate" --mlir-to-llvmir "$out/codec.llvm.mlir" -o "$out/codec.ll"
"$llvm/llc" -O3 -filetype=obj -relocation-model=pic "$out/codec.ll" -o "$out/codec.o"
clang++-22 -O2 -std=c++17 -I"$here/runtime/include" \
  "$here/bench/gpu_kernels/gpu_check.cpp" "$out/codec.o" \
  "$here/runtime/lib/Cuda.cpp" "$here/runtime/lib/Memory.cpp" \
  "$here/runtime/lib/Reference.cpp" \
  -ldl -static-libstdc++ -static-libgcc -o "$build/gpu_check"
echo "built $build/gpu_check"
