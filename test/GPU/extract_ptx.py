#!/usr/bin/env python3
"""Writes the PTX of every gpu.binary in an MLIR file to OUT_DIR/<name>.ptx.

    extract_ptx.py INPUT.mlir OUT_DIR

The PTX is the assembly string of each #gpu.object (act-gpu-pipeline with
format=isa), with MLIR's string escapes (\\XX hex, \\\\, \\") undone. Prints
the number of files written; fails if there are none.
"""

import os
import re
import sys

OBJECT = re.compile(
    r'gpu\.binary @(\w+)\s*\[#gpu\.object<#nvvm\.target<[^>]*>,[^"]*?'
    r'(?:assembly = )?"((?:[^"\\]|\\.)*)"')


def unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        if s[i] == "\\":
            if s[i + 1] in '\\"':
                out.append(ord(s[i + 1]))
                i += 2
            else:
                out.append(int(s[i + 1:i + 3], 16))
                i += 3
        else:
            out.append(ord(s[i]))
            i += 1
    return out.decode()


def main():
    text = open(sys.argv[1]).read()
    os.makedirs(sys.argv[2], exist_ok=True)
    count = 0
    for m in OBJECT.finditer(text):
        with open(os.path.join(sys.argv[2], m.group(1) + ".ptx"), "w") as f:
            f.write(unescape(m.group(2)))
        count += 1
    if count == 0:
        sys.exit("no gpu.binary with PTX in " + sys.argv[1])
    print(f"{count} kernels")


if __name__ == "__main__":
    main()
