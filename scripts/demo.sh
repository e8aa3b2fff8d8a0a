#!/usr/bin/env bash
# README command 1: install what is missing, build, and run act on an
# example training graph (a small CNN): insert encode/decode around every
# saved activation and print the memory report; then export a PyTorch CNN,
# check act-run's gradients against autograd, and tune its bits (GACT).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${ACT_BUILD_DIR:-$here/build}
"$here/scripts/setup.sh"
act_opt="$build_dir/bin/act-opt"
example="$here/examples/cnn.mlir"

echo
echo "== act-opt examples/cnn.mlir -act-insert-encode-decode: where the encodes and decodes go"
"$act_opt" "$example" -act-insert-encode-decode | grep -E "act\.(encode|decode)" | cut -c1-140
echo
echo "== the memory report (uniform 4-bit quantization, group 256)"
"$act_opt" "$example" -act-insert-encode-decode -act-memory-report=table=- -o /dev/null

echo
echo "== act-run: the same step, JIT-compiled and run, without and with the encodings"
act_run="$build_dir/bin/act-run"
tmp=$(mktemp -d)
"$act_opt" "$example" -act-insert-encode-decode=policy=none > "$tmp/plain.mlir"
"$act_opt" "$example" -act-insert-encode-decode > "$tmp/encoded.mlir"
echo "-- without encodings"
"$act_run" "$tmp/plain.mlir"
echo "-- with 4-bit quantization of every saved activation"
"$act_run" "$tmp/encoded.mlir"

echo
echo "== From PyTorch: export a CNN training step (AOTAutograd), run it, compare with autograd"
cd "$here/python"
/usr/bin/python3 -m act.export cnn --batch 16 --batches 4 -o "$tmp/torch"
ACT_BIN_DIR="$build_dir/bin" /usr/bin/python3 -m act.oracle cnn --batch 16 \
  --encodings "none;#act.float<format=bf16>;#act.quant<bits=4>" -o "$tmp/oracle"
echo
echo "== act-tune: sensitivities measured by act-run, bits chosen by act-allocate-bits (average 4)"
"$build_dir/bin/act-tune" "$tmp/torch/cnn.json" -o "$tmp/tune" 2>&1 | tail -8
echo
echo "== Training with act.compile in a PyTorch loop: sklearn's digits, MLP, 5 epochs,"
echo "   PyTorch eager next to act without and with 4-bit activations"
ACT_BIN_DIR="$build_dir/bin" ACT_LIB_DIR="$build_dir/lib" /usr/bin/python3 -m act.train \
  digits-mlp --epochs 5 --seeds 0 --encoding "none;#act.quant<bits=4>"
rm -rf "$tmp"
