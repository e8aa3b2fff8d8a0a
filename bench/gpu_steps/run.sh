#!/usr/bin/env bash
# On a GPU machine, in the folder bench/gpu_steps/prepare.sh made: act's GPU
# kernels against the CPU reference (gpu_check: bit for bit, and bandwidth
# as a ratio of a device copy), then every prepared step with
# `act-run --device=gpu` (median of 10 steps; matmuls and convolutions
# through cuBLAS/cuDNN, from the CUDA toolkit or the PyTorch installation's
# nvidia/*/lib), its results against the CPU's (compare.py), the first
# model's plain step again in stream-ordered mode (ACT_GPU_STREAM_ORDERED=1:
# one stream, no host synchronization inside the step) and in its
# bisecting variants, every step again on device tensors (--device-tensors:
# inputs resident, the pool's plain device memory, one stream; what
# act.compile runs on CUDA tensors) and in CUDA graphs (--gpu-graphs: one
# launch per step after the second), with cuDNN's non-FFT, non-Winograd
# algorithms, and
# against float64 PyTorch (reference_*.npz), and PyTorch eager and
# torch.compile on the same GPU, models and batches when python3 has torch
# with CUDA (torch_steps.py), and act.compile on CUDA tensors against eager
# (compile_cuda.py; alone: `ACT_LIB_DIR=$PWD/lib python3 compile_cuda.py`
# after unpacking act-portable.tar.xz). Writes
# everything to stdout. ACT_GPU_SKIP_TORCH_COMPILE=1 leaves torch.compile
# out.
set -uo pipefail
cd "$(dirname "$0")"
start=$SECONDS
tar -xJf act-portable.tar.xz
# cuBLAS and cuDNN: where PyTorch's wheels keep them, else the toolkit's.
nv=$(python3 -c "
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
dirs = set()
for r in roots:
    for pattern in ('nvidia/**/libcublas.so.*', 'nvidia/**/libcudnn.so.*'):
        dirs.update(os.path.dirname(p) for p in glob.glob(os.path.join(r, pattern), recursive=True))
print(':'.join(sorted(dirs)))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib${nv:+:$nv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L 2>/dev/null
echo "cuBLAS/cuDNN from: ${nv:-none found: the loader path, then /usr/local/cuda/lib64}"
status=0
if [ "${ACT_GPU_SKIP_CHECK:-0}" != 1 ]; then
  echo "== gpu_check"
  ./gpu_check || status=1
fi
while read -r name batch; do
  python3 inputs.py "steps/$name.json" "inputs/$name" > /dev/null || status=1
done < models
echo "== steps (act-run --device=gpu)"
while read -r step; do
  mapfile -t args < "steps/$step.args"
  echo "-- $step"
  # (act-run looks for MLIR's CPU runner library, which the GPU mode does
  # not use: its message is dropped.)
  bin/act-run "steps/$step.mlir" "${args[@]}" --repeat=10 --device=gpu \
    --output-dir="gpu/$step" 2>&1 |
    grep -E "^(loss|time|memory|gpu libraries|act-run|act runtime)" | grep -v "MemoryBuffer" || status=1
done < steps/list
echo "== GPU results against the CPU's"
python3 compare.py cpu.npz gpu || status=1
if [ "${ACT_GPU_DEVICE_TENSORS:-1}" = 1 ]; then
  # As act.compile runs them on CUDA tensors: inputs resident in device
  # memory, one stream, no synchronization inside the step, its buffers
  # plain device memory from the runtime's pool (stream-ordered: see the
  # bisection below if these disagree).
  echo "== steps on device tensors (act-run --device=gpu --device-tensors)"
  while read -r step; do
    mapfile -t args < "steps/$step.args"
    echo "-- $step"
    bin/act-run "steps/$step.mlir" "${args[@]}" --repeat=10 --device=gpu --device-tensors \
      --output-dir="tensors/$step" 2>&1 |
      grep -E "^(loss|time|memory|device pool|act-run|act runtime)" | grep -v "MemoryBuffer" || status=1
  done < steps/list
  python3 compare.py cpu.npz tensors || status=1
  # The same in CUDA graphs (--gpu-graphs): the second run captured, every
  # later one a single graph launch; the results compared are the last
  # replay's.
  echo "== steps on device tensors in CUDA graphs (act-run --device-tensors --gpu-graphs)"
  while read -r step; do
    mapfile -t args < "steps/$step.args"
    echo "-- $step"
    bin/act-run "steps/$step.mlir" "${args[@]}" --repeat=10 --device=gpu --device-tensors \
      --gpu-graphs --output-dir="graphs/$step" 2>&1 |
      grep -E "^(loss|time|memory|device pool|cuda graphs|act-run|act runtime|act:)" |
      grep -v "MemoryBuffer" || status=1
  done < steps/list
  python3 compare.py cpu.npz graphs || status=1
fi
first=$(head -1 models | cut -d' ' -f1)
if [ -n "$first" ]; then
  mapfile -t args < "steps/$first.args"
  # Stream-ordered mode (opt-in: its VGG and ResNet-18 results differed
  # from the CPU's on an H200), then the same with its float inputs in
  # managed memory, then with cuBLAS/cuDNN on the legacy stream: which of
  # its differences makes the results differ.
  for variant in "ACT_GPU_STREAM_ORDERED=1:ordered" \
                 "ACT_GPU_STREAM_ORDERED=1 ACT_GPU_DEVICE_INPUTS=0:ordered_managed_inputs" \
                 "ACT_GPU_STREAM_ORDERED=1 ACT_GPU_LIBRARY_STREAM=legacy:ordered_legacy_libraries"; do
    settings=${variant%:*} label=${variant##*:}
    echo "== $first, $settings"
    env $settings bin/act-run "steps/$first.mlir" "${args[@]}" --repeat=10 \
      --device=gpu --output-dir="$label/$first" 2>&1 | grep -E "^(time|memory)"
    python3 compare.py cpu.npz "$label" || status=1
  done
  echo "== $first with cuDNN's algorithms that are not FFT or Winograd (ACT_CUDNN_ALGOS=exact), each printed"
  ACT_CUDNN_ALGOS=exact ACT_GPU_LIBRARY_LOG=1 bin/act-run "steps/$first.mlir" "${args[@]}" \
    --repeat=10 --device=gpu --output-dir="exact/$first" 2>&1 |
    grep -E "^(time|act runtime)" | sort | uniq -c
fi
for ref in reference_*.npz; do
  [ -f "$ref" ] || continue
  echo "== against float64 PyTorch ($ref): the GPU's step, then with exact algorithms"
  python3 compare.py "$ref" gpu
  python3 compare.py "$ref" exact
done
echo "(act steps: $((SECONDS - start)) s)"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "== PyTorch, the same models and batches"
  python3 torch_steps.py models
  echo "== act.compile on CUDA tensors against eager (compile_cuda.py)"
  ACT_LIB_DIR=$PWD/lib python3 compile_cuda.py --steps "${ACT_GPU_COMPILE_STEPS:-100}" || status=1
fi
echo "(all: $((SECONDS - start)) s)"
exit $status
