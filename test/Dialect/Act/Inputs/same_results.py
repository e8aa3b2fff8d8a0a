"""Checks that act-run's result_<i>.npy files are bitwise equal in every
directory given (the first is the reference); prints how many.

With --within R: equal up to R, relative to the reference result's largest
magnitude (a lossy encoding's results), instead; prints the largest such
difference and how many results are not bitwise equal."""
import glob
import os
import sys

import numpy as np

args = sys.argv[1:]
within = None
if args[:1] == ["--within"]:
    within, args = float(args[1]), args[2:]
dirs = args
names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(dirs[0], "result_*.npy")))
if not names:
    sys.exit(f"no results in {dirs[0]}")
largest, differ = 0.0, 0
for d in dirs[1:]:
    for n in names:
        a, b = np.load(os.path.join(dirs[0], n)), np.load(os.path.join(d, n))
        if a.shape != b.shape or a.dtype != b.dtype:
            sys.exit(f"{d}/{n}: {b.dtype}{list(b.shape)}, the reference {a.dtype}{list(a.shape)}")
        if a.tobytes() == b.tobytes():
            continue
        if within is None:
            sys.exit(f"{d}/{n} differs from {dirs[0]}/{n}")
        differ += 1
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        scale = max(float(np.max(np.abs(a64))), 1e-30)
        rel = float(np.max(np.abs(a64 - b64))) / scale
        if not rel <= within:
            sys.exit(f"{d}/{n} differs from {dirs[0]}/{n} by {rel:.3g} of its largest "
                     f"magnitude, more than {within}")
        largest = max(largest, rel)
if within is None:
    print(f"{len(names)} results bitwise equal in {len(dirs)} directories")
else:
    print(f"{len(names)} results within {within} in {len(dirs)} directories "
          f"(largest difference {largest:.2g}), {differ} not bitwise equal")
