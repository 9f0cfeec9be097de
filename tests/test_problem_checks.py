"""Every value a user's plain-Python problem returns is checked on every call (issue 16, item 2).

Each reproduction is a user problem that is valid at (t0, q0, v0), so that ``Problem.check``
accepts it, and turns bad later: a wrong shape, a complex dtype, NaN, a mass matrix that stops
being symmetric or positive definite, a gradient that vanishes in contact. Before the checks the
time-stepping methods broadcast the wrong shapes, read a NaN gap or gradient as "no contact" and
used the lower triangle of a non-symmetric M, all with status ok; a vanishing gradient raised a
bare ZeroDivisionError. Now every method stops with a SimulationError that names the problem
method, the expected and the actual shape or value, and gives t, q and v.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import Problem, SimulationError, simulate
from impactbench.bench.runner import Run, RunCache, execute
from impactbench.core.contact import (
    DEGENERATE_GRADIENT,
    affine_projection_step,
    impact_velocity,
    impulse,
    ldl_factor,
    make_workspace,
    metric_row,
    solve_lcp,
    solve_lcp_single,
)
from impactbench.core.status_codes import FAILURE_REASONS, STATUS_DEGENERATE_GRADIENT
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, DoublePendulum

H = 1e-2
T_END = 1.0
TIME_STEPPERS = [MoreauJean(), PaoliSchatzman(), CatchingUp()]
METHODS = [*TIME_STEPPERS, EventDriven()]


#: Free fall of UserWall: height 1 + A_Y t^2 / 2 with A_Y = (M^-1 F)_y.
A_Y = -(0.6 * 0.5 + 2.0 * 9.81) / (2.0 - 0.36)
T_LOW = math.sqrt(-1.0 / A_Y)  # the height falls below 0.5 (0.287)
T_FLOOR = math.sqrt(-2.0 / A_Y)  # first impact (0.406)


class UserWall(Problem):
    """A user's plain-Python particle above the floor y >= 0: 2 DOF, constant non-diagonal M,
    constant force, free acceleration M^-1 F = (3.89, -12.15). Subclasses turn one method bad
    below the height 0.5 (``low``, from T_LOW on), in contact or after t = 0.1."""

    MASS = np.array([[2.0, 0.6], [0.6, 1.0]])
    FORCE = np.array([0.5, -9.81])

    def __init__(self, restitution=0.5):
        self.name = type(self).__name__
        self.n_dof = 2
        self.n_constraints = 1
        self.restitution = restitution
        self.t0 = 0.0
        self.q0 = np.array([0.0, 1.0])
        self.v0 = np.array([1.0, 0.0])

    @staticmethod
    def low(q):
        return q[1] < 0.5

    def mass_matrix(self, q):
        return self.MASS

    def forces(self, t, q, v):
        return self.FORCE

    def gap(self, q):
        return np.array([q[1]])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0]])

    def potential_energy(self, q):
        return -float(self.FORCE @ q)


class ShortForce(UserWall):
    """forces returns shape (1,) after t = 0.1 (was broadcast to both components)."""

    def forces(self, t, q, v):
        return self.FORCE[1:] if t > 0.1 else self.FORCE


class ComplexForce(UserWall):
    def forces(self, t, q, v):
        return self.FORCE + 1j if t > 0.1 else self.FORCE


class NarrowGradient(UserWall):
    """gap_gradient of shape (1, 1) instead of (1, 2) near the floor."""

    def gap_gradient(self, q):
        return np.array([[1.0]]) if self.low(q) else np.array([[0.0, 1.0]])


class NaNGap(UserWall):
    def gap(self, q):
        return np.array([math.nan if self.low(q) else q[1]])


class NaNGradient(UserWall):
    def gap_gradient(self, q):
        return np.array([[math.nan, math.nan]]) if self.low(q) else np.array([[0.0, 1.0]])


class AsymmetricMass(UserWall):
    def mass_matrix(self, q):
        return np.array([[2.0, 0.6], [0.2, 1.0]]) if self.low(q) else self.MASS


class IndefiniteMass(UserWall):
    def mass_matrix(self, q):
        return np.array([[2.0, 0.6], [0.6, -1.0]]) if self.low(q) else self.MASS


class SingularMass(UserWall):
    """M - lambda_min I below the height 0.5: positive semi-definite, and round-off leaves an
    LDL^T pivot of 1.1e-16 > 0 (found by tests/test_properties.py: the factorisation alone
    accepts it, and Moreau-Jean then ran to t_end)."""

    def mass_matrix(self, q):
        if self.low(q):
            return self.MASS - np.linalg.eigvalsh(self.MASS)[0] * np.eye(2)
        return self.MASS


class VanishingGradient(UserWall):
    """The gradient is zero where the particle is in contact (gap <= 0)."""

    def gap_gradient(self, q):
        return np.zeros((1, 2)) if q[1] <= 0.0 else np.array([[0.0, 1.0]])


def run(problem, method):
    options = {} if isinstance(method, EventDriven) else {"h": H}
    return simulate(problem, method, T_END, **options)


def failure(problem, method, pattern, t_first):
    """The SimulationError of the run, checked: it matches ``pattern``, carries t, q, v, and
    stops where the defect first appears (at ``t_first``). Event-driven: at the time of the
    rejected call (the solver's stage or the event scan), never before ``t_first``. Time-steppers:
    within two steps of it (their evaluation points lag or lead t_k by up to a step)."""
    with pytest.raises(SimulationError, match=pattern) as info:
        run(problem, method)
    error = info.value
    assert error.q.shape == (2,) and error.v.shape == (2,)
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))
    message = str(error)
    assert f"at t={error.t!r}, q=" in message and ", v=" in message
    if isinstance(method, EventDriven):
        assert t_first <= error.t < T_END
    else:
        assert abs(error.t - t_first) <= 2 * H
    return error


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_forces_of_the_wrong_shape_after_t0(method):
    failure(
        ShortForce(),
        method,
        r"forces\(t, q, v\).* must return shape \(2,\), got shape \(1,\)",
        0.1,
    )


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_complex_forces_after_t0(method):
    failure(
        ComplexForce(),
        method,
        r"forces\(t, q, v\).* must return real numbers, got dtype complex",
        0.1,
    )


def test_a_bad_force_stops_the_loop_with_the_trajectory_so_far():
    """Time-steppers report a bad force through their loop: the error carries the state where
    the loop stopped (t = 0.1, the last step before the bad call at t_p = 0.105) and the
    trajectory up to there, and the message gives the arguments of the rejected call."""
    with pytest.raises(SimulationError) as info:
        run(ShortForce(), MoreauJean())
    error = info.value
    assert error.t == pytest.approx(0.1, abs=1e-15)
    assert "forces(t, q, v) for t=0.10500000000000001, q=[" in str(error)
    assert error.trajectory is not None and error.trajectory.t[-1] == error.t
    np.testing.assert_array_equal(error.trajectory.q[-1], error.q)


def gradient_time(method):
    """When a gradient that is bad below the height 0.5 is first evaluated: the event-driven
    scan evaluates it everywhere, the time-steppers only in contact."""
    return T_LOW if isinstance(method, EventDriven) else T_FLOOR


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_gradient_of_the_wrong_shape_near_the_floor(method):
    error = failure(
        NarrowGradient(),
        method,
        r"gap_gradient\(q\) must return shape \(1, 2\), got shape \(1, 1\): \[\[1\.0\]\]",
        gradient_time(method),
    )
    assert error.q[1] < 0.5  # the argument of the call


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_nan_gap_is_not_read_as_no_contact(method):
    error = failure(NaNGap(), method, r"gap\(q\) must return finite values, got \[nan\]", T_LOW)
    assert error.q[1] < 0.5


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_nan_gradient_is_not_read_as_no_contact(method):
    error = failure(
        NaNGradient(),
        method,
        r"gap_gradient\(q\) must return finite values, got \[\[nan, nan\]\]",
        gradient_time(method),
    )
    assert error.q[1] < 0.5


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_mass_matrix_that_turns_non_symmetric(method):
    failure(
        AsymmetricMass(),
        method,
        r"mass_matrix\(q\).* must be symmetric, got max \|M - M\^T\| = 0\.4",
        T_LOW,
    )


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_mass_matrix_that_turns_indefinite(method):
    failure(
        IndefiniteMass(),
        method,
        r"mass_matrix\(q\).* must be positive definite, got eigenvalues \[-1\.1",
        T_LOW,
    )


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_mass_matrix_that_turns_singular(method):
    failure(
        SingularMass(),
        method,
        r"mass_matrix\(q\).* must be well conditioned \(no LDL\^T pivot below max \|M\| / 1e\+12\)",
        T_LOW,
    )


@pytest.mark.parametrize("method", METHODS, ids=lambda m: type(m).__name__)
def test_gradient_that_vanishes_in_contact(method):
    error = failure(
        VanishingGradient(),
        method,
        r"gap_gradient\(q\) vanishes in contact: rows \[0\] are zero where gap\(q\) = \[-",
        T_FLOOR,
    )
    assert error.q[1] <= 0.0


@pytest.mark.parametrize(
    ("method_name", "value", "pattern"),
    [
        ("gap", [math.nan], r"gap\(q0\) must return finite values"),
        ("gap", [True], r"gap\(q0\) must return real numbers, got dtype bool"),
        ("gap", [[1.0]], r"gap\(q0\) must return shape \(1,\), got shape \(1, 1\)"),
        ("gap_gradient", [[0.0, math.inf]], r"gap_gradient\(q0\) must return finite values"),
        ("forces", ["0.5", "1"], r"forces\(t0, q0, v0\) must return real numbers, got dtype <U"),
        ("forces", [[0.5, 1.0], [2.0]], r"forces\(t0, q0, v0\) must return an array of shape"),
        ("mass_matrix", [[2.0, 0.6], [0.6, math.nan]], r"mass_matrix\(q0\) must return finite"),
    ],
)
def test_values_at_q0_are_checked_before_the_run(method_name, value, pattern):
    problem = UserWall()
    setattr(problem, method_name, lambda *args: value)
    with pytest.raises(ValueError, match=pattern):
        simulate(problem, MoreauJean(), T_END, h=H)


def test_valid_problem_runs_unchanged():
    """The checks reject nothing valid: the same wall written by the user in plain Python and
    run through the checked calls matches the unchecked compiled path of the built-in one to
    round-off (tests/test_paths.py compares the two paths on every built-in problem)."""
    from impactbench.problems import SlantedWall

    wall = SlantedWall(
        mass_matrix=UserWall.MASS, force=UserWall.FORCE, normal=(0.0, 1.0), restitution=0.5
    )
    compiled = simulate(wall, MoreauJean(), T_END, h=H)
    user = run(UserWall(), MoreauJean())
    assert user.impacts.total > 0 and not user.stats["compiled"]
    np.testing.assert_allclose(user.q, compiled.q, rtol=0, atol=1e-13)


# --------------------------------------------------------------------------------------------
# The contact helpers of the compiled loops return DEGENERATE_GRADIENT where w = 0


def identity_factor(n):
    factor = np.empty((n, n))
    assert ldl_factor(np.eye(n), n, factor)
    return factor


def test_metric_row_flags_a_zero_gradient_and_the_impulse_refuses_it():
    n = 2
    G = np.zeros((1, n))
    Y = np.empty((1, n))
    inv_w = metric_row(n, G, 0, identity_factor(n), Y)
    assert inv_w == 0.0
    v = np.array([0.0, -1.0])
    P, v_out = np.empty(1), np.empty(n)
    assert impulse_single_code(n, G, v, inv_w, P, v_out) == DEGENERATE_GRADIENT
    dx = np.empty(n)
    assert affine_projection_step(n, -0.1, Y, inv_w, P, dx) == DEGENERATE_GRADIENT
    # not violated: the projection of an admissible point is the point itself
    assert affine_projection_step(n, 0.1, Y, inv_w, P, dx) == 1 and np.all(dx == 0.0)


def impulse_single_code(n, G, v, inv_w, P, v_out):
    from impactbench.core.contact import impulse_single

    return impulse_single(n, G, 0, v, v, 0.5, np.zeros((1, n)), inv_w, P, v_out)


def test_metric_row_of_a_regular_gradient_is_the_inverse_delassus_number():
    M = np.array([[2.0, 0.6], [0.6, 1.0]])
    factor = np.empty((2, 2))
    assert ldl_factor(M, 2, factor)
    G = np.array([[0.3, 1.0]])
    Y = np.empty((1, 2))
    inv_w = metric_row(2, G, 0, factor, Y)
    expected = np.linalg.solve(M, G[0])
    np.testing.assert_allclose(Y[0], expected, rtol=1e-15)
    assert inv_w == pytest.approx(1.0 / (G[0] @ expected), rel=1e-15)


def test_lcp_with_a_vanishing_row():
    W = np.zeros((1, 1))
    P = np.empty(1)
    assert solve_lcp_single(W, np.array([-1.0]), P) == DEGENERATE_GRADIENT
    assert solve_lcp_single(W, np.array([0.5]), P) == 1 and P[0] == 0.0
    ws = make_workspace(2, 2)
    W2 = np.array([[2.0, 0.0], [0.0, 0.0]])
    P2 = np.empty(2)
    assert solve_lcp(W2, np.array([-1.0, -1.0]), 2, P2, ws, False, False) == DEGENERATE_GRADIENT
    assert solve_lcp(W2, np.array([-1.0, 1.0]), 2, P2, ws, False, False) > 0
    np.testing.assert_allclose(P2, [0.5, 0.0], rtol=1e-15)


def test_impulse_on_several_constraints_with_a_vanishing_gradient():
    n, m = 2, 2
    G = np.array([[0.0, 1.0], [0.0, 0.0]])
    ws = make_workspace(n, m)
    rows = np.array([0, 1])
    v = np.array([0.0, -1.0])
    v_out = np.empty(n)
    code = impulse(n, G, rows, 2, v, v, 0.5, identity_factor(n), ws, v_out)
    assert code == DEGENERATE_GRADIENT
    with pytest.raises(ValueError, match="vanishing gradient"):
        impact_velocity(np.eye(n), G, v, 0.5, rows)


def test_degenerate_gradient_has_a_failure_status_for_the_loops():
    assert "vanishes in contact" in FAILURE_REASONS[STATUS_DEGENERATE_GRADIENT]


# --------------------------------------------------------------------------------------------
# A failed run is a failed row, never cached as ok


def test_bad_user_problem_gives_a_failed_row_that_is_not_cached(tmp_path):
    runs = [Run(NaNGap, MoreauJean, T_END, h=H)]
    (outcome,) = execute(runs, cache_dir=tmp_path)
    assert outcome.status == "failed"
    assert (
        "SimulationError" in outcome.error and "gap(q) must return finite values" in outcome.error
    )
    assert RunCache(tmp_path).load(outcome.key) is None
    (again,) = execute(runs, cache_dir=tmp_path)
    assert again.status == "failed" and not again.cached


class InferredWall(UserWall):
    """UserWall without n_dof and n_constraints: check() infers them from q0 and gap(q0)."""

    def __init__(self, restitution=0.5):
        super().__init__(restitution)
        del self.n_dof, self.n_constraints


def test_sizes_are_inferred_from_q0_and_the_gap_and_the_run_matches_the_stated_ones():
    inferred = InferredWall()
    trajectory = simulate(inferred, MoreauJean(), 1.0, h=1e-3)
    assert (inferred.n_dof, inferred.n_constraints) == (2, 1)
    stated = simulate(UserWall(), MoreauJean(), 1.0, h=1e-3)
    np.testing.assert_array_equal(trajectory.q, stated.q)


@pytest.mark.parametrize(
    ("attribute", "value", "named"),
    [("n_dof", 3, "q0"), ("n_constraints", 2, "gap"), ("n_dof", 0, "n_dof")],
)
def test_stated_sizes_are_checked_against_q0_and_the_gap(attribute, value, named):
    problem = InferredWall()
    setattr(problem, attribute, value)
    with pytest.raises(ValueError, match=named):
        problem.check()


def test_a_gap_that_is_not_a_vector_cannot_give_the_constraint_count():
    class MatrixGap(InferredWall):
        def gap(self, q):
            return np.array([[q[1]]])

    with pytest.raises(ValueError, match=r"gap\(q0\) must have shape \(m,\)"):
        MatrixGap().check()


class FlippedGradient(UserWall):
    """The gradient with the wrong sign: the floor pushes down (it used to simulate)."""

    def gap_gradient(self, q):
        return np.array([[0.0, -1.0]])


class TwoWalls(UserWall):
    """Two constraints on two coordinates: g = (q1, 5 - q0 - 3 q1), rows (0, 1), (-1, -3)."""

    def __init__(self):
        super().__init__()
        self.n_constraints = 2

    def gap(self, q):
        return np.array([q[1], 5.0 - q[0] - 3.0 * q[1]])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0], [-1.0, -3.0]])


class TransposedGradient(TwoWalls):
    def gap_gradient(self, q):
        return np.array([[0.0, 1.0], [-1.0, -3.0]]).T


class HalvedGradient(UserWall):
    """A curved floor y >= x^2 / 2 - 1 at q0 = (1, 1), with the x-derivative off by 2."""

    def __init__(self):
        super().__init__()
        self.q0 = np.array([1.0, 1.0])

    def gap(self, q):
        return np.array([q[1] - q[0] ** 2 / 2 + 1.0])

    def gap_gradient(self, q):
        return np.array([[-q[0] / 2, 1.0]])


@pytest.mark.parametrize(
    ("problem", "where"),
    [(FlippedGradient(), "coordinate 1"), (TransposedGradient(), "row 1"),
     (HalvedGradient(), "coordinate 0")],
)  # fmt: skip
def test_a_gap_gradient_that_is_not_the_gradient_of_the_gap_is_refused(problem, where):
    with pytest.raises(ValueError, match=f"gap_gradient.*{where}"):
        problem.check()
    with pytest.raises(ValueError, match="gap_gradient"):
        simulate(problem, MoreauJean(), T_END, h=H)


class FarAndSmall(UserWall):
    """The floor at a height of 1e-6 over coordinates of 1e6: the differences are scaled."""

    def __init__(self, sign=1.0):
        super().__init__()
        self.q0 = np.array([3e6, 2e-6])
        self.sign = sign

    def gap(self, q):
        return np.array([1e-3 * (q[1] - 1e-6) + 1e-9 * q[0]])

    def gap_gradient(self, q):
        return self.sign * np.array([[1e-9, 1e-3]])


class Kink(UserWall):
    """A floor with a corner under q0: g = q1 - |q0| (any slope between -1 and 1 along x)."""

    def gap(self, q):
        return np.array([q[1] - abs(q[0])])

    def gap_gradient(self, q):
        return np.array([[-np.sign(q[0]), 1.0]])


class ManyBeads(Problem):
    """40 beads above the floor (random directions are checked), gradient sign ``sign``."""

    def __init__(self, sign):
        self.name, self.restitution, self.sign = "ManyBeads", 0.5, sign
        self.q0, self.v0 = np.linspace(1.0, 2.0, 40), np.zeros(40)

    def mass_matrix(self, q):
        return np.eye(40)

    def forces(self, t, q, v):
        return np.full(40, -9.81)

    def gap(self, q):
        return q**2 - 0.5

    def gap_gradient(self, q):
        return self.sign * np.diag(2.0 * q)

    def potential_energy(self, q):
        return 9.81 * float(q.sum())


def test_the_gradient_check_is_scale_free_and_accepts_corners_and_large_problems():
    FarAndSmall().check()
    with pytest.raises(ValueError, match="gap_gradient"):
        FarAndSmall(sign=-1.0).check()
    Kink().check()
    ManyBeads(1.0).check()
    with pytest.raises(ValueError, match="gap_gradient.*pseudo-random direction 0"):
        ManyBeads(-1.0).check()


@pytest.mark.parametrize("declared", [0, 2, 3, 20])
def test_a_changed_constraint_count_of_a_compiled_problem_is_refused(declared):
    """The kernels write into buffers sized from n_constraints: a count above the gap kernel's
    left entries of them uninitialised (MoreauJean stopped mid-run: 'the constraint gradient
    vanishes'), one below let the kernel write past them, and a kernel that loops over its
    buffer (DoublePendulum) read parameters past their end."""
    for problem in (BouncingBall(), DoublePendulum()):
        problem.n_constraints = declared
        with pytest.raises(ValueError, match=r"n_constraints must be 1 .* got"):
            simulate(problem, MoreauJean(), 0.1, h=1e-2)
    problem = BouncingBall()
    problem.n_constraints = declared
    problem.n_constraints = 1
    assert simulate(problem, MoreauJean(), 0.1, h=1e-2).success


def test_a_gap_kernel_writing_fewer_values_than_declared_is_refused():
    class ShortGap(BouncingBall):
        def _finish_init(self):
            self.n_constraints = 2  # what the constructor states; the kernel writes one value
            super()._finish_init()

    with pytest.raises(ValueError, match=r"n_constraints=2, and at q0 it left entries \[1\]"):
        ShortGap()


class SlightlyInside(UserWall):
    """UserWall starting 1e-7 below the floor, as a rounded published state would."""

    def __init__(self):
        super().__init__()
        self.q0 = np.array([0.0, -1e-7])


def test_an_initial_penetration_is_accepted_within_the_declared_tolerance_only():
    """By default q0 must be admissible to round-off (1e-10 max(1, |q0|)): 1e-7 inside the
    floor is refused, naming the tolerance; a problem declaring initial_penetration_tolerance
    = 1e-6 accepts it (and MoreauJean starts from it), one declaring 1e-8 refuses it, and a
    declared tolerance that is negative or not finite is refused by name."""
    with pytest.raises(ValueError, match=r"gap\(q0\) >= -1e-10, the initial_penetration"):
        SlightlyInside().check()

    class Tolerant(SlightlyInside):
        initial_penetration_tolerance = 1e-6

    class Strict(SlightlyInside):
        initial_penetration_tolerance = 1e-8

    Tolerant().check()
    run = simulate(Tolerant(), MoreauJean(), 0.1, h=H)
    assert run.q[0, 1] == -1e-7
    with pytest.raises(ValueError, match=r"gap\(q0\) >= -1e-08"):
        Strict().check()
    for bad in (-1e-6, math.nan):

        class Bad(SlightlyInside):
            initial_penetration_tolerance = bad

        with pytest.raises(ValueError, match="initial_penetration_tolerance"):
            Bad().check()
