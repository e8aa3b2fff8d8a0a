"""act.Module: act's compiled forward and backward as one autograd node,
compared with eager autograd: a loss outside the module over two calls,
the module in the middle of an eager network (input gradients), a user's
torch.utils.checkpoint, DistributedDataParallel over gloo with two
processes, no_grad evaluation, BatchNorm's statistics, and the errors.

Needs act-opt (ACT_BIN_DIR) and libActCAPI.so (ACT_LIB_DIR); lit sets both.
"""

import copy
import os
import sys
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import act  # noqa: E402

warnings.simplefilter("ignore")


def cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.GELU(), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))


def close(a, b, tol=1e-4):
    """Relative to b's largest magnitude (at least 1e-3: a bias before a
    BatchNorm has a zero gradient, float noise in both)."""
    return float((a - b).abs().max()) <= tol * max(1e-3, float(b.abs().max()))


def grads_close(model, eager, tol=1e-4):
    for (n, p), q in zip(model.named_parameters(), eager.parameters()):
        assert p.grad is not None, n
        assert close(p.grad, q.grad, tol), (n, float((p.grad - q.grad).abs().max()))


def test_loss_outside_over_two_calls_matches_autograd(tmp_path):
    """Two views of a batch through one act.Module, a loss eager computes
    from both (cross-entropy plus a consistency term), one backward:
    parameter gradients and BatchNorm's statistics as eager autograd's."""
    torch.manual_seed(0)
    model = cnn()
    eager = copy.deepcopy(model)
    x, y = torch.randn(6, 3, 8, 8), torch.randint(0, 10, (6,))
    m = act.Module(model, x, work_dir=str(tmp_path))
    assert m.saved_bytes[0] > 0
    for step in range(2):
        x1, x2 = x + 0.1 * step, x.flip(3)
        model.zero_grad(set_to_none=True)
        a, b = m(x1), m(x2)
        loss = F.cross_entropy(a, y) + 0.5 * F.mse_loss(a.softmax(1), b.softmax(1))
        loss.backward()
        ea, eb = eager(x1), eager(x2)
        expected = F.cross_entropy(ea, y) + 0.5 * F.mse_loss(ea.softmax(1), eb.softmax(1))
        eager.zero_grad(set_to_none=True)
        expected.backward()
        assert close(loss.detach(), expected.detach(), 1e-5)
        grads_close(model, eager)
    bn, bn_eager = model[1], eager[1]
    assert int(bn.num_batches_tracked) == int(bn_eager.num_batches_tracked) == 4
    assert close(bn.running_mean, bn_eager.running_mean, 1e-5)
    assert close(bn.running_var, bn_eager.running_var, 1e-5)
    print(f"act.Module: two calls, outside loss: gradients within 1e-4 of autograd, "
          f"saved {m.saved_bytes[0]} bytes")


def test_module_in_the_middle_gets_input_gradients(tmp_path):
    """eager stem -> act.Module(body) -> eager head: the stem's gradients
    (through the body's input gradients) and the body's as autograd's;
    under torch.no_grad() the outputs are eager's and nothing is saved."""
    torch.manual_seed(1)
    stem, body, head = nn.Linear(12, 32), nn.Sequential(
        nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 32), nn.Tanh()), \
        nn.Linear(32, 3)
    eager = copy.deepcopy(nn.ModuleList([stem, body, head]))
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    m = act.Module(body, work_dir=str(tmp_path), encoding="lossless")
    loss = F.cross_entropy(head(m(stem(x))), y)
    loss.backward()
    expected = F.cross_entropy(eager[2](eager[1](eager[0](x))), y)
    expected.backward()
    assert close(loss.detach(), expected.detach(), 1e-5)
    grads_close(nn.ModuleList([stem, body, head]), eager)
    with torch.no_grad():
        out = m(stem(x))
        assert close(out, eager[1](eager[0](x)), 1e-5)
    assert out.grad_fn is None


