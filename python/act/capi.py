"""ctypes binding of act's C API (include/act-c/Step.h, libActCAPI.so).

    step = CompiledStep.from_file("step.mlir")        # or from_source(text)
    run = step.run([np_or_torch_arrays...], seed=1)  # arguments read in place
    run.results  # NumPy arrays viewing the run's memory (kept alive by them)

A step compiled with device="cuda" takes CUDA tensors (their device
pointers, read in place), runs on the stream set_stream names, and gives
DeviceTensors (act.dlpack) that torch.from_dlpack takes without a copy.

The library comes from ACT_LIB_DIR, else the repository's build/lib. Errors
raise ActError with act's message (diagnostics with locations included).
"""

import contextlib
import ctypes
import math
import os
import subprocess
import sys

import numpy as np

from .dlpack import DeviceTensor
from .process import release_compiler_pages, release_freed_memory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KINDS = [np.float32, np.float64, np.int64, np.int32, np.int16, np.int8, np.bool_]
# torch's dtypes (by name: this module does not import torch) of each kind.
_TORCH_KINDS = {"torch.float32": 0, "torch.float64": 1, "torch.int64": 2, "torch.int32": 3,
                "torch.int16": 4, "torch.int8": 5, "torch.bool": 6}


class ActError(Exception):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]


