"""The study runner: run specs and keys, the cache, failures, crashes, resumption, backends.

The runs use a cheap plain-Python problem with test hooks (a log of the runs it executed, a
failure, a worker crash, an interruption, a ``sys.exit``); the log file counts the work done,
also in worker processes.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from impactbench import CacheWarning, ImpactLog, Problem, Status, Trajectory, simulate
from impactbench.analysis.fitting import phase_offsets
from impactbench.analysis.metrics import METRICS, Reference
from impactbench.analysis.reference import REFERENCE_DIR_VARIABLE, default_reference_dir
from impactbench.bench import runner
from impactbench.bench.results import (
    TIMING_COLUMNS,
    MissingArtefactError,
    build_table,
    read_artefact,
    table_csv,
    write_table,
)
from impactbench.bench.runner import Case, Grid, Run, entry_checksum, execute, expand
from impactbench.core import compilation, versioning
from impactbench.core._files import read_regular
from impactbench.core.compilation import compiled_code
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, SlantedWall

#: Initial heights at which ProbeBall raises KeyboardInterrupt (the interruption test sets it).
INTERRUPT_AT: set[float] = set()

ALL_METRICS = tuple(METRICS)


class ProbeBall(Problem):
    """Plain-Python bouncing ball (q'' = -9.81, q >= 0) with hooks for the runner tests.

    Parameters
    ----------
    q0, restitution : float
        Initial height and restitution (exact solution: :class:`BouncingBall`).
    log : str, optional
        File to which each construction appends a line (counts the runs executed).
    nan_after : float, optional
        Time after which the forces are NaN (the run stops with a SimulationError).
    crash : bool
        Kill the process on construction (a worker crash).
    crash_once : str, optional
        Kill the process on construction unless this file exists, which it then creates (a
        worker lost once; the run succeeds when retried).
    exit_code : int, optional
        ``sys.exit(exit_code)`` from the forces, as a user's code might.
    interrupt : bool
        Raise KeyboardInterrupt on construction (in a worker: the run's own code, not Ctrl-C).
    """

    def __init__(
        self,
        q0=1.0,
        restitution=0.8,
        log=None,
        nan_after=None,
        crash=False,
        crash_once=None,
        exit_code=None,
        interrupt=False,
    ):
        if log is not None:
            with open(log, "a") as stream:
                stream.write(f"{q0}\n")
        if crash:
            os._exit(1)
        if crash_once is not None and not os.path.exists(crash_once):
            Path(crash_once).touch()
            os._exit(1)
        if q0 in INTERRUPT_AT or interrupt:
            raise KeyboardInterrupt
        self.name = "ProbeBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.restitution = restitution
        self.q0 = np.array([q0])
        self.v0 = np.array([0.0])
        self.nan_after = nan_after
        self.exit_code = exit_code
        self._exact = BouncingBall(q0=q0, restitution=restitution)

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        if self.exit_code is not None and t > 0.1:
            sys.exit(self.exit_code)
        return np.array([np.nan if self.nan_after is not None and t > self.nan_after else -9.81])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.ones((1, 1))

    def potential_energy(self, q):
        return 9.81 * q[0]

    def exact_solution(self, t):
        return self._exact.exact_solution(t)

    def impact_times(self, t_end):
        return self._exact.impact_times(t_end)


def probe_runs(log: Path, heights=(1.0, 0.9, 0.8, 0.7), **kwargs) -> list[Run]:
    cases = [Case(ProbeBall, 1.2, {"q0": q0, "log": str(log), **kwargs}) for q0 in heights]
    return expand(cases, [Grid(MoreauJean, {"theta": [0.5]})], steps=[0.01], metrics=ALL_METRICS)


def executed(log: Path) -> list[float]:
    return [float(line) for line in log.read_text().split()] if log.exists() else []


# --------------------------------------------------------------------------------------------
# Run specification and expansion


def test_expand_names_runs_benchopt_style():
    cases = [Case(BouncingBall, 2.0, {"restitution": 0.8}), Case(SlantedWall, 2.0)]
    grids = [
        Grid(MoreauJean, {"theta": [0.5, 1.0]}),
        Grid(EventDriven, {"integrator": ["DOP853"], "rtol": [1e-6, 1e-8]}, tolerance="rtol"),
    ]
    runs = expand(cases, grids, steps=[1e-2, 3e-3], metrics=["max_position_error"])
    assert len(runs) == 2 * (2 * 2 + 2)
    assert [r.method_name for r in runs[:6]] == ["MoreauJean[theta=0.5]"] * 2 + [
        "MoreauJean[theta=1.0]"
    ] * 2 + ["EventDriven[integrator=DOP853]"] * 2
    assert [r.h for r in runs[:4]] == [1e-2, 3e-3, 1e-2, 3e-3]
    assert runs[4].h is None and runs[4].tolerance_value == 1e-6
    assert {r.problem_name for r in runs} == {"BouncingBall", "SlantedWall"}


def test_expand_runs_phase_families_labelled_with_their_nominal_step():
    cases = [Case(BouncingBall, 2.0)]
    grids = [Grid(MoreauJean), Grid(EventDriven, {"rtol": [1e-6]}, tolerance="rtol")]
    runs = expand(cases, grids, steps=[1e-2, 3e-3], phases=3)
    assert len(runs) == 2 * 3 + 1
    offsets = phase_offsets(3)
    assert [r.nominal_h for r in runs[:6]] == [1e-2] * 3 + [3e-3] * 3
    np.testing.assert_allclose([r.h for r in runs[:3]], 1e-2 * (1 + offsets), rtol=1e-15)
    assert runs[0].h == 1e-2 and runs[3].h == 3e-3  # the first copy is the nominal step
    assert runs[6].h is None and runs[6].nominal_h is None
    # the nominal step is a label: two runs differing only in it share a key
    twin = Run(BouncingBall, MoreauJean, 2.0, h=runs[1].h, nominal_h=5.0)
    version = runner.code_version(twin)
    assert runner.run_key(twin, version) == runner.run_key(runs[1], version)
    assert Run(BouncingBall, MoreauJean, 2.0, h=0.1).nominal_h == 0.1


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"method": MoreauJean, "h": 0.1, "nominal_h": -1.0}, "nominal_h"),
        ({"method": EventDriven, "nominal_h": 0.1}, "nominal_h"),
        ({"method": MoreauJean}, "h"),
        ({"method": EventDriven, "h": 0.1}, "h"),
        ({"method": MoreauJean, "h": 0.1, "metrics": ["nonsense"]}, "metrics"),
        ({"method": MoreauJean, "h": 0.1, "method_kwargs": {"theta": object()}}, "method_kwargs"),
        ({"method": MoreauJean, "h": 0.1, "repeats": 0}, "repeats"),
        ({"method": MoreauJean, "h": 0.1, "repeats": 10, "max_repeats": 5}, "max_repeats"),
        ({"method": MoreauJean, "h": 0.1, "max_repeats": 1.5}, "max_repeats"),
        ({"method": MoreauJean, "h": 0.1, "tolerance": "rtol"}, "tolerance"),
        ({"method": int, "h": 0.1}, "method"),
    ],
)
def test_run_rejects_bad_fields(fields, name):
    with pytest.raises(ValueError, match=name):
        Run(problem=BouncingBall, t_end=1.0, **fields)


def test_code_version_follows_the_sources_a_run_depends_on():
    ball_mj = Run(BouncingBall, MoreauJean, 1.0, h=0.1)
    ball_cu = Run(BouncingBall, CatchingUp, 1.0, h=0.1)  # same module as MoreauJean
    ball_ps = Run(BouncingBall, PaoliSchatzman, 1.0, h=0.1)
    assert runner.code_version(ball_mj) == runner.code_version(ball_cu)
    assert runner.code_version(ball_mj) != runner.code_version(ball_ps)
    # the slanted wall's exact solution imports the bouncing ball's closed form
    wall_sources = versioning._module_sources(SlantedWall)
    assert {"impactbench.problems.slanted_wall", "impactbench.problems.bouncing_ball"} <= set(
        wall_sources
    )
    assert "impactbench.problems.tight_joint" not in wall_sources
    # an artefact function counts with every module it draws on, the analysis helpers too
    from impactbench.studies.energy_decay import energy_artefacts

    stored = versioning._module_sources(energy_artefacts, presentation_too=True)
    assert {"impactbench.studies.energy_decay", "impactbench.analysis.long_time"} <= set(stored)
    assert "impactbench.analysis.long_time" not in versioning._module_sources(energy_artefacts)
    with_artefact = Run(BouncingBall, MoreauJean, 1.0, h=0.1, artefact=energy_artefacts)
    assert runner.code_version(with_artefact) != runner.code_version(ball_mj)
    key = runner.run_key(ball_mj, runner.code_version(ball_mj))
    assert key != runner.run_key(ball_mj, "another version")
    assert key != runner.run_key(Run(BouncingBall, MoreauJean, 1.0, h=0.2), "x")


# --------------------------------------------------------------------------------------------
# Metrics


def dense_reference(problem: Problem, t_end: float) -> Trajectory:
    """Reference run with dense output (a module-level function: named in the cache key)."""
    return simulate(problem, EventDriven(rtol=1e-12, dense_output=True), t_end)


def test_a_reference_run_stands_in_for_the_exact_solution(tmp_path):
    exact = probe_runs(tmp_path / "log", heights=(1.0,))
    referenced = [replace(run, reference=dense_reference) for run in exact]
    against_exact, against_run = execute(exact + referenced, use_cache=False)
    assert against_run.status == "ok"
    for name in ("max_position_error", "l1_velocity_error", "position_error_at_end"):
        assert against_run.metrics[name] == pytest.approx(against_exact.metrics[name], rel=1e-6)
    assert against_run.metrics["missed_impacts"] == against_exact.metrics["missed_impacts"]


def _synthetic_event_driven(ball: BouncingBall, t_end: float, delay: float, drop: int | None):
    """Exact samples plus, at each impact located ``delay`` late, a before/after pair of
    samples; impact number ``drop`` (if any) is left out of the log and a spurious one added."""
    impacts = ball.impact_times(t_end)
    late = impacts + delay
    t = np.sort(np.concatenate([np.linspace(0.0, t_end, 41), late, late]))
    q, v = ball.exact_solution(t)
    _, incoming = ball.exact_solution(impacts - delay)
    v[np.searchsorted(t, late)] = incoming  # the first sample of each pair is before the impact
    logged = late if drop is None else np.sort(np.append(np.delete(late, drop), 0.8))
    log = ImpactLog(
        t=logged,
        constraint=np.zeros(len(logged), dtype=np.int64),
        normal_velocity_before=-np.ones(len(logged)),
        normal_velocity_after=np.ones(len(logged)),
        total=len(logged),
    )
    return Trajectory(t, q, v, log, Status.OK, "ok", {}, "EventDriven", ball.name)


def test_impact_samples_are_compared_side_by_side_and_impacts_matched():
    ball = BouncingBall(restitution=0.8)
    t_end = 2.4  # four well separated impacts
    reference = Reference.exact(ball, t_end)
    assert len(reference.impact_times) == 4
    trajectory = _synthetic_event_driven(ball, t_end, delay=1e-7, drop=None)
    # an impact located 1e-7 late is not an O(1) velocity error over the preceding sample step
    assert METRICS["l1_velocity_error"].function(ball, trajectory, reference) < 1e-5
    assert METRICS["impact_time_error"].function(ball, trajectory, reference) < 2e-7
    assert METRICS["missed_impacts"].function(ball, trajectory, reference) == 0
    assert METRICS["spurious_impacts"].function(ball, trajectory, reference) == 0
    trajectory = _synthetic_event_driven(ball, t_end, delay=1e-7, drop=2)
    assert METRICS["missed_impacts"].function(ball, trajectory, reference) == 1
    assert METRICS["spurious_impacts"].function(ball, trajectory, reference) == 1


# --------------------------------------------------------------------------------------------
# Execution, cache, failures


def test_failed_runs_are_rows_with_their_error_and_never_cached(tmp_path):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0,))
    runs += probe_runs(log, heights=(0.9,), nan_after=0.5)
    runs.append(
        Run(
            ProbeBall,
            MoreauJean,
            1.0,
            h=0.01,
            method_kwargs={"theta": 2.0},
            problem_kwargs={"log": str(log)},
            metrics=["max_position_error"],
        )
    )
    outcomes = execute(runs, cache_dir=tmp_path / "cache")
    assert [o.status for o in outcomes] == ["ok", "failed", "failed"]
    assert "SimulationError" in outcomes[1].error
    assert all(part in outcomes[1].error for part in ("t=", "q=", "v="))
    assert "theta" in outcomes[2].error
    assert np.isnan(outcomes[1].metrics["max_position_error"])
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    table = build_table("test", runs, outcomes)
    assert list(table["status"]) == ["ok", "failed", "failed"]
    assert table.loc[0, "error"] == ""
    # a second execution reads the finished run and retries the failed ones
    before = len(executed(log))
    again = execute(runs, cache_dir=tmp_path / "cache")
    assert [o.cached for o in again] == [True, False, False]
    assert len(executed(log)) == before + 2


def test_cache_hit_does_no_work_and_gives_the_same_table(tmp_path):
    log = tmp_path / "log"
    runs = probe_runs(log)
    first = execute(runs, cache_dir=tmp_path / "cache")
    assert not any(o.cached for o in first)
    assert len(executed(log)) == len(runs)
    second = execute(runs, cache_dir=tmp_path / "cache")
    assert all(o.cached for o in second)
    assert len(executed(log)) == len(runs)  # nothing was run
    # the cache keeps everything, timings included
    assert table_csv(build_table("s", runs, second)) == table_csv(build_table("s", runs, first))


def test_no_cache_computes_everything_and_writes_nothing(tmp_path):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0,))
    execute(runs, cache_dir=tmp_path / "cache")
    execute(runs, cache_dir=tmp_path / "cache", use_cache=False)
    assert len(executed(log)) == 2
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1


def test_a_code_version_change_misses_the_cache(tmp_path, monkeypatch):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0, 0.9))
    execute(runs, cache_dir=tmp_path / "cache")
    monkeypatch.setattr(runner, "code_version", lambda run: "edited-source")
    outcomes = execute(runs, cache_dir=tmp_path / "cache")
    assert not any(o.cached for o in outcomes)
    assert {o.code_version for o in outcomes} == {"edited-source"}
    assert len(executed(log)) == 4


def test_an_interrupted_study_resumes(tmp_path, monkeypatch):
    log = tmp_path / "log"
    runs = probe_runs(log)
    monkeypatch.setattr(f"{__name__}.INTERRUPT_AT", {0.8})
    with pytest.raises(KeyboardInterrupt):
        execute(runs, cache_dir=tmp_path / "cache")
    assert executed(log) == [1.0, 0.9, 0.8]
    monkeypatch.setattr(f"{__name__}.INTERRUPT_AT", set())
    outcomes = execute(runs, cache_dir=tmp_path / "cache")
    assert [o.cached for o in outcomes] == [True, True, False, False]
    assert executed(log) == [1.0, 0.9, 0.8, 0.8, 0.7]


def test_a_worker_crash_loses_no_finished_run(tmp_path):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0, 0.9, 0.8, 0.7, 0.6, 0.5))
    crash = probe_runs(log, heights=(0.4,), crash=True)
    outcomes = execute(runs + crash, jobs=2, cache_dir=tmp_path / "cache")
    assert outcomes[-1].status == "failed"
    assert "worker crashed" in outcomes[-1].error
    cache = runner.RunCache(tmp_path / "cache")
    finished = [o for o in outcomes if o.status == "ok"]
    assert finished  # the crashing run is dispatched after the first runs have returned
    assert all(cache.load(o.key) is not None for o in finished)
    assert all("worker crashed" in o.error for o in outcomes if o.status == "failed")
    # rerun without the crashing run: the finished runs come from the cache
    rerun = execute(runs, jobs=2, cache_dir=tmp_path / "cache")
    assert all(o.status == "ok" for o in rerun)
    assert sum(o.cached for o in rerun) == len(finished)


def test_serial_and_parallel_tables_are_identical_apart_from_timing(tmp_path):
    runs = probe_runs(tmp_path / "log", heights=(1.0, 0.9, 0.8, 0.7, 0.6))
    serial = build_table("s", runs, execute(runs, jobs=1, use_cache=False))
    parallel = build_table("s", runs, execute(runs, jobs=2, use_cache=False))
    assert table_csv(serial, timing=False) == table_csv(parallel, timing=False)
    assert tuple(serial.columns[-len(TIMING_COLUMNS) :]) == TIMING_COLUMNS
    write_table(serial, tmp_path / "a.csv", timing=False)
    write_table(parallel, tmp_path / "b.csv", timing=False)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_dask_backend_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    runs = probe_runs(tmp_path / "log", heights=(1.0, 0.9, 0.8))
    serial = build_table("s", runs, execute(runs, use_cache=False))
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        outcomes = execute(
            runs,
            jobs=2,
            backend="dask",
            scheduler=cluster.scheduler_address,
            cache_dir=tmp_path / "cache",
        )
    assert [o.status for o in outcomes] == ["ok"] * 3
    assert table_csv(build_table("s", runs, outcomes), timing=False) == table_csv(
        serial, timing=False
    )
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"backend": "ray"}, "backend"),
        ({"backend": "dask", "jobs": 10**6}, "jobs"),  # a local cluster: processes here
        ({"scheduler": "tcp://127.0.0.1:1"}, "scheduler"),
        ({"jobs": 0}, "jobs"),
    ],
)
def test_execute_rejects_bad_options(options, name):
    with pytest.raises(ValueError, match=name):
        execute([], **options)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"backend": "dask", "scheduler": "foo://bar"}, "scheduler"),
        ({"backend": "dask", "scheduler": "tcp://127.0.0.1:notaport"}, "scheduler"),
        ({"backend": "dask", "scheduler": "tcp://127.0.0.1:99999"}, "port"),
        ({"backend": "dask", "scheduler": "tcp://[::1"}, "scheduler"),
        ({"jobs": 10**6}, "jobs"),
        ({"retries": -1}, "retries"),
        ({"retries": True}, "retries"),
        ({"retries": runner.MAX_RETRIES + 1}, "retries"),
    ],
)
def test_execute_rejects_bad_addresses_and_sizes_up_front(options, name, tmp_path):
    """Checked before any run or connection: even with every run in the cache."""
    runs = probe_runs(tmp_path / "log", heights=(1.0,))
    execute(runs, cache_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match=name):
        execute(runs, cache_dir=tmp_path / "cache", **options)


def test_a_scheduler_address_the_client_refuses_is_a_value_error(tmp_path):
    """tls:// is a known scheme, but the client refuses it without a TLS context (TypeError
    inside Dask): a ValueError naming the scheduler, raised when connecting."""
    pytest.importorskip("distributed")
    runs = probe_runs(tmp_path / "log", heights=(1.0,))
    with pytest.raises(ValueError, match="scheduler 'tls://127.0.0.1:1'"):
        execute(runs, backend="dask", scheduler="tls://127.0.0.1:1", use_cache=False)


# --------------------------------------------------------------------------------------------
# Cache entries are validated; cache writes may fail


def _ok_entry(tmp_path: Path) -> tuple[list[Run], Path, dict]:
    runs = probe_runs(tmp_path / "log", heights=(1.0,))
    (outcome,) = execute(runs, cache_dir=tmp_path / "cache")
    path = runner.RunCache(tmp_path / "cache").path(outcome.key)
    return runs, path, json.loads(path.read_text())


def _signed(entry):
    """``entry`` with its checksum recomputed (what a writer who edits on purpose can do)."""
    if isinstance(entry, dict):
        entry = {**entry, "checksum": entry_checksum(entry)}
    return entry


def _corrupt(entry: dict, how: str):
    if how == "null":
        return None
    if how == "list":
        return [1, 2]
    entry = json.loads(json.dumps(entry))
    if how == "metrics null":
        entry["outcome"]["metrics"] = None
    elif how == "garbage metric":
        entry["outcome"]["metrics"]["max_position_error"] = "garbage"
    elif how == "missing metric":
        del entry["outcome"]["metrics"]["max_position_error"]
    elif how == "stored failure":
        entry["outcome"]["status"] = "failed"
    elif how == "boolean steps":
        entry["outcome"]["cost"]["steps"] = True
    elif how == "negative time":
        entry["outcome"]["timing"]["wall_time"] = -1.0
    elif how == "NaN wall time":  # only a warm-up time may be NaN (no warm-up was needed)
        entry["outcome"]["timing"]["wall_time"] = float("nan")
    elif how == "repeats not counted":
        entry["outcome"]["timing"]["wall_time_repeats"].append(1.0)
    elif how == "zero inner runs":
        entry["outcome"]["timing"]["inner_runs"] = 0
    elif how == "another run":
        entry["run"]["t_end"] = 99.0
    elif how == "extra field":
        entry["outcome"]["code"] = "print('hi')"
    return entry


@pytest.mark.parametrize(
    "how",
    [
        "null",
        "list",
        "metrics null",
        "garbage metric",
        "missing metric",
        "stored failure",
        "boolean steps",
        "negative time",
        "NaN wall time",
        "repeats not counted",
        "zero inner runs",
        "another run",
        "extra field",
    ],
)
def test_an_invalid_cache_entry_is_recomputed_with_a_warning(tmp_path, how):
    """Each entry is signed again after the damage (as a writer who recomputes the checksum
    would): the schema checks behind the checksum still refuse it."""
    runs, path, entry = _ok_entry(tmp_path)
    path.write_text(json.dumps(_signed(_corrupt(entry, how))))
    with pytest.warns(CacheWarning, match="ignoring the run cache entry"):
        (outcome,) = execute(runs, cache_dir=tmp_path / "cache")
    assert outcome.status == "ok" and not outcome.cached
    assert len(executed(tmp_path / "log")) == 2
    table = build_table("s", runs, [outcome])  # what a corrupt entry used to crash
    assert table.loc[0, "max_position_error"] < 0.05
    # the recomputed run replaced the entry: read back without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (again,) = execute(runs, cache_dir=tmp_path / "cache")
    assert again.cached


def test_an_edited_cache_entry_fails_its_checksum_and_is_replaced(tmp_path):
    """The probe of issue 37: a stored error scaled by hand (as h/0.01 scaled MoreauJean's
    errors into a false order 2) was read back silently; now the checksum refuses it, the run is
    recomputed and the entry replaced."""
    runs, path, entry = _ok_entry(tmp_path)
    true_error = entry["outcome"]["metrics"]["max_position_error"]
    entry["outcome"]["metrics"]["max_position_error"] = true_error * 10.0
    path.write_text(json.dumps(entry))
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        (outcome,) = execute(runs, cache_dir=tmp_path / "cache")
    assert not outcome.cached and outcome.metrics["max_position_error"] == true_error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (again,) = execute(runs, cache_dir=tmp_path / "cache")
    assert again.cached and again.metrics["max_position_error"] == true_error


def test_an_entry_copied_under_another_key_is_refused(tmp_path):
    """The checksum binds the content to its key: another run's entry renamed to this one's,
    with the key and the run's specification fixed as a naive forger would (the old schema
    checks then passed, and the first run got the second's results)."""
    runs = probe_runs(tmp_path / "log", heights=(1.0, 0.9))
    first, second = execute(runs, cache_dir=tmp_path / "cache")
    cache = runner.RunCache(tmp_path / "cache")
    entry = json.loads(cache.path(second.key).read_text())
    entry["key"] = first.key
    entry["run"] = json.loads(cache.path(first.key).read_text())["run"]
    cache.path(first.key).write_text(json.dumps(entry))
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        outcomes = execute(runs, cache_dir=tmp_path / "cache")
    assert not outcomes[0].cached and outcomes[1].cached


