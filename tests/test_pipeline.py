"""The Python API of the main job: :func:`impactbench.run_study`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import impactbench
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall


def _tiny_runs(quick: bool) -> list[Run]:
    h = 0.02 if quick else 0.01
    return [
        Run(BouncingBall, method, 1.5, h=h, metrics=("max_position_error",))
        for method in (MoreauJean, PaoliSchatzman)
    ]


def _tiny_report(table: pd.DataFrame, folder) -> StudyReport:
    return StudyReport([Section("Rows", f"{len(table)} rows")], [f"{len(table)} runs"])


TINY = Study("tiny", "Tiny", "Two runs.", _tiny_runs, _tiny_report)


def test_run_study_runs_stores_and_reports_a_users_study(tmp_path):
    result = impactbench.run_study(
        TINY, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path / "out"
    )
    assert result.folder == tmp_path / "out" / "tiny"
    assert [run.h for run in result.runs] == [0.02, 0.02]
    assert result.failed == [] and result.cached == 0
    stored = pd.read_csv(result.folder / "results.csv.gz")
    assert list(stored["method"]) == list(result.table["method"])
    assert list(stored["status"]) == ["ok", "ok"]
    assert list(stored["max_position_error"]) == list(result.table["max_position_error"])
    assert (stored["max_position_error"] > 0).all()
    provenance = json.loads((result.folder / "provenance.json").read_text())
    assert provenance["grid"] == "quick" and provenance["runs"] == 2
    assert provenance["study_module"] == __name__
    assert "2 rows" in (result.folder / "README.md").read_text()
    again = impactbench.run_study(
        TINY, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path / "out"
    )
    assert again.cached == 2
    assert again.table.drop(columns=["wall_time"]).equals(result.table.drop(columns=["wall_time"]))


def test_run_study_without_report_writes_only_the_table(tmp_path):
    result = impactbench.run_study(
        TINY, quick=True, jobs=1, use_cache=False, output=tmp_path, report=False
    )
    assert (result.folder / "results.csv.gz").exists()
    assert not (result.folder / "README.md").exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"study": "no-such-study"}, "study"),
        ({"study": TINY, "jobs": 0}, "jobs"),
        ({"study": TINY, "backend": "threads"}, "backend"),
        ({"study": TINY, "quick": "yes"}, "quick"),
    ],
)
def test_run_study_rejects_bad_arguments_before_running(options, named, tmp_path):
    with pytest.raises(ValueError, match=named):
        impactbench.run_study(**options, output=tmp_path)
    assert not any(tmp_path.iterdir())
