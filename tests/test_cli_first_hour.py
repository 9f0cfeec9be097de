"""A new user's first hour with the command line: a bad number is a usage error naming its
option, a user's problem that raises fails its run (with the user's message and where) and the
others go on, Ctrl-C says what is kept, the dask backend without ``distributed`` is a usage
error whatever the cache holds, and problem and method instances are taken by compare and by
the runs of a study."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from types import SimpleNamespace

import numpy as np
import pytest

import impactbench as ib
import impactbench.bench.cli as cli
import impactbench.bench.simulate_command as simulate_command
from impactbench.bench import workers
from impactbench.bench.cli import main
from impactbench.bench.pipeline import code_digest
from impactbench.bench.plugins import study_runs
from impactbench.bench.report import PROVENANCE_FILE
from impactbench.bench.results import write_provenance
from impactbench.bench.runner import Outcome, Run, code_version, run_key
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall
from impactbench.studies import STUDIES

SIMULATE = ["simulate", "BouncingBall", "MoreauJean"]
COMPARE = ["compare", "BouncingBall", "MoreauJean"]


@pytest.mark.parametrize(
    ("argv", "option", "message"),
    [
        ([*SIMULATE, "--t-end", "nan", "--h", "0.1"], "--t-end", "finite"),
        ([*SIMULATE, "--t-end", "inf", "--h", "0.1"], "--t-end", "finite"),
        ([*SIMULATE, "--t-end", "-inf", "--h", "0.1"], "--t-end", "finite"),
        ([*SIMULATE, "--t-end", "1", "--h", "-1e-3"], "--h", "> 0"),
        ([*SIMULATE, "--t-end", "1", "--h=-1e-3"], "--h", "> 0"),
        ([*SIMULATE, "--t-end", "1", "--h", "0"], "--h", "> 0"),
        ([*SIMULATE, "--t-end", "1", "--h", "nan"], "--h", "finite"),
        ([*COMPARE, "--t-end", "nan", "--steps", "0.1"], "--t-end", "finite"),
        ([*COMPARE, "--t-end", "1", "--steps", "0.1", "-1e-2"], "--steps", "> 0"),
        ([*COMPARE, "--t-end", "1", "--steps", "inf"], "--steps", "finite"),
        ([*COMPARE, "--t-end", "1", "--tolerances", "-1e-6"], "--tolerances", "> 0"),
        ([*COMPARE, "--t-end", "1", "--steps", "0.1", "--phases", "0"], "--phases", ">= 1"),
        ([*COMPARE, "--t-end", "1", "--steps", "0.1", "--jobs", "0"], "--jobs", "positive"),
    ],
)
def test_a_bad_number_is_a_usage_error_naming_its_option(argv, option, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and message in err
    assert "Traceback" not in err


RAISING_MODULE = textwrap.dedent(
    """
    import numpy as np

    from impactbench import Problem


    class HalfFloor(Problem):
        '''A ball dropped from 1 m whose gap the user left undefined below q = 0.5.'''

        def __init__(self):
            self.name = "HalfFloor"
            self.restitution = 0.5
            self.q0 = np.array([1.0])
            self.v0 = np.array([0.0])

        def mass_matrix(self, q):
            return np.eye(1)

        def forces(self, t, q, v):
            return np.array([-9.81])

        def gap(self, q):
            if q[0] < 0.5:
                raise RuntimeError("my gap is undefined below 0.5")
            return np.array([q[0]])

        def gap_gradient(self, q):
            return np.array([[1.0]])

        def potential_energy(self, q):
            return 9.81 * float(q[0])
    """
)


@pytest.fixture
def raising_module(tmp_path, monkeypatch):
    (tmp_path / "halffloor.py").write_text(RAISING_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("halffloor", None)


def _failure_line(err: str, method: str) -> str:
    return next(line for line in err.splitlines() if f"with {method}" in line)


def test_a_raising_user_kernel_fails_its_run_and_the_others_go_on(raising_module, capsys):
    """The gap raises once q < 1/2, in free fall from q = 1 (v = -g t): at t >= sqrt(1/g)."""
    argv = ["simulate", "halffloor:HalfFloor", "MoreauJean", "EventDriven", "MoreauJean"]
    assert main([*argv, "--t-end", "1", "--h", "1e-2", "--no-warmup"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "run failed" in line]
    assert len(lines) == 3  # the second and third methods ran after the first failed
    for line in lines:
        assert "RuntimeError: my gap is undefined below 0.5" in line
        assert "raised in gap(), halffloor.py:" in line
        t = float(line.split("t = ")[1].split(",")[0])
        q = float(line.split("q = [")[1].split("]")[0])
        assert q < 0.5  # the argument of the call that raised
        assert t >= np.sqrt(1 / 9.81) - 1e-2  # the time of the step's force evaluation


def test_debug_prints_the_traceback(raising_module, capsys):
    argv = ["simulate", "halffloor:HalfFloor", "MoreauJean", "--t-end", "1", "--h", "1e-2"]
    assert main([*argv, "--no-warmup", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raise RuntimeError("my gap is undefined below 0.5")' in err


def test_an_interrupted_simulate_says_nothing_is_kept(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(simulate_command, "simulate", interrupted)
    assert main([*SIMULATE, "--t-end", "1", "--h", "0.1"]) == 130
    err = capsys.readouterr().err
    assert "nothing is kept" in err and "cached" not in err.replace("caches no run", "")


def test_an_interrupted_run_counts_the_runs_it_kept(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    cache.mkdir()
    old = cache / "old.json"
    old.write_text("{}")
    os.utime(old, (time.time() - 3600, time.time() - 3600))  # cached by an earlier command

    def two_runs_then_ctrl_c(study, **options):
        (cache / "a.json").write_text("{}")
        (cache / "b.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_study", two_runs_then_ctrl_c)
    argv = ["run", "--quick", "--cache-dir", str(cache), "--output", str(tmp_path / "out")]
    assert main([*argv, "convergence"]) == 130
    err = capsys.readouterr().err
    assert "2 runs finished in this command are kept in the run cache" in err
    assert main([*argv, "--no-cache", "convergence"]) == 130
    assert "no run is kept (--no-cache)" in capsys.readouterr().err


def test_the_dask_backend_without_distributed_is_a_usage_error(tmp_path, monkeypatch, capsys):
    """Refused before any study runs, so the exit code does not depend on the cache."""

    def no_run(*args, **kwargs):
        raise AssertionError("a study ran")

    monkeypatch.setattr(cli, "run_study", no_run)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--backend", "dask", "--quick", "--output", str(tmp_path), "convergence"])
    assert exit_info.value.code == 2
    assert "distributed package" in capsys.readouterr().err


def test_a_run_takes_problem_and_method_instances():
    """The instance travels pickled in the run's parameters; a worker rebuilds an equal
    problem, and a different instance is a different cache key."""
    ball = BouncingBall(restitution=0.6, q0=2.0)
    run = Run(problem=ball, method=MoreauJean(theta=0.7), t_end=1.0, h=1e-2)
    assert run.problem is workers.problem_from_pickle and run.problem_name == ball.name
    assert run.method is MoreauJean and run.method_kwargs["theta"] == 0.7
    shipped = workers.receive(workers.ship(run), ())
    rebuilt = shipped.problem(**shipped.problem_kwargs)
    assert isinstance(rebuilt, BouncingBall) and rebuilt.restitution == 0.6
    np.testing.assert_array_equal(rebuilt.q0, ball.q0)
    other = Run(problem=BouncingBall(restitution=0.5, q0=2.0), method=MoreauJean, t_end=1.0, h=1e-2)
    assert run_key(run, code_version(run)) != run_key(other, code_version(other))
    with pytest.raises(ValueError, match="problem_kwargs must be empty"):
        Run(problem=ball, method=MoreauJean, t_end=1.0, h=1e-2, problem_kwargs={"q0": 1.0})


def test_compare_takes_a_problem_instance(tmp_path):
    """The same errors as the spec string of the same problem."""
    options = {
        "steps": [2e-2, 1e-2],
        "t_end": 0.5,
        "phases": 1,
        "cache_dir": tmp_path / "cache",
        "output": tmp_path / "out",
    }
    by_instance = ib.compare(BouncingBall(restitution=0.8), [MoreauJean(theta=0.5)], **options)
    by_spec = ib.compare("BouncingBall[restitution=0.8]", ["MoreauJean"], **options)
    column = "max_position_error"
    assert len(by_instance.table) == 2
    np.testing.assert_array_equal(by_instance.table[column], by_spec.table[column])


def _fake_provenance(output, study_name: str, digest: str) -> None:
    folder = output / study_name
    folder.mkdir(parents=True)
    write_provenance(folder / PROVENANCE_FILE, grid="quick", code_digest=digest)


@pytest.fixture
def one_current_one_stale(tmp_path):
    """convergence at the current code version, energy_decay made by other code (its digest
    one character off), and no table for the other studies."""
    output = tmp_path / "reports"
    current = code_digest(study_runs(STUDIES["convergence"], True))
    stale = current[:-1] + ("0" if current[-1] != "0" else "1")
    _fake_provenance(output, "convergence", current)
    _fake_provenance(output, "energy_decay", stale)
    return output


def test_status_lists_each_study_as_current_stale_or_not_run(one_current_one_stale, capsys):
    assert main(["status", "--output", str(one_current_one_stale)]) == 0
    states = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert states.pop("convergence") == "current"
    assert states.pop("energy_decay") == "stale"
    assert set(states) == set(STUDIES) - {"convergence", "energy_decay"}
    assert set(states.values()) == {"not run"}


def test_run_stale_reruns_exactly_the_stale_studies(one_current_one_stale, monkeypatch, capsys):
    ran = []

    def fake_run_study(study, **options):
        ran.append(study.name)
        folder = options["output"] / study.name
        return SimpleNamespace(failed=[], runs=[], cached=0, elapsed=0.0, folder=folder)

    monkeypatch.setattr(cli, "run_study", fake_run_study)
    output = str(one_current_one_stale)
    assert main(["run", "--stale", "--output", output]) == 0
    assert ran == ["energy_decay"]
    ran.clear()
    assert main(["run", "--stale", "--output", output, "convergence"]) == 0
    assert ran == [] and "nothing to rerun" in capsys.readouterr().out


def test_run_study_records_the_code_digest(tmp_path, monkeypatch):
    """What status compares: the provenance run_study writes holds the digest of its runs."""
    from impactbench.bench import pipeline

    def not_run(runs, **options):
        return [Outcome.failure(run, "not run", {}) for run in runs]

    monkeypatch.setattr(pipeline, "execute", not_run)
    monkeypatch.setattr(pipeline, "_write_outputs", lambda *args: recorded.append(args[-1]))
    recorded = []
    study = STUDIES["convergence"]
    pipeline.run_study(study, quick=True, output=tmp_path, report=False, jobs=1)
    assert recorded[0]["code_digest"] == code_digest(study_runs(study, True))
