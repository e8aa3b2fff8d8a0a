"""Exported models through act: memory report, measured peak and gradient
error against float64 autograd, for several encodings.

    python3 -m act.oracle [MODEL ...] [--batch N] [--encodings E;E;...] [-o DIR]

Prints one row per (model, encoding): saved bytes (act's report, function
arguments excluded), the measured peak of the step, the largest gradient
error against the scale of all gradients (what decides whether a result is
right: a gradient that is zero in theory, such as a bias feeding BatchNorm,
has no meaningful error of its own) and the largest per-tensor relative L2
error over the loss and every gradient.
"""

import argparse
import os
import sys
import tempfile

from . import driver
from .export.cli import export

DEFAULT_BATCH = {"mlp": 8, "cnn": 8, "transformer": 4, "resnet18": 8}
DEFAULT_ENCODINGS = "none;#act.quant<bits=8>;#act.quant<bits=4>"


def evaluate(manifest, out, encoding):
    src = manifest["files"]["joint"]
    tag = "none" if encoding == "none" else str(abs(hash(encoding)))
    options = "policy=none" if encoding == "none" else f"encoding={driver.option_value(encoding)}"
    mlir = driver.insert(src, os.path.join(out, f"step_{tag}.mlir"), options)
    report = driver.memory_report(mlir, os.path.join(out, f"report_{tag}.json"))
    totals = report["graphs"][0]["totals"]
    results, peak, ms = driver.run_step(mlir, manifest["inputs"], manifest["parameters"] + 1)
    reference = driver.reference(manifest)
    errors = driver.relative_errors(results, reference)
    _, scaled, _ = driver.scaled_errors(results, reference, manifest["parameters"])
    return {"scaled_error": scaled,"saved_before": totals["saved_bytes_before"], "saved_after": totals["saved_bytes_after"],
            "peak": peak, "ms": ms, "max_error": max(errors), "loss_error": errors[0]}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m act.oracle", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=list(DEFAULT_BATCH))
    p.add_argument("--batch", type=int)
    p.add_argument("--encodings", default=DEFAULT_ENCODINGS)
    p.add_argument("-o", "--output-dir")
    a = p.parse_args(argv)
    out_root = a.output_dir or tempfile.mkdtemp(prefix="act-oracle-")
    print(f"{'model':12} {'encoding':24} {'saved B':>10} {'encoded B':>10} {'ratio':>6} "
          f"{'peak B':>10} {'err/scale':>10} {'max rel err':>11} {'step ms':>8}")
    for model in a.models:
        # (A user's model is a path, file.py:factory: one folder per model
        # under out_root all the same.)
        out = os.path.join(out_root, os.path.basename(model).replace(":", "_"))
        manifest = export(model, a.batch or DEFAULT_BATCH.get(model, 8), 0, out)
        for enc in a.encodings.split(";"):
            r = evaluate(manifest, out, enc)
            print(f"{model:12} {enc:24} {r['saved_before']:>10} {r['saved_after']:>10} "
                  f"{r['saved_before'] / r['saved_after']:>6.2f} {r['peak']:>10} "
                  f"{r['scaled_error']:>10.2e} {r['max_error']:>11.2e} {r['ms']:>8.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
