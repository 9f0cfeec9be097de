"""The conformance suite (impactbench.bench.testing.check_method): it passes every built-in method
and fails deliberately wrong methods on the property they break, and only there.

The wrong methods are written here as a third party would: a plain-Python Moreau-Jean midpoint
scheme (theta = 1/2, position activation, impulse by LCP enumeration, in closed form
P = max(0, -b/W) for one active constraint) whose impulse direction is M^-1 G^T (kinetic metric,
correct) or G^T (Euclidean normal, wrong), and whose restitution can be
biased (the scheme then converges to the wrong solution: its error does not decrease with h).
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from impactbench import ImpactLog, Method, Status, Trajectory
from impactbench.bench.testing import LEVELS, PROPERTIES, check_method
from impactbench.core.timestepping import step_count
from impactbench.methods import METHODS, Adaptive, MoreauJean

from reference_moreau_jean import solve_lcp_by_enumeration


class PlainMoreauJean(Method):
    """Moreau-Jean midpoint scheme in plain Python, for any problem.

    q_p = q_k + h/2 v_k; A = {i : g_i(q_p) <= 0}; v_{k+1} = v_k + h M^-1 F + D P with D = M^-1 G_A^T
    (``normal="kinetic"``) or D = G_A^T (``normal="euclidean"``) and 0 <= P _|_ G_A v_{k+1} +
    e' G_A v_k >= 0, e' = ``restitution_factor`` e; q_{k+1} = q_k + h/2 (v_k + v_{k+1}).
    """

    family = "time-stepping"
    requires_step = True

    def __init__(self, normal: str = "kinetic", restitution_factor: float = 1.0) -> None:
        if normal not in ("kinetic", "euclidean"):
            raise ValueError(f"normal must be 'kinetic' or 'euclidean', got {normal!r}")
        self.normal = normal
        self.restitution_factor = float(restitution_factor)

    def _solve_impl(self, problem, t_end, h, output_every):
        steps, h = step_count(problem.t0, t_end, h)
        e = problem.restitution * self.restitution_factor
        q, v = problem.q0.astype(float), problem.v0.astype(float)
        ts, qs, vs, hits, owners, before, after = [problem.t0], [q], [v], [], [], [], []
        for k in range(steps):
            t = problem.t0 + k * h
            qp = q + 0.5 * h * v
            mass = problem.mass_matrix(qp)
            v_new = v + h * np.linalg.solve(mass, problem.forces(t + 0.5 * h, qp, v))
            active = np.flatnonzero(problem.gap(qp) <= 0.0)
            if active.size:
                G = problem.gap_gradient(qp)[active]
                D = np.linalg.solve(mass, G.T) if self.normal == "kinetic" else G.T
                W, b = G @ D, G @ v_new + e * (G @ v)
                # one active constraint: P = max(0, -b / W), the enumeration's answer
                P = (
                    np.maximum(-b / W[0], 0.0)
                    if active.size == 1
                    else solve_lcp_by_enumeration(W, b)
                )
                v_new = v_new + D @ P
                pushed = P > 0
                hits += [t + h] * int(np.count_nonzero(pushed))
                owners += list(active[pushed])
                before += list((G @ v)[pushed])
                after += list((G @ v_new)[pushed])
            q, v = q + 0.5 * h * (v + v_new), v_new
            if (k + 1) % output_every == 0 or k + 1 == steps:
                ts.append(problem.t0 + (k + 1) * h)
                qs.append(q)
                vs.append(v)
        t_hits = np.array(hits)
        log = ImpactLog(t_hits, np.array(owners, dtype=np.int64), np.array(before, dtype=float),
                        np.array(after, dtype=float), t_hits.size)  # fmt: skip
        stats = {"steps": steps, "impacts": t_hits.size}
        return Trajectory(np.array(ts), np.array(qs), np.array(vs), log, Status.OK, "",
                          stats, self.name, problem.name, h)  # fmt: skip


def failing(report):
    return {(check.property, check.problem.split(" ")[0]) for check in report.failures}


#: Built-in time-stepping methods: the whole battery at level quick takes ~2 s each.
#: NonsmoothGeneralizedAlpha has its own test below: the suite finds one property it misses.
TIME_STEPPING = sorted(
    name
    for name, method in METHODS.items()
    if method.requires_step and name != "NonsmoothGeneralizedAlpha"
)


@pytest.mark.parametrize("name", TIME_STEPPING)
def test_every_built_in_time_stepping_method_passes_quick(name):
    report = check_method(METHODS[name](), level="quick")
    report.assert_passed()
    assert len(report.checks) >= 12


def test_generalized_alpha_misses_only_the_velocity_order_on_the_slanted_wall():
    """A finding of the suite, kept visible: the nonsmooth generalized-alpha scheme passes every
    check but the order of the Hausdorff distance between velocity graphs on the slanted wall
    through its accumulation point, measured 0.78 [0.69, 0.87] against the threshold 0.8
    (MoreauJean: 0.92 [0.80, 1.04]); its position orders pass."""
    report = check_method(METHODS["NonsmoothGeneralizedAlpha"](), level="quick")
    assert failing(report) == {("order of hausdorff_velocity_distance", "SlantedWall")}
    (failure,) = report.failures
    assert failure.measured.startswith("0.7")


def test_event_driven_passes_quick_without_the_resting_stack():
    """EventDriven on the resting column of beads (4 contacts at rest) is a known limitation:
    measured 110 s for 3 s of simulated time (65 000 located impacts: the accumulation of the
    coupled contacts is not cut), so the several-contacts check is left out here; every other
    property is checked."""
    properties = tuple(p for p in PROPERTIES if p != "several_contacts")
    report = check_method(METHODS["EventDriven"](), level="quick", properties=properties)
    report.assert_passed()
    assert len(report.checks) >= 11


def test_report_lists_each_property_with_threshold_and_verdict():
    report = check_method(MoreauJean(), level="quick")
    frame = report.to_frame()
    assert list(frame.columns) == ["property", "problem", "measured", "threshold", "verdict",
                                   "detail"]  # fmt: skip
    assert set(frame["verdict"]) == {"pass"}
    properties = set(frame["property"])
    for expected in ("order of max_position_error", "kinetic metric (jumps along M^-1 n)",
                     "resting contact (no drift)", "several simultaneous contacts",
                     "energy not increased by an impact", "bad inputs rejected",
                     "deterministic"):  # fmt: skip
        assert expected in properties
    data = json.loads(report.to_json())
    assert data["passed"] is True and len(data["checks"]) == len(frame)
    assert "MoreauJean" in str(report)


@pytest.mark.slow  # a plain-Python scheme over the whole battery: 60-80 s (2-core EPYC)
def test_plain_python_moreau_jean_passes():
    """A third party's plain-Python scheme, correct: passes every check."""
    check_method(PlainMoreauJean(), level="quick").assert_passed()


