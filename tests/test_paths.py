"""One source, two paths: compiled and plain-Python loops agree; a user's Python problem runs."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.metrics import max_position_error
from impactbench.core._jit import kernel
from impactbench.core.problem import CompiledProblem, ProblemKernels
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import (
    BouncingBall,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
)

from conftest import PythonBall

PROBLEMS = [
    BouncingBall(restitution=0.8),
    ImpactingOscillator(restitution=0.8),
    ForcedImpactOscillator(),
    SlantedWall(restitution=0.7),
]
METHOD_CLASSES = [PaoliSchatzman, MoreauJean, CatchingUp]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
@pytest.mark.parametrize("method_class", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_compiled_and_python_paths_agree(problem, method_class):
    t_end = problem.t0 + 3.0
    compiled = simulate(problem, method_class(), t_end, h=5e-3)
    plain = simulate(problem, method_class(compiled=False), t_end, h=5e-3)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    assert compiled.impacts.total > 0
    assert compiled.impacts.total == plain.impacts.total
    np.testing.assert_allclose(plain.t, compiled.t, rtol=0, atol=1e-14)
    np.testing.assert_allclose(plain.q, compiled.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain.v, compiled.v, rtol=0, atol=1e-11)


@pytest.mark.parametrize("method_class", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_user_python_problem_runs_and_matches_the_exact_ball(method_class):
    user = PythonBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    builtin = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    trajectory = simulate(user, method_class(), 3.0, h=1e-3)
    assert not trajectory.stats["compiled"]
    assert trajectory.impacts.total >= 5
    assert max_position_error(builtin, trajectory) < 2e-2


def test_user_python_problem_runs_event_driven():
    user = PythonBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    builtin = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    method = EventDriven(rtol=1e-10, dense_output=True)  # errors between steps: its interpolant
    trajectory = simulate(user, method, builtin.accumulation_time + 0.5)
    assert trajectory.impacts.total >= 10
    assert max_position_error(builtin, trajectory) < 1e-8


def test_output_decimation_keeps_first_and_last_sample():
    ball = BouncingBall(restitution=0.8)
    full = simulate(ball, MoreauJean(), 2.0, h=1e-3)
    decimated = simulate(ball, MoreauJean(), 2.0, h=1e-3, output_every=300)
    assert decimated.t[0] == ball.t0 and decimated.t[-1] == pytest.approx(2.0, abs=1e-12)
    assert len(decimated.t) == 2000 // 300 + 2
    np.testing.assert_array_equal(decimated.q[1:-1], full.q[300:-1:300])
    np.testing.assert_array_equal(decimated.q[-1], full.q[-1])


def test_step_not_dividing_the_interval_is_reduced_to_end_exactly():
    ball = BouncingBall()
    trajectory = simulate(ball, MoreauJean(), 1.0, h=0.3)
    assert trajectory.h == pytest.approx(0.25)
    assert trajectory.t[-1] == 1.0


@kernel
def _slider_mass_matrix(q, p, out):
    c = 0.5 * np.cos(q[0])
    out[0, 0] = 2.0
    out[0, 1] = c
    out[1, 0] = c
    out[1, 1] = 1.0


@kernel
def _slider_forces(t, q, v, p, out):
    out[0] = -q[0]
    out[1] = -p[0]


@kernel
def _slider_gap(q, p, out):
    out[0] = q[1]


@kernel
def _slider_gap_gradient(q, p, out):
    out[0, 0] = 0.0
    out[0, 1] = 1.0


class _Slider(CompiledProblem):
    """Ball on a floor y >= 0 coupled to a sliding x through M(q) (affine gap, varying M)."""

    def __init__(self) -> None:
        self.name = "Slider"
        self.n_dof = 2
        self.n_constraints = 1
        self.restitution = 0.7
        self.t0 = 0.0
        self.q0 = np.array([0.3, 1.0])
        self.v0 = np.array([1.0, 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([9.81])

    def potential_energy(self, q: np.ndarray) -> float:
        return 0.5 * q[0] ** 2 + 9.81 * q[1]


class _SliderAffine(_Slider):
    KERNELS = ProblemKernels(
        _slider_mass_matrix, _slider_forces, _slider_gap, _slider_gap_gradient, affine_gap=True
    )


class _SliderGeneral(_Slider):
    KERNELS = ProblemKernels(
        _slider_mass_matrix, _slider_forces, _slider_gap, _slider_gap_gradient, affine_gap=False
    )


def test_affine_closed_form_with_varying_mass_matches_the_general_projection():
    """PaoliSchatzman's closed-form projection for one affine constraint, with M(q) refactored
    every step (no cached metric), agrees with the general Newton projection. (MoreauJean has
    one impact-law path for any single constraint, so it has nothing to compare here.)"""
    closed = simulate(_SliderAffine(), PaoliSchatzman(), 3.0, h=1e-3)
    general = simulate(_SliderGeneral(), PaoliSchatzman(), 3.0, h=1e-3)
    assert closed.impacts.total >= 5
    assert closed.impacts.total == general.impacts.total
    np.testing.assert_allclose(closed.q, general.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(closed.v, general.v, rtol=0, atol=1e-8)
    # the scheme's invariant: (q^{k+1} + e q^{k-1}) / (1 + e) is in K (the floor y >= 0)
    y = closed.q[:, 1]
    assert ((y[2:] + 0.7 * y[:-2]) / 1.7).min() >= -1e-12


def _velocity_scheme_reference(problem, theta, position_first, t_end, h, activation):
    """docs/design.md's Moreau-Jean / catching-up step written directly in NumPy (one constraint):
    active when g(q_p) <= 0 ("position"), and also G v_k <= 0 ("approaching")."""
    t, q, v = problem.t0, problem.q0.astype(float), problem.v0.astype(float)
    e = problem.restitution
    qs = [q]
    for _ in range(round((t_end - problem.t0) / h)):
        s = h if position_first else theta * h
        qp, tp = q + s * v, t + s
        M = problem.mass_matrix(qp)
        v1 = v + h * np.linalg.solve(M, problem.forces(tp, qp, v))
        G = problem.gap_gradient(qp)[0]
        if problem.gap(qp)[0] <= 0.0 and (activation == "position" or G @ v <= 0.0):
            Y = np.linalg.solve(M, G)
            v1 = v1 + max(0.0, -(G @ v1 + e * (G @ v)) / (G @ Y)) * Y
        q = qp if position_first else q + h * ((1.0 - theta) * v + theta * v1)
        t, v = t + h, v1
        qs.append(q)
    return np.array(qs)


@pytest.mark.parametrize(
    "method",
    [
        MoreauJean(theta=0.3),
        MoreauJean(theta=1.0),
        CatchingUp(),
        MoreauJean(theta=0.3, activation="approaching"),
        CatchingUp(activation="approaching"),
    ],
    ids=lambda m: m.name,
)
def test_velocity_schemes_match_the_design_formulas_step_by_step(method):
    """theta != 1/2 (where swapping theta and 1 - theta changes nothing) and catching-up, on the
    slanted wall (non-diagonal M) through impacts into sliding (t_inf = 2.45), against the
    formulas written out in NumPy, with each activation rule."""
    problem = SlantedWall(restitution=0.7)
    h, t_end = 1e-3, problem.t0 + 3.0
    position_first = isinstance(method, CatchingUp)
    expected = _velocity_scheme_reference(
        problem, getattr(method, "theta", 1.0), position_first, t_end, h, method.activation
    )
    run = simulate(problem, method, t_end, h=h)
    assert run.impacts.total >= 5
    np.testing.assert_allclose(run.q, expected, rtol=0, atol=1e-11)
