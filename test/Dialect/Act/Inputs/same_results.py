"""Checks that act-run's result_<i>.npy files are bitwise equal in every
directory given (the first is the reference); prints how many."""
import glob
import os
import sys

import numpy as np

dirs = sys.argv[1:]
names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(dirs[0], "result_*.npy")))
if not names:
    sys.exit(f"no results in {dirs[0]}")
for d in dirs[1:]:
    for n in names:
        a, b = np.load(os.path.join(dirs[0], n)), np.load(os.path.join(d, n))
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            sys.exit(f"{d}/{n} differs from {dirs[0]}/{n}")
print(f"{len(names)} results bitwise equal in {len(dirs)} directories")
