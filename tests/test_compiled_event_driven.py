"""The compiled event-driven engine (phase 1) against closed forms and the scipy path."""

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench.core._jit import kernel
from impactbench.core.problem import CompiledProblem, ProblemKernels
from impactbench.core.trajectory import Status
from impactbench.methods.compiled_event_driven import simulate_compiled
from impactbench.methods.event_driven import EventDriven
from impactbench.problems import BouncingBall, DoublePendulum, SlantedWall

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


def test_accumulation_is_reported_not_looped():
    ball = BouncingBall(restitution=0.8)
    run = simulate_compiled(ball, ball.accumulation_time + 1.0, RTOL, ATOL, "DOP853")
    assert run.status is Status.FAILED
    assert "accumulation of impacts" in run.message
    assert "not implemented" in run.message
    assert run.stats["t_stop"] <= ball.accumulation_time
    assert run.impacts.total < 200


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


def test_contact_at_rest_is_reported():
    ball = BouncingBall(q0=0.0)  # at rest on the floor: persistent contact from t0
    run = simulate_compiled(ball, 1.0, RTOL, ATOL, "DOP853")
    assert run.status is Status.FAILED
    assert "contact at rest on constraint 0 at t=0.0" in run.message
    assert run.impacts.total == 0
    assert run.stats["steps"] == 0
