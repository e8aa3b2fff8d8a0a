"""act.compile inside an ordinary PyTorch loop (the C API through ctypes):
the same curve as PyTorch eager without encodings, BatchNorm's running
statistics, and the digits MLP trained with 4-bit activations and with
Few-bit codes.

Needs act-opt (ACT_BIN_DIR) and libActCAPI.so (ACT_LIB_DIR); lit sets both.
"""

import copy
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import act  # noqa: E402
from act import capi  # noqa: E402
from act.export.cli import export  # noqa: E402
from act.train import train  # noqa: E402
from act.tune import tune  # noqa: E402

warnings.simplefilter("ignore")


def test_without_encodings_act_trains_the_eager_curve(tmp_path):
    """Same initial weights and batches, SGD with momentum, 200 steps: the
    losses agree within 1e-3 relative at every step; BatchNorm's running
    statistics and num_batches_tracked follow PyTorch's."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.BatchNorm1d(32), nn.Linear(32, 4))
    eager = copy.deepcopy(model)
    x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
    step = act.compile(model, F.cross_entropy, x[:32], y[:32], work_dir=str(tmp_path))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    worst = 0.0
    for i in range(200):
        xb, yb = x[(i * 32) % 256:][:32], y[(i * 32) % 256:][:32]
        opt.zero_grad(set_to_none=True)
        loss = step(xb, yb)
        opt.step()
        opt_eager.zero_grad()
        expected = F.cross_entropy(eager(xb), yb)
        expected.backward()
        opt_eager.step()
        worst = max(worst, abs(float(loss) - float(expected)) / abs(float(expected)))
    print(f"act vs eager over 200 steps: largest relative loss difference {worst:.1e}")
    assert worst <= 1e-3
    assert torch.allclose(model[2].running_mean, eager[2].running_mean, atol=1e-5)
    assert torch.allclose(model[2].running_var, eager[2].running_var, rtol=1e-4)
    assert int(model[2].num_batches_tracked) == 200


def test_gradients_accumulate_like_autograd(tmp_path):
    torch.manual_seed(1)
    model = nn.Linear(5, 3)
    x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    step(x, y)
    once = model.weight.grad.clone()
    step(x, y)  # no zero_grad: accumulates, as loss.backward() would
    assert torch.allclose(model.weight.grad, 2 * once, atol=1e-6)


def _grads_close(a, b, rtol=1e-5):
    """Every gradient of `a` within rtol of `b`'s, relative to the largest
    (a conv's bias before BatchNorm has a gradient of rounding noise)."""
    scale = max(float(q.grad.abs().max()) for q in b.parameters()) or 1.0
    for p, q in zip(a.parameters(), b.parameters()):
        assert float((p.grad - q.grad).abs().max()) <= rtol * scale


def test_other_batch_sizes_share_one_step(tmp_path):
    """Batches of another size than the first (a partial last batch, a
    batch of one, a larger one) share one step compiled for every batch size
    (a `?` batch dimension): two compiles in all, every call's loss and
    gradients eager's, saved bytes the first batch's per example;
    dynamic_batch=False compiles one step per size."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    eager = copy.deepcopy(model)
    step = act.compile(model, F.cross_entropy, work_dir=str(tmp_path))
    first = None
    for n in (10, 10, 7, 10, 7, 3, 1, 37):
        x, y = torch.randn(n, 6), torch.randint(0, 3, (n,))
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step(x, y)
        expected = F.cross_entropy(eager(x), y)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-6 * abs(float(expected))
        _grads_close(model, eager)
        first = first or step.saved_bytes
        assert step.saved_bytes[0] == round(first[0] * n / 10)
    assert len(step.compiled) == 2 and step.dynamic_refused is None
    assert sum(k[0] == "every batch size" for k in step.compiled) == 1
    exported = open(os.path.join(str(tmp_path), "step1.mlir")).read()
    assert "tensor<?x6xf32>" in exported and "act.batch_hint" in exported
    per_size = act.compile(copy.deepcopy(model), F.cross_entropy, dynamic_batch=False)
    for n in (10, 7, 3):
        per_size(torch.randn(n, 6), torch.randint(0, 3, (n,)))
    assert len(per_size.compiled) == 3


def test_every_batch_size_step_follows_the_per_size_steps(tmp_path):
    """A CNN with BatchNorm and dropout, in training: the step for every
    batch size computes what a step compiled for the batch's size computes
    (the same calls, so the same dropout masks), BatchNorm's statistics
    included; under no_grad in eval mode one forward-only step serves every
    evaluation batch size. With 2-bit stochastic codes (the same Philox
    streams) the MLP's gradients are the per-size step's too."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Dropout(0.3), nn.Flatten(), nn.Linear(64, 5))
    other = copy.deepcopy(model)
    step = act.compile(model, F.cross_entropy, work_dir=str(tmp_path))
    per_size = act.compile(other, F.cross_entropy, dynamic_batch=False)
    for n in (12, 5, 12, 9, 5):
        x, y = torch.randn(n, 1, 8, 8), torch.randint(0, 5, (n,))
        model.zero_grad(set_to_none=True)
        other.zero_grad(set_to_none=True)
        a, b = float(step(x, y)), float(per_size(x, y))
        assert abs(a - b) <= 1e-6 * abs(b)
        _grads_close(model, other)
        for u, v in zip(model.buffers(), other.buffers()):
            assert torch.allclose(u.float(), v.float(), atol=1e-6)
    assert len(step.compiled) == 2
    model.eval()
    other.eval()
    with torch.no_grad():
        for n in (20, 7, 12):
            x, y = torch.randn(n, 1, 8, 8), torch.randint(0, 5, (n,))
            a, b = float(step(x, y)), float(per_size(x, y))
            assert abs(a - b) <= 1e-6 * abs(b)
    # (The evaluation batch of the first batch's size too takes the
    # forward-only step for every batch size, once there is one.)
    assert [k[0] for k in step.compiled if k[-1] == "forward-only"] == ["every batch size"]
    assert len(step.compiled) == 3 and len(per_size.compiled) == 6
    # (Wide enough that act-insert-encode-decode's min-bytes encodes the
    # hidden layer at both sizes: the step for every size decides at the
    # first batch's, 16.)
    mlp = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 3))
    twin = copy.deepcopy(mlp)
    step = act.compile(mlp, F.cross_entropy, encoding="#act.quant<bits=2>")
    per_size = act.compile(twin, F.cross_entropy, encoding="#act.quant<bits=2>",
                           dynamic_batch=False)
    for n in (16, 7, 16, 7):
        x, y = torch.randn(n, 6), torch.randint(0, 3, (n,))
        mlp.zero_grad(set_to_none=True)
        twin.zero_grad(set_to_none=True)
        assert abs(float(step(x, y)) - float(per_size(x, y))) <= 1e-6
        _grads_close(mlp, twin)


def test_the_partial_batch_and_evaluation_load_steps_compiled_ahead(tmp_path, monkeypatch):
    """Once the first step compiles, a background process compiles the step
    for every batch size and the eval-mode forward-only step into the code
    cache: the partial last batch and evaluation batches (of any size) load
    them from there, compiling nothing in this process, with eager's losses
    and gradients and BatchNorm's statistics. With the code cache off, the
    work directory's serves. compile_ahead=False starts nothing, nor does
    the default where the first compile was quicker than AHEAD_AFTER;
    destroying the step stops its background process."""
    import gc
    monkeypatch.delenv("ACT_COMPILE_AHEAD", raising=False)
    loaded = []
    compile_file = capi.CompiledStep.from_file.__func__

    def from_file(cls, path, entry=None, device="cpu"):
        step = compile_file(cls, path, entry, device)
        loaded.append((os.path.basename(str(path)), step.from_cache))
        return step
    monkeypatch.setattr(capi.CompiledStep, "from_file", classmethod(from_file))
    torch.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.Dropout(0.0), nn.Flatten(), nn.Linear(64 * 4, 5))
    eager = copy.deepcopy(model)
    data = [(torch.randn(n, 1, 8, 8), torch.randint(0, 5, (n,))) for n in (16, 16, 16, 5)]
    with capi.cache_dir(""):  # (the work directory's cache)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (nothing to say ahead)
            step = act.compile(model, F.cross_entropy, *data[0], work_dir=str(tmp_path),
                               encoding="#act.quant<bits=8>", compile_ahead=True)
        assert [name for name, _ in loaded] == ["step0_v0_encoded.mlir"]
        (worker,) = step._workers
        assert worker.cache == os.path.join(str(tmp_path), "code-cache")
        assert worker.process.wait(timeout=300) == 0
        for x, y in data:
            model.zero_grad(set_to_none=True)
            eager.zero_grad(set_to_none=True)
            loss = step(x, y)
            expected = F.cross_entropy(eager(x), y)
            expected.backward()
            assert abs(float(loss) - float(expected)) <= 1e-2 * abs(float(expected))
            for p, q in zip(model.parameters(), eager.parameters()):
                assert torch.allclose(p.grad, q.grad, rtol=0.1, atol=2e-2)
        model.eval()
        eager.eval()
        with torch.no_grad():
            for n in (16, 40, 3):
                x, y = torch.randn(n, 1, 8, 8), torch.randint(0, 5, (n,))
                expected = F.cross_entropy(eager(x), y)
                assert abs(float(step(x, y)) - float(expected)) <= 1e-5 * abs(float(expected))
        for u, v in zip(model.buffers(), eager.buffers()):
            assert torch.allclose(u.float(), v.float(), atol=1e-3)
    # The first step compiled here; the other two came from the cache (the
    # evaluation batch of the first batch's size too).
    assert [c for _, c in loaded] == [False, True, True], loaded
    assert sum(k[0] == "every batch size" for k in step.compiled) == 2
    assert step.dynamic_refused is None and len(step.compiled) == 3
    other = act.compile(copy.deepcopy(model).train(), F.cross_entropy, *data[0],
                        compile_ahead=False)
    assert other._workers == [] and len(other.compiled) == 1
    from act import training
    monkeypatch.setattr(training, "AHEAD_AFTER", 1e9)
    other = act.compile(copy.deepcopy(model).train(), F.cross_entropy, *data[0])
    assert other._workers == [] and len(other.compiled) == 1
    monkeypatch.setattr(training, "AHEAD_AFTER", 0.0)
    twin = act.compile(copy.deepcopy(model).train(), F.cross_entropy, *data[0])
    (worker,) = twin._workers
    work_dir = twin.work_dir
    del twin
    gc.collect()
    assert worker.process.poll() is not None and not os.path.exists(work_dir)


def test_a_step_for_every_size_that_fails_to_compile_falls_back_per_size(tmp_path,
                                                                         monkeypatch):
    """Where the step for every batch size (or its forward-only step) does
    not compile, the mode's batches compile steps per size instead: a
    warning says why once, dynamic_refused keeps it, the losses are
    eager's."""
    compile_file = capi.CompiledStep.from_file.__func__

    def from_file(cls, path, entry=None, device="cpu"):
        text = open(path).read()
        if "tensor<?x" in text:  # (a batch dimension of every size)
            raise capi.ActError("a lowering for static sizes only")
        return compile_file(cls, path, entry, device)
    monkeypatch.setattr(capi.CompiledStep, "from_file", classmethod(from_file))
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    eager = copy.deepcopy(model)
    step = act.compile(model, F.cross_entropy, work_dir=str(tmp_path), compile_ahead=False)
    for n, no_grad in ((10, False), (7, False), (5, False), (7, True)):
        x, y = torch.randn(n, 6), torch.randint(0, 3, (n,))
        with warnings.catch_warnings(record=True) as caught, torch.set_grad_enabled(not no_grad):
            warnings.simplefilter("always")
            loss = step(x, y)
        said = [str(w.message) for w in caught if "compiling it failed" in str(w.message)]
        assert len(said) == int(n == 7 and not no_grad), said
        assert abs(float(loss) - float(F.cross_entropy(eager(x), y))) <= 1e-5
    assert "a lowering for static sizes only" in step.dynamic_refused
    assert all(k[0] != "every batch size" for k in step.compiled)
    assert len(step.compiled) == 4  # (10, 7, 5, and 7's forward-only)


@pytest.mark.parametrize("name", ["lstm", "multihead_attention", "transformer_encoder_layer",
                                  "ops_random"])
def test_zoo_models_share_one_step_for_every_batch_size(name):
    """Zoo models (an LSTM, whose decomposition views its stacked outputs
    through as_strided; nn.MultiheadAttention, whose views of q, k and v
    have strides that grow with the batch; a transformer layer; random ops)
    through the step for every batch size: the per-size steps' losses and
    gradients."""
    from act import models
    torch.manual_seed(0)
    w = models.load("zoo." + name, 6, 0)
    module, twin = w.module, copy.deepcopy(w.module)
    step = act.compile(module, w.loss_fn)
    per_size = act.compile(twin, w.loss_fn, dynamic_batch=False)
    for n in (6, 4, 9):
        batch = models.load("zoo." + name, n, 1)
        module.zero_grad(set_to_none=True)
        twin.zero_grad(set_to_none=True)
        a, b = float(step(batch.inputs, batch.targets)), float(per_size(batch.inputs, batch.targets))
        assert abs(a - b) <= 1e-5 * abs(b)
        _grads_close(module, twin)
    assert step.dynamic_refused is None and len(step.compiled) == 2