def test_user_checkpoint_trains(tmp_path):
    """A ConvNeXt-style block under torch.utils.checkpoint (reentrant, the
    1.13 default, and not): exported, trained 5 steps, gradients as eager's."""
    from torch.utils.checkpoint import checkpoint

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c)
            self.up, self.down = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

        def forward(self, x):
            h = self.dw(x).permute(0, 2, 3, 1)
            h = self.down(F.gelu(self.up(self.norm(h))))
            return x + h.permute(0, 3, 1, 2)

    class Net(nn.Module):
        def __init__(self, reentrant):
            super().__init__()
            self.stem, self.block = nn.Conv2d(3, 16, 2, stride=2), Block(16)
            self.head = nn.Linear(16, 10)
            self.reentrant = reentrant

        def forward(self, x):
            x = checkpoint(self.block, self.stem(x), use_reentrant=self.reentrant)
            return self.head(x.mean((2, 3)))

    for reentrant in (True, False):
        torch.manual_seed(2)
        model = Net(reentrant)
        eager = copy.deepcopy(model)
        x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
        m = act.Module(model, work_dir=str(tmp_path / str(reentrant)))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        opt_eager = torch.optim.SGD(eager.parameters(), lr=0.05)
        for _ in range(5):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(m(x), y).backward()
            opt_eager.zero_grad(set_to_none=True)
            F.cross_entropy(eager(x), y).backward()
            grads_close(model, eager, 1e-3)
            opt.step()
            opt_eager.step()
        print(f"act.Module: checkpointed block (use_reentrant={reentrant}) trained, "
              f"gradients as eager's")


def test_same_gradients_as_act_compile(tmp_path):
    """The same model, loss and batch through act.compile and through
    act.Module with the loss outside, at a lossless and a 4-bit nearest
    encoding: the same gradients."""
    torch.manual_seed(3)
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,))
    for encoding in ("lossless", "#act.quant<bits = 4, rounding = nearest>"):
        torch.manual_seed(3)
        a = cnn()
        b = copy.deepcopy(a)
        step = act.compile(a, F.cross_entropy, x, y, encoding=encoding,
                           work_dir=str(tmp_path / "compile"))
        step(x, y)
        m = act.Module(b, x, encoding=encoding, work_dir=str(tmp_path / "module"))
        F.cross_entropy(m(x), y).backward()
        assert m.saved_bytes[1] <= m.saved_bytes[0]
        for p, q in zip(a.parameters(), b.parameters()):
            assert close(q.grad, p.grad, 1e-4)
        # The same saved bytes but the loss's (act.compile's step saves the
        # cross-entropy's softmax too; act.Module leaves the loss to eager).
        # The peak is higher (docs/Training.md): the split form's backward
        # holds every saved value until it returns, the joint step frees
        # each after its last use.
        loss_bytes = step.saved_bytes[0] - m.saved_bytes[0]
        assert step.saved_bytes[1] - m.saved_bytes[1] == loss_bytes
        assert 0 < loss_bytes <= 2 * 8 * 10 * 4
        ratio = m.last_peak_bytes / step.last_peak_bytes
        print(f"act.Module vs act.compile, {encoding}: saved {m.saved_bytes} vs "
              f"{step.saved_bytes}, peak {m.last_peak_bytes} vs {step.last_peak_bytes} bytes")
        assert 1.0 <= ratio <= 2.0


def test_modes_frozen_layers_and_state_dict(tmp_path):
    """eval() and train() switch variants (eval: BatchNorm's running
    statistics, no update); freezing a layer recompiles and leaves its
    .grad None; state_dict round-trips through the wrapped module."""
    torch.manual_seed(6)
    model = cnn()
    eager = copy.deepcopy(model)
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    m = act.Module(model, work_dir=str(tmp_path))
    F.cross_entropy(m(x), y).backward()
    F.cross_entropy(eager(x), y).backward()
    m.eval()
    eager.eval()
    assert close(m(x), eager(x), 1e-5)  # (grad enabled: the eval variant's backward)
    before = model[1].running_mean.clone()
    with torch.no_grad():
        assert close(m(x), eager(x), 1e-5)
    assert torch.equal(model[1].running_mean, before)
    m.train()
    eager.train()
    for p in list(model[0].parameters()) + list(eager[0].parameters()):
        p.requires_grad_(False)
        p.grad = None
    model.zero_grad(set_to_none=True)
    eager.zero_grad(set_to_none=True)
    F.cross_entropy(m(x), y).backward()
    F.cross_entropy(eager(x), y).backward()
    assert model[0].weight.grad is None
    grads_close(nn.Sequential(*list(model)[1:]), nn.Sequential(*list(eager)[1:]))
    state = copy.deepcopy(m.state_dict())
    assert set(state) == {f"module.{k}" for k in model.state_dict()}
    other = act.Module(cnn(), work_dir=str(tmp_path / "other"))
    other.load_state_dict(state)
    with torch.no_grad():
        m.eval()
        other.eval()
        assert torch.equal(m(x), other(x))