class _Tensor(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("rank", ctypes.c_ssize_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


_ERROR = ctypes.POINTER(ctypes.c_void_p)
# include/act-c/Step.h, function by function: (result, arguments).
_SIGNATURES = {
    "actStepCompileFile": (_Handle, [ctypes.c_char_p, ctypes.c_char_p, _ERROR]),
    "actStepCompileSource": (_Handle, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                       _ERROR]),
    "actStepCompileFileOn": (_Handle, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                       _ERROR]),
    "actStepCompileSourceOn": (_Handle, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                         ctypes.c_char_p, _ERROR]),
    "actStepLoadCachedFileOn": (_Handle, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          _ERROR]),
    "actStepIsOnDevice": (ctypes.c_int, [_Handle]),
    "actStepIsArgumentOnHost": (ctypes.c_int, [_Handle, ctypes.c_ssize_t]),
    "actStepSetStream": (ctypes.c_int, [_Handle, ctypes.c_void_p, _ERROR]),
    "actStepSetGraphs": (ctypes.c_int, [_Handle, ctypes.c_int, _ERROR]),
    "actGetDevicePoolBytes": (None, [ctypes.POINTER(ctypes.c_int64),
                                     ctypes.POINTER(ctypes.c_int64)]),
    "actGetGpuGraphCounts": (None, [ctypes.POINTER(ctypes.c_int64)] * 3),
    "actStepDestroy": (None, [_Handle]),
    "actStepGetNumArguments": (ctypes.c_ssize_t, [_Handle]),
    "actStepGetArgument": (ctypes.c_int, [_Handle, ctypes.c_ssize_t, ctypes.POINTER(_Tensor)]),
    "actStepGetLossIndex": (ctypes.c_ssize_t, [_Handle]),
    "actStepHasSeeds": (ctypes.c_int, [_Handle]),
    "actStepGetBits": (ctypes.c_ssize_t, [_Handle, ctypes.POINTER(ctypes.c_int32),
                                          ctypes.c_ssize_t]),
    "actStepSetBits": (ctypes.c_int, [_Handle, ctypes.POINTER(ctypes.c_int64),
                                      ctypes.POINTER(ctypes.c_int32), ctypes.c_ssize_t, _ERROR]),
    "actStepRun": (_Handle, [_Handle, ctypes.POINTER(_Tensor), ctypes.c_ssize_t,
                             ctypes.c_uint64, _ERROR]),
    "actStepGetNumSaved": (ctypes.c_ssize_t, [_Handle]),
    "actStepGetNumBackwardArguments": (ctypes.c_ssize_t, [_Handle]),
    "actStepGetBackwardArgument": (ctypes.c_int, [_Handle, ctypes.c_ssize_t,
                                                  ctypes.POINTER(_Tensor)]),
    "actStepRunForward": (_Handle, [_Handle, ctypes.POINTER(_Tensor), ctypes.c_ssize_t,
                                    ctypes.c_uint64, _ERROR]),
    "actStepRunBackward": (_Handle, [_Handle, ctypes.POINTER(_Tensor), ctypes.c_ssize_t,
                                     _ERROR]),
    "actStepRunBackwardOf": (_Handle, [_Handle, _Handle, ctypes.POINTER(_Tensor),
                                       ctypes.c_ssize_t, ctypes.c_int, _ERROR]),
    "actStepEstimateSensitivity": (ctypes.c_int, [_Handle, ctypes.POINTER(ctypes.POINTER(_Tensor)),
                                                  ctypes.c_ssize_t, ctypes.c_ssize_t,
                                                  ctypes.c_uint64, ctypes.c_char_p, _ERROR]),
    "actStepEstimateSensitivityWith": (
        ctypes.c_int, [_Handle, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(_Tensor)),
                       ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_uint64,
                       ctypes.c_char_p, _ERROR]),
    "actStepEstimateFewBitSensitivity": (
        ctypes.c_int, [_Handle, ctypes.c_uint, ctypes.POINTER(ctypes.POINTER(_Tensor)),
                       ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_char_p, _ERROR]),
    "actStepMeasureVariance": (
        ctypes.c_int, [_Handle, ctypes.POINTER(_Tensor), ctypes.c_ssize_t, ctypes.c_uint,
                       ctypes.c_uint64, _Handle, ctypes.POINTER(ctypes.c_double),
                       ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                       _ERROR]),
    "actStepMeasureErrors": (
        ctypes.c_int, [_Handle, ctypes.POINTER(_Tensor), ctypes.c_ssize_t, ctypes.c_uint,
                       ctypes.c_uint64, _Handle, ctypes.c_ssize_t,
                       ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_int64),
                       ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_double),
                       _ERROR]),
    "actRunGetNumResults": (ctypes.c_ssize_t, [_Handle]),
    "actRunGetResult": (ctypes.c_int, [_Handle, ctypes.c_ssize_t, ctypes.POINTER(_Tensor)]),
    "actRunGetPeakBytes": (ctypes.c_int64, [_Handle]),
    "actRunDestroy": (None, [_Handle]),
    "actRunReleaseResults": (ctypes.c_int, [_Handle, ctypes.c_ssize_t, ctypes.c_ssize_t]),
    "actSetNumThreads": (ctypes.c_int, [ctypes.c_int]),
    "actGetNumThreads": (ctypes.c_int, []),
    "actSetCacheDir": (None, [ctypes.c_char_p]),
    "actStepIsFromCache": (ctypes.c_int, [_Handle]),
    "actRunPasses": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _ERROR]),
    "actStringFree": (None, [ctypes.c_void_p]),
}

_lib = None


def library_path():
    """Where libActCAPI.so is: ACT_LIB_DIR, else the repository's build/lib."""
    lib_dir = os.environ.get("ACT_LIB_DIR", os.path.join(ROOT, "build", "lib"))
    return os.path.abspath(os.path.join(lib_dir, "libActCAPI.so"))