def _unblock_fifo(path: Path) -> None:
    """Feed a FIFO once if it is still one (stops a reader that blocked on it, so that a test
    of the old behaviour fails instead of hanging)."""
    if path.is_fifo():
        handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.write(handle, b"[]")
        os.close(handle)


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "folder"])
def test_only_regular_files_are_read_from_the_cache(tmp_path, kind):
    """A FIFO named like an entry hung `impactbench run`; a link to /dev/zero passed the size
    check (0 bytes) and was read without bound. Both are refused with a warning, unread."""
    runs, path, _ = _ok_entry(tmp_path)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        path.symlink_to("/dev/zero")
    watchdog = threading.Timer(10.0, _unblock_fifo, (path,))
    watchdog.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (outcome,) = execute(runs, cache_dir=tmp_path / "cache")
    finally:
        watchdog.cancel()
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert any("not a regular file" in text for text in messages), messages
    assert outcome.status == "ok" and not outcome.cached


def test_the_size_limit_is_enforced_while_reading(tmp_path):
    limit = 1000
    path = tmp_path / "entry"
    path.write_bytes(b"x" * limit)
    assert read_regular(path, limit) == b"x" * limit
    path.write_bytes(b"x" * (limit + 1))
    with pytest.raises(ValueError, match=f"larger than {limit} bytes"):
        read_regular(path, limit)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "none", limit)


