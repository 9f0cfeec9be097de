"""A study whose failed runs are its findings (Study.failures_are_findings) exits 0."""

from __future__ import annotations

import gzip
import textwrap
from pathlib import Path

import pytest

from impactbench.bench.cli import main

STUDY_FILE = """
from impactbench import Method
from impactbench.bench.runner import Run
from impactbench.bench.study import Study, StudyReport
from impactbench.problems import BouncingBall


class Refuses(Method):
    family = "event-driven"
    requires_step = False

    def _solve_impl(self, problem, t_end, h, output_every):
        raise RuntimeError("this method fails here, as the study shows")


STUDY = Study(
    name="{name}",
    title="Failures as findings",
    description="A study that records where a method fails.",
    runs=lambda quick: [Run(BouncingBall, Refuses, 0.1)],
    report=lambda table, folder: StudyReport(),
    failures_are_findings={findings},
)
"""


@pytest.mark.parametrize(("findings", "code"), [(True, 0), (False, 1)])
def test_failed_runs_of_a_study_that_measures_failures_do_not_fail_the_command(
    tmp_path: Path, findings: bool, code: int, capsys
) -> None:
    name = f"failures_{str(findings).lower()}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(STUDY_FILE.format(name=name, findings=findings)))
    argv = ["run", str(path), "--jobs", "1", "--output", str(tmp_path / "out"), "--no-cache"]
    assert main(argv) == code
    assert "this method fails here" in capsys.readouterr().err  # printed either way
    table = gzip.decompress((tmp_path / "out" / name / "results.csv.gz").read_bytes()).decode()
    assert "failed" in table and "this method fails here" in table  # the row is kept either way
