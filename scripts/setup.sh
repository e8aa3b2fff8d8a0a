#!/usr/bin/env bash
# Idempotent setup for act on Debian 12: installs LLVM/MLIR 22 and the test
# tools from Debian's packages (as root), then configures and builds act.
#
#   scripts/setup.sh            install what is missing, configure, build
#   ACT_SKIP_BUILD=1 scripts/setup.sh   install only
#
# Environment: ACT_BUILD_DIR (default: build), ACT_JOBS (default: nproc),
# ACT_CMAKE_ARGS (more configure arguments, used by a new build directory).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${ACT_BUILD_DIR:-$here/build}
jobs=${ACT_JOBS:-$(nproc)}

pkgs=(
  cmake ninja-build g++ git python3 googletest libgtest-dev
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 clang-format-22
  libclang-rt-22-dev libdnnl-dev libzstd-dev zlib1g-dev
  python3-numpy python3-pytest python3-tqdm python3-pyflakes
  python3-torch python3-torchvision python3-matplotlib python3-sklearn
  # PyTorch's matmuls on OpenBLAS: without it Debian's torch runs them on
  # the reference BLAS (15x slower at 1024^2), which slows the exporter's
  # trace and makes every PyTorch peer of the benchmarks a weak one.
  libopenblas0-pthread
  # Zalando's Fashion-MNIST (30 MB): the short run of the accuracy table in
  # the test command (test/Python/fashion-short.test; act.train's
  # fmnist-* tasks read it from /usr/share/datasets/fashion-mnist).
  dataset-fashion-mnist
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${ACT_SKIP_BUILD:-0}" = 1 ] && exit 0

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$here" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    ${ACT_CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j "$jobs"
