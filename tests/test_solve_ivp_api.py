"""solve_ivp's conveniences: Problem.from_functions, simulate(t_eval=...), simulate(events=...).

The problem is a ball of mass 2 dropped from height 1 onto the floor q >= 0 (restitution 0.8),
written as plain functions; its closed form is :func:`bouncing_gap`. The crossings of q = 0.5:
down at sqrt(1 / g) (before the first impact at t1 = sqrt(2 / g)), then up and down during the
first rebound (speed V = e sqrt(2 g), apex e^2 = 0.64 > 0.5) at t1 + (V -+ sqrt(V^2 - g)) / g.
"""

from __future__ import annotations

import math

import cloudpickle
import numpy as np
import pytest

import impactbench as ib
from impactbench.core.dense import DenseOutput
from impactbench.core.extension import SampledExtension
from impactbench.methods import METHODS, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems.bouncing_ball import bouncing_gap

GRAVITY, MASS, RESTITUTION, T_END = 9.81, 2.0, 0.8, 1.0
T_IMPACT = math.sqrt(2.0 / GRAVITY)
REBOUND = RESTITUTION * math.sqrt(2.0 * GRAVITY)
T_DOWN = math.sqrt(1.0 / GRAVITY)
T_UP = T_IMPACT + (REBOUND - math.sqrt(REBOUND**2 - GRAVITY)) / GRAVITY
T_DOWN_AGAIN = T_IMPACT + (REBOUND + math.sqrt(REBOUND**2 - GRAVITY)) / GRAVITY
T_APEX = T_IMPACT + REBOUND / GRAVITY
H = 1e-3


