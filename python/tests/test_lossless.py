"""Gist's lossless narrowing of max-pool indices: the exporter keeps them
window-local, act-insert-encode-decode proves their range from the IR and
stores them in ceil(log2(window)) bits (#act.index), and the step's loss
and gradients are bitwise identical to the unencoded step's.

Needs act-opt and act-run: ACT_BIN_DIR (lit sets it) or build/bin.
"""

import os
import re
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act import driver  # noqa: E402
from act.export.cli import export  # noqa: E402

VGG = os.path.join(ROOT, "bench", "step_speed", "models.py") + ":vgg"


@pytest.mark.parametrize("spec,batch", [("cnn", 8), (VGG, 2)])
def test_narrow_pool_indices_are_bitwise_lossless(spec, batch, tmp_path):
    manifest = export(spec, batch, 0, str(tmp_path))
    src = manifest["files"]["joint"]
    probe = open(driver.insert(src, str(tmp_path / "probe.mlir"), "min-bytes=0")).read()
    found = re.findall(r"act\.encode [^\n]*, id = (\d+) : tensor<([0-9x]+)xi8> -> "
                       r"[^\n]*#act\.index<bits = (\d+)>", probe)
    # Every max pool's indices: window-local, i8 (2x2 windows: 2 bits each).
    assert found and all(bits == "2" for _, _, bits in found), found
    ids = ",".join(i for i, _, _ in found)
    plain = driver.insert(src, str(tmp_path / "plain.mlir"), "policy=none")
    narrow = driver.insert(src, str(tmp_path / "narrow.mlir"), f"min-bytes=0 include={ids}")
    n = manifest["parameters"] + 1
    want, _, _ = driver.step(plain, manifest["inputs"], str(tmp_path / "plain"), n)
    got, _, _ = driver.step(narrow, manifest["inputs"], str(tmp_path / "narrow"), n)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    before = driver.memory_report(plain, str(tmp_path / "r0.json"))["graphs"][0]["totals"]
    after = driver.memory_report(narrow, str(tmp_path / "r1.json"))["graphs"][0]["totals"]
    index_bytes = sum(int(np.prod([int(d) for d in shape.split("x")]))
                      for _, shape, _ in found)
    saved = before["saved_bytes_after"] - after["saved_bytes_after"]
    print(f"{manifest['model']}: {len(found)} pool indices at 2 bits, bitwise identical "
          f"gradients, saved bytes {before['saved_bytes_after']} -> {after['saved_bytes_after']}")
    # i8 -> 2 bits: 4x on those tensors.
    assert saved == index_bytes - index_bytes // 4


@pytest.mark.parametrize("spec,batch,recompute", [("cnn", 8, 0), (VGG, 2, 0), (VGG, 2, 1000)])
def test_lossless_policy_is_bitwise_identical(spec, batch, recompute, tmp_path):
    """policy=lossless: sign masks, narrow indices and sparse ReLU outputs
    (#act.sparse), and with recompute-cost the convolution outputs
    recomputed in the backward (#act.recompute); the step's loss and
    gradients are bitwise identical to the unencoded step's, and the report
    says why each value got its encoding."""
    manifest = export(spec, batch, 0, str(tmp_path))
    src = manifest["files"]["joint"]
    plain = driver.insert(src, str(tmp_path / "plain.mlir"), "policy=none")
    lossless = driver.insert(src, str(tmp_path / "lossless.mlir"),
                             f"policy=lossless min-bytes=0 recompute-cost={recompute}")
    text = open(lossless).read()
    assert "#act.sparse" in text and "#act.mask" in text and "#act.index" in text
    assert "#act.quant" not in text and "act.seeds" not in text
    n = manifest["parameters"] + 1
    want, peak0, _ = driver.step(plain, manifest["inputs"], str(tmp_path / "plain"), n)
    got, peak1, _ = driver.step(lossless, manifest["inputs"], str(tmp_path / "lossless"), n)
    bits = [(np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8))
            for a, b in zip(got, want)]
    assert all(np.array_equal(a, b) for a, b in bits)
    report = driver.memory_report(lossless, str(tmp_path / "r.json"))["graphs"][0]
    whys = {row["why"] for row in report["saved"] if "why" in row}
    assert {"read only through sign tests", "integer range proven",
            "zeros made by a ReLU-like op"} <= whys
    sparse = [row for row in report["saved"] if row["encoding"].startswith("#act.sparse")]
    assert sparse and all(row.get("bytes_after_estimated") for row in sparse)
    totals = report["totals"]
    # What the run stored: encoded values as measured, the others whole.
    stored = driver.stored_bytes(lossless, manifest["inputs"])
    encoded_ids = {row["id"] for row in report["saved"] if row["encoding"] != "none"}
    assert set(stored) == encoded_ids
    measured = sum(stored.values()) + sum(
        row["bytes_before"] for row in report["saved"] if row["id"] not in encoded_ids)
    for row in sparse:
        # Never more than the value itself (the dense fallback), plus the
        # sign mask where one is stored too.
        assert stored[row["id"]] <= row["bytes_before"] * 33 // 32
    ratio = totals['saved_bytes_before'] / measured
    if recompute:
        convolutions = [row for row in report["saved"]
                        if row["producer"] == "linalg.conv_2d_nchw_fchw"]
        assert convolutions and all(row["encoding"] == "#act.recompute"
                                    and row["why"] == "recomputed in the backward"
                                    for row in convolutions)
        # Gist's setting with BatchNorm: >= 3x lossless only with the
        # convolution outputs recomputed (docs/Encodings.md).
        assert ratio >= 3.0, ratio
    print(f"{manifest['model']}: lossless policy, recompute-cost={recompute}, "
          f"bitwise identical gradients; saved bytes "
          f"{totals['saved_bytes_before']} -> {measured} measured "
          f"({ratio:.2f}x; static estimate at density 0.5: "
          f"{totals['saved_bytes_after']}, {totals['compression_ratio']:.2f}x); "
          f"measured peak {peak0} -> {peak1} bytes")


