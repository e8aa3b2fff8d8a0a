"""FracTrain's DFQ (act.dfq) through act.compile: the gates' precision is
chosen inside the compiled step per batch, gradients (backbone and gates)
match eager PyTorch, the executed bits come back (act.export.record), the
cost arithmetic is FracTrain's Sec. 4.1, and beta's sign follows the target."""

import copy
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import act  # noqa: E402
from act.dfq import DFQ, quantize  # noqa: E402
from act.export import random_ops  # noqa: E402


def small_cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 4 * 4, 10))


def batch(shift=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 1, 8, 8, generator=g) + shift, torch.randint(0, 10, (16,), generator=g)


def eager_step(ref, loss_fn, x, y, seed):
    """Eager PyTorch's loss and gradients with the noise act's call drew
    (the gradients' stochastic rounding: rand_like from the step's seed)."""
    with random_ops("reference", seed):
        loss = ref.loss_fn(loss_fn)(ref(x), y)
        loss.backward()
    return loss


def test_gradients_and_executed_bits_match_eager():
    torch.manual_seed(0)
    m = DFQ(small_cnn(), 0.03)
    ref = copy.deepcopy(m)
    x, y = batch()
    step = act.compile(m, m.loss_fn(F.cross_entropy), x, y)
    got = step(x, y)
    loss = eager_step(ref, F.cross_entropy, x, y, step.last_seed)
    assert abs(float(got) - float(loss)) < 1e-5 * abs(float(loss))
    for (name, p), q in zip(ref.named_parameters(), m.parameters()):
        scale = float(p.grad.abs().max()) + 1e-30
        assert float((p.grad - q.grad).abs().max()) <= 1e-4 * scale, name
    assert set(step.records) == {l.name for l in m.layers} | {"dfq.penalty"}
    assert float(step.records["dfq.penalty"]) == pytest.approx(ref.penalty, rel=1e-5)
    for l, r in zip(m.layers, ref.layers):
        assert step.records[l.name].tolist() == r.executed.tolist()
        assert tuple(step.records[l.name].tolist()) in {(float(f), float(b))
                                                        for f, b in m.options}


def test_gradients_are_rounded_stochastically_from_the_step_seed():
    """DFQ's gradient quantizer rounds stochastically (SBM, FracTrain's
    base): two calls on one batch draw different noise, each call's
    gradients are eager's with that call's noise (act.export.random_ops),
    and the nearest-rounding variant gives the same gradients every call."""
    torch.manual_seed(1)
    x, y = batch()
    grads = {}
    for stochastic in (True, False):
        m = DFQ(small_cnn(), 0.03, stochastic_gradients=stochastic)
        ref = copy.deepcopy(m)
        step = act.compile(m, m.loss_fn(F.cross_entropy), x, y)
        calls = []
        for _ in range(2):
            m.zero_grad()
            step(x, y)
            calls.append([p.grad.clone() for p in m.parameters()])
            ref.zero_grad()
            eager_step(ref, F.cross_entropy, x, y, step.last_seed)
            for (name, p), q in zip(ref.named_parameters(), m.parameters()):
                scale = float(p.grad.abs().max()) + 1e-30
                assert float((p.grad - q.grad).abs().max()) <= 1e-4 * scale, name
        grads[stochastic] = calls
    conv_weight = 0  # the first layer's weight: its gradient went through BW bits
    differs = [float((a[conv_weight] - b[conv_weight]).abs().max())
               for a, b in [grads[True]]]
    assert differs[0] > 0
    assert torch.equal(grads[False][0][conv_weight], grads[False][1][conv_weight])


def test_stochastic_quantizer_is_unbiased():
    """E[quantize(x, b, stochastic)] = x: the mean over 4000 draws is
    within 4 standard errors of every element; values stay on the grid
    (min..max in 2^b - 1 steps)."""
    torch.manual_seed(3)
    x = torch.randn(64, dtype=torch.float64)
    bits = torch.tensor(2.0, dtype=torch.float64)
    draws = torch.stack([quantize(x, bits, stochastic=True) for _ in range(4000)])
    step = float((x.max() - x.min()) / 3)
    assert float((draws.mean(0) - x).abs().max()) <= 4 * 0.5 * step / 4000 ** 0.5
    grid = (draws - x.min()) / step
    assert float((grid - grid.round()).abs().max()) < 1e-9
    assert float(grid.min()) >= -1e-9 and float(grid.max()) <= 3 + 1e-9


