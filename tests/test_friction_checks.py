"""The frictional checks of the conformance suite (impactbench.bench.testing.check_method): a
built-in frictional scheme passes them, a frictionless one is told they do not apply, and
deliberately wrong frictional schemes fail the check for what they break.

The wrong schemes are written here as a third party would: a plain-Python Moreau-Jean midpoint
step for one contact (q_p = q_k + h/2 v_k, the contact active where g(q_p) <= 0, Newton's
impulse P_N = max(0, -(W_N v_free + e W_N v_k) / (W_N M^-1 W_N^T)), then a tangential impulse
P_T, q_{k+1} = q_k + h/2 (v_k + v_{k+1})), with three friction laws:

* ``coulomb``: the correct one for a contact whose normal and tangent rows are orthogonal in
  the kinetic metric (the block): stick if |W_T v| / (W_T M^-1 W_T^T) <= mu P_N, else slip
  with |P_T| = mu P_N against the slip;
* ``pushing``: the sign of P_T flipped, |P_T| = mu P_N along the slip (friction that adds
  energy);
* ``regularized``: P_T = -mu P_N tanh(W_T v / width), a smooth friction law, which holds a
  block on an incline only while it moves: it creeps at width atanh(tan(alpha) / mu).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import ImpactLog, Method, Status, Trajectory
from impactbench.bench.testing import FRICTION_PROPERTIES, LEVELS, PROPERTIES, check_method
from impactbench.core.timestepping import step_count
from impactbench.methods import MoreauJean, PaoliSchatzman

FRICTION = tuple(FRICTION_PROPERTIES)
WORK, CREEP = FRICTION_PROPERTIES["friction_work"], FRICTION_PROPERTIES["no_creep"]
#: The checks the plain-Python schemes run (the oscillator's order sweep would take minutes).
PLAIN = ("friction_work", "no_creep")


class PlainFrictionalScheme(Method):
    """A plain-Python frictional Moreau-Jean step for one contact (module docstring)."""

    family = "time-stepping"
    requires_step = True
    friction_law = True

    def __init__(self, law: str = "coulomb", width: float = 0.1) -> None:
        if law not in ("coulomb", "pushing", "regularized"):
            raise ValueError(f"law must be 'coulomb', 'pushing' or 'regularized', got {law!r}")
        self.law = law
        self.width = float(width)

    def _tangential(self, u: float, w: float, bound: float) -> float:
        if self.law == "coulomb":
            return float(np.clip(-u / w, -bound, bound))
        if self.law == "pushing":
            return bound * float(np.sign(u))
        return -bound * float(np.tanh(u / self.width))

    def _solve_impl(self, problem, t_end, h, output_every):
        steps, h = step_count(problem.t0, t_end, h)
        q, v = problem.q0.astype(float), problem.v0.astype(float)
        ts, qs, vs = [problem.t0], [q], [v]
        for k in range(steps):
            t = problem.t0 + k * h
            qp = q + 0.5 * h * v
            mass = problem.mass_matrix(qp)
            v_new = v + h * np.linalg.solve(mass, problem.forces(t + 0.5 * h, qp, v))
            if problem.gap(qp)[0] <= 0.0:
                normal, tangent = problem.gap_gradient(qp)[0], problem.tangent_gradient(qp)[0]
                mu = problem.friction(qp)[0][0]
                d_n, d_t = np.linalg.solve(mass, normal), np.linalg.solve(mass, tangent)
                b = normal @ v_new + problem.restitution * (normal @ v)
                p_n = max(0.0, -b / (normal @ d_n))
                v_new = v_new + d_n * p_n
                v_new = v_new + d_t * self._tangential(tangent @ v_new, tangent @ d_t, mu * p_n)
            q, v = q + 0.5 * h * (v + v_new), v_new
            if (k + 1) % output_every == 0 or k + 1 == steps:
                ts.append(problem.t0 + (k + 1) * h)
                qs.append(q)
                vs.append(v)
        log = ImpactLog(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 0)
        return Trajectory(np.array(ts), np.array(qs), np.array(vs), log, Status.OK, "",
                          {"steps": steps, "impacts": 0}, self.name, problem.name, h)  # fmt: skip


def _verdicts(report) -> dict[str, set[bool | None]]:
    verdicts: dict[str, set[bool | None]] = {}
    for check in report.checks:
        verdicts.setdefault(check.property, set()).add(check.passed)
    return verdicts


def test_the_frictional_properties_are_in_the_default_battery():
    assert set(FRICTION) <= set(PROPERTIES)


def test_moreau_jean_passes_the_frictional_checks():
    """MoreauJean (theta = 1/2): no energy increase over any step on either block (measured
    exactly 0 or a decrease), no displacement at all on the incline to t = 100, and order >= 0.8
    of both errors against the friction oscillator's closed form."""
    report = check_method(MoreauJean(), level="quick", properties=FRICTION)
    report.assert_passed()
    verdicts = _verdicts(report)
    assert verdicts[WORK] == {True} and verdicts[CREEP] == {True}
    orders = [c for c in report.checks if c.property.startswith("friction oscillator")]
    assert len(orders) == 2 and all(c.problem.startswith("FrictionOscillator") for c in orders)
    (creep,) = [c for c in report.checks if c.property == CREEP]
    assert creep.measured.startswith("displacement 0 ")


