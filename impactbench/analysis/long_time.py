"""Long runs: impact counts, per-flight energies and fitted energy-decay laws on stored samples.

A run over thousands of impacts keeps bounded memory by storing every ``output_every``-th step
and a bounded impact log (:class:`impactbench.ImpactLog`). The helpers here work on what such a
run stores: its samples ``(t, q, v)``, the energy at the samples and the impact-log times.

Impacts. A time-stepping run logs every step at which a constraint received an impulse, so one
physical impact can be several consecutive entries (Paoli-Schatzman logs two: its reflection
spans two steps); :func:`impactbench.analysis.impact_events.impact_events` merges them into impact
events, the one clustering rule of the package. An event-driven run logs each located impact once
and stores the states just before and just after it as two samples with the same time
(:func:`impact_sample_pairs`).

Decay laws (fitted by least squares in log scale, with the root-mean-square residual):

* :func:`fit_log_linear`: log y = a + b x, e.g. the excess energy of the 1-DOF tight joint with a
  spring against the impact index, whose exact slope is 2 log e (contraction e^2 per impact);
* :func:`fit_power_law`: log y = log C + p log(t - t_*), e.g. the energy of the free 1-DOF joint
  at the pre-impact instants, exactly C = 2 m delta^2 / (1 - e)^2 and p = -2;
* :func:`power_law_coefficient`: C for a fixed exponent (the geometric mean of y (t - t_*)^-p).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core.trajectory import Trajectory
from .impact_events import impact_events


class LogFit(NamedTuple):
    """Least-squares fit log(y) = intercept + slope x (x possibly a logarithm itself).

    ``residual`` is the root-mean-square residual in natural-log units (0.01: the values scatter
    by about 1 % around the fitted law); ``points`` the number of values fitted.
    """

    slope: float
    intercept: float
    residual: float
    points: int


def pre_impact_kinetic_energies(
    trajectory: Trajectory, mass: float
) -> tuple[np.ndarray, np.ndarray]:
    """Times of the impact events of a run and the normal kinetic energy m u^2 / 2 before them.

    The events are those of :func:`impactbench.analysis.impact_events.impact_events`; the first log
    entry of each gives its normal velocity u. For a 1-DOF system with |grad g| = 1 and mass
    ``mass`` this is the kinetic energy before impact.

    Returns
    -------
    times, energies : ndarray, shape (k,)
    """
    events = impact_events(trajectory)
    u = np.asarray(trajectory.impacts.normal_velocity_before, dtype=float)[events.first_entries]
    return events.times, 0.5 * mass * u**2


def impact_count(impacts: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Number of impacts at or before each time ``t`` (``impacts`` sorted)."""
    return np.searchsorted(np.asarray(impacts, dtype=float), np.asarray(t, dtype=float), "right")


