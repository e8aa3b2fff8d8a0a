# -*- Python -*-
# Runs act's gtest binaries (built under <build>/unittests) as lit tests.

import os

import lit.formats

config.name = "ACT-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.act_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")

# The ISA caps (scripts/test.sh's AVX2-only pass) reach the gtest binaries,
# and so does GTEST_FILTER: lit runs each binary as shards (or whole), so
# its --filter/--filter-out match the binaries, never a gtest test.
for name in ("ONEDNN_MAX_CPU_ISA", "ACT_CPU_FEATURES", "GTEST_FILTER"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
