# -*- Python -*-
# lit configuration of act's regression tests (check-act).

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "ACT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.act_obj_root, "test")
config.excludes = ["Inputs", "Unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%act_libs", os.path.join(config.act_obj_root, "lib")))
config.substitutions.append(("%act_src", config.act_src_root))
config.substitutions.append(("%act_obj", config.act_obj_root))
config.substitutions.append(("%act_bin", os.path.join(config.act_obj_root, "bin")))

# Variables captured by FileCheck do not leak across CHECK-LABELs.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

# ONEDNN_MAX_CPU_ISA and ACT_CPU_FEATURES cap the kernels' and the JIT's
# instruction sets (scripts/test.sh runs the suite once with AVX2 only).
llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "ASAN_OPTIONS",
                                     "UBSAN_OPTIONS", "ONEDNN_MAX_CPU_ISA",
                                     "ACT_CPU_FEATURES", "ACT_TORCH2_ROOT"])
llvm_config.use_default_substitutions()
# No code cache (docs/Running.md): a test sees what compiling prints and
# costs whatever ran before it; the cache's own tests name a directory.
config.environment["ACT_CACHE_DIR"] = ""

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [os.path.join(config.act_obj_root, "bin"), config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["act-opt", "act-run", "act-fewbit-table", "act-bench-kernels", "llvm-readelf"], tool_dirs)

# scripts/test.sh --sanitize: act is built with ASan, so its plugin cannot
# load into the stock (uninstrumented) mlir-opt.
if getattr(config, "act_sanitize", False):
    config.available_features.add("asan")
# Python (not instrumented) loads the sanitized libActCAPI.so with ASan's
# shared runtime preloaded (the tools link the same one); nothing otherwise.
python_env = ""
if getattr(config, "act_sanitize", False):
    runtime = subprocess.run(["clang++-22", "-print-file-name=libclang_rt.asan-x86_64.so"],
                             capture_output=True, text=True).stdout.strip()
    python_env = "LD_PRELOAD=" + runtime
config.substitutions.append(("%{asan_preload}", python_env))

# The fuzzers (fuzz/), where libFuzzer was available to build them.
fuzzers = ["act-fuzz-npy", "act-fuzz-profile", "act-fuzz-encoding"]
if all(os.path.exists(os.path.join(config.act_obj_root, "bin", f)) for f in fuzzers):
    config.available_features.add("libfuzzer")
    llvm_config.add_tool_substitutions(fuzzers, tool_dirs)
# The stock mlir-opt of the LLVM install, by full path, for plugin tests.
config.substitutions.append(
    ("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))

# ptxas (CUDA toolkit) checks the generated PTX; no GPU needed.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# A usable CUDA driver (a GPU machine): GPU execution tests run.
try:
    import ctypes
    _cuda = ctypes.CDLL("libcuda.so.1")
    if _cuda.cuInit(0) == 0:
        config.available_features.add("cuda")
except OSError:
    pass

# Debian's python3 (with python3-numpy) compares act-run's .npy outputs; a
# python3 earlier on PATH may lack numpy.
system_python = "/usr/bin/python3"
config.substitutions.append(
    ("%compare", system_python + " " +
     os.path.join(config.act_src_root, "test", "Integration", "compare.py")))
import subprocess
if os.path.exists(system_python) and subprocess.run(
        [system_python, "-c", "import numpy"], capture_output=True).returncode == 0:
    config.available_features.add("numpy")

# PyTorch (Debian's python3-torch, CPU) runs the exporter's gradient oracle.
config.substitutions.append(("%system_python", system_python))
# pytest on python/tests with act's tools and library (the lit tests under
# test/Python that split python/tests between them).
config.substitutions.append(
    ("%act_pytest", " ".join(filter(None, [
        "env", "ACT_BIN_DIR=" + os.path.join(config.act_obj_root, "bin"),
        "ACT_LIB_DIR=" + os.path.join(config.act_obj_root, "lib"), python_env,
        system_python, "-m pytest -q -s -p no:cacheprovider"]))))
if os.path.exists(system_python) and subprocess.run(
        [system_python, "-c", "import torch, torchvision"],
        capture_output=True).returncode == 0:
    config.available_features.add("torch")
# Debian's dataset-fashion-mnist (scripts/setup.sh installs it): the short
# Fashion-MNIST run (test/Python/fashion-short.test).
if os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    config.available_features.add("fashion-mnist")

# PyTorch 2 (Debian 13's torch 2.6 in the root scripts/torch2.sh makes; it
# needs root): the exporter's oracle again under it (test/Python/torch2.test).
torch2_root = os.environ.get("ACT_TORCH2_ROOT",
                             os.path.join(config.act_src_root, "build-torch2", "root"))
torch2_sh = os.path.join(config.act_src_root, "scripts", "torch2.sh")
if os.path.exists(os.path.join(torch2_root, ".act-ready")) and os.geteuid() == 0 and \
        subprocess.run(["bash", torch2_sh, "run", "python3", "-c", "import torch"],
                       capture_output=True, timeout=120).returncode == 0:
    config.available_features.add("torch2")
config.substitutions.append(
    ("%torch2", "env ACT_BUILD_DIR=" + config.act_obj_root + " bash " + torch2_sh + " run"))
