"""Kernel time of one act-run GPU step by launch shape, from Nsight Compute's
CSV (`ncu --metrics gpu__time_duration.sum[,dram__throughput...,sm__throughput...]
--csv ...`): total kernel time, then the shapes (grid x block) that take the
most, with their launch counts, then the costliest launches, with their
DRAM and SM throughput as a percentage of peak where the CSV has them (a
kernel far below both is bound by latency, or has too few threads).
Usage: ncu_kernels.py NCU.csv [TOP]"""
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
    # Per launch (its ID): its kernel, shape and metrics.
    per_launch = defaultdict(dict)
    for row in rows:
        launch = per_launch[row.get("ID")]
        launch["name"] = row.get("Kernel Name", "?")
        launch["shape"] = f"grid {row['Grid Size']} block {row['Block Size']}"
        metric = row.get("Metric Name")
        if metric and metric != "gpu__time_duration.sum":
            try:
                launch[metric] = float(row["Metric Value"].replace(",", ""))
            except ValueError:
                pass
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        launch["ms"] = float(row["Metric Value"].replace(",", "")) * SCALE[row["Metric Unit"]]
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
    # MLIR names every outlined kernel after its function, each in a module
    # of its own: launches are told apart by their order (ncu's ID), which
    # follows the lowered step's gpu.launch_func ops.
    timed = [(int(i), l) for i, l in per_launch.items() if "ms" in l]
    print("costliest launches (ID = launch order; DRAM, SM: % of peak)")
    for i, l in sorted(timed, key=lambda kv: -kv[1]["ms"])[:top]:
        dram = l.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", float("nan"))
        sm = l.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", float("nan"))
        print(f"  {l['ms']:8.3f} ms  ID {i:4d}  DRAM {dram:5.1f}  SM {sm:5.1f}  "
              f"{l['shape']}  {l['name']}")


if __name__ == "__main__":
    main()