def test_a_frictionless_method_is_told_the_checks_do_not_apply():
    """PaoliSchatzman declares no friction law: one "not applicable" row per frictional
    property, none a failure, and the text report (what `impactbench validate` prints) shows
    them as n/a, not applicable, with no friction law as the reason."""
    report = check_method(PaoliSchatzman(), properties=FRICTION)
    assert report.passed
    assert [c.property for c in report.checks] == list(FRICTION_PROPERTIES.values())
    assert all(c.passed is None for c in report.checks)
    assert all(c.measured == "not applicable (no friction law)" for c in report.checks)
    text = str(report)
    assert text.count("n/a") == 3 and "not applicable" in text


def test_a_plain_coulomb_scheme_passes_work_and_creep():
    """The control: the plain scheme with the correct law passes both checks, so the failures
    below come from the law alone."""
    report = check_method(PlainFrictionalScheme("coulomb"), properties=PLAIN)
    report.assert_passed()


def test_friction_that_adds_energy_fails_the_work_check():
    """P_T along the slip: the block on the floor accelerates (energy up by h mu g |u| a step,
    far above the h^2 |g|^2 allowance) and so does the block on the steep incline: both work
    rows fail, by more than ten times the allowance. On the gentle incline the first step's gravity
    starts a slip that the pushing friction then drives: it creeps too."""
    report = check_method(PlainFrictionalScheme("pushing"), properties=PLAIN)
    verdicts = _verdicts(report)
    assert verdicts[WORK] == {False}
    work = [c for c in report.checks if c.property == WORK]
    assert len(work) == 2
    for check in work:  # far beyond the allowance, not at its edge
        increase = float(check.measured.split()[6])
        assert increase > 10 * float(check.threshold.rsplit("= ", 1)[1])
    assert verdicts[CREEP] == {False}


def test_a_regularized_friction_law_fails_the_creep_check_only():
    """tanh friction dissipates (P_T u <= 0: the work check passes) but holds the block on the
    incline only by moving: it creeps at the steady speed where tanh balances gravity, 0.1
    atanh(tan 0.2 / 0.5) - h g sin 0.2 = 0.033 per unit time (the law sees the velocity before
    friction), far above the bound."""
    report = check_method(PlainFrictionalScheme("regularized"), properties=PLAIN)
    verdicts = _verdicts(report)
    assert verdicts[WORK] == {True}
    assert verdicts[CREEP] == {False}
    (creep,) = [c for c in report.checks if c.property == CREEP]
    per_unit_time = float(creep.measured.split("(")[1].split(" ")[0])
    h = LEVELS["quick"].contact_step  # tanh acts on the velocity before friction, u + h g sin a
    steady = 0.1 * np.arctanh(np.tan(0.2) / 0.5) - h * 9.81 * np.sin(0.2)
    assert per_unit_time == pytest.approx(steady, rel=0.02)
