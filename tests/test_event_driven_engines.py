"""The two engines of EventDriven agree: the compiled event loop and the scipy path.

``EventDriven(compiled=True)`` runs impactbench/core/events compiled (numba, scipy-identical
RK pairs) and ``compiled=False`` the scipy ``OdeSolver`` path of methods/event_driven.py. They are
one algorithm: on every registered problem (with and without an exact solution) they must find
the same impacts on the same constraints at the same times and end in the same state to a few
rtol. Failures must read the same: bad parameters are rejected by the shared constructor, and a
non-finite force stops either engine with a SimulationError carrying t, q and v.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench.core._jit import kernel
from impactbench.core.problem import CompiledProblem, ProblemKernels
from impactbench.core.trajectory import Trajectory
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import PROBLEMS, BouncingBall

RTOL = 1e-10

#: Horizon after t0 of each problem's agreement run: through several impacts (and, for the ball
#: and the slanted wall, through the accumulation into persistent contact). The column of beads
#: only to t = 1: its settling is a cascade of accumulations whose impact count depends on
#: round-off (10 beads, e = 0.9, to t = 3: 4469 impacts on one engine, 93350 on the other, both
#: ending in the resting stack).
HORIZONS = {
    "BouncingBall": 10.0,
    "DragBall": 4.0,  # through its accumulation point (t_inf = 2.70) into rest
    "ImpactingOscillator": 10.0,
    "ForcedImpactOscillator": 10.0,
    "SlantedWall": 4.0,
    "TightJoint": 10.0,
    "TightJoint2D": 10.0,
    "DoublePendulum": 10.0,
    "ColumnOfBeads": 1.0,
    "NewtonsCradle": 3.0,
    "SlidingBlock": 3.0,  # slides, stops at a located event and sticks
    "FrictionOscillator": 10.0,  # stick-slip arcs
    "ImpactingStick": 0.2,  # a frictional impact, then sliding
}


def test_every_problem_with_kernels_has_an_agreement_horizon_or_a_reason():
    """A problem registered later is either compared here or listed with a reason."""
    not_compared = {
        "ImpactingBar": "its contact node comes to rest at once (persistent contact)",
        "RockingBlock": "frictional, two corners whose tangent rows are dependent at rest",
        "Woodpecker": "frictional, its jams end in a Zeno cut: agreement not yet examined",
        "PainleveRod": "frictional, through a singular point of its sliding phase",
        **dict.fromkeys(
            ("BallOnVibratingTable", "ImpactOscillatorMovingStop", "CamFollower"),
            "a moving obstacle: the event-driven method refuses it until it declares "
            "moving_obstacles",
        ),
    }
    assert set(HORIZONS) | set(not_compared) == set(PROBLEMS)


@pytest.mark.parametrize("name", sorted(HORIZONS))
def test_compiled_and_scipy_engines_agree(name):
    problem = PROBLEMS[name]()
    t_end = problem.t0 + HORIZONS[name]
    scipy_run = ib.simulate(problem, EventDriven(compiled=False), t_end)
    compiled_run = ib.simulate(problem, EventDriven(compiled=True), t_end)
    assert scipy_run.stats["engine"] == "scipy"
    assert compiled_run.stats["engine"] == "compiled"
    assert compiled_run.status is scipy_run.status
    a, b = scipy_run.impacts, compiled_run.impacts
    assert a.total == b.total
    np.testing.assert_array_equal(a.constraint, b.constraint)
    np.testing.assert_allclose(b.t, a.t, rtol=0, atol=10 * RTOL * max(1.0, t_end))
    scale = max(1.0, float(np.abs(scipy_run.q[-1]).max()), float(np.abs(scipy_run.v[-1]).max()))
    np.testing.assert_allclose(compiled_run.q[-1], scipy_run.q[-1], rtol=0, atol=10 * RTOL * scale)
    np.testing.assert_allclose(compiled_run.v[-1], scipy_run.v[-1], rtol=0, atol=10 * RTOL * scale)
    assert compiled_run.t[-1] == scipy_run.t[-1] == t_end


def test_name_and_engine_choice():
    assert EventDriven().compiled  # the compiled loop by default, where it applies
    assert EventDriven().name.endswith(",compiled=True]")
    assert EventDriven(compiled=False).name.endswith(",compiled=False]")
    ball = BouncingBall()
    assert EventDriven(compiled=True).uses_compiled_engine(ball)
    assert not EventDriven(compiled=False).uses_compiled_engine(ball)
    assert not EventDriven(compiled=True, integrator="Radau").uses_compiled_engine(ball)
    assert EventDriven(compiled=True, dense_output=True).uses_compiled_engine(ball)
    run = ib.simulate(ball, EventDriven(compiled=True, integrator="Radau"), 1.0)
    assert run.stats["engine"] == "scipy"


@pytest.mark.parametrize("value", [1, "yes", None])
def test_compiled_flag_must_be_a_bool(value):
    with pytest.raises(ValueError, match="compiled"):
        EventDriven(compiled=value)


# A ball dropped from q = 1 onto the floor q >= 0 whose kernels fail on purpose, one engine for
# every fault (p = [fault, level]): NAN_FORCE, the force turns NaN below q = level; MASS_NOT_SPD,
# the mass matrix turns negative below q = level; GAP_JUMP, the gap is q + level above the floor
# and q - level below it (|g| >= level everywhere: no metric projection onto g = 0 converges,
# and the impacts that end below the floor need one); NAN_GAP and NAN_GRADIENT, the gap or its
# gradient turns NaN below q = level.
NAN_FORCE, MASS_NOT_SPD, GAP_JUMP, NAN_GAP, NAN_GRADIENT = 0.0, 1.0, 2.0, 3.0, 4.0


@kernel
def _faulty_mass_matrix(q, p, out):
    out[0, 0] = -1.0 if p[0] == 1.0 and q[0] < p[1] else 1.0


@kernel
def _faulty_forces(t, q, v, p, out):
    out[0] = math.nan if p[0] == 0.0 and q[0] < p[1] else -9.81


@kernel
def _faulty_gap(q, p, out):
    out[0] = q[0]
    if p[0] == 2.0:
        out[0] += p[1] if q[0] > 0.0 else -p[1]
    elif p[0] == 3.0 and q[0] < p[1]:
        out[0] = math.nan


@kernel
def _faulty_gap_gradient(q, p, out):
    out[0, 0] = math.nan if p[0] == 4.0 and q[0] < p[1] else 1.0


class _FaultyBall(CompiledProblem):
    KERNELS = ProblemKernels(
        _faulty_mass_matrix, _faulty_forces, _faulty_gap, _faulty_gap_gradient, affine_gap=True
    )

    def __init__(self, fault: float, level: float) -> None:
        self.name = "FaultyBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.restitution = 0.8
        self.t0 = 0.0
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])
        self.fault = fault
        self.level = level
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([self.fault, self.level])

    def potential_energy(self, q: np.ndarray) -> float:
        return 9.81 * float(q[0])


def _assert_finished_part_intact(err: ib.SimulationError) -> Trajectory:
    """The samples before the failure: kept, finite, in time order, none after it."""
    run = err.trajectory
    assert run is not None and run.status is ib.Status.FAILED
    assert len(run.t) >= 2 and run.t[0] == 0.0 and run.t[-1] <= err.t
    assert np.all(np.diff(run.t) >= 0.0)
    assert np.isfinite(run.q).all() and np.isfinite(run.v).all()
    assert np.isfinite(err.q).all() and np.isfinite(err.v).all()
    assert f"at t={err.t!r}, q={err.q.tolist()}, v={err.v.tolist()}" in str(err)
    return run


@pytest.mark.parametrize("compiled", [True, False])
def test_non_finite_force_reports_t_q_v(compiled):
    problem = _FaultyBall(NAN_FORCE, 0.5)
    with pytest.raises(ib.SimulationError, match="finite") as failure:
        ib.simulate(problem, EventDriven(compiled=compiled), 1.0)
    err = failure.value
    assert np.isfinite(err.q).all() and np.isfinite(err.v).all()
    crossing = math.sqrt(2 * 0.5 / 9.81)  # q = 1/2 on the free fall
    # Stopped on the first attempted step with a stage below q = 1/2 (either engine treats a
    # non-finite force at any stage as a failure; the state reported is the accepted one, or the
    # stage where the scipy path evaluated the force), keeping the output before it.
    assert 0.0 < err.q[0] < 1.0 and 0.0 < err.t < crossing + 0.1
    assert err.trajectory is not None
    assert err.trajectory.t[-1] <= crossing
    _assert_finished_part_intact(err)


@pytest.mark.parametrize("compiled", [True, False])
def test_mass_matrix_not_positive_definite_stops_the_run(compiled):
    """Inside the compiled loop the right-hand side flags the failed factorisation of M (the
    step's stages turn NaN); either engine stops on the first step with a stage below q = 1/2."""
    problem = _FaultyBall(MASS_NOT_SPD, 0.5)
    with pytest.raises(ib.SimulationError, match="positive definite") as failure:
        ib.simulate(problem, EventDriven(compiled=compiled), 1.0)
    err = failure.value
    crossing = math.sqrt(2 * 0.5 / 9.81)
    assert 0.0 < err.q[0] < 1.0 and 0.0 < err.t < crossing + 0.1
    run = _assert_finished_part_intact(err)
    assert run.t[-1] <= crossing and run.impacts.total == 0
    if compiled:  # the state of the last accepted step, where the failed attempt started
        assert err.t == run.t[-1] and err.q[0] == run.q[-1, 0] and err.v[0] == run.v[-1, 0]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("fault", [NAN_GAP, NAN_GRADIENT], ids=["gap", "gradient"])
def test_non_finite_gap_or_gradient_stops_the_run(fault, compiled):
    """A NaN gap or gap gradient below q = 1/2 stops either engine before the floor, with no
    impact (the compiled loop checks the gaps and rates of every step's dense-output probes and
    at every restart; it used to fly on through the floor and report OK)."""
    problem = _FaultyBall(fault, 0.5)
    with pytest.raises(ib.SimulationError, match="finite") as failure:
        ib.simulate(problem, EventDriven(compiled=compiled), 1.0)
    err = failure.value
    floor = math.sqrt(2.0 / 9.81)  # the free fall reaches q = 0
    assert 0.0 < err.t < floor + 0.1 and err.q[0] < 1.0
    run = _assert_finished_part_intact(err)
    assert run.impacts.total == 0
    if compiled:  # the last accepted step, whose probes met the NaN
        assert "non-finite gap or gap gradient" in str(err)
        assert err.t == run.t[-1] <= math.sqrt(2 * 0.5 / 9.81)


def test_projection_that_does_not_converge_stops_both_engines_alike():
    """An impact located on the far side of the gap's jump (g = q - level < 0) makes the restart
    project q onto g = 0, which no Gauss-Newton iterate reaches (|g| >= level): both engines stop
    there with the scipy path's message, naming the constraint and its gap, keeping the output
    up to that impact.

    Which side of the jump an impact is located on is decided by the root finder's last bracket,
    that is by round-off: on one machine both engines located the first bounce on the near side
    and stopped at the second; on another (AMD EPYC, same package versions) the scipy path
    stopped at the first bounce and the compiled engine at the second. So each engine must stop
    at a bounce of the exact trajectory (time and post-impact velocity), on the far side, every
    impact it logged before being an earlier bounce; where both stop at the same bounce they
    stop in the same state, and otherwise the later one passed the earlier one's stop at its
    time. Both log the impact they stopped at (its law was applied: the error reports the
    velocity after it), after the earlier bounces."""
    problem = _FaultyBall(GAP_JUMP, 1e-3)
    gravity, e = 9.81, problem.restitution
    speed = math.sqrt(2.0 * gravity)  # the first impact's speed, from q = 1
    # bounce k >= 1 of the exact trajectory: its time and post-impact velocity
    bounces = [(math.sqrt(2.0 / gravity), e * speed)]
    for k in range(1, 6):
        t_previous, v_previous = bounces[-1]
        bounces.append((t_previous + 2.0 * v_previous / gravity, e ** (k + 1) * speed))
    errors, stopped_at = [], []
    for compiled in (True, False):
        with pytest.raises(ib.SimulationError, match="did not converge") as failure:
            ib.simulate(problem, EventDriven(compiled=compiled), 10.0)
        err = failure.value
        errors.append(err)
        assert "projection onto the contact manifold of constraints [0] did not converge" in str(
            err
        )
        run = _assert_finished_part_intact(err)
        k = min(range(len(bounces)), key=lambda i: abs(bounces[i][0] - err.t))
        stopped_at.append(k)
        assert err.t == pytest.approx(bounces[k][0], abs=1e-6)
        assert err.v[0] == pytest.approx(bounces[k][1], abs=1e-6)
        assert err.q[0] < 0.0  # the far side of the jump, where g = q - level
        assert run.impacts.total == k + 1 and run.impacts.t[-1] == err.t
        np.testing.assert_allclose(run.impacts.t, [t for t, _ in bounces[: k + 1]], atol=1e-6)
        assert run.impacts.normal_velocity_after[-1] == pytest.approx(err.v[0], abs=1e-12)
    compiled_err, scipy_err = errors
    # the same message (constraint and gap, g = -2 level) whichever bounce each stopped at, after
    # the method's name
    assert compiled_err.reason.split(": ", 1)[1] == scipy_err.reason.split(": ", 1)[1]
    if stopped_at[0] == stopped_at[1]:
        assert compiled_err.t == pytest.approx(scipy_err.t, abs=10 * RTOL)
        np.testing.assert_allclose(compiled_err.q, scipy_err.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(compiled_err.v, scipy_err.v, rtol=0, atol=1e-8)
    else:  # the one that went on logged the other's stop as an impact, at its time
        later = errors[int(np.argmax(stopped_at))]
        first_stop = errors[int(np.argmin(stopped_at))].t
        assert np.min(np.abs(later.trajectory.impacts.t - first_stop)) <= 10 * RTOL


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("name", ["BouncingBall", "SlantedWall", "TightJoint2D"])
def test_persistent_contact_stays_on_the_constraint_to_t_1000(name, compiled):
    """Through the accumulation into resting (ball), sliding on a flat wall (slanted wall) and
    sliding on a curved one with impacts (pin in a hole), every output sample to t = 1000 is
    admissible to 1e-3 of the contact tolerance (measured worst: 2.4e-13 on the pin), or to the
    round-off of the gap itself where the position has grown so far that this is larger (the
    particle sliding down the slanted wall for 1000 s: g(q) of |q| ~ 1e6 is exact to about
    eps |q| |grad g|, and the projection stops there, as it must to converge)."""
    problem = PROBLEMS[name]()
    run = ib.simulate(problem, EventDriven(compiled=compiled), problem.t0 + 1000.0, output_every=50)
    assert run.status is ib.Status.ZENO_HANDLED
    depth = -min(float(np.min(problem.gap(q))) for q in run.q)
    gradient = max(float(np.abs(problem.gap_gradient(q)).sum(axis=1).max()) for q in run.q)
    round_off = 16 * np.finfo(float).eps * float(np.abs(run.q).max()) * gradient
    assert depth <= max(1e-3 * run.stats["contact_tolerance"], round_off), depth


@pytest.mark.parametrize("compiled", [True, False])
def test_max_step_bounds_every_step_and_keeps_the_closed_form(compiled):
    """With ``max_step`` no accepted step is longer (samples of output_every=1 are the accepted
    steps and the events), and the ball still meets its closed form: impact times to 1e-8 and
    the velocity reversal u+ = -e u- at each of them. Without it the same run takes steps 10x
    longer, so the bound is what limits them."""
    ball = BouncingBall(restitution=0.8)
    t_end = 3.0
    free = ib.simulate(ball, EventDriven(compiled=compiled), t_end)
    bounded = ib.simulate(ball, EventDriven(compiled=compiled, max_step=0.01), t_end)
    assert bounded.status is free.status is ib.Status.OK
    assert np.diff(free.t).max() > 10 * 0.01
    assert np.diff(bounded.t).max() <= 0.01 * (1 + 1e-12)
    assert bounded.stats["steps"] >= t_end / 0.01
    exact = ball.impact_times(t_end)
    log = bounded.impacts
    assert log.total == exact.size >= 5
    np.testing.assert_allclose(log.t, exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        log.normal_velocity_after, -0.8 * log.normal_velocity_before, rtol=1e-12, atol=0
    )


def test_compiled_run_is_measured_through_its_own_dense_output():
    """The error grid sees a compiled run through the interpolants it kept itself
    (``keeping_dense_output``): the same samples as without them, reproduced by them."""
    from impactbench.analysis.metrics import keeping_dense_output, max_position_error

    ball, rtol = BouncingBall(), 1e-6
    method = EventDriven(compiled=True, rtol=rtol, atol=1e-8)
    run = ib.simulate(ball, method, 2.0)
    assert run.stats["engine"] == "compiled" and run.dense is None
    measured = ib.simulate(ball, keeping_dense_output(method), 2.0)
    assert measured.stats["engine"] == "compiled" and measured.dense.t_end == 2.0
    for name in ("t", "q", "v"):
        np.testing.assert_array_equal(getattr(measured, name), getattr(run, name))
    assert measured.stats["steps"] == run.stats["steps"]
    q, _ = measured.dense(run.t)
    np.testing.assert_allclose(q, run.q, rtol=0, atol=10 * rtol)
    # between the steps the interpolant of a parabola is exact: the error stays at the steps'
    assert max_position_error(ball, measured) < 10 * rtol
    stepper = MoreauJean()
    assert keeping_dense_output(stepper) is stepper
