"""README and the documentation pages quote no hand-typed measured figure.

Measured figures (costs, errors, orders, counts) live in the reports the main job generates
(`reports/`); README and docs/ link to them. A figure written in their prose -- a number with a
time, memory or ratio unit, a decimal number, or a number in scientific notation -- must be one the
committed reports produce (it appears in a report's Markdown or in a table), else this test fails
and names it. Code (fenced blocks and inline code) is not prose: defaults and examples are exempt.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

FENCED = re.compile(r"```.*?```", re.DOTALL)
INLINE = re.compile(r"`[^`\n]*`")
# a number with a unit of time, memory or ratio; a decimal; scientific notation
FIGURE = re.compile(
    r"(?<![\w.^/])("
    r"\d+(?:\.\d+)?(?:e[+-]?\d+)?\s?(?:ns|us|µs|ms|s|min|KiB|MiB|GiB|kB|MB|GB)\b"
    r"|\d+(?:\.\d+)?x\b"
    r"|\d+\.\d+(?:e[+-]?\d+)?"
    r"|\d+e[+-]?\d+"
    r")(?![\w.])"
)
# constants of the models and of the methodology (parameters, not measurements)
DEFINED = {
    "0.477102",  # ForcedImpactOscillator's periodic orbit: its parameters (docs/problems.md)
    "3.041233",
    "2.5",
    "0.05",
    "0.8",
    "0.5",
    "0.1",
    "0.7",
    "1.5",
    "1e3",  # Reference.accuracy = 1e3 rtol, a definition
    "1e-8",  # the size of a perturbation in docs/design.md, a definition
    "2 GiB",  # the stored-output limit, a definition
}


def prose(text: str) -> str:
    return INLINE.sub(" ", FENCED.sub(" ", text))


def figures(text: str) -> list[str]:
    return [m.group(1) for m in FIGURE.finditer(prose(text))]


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def value(figure: str) -> float:
    return float(NUMBER.match(figure).group(0))


def report_values() -> set[float]:
    """Every number the committed reports print (Markdown, CSV and LaTeX tables, the
    gzip-compressed artefact tables included)."""
    found: set[float] = set()
    for path in sorted((ROOT / "reports").rglob("*")):
        if path.suffix in {".md", ".csv", ".tex"}:
            text = path.read_text(encoding="utf-8")
        elif path.name.endswith(".csv.gz"):
            text = gzip.decompress(path.read_bytes()).decode("utf-8")
        else:
            continue
        found.update(float(n) for n in NUMBER.findall(text))
    return found


def test_the_figure_pattern_finds_measured_figures_and_skips_code() -> None:
    text = "MoreauJean takes 5.45 ns/step, 11.3x faster, error 2.7e-15 in 4 min; `h=1e-3`\n"
    assert figures(text) == ["5.45 ns", "11.3x", "2.7e-15", "4 min"]
    assert figures("```python\nh = 1.5e-3\n```\norder 1 in h, 95 % intervals") == []


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_figure_in_the_docs_comes_from_the_reports(page: Path) -> None:
    reports = report_values()
    alien = [
        figure
        for figure in figures(page.read_text(encoding="utf-8"))
        if figure not in DEFINED and value(figure) not in reports
    ]
    assert not alien, f"{page.name} quotes figures no report produces: {alien}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_file_a_page_names_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    names = set(re.findall(r"\]\(([^)#\s]+)\)", text))
    names |= set(re.findall(r"`((?:[\w-]+/)+[\w.-]+\.(?:py|md|ref|cpp|toml|csv))`", text))
    missing = [
        name
        for name in sorted(names)
        if not (page.parent / name).exists() and not (ROOT / name).exists()
    ]
    assert not missing, f"{page.name} names files that do not exist: {missing}"