def test_an_oversized_or_deeply_nested_cache_entry_is_not_parsed(tmp_path):
    runs, path, _ = _ok_entry(tmp_path)
    for text in ("[" * 100_000 + "]" * 100_000, " " * (runner.MAX_ENTRY_BYTES + 1) + "{}"):
        path.write_text(text)
        with pytest.warns(CacheWarning):
            (outcome,) = execute(runs, cache_dir=tmp_path / "cache")
        assert outcome.status == "ok" and not outcome.cached


def test_an_unwritable_cache_warns_once_and_returns_every_outcome(tmp_path):
    """The cache folder is a file: every write fails (as for a read-only folder)."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    runs = probe_runs(tmp_path / "log")
    with pytest.warns(CacheWarning, match="run cache not written") as caught:
        outcomes = execute(runs, cache_dir=blocked)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    assert [o.status for o in outcomes] == ["ok"] * len(runs)
    assert not any(o.cached for o in outcomes)
    assert len(build_table("s", runs, outcomes)) == len(runs)


# --------------------------------------------------------------------------------------------
# Whatever a run raises is a failed row; retries


@pytest.mark.parametrize("jobs", [1, 2])
def test_sys_exit_in_a_users_force_is_a_failed_row(tmp_path, jobs):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0, 0.9))
    runs += probe_runs(log, heights=(0.8,), exit_code=3)
    outcomes = execute(runs, jobs=jobs, cache_dir=tmp_path / "cache")
    assert [o.status for o in outcomes] == ["ok", "ok", "failed"]
    assert outcomes[2].error == "SystemExit: 3"
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2


def test_keyboard_interrupt_raised_in_a_worker_is_a_failed_row(tmp_path):
    """In a worker process a KeyboardInterrupt can only come from the run's code (a Ctrl-C
    in the launching process still stops execute: test_an_interrupted_study_resumes)."""
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0, 0.9, 0.8))
    runs += probe_runs(log, heights=(0.7,), interrupt=True)
    outcomes = execute(runs, jobs=2, cache_dir=tmp_path / "cache")
    assert [o.status for o in outcomes] == ["ok", "ok", "ok", "failed"]
    assert outcomes[3].error.startswith("KeyboardInterrupt")


class Escape(BaseException):
    """Neither an Exception nor SystemExit nor KeyboardInterrupt."""


def raise_escape(problem: Problem, t_end: float) -> Trajectory:
    """A reference function that raises a bare BaseException (module level: named in keys)."""
    raise Escape("from the reference")


def test_any_base_exception_from_user_code_is_a_failed_row(tmp_path):
    runs = [replace(run, reference=raise_escape) for run in probe_runs(tmp_path / "log")]
    outcomes = execute(runs[:2], cache_dir=tmp_path / "cache")
    assert [o.error for o in outcomes] == ["Escape: from the reference"] * 2


def test_retries_rerun_the_runs_lost_with_a_crashed_worker(tmp_path):
    log = tmp_path / "log"
    runs = probe_runs(log, heights=(1.0, 0.9, 0.8, 0.7, 0.6, 0.5))
    lost_once = probe_runs(log, heights=(0.4,), crash_once=str(tmp_path / "crashed"))
    outcomes = execute(runs + lost_once, jobs=2, cache_dir=tmp_path / "cache", retries=1)
    assert (tmp_path / "crashed").exists()  # the worker did die once
    assert [o.status for o in outcomes] == ["ok"] * 7
    assert executed(log).count(0.4) == 2
    # a run that fails every time is retried as asked, and stays a failed row
    failing = probe_runs(log, heights=(0.3,), nan_after=0.5)
    (outcome,) = execute(failing, cache_dir=tmp_path / "cache", retries=2)
    assert outcome.status == "failed" and "SimulationError" in outcome.error
    assert executed(log).count(0.3) == 3


def test_booleans_are_refused_for_real_parameters(tmp_path):
    with pytest.raises(ValueError, match="t_end"):
        Run(ProbeBall, MoreauJean, True, h=0.01)
    with pytest.raises(ValueError, match=r"\bh\b"):
        Run(ProbeBall, MoreauJean, 1.0, h=True)
    run = Run(ProbeBall, MoreauJean, 1.0, h=0.01, method_kwargs={"theta": True})
    (outcome,) = execute([run], use_cache=False)
    assert outcome.status == "failed" and "theta" in outcome.error and "boolean" in outcome.error


def test_parallel_execution_runs_one_run_per_compiled_code_first():
    """The runs that go first in parallel: one per compiled loop (method, problem, parameters
    other than reals), the first one of fewest steps."""
    runs = [
        Run(BouncingBall, MoreauJean, 2.0, h=0.01),
        Run(BouncingBall, MoreauJean, 2.0, h=0.1),  # same loop, fewer steps
        Run(BouncingBall, MoreauJean, 1.0, h=0.1, method_kwargs={"theta": 1.0}),  # same loop
        Run(BouncingBall, MoreauJean, 0.5, h=0.1, problem_kwargs={"restitution": 0.5}),  # same
        Run(BouncingBall, MoreauJean, 2.0, h=0.1, method_kwargs={"activation": "approaching"}),
        Run(BouncingBall, MoreauJean, 2.0, h=0.1, method_kwargs={"compiled": False}),
        Run(BouncingBall, CatchingUp, 2.0, h=0.1),
        Run(SlantedWall, MoreauJean, 2.0, h=0.1),
        Run(BouncingBall, EventDriven, 2.0),
        Run(BouncingBall, EventDriven, 1.0, method_kwargs={"rtol": 1e-6}),  # same code
    ]
    todo = {f"run{i}": [i] for i in range(len(runs))}
    first = runner._one_per_compiled_code(runs, todo)
    assert sorted(first) == ["run3", "run4", "run5", "run6", "run7", "run9"]


def test_run_time_parameters_a_problem_declares_do_not_split_compiled_code_groups():
    """The cradle declares its launched count a run-time value: k = 1 and k = 2 of one size go
    first as one group (they did as two, and two workers compiled the same engine at once);
    sizes still split groups. The declaration is true: equal ``compilation.compiled_code``."""
    from impactbench.problems import NewtonsCradle

    assert compilation.declared_run_time_parameters(NewtonsCradle) == ("n_launched",)
    runs = [
        Run(NewtonsCradle, EventDriven, 1.0, problem_kwargs={"n_balls": 3, "n_launched": 1}),
        Run(NewtonsCradle, EventDriven, 1.0, problem_kwargs={"n_balls": 3, "n_launched": 2}),
        Run(NewtonsCradle, EventDriven, 1.0, problem_kwargs={"n_balls": 5, "n_launched": 2}),
        Run(NewtonsCradle, MoreauJean, 1.0, h=0.1, problem_kwargs={"n_launched": 2}),
    ]
    first = runner._one_per_compiled_code(runs, {f"run{i}": [i] for i in range(len(runs))})
    assert sorted(first) == ["run0", "run2", "run3"]
    for method in (EventDriven(), MoreauJean()):
        codes = {
            compilation.compiled_code(method, NewtonsCradle(n_balls=5, n_launched=k))
            for k in (1, 2, 3)
        }
        assert len(codes) == 1 and None not in codes


def test_run_time_parameters_are_constructor_parameters_and_inherited():
    class Cradle(SlantedWall):
        pass

    with pytest.raises(ValueError, match="names must be parameters of Cradle.*n_launched"):
        compilation.run_time_parameters("n_launched")(Cradle)
    assert compilation.run_time_parameters("restitution")(Cradle) is Cradle

    class Derived(Cradle):
        pass

    assert compilation.declared_run_time_parameters(Derived) == ("restitution",)
    assert compilation.declared_run_time_parameters(SlantedWall) == ()
    assert compilation.declared_run_time_parameters(lambda: SlantedWall()) == ()


def reference_noting_its_folder(problem, t_end):
    """The ball's exact reference, noting in the reference folder this process sees that it
    was computed there."""
    folder = default_reference_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"computed-{os.getpid()}-{time.monotonic_ns()}").write_text("")
    return Reference.exact(problem, t_end)


def test_runs_in_reused_workers_use_the_launching_process_reference_cache(monkeypatch, tmp_path):
    """Workers started under one reference folder, reused after the launcher moved to another:
    the references of the second execution go to the launcher's folder."""
    run = Run(
        BouncingBall,
        MoreauJean,
        0.3,
        h=0.01,
        metrics=("position_error_at_end",),
        reference=reference_noting_its_folder,
    )
    first, second = tmp_path / "first", tmp_path / "second"

    def pids(folder):
        return {int(p.name.split("-")[1]) for p in folder.glob("computed-*")}

    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, str(first))
    execute([replace(run, h=h) for h in (0.01, 0.02, 0.025, 0.03)], jobs=2, use_cache=False)
    before = set(first.glob("computed-*"))
    monkeypatch.setenv(REFERENCE_DIR_VARIABLE, str(second))
    steps = (0.005, 0.004, 0.0045, 0.0035)
    outcomes = execute([replace(run, h=h) for h in steps], jobs=2, use_cache=False)
    assert all(np.isfinite(o.metrics["position_error_at_end"]) for o in outcomes)
    assert set(first.glob("computed-*")) == before  # nothing went to the workers' own folder
    assert len(list(second.glob("computed-*"))) == len(steps)
    assert pids(second) & pids(first) - {os.getpid()}, "no worker was reused: nothing tested"


