"""Kernel time of one act-run GPU step by launch shape, from Nsight Compute's
CSV (`ncu --metrics gpu__time_duration.sum[,dram__throughput...,sm__throughput...]
--csv ...`): total kernel time, then the shapes (grid x block) that take the
most, with their launch counts, then the kernels (by name) that take the
most, with their DRAM and SM throughput as a percentage of peak where the
CSV has them (a kernel far below both is bound by latency or launches).
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
    kernels = defaultdict(lambda: {"ms": 0.0, "n": 0, "dram": 0.0, "sm": 0.0, "shape": ""})
    for launch in per_launch.values():
        if "ms" not in launch:
            continue
        k = kernels[launch["name"]]
        k["ms"] += launch["ms"]
        k["n"] += 1
        k["shape"] = launch["shape"]
        k["dram"] += launch.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", float("nan"))
        k["sm"] += launch.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", float("nan"))
    print(f"kernels by time ({len(kernels)} distinct; DRAM and SM: % of peak, mean over launches)")
    for name, k in sorted(kernels.items(), key=lambda kv: -kv[1]["ms"])[:top]:
        print(f"  {k['ms']:8.2f} ms  {k['n']:4d} x  DRAM {k['dram'] / k['n']:5.1f}  "
              f"SM {k['sm'] / k['n']:5.1f}  {k['shape']}  {name}")


if __name__ == "__main__":
    main()
