"""README's example output is what the command prints today: finds the
README's fenced block that starts with `$ COMMAND`, runs COMMAND from the
repository root (build/bin/ replaced by the build's tools) and compares the
block's lines with the first lines of the output (trailing spaces ignored).

    readme_example.py README.md BIN_DIR 'build/bin/act-opt examples/cnn.mlir ...'
"""

import shlex
import subprocess
import sys


def main(readme, bin_dir, command):
    text = open(readme).read()
    start = text.find("$ " + command + "\n")
    if start < 0:
        sys.exit(f"no block starting with '$ {command}' in {readme}")
    block = text[start:text.index("```", start)].splitlines()[1:]
    argv = shlex.split(command)
    argv[0] = argv[0].replace("build/bin", bin_dir, 1)
    root = readme.rsplit("/", 1)[0] if "/" in readme else "."
    run = subprocess.run(argv, cwd=root, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"'{command}' failed:\n{run.stderr}")
    out = (run.stdout + run.stderr).splitlines()
    for i, line in enumerate(block):
        got = out[i].rstrip() if i < len(out) else "<no line>"
        if line.rstrip() != got:
            sys.exit(f"{readme}: line {i + 1} of the example differs from the tool's:\n"
                     f"  README: {line}\n  tool:   {got}")
    print(f"{len(block)} lines of README's example match '{command}'")


if __name__ == "__main__":
    main(*sys.argv[1:])
