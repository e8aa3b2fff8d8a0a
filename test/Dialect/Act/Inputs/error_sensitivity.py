"""Recomputes an "error" sensitivity profile from act-run's results:
    error_sensitivity.py PROFILE EXACT_DIR ID=DIR [ID=DIR ...]
EXACT_DIR holds the step's results without compression, each DIR the
results with only tensor ID compressed (at the profile's bits, the same
step seed and arguments). For each ID, c = ||g_ID - g||^2 / S(bits),
S(b) = (2^b - 1)^-2, the gradient every result but the loss (result_0);
it must equal the profile's sensitivity to 1e-6 (relative)."""
import glob
import json
import os
import sys

import numpy as np

profile_path, exact, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
profile = json.load(open(profile_path))
entries = {t["id"]: t for t in profile["tensors"]}


def gradient(d):
    names = sorted(glob.glob(os.path.join(d, "result_*.npy")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    return np.concatenate([np.load(p).astype(np.float64).ravel() for p in names[1:]])


g = gradient(exact)
for pair in pairs:
    tensor, d = pair.split("=", 1)
    entry = entries[int(tensor)]
    s = (2.0 ** entry["bits"] - 1) ** -2
    c = float(np.sum((gradient(d) - g) ** 2)) / s
    if not abs(c - entry["sensitivity"]) <= 1e-6 * max(c, 1e-30):
        sys.exit(f"tensor {tensor}: recomputed {c:.9e}, the profile says {entry['sensitivity']:.9e}")
    print(f"tensor {tensor}: sensitivity {c:.6e} recomputed")
