"""A step on CUDA tensors through the C API and its binding (issue 49),
without a GPU: over the runtime's stand-in CUDA driver
(runtime/test/FakeCuda.cpp: device memory the host cannot touch, launches
that run nothing, and counters of what it was asked to do). What this
shows is the plumbing a GPU run relies on: the arguments read in place
from device pointers, the work queued on the caller's stream, no copy from
or to the host, results in act's pool of device blocks (reused from run to
run) handed out as DLPack tensors. The values need a GPU
(bench/gpu_steps).

Needs act-opt (ACT_BIN_DIR) and libActCAPI.so (ACT_LIB_DIR); lit sets both.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from act import capi, dlpack  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
LIB_DIR = os.environ.get("ACT_LIB_DIR", os.path.join(ROOT, "build", "lib"))
BIN_DIR = os.environ.get("ACT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
FAKE_DRIVER = os.path.join(os.path.dirname(os.path.abspath(LIB_DIR)), "unittests",
                           "libact_fake_cuda.so")

# Runs in a process of its own: the runtime loads the driver ACT_CUDA_DRIVER
# names once per process.
SCRIPT = textwrap.dedent("""
    import ctypes, json, os, sys
    sys.path.insert(0, sys.argv[1])
    from act import capi
    from act.dlpack import DeviceTensor
    fake = ctypes.CDLL(os.environ["ACT_CUDA_DRIVER"])
    fake.actFakeCudaWorkOn.restype = ctypes.c_int64
    fake.actFakeCudaWorkOn.argtypes = [ctypes.c_void_p]
    fake.actFakeCudaMemoryKind.argtypes = [ctypes.c_uint64]
    NAMES = ["launches", "device_allocations", "managed_allocations", "host_copies",
             "device_copies", "memsets", "graph_launches", "pinned_copies"]

    def counts():
        out = (ctypes.c_int64 * len(NAMES))()
        fake.actFakeCudaGetCounts(out)
        return dict(zip(NAMES, out))

    def stream():
        s = ctypes.c_void_p()
        assert fake.cuStreamCreate(ctypes.byref(s), 0) == 0
        return s.value

    def device_arguments(specs):
        args = []
        for dtype, shape in specs:
            p = ctypes.c_uint64()
            n = max(1, dtype.itemsize * int(__import__("math").prod(shape)))
            assert fake.cuMemAlloc_v2(ctypes.byref(p), n) == 0
            args.append(DeviceTensor(p.value, shape, dtype))
        return args

    def measure(run_once, s, runs=3):
        # Each run's results are dropped before the next (their blocks go
        # back to the pool).
        report = []
        for r in range(runs):
            before, work = counts(), fake.actFakeCudaWorkOn(s)
            results, peak = run_once(r)
            after = counts()
            delta = {k: after[k] - before[k] for k in NAMES}
            delta["on_stream"] = fake.actFakeCudaWorkOn(s) - work
            delta["result_kinds"] = sorted({fake.actFakeCudaMemoryKind(t.data) for t in results})
            delta["peak"] = peak
            report.append(delta)
            del results
        return report

    out = {}
    split = capi.CompiledStep.from_file(sys.argv[2], device="cuda-kernels")
    joint = capi.CompiledStep.from_file(sys.argv[3], device="cuda-kernels")
    out["device"] = [split.device, joint.device]
    args = device_arguments(split.arguments)
    s1 = stream()
    split.set_stream(s1)

    tangents = device_arguments(split.backward_arguments[split.num_saved:])

    def forward_backward(r):
        f = split.forward(args, seed=r)
        n = f.num_results - split.num_saved
        outputs = [f.result(i) for i in range(n)]
        b = split.backward_of(f, [None] * split.num_saved + tangents)
        return outputs + b.results, max(f.peak_bytes, b.peak_bytes)

    out["split"] = measure(forward_backward, s1)

    def runs_of(step, arguments):
        def run_once(r):
            run = step.run(arguments, seed=r)
            return run.results, run.peak_bytes
        return run_once

    out["split_run"] = measure(runs_of(split, args), s1)
    s2 = stream()
    joint.set_stream(s2)
    out["joint"] = measure(runs_of(joint, args), s2)
    out["pool"] = capi.device_pool_bytes()
    errors = {}
    import numpy as np
    try:
        joint.run([np.zeros(shape, dtype) for dtype, shape in joint.arguments])
    except capi.ActError as e:
        errors["host_argument"] = str(e)
    try:
        joint.estimate_sensitivity([args], "/dev/null")
    except capi.ActError as e:
        errors["sensitivity"] = str(e)
    try:
        capi.CompiledStep.from_file(sys.argv[3], device="tpu")
    except capi.ActError as e:
        errors["device"] = str(e)
    cpu = capi.CompiledStep.from_file(sys.argv[3])
    try:
        cpu.set_stream(s1)
    except capi.ActError as e:
        errors["cpu_stream"] = str(e)
    out["errors"] = errors
    # A dropout seed, which the host code reads: a host argument.
    dropout = capi.CompiledStep.from_file(sys.argv[4], device="cuda-kernels")
    out["dropout_host"] = sorted(dropout.host_arguments)
    args = [np.array(5, np.int64) if i in dropout.host_arguments else a
            for i, a in enumerate(device_arguments(dropout.arguments))]
    s3 = stream()
    dropout.set_stream(s3)
    out["dropout"] = measure(runs_of(dropout, args), s3)
    try:
        dropout.run(device_arguments(dropout.arguments))
    except capi.ActError as e:
        errors["device_seed"] = str(e)
    print(json.dumps(out))