@pytest.mark.slow  # a plain-Python scheme over the whole battery: 60-80 s (2-core EPYC)
def test_euclidean_normal_fails_the_slanted_wall_only():
    report = check_method(PlainMoreauJean(normal="euclidean"), level="quick")
    assert not report.passed
    failed = failing(report)
    assert ("kinetic metric (jumps along M^-1 n)", "SlantedWall") in failed
    assert ("order through impacts", "SlantedWall") in failed
    # the 1-DOF problems cannot tell the two normals apart
    assert {problem for _, problem in failed} == {"SlantedWall"}
    # the impulse along G^T is not the kinetic one: with the non-diagonal M it creates energy,
    # and the conservative wall's energy gate refuses those runs
    for check in report.failures:
        assert "energy of a conservative problem grew" in check.detail
    with pytest.raises(AssertionError, match="kinetic metric"):
        report.assert_passed()


def test_approaching_activation_fails_the_resting_contact():
    report = check_method(MoreauJean(activation="approaching"), level="quick")
    failed = failing(report)
    assert ("resting contact (no drift)", "BouncingBall") in failed
    assert {prop for prop, _ in failed} <= {"resting contact (no drift)",
                                            "several simultaneous contacts"}  # fmt: skip


@pytest.mark.slow  # a plain-Python scheme over the whole battery: 60-80 s (2-core EPYC)
def test_biased_restitution_fails_its_orders():
    """e' = 0.9 e: the scheme converges to another solution, its error levels off (flat), and
    the restitution check names the cause: the ratio at the impacts is not e."""
    report = check_method(PlainMoreauJean(restitution_factor=0.9), level="quick")
    failed = failing(report)
    for problem in ("BouncingBall", "SlantedWall", "ImpactingOscillator"):
        assert ("order of max_position_error", problem) in failed
    assert ("restitution at isolated impacts", "BouncingBall") in failed
    assert all(
        prop.startswith("order of") or prop == "restitution at isolated impacts"
        for prop, _ in failed
    )
    assert "flat" in " ".join(c.measured for c in report.failures)


