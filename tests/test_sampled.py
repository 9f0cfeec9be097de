"""The problem's functions over all samples of a trajectory (impactbench/core/sampled.py and the
``gaps``, ``kinetic_energies``, ``potential_energies`` methods of the problem contract), checked
against the per-sample methods for every registered problem and against values by hand."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench.analysis.metrics import penetration_depths
from impactbench.core import sampled
from impactbench.core.energy import kinetic_energy, potential_energy
from impactbench.core.problem import Problem, timed_gap
from impactbench.problems import PROBLEMS, BouncingBall, ColumnOfBeads, DoublePendulum


def _samples(problem: Problem, count: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    n = problem.n_dof
    return problem.q0 + 0.3 * rng.normal(size=(count, n)), rng.normal(size=(count, n))


@pytest.mark.parametrize("problem_name", PROBLEMS)
def test_sampled_functions_equal_the_per_sample_ones(problem_name):
    problem = PROBLEMS[problem_name]()
    q, v = _samples(problem)
    t = problem.t0 + np.linspace(0.0, 1.0, len(q))  # read only by a moving obstacle's gaps
    gaps = problem.gaps(q, t)
    assert gaps.shape == (len(q), problem.n_constraints)
    by_sample = [timed_gap(problem, tk, qi) for tk, qi in zip(t, q, strict=True)]
    np.testing.assert_array_equal(gaps, np.array(by_sample))
    by_sample = np.array(
        [0.5 * vi @ problem.mass_matrix(qi) @ vi for qi, vi in zip(q, v, strict=True)]
    )
    np.testing.assert_allclose(problem.kinetic_energies(q, v), by_sample, rtol=1e-14, atol=0)
    potential = np.array([problem.potential_energy(qi) for qi in q])
    scale = max(1.0, float(np.abs(potential).max()))
    np.testing.assert_allclose(problem.potential_energies(q), potential, rtol=0, atol=4e-16 * scale)


def test_values_by_hand():
    ball = BouncingBall(mass=2.0, gravity=9.81)  # the floor is q = 0: g(q) = q
    q = np.array([[0.0], [-0.25], [1.0]])
    v = np.array([[1.0], [-3.0], [0.0]])
    np.testing.assert_array_equal(ball.gaps(q)[:, 0], [0.0, -0.25, 1.0])
    np.testing.assert_array_equal(ball.kinetic_energies(q, v), [1.0, 9.0, 0.0])
    np.testing.assert_allclose(ball.potential_energies(q), 2.0 * 9.81 * q[:, 0], rtol=1e-15)
    np.testing.assert_array_equal(penetration_depths(ball, q), [0.0, 0.25, 0.0])
    # a diagonal M (the column: m = 1 per bead): (1/2) sum_i v_i^2
    column = ColumnOfBeads(3)
    assert column.mass_structure == "diagonal"
    vq = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(
        column.kinetic_energies(column.q0[None, :].repeat(2, 0), vq), [4.5, 4.5], rtol=1e-15
    )
    kernels = column.kernels()  # formed as the loops form it: the diagonal only, O(n)
    key = ("kinetic", kernels.mass_matrix, kernels.mass_diagonal, "diagonal")
    assert sampled._LOOPS[key].py_func.__globals__["DIAGONAL_MASS"] is True
    # a configuration-dependent M: the double pendulum with q2 = q1 moving as one rod
    pendulum = DoublePendulum()
    m1, m2, l1, l2 = pendulum.m1, pendulum.m2, pendulum.l1, pendulum.l2
    qs = np.array([[0.3, 0.3]])
    vs = np.array([[2.0, 2.0]])
    rigid = 0.5 * (m1 * l1**2 + m2 * (l1 + l2) ** 2) * 4.0
    np.testing.assert_allclose(pendulum.kinetic_energies(qs, vs), [rigid], rtol=1e-14)


def test_energy_helpers_use_the_sampled_functions_and_accept_one_sample():
    ball = BouncingBall()
    q, v = np.array([1.0]), np.array([2.0])
    assert kinetic_energy(ball, q, v).shape == (1,)
    assert potential_energy(ball, q).shape == (1,)
    assert kinetic_energy(ball, q, v)[0] == ball.kinetic_energy(q, v)


def test_bad_sample_shapes_are_refused_naming_the_argument():
    pendulum = DoublePendulum()
    with pytest.raises(ValueError, match=r"q must have shape \(N, 2\)"):
        pendulum.gaps(np.zeros((3, 5)))  # the compiled kernel would read past the row
    with pytest.raises(ValueError, match=r"q must have shape \(N, 2\)"):
        pendulum.kinetic_energies(np.zeros((3, 1)), np.zeros((3, 1)))
    assert pendulum.gaps(np.zeros((0, 2))).shape == (0, pendulum.n_constraints)
    assert Problem.gaps(pendulum, np.zeros((0, 2))).shape == (0, pendulum.n_constraints)
    with pytest.raises(ValueError, match="v must have shape"):
        pendulum.kinetic_energies(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="v must have as many samples"):
        pendulum.kinetic_energies(np.zeros((3, 2)), np.zeros((2, 2)))
