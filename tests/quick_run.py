"""The quick main job (``impactbench run --quick``), split in two parts that together are every
study, and the checks that hold for every study of a part.

tests/test_quick_run_part1.py and tests/test_quick_run_part2.py each run one part in a module
fixture (:func:`run_part`) and apply these checks to it: pytest-xdist gives each test file to one
worker (``--dist loadfile``), so the two workers share the quick main job instead of one of them
computing all of it while the other finishes the rest of the suite.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from matplotlib import image as mpl_image

from impactbench import Method
from impactbench.bench.cli import main
from impactbench.bench.latex import MAX_ROWS
from impactbench.bench.results import ARTEFACT_SUFFIX
from impactbench.studies import STUDIES

from conftest import assert_study_table

#: The two parts of the quick main job. Studies that compile the same loops are in the same part
#: (their second users load them from numba's disk cache); the parts take about equal time.
PARTS = (
    (
        "constraint_violation",
        "convergence",
        "energy_decay",
        "event_driven_limits",
        "pendulum_ensemble",
        "performance",
        "thesis_comparison",
        "work_precision",
    ),
    ("bifurcation", "friction", "impacting_bar", "cradle", "persistent_contact", "scaling"),
)


class QuickRun(NamedTuple):
    """A quick main job's exit code, output and run-cache folders, and the studies it ran."""

    code: int
    output: Path
    cache: Path
    studies: tuple[str, ...]


def run_part(root: Path, part: int) -> QuickRun:
    """``impactbench run --quick`` of the studies of ``PARTS[part]`` into a fresh folder and cache
    under ``root``; two jobs, so the reports are written by two worker processes."""
    studies = PARTS[part]
    output, cache = root / "reports", root / "cache"
    argv = ["run", "--quick", *studies, "--jobs", "2", "--output", str(output)]
    code = main([*argv, "--cache-dir", str(cache)])
    return QuickRun(code, output, cache, studies)


def assert_one_table_of_a_page(text: str) -> None:
    """A LaTeX table of a report: one ``tabular`` of at most MAX_ROWS body rows."""
    assert text.count("\\begin{tabular}") == 1
    body = text.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    assert body.count("\\\\") <= MAX_ROWS


def _content(path: Path) -> tuple[str, ...]:
    """What a table holds, whatever the order of its rows and of its CSV columns."""
    if path.name.endswith((".csv", ".csv.gz")):  # pandas decompresses by the name
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame = frame[sorted(frame.columns)]
        return (",".join(frame.columns), *sorted(",".join(row) for row in frame.to_numpy()))
    return tuple(sorted(path.read_text(encoding="utf-8").splitlines()))


def assert_nothing_stored_twice(folder: Path) -> None:
    """No two tables (CSV, compressed or not, LaTeX, Markdown) of a study's report folder hold the
    same content (a table copied under another name, its rows or columns in another order)."""
    seen: dict[tuple[str, ...], Path] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name.endswith((".csv", ".csv.gz", ".tex", ".md")):
            twin = seen.setdefault(_content(path), path)
            assert twin == path, f"{path.relative_to(folder)} repeats {twin.relative_to(folder)}"


def check_every_study_succeeds(quick: QuickRun) -> None:
    """Exit code 0; the index links every study's report, whose figures (PNG, PDF, SVG) are
    linked and not blank, whose LaTeX tables are linked, and whose table has no failed run."""
    assert quick.code == 0
    index = (quick.output / "README.md").read_text()
    for name in quick.studies:
        study, folder = STUDIES[name], quick.output / name
        assert f"({name}/README.md)" in index
        readme = (folder / "README.md").read_text()
        assert readme.startswith(f"# {study.title}")
        for figure in folder.glob("*.png"):
            assert f"]({figure.name})" in readme
            assert figure.read_bytes().startswith(b"\x89PNG")
            pixels = mpl_image.imread(figure)  # as a reader sees it: sized, and not blank
            assert min(pixels.shape[:2]) >= 300 and pixels[..., :3].std() > 0.01, figure.name
            assert figure.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
            assert not figure.with_suffix(".svg").exists()
        assert list(folder.glob("*.png")), name
        assert not (folder / "results.parquet").exists(), name
        for tex in (folder / "tables").glob("*.tex"):
            assert "\\toprule" in tex.read_text() and f"](tables/{tex.name})" in readme
            assert_one_table_of_a_page(tex.read_text())
        assert_nothing_stored_twice(folder)
        table = pd.read_csv(folder / "results.csv.gz")
        assert (table["status"] != "failed").all(), table["error"].dropna().tolist()
        assert_study_table(table)
        assert set(table["study"]) == {name}


def check_reports_of_failed_runs(quick: QuickRun, folder: Path, every: int) -> None:
    """Every ``every``-th run of each study marked failed: ``impactbench report`` counts them in
    the index and names their error in the study's report."""
    for name in quick.studies:
        table = pd.read_csv(quick.output / name / "results.csv.gz")
        table["error"] = table["error"].astype(object)
        table.loc[::every, ["status", "error"]] = ["failed", "RuntimeError: lost"]
        (folder / name).mkdir()
        table.to_csv(folder / name / "results.csv.gz", index=False)
        for artefact in (quick.output / name).glob(f"*{ARTEFACT_SUFFIX}"):
            shutil.copy(artefact, folder / name)
    assert main(["report", "--output", str(folder)]) == 0
    index = (folder / "README.md").read_text()
    for name in quick.studies:
        total = len(pd.read_csv(quick.output / name / "results.csv.gz"))
        failed = len(range(0, total, every))
        assert f"{failed} of {total} runs failed" in index
        assert "RuntimeError: lost" in (folder / name / "README.md").read_text()


def refuse(*args, **kwargs):
    """In place of :meth:`impactbench.Method.solve`: a report must simulate nothing."""
    raise AssertionError("impactbench report simulated")


def check_report_rewrites_what_the_workers_wrote(quick: QuickRun, folder: Path, monkeypatch):
    """``impactbench report`` reads the stored tables, artefacts and references: with every
    simulation refused and every report, figure and LaTeX table deleted, it writes them again
    into ``folder`` in one process, every file (text, tables, figures) byte for byte the one
    the quick run wrote in its two worker processes."""
    copy = folder / "reports"
    shutil.copytree(quick.output, copy)
    products = [
        path
        for path in copy.rglob("*")
        if path.is_file() and (path.suffix in (".png", ".pdf", ".tex") or path.name == "README.md")
    ]
    assert len([path for path in products if path.suffix == ".png"]) >= len(quick.studies)
    for path in products:
        path.unlink()
    monkeypatch.setattr(Method, "solve", refuse)
    assert main(["report", "--output", str(copy), "--jobs", "1"]) == 0  # here, where it is refused
    output = quick.output
    files = sorted(path.relative_to(output) for path in output.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(copy) for path in copy.rglob("*") if path.is_file())
    for name in files:
        assert (copy / name).read_bytes() == (output / name).read_bytes(), name
