"""Kernel time of one act-run GPU step by launch shape, from Nsight Compute's
CSV (`ncu --metrics gpu__time_duration.sum --csv ...`): total kernel time,
then the shapes (grid x block) that take the most, with their launch counts.
Usage: profile.py NCU.csv [TOP]"""
import csv
import sys
from collections import defaultdict

SCALE = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3,
         "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    shapes = defaultdict(lambda: [0, 0.0])
    total, launches = 0.0, 0
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ms = float(row["Metric Value"].replace(",", "")) * SCALE[row["Metric Unit"]]
        key = f"grid {row['Grid Size']} block {row['Block Size']}"
        shapes[key][0] += 1
        shapes[key][1] += ms
        total += ms
        launches += 1
    if not launches:
        sys.exit(f"{path}: no gpu__time_duration.sum rows")
    print(f"{launches} launches, {total:.2f} ms of kernel time")
    for key, (count, ms) in sorted(shapes.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {ms:8.2f} ms  {count:4d} launches  {key}")


if __name__ == "__main__":
    main()
