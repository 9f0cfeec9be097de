"""The compiled event-driven engine against closed forms and the scipy path of ``EventDriven``."""

import math

import numpy as np
import pytest
from moving_floor import MovingFloorBall
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from test_moving_obstacles_event_driven import resting_on_table

import impactbench as ib
from impactbench.core._jit import kernel
from impactbench.core.divergence import DivergenceError
from impactbench.core.events import simulate_compiled
from impactbench.core.events.engine import make_engine, run_kernels
from impactbench.core.problem import CompiledProblem, ProblemKernels
from impactbench.core.trajectory import Status
from impactbench.methods.event_driven import EventDriven
from impactbench.problems import BouncingBall, DoublePendulum, ImpactingOscillator, SlantedWall

RTOL, ATOL = 1e-10, 1e-12


# Each (problem, integrator) compiles one engine (~20 s, then cached on disk): the tests share
# them -- DOP853 on the ball, the pendulums and the disc, RK45 on the slanted wall.
def test_bouncing_ball_matches_closed_form_before_accumulation():
    ball = BouncingBall(restitution=0.8)
    t_end = ball.accumulation_time - 0.1
    run = simulate_compiled(ball, t_end, RTOL, ATOL, "DOP853")
    assert run.status is Status.OK
    exact = ball.impact_times(t_end)
    assert len(exact) >= 15
    assert run.impacts.total == len(exact)
    np.testing.assert_allclose(run.impacts.t, exact, rtol=0, atol=1e-8)
    first_speed = math.sqrt(2.0 * ball.gravity * ball.q0[0])
    k = np.arange(len(exact))
    np.testing.assert_allclose(
        run.impacts.normal_velocity_before, -first_speed * 0.8**k, rtol=0, atol=1e-8
    )
    np.testing.assert_allclose(
        run.impacts.normal_velocity_after, first_speed * 0.8 ** (k + 1), rtol=0, atol=1e-8
    )
    # Free flight between impacts: every sample on the closed form (the pre-impact samples are
    # left limits, compared with the velocity before the impact).
    q, v = ball.exact_solution(run.t)
    np.testing.assert_allclose(run.q, q.reshape(run.q.shape), rtol=0, atol=1e-8)
    smooth = ~np.isin(run.t, run.impacts.t)
    np.testing.assert_allclose(run.v[smooth], v.reshape(run.v.shape)[smooth], rtol=0, atol=1e-8)
    assert run.t[-1] == t_end
    assert run.stats["events"] == run.impacts.total
    assert run.stats["segments"] == run.impacts.total + 1


