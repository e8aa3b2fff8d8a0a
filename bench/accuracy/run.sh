#!/bin/sh
# The accuracy table of docs/Training.md, one command: every task trained
# with every configuration over seeds 0, 1, 2 (python3 -m act.train), next
# to PyTorch eager fp32 on the same initial weights and batches.
#
#   bench/accuracy/run.sh [BUILD_DIR] [OUT_DIR] [TASK ...]
#
# BUILD_DIR (default: build) holds act-opt and libActCAPI.so; OUT_DIR
# (default: accuracy-out) receives TASK.md (the table), TASK.jsonl (every
# epoch of every run) and TASK.svg (loss and metric curves, GACT's bits per
# tensor over the steps). Tasks (default: the first three): digits-mlp and
# digits-vgg (sklearn's digits, test accuracy), python-lm (a character-level
# transformer on the standard library's sources, validation loss), and
# fmnist-cnn (Fashion-MNIST, 60,000 training images: installs Debian's
# dataset-fashion-mnist first, as root or through sudo). The first three
# take about an hour on 2 cores, most of it python-lm (PyTorch eager's step
# is ~190 ms there, act's ~30 ms).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
mkdir -p "${2:-accuracy-out}"
out=$(cd "${2:-accuracy-out}" && pwd)
[ $# -gt 2 ] && shift 2 || set --
tasks=${*:-digits-mlp digits-vgg python-lm}

# Fashion-MNIST comes from Debian's package (act.train reads its idx files
# from /usr/share/datasets/fashion-mnist).
case " $tasks " in
  *" fmnist-"*)
    if ! dpkg-query -W -f='${Status}' dataset-fashion-mnist 2>/dev/null |
        grep -q "install ok installed"; then
      sudo=""
      [ "$(id -u)" = 0 ] || sudo="sudo"
      echo "bench/accuracy/run.sh: installing dataset-fashion-mnist" >&2
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        dataset-fashion-mnist
    fi ;;
esac

# Every task: uniform 8/4/2-bit quantization, bf16, fp10 and e4m3 floats,
# and GACT's allocation at average 4, 3 and 2 bits re-estimated during
# training. Then what applies to the task's layers: Few-bit codes for the
# GELU inputs (MLP, language model), Gist's lossless encodings and
# DIVISION for the convolutional maps (VGG).
common="none;#act.quant<bits=8>;#act.quant<bits=4>;#act.quant<bits=2>"
common="$common;#act.float<format=bf16>;#act.float<format=fp10>;#act.float<format=e4m3>"
gact="average-bits=4;average-bits=3;average-bits=2"
fewbit="#act.quant<bits=4>+few-bit=2;#act.float<format=bf16>+few-bit=1"
for task in $tasks; do
  case $task in
    digits-mlp) extra="$fewbit"; interval=46 ;;
    digits-vgg) extra="lossless;#act.division<block=4,bits=2>"; interval=46 ;;
    python-lm) extra="$fewbit"; interval=250 ;;
    fmnist-cnn) extra="lossless;#act.division<block=4,bits=2>"; interval=469 ;;
    *) echo "bench/accuracy/run.sh: error: unknown task '$task'" >&2; exit 2 ;;
  esac
  echo "== $task" >&2
  (cd "$here/python" && ACT_BIN_DIR="$build/bin" ACT_LIB_DIR="$build/lib" \
     /usr/bin/python3 -m act.train "$task" --seeds 0,1,2 --adapt-interval "$interval" \
       --encoding "$common;$extra;$gact" --log "$out/$task.jsonl" --plot "$out/$task.svg") \
    | tee "$out/$task.md"
done