def library():
    """libActCAPI.so, loaded once."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise ActError(f"{path} not found: build act (scripts/setup.sh) or set ACT_LIB_DIR")
        lib = ctypes.CDLL(path)
        # (Loading LLVM and MLIR runs their static initializers all over
        # their code: about 70 MiB resident that no step needs.)
        release_compiler_pages()
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = lib
        set_cache_dir(default_cache_dir())
    return _lib


def default_cache_dir():
    """Where compiled steps are kept between processes: ACT_CACHE_DIR
    (empty: no cache), else $XDG_CACHE_HOME/act, else ~/.cache/act."""
    if "ACT_CACHE_DIR" in os.environ:
        return os.environ["ACT_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "act")


_cache_dir = None  # set_cache_dir's last directory


def set_cache_dir(path):
    """Steps compiled from now on keep their code in `path` (None or "": no
    cache): a step compiled before, by this build of act for this CPU, is
    loaded from there in milliseconds instead of compiled (docs/Running.md,
    "The code cache")."""
    global _cache_dir
    library().actSetCacheDir(str(path or "").encode())
    _cache_dir = str(path or "")


def get_cache_dir():
    """The code cache steps compiled now use ("": none)."""
    library()
    return _cache_dir


@contextlib.contextmanager
def cache_dir(path):
    """set_cache_dir(path) for the duration of a `with` block."""
    before = get_cache_dir()
    set_cache_dir(path)
    try:
        yield
    finally:
        set_cache_dir(before)


def run_passes(src, pipeline, dst=None):
    """What `act-opt SRC --pass-pipeline=PIPELINE -o DST` does, in this
    process (include/act-c/Passes.h): `pipeline` names act's passes as
    act-opt does, options in braces (`act-memory-report{json=r.json}`);
    DST None: the result is not written. Raises ActError with the
    diagnostics."""
    error = ctypes.c_void_p()
    failed = library().actRunPasses(str(src).encode(), pipeline.encode(),
                                    str(dst).encode() if dst else None, ctypes.byref(error))
    release_compiler_pages()
    if failed:
        _check(_Handle(None), error)
    return dst


def _writable(directory):
    """Whether the code cache `directory` can take entries (it is made
    when missing, as the C API does)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def set_num_threads(n):
    """Threads of act's compute kernels (matmuls, convolutions) from now on;
    0: every core. Encodings give the same bits on any count."""
    if library().actSetNumThreads(int(n)):
        raise ActError(f"at most 256 threads, not {int(n)}")


def get_num_threads():
    return library().actGetNumThreads()


def _check(handle, error):
    if not handle.ptr:
        lib = library()
        message = ctypes.string_at(error.value).decode() if error.value else "unknown error"
        if error.value:
            lib.actStringFree(error.value)
        raise ActError(message.strip())
    return handle