def test_bouncing_ball_through_the_accumulation_into_persistent_contact():
    ball = BouncingBall(restitution=0.8)
    e, t_end = ball.restitution, 10.0
    run = simulate_compiled(ball, t_end, RTOL, ATOL, "DOP853")
    assert run.status is Status.ZENO_HANDLED
    # Impacts until the rebound speed e^k V1 falls below the rest speed 1e-6 sqrt(2 g L), L = 1,
    # all at the exact times; the cut at the last of them.
    first_speed = math.sqrt(2.0 * ball.gravity * ball.q0[0])
    rest_speed = run.stats["rest_speed"]
    assert rest_speed == pytest.approx(1e-6 * math.sqrt(2.0 * ball.gravity), rel=1e-12)
    count = math.ceil(math.log(rest_speed / first_speed) / math.log(e))
    assert run.impacts.total == len(run.impacts) == count >= 60
    exact = ball.impact_times(t_end)[:count]
    np.testing.assert_allclose(run.impacts.t, exact, rtol=0, atol=1e-8)
    before, after = run.impacts.normal_velocity_before, run.impacts.normal_velocity_after
    assert np.abs(after + e * before).max() <= 1e-12 * np.abs(before).max()
    assert run.stats["zeno_time"] == run.stats["contact_time"] == run.impacts.t[-1]
    assert ball.accumulation_time - run.stats["zeno_time"] < 1e-5
    assert "rest speed" in run.message and "rest_velocity=1e-06" in run.message
    # Positions everywhere on the closed form, velocities away from the impacts and the cut;
    # at rest on the floor (resting height 0, v = 0) from the cut to t_end.
    q, v = ball.exact_solution(run.t)
    np.testing.assert_allclose(run.q, q, rtol=0, atol=1e-8)
    zeno = run.stats["zeno_time"]
    smooth = (np.min(np.abs(run.t[:, None] - exact[None, :]), axis=1) > 1e-6) & (
        (run.t < zeno) | (run.t > ball.accumulation_time)
    )
    np.testing.assert_allclose(run.v[smooth], v[smooth], rtol=0, atol=1e-8)
    resting = run.t > zeno
    assert resting.sum() >= 5 and run.t[-1] == t_end
    assert np.abs(run.q[resting]).max() <= 1e-12 and np.abs(run.v[resting]).max() <= 1e-12
    assert run.stats["contact_phases"] == 1
    assert run.stats["contact_duration"] == pytest.approx(t_end - zeno, rel=1e-14)
    # The scipy path: the same impacts and state at t_end; plain Python: the same run.
    ref = ib.simulate(ball, EventDriven(integrator="DOP853", rtol=RTOL, atol=ATOL), t_end)
    assert ref.status is Status.ZENO_HANDLED and ref.impacts.total == count
    np.testing.assert_allclose(run.impacts.t, ref.impacts.t, rtol=0, atol=10 * RTOL)
    assert run.stats["zeno_time"] == pytest.approx(ref.stats["zeno_time"], abs=10 * RTOL)
    np.testing.assert_allclose(run.q[-1], ref.q[-1], rtol=0, atol=5 * RTOL)
    np.testing.assert_allclose(run.v[-1], ref.v[-1], rtol=0, atol=5 * RTOL)
    plain = simulate_compiled(ball, t_end, RTOL, ATOL, "DOP853", compile=False)
    assert plain.status is Status.ZENO_HANDLED and plain.impacts.total == count
    np.testing.assert_allclose(plain.impacts.t, run.impacts.t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain.q[-1], run.q[-1], rtol=0, atol=1e-12)


def test_ball_resting_from_the_start_stays_at_rest():
    ball = BouncingBall(q0=0.0)
    run = simulate_compiled(ball, 3.0, RTOL, ATOL, "DOP853")
    assert run.status is Status.OK
    assert run.message.endswith("persistent contact from t=0.0")
    assert run.impacts.total == 0 and run.stats["zeno_time"] is None
    assert run.stats["contact_time"] == 0.0 and run.stats["contact_phases"] == 1
    assert run.t[-1] == 3.0 and len(run.t) >= 3
    assert np.abs(run.q).max() <= 1e-15 and np.abs(run.v).max() <= 1e-15


def test_slanted_wall_first_impacts_in_the_kinetic_metric():
    wall = SlantedWall()
    t_end = wall.first_impact_time + 0.8 * (wall.accumulation_time - wall.first_impact_time)
    run = simulate_compiled(wall, t_end, RTOL, ATOL, "RK45")
    assert run.status is Status.OK
    exact = wall.impact_times(t_end)
    assert len(exact) >= 3
    np.testing.assert_allclose(run.impacts.t, exact, rtol=0, atol=1e-8)
    # The post-impact sample (the second sample at each impact time) is the closed form's
    # post-impact state: the tangential velocity is kept in the metric of M.
    for t_impact, t_exact in zip(run.impacts.t, exact, strict=True):
        last = np.flatnonzero(run.t == t_impact)[-1]
        q, v = wall.exact_solution(np.array([t_exact]))
        np.testing.assert_allclose(run.q[last], q.reshape(-1), rtol=0, atol=1e-8)
        np.testing.assert_allclose(run.v[last], v.reshape(-1), rtol=0, atol=1e-8)


@pytest.mark.parametrize(
    "pendulum",
    [DoublePendulum(), DoublePendulum.two_contact()],
    ids=["tip-wall", "two-contacts"],
)
def test_double_pendulum_agrees_with_the_scipy_path(pendulum):
    integrator = "DOP853"
    run = simulate_compiled(pendulum, 5.5, RTOL, ATOL, integrator)
    ref = ib.simulate(pendulum, EventDriven(integrator=integrator, rtol=RTOL, atol=ATOL), 5.5)
    assert ref.status is Status.OK
    assert run.status is Status.OK
    assert run.impacts.total == ref.impacts.total >= 3
    np.testing.assert_array_equal(run.impacts.constraint, ref.impacts.constraint)
    assert run.stats["steps"] == ref.stats["steps"]
    np.testing.assert_allclose(run.impacts.t, ref.impacts.t, rtol=0, atol=10 * RTOL)
    scale = 1.0 + np.abs(ref.v[-1]).max()
    np.testing.assert_allclose(run.q[-1], ref.q[-1], rtol=0, atol=5 * RTOL * scale)
    np.testing.assert_allclose(run.v[-1], ref.v[-1], rtol=0, atol=5 * RTOL * scale)


