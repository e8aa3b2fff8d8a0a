#!/usr/bin/env bash
# On a GPU machine, in the folder bench/gpu_steps/prepare.sh made: act's GPU
# kernels against the CPU reference (gpu_check: bit for bit, and bandwidth
# as a ratio of a device copy), then every prepared step with
# `act-run --device=gpu` (median of 10 steps, with the arguments
# prepare.sh wrote in steps/STEP.args), its results against the CPU's
# (compare.py), the 2-bit VGG step's kernel time by launch shape where
# Nsight Compute is installed (profile.py), and PyTorch eager on the same
# GPU, models and batches when python3 has torch with CUDA
# (torch_steps.py). Writes everything to stdout.
set -uo pipefail
cd "$(dirname "$0")"
tar -xJf act-portable.tar.xz
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L 2>/dev/null
echo "== gpu_check"
./gpu_check
status=$?
echo "== steps (act-run --device=gpu)"
while read -r step; do
  mapfile -t args < "steps/$step.args"
  echo "-- $step"
  # (act-run looks for MLIR's CPU runner library, which the GPU mode does
  # not use: its message is dropped.)
  bin/act-run "steps/$step.mlir" "${args[@]}" --repeat=10 --device=gpu \
    --output-dir="gpu/$step" 2>&1 |
    grep -E "^(loss|time|memory|act-run)" | grep -v "MemoryBuffer" || status=1
done < steps/list
echo "== GPU results against the CPU's"
python3 compare.py cpu gpu || status=1
# Kernel time by launch shape of the 2-bit VGG step (one step), where
# Nsight Compute is installed.
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu" ] && grep -qx vgg_q2 steps/list; then
  echo "== ncu: vgg_q2, kernel time by launch shape"
  mapfile -t args < steps/vgg_q2.args
  "$ncu" --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    --csv bin/act-run steps/vgg_q2.mlir \
    "${args[@]}" --repeat=1 --device=gpu --output-dir=gpu/profile \
    > profile.csv 2> /dev/null
  python3 profile.py profile.csv 15 || status=1
  # The CSV itself, where the caller collects files (the device tool's $OUT).
  [ -n "${OUT:-}" ] && cp profile.csv "$OUT/"
fi
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "== PyTorch eager, the same models and batches"
  python3 torch_steps.py
fi
exit $status
