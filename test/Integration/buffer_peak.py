"""Checks act-buffer-peak's JSON against act-run's measured peak: `exact`
(within 1%: the runtime's own allocations) or `below` (the convolution
kernels' scratch on top: 256 KB of gathered windows per thread at most,
plus their small sums)."""
import json
import re
import sys

args = sys.argv[1:]
for report, run, how in zip(args[0::3], args[1::3], args[2::3]):
    static = json.load(open(report))["functions"][0]["peak_bytes"]
    measured = int(re.search(r"memory: peak (\d+) bytes", open(run).read()).group(1))
    print(f"{report}: static {static}, measured {measured}")
    if how == "exact":
        assert abs(static - measured) <= 0.01 * measured, (static, measured)
    else:
        assert static < measured <= static + 256 * 1024 + 64 * 1024, (static, measured)