@pytest.mark.parametrize(
    ("first", "second", "span", "geometry"),
    [
        (
            lambda: BouncingBall(restitution=0.8),
            lambda: ImpactingOscillator(restitution=0.5),
            4.0,
            "position",
        ),
        (MovingFloorBall, lambda: resting_on_table(0.05, 20.0), 1.0, "timed"),
    ],
    ids=["fixed obstacles", "moving obstacles"],
)
def test_a_second_problem_of_the_same_sizes_and_flags_compiles_no_engine(
    first, second, span, geometry
):
    """The engine takes the kernels as run-time values (the geometric ones g, G, and r = dg/dt
    of a moving obstacle, first-class kernels of the kind ``geometry``): the impacting
    oscillator (one DOF, one constraint, a constant mass, as the ball) runs on the ball's
    compiled engine, the vibrating table on the moving floor's, compiling only its own kernels,
    and agrees with the plain-Python engine (its kernels bound as globals)."""
    first, second = first(), second()
    engine = make_engine(first, "DOP853")
    kernels = run_kernels(first, np.zeros(1), True)[1]
    assert kernels.gap.kind == kernels.gap_gradient.kind == geometry
    simulate_compiled(first, first.t0 + 1.0, RTOL, ATOL, "DOP853")
    compiled_for_the_first = len(engine.signatures)
    assert make_engine(second, "DOP853") is engine
    t_end = second.t0 + span
    compiled = simulate_compiled(second, t_end, 1e-8, 1e-10, "DOP853")
    # counted as signatures of the one dispatcher: no new overload for the second problem
    assert len(engine.signatures) == compiled_for_the_first == 1
    plain = simulate_compiled(second, t_end, 1e-8, 1e-10, "DOP853", compile=False)
    assert compiled.impacts.total == plain.impacts.total > 0
    np.testing.assert_allclose(compiled.t, plain.t, rtol=1e-13, atol=0)
    np.testing.assert_allclose(compiled.q, plain.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled.v, plain.v, rtol=0, atol=1e-12)


def test_compiled_and_plain_python_agree():
    wall = SlantedWall()
    t_end = wall.first_impact_time + 1.0
    compiled = simulate_compiled(wall, t_end, 1e-8, 1e-10, "RK45", output_every=3)
    plain = simulate_compiled(wall, t_end, 1e-8, 1e-10, "RK45", output_every=3, compile=False)
    assert compiled.impacts.total == plain.impacts.total >= 2
    assert compiled.t.shape == plain.t.shape
    np.testing.assert_allclose(compiled.t, plain.t, rtol=1e-13, atol=0)
    np.testing.assert_allclose(compiled.q, plain.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled.v, plain.v, rtol=0, atol=1e-12)