def test_a_step_that_slices_the_batch_compiles_per_size(tmp_path):
    """A graph that addresses positions along the batch (x[:4]: at batches
    below 4 it would read past the end) cannot serve every batch size: a
    warning says so once, step.dynamic_refused why, and each size compiles a
    step of its own, eager's."""
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(4, 3)

        def forward(self, x):
            return self.l(x[:4])

    torch.manual_seed(1)
    model = Head()
    eager = copy.deepcopy(model)

    def loss_fn(out, t):
        return F.cross_entropy(out, t[:4])
    step = act.compile(model, loss_fn, work_dir=str(tmp_path))
    for n, warns in ((8, False), (6, True), (5, False)):
        x, y = torch.randn(n, 4), torch.randint(0, 3, (n,))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = step(x, y)
        said = [str(w.message) for w in caught if "every batch size" in str(w.message)]
        assert len(said) == int(warns), said
        assert abs(float(loss) - float(loss_fn(eager(x), y))) <= 1e-6
    assert "along a batch dimension" in step.dynamic_refused
    assert len(step.compiled) == 3


def test_tuple_inputs_and_targets_follow_eager(tmp_path):
    """A model called with two inputs (tokens and a padding mask) and a
    loss over a tuple of targets (a class and a regression target): the
    step's loss and gradients match eager autograd's, call after call (the
    masks and targets are arguments, not constants), and a batch of another
    shape compiles once more."""
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.e = nn.Embedding(20, 8)
            self.a = nn.MultiheadAttention(8, 2, batch_first=True)
            self.cls, self.reg = nn.Linear(8, 3), nn.Linear(8, 1)

        def forward(self, tokens, padding):
            x = self.e(tokens)
            h, _ = self.a(x, x, x, key_padding_mask=padding)
            h = h.masked_fill(padding.unsqueeze(-1), 0.0).sum(1)
            return self.cls(h), self.reg(h).squeeze(-1)

    def loss_fn(outputs, targets):
        return F.cross_entropy(outputs[0], targets[0]) + F.mse_loss(outputs[1], targets[1])

    def batch(n, lengths):
        tokens = torch.randint(0, 20, (n, 6))
        padding = torch.arange(6).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)
        return (tokens, padding), (torch.randint(0, 3, (n,)), torch.randn(n))

    torch.manual_seed(3)
    model = Tagger()
    eager = copy.deepcopy(model)
    step = act.compile(model, loss_fn, *batch(4, [6, 4, 3, 5]), work_dir=str(tmp_path))
    for lengths in ([6, 4, 3, 5], [2, 6, 6, 1], [3, 3, 5]):
        inputs, targets = batch(len(lengths), lengths)
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step(inputs, targets)
        expected = loss_fn(eager(*inputs), targets)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-5 * max(1.0, abs(float(expected)))
        for p, q in zip(model.parameters(), eager.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    assert len(step.compiled) == 2


def test_parameters_without_gradient_keep_none(tmp_path):
    """A parameter the loss does not read (a layer kept but not called)
    keeps .grad None after act's step, as after eager autograd, so an
    optimizer with weight decay and momentum leaves it alone (a zero
    gradient would shrink it); the others train as in eager."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(4, 3), nn.Linear(4, 4)

        def forward(self, x):
            return self.used(x)

    torch.manual_seed(5)
    model = M()
    eager = copy.deepcopy(model)
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
            for m in (model, eager)]
    for _ in range(3):
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        step(x, y)
        F.cross_entropy(eager(x), y).backward()
        assert model.spare.weight.grad is None and model.spare.bias.grad is None
        for opt in opts:
            opt.step()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), name


def test_train_and_eval_modes_follow_eager(tmp_path):
    """model.eval() (and a BatchNorm frozen by its own .eval(), as when
    fine-tuning) after a step was compiled: the next call exports and
    compiles the step of that mode (running statistics read, not updated;
    dropout off) instead of running the training-mode step silently (the
    gradients were 0.31 off eager and the running mean drifted 0.09);
    back in train mode the first step is reused."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(8, 3))
    eager = copy.deepcopy(model)
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    for mode in ("eval", "frozen", "train"):
        for m in (model, eager):
            m.train(mode == "train")
            if mode == "frozen":
                m.train()
                m[1].eval()
                m[3].eval()
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step(x, y)
        if mode != "train":  # (dropout draws differ in train mode)
            expected = F.cross_entropy(eager(x), y)
            expected.backward()
            assert abs(float(loss) - float(expected)) <= 1e-5, mode
            for p, q in zip(model.parameters(), eager.parameters()):
                assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6), mode
            for b, c in zip(model.buffers(), eager.buffers()):
                assert torch.equal(b, c), mode
    assert len(step.compiled) == 3


def test_unfreezing_and_replacing_layers_follow_eager(tmp_path):
    """Fine-tuning moves: a layer frozen when the step was compiled and
    unfrozen later (its gradient was silently never computed), and a head
    replaced by a new nn.Linear (the step read the old one's parameters):
    each change compiles the step again, and loss and gradients match
    eager autograd."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    for p in model[0].parameters():
        p.requires_grad_(False)
    eager = copy.deepcopy(model)
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    for change in ("none", "unfreeze", "new head"):
        if change == "unfreeze":
            for m in (model, eager):
                for p in m[0].parameters():
                    p.requires_grad_(True)
        if change == "new head":
            model[2] = nn.Linear(8, 3)
            eager[2] = copy.deepcopy(model[2])
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step(x, y)
        expected = F.cross_entropy(eager(x), y)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-5, change
        for p, q in zip(model.parameters(), eager.parameters()):
            assert (p.grad is None) == (q.grad is None), change
            if q.grad is not None:
                assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6), change
    assert len(step.compiled) == 3


def test_frozen_parameters_changed_between_steps_follow_eager(tmp_path):
    """A mean teacher / momentum encoder: a frozen branch (requires_grad
    False) that the loop moves towards the trained one in place between
    steps. Frozen parameters were constants of the trace, so the step kept
    the teacher of the first call (small ones inlined, large ones copied),
    silently (loss 1.33 against eager's 0.67); they are arguments now, read
    at every call like buffers."""
    class Student(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.online, self.target = nn.Linear(d, d), nn.Linear(d, d)
            for p in self.target.parameters():
                p.requires_grad_(False)

        def forward(self, x):
            with torch.no_grad():
                t = self.target(x)
            return F.normalize(self.online(x), dim=-1), F.normalize(t, dim=-1)

    def loss_fn(out, _):
        p, t = out
        return (2 - 2 * (p * t).sum(-1)).mean()

    for d in (4, 64):  # constants inlined, and large enough to be arguments
        torch.manual_seed(0)
        model = Student(d)
        eager = copy.deepcopy(model)
        x, y = torch.randn(6, d), torch.zeros(6)
        step = act.compile(model, loss_fn, x, y, work_dir=str(tmp_path / str(d)))
        for _ in range(3):
            for m in (model, eager):
                with torch.no_grad():
                    for pt, po in zip(m.target.parameters(), m.online.parameters()):
                        pt.mul_(0.5).add_(0.5 * po + 0.1)
            model.zero_grad(set_to_none=True)
            eager.zero_grad(set_to_none=True)
            loss = step(x, y)
            expected = loss_fn(eager(x), y)
            expected.backward()
            assert abs(float(loss) - float(expected)) <= 1e-5, d
            assert torch.allclose(model.online.weight.grad, eager.online.weight.grad,
                                  rtol=1e-4, atol=1e-6), d
            assert model.target.weight.grad is None
        assert len(step.compiled) == 1


def test_capi_errors_are_messages():
    with pytest.raises(capi.ActError, match="expected"):
        capi.CompiledStep.from_source("func.func @f( {")
    with pytest.raises(capi.ActError, match="no such file|No such file"):
        capi.CompiledStep.from_file("/nonexistent/step.mlir")


def _two_batches(model, tmp_path):
    """`model`'s exported joint step (act.compile's, on 32 of 64 random
    rows), its argument lists for two mini-batches (the same parameters,
    each half of the rows) and those lists as .npy files."""
    import numpy as np
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    step = act.compile(model, F.cross_entropy, x[:32], y[:32], work_dir=str(tmp_path))
    _, src, layout = step._export(x[:32], y[:32])
    first = step._arguments(layout, x[:32], y[:32], 0)
    batches = [first, first[:-2] + [x[32:], y[32:]]]
    files = []
    for k, args in enumerate(batches):
        files.append([])
        for i, a in enumerate(args):
            path = str(tmp_path / f"b{k}_{i}.npy")
            np.save(path, np.asarray(a.detach().numpy() if hasattr(a, "detach") else a))
            files[-1].append(path)
    return src, batches, files


def test_capi_sensitivity_is_act_runs(tmp_path):
    """actStepEstimateSensitivity (GACT's adaptive loop measures in process
    with it) writes the profile act-run --sensitivity writes for the same
    step, batches and step seed: the same estimator, bit for bit; a step
    without stochastic encodings is an error message."""
    from act import driver
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 4))
    src, batches, files = _two_batches(model, tmp_path)
    first = batches[0]
    measured = driver.insert(src, str(tmp_path / "measure.mlir"), "encoding=\"#act.quant<bits=4>\"")
    driver.run("act-run", measured, "--inputs=" + ",".join(files[0]),
               "--batch-inputs=" + ",".join(files[1][-2:]), "--step-seed=7", "--threads=1",
               f"--sensitivity={tmp_path / 'act-run.json'}")
    # One kernel thread on both sides: the same float sums (the encodings'
    # bits do not depend on it, the matmuls' reassociation does).
    compiled = capi.CompiledStep.from_file(measured)
    capi.set_num_threads(1)
    try:
        compiled.estimate_sensitivity(batches, tmp_path / "capi.json", seed=7)
    finally:
        capi.set_num_threads(0)
    expected = json.loads((tmp_path / "act-run.json").read_text())
    got = json.loads((tmp_path / "capi.json").read_text())
    assert len(got["tensors"]) == 3 and got["measurement"]["batches"] == 2
    assert got == expected
    # The per-tensor runs on the first batch only (the adaptive loop's
    # re-estimation): act-run's sensitivities on that batch alone, the two
    # batches' gradient variance, L + 1 + 1 evaluations.
    driver.run("act-run", measured, "--inputs=" + ",".join(files[0]), "--step-seed=7",
               "--threads=1", f"--sensitivity={tmp_path / 'first.json'}")
    capi.set_num_threads(1)
    try:
        compiled.estimate_sensitivity(batches, tmp_path / "newest.json", seed=7,
                                      per_tensor_batches=1)
    finally:
        capi.set_num_threads(0)
    alone = json.loads((tmp_path / "first.json").read_text())
    newest = json.loads((tmp_path / "newest.json").read_text())
    assert newest["tensors"] == alone["tensors"]
    assert newest["gradient_variance"] == expected["gradient_variance"] > 0
    assert newest["measurement"]["evaluations"] == 3 + 1 + 1
    with pytest.raises(capi.ActError, match="0 \\(all\\) to the 2 given, not 3"):
        compiled.estimate_sensitivity(batches, tmp_path / "bad.json", per_tensor_batches=3)
    plain = capi.CompiledStep.from_file(src)
    with pytest.raises(capi.ActError, match="no stochastic encodings"):
        plain.estimate_sensitivity([first], tmp_path / "none.json")


def test_capi_variance_is_act_runs(tmp_path):
    """actStepMeasureVariance (act.tune's check, in process) gives the
    gradient variance over step seeds and the mean squared error against
    the step without encodings that act-run --variance-runs [--reference]
    prints for the same step, batch and step seed; a reference with
    encodings, and one step seed, are error messages."""
    from act import driver
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 4))
    src, batches, files = _two_batches(model, tmp_path)
    quant = driver.insert(src, str(tmp_path / "q.mlir"), "encoding=\"#act.quant<bits=2>\"")
    out = driver.run("act-run", quant, "--inputs=" + ",".join(files[0]), "--threads=1",
                     "--step-seed=3", "--variance-runs=8", f"--reference={src}").stdout
    want_mse = float(re.search(r"reference over 8 step seeds: (\S+)", out).group(1))
    want_var, want_norm = map(float, re.search(
        r"variance over 8 step seeds: (\S+) \(squared norm of the mean gradient (\S+)\)",
        out).groups())
    step, exact = capi.CompiledStep.from_file(quant), capi.CompiledStep.from_file(src)
    capi.set_num_threads(1)
    try:
        variance, norm2, mse = step.measure_variance(batches[0], 8, seed=3, reference=exact)
        alone = step.measure_variance(batches[0], 8, seed=3)
    finally:
        capi.set_num_threads(0)
    # act-run prints 7 significant digits.
    for got, want in ((variance, want_var), (norm2, want_norm), (mse, want_mse)):
        assert got == pytest.approx(want, rel=1e-6)
    assert alone[:2] == (variance, norm2) and alone[2] is None
    assert 0 < variance < mse  # 2-bit codes: a variance and a little bias
    with pytest.raises(capi.ActError, match="the reference step has stochastic encodings"):
        step.measure_variance(batches[0], 8, reference=step)
    with pytest.raises(capi.ActError, match="at least 2 runs"):
        step.measure_variance(batches[0], 1)


def test_capi_fewbit_sensitivity_is_act_runs(tmp_path):
    """actStepEstimateFewBitSensitivity (act.compile's allocator with
    few_bit= measures in process with it) writes the profile act-run
    --fewbit-sensitivity writes for the same graph and batches, bit for bit;
    a step with encodings is an error message; and act.compile with
    average_bits=2, few_bit=2 lets the allocator store the GELU input as
    few-bit codes."""
    from act import driver
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.SiLU(),
                          nn.Linear(64, 4))
    src, batches, files = _two_batches(model, tmp_path)
    first = batches[0]
    x, y = batches[1][-2:]
    driver.run("act-run", src, "--inputs=" + ",".join(files[0]),
               "--batch-inputs=" + ",".join(files[1][-2:]), "--threads=1", "--few-bit=2",
               f"--fewbit-sensitivity={tmp_path / 'act-run.json'}")
    exact = capi.CompiledStep.from_file(src)
    capi.set_num_threads(1)
    try:
        exact.estimate_fewbit_sensitivity(batches, tmp_path / "capi.json", bits=2)
        # Again: the variants are compiled once and kept.
        exact.estimate_fewbit_sensitivity(batches, tmp_path / "capi2.json", bits=2)
    finally:
        capi.set_num_threads(0)
    expected = json.loads((tmp_path / "act-run.json").read_text())
    got = json.loads((tmp_path / "capi.json").read_text())
    # The GELU and SiLU inputs.
    assert len(got["tensors"]) == 2 and got["measurement"]["batches"] == 2
    assert all(t["encoding"].startswith("#act.fewbit<bits = 2") for t in got["tensors"])
    assert got == expected == json.loads((tmp_path / "capi2.json").read_text())
    measured = capi.CompiledStep.from_file(
        driver.insert(src, str(tmp_path / "q.mlir"), "encoding=\"#act.quant<bits=4>\""))
    with pytest.raises(capi.ActError, match="the step has encodings"):
        measured.estimate_fewbit_sensitivity([first], tmp_path / "none.json")

    tuned = act.compile(model, F.cross_entropy, x[:32], y[:32], average_bits=2, few_bit=2,
                        work_dir=str(tmp_path / "tuned"))
    loss = tuned(x[:32], y[:32])
    assert torch.isfinite(loss)
    chosen = {t["id"]: t["encoding"] for t in tuned.allocation["tensors"]}
    print(chosen)
    assert any(e.startswith("#act.fewbit") for e in chosen.values()), chosen


def test_digits_mlp_with_4bit_activations_reaches_90_percent():
    """sklearn's digits, 10 epochs, every saved activation stochastically
    quantized to 4 bits through act.compile."""
    acc, peak, _, saved = train("digits-mlp", "#act.quant<bits=4>", seed=0, epochs=10)
    eager, _, _, _ = train("digits-mlp", None, seed=0, epochs=10)
    assert saved[1] < saved[0] / 4  # the saved activations are encoded
    print(f"digits-mlp: act 4-bit {100 * acc:.2f} %, PyTorch eager {100 * eager:.2f} %, "
          f"act step peak {peak} bytes")
    assert acc > 0.90


def test_python_lm_follows_eager_and_trains_with_4bit_activations():
    """The character-level language model on the standard library's sources
    (embedding, causal attention, LayerNorm, GELU; AdamW), 40 steps from
    the same initial weights and batches: act without encodings follows
    eager's loss within 1e-3 relative at every step, and with every saved
    activation at 4 bits the validation loss falls as far as eager's (within
    2 %; the full 1,000-step table is docs/Training.md's)."""
    from act.train import python_sources
    train_files, valid_files = python_sources()
    assert len(valid_files) >= 10 and not set(train_files) & set(valid_files)
    steps, losses = {}, {}
    for name, encoding in (("eager", None), ("none", "none"), ("4-bit", "#act.quant<bits=4>")):
        steps[name] = []
        losses[name], _, _, saved = train("python-lm", encoding, seed=0, epochs=1,
                                          steps_per_epoch=40, log=steps[name])
        if name == "4-bit":
            assert saved[0] / saved[1] > 5
    worst = max(abs(a - b) / b for a, b in zip(steps["none"], steps["eager"]))
    print(f"python-lm, 40 steps: act none vs eager {worst:.1e} relative at worst; validation "
          f"loss eager {losses['eager']:.4f}, none {losses['none']:.4f}, "
          f"4-bit {losses['4-bit']:.4f} (initial ln 97 = 4.57)")
    assert len(steps["none"]) == 40 and worst <= 1e-3
    assert losses["eager"] < 3.3
    assert losses["4-bit"] <= 1.02 * losses["eager"]


def test_digits_mlp_with_fewbit_codes_trains_like_eager():
    """The same with the GELU input stored as 3-bit Few-bit codes (and bf16
    elsewhere): within half a point of PyTorch eager on seed 0, in fewer
    saved bytes than bf16 alone (docs/Training.md has three seeds)."""
    acc, _, _, saved = train("digits-mlp", "#act.float<format=bf16>+few-bit=3", seed=0,
                             epochs=10)
    _, _, _, bf16 = train("digits-mlp", "#act.float<format=bf16>", seed=0, epochs=1)
    eager, _, _, _ = train("digits-mlp", None, seed=0, epochs=10)
    print(f"digits-mlp: act bf16 + few-bit 3 {100 * acc:.2f} %, PyTorch eager "
          f"{100 * eager:.2f} %, saved {saved[1]} bytes (bf16 alone {bf16[1]})")
    assert saved[1] < bf16[1]
    assert acc >= eager - 0.005


def test_fewbit_needs_a_lossy_encoding():
    model = nn.Linear(4, 2)
    with pytest.raises(ValueError, match="few_bit= goes with a lossy encoding"):
        act.compile(model, F.cross_entropy, few_bit=3)
    with pytest.raises(ValueError, match=r"0..4 with average_bits="):
        act.compile(model, F.cross_entropy, average_bits=2, few_bit=8)
    with pytest.raises(ValueError, match="few_bit must be in 0..8"):
        act.compile(model, F.cross_entropy, encoding="#act.quant<bits=4>", few_bit=9)


def test_fewbit_family_on_a_relu_network_allocates_without_it():
    """average_bits= with few_bit= on a network whose activations are all
    ReLU (Fashion-MNIST's CNN in act.train's table): no saved value is read
    only through a smooth activation's derivative, so the family has
    nothing to encode; the step says so once and allocates without it,
    instead of failing inside the estimate."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 3))
    x, y = torch.randn(8, 1, 6, 6), torch.randint(0, 3, (8,))
    with pytest.warns(UserWarning, match=r"few_bit=2 has nothing to encode"):
        step = act.compile(model, F.cross_entropy, x, y, average_bits=2, few_bit=2)
    assert step.few_bit == 0
    assert not any(e.startswith("#act.fewbit") for e in step.adaptations[0]["encodings"].values())
    loss = step(x, y)
    assert torch.isfinite(loss)


def test_include_encodes_only_the_named_saved_values(tmp_path):
    """include= (act-insert-encode-decode's include): only the saved values
    with these ids are encoded, the others stay float32 (the saved bytes
    between none and all encoded); step.report is act's memory report of
    the variant compiled; include= without an encoding, or empty, is an
    error."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 4))
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    full = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "all"),
                       encoding="#act.quant<bits=2>")
    saved = full.report["graphs"][0]["saved"]
    encoded = [t["id"] for t in saved if t["status"] == "encoded"]
    assert len(encoded) >= 2, saved
    one = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "one"),
                      encoding="#act.quant<bits=2>", include=[encoded[0]])
    status = {t["id"]: t["status"] for t in one.report["graphs"][0]["saved"]}
    assert status[encoded[0]] == "encoded"
    assert all(status[i] != "encoded" for i in encoded[1:]), status
    assert one.saved_bytes[1] > full.saved_bytes[1] and one.saved_bytes[1] < one.saved_bytes[0]
    with pytest.raises(ValueError, match="include= names the saved values"):
        act.compile(model, F.cross_entropy, include=[0])
    with pytest.raises(ValueError, match="include= names the saved values"):
        act.compile(model, F.cross_entropy, encoding="#act.quant<bits=2>", include=[])
    # Not ids: a message that names include=, not Python's int().
    for bad in ("a", ["a"], [1.5], [-1], [True], 3):
        with pytest.raises(ValueError, match="include= is a list of saved-value ids"):
            act.compile(model, F.cross_entropy, encoding="#act.quant<bits=2>", include=bad)
    # An id the step does not have: refused when the step is compiled.
    with pytest.raises(ValueError, match=r"include= names saved values \[999\] that this "
                                         r"step does not have"):
        act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "unknown"),
                    encoding="#act.quant<bits=2>", include=[encoded[0], 999])


