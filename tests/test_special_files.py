"""``report`` and ``run`` never block on a special file (a FIFO) in a study folder: they refuse
it with a message naming it (issue 51 item 2). Opening a FIFO for reading blocks until a writer
comes, so the commands run in a child process with a time limit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from impactbench.bench.files import StudyWriteError
from impactbench.bench.pipeline import run_study
from impactbench.bench.study import Study, StudyReport

from test_runner import probe_runs

#: Seconds a command may take before it counts as blocked (it reads a few small files).
LIMIT = 120


@pytest.mark.parametrize("name", ["results.csv.gz", "provenance.json"])
def test_report_refuses_a_fifo_in_a_study_folder(tmp_path, name):
    folder = tmp_path / "convergence"
    folder.mkdir()
    if name != "results.csv.gz":
        (folder / "results.csv").write_text("key,status\n")  # as an older version stored it
    os.mkfifo(folder / name)
    done = subprocess.run(
        [sys.executable, "-m", "impactbench", "report", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert f"{folder / name} is a FIFO, not a regular file" in done.stderr


def test_run_refuses_a_fifo_in_a_study_folder_before_any_run(tmp_path):
    log = tmp_path / "log"
    study = Study(
        "probe",
        "Probe",
        "Test study.",
        lambda quick: probe_runs(log, (1.0,)),
        lambda table, folder: StudyReport([], []),
    )
    folder = tmp_path / "out" / "probe"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "results.csv.gz")
    with pytest.raises(StudyWriteError, match="results.csv.gz is a FIFO, not a regular file"):
        run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=folder.parent)
    assert not log.exists()  # refused before any run
