"""No hang: a stalled adaptive integration stops, a mass matrix that becomes ill conditioned
mid-run stops, and a study's run stops at its time limit (issue probes, plain-Python problems)."""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest

from impactbench import Problem, SimulationError, run_study, simulate
from impactbench.bench import cli
from impactbench.bench.cli import main
from impactbench.bench.runner import Run, execute
from impactbench.bench.study import Study, StudyReport
from impactbench.core import compilation, stall
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall


class VFloor(Problem):
    """A ball on a V-shaped floor g = y - |x|: a gap with a kink at the apex (not C^1)."""

    name = "VFloor"

    def __init__(self) -> None:
        self.restitution = 0.5
        self.q0 = np.array([0.3, 1.0])
        self.v0 = np.zeros(2)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.eye(2)

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.array([0.0, -9.81])

    def gap(self, q: np.ndarray) -> np.ndarray:
        return np.array([q[1] - abs(q[0])])

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[-np.sign(q[0]), 1.0]])

    def potential_energy(self, q: np.ndarray) -> float:
        return 9.81 * float(q[1])


class Skewed(Problem):
    """M(q) = L L^T, L unit lower triangular with L[1, 0] = 2.7e4 tanh(10 x): M(q0) = I, and
    once the body has moved, LDL^T pivots of 1 with a condition number up to 5e17."""

    name = "Skewed"

    def __init__(self) -> None:
        self.restitution = 0.5
        self.q0 = np.array([0.0, 1.0])
        self.v0 = np.array([1.0, 0.0])

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        lower = np.array([[1.0, 0.0], [2.7e4 * np.tanh(10.0 * q[0]), 1.0]])
        return lower @ lower.T

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.array([0.0, -1.0])

    def gap(self, q: np.ndarray) -> np.ndarray:
        return np.array([q[1]])

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[0.0, 1.0]])

    def potential_energy(self, q: np.ndarray) -> float:
        return float(q[1])


def test_the_scipy_path_stops_when_it_stalls_on_a_kinked_gap():
    """The probe: steps of 2.2e-13 at t = 1.287 for ever (1000 steps per 5 s, no event)."""
    with pytest.raises(
        SimulationError, match=f"stalled: {stall.STALL_STEPS} consecutive steps"
    ) as caught:
        simulate(VFloor(), EventDriven(compiled=False), 3.0)
    error = caught.value
    assert "constraint 0" in error.reason and "C^1" in error.reason
    assert 1.0 < error.t < 1.5 and abs(error.q[0]) < 1e-3  # at the apex


@pytest.mark.parametrize("method", [MoreauJean(compiled=False), EventDriven(compiled=False)])
def test_a_mass_matrix_ill_conditioned_mid_run_stops_the_run(method):
    """The probe: unit LDL^T pivots, condition number up to 5e17 (rejected at q0, accepted
    mid-run, where only the pivots were checked): 227 101 steps and 136 s to t = 0.2."""
    with pytest.raises(ValueError, match="badly conditioned"):
        moved = Skewed()
        moved.q0 = np.array([0.5, 1.0])
        moved.check()
    options = {"h": 1e-2} if method.requires_step else {}
    with pytest.raises(SimulationError, match=r"condition number .* > 1e\+12, as at q0"):
        simulate(Skewed(), method, 2.0, **options)


class Sleeper(Problem):
    """A free particle whose forces block in a C call (a 10-minute sleep) after t0: a run that
    no Python-level interruption stops."""

    name = "Sleeper"

    def __init__(self) -> None:
        self.restitution = 0.0
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.eye(1)

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        if t > self.t0:
            time.sleep(600.0)
        return np.zeros(1)

    def gap(self, q: np.ndarray) -> np.ndarray:
        return np.array([q[0]])

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[1.0]])

    def potential_energy(self, q: np.ndarray) -> float:
        return 0.0


def _limited_runs(quick: bool) -> list[Run]:
    return [
        Run(Sleeper, MoreauJean, 1.0, h=0.1, method_kwargs={"compiled": False}),
        Run(VFloor, MoreauJean, 0.5, h=0.01, method_kwargs={"compiled": False}),
    ]


def _no_report(table, folder) -> StudyReport:
    return StudyReport([], [])


LIMITED = Study(
    "limited", "Limited", "A run that blocks.", _limited_runs, _no_report, run_timeout=2
)


def test_a_run_over_its_time_limit_is_stopped_and_recorded_as_failed(tmp_path):
    """The study's ``run_timeout``: the blocked run is killed at 2 s and is a failed row naming
    the limit; the other run is ok and cached, the table has both rows."""
    result = run_study(
        LIMITED, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path / "out", report=False
    )
    blocked, free = result.outcomes
    assert blocked.status == "failed" and "time limit of 2 s (run_timeout)" in blocked.error
    assert free.status == "ok" and not free.error
    assert list(result.table["status"]) == ["failed", "ok"]
    again = execute(_limited_runs(True)[1:], cache_dir=tmp_path / "cache", jobs=1)
    assert again[0].cached


def test_the_run_timeout_is_checked_and_passed_by_the_cli(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="run_timeout"):
        execute(_limited_runs(True), run_timeout=0.0, use_cache=False)
    with pytest.raises(SystemExit) as caught:
        main(["run", "--run-timeout", "-1", "--quick", "tiny"])
    assert caught.value.code == 2
    seen = {}

    def fake_run_study(study, **options):
        seen.update(options)
        raise KeyboardInterrupt  # stop before anything runs (the CLI reports it)

    monkeypatch.setattr(cli, "run_study", fake_run_study)
    assert main(["run", "--run-timeout", "2.5", "--output", str(tmp_path), "convergence"]) != 0
    assert seen["run_timeout"] == 2.5


def test_a_run_whose_process_cannot_start_is_a_failure_not_a_crash(monkeypatch):
    """A daemonic process (a Dask worker's) may not fork a child: the run fails, the study
    goes on."""
    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    outcome = execute(_limited_runs(True)[1:], run_timeout=5.0, use_cache=False, jobs=1)[0]
    assert outcome.status == "failed" and "could not start" in outcome.error


def test_a_limited_compiled_run_starts_with_its_code_loaded(monkeypatch):
    """The compiled loop is loaded before the fork: the child needs no warm-up run."""
    monkeypatch.setattr(compilation, "_LOADED", set())
    run = Run(BouncingBall, MoreauJean, 1.0, h=0.01)
    outcome = execute([run], run_timeout=300.0, use_cache=False, jobs=1)[0]
    assert outcome.status == "ok" and np.isnan(outcome.timing["warmup_time"])
    assert compilation.is_loaded(compilation.compiled_code(MoreauJean(), BouncingBall()))
