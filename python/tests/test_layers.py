"""act's Python package in layers (docs/Design.md, "The Python package"):
every module imports only modules of its own layer or the layers below,
and no module imports act's own modules inside a function (an import put
there to dodge a cycle). Read from the source with ast, nothing imported.
"""
import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "act")

# Lowest first. A module not listed fails the test: a new module gets a layer.
LAYERS = [
    ("base: no act imports but each other's", [
        "act.errors", "act.dtypes", "act.mlir", "act.torchversion", "act.workload",
        "act.process", "act.pfq", "act.memory_plot", "act.mallocpeak", "act.dlpack"]),
    ("front end: tracing, decompositions, lowering to MLIR", [
        "act.decomp", "act.aten", "act.aten.*", "act.export", "act.export.standins",
        "act.export.randomness",
        "act.export.trace", "act.export.dynamic", "act.export.emit"]),
    ("backend: the C API and the tools", ["act.capi", "act.driver", "act.ahead"]),
    ("training and tuning", ["act.training", "act.module", "act.dfq", "act.tune"]),
    ("models and command lines", [
        "act", "act.models", "act.zoo", "act.zoo.*", "act.export.cli", "act.export.__main__",
        "act.tune.__main__", "act.oracle", "act.train", "act.peer"]),
]

# Imports inside functions that are not there to break a cycle: `import
# act` stays fast (act.compile and act.Module load torch and the exporter
# on first use).
LAZY = {("act", "act.training"), ("act", "act.module")}


def modules():
    """Every module of the package: its dotted name and path."""
    out = {}
    for root, _, files in os.walk(PACKAGE):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = path
    return out


def layer_of(name):
    for i, (_, names) in enumerate(LAYERS):
        for pattern in names:
            if pattern == name or (pattern.endswith(".*") and name.startswith(pattern[:-1])):
                return i
    return None


def act_imports(name, path, known):
    """(imported act module, line, inside a function) for every import of
    act's own modules in `path` (`known`: modules()); `from . import x`
    counts as act.x when x is a module."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "act" or alias.name.startswith("act."):
                        found.append((alias.name, child.lineno, inside))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target == "act" or target.startswith("act."):
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        found.append((sub if sub in known else target, child.lineno, inside))
            visit(child, inside)

    visit(tree, False)
    return found


def test_every_module_has_a_layer():
    missing = sorted(n for n in modules() if layer_of(n) is None)
    assert not missing, f"modules without a layer in test_layers.LAYERS: {missing}"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    known = modules()
    for name, path in sorted(known.items()):
        mine = layer_of(name)
        for target, line, _ in act_imports(name, path, known):
            # Importing act.x.y runs act.x's __init__ too.
            parts = target.split(".")
            for k in range(2, len(parts) + 1):
                theirs = layer_of(".".join(parts[:k]))
                if theirs is not None and theirs > mine and not name.startswith(
                        ".".join(parts[:k]) + "."):
                    upward.append(f"{os.path.relpath(path, PACKAGE)}:{line}: {name} "
                                  f"({LAYERS[mine][0].split(':')[0]}) imports "
                                  f"{'.'.join(parts[:k])} ({LAYERS[theirs][0].split(':')[0]})")
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_import_of_act_inside_a_function():
    known = modules()
    inside = [f"{os.path.relpath(path, PACKAGE)}:{line}: {name} imports {target}"
              for name, path in sorted(known.items())
              for target, line, in_function in act_imports(name, path, known)
              if in_function and (name, target) not in LAZY]
    assert not inside, "act modules imported inside functions:\n" + "\n".join(inside)


@pytest.mark.parametrize("source, expected", [
    ("from .export import Traced\n", [("act.export", 1, False)]),
    ("def f():\n    from . import capi\n", [("act.capi", 2, True)]),
    ("from ..aten.core import lowering\n", [("act.aten.core", 1, False)]),
])
def test_the_walk_sees_relative_and_nested_imports(tmp_path, source, expected):
    """The checker itself: a relative import resolves against the module's
    package, an import in a function is marked so (a check that could
    never fail would prove nothing)."""
    path = tmp_path / "probe.py"
    path.write_text(source)
    name = "act.export.probe" if source.startswith("from ..") else "act.probe"
    assert act_imports(name, str(path), modules()) == expected
