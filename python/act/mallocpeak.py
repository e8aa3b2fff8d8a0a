"""The heap peak of a process, measured by the preloaded counter
(bench/memory/malloc_peak.c, build/lib/libact_malloc_peak.so): what
PyTorch eager's step allocates at once, measured as act measures its own
steps (every block's usable size, live and peak).

    python3 -m act.mallocpeak SCRIPT.py [ARGS]   # runs SCRIPT with the counter

and, in a process started so (or by run()):

    from act import mallocpeak
    mallocpeak.reset()
    ...                                          # the step
    mallocpeak.peak() - before                   # its peak above what was live

The counter must be loaded when the process starts (LD_PRELOAD); run()
and the command line start one so. ACT_LIB_DIR names the library's
directory (default: the repository's build/lib)."""

import ctypes
import os
import runpy
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "libact_malloc_peak.so"


def library_path():
    path = os.path.join(os.environ.get("ACT_LIB_DIR", os.path.join(ROOT, "build", "lib")), NAME)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: build act (scripts/setup.sh) or set "
                                f"ACT_LIB_DIR")
    return os.path.abspath(path)


def _counter():
    process = ctypes.CDLL(None)
    try:
        functions = [getattr(process, f"act_malloc_peak_{n}") for n in ("live", "get", "reset")]
    except AttributeError:
        return None
    for f in functions[:2]:
        f.restype = ctypes.c_int64
    return functions


def available():
    """Whether this process runs with the counter preloaded."""
    return _counter() is not None


def _functions():
    functions = _counter()
    if functions is None:
        raise RuntimeError("the heap counter is not loaded in this process: start it with "
                           "LD_PRELOAD=" + NAME + " (act.mallocpeak.run, or python3 -m "
                           "act.mallocpeak SCRIPT)")
    return functions


def live():
    """Bytes allocated now."""
    return _functions()[0]()


def peak():
    """The most bytes allocated at once since the last reset()."""
    return _functions()[1]()


def reset():
    """The peak starts again from what is live now."""
    _functions()[2]()


def environment(env=None):
    """`env` (default: this process's) with the counter preloaded."""
    env = dict(os.environ if env is None else env)
    preload = [p for p in env.get("LD_PRELOAD", "").split() if p]
    env["LD_PRELOAD"] = " ".join([library_path()] + preload)
    return env


def run(argv, **kwargs):
    """subprocess.run(argv) with the counter preloaded."""
    return subprocess.run(argv, env=environment(kwargs.pop("env", None)), **kwargs)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.exit("usage: python3 -m act.mallocpeak SCRIPT.py [ARGS]")
    if not available():
        sys.exit(run([sys.executable, "-m", "act.mallocpeak", *argv]).returncode)
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
