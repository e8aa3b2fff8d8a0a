"""Steps compiled ahead, in a background process (act.compile's
compile_ahead=): after the first step compiles, the steps a training loop
will want next (the step for every batch size, for the partial last batch;
the forward-only step in eval mode, for evaluation) are compiled by a
second process into the code cache, so that this process loads them from
there when a batch first needs them instead of compiling.

A process, not a thread: the compile's memory (hundreds of MB for a
ResNet) is not this process's, it runs at a lower priority than the
training loop, and it can be stopped at any point (when the step is
destroyed, or the process exits) without waiting for LLVM.

    python3 -m act.ahead PARENT_PID CACHE_DIR STEP.mlir...   # the background process

capi.compile_in_child: one step compiled by a child process while the
caller waits (CompiledStep.from_file with ACT_COMPILE_IN_CHILD=1).
"""

import ctypes
import os
import signal
import subprocess
import sys

from . import capi

# Beside each step the background process is done with: compiled (in the
# cache) or failed (the message; the step is then compiled, and its error
# reported, where it is needed).
COMPILED, FAILED = ".compiled", ".failed"


class Ahead:
    """A background process compiling `paths`, in order, into the code
    cache `cache` (CompiledStep.from_file there, the step then discarded)."""

    def __init__(self, paths, cache):
        self.paths, self.cache = list(paths), cache
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=here + (os.pathsep + path if path else ""))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "act.ahead", str(os.getpid()), cache, *self.paths],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)

    def done(self, path):
        """Whether the process is done with `path` (or gone)."""
        return (os.path.exists(path + COMPILED) or os.path.exists(path + FAILED)
                or self.process.poll() is not None)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _end_with_parent(parent):
    """This process ends when `parent` does (Linux's parent-death signal)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # (it ended before the signal was asked for)
        sys.exit(0)


def main(argv):
    parent, cache, paths = int(argv[0]), argv[1], argv[2:]
    _end_with_parent(parent)
    try:
        os.nice(10)  # (the training loop first)
    except OSError:
        pass
    capi.set_cache_dir(cache)
    for path in paths:
        try:
            capi.CompiledStep.from_file(path, in_child=False)
            marker, text = COMPILED, ""
        except capi.ActError as e:
            marker, text = FAILED, str(e)
        with open(path + marker, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