""")


# CUDA graphs (CompiledStep.set_graphs): a step with seeds
# whose gradients of 128 KiB the graph lends, run after run; argv: its
# path, then the dropout step's.
GRAPH_SCRIPT = SCRIPT[:SCRIPT.index("\nout = {}") + 1] + textwrap.dedent("""
    out = {}
    step = capi.CompiledStep.from_file(sys.argv[2], device="cuda-kernels")
    step.set_graphs(True)
    args = device_arguments(step.arguments)
    s = stream()
    step.set_stream(s)
    kept = []
    import numpy as np

    def run_once(r):
        run = step.run(args, seed=r)
        kept.append([(t.data, t.dtype.itemsize * int(np.prod(t.shape))) for t in run.results])
        return run.results, run.peak_bytes

    def counted(runs=1):
        before = capi.gpu_graph_counts()
        report = measure(run_once, s, runs)
        after = capi.gpu_graph_counts()
        return report, {k: after[k] - before[k] for k in after}

    out["first"], out["first_graphs"] = counted(2)  # as always, then captured
    out["replays"], out["replay_graphs"] = counted(3)
    out["pointers"] = kept[-4:]
    # A lent result held: the next run goes without the graph.
    held = step.run(args, seed=7)
    out["held"], out["held_graphs"] = counted()
    del held
    out["released"], out["released_graphs"] = counted()
    # Other arguments: captured anew.
    args = device_arguments(step.arguments)
    out["moved"], out["moved_graphs"] = counted(2)
    out["arguments"] = len(args)
    # A step whose host code reads an argument (a dropout seed): no graph.
    import numpy as np
    dropout = capi.CompiledStep.from_file(sys.argv[3], device="cuda-kernels")
    dargs = [np.array(5, np.int64) if i in dropout.host_arguments else a
             for i, a in enumerate(device_arguments(dropout.arguments))]
    dropout.set_stream(s)
    errors = {}
    try:
        dropout.set_graphs(True)
    except capi.ActError as e:
        errors["dropout"] = str(e)
    try:
        capi.CompiledStep.from_file(sys.argv[3]).set_graphs(True)
    except capi.ActError as e:
        errors["cpu"] = str(e)
    out["errors"] = errors
    before = capi.gpu_graph_counts()
    for r in range(3):
        dropout.run(dargs, seed=r)
    out["dropout_graphs"] = capi.gpu_graph_counts()["launches"] - before["launches"]
    # A capture the driver refuses: the step runs without graphs from then.
    os.environ["ACT_FAKE_CUDA_REFUSE_CAPTURE"] = "1"
    refused = capi.CompiledStep.from_file(sys.argv[2], device="cuda-kernels")
    refused.set_graphs(True)
    refused.set_stream(s)
    step = refused
    out["refused"], out["refused_graphs"] = counted(3)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    assert os.path.exists(FAKE_DRIVER), f"{FAKE_DRIVER}: the stand-in driver is built with act"
    tmp = tmp_path_factory.mktemp("device")
    paths = []
    for name in ["mlp_split", "mlp"]:
        path = tmp / f"{name}_q4.mlir"
        subprocess.run([os.path.join(BIN_DIR, "act-opt"), os.path.join(ROOT, "examples",
                        f"{name}.mlir"), "-act-insert-encode-decode", "-o", str(path)],
                       check=True, stderr=subprocess.DEVNULL)
        paths.append(str(path))
    # A step with dropout, exported by act.compile.
    import torch.nn as nn
    import torch.nn.functional as F

    import act
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    step = act.compile(model, F.cross_entropy, torch.randn(8, 16), torch.randint(0, 4, (8,)),
                       encoding="#act.quant<bits = 4>", work_dir=str(tmp / "dropout"),
                       dynamic_batch=False)
    paths.append(str(tmp / "dropout" / "step0_v0_encoded.mlir"))
    del step
    env = dict(os.environ, ACT_CUDA_DRIVER=FAKE_DRIVER, ACT_LIB_DIR=LIB_DIR)
    done = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(HERE)] + paths,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["split", "split_run", "joint", "dropout"])