def test_a_process_warms_up_once_per_compiled_code(monkeypatch, tmp_path):
    """A run is warmed up in full unless its process has warmed up the same compiled code
    (``compilation.compiled_code``) before; plain-Python runs always are. Rows are unchanged."""
    monkeypatch.setattr(compilation, "_LOADED", set())
    runs = [
        Run(BouncingBall, MoreauJean, 1.0, h=0.01),
        Run(BouncingBall, MoreauJean, 1.0, h=0.02, method_kwargs={"theta": 1.0}),  # same loop
        Run(BouncingBall, MoreauJean, 0.5, h=0.01, problem_kwargs={"restitution": 0.5}),  # same
        Run(BouncingBall, MoreauJean, 1.0, h=0.01, method_kwargs={"activation": "approaching"}),
        Run(BouncingBall, MoreauJean, 1.0, h=0.01, method_kwargs={"compiled": False}),
        Run(BouncingBall, MoreauJean, 1.0, h=0.01, method_kwargs={"compiled": False}),
        *probe_runs(tmp_path / "log")[:2],  # plain Python
    ]
    outcomes = execute(runs, jobs=1, use_cache=False)
    warmed = [bool(np.isfinite(o.timing["warmup_time"])) for o in outcomes]
    assert warmed == [True, False, False, True, True, True, True, True]
    (again,) = execute(runs[1:2], jobs=1, use_cache=False)  # this process has it already
    assert np.isnan(again.timing["warmup_time"]) and again.metrics == outcomes[1].metrics
    execute(runs[:2], jobs=1, cache_dir=tmp_path / "cache")  # a NaN warm-up is stored, read back
    cached = execute(runs[:2], jobs=1, cache_dir=tmp_path / "cache")
    assert all(o.cached and np.isnan(o.timing["warmup_time"]) for o in cached)


