"""Runs act's passes and steps: in this process through the C API (passes
by name as act-opt takes them, one step on .npy inputs), or act-run as a
process (step(): the benchmarks, a table that isolates each model).

The binaries come from ACT_BIN_DIR, else the repository's build/bin.
"""

import json
import os
import re
import subprocess
import tempfile
import time

import numpy as np

from . import capi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ToolError(Exception):
    pass


def tool(name):
    path = os.path.join(os.environ.get("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin")), name)
    if not os.path.exists(path):
        raise ToolError(f"{path} not found: build act (scripts/setup.sh) or set ACT_BIN_DIR")
    return path


def _tool_environment():
    """The tools' environment: this process's, without an ASan runtime that
    was preloaded into Python for the sanitizer build's C API (the tools
    link their own; two runtimes in one process abort)."""
    preload = os.environ.get("LD_PRELOAD", "")
    if "libclang_rt.asan" not in preload:
        return None
    env = dict(os.environ)
    kept = [p for p in preload.split(":") if p and "libclang_rt.asan" not in p]
    if kept:
        env["LD_PRELOAD"] = ":".join(kept)
    else:
        del env["LD_PRELOAD"]
    return env


def run(name, *args, progress=False, timeout=None):
    """Runs an act tool; `progress` lets its stderr through (act-run's
    progress lines) instead of capturing it."""
    try:
        r = subprocess.run([tool(name), *map(str, args)], stdout=subprocess.PIPE,
                           stderr=None if progress else subprocess.PIPE, text=True,
                           timeout=timeout, env=_tool_environment())
    except subprocess.TimeoutExpired:
        raise ToolError(f"{name} took more than {timeout:g} s") from None
    if r.returncode != 0:
        raise ToolError(f"{name} {' '.join(map(str, args))} failed:\n{r.stdout}{r.stderr or ''}")
    return r


def option_value(value):
    """`value` as one value of an MLIR pass option (act-opt
    -pass=name=VALUE ...): quoted when it has spaces or commas, which
    would otherwise end it (`#act.quant<bits = 4>`, as act's own reports
    print encodings)."""
    value = str(value)
    if not any(c in value for c in " ,{}\"'"):
        return value
    for open_, close in (("'", "'"), ('"', '"'), ("{", "}")):
        if open_ not in value and close not in value:
            return f"{open_}{value}{close}"
    raise ValueError(f"cannot quote {value!r} as a pass option value")


def placement_options(recompute_cost=0, loss_head=None):
    """The options act-insert-encode-decode and act-allocate-bits share:
    " recompute-cost=R" (none for 0, their default) and " loss-head=E" (the
    loss head's encoding; none for None)."""
    return ((f" recompute-cost={float(recompute_cost)!r}" if recompute_cost else "")
            + (f" loss-head={option_value(loss_head)}" if loss_head else ""))


def insertion_options(encoding, few_bit=0, include=None, recompute_cost=0, loss_head=None):
    """act-insert-encode-decode's options for act.compile's and act.Module's
    `encoding=` (an act encoding, "lossless" for Gist's lossless encodings
    only, "lossless+F" for them with Gist's delayed precision reduction to
    the float format F (fp10, bf16, ...: act-insert-encode-decode's
    float-format), None or "none" for none), `few_bit=`, `include=` (the saved
    values' ids that may be encoded; None: all), `recompute_cost=`
    (recompute-cost: operations per byte) and `loss_head=` (loss-head: the
    loss head's encoding)."""
    lossless, _, reduced = (encoding or "").partition("+")
    if lossless == "lossless" and reduced and not reduced.isalnum():
        raise ValueError(f"encoding={encoding!r}: 'lossless+F' takes a float format F "
                         "(f16, bf16, fp10, e4m3, e5m2)")
    options = ("policy=none" if encoding in (None, "none")
               else "policy=lossless" + (f" float-format={reduced}" if reduced else "")
               if lossless == "lossless"
               else f"encoding={option_value(encoding)}")
    if include is not None:
        options += " include=" + ",".join(str(int(i)) for i in include)
    return (options + placement_options(recompute_cost, loss_head)
            + (f" few-bit={few_bit}" if few_bit else ""))


def passes(src, dst, name, options=""):
    """act-opt SRC -NAME=OPTIONS -o DST, in this process (the C API's
    actRunPasses: no act-opt process); DST None: not written."""
    try:
        return capi.run_passes(src, f"{name}{{{options}}}" if options else name, dst)
    except capi.ActError as e:
        raise ToolError(f"act-opt {src} -{name}={options} failed:\n{e}") from None


