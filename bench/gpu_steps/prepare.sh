#!/usr/bin/env bash
# Prepares, on this machine, one folder to copy to a GPU machine that has no
# LLVM (build/gpu_steps, about 40 MB): portable act-run (scripts/portable.sh),
# gpu_check (bench/gpu_kernels), and training steps with their CPU results:
#   mlp_f16, mlp_q4       examples/mlp.mlir, f16 (integer data) and 4-bit
#   vgg, vgg_q4, vgg_q2   the VGG-style CIFAR CNN, batch 16 (bench/step_speed)
#   encoder, encoder_q4   two pre-norm encoder blocks, batch 8
# The CPU results are act-run's with --chunk-passes=0 (every stage whole, as
# the GPU pipeline computes it). There, `bash run.sh` (bench/gpu_steps/run.sh)
# runs them all.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ACT_BUILD_DIR:-$here/build}
out=${ACT_GPU_STEPS_DIR:-$build/gpu_steps}
[ -x "$build/bin/act-opt" ] || ACT_BUILD_DIR=$build "$here/scripts/setup.sh"
"$here/scripts/portable.sh"
ACT_BUILD_DIR=$build bash "$here/bench/gpu_kernels/build.sh"
rm -rf "$out"
mkdir -p "$out/steps" "$out/cpu"
cp "$build/gpu_check" "${ACT_PORTABLE_DIR:-$here/build-portable}/act-portable.tar.xz" "$out/"
cp "$here"/bench/gpu_steps/{run.sh,compare.py,profile.py,torch_steps.py} "$here/bench/step_speed/models.py" "$out/"
opt=$build/bin/act-opt
run=$build/bin/act-run
# Debian's python3, with the packages setup.sh installs (numpy, torch).
python=${ACT_PYTHON:-/usr/bin/python3}
s=$out/steps
for model in vgg:16 encoder:8; do
  name=${model%:*}
  (cd "$here/python" && ACT_BIN_DIR=$build/bin $python -m act.export \
     "$here/bench/step_speed/models.py:$name" --batch "${model#*:}" -o "$s/$name" >/dev/null)
  # The inputs, relative to the folder.
  $python -c "import json, os, sys
m = json.load(open(sys.argv[1]))
print(','.join(os.path.relpath(p, sys.argv[2]) for p in m['inputs']))" \
    "$s/$name/$name.json" "$out" > "$s/$name.inputs"
  cp "$s/$name/$name.mlir" "$s/$name.mlir"
done
$opt "$here/examples/mlp.mlir" "-act-insert-encode-decode=encoding='#act.float<format = f16>' exclude=1" -o "$s/mlp_f16.mlir"
$opt "$here/examples/mlp.mlir" -act-insert-encode-decode -o "$s/mlp_q4.mlir"
for bits in 4 2; do
  $opt "$s/vgg.mlir" "-act-insert-encode-decode=encoding=#act.quant<bits=$bits>" -o "$s/vgg_q$bits.mlir"
done
$opt "$s/encoder.mlir" "-act-insert-encode-decode=encoding=#act.quant<bits=4>" -o "$s/encoder_q4.mlir"
cd "$out"
# Each step's act-run arguments (its data), one per line in steps/STEP.args,
# which run.sh reads too; steps/list names the steps in order.
printf '%s\n' mlp_f16 mlp_q4 vgg vgg_q4 vgg_q2 encoder encoder_q4 > steps/list
while read -r step; do
  case $step in
    mlp_f16) echo --init=int ;;
    mlp_q4) ;;
    vgg*) echo "--inputs=$(cat steps/vgg.inputs)" ;;
    encoder*) echo "--inputs=$(cat steps/encoder.inputs)" ;;
  esac > "steps/$step.args"
  mapfile -t args < "steps/$step.args"
  "$run" "steps/$step.mlir" "${args[@]}" --chunk-passes=0 --output-dir="cpu/$step" >/dev/null
done < steps/list
echo "gpu_steps: $out ($(du -sh "$out" | cut -f1)); on the GPU machine: bash run.sh"
