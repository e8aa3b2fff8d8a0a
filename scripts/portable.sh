#!/usr/bin/env bash
# act-run and act's C API for a GPU machine without LLVM 22 (a cloud GPU
# box, a lab server): act-run and libActCAPI.so linked with MLIR's and
# LLVM's static libraries (-DACT_STATIC_LLVM=ON, CMakeLists.txt), packed
# with the two shared libraries they still need that such a machine may
# lack (oneDNN's, GNU OpenMP's) into build-portable/act-portable.tar.xz:
#
#   bin/act-run   lib/libActCAPI.so   lib/libdnnl.so.2   lib/libgomp.so.1
#
# `ACT_LIB_DIR=lib python3 -c "import act; act.compile(model.cuda(), ...)"`
# there trains through act.compile on CUDA tensors (python/ beside it:
# bench/gpu_steps/compile_cuda.py).
#
# Unpack it anywhere and run `LD_LIBRARY_PATH=lib bin/act-run STEP.mlir
# --device=gpu` there (CUDA through the driver's libcuda.so.1, PTX compiled
# by its JIT; libdevice from /usr/local/cuda/nvvm/libdevice). The CPU mode
# there still wants MLIR's runner libraries (libmlir_c_runner_utils.so,
# libmlir_async_runtime.so), which link libLLVM: use it for --device=gpu.
# bench/gpu_steps/ uses this package.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${ACT_PORTABLE_DIR:-$here/build-portable}
ACT_SKIP_BUILD=1 "$here/scripts/setup.sh"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DACT_STATIC_LLVM=ON \
    -DCMAKE_CXX_FLAGS="-ffunction-sections -fdata-sections" \
    "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--gc-sections -static-libstdc++ -static-libgcc"
fi
cmake --build "$build" --target act-run ActCAPI -j "${ACT_JOBS:-$(nproc)}"
# Nothing of LLVM's or MLIR's shared libraries may be left.
for binary in "$build/bin/act-run" "$build/lib/libActCAPI.so"; do
  if ldd "$binary" | grep -E "libLLVM|libMLIR|libz3"; then
    echo "portable: $binary still links the libraries above" >&2
    exit 1
  fi
done
pack=$(mktemp -d)
mkdir -p "$pack/bin" "$pack/lib"
strip -o "$pack/bin/act-run" "$build/bin/act-run"
strip -o "$pack/lib/libActCAPI.so" "$build/lib/libActCAPI.so"
for lib in libdnnl.so.2 libgomp.so.1; do
  cp -L "$(ldd "$build/bin/act-run" | awk -v l=$lib '$1 == l {print $3}')" "$pack/lib/"
done
tar -C "$pack" -cJf "$build/act-portable.tar.xz" bin lib
rm -rf "$pack"
echo "portable: $build/act-portable.tar.xz ($(du -h "$build/act-portable.tar.xz" | cut -f1))"
