"""DIVISION (#act.division) against uniform quantization of the same
tensors, one training step each, same run (issue 20's check).

For each model: exports it, encodes its spatial maps (the rank-4 saved
values #act.division can hold; masks for ReLU-only reads, as under any
lossy encoding) as `#act.division<block=B, bits=Q>` and, the same tensors,
as `#act.quant<bits=Q>` at its own bytes and at DIVISION's bytes (the
quantization group shrunk until the metadata spends what DIVISION's block
averages take), each over --seeds step seeds. Prints per configuration the
compression of those tensors (f32 bytes over stored bytes; the paper's
(B^-2 + Q/32)^-1 beside it), the gradient error against float64 autograd
(largest gradient error over the norm of all gradients; mean +- spread over
seeds) and the compression variance (sum over parameters of the variance
of the gradient over the seeds, over the squared norm of the gradient).

    /usr/bin/python3 bench/division/run.py [MODEL ...] [--seeds 4] [--batch 8]

With --check: exit status 1 unless DIVISION's compression is within 10% of
the paper's formula on the models whose maps all have sides of at least B.
"""

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402

MODELS = ["vgg", "vgg_digits", "resnet18", "resnet18_digits", "resnet18_224"]


def run(manifest, out, options, tag, seed):
    mlir = driver.insert(manifest["files"]["joint"], os.path.join(out, f"{tag}.mlir"), options)
    report = driver.memory_report(mlir, os.path.join(out, f"{tag}.json"))
    results, _, _ = driver.step(mlir, manifest["inputs"], os.path.join(out, f"{tag}_{seed}"),
                                manifest["parameters"] + 1, f"--step-seed={seed}")
    return report["graphs"][0]["saved"], results


def stats(values):
    return statistics.mean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=MODELS)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--block", type=int, default=8)
    p.add_argument("--bits", type=int, default=2)
    p.add_argument("--group", type=int, default=256)
    p.add_argument("--check", action="store_true")
    p.add_argument("-o", "--output-dir")
    a = p.parse_args(argv)
    out_root = a.output_dir or tempfile.mkdtemp(prefix="act-division-")
    B, Q, G = a.block, a.bits, a.group
    paper = 1.0 / (B ** -2 + Q / 32)
    division = f"#act.division<block={B}, bits={Q}, group={G}>"
    # The group at which Q-bit quantization spends DIVISION's bytes: its
    # metadata (64 bits a group) takes what the averages (32 / B^2 bits an
    # element) and DIVISION's own metadata take.
    same_group = max(1, round(64 / (64 / G + 32 / B ** 2)))
    configs = [("division", division),
               (f"quant {Q}b group {G}", f"#act.quant<bits={Q}, group={G}>"),
               (f"quant {Q}b group {same_group}", f"#act.quant<bits={Q}, group={same_group}>")]
    print(f"{'model':16} {'encoding of the spatial maps':26} {'ratio':>7} {'paper':>6} "
          f"{'err/scale':>18} {'variance/|g|^2':>15}")
    failed = []
    for name in a.models:
        out = os.path.join(out_root, name)
        manifest = export(os.path.join(HERE, f"models.py:{name}"), a.batch, 0, out)
        reference = driver.reference(manifest)
        P = manifest["parameters"]
        norm2 = sum(float(np.sum(np.square(r))) for r in reference[1:1 + P])
        # The spatial maps: what DIVISION encodes (a probe run of the pass).
        probe = driver.insert(manifest["files"]["joint"], os.path.join(out, "probe.mlir"),
                              f"encoding=\"{division}\"")
        saved = driver.memory_report(probe, os.path.join(out, "probe.json"))["graphs"][0]["saved"]
        ids = [s["id"] for s in saved if s["encoding"].startswith("#act.division")]
        small = any(min(s["shape"][2:]) < B for s in saved if s["id"] in ids)
        include = "include=" + ",".join(map(str, ids))
        for label, enc in configs:
            errors, grads, ratio = [], [], None
            for seed in range(1, a.seeds + 1):
                rows, results = run(manifest, out, f"encoding=\"{enc}\" {include}",
                                    label.replace(" ", "_"), seed)
                chosen = [r for r in rows if r["id"] in ids
                          and not r["encoding"].startswith("#act.mask")]
                ratio = (sum(r["bytes_before"] for r in chosen)
                         / sum(r["bytes_after"] for r in chosen))
                errors.append(driver.scaled_errors(results, reference, P)[1])
                grads.append([r.astype(np.float64) for r in results[1:1 + P]])
            variance = sum(float(np.sum(np.var(np.stack([g[i] for g in grads]), axis=0)))
                           for i in range(P)) / norm2
            m, s = stats(errors)
            print(f"{name:16} {label:26} {ratio:>6.2f}x {paper if label == 'division' else '':>6} "
                  f"{m:>9.2e}±{s:.0e} {variance:>15.2e}", flush=True)
            if label == "division" and not small and abs(ratio - paper) > 0.1 * paper:
                failed.append(name)
        if small:
            print(f"{name:16} (maps with sides below {B}: their block is the whole map, "
                  "so the formula does not apply)")
    if failed:
        print("DIVISION's compression is not within 10% of the paper's formula on: "
              + ", ".join(failed))
    return 1 if a.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
