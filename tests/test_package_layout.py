"""The package reads as its pipeline: one folder per stage, imports flowing one way, a module a concept.

The import graph is built from the source with the standard library's ``ast`` (every ``import``,
module-level or inside a function), so nothing is imported to check it. A stage may import itself
and the stages before it in STAGES, never one after it; the graph has no cycle at all. Every
module's docstring examples run in tests/test_doctests.py.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gemmgen"
# The pipeline, in order. "gemmgen" is the package's own __init__: the public names, over every stage.
# "torch" (gemmgen.torch, the PyTorch operators) comes after the runtime it calls, and is imported only on
# request: the package's __init__ never imports it, so `import gemmgen` works without PyTorch.
STAGES = ("base", "kernel", "codegen", "build", "measure", "tune", "records", "runtime", "torch", "gemmgen", "cli")
OPTIONAL = {"torch": "torch"}   # stage -> the package its modules need (their doctests skip without it)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> str:
    """The stage folder a module lives in ("gemmgen" for the package's __init__; "cli" for its
    __main__, which is `python -m gemmgen`: the command line)."""
    parts = module.split(".")
    if parts[1:] == ["__main__"]:
        return "cli"
    return parts[1] if len(parts) > 1 else parts[0]


def imported(module: str) -> set[str]:
    """Names of the gemmgen modules ``module`` imports (``from . import x`` names the submodule x)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "gemmgen")
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] == "gemmgen":
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    found.discard(module)
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


GRAPH = {m: imported(m) for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_checks_can_fail():
    """The helpers see a cycle, a relative import and a later stage when there is one."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    node = ast.parse("from ..kernel.config import KernelConfig").body[0]
    assert _absolute(node, "gemmgen.codegen") == "gemmgen.kernel.config"
    assert STAGES.index(stage_of("gemmgen.cli.emit")) > STAGES.index(stage_of("gemmgen.codegen.render"))
    assert "gemmgen.kernel.config" in GRAPH["gemmgen.codegen.render"]


def test_optional_stages_are_imported_on_request_only():
    """Nothing outside gemmgen.torch imports it (so `import gemmgen` never needs PyTorch)."""
    users = sorted(m for m, deps in GRAPH.items() if stage_of(m) not in OPTIONAL
                   for d in deps if stage_of(d) in OPTIONAL)
    assert not users, f"modules importing an optional stage ({', '.join(OPTIONAL)}): {users}"


def test_every_module_lives_in_a_stage_folder():
    strays = [m for m in MODULES if stage_of(m) not in STAGES]
    assert not strays, f"modules outside the stage folders {STAGES}: {strays}"


def test_every_import_names_a_module_that_exists():
    missing = {m: sorted(d - set(MODULES)) for m, d in GRAPH.items() if d - set(MODULES)}
    assert not missing, f"imports of gemmgen modules that do not exist: {missing}"


def test_the_import_graph_has_no_cycle():
    assert cycles(GRAPH) == [], "import cycles (each list imports itself round): " + repr(cycles(GRAPH))


def test_no_stage_imports_a_later_stage():
    order = {stage: i for i, stage in enumerate(STAGES)}
    back = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
                  if d in MODULES and order[stage_of(d)] > order[stage_of(m)])
    assert not back, "imports from an earlier stage to a later one:\n  " + "\n  ".join(back)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_says_its_concept(module):
    """A module is one concept, whatever its length: its docstring's first line names it (a module made
    to stay under a line count has no concept of its own to name)."""
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text())) or ""
    assert doc.strip().splitlines()[:1] and len(doc.split()) >= 4, f"{MODULES[module]}: no docstring saying what it is"


def test_each_stage_says_what_it_offers():
    for stage in STAGES[:-2] + ("cli",):
        init = PACKAGE / stage / "__init__.py"
        assert init.is_file() and ast.get_docstring(ast.parse(init.read_text())), f"{init} has no docstring"
