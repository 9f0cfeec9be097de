"""What the cuts of simulate's per-call work must keep: the contract check of a compiled
problem skipped only while its attributes are unchanged, reused work buffers that carry nothing
from one run to the next, and the integration time reported next to the wall time."""

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core import problem as problem_module
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall, TightJoint


@pytest.fixture
def full_checks(monkeypatch):
    """The number of full runs of Problem.check (the checks of the values at q0)."""
    calls = []
    original = problem_module.Problem.check

    def counted(self):
        calls.append(type(self).__name__)
        original(self)

    monkeypatch.setattr(problem_module.Problem, "check", counted)
    return calls


def test_an_unchanged_compiled_problem_is_not_checked_again(full_checks):
    ball = BouncingBall(restitution=1.0)  # checked by its constructor
    assert full_checks == ["BouncingBall"]
    for _ in range(3):
        simulate(ball, MoreauJean(), 0.01, h=1e-3)
    assert full_checks == ["BouncingBall"]
    ball.v0 = np.array([0.5])  # a new valid value: checked in full, once
    simulate(ball, MoreauJean(), 0.01, h=1e-3)
    simulate(ball, MoreauJean(), 0.01, h=1e-3)
    assert full_checks == ["BouncingBall"] * 2


@pytest.mark.parametrize(
    ("mutate", "name"),
    [
        (lambda ball: ball.q0.__setitem__(0, -1.0), "q0"),  # in place: the same array object
        (lambda ball: ball.v0.__setitem__(0, np.nan), "v0"),
        (lambda ball: setattr(ball, "restitution", np.float64(2.0)), "restitution"),
        (lambda ball: setattr(ball, "n_dof", 2), "q0"),  # q0 no longer has n_dof entries
        (lambda ball: setattr(ball, "mass_structure", "banded"), "mass_structure"),
    ],
)
def test_an_attribute_mutated_after_a_run_is_still_a_value_error_naming_it(mutate, name):
    ball = BouncingBall()
    simulate(ball, MoreauJean(), 0.01, h=1e-3)  # passes, and its check is kept
    mutate(ball)
    with pytest.raises(ValueError, match=name):
        simulate(ball, MoreauJean(), 0.01, h=1e-3)


def _run(problem, method, t_end, **options):
    trajectory = simulate(problem, method, t_end, **options)
    return trajectory.t, trajectory.q, trajectory.v, trajectory.impacts.t, trajectory.stats


def _same(first, second):
    for a, b in zip(first[:4], second[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    keys = ("steps", "force_evaluations", "impacts")
    assert [first[4][k] for k in keys] == [second[4][k] for k in keys]


@pytest.mark.parametrize(
    ("method", "options"),
    [(MoreauJean(), {"h": 1e-3}), (EventDriven(), {})],
    ids=["time-stepping", "event-driven"],
)
def test_reused_work_buffers_carry_nothing_from_one_run_to_the_next(method, options):
    # the resting ball (contact at every step: warm-started LCPs, Zeno cut) run again after a
    # different run of the same sizes, which takes the same pooled buffers
    first = _run(BouncingBall(restitution=0.8), method, 6.0, **options)
    _run(BouncingBall(restitution=0.5, q0=2.0), method, 3.0, **options)
    _same(first, _run(BouncingBall(restitution=0.8), method, 6.0, **options))
    joint = TightJoint()  # two constraints
    second = _run(joint, method, 2.0, **options)
    _run(TightJoint(restitution=0.2), method, 1.0, **options)
    _same(second, _run(joint, method, 2.0, **options))


@pytest.mark.parametrize(
    ("method", "options"),
    [
        (MoreauJean(), {"h": 1e-3}),
        (MoreauJean(compiled=False), {"h": 1e-2}),
        (EventDriven(), {}),
        (EventDriven(compiled=False), {}),
    ],
    ids=["compiled loop", "plain loop", "compiled engine", "scipy"],
)
def test_the_integration_time_is_part_of_the_wall_time(method, options):
    stats = simulate(BouncingBall(), method, 0.5, **options).stats
    assert 0.0 < stats["integration_time"] <= stats["wall_time"]


def test_a_freed_problem_leaves_no_kept_check():
    ball = BouncingBall()
    key = id(ball)
    assert key in problem_module._PASSED
    del ball
    assert key not in problem_module._PASSED


def test_an_engine_run_that_outgrows_its_output_is_the_same_run():
    # capacity 2 fills up at once: the run is repeated with 4, 8, ... samples, each size taking
    # its own pooled buffers; the trajectory is that of a run with room from the start
    from impactbench.core.events import simulate_compiled

    ball = BouncingBall(restitution=0.8)
    roomy = simulate_compiled(ball, 6.0)
    for _ in range(2):
        grown = simulate_compiled(ball, 6.0, capacity=2)
        for a, b in ((roomy.t, grown.t), (roomy.q, grown.q), (roomy.impacts.t, grown.impacts.t)):
            np.testing.assert_array_equal(a, b)
        assert grown.stats["steps"] == roomy.stats["steps"] and len(grown.t) > 2
