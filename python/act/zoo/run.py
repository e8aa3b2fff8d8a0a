"""The zoo's table: each model exported, run by act-run with each encoding
and compared with float64 autograd; the command line (python3 -m act.zoo)."""

import argparse
import json
import os
import tempfile
import time

import numpy as np
import torch

from .. import driver
from ..errors import ExportError
from ..export.cli import export
from .models import BATCH, BOUND, ZOO


def export_model(name, out_root):
    """Exports zoo model `name` into out_root/name; returns (row, manifest),
    the manifest None if it does not export."""
    row = {"model": name}
    t0 = time.time()
    try:
        m = export("zoo." + name, BATCH.get(name, 2), 0, os.path.join(out_root, name))
    except (ExportError, ValueError) as e:
        row["exports"] = f"no: {e}"
        return row, None
    except Exception as e:  # noqa: BLE001 (a zoo row, not a crash)
        row["exports"] = f"no: tracing failed with {type(e).__name__}: {e}"
        return row, None
    row["exports"] = "yes"
    row["export_s"] = time.time() - t0
    return row, m


def exported_model(name, out_root):
    """The row and manifest of a model exported before (--export-only,
    perhaps under another PyTorch: scripts/torch2.sh), or its export error."""
    path = os.path.join(out_root, name, f"{name}.json")
    if not os.path.exists(path):
        error = os.path.join(out_root, name, "export_error.txt")
        what = open(error).read().strip() if os.path.exists(error) else f"no {path}"
        return {"model": name, "exports": what}, None
    with open(path) as f:
        return {"model": name, "exports": "yes"}, json.load(f)


def run_model(name, out_root, encodings, timeout, exported=False, isolate=False):
    """One row of the table: `name` exported (or read from `out_root` with
    `exported`), each encoding inserted and its step run, in this process,
    or with `isolate` in act-run (a process per step, killed after
    `timeout` seconds: a model that hangs or crashes act costs its row)."""
    out = os.path.join(out_root, name)
    row, m = (exported_model if exported else export_model)(name, out_root)
    if m is None:
        return row
    row["torch"] = m.get("torch", "")
    reference = driver.reference(m)
    # A check is only as good as its gradients: count the exactly-zero ones
    # (a zero-initialized head zeroes everything before it).
    row["zero_gradients"] = sum(not np.any(r) for r in reference[1:1 + m["parameters"]])
    row["parameters"] = m["parameters"]
    for enc in encodings:
        tag = {"none": "none", "#act.quant<bits=4>": "q4", "#act.float<format=bf16>": "bf16"}.get(
            enc, str(abs(hash(enc))))
        options = "policy=none" if enc == "none" else f"encoding={driver.option_value(enc)}"
        try:
            mlir = driver.insert(m["files"]["joint"], os.path.join(out, f"{tag}.mlir"), options)
            report = driver.memory_report(mlir, os.path.join(out, f"report_{tag}.json"))
            totals = report["graphs"][0]["totals"]
            if isolate:
                results, peak, ms = driver.step(mlir, m["inputs"], os.path.join(out, tag),
                                                m["parameters"] + 1, timeout=timeout)
            else:
                results, peak, ms = driver.run_step(mlir, m["inputs"], m["parameters"] + 1)
        except Exception as e:  # noqa: BLE001
            row[tag] = {"error": str(e).strip().splitlines()[-1][:200]}
            continue
        loss_err, grad_err, _ = driver.scaled_errors(results, reference, m["parameters"])
        row[tag] = {"loss_error": loss_err, "grad_error": grad_err, "peak": peak, "ms": ms,
                    "saved_before": totals["saved_bytes_before"],
                    "saved_after": totals["saved_bytes_after"]}
    return row


def _fmt_row(r):
    def err(tag):
        v = r.get(tag)
        if v is None:
            return ""
        if "error" in v:
            return "fails: " + v["error"]
        return f"{v['grad_error']:.1e}"
    none, q4 = r.get("none", {}), r.get("q4", {})
    saved = (f"{none['saved_before']:,} -> {q4['saved_after']:,}"
             if "saved_before" in none and "saved_after" in q4 else "")
    peak = f"{none['peak']:,} -> {q4['peak']:,}" if "peak" in none and "peak" in q4 else ""
    ok = ""
    if "grad_error" in none:
        ok = " (ok)" if none["grad_error"] <= BOUND and none["loss_error"] <= BOUND else " (OVER)"
    return (f"| {r['model']} | {r['exports']} | {err('none')}{ok} | {err('q4')} | {err('bf16')} "
            f"| {saved} | {peak} |")


