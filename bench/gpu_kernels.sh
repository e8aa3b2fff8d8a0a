#!/usr/bin/env bash
# act's GPU kernels on this machine's NVIDIA GPU, one command: builds act
# (scripts/setup.sh, when build/bin/act-opt is missing) and the standalone
# checker (bench/gpu_kernels/build.sh), then runs it:
#  - every encoding's GPU encode and decode against the CPU reference, bit
#    for bit (2^20 + 1000 elements: whole tiles and a ragged tail);
#  - encode and decode bandwidth of 2^28 f32 elements in device memory, as a
#    ratio of a device-to-device copy of the input measured in the same run
#    (goal on an H100: 0.85).
# Exit status: 0 all agree, 2 a mismatch, 1 no GPU or driver (with a message).
#
#   bench/gpu_kernels.sh                      sm_90 (H100)
#   ACT_GPU_CHIP=sm_80 bench/gpu_kernels.sh   A100
#   ACT_GPU_BENCH_ELEMENTS=67108864 ...       a smaller timed size
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${ACT_BUILD_DIR:-$here/build}
if [ ! -x "$build/bin/act-opt" ]; then
  ACT_BUILD_DIR=$build "$here/scripts/setup.sh"
fi
ACT_BUILD_DIR=$build bash "$here/bench/gpu_kernels/build.sh"
exec "$build/gpu_check"
