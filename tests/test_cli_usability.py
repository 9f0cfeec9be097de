"""The command line as a new user meets it: tuple parameters, the subcommand's usage on an
error, compilation kept out of ``simulate``'s wall time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import impactbench.bench.simulate_command as simulate_command
from impactbench.bench.cli import main
from impactbench.bench.pipeline import study_provenance
from impactbench.core.names import parse_spec
from impactbench.problems import PROBLEMS


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("DoublePendulum[q0=(1.0472,0.6283)]", {"q0": (1.0472, 0.6283)}),
        ("DoublePendulum[q0=[1.0, 0.5], v0=(0,0)]", {"q0": [1.0, 0.5], "v0": (0, 0)}),
        ("DoublePendulum[contacts='a,b',m1=2]", {"contacts": "a,b", "m1": 2}),
        ("DoublePendulum[q0=((1,2),{3:4})]", {"q0": ((1, 2), {3: 4})}),
    ],
)
def test_values_keep_their_commas(spec, expected):
    _, kwargs = parse_spec(spec, PROBLEMS, "problem")
    assert kwargs == expected


@pytest.mark.parametrize(
    "spec",
    ["DoublePendulum[q0=(1,2]", "DoublePendulum[q0=1,2)]", "DoublePendulum[q0='1,2]"],
)
def test_unbalanced_brackets_and_quotes_are_refused(spec):
    with pytest.raises(ValueError, match="unbalanced|unclosed"):
        parse_spec(spec, PROBLEMS, "problem")


def test_the_two_contact_pendulum_from_the_command_line(tmp_path, capsys):
    csv = tmp_path / "run.csv"
    problem = "DoublePendulum[q0=(1.0472,0.6283),v0=(0.5,-0.25),contacts='both']"
    argv = ["simulate", problem, "MoreauJean", "--t-end", "0.01", "--h", "1e-3"]
    assert main([*argv, "--csv", str(csv), "--no-warmup"]) == 0
    first = pd.read_csv(csv).iloc[0]
    assert (first["q0"], first["q1"], first["v0"], first["v1"]) == (1.0472, 0.6283, 0.5, -0.25)


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "BouncingBall", "MoreauJean[theta=2]", "--t-end", "1", "--h", "0.1"],
        ["simulate", "Nowhere", "MoreauJean", "--t-end", "1", "--h", "0.1"],
        ["run", "no_such_study"],
    ],
)
def test_errors_show_the_usage_of_their_subcommand(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: impactbench {argv[0]}" in err
    assert f"impactbench {argv[0]}: error:" in err


def _counting_simulate(monkeypatch):
    """The simulate command's simulate wrapped: records each trajectory it returns."""
    trajectories = []
    real = simulate_command.simulate

    def counted(*args, **kwargs):
        trajectories.append(real(*args, **kwargs))
        return trajectories[-1]

    monkeypatch.setattr(simulate_command, "simulate", counted)
    return trajectories


@pytest.mark.parametrize("warmup", [True, False])
def test_simulate_reports_the_wall_time_of_a_warm_run(warmup, monkeypatch, capsys):
    trajectories = _counting_simulate(monkeypatch)
    argv = ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-3"]
    assert main(argv if warmup else [*argv, "--no-warmup"]) == 0
    out = capsys.readouterr().out
    assert len(trajectories) == (2 if warmup else 1)
    timed = trajectories[-1].stats["wall_time"]
    assert f"wall time {timed:.4g} s" in out
    assert ("warm-up run" in out) is warmup
    if warmup:  # the two runs are the same computation
        np.testing.assert_array_equal(trajectories[0].q, trajectories[1].q)


def test_a_users_study_records_its_own_module_and_revision(tmp_path, monkeypatch):
    import hashlib
    import importlib.util
    import subprocess
    import sys
    from types import SimpleNamespace

    source = "def runs(quick):\n    return []\n"
    (tmp_path / "my_study.py").write_text(source)

    def git(*command):
        subprocess.run(["git", "-C", str(tmp_path), *command], check=True, capture_output=True)

    git("init", "-q")
    git("add", "my_study.py")
    git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "study")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    spec = importlib.util.spec_from_file_location("my_study", tmp_path / "my_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "my_study", module)
    study = SimpleNamespace(runs=module.runs)
    info = study_provenance(study)
    assert info == {
        "study_module": "my_study",
        "study_digest": hashlib.sha256(source.encode()).hexdigest()[:16],
        "study_git_revision": head,
        "study_file": str((tmp_path / "my_study.py").resolve()),
    }
    (tmp_path / "my_study.py").write_text(source + "# edited\n")
    assert study_provenance(study)["study_git_revision"] == head + "-dirty"
