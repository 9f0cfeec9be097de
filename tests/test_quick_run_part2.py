"""The quick main job, part 2 (tests/quick_run.py): every study of it end to end."""

from __future__ import annotations

import pytest

from quick_run import (
    check_every_study_succeeds,
    check_report_rewrites_what_the_workers_wrote,
    check_reports_of_failed_runs,
    run_part,
)

#: Every test reads the quick main job of part 2 (minutes): the file starts first (conftest.py).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick main job of the studies of part 2 (tests/quick_run.py)."""
    return run_part(tmp_path_factory.mktemp("quick"), 1)


def test_quick_run_of_every_study_succeeds(quick):
    check_every_study_succeeds(quick)


@pytest.mark.parametrize("every", [1, 2])
def test_reports_of_failed_runs(quick, tmp_path, every):
    check_reports_of_failed_runs(quick, tmp_path, every)


def test_report_executes_no_run_and_rewrites_what_the_workers_wrote(quick, tmp_path, monkeypatch):
    check_report_rewrites_what_the_workers_wrote(quick, tmp_path, monkeypatch)
