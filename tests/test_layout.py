"""The package layout: three layers whose imports go one way (core <- analysis <- bench)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "impactbench"
#: Each layer and the layers it may import from (besides itself).
ALLOWED = {"core": set(), "analysis": {"core"}, "bench": {"core", "analysis"}}


def _imported_layers(path: Path, layer: str) -> set[str]:
    """The impactbench layers a module imports from (absolute or relative imports)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("impactbench"):
                parts = node.module.split(".")
            elif node.level == 1:
                parts = ["impactbench", layer, *(node.module or "").split(".")]
            elif node.level == 2:
                parts = ["impactbench", *(node.module or "").split(".")]
            else:
                continue
            names = [alias.name for alias in node.names]
            if len(parts) >= 2 and parts[1]:
                found.add(parts[1])
            else:  # from .. import x: x is a layer or a top-level name of impactbench
                found.update(names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "impactbench" and len(parts) >= 2:
                    found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_go_one_way(layer):
    for path in sorted((PACKAGE / layer).glob("*.py")):
        layers = _imported_layers(path, layer) & set(ALLOWED)
        forbidden = layers - ALLOWED[layer] - {layer}
        assert not forbidden, f"{path.name} ({layer}) imports {sorted(forbidden)}"


def test_top_level_holds_no_module_but_the_entry_points():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_checker_sees_a_forbidden_import(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("from ..bench.runner import execute\nfrom .trajectory import Trajectory\n")
    assert _imported_layers(module, "core") == {"bench", "core"}
