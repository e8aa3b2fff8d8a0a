#!/usr/bin/env bash
# Prepares, on this machine, one folder to copy to a GPU machine that has no
# LLVM (build/gpu_steps): portable act-run (scripts/portable.sh), gpu_check
# (bench/gpu_kernels), and training steps with their CPU results, sized for
# a GPU user (issue 48):
#   mlp_f16, mlp_q4           examples/mlp.mlir, f16 (integer data) and 4-bit
#   vgg, vgg_q4, vgg_q2       the VGG-style CIFAR CNN, batch 256
#   resnet18, resnet18_q4, resnet18_q2   ResNet-18 (CIFAR), batch 256
#   gpt, gpt_q4, gpt_q2       6 decoder blocks, width 512, context 256
#                             (bench/step_speed/models.py; batch $ACT_GPT_BATCH,
#                             default 16)
#   compile_cuda.py           act.compile on CUDA tensors against eager
#                             (issue 49; act's Python package beside it)
# (_q4, _q2: every saved activation at 4 and 2 bits, #act.quant; ACT_GPU_BITS
# names the widths, default "4 2".) Exports
# are kept in build/gpu_exports (the exporter checks every step against
# float64 PyTorch on this CPU: minutes at these batches) and reused. The CPU
# results are act-run's with --chunk-passes=0 (every stage whole, as the GPU
# pipeline computes it). ACT_GPU_MODELS (e.g. "vgg:256") limits the models.
# There, `bash run.sh` (bench/gpu_steps/run.sh) runs them all.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ACT_BUILD_DIR:-$here/build}
out=${ACT_GPU_STEPS_DIR:-$build/gpu_steps}
exports=${ACT_GPU_EXPORTS_DIR:-$build/gpu_exports}
models=${ACT_GPU_MODELS:-"vgg:256 resnet18:256 gpt:${ACT_GPT_BATCH:-16}"}
[ -x "$build/bin/act-opt" ] || ACT_BUILD_DIR=$build "$here/scripts/setup.sh"
"$here/scripts/portable.sh"
ACT_BUILD_DIR=$build bash "$here/bench/gpu_kernels/build.sh"
rm -rf "$out"
mkdir -p "$out/steps" "$out/cpu" "$exports"
cp "$build/gpu_check" "${ACT_PORTABLE_DIR:-$here/build-portable}/act-portable.tar.xz" "$out/"
cp "$here"/bench/gpu_steps/{run.sh,compare.py,ncu_kernels.py,torch_steps.py,inputs.py,reference.py,compile_cuda.py} "$here/bench/step_speed/models.py" "$out/"
# act.compile on CUDA tensors (compile_cuda.py): act's Python package, and
# 12,800 Fashion-MNIST training images where Debian's package is installed.
cp -r "$here/python/act" "$out/act"
find "$out/act" -name __pycache__ -prune -exec rm -rf {} +
${ACT_PYTHON:-/usr/bin/python3} - "$out/fmnist.npz" <<'PY' || true
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
import numpy as np
from act.train import FASHION_MNIST, _idx
x = _idx(f"{FASHION_MNIST}/train-images-idx3-ubyte.gz")[:12800]
y = _idx(f"{FASHION_MNIST}/train-labels-idx1-ubyte.gz")[:12800]
np.savez_compressed(sys.argv[1], x=x, y=y)
PY
opt=$build/bin/act-opt
run=$build/bin/act-run
# Debian's python3, with the packages setup.sh installs (numpy, torch).
python=${ACT_PYTHON:-/usr/bin/python3}
s=$out/steps
list=(mlp_f16 mlp_q4)
: > "$out/models"
for model in $models; do
  name=${model%:*} batch=${model#*:}
  dir=$exports/${name}_b$batch
  if [ ! -f "$dir/$name.mlir" ]; then
    rm -rf "$dir"
    (cd "$here/python" && ACT_BIN_DIR=$build/bin $python -m act.export \
       "$here/bench/step_speed/models.py:$name" --batch "$batch" -o "$dir" >/dev/null)
  fi
  cp "$dir/$name.mlir" "$s/$name.mlir"
  # The inputs are not copied: inputs.py writes them from the manifest
  # (deterministically, here and there).
  $python -c "import json, sys
m = json.load(open(sys.argv[1]))
json.dump({k: m[k] for k in ('arguments', 'updated_buffers')}, open(sys.argv[2], 'w'))" "$dir/$name.json" "$s/$name.json"
  list+=("$name")
  for bits in ${ACT_GPU_BITS:-4 2}; do
    $opt "$s/$name.mlir" "-act-insert-encode-decode=encoding=#act.quant<bits=$bits>" -o "$s/${name}_q$bits.mlir"
    list+=("${name}_q$bits")
  done
  echo "$name $batch" >> "$out/models"
done
$opt "$here/examples/mlp.mlir" "-act-insert-encode-decode=encoding='#act.float<format = f16>' exclude=1" -o "$s/mlp_f16.mlir"
$opt "$here/examples/mlp.mlir" -act-insert-encode-decode -o "$s/mlp_q4.mlir"
cd "$out"
while read -r name batch; do
  $python inputs.py "steps/$name.json" "inputs/$name" > "steps/$name.inputs"
done < models
# The float64 PyTorch results of the models in ACT_GPU_REFERENCE (default
# vgg; float64 on this CPU takes minutes for the larger ones), for the GPU's
# and the CPU's error against float64.
for name in ${ACT_GPU_REFERENCE-vgg}; do
  grep -q "^$name " models || continue
  $python reference.py models.py "$name" "steps/$name.json" "inputs/$name" "reference_$name.npz"
done
# Each step's act-run arguments (its data), one per line in steps/STEP.args,
# which run.sh reads too; steps/list names the steps in order.
printf '%s\n' "${list[@]}" > steps/list
while read -r step; do
  case $step in
    mlp_f16) echo --init=int ;;
    mlp_q4) ;;
    *) echo "--inputs=$(cat "steps/${step%_q*}.inputs")" ;;
  esac > "steps/$step.args"
  mapfile -t args < "steps/$step.args"
  echo "cpu: $step"
  "$run" "steps/$step.mlir" "${args[@]}" --chunk-passes=0 --output-dir="cpu/$step" | grep -E "^(time|memory)"
done < steps/list
# run.sh writes the inputs again there, and compares with a summary of the
# CPU's results (the device tool carries 64 MiB).
$python compare.py --summarize cpu cpu.npz
for ref in reference_*.npz; do
  [ -f "$ref" ] && echo "CPU against float64 ($ref):" && { $python compare.py "$ref" cpu || true; }
done
rm -rf inputs cpu
echo "gpu_steps: $out ($(du -sh "$out" | cut -f1)); on the GPU machine: bash run.sh"
