"""The conformance suite's restitution check (impactbench.bench.testing): the ratio -u_+/u_- at
the bouncing ball's isolated impacts, read from the free-flight invariant v^2 + 2 g q, equals e
to first order for every built-in method, and a scheme that applies the restitution twice is
flagged by this check by name, with its likely causes."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import ImpactLog, Status, Trajectory
from impactbench.bench.testing import (
    RESTITUTION_IMPACTS,
    _floor_speeds,
    check_method,
    likely_causes,
)
from impactbench.core.scheme import scheme_function
from impactbench.methods import METHODS, Adaptive, MoreauJean
from impactbench.problems import BouncingBall

RESTITUTION = "restitution at isolated impacts"

moreau_jean_step = scheme_function(MoreauJean.step)


class RestitutionTwice(MoreauJean):
    """A deliberately wrong MoreauJean: Newton's law with e applied twice, u_+ = -e (e u_-)."""

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return moreau_jean_step(s, problem, options, n, m, k, t, t_next, h, p, e * e, par)


def test_the_floor_speeds_of_the_exact_solution_give_e():
    """The measurement itself, on the closed form sampled every 1e-3 s: u_+/u_- = e to
    round-off, and u_- = e^(k-1) sqrt(2 g q0) at impact k."""
    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
    impacts = ball.impact_times(100.0)[: RESTITUTION_IMPACTS + 1]
    t = np.arange(0.0, impacts[-1], 1e-3)
    q, v = ball.exact_solution(t)
    log = ImpactLog(impacts, np.zeros(impacts.size, dtype=np.int64), -v[0], v[0], impacts.size)
    exact = Trajectory(t, q, v, log, Status.OK, "", {}, "exact", ball.name, 1e-3)
    speeds = _floor_speeds(ball, exact, RESTITUTION_IMPACTS)
    first = np.sqrt(2.0 * ball.gravity * 1.0)
    np.testing.assert_allclose(speeds[:, 0], first * 0.8 ** np.arange(RESTITUTION_IMPACTS))
    np.testing.assert_allclose(speeds[:, 1] / speeds[:, 0], 0.8, rtol=1e-12)


def test_restitution_applied_twice_is_flagged_by_the_restitution_check():
    report = check_method(RestitutionTwice(), properties=("restitution",))
    (check,) = report.failures
    assert check.property == RESTITUTION
    assert "r = e^2: the restitution applied twice" in check.detail
    assert "applied twice" in check.likely_causes
    text = str(report)
    assert "likely causes: the restitution applied twice" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 100
    assert report.to_dict()["checks"][0]["likely_causes"] == check.likely_causes


BUILT_IN = [
    *(METHODS[name]() for name in sorted(METHODS) if name != "Adaptive"),
    Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, gap_tolerance=1e-4, h_max=0.05),
]


@pytest.mark.parametrize("method", BUILT_IN, ids=lambda method: type(method).__name__)
def test_every_built_in_method_passes_the_restitution_check(method):
    report = check_method(method, properties=("restitution",))
    report.assert_passed()
    assert [check.property for check in report.checks] == [RESTITUTION]


def test_every_property_of_the_battery_has_its_likely_causes():
    report = check_method(RestitutionTwice(), properties=("bad_inputs",))
    assert report.checks[0].likely_causes == ""  # passed: no causes listed
    for prop in (
        "order of max_position_error",
        "friction oscillator: order of hausdorff_velocity_distance",
        "kinetic metric (jumps along M^-1 n)",
        "resting contact (no drift)",
        "several simultaneous contacts",
        "no step-size collapse at rest",
        "energy not increased by an impact",
        RESTITUTION,
        "bad inputs rejected",
        "deterministic",
        "friction work <= 0 on every step",
        "no creep when sticking on an incline",
    ):
        assert likely_causes(prop), prop
