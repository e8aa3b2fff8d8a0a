"""PyTorch eager forward + backward on the GPU, the same models and batches."""
import importlib.util, statistics, time
import torch
spec = importlib.util.spec_from_file_location("models", "models.py")
models = importlib.util.module_from_spec(spec); spec.loader.exec_module(models)
torch.manual_seed(0)
for name, batch in (("vgg", 16), ("encoder", 8)):
    module, x, y = getattr(models, name)(batch)
    module, x, y = module.cuda(), x.cuda(), y.cuda()
    loss_fn = torch.nn.CrossEntropyLoss()
    def step():
        module.zero_grad(set_to_none=True)
        loss_fn(module(x), y).backward()
    for _ in range(3): step()
    torch.cuda.synchronize(); times = []
    for _ in range(20):
        t = time.perf_counter(); step(); torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    print(f"torch {torch.__version__} eager {name} batch {batch}: median {statistics.median(times):.3f} ms")
