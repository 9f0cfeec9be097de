"""Caches and reports as shared folders: files written with the umask's mode, and ``--no-cache``
bypassing the reference cache as well as the run cache."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import plain_floor
import pytest

from impactbench.analysis.reference import REFERENCE_DIR_VARIABLE
from impactbench.bench.cli import main
from impactbench.core._files import write_atomic

STUDY_FILE = (
    plain_floor.SOURCE
    + '''
import impactbench
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import EventDriven, MoreauJean


class ReferenceFloor(Floor):
    """The ball above the floor, measured against a reference run (no exact solution)."""


def floor_reference(problem, t_end):
    method = EventDriven(compiled=False, rtol=1e-8, atol=1e-10, dense_output=True)
    return impactbench.reference(problem, t_end, method)


def runs(quick):
    return [
        Run(ReferenceFloor, MoreauJean, 0.6, h=0.01, reference=floor_reference,
            metrics=("max_position_error",))
    ]


def report(table, folder):
    return StudyReport([Section("Rows", f"{len(table)} rows")], ["the floor study ran"])


STUDY = Study("{name}", "Floor", "A floor against its reference.", runs, report)
'''
)


def _run_study(tmp_path: Path, name: str, *flags: str) -> pd.DataFrame:
    """Run a one-run study file (its own module name) into ``tmp_path``: out/, cache/, refs/."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(STUDY_FILE).replace("{name}", name))
    argv = ["run", str(path), "--jobs", "1", "--output", str(tmp_path / "out")]
    assert main([*argv, "--cache-dir", str(tmp_path / "cache"), *flags]) == 0
    return pd.read_csv(tmp_path / "out" / name / "results.csv.gz")


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_write_atomic_gives_the_mode_of_any_new_file(tmp_path, umask):
    before = os.umask(umask)
    try:
        write_atomic(tmp_path / "table.csv", "a,b\n")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(before)
    mode = stat.S_IMODE((tmp_path / "table.csv").stat().st_mode)
    assert mode == 0o666 & ~umask == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert [path.name for path in tmp_path.iterdir()].count("table.csv") == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain.txt", "table.csv"]


def test_caches_tables_and_reports_can_be_shared(tmp_path, monkeypatch):
    """Under umask 022 every file of the run cache, the reference cache and the reports is
    0o644 (readable by the group sharing the folder), none 0o600."""
    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, str(tmp_path / "refs"))
    before = os.umask(0o022)
    try:
        table = _run_study(tmp_path, "shared_floor_study")
    finally:
        os.umask(before)
    assert np.isfinite(table["max_position_error"]).all()
    files = {folder: _files(tmp_path / folder) for folder in ("out", "cache", "refs")}
    assert all(files.values()), {folder: len(found) for folder, found in files.items()}
    modes = {path: stat.S_IMODE(path.stat().st_mode) for found in files.values() for path in found}
    assert {mode for mode in modes.values()} == {0o644}, modes


def test_no_cache_bypasses_the_reference_cache(tmp_path, monkeypatch):
    """--no-cache: the reference is computed for this command (the table has its error) and
    neither the run cache nor the reference cache is written; without it both are."""
    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, str(tmp_path / "refs"))
    table = _run_study(tmp_path, "uncached_floor_study", "--no-cache")
    assert np.isfinite(table["max_position_error"]).all()
    assert _files(tmp_path / "refs") == [] and _files(tmp_path / "cache") == []
    assert os.environ[REFERENCE_DIR_VARIABLE] == str(tmp_path / "refs")
    again = _run_study(tmp_path, "uncached_floor_study")
    assert again["max_position_error"].tolist() == table["max_position_error"].tolist()
    assert _files(tmp_path / "refs") and _files(tmp_path / "cache")