def test_compiling_and_training_run_no_subprocess(tmp_path, monkeypatch):
    """act.compile (a fixed encoding, and GACT's average bits with its
    re-allocation), act.Module and act.tune's loop compile and run in this
    process through the C API: with act's tools unreachable (ACT_BIN_DIR an empty folder)
    and every subprocess refused, they train as before."""
    monkeypatch.setenv("ACT_BIN_DIR", str(tmp_path / "no-tools"))

    popen = subprocess.Popen

    def refuse(*args, **kwargs):
        command = args[0] if args else kwargs.get("args")
        if list(command[:3]) == [sys.executable, "-m", "act.ahead"]:
            # (compile_ahead's background compile: Python and the C API,
            # not act's tools)
            return popen(*args, **kwargs)
        raise AssertionError(f"a subprocess was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "system", refuse)
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    with pytest.raises(AssertionError, match="a subprocess was started"):
        subprocess.run(["true"])  # the refusal works
    fixed = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "fixed"),
                        encoding="#act.quant<bits=4>")
    adaptive = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "gact"),
                           average_bits=2, adapt_interval=2)
    for step in (fixed, adaptive):
        for _ in range(3):
            model.zero_grad()
            assert torch.isfinite(step(x, y))
            assert all(p.grad is not None for p in model.parameters())
    assert len(adaptive.adaptations) >= 2  # re-allocated in process
    module = act.Module(model, x, work_dir=str(tmp_path / "module"))
    F.cross_entropy(module(x), y).backward()
    # act-tune's whole loop: export, measure, allocate, check.
    manifest = export("mlp", 8, 0, str(tmp_path / "export"), batches=2)
    report = tune(manifest, str(tmp_path / "tune"), average_bits=2.0, variance_runs=4,
                  quiet=True, few_bit=2)
    assert {r["allocation"] for r in report["variance"]} == {"uniform", "exact", "greedy"}


def test_kernel_threads_are_set_through_the_c_api():
    capi.set_num_threads(1)
    assert capi.get_num_threads() == 1
    capi.set_num_threads(0)
    assert capi.get_num_threads() == len(os.sched_getaffinity(0))  # every core
    # More than the runtime's limit is refused and changes nothing (100000
    # threads ended in a segfault inside oneDNN).
    with pytest.raises(capi.ActError, match="at most 256"):
        capi.set_num_threads(100000)
    assert capi.get_num_threads() == len(os.sched_getaffinity(0))


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_compiled_steps_do_not_keep_their_results(tmp_path):
    """A long run does not grow: a Linear(1024, 1024) step (4 MB of
    gradients a call) run 2,000 times holds about what one call holds. The
    results' buffers referred back to their Run, a reference cycle through
    NumPy arrays that the garbage collector cannot traverse: every call's
    results were kept (402 MB after 100 calls)."""
    import gc
    torch.manual_seed(0)
    model = nn.Linear(1024, 1024)
    x, y = torch.randn(8, 1024), torch.randn(8, 1024)
    step = act.compile(model, F.mse_loss, x, y, work_dir=str(tmp_path))
    for _ in range(20):  # warm: the allocator's and the step's steady state
        model.zero_grad(set_to_none=True)
        step(x, y)
    gc.collect()
    before = _rss_bytes()
    for _ in range(2000):
        model.zero_grad(set_to_none=True)
        step(x, y)
    gc.collect()
    grown = _rss_bytes() - before
    print(f"compiled step: RSS grew {grown / 1e6:.1f} MB over 2000 calls")
    assert grown < 40e6  # kept results would be 8 GB
    # A run's memory lives exactly as long as something views it.
    run = step.compiled[step.variant][0].run(
        step._arguments(step.compiled[step.variant][1], x, y, 0))
    grads = run.results[1]
    memory = run._memory
    del run
    gc.collect()
    assert memory.handle is not None and float(grads.sum()) == float(grads.sum())
    del grads
    gc.collect()
    import sys as _sys
    assert _sys.getrefcount(memory) == 2  # this name and getrefcount's argument


