"""`python3 -m act.export`: a model's files (the module docstring of
act.export) and the command line."""

import argparse
import json
import os
import sys

import numpy as np
import torch

from .. import torchversion
from ..models import load, tensors_of
from .dynamic import batch_symbols, other_batch
from .emit import Exporter, header
from ..errors import ExportError
from ..dtypes import argument_dtype, mlir_dtype
from .trace import Traced, _data_names


def export(spec, batch, seed, out_dir, argv=(), batches=1, dynamic_batch=False):
    """Writes the files of the module docstring; returns the manifest.
    batches > 1 adds mini-batches (inputs and targets only, drawn with seeds
    derived from `seed`) for act-run --batch-inputs. dynamic_batch: the
    forms take every batch size (`?`; traced at batch and 2 * batch + 1,
    export/dynamic.py), the files' data at `batch`."""
    workload = load(spec, batch, seed)
    traced = Traced(workload, seed)
    ex = Exporter(traced)
    name = workload.name
    forms = {"joint": ex.joint, "split": ex.split}
    if dynamic_batch:
        # (Both real or both shapes only: fake tensors give some results
        # other shapes than the real kernels do.)
        second = Traced(load(spec, other_batch(batch), seed), seed,
                        real_tensors=not traced.shapes_only)
        symbols = batch_symbols(traced, second, batch)
        forms = {form: (lambda form: lambda: ex.dynamic(symbols, batch, form))(form)
                 for form in forms}
    os.makedirs(out_dir, exist_ok=True)
    files = {"joint": os.path.join(out_dir, f"{name}.mlir"),
             "split": os.path.join(out_dir, f"{name}_split.mlir")}
    for form, path in files.items():
        text = forms[form]()
        with open(path, "w") as f:
            f.write(header(name, form, argv) + text)
    in_dir = os.path.join(out_dir, f"{name}_inputs")
    ref_dir = os.path.join(out_dir, f"{name}_reference")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(ref_dir, exist_ok=True)
    arg_names = traced.arg_names
    inputs = []
    for i, (nm, a) in enumerate(zip(arg_names, traced.args)):
        path = os.path.join(in_dir, f"{i:03d}_{nm}.npy")
        np.save(path, a.detach().cpu().numpy())
        inputs.append(path)
    extra = []
    for k in range(1, batches):
        more = load(spec, batch, seed * 1000003 + k)
        paths = []
        for nm, t in zip(_data_names("inputs", more.inputs) + _data_names("targets", more.targets),
                         tensors_of(more.inputs) + tensors_of(more.targets)):
            path = os.path.join(in_dir, f"batch{k}_{nm}.npy")
            np.save(path, t.numpy())
            paths.append(path)
        extra.append(paths)
    loss, grads, f32_error = traced.reference()
    # (Under 1.13 eager runs the traced kernels: counted once.)
    hooks_bytes = traced.hooked_saved_bytes()
    np.save(os.path.join(ref_dir, "loss.npy"), loss.numpy())
    for i, gr in enumerate(grads):
        np.save(os.path.join(ref_dir, f"grad_{i}.npy"), gr.numpy())
    manifest = {
        "model": name, "batch": batch, "seed": seed, "torch": torch.__version__,
        "files": files,
        "arguments": [{"name": nm, "shape": list(a.shape), "dtype": argument_dtype(a.dtype)}
                      for nm, a in zip(arg_names, traced.args)],
        "inputs": inputs,
        "batches": extra,
        "reference": {"loss": float(loss), "dir": ref_dir, "dtype": "f64",
                      "f32_autograd_max_rel_error": max(f32_error, default=0.0)},
        "parameters": len(traced.params),
        "parameters_without_gradient": [traced.param_names[i] for i in traced.without_gradient()],
        "buffers": [{"name": n, "shape": list(b.shape), "dtype": mlir_dtype(b.dtype)}
                    for n, b in zip(traced.buffer_names, traced.buffers)],
        # Results after the gradients (joint form), or after the loss (split
        # forward): the new values of these buffers, in this order.
        "updated_buffers": [traced.buffer_names[i] for i, _ in ex.updated],
        "records": traced.record_names,
        "constants": {"inlined": len(traced.constants) - len(traced.large_constants),
                      "arguments": traced.large_constants},
        "dropout_calls": traced.random_counts["dropout"],
        "saved": {"aot_autograd_values": len(traced.saved),
                  "hooks_bytes": hooks_bytes,
                  "hooks_bytes_as_traced": (traced.hooked_saved_bytes(as_traced=True)
                                            if torchversion.TORCH2 else hooks_bytes),
                  "argument_bytes": ex.saved_argument_bytes()},
    }
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python3 -m act.export", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="mlp, cnn, resnet18, transformer, or file.py:factory")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output-dir", default=".")
    p.add_argument("--batches", type=int, default=1,
                   help="mini-batches to write (the extra ones for act-run --batch-inputs)")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="one step for every batch size: the batch dimension is `?` "
                        "(traced at --batch and 2 * --batch + 1; refused where the graph "
                        "depends on the batch otherwise than through its size)")
    a = p.parse_args(argv)
    if a.batch < 1:
        p.error("--batch must be positive")
    if a.dynamic_batch and a.batch < 2:
        p.error("--dynamic-batch needs --batch of at least 2 (PyTorch specializes dims of "
                "size 1)")
    try:
        m = export(a.model, a.batch, a.seed, a.output_dir, argv, a.batches, a.dynamic_batch)
    except (ExportError, ValueError) as e:
        print(f"act.export: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"act.export: error: cannot write the export to '{a.output_dir}': "
              f"{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # Never a traceback: say what failed, and where.
        if os.environ.get("ACT_EXPORT_TRACEBACK"):
            raise
        print(f"act.export: error: tracing '{a.model}' failed with "
              f"{type(e).__name__}: {e} (ACT_EXPORT_TRACEBACK=1 shows where)",
              file=sys.stderr)
        return 1
    print(f"act.export: {m['model']} (batch {a.batch}, seed {a.seed}): {m['parameters']} parameters, "
          f"{m['saved']['aot_autograd_values']} saved values")
    if m["dropout_calls"]:
        print(f"  dropout: {m['dropout_calls']} call(s), masks from the step's dropout_seed "
              f"argument (Philox4x32-10; this export's seed: {a.seed})")
    print(f"  joint: {m['files']['joint']}\n  split: {m['files']['split']}")
    print(f"  inputs: {len(m['inputs'])} .npy files in {os.path.dirname(m['inputs'][0])} "
          f"(manifest {os.path.join(a.output_dir, m['model'] + '.json')})")
    return 0