def insert(src, dst, options):
    """act-opt -act-insert-encode-decode=options."""
    return passes(src, dst, "act-insert-encode-decode", options)


def memory_report(src, json_path):
    """act-memory-report's JSON (and its table, beside it as .txt, not on
    stderr: in process, the pass's default stream is the caller's)."""
    table = os.path.splitext(json_path)[0] + ".txt"
    passes(src, None, "act-memory-report",
           f"json={option_value(json_path)} table={option_value(table)}")
    with open(json_path) as f:
        return json.load(f)


def step(mlir, inputs, out_dir, num_results, *extra, timeout=None):
    """Runs one step with act-run; returns (results, peak bytes, ms)."""
    os.makedirs(out_dir, exist_ok=True)
    r = run("act-run", mlir, "--inputs=" + ",".join(inputs), f"--output-dir={out_dir}", *extra,
            timeout=timeout)
    peak = int(re.search(r"memory: peak (\d+) bytes", r.stdout).group(1))
    ms = float(re.search(r"time: median ([0-9.]+) ms", r.stdout).group(1))
    results = [np.load(os.path.join(out_dir, f"result_{i}.npy")) for i in range(num_results)]
    return results, peak, ms


def arguments(inputs, batches=()):
    """A step's arguments from .npy paths (act-run --inputs' order) as
    arrays, then one list per extra mini-batch whose files replace the last
    arguments (act-run --batch-inputs)."""
    first = [np.load(p) for p in inputs]
    lists = [first]
    for files in batches:
        extra = [np.load(p) for p in files]
        lists.append(first[:len(first) - len(extra)] + extra)
    return lists


def run_step(mlir, inputs, num_results, step_seed=1):
    """One step of the file `mlir` on the .npy `inputs`, in this process (the
    C API, act-run's default step seed): (the first `num_results` results as
    arrays, the step's peak bytes, its milliseconds)."""
    step = capi.CompiledStep.from_file(mlir)
    args = arguments(inputs)[0]
    start = time.perf_counter()
    run = step.run(args, seed=step_seed)
    ms = 1e3 * (time.perf_counter() - start)
    return [np.array(run.result(i)) for i in range(num_results)], run.peak_bytes, ms


def print_module(src):
    """The module in `src` as act-opt prints it (in this process)."""
    fd, path = tempfile.mkstemp(suffix=".mlir")
    os.close(fd)
    try:
        capi.run_passes(src, "", path)
        with open(path) as f:
            return f.read()
    finally:
        os.unlink(path)


def stored_bytes(mlir, inputs):
    """The bytes each encoded value was stored in, by id, as one step with
    these inputs produced them (act-run --storage: data-dependent encodings,
    #act.sparse, measured)."""
    r = run("act-run", mlir, "--inputs=" + ",".join(inputs), "--storage")
    return {int(i): int(b) for i, b in re.findall(r"storage: id (\d+): (\d+) bytes", r.stdout)}


def relative_errors(got, want):
    """Relative L2 error of each array of `got` against `want`."""
    errors = []
    for a, b in zip(got, want):
        if a.shape != b.shape:
            raise ValueError(f"shape {a.shape} against {b.shape}")
        errors.append(float(np.linalg.norm(a.astype(np.float64) - b)
                            / max(float(np.linalg.norm(b)), 1e-30)))
    return errors


def scaled_errors(results, reference, parameters):
    """(loss relative error, largest gradient error over the norm of all
    gradients, per gradient the same): what decides whether a step is
    right, where a gradient that is zero in theory (a bias feeding
    BatchNorm) has no meaningful relative error of its own."""
    loss = abs(float(results[0]) - float(reference[0])) / max(abs(float(reference[0])), 1e-30)
    scale = float(np.sqrt(sum(float(np.sum(np.square(r.astype(np.float64))))
                                for r in reference[1:1 + parameters])))
    per = [float(np.linalg.norm(a.astype(np.float64) - b)) / max(scale, 1e-30)
           for a, b in zip(results[1:1 + parameters], reference[1:1 + parameters])]
    return loss, max(per, default=0.0), per


def reference(manifest):
    """The exporter's float64 autograd loss and gradients."""
    d = manifest["reference"]["dir"]
    return [np.load(os.path.join(d, "loss.npy"))] + [
        np.load(os.path.join(d, f"grad_{i}.npy")) for i in range(manifest["parameters"])]
