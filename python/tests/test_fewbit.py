"""Few-bit backward end to end: models whose activations no act code names
(bench/fewbit/models.py: GELU, SiLU, ELU, tanh) get few-bit
codes for exactly the values their backward reads through phi(x), the
compiled step runs, and its gradients stay close to float64 autograd;
at 4 bits the codes beat 4-bit quantization of the same tensors.

Needs act-opt and act-run: ACT_BIN_DIR (lit sets it) or build/bin.
"""

import os
import re
import statistics
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402

MODELS = os.path.join(ROOT, "bench", "fewbit", "models.py")


def step_errors(manifest, out, options, tag, seed=1):
    mlir = driver.insert(manifest["files"]["joint"], str(out / f"{tag}.mlir"),
                         options + " min-bytes=0")
    results, _, _ = driver.step(mlir, manifest["inputs"], str(out / tag),
                                manifest["parameters"] + 1, f"--step-seed={seed}")
    reference = driver.reference(manifest)
    loss, scaled, _ = driver.scaled_errors(results, reference, manifest["parameters"])
    errors = driver.relative_errors(results, reference)
    return open(mlir).read(), loss, scaled, max(errors[1:])


@pytest.mark.parametrize("model", ["gelu", "silu", "softplus", "selu"])
def test_fewbit_codes_from_the_graph(model, tmp_path):
    manifest = export(f"{MODELS}:{model}", 16, 0, str(tmp_path))
    text, loss, scaled, worst = step_errors(manifest, tmp_path, "few-bit=4", "fb4")
    ids = sorted({int(i) for i in re.findall(
        r"act\.encode [^\n]*, id = (\d+)[^\n]*#act\.fewbit<bits = 4", text)})
    # Both activations' inputs, and nothing else (the rest is #act.quant).
    assert len(ids) == 2, ids
    assert text.count("#act.quant") > 0
    assert loss <= 1e-5  # the forward pass does not read encoded values
    print(f"{model}: few-bit 4 bits on ids {ids}: gradient error {scaled:.2e} of the "
          f"gradients' norm, worst tensor {worst:.2e}")
    # One step seed: the other tensors' 4-bit stochastic rounding adds noise
    # (silu: 0.101 with the 8-bit-per-element stream at this seed).
    assert scaled < 0.12

    # The same tensors, alone: few-bit codes against 4-bit quantization
    # (stochastic: the mean over three step seeds).
    include = "include=" + ",".join(map(str, ids))
    _, _, fb, fb_worst = step_errors(manifest, tmp_path, f"few-bit=4 {include}", "fb4_only")
    quant = [step_errors(manifest, tmp_path, f"encoding=#act.quant<bits=4> {include}",
                         f"q4_{s}", s) for s in (1, 2, 3)]
    q_worst = statistics.mean(q[3] for q in quant)
    print(f"{model}: worst tensor few-bit 4 bits {fb_worst:.2e}, quant 4 bits {q_worst:.2e}")
    assert fb_worst < q_worst
