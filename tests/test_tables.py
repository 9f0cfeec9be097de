"""Report tables for a paper: LaTeX (booktabs) copies and the Parquet results table."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from impactbench.bench.report import latex_table
from impactbench.bench.results import read_parquet_provenance, write_parquet


def test_latex_table_has_booktabs_rules_and_escapes():
    frame = pd.DataFrame(
        {"method": ["MoreauJean[theta=0.5]", "A_B & C"], "max_error": ["1e-3", "2"]}
    )
    text = latex_table(frame)
    assert text.splitlines()[0] == "\\begin{tabular}{ll}"
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert text.count(rule) == 1
    assert "method & max error \\\\" in text
    assert "A\\_B \\& C" in text


def test_parquet_keeps_the_table_and_the_provenance(tmp_path):
    table = pd.DataFrame(
        {"method": ["PS", "MJ"], "h": [1e-3, np.nan], "steps": pd.array([10, None], "Int64")}
    )
    provenance = {"grid": "quick", "machine": {"cpu": "X", "usable_cores": 2}}
    path = tmp_path / "results.parquet"
    write_parquet(table, path, provenance)
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, table)
    assert read_parquet_provenance(path) == provenance


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine on this machine")
def test_latex_tables_compile(tmp_path):
    frame = pd.DataFrame({"method": ["MoreauJean[theta=0.5]"], "order": ["0.99 [0.80, 1.17]"]})
    document = (
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}"
        + latex_table(frame)
        + "\\end{document}"
    )
    (tmp_path / "t.tex").write_text(document)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path, capture_output=True
    )
    assert run.returncode == 0, run.stdout[-2000:]