def test_encoding_as_act_prints_it_is_accepted(tmp_path):
    """The spelling act's own report prints (spaces after commas and around
    =) reaches act-opt quoted, not split by its option parser."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    losses = []
    for i, encoding in enumerate(["#act.quant<bits = 4, group = 128>",
                                  "#act.quant<bits=4,group=128>"]):
        m = copy.deepcopy(model)
        step = act.compile(m, F.cross_entropy, x, y, encoding=encoding,
                           work_dir=str(tmp_path / str(i)))
        losses.append(float(step(x, y)))
        assert step.saved_bytes[1] < step.saved_bytes[0]
    assert losses[0] == losses[1]


def test_capi_handles_are_checked():
    """Destroying a handle twice, or using it after, is a message, never a
    crash (include/act-c/Step.h's contract)."""
    import ctypes
    lib = capi.library()
    error = ctypes.c_void_p()
    text = (b"func.func @f(%x: tensor<4xf32>) -> f32 { %c = arith.constant 0 : index\n"
            b"  %v = tensor.extract %x[%c] : tensor<4xf32>\n  return %v : f32 }")
    h = lib.actStepCompileSource(text, len(text), None, ctypes.byref(error))
    assert h.ptr
    lib.actStepDestroy(h)
    lib.actStepDestroy(h)  # nothing happens
    assert lib.actStepGetNumArguments(h) == 0
    run = lib.actStepRun(h, None, 0, 0, ctypes.byref(error))
    assert not run.ptr
    assert b"not a live step" in ctypes.string_at(error.value)
    lib.actStringFree(error.value)
    run = capi._Handle(12345678)  # never created
    assert lib.actRunGetNumResults(run) == 0
    lib.actRunDestroy(run)
    lib.actRunDestroy(run)
    # Null arguments for a step that takes some: said as such.
    h = lib.actStepCompileSource(text, len(text), None, ctypes.byref(error))
    run = lib.actStepRun(h, None, 1, 0, ctypes.byref(error))
    assert not run.ptr
    assert b"the arguments are null" in ctypes.string_at(error.value)
    lib.actStringFree(error.value)
    lib.actStepDestroy(h)


def test_pfq_switches_precision_during_training_and_counts_the_cost():
    """FracTrain's PFQ on the digits MLP: the compute precision starts at
    FW-3/BW-6 and steps up at loss plateaus (window 1, so that 6 epochs
    see switches); each stage is one compiled variant; FracTrain's cost of
    the run is below fixed FW-8/BW-8's; the model still learns."""
    info = {}
    acc, _, _, _ = train("digits-mlp", "none+pfq=3/6,4/8,8/8", seed=0, epochs=6,
                         pfq={"eps": 0.2, "alpha": 0.5, "window": 1}, info=info)
    stages = [e["compute_bits"] for e in info["epochs"]]
    assert stages[0] == [3, 6]
    assert [s["stage"] for s in info["switches"]] == ["4/8", "8/8"][:len(info["switches"])]
    assert info["switches"], stages
    # The epochs after a switch ran at the new stage.
    first = info["switches"][0]["epoch"]
    assert stages[first] == [4, 8]
    assert 0 < info["saved_vs_8bit"] < 1 and info["saved_vs_fp32"] > 0.9
    assert acc > 0.85


def test_pfq_raises_saved_activation_bits(tmp_path):
    """PFQ on the saved activations: '@2,@4,@8' starts the step with
    #act.quant<bits=2> and swaps in the 4- and 8-bit variants at plateaus;
    the log gives each epoch's encoding and saved bytes (more bits, more
    bytes), --plot draws the schedule."""
    from act.train import main
    log, figure = tmp_path / "log.jsonl", tmp_path / "curves.svg"
    assert main(["digits-mlp", "--epochs", "5", "--seeds", "0",
                 "--encoding", "#act.quant<bits=2>+pfq=@2,@4,@8", "--pfq-eps", "0.5",
                 "--pfq-window", "1", "--log", str(log), "--plot", str(figure)]) == 0
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    pfq = [r for r in runs if r["configuration"] != "eager"][0]
    epochs = pfq["epochs"]
    assert epochs[0]["encoding"] == "#act.quant<bits=2>"
    assert [s["stage"] for s in pfq["switches"]] == ["@4", "@8"][:len(pfq["switches"])]
    assert pfq["switches"], epochs
    first = pfq["switches"][0]["epoch"]
    assert epochs[first]["encoding"] == "#act.quant<bits=4>"
    assert epochs[first]["saved_bytes"] > epochs[0]["saved_bytes"]
    assert all(0 < e["test_accuracy"] <= 1 and e["seconds"] > 0 for e in epochs)
    assert figure.stat().st_size > 5000


def test_train_resumes_a_log_and_anneals_the_learning_rate(tmp_path, monkeypatch, capsys):
    """act.train --schedule cosine anneals the learning rate to 0 over the
    run's steps (half of it after half of them); --resume keeps the runs
    the log has and runs only the missing ones, a run cut off mid-write
    runs again, and a log of other options is refused, naming them."""
    import act.train as train_module
    ran = []
    real = train_module.train

    def counted(**kwargs):
        ran.append((kwargs["encoding"], kwargs["seed"]))
        return real(**kwargs)
    monkeypatch.setattr(train_module, "train", counted)
    log = tmp_path / "log.jsonl"
    command = ["digits-mlp", "--epochs", "2", "--encoding", "#act.quant<bits=4>",
               "--schedule", "cosine", "--log", str(log)]
    assert train_module.main(command + ["--seeds", "0"]) == 0
    assert ran == [(None, 0), ("#act.quant<bits=4>", 0)]
    first = log.read_text()
    runs = [json.loads(line) for line in first.splitlines()]
    for run in runs:
        # (23 steps an epoch: after 23 of 46, lr * (1 + cos(pi / 2)) / 2)
        lrs = [e["lr"] for e in run["epochs"]]
        assert lrs[0] == pytest.approx(0.05 * (1 + math.cos(math.pi * 23 / 46)) / 2)
        assert lrs[1] == pytest.approx(0.0, abs=1e-12)
    # Resumed with another seed: only seed 1's runs are made, appended.
    ran.clear()
    capsys.readouterr()
    assert train_module.main(command + ["--seeds", "0,1", "--resume"]) == 0
    assert ran == [(None, 1), ("#act.quant<bits=4>", 1)]
    lines = log.read_text().splitlines()
    assert "\n".join(lines[:2]) + "\n" == first and len(lines) == 4
    table = capsys.readouterr().out
    quant = [json.loads(line)["accuracy"] for line in lines if "quant" in line]
    row = [r for r in table.splitlines() if r.startswith("| act #act.quant")][0]
    assert f"{100 * statistics.mean(quant):.2f} +- {100 * statistics.stdev(quant):.2f} %" in row
    # The last run cut off mid-write: run again.
    log.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    ran.clear()
    assert train_module.main(command + ["--seeds", "0,1", "--resume"]) == 0
    assert ran == [("#act.quant<bits=4>", 1)]
    # Other options: refused before anything runs.
    ran.clear()
    with pytest.raises(SystemExit) as exit:
        train_module.main(command + ["--seeds", "0,1", "--resume", "--lr", "0.1"])
    assert exit.value.code == 2 and ran == []
    error = capsys.readouterr().err
    assert "log.jsonl:1: made with other options (lr: 0.05 there, 0.1 here)" in error


def _adaptive_run(work_dir, runtime_bits, calls=14, scale=0.01, **options):
    """`calls` calls of GACT's adaptive loop (average_bits=3,
    adapt_interval=4; every 4 calls unless options say otherwise:
    adapt_backoff=1) whose inputs are `scale` times larger from call 4 on;
    the step and its losses."""
    options.setdefault("adapt_backoff", 1)
    options.setdefault("average_bits", 3)
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 4))
    x, y = torch.randn(448, 16), torch.randint(0, 4, (448,))
    step = act.compile(model, F.cross_entropy, x[:32], y[:32], work_dir=str(work_dir),
                       adapt_interval=4, runtime_bits=runtime_bits, **options)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for i in range(calls):
        xb, yb = x[(i % 14) * 32:][:32], y[(i % 14) * 32:][:32]
        if i >= 4:
            xb = xb * scale
        opt.zero_grad(set_to_none=True)
        losses.append(step(xb, yb))
        assert torch.isfinite(losses[-1])
        opt.step()
    return step, [float(v) for v in losses]


def test_gact_adaptive_loop_reallocates_and_swaps_the_step(tmp_path):
    """average_bits=3, adapt_interval=4, runtime_bits=False: allocations at
    calls 0 (one batch), 4, 8 and 12 (the newest batch measured, the one
    before it too for the gradient variance, so the alert is checked). The
    inputs shrink 100x from call 4 on: measured on the shrunk batch (call
    4), the sensitivities have changed, the re-allocation moves bits (1/4/4
    instead of 2/2/4) and the step compiled for it takes over; each
    allocation's per-tensor variances sum to its prediction and its alert
    follows GACT's 10% rule."""
    step, _ = _adaptive_run(tmp_path, runtime_bits=False)
    adaptations = step.adaptations
    assert [a["call"] for a in adaptations] == [0, 4, 8, 12]
    assert [a["batches"] for a in adaptations] == [1, 2, 2, 2]
    assert adaptations[0]["gradient_variance"] is None
    signatures = []
    for a in adaptations:
        assert a["seconds"] > 0
        bits = list(a["bits"].values())
        assert sum(bits) <= 3 * len(bits)  # equal sizes: the average budget
        if a["gradient_variance"] is not None:
            assert (a["alert"] is not None) == (a["predicted_variance"]
                                                > 0.1 * a["gradient_variance"])
        signatures.append(tuple(sorted(a["encodings"].items())))
    shares = sum(t["variance"] for t in step.allocation["tensors"] if t["variance"] is not None)
    assert shares == pytest.approx(adaptations[-1]["predicted_variance"], rel=1e-9)
    assert [a["changed"] for a in adaptations] == [False, True, False, False]
    assert signatures[0] != signatures[1] == signatures[2] == signatures[3]
    assert list(adaptations[1]["bits"].values()) == [1, 4, 4]
    # One compiled step per allocation; the last call ran the newest.
    assert len(step.compiled) == 2
    assert step.variant[-1] == tuple((int(k), v) for k, v in adaptations[-1]["encodings"].items())
    assert step.adapt_seconds == pytest.approx(sum(a["seconds"] for a in adaptations))


def test_gact_adaptive_loop_measures_the_newest_batch(tmp_path):
    """A re-estimation measures each tensor on the newest batch alone (L + 1
    runs) and runs the batch before it once, for the gradient variance:
    L + 2 evaluations, where two batches measured in full took 2 (L + 1);
    its sensitivities are act-run's on the newest batch."""
    step, _ = _adaptive_run(tmp_path, runtime_bits=True)
    assert [a["call"] for a in step.adaptations] == [0, 4, 8, 12]
    profiles = [json.loads(next(tmp_path.glob(f"*_a{k}_profile.json")).read_text())
                for k in range(4)]
    tensors = len(profiles[0]["tensors"])
    assert profiles[0]["measurement"]["evaluations"] == tensors + 1
    assert profiles[0]["gradient_variance"] is None
    for p in profiles[1:]:
        assert p["measurement"] == {**p["measurement"], "batches": 2,
                                    "evaluations": tensors + 2}
        assert p["gradient_variance"] > 0
        assert all(t["samples"] == 1 for t in p["tensors"])


def test_gact_adaptive_loop_backs_off_while_the_allocation_holds(tmp_path):
    """By default (adapt_backoff=2) a re-allocation that changes nothing
    makes the next wait twice as long: the run above re-allocates at calls
    0, 4 (it moves, so the next is 4 calls later), 8 (unchanged), then
    would at 8 + 8 = 16; the losses are those of the run that re-allocates
    every 4 calls (its allocation at call 12 changed nothing). Each allocation's seconds split into measuring, allocating and
    compiling; the overhead is all of it but the first allocation's compile
    of its step (a fixed encoding's step compiles one too)."""
    step, losses = _adaptive_run(tmp_path / "backoff", runtime_bits=False, adapt_backoff=2)
    adaptations = step.adaptations
    assert [a["call"] for a in adaptations] == [0, 4, 8]
    assert [a["changed"] for a in adaptations] == [False, True, False]
    assert list(adaptations[1]["bits"].values()) == [1, 4, 4]
    assert step._next_adapt[next(iter(step._next_adapt))] == (16, 8)
    fixed, fixed_losses = _adaptive_run(tmp_path / "fixed", runtime_bits=False)
    assert [a["call"] for a in fixed.adaptations] == [0, 4, 8, 12]
    assert losses == fixed_losses
    for a in adaptations:
        assert a["measure_seconds"] > 0 and a["allocate_seconds"] > 0
        assert a["measure_seconds"] + a["allocate_seconds"] + a["compile_seconds"] == \
            pytest.approx(a["seconds"])
    assert [a["first"] for a in adaptations] == [True, False, False]
    assert step.adapt_overhead_seconds == pytest.approx(
        step.adapt_seconds - adaptations[0]["compile_seconds"])
    # (the move compiled its step here: that is adaptation)
    assert adaptations[1]["compile_seconds"] > 0.1
    with pytest.raises(ValueError, match="adapt_backoff= is an integer >= 1"):
        act.compile(nn.Linear(4, 2), F.cross_entropy, average_bits=2, adapt_interval=4,
                    adapt_backoff=0)


def test_gact_adaptive_loop_sets_new_widths_without_recompiling(tmp_path):
    """The same run with run-time widths: with runtime_bits=True the one
    compiled step (#act.runtime_quant) takes the allocation at call 4 (1/4/4
    instead of 2/2/4, the same family) as new widths instead of a new step;
    by default (None) the first compile is #act.quant's and the first move
    compiles the step with run-time widths, which later moves would only
    set. Both give bit for bit the losses of the run that compiles a step
    per allocation; saved bytes follow the widths."""
    static, static_losses = _adaptive_run(tmp_path / "static", runtime_bits=False)
    step, losses = _adaptive_run(tmp_path / "runtime", runtime_bits=True)
    assert losses == static_losses
    adaptations = step.adaptations
    assert [a["bits"] for a in adaptations] == [a["bits"] for a in static.adaptations]
    assert [a["changed"] for a in adaptations] == [False] * 4
    assert [a["widths_changed"] for a in adaptations] == [False, True, False, False]
    assert len(step.compiled) == 1
    compiled = next(iter(step.compiled.values()))[0]
    assert compiled.bits == {int(k): v for k, v in adaptations[-1]["bits"].items()}
    assert all(e.startswith("#act.runtime_quant")
               for e in (t["encoding"] for g in step.report["graphs"] for t in g["saved"])
               if e != "none")
    # The saved bytes at the widths in use (and each value's width word).
    assert step.saved_bytes[1] == static.saved_bytes[1] + 4 * len(adaptations[-1]["bits"])
    with pytest.raises(capi.ActError, match="takes widths 1, 2, 4, 8, 32; got 3"):
        compiled.set_bits({0: 3})

    auto, auto_losses = _adaptive_run(tmp_path / "auto", runtime_bits=None)
    assert auto_losses == static_losses
    assert [a["changed"] for a in auto.adaptations] == [False, True, False, False]
    assert [a["widths_changed"] for a in auto.adaptations] == [False] * 4
    first, moved = [entry[0] for entry in auto.compiled.values()]
    assert first.bits == {} and moved.bits == compiled.bits
    # The first allocation's placement with run-time widths was compiled by
    # a background process while training ran: the move at call 4 loaded
    # it; only the first allocation compiled here.
    assert [a["compiled"] for a in auto.adaptations] == ["here", "ahead", None, None]
    assert [a["compiled"] for a in step.adaptations] == ["here", None, None, None]
    here, here_losses = _adaptive_run(tmp_path / "here", runtime_bits=None, compile_ahead=False)
    assert here_losses == static_losses
    assert [a["compiled"] for a in here.adaptations] == ["here", "here", None, None]


