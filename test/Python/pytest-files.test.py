"""Checks that the lit tests given run every python/tests/test_*.py once."""
import glob
import os
import re
import sys

tests_dir, lit_files = sys.argv[1], sys.argv[2:]
present = {os.path.basename(f) for f in glob.glob(os.path.join(tests_dir, "test_*.py"))}
named = {}
for lit_file in lit_files:
    with open(lit_file) as f:
        for name in re.findall(r"%act_src/python/tests/(test_\w+\.py)", f.read()):
            named.setdefault(name, []).append(os.path.basename(lit_file))
errors = [f"{name}: run by no lit test" for name in sorted(present - named.keys())]
errors += [f"{name}: named in {', '.join(where)}, which does not exist"
           for name, where in sorted(named.items()) if name not in present]
errors += [f"{name}: run twice ({', '.join(where)})"
           for name, where in sorted(named.items()) if len(where) > 1]
if errors:
    sys.exit("pytest-files: " + "; ".join(errors))
print(f"pytest files: {len(present)}, each in one lit test")
