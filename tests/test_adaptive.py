"""The adaptive driver (impactbench.core.adaptive): Studer's step-size control on the scheme API."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.fitting import fit_order, perturbed_steps
from impactbench.core.adaptive import Adaptive
from impactbench.core.trajectory import SimulationError
from impactbench.methods import CatchingUp, MoreauJean
from impactbench.problems import BouncingBall, ColumnOfBeads, ImpactingOscillator, SlantedWall

BALL = BouncingBall(restitution=0.8)
OSCILLATOR = ImpactingOscillator(restitution=0.8, x0=1.0, v0=0.0)


@pytest.mark.parametrize(
    ("scheme", "problem"),
    [(MoreauJean, BALL), (CatchingUp, BALL), (MoreauJean, SlantedWall(restitution=0.7))],
    ids=["MoreauJean-ball", "CatchingUp-ball", "MoreauJean-wall"],
)
def test_plain_python_and_compiled_agree_bit_for_bit(scheme, problem):
    runs = [
        Adaptive(scheme(compiled=compiled), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4).solve(
            problem, 3.0
        )
        for compiled in (False, True)
    ]
    assert runs[0].stats["compiled"] is False and runs[1].stats["compiled"] is True
    for name in ("t", "q", "v"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name
    for name in ("steps", "rejected_steps", "force_evaluations", "impacts"):
        assert runs[0].stats[name] == runs[1].stats[name], name
    assert runs[1].stats["impacts"] > 0 and runs[1].t[-1] == 3.0
    assert runs[1].stats["memory_bytes"] > runs[1].stats["work_bytes"] > 0


def _errors(scheme, order, extrapolate, t_end, tolerances):
    # the error at t_end alone, under Richardson's estimate alone (no test of the continuous
    # extension, whose O(h^2) error would set the steps of a second-order scheme instead)
    errors, work = [], []
    exact = OSCILLATOR.exact_solution(np.array([t_end]))[0][-1]
    for rtol in tolerances:
        run = Adaptive(
            scheme, rtol=rtol, atol=1e-2 * rtol, order=order, extrapolate=extrapolate,
            extension_control=False, t_eval=[t_end],
        )  # fmt: skip
        trajectory = run.solve(OSCILLATOR, t_end)
        assert trajectory.t[-1] == t_end
        errors.append(np.max(np.abs(trajectory.q[-1] - exact)))
        work.append(trajectory.stats["force_evaluations"])
    return np.array(errors), np.array(work, dtype=float)


@pytest.mark.parametrize(
    ("scheme", "order", "extrapolate", "in_h", "tolerances"),
    [
        # the work grows as tol^(-1 / 3) for MoreauJean: 5 decades give 1.6 of evaluations
        (MoreauJean(), 2, False, 2.0, np.geomspace(1e-4, 1e-9, 12)),
        (CatchingUp(), 1, False, 1.0, np.geomspace(1e-3, 1e-6, 12)),
        # the midpoint scheme is symmetric (an expansion in h^2): extrapolated, order 4
        (MoreauJean(), 2, True, 4.0, np.geomspace(1e-4, 1e-9, 12)),
        (CatchingUp(), 1, True, 2.0, np.geomspace(1e-3, 1e-7, 12)),
    ],
    ids=["MoreauJean", "CatchingUp", "MoreauJean-extrapolated", "CatchingUp-extrapolated"],
)
def test_order_in_the_tolerance_before_the_first_impact(
    scheme, order, extrapolate, in_h, tolerances
):
    # A local error per step held at tol, tol ~ h^(p + 1) for a scheme of order p, and a global
    # error ~ h^r (r = p, or the extrapolation's order) give an error ~ tol^(r / (p + 1)) and
    # ~ (evaluations)^-r (t_end = 1.5 < pi / 2, the impact).
    errors, work = _errors(scheme, order, extrapolate, 1.5, tolerances)
    assert errors[-1] < errors[0] / 30
    in_tolerance = fit_order(tolerances, errors)
    in_work = fit_order(1.0 / work, errors)
    target = in_h / (order + 1.0)
    assert in_tolerance.status == "order" and in_work.status == "order"
    assert in_tolerance.low - 0.1 <= target <= in_tolerance.high + 0.1, in_tolerance
    assert in_work.low - 0.25 <= in_h <= in_work.high + 0.25, in_work


@pytest.mark.parametrize(
    ("scheme", "gap_tolerance"),
    [(MoreauJean(), None), (MoreauJean(), 1e-4), (CatchingUp(), 1e-4)],
    ids=["MoreauJean", "MoreauJean-gap", "CatchingUp-gap"],
)
def test_resting_ball_to_t_1000_keeps_its_step(scheme, gap_tolerance):
    h_max = 0.05
    method = Adaptive(scheme, rtol=1e-4, atol=1e-6, h_max=h_max, gap_tolerance=gap_tolerance)
    run = method.solve(BALL, 1000.0)
    late = run.t[1:] > 100.0  # past the accumulation point (t_inf ~ 4.06)
    steps = np.diff(run.t)[late]
    assert np.median(steps) >= 0.5 * h_max
    depth = -run.q[run.t > 100.0, 0]
    assert np.all(depth >= 0.0) and np.ptp(depth) <= 1e-12  # resting, no drift
    stats = run.stats
    # accepted steps (not output samples): a collapse of the step would multiply them; measured
    # 1.02 (MoreauJean) to 1.12 (CatchingUp) times 1000 / h_max, the accumulation included
    assert stats["steps"] <= 1.25 * 1000.0 / h_max
    assert stats["rejected_steps"] <= 0.05 * (stats["steps"] + stats["rejected_steps"])


def test_rejected_steps_are_counted_and_h_min_fails_with_the_state():
    run = Adaptive(MoreauJean(), rtol=1e-6, atol=1e-9).solve(BALL, 3.0)
    assert run.stats["rejected_steps"] > 0
    with pytest.raises(SimulationError, match="h_min") as caught:
        Adaptive(MoreauJean(), rtol=1e-8, atol=1e-12, h_min=1e-3, extension_control=False).solve(
            BALL, 3.0
        )
    error = caught.value
    assert 0.0 < error.t < 3.0 and error.q.shape == (1,) and error.v.shape == (1,)
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))
    # with the test of the continuous extension the free fall's chord misses the parabola by
    # g h_min^2 / 8 > atol + rtol |q| at every step: rejected at h_min from the start
    with pytest.raises(SimulationError, match="h_min") as caught:
        Adaptive(MoreauJean(), rtol=1e-8, atol=1e-12, h_min=1e-3).solve(BALL, 3.0)
    assert caught.value.t == BALL.t0 and np.array_equal(caught.value.q, BALL.q0)


def test_gap_control_bounds_the_penetration():
    # the ball's depth only grows on the step where it closes; at rest it keeps its depth
    loose = Adaptive(MoreauJean(), rtol=1e-2, atol=1e-2, gap_tolerance=np.inf).solve(BALL, 3.0)
    tight = Adaptive(MoreauJean(), rtol=1e-2, atol=1e-2, gap_tolerance=1e-4).solve(BALL, 3.0)
    assert -loose.q.min() > 1e-4
    assert -tight.q.min() <= 1e-4


def test_every_accepted_step_in_bounded_memory():
    run = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, max_samples=50).solve(BALL, 3.0)
    assert len(run.t) <= 50 and run.t[-1] == 3.0 and run.stats["steps"] > 50
    assert np.all(np.diff(run.t) > 0)


def test_a_long_run_keeps_its_memory_bounded():
    """To t = 1000 (20 000 accepted steps) in at most max_samples samples, and the memory a run
    allocates does not depend on its horizon."""
    method = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, h_max=0.05, max_samples=1000)
    short, long = method.solve(BALL, 10.0), method.solve(BALL, 1000.0)
    assert long.stats["steps"] >= 1000.0 / 0.05 and len(long.t) <= 1000
    assert long.t[-1] == 1000.0 and np.all(np.diff(long.t) > 0)
    assert long.stats["memory_bytes"] == short.stats["memory_bytes"]


def test_a_rejected_contact_step_is_shrunk_as_its_error_scales():
    """Through a contact change the positions' difference is O(h), so a rejected contact step is
    scaled by 0.9 / err; by err^(-1/2) it took several rejections per impact (measured, rtol
    1e-4: the ball to t = 3, 64 -> 39 rejected for 148 -> 147 accepted; ten beads with gap
    control, 808 -> 500 for 1452 -> 1497)."""
    ball = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6).solve(BALL, 3.0).stats
    assert ball["rejected_steps"] <= 0.25 * (ball["steps"] + ball["rejected_steps"])
    beads = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4).solve(
        ColumnOfBeads(), 3.0
    )
    stats = beads.stats
    assert stats["rejected_steps"] <= 0.3 * (stats["steps"] + stats["rejected_steps"])


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("rtol", -1.0),
        ("atol", 0.0),
        ("h_min", float("nan")),
        ("h_max", -2.0),
        ("gap_tolerance", 0.0),
        ("order", 0),
        ("extrapolate", 1),
        ("extension_control", 1),
        ("t_eval", [2.0, 1.0]),
        ("max_samples", 2),
    ],
)
def test_bad_input_names_the_argument(argument, value):
    with pytest.raises(ValueError, match=argument):
        Adaptive(MoreauJean(), **{argument: value})
    for scheme in ("EventDriven", "NoSuchScheme[theta=1]", Adaptive()):
        with pytest.raises(ValueError, match="scheme"):
            Adaptive(scheme)


@pytest.mark.parametrize(("extrapolate", "expected"), [(False, 0.5), (True, 1.0)])
def test_order_in_the_tolerance_through_an_impact(extrapolate, expected):
    # Richardson's estimate alone (extension_control=False), the error at t = 3 alone.
    # The velocities are excluded on the impact step, whose length the positions' difference,
    # O(h^2), sets to h ~ tol^(1/2); the velocity after the impact is O(h) wrong: the error at
    # t = 3 (after the impact at pi / 2) goes as tol^(1/2), below the smooth phases' 2/3.
    # Extrapolated, it goes as tol (measured; not derived here). Medians over phase families
    # (rtol (1 + delta_j), 5 copies), as the convergence study.
    tolerances = np.geomspace(1e-3, 1e-7, 12)
    family = perturbed_steps(tolerances, 5)
    exact = OSCILLATOR.exact_solution(np.array([3.0]))[0][-1]
    errors = np.empty(family.shape)
    for index, rtol in np.ndenumerate(family):
        method = Adaptive(
            MoreauJean(), rtol=rtol, atol=1e-2 * rtol, order=2, gap_tolerance=rtol,
            extrapolate=extrapolate, extension_control=False,
        )  # fmt: skip
        errors[index] = np.max(np.abs(method.solve(OSCILLATOR, 3.0).q[-1] - exact))
    fit = fit_order(tolerances, np.median(errors, axis=1))
    assert fit.status == "order" and fit.low <= expected <= fit.high, fit
    if not extrapolate:
        assert fit.high < 2.0 / 3.0, fit


def test_output_lands_on_the_requested_times():
    times = np.linspace(0.1, 2.5, 7)
    method = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4, t_eval=times)
    run = method.solve(BALL, 3.0)
    assert np.array_equal(run.t, np.concatenate([[0.0], times, [3.0]]))
    exact = BALL.exact_solution(times)[0]
    assert np.max(np.abs(run.q[1:-1] - exact)) < 1e-3  # through the ball's first impacts
    with pytest.raises(ValueError, match="t_eval"):
        Adaptive(MoreauJean(), t_eval=[1.0, 4.0]).solve(BALL, 3.0)


def test_the_name_tells_apart_what_changes_the_results():
    names = {
        Adaptive(MoreauJean(), **options).name
        for options in (
            {},
            {"rtol": 1e-4},
            {"gap_tolerance": 1e-4},
            {"extrapolate": True},
            {"order": 2},
            {"h_max": 0.1},
            {"t_eval": [1.0]},
        )
    }
    assert len(names) == 7
    assert Adaptive(CatchingUp()).name.startswith("Adaptive[scheme=CatchingUp")


def test_named_on_the_command_line_and_at_top_level():
    """A spec names the scheme (its own parameters included) and the controller's; the name of
    the method built reads back to the same method."""
    import impactbench
    from impactbench.bench.specs import load_method
    from impactbench.methods import METHODS

    assert impactbench.Adaptive is Adaptive is METHODS["Adaptive"]
    method = load_method(
        "Adaptive[scheme=MoreauJean[theta=1.0],rtol=1e-4,gap_tolerance=1e-4,extrapolate=True]"
    )
    assert isinstance(method.stepper, MoreauJean) and method.stepper.theta == 1.0
    assert (method.rtol, method.gap_tolerance, method.extrapolate) == (1e-4, 1e-4, True)
    again = load_method(method.name)
    assert again.name == method.name and repr(again) == repr(method)
    assert (
        Adaptive(MoreauJean(theta=1.0), rtol=1e-4, gap_tolerance=1e-4, extrapolate=True).name
        == method.name
    )
    with pytest.raises(ValueError, match="rtl"):
        load_method("Adaptive[scheme=CatchingUp,rtl=1e-4]")


@pytest.mark.parametrize("scheme", [MoreauJean(), CatchingUp()], ids=lambda s: s.name)
def test_sliding_particle_to_t_1000_stays_on_the_wall_and_keeps_its_step(scheme):
    """The particle on the slanted wall (non-diagonal M) slides from t_inf ~ 2.45 on: to
    t = 1000 the controller keeps its largest step, the depth stays below the O(alpha h^2) bound
    of the fixed-step schemes (tests/test_persistent_contact.py) and does not grow with t beyond
    what round-off puts on a gap at |q| ~ 1e6."""
    from impactbench.analysis.metrics import penetration_depths
    from impactbench.studies.persistent_contact import CASES

    case = CASES["sliding particle"]
    problem = case.factory()
    h_max = 0.01
    run = Adaptive(scheme, rtol=1e-4, atol=1e-6, h_max=h_max, gap_tolerance=1e-4).solve(
        problem, 1000.0
    )
    # the accepted steps, not the output samples (decimated once max_samples is reached)
    stats = run.stats
    assert stats["steps"] <= 1.25 * 1000.0 / h_max  # measured below 1.1 times 1000 / h_max
    assert stats["rejected_steps"] <= 0.05 * (stats["steps"] + stats["rejected_steps"])

    def depth(start, end=np.inf):
        window = (run.t >= start) & (run.t <= end)
        return float(np.max(penetration_depths(problem, run.q[window]), initial=0.0))

    early, late = depth(case.settled_after, 100.0), depth(500.0)
    gradient = np.abs(problem.gap_gradient(problem.q0)).max()
    roundoff = 1e-14 + 100 * np.finfo(float).eps * gradient * np.abs(run.q).max()
    assert max(early, late) <= 4.0 * case.alpha * h_max**2
    assert late <= early + roundoff


def test_validation_derives_the_bounds_a_default_adaptive_method_leaves_open():
    """``impactbench validate 'Adaptive[scheme=MoreauJean]'``: h_max the level's coarsest step
    (not (T - t0) / 10 of each run) and gap_tolerance = rtol, shown in the report's name;
    bounds given are kept."""
    from impactbench.bench.specs import load_method
    from impactbench.bench.testing import LEVELS, _with_derived_bounds, check_method

    report = check_method(load_method("Adaptive[scheme=MoreauJean]"), properties=("determinism",))
    coarsest = max(LEVELS["quick"].steps)
    assert f"h_max={coarsest}" in report.method and "gap_tolerance=0.001" in report.method
    assert report.passed
    given = load_method("Adaptive[scheme=MoreauJean,rtol=1e-4,h_max=0.05,gap_tolerance=1e-3]")
    kept = _with_derived_bounds(given, LEVELS["quick"], "rtol")
    assert (kept.h_max, kept.gap_tolerance) == (0.05, 1e-3)


@pytest.mark.parametrize(
    ("spec", "instance"),
    [
        ("MoreauJean", MoreauJean()),
        ("MoreauJean[theta=1.0]", MoreauJean(theta=1.0)),
        ("CatchingUp", CatchingUp()),
    ],
)
def test_a_spec_and_the_equivalent_instance_make_the_same_method(spec, instance):
    """Same name, parameters and compiled-code key, whichever way the scheme is given."""
    from impactbench.bench.specs import load_method
    from impactbench.core.compilation import compiled_code

    given = Adaptive(spec, rtol=1e-4, gap_tolerance=1e-4)
    built = Adaptive(instance, rtol=1e-4, gap_tolerance=1e-4)
    assert given.name == built.name == load_method(built.name).name
    assert given.parameters() == built.parameters()
    assert compiled_code(given, BALL) == compiled_code(built, BALL)


def test_an_unknown_scheme_lists_the_user_facing_schemes_only():
    with pytest.raises(ValueError, match="unknown scheme") as error:
        Adaptive("MoreauJeen")
    known = str(error.value).partition("known: ")[2].split(", ")
    assert {"MoreauJean", "CatchingUp", "PaoliSchatzman", "NonsmoothGeneralizedAlpha"} <= set(known)
    for internal in ("ProjectingScheme", "ImplicitVelocity", "FrictionalImplicitVelocity"):
        assert internal not in known


def test_friction_is_integrated_exactly_when_the_scheme_has_a_friction_law():
    """Adaptive declares the scheme's friction law and steps its frictional loop: a block
    launched down an incline flatter than the friction angle stops at the closed-form time and
    distance (to rtol-sized error) and then sticks, v = 0 exactly; a scheme without a friction
    law is refused by name, never run frictionless."""
    from impactbench.methods import D1MinusLinear
    from impactbench.problems import SlidingBlock

    assert Adaptive(MoreauJean()).friction_law and Adaptive(CatchingUp()).friction_law
    assert not Adaptive(D1MinusLinear()).friction_law
    block = SlidingBlock(angle=0.2, mu=0.5, u0=2.0)
    with pytest.raises(ValueError, match="D1MinusLinear"):
        simulate(block, Adaptive(D1MinusLinear()), 1.0)
    run = simulate(block, Adaptive(MoreauJean(), rtol=1e-5, h_max=1e-2), 1.5)
    q, v = block.exact_solution(run.t)
    assert run.status.value == "ok"
    assert np.abs(run.q - q).max() <= 1e-5 * np.abs(q).max()
    stopped = run.t > block.stopping_time + 1e-2
    assert np.all(run.v[stopped] == 0.0) and np.all(run.q[stopped, 0] == run.q[-1, 0])
    plain = simulate(block, Adaptive(MoreauJean(compiled=False), rtol=1e-5, h_max=1e-2), 1.5)
    np.testing.assert_array_equal(plain.q, run.q)


def test_a_block_held_by_friction_keeps_its_step_and_does_not_creep_to_t_1000():
    """At rest on an incline flatter than the friction angle: no displacement at all and the
    step stays at h_max (no collapse on a sticking contact) for 10^4 steps."""
    from impactbench.problems import SlidingBlock

    block = SlidingBlock(angle=0.2, mu=0.5, u0=0.0)
    run = simulate(block, Adaptive(MoreauJean(), rtol=1e-4, h_max=0.1), 1000.0)
    assert run.status.value == "ok" and run.t[-1] == pytest.approx(1000.0)
    assert np.all(run.q == block.q0) and np.all(run.v == 0.0)
    assert run.stats["steps"] <= 1000.0 / 0.1 + 10 and run.stats["rejected_steps"] == 0


def test_a_persistent_contact_is_no_contact_change_and_its_velocity_is_controlled():
    """The block launched down an incline slides, stops and sticks on the same contact: only
    the first step (the contact's impulse starts) is a contact change, neither the sliding
    steps nor the slip-stick transition are, so the velocity stays in the error test. On the
    impacting oscillator every impact closes a contact: at least one change per impact."""
    from impactbench.problems import SlidingBlock

    block = SlidingBlock(angle=0.2, mu=0.5, u0=2.0)
    run = simulate(block, Adaptive(MoreauJean(), rtol=1e-5, h_max=1e-2), 1.5)
    assert run.status.value == "ok" and run.t[-1] == pytest.approx(1.5)
    assert run.stats["contact_steps"] == 1
    bouncing = simulate(OSCILLATOR, Adaptive(MoreauJean(), rtol=1e-4, gap_tolerance=1e-4), 10.0)
    # every accepted step is a sample here: the steps that log an impact
    impact_steps = np.unique(np.searchsorted(bouncing.t, bouncing.impacts.t)).size
    assert impact_steps >= 3  # the oscillator's impacts at t = pi/2, 3 pi/2, 5 pi/2
    assert bouncing.stats["contact_steps"] >= impact_steps


def test_extrapolation_never_crosses_an_impulse():
    """The particle on the slanted wall (e = 0.7) slides on from its accumulation point: its
    contact takes an impulse on every step there. Extrapolated across those impulses the
    normal velocity would leave the contact at every step, and the controller would chase the
    chatter; extrapolated only where no constraint takes an impulse, it runs about as many
    steps as without extrapolation."""
    from impactbench.problems import SlantedWall

    wall = SlantedWall(restitution=0.7)
    t_end = wall.accumulation_time + 1.0
    runs = {
        extrapolate: simulate(
            wall,
            Adaptive(
                MoreauJean(), rtol=1e-5, atol=1e-7, gap_tolerance=1e-5, extrapolate=extrapolate
            ),
            t_end,
        )
        for extrapolate in (False, True)
    }
    plain, extrapolated = runs[False].stats, runs[True].stats
    assert extrapolated["steps"] <= 1.5 * plain["steps"]
    assert extrapolated["rejected_steps"] <= 1.5 * plain["rejected_steps"]


@pytest.mark.parametrize("rtol", [1e-3, 1e-5])
def test_an_extrapolated_step_never_leaves_k_past_the_gap_control(rtol):
    """CatchingUp extrapolated on the slanted wall through its accumulation point: a free-flight
    step whose extrapolated positions would leave K (the half steps' did not) continues from the
    half steps instead (a state accepted outside K stopped the run at h_min: t = 1.47 at rtol
    1e-3). Every accepted state, extrapolated or not, keeps the gap control: the penetration
    max(0, -g) grows by at most ``gap_tolerance`` over each accepted step."""
    from impactbench.problems import SlantedWall

    wall = SlantedWall(restitution=0.7)
    method = Adaptive(
        CatchingUp(), rtol=rtol, atol=1e-2 * rtol, gap_tolerance=rtol, extrapolate=True
    )
    run = simulate(wall, method, wall.accumulation_time + 1.0)
    assert run.status.value == "ok"
    gaps = np.array([wall.gap(q) for q in run.q]).ravel()
    assert len(run.t) == run.stats["steps"] + 1  # every accepted state is a sample
    growth = np.diff(np.maximum(0.0, -gaps))
    assert growth.max() > 0.1 * method.gap_tolerance  # the control is exercised
    assert growth.max() <= method.gap_tolerance


def test_a_two_step_scheme_is_refused_by_name():
    """Paoli-Schatzman's recurrence q^{k+1} = 2 q^k - q^{k-1} + h^2 M^-1 F holds the last step
    size: the controller's steps of h and h/2 from one state cannot restart it. Refused at
    construction, by instance and by spec, naming the scheme (it stopped at h_min at t = 0)."""
    from impactbench.methods import PaoliSchatzman

    for scheme in (PaoliSchatzman(), "PaoliSchatzman"):
        with pytest.raises(ValueError, match="PaoliSchatzman.*two-step"):
            Adaptive(scheme)
