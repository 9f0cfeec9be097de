"""Error metrics against an exact solution, and the distance between graphs (docs/design.md s. 7).

:func:`graph_distance` is the Hausdorff distance between the graphs of two piecewise-linear
functions of time, the velocity error that converges through impacts: a time-stepping velocity
jumps one step late or early, which costs O(1) in the max norm for any h but only the time
shift in the graph distance (Monteiro Marques 1987; Acary 2012, Appl. Numer. Math. 62, for
event-capturing schemes).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .problem import Problem
from .trajectory import Trajectory

#: Relative accuracy to which :func:`graph_distance` resolves the supremum along segments.
GRAPH_RTOL = 1e-3


def _exact_at_samples(problem: Problem, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    if not problem.has_exact_solution:
        raise ValueError(f"problem {problem.name!r} has no exact solution")
    return problem.exact_solution(trajectory.t)


def max_position_error(problem: Problem, trajectory: Trajectory) -> float:
    """max over the samples of max_i |q_i - q_exact,i| (for a full-output run: over all steps)."""
    q_exact, _ = _exact_at_samples(problem, trajectory)
    return float(np.max(np.abs(trajectory.q - q_exact)))


def l1_velocity_error(problem: Problem, trajectory: Trajectory) -> float:
    """Integral over [t0, T] of max_i |v_i - v_exact,i| (trapezoidal rule on the samples).

    Unlike the max norm of the velocity error, which stays O(1) near impacts for every
    time-stepping scheme, this norm converges.
    """
    _, v_exact = _exact_at_samples(problem, trajectory)
    err = np.max(np.abs(trajectory.v - v_exact), axis=1)
    return float(np.sum(0.5 * (err[1:] + err[:-1]) * np.diff(trajectory.t)))


def penetration_depths(problem: Problem, q: np.ndarray) -> np.ndarray:
    """Depth below the constraints at each sample, max(0, -min_i g_i(q)); q (N, n), result (N,)."""
    q = np.atleast_2d(q)
    if q.shape[0] == 0:
        return np.zeros(0)
    gaps = np.array([problem.gap(qi) for qi in q])
    return np.maximum(0.0, -gaps.min(axis=1))


def max_penetration(problem: Problem, trajectory: Trajectory) -> float:
    """max(0, -min over samples and constraints of g_i(q))."""
    return float(penetration_depths(problem, trajectory.q).max())


@kernel
def _segment_distance(px: float, py: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """Max-norm distance from the point (px, py) to the segment from (x0, y0) to (x1, y1).

    max(|ax + s dx|, |ay + s dy|) is convex and piecewise linear in s in [0, 1]: its minimum is
    at an end or at a kink (a term is zero, or the two terms are equal in absolute value).
    """
    ax, ay = x0 - px, y0 - py
    dx, dy = x1 - x0, y1 - y0
    best = min(max(abs(ax), abs(ay)), max(abs(ax + dx), abs(ay + dy)))
    for k in range(4):
        if k == 0:
            num, den = -ax, dx
        elif k == 1:
            num, den = -ay, dy
        elif k == 2:
            num, den = ay - ax, dx - dy
        else:
            num, den = -(ax + ay), dx + dy
        if den != 0.0:
            s = num / den
            if 0.0 < s < 1.0:
                best = min(best, max(abs(ax + s * dx), abs(ay + s * dy)))
    return best


#: Segments per block of the polyline index of :func:`_point_distance`.
_BLOCK = 16


@kernel
def _blocks(by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value of each block of ``_BLOCK`` segments of a polyline."""
    segments = by.size - 1
    count = (segments + _BLOCK - 1) // _BLOCK
    low, high = np.empty(max(count, 1)), np.empty(max(count, 1))
    for k in range(count):
        first, last = k * _BLOCK, min((k + 1) * _BLOCK, segments)
        low[k], high[k] = by[first], by[first]
        for i in range(first + 1, last + 1):
            low[k] = min(low[k], by[i])
            high[k] = max(high[k], by[i])
    return low, high


