#!/usr/bin/env python3
"""Compares act-run outputs for the integration tests.

    compare.py close REF_DIR OTHER_DIR FIRST LAST BOUND
        every result_<i>.npy, FIRST <= i <= LAST, has a relative L2 error
        ||other - ref|| / ||ref|| <= BOUND; prints the errors
    compare.py peak-lower WITH_LOG WITHOUT_LOG
        the 'memory: peak N bytes' of WITH_LOG is below that of WITHOUT_LOG
"""

import re
import sys


def close(ref, other, first, last, bound):
    import numpy as np
    worst = 0.0
    for i in range(int(first), int(last) + 1):
        a = np.load(f"{ref}/result_{i}.npy").astype(np.float64)
        b = np.load(f"{other}/result_{i}.npy").astype(np.float64)
        if a.shape != b.shape:
            sys.exit(f"result_{i}: shapes {a.shape} and {b.shape}")
        err = float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))
        print(f"result_{i}: relative L2 error {err:.4f}")
        worst = max(worst, err)
    if worst > float(bound):
        sys.exit(f"worst relative error {worst:.4f} exceeds {bound}")
    print(f"worst {worst:.4f} <= {bound}")


def peak(path):
    m = re.search(r"memory: peak (\d+) bytes", open(path).read())
    if not m:
        sys.exit(f"no peak in {path}")
    return int(m.group(1))


def main():
    cmd = sys.argv[1]
    if cmd == "close":
        close(*sys.argv[2:7])
    elif cmd == "peak-lower":
        a, b = peak(sys.argv[2]), peak(sys.argv[3])
        print(f"peak with encodings {a} bytes, without {b} bytes ({b / a:.2f}x)")
        if a >= b:
            sys.exit("the encoded step does not use less memory")
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