@pytest.mark.parametrize("check", [True, False])
def test_gact_adaptive_loop_holds_widths_that_gain_little(tmp_path, monkeypatch, check):
    """A re-allocation that changes only run-time widths takes them when
    they are at least ADAPT_HYSTERESIS better than the widths in use: the
    move at call 4 (2/2/4 to 1/4/4) is taken at the default 10 %, and held
    when almost any gain is too little. Better by the whole-step check's
    measured gradient error, or without the check
    (ALLOCATION_CHECK_RUNS = 0) by predicted compression variance (both by
    the new sensitivities: act-allocate-bits' own prediction, recomputed
    from the profile). A held move keeps the step's widths, logs the
    proposal and both errors or predictions, and does not count as a
    move."""
    from act import training
    if not check:
        monkeypatch.setattr(training, "ALLOCATION_CHECK_RUNS", 0)
    step, _ = _adaptive_run(tmp_path / "taken", runtime_bits=True)
    moved = step.adaptations[1]
    assert moved["widths_changed"] and moved["held"] is None
    assert (moved["check"]["chosen"] == "proposed") if check else moved["check"] is None
    monkeypatch.setattr(training, "ADAPT_HYSTERESIS", 1 - 1e-12)
    step, _ = _adaptive_run(tmp_path / "held", runtime_bits=True)
    held = step.adaptations[1]
    assert [a["widths_changed"] for a in step.adaptations] == [False] * 4
    assert held["held"]["proposed"] == {int(k): v for k, v in moved["bits"].items()}
    assert list(held["bits"].values()) == list(step.adaptations[0]["bits"].values()) == [2, 2, 4]
    if check:
        assert held["check"]["chosen"] == "current"
        assert held["held"]["proposed_error"] == held["check"]["errors"]["proposed"]
        assert held["held"]["proposed_error"] < held["held"]["current_error"]
    else:
        assert held["held"]["proposed_variance"] == pytest.approx(held["predicted_variance"],
                                                                  rel=1e-6)
        assert held["held"]["proposed_variance"] < held["held"]["current_variance"]
    compiled = next(iter(step.compiled.values()))[0]
    assert compiled.bits == {int(k): v for k, v in step.adaptations[0]["bits"].items()}


def test_gact_reallocation_waits_for_its_background_compile(tmp_path, monkeypatch):
    """A re-allocation due while the step it is checked on (run-time
    widths, compiled by a background process after the first allocation)
    is still compiling waits for it, tried again at each call, instead of
    stopping training for the compile: here the compile is made to finish
    by call 6, so the re-allocation due at call 4 happens at call 6 and
    loads it ("ahead"). The default, ADAPT_WAIT_LIMIT = 0, re-allocates
    when due (a result that does not depend on the machine's speed)."""
    from act import ahead, training
    monkeypatch.setattr(training, "ADAPT_WAIT_LIMIT", 1)
    done, calls = ahead.Ahead.done, []

    def compiling_until_call_6(self, path):
        if calls and calls[-1].calls < 6:
            return False
        while not done(self, path):  # (the real compile, from call 6 on)
            time.sleep(0.02)
        return True
    monkeypatch.setattr(ahead.Ahead, "done", compiling_until_call_6)
    real_call = training.Step.__call__

    def call(self, inputs, targets):
        calls[:] = [self]
        return real_call(self, inputs, targets)
    monkeypatch.setattr(training.Step, "__call__", call)
    step, _ = _adaptive_run(tmp_path, runtime_bits=None, calls=9)
    assert [a["call"] for a in step.adaptations] == [0, 6]
    assert step.adaptations[1]["compiled"] == "ahead"


def _checked_run(work_dir, monkeypatch, calls=9, scale_uniform=1.0):
    """GACT's adaptive loop (average_bits=2, adapt_interval=4: allocations
    at calls 0, 4, 8, ...) on layers of unequal sizes, each whole-step
    check's arguments and measured errors recorded (uniform's multiplied by
    `scale_uniform` from the second check on); the step, the records and
    the losses."""
    from act import training
    checks, measure = [], training.Step._measure_widths

    def recorded(self, shapes, step, args, candidates):
        result = measure(self, shapes, step, args, candidates)
        if checks:
            result["errors"]["uniform"] *= scale_uniform
        checks.append(([a.clone() if isinstance(a, torch.Tensor) else a.copy() for a in args],
                       candidates, dict(result["errors"])))
        return result
    monkeypatch.setattr(training.Step, "_measure_widths", recorded)
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(16, 128), nn.GELU(), nn.Linear(128, 32), nn.Tanh(),
                          nn.Linear(32, 64), nn.LayerNorm(64), nn.Linear(64, 4))
    x, y = torch.randn(448, 16), torch.randint(0, 4, (448,))
    step = act.compile(model, F.cross_entropy, x[:32], y[:32], work_dir=str(work_dir),
                       average_bits=2, adapt_interval=4, adapt_backoff=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for i in range(calls):
        opt.zero_grad(set_to_none=True)
        losses.append(float(step(x[(i % 14) * 32:][:32], y[(i % 14) * 32:][:32])))
        opt.step()
    return step, checks, losses


def test_gact_whole_step_check_measures_the_candidates(tmp_path, monkeypatch):
    """With the adaptive loop, the first allocation (made at
    initialization, before anything can be checked) is uniform bits at
    equal bytes (here the average, 2 bits); from the first re-allocation on the whole step decides: the
    allocator's proposal, the widths in use and uniform bits, each the mean
    squared error of the gradient against the step without encodings
    (ALLOCATION_CHECK_RUNS step seeds, on the step with run-time widths).
    Each error is bit for bit what the same seeds give on a step compiled
    for those bits alone: the first allocation's #act.quant step (uniform),
    the proposal placed as #act.quant by act-allocate-bits from the same
    profile, and the step with every measured tensor at 2 bits
    (measuring_step's placement). The lowest is taken unless the widths in
    use are within ADAPT_HYSTERESIS of it; the step's widths are then those
    it chose."""
    from act import training
    from act.tune import allocate, measuring_step
    step, checks, _ = _checked_run(tmp_path, monkeypatch)
    adaptations = step.adaptations
    assert [a["call"] for a in adaptations] == [0, 4, 8] and adaptations[0]["check"] is None
    assert adaptations[0]["uniform_first"] and set(adaptations[0]["bits"].values()) == {2}
    assert len(checks) == 2
    name, src, _ = next(iter(step._exports.values()))
    exact = capi.CompiledStep.from_file(src)
    runs = training.ALLOCATION_CHECK_RUNS

    def error(mlir, args):
        return capi.CompiledStep.from_file(str(mlir)).measure_variance(
            args, runs, seed=1, reference=exact)[2]
    first = next(tmp_path.glob("*_a0_tuned.mlir"))
    uniform = measuring_step(src, str(tmp_path / "uniform.mlir"), 2)
    for k, ((args, candidates, errors), entry) in enumerate(zip(checks, adaptations[1:])):
        assert set(errors) == {"proposed", "current", "uniform"}
        assert set(candidates["uniform"].values()) == {2}
        assert errors["uniform"] == error(uniform, args)
        if k == 0:  # (the first allocation's widths in use: uniform)
            assert errors["current"] == errors["uniform"] == error(first, args)
        # The proposal, placed as #act.quant from the same profile.
        proposal = tmp_path / f"proposal{k}.mlir"
        allocate(src, str(next(tmp_path.glob(f"*_a{k + 1}_profile.json"))), 2, str(proposal),
                 str(tmp_path / f"proposal{k}.json"))
        assert errors["proposed"] == error(proposal, args)
        assert entry["check"]["errors"] == errors
        best = min(errors, key=errors.get)
        chosen = ("current" if errors[best] > (1 - training.ADAPT_HYSTERESIS)
                  * errors["current"] else best)
        assert entry["check"]["chosen"] == chosen
        assert {int(k): v for k, v in entry["bits"].items()
                if int(k) in candidates[chosen]} == candidates[chosen]
    # Unequal layers: the proposal is not uniform, and measures better.
    assert len(set(checks[0][1]["proposed"].values())) > 1
    assert checks[0][2]["proposed"] < checks[0][2]["uniform"]
    assert adaptations[1]["check"]["chosen"] == "proposed" and adaptations[1]["changed"]


def test_measure_errors_runs_every_width_set_against_one_reference(tmp_path, monkeypatch):
    """CompiledStep.measure_errors (actStepMeasureErrors), what the check
    measures with: each set of run-time widths' error is bit for bit
    measure_variance's at those widths (the same step seeds), a set that
    leaves an id out measures it at the widths the step had, which are
    restored after; a width the encoding does not allow fails naming its
    set, the widths unchanged."""
    from act.tune import measuring_step
    step, checks, _ = _checked_run(tmp_path, monkeypatch, calls=5)
    args = checks[0][0]
    name, src, _ = next(iter(step._exports.values()))
    exact = capi.CompiledStep.from_file(src)
    runtime = capi.CompiledStep.from_file(measuring_step(
        src, str(tmp_path / "runtime.mlir"), encoding="#act.runtime_quant<[1, 2, 4, 8], bits = 4>"))
    ids = sorted(checks[0][1]["proposed"])
    before = runtime.bits
    sets = [{i: 2 for i in ids}, {ids[0]: 8}, {i: 1 + (k % 2) for k, i in enumerate(ids)}]
    errors = runtime.measure_errors(args, sets, 2, exact, seed=1)
    assert runtime.bits == before
    for widths, got in zip(sets, errors):
        runtime.set_bits(widths)
        assert got == runtime.measure_variance(args, 2, seed=1, reference=exact)[2]
        runtime.set_bits({i: before[i] for i in ids})
    assert errors[1] < errors[0] and errors[2] > errors[0]  # (8 bits once; 1 bit half the time)
    with pytest.raises(capi.ActError, match="set 1 of widths"):
        runtime.measure_errors(args, [{ids[0]: 2}, {ids[1]: 3}], 2, exact, seed=1)
    assert runtime.bits == before


def test_gact_whole_step_check_takes_uniform_bits_when_they_are_best(tmp_path, monkeypatch):
    """Where uniform bits measure clearly best (here made so at the second
    check: their measured error scaled down 100x), the re-allocation goes
    back to them from the proposal taken at the first: every tensor at the
    average, set as run-time widths of the step the checks measure on (no
    other step compiled), the saved bytes those of uniform bits; the next
    check starts from them."""
    step, checks, losses = _checked_run(tmp_path, monkeypatch, calls=13, scale_uniform=0.01)
    first, moved, back, after = step.adaptations
    assert moved["check"]["chosen"] == "proposed" and len(set(moved["bits"].values())) > 1
    assert back["check"]["chosen"] == "uniform" and back["widths_changed"]
    assert set(back["bits"].values()) == {2}
    compiled = step.compiled[step.variant][0]
    assert compiled.bits == {int(k): 2 for k in back["bits"]}
    assert checks[2][1]["current"] == checks[1][1]["uniform"]
    assert after["check"]["chosen"] in ("current", "uniform")
    assert len(step.compiled) == 2  # (the first allocation's; run-time widths)
    # Saved bytes: uniform bits' (measuring_step's #act.quant<bits=2>
    # placement, by act's memory report) and each value's width word.
    from act import driver
    from act.tune import measuring_step
    src = next(iter(step._exports.values()))[1]
    uniform = driver.memory_report(measuring_step(src, str(tmp_path / "uniform.mlir"), 2),
                                   str(tmp_path / "uniform.json"))
    words = len(back["bits"])
    assert step.saved_bytes[1] == (uniform["graphs"][0]["totals"]["saved_bytes_after"]
                                   + 4 * words)
    assert all(math.isfinite(v) for v in losses)


def test_gact_whole_step_check_measures_nothing_when_nothing_differs(tmp_path):
    """Three equal layers at average 2 bits: the allocator proposes 2 bits
    each, which are the widths in use (uniform bits first) and uniform
    bits; a check with one candidate measures nothing and needs no step
    with run-time widths (only the first allocation's step is compiled)."""
    step, _ = _adaptive_run(tmp_path, runtime_bits=None, average_bits=2, compile_ahead=False)
    assert [a["call"] for a in step.adaptations] == [0, 4, 8, 12]
    for a in step.adaptations[1:]:
        assert a["check"]["measured"] == 0 and a["check"]["chosen"] == "current"
        assert set(a["bits"].values()) == {2} and not a["changed"]
    assert len(step.compiled) == 1


def test_uniform_bits_at_equal_bytes():
    """The check's uniform bits are the widest width that fits the
    allocation's budget on every value it can set (a sign mask stays 1
    bit): the average itself without recomputation; 8 bits at average 2
    where recomputed values (in the budget at 0 bits) leave 3/4 of it to
    the values stored; 1 bit at average 1.5 (two thirds of the budget: not
    uniform bits first)."""
    from act.training import _uniform_width

    def report(budget, *tensors):
        return {"budget_bits": budget, "tensors": [
            {"elements": n, "bits": b, "sign_only": mask, "sensitivity": None if mask else 1.0,
             "encoding": "mask" if mask else "#act.quant<bits = 2>"} for n, b, mask in tensors]}
    assert _uniform_width(report(2 * 300, (100, 2, False), (200, 2, False))) == (2, 1.0)
    assert _uniform_width(report(2 * 400, (100, 8, False))) == (8, 1.0)
    assert _uniform_width(report(1.5 * 300, (300, 2, False))) == (1, 300 / 450)
    assert _uniform_width(report(2 * 200, (100, 1, True), (100, 2, False))) == (2, 300 / 400)
    assert _uniform_width(report(50, (100, 1, False))) == (None, 0.0)


def test_gact_adaptive_training_logs_allocations(tmp_path):
    """act.train with average-bits=2 and --adapt-interval: the log has every
    allocation and the share of training time adapting took; the plot
    draws the bits per tensor over the steps."""
    from act.train import main
    log, figure = tmp_path / "log.jsonl", tmp_path / "curves.svg"
    assert main(["digits-mlp", "--epochs", "2", "--seeds", "0", "--encoding", "average-bits=2",
                 "--adapt-interval", "10", "--adapt-backoff", "1", "--log", str(log),
                 "--plot", str(figure)]) == 0
    run = [json.loads(line) for line in log.read_text().splitlines()][1]
    # 2 epochs of 23 steps, the last partial (its own shape): the full
    # batches' allocations every 10 of their own calls, at calls 0, 10, 20,
    # then 31, 41 (the partial batch at call 22 does not count); the partial
    # batch's, once (at call 22; at 45 it has had 2 calls of its own).
    full = [a for a in run["adaptations"] if a["shapes"][0][0] == 64]
    assert [a["call"] for a in full] == [0, 10, 20, 31, 41]
    partial = [a for a in run["adaptations"] if a["shapes"][0][0] != 64]
    assert [a["call"] for a in partial] == [22]
    # Re-estimations use the last two batches of the shape (the partial
    # batch between them does not count): the alert has its variance.
    assert all(a["batches"] == 2 and a["gradient_variance"] > 0 for a in full[1:])
    assert 0 < run["adapt_fraction"] < run["adapt_fraction_total"] < 1
    assert run["accuracy"] > 0.8
    assert all(e["allocation_bits"] for e in run["epochs"])
    assert figure.stat().st_size > 5000


def test_data_parallel_two_processes_train_like_one():
    """torch.distributed (gloo, 2 processes on localhost): each process runs
    act's step on half of every batch and the gradients are all-reduced
    after it; without encodings the losses follow the one-process run of
    the same batches (float reassociation only) and both processes end with
    the same parameters (train_distributed checks); with 4-bit activations
    it trains as well."""
    from act.train import train_distributed
    one = {"seed": 0}
    acc_one, _, _, _ = train("digits-mlp", "none", seed=0, epochs=3, info=one)
    (acc_two, _, _, _), two = train_distributed(2, task="digits-mlp", encoding="none",
                                                seed=0, epochs=3)
    for a, b in zip(one["epochs"], two["epochs"]):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
    assert abs(acc_one - acc_two) <= 1 / 360
    (acc_4bit, _, _, _), info = train_distributed(2, task="digits-mlp",
                                                  encoding="#act.quant<bits=4>", seed=0,
                                                  epochs=5)
    print(f"data-parallel digits-mlp: none {100 * acc_two:.2f} % (one process "
          f"{100 * acc_one:.2f} %), 4-bit {100 * acc_4bit:.2f} %")
    assert info["processes"] == 2 and acc_4bit > 0.9


def test_uint8_frames_follow_eager(tmp_path):
    """A DQN-style network on uint8 frames scaled inside the model
    (`x.float() / 255`): act.compile passes the frames' bytes to the step
    (no copy, no widening in Python) and the step zero-extends them."""
    class Q(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.l = nn.Conv2d(2, 4, 3, stride=2), nn.Linear(4 * 3 * 3, 3)

        def forward(self, x):
            return self.l(F.relu(self.c(x.float() / 255.0)).flatten(1))

    torch.manual_seed(0)
    model = Q()
    eager = copy.deepcopy(model)
    step = act.compile(model, F.smooth_l1_loss, work_dir=str(tmp_path))
    for _ in range(2):
        x = torch.randint(0, 256, (5, 2, 7, 7), dtype=torch.uint8)
        y = torch.randn(5, 3)
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step(x, y)
        expected = F.smooth_l1_loss(eager(x), y)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-5
        for p, q in zip(model.parameters(), eager.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6)


def test_parameters_of_another_module_are_read_at_every_call(tmp_path):
    """A GAN's generator step: the loss runs the discriminator, whose
    optimizer moves its parameters in place between generator steps. They
    were constants of the trace (the first call's discriminator, silently:
    loss 0.793 against eager's 0.803 at the second step). They are
    parameters of the step now, their gradients added to their .grad as
    eager autograd does, and the discriminator's BatchNorm statistics are
    buffers of the step: read at every call (eval mode) and updated
    (training mode), num_batches_tracked counted. Tracing also ran the
    loss four times on the real discriminator, whose BatchNorm counted
    four batches it never saw; its buffers are kept now."""
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 6))
    disc = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2),
                         nn.Linear(16, 1)).eval()
    eager, eager_disc = copy.deepcopy(gen), copy.deepcopy(disc)

    def loss_fn(fake, y):
        return F.binary_cross_entropy_with_logits(disc(fake), y)

    def eager_loss(fake, y):
        return F.binary_cross_entropy_with_logits(eager_disc(fake), y)

    step = act.compile(gen, loss_fn, work_dir=str(tmp_path))
    z, ones = torch.randn(8, 4), torch.ones(8, 1)
    for i in range(5):
        if i == 3:  # the discriminator's BatchNorm in training mode from here
            disc.train()
            eager_disc.train()
        with torch.no_grad():  # the discriminator's update between steps
            for p, q in zip(disc.parameters(), eager_disc.parameters()):
                p.add_(0.1 * torch.randn_like(p))
                q.copy_(p)
            disc[1].running_mean.add_(0.1)  # and its statistics (read in eval mode)
            eager_disc[1].running_mean.copy_(disc[1].running_mean)
        for m in (gen, eager, disc, eager_disc):
            m.zero_grad(set_to_none=True)
        loss = step(z, ones)
        expected = eager_loss(eager(z), ones)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-6
        # The discriminator's gradients too, as eager autograd adds them.
        # (A training-mode BatchNorm makes some exactly 0 in theory: both
        # sides' rounding noise there is below 1e-6.)
        for p, q in zip(list(gen.parameters()) + list(disc.parameters()),
                        list(eager.parameters()) + list(eager_disc.parameters())):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6)
        for (k, v), w in zip(disc.state_dict().items(), eager_disc.state_dict().values()):
            assert torch.allclose(v.float(), w.float(), atol=1e-6), (i, k)
    assert int(disc[1].num_batches_tracked) == 2
    assert len(step.compiled) == 2  # the discriminator's mode is part of the key