def impact_sample_pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the samples just before and just after each impact of an event-driven run.

    An event-driven trajectory stores both states of an impact at the same time, in that order.
    Returns ``(before, after)`` with ``after = before + 1``.
    """
    t = np.asarray(t, dtype=float)
    before = np.flatnonzero(t[1:] == t[:-1])
    return before, before + 1


def flight_medians(
    t: np.ndarray, values: np.ndarray, impacts: np.ndarray, margin: float
) -> np.ndarray:
    """Median of ``values`` over the samples of each complete flight between two impacts.

    Flight n (n = 1 .. len(impacts) - 1) is the open interval between impacts n and n + 1;
    samples closer than ``margin`` to an impact are left out (a time-stepping impact spreads
    over a step or two: use a few steps). The median ignores the O(h^2) or O(h) oscillation of
    a scheme's energy within a flight.

    Returns
    -------
    ndarray, shape (len(impacts) - 1,)
        One value per flight, NaN for a flight without samples.
    """
    t = np.asarray(t, dtype=float)
    values = np.asarray(values, dtype=float)
    impacts = np.asarray(impacts, dtype=float)
    count = max(impacts.size - 1, 0)
    result = np.full(count, np.nan)
    if count == 0:
        return result
    flight = impact_count(impacts, t)
    index = np.clip(np.searchsorted(impacts, t), 1, impacts.size - 1)
    distance = np.minimum(np.abs(t - impacts[index - 1]), np.abs(impacts[index] - t))
    keep = (flight >= 1) & (flight <= count) & (distance > margin)
    flight, kept = flight[keep], values[keep]
    # every flight's samples sorted at once (flight is non-decreasing: t is increasing); the
    # median of a flight of L samples is the mean of its sorted entries (L - 1) // 2 and L // 2
    kept = kept[np.lexsort((kept, flight))]
    starts = np.searchsorted(flight, np.arange(1, count + 2))
    lengths = np.diff(starts)
    full = np.flatnonzero(lengths > 0)
    low = kept[starts[full] + (lengths[full] - 1) // 2]
    high = kept[starts[full] + lengths[full] // 2]
    result[full] = np.where(lengths[full] % 2 == 1, low, (low + high) / 2)
    result[np.unique(flight[np.isnan(kept)]) - 1] = np.nan  # as np.median: NaN in, NaN out
    return result


def _fit(x: np.ndarray, y: np.ndarray) -> LogFit:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of equal length, got {x.shape}, {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    if np.count_nonzero(keep) < 2:
        return LogFit(np.nan, np.nan, np.nan, int(np.count_nonzero(keep)))
    x, ly = x[keep], np.log(y[keep])
    slope, intercept = np.polyfit(x, ly, 1)
    residual = float(np.sqrt(np.mean((ly - (slope * x + intercept)) ** 2)))
    return LogFit(float(slope), float(intercept), residual, int(x.size))


def fit_log_linear(x: np.ndarray, y: np.ndarray) -> LogFit:
    """Fit log y = intercept + slope x over the finite pairs with y > 0.

    With x the impact index and y the excess energy after each impact, ``exp(slope)`` is the
    fitted contraction per impact. Fewer than 2 usable points give NaN.
    """
    return _fit(x, y)


def fit_power_law(t: np.ndarray, y: np.ndarray, origin: float) -> LogFit:
    """Fit log y = log C + p log(t - origin) over the pairs with t > origin and y > 0.

    ``slope`` is the exponent p and ``exp(intercept)`` the coefficient C.
    """
    t = np.asarray(t, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(t > origin, np.log(t - origin), np.nan)
    return _fit(x, y)


def power_law_coefficient(
    t: np.ndarray, y: np.ndarray, origin: float, exponent: float = -2.0
) -> tuple[float, float]:
    """The coefficient C of y = C (t - origin)^exponent for a fixed exponent.

    Returns
    -------
    coefficient : float
        The geometric mean of y (t - origin)^-exponent over the pairs with t > origin, y > 0.
    spread : float
        Root-mean-square deviation of log(y (t - origin)^-exponent) from log C (natural-log
        units; 0.01: the scaled values scatter by about 1 % around C). NaN without usable pairs.
    """
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = (t > origin) & (y > 0) & np.isfinite(y)
    if not keep.any():
        return np.nan, np.nan
    scaled = np.log(y[keep]) - exponent * np.log(t[keep] - origin)
    mean = float(np.mean(scaled))
    return float(np.exp(mean)), float(np.sqrt(np.mean((scaled - mean) ** 2)))


def decreasing_envelope(values: np.ndarray) -> np.ndarray:
    """The smallest non-increasing sequence above ``values`` (a running max from the end).

    For a dissipative run (the exact energy never increases) it removes a scheme's energy
    oscillation within flights and keeps the level reached after each impact.
    """
    values = np.asarray(values, dtype=float)
    return np.maximum.accumulate(values[::-1])[::-1]


def thinning_indices(t: np.ndarray, count: int) -> np.ndarray:
    """At most ``count`` sample indices that show a long curve on linear and log time axes.

    The samples nearest to ``count // 2`` times evenly spaced in [t[0], t[-1]] and to as many
    times geometrically spaced in [t[0] + dt, t[-1]] (dt = (t[-1] - t[0]) 1e-4), plus the first
    and the last sample, without repeats, in increasing order.
    """
    t = np.asarray(t, dtype=float)
    if t.size <= count:
        return np.arange(t.size)
    span = t[-1] - t[0]
    half = max(count // 2, 1)
    targets = np.concatenate(
        [
            np.linspace(t[0], t[-1], half),
            t[0] + np.geomspace(span * 1e-4, span, half),
        ]
    )
    index = np.clip(np.searchsorted(t, targets), 1, t.size - 1)
    nearer = np.where(targets - t[index - 1] <= t[index] - targets, index - 1, index)
    return np.unique(np.concatenate([[0, t.size - 1], nearer]))


def joint_excess_energy(problem: Any, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Excess energy E - k delta^2 / 2 of the 1-DOF tight joint at samples (q, v of shape (N, 1)).

    Computed as m v^2 / 2 + k (|x| - delta)(|x| + delta) / 2, without the cancellation of
    E - k delta^2 / 2 when the excess is a tiny fraction of E. It is the kinetic energy at the
    walls, m u^2 / 2, constant in each exact flight and multiplied by e^2 at each impact.
    """
    x = np.asarray(q, dtype=float).reshape(-1)
    u = np.asarray(v, dtype=float).reshape(-1)
    delta = problem.clearance
    a = np.abs(x)
    return 0.5 * problem.mass * u * u + 0.5 * problem.stiffness * (a - delta) * (a + delta)
