"""act.mallocpeak: the preloaded heap counter (bench/memory/malloc_peak.c)
measures what a process allocates at once: a NumPy and a torch buffer to
within a page, and PyTorch eager's training step at least its saved
activations (saved_tensors_hooks) plus the batch's gradients of the
activations it holds; without the counter loaded, a clear error.

Needs libact_malloc_peak.so (ACT_LIB_DIR); lit sets it.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act import mallocpeak  # noqa: E402

SCRIPT = r'''
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from act import mallocpeak
assert mallocpeak.available()
mallocpeak.reset(); base = mallocpeak.live()
a = np.ones(100 * 2**20 // 8); del a
print("numpy", mallocpeak.peak() - base)
mallocpeak.reset(); base = mallocpeak.live()
t = torch.ones(50 * 2**20 // 4); del t
print("torch", mallocpeak.peak() - base)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.GELU(),
                      nn.Linear(1024, 10))
x, y = torch.randn(512, 256), torch.randint(0, 10, (512,))
saved = []
def pack(t):
    saved.append(t.numel() * t.element_size() if t.data_ptr() not in
                 (p.data_ptr() for p in model.parameters()) and t is not x else 0)
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    F.cross_entropy(model(x), y).backward()
model.zero_grad(set_to_none=True)
mallocpeak.reset(); base = mallocpeak.live()
F.cross_entropy(model(x), y).backward()
print("step", mallocpeak.peak() - base, "saved", sum(saved))
'''


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="the sanitizer build preloads ASan's runtime, which must come first "
                           "and wraps the same functions")
def test_counter_measures_buffers_and_an_eager_step(tmp_path):
    script = tmp_path / "measure.py"
    script.write_text(SCRIPT)
    run = mallocpeak.run([sys.executable, str(script), os.path.join(ROOT, "python")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    values = {}
    for line in run.stdout.splitlines():
        words = line.split()
        values[words[0]] = int(words[1])
        if len(words) > 2:
            values[words[2]] = int(words[3])
    assert 100 * 2**20 <= values["numpy"] <= 100 * 2**20 + 65536
    assert 50 * 2**20 <= values["torch"] <= 50 * 2**20 + 65536
    # The step holds its saved activations, the parameters' gradients
    # (about 5.3 MB) and the activations' gradients: more than the saved
    # bytes, less than a few times them.
    assert values["saved"] > 4 * 2**20
    assert values["saved"] < values["step"] < 4 * values["saved"] + 8 * 2**20
    print(f"eager MLP step: heap peak {values['step']} bytes, saved activations "
          f"{values['saved']} bytes")


def test_without_the_counter_a_clear_error():
    if mallocpeak.available():
        pytest.skip("this process runs with the counter")
    with pytest.raises(RuntimeError, match="LD_PRELOAD"):
        mallocpeak.peak()
