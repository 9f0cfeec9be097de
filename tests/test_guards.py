"""Guards without holes (issue 51, item 5): each reproduction of the issue, refused or caught.

Each test is one finding: a parameter set on a problem after construction, an adaptive option
outside what the controller supports, ... Before the fixes each ran with status ok (or a
misleading failure); now each is refused with a ValueError naming the argument, or stops with
the failure it is.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core import divergence
from impactbench.core.adaptive import MAX_ORDER, Adaptive
from impactbench.core.divergence import DivergenceError
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, ImpactingBar, ImpactingOscillator, SlidingBlock

# --------------------------------------------------------------------------------------------
# A parameter set after construction is validated at the next run


def test_a_negative_mu_set_after_construction_is_refused_by_the_next_run():
    # block.mu = -3 pumped energy into the block (0.5 J to 464 J) with status ok: the check
    # validated the parameter vector of construction while the run read the new one
    block = SlidingBlock(angle=0.0, mu=0.5, u0=1.0)
    block.mu = -3.0
    with pytest.raises(ValueError, match=r"\(mu\) must be >= 0, got \[-3.0\]"):
        simulate(block, MoreauJean(), 1.0, h=1e-3)
    block.mu = 0.5  # restored: the problem runs again
    block.check()


def test_a_parameter_changed_after_construction_is_what_the_python_methods_evaluate():
    # the kernels' Python wrappers (forces, friction, ...) and the run read one vector
    block = SlidingBlock(angle=0.0, mu=0.5)
    block.mu = 0.25
    block.check()
    assert block.friction(block.q0)[0].tolist() == [0.25]


# --------------------------------------------------------------------------------------------
# Adaptive: options within what the controller supports, checked by every run


@pytest.mark.parametrize(
    ("argument", "value"),
    [("order", MAX_ORDER + 1), ("order", 100), ("rtol", 1.0), ("rtol", 2.0)],
)
def test_adaptive_refuses_options_outside_their_range(argument, value):
    # order=100 divided the error estimate by 2^100 - 1: every step was accepted at h_max and
    # the ball sank 0.139 m into the floor, status ok
    with pytest.raises(ValueError, match=argument):
        Adaptive(MoreauJean(), **{argument: value})


@pytest.mark.parametrize(
    ("argument", "value"), [("order", 100), ("rtol", 1.5), ("h_min", -1.0), ("atol", 0.0)]
)
def test_an_adaptive_option_set_after_construction_is_checked_by_the_run(argument, value):
    method = Adaptive(MoreauJean())
    setattr(method, argument, value)
    with pytest.raises(ValueError, match=argument):
        simulate(BouncingBall(), method, 1.0)


def test_adaptive_refuses_a_smallest_step_above_the_largest_step_of_the_run():
    # h_max defaults to (t_end - t0) / 10 = 0.1: no step of the run could be at least h_min
    with pytest.raises(ValueError, match="h_min must be <= the largest step 0.1"):
        simulate(BouncingBall(), Adaptive(MoreauJean(), h_min=0.5), 1.0)


# --------------------------------------------------------------------------------------------
# Divergence bounds from the state's own scales


def test_an_unstable_run_on_a_stiff_restoring_force_stops_as_diverged():
    # h omega = 4 > 2: central differences grow by ~14 per step. The bound T |F0| / m read
    # the whole horizon's worth of the spring force as a speed: the run reported ok with
    # max |v| ~ 5e13 (the genuine motion's speed is omega x0 = 1e6)
    oscillator = ImpactingOscillator(restitution=0.8, frequency=1e6)
    with pytest.raises(DivergenceError, match=r"diverged: max \|[qv]\|"):
        simulate(oscillator, PaoliSchatzman(compiled=False), 1e-4, h=4e-6)


@pytest.mark.parametrize("t_end", [1e-3, 1.0, 100.0])
def test_the_velocity_bound_of_a_restoring_force_is_its_amplitude_whatever_the_horizon(t_end):
    # x'' = -omega^2 x from x0 = 1: |v| <= omega x0 for all t (and after any impact, e <= 1)
    omega = 1e6
    bounds = divergence.state_bounds(ImpactingOscillator(frequency=omega), t_end)
    assert bounds[divergence.V_BOUND] == pytest.approx(divergence.DIVERGENCE_FACTOR * omega)


@pytest.mark.parametrize("n_elements", [4, 50])
def test_the_estimated_frequency_is_the_fastest_one_from_below(n_elements):
    """Power iteration in the mass norm on the bar (lumped mass, stiffness K): its omega_max is
    2 / stable_step, which the estimate approaches from below."""

    class UndeclaredBar(ImpactingBar):
        stable_step = None

    exact = 2.0 / ImpactingBar(n_elements=n_elements).stable_step
    bar = UndeclaredBar(n_elements=n_elements)
    estimate = divergence.initial_frequency(
        bar, bar.mass_diagonal(bar.q0), bar.forces(bar.t0, bar.q0, bar.v0)
    )
    assert 0.99 * exact < estimate <= exact * (1.0 + 1e-9)
    ball = BouncingBall()  # gravity does not depend on q: the whole horizon counts
    weight = ball.forces(ball.t0, ball.q0, ball.v0)
    assert divergence.initial_frequency(ball, np.ones(1), weight) == 0.0