def test_autocast_is_ignored_with_a_warning(tmp_path):
    """A loop written for mixed precision calls the step under
    torch.autocast: tracing there made a bf16 graph ("tensors of dtype
    torch.bfloat16 are not supported"). The step runs in float32, as
    outside autocast, and says so once."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    step = act.compile(model, F.cross_entropy, work_dir=str(tmp_path))
    with pytest.warns(UserWarning, match="ignores torch.autocast"):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = float(step(x, y))
    assert inside == float(step(x, y))
    assert abs(inside - float(F.cross_entropy(model(x), y))) <= 1e-6


def test_indices_out_of_range_are_an_error(tmp_path):
    """Token ids past the embedding's rows and class targets past the
    logits': PyTorch raises IndexError; the step read outside the table
    (a segmentation fault) or returned a wrong loss, silently. The
    exporter bounds such data (`act.index_range` on the argument) and the
    step engine refuses it before running; in-range data still runs, and
    ignore_index stays allowed."""
    from act.capi import ActError
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(8, 3))
    step = act.compile(model, lambda o, y: F.cross_entropy(o, y, ignore_index=-1),
                       work_dir=str(tmp_path))
    ids, targets = torch.tensor([[1, 2], [3, 4]]), torch.tensor([0, 2])
    first = float(step(ids, targets))
    with pytest.raises(ActError, match=r"holds 400000000 at element 3, outside \[0, 10\): "
                                       r"inputs indexes the 10 rows of 0.weight"):
        step(torch.tensor([[1, 2], [3, 400000000]]), targets)
    with pytest.raises(ActError, match=r"holds 3 at element 1, outside \[0, 3\) \(or -1\): "
                                       r"targets indexes the loss's 3 classes"):
        step(ids, torch.tensor([0, 3]))
    assert float(step(ids, torch.tensor([0, -1]))) == pytest.approx(
        float(F.cross_entropy(model(ids), torch.tensor([0, -1]), ignore_index=-1)), rel=1e-5)
    assert float(step(ids, targets)) == pytest.approx(first, rel=1e-6)
    # F.one_hot of the targets in a loss: zero rows before, silently.
    squared = act.compile(model, lambda o, y: ((torch.softmax(o, 1) - F.one_hot(y, 3)) ** 2).sum(),
                          work_dir=str(tmp_path / "one_hot"))
    squared(ids, targets)
    with pytest.raises(ActError, match=r"holds 5 at element 0, outside \[0, 3\): targets "
                                       r"indexes the 3 classes of a one-hot"):
        squared(ids, torch.tensor([5, 0]))


def test_a_loss_module_with_parameters_trains(tmp_path):
    """A criterion with weights (ArcFace's class centres), given as the
    loss: its parameters got no gradient (constants of the trace), so they
    never trained. They are parameters of the step now."""
    class ArcLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.centres = nn.Parameter(torch.randn(4, 8))

        def forward(self, emb, y):
            return F.cross_entropy(16 * F.normalize(emb) @ F.normalize(self.centres).t(), y)

    torch.manual_seed(0)
    model, criterion = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8)), ArcLoss()
    eager, eager_criterion = copy.deepcopy(model), copy.deepcopy(criterion)
    step = act.compile(model, criterion, work_dir=str(tmp_path))
    x, y = torch.randn(5, 6), torch.randint(0, 4, (5,))
    loss = step(x, y)
    expected = eager_criterion(eager(x), y)
    expected.backward()
    assert abs(float(loss) - float(expected)) <= 1e-5
    assert torch.allclose(criterion.centres.grad, eager_criterion.centres.grad,
                          rtol=1e-4, atol=1e-7)


def test_a_batch_that_is_not_tensors_is_a_clear_error(tmp_path):
    """A list of numbers as the batch was an AttributeError from inside
    act ('int' object has no attribute 'contiguous')."""
    step = act.compile(nn.Linear(4, 3), F.cross_entropy, work_dir=str(tmp_path))
    with pytest.raises(TypeError, match="inputs must be a tensor or a tuple of tensors, got "
                                        "list of int, int"):
        step([1, 2], torch.tensor([0]))
    with pytest.raises(TypeError, match="targets must be a tensor or a tuple of tensors, got int"):
        step(torch.randn(2, 4), 3)


def test_packed_sequences_follow_eager(tmp_path):
    """A packed LSTM classifier through act.compile: every batch has other
    lengths (data, not shapes: one compiled step), and loss and gradients
    follow PyTorch's packed implementation."""
    from torch.nn.utils.rnn import pack_padded_sequence

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.e, self.r, self.o = nn.Embedding(10, 4), nn.LSTM(4, 5, batch_first=True), \
                nn.Linear(5, 3)

        def forward(self, ids, lengths):
            _, (h, _) = self.r(pack_padded_sequence(self.e(ids), lengths, batch_first=True,
                                                    enforce_sorted=False))
            return self.o(h[-1])

    torch.manual_seed(0)
    model = Tagger()
    eager = copy.deepcopy(model)
    step = act.compile(model, F.cross_entropy, work_dir=str(tmp_path))
    for lengths in ([5, 2, 4], [1, 3, 3], [2, 5, 1]):
        lengths = torch.tensor(lengths)
        ids = torch.randint(0, 10, (3, 5))
        y = torch.randint(0, 3, (3,))
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        loss = step((ids, lengths), y)
        expected = F.cross_entropy(eager(ids, lengths), y)
        expected.backward()
        assert abs(float(loss) - float(expected)) <= 1e-5
        for p, q in zip(model.parameters(), eager.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    assert len(step.compiled) == 1


def test_no_grad_runs_a_forward_only_step(tmp_path):
    """Under torch.no_grad() the step is the forward alone (act-forward-only:
    compiled once, nothing saved, no .grad written), its loss eager's; in
    eval mode BatchNorm's statistics stay, in training mode they update as
    eager's do under no_grad."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    eager = copy.deepcopy(model)
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    compiled = len(step.compiled)
    for mode in ("eval", "train"):
        getattr(model, mode)()
        getattr(eager, mode)()
        for _ in range(2):
            with torch.no_grad():
                loss = step(x, y)
                expected = F.cross_entropy(eager(x), y)
            assert abs(float(loss) - float(expected)) <= 1e-5 * abs(float(expected))
        assert all(p.grad is None for p in model.parameters())
        assert torch.allclose(model[1].running_mean, eager[1].running_mean, atol=1e-6)
        assert int(model[1].num_batches_tracked) == int(eager[1].num_batches_tracked)
    # One forward-only step per mode, and none of them saves anything.
    forward_only = [k for k in step.compiled if k[-1] == "forward-only"]
    assert len(forward_only) == 2 and len(step.compiled) == compiled + 2
    import glob
    files = glob.glob(os.path.join(str(tmp_path), "*_forward_only.mlir"))
    assert len(files) == 2
    for path in files:
        text = open(path).read()
        assert "act.encode" not in text and "{act.loss}" in text
    # Training afterwards: gradients as before.
    model.train()
    loss = step(x, y)
    assert all(p.grad is not None for p in model.parameters())


def test_ddp_wrapped_modules_are_refused():
    """act writes .grad itself, so DistributedDataParallel's all-reduce
    (autograd hooks) would never run: refused with what to do instead."""
    model = nn.Linear(4, 2)
    wrapped = nn.DataParallel(model)
    with pytest.raises(TypeError, match=r"wrapped in DataParallel.*act.compile\(model.module"):
        act.compile(wrapped, F.mse_loss, torch.randn(2, 4), torch.randn(2, 2))
    # The same check by name covers DistributedDataParallel without a
    # process group.
    ddp = type("DistributedDataParallel", (nn.Module,), {})()
    ddp.module = model
    with pytest.raises(TypeError, match="process|all_reduce"):
        act.compile(ddp, F.mse_loss)
    model.weight.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="backward hooks on weight will not run"):
        act.compile(model, F.mse_loss)


def test_saved_bytes_are_known_after_compile_and_work_dirs_are_removed():
    import gc
    import glob
    import tempfile
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "act-compile-*")))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    step = act.compile(model, F.cross_entropy, torch.randn(8, 16), torch.randint(0, 4, (8,)),
                       encoding="#act.quant<bits = 4>")
    assert step.saved_bytes is not None and step.saved_bytes[1] < step.saved_bytes[0]
    work = step.work_dir
    assert os.path.isdir(work)
    step(torch.randn(8, 16), torch.randint(0, 4, (8,)))
    del step
    gc.collect()
    assert not os.path.exists(work)
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "act-compile-*"))) <= before


def test_compiling_and_stepping_print_nothing(capfd):
    """A short compile and its steps are silent: the memory report the step
    reads (step.report) goes to the work directory, not to the caller's
    stdout or stderr (in process, a pass's default stream is theirs)."""
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    step = act.compile(model, F.cross_entropy, x, y, encoding="#act.quant<bits = 4>")
    step(x, y)
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)
    assert step.report["graphs"][0]["saved"], step.report


def _one_step_follows_eager(model, x, y):
    """One act.compile step of `model` without encodings on (x, y) against
    eager autograd on a copy: the same loss, gradients and buffers (BatchNorm's
    running statistics); the eager loss."""
    eager = copy.deepcopy(model)
    step = act.compile(model, F.cross_entropy, x, y)
    loss = step(x, y)
    reference = F.cross_entropy(eager(x), y)
    reference.backward()
    assert abs(float(loss) - float(reference)) < 1e-5
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-5), name
    for (name, b), c in zip(model.named_buffers(), eager.buffers()):
        assert torch.allclose(b.float(), c.float(), rtol=1e-5, atol=1e-6), name
    return reference


def test_fashion_resnet20_follows_eager():
    """act.train's ResNet-20 (fmnist-resnet20: projection shortcuts, global
    average pooling): one step without encodings gives eager's loss, its
    gradients and BatchNorm's running statistics."""
    from act.train import fashion_resnet20
    torch.manual_seed(0)
    model = fashion_resnet20()
    _one_step_follows_eager(model, torch.randn(2, 1, 28, 28), torch.randint(0, 10, (2,)))


def test_fashion_vit_follows_eager():
    """act.train's ViT (fmnist-vit: a strided patch convolution, attention
    without a mask, the tokens' mean): one step without encodings gives
    eager's loss and gradients, and at average 2 bits every saved value is
    encoded and the loss is eager's (encodings change the backward only)."""
    from act.train import FashionViT
    torch.manual_seed(0)
    model = FashionViT(d=32, layers=2)
    allocated = copy.deepcopy(model)
    x, y = torch.randn(4, 1, 28, 28), torch.randint(0, 10, (4,))
    reference = _one_step_follows_eager(model, x, y)
    step = act.compile(allocated, F.cross_entropy, x, y, average_bits=2)
    assert abs(float(step(x, y)) - float(reference)) < 1e-5
    before, after = step.saved_bytes
    assert after * 8 < before, step.saved_bytes


def test_the_reference_snippet_runs_as_written():
    """docs/Training.md's reference example, executed as pasted."""
    text = open(os.path.join(ROOT, "docs", "Training.md")).read()
    start = text.index("## Reference")
    code = text[text.index("```python\n", start) + len("```python\n"):]
    code = code[:code.index("```")]
    scope = {}
    exec(compile(code, "docs/Training.md", "exec"), scope)
    step = scope["step"]
    assert step.saved_bytes[1] < step.saved_bytes[0]
    assert float(scope["val"]) < float(scope["loss"]) * 10  # a real loss, finite
    assert all(p.grad is not None for p in scope["model"].parameters())


def test_checkpointed_batchnorm_counts_batches_as_eager_does(tmp_path):
    """A block with BatchNorm under torch.utils.checkpoint
    (use_reentrant=False): compiling leaves the module's buffers alone and
    warns about nothing (the region's recomputation in the backward read
    the module's own tensors: constants, and its running statistics were
    updated while tracing), and each step updates the statistics twice,
    as eager's forward and recomputation do: equal to eager's after 3
    steps, gradients too."""
    from torch.utils.checkpoint import checkpoint

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.block = Block()
            self.head = nn.Linear(8, 5)

        def forward(self, x):
            x = checkpoint(self.block, self.stem(x), use_reentrant=False)
            return self.head(x.mean((2, 3)))

    torch.manual_seed(0)
    model = Net()
    eager = copy.deepcopy(model)
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    assert not [w for w in caught if "act.compile" in str(w.message)]
    assert int(model.block.bn.num_batches_tracked) == 0
    assert not model.block.bn.running_mean.any()
    for i in range(3):
        xb = x + 0.1 * i
        model.zero_grad(set_to_none=True)
        eager.zero_grad(set_to_none=True)
        step(xb, y)
        F.cross_entropy(eager(xb), y).backward()
    bn, bn_eager = model.block.bn, eager.block.bn
    assert int(bn.num_batches_tracked) == int(bn_eager.num_batches_tracked) == 6
    assert torch.allclose(bn.running_mean, bn_eager.running_mean, atol=1e-6)
    assert torch.allclose(bn.running_var, bn_eager.running_var, atol=1e-6)
    for p, q in zip(model.parameters(), eager.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5)


def test_tensors_off_the_cpu_are_refused(tmp_path):
    """act's steps run on the CPU or a CUDA GPU: a batch or a model
    elsewhere (here PyTorch's meta device, which any build has) gets one
    clear error from act.compile and act.Module (the model's tensors
    checked when a step compiles, the batch at every call), and the C API
    binding refuses what reaches a CPU step off the CPU, instead of a NumPy
    failure."""
    x, y = torch.randn(2, 4), torch.randint(0, 3, (2,))
    step = act.compile(nn.Linear(4, 3), F.cross_entropy)
    with pytest.raises(ValueError, match=r"^act.compile's step: batch tensor 0 is on meta; act "
                                         r"runs training steps on the CPU"):
        step(x.to("meta"), y)
    away = nn.Linear(4, 3).to("meta")
    with pytest.raises(ValueError, match=r"^act.compile: parameter 'weight' is on meta.*\.cpu\(\)"):
        act.compile(away, F.cross_entropy, x, y)
    with pytest.raises(ValueError, match=r"^act.compile's step: parameter 'weight' is on meta"):
        act.compile(away, F.cross_entropy)(x, y)
    with pytest.raises(ValueError, match=r"^act.Module: parameter 'weight' is on meta"):
        act.Module(away)(x)
    # A model moved after its step compiled: its new tensors compile anew,
    # and are refused there; whatever reaches the C API binding off the
    # CPU is refused by it.
    model = nn.Linear(4, 3)
    step = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path))
    _, src, layout = step._export(x, y)
    args = step._arguments(layout, x, y, 0)
    model.to("meta")
    with pytest.raises(ValueError, match=r"^act.compile's step: parameter 'weight' is on meta"):
        step(x, y)
    with pytest.raises(capi.ActError, match=r"^argument 1 of the step is on meta; the step was "
                                            r"compiled for the CPU"):
        capi.CompiledStep.from_file(src).run([args[0], args[1].to("meta")] + args[2:])


