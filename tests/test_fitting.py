"""Observed orders with intervals, floors and flat sweeps; phase families; graph distances.

The order fit is checked on synthetic sweeps with a known slope (the 95 % t-interval covers it
in 95 % of noisy draws), on floors, flat and growing sweeps and on too few points; the
Hausdorff distance between graphs on closed forms (a jump shifted by d is at distance d) and
against a brute-force evaluation on densely sampled polylines; the impacting oscillator's
Moreau-Jean order, phase-averaged, is first order with an interval excluding the single-grid
0.64.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial import cKDTree

from impactbench import ImpactLog, Reference, Status, Trajectory, simulate
from impactbench.analysis.fitting import (
    FLAT,
    FLOOR,
    GROWS,
    ORDER,
    PHASE_SPREAD,
    UNRESOLVED,
    error_floor,
    fit_order,
    perturbed_steps,
    phase_medians,
    phase_offsets,
)
from impactbench.analysis.metrics import METRICS, graph_distance
from impactbench.analysis.metrics import error_floor as metric_floor
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall, ImpactingOscillator
from impactbench.studies import convergence

EPS = np.finfo(float).eps


def sweep(points=12, decades=2.0):
    return np.geomspace(1e-4, 1e-4 * 10**decades, points)


# --------------------------------------------------------------------------------------------
# Order fit


def test_exact_power_law_gives_its_slope_and_a_zero_width_interval():
    h = sweep()
    fit = fit_order(h, 3.0 * h**1.5)
    assert fit.status == ORDER
    assert fit.order == pytest.approx(1.5, abs=1e-12)
    assert fit.high - fit.low < 1e-10 and fit.residual < 1e-12
    assert (fit.points, fit.excluded) == (12, 0)
    assert fit.decades == pytest.approx(2.0)
    assert fit.text() == "1.50 [1.50, 1.50]"


@pytest.mark.parametrize("points", [6, 12])
def test_interval_covers_the_true_slope_in_95_percent_of_noisy_draws(points):
    """1000 sweeps with log-normal noise (0.15 decades): the 95 % t-interval of the slope
    covers the true slope 0.9 in 930..970 of them (binomial: 950 +- 2.9 standard deviations).
    A normal-quantile interval (1.96 instead of t) would cover about 90 % (6 points) or 92 %
    (12 points) and fail."""
    rng = np.random.default_rng(2024)
    h = sweep(points, 1.7)
    covered = 0
    for _ in range(1000):
        error = 0.2 * h**0.9 * 10 ** rng.normal(0.0, 0.15, points)
        fit = fit_order(h, error)
        if fit.status == ORDER:
            covered += fit.low <= 0.9 <= fit.high
    assert 930 <= covered <= 970, covered


def test_band_is_the_t_band_of_the_mean_response():
    rng = np.random.default_rng(1)
    h = sweep(10, 1.5)
    error = h * 10 ** rng.normal(0.0, 0.1, h.size)
    fit = fit_order(h, error)
    center, low, high = fit.line(h)
    np.testing.assert_allclose(np.log10(center), fit.intercept + fit.order * np.log10(h))
    assert np.all(low < center) and np.all(center < high)
    # narrowest at the mean of log h, where the half-width is t sigma / sqrt(n)
    x = np.log10(h)
    middle = 10 ** x.mean()
    c, lo, hi = fit.line(np.array([middle]))
    assert np.log10(hi[0] / c[0]) == pytest.approx(fit.t_quantile * fit.sigma / np.sqrt(10))
    half = np.log10(high / center)
    assert half.min() >= np.log10(hi[0] / c[0]) - 1e-12


def test_points_below_the_floor_are_excluded_and_counted():
    h = sweep(12, 2.0)
    error = 5.0 * h  # 5e-4 .. 5e-2
    error[:3] = [1e-15, 3e-16, 2e-15]  # at round-off
    fit = fit_order(h, error, floor=1e-13)
    assert fit.status == ORDER and fit.excluded == 3 and fit.points == 9
    assert fit.order == pytest.approx(1.0, abs=1e-12)
    assert "3 at the floor" not in fit.text()  # an order: value and interval only


def test_all_points_at_the_floor_is_a_floor_not_an_order():
    h = sweep()
    error = 1e-15 * (1.0 + 0.5 * np.sin(np.arange(12)))  # round-off noise
    fit = fit_order(h, error, floor=error_floor(1.0))
    assert fit.status == FLOOR and np.isnan(fit.order)
    assert fit.excluded == 12 and fit.level == pytest.approx(error.max())
    assert fit.text().startswith("at the floor")


def test_floor_is_round_off_or_the_reference_accuracy():
    assert error_floor(2.0) == pytest.approx(200 * EPS)
    assert error_floor(2.0, 1e-9) == pytest.approx(1e-8)
    with pytest.raises(ValueError, match="scale"):
        error_floor(-1.0)


def test_flat_sweep_reports_its_level_not_an_order():
    """The event-driven ball: the flights are polynomials, integrated exactly at any tolerance."""
    tolerance = np.logspace(-3, -10, 8)
    error = 3.3315e-13 * (1 + 1e-6 * np.arange(8))
    fit = fit_order(tolerance, error, floor=error_floor(1.0))
    assert fit.status == FLAT and np.isnan(fit.order)
    assert fit.level == pytest.approx(3.3315e-13, rel=1e-5)
    assert fit.text("rtol") == "flat at 3.33e-13: not controlled by rtol"


def test_error_without_trend_is_flat_even_when_it_scatters():
    """Errors scattering over a decade without trend (interval of the slope contains 0)."""
    rng = np.random.default_rng(3)
    tolerance = np.logspace(-3, -10, 8)
    error = 1e-10 * 10 ** rng.uniform(0.0, 1.0, 8)
    fit = fit_order(tolerance, error)
    assert error.max() > 2 * error.min()
    assert fit.status == FLAT


def test_error_growing_as_the_step_decreases_is_no_order():
    h = sweep()
    fit = fit_order(h, 1e-15 * h**-1.8)
    assert fit.status == GROWS and np.isnan(fit.order)
    assert fit.level == pytest.approx(1e-15 * h.min() ** -1.8)


@pytest.mark.parametrize(
    ("points", "decades", "reason"),
    [(5, 2.0, "5 points (< 6)"), (8, 0.8, "0.80 decades (< 1)")],
)
def test_too_few_points_or_decades_is_not_resolved(points, decades, reason):
    h = sweep(points, decades)
    fit = fit_order(h, h)
    assert fit.status == UNRESOLVED and np.isnan(fit.order)
    assert fit.text() == f"not resolved: {reason}"


def test_floor_can_leave_too_few_points():
    h = sweep(8, 2.0)
    error = h.copy()
    error[:4] = 1e-16
    fit = fit_order(h, error, floor=1e-14)
    assert fit.status == UNRESOLVED
    assert fit.reason == "4 points (< 6), 4 more at the floor"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="parameter"):
        fit_order([1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="equal length"):
        fit_order([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="floor"):
        fit_order([1.0, 2.0], [1.0, 2.0], floor=-1.0)


# --------------------------------------------------------------------------------------------
# Phase families


def test_phase_offsets_are_fixed_stratified_and_start_at_the_nominal_step():
    offsets = phase_offsets(5)
    assert offsets[0] == 0.0
    np.testing.assert_array_equal(offsets, phase_offsets(5))
    strata = np.linspace(-PHASE_SPREAD, PHASE_SPREAD, 5)
    for j in range(1, 5):
        assert strata[j - 1] <= offsets[j] <= strata[j]
    family = perturbed_steps([1e-3, 2e-3], 3)
    assert family.shape == (2, 3)
    np.testing.assert_array_equal(family[:, 0], [1e-3, 2e-3])
    np.testing.assert_allclose(family[1], 2e-3 * (1 + phase_offsets(3)))
    with pytest.raises(ValueError, match="copies"):
        phase_offsets(0)


def test_phase_medians_by_hand():
    table = pd.DataFrame(
        {
            "problem": ["P"] * 7,
            "method": ["A", "A", "A", "A", "A", "A", "E"],
            "h_nominal": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, np.nan],
            "tolerance": [np.nan] * 6 + [1e-6],
            "status": ["ok", "ok", "ok", "ok", "failed", "ok", "ok"],
            "err": [3.0, 1.0, 2.0, 10.0, 0.0, 30.0, 5.0],
        }
    )
    medians = phase_medians(table, ["err"])
    assert medians["h"].tolist()[:2] == [1.0, 2.0] and np.isnan(medians["h"].iloc[2])
    assert medians["runs"].tolist() == [3, 2, 1]
    assert medians["err"].tolist() == [2.0, 20.0, 5.0]
    assert medians["err_min"].tolist() == [1.0, 10.0, 5.0]
    assert medians["err_max"].tolist() == [3.0, 30.0, 5.0]


def test_impacting_oscillator_moreau_jean_order_is_first_order_when_phase_averaged():
    """The single grid gave 0.64 (residual 0.6): one step puts the impact at a step midpoint,
    where the error drops 100x. On the convergence study's full grid (14 steps, 1.7 decades,
    5 phase copies each) the order of the median errors is >= 0.9 and its interval excludes
    0.64."""
    oscillator = ImpactingOscillator(restitution=0.8)
    reference = Reference.exact(oscillator, 10.0)
    error = METRICS["max_position_error"].function
    nominal = convergence.STEPS["full"]
    medians = []
    for family in perturbed_steps(nominal, convergence.PHASES["full"]):
        runs = [simulate(oscillator, MoreauJean(theta=0.5), 10.0, h=h) for h in family]
        medians.append(np.median([error(oscillator, run, reference) for run in runs]))
    floor = metric_floor("max_position_error", oscillator, reference, 10.0)
    fit = fit_order(nominal, medians, floor=floor)
    assert fit.status == ORDER and fit.points == len(nominal)
    assert fit.order >= 0.9 and fit.low > 0.64, fit


# --------------------------------------------------------------------------------------------
# Hausdorff distance between graphs


def test_identical_graphs_are_at_distance_zero():
    t = np.linspace(0.0, 1.0, 101)
    v = np.column_stack([np.sin(7 * t), np.where(t < 0.4, 1.0, -0.5)])
    assert graph_distance(t, v, t, v) == 0.0


@pytest.mark.parametrize("shift", [1e-6, 1e-3, 0.05])
def test_a_jump_shifted_by_d_is_at_distance_d(shift):
    """v = 1 then -1, jumping at 0.5 or at 0.5 + d (vertical segments): the jumps are d
    apart and the flat parts coincide, so the distance is d (the jump, 2, is larger)."""
    t_a = np.array([0.0, 0.5, 0.5, 1.0])
    t_b = np.array([0.0, 0.5 + shift, 0.5 + shift, 1.0])
    v = np.array([1.0, 1.0, -1.0, -1.0])
    assert graph_distance(t_a, v, t_b, v) == pytest.approx(shift, rel=1e-12)


def test_hand_worked_distances():
    flat_t, flat_v = np.array([0.0, 1.0]), np.array([0.0, 0.0])
    # a spike of height 1 on [0.4, 0.6]: its top is 1 away from the flat graph
    spike_t = np.array([0.0, 0.4, 0.4, 0.6, 0.6, 1.0])
    spike_v = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    assert graph_distance(flat_t, flat_v, spike_t, spike_v) == pytest.approx(1.0)
    # two constants c apart
    assert graph_distance(flat_t, flat_v, flat_t, flat_v + 0.3) == pytest.approx(0.3)
    # v = 2 t against v = 2 t + c on [0, 1]: interior points are c / 3 apart (max norm:
    # (t, 2t) to (t - u, 2t - 2u + c) with u = c - 2u), the start points c apart
    t = np.linspace(0.0, 1.0, 5)
    assert graph_distance(t, 2 * t, t, 2 * t + 0.03) == pytest.approx(0.03)
    # a step at 0.5 against the ramp v = 2t - 0.5 on [0.25, 0.75] (0 before, 1 after): the
    # ramp point (1/3, 1/6) is 1/6 from both the step's floor and its vertical segment, and
    # every other point of either graph is closer to the other graph
    step_t, step_v = np.array([0.0, 0.5, 0.5, 1.0]), np.array([0.0, 0.0, 1.0, 1.0])
    ramp_t, ramp_v = np.array([0.0, 0.25, 0.75, 1.0]), np.array([0.0, 0.0, 1.0, 1.0])
    assert graph_distance(step_t, step_v, ramp_t, ramp_v) == pytest.approx(1.0 / 6.0)


def _dense(t, v, per_segment=4001):
    s = np.linspace(0.0, 1.0, per_segment)[None, :]
    x = (t[:-1, None] + s * np.diff(t)[:, None]).ravel()
    y = (v[:-1, None] + s * np.diff(v)[:, None]).ravel()
    return np.column_stack([x, y])


@pytest.mark.parametrize("seed", range(8))
def test_distance_matches_brute_force_on_dense_samples(seed):
    """Random polylines with jumps: a brute-force max-norm Hausdorff distance between 4001
    points per segment is within (segment length) / 4000 of the true one, and the graph
    distance is within its 1e-3 relative accuracy of the true one."""
    rng = np.random.default_rng(seed)
    t_a = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0, 1, 6)]))
    t_b = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0, 1, 5)]))
    t_a[3] = t_a[2]  # a vertical segment
    v_a, v_b = rng.normal(size=t_a.size), rng.normal(size=t_b.size)
    a, b = _dense(t_a, v_a), _dense(t_b, v_b)
    brute = max(cKDTree(b).query(a, p=np.inf)[0].max(), cKDTree(a).query(b, p=np.inf)[0].max())
    length = max(np.abs(np.diff(v_a)).max(), np.abs(np.diff(v_b)).max(), 1.0)
    exact_low, exact_high = brute, brute + length / 4000
    distance = graph_distance(t_a, v_a, t_b, v_b)
    assert distance <= exact_high + 1e-12
    assert distance * (1 + 1e-3) >= exact_low - 1e-12


def test_graph_distance_refuses_bad_input():
    with pytest.raises(ValueError, match="non-decreasing"):
        graph_distance([0.0, 1.0, 0.5], [0, 0, 0], [0.0, 1.0], [0, 0])
    with pytest.raises(ValueError, match="components"):
        graph_distance([0.0, 1.0], np.zeros((2, 2)), [0.0, 1.0], np.zeros(2))


def _run(t, v):
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)[:, None]
    return Trajectory(t, np.zeros_like(v), v, ImpactLog(), Status.OK, "", {}, "m", "p")


@pytest.mark.parametrize("late", [1e-3, 2e-2])
def test_hausdorff_metric_of_a_jump_located_late_is_its_delay_in_scaled_units(late):
    """Reference: v = 2 on [0, 0.5), -1 after (horizon 2, so V = 2, T - t0 = 2); a run that
    jumps at 0.5 + late, sampled every 1e-3 with the jump as a vertical pair: its graph is
    at distance late / 2 in the scaled units t / (T - t0), v / V."""

    def state(times):
        v = np.where(np.asarray(times) < 0.5, 2.0, -1.0)[:, None]
        return np.zeros_like(v), v

    reference = Reference("exact", state, np.array([0.5]))
    grid = np.linspace(0.0, 2.0, 2001)
    jump = 0.5 + late
    t = np.sort(np.concatenate([grid, [jump, jump]]))
    v = np.where(t < jump, 2.0, -1.0)
    v[np.searchsorted(t, jump)] = 2.0  # the sample just before the jump, at the jump time
    metric = METRICS["hausdorff_velocity_distance"].function
    distance = metric(BouncingBall(), _run(t, v), reference)
    assert distance == pytest.approx(late / 2.0, rel=1e-9)
    assert metric(BouncingBall(), _run(grid, state(grid)[1][:, 0]), reference) < 1e-3 / 2 + 1e-12


def test_hausdorff_velocity_distance_converges_where_the_max_norm_does_not():
    """Moreau-Jean on the ball over 3 impacts: the velocity error in the max norm stays O(1)
    (a jump one step off), the graph distance decreases at order ~1 in h."""
    ball = BouncingBall(restitution=0.8)
    t_end = 2.5
    reference = Reference.exact(ball, t_end)
    metric = METRICS["hausdorff_velocity_distance"].function
    steps = np.geomspace(1e-4, 5e-3, 8)
    distances, max_norm = [], []
    for h in steps:
        run = simulate(ball, MoreauJean(theta=0.5), t_end, h=h)
        distances.append(metric(ball, run, reference))
        max_norm.append(np.abs(run.v - reference.state(run.t)[1]).max())
    assert min(max_norm) > 1.0
    fit = fit_order(
        steps, distances, floor=metric_floor("hausdorff_velocity_distance", ball, reference, t_end)
    )
    assert fit.status == ORDER and fit.low >= 0.8, fit
