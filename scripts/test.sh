#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test
# (lit + FileCheck regression tests and the gtest unit tests, via check-act).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${ACT_BUILD_DIR:-$here/build}
"$here/scripts/setup.sh"
# The C++ is clang-formatted (.clang-format, clang-format-22).
"$here/scripts/format.sh" --check
cmake --build "$build_dir" --target check-act
