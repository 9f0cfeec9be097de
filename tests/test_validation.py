"""Bad input fails fast with a ValueError naming the argument (docs/design.md section 9), and a run
that produces non-finite values stops with an error giving t, q and v."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench.core.timestepping import MAX_LOG_CAPACITY, step_count
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman, get_method
from impactbench.problems import BouncingBall, SlantedWall

from conftest import PythonBall

TIME_STEPPERS = [PaoliSchatzman(), MoreauJean(), CatchingUp()]


@pytest.mark.parametrize("e", [-0.1, 1.5, math.nan, math.inf, "x"])
def test_restitution_outside_unit_interval(e):
    with pytest.raises(ValueError, match="restitution"):
        BouncingBall(restitution=e)
    with pytest.raises(ValueError, match="restitution"):
        simulate(PythonBall(restitution=e), MoreauJean(), 1.0, h=0.01)


@pytest.mark.parametrize("h", [0.0, -1e-3, math.nan, math.inf, 2.0, None])
@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_bad_step(method, h):
    with pytest.raises(ValueError, match=r"\bh\b"):
        simulate(BouncingBall(), method, 1.0, h=h)


@pytest.mark.parametrize("t_end", [0.0, -1.0, math.nan, math.inf])
def test_bad_final_time(t_end):
    with pytest.raises(ValueError, match="t_end"):
        simulate(BouncingBall(), MoreauJean(), t_end, h=1e-3)


@pytest.mark.parametrize("output_every", [0, -3, 1.5, True])
def test_bad_output_every(output_every):
    with pytest.raises(ValueError, match="output_every"):
        simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3, output_every=output_every)


@pytest.mark.parametrize(
    "attribute, value",
    [
        ("q0", np.array([math.nan])),
        ("q0", np.array([1.0, 2.0])),
        ("v0", np.array([math.inf])),
        ("v0", np.zeros((1, 1))),
        ("q0", np.array([-0.5])),  # outside K
    ],
)
def test_bad_initial_state(attribute, value):
    problem = PythonBall()
    setattr(problem, attribute, value)
    with pytest.raises(ValueError, match=attribute):
        simulate(problem, MoreauJean(), 1.0, h=1e-3)


def test_initial_position_outside_k_in_builtin_problem():
    with pytest.raises(ValueError, match="q0"):
        BouncingBall(q0=-0.1)
    with pytest.raises(ValueError, match="q0"):
        SlantedWall(q0=(0.0, -1.0))


@pytest.mark.parametrize(
    "mass",
    [
        [[2.0, 0.6], [0.5, 1.0]],  # not symmetric
        [[1.0, 2.0], [2.0, 1.0]],  # indefinite
        [[1.0, 0.0], [0.0, 1e-14]],  # badly conditioned
        [[1.0, 0.0], [0.0, math.nan]],
        [[1.0, 0.0, 0.0]],
    ],
)
def test_bad_mass_matrix(mass):
    with pytest.raises(ValueError, match="mass_matrix"):
        SlantedWall(mass_matrix=mass)


def test_user_problem_with_indefinite_mass_matrix():
    class Bad(PythonBall):
        def mass_matrix(self, q):
            return -np.eye(1)

    with pytest.raises(ValueError, match="mass_matrix"):
        simulate(Bad(), MoreauJean(), 1.0, h=1e-3)


@pytest.mark.parametrize("theta", [0.0, -0.5, 1.5, math.nan])
def test_theta_outside_its_range(theta):
    with pytest.raises(ValueError, match="theta"):
        MoreauJean(theta=theta)


@pytest.mark.parametrize("spec", ["NoSuchMethod", "MoreauJean[theta=2]", "Moreau Jean", ""])
def test_unknown_or_malformed_method_names(spec):
    with pytest.raises(ValueError, match="method|theta"):
        get_method(spec)


def test_simulate_rejects_non_problems_and_non_methods():
    with pytest.raises(ValueError, match="problem"):
        simulate("BouncingBall", MoreauJean(), 1.0, h=1e-3)
    with pytest.raises(ValueError, match="method"):
        simulate(BouncingBall(), "MoreauJean", 1.0, h=1e-3)


class NaNForceBall(PythonBall):
    """A user problem whose force turns into NaN after t = 0.25 (before the first impact)."""

    def forces(self, t, q, v):
        return np.array([math.nan if t > 0.25 else -self.gravity])


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_nan_force_mid_run_reports_time_and_state(method):
    with pytest.raises(SimulationError) as info:
        simulate(NaNForceBall(), method, 1.0, h=1e-2)
    error = info.value
    assert 0.25 <= error.t <= 0.28
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))
    assert error.q[0] == pytest.approx(1.0 - 0.5 * 9.81 * error.t**2, abs=0.05)
    message = str(error)
    assert "t=" in message and "q=" in message and "v=" in message
    assert error.trajectory is not None and error.trajectory.t[-1] <= error.t


def test_run_too_large_for_memory_is_refused():
    with pytest.raises(ValueError, match="output_every"):
        simulate(BouncingBall(), MoreauJean(), 1e6, h=1e-5)


# --------------------------------------------------------------------------------------------
# Sizes that could overflow or exhaust memory are refused up front


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_a_step_too_small_for_the_time_grid_is_refused(method):
    """h = 1e-19 on [0, 1]: 1e19 steps, beyond int64 and below the spacing of the floats near
    1 (t + h == t): it once reported ok with 0 steps and its last sample at t = 0."""
    with pytest.raises(ValueError, match=r"\bh\b.*advance"):
        simulate(BouncingBall(), method, 1.0, h=1e-19, output_every=10**18)


def test_the_smallest_step_keeps_the_time_grid_increasing():
    """At the limit h = 4 eps max(|t0|, |t_end|) the grid t0 + k h, computed as the loops do,
    strictly increases; a step below it is refused (t0 = 1e6: 1 ulp = 1.16e-10)."""
    t0, t_end = 1e6, 1e6 + 1e-4
    limit = 4 * np.finfo(float).eps * t_end
    n, h = step_count(t0, t_end, 1.01 * limit)
    k = np.arange(n + 1, dtype=float)
    assert np.all(np.diff(t0 + k * h) > 0.0)
    with pytest.raises(ValueError, match=r"\bh\b"):
        step_count(t0, t_end, 0.99 * limit)


def test_output_every_up_to_the_int64_range_keeps_the_first_and_last_sample():
    """Any output_every >= the step count keeps the first and the last sample; beyond the int64
    counters of the loops it is refused by name (10^30 used to overflow in the loop call)."""
    full = simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3)
    ends = simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3, output_every=2**63 - 1)
    np.testing.assert_array_equal(ends.t, [0.0, 1.0])
    np.testing.assert_array_equal(ends.q, full.q[[0, -1]])
    np.testing.assert_array_equal(ends.v, full.v[[0, -1]])
    for every in (2**63, 10**30):
        with pytest.raises(ValueError, match="output_every"):
            simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3, output_every=every)


@pytest.mark.parametrize("capacity", [10**12, MAX_LOG_CAPACITY + 1, 0, 1.5, True])
def test_impact_log_capacity_is_bounded(capacity):
    """10^12 entries used to try to allocate 7.28 TiB."""
    with pytest.raises(ValueError, match="log_capacity"):
        MoreauJean(log_capacity=capacity)


def test_the_largest_impact_log_allocates_only_what_the_run_can_fill():
    """log_capacity = MAX_LOG_CAPACITY (2 GiB) on a 100-step run of a ball resting on the floor
    (an impulse at every step): at most one entry per step and constraint is allocated (peak
    traced memory < 1 MB, where the full log would take 2 GiB) and every impact is logged."""
    ball = BouncingBall(q0=0.0, restitution=0.0)
    simulate(ball, MoreauJean(), 1.0, h=1e-2)  # compile or load the loop first
    tracemalloc.start()
    try:
        trajectory = simulate(ball, MoreauJean(log_capacity=MAX_LOG_CAPACITY), 1.0, h=1e-2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1e6
    assert trajectory.impacts.total == len(trajectory.impacts) == 100


# --------------------------------------------------------------------------------------------
# Booleans, repeated names, mutated attributes


@pytest.mark.parametrize(
    "make",
    [
        lambda: MoreauJean(theta=True),
        lambda: BouncingBall(restitution=True),
        lambda: BouncingBall(gravity=np.bool_(True)),
        lambda: SlantedWall(q0=[True, 1.0]),
        lambda: SlantedWall(mass_matrix=np.eye(2, dtype=bool)),
        lambda: simulate(BouncingBall(), MoreauJean(), True, h=1e-3),
        lambda: simulate(BouncingBall(), MoreauJean(), 1.0, h=True),
    ],
)
def test_booleans_are_not_real_numbers(make):
    with pytest.raises(ValueError, match="boolean"):
        make()


def test_a_repeated_parameter_in_a_spec_is_refused():
    with pytest.raises(ValueError, match="'theta' is given more than once"):
        get_method("MoreauJean[theta=0.5,theta=1.0]")


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        ("restitution", 1.5),
        ("restitution", True),
        ("q0", np.array([-1.0])),
        ("v0", np.array([math.nan])),
        ("t0", math.inf),
    ],
)
@pytest.mark.parametrize("problem", [BouncingBall, PythonBall], ids=["built-in", "plain-Python"])
def test_an_attribute_mutated_after_construction_is_checked_by_simulate(problem, attribute, value):
    """The documented rule: simulate reruns Problem.check() on every call."""
    instance = problem()
    setattr(instance, attribute, value)
    with pytest.raises(ValueError, match=attribute):
        simulate(instance, MoreauJean(), 1.0, h=1e-2)
