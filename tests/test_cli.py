"""The command line: simulate, list, help, errors and exit codes, report workers, caches that
hold data only and studies that survive what their runs do (probe studies). The quick main job of
every study is tests/test_quick_run_part1.py and tests/test_quick_run_part2.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from impactbench.analysis.reference import REFERENCE_DIR_VARIABLE
from impactbench.bench.cli import main
from impactbench.bench.study import Study, StudyReport
from impactbench.studies import STUDIES

from quick_run import PARTS
from test_runner import probe_runs


def test_a_report_worker_reads_the_reference_cache_of_the_launching_process(tmp_path, monkeypatch):
    """A reused worker keeps the environment it started with: the report task is given the
    launcher's reference folder, sets it while it writes, and restores the worker's own."""
    from impactbench.bench import cli

    seen = []
    monkeypatch.setattr(
        cli,
        "write_study_report",
        lambda study, folder: seen.append(
            (study.name, folder, os.environ.get(REFERENCE_DIR_VARIABLE))
        ),
    )
    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, "worker's own")
    cli._report_of("convergence", tmp_path, str(tmp_path / "launcher"))
    assert seen == [("convergence", tmp_path, str(tmp_path / "launcher"))]
    assert os.environ[REFERENCE_DIR_VARIABLE] == "worker's own"
    monkeypatch.delenv(REFERENCE_DIR_VARIABLE)
    cli._report_of("convergence", tmp_path, "elsewhere")
    assert seen[-1][2] == "elsewhere" and REFERENCE_DIR_VARIABLE not in os.environ


def test_the_quick_main_job_is_split_in_two_parts_that_are_every_study_once():
    """tests/quick_run.py runs ``impactbench run --quick`` in two parts that name their studies;
    together they are what ``run`` without a study name runs: every study."""
    from impactbench.bench import cli

    assert sorted([*PARTS[0], *PARTS[1]]) == sorted(STUDIES.names())
    assert list(cli._studies([])) == list(STUDIES.names())


def test_report_without_tables_fails(tmp_path, capsys):
    assert main(["report", "--output", str(tmp_path)]) == 1
    assert "no stored study tables" in capsys.readouterr().err


def test_simulate_prints_errors_and_writes_csv_and_plot(tmp_path, capsys):
    csv, plot = tmp_path / "run.csv", tmp_path / "run.png"
    code = main(
        [
            "simulate",
            "BouncingBall[restitution=0.5]",
            "MoreauJean[theta=0.5]",
            "--t-end",
            "1.5",
            "--h",
            "1e-3",
            "--csv",
            str(csv),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "max position error (exact solution)" in out
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["t", "q0", "v0", "energy"]
    assert len(frame) == 1501 and frame["t"].iloc[-1] == 1.5
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_list_names_problems_methods_and_studies(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("BouncingBall", "SlantedWall", "MoreauJean", "PaoliSchatzman", *STUDIES):
        assert name in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["run", "no_such_study"],
        ["run", "--jobs", "0"],
        ["run", "--jobs", "two"],
        ["run", "--backend", "ray"],
        ["run", "--scheduler", "tcp://127.0.0.1:8786"],
        ["simulate", "NoSuchProblem", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "NoSuchMethod", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "-0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1"],
        ["simulate", "BouncingBall", "MoreauJean[theta=7]", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall[restitution=2]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall[colour=1]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "x"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--output-every", "0"],
        # sizes beyond their limits, malformed addresses, booleans, repeated names
        ["run", "--backend", "dask", "--scheduler", "foo://bar"],
        ["run", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:notaport"],
        ["run", "--jobs", "100000"],
        ["run", "--retry-failed", "-1"],
        ["run", "--retry-failed", "11"],
        ["run", "--retry-failed", "x"],
        ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-19"],
        [
            *("simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-19"),
            *("--output-every", "1000000000000000000"),
        ],
        [
            *("simulate", "BouncingBall", "MoreauJean[log_capacity=1000000000000]"),
            *("--t-end", "1", "--h", "0.1"),
        ],
        ["simulate", "BouncingBall", "MoreauJean[theta=True]", "--t-end", "1", "--h", "0.1"],
        ["simulate", "BouncingBall", "MoreauJean[theta=1,theta=0.5]", "--t-end", "1", "--h", "0.1"],
        ["simulate", f"BouncingBall[q0=1{'0' * 400}]", "MoreauJean", "--t-end", "1", "--h", "0.1"],
    ],
)
def test_usage_errors_exit_with_code_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[], ["list"], ["run"], ["report"], ["simulate"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: impactbench" in capsys.readouterr().out


def test_module_entry_point_and_exit_code():
    listing = subprocess.run(
        [sys.executable, "-m", "impactbench", "list"], capture_output=True, text=True
    )
    assert listing.returncode == 0 and "convergence" in listing.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "impactbench", "run", "nothing"], capture_output=True, text=True
    )
    assert unknown.returncode == 2 and "unknown study 'nothing'" in unknown.stderr


@pytest.fixture
def probe_study(monkeypatch, tmp_path):
    """Register a study named "probe" of cheap plain-Python runs; returns a setter of its runs."""

    def register(**options):
        runs = probe_runs(tmp_path / "log", heights=(1.0, 0.9, 0.8), **options.pop("first", {}))
        runs += probe_runs(tmp_path / "log", heights=(0.7,), **options)
        study = Study(
            "probe", "Probe", "Test study.", lambda quick: runs, lambda t, f: StudyReport()
        )
        monkeypatch.setitem(STUDIES, "probe", study)
        return ["run", "probe", "--output", str(tmp_path / "out")]

    return register


def test_an_unwritable_cache_warns_and_the_table_is_written(probe_study, tmp_path, capsys):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    argv = probe_study()
    assert main([*argv, "--cache-dir", str(blocked), "--jobs", "1"]) == 0
    assert "impactbench: warning: run cache not written" in capsys.readouterr().err
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv.gz")
    assert list(table["status"]) == ["ok"] * 4


def test_a_corrupt_cache_entry_is_recomputed_on_rerun(probe_study, tmp_path, capsys):
    argv = [*probe_study(), "--cache-dir", str(tmp_path / "cache"), "--jobs", "1"]
    assert main(argv) == 0
    entries = sorted((tmp_path / "cache").glob("*.json"))[:2]
    for how, entry in zip(("null", "[1, 2]"), entries, strict=True):
        entry.write_text(how)
    assert main(argv) == 0
    assert capsys.readouterr().err.count("impactbench: warning: ignoring the run cache entry") == 2
    provenance = json.loads((tmp_path / "out" / "probe" / "provenance.json").read_text())
    assert provenance["computed"] == 2 and provenance["cached"] == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sys_exit_in_a_run_is_a_failed_row_and_the_study_goes_on(probe_study, tmp_path, jobs):
    argv = [*probe_study(exit_code=3), "--no-cache", "--jobs", jobs]
    assert main(argv) == 1  # a run failed
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv.gz")
    assert list(table["status"]) == ["ok", "ok", "ok", "failed"]
    assert table.loc[3, "error"] == "SystemExit: 3"


def test_retry_failed_reruns_the_runs_of_a_crashed_worker(probe_study, tmp_path, capsys):
    argv = probe_study(crash_once=str(tmp_path / "crashed"))
    cache = tmp_path / "cache"
    assert main([*argv, "--cache-dir", str(cache), "--jobs", "2", "--retry-failed", "1"]) == 0
    assert (tmp_path / "crashed").exists()
    table = pd.read_csv(tmp_path / "out" / "probe" / "results.csv.gz")
    assert list(table["status"]) == ["ok"] * 4


def test_report_rebuilds_the_studies_it_can_and_names_the_others(tmp_path, monkeypatch, capsys):
    """A stored table the current code cannot report (one an older version wrote) does not stop
    the other studies' reports: each other study is rebuilt, the failing one's files are left as
    they were, stderr names it with the reason and the command that redoes it, the index says
    it was not rebuilt, and the exit code is 1."""
    from impactbench.bench import cli

    for name in ("convergence", "scaling"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.csv").write_text("key\n")  # as an older version stored it
    (tmp_path / "scaling" / "README.md").write_text("the old report\n")

    def write_study_report(study, folder):
        if study.name == "scaling":
            raise KeyError("a column since added")
        return StudyReport(findings=["rebuilt"])

    monkeypatch.setattr(cli, "write_study_report", write_study_report)
    assert main(["report", "--output", str(tmp_path), "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "study scaling: its report was not rebuilt" in err
    assert "KeyError" in err and "rerun `impactbench run scaling`" in err
    index = (tmp_path / "README.md").read_text()
    assert "- rebuilt" in index and "- Not rebuilt: its report was not rebuilt" in index
    assert (tmp_path / "scaling" / "README.md").read_text() == "the old report\n"
