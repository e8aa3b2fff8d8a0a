"""Per host function of an act-gpu-pipeline output (LLVM dialect): kernel
launches, allocations through the runtime hooks, copies and loads and stores
(host code that reads or writes a buffer: a caller's device buffers fault),
for FileCheck.
Usage: launches.py FILE REGEX (function names to report)."""
import re
import sys

text = open(sys.argv[1]).read()
pattern = re.compile(sys.argv[2])
for match in re.finditer(r"llvm\.func @(\w+)\(", text):
    name = match.group(1)
    if not pattern.fullmatch(name):
        continue
    end = text.find("\n  }\n", match.start())
    body = text[match.start():end]
    print(name, "launches", body.count("gpu.launch_func"),
          "allocs", body.count("_mlir_memref_to_llvm_aligned_alloc"),
          "copies", body.count("memrefCopy") + body.count("memcpy"),
          "accesses", body.count("llvm.load") + body.count("llvm.store"))