def test_compiled_code_is_equal_exactly_for_the_same_compiled_code():
    from impactbench.problems import ImpactingBar, NewtonsCradle

    ball = BouncingBall()
    code = compiled_code(MoreauJean(), ball)
    assert code is not None and hash(code) == hash(compiled_code(MoreauJean(), ball))
    assert compiled_code(MoreauJean(theta=1.0), BouncingBall(restitution=0.5)) == code
    assert compiled_code(MoreauJean(activation="approaching"), ball) != code
    assert compiled_code(CatchingUp(), ball) != code
    assert compiled_code(MoreauJean(), SlantedWall()) != code
    assert compiled_code(MoreauJean(compiled=False), ball) is None
    assert compiled_code(MoreauJean(), ProbeBall()) is None
    three, five = NewtonsCradle(n_balls=3), NewtonsCradle(n_balls=5)
    launched = NewtonsCradle(n_balls=3, n_launched=2)  # another state, the same code
    assert compiled_code(PaoliSchatzman(), launched) == compiled_code(PaoliSchatzman(), three)
    assert compiled_code(PaoliSchatzman(), five) != compiled_code(PaoliSchatzman(), three)
    bars = [ImpactingBar(n_elements=n) for n in (10, 20)]
    assert compiled_code(MoreauJean(), bars[0]) != compiled_code(MoreauJean(), bars[1])
    engine = compiled_code(EventDriven(), ball)
    assert engine is not None and engine == compiled_code(EventDriven(rtol=1e-6), ball)
    assert compiled_code(EventDriven(integrator="RK45"), ball) != engine
    assert compiled_code(EventDriven(integrator="Radau"), ball) is None  # the scipy path
    assert compiled_code(EventDriven(compiled=False), ball) is None


