#!/usr/bin/env python3
"""A bounded mutation fuzzer over act's examples, through act-opt.

Each case takes an example training graph (examples/*.mlir), applies a few
random textual mutations (numbers, shapes, element types, encoding
parameters, deleted or duplicated lines, swapped SSA names) and runs act-opt
with one of act's pass pipelines under a time limit. A clean diagnostic
(exit 1) or success (exit 0) is fine; a signal, a sanitizer report, an exit
code other than 0/1, or a timeout is a finding, written with its command to
the output directory. A crash that the stock mlir-opt of the LLVM install
reproduces on the same file (parsing it alone) is upstream's, counted apart
(--mlir-opt).

    fuzz/mutate.py --act-opt build/bin/act-opt --cases 2000 --seed 7 -o out/

Exit status 1 when anything was found.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")

PIPELINES = [
    ["-act-insert-encode-decode"],
    ["-act-insert-encode-decode=encoding=#act.quant<bits=2,group=64>",
     "-act-memory-report=table=-"],
    ["-act-insert-encode-decode=encoding=#act.float<format=fp10>",
     "-convert-act-to-linalg"],
    ["-act-insert-encode-decode", "-act-cpu-pipeline"],
    ["-act-insert-encode-decode=encoding=#act.quant<bits=1,group=48>",
     "-act-cpu-pipeline"],
    ["-act-insert-encode-decode", "-act-gpu-pipeline"],
    ["-act-memory-report=json=-"],
]

NUMBER = re.compile(r"(?<![%\w#])\d+(?:\.\d+)?(?:e[-+]?\d+)?")
TYPE = re.compile(r"\b(f32|f16|bf16|f64|i64|i32|i1|index)\b")
SSA = re.compile(r"%[A-Za-z_0-9]+")
INTERESTING = ["0", "1", "-1", "2", "3", "7", "16", "255", "256", "4099",
               "2147483648", "9223372036854775807", "1e39", "nan", "?"]


def mutate(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        i = rng.randrange(len(lines))
        line = lines[i]
        if kind == 0:
            numbers = list(NUMBER.finditer(line))
            if numbers:
                m = rng.choice(numbers)
                line = line[:m.start()] + rng.choice(INTERESTING) + line[m.end():]
        elif kind == 1:
            types = list(TYPE.finditer(line))
            if types:
                m = rng.choice(types)
                new = rng.choice(["f32", "f16", "bf16", "f64", "i64", "i32", "i1"])
                line = line[:m.start()] + new + line[m.end():]
        elif kind == 2:
            names = SSA.findall(line)
            if len(names) >= 2:
                a, b = rng.sample(names, 2)
                line = line.replace(a, "\0").replace(b, a).replace("\0", b)
        elif kind == 3:
            del lines[i]
            continue
        elif kind == 4:
            lines.insert(i, line)
        else:
            if line:
                j = rng.randrange(len(line))
                line = line[:j] + line[j + 1:]
        lines[i] = line
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--act-opt", required=True)
    ap.add_argument("--mlir-opt", default="/usr/lib/llvm-22/bin/mlir-opt",
                    help="the stock mlir-opt, to tell upstream's crashes")
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop after this long (0: run all cases)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()

    os.makedirs(args.output, exist_ok=True)
    examples = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".mlir"))
    sources = {f: open(os.path.join(EXAMPLES, f)).read() for f in examples}
    rng = random.Random(args.seed)
    start = time.time()
    counts = {"ok": 0, "diagnostic": 0, "finding": 0, "upstream": 0}
    for case in range(args.cases):
        if args.seconds and time.time() - start > args.seconds:
            break
        name = rng.choice(examples)
        text = mutate(sources[name], rng)
        passes = rng.choice(PIPELINES)
        path = os.path.join(args.output, "case.mlir")
        with open(path, "w") as f:
            f.write(text)
        cmd = [args.act_opt, path, *passes, "-o", os.devnull]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=args.timeout)
            rc, err = r.returncode, r.stderr
            bad = rc not in (0, 1) or "Sanitizer" in err or \
                "PLEASE submit a bug report" in err
        except subprocess.TimeoutExpired:
            rc, err, bad = "timeout", "", True
        if bad and rc != "timeout" and os.path.exists(args.mlir_opt):
            # Does upstream's parser alone crash on it?
            try:
                u = subprocess.run([args.mlir_opt, path, "-o", os.devnull,
                                    "--allow-unregistered-dialect"],
                                   capture_output=True, timeout=args.timeout)
                if u.returncode not in (0, 1):
                    counts["upstream"] += 1
                    stem = os.path.join(args.output, f"upstream-{case}")
                    with open(stem + ".mlir", "w") as f:
                        f.write(text)
                    continue
            except subprocess.TimeoutExpired:
                pass
        if bad:
            counts["finding"] += 1
            stem = os.path.join(args.output, f"finding-{case}")
            with open(stem + ".mlir", "w") as f:
                f.write(text)
            with open(stem + ".txt", "w") as f:
                f.write(f"{' '.join(cmd[2:])}\nexit: {rc}\n{err[-4000:]}")
            print(f"finding {case}: {name} {' '.join(passes)}: exit {rc}")
        else:
            counts["ok" if rc == 0 else "diagnostic"] += 1
    if os.path.exists(path := os.path.join(args.output, "case.mlir")):
        os.remove(path)
    total = sum(counts.values())
    print(f"mutate: {total} cases in {time.time() - start:.0f} s: "
          f"{counts['ok']} ran, {counts['diagnostic']} clean diagnostics, "
          f"{counts['finding']} findings, {counts['upstream']} crashes of "
          f"upstream's parser alone")
    return 1 if counts["finding"] else 0


if __name__ == "__main__":
    sys.exit(main())