def test_levels_fit_enough_steps():
    for name, level in LEVELS.items():
        steps = np.array(level.steps)
        assert len(steps) >= (10 if name == "full" else 7)
        assert np.log10(steps.max() / steps.min()) >= (1.5 if name == "full" else 1.2)


def test_bad_arguments_of_check_method():
    with pytest.raises(ValueError, match="level"):
        check_method(MoreauJean(), level="medium")
    with pytest.raises(ValueError, match="method"):
        check_method("MoreauJean")
    with pytest.raises(ValueError, match="tolerance"):
        check_method(METHODS["EventDriven"](), tolerance="tol")
    with pytest.raises(ValueError, match="properties"):
        check_method(MoreauJean(), properties=("speed",))


class CollapsingAdaptive(Adaptive):
    """Step-size control whose step collapses to h_max / 50 over the second half of the run
    (as a controller refining at every change of the active set would on a resting contact):
    the second half is run from the first half's end state with that largest step."""

    def _solve_impl(self, problem, t_end, h, output_every):
        middle = 0.5 * (float(problem.t0) + t_end)
        first = super()._solve_impl(problem, middle, h, output_every)
        rest = copy.copy(problem)
        rest.t0, rest.q0, rest.v0 = middle, first.q[-1].copy(), first.v[-1].copy()
        tiny = Adaptive(self.stepper, rtol=self.rtol, atol=self.atol, h_max=self.h_max / 50)
        second = tiny._solve_impl(rest, t_end, None, output_every)
        stats = {**first.stats, "steps": first.stats["steps"] + second.stats["steps"]}
        return Trajectory(
            np.concatenate([first.t, second.t[1:]]),
            np.concatenate([first.q, second.q[1:]]),
            np.concatenate([first.v, second.v[1:]]),
            first.impacts, Status.OK, "reached t_end", stats, self.name, problem.name, None,
        )  # fmt: skip


class DriftingAdaptive(Adaptive):
    """Step-size control whose positions sink by 1e-9 per unit time (a drifting contact)."""

    def _solve_impl(self, problem, t_end, h, output_every):
        run = super()._solve_impl(problem, t_end, h, output_every)
        run.q[:, 0] -= 1e-9 * (run.t - problem.t0)
        return run


RESTING = ("resting_contact", "several_contacts")


def test_adaptive_time_stepping_passes_the_contact_checks_with_a_collapse_row():
    """A step-size-controlled method (time-stepping without a given step) gets the contact
    checks and, on each resting contact, the step-size collapse check: the controller keeps
    h_max at rest (MoreauJean, gap control)."""
    method = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4, h_max=0.05)
    report = check_method(method, properties=(*RESTING, "bad_inputs"))
    report.assert_passed()
    collapse = [c for c in report.checks if c.property == "no step-size collapse at rest"]
    assert [c.problem.split()[0] for c in collapse] == ["BouncingBall", "ColumnOfBeads"]
    assert all("median step 0.05" in c.measured for c in collapse)


@pytest.mark.parametrize(
    ("cls", "broken"),
    [
        (CollapsingAdaptive, "no step-size collapse at rest"),
        (DriftingAdaptive, "resting contact (no drift)"),
    ],
)
def test_a_broken_adaptive_method_fails_its_contact_check(cls, broken):
    method = cls(MoreauJean(), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4, h_max=0.05)
    report = check_method(method, properties=("resting_contact",))
    assert failing(report) == {(broken, "BouncingBall")}


def test_a_collapse_too_long_for_the_output_fails_rather_than_goes_unmeasured():
    """The resting runs keep every accepted step up to COLLAPSE_STEPS t_end / h_max of them; a
    run that took more (its output decimated) has a mean step below h_max / COLLAPSE_STEPS and
    fails the collapse check: never an unmeasured row."""
    from impactbench.bench.testing import COLLAPSE_STEPS, _collapse_check, _every_step_kept

    method = _every_step_kept(Adaptive(MoreauJean(), rtol=1e-4, h_max=0.05), 1000.0)
    assert method.max_samples >= COLLAPSE_STEPS * 1000.0 / 0.05
    assert _every_step_kept(MoreauJean(), 1000.0).name == MoreauJean().name
    t = np.linspace(0.0, 1000.0, 101)
    stats = {"steps": 10**6, "rejected_steps": 0}
    decimated = Trajectory(
        t, np.zeros((101, 1)), np.zeros((101, 1)), ImpactLog(), Status.OK,
        "reached t_end", stats, "m", "p", None,
    )  # fmt: skip
    check = _collapse_check(decimated, "p", 500.0, 1000.0)
    assert check.passed is False and "mean step 0.001" in check.measured