def test_compiled_code_keeps_its_last_key_while_its_inputs_are_equal():
    """The same key object for the same problem (the time-stepping loops look their loop up by
    identity); a key for another problem, and an equal one again for the first."""
    method, ball, wall = MoreauJean(), BouncingBall(), SlantedWall()
    code = compiled_code(method, ball)
    assert compiled_code(method, BouncingBall()) is code
    other = compiled_code(method, wall)
    assert other != code and other.n_dof == wall.n_dof == 2 and other.method is MoreauJean
    assert compiled_code(method, ball) == code
    assert compiled_code(MoreauJean(), ball) == code


def test_compile_makes_a_short_run_of_compiled_code_only(monkeypatch, tmp_path):
    calls = []

    def recorded(problem, method, t_end, **options):
        calls.append((type(method).__name__, t_end, options.get("h")))

    monkeypatch.setattr(compilation, "simulate", recorded)
    runner._compile(Run(BouncingBall, MoreauJean, 2.0, h=0.01))
    runner._compile(Run(BouncingBall, MoreauJean, 2.0, h=0.5))  # the horizon bounds it
    runner._compile(Run(BouncingBall, EventDriven, 2.0))
    assert calls == [
        ("MoreauJean", pytest.approx(0.1), 0.01),
        ("MoreauJean", 2.0, 0.5),
        ("EventDriven", pytest.approx(2e-3), None),
    ]
    runner._compile(Run(BouncingBall, MoreauJean, 2.0, h=0.01, method_kwargs={"compiled": False}))
    runner._compile(Run(BouncingBall, EventDriven, 2.0, method_kwargs={"integrator": "Radau"}))
    runner._compile(Run(ProbeBall, MoreauJean, 1.0, h=0.01, problem_kwargs={"crash": True}))
    assert len(calls) == 3  # nothing to compile (plain Python, scipy); a plain problem not built
    runner._compile(Run(BouncingBall, MoreauJean, 2.0, h=0.01, method_kwargs={"theta": 7.0}))
    assert len(calls) == 3  # a method that cannot be built: left to the run to report