_CACHED_STEP = """
import hashlib, sys
import torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, {python!r})
import act
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 7 * 7, 10))
x, y = torch.randn(16, 1, 14, 14), torch.randint(0, 10, (16,))
step = act.compile(model, F.cross_entropy, x, y, encoding="#act.quant<bits = 4>")
compiled = step.compiled[step.variant][0]
loss = step(x, y)
digest = hashlib.sha256(b"".join(p.grad.numpy().tobytes() for p in model.parameters()))
print(compiled.from_cache, float(loss).hex(), digest.hexdigest(),
      model[1].running_mean.numpy().tobytes().hex()[:32])
"""


def test_a_second_process_loads_the_step_from_the_code_cache(tmp_path):
    """The code cache (docs/Running.md): a second process compiling the same
    step for the same machine loads its code instead of compiling it, and
    trains bit for bit as the first did; ACT_CACHE_DIR="" turns it off."""
    import subprocess
    script = tmp_path / "step.py"
    script.write_text(_CACHED_STEP.format(python=os.path.join(ROOT, "python")))

    def run(cache):
        env = dict(os.environ, ACT_CACHE_DIR=cache, ACT_PROGRESS="0")
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        return out[0] == "True", out[1:]

    cache = str(tmp_path / "cache")
    first_cached, first = run(cache)
    second_cached, second = run(cache)
    assert (first_cached, second_cached) == (False, True)
    assert second == first
    assert len(os.listdir(cache)) == 1
    # Without a cache: compiled, the same step.
    off_cached, off = run("")
    assert not off_cached and off == first


_CHILD_STEP = """
import hashlib, sys
import torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, {python!r})
import act
from act import process
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 7 * 7, 10))
x, y = torch.randn(16, 1, 14, 14), torch.randint(0, 10, (16,))
step = act.compile(model, F.cross_entropy, x, y, encoding="#act.quant<bits = 4>")
compiled = step.compiled[step.variant][0]
for _ in range(3):
    model.zero_grad()
    loss = step(x, y)
digest = hashlib.sha256(b"".join(p.grad.numpy().tobytes() for p in model.parameters()))
with open("/proc/self/maps") as f:
    mapped = sum(bool(process.COMPILER_LIBRARIES.search(l.strip())) for l in f)
resident = sum(rss for _, _, rss in process.compiler_pages())
print(compiled.compiled_in_child, compiled.from_cache, mapped, resident, float(loss).hex(),
      digest.hexdigest())
"""


def test_a_step_compiles_in_a_child_and_the_compiler_leaves_the_resident_set(tmp_path):
    """With a code cache, act.compile's steps are compiled by a child
    process into the cache and loaded from there (capi.CompiledStep.from_file),
    so that the compiler's memory is never the training process's, and the
    compiler's libraries' pages leave the process's resident set after each
    compile or load (about 100 MiB of LLVM and MLIR resident otherwise:
    docs/benchmarks.md, "The memory a user sees"); the step trains bit for
    bit as one compiled in the process does."""
    import subprocess
    script = tmp_path / "step.py"
    script.write_text(_CHILD_STEP.format(python=os.path.join(ROOT, "python")))

    def run(cache, child):
        env = dict(os.environ, ACT_CACHE_DIR=cache, ACT_PROGRESS="0", ACT_COMPILE_IN_CHILD=child)
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        return out[0] == "True", out[1] == "True", int(out[2]), int(out[3]), out[4:]

    in_child, cached, mapped, resident, child_bits = run(str(tmp_path / "cache"), "1")
    assert (in_child, cached) == (True, False)
    assert mapped > 0  # (libLLVM and libMLIR are loaded, not resident)
    assert resident < 8 * 2 ** 20, resident
    in_child, cached, mapped, resident, here_bits = run("", "1")  # (no cache: here)
    assert (in_child, cached) == (False, False) and resident < 8 * 2 ** 20
    assert here_bits == child_bits


def test_a_step_the_child_cannot_compile_fails_with_the_compilers_message(tmp_path):
    """A compile error in the child process is the caller's ActError, the
    message the compile in this process gives."""
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {\n"
                   "  return %a : tensor<4xcomplex<f32>>\n}\n")
    messages = []
    with capi.cache_dir(str(tmp_path / "cache")):
        for child in (True, False):
            with pytest.raises(capi.ActError, match="complex<f32> cannot be exchanged") as e:
                capi.CompiledStep.from_file(bad, "f", in_child=child)
            messages.append(str(e.value))
    assert messages[0] == messages[1]


def test_the_code_cache_directory_follows_the_environment(monkeypatch):
    monkeypatch.setenv("ACT_CACHE_DIR", "/some/where")
    assert capi.default_cache_dir() == "/some/where"
    monkeypatch.delenv("ACT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert capi.default_cache_dir() == "/xdg/act"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/user")
    assert capi.default_cache_dir() == "/home/user/.cache/act"


def test_passes_run_in_process_as_act_opt_runs_them(tmp_path):
    """capi.run_passes (the C API's actRunPasses), what act.compile inserts
    encodings and reports memory with: the same module as act-opt writes,
    and bad input as a message with its location, never a crash."""
    from act import driver
    src = os.path.join(ROOT, "examples", "cnn.mlir")
    options = "encoding=" + driver.option_value("#act.quant<bits = 4>")
    ours = driver.insert(src, str(tmp_path / "ours.mlir"), options)
    driver.run("act-opt", src, f"-act-insert-encode-decode={options}", "-o",
               str(tmp_path / "theirs.mlir"))
    assert open(ours).read() == open(tmp_path / "theirs.mlir").read()
    assert "act.encode" in open(ours).read()
    report = driver.memory_report(ours, str(tmp_path / "report.json"))
    assert report["graphs"][0]["totals"]["saved_bytes_after"] < \
        report["graphs"][0]["totals"]["saved_bytes_before"]
    with pytest.raises(capi.ActError, match="invalid pass pipeline 'act-no-such-pass'"):
        capi.run_passes(src, "act-no-such-pass")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: f32) -> f32 {\n  return %y : f32\n}\n")
    with pytest.raises(capi.ActError, match=r"bad.mlir:2:\d+: error: use of undeclared SSA value"):
        capi.run_passes(str(bad), "act-insert-encode-decode")
    with pytest.raises(capi.ActError, match="no-such-file"):
        capi.run_passes(str(tmp_path / "no-such-file.mlir"), "act-insert-encode-decode")
    with pytest.raises(driver.ToolError, match="act-insert-encode-decode"):
        driver.insert(src, str(tmp_path / "x.mlir"), "encoding=#act.nonsense")