HEADER = ("| model | exports | grad error, no encoding | 4-bit | bf16 | saved bytes, none -> 4-bit "
          "| act-run peak, none -> 4-bit |\n|---|---|---|---|---|---|---|")


def export_all(names, out_root):
    """--export-only: one line per model; a model that does not export
    leaves out_root/NAME/export_error.txt (read by --exported)."""
    print(f"torch {torch.__version__}", flush=True)
    exported = 0
    for name in names:
        row, m = export_model(name, out_root)
        if m is None:
            os.makedirs(os.path.join(out_root, name), exist_ok=True)
            with open(os.path.join(out_root, name, "export_error.txt"), "w") as f:
                f.write(row["exports"] + "\n")
        exported += m is not None
        print(f"{name}: {row['exports'][:300]}", flush=True)
    print(f"\n{exported} of {len(names)} models export under torch {torch.__version__}")
    return 0 if exported == len(names) else 1


def compare_exports(names, dir_a, dir_b):
    """--compare: the MLIR of each model exported into two directories (by
    two PyTorch versions), both printed as act-opt prints them
    (driver.print_module, which drops the exporter's value names and
    comments): one line per model, 'same' or the first line that
    differs."""
    same, versions = 0, [set(), set()]
    for name in names:
        manifests = [exported_model(name, d)[1] for d in (dir_a, dir_b)]
        if None in manifests:
            print(f"{name}: not exported in both", flush=True)
            continue
        for seen, m in zip(versions, manifests):
            seen.add(m.get("torch", "?"))
        verdict = "same"
        for form in ("", "_split"):
            a, b = (driver.print_module(os.path.join(d, name, f"{name}{form}.mlir"))
                    .splitlines() for d in (dir_a, dir_b))
            diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                        None if len(a) == len(b) else min(len(a), len(b)))
            if diff is not None:
                verdict = (f"{'split' if form else 'joint'} form differs at line {diff + 1} of "
                           f"{len(a)}/{len(b)}")
                break
        same += verdict == "same"
        print(f"{name}: {verdict}", flush=True)
    print(f"\n{same} of {len(names)} models: the same MLIR exported by torch "
          f"{', '.join(sorted(versions[0])) or '?'} and {', '.join(sorted(versions[1])) or '?'}")
    return 0 if same == len(names) else 1


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m act.zoo", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=list(ZOO))
    p.add_argument("--encodings", default="none;#act.quant<bits=4>;#act.float<format=bf16>")
    p.add_argument("--isolate", action="store_true",
                   help="run each model's steps in act-run, a process each (--timeout applies): "
                        "a model that hangs or crashes act costs its row, not the table")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds per act-run step (with --isolate)")
    p.add_argument("-o", "--output-dir")
    p.add_argument("--export-only", action="store_true",
                   help="export into the output directory and stop (under another PyTorch, "
                   "scripts/torch2.sh run python3 -m act.zoo --export-only -o DIR)")
    p.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"),
                   help="compare the MLIR of two --export-only directories")
    p.add_argument("--exported", metavar="DIR",
                   help="run act on the models exported into DIR by --export-only")
    a = p.parse_args(argv)
    unknown = [m for m in a.models if m not in ZOO]
    if unknown:
        p.error(f"unknown zoo model(s) {', '.join(unknown)} (one of {', '.join(ZOO)})")
    if a.compare:
        return compare_exports(a.models, *a.compare)
    if a.export_only:
        if not a.output_dir:
            p.error("--export-only needs -o DIR")
        return export_all(a.models, a.output_dir)
    out_root = a.exported or a.output_dir or tempfile.mkdtemp(prefix="act-zoo-")
    print(HEADER, flush=True)
    failed = 0
    for name in a.models:
        r = run_model(name, out_root, a.encodings.split(";"), a.timeout, bool(a.exported),
                      a.isolate)
        print(_fmt_row(r), flush=True)
        none = r.get("none", {})
        failed += not (none.get("grad_error", 1) <= BOUND and none.get("loss_error", 1) <= BOUND)
    print(f"\n{len(a.models) - failed} of {len(a.models)} models export and match float64 "
          f"autograd within {BOUND:g} (gradients against their joint scale)")
    return 1 if failed else 0

