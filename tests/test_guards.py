"""Guards without holes (issue 51, item 5): each reproduction of the issue, refused or caught.

Each test is one finding: a parameter set on a problem after construction, an adaptive option
outside what the controller supports, ... Before the fixes each ran with status ok (or a
misleading failure); now each is refused with a ValueError naming the argument, or stops with
the failure it is.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import CompiledProblem, Problem, ProblemKernels, SimulationError, simulate
from impactbench.core import divergence
from impactbench.core.adaptive import MAX_ORDER, Adaptive
from impactbench.core.divergence import DivergenceError
from impactbench.core.events.engine import simulate_compiled
from impactbench.core.kernels import kernel
from impactbench.core.problem import initial_frequency
from impactbench.methods import EventDriven, MoreauJean, PaoliSchatzman
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
    estimate = initial_frequency(bar, bar.mass_diagonal(bar.q0), bar.forces(bar.t0, bar.q0, bar.v0))
    assert 0.99 * exact < estimate <= exact * (1.0 + 1e-9)
    ball = BouncingBall()  # gravity does not depend on q: the whole horizon counts
    weight = ball.forces(ball.t0, ball.q0, ball.v0)
    assert initial_frequency(ball, np.ones(1), weight) == 0.0


# --------------------------------------------------------------------------------------------
# The conditioning of M(q) checked on the compiled path too


@kernel
def _fading_mass_matrix(q, p, out):
    # [[1, 1], [1, 1 + delta]], delta = exp(-rate x): LDL^T pivots 1 and delta, cond ~ 4 / delta
    out[0, 0] = 1.0
    out[0, 1] = 1.0
    out[1, 0] = 1.0
    out[1, 1] = 1.0 + math.exp(-p[0] * q[0])


@kernel
def _no_forces(t, q, v, p, out):
    out[0] = 0.0
    out[1] = 0.0


@kernel
def _far_floor_gap(q, p, out):
    out[0] = q[1] + 10.0


@kernel
def _far_floor_gap_gradient(q, p, out):
    out[0, 0] = 0.0
    out[0, 1] = 1.0


class FadingMass(CompiledProblem):
    """A free flight x = t (no force, M v' = 0) through a mass matrix that turns singular:
    cond(M(q)) ~ 4 exp(rate x) passes 1e12 at x = ln(1e12) / rate = 1.38 (rate 20)."""

    KERNELS = ProblemKernels(
        _fading_mass_matrix, _no_forces, _far_floor_gap, _far_floor_gap_gradient
    )

    def __init__(self) -> None:
        self.name = "FadingMass"
        self.n_dof, self.n_constraints = 2, 1
        self.restitution, self.t0 = 0.0, 0.0
        self.rate = 20.0
        self.q0 = np.zeros(2)
        self.v0 = np.array([1.0, 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([self.rate])

    def potential_energy(self, q: np.ndarray) -> float:
        return 0.0


@pytest.mark.parametrize(
    ("method", "options"), [(MoreauJean(), {"h": 1e-2}), (EventDriven(), {})], ids=["mj", "ed"]
)
def test_the_compiled_loops_refuse_a_numerically_singular_mass_matrix(method, options):
    # the compiled loops ran through cond(M) = 4e13 with status ok, where the plain-Python path
    # stops at 1e12; they now refuse a pivot below max |M| / 1e12 (cond(M) >= 1e12)
    problem = FadingMass()
    assert simulate(problem, method, 1.2, **options).success  # cond(M) <= 1e11 up to x = 1.2
    with pytest.raises(SimulationError, match="numerically singular") as caught:
        simulate(problem, method, 1.5, **options)
    crossing = math.log(1e12) / problem.rate  # x = t where max |M| / delta = 1e12
    # the run stops in the step whose evaluations of M reach past the crossing (the error's
    # t, q: the start of that step; one of h for MoreauJean, a Runge-Kutta step for EventDriven)
    assert caught.value.t < crossing
    if isinstance(method, MoreauJean):
        assert caught.value.t > crossing - 2.0 * options["h"]


# --------------------------------------------------------------------------------------------
# The event-driven method: a rough corner, a very rough floor, more contacts than DOF


class RoughCorner(Problem):
    """A unit mass in the corner x >= 0, y >= 0 (floor and wall, Coulomb mu on both), pushed
    into it by the force (-push, -g). The floor's tangent is the wall's normal and conversely:
    the four contact rows are dependent, the contact forces of the particle at rest are not
    unique (any split of the push between the floor's friction and the wall), its motion is."""

    def __init__(self, push: float = 1.0, v0: tuple[float, float] = (0.0, 0.0)) -> None:
        self.name = "RoughCorner"
        self.restitution = 0.0
        self.push = push
        self.n_dof, self.n_constraints = 2, 2
        self.q0 = np.zeros(2)
        self.v0 = np.array(v0, dtype=float)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.eye(2)

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.array([-self.push, -9.81])

    def gap(self, q: np.ndarray) -> np.ndarray:
        return np.array([q[1], q[0]])

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[0.0, 1.0], [1.0, 0.0]])

    def tangent_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[1.0, 0.0], [0.0, 1.0]])

    def friction(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(2, 0.5), np.zeros(2)

    def potential_energy(self, q: np.ndarray) -> float:
        return 9.81 * float(q[1]) + self.push * float(q[0])


@pytest.mark.parametrize(("push", "v0"), [(0.0, (0.0, 0.0)), (1.0, (0.0, 0.0)), (1.0, (-1.0, 0.0))])
def test_a_particle_in_a_rough_corner_comes_to_rest_there(push, v0):
    # stopped with "Painleve situation (indeterminate)": several contact forces, one motion
    run = simulate(RoughCorner(push, v0), EventDriven(compiled=False), 1.0)
    assert run.success
    np.testing.assert_array_equal(run.q[-1], [0.0, 0.0])
    np.testing.assert_array_equal(run.v[-1], [0.0, 0.0])


class ThreeRoughWalls(RoughCorner):
    """The corner and a third wall x + y >= 0 through it: 3 frictional contacts, 2 DOF."""

    def __init__(self) -> None:
        super().__init__()
        self.n_constraints = 3

    def gap(self, q: np.ndarray) -> np.ndarray:
        return np.array([q[1], q[0], q[0] + q[1]])

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])

    def tangent_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])

    def friction(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(3, 0.5), np.zeros(3)


@pytest.mark.parametrize("method", [EventDriven(compiled=False), MoreauJean(compiled=False)])
def test_more_frictional_contacts_than_dof_are_refused_by_every_family(method):
    with pytest.raises(ValueError, match=r"n_constraints <= n_dof.*n_constraints=3 > n_dof=2"):
        simulate(ThreeRoughWalls(), method, 1.0, **({"h": 1e-3} if method.requires_step else {}))


@pytest.mark.parametrize("mu", [1e8, 1e10])
def test_a_block_on_a_very_rough_incline_stops_at_the_closed_form(mu):
    # the system of a sliding contact, rows (1, 0) and (mu, 1), read as singular for mu >= 1e8:
    # "Painleve situation (inconsistent)" at t = 0. The block stops after
    # u0^2 / (2 g (mu cos alpha - sin alpha)) and sticks.
    block = SlidingBlock(angle=0.3, mu=mu, u0=1.0)
    run = simulate_compiled(block, 1.0, 1e-10, 1e-12, compile=False)
    assert run.success
    q, v = block.exact_solution(1.0)
    np.testing.assert_allclose(run.q[-1], q[0], rtol=1e-9, atol=0.0)
    np.testing.assert_array_equal(run.v[-1], v[0])
