"""act-run's results on the GPU against the CPU's, per step:
    compare.py CPU GPU_DIR
    compare.py --summarize CPU_DIR SUMMARY.npz
CPU is a folder of results (one folder of result_<i>.npy per step) or a
summary of one (--summarize: each result's shape, largest magnitude and
its values at up to 4096 evenly spaced positions; a GPU machine gets the
summary, the full results of ResNet-18 and the GPT would not travel).
Prints, per step, how many results are bitwise equal (full results) and the
worst max|gpu - cpu| / max|cpu| over them (over the summary's positions
when comparing with a summary). Fails on a missing result, a shape mismatch,
a NaN the CPU does not have, or an error above the step's bound: 1e-4 for
float32 and f16 steps (reassociation, libdevice's exp/erf), 5e-2 for
stochastically quantized ones (the same Philox bits, but an activation that
moves by reassociation can round to the other code)."""
import os
import sys

import numpy as np

SAMPLES = 4096


def positions(size):
    return np.unique(np.linspace(0, max(size - 1, 0), min(size, SAMPLES)).astype(np.int64))


def results(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".npy"))


def summarize(cpu, out):
    table = {}
    for name in sorted(os.listdir(cpu)):
        for f in results(os.path.join(cpu, name)):
            a = np.load(os.path.join(cpu, name, f))
            flat = a.reshape(-1).astype(np.float64)
            key = f"{name}/{f}"
            table[key + "/shape"] = np.array(a.shape, dtype=np.int64)
            table[key + "/scale"] = np.array(np.abs(flat).max() if flat.size else 0.0)
            table[key + "/values"] = flat[positions(flat.size)]
    np.savez_compressed(out, **table)


def main():
    if sys.argv[1] == "--summarize":
        summarize(sys.argv[2], sys.argv[3])
        return 0
    cpu, gpu = sys.argv[1], sys.argv[2]
    summary = np.load(cpu) if cpu.endswith(".npz") else None
    if summary is not None:
        steps = {}
        for key in summary.files:
            name, f, _ = key.split("/")
            steps.setdefault(name, set()).add(f)
        steps = {name: sorted(files) for name, files in steps.items()}
    else:
        steps = {name: results(os.path.join(cpu, name)) for name in sorted(os.listdir(cpu))}
    ok = True
    for name in sorted(steps):
        files = steps[name]
        bound = 5e-2 if "_q" in name else 1e-4
        same, worst, problems = 0, 0.0, []
        for f in files:
            path = os.path.join(gpu, name, f)
            if not os.path.exists(path):
                problems.append(f"{f} missing")
                continue
            b = np.load(path)
            if summary is not None:
                shape = tuple(summary[f"{name}/{f}/shape"])
                if shape != b.shape:
                    problems.append(f"{f}: shape {shape} vs {b.shape}")
                    continue
                flat = b.reshape(-1).astype(np.float64)
                a64, b64 = summary[f"{name}/{f}/values"], flat[positions(flat.size)]
                scale = float(summary[f"{name}/{f}/scale"])
                if a64.tobytes() == b64.tobytes():
                    same += 1
            else:
                a = np.load(os.path.join(cpu, name, f))
                if a.shape != b.shape:
                    problems.append(f"{f}: shape {a.shape} vs {b.shape}")
                    continue
                if a.tobytes() == b.tobytes():
                    same += 1
                    continue
                a64, b64 = a.astype(np.float64), b.astype(np.float64)
                scale = float(np.abs(a64).max()) if a64.size else 0.0
            if (np.isnan(b64) & ~np.isnan(a64)).any():
                problems.append(f"{f}: NaN")
                continue
            if a64.size:
                worst = max(worst, float(np.abs(a64 - b64).max()) / max(scale, 1e-30))
        if worst > bound:
            problems.append(f"error {worst:.3e} above {bound:g}")
        ok &= not problems
        print(f"{name}: {len(files)} results, {same} bitwise equal"
              + (" at the sampled positions" if summary is not None else "")
              + f", max |gpu - cpu| / max |cpu| = {worst:.3e}"
              + ("" if not problems else "  FAIL: " + "; ".join(problems[:4])
                 + (f"; ... ({len(problems)} problems)" if len(problems) > 4 else "")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
