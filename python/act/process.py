"""The process's own resources."""

import ctypes
import gc
import re

_libc = None

# The compiler's shared libraries (libActCAPI.so links them): LLVM's and
# MLIR's code and read-only data, which compiling, and even loading them,
# makes resident (about 100 MiB) and a training step never runs.
COMPILER_LIBRARIES = re.compile(r"/lib(LLVM|MLIR)[^/]*\.so[^/]*$")
MADV_DONTNEED = 4


def _load_libc():
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6", use_errno=True)
        except OSError:
            _libc = False
    return _libc


def compiler_pages(smaps="/proc/self/smaps", resident_only=True):
    """The mappings of the compiler's libraries whose pages can leave the
    resident set: [(start, end, resident bytes)] of each read-only mapping
    none of whose pages is the process's own copy (`Anonymous: 0`: every
    page is the file's, as the kernel reads it again on the next touch).
    Writable mappings and relocated read-only data (copies) are kept.
    resident_only: only those with resident pages."""
    found, current = [], None
    try:
        with open(smaps) as f:
            for line in f:
                head = line.split(None, 5)
                if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    current = None
                    if len(head) == 6 and COMPILER_LIBRARIES.search(head[5].strip()) \
                            and "w" not in head[1]:
                        start, end = (int(v, 16) for v in head[0].split("-"))
                        current = [start, end, 0, True]
                        found.append(current)
                elif current is not None and head[0] == "Rss:":
                    current[2] = int(head[1]) * 1024
                elif current is not None and head[0] == "Anonymous:" and int(head[1]):
                    current[3] = False
    except OSError:
        return []
    return [(start, end, rss) for start, end, rss, pristine in found
            if pristine and (rss or not resident_only)]


# compiler_pages' mappings, found once the libraries are loaded (a read of
# /proc/self/smaps costs 50 ms beside torch's hundreds of mappings; the
# libraries' read-only mappings, and which of them hold copies, do not
# change once loaded).
_compiler_mappings = None


def release_compiler_pages():
    """Drops the compiler's resident code and read-only data from the
    process's resident set after a compile or a load from the code cache
    (madvise MADV_DONTNEED on the unmodified read-only mappings of libLLVM
    and libMLIR, compiler_pages: the next use reads them again from the
    page cache, as after a fresh start). Returns the mappings advised."""
    global _compiler_mappings
    libc = _load_libc()
    if not libc or not hasattr(libc, "madvise"):
        return 0
    if not _compiler_mappings:
        _compiler_mappings = compiler_pages(resident_only=False)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return sum(libc.madvise(start, end - start, MADV_DONTNEED) == 0
               for start, end, _ in _compiler_mappings)


def release_freed_memory():
    """Gives the memory the process has freed back to the system (Python's
    cycles collected, then glibc's malloc_trim): tracing a step and
    compiling it free hundreds of MB (the fmnist-cnn at batch 128: 570 MiB
    resident after its export, 300 once trimmed) that glibc would otherwise
    keep resident, and count in the process's peak, for the rest of the
    run. Called after each export and each compile (docs/benchmarks.md,
    "The memory a user sees")."""
    gc.collect()
    libc = _load_libc()
    if libc and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
