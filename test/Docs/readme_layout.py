"""README's layout table against the tree: each Passes.td's passes are named
in the table row of its folder, and every folder under lib/ has a row."""
import os
import re
import sys

src = sys.argv[1]
readme = open(os.path.join(src, "README.md")).read()
rows = [line for line in readme.splitlines() if line.startswith("| `")]
failures = []
for td, folder in (("include/act/Dialect/Act/Transforms/Passes.td", "lib/Dialect/Act/Transforms"),
                   ("include/act/Codegen/Passes.td", "lib/Codegen"),
                   ("include/act/Conversion/Passes.td", "lib/Conversion")):
    names = re.findall(r'Pass<"([a-z0-9-]+)"', open(os.path.join(src, td)).read())
    # The rows of the folder and of the folders below it.
    cell = " ".join(r.split("|")[2] for r in rows if f"`{folder}" in r.split("|")[1])
    if not cell:
        failures.append(f"README's layout table has no row for {folder}")
        continue
    failures += [f"{folder}: pass `{n}` ({td}) is not in its README row"
                 for n in names if f"`{n}`" not in cell]
    print(f"{folder}: {len(names)} passes")
for name in sorted(os.listdir(os.path.join(src, "lib"))):
    if os.path.isdir(os.path.join(src, "lib", name)) and f"lib/{name}" not in readme:
        failures.append(f"README does not mention lib/{name}")
for f in failures:
    print("error:", f)
sys.exit(1 if failures else 0)
