"""The user documentation's Python examples run as written (docs/*.md, every ```python block of
a page executed in order in one namespace, in a scratch folder)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    return BLOCK.findall(page.read_text())


def test_adding_a_method_has_the_complete_example():
    blocks = python_blocks(DOCS / "adding-a-method.md")
    assert len(blocks) == 3 and "class SymplecticEuler(ib.Method)" in blocks[0]


def test_adding_a_scheme_writes_the_scheme_on_the_scheme_api():
    blocks = python_blocks(DOCS / "adding-a-scheme.md")
    assert len(blocks) == 4 and "class SymplecticMoreau(Scheme)" in blocks[0]
    assert "from impactbench.core.scheme import" in blocks[0]
    assert "= scheme_function(MoreauJean.step)" in blocks[3]  # reusing a scheme's step


def test_adding_a_study_writes_the_study_file_from_scratch():
    blocks = python_blocks(DOCS / "adding-a-study.md")
    assert len(blocks) == 2 and "STUDY = Study(" in blocks[0] and "run_study(STUDY" in blocks[1]


#: What each page's examples print (besides their own assertions).
PRINTS = {
    "adding-a-method.md": "max position error",
    "adding-a-scheme.md": "max position error",
    "adding-a-study.md": "Order in h with its 95 % interval",
    "friction.md": "no friction law",
    "simulate-and-compare.md": "versus",
}


@pytest.mark.parametrize("page", sorted(PRINTS))
def test_the_python_blocks_of_a_page_run(page, tmp_path, monkeypatch, capsys):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IMPACTBENCH_CACHE_DIR", str(tmp_path / "runs"))
    namespace: dict = {"__name__": f"docs_{Path(page).stem.replace('-', '_')}"}
    for number, block in enumerate(python_blocks(DOCS / page), start=1):
        code = compile(block, f"{page} block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - the documentation's own examples
    assert PRINTS[page] in capsys.readouterr().out
