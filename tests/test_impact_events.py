"""One definition of an impact event across methods (impactbench/analysis/impact_events.py): logs
built by hand with known answers, then the counts of every method on problems with known impacts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from impactbench import ImpactLog, simulate
from impactbench.analysis.impact_events import impact_events
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, DoublePendulum, SlidingBlock, TightJoint

H = 1e-3


def _run(times, constraints, h=H, **stats):
    log = ImpactLog(
        t=np.asarray(times, dtype=float),
        constraint=np.asarray(constraints, dtype=np.int64),
        normal_velocity_before=-np.ones(len(times)),  # approaching: impacts
        normal_velocity_after=np.zeros(len(times)),
        total=len(times),
    )
    return SimpleNamespace(impacts=log, h=h, stats=stats)


def test_two_step_impacts_count_once():
    # Paoli-Schatzman acts on two consecutive steps per impact: steps 1000, 1001 and 2000, 2001.
    events = impact_events(_run([1.0, 1.001, 2.0, 2.001], [0, 0, 0, 0]))
    assert (events.impacts, events.contact_phases, events.contact_time) == (2, 0, 0.0)
    np.testing.assert_array_equal(events.times, [1.0, 2.0])


def test_a_free_step_separates_events():
    # 1.000 and 1.002: the step ending at 1.001 had no impulse -> free flight -> two events.
    events = impact_events(_run([1.0, 1.002], [0, 0]))
    assert events.impacts == 2


def test_resting_contact_is_one_event_and_one_phase():
    # Ten consecutive steps ending at 3.000 ... 3.009: one impact that closed a contact phase
    # lasting from the start of the first step (2.999) to 3.009: 9 h + h = 0.010.
    times = 3.0 + H * np.arange(10)
    events = impact_events(_run(times, np.zeros(10)))
    assert (events.impacts, events.contact_phases) == (1, 1)
    assert events.contact_time == pytest.approx(0.010, rel=1e-12)


def test_a_contact_held_at_rest_is_a_phase_but_no_impact():
    # Ten consecutive steps whose first impulse met no approach (u^- = 0: closed at rest from
    # the start): a contact phase, no impact -- as the event-driven method counts it; a later
    # approaching cluster of the same constraint is one impact.
    run = _run(np.concatenate([H * np.arange(1, 11), [2.0]]), np.zeros(11))
    run.impacts.normal_velocity_before[:10] = [0.0, *(-np.ones(9))]
    events = impact_events(run)
    assert (events.impacts, events.contact_phases) == (1, 1)
    np.testing.assert_array_equal(events.times, [2.0])
    assert events.contact_time == pytest.approx(10 * H, rel=1e-12)


@pytest.mark.parametrize("method", [MoreauJean(compiled=False), EventDriven(compiled=False)])
def test_a_block_sliding_from_t0_has_no_impact_in_either_family(method):
    """The sliding block starts on the incline (y = 0, y' = 0): its contact is persistent from
    t0 and no approach ever closes it -- zero impacts and one contact phase, in both families
    (Moreau-Jean logs an impulse at every step, u^- = 0 at the first)."""
    block = SlidingBlock()
    run = simulate(block, method, 0.2, h=1e-2 if method.requires_step else None)
    events = impact_events(run)
    assert (events.impacts, events.contact_phases) == (0, 1)


def test_constraints_are_clustered_separately():
    # Two contacts closing on the same step are two impact events.
    events = impact_events(_run([1.0, 1.0, 1.001], [0, 1, 1]))
    assert events.impacts == 2
    np.testing.assert_array_equal(events.times, [1.0, 1.0])


def test_event_driven_entries_and_phases():
    events = impact_events(
        _run([0.5, 0.9, 1.1], [0, 0, 0], h=None, contact_phases=1, contact_duration=2.5)
    )
    assert (events.impacts, events.contact_phases, events.contact_time) == (3, 1, 2.5)


@pytest.mark.parametrize("h", [0.0, -1e-3, float("nan")])
def test_bad_step_refused(h):
    with pytest.raises(ValueError, match="h"):
        impact_events(_run([1.0], [0], h=h))


METHODS = [PaoliSchatzman(), MoreauJean(), CatchingUp(), EventDriven(rtol=1e-10)]


@pytest.mark.parametrize(
    ("problem", "t_end", "expected"),
    [
        # elastic ball dropped from q0 = 1 (g = 9.81): impacts every 2 sqrt(2/g) = 0.903 s
        # from t1 = sqrt(2/g) = 0.4515: 11 impacts before t = 10.
        (BouncingBall(restitution=1.0), 10.0, 11),
        (DoublePendulum(), 5.5, None),
        (TightJoint(), 20.0, None),
    ],
)
def test_every_method_counts_the_same_impacts(problem, t_end, expected):
    counts = {}
    for method in METHODS:
        run = simulate(problem, method, t_end, h=H if method.requires_step else None)
        counts[method.name] = impact_events(run).impacts
    assert len(set(counts.values())) == 1, counts
    if expected is not None:
        assert set(counts.values()) == {expected}


def test_contact_phase_of_the_ball_at_rest():
    # e = 0.8: the impacts accumulate at t_inf and the ball rests on the floor until T.
    ball = BouncingBall(restitution=0.8)
    t_end = 10.0
    rest = t_end - ball.accumulation_time
    for method in METHODS:
        run = simulate(ball, method, t_end, h=H if method.requires_step else None)
        events = impact_events(run)
        assert events.contact_phases >= 1, method.name
        assert events.contact_time == pytest.approx(rest, abs=0.05), method.name