class _NormGeluBlock(nn.Module):
    """Linear, LayerNorm, Linear, GELU, Linear: a transformer MLP block's
    cheap values (the LayerNorm and GELU outputs) next to the matmuls'."""

    def __init__(self):
        super().__init__()
        self.inp, self.norm = nn.Linear(16, 64), nn.LayerNorm(64)
        self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(self.inp(x)))))


def _loss_and_grads(model, x, y, step):
    """One call of `step` on (x, y): the loss and `model`'s gradients, cloned."""
    for p in model.parameters():
        p.grad = None
    loss = step(x, y)
    return [loss.clone()] + [p.grad.clone() for p in model.parameters()]


def test_recompute_cost_recomputes_cheap_values(tmp_path):
    """recompute_cost= (act-insert-encode-decode's recompute-cost): the
    LayerNorm output and the GELU output are recomputed in the backward
    (#act.recompute, 0 bytes) from the stored LayerNorm input and GELU input;
    under the lossless policy the step's gradients are bit for bit the step's
    without it; with average_bits the recomputed values take 0 bits of the
    budget, which stays the stored step's (so the stored tensors get more
    bits on average); bad values and few_bit with average_bits are refused."""
    torch.manual_seed(11)
    model = _NormGeluBlock()
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))

    plain = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "plain"),
                        encoding="#act.quant<bits=4>")
    cheap = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "cheap"),
                        encoding="#act.quant<bits=4>", recompute_cost=4)
    saved = {t["id"]: t for t in cheap.report["graphs"][0]["saved"]}
    recomputed = sorted(i for i, t in saved.items() if t["encoding"] == "#act.recompute")
    # The LayerNorm's output (64 x 64) and GELU's (64 x 256).
    assert sorted(saved[i]["shape"] for i in recomputed) == [[64, 64], [64, 256]], saved
    assert cheap.saved_bytes[0] == plain.saved_bytes[0]
    assert cheap.saved_bytes[1] < plain.saved_bytes[1] - 4 * 64 * 256 // 8
    loss = cheap(x, y)
    assert torch.isfinite(loss)

    exact = _loss_and_grads(model, x, y, act.compile(
        model, F.cross_entropy, x, y, work_dir=str(tmp_path / "exact"), encoding="lossless"))
    again = _loss_and_grads(model, x, y, act.compile(
        model, F.cross_entropy, x, y, work_dir=str(tmp_path / "again"), encoding="lossless",
        recompute_cost=4))
    assert all(torch.equal(a, b) for a, b in zip(exact, again))

    gact = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "gact"),
                       average_bits=2, recompute_cost=4)
    allocation = gact.allocation
    assert sorted(allocation["recomputed"]) == recomputed
    stored = sum(t["elements"] for t in allocation["tensors"])
    assert allocation["budget_bits"] == 2 * (stored + 64 * 64 + 64 * 256)
    used = sum(t["bits"] * t["elements"] for t in allocation["tensors"])
    assert 2 * stored < used <= allocation["budget_bits"]

    for bad in (-1, float("nan"), float("inf"), "4", True):
        with pytest.raises(ValueError, match="recompute_cost= is a non-negative number"):
            act.compile(model, F.cross_entropy, encoding="#act.quant<bits=4>",
                        recompute_cost=bad)
    with pytest.raises(ValueError, match="does not combine with few_bit="):
        act.compile(model, F.cross_entropy, average_bits=2, few_bit=2, recompute_cost=4)


def test_loss_head_encoding(tmp_path):
    """loss_head= (act-insert-encode-decode's and act-allocate-bits'
    loss-head): the loss head's saved values (here the 64 x 32 logits'
    log-softmax) are stored as bf16 instead of float32, with encoding= and
    with average_bits= (outside its budget); the gradients stay within
    bf16's rounding of the step's without it; bad values are refused."""
    torch.manual_seed(12)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 32))
    x, y = torch.randn(64, 16), torch.randint(0, 32, (64,))
    bf16 = "#act.float<format = bf16>"

    def head(step):
        # (above min-bytes: the loss itself stays)
        return [t for t in step.report["graphs"][0]["saved"]
                if (t["status"] == "loss-head" or t["encoding"] == bf16)
                and t["bytes_before"] >= 1024]

    plain = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "plain"),
                        encoding="#act.quant<bits=4>")
    half = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "half"),
                       encoding="#act.quant<bits=4>", loss_head=bf16)
    before, after = head(plain), head(half)
    assert before and all(t["encoding"] == "none" for t in before), before
    assert [t["id"] for t in after] == [t["id"] for t in before]
    assert all(t["encoding"] == bf16 and t["bytes_after"] == t["bytes_before"] // 2
               for t in after), after
    assert half.saved_bytes[1] == plain.saved_bytes[1] - sum(t["bytes_before"] // 2 for t in before)

    exact = _loss_and_grads(model, x, y, act.compile(
        model, F.cross_entropy, x, y, work_dir=str(tmp_path / "exact"), encoding="lossless"))
    close = _loss_and_grads(model, x, y, act.compile(
        model, F.cross_entropy, x, y, work_dir=str(tmp_path / "close"), encoding="lossless",
        loss_head=bf16))
    assert not all(torch.equal(a, b) for a, b in zip(exact, close))
    for a, b in zip(exact, close):
        assert (a - b).abs().max() <= 1e-2 * a.abs().max(), (a, b)

    gact = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "gact"),
                       average_bits=2)
    gact_half = act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "gact_half"),
                            average_bits=2, loss_head=bf16)
    assert gact_half.allocation["budget_bits"] == gact.allocation["budget_bits"]
    assert all(t["encoding"] == bf16 for t in head(gact_half)), head(gact_half)

    with pytest.raises(ValueError, match="loss_head= is an act encoding"):
        act.compile(model, F.cross_entropy, encoding="#act.quant<bits=4>", loss_head=16)
    with pytest.raises(Exception, match="cannot parse loss-head"):
        act.compile(model, F.cross_entropy, x, y, work_dir=str(tmp_path / "bad"),
                    encoding="#act.quant<bits=4>", loss_head="#act.nope")


def test_gact_error_sensitivity(tmp_path):
    """sensitivity="error": each tensor's sensitivity is its codes alone
    against the step without compression (bias included), measured on a
    step with run-time widths; the profile says so, the allocation is
    #act.quant's family as with GACT's variance, and the step trains. Bad
    values are refused."""
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(16, 64), nn.Softmax(-1), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 4))
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    profiles = {}
    for method in ("variance", "error"):
        work = tmp_path / method
        step = act.compile(model, F.cross_entropy, x, y, work_dir=str(work), average_bits=2,
                           sensitivity=method, keep_work_dir=True)
        [path] = work.glob("*_a0_profile.json")
        profiles[method] = json.loads(path.read_text())
        measurement = profiles[method]["measurement"]
        assert measurement["estimator"] == method
        tensors = profiles[method]["tensors"]
        assert measurement["evaluations"] == len(tensors) + 1  # (one batch)
        assert all(t["encoding"] == "#act.quant<bits = 4>" and t["sensitivity"] > 0
                   for t in tensors), tensors
        assert {t["encoding"].split("<")[0] for t in step.allocation["tensors"]} <= {
            "#act.quant", "none"}
        for _ in range(3):
            model.zero_grad()
            assert torch.isfinite(step(x, y))
    # The same tensors, other numbers.
    assert [t["id"] for t in profiles["error"]["tensors"]] == \
        [t["id"] for t in profiles["variance"]["tensors"]]
    assert [t["sensitivity"] for t in profiles["error"]["tensors"]] != \
        [t["sensitivity"] for t in profiles["variance"]["tensors"]]
    with pytest.raises(ValueError, match="sensitivity= is 'variance' or 'error'"):
        act.compile(model, F.cross_entropy, average_bits=2, sensitivity="bias")
    with pytest.raises(ValueError, match="give average_bits="):
        act.compile(model, F.cross_entropy, encoding="#act.quant<bits=4>", sensitivity="error")


def test_evaluate_runs_the_held_out_data_in_batches(monkeypatch):
    """act.train's evaluate: the accuracy over every example, the model run
    on EVALUATE_BATCH examples at a time (Fashion-MNIST's 10,000 test
    images in one batch took 5.8 GB), and the model back in training mode."""
    train = sys.modules["act.train"]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3), nn.BatchNorm1d(3))
    x, y = torch.randn(2500, 1, 4, 4), torch.randint(0, 3, (2500,))
    sizes = []
    model.register_forward_hook(lambda m, args, out: sizes.append(len(args[0])))
    task = train.TASKS["fmnist-cnn"]
    model.eval()
    with torch.no_grad():
        whole = float((model(x).argmax(1) == y).float().mean())
    model.train()
    sizes.clear()
    assert train.evaluate(task, model, x, y) == pytest.approx(whole, abs=1e-6)
    assert sizes == [1000, 1000, 500] and model.training


def test_average_bits_with_bf16_statistics(tmp_path):
    """stats="bf16": the allocation's #act.quant store their group
    statistics as bf16 (4 bytes a group instead of 8), the same widths
    (the budget counts codes), the same forward, gradients as close to
    eager's as with f32 statistics; with runtime widths (adapt_interval)
    the saved bytes at the allocation's widths count 4 bytes a group too.
    A bad format, or stats= without average_bits=, is refused."""
    torch.manual_seed(11)
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.GELU(),
                          nn.Linear(256, 10))
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    eager = copy.deepcopy(model)
    F.cross_entropy(eager(x), y).backward()
    grads = {}
    steps = {}
    for stats in ("f32", "bf16"):
        m = copy.deepcopy(model)
        step = act.compile(m, F.cross_entropy, x, y, average_bits=2, stats=stats,
                           work_dir=str(tmp_path / stats))
        loss = step(x, y)
        assert abs(float(loss) - float(F.cross_entropy(eager(x), y))) < 1e-5
        grads[stats] = [p.grad.clone() for p in m.parameters()]
        steps[stats] = step
    tensors = {s: {t["id"]: t for t in steps[s].allocation["tensors"]} for s in steps}
    assert {i: t["bits"] for i, t in tensors["f32"].items()} == \
        {i: t["bits"] for i, t in tensors["bf16"].items()}
    quantized = [t for t in tensors["bf16"].values() if t["encoding"].startswith("#act.quant")]
    assert quantized and all("stats = bf16" in t["encoding"] for t in quantized)
    groups = sum(-(-t["elements"] // 256) for t in quantized)
    assert steps["f32"].saved_bytes[1] - steps["bf16"].saved_bytes[1] == 4 * groups
    # (Relative to eager's gradient norm: as close with bf16 statistics.)
    error = {s: max(float((a - b).norm() / b.norm())
                    for a, b in zip(grads[s], (p.grad for p in eager.parameters())))
             for s in grads}
    assert error["bf16"] < 1.1 * error["f32"] and error["f32"] < 1.0, error

    adaptive = act.compile(copy.deepcopy(model), F.cross_entropy, x, y, average_bits=2,
                           stats="bf16", adapt_interval=2, runtime_bits=True,
                           work_dir=str(tmp_path / "adaptive"))
    for _ in range(3):
        assert torch.isfinite(adaptive(x, y))
    runtime = [t for t in adaptive.allocation["tensors"] if t.get("runtime")]
    assert runtime and all("stats = bf16" in t["encoding"] for t in runtime)
    with pytest.raises(ValueError, match="stats= is 'f32' or 'bf16'"):
        act.compile(model, F.cross_entropy, average_bits=2, stats="f16")
    with pytest.raises(ValueError, match="give average_bits="):
        act.compile(model, F.cross_entropy, encoding="#act.quant<bits=2>", stats="bf16")


def test_train_reads_average_bits_options():
    """act.train's "average-bits=B[,stats=bf16]"."""
    from act.train import _average_bits
    assert _average_bits("average-bits=2") == (2.0, "f32")
    assert _average_bits("average-bits=2.5,stats=bf16") == (2.5, "bf16")
    with pytest.raises(ValueError, match="only stats=f32 or stats=bf16"):
        _average_bits("average-bits=2,group=512")
    with pytest.raises(ValueError, match="takes a number of bits"):
        _average_bits("average-bits=two")


def test_validation_split_is_fixed_and_held_out():
    """act.train --validation N (issue 51: a fixed validation split from the
    training set for anything tuned): the same N training examples held
    out in every run, whatever the run's seed, disjoint from those trained
    on; the run reports its accuracy on them (digits: multiples of 1/N);
    refused for a task with its own validation data and for N out of range."""
    train_module = sys.modules["act.train"]
    x = torch.arange(100.0).unsqueeze(1)
    y = torch.arange(100)
    (xa, ya), (va, wa) = train_module.validation_split(x, y, 20)
    torch.manual_seed(123)
    (xb, _), (vb, _) = train_module.validation_split(x, y, 20)
    assert torch.equal(va, vb) and torch.equal(xa, xb)
    assert len(va) == 20 and len(xa) == 80
    assert not set(va[:, 0].tolist()) & set(xa[:, 0].tolist())
    assert torch.equal(x[wa], va) and torch.equal(x[ya], xa)
    acc, _, _, _ = train("digits-mlp", None, seed=0, epochs=1, validation=200)
    assert 0 < acc <= 1 and round(acc * 200) == pytest.approx(acc * 200, abs=1e-9)
    with pytest.raises(ValueError, match="validation loss on its own validation data"):
        train("python-lm", None, seed=0, epochs=1, validation=10)
    with pytest.raises(ValueError, match="between 1 and 99"):
        train_module.validation_split(x, y, 100)
    # The command line refuses both before any run, with a usage error.
    for task, n in (("digits-mlp", "5000"), ("python-lm", "10")):
        with pytest.raises(SystemExit) as exit_:
            train_module.main([task, "--validation", n, "--encoding", "", "--epochs", "1"])
        assert exit_.value.code == 2
