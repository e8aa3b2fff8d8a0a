"""Models written the way users write them, through the exporter and act:
a representative subset of act.zoo (the full table: python3 -m act.zoo),
BatchNorm's running statistics, buffers, dropout, the closed op set.

Needs act-opt and act-run: ACT_BIN_DIR (lit sets it) or build/bin.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act import driver  # noqa: E402
from act.zoo import run as zoo  # noqa: E402
from act import export as export_module  # noqa: E402
from act.export.cli import main  # noqa: E402

# Models that cover the ops the zoo needs and run in seconds: hand-written
# blocks (grouped conv, SiLU, Hardswish, ReLU6, Mish, RMSNorm, tanh-GELU),
# a GPT block (embedding, causal-mask buffer, masked_fill, pow/rsqrt),
# nn.LSTM (flat weights), nn.MultiheadAttention with masks, ordinary models
# (upsampling, cat/chunk, einsum, max over a dim, MSE regression, in-place
# ops, GroupNorm/InstanceNorm/BatchNorm1d/PReLU, transposed convolutions,
# cross-entropy with label smoothing, class weights and an ignored target),
# nn.TransformerEncoderLayer
# (dropout inside) and squeezenet (ceil-mode max pooling, cat); the op
# groups of act.decomp and the later lowerings (element-wise math, sorting
# and scans, pixel shuffles and padding modes, channel and alpha dropout,
# embedding bags, one_hot, cdist, smooth-L1/Huber/KL losses, random tensors
# in the forward, frozen BatchNorm and weight norm, index_fill/copy and
# Python-style remainder, per-pixel cross-entropy, likelihood losses, a
# spatial transformer, adaptive and dilated max pooling, assignment through
# index tensors after a ':' and F.fold, LocalResponseNorm, multi-margin,
# bicubic upsampling).
SUBSET = ["blocks", "tiny_gpt", "lstm", "multihead_attention", "upsample_cat", "einsum_max",
          "regression_mse", "inplace", "norms_prelu", "encoder_decoder",
          "label_smoothing", "label_smoothing_weighted",
          "transformer_encoder_layer",
          "squeezenet1_1",
          "ops_elementwise", "ops_sort_scan", "ops_maps", "ops_bags", "ops_smooth_l1",
          "ops_huber_l1", "ops_kl_div", "ops_random", "ops_frozen_bn_weight_norm",
          "ops_indexing", "ops_segmentation", "ops_likelihoods", "ops_spatial_transformer",
          "ops_pooling", "ops_setitem", "ops_setitem_view", "ops_fold",
          "ops_lrn_margin", "ops_bicubic"]


def test_the_zoo_runs_in_process(tmp_path, monkeypatch, capsys):
    """The zoo's table and its --compare run no subprocess (the steps and
    the printing through the C API: act's tools unreachable, every
    subprocess refused); --isolate runs the same steps in act-run, with the
    same results."""
    isolated = zoo.run_model("blocks", str(tmp_path / "isolated"), ["none"], timeout=600,
                             isolate=True)
    monkeypatch.setenv("ACT_BIN_DIR", str(tmp_path / "no-tools"))

    def refuse(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    inside = zoo.run_model("blocks", str(tmp_path / "inside"), ["none"], timeout=600)
    for key in ("loss_error", "grad_error", "peak", "saved_before", "saved_after"):
        assert inside["none"][key] == isolated["none"][key], (key, inside, isolated)
    assert zoo.main(["blocks", "--export-only", "-o", str(tmp_path / "x")]) == 0
    assert zoo.main(["blocks", "--compare", str(tmp_path / "x"), str(tmp_path / "x")]) == 0
    assert "blocks: same" in capsys.readouterr().out


@pytest.mark.parametrize("name", SUBSET)
def test_zoo_model_matches_autograd(name, tmp_path):
    row = zoo.run_model(name, str(tmp_path), ["none", "#act.quant<bits=4>"], timeout=600)
    print(zoo._fmt_row(row))
    assert row["exports"] == "yes", row["exports"]
    assert row["zero_gradients"] <= row["parameters"] // 4, row  # a meaningful check
    none = row["none"]
    assert "error" not in none, none
    assert none["grad_error"] <= zoo.BOUND and none["loss_error"] <= zoo.BOUND, none
    q4 = row["q4"]
    assert "error" not in q4, q4
    # Small recurrent models save nothing above min-bytes: nothing to encode.
    assert q4["saved_after"] <= none["saved_before"]
    assert q4["loss_error"] <= 1e-4  # the forward is untouched
    # Encoded, the gradients may be less accurate but never NaN (an encoded
    # value compared for equality in the backward made them 0/0).
    assert math.isfinite(q4["grad_error"]), q4


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4, momentum=0.3)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1))


def test_batchnorm_running_statistics_come_back_updated(tmp_path):
    """The step returns the running statistics PyTorch's train-mode step
    leaves in the module (momentum 0.3, unbiased variance)."""
    model = tmp_path / "bn.py"
    model.write_text("import torch, sys\nsys.path.insert(0, %r)\nfrom test_zoo import BNNet\n"
                     "def make(batch):\n"
                     "    return BNNet(), torch.randn(batch, 3, 6, 6), torch.randint(0, 5, (batch,))\n"
                     % os.path.dirname(__file__))
    assert main([f"{model}:make", "--batch", "4", "-o", str(tmp_path)]) == 0
    m = json.load(open(tmp_path / "make.json"))
    assert m["updated_buffers"] == ["bn.running_mean", "bn.running_var"]
    nres = m["parameters"] + 1 + 2
    results, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run", nres)
    loss, *rest = driver.scaled_errors(results, driver.reference(m), m["parameters"])
    assert loss <= 1e-5
    torch.manual_seed(0)
    import importlib.util
    spec = importlib.util.spec_from_file_location("bn", model)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    net, x, _ = mod.make(4)
    net(x)
    np.testing.assert_allclose(results[-2], net.bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[-1], net.bn.running_var.numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_masks_come_from_the_steps_seed(tmp_path, capsys):
    """F.dropout becomes aten.native_dropout, lowered to a Philox4x32-10
    mask from the step's dropout_seed argument; the float64 reference uses
    the same mask computed in NumPy (act.export.philox_keep), so the
    gradients match; another seed gives another mask."""
    model = tmp_path / "drop.py"
    model.write_text(
        "import torch, torch.nn as nn\n"
        "def make(batch):\n"
        "    m = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 3))\n"
        "    return m, torch.randn(batch, 6), torch.randint(0, 3, (batch,))\n")
    assert main([f"{model}:make", "--batch", "3", "--seed", "7", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "dropout: 1 call(s), masks from the step's dropout_seed argument" in out, out
    m = json.load(open(tmp_path / "make.json"))
    assert [a["name"] for a in m["arguments"]][-3:] == ["dropout_seed", "inputs", "targets"]
    results, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run",
                                m["parameters"] + 1)
    loss, grad, _ = driver.scaled_errors(results, driver.reference(m), m["parameters"])
    assert loss <= 1e-5 and grad <= zoo.BOUND, (loss, grad)
    seed_file = [f for f in m["inputs"] if "dropout_seed" in f][0]
    assert int(np.load(seed_file)) == 7
    np.save(seed_file, np.array(8, dtype=np.int64))
    other, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run8",
                              m["parameters"] + 1)
    assert float(other[0]) != float(results[0])
    keep = export_module.philox_keep(7, 0, (100, 100), 0.5)
    assert 0.47 < keep.mean() < 0.53
    assert not np.array_equal(keep, export_module.philox_keep(8, 0, (100, 100), 0.5))
    assert not np.array_equal(keep, export_module.philox_keep(7, 1, (100, 100), 0.5))


def test_rand_like_noise_comes_from_the_steps_seed(tmp_path):
    """torch.rand_like in the forward (noise injection) and in a custom
    backward (stochastic rounding of the gradient, as act.dfq's) is traced
    as aten.rand_like and lowered to Philox noise from the step's seed; the
    float64 reference draws the same noise (act.export.philox_uniform), so
    the gradients match; another seed gives other gradients."""
    model = tmp_path / "noise.py"
    model.write_text(
        "import torch, torch.nn as nn\n"
        "class Round(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x.clone()\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        s = g.abs().max() / 4\n"
        "        return torch.floor(g / s + torch.rand_like(g)) * s\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a, self.b = nn.Linear(6, 32), nn.Linear(32, 3)\n"
        "    def forward(self, x):\n"
        "        h = torch.relu(self.a(x))\n"
        "        h = h + 0.1 * torch.rand_like(h)\n"
        "        return self.b(Round.apply(h))\n"
        "def make(batch):\n"
        "    return M(), torch.randn(batch, 6), torch.randint(0, 3, (batch,))\n")
    assert main([f"{model}:make", "--batch", "4", "--seed", "5", "-o", str(tmp_path)]) == 0
    m = json.load(open(tmp_path / "make.json"))
    assert [a["name"] for a in m["arguments"]][-3:] == ["dropout_seed", "inputs", "targets"]
    text = open(m["files"]["joint"]).read()
    assert text.count("arith.mului_extended") >= 2 * 2 * 10  # two noises, Philox's rounds
    results, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run",
                                m["parameters"] + 1)
    loss, grad, _ = driver.scaled_errors(results, driver.reference(m), m["parameters"])
    assert loss <= 1e-5 and grad <= zoo.BOUND, (loss, grad)
    seed_file = [f for f in m["inputs"] if "dropout_seed" in f][0]
    np.save(seed_file, np.array(6, dtype=np.int64))
    other, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run6",
                              m["parameters"] + 1)
    # The first layer's weight gradient went through the rounding.
    assert not np.allclose(other[1], results[1])
    from act.aten import RANDOM_STREAM
    u = export_module.philox_uniform(5, 0, RANDOM_STREAM, (200, 200))
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(float(u.mean()) - 0.5) < 0.01
    assert not np.array_equal(u, export_module.philox_uniform(5, 1, RANDOM_STREAM, (200, 200)))


def test_in_place_draws_come_from_the_steps_seed(tmp_path):
    """F.gumbel_softmax (hard, straight-through: `exponential_()` into an
    empty tensor, unsupported before), `.normal_()` and `.uniform_()`
    noise: written with the step's Philox noise, so the float64 reference
    draws the same and the gradients match."""
    model = tmp_path / "gumbel.py"
    model.write_text(
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a, self.b = nn.Linear(6, 5), nn.Linear(5, 3)\n"
        "    def forward(self, x):\n"
        "        h = self.a(x)\n"
        "        h = h + 0.1 * torch.empty_like(h).normal_() + torch.empty_like(h).uniform_(-0.1, 0.1)\n"
        "        return self.b(F.gumbel_softmax(h, tau=0.5, hard=True) + F.gumbel_softmax(h))\n"
        "def make(batch):\n"
        "    g = torch.Generator().manual_seed(0)\n"
        "    return M(), torch.randn(batch, 6, generator=g), torch.randint(0, 3, (batch,))\n")
    assert main([f"{model}:make", "--batch", "4", "--seed", "3", "-o", str(tmp_path)]) == 0
    m = json.load(open(tmp_path / "make.json"))
    results, _, _ = driver.step(m["files"]["joint"], m["inputs"], tmp_path / "run",
                                m["parameters"] + 1)
    loss, grad, _ = driver.scaled_errors(results, driver.reference(m), m["parameters"])
    assert loss <= 1e-5 and grad <= zoo.BOUND, (loss, grad)


def test_scaled_error_reads_a_zero_gradient_as_correct():
    """A gradient that is zero in theory (a bias feeding BatchNorm) has a
    meaningless relative error; against the scale of all gradients it is
    tiny."""
    ref = [np.array(1.0), np.ones((4, 4)), np.zeros(4)]
    got = [np.array(1.0), np.ones((4, 4)), np.full(4, 1e-9)]
    assert driver.relative_errors(got, ref)[2] > 1e8
    loss, grad, per = driver.scaled_errors(got, ref, 2)
    assert loss == 0 and grad < 1e-9 and per[1] < 1e-9


def test_op_outside_the_set_names_op_node_and_shapes(tmp_path, capsys):
    model = tmp_path / "cum.py"
    model.write_text(
        "import torch, torch.nn as nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.l = nn.Linear(4, 3)\n"
        "    def forward(self, x):\n"
        "        return self.l(torch.linalg.det(x.view(-1, 2, 2)).view(-1, 1).expand(-1, 4))\n"
        "def make(batch):\n"
        "    return M(), torch.randn(batch, 4), torch.randint(0, 3, (batch,))\n")
    assert main([f"{model}:make", "--batch", "2", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("act.export: error: ") and err.count("\n") == 1, err
    assert "node '" in err and "operand shapes [[" in err, err