def logged_ball(log: str, restitution: float = 0.8) -> BouncingBall:
    """A compiled bouncing ball whose construction appends a line to ``log``."""
    with open(log, "a") as stream:
        stream.write(f"{os.getpid()}\n")
    return BouncingBall(restitution=restitution)


def test_a_serial_execution_compiles_in_parallel_first(tmp_path):
    """jobs=1, compile_jobs=2: one construction per compiled-code group in the compile pass,
    in worker processes, then every run here; the table is that of a plain serial execution."""
    log = tmp_path / "log"
    cases = [Case(logged_ball, 1.0, {"log": str(log), "restitution": e}) for e in (0.5, 0.8)]
    grids = [Grid(MoreauJean, {"theta": [0.5, 1.0]}), Grid(CatchingUp, {})]
    runs = expand(cases, grids, steps=[0.01], metrics=("energy_at_end",))
    assert len(runs) == 6  # two groups: MoreauJean and CatchingUp
    outcomes = execute(runs, jobs=1, compile_jobs=2, use_cache=False)
    pids = [int(line) for line in log.read_text().split()]
    assert len(pids) == 2 + 6
    assert os.getpid() not in pids[:2] and pids[2:] == [os.getpid()] * 6
    serial = execute(runs, jobs=1, use_cache=False)
    assert [o.metrics for o in outcomes] == [o.metrics for o in serial]
    with pytest.raises(ValueError, match="compile_jobs must be a positive integer"):
        execute(runs, compile_jobs=0)
    with pytest.raises(ValueError, match="compile_jobs must be at most"):
        execute(runs, compile_jobs=10**6)


