"""act-run's results on the GPU against the CPU's, per step:
    compare.py CPU_DIR GPU_DIR
Both hold one folder of result_<i>.npy per step. Prints, per step, how many
results are bitwise equal and the worst max|gpu - cpu| / max|cpu| over
them. Fails on a missing result, a shape mismatch, a NaN the CPU does not
have, or an error above the step's bound: 1e-4 for float32 and f16 steps
(reassociation, libdevice's exp/erf), 5e-2 for stochastically quantized ones
(the same Philox bits, but an activation that moves by reassociation can
round to the other code)."""
import os
import sys

import numpy as np

cpu, gpu = sys.argv[1], sys.argv[2]
ok = True
for name in sorted(os.listdir(cpu)):
    files = sorted(f for f in os.listdir(os.path.join(cpu, name)) if f.endswith(".npy"))
    bound = 5e-2 if "_q" in name else 1e-4
    same, worst, problems = 0, 0.0, []
    for f in files:
        path = os.path.join(gpu, name, f)
        if not os.path.exists(path):
            problems.append(f"{f} missing")
            continue
        a, b = np.load(os.path.join(cpu, name, f)), np.load(path)
        if a.shape != b.shape:
            problems.append(f"{f}: shape {a.shape} vs {b.shape}")
            continue
        if a.tobytes() == b.tobytes():
            same += 1
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if (np.isnan(b64) & ~np.isnan(a64)).any():
            problems.append(f"{f}: NaN")
            continue
        scale = max(float(np.abs(a64).max()), 1e-30)
        worst = max(worst, float(np.abs(a64 - b64).max()) / scale)
    if worst > bound:
        problems.append(f"error {worst:.3e} above {bound:g}")
    ok &= not problems
    print(f"{name}: {len(files)} results, {same} bitwise equal, "
          f"max |gpu - cpu| / max |cpu| = {worst:.3e}"
          + ("" if not problems else "  FAIL: " + "; ".join(problems)))
sys.exit(0 if ok else 1)
