"""The package layout: layers whose imports go one way, and no import cycle between modules.

core <- analysis <- bench; methods and problems build on core and analysis and never import
bench (plug-in discovery is bench's); studies may import every layer; the package root (the
public facade ``impactbench``) may import every layer and only studies import it. The import
graph is read from the sources with ast: every ``import`` and ``from ... import`` statement,
function-level ones and those under ``if TYPE_CHECKING:`` included (a type-only import is a
dependency a reader follows, and a cycle of them is a cycle of the design); imports by name at
run time (``importlib.import_module``) are not seen.

The problems are written as a user writes one: with public names only (no private module of
the package: ``impactbench.core._jit`` and the like), and kernels that read their parameters by
name (``p[MASS]``, the constants given by ``parameter_indices``), never by a literal index.

numba's internals (its private modules, the private options of its compilers) are used only by
the compile boundary, :data:`BOUNDARY`: a numba upgrade that changes them then breaks one module,
pinned and tested against (tests/test_compile_boundary.py).

The methods of methods/ are written as a user writes one, each on one public module, at most 12
names from it, no ``noqa``: the schemes on :mod:`impactbench.core.scheme`
(docs/adding-a-scheme.md), the event-driven method on :mod:`impactbench.core.events`; and
methods/moreau_jean.py, the reference scheme, in at most 150 lines of code.

The event loop (:mod:`impactbench.core.events`, and :mod:`impactbench.core.compiled_rk`, its
Runge-Kutta pairs) is written in small functions: at most 80 lines and 12 parameters each.
"""

from __future__ import annotations

import ast
import io
import tokenize
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
    "bench": {"core", "analysis", "methods", "problems"},
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


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (source ``path``) imports."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
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

#: The modules that may use numba's internals.
BOUNDARY = frozenset({"impactbench.core._jit", "impactbench.core.compilation"})
#: numba's modules that are not its public API (and llvmlite, numba's code generator).
NUMBA_INTERNAL_MODULES = ("numba.core", "numba.extending", "numba.np", "numba.typed", "llvmlite")
#: Attributes of numba's dispatchers and compile results that are not its public API.
NUMBA_INTERNAL_ATTRIBUTES = frozenset(
    {"overloads", "entry_point", "targetoptions", "get_call_template", "enable_caching", "fndesc"}
)
#: Uses of numba's internals pending a move behind the boundary, in modules being rewritten on
#: other branches (issue 39): the lead empties it once they are merged. A module fixed or a use
#: added fails the test either way.
PENDING_NUMBA_INTERNALS: dict[str, set[str]] = {}


def numba_internals(path: Path) -> set[str]:
    """The uses of numba's internals in the source ``path``: imports of (or attribute access to)
    :data:`NUMBA_INTERNAL_MODULES`, as ``numba.core`` etc.; private options (a keyword
    starting with ``_``) passed to numba's compilers, as ``numba.njit(_nrt=...)``; and
    :data:`NUMBA_INTERNAL_ATTRIBUTES` read from any object, as ``.entry_point``."""
    internal = set(NUMBA_INTERNAL_MODULES)

    def matched(module: str) -> str | None:
        for name in internal:
            if module == name or module.startswith(f"{name}."):
                return name
        return None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(filter(None, (matched(alias.name) for alias in node.names)))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            found.update(filter(None, map(matched, modules)))
        elif isinstance(node, ast.Attribute):
            if node.attr in NUMBA_INTERNAL_ATTRIBUTES:
                found.add(f".{node.attr}")
            if isinstance(node.value, ast.Name):
                found.update(filter(None, [matched(f"{node.value.id}.{node.attr}")]))
        elif isinstance(node, ast.Call):
            function = node.func
            name = getattr(function, "attr", getattr(function, "id", None))
            if name in {"njit", "jit", "generated_jit", "cfunc"}:
                for keyword in node.keywords:
                    if keyword.arg and keyword.arg.startswith("_"):
                        found.add(f"numba.{name}({keyword.arg}=...)")
    return found


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


def test_only_the_compile_boundary_uses_numba_internals():
    uses = {}
    for module, path in module_files(package_folders()).items():
        found = numba_internals(path)
        if found and module not in BOUNDARY:
            uses[module] = found
    assert set(BOUNDARY) <= set(GRAPH)
    assert uses == PENDING_NUMBA_INTERNALS, (
        "numba internals outside the compile boundary (impactbench/core/_jit.py, compilation.py) "
        "differ from the pending ones: move a new use behind the boundary, and drop a fixed "
        "module from PENDING_NUMBA_INTERNALS"
    )