def test_read_artefact_keeps_the_table_s_runs_and_names_the_first_missing_one(tmp_path):
    """Four stored rows of runs a, z, b, a (z not in the table): the table's runs are read back
    in stored order; a required run without rows is named, with the command that redoes it."""
    pd.DataFrame({"key": ["a", "z", "b", "a"], "t": [0.0, 9.0, 1.0, 2.0]}).to_csv(
        tmp_path / "curve.artefact.csv", index=False
    )
    table = pd.DataFrame(
        {
            "key": ["a", "b", "c"],
            "status": ["ok", "ok", "failed"],
            "study": "probe",
            "problem": ["P", "P", "Q"],
            "method": ["M", "M", "N"],
            "h": [0.1, 0.2, 0.3],
        }
    )
    stored = read_artefact(table, tmp_path, "curve")  # c failed: not required
    assert stored["key"].tolist() == ["a", "b", "a"] and stored["t"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(MissingArtefactError, match=r"^1 run\(s\) of probe .* Q N h=0.3: rerun"):
        read_artefact(table, tmp_path, "curve", required=["a", "c"])
    with pytest.raises(MissingArtefactError, match=r"^2 run\(s\) of probe .* P M h=0.1"):
        read_artefact(table, tmp_path, "absent")


def test_an_overflowed_impact_log_marks_its_counts_as_lower_bounds(tmp_path):
    """A resting ball logs an impulse at every step: with a log of 5 entries the stored events
    are a lower bound, said by the impacts_capped column (the raw entry count stays exact)."""
    common = {"problem": BouncingBall, "method": MoreauJean, "t_end": 3.0, "h": 1e-2}
    capped = Run(**common, method_kwargs={"log_capacity": 5})
    full = Run(**common)
    outcomes = execute([capped, full], cache_dir=tmp_path, jobs=1, progress=False)
    assert [o.cost["impacts_capped"] for o in outcomes] == [True, False]
    assert outcomes[0].cost["impact_log_entries"] == outcomes[1].cost["impact_log_entries"] > 5
    assert outcomes[0].cost["impacts"] <= outcomes[1].cost["impacts"]
    table = build_table("capped", [capped, full], outcomes)
    assert table["impacts_capped"].tolist() == [True, False]
    again = execute([capped], cache_dir=tmp_path, jobs=1, progress=False)[0]  # from the cache
    assert again.cached and again.cost["impacts_capped"] is True


def test_interleaved_runs_are_timed_round_robin(monkeypatch, tmp_path):
    """``interleave``: both runs performed untimed first, then one repeat (or one dropped
    attempt shorter than 10 ms) of each per round; the outcomes and the cache are those of a
    run timed alone."""
    calls = []

    def logged(problem, method, t_end, **options):
        calls.append(options["h"])
        return simulate(problem, method, t_end, **options)

    monkeypatch.setattr(runner, "simulate", logged)
    runs = [Run(BouncingBall, MoreauJean, 1.0, h=h, repeats=3, metrics=["max_position_error"])
            for h in (0.1, 0.05)]  # fmt: skip
    outcomes = execute(runs, cache_dir=tmp_path, interleave=True)
    blocks = [h for h, _ in itertools.groupby(calls)]
    # untimed: run 1, run 2; then at least three rounds of run 1, run 2
    assert blocks[:8] == [0.1, 0.05] * 4
    for outcome in outcomes:
        assert outcome.status == "ok" and outcome.timing["timed_repeats"] == 3
        repeats = outcome.timing["wall_time_repeats"]
        assert outcome.timing["wall_time"] == min(repeats) and len(repeats) == 3
        assert min(repeats) * outcome.timing["inner_runs"] >= 0.5 * runner.MIN_TIMED_SECONDS
    alone = [runner.perform(run) for run in runs]
    assert [o.metrics for o in outcomes] == [o.metrics for o in alone]
    assert [o.cost for o in outcomes] == [o.cost for o in alone]
    again = execute(runs, cache_dir=tmp_path, interleave=True)
    assert all(outcome.cached for outcome in again)
    stored = [json.dumps(o.timing, sort_keys=True) for o in again]
    assert stored == [json.dumps(o.timing, sort_keys=True) for o in outcomes]  # NaN as NaN