def test_errors(tmp_path):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    m = act.Module(model, work_dir=str(tmp_path))
    out = m(x)
    loss = out.square().sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()
    out = m(x.requires_grad_(True))
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError):
        g.sum().backward()  # double backward
    with pytest.raises(TypeError, match="act.Module"):
        m("not a tensor")
    with pytest.raises(TypeError, match=r"DataParallel\(act.Module\(model\)\)"):
        act.Module(nn.DataParallel(model))
    with pytest.raises(NotImplementedError, match="act.compile"):
        act.Module(model, average_bits=2)
    with pytest.raises(TypeError, match="output 0 of the module is torch.int64"):
        act.Module(nn.Sequential(nn.Linear(4, 3), Argmax()), x)


class Argmax(nn.Module):
    def forward(self, x):
        return x.argmax(1)


def _ddp_worker(rank, world, port, out):
    import torch.distributed as dist
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        torch.manual_seed(5)
        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
        x, y = torch.randn(8, 10), torch.randint(0, 4, (8,))
        ddp = nn.parallel.DistributedDataParallel(act.Module(model))
        half = slice(rank * 4, rank * 4 + 4)
        F.cross_entropy(ddp(x[half]), y[half]).backward()
        torch.save([p.grad.clone() for p in model.parameters()], f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


def test_distributed_data_parallel_two_processes(tmp_path):
    """DistributedDataParallel(act.Module(model)) over gloo, 2 processes,
    half the batch each: every rank's gradients equal the single-process
    gradients of the whole batch (its all-reduce ran on act's gradients)."""
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as sock:  # a free port for the group's rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = str(tmp_path / "grads")
    mp.spawn(_ddp_worker, args=(2, port, out), nprocs=2, join=True)
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = torch.randn(8, 10), torch.randint(0, 4, (8,))
    F.cross_entropy(model(x), y).backward()
    for rank in range(2):
        for g, p in zip(torch.load(f"{out}.{rank}"), model.parameters()):
            assert close(g, p.grad, 1e-5)
    # Each half alone gives other gradients: the all-reduce did run.
    half = copy.deepcopy(model)
    half.zero_grad()
    F.cross_entropy(half(x[:4]), y[:4]).backward()
    assert not close(torch.load(f"{out}.0")[0], half[0].weight.grad, 1e-2)
    print("act.Module: DistributedDataParallel over gloo, 2 processes: gradients equal "
          "the single-process step's")


def test_the_reference_snippet_runs_as_written():
    """docs/Training.md's act.Module example, executed as pasted: the
    backbone's and the head's gradients exist, the encodings save bytes."""
    text = open(os.path.join(ROOT, "docs", "Training.md")).read()
    start = text.index("## Reference: `act.Module`")
    code = text[text.index("```python\n", start) + len("```python\n"):]
    code = code[:code.index("```")]
    scope = {}
    exec(compile(code, "docs/Training.md", "exec"), scope)
    body = scope["body"]
    assert body.saved_bytes[1] < body.saved_bytes[0]
    assert all(p.grad is not None for p in scope["backbone"].parameters())
    assert all(p.grad is not None for p in scope["head"].parameters())


def test_capi_forward_and_backward_apart_are_run(tmp_path):
    """actStepRunForward then actStepRunBackward (the saved values passed
    back as they crossed, the loss's tangent 1) give actStepRun's results
    bit for bit, 4-bit stochastic encodings included (same step seed); the
    saved values can be freed while the outputs stay; misuse is a message."""
    import numpy as np
    from act import capi, driver
    src = os.path.join(ROOT, "test", "Dialect", "Act", "Inputs", "relu_split.mlir")
    encoded = driver.insert(src, str(tmp_path / "relu.mlir"), 'encoding="#act.quant<bits=4>"')
    step = capi.CompiledStep.from_file(encoded)
    # (After lowering an encoded value may cross as several buffers.)
    assert step.num_saved >= 2 and len(step.backward_arguments) == step.num_saved + 1
    rng = np.random.RandomState(0)
    args = [rng.randn(*shape).astype(np.float32) for _, shape in step.arguments]
    whole = step.run(args, seed=11).results
    fwd = step.forward(args, seed=11)
    nout = len(fwd.results) - step.num_saved
    saved = fwd.results[nout:]
    grads = step.backward(saved + [np.array(1.0, dtype=np.float32)]).results
    del saved
    assert len(whole) == nout + len(grads)
    for a, b in zip(whole, fwd.results[:nout] + grads):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    loss = fwd.results[0].copy()
    fwd.release(nout, step.num_saved)
    assert fwd.results[nout:] == [None] * step.num_saved
    assert np.array_equal(fwd.results[0], loss)  # the outputs stay
    with pytest.raises(capi.ActError, match="cannot release"):
        fwd.release(nout, step.num_saved + 1)
    with pytest.raises(capi.ActError, match="the backward takes [0-9]+ arguments, got 1"):
        step.backward([np.array(1.0, dtype=np.float32)])
    with pytest.raises(capi.ActError, match=r"argument \d+ has the wrong"):
        step.backward([np.zeros(s, d) for d, s in step.backward_arguments[:-1]]
                      + [np.zeros((2,), np.float32)])
    joint = capi.CompiledStep.from_file(
        os.path.join(ROOT, "test", "Dialect", "Act", "Inputs", "fewbit_joint.mlir"))
    assert joint.num_saved == 0 and joint.backward_arguments == []
    with pytest.raises(capi.ActError, match="joint form"):
        joint.forward([np.zeros(s, d) for d, s in joint.arguments])
    with pytest.raises(capi.ActError, match="joint form"):
        joint.backward([])


def test_backward_frees_saved_values_after_their_last_use(tmp_path):
    """act.Module's backward drops each saved value after its last use
    (act-release-arguments): the same gradients, bit for bit, at a lower
    peak than holding them all until it returns."""
    import numpy as np
    from act import capi
    torch.manual_seed(7)
    act.Module(cnn(), torch.randn(64, 3, 8, 8), work_dir=str(tmp_path))
    step = capi.CompiledStep.from_file(str(tmp_path / "module0_encoded.mlir"))
    rng = np.random.RandomState(0)
    args = [rng.randn(*shape).astype(dtype) if dtype == np.float32 else np.zeros(shape, dtype)
            for dtype, shape in step.arguments]
    peaks, grads = {}, {}
    for release in (False, True):
        run = step.forward(args, seed=1)
        back = step.backward_of(run, [None] * step.num_saved + [np.array(1.0, np.float32)],
                                release_saved=release)
        peaks[release], grads[release] = back.peak_bytes, [g.copy() for g in back.results]
    assert all(np.array_equal(a, b) for a, b in zip(grads[False], grads[True]))
    print(f"act.Module's backward: peak {peaks[True]} bytes releasing the saved values, "
          f"{peaks[False]} holding them")
    assert peaks[True] < peaks[False]


def test_tuple_outputs_and_an_unused_output(tmp_path):
    """A module returning two tensors: gradients through both as eager's;
    with only the second used (autograd gives the first no gradient), the
    same gradients as eager's too."""
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            h = torch.tanh(self.a(x))
            return self.b(h), h.sum(1)

    torch.manual_seed(8)
    model = Two()
    eager = copy.deepcopy(model)
    x = torch.randn(5, 8)
    m = act.Module(model, x, work_dir=str(tmp_path))
    for use_first in (True, False):
        model.zero_grad(set_to_none=False)
        eager.zero_grad(set_to_none=False)
        o1, o2 = m(x)
        p1, p2 = eager(x)
        ((o1.square().sum() if use_first else 0) + 3 * o2.sum()).backward()
        ((p1.square().sum() if use_first else 0) + 3 * p2.sum()).backward()
        grads_close(model, eager)
