"""Counts a PTX kernel's global loads and stores (vector and scalar) and
warp shuffles, with the shuffles' butterfly offsets, for FileCheck."""
import re
import sys

text = open(sys.argv[1]).read()
def count(pattern):
    return len(re.findall(r"^\s*" + re.escape(pattern) + r"\s", text, re.M))

offsets = sorted({int(m) for m in re.findall(
    r"^\s*shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, (\d+),", text, re.M)})
print("ld.global.v4.b32", count("ld.global.v4.b32"))
print("ld.global.b32", count("ld.global.b32"))
shuffles = count("shfl.sync.bfly.b32")
print("shfl.sync.bfly.b32", shuffles,
      ("offsets " + " ".join(map(str, offsets))) if shuffles else "")
print("st.global.v4.b32", count("st.global.v4.b32"))
print("st.global.b32", count("st.global.b32"))
print("st.global.b8", count("st.global.b8"))
