"""The event-driven limits study: its equal-error comparison worked by hand (its quick run is
tests/quick_run.py's)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from impactbench import Adaptive, simulate
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.methods import EventDriven, MoreauJean, reference_method
from impactbench.problems import BouncingBall, ForcedImpactOscillator
from impactbench.studies import STUDIES
from impactbench.studies import event_driven_limits as limits


def _row(method, h, tolerance, error, fastest, slowest, repeats=10, impacts=10):
    """A run of the falling column whose ``repeats`` timed repeats spread evenly from
    ``fastest`` to ``slowest``."""
    family = "time-stepping" if h == h else "event-driven"
    return {
        "problem": limits.COLUMN,
        "method": method,
        "h": h,
        "tolerance": tolerance,
        "error": error,
        "wall_time": fastest,
        "wall_time_max": slowest,
        "wall_time_repeats": json.dumps(list(np.linspace(fastest, slowest, repeats))),
        "repeats": repeats,
        "impacts": impacts,
        "family": family,
    }


def test_each_event_driven_run_meets_the_cheapest_time_stepper_at_least_as_accurate():
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-2, nan, 1e-1, 1.0e-3, 1.1e-3),
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("PaoliSchatzman", 1e-3, nan, 8e-3, 4.0e-3, 4.2e-3),
            _row("EventDriven", nan, 1e-2, 2e-2, 2.0e-3, 2.2e-3),  # MJ h=1e-3 or PS: PS cheaper
            _row("EventDriven", nan, 1e-4, 9e-3, 4.0e-3, 4.4e-3),  # PS only; medians close
            _row("EventDriven", nan, 1e-6, 1e-9, 1.0e-3, 1.0e-3),  # no time-stepper reaches it
            _row("EventDriven", nan, 1e-8, 1e-1, 9.0e-3, 9.0e-3, repeats=1),  # one repeat
        ]
    )
    compared = limits.equal_error(frame)
    assert list(compared["time-stepper"]) == [
        "PaoliSchatzman (h = 0.001)",
        "PaoliSchatzman (h = 0.001)",
        "none reaches it",
        "MoreauJean (h = 0.01)",
    ]
    assert list(compared["verdict"]) == [
        "event-driven faster",  # medians 2.1 and 4.1 ms: faster by about 1.95
        "tie",  # medians 4.2 and 4.1 ms, repeats spread over [4.0, 4.4] and [4.0, 4.2]
        "no time-stepper as accurate",
        "- (fewer than 5 repeats)",
    ]
    assert compared["ratio"].iloc[0].startswith("faster by 1.95 [")
    assert compared["ratio"].iloc[1].startswith("tie (ratio 0.976 [")


def test_the_study_runs_both_families_on_every_case():
    assert STUDIES[limits.NAME] is limits.STUDY
    runs = limits.runs(quick=True)
    assert {run.problem_name for run in runs} == set(limits.CASES["quick"])
    for label in limits.CASES["quick"]:
        mine = [run for run in runs if run.problem_name == label]
        assert {run.method.requires_step for run in mine} == {True, False}
        events = [run for run in mine if run.method is EventDriven]
        zeno = sorted(run.tolerance_value for run in events)
        assert zeno == sorted(limits.REST_VELOCITIES["quick"])
        controlled = sorted(run.tolerance_value for run in mine if run.method is Adaptive)
        quick = label in limits.ADAPTIVE_CASES["quick"]
        assert controlled == (limits.ADAPTIVE_TOLERANCES["quick"] if quick else [])
    assert set(limits.ADAPTIVE_CASES["full"]) == set(limits.CASES["full"])
    accumulations = {limits.BALL, limits.ROCKING, limits.COLUMN, limits.CHATTER}
    assert set(limits.CASES["full"]) == accumulations | {limits.PENDULUM}
    assert limits.CHATTER in limits.CASES["quick"]
    assert "control" in limits.PENDULUM


def test_each_adaptive_run_meets_the_cheapest_run_of_both_other_families():
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-2, nan, 1e-1, 1.0e-3, 1.1e-3),
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("EventDriven", nan, 1e-2, 5e-3, 2.0e-3, 2.2e-3),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-3, 2e-2, 0.5e-3, 0.6e-3),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-5, 1e-9, 9.0e-3, 9.5e-3),
        ]
    ).assign(family=lambda f: f["family"].where(~f["method"].str.startswith("Adaptive"),
                                                 ADAPTIVE_STEPPING))  # fmt: skip
    compared = limits.adaptive_equal_error(frame)
    assert list(compared["rtol"]) == [1e-3, 1e-5]
    # rtol 1e-3 (error 2e-2): MJ h = 1e-3 and the event-driven run reach it; faster than both
    assert list(compared["fixed step"]) == ["MoreauJean (h = 0.001)", "none reaches it"]
    assert list(compared["event-driven"]) == ["EventDriven (0.01)", "none reaches it"]
    assert list(compared["verdict (vs fixed step)"]) == [
        "adaptive time-stepping faster",
        "no fixed step as accurate",
    ]
    assert list(compared["verdict (vs event-driven)"]) == [
        "adaptive time-stepping faster",
        "no event-driven as accurate",
    ]


def test_a_capped_impact_count_is_a_lower_bound_in_the_equal_error_tables():
    """An event-driven or adaptive run whose impact log filled up shows ">= N" in both
    equal-error tables; the other counts stay as they are."""
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("EventDriven", nan, 1e-2, 2e-2, 2.0e-3, 2.2e-3, impacts=203),
            _row("EventDriven", nan, 1e-10, 1e-3, 9.0e-3, 9.5e-3, impacts=100_000),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-3, 2e-2, 0.5e-3, 0.6e-3, impacts=50),
        ]
    ).assign(
        impacts_capped=[False, False, True, True],
        family=lambda f: f["family"].where(
            ~f["method"].str.startswith("Adaptive"), ADAPTIVE_STEPPING
        ),
    )
    assert list(limits.equal_error(frame)["impacts"]) == ["203", ">= 100000"]
    assert list(limits.adaptive_equal_error(frame)["impacts"]) == [">= 50"]
    assert "impacts_capped" not in limits.equal_error(frame)
    plain = limits.equal_error(frame.assign(impacts_capped=False))
    assert list(plain["impacts"]) == [203, 100_000]


def test_an_error_at_round_off_reaches_the_exact_answer():
    """The column's case: the event-driven runs meet the rest stack exactly (error 0),
    PaoliSchatzman to round-off (1e-15); both are the exact answer, so PaoliSchatzman reaches
    the event-driven runs' error (it used to print "none reaches it": 1e-15 > 0), and the runs
    at round-off are named."""
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-2, nan, 2e-5, 1.0e-3, 1.1e-3),
            _row("PaoliSchatzman", 1e-2, nan, 1e-15, 2.0e-3, 2.2e-3),
            _row("PaoliSchatzman", 1e-3, nan, 3e-16, 9.0e-3, 9.9e-3),
            _row("EventDriven", nan, 1e-2, 0.0, 1.0e-3, 1.0e-3),
            _row("EventDriven", nan, 1e-4, 0.0, 2.0e-3, 2.4e-3),
            _row("EventDriven", nan, 1e-6, nan, 1.5e-3, 1.6e-3),  # an error not computed
        ]
    )
    compared = limits.equal_error(frame)
    assert list(compared["time-stepper"]) == ["PaoliSchatzman (h = 0.01)"] * 2 + ["-"]
    assert list(compared["verdict"]) == [
        "event-driven faster",
        "tie",
        "- (no error)",
    ]  # medians 1.0 and 2.2 ms against 2.1 ms, the latter repeats over [2.0, 2.4] and [2.0, 2.2]
    assert limits.exact_runs(frame) == "EventDriven (0.01, 0.0001), PaoliSchatzman (all 2 settings)"
    assert limits.exact_runs(frame[frame["method"] == "MoreauJean"]) == "no run"
    slightly_off = frame.assign(
        error=lambda f: f["error"].where(f["method"] != "PaoliSchatzman", 1e-9)
    )
    assert (
        list(limits.equal_error(slightly_off)["verdict"])[:2] == ["no time-stepper as accurate"] * 2
    )
    # the rule is the rest states' (in m): on the ball, whose error is a max error over the
    # run, 1e-15 is not as accurate as 0
    ball = frame.assign(problem=limits.BALL)
    assert list(limits.equal_error(ball)["verdict"])[:2] == ["no time-stepper as accurate"] * 2


def test_the_verdict_counts_name_every_verdict():
    """The key findings' counts: a run no other family reaches is counted under that verdict,
    never as a bare "-" ("- in 7" was printed)."""
    verdicts = pd.Series(["no time-stepper as accurate"] * 7 + ["tie", "event-driven faster"])
    text = limits.verdict_counts(verdicts, "event-driven settings")
    assert text == (
        "no time-stepper as accurate in 7, tie in 1, event-driven faster in 1 "
        "of 9 event-driven settings"
    )
    assert "- in" not in text


def test_housner_accumulation_time_bounds_the_rocking_impacts():
    """The rocking block's accumulation time against the event-driven run (rtol 1e-10): the
    first impact where the fall from the tilt takes tau(omega_1), every impact before t_inf,
    and the last one, with angular speeds below the Zeno threshold, within 1e-4 s of it (the
    half cycles shrink geometrically); the speeds' ratio at each impact is Housner's r."""
    block = limits._rocking()
    t_inf = limits.housner_accumulation_time(block)
    run = simulate(block, EventDriven(rtol=1e-10, rest_velocity=1e-6), t_inf + 1.0)
    times = run.impacts.t
    assert times.size >= 10
    assert np.all(times < t_inf)
    assert t_inf - times[-1] < 1e-4
    radius = np.hypot(block.half_width, block.half_height)
    first = limits._rocking_quarter(0.75 * block.gravity / radius, block.slenderness,
                                    block.impact_speed())  # fmt: skip
    assert abs(times[0] - first) < 1e-8
    half_cycles = np.diff(times)
    ratios = half_cycles[1:6] / half_cycles[:5]
    assert np.all(ratios < 1.0) and np.all(ratios > block.housner_ratio**2)


def test_the_rocking_block_comes_to_rest_where_its_corners_stuck():
    """MoreauJean (h = 1e-4) through the rocking block's accumulation ends within 1e-6 m of
    :func:`rest_state` (flat, its first pivot unmoved, the other corner where it stuck), and
    the displacement is that of the block's farthest point: a translation by d gives d, a
    rotation by a about the centre moves the corners by 2 R sin(a / 2)."""
    block = limits._rocking()
    t_end = limits.housner_accumulation_time(block) + 1.0
    run = simulate(block, MoreauJean(), t_end, h=1e-4)
    assert limits._displacement(block, run.q[-1]) < 1e-6
    rest = limits.rest_state(block)
    assert limits._displacement(block, rest + [3e-3, -4e-3, 0.0]) == pytest.approx(5e-3)
    radius = np.hypot(block.half_width, block.half_height)
    turned = limits._displacement(block, rest + [0.0, 0.0, 0.2])
    assert turned == pytest.approx(2.0 * radius * np.sin(0.1))
    with pytest.raises(TypeError, match="problem"):
        limits.rest_state(BouncingBall())


def _chatter_sequences(run, releases):
    """The impact indices of ``run`` between consecutive ``releases`` (a chatter sequence each,
    when the mass stuck before the release)."""
    times = run.impacts.t
    return [
        np.nonzero((times > start) & (times < end))[0]
        for start, end in zip(releases[:-1], releases[1:], strict=True)
    ]


@pytest.mark.parametrize("grid", ["quick", "full"])
def test_the_impact_oscillator_chatters_on_its_stop(grid):
    """The chattering oscillator's event-driven reference (DOP853, rtol 1e-12) to the grid's
    horizon. Between any two releases after the transient (the first chatter sequence closes
    near t = 23.5, before the release at 23.6) lies a chatter sequence of at least 20 impacts
    of decreasing speed, whose accumulation time is :func:`chatter_accumulation_time` from any
    of its impacts, to the first-order error omega dt^2 / a (dt = t_inf - t_k, a the push,
    where omega dt / a <= 0.1); the mass then rests on the stop, pushed into it, from its last
    impact to the closed-form release time (the force's sign change), and leaves there; at
    least 3 such sequences in the quick horizon, 6 in the full one."""
    problem = limits._chatter()
    t_end = limits.HORIZON[limits.CHATTER][grid]
    run = simulate(problem, reference_method(), t_end)
    assert run.success
    sigma, omega = problem.sigma, problem.omega
    releases = limits.chatter_release_times(problem, t_end)
    assert np.allclose(np.cos(omega * releases), sigma, rtol=0.0, atol=1e-12)
    assert np.all(-omega * np.sin(omega * releases) < 0.0)  # the force falls through sigma there
    at_rest = (np.abs(run.q[:, 0] - sigma) <= 1e-12) & (np.abs(run.v[:, 0]) <= 1e-12)
    assert np.all(np.cos(omega * run.t[at_rest]) - sigma >= -1e-9)  # pushed into the stop
    speeds = np.abs(run.impacts.normal_velocity_before)
    chattering = releases[releases > 23.0]
    sequences = _chatter_sequences(run, chattering)
    assert len(sequences) >= {"quick": 3, "full": 6}[grid]
    for sequence, release in zip(sequences, chattering[1:], strict=True):
        assert sequence.size >= 20
        impact_times = run.impacts.t[sequence]
        assert np.all(np.diff(speeds[sequence]) < 0.0)
        last = sequence[-1]
        t_inf = limits.chatter_accumulation_time(problem, run.impacts.t[last], speeds[last])
        assert 0.0 < t_inf - impact_times[-1] < 1e-4  # closed at the Zeno threshold
        checked = 0
        for k in sequence[:-1]:
            push = np.cos(omega * run.impacts.t[k]) - sigma
            dt = t_inf - run.impacts.t[k]
            if omega * dt / push > 0.1:
                continue
            predicted = limits.chatter_accumulation_time(problem, run.impacts.t[k], speeds[k])
            assert abs(predicted - t_inf) <= omega * dt**2 / push
            checked += 1
        assert checked >= 10
        # at rest from the closing to the release (to round-off), leaving after it
        held = (run.t > impact_times[-1]) & (run.t <= release)
        assert held.sum() >= 2 and np.all(at_rest[held])
        assert abs(run.t[at_rest & (run.t < release + 0.5)].max() - release) < 1e-9
        assert release - impact_times[-1] > 0.1 * problem.period
        leaving = (run.t > release) & (run.t < release + 0.1)
        assert leaving.any()
        assert run.q[leaving, 0].min() < sigma - 1e-5


def test_the_chatter_closed_forms_reject_bad_input():
    problem = limits._chatter()
    with pytest.raises(TypeError, match="problem"):
        limits.chatter_release_times(BouncingBall(), 10.0)
    with pytest.raises(ValueError, match="sigma"):
        limits.chatter_release_times(ForcedImpactOscillator(sigma=1.0, omega=0.8), 10.0)
    released = limits.chatter_release_times(problem, 10.0)[0]
    with pytest.raises(ValueError, match="push"):
        limits.chatter_accumulation_time(problem, released + 0.1, 1e-3)
    with pytest.raises(ValueError, match="speed"):
        limits.chatter_accumulation_time(problem, released - 0.5, -1.0)
