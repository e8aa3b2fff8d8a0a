"""The float64 PyTorch result of an exported step on inputs.py's inputs, as
a summary compare.py reads (compare.py --summarize's format):
    reference.py MODELS.py NAME MANIFEST.json INPUTS_DIR OUT.npz
Results in act's order: the loss, the parameters' gradients, the updated
buffers (BatchNorm's running statistics, training mode). On a GPU machine,
`compare.py OUT.npz gpu` then gives the GPU's error against float64, beside
the CPU's (`compare.py OUT.npz cpu` here): float32 steps at batch 256 sum
BatchNorm's statistics and weight gradients over 262,144 terms, so both
differ from float64, and from each other, by more than float32's epsilon."""
import importlib.util
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import positions  # noqa: E402


def main():
    models_py, name, manifest, inputs, out = sys.argv[1:6]
    spec = importlib.util.spec_from_file_location("models", models_py)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    m = json.load(open(manifest))
    files = sorted(os.listdir(inputs))
    values = {a["name"]: np.load(os.path.join(inputs, f))
              for a, f in zip(m["arguments"], files)}
    torch.manual_seed(0)
    module, _, _ = getattr(models, name)(1)
    state = module.state_dict()
    for key in state:
        state[key] = torch.tensor(values[key if key in values else "buffer_" + key])
    module.load_state_dict(state)
    module = module.double().train()
    x = torch.tensor(values["inputs"])
    if x.is_floating_point():
        x = x.double()
    loss = torch.nn.functional.cross_entropy(module(x), torch.tensor(values["targets"]))
    loss.backward()
    results = [loss.detach()] + [p.grad for p in module.parameters()]
    buffers = dict(module.named_buffers())
    results += [buffers[b] for b in m.get("updated_buffers", [])]
    table = {}
    for i, r in enumerate(results):
        flat = r.detach().double().numpy().reshape(-1)
        key = f"{name}/result_{i}.npy"
        table[key + "/shape"] = np.array(r.shape, dtype=np.int64)
        table[key + "/scale"] = np.array(np.abs(flat).max() if flat.size else 0.0)
        table[key + "/values"] = flat[positions(flat.size)]
    np.savez_compressed(out, **table)


if __name__ == "__main__":
    main()
