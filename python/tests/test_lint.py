"""pyflakes (Debian's python3-pyflakes) over act's Python: the package, its
tests and the benchmarks. A finding on a line marked `# noqa` is deliberate
(an import for its side effect, a star import that registers lowerings);
pyflakes itself does not read the mark, so this test does."""
import os

import pytest

pyflakes = pytest.importorskip("pyflakes.api", reason="python3-pyflakes (scripts/setup.sh)")
from pyflakes import reporter as pyflakes_reporter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ["python/act", "python/tests", "bench", "scripts", "test"]


class Collect(pyflakes_reporter.Reporter):
    def __init__(self):
        self.found = []

    def unexpectedError(self, filename, msg):
        self.found.append(f"{filename}: {msg}")

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: {msg}")

    def flake(self, message):
        self.found.append(message)


def findings(path):
    with open(path) as f:
        source = f.read()
    collect = Collect()
    pyflakes.check(source, path, collect)
    lines = source.splitlines()
    return [str(m) if not isinstance(m, str) else m for m in collect.found
            if isinstance(m, str) or "# noqa" not in lines[m.lineno - 1]]


def python_files():
    for tree in TREES:
        for root, dirs, files in os.walk(os.path.join(ROOT, tree)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "Output")]
            # lit.cfg.py runs with lit's globals (config, lit_config) in scope.
            yield from (os.path.join(root, f) for f in sorted(files)
                        if f.endswith(".py") and not f.startswith("lit."))


def test_pyflakes_finds_nothing():
    found = [f for path in python_files() for f in findings(path)]
    assert not found, "pyflakes:\n" + "\n".join(found)


def test_the_lint_sees_an_unused_import(tmp_path):
    """The check can fail: an unused import is found, and a `# noqa` line
    is not."""
    path = tmp_path / "probe.py"
    path.write_text("import os\nimport sys  # noqa: F401 (deliberate)\n")
    found = findings(str(path))
    assert len(found) == 1 and "'os' imported but unused" in found[0], found
