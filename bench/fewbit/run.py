"""Few-bit backward against quantizing the same tensors: one step's
gradient error (issue 18's check), same tensors, same run.

For each model: exports it, finds the saved values the insertion stores as
few-bit codes (`act-insert-encode-decode{few-bit=B}`: those the backward
reads only through phi(x)), then encodes only those tensors, as
`#act.quant<bits=4>` over --seeds step seeds (stochastic: mean and spread)
and as few-bit codes at 1..4 bits (deterministic), and prints each one's
saved bytes and gradient error against float64 autograd (largest gradient
error over the norm of all gradients, and the largest per-tensor relative
L2 error). With --check, exit status 1 unless 3-bit few-bit codes beat
4-bit quantization's mean on both measures for every model.

    /usr/bin/python3 bench/fewbit/run.py [MODEL ...] [--seeds 5] [--batch 32]
"""

import argparse
import os
import re
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402

MODELS = ["gelu", "silu", "softplus", "selu", "tanh", "elu", "mish", "mlp", "transformer"]


def spec(name):
    if name in ("mlp", "transformer"):
        return name
    return os.path.join(HERE, f"models.py:{name}")


def run(manifest, out, options, tag, step_seed=1):
    mlir = driver.insert(manifest["files"]["joint"], os.path.join(out, f"{tag}.mlir"),
                         options + " min-bytes=0")
    report = driver.memory_report(mlir, os.path.join(out, f"{tag}.json"))
    results, _, _ = driver.step(mlir, manifest["inputs"], os.path.join(out, tag),
                                manifest["parameters"] + 1, f"--step-seed={step_seed}")
    reference = driver.reference(manifest)
    _, scaled, _ = driver.scaled_errors(results, reference, manifest["parameters"])
    errors = driver.relative_errors(results, reference)
    with open(mlir) as f:
        text = f.read()
    return {"bytes": report["graphs"][0]["totals"]["saved_bytes_after"],
            "scaled": scaled, "max": max(errors[1:]), "text": text}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=MODELS)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--sigma", default="1", help="few-bit-sigma (0: Table 3's uniform weight)")
    p.add_argument("--check", action="store_true")
    p.add_argument("-o", "--output-dir")
    a = p.parse_args(argv)
    out_root = a.output_dir or tempfile.mkdtemp(prefix="act-fewbit-")
    failed = []
    print(f"{'model':12} {'encoding of the phi-read tensors':34} {'bytes':>8} "
          f"{'err/scale':>16} {'max rel err':>16}")
    for name in a.models:
        out = os.path.join(out_root, name)
        manifest = export(spec(name), a.batch, 0, out)
        probe = run(manifest, out, f"few-bit=3 few-bit-sigma={a.sigma}", "probe")
        ids = sorted({int(m) for m in re.findall(
            r"act\.encode [^\n]*, id = (\d+)[^\n]*#act\.fewbit", probe["text"])})
        if not ids:
            print(f"{name:12} no saved value is read only through phi(x)")
            failed.append(name)
            continue
        include = "include=" + ",".join(map(str, ids))
        base = run(manifest, out, "policy=none", "none")
        print(f"{name:12} {'none (ids ' + ','.join(map(str, ids)) + ')':34} "
              f"{base['bytes']:>8} {base['scaled']:>16.2e} {base['max']:>16.2e}")
        quant = [run(manifest, out, f"encoding=#act.quant<bits=4> {include}", f"q4_{s}", s)
                 for s in range(1, a.seeds + 1)]
        qs = [r["scaled"] for r in quant]
        qm = [r["max"] for r in quant]
        spread = lambda v: statistics.pstdev(v) if len(v) > 1 else 0.0  # noqa: E731
        print(f"{name:12} {'quant 4 bits (' + str(a.seeds) + ' seeds)':34} {quant[0]['bytes']:>8} "
              f"{statistics.mean(qs):>9.2e}±{spread(qs):.0e} {statistics.mean(qm):>9.2e}±{spread(qm):.0e}")
        rows = {}
        for bits in (1, 2, 3, 4):
            r = run(manifest, out, f"encoding=#act.quant<bits=4> {include} few-bit={bits} "
                    f"few-bit-sigma={a.sigma}", f"fb{bits}")
            rows[bits] = r
            print(f"{name:12} {'few-bit ' + str(bits) + ' bits':34} {r['bytes']:>8} "
                  f"{r['scaled']:>16.2e} {r['max']:>16.2e}")
        if not (rows[3]["scaled"] < statistics.mean(qs) and rows[3]["max"] < statistics.mean(qm)):
            failed.append(name)
        sys.stdout.flush()
    if failed:
        print("few-bit 3 bits not below quant 4 bits on: " + ", ".join(failed))
    return 1 if a.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