class _RunMemory:
    """Owns one run's handle: destroyed when neither the Run nor any array
    viewing the run's memory is left. It refers to nothing else, so the
    arrays (which the garbage collector cannot traverse: a cycle through
    one is never collected) never sit on a reference cycle."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if self.handle is not None and _lib is not None:
            _lib.actRunDestroy(self.handle)
            self.handle = None


def device_pool_bytes():
    """act's pool of CUDA device blocks: (bytes it holds now, live and
    cached; the most it has held)."""
    reserved, peak = ctypes.c_int64(), ctypes.c_int64()
    library().actGetDevicePoolBytes(ctypes.byref(reserved), ctypes.byref(peak))
    return reserved.value, peak.value


def gpu_graph_counts():
    """CUDA graphs of steps on device tensors (ACT_GPU_GRAPHS=1) so far in
    the process: {"captures", "launches", "failed"} (a captured call's
    launch and each replay's; captures the driver refused)."""
    counts = [ctypes.c_int64() for _ in range(3)]
    library().actGetGpuGraphCounts(*[ctypes.byref(c) for c in counts])
    return dict(zip(["captures", "launches", "failed"], [c.value for c in counts]))


class Run:
    """The results of one run; its arrays view the run's memory, which
    lives as long as any of them (or this object). `results` makes an
    array of every result; result(i) only of the one asked for (a forward
    run's saved values need none: backward_of reads them in C). A CUDA
    step's results are DeviceTensors (act.dlpack), which torch.from_dlpack
    takes without a copy."""

    def __init__(self, handle, on_device=False):
        self._on_device = on_device
        self._memory = _RunMemory(handle)
        lib = library()
        self.peak_bytes = lib.actRunGetPeakBytes(handle)
        self.num_results = lib.actRunGetNumResults(handle)
        self._results = {}

    def result(self, i):
        if i in self._results:
            return self._results[i]
        t = _Tensor()
        if self._memory.handle is None or library().actRunGetResult(
                self._memory.handle, i, ctypes.byref(t)):
            raise ActError(f"the run has no result {i}")
        shape = tuple(t.shape[k] for k in range(t.rank))
        dtype = np.dtype(KINDS[t.kind])
        count = math.prod(shape)
        if self._on_device:
            value = DeviceTensor(t.data or 0, shape, dtype, self._memory)
        elif count == 0 or not t.data:
            value = np.zeros(shape, dtype)
        else:
            buf = (ctypes.c_byte * (count * dtype.itemsize)).from_address(t.data)
            buf._memory = self._memory  # the memory lives while a view of it does
            value = np.frombuffer(buf, dtype).reshape(shape)
        self._results[i] = value
        return value

    @property
    def results(self):
        return [None if self._results.get(i, 0) is None else self.result(i)
                for i in range(self.num_results)]


    def release(self, first, count):
        """Frees results [first, first + count) now (a forward's saved
        values after their backward); the arrays of them are dropped and
        must not be used any more."""
        if self._memory.handle is None or library().actRunReleaseResults(
                self._memory.handle, first, count):
            raise ActError(f"cannot release results {first}..{first + count - 1} of a run "
                           f"with {len(self.results)}")
        for i in range(first, first + count):
            self._results[i] = None


class CompiledStep:
    """A training step compiled once by act (act-cpu-pipeline, JIT)."""

    def __init__(self, handle):
        self._handle = handle
        lib = library()
        # "cuda": runs take and give device tensors (include/act-c/Step.h).
        self.device = "cuda" if lib.actStepIsOnDevice(handle) else "cpu"
        self.arguments = []
        for i in range(lib.actStepGetNumArguments(handle)):
            t = _Tensor()
            lib.actStepGetArgument(handle, i, ctypes.byref(t))
            self.arguments.append((np.dtype(KINDS[t.kind]),
                                   tuple(t.shape[k] for k in range(t.rank))))
        # A CUDA step's arguments given in host memory (its host code reads
        # them: a dropout seed).
        self.host_arguments = {i for i in range(len(self.arguments))
                               if lib.actStepIsArgumentOnHost(handle, i)}
        self.loss_index = lib.actStepGetLossIndex(handle)
        # Loaded from the code cache rather than compiled (from_file: by a
        # child process, compiled_in_child).
        self.from_cache = bool(lib.actStepIsFromCache(handle))
        self.compiled_in_child = False
        self.has_seeds = bool(lib.actStepHasSeeds(handle))
        # Split form: the saved values after the forward's outputs, and the
        # backward's arguments (the saved values, then the tangents).
        self.num_saved = lib.actStepGetNumSaved(handle)
        self.backward_arguments = []
        for i in range(lib.actStepGetNumBackwardArguments(handle)):
            t = _Tensor()
            lib.actStepGetBackwardArgument(handle, i, ctypes.byref(t))
            self.backward_arguments.append((np.dtype(KINDS[t.kind]),
                                            tuple(t.shape[k] for k in range(t.rank))))

    @classmethod
    def from_file(cls, path, entry=None, device="cpu", in_child=None):
        """`device`: "cpu", "cuda" (device tensors in and out, cuBLAS/cuDNN
        for matmuls and convolutions) or "cuda-kernels" (act's generated
        kernels alone).

        A CPU step with a code cache (set_cache_dir) that is not there yet
        is compiled by a child process into the cache (act.ahead.compile_in_child)
        and loaded from there: the compiler's memory (hundreds of MB for a
        large step) is never this process's, whose peak resident memory is
        what a user's monitor and a cluster's limit see. in_child: True or
        False forces either way; None: ACT_COMPILE_IN_CHILD=1 (default 0:
        in this process, as act's tests expect no subprocess).
        Either way the compiler's libraries' pages leave the resident set
        afterwards (process.release_compiler_pages)."""
        lib, error = library(), ctypes.c_void_p()
        path_b, entry_b = str(path).encode(), entry.encode() if entry else None
        if in_child is None:
            in_child = os.environ.get("ACT_COMPILE_IN_CHILD", "0") == "1"
        cache = get_cache_dir()
        h, child = _Handle(None), False
        if in_child and device == "cpu" and cache and _writable(cache):
            h = lib.actStepLoadCachedFileOn(path_b, entry_b, device.encode(),
                                            ctypes.byref(error))
            if not h.ptr and not error.value:
                compile_in_child(path, entry, cache)  # (raises its ActError)
                h = lib.actStepLoadCachedFileOn(path_b, entry_b, device.encode(),
                                                ctypes.byref(error))
                child = bool(h.ptr)
        if not h.ptr and not error.value:  # (compiled here)
            h = lib.actStepCompileFileOn(path_b, entry_b, device.encode(), ctypes.byref(error))
        step = cls(_check(h, error))
        # Compiled for this call, by a child process, and loaded from the
        # cache it wrote (from_cache: compiled by an earlier call).
        step.compiled_in_child, step.from_cache = child, step.from_cache and not child
        if not step.from_cache and not child:
            # What the compiler freed (a load from the cache frees little:
            # a Python collection and a trim there cost more than the load)
            release_freed_memory()
        release_compiler_pages()
        return step

    @classmethod
    def from_source(cls, text, entry=None, device="cpu"):
        data = text.encode()
        error = ctypes.c_void_p()
        h = library().actStepCompileSourceOn(data, len(data), entry.encode() if entry else None,
                                             device.encode(), ctypes.byref(error))
        step = cls(_check(h, error))
        if not step.from_cache:
            release_freed_memory()
        release_compiler_pages()
        return step

    def set_stream(self, stream):
        """A CUDA step's stream for its later runs: a torch.cuda.Stream, a
        CUstream as an int, or None (the runtime's own). The runs return
        once their work is queued there. PyTorch's default stream (0, the
        legacy default stream) gives the runtime's own stream, a blocking
        one, which CUDA orders with the legacy stream's work both ways."""
        handle = getattr(stream, "cuda_stream", stream)
        error = ctypes.c_void_p()
        if library().actStepSetStream(self._handle, handle or None, ctypes.byref(error)):
            _check(_Handle(None), error)

    def set_graphs(self, on=True):
        """A CUDA step's later runs in CUDA graphs: from the second run on,
        a run is captured once and each later one is a single graph launch
        (docs/Running.md, "CUDA graphs"). ActError for a CPU step, or one
        whose host code reads an argument (a dropout seed)."""
        error = ctypes.c_void_p()
        if library().actStepSetGraphs(self._handle, int(bool(on)), ctypes.byref(error)):
            _check(_Handle(None), error)

    def _device_tensors(self, args, keep, specs, what):
        """A CUDA step's arguments: CUDA tensors (torch's, or DeviceTensors),
        contiguous, of the arguments' dtypes; their device pointers. Those
        its host code reads (host_arguments): host tensors, as a CPU step
        takes them."""
        tensors = (_Tensor * max(1, len(args)))()
        host = self.host_arguments if specs is self.arguments else set()
        for i, (a, (dtype, _)) in enumerate(zip(args, specs)):
            device = getattr(a, "device", None)
            if i in host:
                if isinstance(a, DeviceTensor) or getattr(device, "type", "cpu") != "cpu":
                    raise ActError(f"argument {i} of the {what} is read by the step's host "
                                   f"code: give it in host memory (a CPU tensor)")
                tensors[i] = self._host_tensors([a], keep, [(dtype, None)], what, i)[0]
                continue
            if not isinstance(a, DeviceTensor) and getattr(device, "type", None) != "cuda":
                raise ActError(f"argument {i} of the {what} is on "
                               f"{getattr(device, 'type', None) or 'the host'}; the step was "
                               f"compiled for CUDA and takes CUDA tensors")
            kind = (KINDS.index(a.dtype.type) if isinstance(a, DeviceTensor)
                    else _TORCH_KINDS.get(str(a.dtype)))
            if kind is None or KINDS[kind] is not dtype.type:
                raise ActError(f"argument {i} is {a.dtype}, the step takes {dtype}")
            if not a.is_contiguous():
                raise ActError(f"argument {i} of the {what} is not contiguous "
                               f"(.contiguous() makes a copy that is)")
            shape = (ctypes.c_int64 * max(1, len(a.shape)))(*a.shape)
            keep.append((a, shape))
            tensors[i] = _Tensor(kind, len(a.shape), shape, a.data_ptr() or None)
        return tensors

    def _tensors(self, args, keep, specs=None, what="step"):
        """`args` as the C API's tensors (views; `keep` holds what they
        point into), checked against `specs` (the step's arguments)."""
        specs = self.arguments if specs is None else specs
        if len(args) != len(specs):
            raise ActError(f"the {what} takes {len(specs)} arguments, got {len(args)}")
        if self.device == "cuda":
            return self._device_tensors(args, keep, specs, what)
        return self._host_tensors(args, keep, specs, what)

    def _host_tensors(self, args, keep, specs, what, first=0):
        """Host arguments (NumPy arrays or CPU torch tensors) as the C API's
        tensors, views of their memory (`first`: the first one's position,
        for messages)."""
        tensors = (_Tensor * max(1, len(args)))()
        for i, (a, (dtype, _)) in enumerate(zip(args, specs), first):
            if getattr(getattr(a, "device", None), "type", "cpu") != "cpu":
                raise ActError(f"argument {i} of the {what} is on {a.device}; the step was "
                               f"compiled for the CPU (from_source(..., device=\"cuda\") "
                               f"takes CUDA tensors)")
            kind = _TORCH_KINDS.get(str(getattr(a, "dtype", None)))
            if (kind is not None and hasattr(a, "data_ptr")
                    and KINDS[kind] is dtype.type and a.is_contiguous()):
                # A contiguous CPU torch tensor of the argument's type: its
                # memory as it is (the common case, without NumPy).
                shape = (ctypes.c_int64 * max(1, a.dim()))(*a.shape)
                keep.append((a, shape))
                tensors[i - first] = _Tensor(kind, a.dim(), shape, a.data_ptr() or None)
                continue
            if hasattr(a, "numpy"):  # a torch tensor: its memory, no copy
                a = a.detach().numpy()
            a = np.asarray(a)
            if a.dtype == np.uint8 and dtype == np.int8:
                a = a.view(np.int8)  # uint8 data as its bytes (the step widens it)
            if a.dtype != dtype:
                raise ActError(f"argument {i} is {a.dtype}, the step takes {dtype}")
            if not a.flags["C_CONTIGUOUS"]:
                a = np.ascontiguousarray(a)
            shape = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
            keep.append((a, shape))
            tensors[i - first] = _Tensor(KINDS.index(dtype.type), a.ndim, shape,
                                         a.ctypes.data_as(ctypes.c_void_p))
        return tensors

    @property
    def bits(self):
        """The widths of the step's run-time-width encodings
        (#act.runtime_quant) for the next runs: {saved id: bits}; {} for a
        step without them."""
        lib = library()
        n = lib.actStepGetBits(self._handle, None, 0)
        widths = (ctypes.c_int32 * max(1, n))()
        lib.actStepGetBits(self._handle, widths, n)
        return {i: int(widths[i]) for i in range(n) if widths[i]}

    def set_bits(self, bits):
        """Sets run-time widths ({saved id: bits}) for the next runs, without
        recompiling; ActError (and no change) for an id without one or a
        width its encoding does not allow."""
        ids = (ctypes.c_int64 * max(1, len(bits)))(*bits.keys())
        widths = (ctypes.c_int32 * max(1, len(bits)))(*bits.values())
        error = ctypes.c_void_p()
        if library().actStepSetBits(self._handle, ids, widths, len(bits), ctypes.byref(error)):
            _check(_Handle(None), error)

    def run(self, args, seed=0):
        """Runs the step on `args` (NumPy arrays or CPU torch tensors,
        contiguous, of the arguments' dtypes: read in place)."""
        keep = []
        tensors = self._tensors(args, keep)
        error = ctypes.c_void_p()
        h = library().actStepRun(self._handle, tensors, len(args), seed, ctypes.byref(error))
        return Run(_check(h, error), self.device == "cuda")

    def forward(self, args, seed=0):
        """Split form: the forward alone (as run() takes its arguments). The
        Run's results are the outputs, then the `num_saved` saved values;
        pass those back to backward() while this Run lives."""
        keep = []
        tensors = self._tensors(args, keep)
        error = ctypes.c_void_p()
        h = library().actStepRunForward(self._handle, tensors, len(args), seed,
                                        ctypes.byref(error))
        return Run(_check(h, error), self.device == "cuda")

    def backward(self, args):
        """Split form: the backward alone on its arguments (the saved values
        a forward() gave, then a tangent per output it takes); the Run's
        results are the gradients."""
        keep = []
        tensors = self._tensors(args, keep, self.backward_arguments, "backward")
        error = ctypes.c_void_p()
        h = library().actStepRunBackward(self._handle, tensors, len(args), ctypes.byref(error))
        return Run(_check(h, error), self.device == "cuda")

    def backward_of(self, forward, args, release_saved=True):
        """Split form: the backward of `forward` (a forward() Run of this
        step) on `args`, the backward's arguments where None is the run's
        saved value at that position (read in C, never copied); with
        `release_saved` the run's saved values are freed after it."""
        keep = []
        specs = self.backward_arguments
        if len(args) != len(specs):
            raise ActError(f"the backward takes {len(specs)} arguments, got {len(args)}")
        given = [i for i, a in enumerate(args) if a is not None]
        tensors = (_Tensor * max(1, len(args)))()
        part = self._tensors([args[i] for i in given], keep, [specs[i] for i in given],
                             "backward")
        for k, i in enumerate(given):
            tensors[i] = part[k]
        error = ctypes.c_void_p()
        h = library().actStepRunBackwardOf(self._handle, forward._memory.handle, tensors,
                                           len(args), int(bool(release_saved)),
                                           ctypes.byref(error))
        if release_saved:
            first = forward.num_results - self.num_saved
            for i in range(first, forward.num_results):
                forward._results[i] = None
        return Run(_check(h, error), self.device == "cuda")

    def _batches(self, batches, keep):
        """`batches` (argument lists, as run() takes them) as the C API's
        array of argument arrays (`keep` holds what it points into)."""
        lists = [self._tensors(args, keep) for args in batches]
        return (ctypes.POINTER(_Tensor) * max(1, len(lists)))(
            *[ctypes.cast(t, ctypes.POINTER(_Tensor)) for t in lists])

    def estimate_sensitivity(self, batches, profile_path, seed=0, estimator="variance",
                             per_tensor_batches=0):
        """GACT's per-tensor sensitivities measured in process on `batches`
        (argument lists, as run() takes them; the step must have stochastic
        encodings), written as a profile to `profile_path` (what
        act-run --sensitivity writes, act-allocate-bits reads). estimator:
        "variance" (GACT's seed re-draws) or "error" (each tensor compressed
        alone against the step without compression: its bias counts too;
        the step's encodings #act.runtime_quant with 32 among their
        widths): act-run's --sensitivity-estimator. per_tensor_batches
        (0: all): the per-tensor evaluations on the first that many
        batches only, the others run once each for the gradient
        variance."""
        keep, error = [], ctypes.c_void_p()
        status = library().actStepEstimateSensitivityWith(
            self._handle, str(estimator).encode(), self._batches(batches, keep), len(batches),
            per_tensor_batches, len(self.arguments), seed, str(profile_path).encode(),
            ctypes.byref(error))
        if status:
            _check(_Handle(None), error)

    def estimate_fewbit_sensitivity(self, batches, profile_path, bits=2):
        """Few-bit codes' gradient error measured in process on `batches`
        against this step (compiled from a graph without encodings), the
        #act.fewbit profile act-allocate-bits reads (what act-run
        --fewbit-sensitivity writes); the variants are compiled on the
        first call for `bits` and kept."""
        keep, error = [], ctypes.c_void_p()
        status = library().actStepEstimateFewBitSensitivity(
            self._handle, bits, self._batches(batches, keep), len(batches),
            len(self.arguments), str(profile_path).encode(), ctypes.byref(error))
        if status:
            _check(_Handle(None), error)

    def measure_variance(self, args, runs, seed=0, reference=None):
        """The compression variance of the step's gradient on `args` over
        `runs` step seeds (act-run --variance-runs), in process: (variance,
        squared norm of the mean gradient, mean squared error against
        `reference`'s gradient or None). `reference`: the CompiledStep of
        the same graph without encodings (act-run --reference)."""
        keep, error = [], ctypes.c_void_p()
        out = [ctypes.c_double() for _ in range(3)]
        status = library().actStepMeasureVariance(
            self._handle, self._tensors(args, keep), len(args), runs, seed,
            reference._handle if reference is not None else _Handle(None),
            *[ctypes.byref(o) for o in out], ctypes.byref(error))
        if status:
            _check(_Handle(None), error)
        return out[0].value, out[1].value, out[2].value if reference is not None else None

    def measure_errors(self, args, width_sets, runs, reference, seed=0):
        """The mean squared error of the step's gradient on `args` against
        `reference`'s (measure_variance's third value) at each of
        `width_sets` (a list of {saved id: bits}, each from the widths the
        step has now, which stay), over the same `runs` step seeds for
        every set; the reference runs once (actStepMeasureErrors)."""
        keep, error = [], ctypes.c_void_p()
        sizes = (ctypes.c_ssize_t * len(width_sets))(*[len(w) for w in width_sets])
        pairs = [(i, b) for w in width_sets for i, b in w.items()]
        ids = (ctypes.c_int64 * max(1, len(pairs)))(*[i for i, _ in pairs])
        bits = (ctypes.c_int32 * max(1, len(pairs)))(*[b for _, b in pairs])
        out = (ctypes.c_double * len(width_sets))()
        if library().actStepMeasureErrors(self._handle, self._tensors(args, keep), len(args),
                                          runs, seed, reference._handle, len(width_sets),
                                          sizes, ids, bits, out, ctypes.byref(error)):
            _check(_Handle(None), error)
        return list(out)

    def __del__(self):
        if getattr(self, "_handle", None) is not None and _lib is not None:
            _lib.actStepDestroy(self._handle)
            self._handle = None


def compile_in_child(path, entry, cache):
    """Compiles the CPU step `path` (its function `entry`, or its training
    graph) into the code cache `cache` in a child process (what
    CompiledStep.from_file does with ACT_COMPILE_IN_CHILD=1 or in_child=True
    where a cache is set), and waits for it. Raises capi.ActError
    with the compiler's message where the step does not compile; a child
    that ends otherwise (killed, out of memory, no interpreter to start)
    leaves the compile to the caller. The child is `python3 -E -S` running
    _ONCE (libActCAPI.so through ctypes, nothing else imported: it starts in
    tens of milliseconds)."""
    try:
        run = subprocess.run([sys.executable, "-E", "-S", "-c", _ONCE, library_path(),
                              cache, str(path), entry or ""], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except OSError:
        return
    if run.returncode == ONCE_FAILED:
        raise ActError(run.stderr.strip())


# compile_in_child's child's status where the step does not compile (its
# error on stderr).
ONCE_FAILED = 3

# compile_in_child's child: LIBRARY CACHE STEP.mlir ENTRY ("": the graph).
_ONCE = r"""
import ctypes, sys
library, cache, path, entry = sys.argv[1:5]
class Handle(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]
lib = ctypes.CDLL(library)
lib.actSetCacheDir.argtypes = [ctypes.c_char_p]
lib.actStepCompileFileOn.restype = Handle
lib.actStepCompileFileOn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_void_p)]
lib.actStepDestroy.argtypes = [Handle]
lib.actSetCacheDir(cache.encode())
error = ctypes.c_void_p()
step = lib.actStepCompileFileOn(path.encode(), entry.encode() or None, b"cpu",
                                ctypes.byref(error))
if not step.ptr:
    sys.stderr.write(ctypes.string_at(error.value).decode() if error.value else "unknown error")
    sys.exit(%d)
lib.actStepDestroy(step)
""" % ONCE_FAILED
