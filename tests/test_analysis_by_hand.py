"""The analysis layer against values worked out by hand on tiny synthetic trajectories.

Every expected value below is computed in the comment next to it from the samples written in the
test, never by another function of the package. The problem is a bouncing ball of mass 1 under
gravity 2 (E = v^2 / 2 + 2 q, g(q) = q) and the reference is the hand-made linear motion
q_ref(t) = t, v_ref(t) = 1 + 2 t. The trajectory ``RUN`` has samples

    t = 0, 1, 2;   q = 0.5, 1.5, 3;   v = 4, 2, 1

so q - q_ref = 0.5, 0.5, 1 and v - v_ref = 3, -1, -4, and E = 9, 5, 6.5 (E_ref(2) = 16.5).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from impactbench.analysis.impact_events import (
    impact_events,
    isolated_impacts,
    matching_window,
    nearest_impacts,
)
from impactbench.analysis.metrics import (
    ERROR_GRID_POINTS,
    METRICS,
    energy_at_end,
    energy_error_at_end,
    error_floor,
    error_grid,
    error_nodes,
    graph_distance,
    hausdorff_velocity_distance,
    impact_time_error,
    l1_velocity_error,
    late_penetration,
    max_energy_increase,
    max_penetration,
    max_position_error,
    missed_impacts,
    position_error_at_end,
    spurious_impacts,
    velocity_error_at_end,
)
from impactbench.analysis.reference import Reference
from impactbench.analysis.timing import median_is_precise
from impactbench.bench import runner
from impactbench.core import compilation
from impactbench.core.dense import DenseOutput, chebyshev_lobatto_nodes
from impactbench.core.trajectory import ImpactLog, Status, Trajectory
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall, TightJoint
from impactbench.studies import energy_decay

BALL = BouncingBall(q0=1.0, gravity=2.0, mass=1.0)


def _trajectory(t, q, v, impacts=(), constraint=None, h=0.5, stats=None) -> Trajectory:
    t = np.asarray(t, dtype=float)
    impacts = np.asarray(impacts, dtype=float)
    constraint = np.zeros(impacts.size, dtype=np.int64) if constraint is None else constraint
    log = ImpactLog(
        t=impacts,
        constraint=np.asarray(constraint, dtype=np.int64),
        normal_velocity_before=-np.ones(impacts.size),  # approaching: impacts
        normal_velocity_after=np.zeros(impacts.size),
        total=impacts.size,
    )
    stats = {"velocity_output": "state"} if stats is None else stats
    q = np.asarray(q, dtype=float).reshape(t.size, -1)
    v = np.asarray(v, dtype=float).reshape(t.size, -1)
    return Trajectory(t, q, v, log, Status.OK, "", stats, "hand", "hand", h)


def _linear_state(times):
    times = np.asarray(times, dtype=float)
    return times[:, None], (1.0 + 2.0 * times)[:, None]


LINEAR = Reference("hand", _linear_state, None)
RUN = _trajectory([0.0, 1.0, 2.0], [0.5, 1.5, 3.0], [4.0, 2.0, 1.0])


def test_ball_energy_is_the_one_the_hand_values_assume():
    # E = v^2 / 2 + 2 q: at (q, v) = (0.5, 4): 8 + 1 = 9
    assert BALL.energy(np.array([0.5]), np.array([4.0])) == 9.0
    assert BALL.gap(np.array([-0.25]))[0] == -0.25


# --------------------------------------------------------------------------------------------
# Errors at the final time: at T = 2, not at t0 = 0


def test_position_error_at_end_is_taken_at_the_final_time():
    # |q(2) - q_ref(2)| = |3 - 2| = 1   (at t0: |0.5 - 0| = 0.5)
    assert position_error_at_end(BALL, RUN, LINEAR) == 1.0


def test_velocity_error_at_end_is_taken_at_the_final_time():
    # |v(2) - v_ref(2)| = |1 - 5| = 4   (at t0: |4 - 1| = 3)
    assert velocity_error_at_end(BALL, RUN, LINEAR) == 4.0


def test_energy_error_at_end_is_taken_at_the_final_time():
    # E(2) = 1/2 + 6 = 6.5; E_ref(2) = 25/2 + 4 = 16.5: 10   (at t0: |9 - 0.5| = 8.5)
    assert energy_error_at_end(BALL, RUN, LINEAR) == 10.0


def test_energy_at_end():
    assert energy_at_end(BALL, RUN, None) == 6.5
    no_flag = _trajectory(RUN.t, RUN.q, RUN.v, stats={})  # velocity a state unless said otherwise
    assert energy_at_end(BALL, no_flag, None) == 6.5
    psi = _trajectory(RUN.t, RUN.q, RUN.v, stats={"velocity_output": "central difference"})
    assert math.isnan(energy_at_end(BALL, psi, None))


# --------------------------------------------------------------------------------------------
# Errors over the samples


def test_max_position_error_over_the_samples():
    # max |q - q_ref| over 0.5, 0.5, 1 (q - q_ref is linear between the samples)
    assert max_position_error(BALL, RUN, LINEAR) == 1.0


def test_l1_velocity_error_integrates_the_polyline_of_the_samples():
    # v - v_ref = 3 - 4 t on [0, 1] (it changes sign at 0.75: 9/8 + 1/8) and 2 - 3 t on [1, 2]
    # (from -1 to -4: 5/2): 3.75, resolved by the error grid (the trapezoid of the samples alone
    # would give (3 + 1) / 2 + (1 + 4) / 2 = 4.5)
    assert l1_velocity_error(BALL, RUN, LINEAR) == pytest.approx(3.75, abs=1e-7)
    # uneven steps: samples at 0, 0.5, 2 with errors 3, 1, 4 and no sign change: 1 + 3.75
    uneven = _trajectory([0.0, 0.5, 2.0], [0.0, 0.5, 2.0], [4.0, 3.0, 9.0])
    assert l1_velocity_error(BALL, uneven, LINEAR) == pytest.approx(4.75, abs=1e-12)


def test_max_energy_increase_is_the_largest_rise_not_the_largest_drop():
    # E = 9, 5, 6.5: steps -4 and +1.5 -> 1.5 (the largest drop is 4)
    assert max_energy_increase(BALL, RUN, None) == 1.5
    # E = 9, 5, 2 (q = 0.5, 1.5, 0.75 with v = 4, 2, 1): never rises -> 0
    falling = _trajectory([0.0, 1.0, 2.0], [0.5, 1.5, 0.75], [4.0, 2.0, 1.0])
    assert max_energy_increase(BALL, falling, None) == 0.0
    assert max_energy_increase(BALL, _trajectory(RUN.t, RUN.q, RUN.v, stats={}), None) == 1.5
    single = _trajectory([0.0], [0.5], [4.0])  # no step: no increase
    assert max_energy_increase(BALL, single, None) == 0.0
    psi = _trajectory(RUN.t, RUN.q, RUN.v, stats={"velocity_output": "central difference"})
    assert math.isnan(max_energy_increase(BALL, psi, None))


def test_penetrations_over_all_samples_and_over_the_second_half():
    # g = q = -0.5, 0.2, -0.1 at t = 0, 1, 2: deepest 0.5; from t >= (0 + 2) / 2 = 1: 0.1
    sunk = _trajectory([0.0, 1.0, 2.0], [-0.5, 0.2, -0.1], [0.0, 0.0, 0.0])
    assert max_penetration(BALL, sunk, None) == 0.5
    assert late_penetration(BALL, sunk, None) == 0.1
    assert max_penetration(BALL, RUN) == 0.0
    # t = 2, 3, 4, 6: the second half is t >= (2 + 6) / 2 = 4, the mid sample included:
    # depths 0.5, 0.4, 0.3, 0.1 -> 0.3
    shifted = _trajectory([2.0, 3.0, 4.0, 6.0], [-0.5, -0.4, -0.3, -0.1], np.zeros(4))
    assert late_penetration(BALL, shifted, None) == 0.3


def test_default_reference_is_the_closed_form():
    # before its first impact (at t = 1) the ball dropped from q = 1 under gravity 2 has
    # q = 1 - t^2, v = -2 t. Samples t = 0, 0.5: q = 1.1, 0.75 (errors 0.1, 0), v = 0.2, -1
    # (errors 0.2, 0): max position error 0.1, L1 velocity error (0.2 + 0) / 2 * 0.5 = 0.05
    run = _trajectory([0.0, 0.5], [1.1, 0.75], [0.2, -1.0])
    assert max_position_error(BALL, run) == pytest.approx(0.1, abs=1e-15)
    assert l1_velocity_error(BALL, run) == pytest.approx(0.05, abs=1e-15)


def test_work_bytes_is_the_runs_own_count():
    run = _trajectory([0.0, 1.0], [1.0, 0.5], [0.0, -1.0], stats={"work_bytes": 4096})
    assert METRICS["work_bytes"].function(BALL, run, None) == 4096.0
    unknown = _trajectory([0.0, 1.0], [1.0, 0.5], [0.0, -1.0], stats={})
    assert math.isnan(METRICS["work_bytes"].function(BALL, unknown, None))


def test_registry_names_its_functions():
    assert METRICS["position_error_at_end"].function is position_error_at_end
    assert METRICS["max_energy_increase"].needs_reference is False


# --------------------------------------------------------------------------------------------
# The error grid: between the samples, through each method's continuous extension


def _free_fall(times):
    # BALL before its first impact at t = 1: q = 1 - t^2, v = -2 t
    times = np.asarray(times, dtype=float)
    return (1.0 - times**2)[:, None], (-2.0 * times)[:, None]


def test_error_grid_is_uniform_and_joined_with_samples_and_impacts():
    grid = error_grid(0.0, 2.0)
    assert grid.size == ERROR_GRID_POINTS == 10_001
    assert grid[0] == 0.0 and grid[-1] == 2.0
    np.testing.assert_allclose(np.diff(grid), 2e-4, rtol=1e-9)
    run = _trajectory([0.0, 0.123, 2.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    nodes, jump = error_nodes(run, Reference("hand", _linear_state, np.array([1.2345])))
    assert {0.123, 1.2345} <= set(nodes.tolist()) and set(grid.tolist()) <= set(nodes.tolist())
    assert nodes[jump].tolist() == [1.2345]
    with pytest.raises(ValueError, match="t_end"):
        error_grid(1.0, 0.0)


def test_time_stepper_error_between_its_samples_is_seen():
    # exact samples at t = 0, 0.5 of q = 1 - t^2: the chord is 1 - t / 2, off by t / 2 - t^2,
    # largest at t = 0.25: 1/16 (the samples alone show 0); v = -2 t is linear: no v error
    run = _trajectory([0.0, 0.5], [1.0, 0.75], [0.0, -1.0])
    assert max_position_error(BALL, run) == pytest.approx(1.0 / 16.0, abs=1e-12)
    assert l1_velocity_error(BALL, run) == pytest.approx(0.0, abs=1e-12)


def _dense_free_fall(breaks, corruption=0.0) -> DenseOutput:
    """DenseOutput of degree 3 of the free fall on ``breaks`` (exact: q is quadratic), the two
    inner nodes of every piece shifted by ``corruption`` in q and v (its ends stay exact)."""
    nodes, _ = chebyshev_lobatto_nodes(3)
    values = []
    for a, b in zip(breaks[:-1], breaks[1:], strict=True):
        q, v = _free_fall(a + (b - a) * nodes)
        piece = np.hstack([q, v])
        piece[1:-1] += corruption
        values.append(piece)
    return DenseOutput(np.asarray(breaks), np.array(values), np.zeros(0))


def test_event_driven_dense_output_wrong_between_its_steps_is_caught():
    breaks = [0.0, 0.3, 0.6, 0.9]
    t = np.array(breaks)
    q, v = _free_fall(t)
    exact = _trajectory(t, q, v, h=None)
    exact.dense = _dense_free_fall(breaks)
    corrupt = _trajectory(t, q, v, h=None)
    corrupt.dense = _dense_free_fall(breaks, corruption=0.01)
    # the accepted steps are exact: the old measure (the samples against the reference at the
    # same times) passes both runs
    q_ref, v_ref = _free_fall(corrupt.t)
    assert np.max(np.abs(corrupt.q - q_ref)) == 0.0 and np.max(np.abs(corrupt.v - v_ref)) == 0.0
    # the correct dense output reproduces the free fall at every grid point
    assert max_position_error(BALL, exact) < 1e-14
    assert l1_velocity_error(BALL, exact) < 1e-14
    # the corrupted one is off between the steps: on each piece x = (t - a) / (b - a) the error is
    # the polynomial through 0 at x = 0, 1 and 0.01 at the inner nodes x = 1/4, 3/4, i.e.
    # (0.16 / 3) x (1 - x): 0.04 / 3 at mid-step, and in v it integrates to
    # (0.16 / 3) / 6 x 0.9 = 0.008 over the three pieces
    assert max_position_error(BALL, corrupt) == pytest.approx(0.04 / 3.0, rel=1e-6)
    assert l1_velocity_error(BALL, corrupt) == pytest.approx(0.008, rel=1e-6)
    reference = Reference.exact(BALL, 0.9)
    assert hausdorff_velocity_distance(BALL, exact, reference) < 1e-12
    assert hausdorff_velocity_distance(BALL, corrupt, reference) > 1e-3


def test_event_driven_impact_pair_is_compared_with_each_side_of_the_reference_impact():
    # reference: v = -1 before its impact at t* = 1, +1 after; q = 1 - |t - 1| (both sides 0 at 1)
    def state(times):
        times = np.asarray(times, dtype=float)
        return (1.0 - np.abs(times - 1.0))[:, None], np.where(times < 1.0, -1.0, 1.0)[:, None]

    reference = Reference("hand", state, np.array([1.0]))
    # the run locates it 0.01 late: pre-impact sample (1.01, q=0, v=-1), post (1.01, q=0, v=1)
    run = _trajectory(
        [0.0, 1.01, 1.01, 2.0], [1.0, 0.0, 0.0, 1.0], [-1.0, -1.0, 1.0, 1.0], [1.01], h=None
    )
    assert velocity_error_at_end(BALL, run, reference) == 0.0
    # q errors: 1 at t = 0 (the run starts at 1, the reference at 0)
    assert max_position_error(BALL, run, reference) == pytest.approx(1.0, abs=1e-12)
    # velocity error 2 on (1, 1.01) only, where the reference has jumped and the run not yet:
    # the jump times the delay, 0.02 (the left limit of the run at 1.01 is its pre sample)
    assert l1_velocity_error(BALL, run, reference) == pytest.approx(0.02, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Impacts: matching window, isolated reference impacts, missed and spurious


def test_matching_window_by_hand():
    assert matching_window(0.01, 10.0) == 0.2  # max(10 * 0.01, 0.02 * 10)
    assert matching_window(0.1, 1.0) == 1.0  # max(10 * 0.1, 0.02 * 1)
    assert matching_window(None, 10.0) == 0.2
    assert matching_window(0.1, 0.0) == 1.0  # an empty horizon is allowed
    with pytest.raises(ValueError, match="span"):
        matching_window(0.1, -1.0)


def test_nearest_impacts_and_isolated_impacts_by_hand():
    np.testing.assert_array_equal(
        nearest_impacts(np.array([1.0, 3.0]), np.array([0.0, 1.9, 2.0, 2.1, 9.0])),
        [1.0, 1.0, 1.0, 3.0, 3.0],  # 2.0 is a tie: the earlier one
    )
    with pytest.raises(ValueError, match="impacts"):
        nearest_impacts(np.zeros(0), np.array([1.0]))
    # window 0.2: neighbours farther than 0.4 on both sides; 3 and 3.05 form an accumulation
    np.testing.assert_array_equal(
        isolated_impacts(np.array([1.0, 3.0, 3.05, 6.0]), 0.2), [True, False, False, True]
    )
    np.testing.assert_array_equal(isolated_impacts(np.array([1.0, 1.5]), 0.2), [True, True])
    np.testing.assert_array_equal(isolated_impacts(np.array([1.0, 1.3]), 0.2), [False, False])
    # exactly 2 w apart is not farther than 2 w
    np.testing.assert_array_equal(isolated_impacts(np.array([1.0, 1.5]), 0.25), [False, False])
    np.testing.assert_array_equal(
        nearest_impacts(np.array([1.0, 3.0, 5.0]), np.array([0.0, 2.9, 3.1, 4.2, 9.0])),
        [1.0, 3.0, 3.0, 5.0, 5.0],
    )
    assert isolated_impacts(np.zeros(0), 0.2).size == 0


#: Reference impacts at 1, 3, 3.05 (an accumulation), 6 and 7.4, horizon 10 and h = 0.01, so the
#: window is max(10 h, 0.02 * 10) = 0.2. The run logs 1.1; 5 and 5.01 (one event: 0.01 <= 1.5 h);
#: 6.3; and a contact phase every step from 7 to 7.5.
REF_IMPACTS = Reference("hand", _linear_state, np.array([1.0, 3.0, 3.05, 6.0, 7.4]))
CONTACT = 7.0 + 0.01 * np.arange(51)
IMPACT_RUN = _trajectory(
    [0.0, 5.0, 10.0],
    np.zeros(3),
    np.zeros(3),
    np.concatenate([[1.1, 5.0, 5.01, 6.3], CONTACT]),
    h=0.01,
)


def test_impact_time_error_by_hand():
    # isolated reference impacts 1, 6, 7.4; nearest run entries 1.1, 6.3, 7.4: max 0.3
    assert impact_time_error(BALL, IMPACT_RUN, REF_IMPACTS) == pytest.approx(0.3, abs=1e-12)


def test_missed_impacts_by_hand():
    # isolated 1 (1.1: 0.1 <= 0.2), 6 (6.3: 0.3 > 0.2, missed), 7.4 (7.4: 0): one missed
    assert missed_impacts(BALL, IMPACT_RUN, REF_IMPACTS) == 1.0
    # the accumulation 3, 3.05 is not counted even though nothing hits it
    assert missed_impacts(BALL, IMPACT_RUN, Reference("hand", _linear_state, np.zeros(0))) == 0.0


def test_matching_window_follows_the_step_and_the_horizon_from_t0():
    # h = 0.05: w = max(0.5, 0.2) = 0.5, so 6.3 now matches 6: nothing missed
    coarse = _trajectory(IMPACT_RUN.t, IMPACT_RUN.q, IMPACT_RUN.v, IMPACT_RUN.impacts.t, h=0.05)
    assert missed_impacts(BALL, coarse, REF_IMPACTS) == 0.0
    # t0 = -10: horizon 20, w = max(0.1, 0.4) = 0.4: nothing missed either
    early = BouncingBall(q0=1.0, gravity=2.0, mass=1.0, t0=-10.0)
    assert missed_impacts(early, IMPACT_RUN, REF_IMPACTS) == 0.0


def test_impact_time_error_edge_cases():
    one = Reference("hand", _linear_state, np.array([1.0]))
    assert impact_time_error(BALL, IMPACT_RUN, one) == pytest.approx(0.1, abs=1e-12)
    crowded = Reference("hand", _linear_state, np.array([3.0, 3.05]))  # no isolated impact
    assert math.isnan(impact_time_error(BALL, IMPACT_RUN, crowded))


def test_spurious_impacts_by_hand():
    # events 1.1 (ref 1 within 0.2), [5, 5.01] (nothing in [4.8, 5.21]: spurious), 6.3 (nothing
    # in [6.1, 6.5]: spurious), [7, 7.5] (ref 7.4 inside): two
    assert spurious_impacts(BALL, IMPACT_RUN, REF_IMPACTS) == 2.0
    # one more event at 9, after every reference impact: spurious
    later = np.concatenate([IMPACT_RUN.impacts.t, [9.0]])
    late_run = _trajectory(IMPACT_RUN.t, IMPACT_RUN.q, IMPACT_RUN.v, later, h=0.01)
    assert spurious_impacts(BALL, late_run, REF_IMPACTS) == 3.0
    lone = _trajectory(IMPACT_RUN.t, IMPACT_RUN.q, IMPACT_RUN.v, [1.1], h=0.01)
    assert spurious_impacts(BALL, lone, REF_IMPACTS) == 0.0
    assert spurious_impacts(BALL, lone, Reference("hand", _linear_state, np.zeros(0))) == 1.0
    none = Reference("hand", _linear_state, np.zeros(0))
    assert spurious_impacts(BALL, IMPACT_RUN, none) == 4.0
    quiet = _trajectory([0.0, 10.0], [0.0, 0.0], [0.0, 0.0], h=0.01)
    assert spurious_impacts(BALL, quiet, REF_IMPACTS) == 0.0
    assert math.isnan(impact_time_error(BALL, quiet, REF_IMPACTS))
    assert missed_impacts(BALL, quiet, REF_IMPACTS) == 3.0  # the isolated 1, 6, 7.4


def test_impact_metrics_need_the_reference_impact_times():
    with pytest.raises(ValueError, match="impact times"):
        missed_impacts(BALL, IMPACT_RUN, LINEAR)


def test_impact_events_of_the_hand_log():
    events = impact_events(IMPACT_RUN)
    # clusters (entries <= 1.5 h = 0.015 apart): {1.1}, {5, 5.01}, {6.3}, {7 .. 7.5}
    assert events.impacts == 4
    np.testing.assert_array_equal(events.times, [1.1, 5.0, 6.3, 7.0])
    np.testing.assert_array_equal(events.ends, [1.1, 5.01, 6.3, CONTACT[-1]])
    np.testing.assert_array_equal(events.first_entries, [0, 1, 3, 4])
    # one contact phase (51 entries > 2): duration 7.5 - 7 + h = 0.51
    assert events.contact_phases == 1
    assert events.contact_time == pytest.approx(0.51, abs=1e-12)


def test_impact_events_boundaries_and_phases_by_hand():
    # h = 0.5: entries 1.5 h = 0.75 apart are one event, so 0 .. 1.75 is a contact phase of
    # 4 entries lasting 1.75 + h = 2.25, 5 .. 6.5 one of 4 entries lasting 1.5 + h = 2: 4.25 in
    # all; 10 is an event of its own
    log = [0.0, 0.5, 1.0, 1.75, 5.0, 5.5, 6.0, 6.5, 10.0]
    events = impact_events(_trajectory([0.0, 11.0], [0.0, 0.0], [0.0, 0.0], log, h=0.5))
    np.testing.assert_array_equal(events.times, [0.0, 5.0, 10.0])
    np.testing.assert_array_equal(events.ends, [1.75, 6.5, 10.0])
    assert (events.impacts, events.contact_phases, events.contact_time) == (3, 2, 4.25)


def test_event_driven_impact_events_by_hand():
    # every entry is an event, sorted; the log here is out of order; no phases in the stats: 0
    run = _trajectory([0.0, 3.0], [0.0, 0.0], [0.0, 0.0], [2.0, 1.0], h=None, stats={})
    events = impact_events(run)
    np.testing.assert_array_equal(events.times, [1.0, 2.0])
    np.testing.assert_array_equal(events.first_entries, [1, 0])
    assert (events.impacts, events.contact_phases, events.contact_time) == (2, 0, 0.0)


# --------------------------------------------------------------------------------------------
# Graph distance and error floors


def test_graph_distance_of_a_jump_shifted_by_a_quarter():
    # v jumps 0 -> 1 at t = 1 in one graph and at t = 1.25 in the other: the vertical segments
    # are 0.25 apart in time and every other point is nearer, so the distance is 0.25
    a = graph_distance([0.0, 1.0, 1.0, 2.0], [0, 0, 1, 1], [0.0, 1.25, 1.25, 2.0], [0, 0, 1, 1])
    assert a == pytest.approx(0.25, rel=1e-3)
    # a constant offset 0.3 in value, same times: 0.3
    assert graph_distance([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.3, 1.3]) == pytest.approx(0.3)


def test_hausdorff_velocity_distance_of_an_offset_velocity():
    # v = v_ref + 0.5 at t = 0, 1, 2; scaled by T - t0 = 2 and max |v_ref| = 5 the graphs are
    # parallel segments of slope 0.8, 0.1 apart vertically: the end (1, 5.5 / 5) of the run's
    # graph has no reference point to its right, so its distance is the vertical 0.1
    run = _trajectory([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [1.5, 3.5, 5.5])
    assert METRICS["hausdorff_velocity_distance"].function(BALL, run, LINEAR) == pytest.approx(
        0.1, rel=1e-3
    )
    point = _trajectory([0.0], [0.0], [1.0])  # an empty horizon
    assert METRICS["hausdorff_velocity_distance"].function(BALL, point, LINEAR) == 0.0


def test_error_floors_by_hand():
    reference = Reference("hand", _linear_state, np.array([1.0]), accuracy=1e-3)
    # on [0, 2]: Q = 2, V = 5, tau = 2; floor = max(100 eps S, 10 A)
    assert error_floor("max_position_error", BALL, reference, 2.0) == pytest.approx(1e-2)
    assert error_floor("l1_velocity_error", BALL, reference, 2.0) == pytest.approx(2e-2)
    assert error_floor("impact_time_error", BALL, reference, 2.0) == pytest.approx(2e-3)
    exact = Reference("hand", _linear_state, None, accuracy=0.0)
    eps = np.finfo(float).eps
    assert error_floor("velocity_error_at_end", BALL, exact, 2.0) == pytest.approx(500 * eps)
    with pytest.raises(ValueError, match="metric"):
        error_floor("max_penetration", BALL, exact, 2.0)


# --------------------------------------------------------------------------------------------
# The runner times the fastest repeat


def test_runner_reports_the_minimum_of_the_repeats(monkeypatch):
    clock = iter([9.0, 3.0, 1.0, 2.0])  # warm-up, then the three repeats
    # the loops' share of each: the spread is that of the loops, not of the wall times
    loop = iter([8.0, 2.5, 0.25, 1.75])
    compiling = iter([5.0, 0.0, 0.5, 0.0])  # numba's time, apart: the warm-up's and a repeat's

    def fake_simulate(problem, method, t_end, **options):
        stats = {"wall_time": next(clock), "steps": 2, "force_evaluations": 2, "impacts": 0}
        stats["integration_time"] = next(loop)
        stats["compile_time"] = next(compiling)
        return _trajectory([0.0, 1.0], [1.0, 1.0], [0.0, 0.0], h=0.5, stats=stats)

    monkeypatch.setattr(runner, "simulate", fake_simulate)
    # a process warms up once per compiled code: forget any earlier test's run of this code
    monkeypatch.setattr(compilation, "_LOADED", set())
    run = runner.Run(BouncingBall, MoreauJean, 1.0, h=0.5, repeats=3)
    outcome = runner.perform(run)
    assert outcome.timing == {
        "wall_time": 1.0,
        "wall_time_median": 2.0,
        "wall_time_max": 3.0,
        "wall_time_repeats": [3.0, 1.0, 2.0],
        "timed_repeats": 3,
        "inner_runs": 1,  # the first simulation covers MIN_TIMED_SECONDS: it is a repeat
        "warmup_time": 9.0,
        "compile_time": 5.5,
        "integration_time": 0.25,
        "integration_time_median": 1.75,
        "integration_time_max": 2.5,
    }


@pytest.mark.parametrize(
    ("clock", "inner", "repeats"),
    [
        # 0.004 s per simulation: the first (alone, under 0.01 s) is dropped and the repeats
        # take ceil(0.01 / 0.004) = 3 simulations; their times are per simulation
        ([0.004, *([0.004, 0.004, 0.005] * 2)], 3, [0.013 / 3, 0.013 / 3]),
        # a slow first simulation (0.02 s, over 0.01 s alone) is a repeat of one; the next one
        # alone (0.0011 s) is dropped, and the repeats take ceil(0.01 / 0.0011) = 10
        ([0.02, 0.0011, *([0.0011] * 10)], 10, [0.02, 0.0011]),
    ],
)
def test_runner_times_a_short_run_several_times_per_repeat(monkeypatch, clock, inner, repeats):
    clock = iter(clock)

    def fake_simulate(problem, method, t_end, **options):
        stats = {"wall_time": next(clock), "steps": 2, "force_evaluations": 2, "impacts": 0}
        return _trajectory([0.0, 1.0], [1.0, 1.0], [0.0, 0.0], h=0.5, stats=stats)

    monkeypatch.setattr(runner, "simulate", fake_simulate)
    monkeypatch.setattr(compilation, "is_loaded", lambda code: True)  # no warm-up
    outcome = runner.perform(runner.Run(BouncingBall, MoreauJean, 1.0, h=0.5, repeats=2))
    assert outcome.timing["inner_runs"] == inner and outcome.timing["timed_repeats"] == 2
    assert outcome.timing["wall_time_repeats"] == pytest.approx(repeats)
    assert next(clock, None) is None  # every simulation made, no warm-up (code loaded)


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        # ten equal repeats: the interval of the median is a point; stop at repeats = 10
        ([1.0] * 30, 10),
        # alternating 1 and 2: the order-statistic interval of the median spans [1, 2] for
        # every count, never within 5 %: the repeats stop at max_repeats
        ([1.0, 2.0] * 15, 20),
        # ten repeats spread over [1, 2], then 1.5 only: the interval x_(j), x_(n+1-j) of the
        # median closes on 1.5 once enough repeats equal it
        ([1.0 + k / 9 for k in range(10)] + [1.5] * 20, None),
    ],
)
def test_runner_repeats_until_the_median_is_precise(monkeypatch, times, expected):
    clock = iter(times)

    def fake_simulate(problem, method, t_end, **options):
        stats = {"wall_time": next(clock), "steps": 2, "force_evaluations": 2, "impacts": 0}
        return _trajectory([0.0, 1.0], [1.0, 1.0], [0.0, 0.0], h=0.5, stats=stats)

    monkeypatch.setattr(runner, "simulate", fake_simulate)
    monkeypatch.setattr(compilation, "is_loaded", lambda code: True)  # no warm-up
    run = runner.Run(BouncingBall, MoreauJean, 1.0, h=0.5, repeats=10, max_repeats=20)
    timing = runner.perform(run).timing
    made = timing["timed_repeats"]
    assert timing["wall_time_repeats"] == times[:made]
    if expected is not None:
        assert made == expected
    else:
        assert 10 < made < 20 and median_is_precise(times[:made])
        assert not median_is_precise(times[: made - 1])


def test_runner_integration_time_is_nan_when_the_method_does_not_report_it(monkeypatch):
    def fake_simulate(problem, method, t_end, **options):
        stats = {"wall_time": 1.0, "steps": 2, "force_evaluations": 2, "impacts": 0}
        return _trajectory([0.0, 1.0], [1.0, 1.0], [0.0, 0.0], h=0.5, stats=stats)

    monkeypatch.setattr(runner, "simulate", fake_simulate)
    monkeypatch.setattr(compilation, "_LOADED", set())
    outcome = runner.perform(runner.Run(BouncingBall, MoreauJean, 1.0, h=0.5, repeats=2))
    assert outcome.status == "ok" and outcome.timing["wall_time"] == 1.0
    names = ("integration_time", "integration_time_median", "integration_time_max")
    assert all(math.isnan(outcome.timing[name]) for name in names)


# --------------------------------------------------------------------------------------------
# The energy-decay law is fitted on the flights in their order


def test_spring_decay_law_is_fitted_on_flights_in_time_order():
    # impacts at t = 1 .. 5, excess energy 0.25^n on flight n (after the n-th impact): the
    # log-contraction per impact is log 0.25 = 2 log e for e = 0.5 (reversed order: +log 4)
    problem = TightJoint(stiffness=1.0, restitution=0.5)
    t = np.round(0.01 * np.arange(551), 10)
    impacts = [1.0, 2.0, 3.0, 4.0, 5.0]
    excess = 0.25 ** np.searchsorted(impacts, t, side="right")
    trajectory = _trajectory(t, np.zeros(t.size), np.zeros(t.size), impacts, h=0.01)
    run = SimpleNamespace(t_end=5.5, problem_name="hand", method=MoreauJean, h=0.01)
    row = energy_decay._fit_law(run, problem, trajectory, excess, energy_decay.LAW_SPRING)
    assert row["fitted"] == pytest.approx(math.log(0.25), rel=1e-12)
    assert row["exact"] == pytest.approx(math.log(0.25), rel=1e-12)
    assert row["residual"] == pytest.approx(0.0, abs=1e-12)
    assert row["impacts"] == 5
