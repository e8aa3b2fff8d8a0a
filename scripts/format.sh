#!/usr/bin/env bash
# clang-format (Debian's clang-format-22, the repository's .clang-format) on
# every C++ file act owns.
#
#   scripts/format.sh           reformat in place
#   scripts/format.sh --check   list the files that differ; exit 1 if any
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
clang_format=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$clang_format" > /dev/null; then
  echo "format: $clang_format not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    "$clang_format" --dry-run -Werror "$f" > /dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "format: ${#bad[@]} of ${#files[@]} C++ files are not clang-formatted (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  # File banners (//===- name - what ---===//) are exactly 80 columns.
  banners=$(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.td' | xargs awk \
    'FNR == 1 && /^\/\/===-/ && (length != 80 || !/===\/\/$/) {print "  " FILENAME}')
  if [ -n "$banners" ]; then
    echo "format: file banners not 80 columns wide:" >&2
    echo "$banners" >&2
    exit 1
  fi
  echo "format: ${#files[@]} C++ files clang-formatted, banners 80 columns"
  exit 0
fi
"$clang_format" -i "${files[@]}"