def test_the_numba_checker_sees_every_form_of_use(tmp_path):
    source = tmp_path / "uses.py"
    source.write_text(
        "import numba\n"
        "import numba.core.types\n"
        "from numba import extending, njit\n"
        "from numba.np.arrayobj import make_array\n"
        "import llvmlite.ir as ir\n"
        "def f():\n"
        "    return numba.typed.List, njit(_nrt=False, cache=True), numba.njit(nogil=True)\n"
        "def g(dispatcher):\n"
        "    return dispatcher.overloads[dispatcher.signatures[0]].entry_point\n"
    )
    assert numba_internals(source) == {
        "numba.core",
        "numba.extending",
        "numba.np",
        "llvmlite",
        "numba.typed",
        "numba.njit(_nrt=...)",
        ".overloads",
        ".entry_point",
    }
    source.write_text(
        "import numba\nf = numba.njit(cache=True)\nx = numba.typeof(1.0)\ny = f.signatures\n"
    )
    assert numba_internals(source) == set()


def test_the_checker_sees_a_forbidden_import_and_a_cycle(tmp_path):
    """A function-level import closing a cycle, a type-only import, and relative imports across
    layers."""
    for folder in ("core", "bench"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "core" / "a.py").write_text("from . import b\nfrom ..bench.runner import run\n")
    (tmp_path / "core" / "b.py").write_text("def f():\n    from .a import g\n")
    (tmp_path / "core" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import g\n"
    )
    (tmp_path / "core" / "d.py").write_text("from .c import h\n")
    (tmp_path / "bench" / "runner.py").write_text("import impactbench.core.c\n")
    graph = import_graph(
        {
            "impactbench.core": tmp_path / "core",
            "impactbench.bench": tmp_path / "bench",
        }
    )
    assert graph["impactbench.core.a"] == {"impactbench.core.b", "impactbench.bench.runner"}
    assert graph["impactbench.core.c"] == {"impactbench.core.d"}  # a type-only import counts
    assert graph["impactbench.bench.runner"] == {"impactbench.core.c"}
    assert sorted(cycles(graph)) == [
        ["impactbench.core.a", "impactbench.core.b"],
        ["impactbench.core.c", "impactbench.core.d"],
    ]
    assert layer_of("impactbench.bench.runner") == "bench" not in ALLOWED["core"]


#: The layers held to public names only.
PUBLIC_ONLY = ("problems",)


