"""Report tables for a paper: LaTeX (booktabs) copies, capped counts, and the committed reports."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from impactbench.bench.latex import (
    MAX_ROWS,
    PREAMBLE,
    LatexTable,
    escape,
    interval_text,
    method_tex,
    number_cell,
    summarise,
    table_format,
    with_unit,
)
from impactbench.bench.report import count_text, latex_table, with_capped_counts


def _table(frame: pd.DataFrame, digits: int = 3) -> LatexTable:
    return LatexTable(frame, digits, "Convergence: orders", "tab:convergence-1")


def test_latex_table_has_booktabs_rules_caption_label_and_escapes():
    frame = pd.DataFrame(
        {"method": ["MoreauJean[theta=0.5]", "A_B & C"], "max_error": ["1e-3", "2"]}
    )
    text = latex_table(_table(frame))
    assert "\\begin{tabular}{l l}" in text
    for rule in ("\\toprule", "\\midrule", "\\bottomrule", "\\caption{", "\\label{"):
        assert text.count(rule) == 1
    assert "\\caption{Convergence: orders}" in text
    assert "\\label{tab:convergence-1}" in text
    assert "method & max error \\\\" in text
    assert "A\\_B \\& C" in text


def test_headers_keep_their_mathematics_and_escape_the_rest():
    assert escape("$\\max_t |q - q_{\\mathrm{ex}}|$ [m]") == "$\\max_t |q - q_{\\mathrm{ex}}|$ [m]"
    assert escape("order [95 %] of a_b") == "order [95 \\%] of a\\_b"
    assert escape("error <= 0.01") == "error $\\le$ 0.01"
    assert escape(">= 7, a < b > c, 3 +/- 1") == "$\\ge$ 7, a $<$ b $>$ c, 3 $\\pm$ 1"
    assert escape("depth / (alpha h^2)") == "depth / (alpha h$^{2}$)"


def test_numbers_are_siunitx_columns_and_counts_integers():
    frame = pd.DataFrame(
        {
            "method": ["PS", "MJ", "ED"],
            "impacts": [1000.0, 12.0, np.nan],
            "error [m]": [1.234e-5, -0.5, 2.0e3 + 0.5],
        }
    )
    text = latex_table(_table(frame))
    assert "l S[table-format=4] S[table-format=-1.2e-2]" in text
    assert "{impacts [-]} & {error [m]}" in text
    assert "PS & 1000 & 1.23e-05 \\\\" in text  # a count in full, never 1e+03
    assert "ED & {--} & 2e03" in text
    assert table_format(["1.5", "-12", "3.25e-7"]) == "-2.2e-1"
    assert number_cell(True, 3) is None and number_cell(np.nan, 3) is None


def test_every_numeric_header_names_its_unit():
    """Units come from the header, the given map, the recurring names or the words ms/ns; a
    numeric column (or a column of counts as text) without one is refused."""
    assert with_unit("wall time [ms]") == "wall time [ms]"
    assert with_unit("impacts") == "impacts [-]" and with_unit("h") == "h [s]"
    assert with_unit("force_evaluations") == "force_evaluations [-]"
    assert with_unit("adaptive ms max") == "adaptive ms max [ms]"
    assert with_unit("compiled ns/step") == "compiled ns/step [ns]"
    assert with_unit("depth", {"depth": "m"}) == "depth [m]"
    assert with_unit("depth") == "depth"
    with pytest.raises(ValueError, match=r"without a unit.*'depth'"):
        latex_table(_table(pd.DataFrame({"method": ["MJ"], "depth": [1.5]})))
    with pytest.raises(ValueError, match=r"without a unit.*'events'"):
        latex_table(_table(pd.DataFrame({"method": ["MJ", "PS"], "events": [">= 100", "3"]})))
    text = latex_table(_table(pd.DataFrame({"method": ["MJ"], "order": ["1.01 [0.9, 1.1]"]})))
    assert "order \\\\" in text  # a text column needs none


def test_method_names_are_typeset_in_cells_and_headers():
    assert method_tex("MoreauJean[theta=0.5]") == "Moreau--Jean ($\\theta = \\num{0.5}$)"
    assert method_tex("EventDriven[compiled=False]") == "event-driven (not compiled)"
    assert (
        method_tex("Adaptive[scheme=CatchingUp[activation=approaching],h_max=0.01]")
        == "adaptive (scheme catching-up (activation approaching), h max $=$ \\num{0.01})"
    )
    assert method_tex("BouncingBall") is None and method_tex("tie") is None
    frame = pd.DataFrame({"problem": ["Ball"], "PaoliSchatzman": ["1.0 [0.9, 1.1]"]})
    text = latex_table(_table(frame))
    assert "problem & Paoli--Schatzman \\\\" in text
    assert "\\num{1.0} [\\num{0.9}, \\num{1.1}]" in text
    assert "[" not in text.split("\\midrule")[0].split("Paoli")[1].split("\\\\")[0]


def test_a_table_longer_than_a_page_is_refused():
    frame = pd.DataFrame({"problem": ["A"] * (MAX_ROWS + 1), "h": np.arange(MAX_ROWS + 1.0)})
    with pytest.raises(ValueError, match=rf"{MAX_ROWS + 1} rows, more than {MAX_ROWS}"):
        latex_table(_table(frame))
    assert latex_table(_table(frame.iloc[:MAX_ROWS])).count("\\begin{table}") == 1


def test_summary_gives_medians_and_ranges_per_nominal_setting():
    """Phase copies of a nominal step make one row (median [min, max]); with more settings
    than the rows allow, each sweep keeps its first, its last and evenly spread ones."""
    h = np.repeat([0.1, 0.01, 0.001], 3)
    frame = pd.DataFrame(
        {
            "method": ["MoreauJean"] * 9,
            "h": h,
            "error [m]": [1.0, 2.0, 4.0, 0.1, 0.2, 0.3, 0.01, 0.01, 0.01],
        }
    )
    table = summarise(frame, ["method"], "h", ["error [m]"]).frame
    assert table["runs [-]"].tolist() == [3, 3, 3]
    assert table["error [m]"].tolist() == ["2 [1, 4]", "0.2 [0.1, 0.3]", "0.01"]
    assert interval_text([np.nan, 3.0, 1.0, np.inf]) == "2 [1, 3]"
    assert interval_text([np.nan]) == "-" and interval_text([-0.0, 1.0]) == "0.5 [0, 1]"
    assert interval_text([2553.0, 2428.0, 2817.0]) == "2553 [2428, 2817]"  # counts in full
    assert interval_text([1.23456e-5, 2e-5], digits=2) == "1.6e-05 [1.2e-05, 2e-05]"
    sweeps = pd.DataFrame(
        {
            "method": np.repeat(["MJ", "PS", "CU"], 20),
            "h": np.tile(np.arange(20.0), 3),
            "error [m]": np.arange(60.0),
        }
    )
    thinned = summarise(sweeps, ["method"], "h", ["error [m]"], max_rows=10)
    assert len(thinned.frame) <= 10
    for _, sweep in thinned.frame.groupby("method"):
        assert sweep["h"].min() == 0.0 and sweep["h"].max() == 19.0 and len(sweep) == 3
    assert "at most 3 settings of each sweep" in thinned.note
    with pytest.raises(ValueError, match="two settings each"):
        summarise(sweeps, ["method"], "h", ["error [m]"], max_rows=5)
    with pytest.raises(ValueError, match="name no unit"):
        summarise(sweeps.rename(columns={"error [m]": "error"}), ["method"], "h", ["error"])


ROOT = Path(__file__).resolve().parent.parent
NO_TEX = shutil.which("pdflatex") is None or (
    subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True, text=True).stdout == ""
)


def _compile(tmp_path: Path, body: str) -> str:
    document = (
        "\\documentclass{article}\n" + PREAMBLE + "\\begin{document}\n" + body + "\\end{document}\n"
    )
    (tmp_path / "t.tex").write_text(document)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    return (tmp_path / "t.log").read_text(errors="replace")


@pytest.mark.skipif(NO_TEX, reason="no TeX (pdflatex with siunitx) on this machine")
def test_latex_tables_compile_and_fit_the_page(tmp_path):
    frame = pd.DataFrame(
        {
            "method": ["MoreauJean[theta=0.5]", "Adaptive[scheme=CatchingUp,h_max=0.01]"],
            "$\\max_t |q - q_{\\mathrm{ex}}|$ [m]": ["1.5e-03 [1.2e-03, 1.9e-03]", "-"],
            "order [95 %]": ["0.99 [0.80, 1.17]", "not controlled"],
            "error <= 0.01": ["yes", "no"],
            "impacts": [">= 1000", "12"],
        }
    )
    log = _compile(tmp_path, latex_table(_table(frame)))
    assert "Overfull \\hbox" not in log


#: The LaTeX tables the committed reports hold.
COMMITTED_TABLES = sorted((ROOT / "reports").glob("*/tables/*.tex"))


def test_reports_hold_latex_tables():
    assert COMMITTED_TABLES, "no reports/*/tables/*.tex: the reports are not generated"


@pytest.mark.skipif(NO_TEX, reason="no TeX (pdflatex with siunitx) on this machine")
@pytest.mark.parametrize("path", COMMITTED_TABLES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_committed_report_tables_compile_and_fit_a_page(tmp_path, path):
    """Every table the committed reports hold compiles as written, fits the text width, and each
    of its parts has a caption, a label and at most MAX_ROWS body rows."""
    text = path.read_text()
    log = _compile(tmp_path, text)
    assert "Overfull \\hbox" not in log
    tabulars = text.count("\\begin{tabular}")
    assert tabulars >= 1
    assert text.count("\\caption{") == tabulars
    assert text.count("\\label{") == tabulars
    for part in text.split("\\begin{tabular}")[1:]:
        body = part.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
        assert body.count("\\\\") <= MAX_ROWS


def test_a_capped_impact_count_is_a_lower_bound_in_markdown_and_latex():
    """A count that filled the impact log is printed ">= N" (Markdown) and $\\ge$ N (LaTeX);
    the other counts stay plain numbers."""
    rows = pd.DataFrame(
        {
            "method": ["EventDriven", "MoreauJean"],
            "impacts": pd.array([100_000, 12], "Int64"),
            "impacts_capped": pd.array([True, False], "boolean"),
        }
    )
    shown = with_capped_counts(rows)
    assert shown["impacts"].tolist() == [">= 100000", "12"]
    assert count_text(7.0, False) == "7" and count_text(7.0, True) == ">= 7"
    text = latex_table(_table(shown[["method", "impacts"]]))
    assert "$\\ge$ 100000" in text and "textgreater" not in text
    # no capped row: the column stays numeric (an S column in LaTeX)
    plain = with_capped_counts(rows.assign(impacts_capped=False))
    assert pd.api.types.is_integer_dtype(plain["impacts"])


REPORTS = Path(__file__).resolve().parents[1] / "reports"
#: Largest figure file of the committed reports, in bytes (500 KiB).
MAX_FIGURE_BYTES = 500 * 1024
#: Largest total size of the committed reports, in bytes (20 MB).
MAX_REPORTS_BYTES = 20 * 10**6
#: The one raster and the one vector format of a figure.
FIGURE_SUFFIXES = {".png", ".pdf"}


def _committed_reports() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "reports"], cwd=REPORTS.parent, capture_output=True, check=True
    ).stdout.decode()
    return [REPORTS.parent / name for name in listed.split("\0") if name]


def test_committed_figures_are_png_and_pdf_each_at_most_500_kB():
    files = _committed_reports()
    assert files, "no committed reports"
    assert not [f for f in files if f.suffix in {".svg", ".parquet", ".eps", ".jpg"}]
    figures = [f for f in files if f.suffix in FIGURE_SUFFIXES]
    assert figures
    for png in (f for f in figures if f.suffix == ".png"):  # PNG and its PDF, nothing else
        assert png.with_suffix(".pdf") in figures, png
    large = {str(f): f.stat().st_size for f in figures if f.stat().st_size > MAX_FIGURE_BYTES}
    assert not large


def test_committed_reports_take_at_most_20_MB():
    sizes = {str(f): f.stat().st_size for f in _committed_reports()}
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert sum(sizes.values()) <= MAX_REPORTS_BYTES, largest
