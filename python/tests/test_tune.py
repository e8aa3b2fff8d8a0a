"""act-tune on exported models (issue: GACT's loop): the predicted
compression variance against the variance measured under the same bits, and
the tuned allocation against uniform bits of the same budget."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act.export.cli import export  # noqa: E402
from act.tune import tune  # noqa: E402


@pytest.mark.parametrize("model,batch", [("mlp", 32), ("cnn", 16)])
def test_tuned_allocation(tmp_path, model, batch):
    manifest = export(model, batch, 0, str(tmp_path / "export"), batches=4)
    report = tune(manifest, str(tmp_path / "tune"), average_bits=4.0, variance_runs=24,
                  quiet=True)
    rows = {r["allocation"]: r for r in report["variance"]}
    for name, r in rows.items():
        print(f"{model} {name}: predicted {r['predicted']:.4g} measured {r['measured']:.4g}")
        # GACT's Eq. 5 with the measured c_l predicts the variance of the
        # allocation it was computed for (the done-when bound: a factor of 2).
        assert 0.5 <= r["predicted"] / r["measured"] <= 2.0, (name, r)
    # At 4 bits on average the tuned allocation adds no more variance than
    # uniform 4 bits, and the exact solver is at least as good as the greedy.
    assert rows["exact"]["measured"] <= rows["uniform"]["measured"] * 1.0001
    assert report["exact_objective"] <= report["greedy_objective"] * (1 + 1e-12)
    # L + 1 evaluations per batch over the measured (quantized) tensors; the
    # ones read only through a sign test are 1-bit masks, not measured.
    assert report["evaluations"] == 4 * (report["measured_tensors"] + 1)
    assert (tmp_path / "tune" / "sensitivity.svg").stat().st_size > 1000
    assert (tmp_path / "tune" / "tuned.mlir").read_text().count("act.encode") > 0


def test_division_variance_model(tmp_path):
    """#act.division's variance model for the allocator: c^division measured
    at 2 bits predicts the compression variance at 4 bits (c S(4)), as GACT's
    model does for #act.quant; and act-allocate-bits, given both families'
    profiles, predicts the variance of the mixed allocation it chooses."""
    from act import driver
    from act.tune import allocate, measure, measured_variance

    manifest = export("cnn", 16, 0, str(tmp_path / "export"), batches=4)
    joint = manifest["files"]["joint"]
    profiles = {}
    for family, encoding in [("quant", "#act.quant<bits=2>"),
                             ("division", "#act.division<block=4, bits=2>")]:
        profiles[family] = str(tmp_path / f"{family}.json")
        measure(joint, manifest["inputs"], manifest["batches"], profiles[family],
                encoding=encoding)
    with open(profiles["division"]) as f:
        division = json.load(f)
    assert all(t["encoding"] == "#act.division<block = 4>" for t in division["tensors"])
    ids = ",".join(str(t["id"]) for t in division["tensors"])
    at4 = driver.insert(joint, str(tmp_path / "division4.mlir"),
                        f"encoding=\"#act.division<block=4, bits=4>\" include={ids}")
    predicted = sum(t["sensitivity"] for t in division["tensors"]) / 15 ** 2
    measured = measured_variance(at4, manifest, 24)
    print(f"division at 4 bits: predicted {predicted:.4g} measured {measured:.4g}")
    assert 0.5 <= predicted / measured <= 2.0

    # Both families: every tensor's choice is predicted as a whole.
    _, allocation = allocate(joint, [profiles["quant"], profiles["division"]], 3.0,
                             str(tmp_path / "mixed.mlir"), str(tmp_path / "mixed.json"))
    predicted = allocation["exact"]["objective"]
    measured = measured_variance(str(tmp_path / "mixed.mlir"), manifest, 24)
    print(f"mixed: predicted {predicted:.4g} measured {measured:.4g}, encodings "
          f"{sorted(set(t['encoding'] for t in allocation['tensors']))}")
    assert 0.5 <= predicted / measured <= 2.0


def test_fewbit_family(tmp_path):
    """Few-bit codes as a family of act-allocate-bits (issue 18): act-run
    --fewbit-sensitivity measures the gradient error of the GELU input's
    table, c = ||g_fewbit - g||^2 / L(B); c measured at 2 bits predicts the
    error at 4 bits (the cost c L(b) the allocator uses); at 2 bits on
    average the allocator stores that input as few-bit codes, predicts the
    mixed allocation's mean squared error against the exact gradient, and
    that error is below the quant-only allocation's of the same budget."""
    from act.tune import allocate, measure_fewbit, measured_variance

    manifest = export("transformer", 8, 0, str(tmp_path / "export"), batches=4)
    joint = manifest["files"]["joint"]
    report = tune(manifest, str(tmp_path / "tune"), average_bits=2.0, variance_runs=16,
                  quiet=True, few_bit=2)
    with open(tmp_path / "tune" / "profile_fewbit.json") as f:
        fewbit = json.load(f)
    # The encoder's one GELU input (its MLP's hidden layer, 8 x 8 x 128).
    assert [(t["elements"], t["bits"]) for t in fewbit["tensors"]] == [(8192, 2)]
    gelu = fewbit["tensors"][0]
    assert gelu["encoding"].startswith("#act.fewbit<bits = 2, boundaries = [")

    # The scaling: c at 4 bits (measured) within a factor 2 of c at 2 bits.
    measure_fewbit(joint, manifest["inputs"], manifest["batches"], str(tmp_path / "fb4.json"), 4)
    with open(tmp_path / "fb4.json") as f:
        c4 = json.load(f)["tensors"][0]["sensitivity"]
    print(f"few-bit c at 2 bits {gelu['sensitivity']:.4g}, at 4 bits {c4:.4g}")
    assert 0.5 <= c4 / gelu["sensitivity"] <= 2.0

    chosen = {t["id"]: t["encoding"] for t in report["allocation"]}
    assert chosen[gelu["id"]].startswith("#act.fewbit"), chosen
    rows = {r["allocation"]: r for r in report["variance"]}
    for name, r in rows.items():
        print(f"{name}: predicted {r['predicted']:.4g} measured (MSE) {r['measured']:.4g}")
        assert 0.5 <= r["predicted"] / r["measured"] <= 2.0, (name, r)

    # The same budget with #act.quant alone.
    _, quant_only = allocate(joint, str(tmp_path / "tune" / "profile.json"), 2.0,
                             str(tmp_path / "quant.mlir"), str(tmp_path / "quant.json"))
    assert not any("fewbit" in t["encoding"] for t in quant_only["tensors"])
    quant_error = measured_variance(str(tmp_path / "quant.mlir"), manifest, 16, joint)
    print(f"quant only: MSE {quant_error:.4g}; with few-bit codes {rows['exact']['measured']:.4g}")
    assert rows["exact"]["measured"] < quant_error
