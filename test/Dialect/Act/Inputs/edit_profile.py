"""Edits a profile for the allocate-bits tests:
edit_profile.py IN OUT [path=json-value ...] [drop=tensor-index]
                [unset=path] [raw=TEXT]
path: dotted keys, list indices as numbers (tensors.0.sensitivity)."""
import json
import sys

src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
p = json.load(open(src))
for e in edits:
    key, value = e.split("=", 1)
    if key == "raw":
        open(dst, "w").write(value)
        sys.exit(0)
    if key == "drop":
        del p["tensors"][int(value)]
        continue
    unset = key == "unset"
    *parents, last = (value if unset else key).split(".")
    node = p
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if unset:
        del node[last]
        continue
    node[int(last) if isinstance(node, list) else last] = json.loads(value)
json.dump(p, open(dst, "w"))