@kernel
def _scan_block(
    px: float, py: float, bx: np.ndarray, by: np.ndarray, block: int, best: float
) -> float:
    """``best`` lowered to the distance to the segments of one block, if nearer."""
    first, last = block * _BLOCK, min((block + 1) * _BLOCK, bx.size - 1)
    for j in range(first, last):
        # a segment farther than best in time or in value cannot be nearer
        if bx[j] - px > best or px - bx[j + 1] > best:
            continue
        if min(by[j], by[j + 1]) - py > best or py - max(by[j], by[j + 1]) > best:
            continue
        best = min(best, _segment_distance(px, py, bx[j], by[j], bx[j + 1], by[j + 1]))
    return best


@kernel
def _point_distance(
    px: float,
    py: float,
    bx: np.ndarray,
    by: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    segment: int,
) -> float:
    """Max-norm distance from (px, py) to the polyline through (bx, by), bx non-decreasing.

    ``low``, ``high``: :func:`_blocks` of ``by``; ``segment``: a segment near px (any index
    is correct, a near one is fast). The blocks of segments are scanned outwards from it; a
    block whose value range lies farther than the best distance found is skipped, and the scan
    stops where the time distance alone exceeds it.
    """
    n = bx.size
    if n == 1:
        return max(abs(bx[0] - px), abs(by[0] - py))
    start = min(max(segment, 0), n - 2) // _BLOCK
    count = low.size
    best = np.inf
    k = start
    while k < count and bx[k * _BLOCK] - px <= best:
        if low[k] - py <= best and py - high[k] <= best:
            best = _scan_block(px, py, bx, by, k, best)
        k += 1
    k = start - 1
    while k >= 0 and px - bx[min((k + 1) * _BLOCK, n - 1)] <= best:
        if low[k] - py <= best and py - high[k] <= best:
            best = _scan_block(px, py, bx, by, k, best)
        k -= 1
    return best


@kernel
def _segment_bound(
    x0: float, y0: float, x1: float, y1: float, radius: float, bx: np.ndarray, by: np.ndarray
) -> float:
    """An upper bound of the distance from any point of a segment to the polyline (bx, by).

    The distance to one convex piece (a segment S_j) is convex along the segment, so it is at
    most its larger end value: the bound is the least of these over the pieces whose time range
    meets [x0 - radius, x1 + radius].
    """
    n = bx.size
    if n == 1:
        first = max(abs(bx[0] - x0), abs(by[0] - y0))
        return max(first, max(abs(bx[0] - x1), abs(by[0] - y1)))
    best = np.inf
    j = min(max(np.searchsorted(bx, x0 - radius) - 1, 0), n - 2)
    while j < n - 1 and bx[j] <= x1 + radius:
        first = _segment_distance(x0, y0, bx[j], by[j], bx[j + 1], by[j + 1])
        second = _segment_distance(x1, y1, bx[j], by[j], bx[j + 1], by[j + 1])
        best = min(best, max(first, second))
        j += 1
    return best


