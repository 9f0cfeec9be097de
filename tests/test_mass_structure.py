"""Declared mass-matrix structure: a diagonal M is solved with in O(n) and changes nothing else.

The same problem declared "dense" and "diagonal" must give the same trajectory for every
time-stepping method: the diagonal path replaces the LDL^T factorisation of a diagonal matrix
(whose unit lower factor is the identity) by the reciprocals of its diagonal, the same
arithmetic, so the two agree to round-off. A declaration that M(q0) contradicts is rejected.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import Problem, TimeStepping, simulate
from impactbench.core.mass import mass_bindings
from impactbench.core.problem import ProblemKernels
from impactbench.methods import METHODS
from impactbench.problems import ColumnOfBeads, ImpactingBar, SlantedWall

TIME_STEPPERS = sorted(name for name, cls in METHODS.items() if issubclass(cls, TimeStepping))


class CurvedFloorParticle(Problem):
    """A particle above the floor y = a sin(x) with a configuration-dependent diagonal mass
    diag(1 + x^2 / 10, 2): a nonlinear gap (the projection's Newton iteration with curvature)
    and M(q) re-factored at every step."""

    def __init__(self, structure: str, forbid_dense: bool = False):
        self.name = "CurvedFloorParticle"
        self.mass_structure = structure
        self.restitution = 0.5
        self.q0 = np.array([0.3, 0.2])
        self.v0 = np.array([0.8, -1.0])
        self.forbid_dense = forbid_dense
        self.dense_calls = 0

    def mass_diagonal(self, q):
        return np.array([1.0 + 0.1 * q[0] ** 2, 2.0])

    def mass_matrix(self, q):
        self.dense_calls += 1
        return np.diag(self.mass_diagonal(q))

    def forces(self, t, q, v):
        return np.array([-0.5 * q[0], -2.0 * 9.81])

    def gap(self, q):
        return np.array([q[1] - 0.1 * np.sin(q[0])])

    def gap_gradient(self, q):
        return np.array([[-0.1 * np.cos(q[0]), 1.0]])

    def potential_energy(self, q):
        return 0.25 * q[0] ** 2 + 2.0 * 9.81 * q[1]


def _run(name, problem, t_end, h, compiled):
    return METHODS[name](compiled=compiled).solve(problem, t_end, h=h)


def _assert_same(a, b):
    scale = max(1.0, float(np.abs(a.q).max()), float(np.abs(a.v).max()))
    assert a.q.shape == b.q.shape
    np.testing.assert_allclose(b.q, a.q, rtol=0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(b.v, a.v, rtol=0.0, atol=1e-12 * scale)
    assert a.stats["impacts"] == b.stats["impacts"]


def _cases():
    bar = ImpactingBar(6, mass_structure="dense")
    return {
        # the whole contact of the bar (t1 = 0.1, duration 2): its end node chatters
        "ImpactingBar": (lambda s: ImpactingBar(6, mass_structure=s), 2.3, 0.5 * bar.stable_step),
        # the fall of three beads and the simultaneous impacts that follow (an LCP per step)
        "ColumnOfBeads": (lambda s: ColumnOfBeads(3, mass_structure=s), 0.8, 2e-3),
        "CurvedFloorParticle": (lambda s: CurvedFloorParticle(s), 1.0, 1e-2),
    }


@pytest.mark.parametrize("case", ["ImpactingBar", "ColumnOfBeads", "CurvedFloorParticle"])
@pytest.mark.parametrize("name", TIME_STEPPERS)
def test_diagonal_and_dense_declarations_give_the_same_trajectory(name, case):
    make, t_end, h = _cases()[case]
    dense = _run(name, make("dense"), t_end, h, compiled=False)
    diagonal = _run(name, make("diagonal"), t_end, h, compiled=False)
    assert dense.stats["impacts"] > 0  # the runs go through contact
    _assert_same(dense, diagonal)


@pytest.mark.parametrize("name", TIME_STEPPERS)
def test_compiled_diagonal_loop_matches_plain_python(name):
    make, t_end, h = _cases()["ImpactingBar"]
    plain = _run(name, make("diagonal"), t_end, h, compiled=False)
    compiled = _run(name, make("diagonal"), t_end, h, compiled=True)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    assert plain.stats["impacts"] > 0
    _assert_same(plain, compiled)


def test_diagonal_loop_never_forms_the_dense_mass_matrix():
    problem = CurvedFloorParticle("diagonal")
    problem.check()  # forms M(q0) once to verify the declaration
    calls = problem.dense_calls
    trajectory = simulate(problem, METHODS["MoreauJean"](), t_end=1.0, h=1e-2)
    assert trajectory.stats["impacts"] > 0
    assert problem.dense_calls - calls <= 1  # simulate's own check; the loop asks for none


def test_diagonal_declaration_keeps_one_row_for_m():
    kernels = ImpactingBar(999).kernels()
    assert kernels.mass_structure == "diagonal"
    bound = mass_bindings(kernels, 1000, compile=False)
    assert bound["MASS_ROWS"] == 1 and bound["DIAGONAL_MASS"]
    dense = mass_bindings(ImpactingBar(999, mass_structure="dense").kernels(), 1000, False)
    assert dense["MASS_ROWS"] == 1000 and not dense["DIAGONAL_MASS"]


class LyingParticle(CurvedFloorParticle):
    """Declares a diagonal M whose M(q0) has off-diagonal entries 0.25."""

    def mass_matrix(self, q):
        return np.array([[1.0, 0.25], [0.25, 2.0]])

    def mass_diagonal(self, q):
        return np.array([1.0, 2.0])


def test_a_lying_diagonal_declaration_is_rejected_when_simulated():
    with pytest.raises(ValueError, match=r"mass_structure='diagonal'.*\[0, 1\] is 0\.25"):
        simulate(LyingParticle("diagonal"), METHODS["MoreauJean"](), t_end=0.1, h=1e-2)
    simulate(LyingParticle("dense"), METHODS["MoreauJean"](), t_end=0.1, h=1e-2)


def _wall_diagonal(q, p, out):
    out[0] = 1.0
    out[1] = 1.0


class LyingWall(SlantedWall):
    """A compiled problem with a non-diagonal M declared diagonal."""

    mass_structure = "diagonal"
    KERNELS = SlantedWall.KERNELS._replace(mass_diagonal=_wall_diagonal)


def test_a_lying_compiled_problem_is_rejected_when_built():
    assert np.any(SlantedWall().mass_matrix(SlantedWall().q0)[0, 1] != 0.0)
    with pytest.raises(ValueError, match=r"mass_structure='diagonal' but mass_matrix\(q0\)"):
        LyingWall()


def test_a_diagonal_declaration_without_a_diagonal_kernel_is_rejected():
    class NoKernel(SlantedWall):
        mass_structure = "diagonal"

    with pytest.raises(ValueError, match="mass_structure='diagonal' needs a mass_diagonal"):
        NoKernel()


@pytest.mark.parametrize("value", ["banded", "Diagonal", None, 1])
def test_unknown_structure_is_rejected(value):
    with pytest.raises(ValueError, match=r"mass_structure must be one of .*got"):
        ImpactingBar(4, mass_structure=value)
    with pytest.raises(ValueError, match=r"mass_structure must be one of"):
        simulate(CurvedFloorParticle(value), METHODS["MoreauJean"](), t_end=0.1, h=1e-2)


def test_a_non_positive_diagonal_is_rejected():
    class Negative(CurvedFloorParticle):
        def mass_diagonal(self, q):
            return np.array([1.0, -2.0])

    with pytest.raises(ValueError, match=r"mass_diagonal\(q0\) must be positive"):
        Negative("diagonal").check()


def test_diagonal_kinetic_energy_matches_the_dense_one():
    rng = np.random.default_rng(3)
    v = rng.standard_normal(11)
    q = rng.standard_normal(11)
    dense = ImpactingBar(10, mass_structure="dense").kinetic_energy(q, v)
    assert ImpactingBar(10).kinetic_energy(q, v) == pytest.approx(dense, rel=1e-15)


def test_kernels_default_to_dense():
    assert ProblemKernels(None, None, None, None).mass_structure == "dense"
    assert SlantedWall().kernels().mass_structure == "dense"