def private_references(path: Path) -> list[str]:
    """The private modules of the package (a dotted name with a segment ``_x``) that the source
    ``path`` imports or names (``impactbench.core._jit.kernel``), as dotted names."""

    def private(dotted: str) -> bool:
        parts = dotted.split(".")
        return parts[0] == TOP and any(p.startswith("_") and p != "__init__" for p in parts)

    def dotted(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:  # relative: a private module name
            names = [f"{TOP}.{node.module or ''}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute):
            names = [dotted(node) or ""]
        found += [name for name in names if private(name)]
    return sorted(set(found))


@pytest.mark.parametrize("layer", PUBLIC_ONLY)
def test_a_public_layer_names_no_private_module(layer):
    for module, path in sorted(module_files(package_folders()).items()):
        if layer_of(module) == layer:
            assert private_references(path) == [], module


def literal_index_reads(tree: ast.AST) -> list[int]:
    """Lines where a kernel reads its parameter vector ``p`` at an index written without a name
    (``p[1]``, ``p[6 + 2 * i]`` has one: ``i``; ``p[WALL_ROWS + 2 * i]`` reads by name)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "p":
            names = [n for n in ast.walk(node.slice) if isinstance(n, ast.Name)]
            if not any(n.id.isupper() for n in names):
                lines.append(node.lineno)
    return lines


def parameter_constants(tree: ast.Module) -> dict[str, set[int]]:
    """Each constant unpacked from ``parameter_indices(NAMES)`` (``NAMES`` a module-level tuple
    of strings) -> the indices it stands for; raises AssertionError for a constant not named
    as its parameter in upper case."""
    tuples = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            values = [getattr(item, "value", None) for item in node.value.elts]
            if values and all(isinstance(value, str) for value in values):
                for target in node.targets:
                    tuples[getattr(target, "id", None)] = values
    constants: dict[str, set[int]] = {}
    for node in tree.body:
        call = getattr(node, "value", None)
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "parameter_indices"):
            continue
        names = tuples[call.args[0].id]
        (target,) = node.targets
        targets = [item.id for item in getattr(target, "elts", [target])]
        assert targets == [name.upper() for name in names], (targets, names)
        for index, constant in enumerate(targets):
            constants.setdefault(constant, set()).add(index)
    return constants


def test_kernels_read_their_parameters_by_name():
    declared = 0
    for module, path in sorted(module_files(package_folders()).items()):
        if layer_of(module) != "problems":
            continue
        tree = ast.parse(path.read_text())
        assert literal_index_reads(tree) == [], module
        constants = parameter_constants(tree)
        # one index per constant: a second tuple naming it elsewhere would move the first's
        assert {name: ix for name, ix in constants.items() if len(ix) > 1} == {}, module
        declared += bool(constants)
    assert declared >= 9  # every module with a problem whose kernels read parameters


def test_the_checkers_see_private_names_and_literal_indices(tmp_path):
    source = tmp_path / "problem.py"
    source.write_text(
        "import impactbench.core._jit\n"
        "from impactbench.core import _checks, problem\n"
        "from impactbench.core._files import x\n"
        "from ..core import _sampled\n"
        "from impactbench.core.kernels import kernel, parameter_indices\n"
        "y = impactbench.core._entry.z\n"
        "PARAMETERS = ('mass', 'gravity')\n"
        "GRAVITY, MASS = parameter_indices(PARAMETERS)\n"
        "def forces(t, q, v, p, out):\n"
        "    out[0] = -p[1] * p[MASS] + p[6 + 2 * i] + p[GRAVITY + 1]\n"
    )
    assert private_references(source) == [
        "impactbench.core._checks",
        "impactbench.core._entry",
        "impactbench.core._entry.z",
        "impactbench.core._files.x",
        "impactbench.core._jit",
        "impactbench.core._sampled",
    ]
    tree = ast.parse(source.read_text())
    assert literal_index_reads(tree) == [10, 10]
    with pytest.raises(AssertionError):
        parameter_constants(tree)  # GRAVITY, MASS unpacked from ("mass", "gravity")
    source.write_text("A = ('a', 'b')\nB = ('b',)\nA_, B_ = 0, 1\nA, B = parameter_indices(A)\n")
    assert parameter_constants(ast.parse(source.read_text())) == {"A": {0}, "B": {1}}
    source.write_text(source.read_text() + "(B,) = parameter_indices(B)\n")
    assert parameter_constants(ast.parse(source.read_text())) == {"A": {0}, "B": {1, 0}}


#: The public modules a method of methods/ is written on: the scheme API
#: (docs/adding-a-scheme.md) and the event-driven method's.
PUBLIC_APIS = ("impactbench.core.scheme", "impactbench.core.events")
SCHEME_API = PUBLIC_APIS[0]
#: Most names a module of methods/ imports from the package.
MOST_SCHEME_NAMES = 12
#: Most code lines (neither blank, comment nor docstring) of methods/moreau_jean.py.
MOST_MOREAU_JEAN_LINES = 150


def package_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every name that the source ``path`` imports from the package
    (``from impactbench.x import y``: (``impactbench.x``, ``y``); ``import impactbench.x``:
    (``impactbench.x``, ``""``)), function-level imports included; relative imports resolve
    to the package ``impactbench.methods``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name.split(".")[0] == TOP]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(filter(None, (f"{TOP}.methods", module)))
            if module.split(".")[0] == TOP:
                found += [(module, alias.name) for alias in node.names]
    return found


def scheme_api_departures(path: Path) -> list[str]:
    """What keeps the module ``path`` of methods/ from being written on one public API alone:
    an import from a module of the package other than those of :data:`PUBLIC_APIS` and
    methods/ itself, imports from two of them, more than :data:`MOST_SCHEME_NAMES` names
    imported from the package, a ``noqa``."""
    imports = package_imports(path)
    modules = {module for module, _ in imports}
    found = sorted(
        f"imports {module}"
        for module in modules
        if module not in PUBLIC_APIS and not module.startswith(f"{TOP}.methods")
    )
    apis = sorted(modules & set(PUBLIC_APIS))
    if len(apis) > 1:
        found.append(f"imports {' and '.join(apis)}")
    for api in apis:
        names = [name for module, name in imports if module == api]
        if len(names) > MOST_SCHEME_NAMES:
            found.append(f"{len(names)} names from {api}")
    if "noqa" in path.read_text():
        found.append("noqa")
    return found


def code_lines(path: Path) -> int:
    """The lines of the source ``path`` that hold code: neither blank, nor comment only, nor
    part of a docstring (of the module, a class or a function)."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def test_the_methods_are_written_on_the_public_apis():
    departures = {}
    apis = set()
    for module, path in sorted(module_files(package_folders()).items()):
        if layer_of(module) == "methods" and path.stem != "__init__":  # the name table apart
            found = scheme_api_departures(path)
            if found:
                departures[module] = found
            apis.update(module for module, _ in package_imports(path))
    assert departures == {}
    assert set(PUBLIC_APIS) <= apis  # both in use: the event-driven method on its own


def test_moreau_jean_is_at_most_150_code_lines():
    path = package_folders()["impactbench.methods"] / "moreau_jean.py"
    assert code_lines(path) <= MOST_MOREAU_JEAN_LINES


def test_the_scheme_api_checkers_see_what_they_count(tmp_path):
    source = tmp_path / "scheme.py"
    names = ", ".join(f"n{i}" for i in range(13))
    source.write_text(
        '"""Doc\n\nstring."""\n'
        "import math\n"
        f"from impactbench.core.scheme import ({names})\n"
        "from impactbench.core import _checks\n"
        "from .moreau_jean import velocity_step\n"
        "\n"
        "# a comment\n"
        "def f(x):  # noqa: N803\n"
        '    """Doc."""\n'
        "    import impactbench.core.friction\n"
        "    return (x +\n"
        "            1)\n"
    )
    assert scheme_api_departures(source) == [
        "imports impactbench.core",
        "imports impactbench.core.friction",
        f"13 names from {SCHEME_API}",
        "noqa",
    ]
    assert code_lines(source) == 8
    names = ", ".join(f"n{i}" for i in range(13))
    source.write_text(
        f"from impactbench.core.events import ({names})\n"
        "from impactbench.core.events.engine import bind\n"
        "from impactbench.core.scheme import Scheme\n"
        "from impactbench.core.events import plain\n"
    )
    assert scheme_api_departures(source) == [
        "imports impactbench.core.events.engine",
        "imports impactbench.core.events and impactbench.core.scheme",
        "14 names from impactbench.core.events",
    ]
    source.write_text(f"from impactbench.core.events import ({names[:-5]})\n")
    assert scheme_api_departures(source) == []


#: The event loop: its modules, and those of its Runge-Kutta pairs, held to small functions.
EVENT_LOOP = ("impactbench/core/events", "impactbench/core/compiled_rk.py")
#: Most lines of a function of the event loop (``def`` to its last line, docstring included).
MOST_FUNCTION_LINES = 80
#: Most parameters of a function of the event loop (``self``, ``*args`` and ``**kwargs`` count).
MOST_PARAMETERS = 12


def long_functions(path: Path) -> list[str]:
    """The functions and methods of the source ``path`` over :data:`MOST_FUNCTION_LINES` lines
    or :data:`MOST_PARAMETERS` parameters, as ``"name: N lines"``, ``"name: N parameters"``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MOST_FUNCTION_LINES:
                found.append(f"{node.name}: {lines} lines")
            arguments = node.args
            count = len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs)
            count += (arguments.vararg is not None) + (arguments.kwarg is not None)
            if count > MOST_PARAMETERS:
                found.append(f"{node.name}: {count} parameters")
    return found


def test_the_event_loop_is_written_in_small_functions():
    paths = []
    for name in EVENT_LOOP:
        path = ROOT / name
        paths += sorted(path.glob("*.py")) if path.is_dir() else [path]
    assert len(paths) >= 10  # the folder's modules are all seen
    found = {str(path.relative_to(ROOT)): long_functions(path) for path in paths}
    assert {name: functions for name, functions in found.items() if functions} == {}


def test_the_function_checker_counts_lines_and_parameters(tmp_path):
    source = tmp_path / "loop.py"
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    twelve = ", ".join(f"a{i}" for i in range(12))
    source.write_text(
        f"def fits({twelve}):\n{body}\n"  # 80 lines, 12 parameters
        f"def too_long():\n{body}    return 1\n\n"
        f"class C:\n    def method(self, {twelve}):\n        pass\n\n"
        f"def starred(a, *args, b, **kwargs):\n    async def inner({twelve}, c):\n        pass\n"
    )
    assert long_functions(source) == [
        "too_long: 81 lines",
        "method: 13 parameters",
        "inner: 13 parameters",
    ]