def closed_form(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, u = bouncing_gap(t, t0=0.0, s0=1.0, u0=0.0, gravity=GRAVITY, restitution=RESTITUTION)
    return np.reshape(s, (-1, 1)), np.reshape(u, (-1, 1))


def ball(**overrides) -> ib.Problem:
    arguments = dict(
        mass_matrix=lambda q: np.array([[MASS]]),
        forces=lambda t, q, v: np.array([-MASS * GRAVITY]),
        gap=lambda q: np.array([q[0]]),
        gap_gradient=lambda q: np.array([[1.0]]),
        q0=[1.0],
        v0=[0.0],
        restitution=RESTITUTION,
        potential_energy=lambda q: MASS * GRAVITY * q[0],
        exact_solution=closed_form,
        name="ball",
    )
    arguments.update(overrides)
    return ib.Problem.from_functions(**arguments)


def run(method: ib.Method, problem: ib.Problem | None = None, **options) -> ib.Trajectory:
    h = H if method.requires_step else None
    return ib.simulate(problem or ball(), method, T_END, h=h, **options)


def at_half(t, q, v):
    return q[0] - 0.5


def event(function, terminal=False, direction=0.0):
    def wrapped(t, q, v):
        return function(t, q, v)

    wrapped.terminal, wrapped.direction = terminal, direction
    return wrapped


# -- Problem.from_functions -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(METHODS))
def test_from_functions_runs_every_method_to_the_closed_form(name):
    # the mass enters: with M = 1 the same forces would double the acceleration (error O(1))
    trajectory = run(METHODS[name]())
    q, v = closed_form(trajectory.t)
    assert trajectory.status is ib.Status.OK and trajectory.t[-1] == T_END
    assert trajectory.impacts.total >= 1 and abs(trajectory.impacts.t[0] - T_IMPACT) < 0.01
    bound = 1e-8 if name == "EventDriven" else 0.05  # Adaptive: its default rtol 1e-3
    assert np.abs(trajectory.q - q).max() < bound


def test_from_functions_is_checked_and_names_the_bad_argument():
    with pytest.raises(ValueError, match="gap_gradient must be a callable"):
        ball(gap_gradient=np.array([[1.0]]))
    with pytest.raises(ValueError, match="admissible"):
        ball(q0=[-1.0])
    with pytest.raises(ValueError, match="restitution"):
        ball(restitution=1.5)
    with pytest.raises(ValueError, match=r"mass_matrix\(q0\)"):
        ball(mass_matrix=lambda q: np.array([[-1.0]]))
    with pytest.raises(ValueError, match=r"gap_gradient\(q0\) must return shape"):
        ball(gap_gradient=lambda q: np.array([1.0]))


def test_from_functions_without_energy_or_closed_form():
    problem = ball(potential_energy=None, exact_solution=None)
    assert not problem.has_exact_solution and ball().has_exact_solution
    assert math.isnan(problem.energy(np.array([1.0]), np.array([0.0])))
    with pytest.raises(NotImplementedError):
        problem.exact_solution(np.array([0.0]))


def test_from_functions_pickles_with_cloudpickle():
    problem = ball()
    copy = cloudpickle.loads(cloudpickle.dumps(problem))
    first, second = run(MoreauJean(), problem), run(MoreauJean(), copy)
    np.testing.assert_array_equal(first.q, second.q)
    np.testing.assert_array_equal(first.v, second.v)


# -- t_eval ----------------------------------------------------------------------------------


def test_t_eval_of_event_driven_is_its_dense_output_at_the_closed_form():
    times = np.linspace(0.0, T_END, 37)
    trajectory = run(EventDriven(), t_eval=times)
    q, v = closed_form(times)
    np.testing.assert_array_equal(trajectory.t, times)
    assert np.abs(trajectory.q - q).max() < 1e-8
    assert np.abs(trajectory.v - v).max() < 1e-8
    assert trajectory.dense is not None and "dense_output=True" in trajectory.method


def test_t_eval_on_the_grid_gives_the_time_steppers_samples():
    full = run(MoreauJean())
    chosen = full.t[::7]
    sampled = run(MoreauJean(), t_eval=chosen)
    np.testing.assert_array_equal(sampled.t, chosen)
    np.testing.assert_array_equal(sampled.q, full.q[::7])
    np.testing.assert_array_equal(sampled.v, full.v[::7])


def test_t_eval_between_steps_is_the_stated_extension():
    full = run(PaoliSchatzman())
    middles = 0.5 * (full.t[:-1] + full.t[1:])
    between = run(PaoliSchatzman(), t_eval=middles)
    np.testing.assert_allclose(between.q, 0.5 * (full.q[:-1] + full.q[1:]), rtol=0, atol=1e-14)
    impact_step = np.searchsorted(full.t, full.impacts.t, side="left") - 1
    smooth = np.ones(middles.shape[0], dtype=bool)
    smooth[impact_step] = False
    expected = 0.5 * (full.v[:-1] + full.v[1:])
    np.testing.assert_allclose(between.v[smooth], expected[smooth], rtol=0, atol=1e-13)
    # in a step with an impulse v keeps its pre-impact value up to the logged impact time
    np.testing.assert_array_equal(between.v[impact_step], full.v[impact_step])
    # consistency: between the steps as accurate as at the steps (first order through impact)
    q, _ = closed_form(middles)
    assert np.abs(between.q - q).max() < 10 * H


# -- events ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("direction", "expected"),
    [(0.0, [T_DOWN, T_UP, T_DOWN_AGAIN]), (-1.0, [T_DOWN, T_DOWN_AGAIN]), (1.0, [T_UP])],
)
def test_events_of_event_driven_at_the_closed_form_crossings(direction, expected):
    trajectory = run(EventDriven(), events=[event(at_half, direction=direction)])
    assert trajectory.status is ib.Status.OK and trajectory.t[-1] == T_END
    np.testing.assert_allclose(trajectory.t_events[0], expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(trajectory.q_events[0], 0.5, rtol=0, atol=1e-12)
    _, v = closed_form(np.array(expected))
    np.testing.assert_allclose(trajectory.v_events[0], v, rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", [MoreauJean(), PaoliSchatzman()], ids=lambda m: m.name)
@pytest.mark.parametrize(
    ("direction", "expected"),
    [(0.0, [T_DOWN, T_UP, T_DOWN_AGAIN]), (-1.0, [T_DOWN, T_DOWN_AGAIN]), (1.0, [T_UP])],
)
def test_events_of_time_steppers_to_the_extensions_accuracy(method, direction, expected):
    trajectory = run(method, events=event(at_half, direction=direction))
    located = trajectory.t_events[0]
    assert located.shape == (len(expected),)
    # first order through the impact; the crossing before it is on a smooth flight
    np.testing.assert_allclose(located, expected, rtol=0, atol=5 * H)
    if direction <= 0.0:
        assert abs(located[0] - T_DOWN) < 0.1 * H
    np.testing.assert_allclose(trajectory.q_events[0], 0.5, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", [EventDriven(), MoreauJean()], ids=lambda m: m.name)
def test_terminal_event_ends_the_trajectory_there(method):
    trajectory = run(method, events=event(at_half, terminal=True, direction=1.0))
    tolerance = 1e-9 if method.family == "event-driven" else 5 * H
    assert trajectory.status is ib.Status.TERMINATED and trajectory.success
    assert "events[0]" in trajectory.message
    (t_event,) = trajectory.t_events[0]
    assert abs(t_event - T_UP) < tolerance
    assert trajectory.t[-1] == t_event and np.all(trajectory.t[:-1] < t_event)
    assert abs(trajectory.q[-1, 0] - 0.5) < 1e-12 and trajectory.v[-1, 0] > 0.0
    assert len(trajectory.impacts) == trajectory.impacts.total >= 1
    assert np.all(trajectory.impacts.t <= t_event)
    if trajectory.dense is not None:
        assert trajectory.dense.t_end == t_event


def test_terminal_count_and_t_eval_stop_at_the_kth_occurrence():
    times = np.linspace(0.0, T_END, 21)
    trajectory = run(
        EventDriven(), t_eval=times, events=[event(at_half, terminal=2), event(at_half)]
    )
    assert trajectory.status is ib.Status.TERMINATED
    np.testing.assert_allclose(trajectory.t_events[0], [T_DOWN, T_UP], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(trajectory.t, times[times <= trajectory.t_events[0][-1]])
    q, _ = closed_form(trajectory.t)
    assert np.abs(trajectory.q - q).max() < 1e-8


@pytest.mark.parametrize("method", [EventDriven(), MoreauJean()], ids=lambda m: m.name)
def test_an_event_across_the_impact_jump_is_at_the_impact(method):
    # v changes sign from negative to positive only through the impact's jump; the apex of the
    # rebound is a crossing from positive to negative
    upward = event(lambda t, q, v: v[0], direction=1.0)
    apex = event(lambda t, q, v: v[0], direction=-1.0)
    trajectory = run(method, events=[upward, apex])
    assert trajectory.t_events[0][0] == trajectory.impacts.t[0]
    assert trajectory.v_events[0][0, 0] > 0.0  # right-continuous: the post-impact velocity
    tolerance = 1e-9 if method.family == "event-driven" else 5 * H
    assert abs(trajectory.t_events[1][0] - T_APEX) < tolerance


def test_a_run_failing_after_a_terminal_event_returns_the_cut_trajectory():
    def forces(t, q, v):  # fails after the first impact (rebound speed 3.54)
        return np.array([-MASS * GRAVITY if v[0] < 3.0 else math.nan])

    problem = ball(forces=forces)
    for method in (EventDriven(), MoreauJean()):
        with pytest.raises(ib.SimulationError):
            run(method, problem, events=at_half)
        trajectory = run(method, problem, events=event(at_half, terminal=True))
        assert trajectory.status is ib.Status.TERMINATED
        assert abs(trajectory.t[-1] - T_DOWN) < 1e-6


def test_bad_t_eval_and_events_are_refused_by_name():
    with pytest.raises(ValueError, match="t_eval must be strictly increasing"):
        run(MoreauJean(), t_eval=[0.5, 0.2])
    with pytest.raises(ValueError, match=r"t_eval must lie in \[t0, t_end\]"):
        run(MoreauJean(), t_eval=[0.5, 2.0])
    with pytest.raises(ValueError, match=r"events\[1\] must be a callable"):
        run(MoreauJean(), events=[at_half, 3.0])
    with pytest.raises(ValueError, match=r"events\[0\].terminal"):
        run(MoreauJean(), events=event(at_half, terminal=-1))
    with pytest.raises(ValueError, match=r"events\[0\] must return a finite real number"):
        run(MoreauJean(), events=lambda t, q, v: q)
    with pytest.raises(ValueError, match="output_every must be 1"):
        run(MoreauJean(), events=at_half, output_every=2)
    with pytest.raises(ValueError, match="its t_eval"):
        run(ib.Adaptive(t_eval=[0.5, 1.0]), events=at_half)
    with pytest.raises(ValueError, match="every step of the run stored"):
        run(ib.Adaptive(max_samples=3), events=at_half)
    # a resting contact (e = 0) logs an impulse at every step: beyond the log's capacity the
    # steps with an impulse are unknown
    with pytest.raises(ValueError, match="log_capacity"):
        run(MoreauJean(log_capacity=5), ball(restitution=0.0), events=at_half)


# -- the pieces ----------------------------------------------------------------------------


def test_dense_output_until_keeps_the_polynomials():
    dense = run(EventDriven(dense_output=True)).dense
    cut = dense.until(0.7)
    times = np.linspace(0.0, 0.7, 101)
    assert cut.t_end == 0.7 and list(cut.impacts) == list(dense.impacts)
    np.testing.assert_allclose(cut.state(times), dense.state(times), rtol=0, atol=1e-13)
    assert len(dense.until(T_IMPACT / 2).impacts) == 0
    with pytest.raises(ValueError, match="t_stop"):
        dense.until(2.0)
    assert isinstance(cut, DenseOutput)


def test_sampled_extension_is_right_continuous_at_a_logged_impulse():
    t = np.array([0.0, 1.0, 2.0])
    q = np.array([[1.0], [0.0], [1.0]])
    v = np.array([[-1.0], [1.0], [1.0]])
    extension = SampledExtension(t, q, v, np.array([1.0]))
    np.testing.assert_array_equal(
        extension.state([0.5, 1.0, 2.0]), [[0.5, -1.0], [0.0, 1.0], [1.0, 1.0]]
    )
    np.testing.assert_array_equal(extension.on_piece(0, [1.0]), [[0.0, -1.0]])  # left limit
    smooth = SampledExtension(t, q, v, np.zeros(0))
    np.testing.assert_array_equal(smooth.state([0.5]), [[0.5, 0.0]])


def test_compare_takes_a_problem_from_functions(tmp_path):
    """compare runs a problem from plain functions as it runs the built-in one of the same
    physics (BouncingBall with mass 2: M and F scale together), to the same errors."""
    options = {
        "steps": [2e-2, 1e-2],
        "t_end": 0.5,
        "phases": 1,
        "cache_dir": tmp_path / "cache",
        "output": tmp_path / "out",
    }
    by_functions = ib.compare(ball(), [MoreauJean(theta=0.5)], **options)
    built_in = ib.compare(
        f"BouncingBall[restitution={RESTITUTION},mass={MASS}]", ["MoreauJean"], **options
    )
    column = "max_position_error"
    assert len(by_functions.table) == 2
    assert np.all(np.isfinite(by_functions.table[column]))
    np.testing.assert_allclose(
        by_functions.table[column], built_in.table[column], rtol=1e-9, atol=1e-15
    )
