"""Moving obstacles in the Moreau-Jean family (issue 53, phases B1 and C1 of
/work/notes/rheonomic_plan.md): MoreauJean (explicit, theta), MoreauJean(implicit=True),
CatchingUp and Adaptive over them, on problems whose gaps depend on time, g(t, q).

The step acts on the relative normal velocity U = G v + r (r = dg/dt): Newton's law
0 <= P _|_ U_{k+1} + e U_k >= 0 with U_k = G v_k + r(t_k), U_{k+1} = G v_{k+1} + r(t_{k+1}).
Checked here:

* Galilean invariance: with the floor moving at a constant velocity c, the motion relative to
  the floor (y - s(t), v - c) is the run of the same scheme on the fixed floor started at
  (y0, v0 - c), to round-off (one constraint, and a stack of two balls whose resting contacts
  go through the LCP);
* a uniformly accelerated floor (s'' = a): relative to it the ball is the bouncing ball under
  the gravity g0 + a: every logged impact has U+ = -e U-, the bounces accumulate at
  t_inf = t_1 + 2 U_1 / ((1 - e)(g0 + a)) (U_1 the first rebound speed) with an error O(h),
  and the ball then rests on the floor, at a bounded depth, to t = 1000; with a < -g0 a ball
  resting on the floor leaves it at once;
* Siconos' BallOnMovingPlane example (siconos-tutorials; tests/data/siconos/README.md)
  reproduced by MoreauJean(theta=1/2) to round-off;
* a rheonomic problem compiles its own loop, and two rheonomic problems of the same sizes
  and flags share it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from moving_floor import MovingFloorBall

from impactbench import Adaptive, simulate
from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ProblemKernels, RheonomicCompiledProblem
from impactbench.methods import CatchingUp, MoreauJean
from impactbench.problems import BouncingBall

GRAVITY = 9.81

#: The schemes that integrate moving obstacles, by name.
SCHEMES = {
    "MoreauJean(1/2)": lambda: MoreauJean(theta=0.5),
    "MoreauJean(1)": lambda: MoreauJean(theta=1.0),
    "MoreauJean(1/2, implicit)": lambda: MoreauJean(theta=0.5, implicit=True),
    "CatchingUp": lambda: CatchingUp(),
}


def _relative(run, floor, speed):
    """The run's (y - s(t), v - s'(t)) for one ball (column 0)."""
    t = run.t
    return run.q[:, 0] - floor(t), run.v[:, 0] - speed(t)


# --- a second rheonomic problem with two constraints: two balls stacked on a moving floor ----

STACK_PARAMETERS = ("gravity", "floor_speed", "diameter")
STACK_GRAVITY, STACK_SPEED, STACK_DIAMETER = parameter_indices(STACK_PARAMETERS)


@kernel
def _stack_mass(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 1.0


@kernel
def _stack_forces(t, q, v, p, out):
    out[0] = -p[STACK_GRAVITY]
    out[1] = -p[STACK_GRAVITY]


@kernel
def _stack_gap(t, q, p, out):
    out[0] = q[0] - t * p[STACK_SPEED]
    out[1] = q[1] - q[0] - p[STACK_DIAMETER]


@kernel
def _stack_gradient(t, q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = -1.0
    out[1, 1] = 1.0


@kernel
def _stack_rate(t, q, p, out):
    out[0] = -p[STACK_SPEED]
    out[1] = 0.0


@kernel
def _stack_drift(t, q, v, p, out):
    out[0] = 0.0
    out[1] = 0.0


class StackOnMovingFloor(RheonomicCompiledProblem):
    """Two unit masses under gravity on the floor s(t) = c t, the upper one resting on the
    lower one at the distance ``diameter``: g_1 = y_1 - c t, g_2 = y_2 - y_1 - d (2 DOF, 2
    constraints, both closed at rest: the impulses go through the LCP)."""

    KERNELS = ProblemKernels(
        _stack_mass,
        _stack_forces,
        _stack_gap,
        _stack_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_stack_rate,
        gap_drift=_stack_drift,
    )

    def __init__(self, q0, v0, floor_speed: float, restitution: float = 0.5) -> None:
        self.floor_speed = checks.finite_scalar(floor_speed, "floor_speed")
        self.diameter = 0.2
        self.restitution = checks.restitution(restitution)
        self.t0 = 0.0
        self.name = "StackOnMovingFloor"
        self.n_dof = 2
        self.n_constraints = 2
        self.q0 = np.array(q0, dtype=float)
        self.v0 = np.array(v0, dtype=float)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`STACK_PARAMETERS`."""
        return parameter_vector(
            STACK_PARAMETERS,
            gravity=GRAVITY,
            floor_speed=self.floor_speed,
            diameter=self.diameter,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """g0 (y_1 + y_2)."""
        return GRAVITY * float(np.sum(q))


# --- Galilean invariance --------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMES)
def test_a_floor_at_constant_velocity_is_the_fixed_floor_in_its_own_frame(name):
    """y - c t and v - c of a ball dropped onto the floor s = c t equal the fixed-floor run
    from (y0, v0 - c), to round-off, through the bounces and the rest (to t = 3), with the
    same impacts (same steps, same relative normal velocities)."""
    c, t_end, h = 1.3, 3.0, 2e-3
    moving = MovingFloorBall(q0=1.0, v0=0.4, floor_speed=c, floor_acceleration=0.0,
                             restitution=0.5)  # fmt: skip
    fixed = MovingFloorBall(q0=1.0, v0=0.4 - c, floor_speed=0.0, floor_acceleration=0.0,
                            restitution=0.5)  # fmt: skip
    run = simulate(moving, SCHEMES[name](), t_end, h=h)
    reference = simulate(fixed, SCHEMES[name](), t_end, h=h)
    assert run.success and reference.success
    y, w = _relative(run, moving.floor, lambda t: c + 0 * t)
    np.testing.assert_array_equal(run.t, reference.t)
    # the relative positions grow round-off from the absolute ones, |y| + c t_end at most
    np.testing.assert_allclose(y, reference.q[:, 0], rtol=0, atol=1e-12 * (1.0 + c * t_end))
    np.testing.assert_allclose(w, reference.v[:, 0], rtol=0, atol=1e-12 * (5.0 + c))
    # the ball bounced, then rested on the floor (depth O(h |U|) from the impact that closed)
    assert reference.impacts.total > 10 and abs(reference.v[-1, 0]) < 1e-9
    assert run.impacts.total == reference.impacts.total
    np.testing.assert_array_equal(run.impacts.t, reference.impacts.t)
    for field in ("normal_velocity_before", "normal_velocity_after"):
        np.testing.assert_allclose(
            getattr(run.impacts, field), getattr(reference.impacts, field), rtol=0, atol=1e-11
        )


@pytest.mark.parametrize("name", ["MoreauJean(1/2)", "CatchingUp"])
def test_a_stack_on_a_floor_at_constant_velocity_is_the_fixed_stack_in_its_frame(name):
    """Two balls dropped onto the floor s = c t, the upper onto the lower: the relative
    motion equals the fixed-floor run to round-off, also once both contacts rest (an LCP on
    two active constraints with the floor's rate in one row)."""
    c, t_end, h = -0.7, 3.0, 2e-3
    q0, v0 = (0.6, 1.1), (0.0, -0.5)
    moving = StackOnMovingFloor(q0, v0, floor_speed=c)
    fixed = StackOnMovingFloor(q0, (v0[0] - c, v0[1] - c), floor_speed=0.0)
    run = simulate(moving, SCHEMES[name](), t_end, h=h)
    reference = simulate(fixed, SCHEMES[name](), t_end, h=h)
    assert run.success and reference.success
    shift = c * run.t[:, None]
    np.testing.assert_allclose(
        run.q - shift, reference.q, rtol=0, atol=1e-12 * (2.0 + abs(c) * t_end)
    )
    np.testing.assert_allclose(run.v - c, reference.v, rtol=0, atol=1e-12 * (10.0 + abs(c)))
    # both contacts closed at the end: the stack rests on the floor
    gaps = fixed.gaps(reference.q[-1:], reference.t[-1:])[0]
    assert np.all(gaps <= 0.0) and np.max(np.abs(reference.v[-1])) < 1e-9
    assert run.impacts.total == reference.impacts.total > 10
    np.testing.assert_array_equal(run.impacts.constraint, reference.impacts.constraint)
    np.testing.assert_allclose(
        run.impacts.normal_velocity_after, reference.impacts.normal_velocity_after, atol=1e-11
    )


# --- a uniformly accelerated floor ----------------------------------------------------------

#: The floor s = c t + a t^2 / 2 of these tests and the restitution.
SPEED, ACCELERATION, RESTITUTION = 0.5, 2.0, 0.5


def _accelerated_floor() -> MovingFloorBall:
    return MovingFloorBall(q0=1.0, v0=0.0, floor_speed=SPEED, floor_acceleration=ACCELERATION,
                           restitution=RESTITUTION)  # fmt: skip


def _accumulation_time() -> float:
    """t_inf of the exact relative motion: z'' = -(g0 + a) from z0 = 1, w0 = -c; first impact
    at t_1 with U_- = w0 - (g0 + a) t_1, rebound U_1 = -e U_-, then the flights 2 U_1 e^j /
    (g0 + a) sum to 2 U_1 / ((1 - e)(g0 + a))."""
    gravity = GRAVITY + ACCELERATION
    w0 = -SPEED
    t_1 = (w0 + math.sqrt(w0 * w0 + 2.0 * gravity * 1.0)) / gravity
    rebound = -RESTITUTION * (w0 - gravity * t_1)
    return t_1 + 2.0 * rebound / ((1.0 - RESTITUTION) * gravity)


@pytest.mark.parametrize("name", ["MoreauJean(1/2)", "MoreauJean(1/2, implicit)", "CatchingUp"])
def test_an_accelerated_floor_is_the_bouncing_ball_under_gravity_g0_plus_a(name):
    """On s'' = a the relative motion is the bouncing ball under g0 + a: every impact obeys
    U+ = -e U- for the relative normal velocities, the bounces accumulate at t_inf with an
    error O(h) (the scheme's order with impacts: the time from which the relative velocity
    stays at round-off, minus t_inf, bounded by a constant times h over an 8-fold range of h),
    and the ball then moves with the floor."""
    floor = _accelerated_floor()
    t_inf = _accumulation_time()
    for h in (4e-3, 2e-3, 1e-3, 5e-4):
        run = simulate(floor, SCHEMES[name](), 4.0, h=h)
        assert run.success
        before = run.impacts.normal_velocity_before
        after = run.impacts.normal_velocity_after
        np.testing.assert_allclose(after, -RESTITUTION * before, rtol=0, atol=1e-13 * 5.0)
        assert before[0] < -4.0  # the first impact is the drop's (|U_-| = 4.89 exactly)
        y, w = _relative(run, floor.floor, lambda t: SPEED + ACCELERATION * t)
        moving = np.abs(w) > 1e-9 * (1.0 + SPEED + ACCELERATION * 4.0)
        t_rest = run.t[np.nonzero(moving)[0][-1] + 1]
        assert 0.0 <= t_rest - t_inf <= 25.0 * h, (h, t_rest - t_inf)


def test_a_ball_rests_on_an_accelerated_floor_at_a_bounded_depth_to_t_1000():
    """MoreauJean(1/2), h = 0.01, to t = 1000 (the floor then 1e6 above its start): after
    the bounces the ball rides the floor at a constant depth (set by the impact that closed
    it, below h max |U_-|) with a relative velocity at round-off; the depth changes by less
    than the worst-case round-off of the absolute positions, N eps max |y|."""
    floor = _accelerated_floor()
    h, t_end = 1e-2, 1000.0
    run = simulate(floor, MoreauJean(theta=0.5), t_end, h=h, output_every=10)
    assert run.success
    y, w = _relative(run, floor.floor, lambda t: SPEED + ACCELERATION * t)
    late = run.t >= 5.0
    depth = y[late]
    bound = h * np.max(np.abs(run.impacts.normal_velocity_before))
    assert np.all(depth < 0.0) and np.all(depth > -bound)
    round_off = (t_end / h) * np.finfo(float).eps * np.max(np.abs(run.q))
    assert np.ptp(depth) <= round_off
    assert np.max(np.abs(w[late])) <= 1e-9 * (SPEED + ACCELERATION * t_end)


def test_catching_up_sinks_into_an_accelerated_floor_by_a_h2_over_2_per_step():
    """The position update q_{k+1} = q_k + h v_k is the theta-method with weight 0, exact
    for the floor's motion only up to a h^2 / 2 per step: a ball resting on s'' = a > 0 sinks
    by exactly that per step (its relative velocity stays at round-off). MoreauJean(1/2)'s
    weight 1/2 makes it exact (test above)."""
    floor = _accelerated_floor()
    h = 2e-3
    run = simulate(floor, CatchingUp(), 4.0, h=h)
    y, w = _relative(run, floor.floor, lambda t: SPEED + ACCELERATION * t)
    late = run.t >= 2.0
    np.testing.assert_allclose(np.diff(y[late]), -ACCELERATION * h * h / 2.0, rtol=1e-6)
    assert np.max(np.abs(w[late])) <= 1e-12


@pytest.mark.parametrize(("name", "weight"), [("MoreauJean(1/2)", 0.5), ("MoreauJean(1)", 1.0),
                                              ("MoreauJean(1/2, implicit)", 0.5),
                                              ("CatchingUp", 0.0)])  # fmt: skip
def test_a_floor_falling_faster_than_gravity_leaves_a_resting_ball_at_once(name, weight):
    """a = -2 g0 from a ball resting on the floor (y0 = s0, v0 = c): no impulse ever, and the
    gap is the relative free fall z = (-(g0 + a)) t^2 / 2 = g0 t^2 / 2 up to the
    theta-method's error on the ball's own fall, (weight - 1/2)(-g0) h t (weight: that of
    the position update; the floor's motion is exact for every weight up to the
    (weight - 1/2) a h^2 per step that this sum already contains)."""
    a, c, h, t_end = -2.0 * GRAVITY, 0.5, 1e-3, 1.0
    floor = MovingFloorBall(q0=0.0, v0=c, floor_speed=c, floor_acceleration=a, restitution=0.5)
    run = simulate(floor, SCHEMES[name](), t_end, h=h)
    assert run.success and run.impacts.total == 0
    z = run.q[:, 0] - floor.floor(run.t)
    expected = -(GRAVITY + a) * run.t**2 / 2.0 + (weight - 0.5) * (-GRAVITY) * h * run.t
    np.testing.assert_allclose(z, expected, rtol=0, atol=1e-12 * (1.0 + abs(a)))
    assert np.all(z[2:] > 0.0)


# --- Siconos' BallOnMovingPlane ---------------------------------------------------------------

#: Siconos' output of its BallOnMovingPlane example (tests/data/siconos/README.md).
SICONOS_REFERENCE = Path(__file__).parent / "data" / "siconos" / "BallOnMovingPlane.ref"
SICONOS_H, SICONOS_T, SICONOS_E = 0.005, 10.0, 0.9

PLANE_PARAMETERS = ("gravity", "step", "rows")
PLANE_GRAVITY, PLANE_STEP, PLANE_ROWS = parameter_indices(PLANE_PARAMETERS)


@kernel
def _plane_row(t, p):
    """The row k of the table and whether t is the midpoint t_k + h/2 (t = k h or k h + h/2,
    located by rounding 2 t / h; clamped to the table)."""
    half_steps = max(0, min(int(round(2.0 * t / p[PLANE_STEP])), 2 * int(p[PLANE_ROWS]) - 2))
    return half_steps // 2, half_steps % 2 == 1


@kernel
def _plane_mass(q, p, out):
    out[0, 0] = 1.0


@kernel
def _plane_forces(t, q, v, p, out):
    out[0] = -p[PLANE_GRAVITY]


@kernel
def _plane_gap(t, q, p, out):
    k, midpoint = _plane_row(t, p)
    rows = int(p[PLANE_ROWS])
    s = p[3 + k]
    if midpoint:  # Siconos' prediction of the plane: s_k + (h/2) s'_k
        s = p[3 + k] + 0.5 * p[PLANE_STEP] * p[3 + rows + k]
    out[0] = q[0] - s


@kernel
def _plane_gradient(t, q, p, out):
    out[0, 0] = 1.0


@kernel
def _plane_rate(t, q, p, out):
    k, _ = _plane_row(t, p)
    out[0] = -p[3 + int(p[PLANE_ROWS]) + k]


@kernel
def _plane_drift(t, q, v, p, out):
    out[0] = 0.0


class TabulatedPlane(RheonomicCompiledProblem):
    """A unit mass under gravity above a plane whose height s_k and velocity s'_k at
    t_k = k h are tabulated (Siconos' columns 7 and 8): g(t_k, y) = y - s_k, r(t_k) = -s'_k,
    and at the midpoint g(t_k + h/2, y) = y - (s_k + (h/2) s'_k), so that MoreauJean(1/2)'s
    activation g(t_k + h/2, y_k + (h/2) v_k) <= 0 is Siconos' y_k + (h/2) ydot_k <= 0. Only the
    times k h and k h + h/2 are meaningful (MoreauJean(1/2) asks for no other); the drift is
    declared 0, which the plane's table has at t0 (s'_0 = 0 there, and the check of
    ``Problem.check`` differences in t around t0 within the row 0)."""

    KERNELS = ProblemKernels(
        _plane_mass,
        _plane_forces,
        _plane_gap,
        _plane_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_plane_rate,
        gap_drift=_plane_drift,
    )

    def __init__(self, height: np.ndarray, speed: np.ndarray) -> None:
        self.height = np.asarray(height, dtype=float)
        self.speed = np.asarray(speed, dtype=float)
        self.restitution = SICONOS_E
        self.t0 = 0.0
        self.name = "TabulatedPlane"
        self.n_dof = 1
        self.n_constraints = 1
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """gravity, h, the number of rows, then the heights and the velocities."""
        head = parameter_vector(
            PLANE_PARAMETERS, gravity=GRAVITY, step=SICONOS_H, rows=float(self.height.size)
        )
        return np.concatenate([head, self.height, self.speed])

    def potential_energy(self, q: np.ndarray) -> float:
        """g0 y."""
        return GRAVITY * float(np.asarray(q).reshape(-1)[0])


@pytest.fixture(scope="module")
def siconos_plane() -> np.ndarray:
    with open(SICONOS_REFERENCE) as file:
        rows, cols = (int(word) for word in file.readline().split())
    table = np.loadtxt(SICONOS_REFERENCE, skiprows=1)
    assert table.shape == (rows, cols) == (2001, 12)
    return table


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_moreau_jean_reproduces_siconos_ball_on_moving_plane(siconos_plane, compiled):
    """Siconos' BallOnMovingPlane (MoreauJeanOSI theta = 1/2, h = 0.005, e = 0.9, the plane's
    velocity 2 + cos(pi t / 2) prescribed, its position integrated by the scheme): the ball's
    q and v at each of the 2001 rows to round-off, the same impacts."""
    table = siconos_plane
    plane = TabulatedPlane(table[:, 7], table[:, 8])
    run = simulate(plane, MoreauJean(theta=0.5, compiled=compiled), SICONOS_T, h=SICONOS_H)
    assert run.success and run.stats["compiled"] is compiled
    np.testing.assert_allclose(run.t, table[:, 0], rtol=0, atol=1e-12)
    q_error = np.max(np.abs(run.q[:, 0] - table[:, 1]))
    v_error = np.max(np.abs(run.v[:, 0] - table[:, 2]))
    print(q_error, v_error, run.impacts.total, np.count_nonzero(table[1:, 3] > 0))
    assert q_error <= 1e-10 and v_error <= 1e-10
    # the impulse of step k -> k+1 (mass 1): p = v_{k+1} - v_k + h g, zero on free steps
    impulse = np.diff(run.v[:, 0]) + SICONOS_H * GRAVITY
    active = table[1:, 3] > 0
    assert np.count_nonzero(active) == run.impacts.total
    assert np.max(np.abs(impulse[active] - table[1:, 3][active])) <= 1e-10


# --- Adaptive over a stepper that integrates moving obstacles --------------------------------


@pytest.mark.parametrize("name", ["MoreauJean(1/2)", "CatchingUp"])
def test_adaptive_over_a_moving_obstacle_converges_to_the_exact_impacts(name):
    """Adaptive(stepper) on the accelerated floor: its gap control works on g(t, q) at the
    step's times. The first two impacts (time, U_-) approach the exact relative motion
    (gravity g0 + a) as rtol falls, every impact obeys U+ = -e U-, and the ball ends at rest
    on the floor."""
    floor = _accelerated_floor()
    gravity = GRAVITY + ACCELERATION
    w0 = -SPEED
    t_1 = (w0 + math.sqrt(w0 * w0 + 2.0 * gravity)) / gravity
    u_1 = w0 - gravity * t_1
    exact_t = np.array([t_1, t_1 + 2.0 * RESTITUTION * abs(u_1) / gravity])
    exact_u = np.array([u_1, RESTITUTION * u_1])
    errors = []
    for rtol in (1e-4, 1e-6):
        method = Adaptive(SCHEMES[name](), rtol=rtol, atol=1e-3 * rtol)
        assert method.moving_obstacles
        run = simulate(floor, method, 3.0)
        assert run.success
        impacts = run.impacts
        np.testing.assert_allclose(
            impacts.normal_velocity_after,
            -RESTITUTION * impacts.normal_velocity_before,
            rtol=0,
            atol=1e-12,
        )
        error = max(
            np.max(np.abs(impacts.t[:2] - exact_t)),
            np.max(np.abs(impacts.normal_velocity_before[:2] - exact_u)) / abs(u_1),
        )
        errors.append(error)
        w = run.v[-1, 0] - (SPEED + ACCELERATION * run.t[-1])
        assert abs(w) <= 1e-9
    assert errors[1] <= 1e-3 and errors[1] <= errors[0] / 5.0, errors


# --- compiled loops ---------------------------------------------------------------------------


def test_a_rheonomic_problem_compiles_its_own_loop_and_shares_it_with_one_of_its_sizes(
    siconos_plane,
):
    """The moving floor's loop is not the fixed ball's (its problem tuple carries the timed
    kernels and the rates; its state the rates), and the tabulated plane (another rheonomic
    problem with 1 DOF, 1 affine constraint, a constant mass) runs in it without compiling:
    the loop takes the kernels at run time. The plain-Python loop gives the same steps."""
    fixed = MoreauJean().loop_for(BouncingBall(restitution=0.5))[0].loop
    table = siconos_plane
    loops = []
    for problem in (_accelerated_floor(), TabulatedPlane(table[:, 7], table[:, 8])):
        loop = MoreauJean().loop_for(problem)[0].loop
        before = len(loop.signatures)
        compiled = simulate(problem, MoreauJean(), 2.0, h=1e-3)
        plain = simulate(problem, MoreauJean(compiled=False), 2.0, h=1e-3)
        assert compiled.stats["compiled"] and compiled.impacts.total > 0
        np.testing.assert_allclose(compiled.q, plain.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(compiled.v, plain.v, rtol=0, atol=1e-12)
        assert compiled.impacts.total == plain.impacts.total
        loops.append((loop, len(loop.signatures) - before))
    (first, _), (second, compiled_for_second) = loops
    assert first is not fixed
    assert second is first and compiled_for_second == 0