def test_gates_change_precision_per_batch_without_recompiling():
    """A gate set to read the sign of its input's mean: batches shifted up
    and down get different precisions from the same compiled step."""
    torch.manual_seed(0)
    m = DFQ(small_cnn(), 0.03)
    gate = m.layers[0].gate.fc
    with torch.no_grad():
        gate.weight.zero_()
        gate.bias.zero_()
        gate.weight[0, 0], gate.weight[1, 0] = 10.0, -10.0  # options (4, 8) and (6, 8)
    x, y = batch()
    step = act.compile(m, m.loss_fn(F.cross_entropy), x, y)
    chosen = []
    for shift in (2.0, -2.0, 2.0):
        xs = x + shift
        step(xs, y)
        chosen.append(tuple(step.records[m.layers[0].name].tolist()))
        # eager PyTorch makes the same choice
        m(xs)
        assert tuple(m.layers[0].executed.tolist()) == chosen[-1]
    assert chosen == [(4.0, 8.0), (6.0, 8.0), (4.0, 8.0)]
    assert len(step.compiled) == 1


def test_cost_arithmetic_and_beta_sign():
    """FracTrain Sec. 4.1: forward MACs x FW/32 x FW/32, the two backward
    products x FW/32 x BW/32 each; fp32 is 3 x MACs."""
    m = DFQ(small_cnn(), 0.03)
    m(torch.randn(2, 1, 8, 8))
    conv, linear = m.layers
    assert conv.macs_per_sample == 8 * 8 * 8 * 9 and linear.macs_per_sample == 10 * 128
    conv.executed.copy_(torch.tensor([6.0, 8.0]))
    linear.executed.copy_(torch.tensor([4.0, 12.0]))
    eff, fp32 = m.executed_cost(5)
    want = 5 * (4608 * ((6 / 32) ** 2 + 2 * (6 / 32) * (8 / 32))
                + 1280 * ((4 / 32) ** 2 + 2 * (4 / 32) * (12 / 32)))
    assert eff == pytest.approx(want, rel=1e-6)
    assert fp32 == 3 * 5 * (4608 + 1280)
    cp = m.control(5)
    assert cp == pytest.approx(want / fp32)
    assert cp == pytest.approx(0.0416, abs=1e-4)
    assert float(m.beta) > 0  # above the target 0.03: the penalty pushes cp down
    m.target_cost = 0.05
    m.control(5)
    assert float(m.beta) < 0 and m.history[-1][1] < 0  # below: pushes it up
    with pytest.raises(ValueError):
        DFQ(small_cnn(), 1.5)
    with pytest.raises(ValueError):
        DFQ(nn.ReLU(), 0.03)


def test_dfq_and_fractrain_train_digits():
    """DFQ alone, DFQ with the saved activations encoded (issue 51's
    FracTrain row beside an encoding) and FracTrain (PFQ's plateau rule
    over DFQ targets) in act.train: the model learns, the executed
    precision changes during training, and the executed cost is
    FracTrain's saving."""
    from act.train import train
    for encoding in ("none+dfq=0.035", "#act.quant<bits=4>+dfq=0.035", "none+dfq=0.03,0.05"):
        info = {}
        acc, _, _, saved = train("digits-mlp", encoding, seed=0, epochs=4,
                                 pfq={"eps": 0.5, "alpha": 0.5, "window": 1}, info=info)
        costs = [e["dfq_cost"] for e in info["epochs"]]
        assert acc > 0.85, (encoding, acc)
        if encoding.startswith("#act.quant"):
            # the saved activations at 4 bits (codes, group statistics)
            assert saved[1] < saved[0] / 5, saved
            assert all(e["encoding"] == "#act.quant<bits=4>" for e in info["epochs"])
        # between all options at FW-4/BW-8 (0.026) and all at FW-8/BW-8
        assert 0.026 <= min(costs) and max(costs) <= 0.0625 + 1e-9
        assert info["saved_vs_fp32"] > 0.9
        if "," in encoding:
            assert [e["dfq_target"] for e in info["epochs"]][0] == 0.03
            assert info["switches"], info["epochs"]


def test_linear_gates_read_features_of_sequences():
    """A linear layer applied to (batch, sequence, features), as in a
    transformer: its gate averages over batch and sequence, one value per
    input feature, and the cost counts every position's MACs; through
    act.compile the gradients match eager's."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(12, 20), nn.GELU(), nn.Linear(20, 5))
    m = DFQ(model, 0.04)
    ref = copy.deepcopy(m)
    x = torch.randn(4, 7, 12)
    y = torch.randint(0, 5, (4, 7))

    def seq_loss(out, t):
        return F.cross_entropy(out.reshape(-1, 5), t.reshape(-1))

    step = act.compile(m, m.loss_fn(seq_loss), x, y)
    got = step(x, y)
    loss = eager_step(ref, seq_loss, x, y, step.last_seed)
    assert [l.gate.fc.in_features for l in ref.layers] == [12, 20]
    assert [l.macs_per_sample for l in ref.layers] == [7 * 20 * 12, 7 * 5 * 20]
    assert float(got) == pytest.approx(float(loss), rel=1e-5)
    for p, q in zip(m.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6)
