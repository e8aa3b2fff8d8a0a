"""PyTorch on the GPU, the models and batches prepare.sh exported:
    torch_steps.py MODELS   (lines "name batch")
For each: eager forward + backward with PyTorch's defaults (cuDNN may use
TF32 for convolutions), eager in strict float32 (TF32 off, as act's cuBLAS/
cuDNN calls run), and torch.compile (defaults; ACT_GPU_SKIP_TORCH_COMPILE=1:
not): median step time over 20 steps and the peak of allocated device memory
(torch.cuda.max_memory_allocated) during one step, parameters included."""
import importlib.util
import os
import statistics
import sys
import time

import torch

spec = importlib.util.spec_from_file_location("models", "models.py")
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)


def measure(module, x, y, label):
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        module.zero_grad(set_to_none=True)
        loss_fn(module(x), y).backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    times = []
    for _ in range(20):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    print(f"torch {torch.__version__} {label}: median {statistics.median(times):.3f} ms, "
          f"peak {peak / 2**20:.1f} MiB", flush=True)


# ACT_GPU_DEADLINE (seconds since the epoch): measurements that would start
# after it are skipped, so a run inside a time limit returns what it has.
deadline = float(os.environ.get("ACT_GPU_DEADLINE", "inf"))


def late(label):
    if time.time() < deadline:
        return False
    print(f"{label}: skipped (past ACT_GPU_DEADLINE)")
    return True


for line in open(sys.argv[1]):
    name, batch = line.split()
    batch = int(batch)
    torch.manual_seed(0)
    module, x, y = getattr(models, name)(batch)
    module, x, y = module.cuda(), x.cuda(), y.cuda()
    torch.backends.cudnn.allow_tf32 = True
    if not late(f"eager {name}"):
        measure(module, x, y, f"eager {name} batch {batch}")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if not late(f"eager fp32 {name}"):
        measure(module, x, y, f"eager fp32 {name} batch {batch}")
    torch.backends.cudnn.allow_tf32 = True
    if os.environ.get("ACT_GPU_SKIP_TORCH_COMPILE") != "1" and not late(f"compile {name}"):
        try:
            t = time.perf_counter()
            compiled = torch.compile(module)
            measure(compiled, x, y, f"compile {name} batch {batch}")
            print(f"  (torch.compile of {name}: {time.perf_counter() - t:.0f} s with its runs)")
        except Exception as e:  # a compile failure is a result, not a crash
            print(f"torch.compile {name}: failed: {type(e).__name__}: {e}"[:300])
    del module, x, y
    torch.cuda.empty_cache()
