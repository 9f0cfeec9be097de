"""One trajectory per event-driven run: the errors, cost and counts of a study's row come from
the timed run itself, through the dense output that run kept (never from a rerun)."""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench.analysis.metrics import METRICS, max_position_error
from impactbench.analysis.reference import Reference
from impactbench.bench import runner
from impactbench.core.events import engine as events_engine
from impactbench.core.events.engine import simulate_compiled
from impactbench.core.events.plain import PlainRun
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall

RESTITUTION = 0.8


def _ball() -> tuple[BouncingBall, float]:
    """The ball of the work-precision study and its horizon (past the accumulation)."""
    ball = BouncingBall(restitution=RESTITUTION)
    return ball, ball.accumulation_time + 1.5


def test_compiled_dense_output_is_the_runs_own():
    """The compiled engine's dense output: kept in the run without changing it (samples and
    counts bit for bit those of a run without it), reproducing its samples (right values at
    every sample time, the pre-impact samples as left limits) and exact on the flights."""
    ball, t_end = _ball()
    plain = ib.simulate(ball, EventDriven(rtol=1e-11), t_end)
    run = ib.simulate(ball, EventDriven(rtol=1e-11, dense_output=True), t_end)
    assert run.stats["engine"] == "compiled" and plain.dense is None
    for name in ("t", "q", "v"):
        np.testing.assert_array_equal(getattr(run, name), getattr(plain, name))
    for name in ("steps", "force_evaluations", "impacts"):
        assert run.stats[name] == plain.stats[name]
    dense = run.dense
    assert dense.degree == 7 and dense.t0 == ball.t0 and dense.t_end == t_end
    times, last = np.unique(run.t[::-1], return_index=True)
    last = run.t.size - 1 - last  # the last sample of each time: the post-impact state
    q, v = dense(times)
    np.testing.assert_array_equal(q, run.q[last])
    np.testing.assert_array_equal(v, run.v[last])
    pairs = np.flatnonzero(run.t[1:] == run.t[:-1])  # impact samples: before, after
    assert pairs.size >= 5
    _, v_left = dense.left(run.t[pairs])
    np.testing.assert_array_equal(v_left, run.v[pairs])
    np.testing.assert_array_equal(dense.impacts, np.unique(run.impacts.t))
    # inside the steps: the interpolant of a parabola, exact up to the impact times' error
    middle = 0.5 * (dense.breaks[1:] + dense.breaks[:-1])
    middle = middle[middle < ball.accumulation_time]
    exact_q, _ = ball.exact_solution(middle)
    assert np.abs(dense(middle)[0] - exact_q).max() < 1e-9


def test_rk45_dense_output_of_the_engine():
    """The RK45 pair's quartic interpolant (the engine's templates as plain Python): exact on
    the ball's flights up to the tolerance, reproducing the samples."""
    ball = BouncingBall(restitution=RESTITUTION)
    t_end = 0.6 * ball.accumulation_time
    rtol = 1e-8
    run = simulate_compiled(
        ball, t_end, rtol=rtol, atol=1e-10, integrator="RK45", compile=False, dense_output=True
    )
    assert run.dense.degree == 4 and run.dense.t_end == t_end
    q, _ = run.dense(run.t)
    np.testing.assert_allclose(q, run.q, rtol=0, atol=1e-14)
    assert max_position_error(ball, run) < 10 * rtol