def test_a_cuda_step_runs_in_place_on_the_callers_stream(report, mode):
    assert report["device"] == ["cuda", "cuda"]
    for run in report[mode]:
        # Kernels ran, nothing crossed from or to the host, and every
        # launch, copy and fill went on the stream the caller set.
        assert run["launches"] > 0
        assert run["host_copies"] == 0
        assert run["on_stream"] == (run["launches"] + run["device_copies"] + run["memsets"]
                                    + run["pinned_copies"])
        # The results (the loss among them) are device memory.
        assert run["result_kinds"] == [1]
        assert run["peak"] > 0
    # Once the pool has the step's sizes, a run takes no new memory from
    # the driver: no cuMemAlloc, and the seeds' managed block reused.
    assert report[mode][-1]["device_allocations"] == 0
    assert report[mode][-1]["managed_allocations"] == 0


def test_a_split_steps_whole_run_makes_its_tangents_on_the_device(report):
    # The backward's tangents (1 for the loss) are filled on the stream.
    assert all(run["memsets"] >= 1 for run in report["split_run"])


def test_the_device_pool_reports_what_it_holds(report):
    reserved, peak = report["pool"]
    assert 0 < reserved <= peak


def test_cuda_steps_refuse_host_tensors_and_host_measurements(report):
    errors = report["errors"]
    assert "compiled for CUDA and takes CUDA tensors" in errors["host_argument"]
    assert "reads the step's gradients on the host" in errors["sensitivity"]
    assert "unknown device 'tpu'" in errors["device"]
    assert "runs on the CPU: it has no CUDA stream" in errors["cpu_stream"]
    # The dropout seed (argument 4) is read by the host code: a host
    # tensor, staged by the runtime; a device pointer there is refused.
    assert report["dropout_host"] == [4]
    assert "argument 4 of the step is read by the step's host code" in errors["device_seed"]


