#!/usr/bin/env bash
# Long fuzzing campaign: the libFuzzer targets of fuzz/ (npy reader, profile
# reader, encoding attributes) and the mutation fuzzer over the examples,
# each for SECONDS, on the ASan + UBSan + coverage build (scripts/test.sh
# --sanitize builds it). Prints what each found; exit 1 if anything.
#
#   scripts/fuzz.sh [SECONDS]      default 600 per fuzzer
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
build=${ACT_BUILD_DIR:-$here/build-asan}
if [ ! -x "$build/bin/act-fuzz-npy" ]; then
  echo "fuzz: no fuzzers in $build (run scripts/test.sh --sanitize first)" >&2
  exit 2
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
out="$build/fuzz-out"
mkdir -p "$out"
found=0
for name in npy profile encoding; do
  corpus="$out/corpus-$name"
  mkdir -p "$corpus" "$out/crashes-$name"
  cp -n "$here"/fuzz/corpus/$name/* "$corpus"/ 2>/dev/null
  "$build/bin/act-fuzz-$name" -max_total_time="$seconds" -timeout=20 \
    -artifact_prefix="$out/crashes-$name/" -print_final_stats=1 \
    "$corpus" > "$out/$name.log" 2>&1
  crashes=$(ls "$out/crashes-$name" | wc -l)
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$name.log" | grep -o '[0-9]*$')
  echo "fuzz: act-fuzz-$name: ${runs:-?} runs in ${seconds} s, $crashes crash(es) ($out/crashes-$name)"
  found=$((found + crashes))
done
/usr/bin/python3 "$here/fuzz/mutate.py" --act-opt "$build/bin/act-opt" \
  --cases 100000000 --seconds "$seconds" --seed "$RANDOM" -o "$out/mutate" \
  | tail -1 | sed 's/^/fuzz: /'
findings=$(ls "$out/mutate" | grep -c '^finding-.*\.mlir$')
found=$((found + findings))
echo "fuzz: $found finding(s) attributable to act in $((4 * seconds / 60)) CPU-minutes"
[ "$found" = 0 ]
