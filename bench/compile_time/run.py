#!/usr/bin/env python3
"""Compile time of act's insertion pipeline on deep synthetic training graphs.

Times `act-opt -act-insert-encode-decode -act-memory-report` and the stock
`mlir-opt --canonicalize` on the same generated files (about 10k and 100k
ops), as medians of repeated runs: whole process (parse + passes + print)
and the passes alone (from -mlir-timing). Prints the scaling ratio
(goal: 100k/10k <= 12, i.e. linear) and act against canonicalize (goal:
<= 1.5x).

    bench/compile_time/run.py [--build build] [--runs 5]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_graph import generate  # noqa: E402

MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
ACT_PASSES = ("ActInsertEncodeDecodePass", "ActMemoryReportPass")


def run(cmd, pass_names):
    """Wall seconds of the process and the summed -mlir-timing of passes."""
    start = time.perf_counter()
    p = subprocess.run(cmd + ["-mlir-timing"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    passes = 0.0
    for line in p.stderr.splitlines():
        m = re.match(r"\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\S+)$", line)
        if m and m.group(2) in pass_names:
            passes += float(m.group(1))
    return wall, passes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(
        os.path.dirname(__file__), "..", "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--large", action="store_true",
                    help="also time 30k and 300k ops (scaling once out of cache)")
    args = ap.parse_args()
    act_opt = os.path.join(args.build, "bin", "act-opt")

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        sizes = (10_000, 30_000, 100_000, 300_000) if args.large else (10_000, 100_000)
        for target in sizes:
            text, ops = generate(target)
            path = os.path.join(tmp, f"g{target}.mlir")
            with open(path, "w") as f:
                f.write(text)
            act_cmd = [act_opt, path, "-act-insert-encode-decode",
                       "-act-memory-report=table=" + os.devnull, "-o", os.devnull]
            canon_cmd = [MLIR_OPT, path, "--canonicalize", "-o", os.devnull]
            act = [run(act_cmd, ACT_PASSES) for _ in range(args.runs)]
            canon = [run(canon_cmd, ("Canonicalizer",)) for _ in range(args.runs)]
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            rows[target] = dict(ops=ops, act_wall=med(act, 0), act_pass=med(act, 1),
                                canon_wall=med(canon, 0), canon_pass=med(canon, 1))

    print(f"median of {args.runs} runs; act = -act-insert-encode-decode -act-memory-report")
    print(f"{'ops':>8} {'act s':>8} {'canon s':>8} {'ratio':>6}   "
          f"{'act passes s':>12} {'canon pass s':>12} {'ratio':>6}")
    for r in rows.values():
        print(f"{r['ops']:>8} {r['act_wall']:8.3f} {r['canon_wall']:8.3f} "
              f"{r['act_wall'] / r['canon_wall']:6.2f}   {r['act_pass']:12.3f} "
              f"{r['canon_pass']:12.3f} {r['act_pass'] / r['canon_pass']:6.2f}")
    small, big = rows[10_000], rows[100_000]
    scale_wall = big["act_wall"] / small["act_wall"]
    scale_pass = big["act_pass"] / small["act_pass"]
    vs_wall = big["act_wall"] / big["canon_wall"]
    vs_pass = big["act_pass"] / big["canon_pass"]
    ok = lambda v, lim: "ok" if v <= lim else "OVER"
    print(f"scaling 100k/10k (goal <= 12): process {scale_wall:.2f} "
          f"[{ok(scale_wall, 12)}], passes {scale_pass:.2f} [{ok(scale_pass, 12)}]")
    print(f"  canonicalize on the same files:  process "
          f"{big['canon_wall'] / small['canon_wall']:.2f}, passes "
          f"{big['canon_pass'] / small['canon_pass']:.2f}")
    if args.large:
        a, b = rows[30_000], rows[300_000]
        print(f"scaling 300k/30k (goal <= 12): process {b['act_wall'] / a['act_wall']:.2f}, "
              f"passes {b['act_pass'] / a['act_pass']:.2f}; canonicalize: process "
              f"{b['canon_wall'] / a['canon_wall']:.2f}, passes "
              f"{b['canon_pass'] / a['canon_pass']:.2f}")
    print(f"act / canonicalize at 100k (goal <= 1.5): process {vs_wall:.2f} "
          f"[{ok(vs_wall, 1.5)}], passes {vs_pass:.2f} [{ok(vs_pass, 1.5)}]")


if __name__ == "__main__":
    main()
