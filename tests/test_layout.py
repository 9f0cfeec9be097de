"""The package layout: layers whose imports go one way, and no import cycle between modules.

core <- analysis <- bench; methods and problems build on core and analysis and never import
bench (plug-in discovery is bench's); studies may import every layer; the package root (the
public facade ``impactbench``) may import every layer and only studies import it. The import
graph is read from the sources with ast: every ``import`` and ``from ... import`` statement,
function-level ones included, but not those under ``if TYPE_CHECKING:`` (never executed);
imports by name at run time (``importlib.import_module``) are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The name of the layer of the package root (``impactbench/__init__.py``, ``__main__.py``).
TOP = "impactbench"
#: Each layer and the layers it may import from (besides itself).
ALLOWED = {
    "core": set(),
    "analysis": {"core"},
    "methods": {"core", "analysis"},
    "problems": {"core", "analysis"},
    "bench": {"core", "analysis", "methods", "problems", "studies"},
    "studies": {"core", "analysis", "bench", "methods", "problems", TOP},
    TOP: {"core", "analysis", "bench", "methods", "problems", "studies"},
}


def package_folders() -> dict[str, Path]:
    """Every package of the distribution (pyproject.toml) and its source folder."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = setup.get("package-dir", {})
    return {
        package: ROOT / folders.get(package, package.replace(".", "/"))
        for package in setup["packages"]
    }


def module_files(folders: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the packages ``folders``."""
    modules = {}
    for package, folder in folders.items():
        for path in sorted(folder.glob("*.py")):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (source ``path``) imports."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:  # a submodule, else a name of the module
                child = f"{source}.{alias.name}"
                found.add(child if child in known else source)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found & known


def import_graph(folders: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, over the packages ``folders``."""
    files = module_files(folders)
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else TOP


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one importing itself
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


GRAPH = import_graph(package_folders())


def test_every_package_is_in_a_layer():
    layers = {layer_of(package) for package in package_folders()}
    assert layers == set(ALLOWED)
    for layer in ALLOWED:  # and every layer has modules to check
        assert any(layer_of(module) == layer for module in GRAPH), layer


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_go_one_way(layer):
    for module in sorted(name for name in GRAPH if layer_of(name) == layer):
        forbidden = {layer_of(target) for target in GRAPH[module]} - ALLOWED[layer] - {layer}
        assert not forbidden, f"{module} ({layer}) imports {sorted(forbidden)}"


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_top_level_holds_no_module_but_the_entry_points():
    names = sorted(p.name for p in (ROOT / "impactbench").glob("*.py"))
    assert names == ["__init__.py", "__main__.py"]


def test_the_checker_sees_a_forbidden_import_and_a_cycle(tmp_path):
    """A function-level import closing a cycle, and relative imports across layers."""
    for folder in ("core", "bench"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "core" / "a.py").write_text("from . import b\nfrom ..bench.runner import run\n")
    (tmp_path / "core" / "b.py").write_text("def f():\n    from .a import g\n")
    (tmp_path / "core" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import g\n"
    )
    (tmp_path / "bench" / "runner.py").write_text("import impactbench.core.c\n")
    graph = import_graph(
        {
            "impactbench.core": tmp_path / "core",
            "impactbench.bench": tmp_path / "bench",
        }
    )
    assert graph["impactbench.core.a"] == {"impactbench.core.b", "impactbench.bench.runner"}
    assert graph["impactbench.core.c"] == set()
    assert graph["impactbench.bench.runner"] == {"impactbench.core.c"}
    assert cycles(graph) == [["impactbench.core.a", "impactbench.core.b"]]
    assert layer_of("impactbench.bench.runner") == "bench" not in ALLOWED["core"]