# A free particle (no forces) in the plane flying past a disc |q - c| >= R: along the straight
# flight the gap is a quadratic in t, so the RK steps are exact and grow tenfold per step; a
# flight that cuts the disc near its edge enters and would leave it inside one step (the gap is
# positive at every sub-interval end), found only by the interior-minimum check.
@kernel
def _disc_mass_matrix(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 1.0


@kernel
def _disc_forces(t, q, v, p, out):
    out[0] = 0.0
    out[1] = 0.0


@kernel
def _disc_gap(q, p, out):
    out[0] = (q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2 - p[2] ** 2


@kernel
def _disc_gap_gradient(q, p, out):
    out[0, 0] = 2.0 * (q[0] - p[0])
    out[0, 1] = 2.0 * (q[1] - p[1])


class _DiscObstacle(CompiledProblem):
    KERNELS = ProblemKernels(_disc_mass_matrix, _disc_forces, _disc_gap, _disc_gap_gradient)

    def __init__(self, miss: float) -> None:
        self.name = "DiscObstacle"
        self.n_dof = 2
        self.n_constraints = 1
        self.restitution = 1.0
        self.t0 = 0.0
        self.centre = np.array([20.0, 1.0 - miss])  # closest approach: R (1 - miss)
        self.radius = 1.0
        self.q0 = np.zeros(2)
        self.v0 = np.array([1.0, 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([*self.centre, self.radius])

    def potential_energy(self, q: np.ndarray) -> float:
        return 0.0

    def first_impact_time(self) -> float:
        """Entry time of the straight flight q0 + v0 t into the disc."""
        half_chord = math.sqrt(self.radius**2 - (self.centre[1] - self.q0[1]) ** 2)
        return float(self.centre[0] - half_chord)


def test_grazing_crossing_inside_one_step_is_found():
    disc = _DiscObstacle(miss=1e-6)
    run = simulate_compiled(disc, 40.0, RTOL, ATOL, "DOP853")
    assert run.status is Status.OK
    assert run.impacts.total == 1
    assert abs(run.impacts.t[0] - disc.first_impact_time()) < 1e-9
    # The step that contained the entry started more than a chord (the time g stays below 0)
    # before it: the crossing was found inside one long step, not by a step landing in the disc.
    before = run.t[run.t < run.impacts.t[0]]
    chord = 2.0 * (disc.centre[0] - disc.first_impact_time())
    assert run.impacts.t[0] - before[-1] > chord
    # Specular reflection (e = 1, identity metric): speed kept, normal velocity reversed.
    np.testing.assert_allclose(
        run.impacts.normal_velocity_after, -run.impacts.normal_velocity_before, rtol=1e-12
    )
    np.testing.assert_allclose(np.linalg.norm(run.v[-1]), 1.0, rtol=1e-12)


def test_bad_input_names_the_argument():
    ball = BouncingBall()
    with pytest.raises(ValueError, match="integrator"):
        simulate_compiled(ball, 1.0, integrator="Radau")
    with pytest.raises(ValueError, match="t_end"):
        simulate_compiled(ball, -1.0)
    with pytest.raises(ValueError, match="output_every"):
        simulate_compiled(ball, 1.0, output_every=0)


def test_output_decimation_keeps_events_and_the_final_state():
    pendulum = DoublePendulum()
    full = simulate_compiled(pendulum, 5.5, RTOL, ATOL, "DOP853")
    sparse = simulate_compiled(pendulum, 5.5, RTOL, ATOL, "DOP853", output_every=7)
    assert sparse.impacts.total == full.impacts.total
    # Decimation changes the output only: every kept sample is a sample of the full run.
    assert len(full.t) > 5 * len(sparse.t) > 0
    index = np.searchsorted(full.t, sparse.t)
    np.testing.assert_array_equal(full.t[index], sparse.t)
    for t_impact in sparse.impacts.t:
        assert np.count_nonzero(sparse.t == t_impact) == 2  # before and after
    assert sparse.t[-1] == 5.5
    np.testing.assert_array_equal(sparse.q[-1], full.q[-1])
    np.testing.assert_array_equal(sparse.v[-1], full.v[-1])


# A ball resting on the floor shaken by the force -g + A sin(omega t) (A = 2 g, omega = 2 pi,
# p = [g, A, omega]): the contact force lambda = g - A sin(omega t) vanishes at
# t_off = asin(g / A) / omega, the ball lifts off, flies and lands again.
@kernel
def _shaken_mass_matrix(q, p, out):
    out[0, 0] = 1.0


@kernel
def _shaken_forces(t, q, v, p, out):
    out[0] = -p[0] + p[1] * math.sin(p[2] * t)


@kernel
def _unit_gap(q, p, out):
    out[0] = q[0]


@kernel
def _unit_gap_gradient(q, p, out):
    out[0, 0] = 1.0


class _ShakenBall(CompiledProblem):
    KERNELS = ProblemKernels(_shaken_mass_matrix, _shaken_forces, _unit_gap, _unit_gap_gradient)

    def __init__(self) -> None:
        self.name = "ShakenBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.restitution = 0.5
        self.t0 = 0.0
        self.gravity = 9.81
        self.amplitude = 2.0 * self.gravity
        self.omega = 2.0 * math.pi
        self.q0 = np.zeros(1)
        self.v0 = np.zeros(1)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([self.gravity, self.amplitude, self.omega])

    def potential_energy(self, q: np.ndarray) -> float:
        return self.gravity * float(q[0])

    def lift_off_time(self) -> float:
        return math.asin(self.gravity / self.amplitude) / self.omega

    def flight(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed form of the first flight, from rest at the lift-off time."""
        g, amplitude, omega, t_off = self.gravity, self.amplitude, self.omega, self.lift_off_time()
        s = t - t_off
        q = -0.5 * g * s**2 - amplitude / omega * (
            (np.sin(omega * t) - math.sin(omega * t_off)) / omega - s * math.cos(omega * t_off)
        )
        v = -g * s - amplitude / omega * (np.cos(omega * t) - math.cos(omega * t_off))
        return q, v


def test_contact_lifts_off_where_its_force_vanishes():
    shaken = _ShakenBall()
    t_off = shaken.lift_off_time()
    grid = np.linspace(t_off + 1e-3, 1.0, 2000)
    first_negative = grid[np.argmax(shaken.flight(grid)[0] < 0.0)]
    t_land = brentq(lambda s: shaken.flight(s)[0], t_off + 1e-3, first_negative, xtol=1e-15)
    run = simulate_compiled(shaken, 1.0, RTOL, ATOL, "DOP853")
    assert run.status is Status.OK
    assert run.stats["contact_time"] == 0.0 and run.stats["contact_phases"] == 1
    # The contact opens at the root of lambda (a restart sample there) and the ball lands at the
    # closed-form time.
    assert np.abs(run.t - t_off).min() <= 1e-9
    assert run.impacts.t[0] == pytest.approx(t_land, abs=1e-8)
    resting = run.t <= t_off - 1e-9
    assert np.abs(run.q[resting]).max() <= 1e-15 and np.abs(run.v[resting]).max() <= 1e-15
    flying = (run.t > t_off) & (run.t < t_land - 1e-6)
    assert flying.sum() >= 5
    q, v = shaken.flight(run.t[flying])
    np.testing.assert_allclose(run.q[flying, 0], q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(run.v[flying, 0], v, rtol=0, atol=1e-8)
    assert run.q.min() >= 0.0
    ref = ib.simulate(shaken, EventDriven(integrator="DOP853", rtol=RTOL, atol=ATOL), 1.0)
    assert ref.impacts.total == run.impacts.total
    assert run.stats["contact_phases"] == ref.stats["contact_phases"]
    np.testing.assert_allclose(run.impacts.t, ref.impacts.t, rtol=0, atol=10 * RTOL)
    np.testing.assert_allclose(run.q[-1], ref.q[-1], rtol=0, atol=5 * RTOL)
    np.testing.assert_allclose(run.v[-1], ref.v[-1], rtol=0, atol=5 * RTOL)


# Two floors q1 >= 0 and q2 + offset >= 0 under F = -g M (1, 1) with a non-diagonal M
# (p = [g, offset]): from q0 = (1, 1) with offset 0 both coordinates fall together, every impact
# is a two-row LCP in the kinetic metric, and the accumulation closes both contacts at once
# (the two-row acceleration LCP). With an offset the first contact closes before the second
# accumulates and is held through the later impacts of the second (its rest speed from the
# larger of its accelerations with and without the held forces, not from its own round-off a_i).
_CORNER_M = ((2.0, 0.6), (0.6, 1.0))


@kernel
def _corner_mass_matrix(q, p, out):
    out[0, 0] = 2.0
    out[0, 1] = 0.6
    out[1, 0] = 0.6
    out[1, 1] = 1.0


@kernel
def _corner_forces(t, q, v, p, out):
    out[0] = -p[0] * 2.6
    out[1] = -p[0] * 1.6


@kernel
def _corner_gap(q, p, out):
    out[0] = q[0]
    out[1] = q[1] + p[1]


@kernel
def _corner_gap_gradient(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 1.0


class _Corner(CompiledProblem):
    KERNELS = ProblemKernels(_corner_mass_matrix, _corner_forces, _corner_gap, _corner_gap_gradient)

    def __init__(self, offset: float) -> None:
        self.name = "Corner"
        self.n_dof = 2
        self.n_constraints = 2
        self.restitution = 0.5
        self.t0 = 0.0
        self.gravity = 9.81
        self.offset = offset
        self.q0 = np.array([1.0, 1.0])
        self.v0 = np.zeros(2)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([self.gravity, self.offset])

    def potential_energy(self, q: np.ndarray) -> float:
        return self.gravity * float(np.ones(2) @ np.array(_CORNER_M) @ q)


@pytest.mark.parametrize("offset", [0.0, 0.5])
def test_two_contacts_close_together_as_the_scipy_path(offset):
    corner = _Corner(offset=offset)
    t_end = 4.0
    run = simulate_compiled(corner, t_end, RTOL, ATOL, "DOP853")
    ref = ib.simulate(corner, EventDriven(integrator="DOP853", rtol=RTOL, atol=ATOL), t_end)
    assert ref.status is Status.ZENO_HANDLED
    assert run.status is Status.ZENO_HANDLED
    assert run.message.split("; reached")[0] == ref.message.split("; reached")[0].replace(
        repr(ref.stats["zeno_time"]), repr(run.stats["zeno_time"])
    )
    assert run.impacts.total == ref.impacts.total >= 20
    np.testing.assert_array_equal(run.impacts.constraint, ref.impacts.constraint)
    assert set(run.impacts.constraint.tolist()) == {0, 1}
    np.testing.assert_allclose(run.impacts.t, ref.impacts.t, rtol=0, atol=10 * RTOL)
    assert run.stats["contact_phases"] == ref.stats["contact_phases"] == 2
    assert run.stats["contact_time"] == pytest.approx(ref.stats["contact_time"], abs=10 * RTOL)
    # At rest in the corner at t_end: both gaps and velocities zero.
    np.testing.assert_allclose(run.q[-1], [0.0, -corner.offset], rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.v[-1], 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.q[-1], ref.q[-1], rtol=0, atol=5 * RTOL)
    np.testing.assert_allclose(run.v[-1], ref.v[-1], rtol=0, atol=5 * RTOL)


# A particle inside the unit circle under gravity (g(q) = R^2 - |q|^2, a curved constraint,
# p = [g, R]): from the bottom with speed 2 it slides on the circle as a pendulum,
# theta'' = -(g / R) sin(theta), the contact never opening (lambda > 0 for v0^2 < 2 g R).
@kernel
def _bowl_mass_matrix(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 1.0


@kernel
def _bowl_forces(t, q, v, p, out):
    out[0] = 0.0
    out[1] = -p[0]


@kernel
def _bowl_gap(q, p, out):
    out[0] = p[1] ** 2 - q[0] ** 2 - q[1] ** 2


@kernel
def _bowl_gap_gradient(q, p, out):
    out[0, 0] = -2.0 * q[0]
    out[0, 1] = -2.0 * q[1]


class _Bowl(CompiledProblem):
    KERNELS = ProblemKernels(_bowl_mass_matrix, _bowl_forces, _bowl_gap, _bowl_gap_gradient)

    def __init__(self, speed: float) -> None:
        self.name = "Bowl"
        self.n_dof = 2
        self.n_constraints = 1
        self.restitution = 0.5
        self.t0 = 0.0
        self.gravity = 9.81
        self.radius = 1.0
        self.q0 = np.array([0.0, -self.radius])
        self.v0 = np.array([speed, 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([self.gravity, self.radius])

    def potential_energy(self, q: np.ndarray) -> float:
        return self.gravity * float(q[1])


def test_sliding_on_a_curved_contact_with_drift_projections():
    # Plain Python (the same source as the compiled engine, no compile cost for a new problem).
    bowl = _Bowl(speed=2.0)
    t_end = 3.0
    run = simulate_compiled(bowl, t_end, RTOL, ATOL, "DOP853", compile=False)
    assert run.status is Status.OK and run.impacts.total == 0
    assert run.stats["contact_time"] == 0.0 and run.stats["contact_phases"] == 1
    assert run.stats["projections"] >= 1  # the curved contact drifts: projections happened
    # Every sample on the circle up to the drift tolerance (atol + rtol R) |grad g| (a step end
    # beyond it is projected before it is kept; measured max 0.19 of it), and on the pendulum.
    drift = (ATOL + RTOL * bowl.radius) * 2.0 * bowl.radius
    radius = np.linalg.norm(run.q, axis=1)
    assert np.abs(bowl.radius**2 - radius**2).max() <= drift
    pendulum = solve_ivp(
        lambda t, y: [y[1], -bowl.gravity / bowl.radius * math.sin(y[0])],
        (0.0, t_end),
        [0.0, 2.0 / bowl.radius],
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
        dense_output=True,
    )
    angle = pendulum.sol(run.t)[0]
    exact = bowl.radius * np.column_stack((np.sin(angle), -np.cos(angle)))
    np.testing.assert_allclose(run.q, exact, rtol=0, atol=1e-8)
    ref = ib.simulate(bowl, EventDriven(integrator="DOP853", rtol=RTOL, atol=ATOL), t_end)
    assert ref.status is Status.OK and ref.stats["contact_phases"] == 1
    np.testing.assert_allclose(run.q[-1], ref.q[-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.v[-1], ref.v[-1], rtol=0, atol=1e-9)


# The engine's helpers (impactbench.core._jit.specialize(..., helper=True)) on a toy loop: a
# counter set to 0 before its loop and a constant argument, as the event loop passes them.
_scale = _outer = None


def _scaled(value, factor, out):
    out[0] += 1.0
    return value + factor


def _count(limit, out):
    total = 0
    for _ in range(limit):
        total = _scale(total, 2, out)
    return total


def _call_outer(limit, out):
    return _outer(limit, out)


def _bound(template, **bindings):
    import numba

    from impactbench.core._jit import specialize

    return numba.njit(_nrt=False)(specialize(template, bindings, compile=False))


@pytest.mark.parametrize("inline", [True, False])
def test_engine_helpers_compile_once_for_literal_arguments(inline):
    import numba

    from impactbench.core._jit import specialize

    out = np.zeros(1)
    helper = specialize(_scaled, {}, True, inline=inline, helper=True)
    assert _bound(_count, _scale=helper)(3, out) == 6 and out[0] == 3.0
    # One specialisation (int64, int64, array): not one more per literal seen while typing.
    assert len(helper.signatures) == 1
    # A plain numba function is compiled for Literal[int](0) and Literal[int](2) as well.
    plain = numba.njit(_nrt=False)(_scaled)
    _bound(_count, _scale=plain)(3, out)
    assert len(plain.signatures) > 1


def test_called_helper_is_not_marked_inline_by_an_inlined_caller():
    import numba

    from impactbench.core._jit import specialize

    out = np.zeros(1)
    called = specialize(_scaled, {}, True, helper=True)
    outer = specialize(_count, {"_scale": called}, True, inline=True, helper=True)
    assert _bound(_call_outer, _outer=outer)(2, out) == 4 and out[0] == 2.0
    assert called.overloads[called.signatures[0]].fndesc.inline is False
    # numba compiles a callee with the flags of the caller that first compiles it unless set:
    # a plain numba function first called from an inlined helper is marked alwaysinline.
    plain = numba.njit(_nrt=False)(_scaled)
    outer = specialize(_count, {"_scale": plain}, True, inline=True, helper=True)
    _bound(_call_outer, _outer=outer)(2, out)
    assert plain.overloads[plain.signatures[0]].fndesc.inline is True


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "scipy"])
def test_a_state_beyond_its_bounds_stops_either_engine(compiled):
    """The ball (at most ~4.4 m/s) with a declared velocity scale 1e-7 (bound 0.1 m/s): both
    engines stop it with a DivergenceError once |v| > 0.1, i.e. at t > 0.1 / 9.81."""
    ball = BouncingBall()
    ball.state_scale = (10.0, 1e-7)
    with pytest.raises(DivergenceError, match=r"diverged: max \|v\|") as caught:
        ib.simulate(ball, EventDriven(compiled=compiled), 1.0)
    error = caught.value
    assert error.bound == pytest.approx(0.1)
    assert abs(error.v[0]) > 0.1 and error.t > 0.1 / 9.81 and error.trajectory.t[-1] < error.t
    assert error.trajectory.stats["engine"] == ("compiled" if compiled else "scipy")
