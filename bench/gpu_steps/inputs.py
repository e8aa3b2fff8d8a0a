"""Writes a training step's inputs as .npy files, in its arguments' order,
from its exporter manifest's names, shapes and dtypes alone:
    inputs.py MANIFEST.json OUT_DIR [SEED]
prints the files, comma-separated (act-run --inputs=...).

Deterministic with numpy's PCG64 `random()` only (uniform doubles, a stream
numpy keeps from version to version; normals by Box-Muller here), so a GPU
machine regenerates exactly the inputs the CPU results were computed from,
without copying them (ResNet-18 and the GPT's parameters alone would exceed
what the device tool carries). The values are what a model starts training
from: weights of two or more dims uniform in +-1/sqrt(fan_in) (PyTorch's
default family), 1-D weights 1, biases 0, other parameters N(0, 0.02^2);
BatchNorm running means 0, variances 1, counters 0; a "mask" buffer
lower-triangular ones (causal attention); "inputs" N(0, 1) floats, or
tokens below the classes for integers; "targets" classes below the last
2-D weight's rows (the classifier's outputs)."""
import json
import os
import sys

import numpy as np


def main():
    manifest, out = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    args = json.load(open(manifest))["arguments"]
    rng = np.random.Generator(np.random.PCG64(seed))
    two_d = [a for a in args if len(a["shape"]) >= 2 and a["name"].endswith("weight")]
    classes = two_d[-1]["shape"][0] if two_d else 10

    def uniform(shape, low, high):
        return low + (high - low) * rng.random(shape)

    def normal(shape):
        u1 = 1.0 - rng.random(shape)
        u2 = rng.random(shape)
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)

    def integers(shape, high):
        return np.minimum(np.floor(rng.random(shape) * high), high - 1)

    os.makedirs(out, exist_ok=True)
    files = []
    for i, a in enumerate(args):
        name, shape = a["name"], tuple(a["shape"])
        dtype = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
                 "i32": np.int32, "f16": np.float16}[a["dtype"]]
        integer = np.issubdtype(dtype, np.integer)
        if name == "targets":
            value = integers(shape, classes)
        elif name == "inputs":
            value = integers(shape, classes) if integer else normal(shape)
        elif name.endswith("mask"):
            value = np.broadcast_to(np.tril(np.ones(shape[-2:])), shape)
        elif name.endswith("running_var"):
            value = np.ones(shape)
        elif name.startswith("buffer_") or integer:
            value = np.zeros(shape)
        elif name.endswith("bias"):
            value = np.zeros(shape)
        elif name.endswith("weight") and len(shape) >= 2:
            bound = 1.0 / np.sqrt(max(1, int(np.prod(shape[1:]))))
            value = uniform(shape, -bound, bound)
        elif name.endswith("weight"):
            value = np.ones(shape)
        else:
            value = 0.02 * normal(shape)
        path = os.path.join(out, f"{i:03d}_{name}.npy")
        np.save(path, np.array(value, dtype=dtype))  # (0-d stays 0-d)
        files.append(path)
    print(",".join(files))


if __name__ == "__main__":
    main()
