"""act.torchversion and act.decomp.FALLBACKS: what can be checked of the
PyTorch 2 paths under any version (the 2.x run itself: scripts/torch2.sh,
test/Python/torch2.test)."""

import math

import pytest
import torch
import torch.nn.functional as F

from act import torchversion
from act.decomp import FALLBACKS
from act.export import decompositions

aten = torch.ops.aten


def test_overload_by_name():
    assert torchversion.overload("add.Tensor") is aten.add.Tensor
    assert torchversion.overload("relu") is aten.relu.default
    assert torchversion.overload("add.no_such_overload") is None
    assert torchversion.overload("no_such_op.default") is None


@pytest.mark.skipif(torchversion.TORCH2, reason="the list is 1.13's table")
def test_decomposed_list_is_1_13s_table():
    """DECOMPOSED_1_13 (what 2.x may take of its own table) is exactly the
    aten-to-aten table of the 1.13 act was built on."""
    from torch._decomp import decomposition_table
    table = {str(op).removeprefix("aten.") for op, fn in decomposition_table.items()
             if getattr(fn, "__module__", "") == "torch._decomp.decompositions"}
    assert table == torchversion.DECOMPOSED_1_13


def test_fallbacks_are_1_13_decompositions_act_uses():
    """Every fallback stands for one of 1.13's decompositions, and the
    exporter decomposes its op (under 2.x by the fallback)."""
    table = decompositions()
    for op, fn in FALLBACKS.items():
        assert str(op).removeprefix("aten.") in torchversion.DECOMPOSED_1_13, op
        assert op in table and (table[op] is fn or not torchversion.TORCH2), op


def _cases():
    torch.manual_seed(0)
    x, y, z = torch.randn(3, 4, 5, dtype=torch.float64).unbind(0)
    g = torch.randn(2, 6, 3, 3, dtype=torch.float64)
    w6, b6 = torch.randn(6, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    p3 = torch.randn(2, 3, 4, dtype=torch.float64)
    return [
        ("embedding.default", (y, torch.tensor([[0, 3], [2, 2]])), {}),
        ("embedding.default", (y, torch.tensor([1, 0, 3])), {}),
        ("rsub.Scalar", (x, 2.0), {"alpha": 3}),
        ("rsub.Tensor", (x, y), {}),
        ("var.correction", (x, [1]), {"correction": 1, "keepdim": True}),
        ("var.correction", (x, None), {"correction": 0}),
        ("std.correction", (x, [0]), {"correction": 1}),
        ("elu.default", (x, 1.3, 1.1, 0.9), {}),
        ("logsumexp.default", (x, [1], False), {}),
        ("logsumexp.default", (x, [0, 1], True), {}),
        ("native_group_norm.default", (g, w6, b6, 2, 6, 9, 3, 1e-5), {}),
        ("native_group_norm.default", (g, None, None, 2, 6, 9, 2, 1e-5), {}),
        ("norm.ScalarOpt_dim", (x, 3.0, [1], False), {}),
        ("norm.Scalar", (x, 2.0), {}),
        ("addcmul.default", (x, y, z), {"value": 0.5}),
        ("dot.default", (x[0], y[0]), {}),
        ("hardshrink_backward.default", (y, x, 0.5), {}),
        ("softshrink_backward.default", (y, x, 0.3), {}),
        ("prelu_backward.default", (p3, p3.flip(0), torch.rand(3, dtype=torch.float64)), {}),
    ]


@pytest.mark.parametrize("name,args,kwargs", _cases(), ids=[c[0] for c in _cases()])
def test_fallback_computes_what_pytorch_computes(name, args, kwargs):
    """Each fallback against the op itself (ATen's kernel, any version), and
    under 1.13 against the decomposition it copies."""
    op = torchversion.overload(name)
    if op is None:
        pytest.skip(f"no aten.{name} in torch {torch.__version__}")
    assert op in FALLBACKS, name
    ours = FALLBACKS[op](*args, **kwargs)
    want = op(*args, **kwargs)
    ours, want = (ours if isinstance(ours, tuple) else (ours,)), \
        (want if isinstance(want, tuple) else (want,))
    for o, w in zip(ours, want):
        torch.testing.assert_close(o, w.to(o.dtype), rtol=1e-12, atol=1e-12)
    if not torchversion.TORCH2:
        from torch._decomp import decomposition_table
        theirs = decomposition_table[op](*args, **kwargs)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for o, t in zip(ours, theirs):
            torch.testing.assert_close(o, t, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["plain", "causal", "bool_mask", "additive", "scale"])
def test_attention_math(kind):
    """torchversion.scaled_dot_product_attention (PyTorch 2's attention as
    its math, its dropout through F.dropout) against the formula, float64;
    under 2.x against F.scaled_dot_product_attention too."""
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))
    kwargs, scores = {}, q @ k.transpose(-2, -1) / math.sqrt(4)
    if kind == "causal":
        kwargs["is_causal"] = True
        scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), -math.inf)
    elif kind == "bool_mask":
        mask = torch.rand(5, 5) > 0.3
        mask[:, 0] = True
        kwargs["attn_mask"] = mask
        scores = scores.masked_fill(~mask, -math.inf)
    elif kind == "additive":
        mask = torch.randn(5, 5, dtype=torch.float64)
        kwargs["attn_mask"] = mask
        scores = scores + mask
    elif kind == "scale":
        kwargs["scale"] = 0.3
        scores = q @ k.transpose(-2, -1) * 0.3
    want = torch.softmax(scores, -1) @ v
    got = torchversion.scaled_dot_product_attention(q, k, v, **kwargs)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    if hasattr(F, "scaled_dot_product_attention"):
        torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, **kwargs),
                                   rtol=1e-10, atol=1e-10)


def test_attention_dropout_goes_through_f_dropout(monkeypatch):
    calls = []

    def dropout(x, p):
        calls.append(p)
        return x * 0
    monkeypatch.setattr(F, "dropout", dropout)
    q = torch.randn(1, 2, 3, 4)
    out = torchversion.scaled_dot_product_attention(q, q, q, dropout_p=0.25)
    assert calls == [0.25] and not out.any()
