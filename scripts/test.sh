#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test
# (lit + FileCheck regression tests and the gtest unit tests, via check-act).
#
#   scripts/test.sh             the normal build (build/) and every test, then
#                               the ISA-dependent ones capped at AVX2
#   scripts/test.sh --sanitize  an ASan + UBSan build (build-asan/) of act's
#                               C++ and every test on it; any report fails
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --sanitize ]; then
  export ACT_BUILD_DIR=${ACT_BUILD_DIR:-$here/build-asan}
  export ACT_CMAKE_ARGS="-DACT_SANITIZE=ON ${ACT_CMAKE_ARGS:-}"
  # MLIR and LLVM (Debian's shared libraries) are not instrumented: leaks
  # they hold until exit by design are not act's, and LLVM's allocator
  # poisons memory in the inline code act's instrumented objects carry but
  # not in the libraries (false reports); everything else stops.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:abort_on_error=1:halt_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
fi
build_dir=${ACT_BUILD_DIR:-$here/build}
"$here/scripts/setup.sh"
# PyTorch 2 beside Debian's 1.13 (a Debian 13 root, scripts/torch2.sh):
# test/Python/torch2.test runs the exporter's oracle under it. Without
# root or Debian 13's archive that test is UNSUPPORTED, said here;
# ACT_TORCH2=0 skips making the root.
if [ "${ACT_TORCH2:-1}" != 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    "$here/scripts/torch2.sh" setup ||
      echo "test.sh: warning: no PyTorch 2 root (scripts/torch2.sh setup failed): torch2.test will be UNSUPPORTED" >&2
  else
    echo "test.sh: warning: not root, no PyTorch 2 root: torch2.test will be UNSUPPORTED" >&2
  fi
fi
# The C++ is clang-formatted (.clang-format, clang-format-22).
"$here/scripts/format.sh" --check
cmake --build "$build_dir" --target check-act
# Again on an AVX2-only machine's code paths, whatever this CPU has: oneDNN
# capped at AVX2 and act's JIT without AVX-512 (act-run --cpu-features),
# for the tests whose kernels or code depend on the instruction set (the
# executed steps, the lowering's bit-exact unit tests). The Python oracle,
# the emulated GPU kernels' and the every-group-size unit tests run once
# (GTEST_FILTER: lit's --filter-out sees gtest binaries' shards, not their
# tests).
echo "test.sh: the ISA-dependent tests again, capped at AVX2"
ONEDNN_MAX_CPU_ISA=AVX2 ACT_CPU_FEATURES=-avx512f \
  GTEST_FILTER='-*GpuKernelsEmulated*:*GpuQuantEmulated*:GroupSizes/*' \
  /usr/lib/llvm-22/bin/lit -sv -j "${ACT_JOBS:-$(nproc)}" \
  "$build_dir"/test/{Integration,Dialect,Conversion,Codegen,GPU,Pipelines,Tools} \
  "$build_dir"/test/Unit