@kernel
def _directed_distance(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, rtol: float
) -> float:
    """sup over the polyline A of the distance to the polyline B (both time-monotone).

    At the vertices of A the distance is exact. Along a segment of A from p0 to p1 it is at most
    max(d(p0), d(p1)) + (x1 - x0): for a fixed time the points within r of B form an interval
    (B restricted to a time window is connected), so the distance is quasi-convex on vertical
    lines, and it is 1-Lipschitz in time. A segment whose bound (that one, or
    :func:`_segment_bound`) exceeds (1 + rtol) times the largest distance found so far is
    bisected, so the result is within that factor of the supremum.
    """
    n = ax.size
    low, high = _blocks(by)
    phi = np.empty(n)
    best = 0.0
    segment = 0
    for i in range(n):
        while segment < bx.size - 2 and bx[segment + 1] < ax[i]:
            segment += 1
        phi[i] = _point_distance(ax[i], ay[i], bx, by, low, high, segment)
        best = max(best, phi[i])
    slack = 4.0 * np.finfo(np.float64).eps
    depth = 60
    stack = np.empty((2 * depth + 2, 4))
    for k in range(n - 1):
        x0, y0, x1, y1 = ax[k], ay[k], ax[k + 1], ay[k + 1]
        if max(phi[k], phi[k + 1]) + (x1 - x0) <= best * (1.0 + rtol) + slack:
            continue
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0.0, 1.0, phi[k], phi[k + 1]
        top = 1
        while top > 0:
            top -= 1
            u0, u1, f0, f1 = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
            limit = best * (1.0 + rtol) + slack
            if max(f0, f1) + (u1 - u0) * (x1 - x0) <= limit:
                continue
            sx0, sy0 = x0 + u0 * (x1 - x0), y0 + u0 * (y1 - y0)
            sx1, sy1 = x0 + u1 * (x1 - x0), y0 + u1 * (y1 - y0)
            if _segment_bound(sx0, sy0, sx1, sy1, max(f0, f1), bx, by) <= limit:
                continue
            if u1 - u0 < 2.0**-depth:
                continue
            um = 0.5 * (u0 + u1)
            xm, ym = x0 + um * (x1 - x0), y0 + um * (y1 - y0)
            fm = _point_distance(xm, ym, bx, by, low, high, np.searchsorted(bx, xm) - 1)
            best = max(best, fm)
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = u0, um, f0, fm
            stack[top + 1, 0], stack[top + 1, 1] = um, u1
            stack[top + 1, 2], stack[top + 1, 3] = fm, f1
            top += 2
    return best


def graph_distance(
    t_a: np.ndarray, v_a: np.ndarray, t_b: np.ndarray, v_b: np.ndarray, rtol: float = GRAPH_RTOL
) -> float:
    """Hausdorff distance between the graphs of two piecewise-linear functions of time.

    Each graph is the polyline through its samples (t_k, v_k) in order; equal consecutive times
    give a vertical segment, which is how a jump enters a graph. The distance between points
    is the max norm max(|t - s|, |v - w|), and the Hausdorff distance is the larger of the two
    directed distances sup over one graph of the distance to the other. For vector values the
    result is the largest over the components of the distance between that component's
    graphs. Pass scaled coordinates (e.g. t / (T - t0), v / max |v|) so that the two terms of
    the norm are comparable.

    Parameters
    ----------
    t_a : ndarray, shape (k,)
        Non-decreasing sample times of the first function.
    v_a : ndarray, shape (k,) or (k, n)
        Its values.
    t_b : ndarray, shape (m,)
        Non-decreasing sample times of the second function.
    v_b : ndarray, shape (m,) or (m, n)
        Its values.
    rtol : float
        Relative accuracy of the result: the suprema along segments are resolved to within
        a factor 1 + rtol (values at the samples are exact).

    Returns
    -------
    float
        The distance, in the units of the coordinates given.
    """
    t_a, t_b = np.asarray(t_a, dtype=float), np.asarray(t_b, dtype=float)
    v_a = np.asarray(v_a, dtype=float).reshape(len(t_a), -1)
    v_b = np.asarray(v_b, dtype=float).reshape(len(t_b), -1)
    for name, t, v in (("t_a", t_a, v_a), ("t_b", t_b, v_b)):
        if t.ndim != 1 or t.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {t.shape}")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
            raise ValueError(f"{name} and its values must be finite")
        if np.any(np.diff(t) < 0):
            raise ValueError(f"{name} must be non-decreasing")
    if v_a.shape[1] != v_b.shape[1]:
        raise ValueError(f"v_a and v_b must have as many components, got {v_a.shape}, {v_b.shape}")
    if not (math.isfinite(rtol) and rtol > 0):
        raise ValueError(f"rtol must be finite and > 0, got {rtol!r}")
    distance = 0.0
    for i in range(v_a.shape[1]):
        a, b = np.ascontiguousarray(v_a[:, i]), np.ascontiguousarray(v_b[:, i])
        distance = max(
            distance,
            _directed_distance(t_a, a, t_b, b, rtol),
            _directed_distance(t_b, b, t_a, a, rtol),
        )
    return float(distance)