@pytest.fixture(scope="module")
def graph_report(tmp_path_factory):
    import torch.nn as nn
    import torch.nn.functional as F

    import act
    tmp = tmp_path_factory.mktemp("graphs")
    torch.manual_seed(0)
    paths = []
    for name, model in [("wide", nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 4))),
                        ("dropout", nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5),
                                                  nn.Linear(32, 4)))]:
        x = torch.randn(8, model[0].in_features)
        step = act.compile(model, F.cross_entropy, x, torch.randint(0, 4, (8,)),
                           encoding="#act.quant<bits = 4>", work_dir=str(tmp / name),
                           dynamic_batch=False)
        paths.append(str(tmp / name / "step0_v0_encoded.mlir"))
        del step
    env = dict(os.environ, ACT_CUDA_DRIVER=FAKE_DRIVER, ACT_LIB_DIR=LIB_DIR)
    done = subprocess.run([sys.executable, "-c", GRAPH_SCRIPT, os.path.dirname(HERE)] + paths,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["stderr"] = done.stderr
    return out


def test_a_cuda_graph_replays_a_step_with_one_launch(graph_report):
    """set_graphs(True): the first run as always, the second captured in a
    CUDA graph and launched, each later one a single graph launch: no
    kernel launched one by one, no allocation, nothing from or to pageable
    host memory; the seeds copied in from pinned memory; the gradients
    (128 KiB) the graph's own blocks, the same at every run, the small
    results (the loss, the biases' gradients) gathered by the graph and
    copied out with one copy."""
    r = graph_report
    first, captured = r["first"]
    assert first["launches"] > 0 and first["graph_launches"] == 0
    assert captured["launches"] == 0 and captured["graph_launches"] == 1
    assert r["first_graphs"] == {"captures": 1, "launches": 1, "failed": 0}
    assert r["replay_graphs"] == {"captures": 0, "launches": 3, "failed": 0}
    for run in r["replays"]:
        assert run["graph_launches"] == 1 and run["launches"] == 0
        assert run["device_allocations"] == 0 and run["managed_allocations"] == 0
        assert run["host_copies"] == 0 and run["pinned_copies"] == 1  # the seeds
        # The small results, gathered by the graph, copied out at once.
        assert run["device_copies"] == 1 and run["memsets"] == 0
        assert run["on_stream"] == (run["graph_launches"] + run["device_copies"]
                                    + run["memsets"] + run["pinned_copies"])
        assert run["result_kinds"] == [1]
        # The capture's peak, reported for each replay.
        assert run["peak"] == captured["peak"] > 0
    # The capture's results and three replays': the first layer's weight
    # gradient (128 KiB) lent, the same block each time; the others copied
    # out together, into one block at 256-byte steps.
    runs = r["pointers"]
    lent = [i for i, (p, n) in enumerate(runs[0]) if n >= 64 << 10]
    assert len(lent) == 1 and all(run[lent[0]] == runs[0][lent[0]] for run in runs)
    for run in runs:
        small = sorted(p for i, (p, n) in enumerate(run) if i not in lent)
        span = sum((n + 255) // 256 * 256 for i, (p, n) in enumerate(run) if i not in lent)
        assert all((p - small[0]) % 256 == 0 for p in small)
        assert small[-1] - small[0] < span


def test_a_held_result_or_other_arguments_stop_a_replay(graph_report):
    r = graph_report
    # While a run the graph lent results to is held, the next runs without.
    (held,) = r["held"]
    assert held["launches"] > 0 and held["graph_launches"] == 0
    assert r["held_graphs"]["launches"] == 0
    (released,) = r["released"]
    assert released["graph_launches"] == 1 and released["launches"] == 0
    assert released["device_allocations"] == 0
    # Other device pointers: the step is captured anew, and the arguments
    # that moved are copied into the graph's blocks before each launch.
    assert r["moved_graphs"] == {"captures": 1, "launches": 2, "failed": 0}
    for run in r["moved"]:
        assert run["device_copies"] == r["arguments"] + 1 and run["launches"] == 0
    # A step whose host code reads an argument is never captured, and
    # says why; nor is a CPU step.
    assert r["dropout_graphs"] == 0
    assert "host code reads argument 4 (a dropout seed): a CUDA graph would replay " \
        "its first value" in r["errors"]["dropout"]
    assert "is not compiled for device tensors" in r["errors"]["cpu"]


def test_a_refused_capture_runs_the_step_without_graphs(graph_report):
    r = graph_report
    first, refused, after = r["refused"]
    assert r["refused_graphs"] == {"captures": 0, "launches": 0, "failed": 1}
    # The refused call ran its kernels one by one, as every call after it.
    assert refused["launches"] == first["launches"] == after["launches"] > 0
    assert "in a CUDA graph failed (operation failed due to a previous error during " \
        "capture (901)); it runs without graphs" in r["stderr"]


def test_device_tensors_cross_to_torch_through_dlpack_without_a_copy():
    """The DLPack capsule a DeviceTensor makes, here of host memory (the
    CPU device: Debian's torch has no CUDA), is the memory itself, and it
    keeps its owner (a run's memory) alive until torch lets it go."""
    import gc
    import weakref

    class Owner:
        pass

    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    owner = Owner()
    owner.values = values
    alive = weakref.ref(owner)
    t = dlpack.DeviceTensor(values.ctypes.data, values.shape, values.dtype, owner,
                            device=(dlpack.KDL_CPU, 0))
    del owner
    x = t.to_torch()
    del t
    gc.collect()
    assert x.data_ptr() == values.ctypes.data
    assert torch.equal(x, torch.from_numpy(values))
    assert alive() is not None
    del x
    gc.collect()
    assert alive() is None
    # Integers keep their type; an unconsumed capsule lets its owner go.
    labels = np.array([3, -1, 7], dtype=np.int64)
    y = torch.utils.dlpack.from_dlpack(dlpack.to_capsule(labels.ctypes.data, labels.shape,
                                                         labels.dtype, labels,
                                                         (dlpack.KDL_CPU, 0)))
    assert y.dtype == torch.int64 and y.tolist() == [3, -1, 7]
    held = len(dlpack._alive)
    capsule = dlpack.to_capsule(labels.ctypes.data, labels.shape, labels.dtype, labels,
                                (dlpack.KDL_CPU, 0))
    assert len(dlpack._alive) == held + 1
    del capsule
    assert len(dlpack._alive) == held


def test_a_cpu_step_names_the_device_of_a_cuda_argument():
    step = capi.CompiledStep.from_file(os.path.join(ROOT, "examples", "mlp.mlir"))
    meta = [torch.empty(shape, dtype=torch.float32, device="meta")
            for _, shape in step.arguments]
    with pytest.raises(capi.ActError, match="compiled for the CPU"):
        step.run(meta)


def test_a_step_traced_on_a_copy_of_the_model_trains_the_model_itself():
    """On a GPU, act.compile traces a CPU copy of the model (the trace runs
    eager and float64 references) and maps the step's arguments and updated
    buffers back to the model's own tensors by name (Step._on_device). The
    same mapping on the CPU: a step traced on a copy trains the model
    itself, its gradients, BatchNorm statistics and losses bit for bit
    those of a step traced on the model."""
    import copy
    import types

    import torch.nn as nn
    import torch.nn.functional as F

    import act

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    model[0].bias.requires_grad_(False)  # a frozen parameter: among the buffers
    twin = copy.deepcopy(model)
    x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
    direct = act.compile(model, F.cross_entropy, encoding="#act.quant<bits = 4>")
    copied = act.compile(twin, F.cross_entropy, encoding="#act.quant<bits = 4>")
    copied._traced_module = types.MethodType(
        lambda self, inputs, targets: (copy.deepcopy(self.module), inputs, targets), copied)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    for _ in range(3):
        losses = []
        for step, opt in zip((direct, copied), opts):
            opt.zero_grad(set_to_none=True)
            losses.append(step(x, y))
            opt.step()
        assert torch.equal(losses[0], losses[1])
    layout = copied._exports[copied.variant[:-2]][2]
    assert all(any(t is q for q in twin.parameters()) for t in layout["params"])
    for a, b in zip(model.state_dict().values(), twin.state_dict().values()):
        assert torch.equal(a, b)
    assert int(twin[1].num_batches_tracked) == 3
