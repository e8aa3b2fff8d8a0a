"""act-tune's command line (`python3 -m act.tune`, build/bin/act-tune): a
model by name is exported first (act.export.cli), then tuned (act.tune)."""

import argparse
import json
import os
import sys

from .. import driver
from ..export.cli import export
from . import __doc__ as DOC, tune


def main(argv=None):
    p = argparse.ArgumentParser(prog="act-tune", description=DOC.split("\n\n")[0])
    p.add_argument("model", help="a model for act.export, or an export's manifest .json")
    p.add_argument("--average-bits", type=float, default=4.0)
    p.add_argument("--measure-bits", type=int, default=4, choices=[1, 2, 4, 8])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--batches", type=int, default=4, help="mini-batches to measure on")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variance-runs", type=int, default=16)
    p.add_argument("--division", type=int, metavar="B",
                   help="also measure #act.division<block=B> on the spatial maps and let the "
                        "allocator choose it against #act.quant per tensor")
    p.add_argument("--few-bit", type=int, metavar="B", choices=[1, 2, 3, 4],
                   help="also measure few-bit codes (B bits) of the values the backward reads "
                        "only through an activation's derivative, and let the allocator "
                        "choose them against #act.quant per tensor")
    p.add_argument("--min-bytes", type=int, default=1024,
                   help="leave smaller saved tensors in f32 (as act-insert-encode-decode)")
    p.add_argument("-o", "--output-dir", default="act-tune-out")
    a = p.parse_args(argv)
    try:
        if a.model.endswith(".json"):
            with open(a.model) as f:
                manifest = json.load(f)
        else:
            manifest = export(a.model, a.batch, a.seed, os.path.join(a.output_dir, "export"),
                              batches=a.batches)
        tune(manifest, a.output_dir, a.average_bits, a.measure_bits, a.variance_runs,
             a.min_bytes, division=a.division, few_bit=a.few_bit)
    except (driver.ToolError, ValueError, OSError) as e:
        print(f"act-tune: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