def test_runner_measures_the_timed_run(monkeypatch):
    """The referee's case, the ball at rtol 1e-11 on the compiled engine: every simulation the
    runner makes is one call of the compiled engine with its dense output kept (no scipy path,
    no rerun), all give the same trajectory bit for bit, and the row's errors, steps, force
    evaluations and impacts are those of the timed run."""
    made: list[tuple[object, ib.Trajectory]] = []
    engine_calls = []
    simulate, engine_run = runner.simulate, events_engine.PreparedEngine.run

    def recording(problem, method, t_end, **options):
        trajectory = simulate(problem, method, t_end, **options)
        made.append((method, trajectory))
        return trajectory

    def counted(self, *args, **kwargs):
        engine_calls.append(self.dense)
        return engine_run(self, *args, **kwargs)

    def no_scipy_path(self):
        raise AssertionError("the scipy path ran")

    monkeypatch.setattr(runner, "simulate", recording)
    monkeypatch.setattr(events_engine.PreparedEngine, "run", counted)
    monkeypatch.setattr(PlainRun, "execute", no_scipy_path)
    ball, t_end = _ball()
    metrics = ["max_position_error", "l1_velocity_error", "hausdorff_velocity_distance"]
    run = runner.Run(
        BouncingBall, EventDriven, t_end, problem_kwargs={"restitution": RESTITUTION},
        method_kwargs={"rtol": 1e-11}, metrics=metrics, repeats=3,
    )  # fmt: skip
    outcome = runner.perform(run)
    assert outcome.status != runner.FAILED, outcome.error
    timing = outcome.timing
    assert timing["timed_repeats"] >= 3
    assert len(made) >= timing["timed_repeats"] * timing["inner_runs"]
    assert engine_calls == [True] * len(made)  # one engine call per simulation
    method = made[0][0]
    assert method.dense_output and method.uses_compiled_engine(ball)
    last = made[-1][1]
    for other, trajectory in made:
        assert other is method
        for name in ("t", "q", "v"):
            np.testing.assert_array_equal(getattr(trajectory, name), getattr(last, name))
        np.testing.assert_array_equal(trajectory.dense.values, last.dense.values)
        np.testing.assert_array_equal(trajectory.dense.breaks, last.dense.breaks)
    assert outcome.cost["steps"] == last.stats["steps"]
    assert outcome.cost["force_evaluations"] == last.stats["force_evaluations"]
    assert outcome.cost["impact_log_entries"] == last.stats["impacts"]
    reference = Reference.exact(ball, t_end)
    for name in metrics:
        assert outcome.metrics[name] == METRICS[name].function(ball, last, reference)


def test_a_run_whose_repeats_differ_fails(monkeypatch):
    """A simulation that gives another trajectory than the measured one fails the run, timed
    in place or interleaved (its metrics would not be the timed run's)."""
    simulate = runner.simulate
    calls = []

    def drifting(problem, method, t_end, **options):
        trajectory = simulate(problem, method, t_end, **options)
        calls.append(None)
        if len(calls) % 2 == 0:
            trajectory.q[-1] += 1e-15
        return trajectory

    monkeypatch.setattr(runner, "simulate", drifting)
    run = runner.Run(
        BouncingBall, EventDriven, 1.0, method_kwargs={"rtol": 1e-6},
        metrics=["max_position_error"], repeats=2,
    )  # fmt: skip
    outcome = runner.perform(run)
    assert outcome.status == runner.FAILED and "not deterministic" in outcome.error
    calls.clear()
    untimed, repeats = runner._perform(run, True, timed=False)
    assert untimed.status != runner.FAILED and repeats is not None
    with pytest.raises(RuntimeError, match="not deterministic"):
        repeats.attempt()


def test_dense_output_is_built_after_the_clock(monkeypatch):
    """The conversion of the kept pieces into a DenseOutput is post-processing that a run
    without dense output does not do: Method.solve builds it after its clock stopped, so that
    the run's wall time counts its steps and the keeping of its pieces only (a clock that the
    conversion advances by 1000 s leaves the wall time below it)."""
    from impactbench.core import method as method_module

    ball, t_end = _ball()
    clock = {"now": 0.0}
    real_build = events_engine.dense_output

    def slow_build(*args, **kwargs):
        clock["now"] += 1000.0  # what the conversion costs on the patched clock
        return real_build(*args, **kwargs)

    def perf_counter() -> float:
        clock["now"] += 1e-6
        return clock["now"]

    monkeypatch.setattr(events_engine, "dense_output", slow_build)
    monkeypatch.setattr(method_module.time, "perf_counter", perf_counter)
    run = ib.simulate(ball, EventDriven(rtol=1e-11, dense_output=True), t_end)
    monkeypatch.undo()
    assert isinstance(run.dense, ib.DenseOutput)
    assert clock["now"] >= 1000.0  # the conversion ran
    assert run.stats["wall_time"] < 1.0
    compiled = simulate_compiled(ball, t_end, rtol=1e-11, dense_output=True)
    np.testing.assert_array_equal(compiled.dense.values, run.dense.values)