@pytest.mark.parametrize("fmt,tolerance", [("bf16", 2e-2), ("fp10", 1e-1)])
def test_lossless_with_gist_precision_reduction(fmt, tolerance, tmp_path):
    """"lossless+F" (policy=lossless float-format=F, Gist's delayed
    precision reduction over its lossless encodings): the sign masks and
    pool indices stay exact, the sparse maps keep their bitmap and store
    their nonzeros in F, the other float values are #act.float of F. The
    forward is untouched (the loss is the unencoded step's, bit for bit),
    the gradients are close to it and bitwise those of #act.float of F on
    every value (at this batch), and the run stores fewer bytes than either the lossless
    policy alone or the float format alone, measured."""
    manifest = export(VGG, 2, 0, str(tmp_path))
    src = manifest["files"]["joint"]
    assert driver.insertion_options(f"lossless+{fmt}") == f"policy=lossless float-format={fmt}"
    with pytest.raises(ValueError, match="float format"):
        driver.insertion_options("lossless+fp10 min-bytes=0")
    plain = driver.insert(src, str(tmp_path / "plain.mlir"), "policy=none")
    lossless = driver.insert(src, str(tmp_path / "lossless.mlir"), "policy=lossless min-bytes=0")
    reduced = driver.insert(src, str(tmp_path / "reduced.mlir"),
                            driver.insertion_options(f"lossless+{fmt}") + " min-bytes=0")
    text = open(reduced).read()
    assert f"#act.sparse<density = 0.5, format = {fmt}>" in text
    assert f"#act.float<format = {fmt}>" in text
    assert "#act.mask" in text and "#act.index" in text and "#act.quant" not in text
    n = manifest["parameters"] + 1
    want, _, _ = driver.step(plain, manifest["inputs"], str(tmp_path / "plain"), n)
    got, _, _ = driver.step(reduced, manifest["inputs"], str(tmp_path / "reduced"), n)
    assert np.array_equal(np.atleast_1d(got[0]).view(np.uint8),
                          np.atleast_1d(want[0]).view(np.uint8))  # the loss
    errors = [float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
              for g, w in zip(got[1:], want[1:])]
    assert max(errors) < tolerance, errors
    assert max(errors) > 0.0  # (the gradients do see the rounding)
    # The same bits as #act.float<format = F> on every value (zeros stay
    # zeros, the nonzeros round alike, masks and indices are exact under
    # both): its accuracy is the float format's, at fewer bytes. (At batch
    # 2 no weight gradient decodes by chunks of the batch; at larger ones
    # the float format's do, and sum in another order: docs/Encodings.md.)
    uniform = driver.insert(src, str(tmp_path / "uniform.mlir"),
                            driver.insertion_options(f"#act.float<format = {fmt}>")
                            + " min-bytes=0")
    same, _, _ = driver.step(uniform, manifest["inputs"], str(tmp_path / "uniform"), n)
    assert all(np.array_equal(np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8))
               for a, b in zip(got, same))

    def measured(mlir, name):
        # What the run stores: the encoded values as measured, the others
        # whole.
        stored = driver.stored_bytes(mlir, manifest["inputs"])
        report = driver.memory_report(mlir, str(tmp_path / f"{name}.json"))["graphs"][0]
        return sum(stored.values()) + sum(row["bytes_before"] for row in report["saved"]
                                          if row["id"] not in stored)

    exact, narrow = measured(lossless, "lossless"), measured(reduced, "reduced")
    dense = measured(uniform, "uniform")
    print(f"{manifest['model']}: lossless {exact} B stored, #act.float<format = {fmt}> "
          f"{dense} B, lossless+{fmt} {narrow} B; gradient relative errors up to "
          f"{max(errors):.2e}, the float format's bit for bit")
    assert narrow < exact and narrow < dense


def test_gist_precision_reduction_trains_as_the_float_format():
    """Training with "lossless+fp10" is training with #act.float<format =
    fp10>, bit for bit, step after step: its sparse maps decode per element
    (into their readers, the weight gradients' convolutions by chunks of
    the batch) as the float format's values do, and zeros are zeros in
    fp10. Several steps, because a decode reading storage its step had
    already freed (act-early-dealloc without arith.select's aliases) read
    right in a fresh process and garbage (NaN gradients) once the freed
    memory was reused, from the second step on."""
    import copy
    import torch
    import torch.nn.functional as F
    import act
    from act.train import fashion_cnn
    torch.manual_seed(0)
    models = [fashion_cnn()]
    models.append(copy.deepcopy(models[0]))
    x = torch.randn(6, 16, 1, 28, 28).clamp(min=-1.0)
    y = torch.randint(0, 10, (6, 16))
    steps = [act.compile(m, F.cross_entropy, x[0], y[0], encoding=e)
             for m, e in zip(models, ("#act.float<format = fp10>", "lossless+fp10"))]
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in models]
    for i in range(len(x)):
        losses = []
        for m, step, opt in zip(models, steps, opts):
            opt.zero_grad(set_to_none=True)
            losses.append(float(step(x[i], y[i])))
        assert losses[0] == losses[1], (i, losses)
        for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
            assert torch.isfinite(q.grad).all(), (i, name)
            assert torch.equal(p.grad, q.grad), (i, name)
        for opt in opts:
            opt.step()
