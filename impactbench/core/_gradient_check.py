"""The check of a problem's gap gradient against differences of its gap at q0.

:meth:`impactbench.Problem.check` calls :func:`gradient_mismatch`: the slope grad g_i(q0) . d
must lie within the one-sided difference quotients of g_i at q0 along d,

    (g_i(q0 + s d) - g_i(q0)) / s   and   (g_i(q0) - g_i(q0 - s d)) / s,

up to :data:`GRADIENT_TOLERANCE` times the row's scale plus the round-off of the quotients,
with the step s = sqrt(eps) max(1, |q0|_inf) (the step of one-sided differences: truncation
and round-off errors both of order sqrt(eps) relative). The directions d are the coordinate
axes for n <= :data:`COORDINATE_CHECK_MAX_DOF`, else :data:`RANDOM_DIRECTIONS` fixed
pseudo-random directions (a constant number of gap calls at any size). A gradient of the wrong
sign, its transpose (m = n), or a missing factor is off by 50 % or more; a gap with a kink at q0
is accepted with any slope between its one-sided quotients.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: Relative disagreement above which :func:`gradient_mismatch` refuses a gradient (the
#: one-sided quotients are accurate to about sqrt(eps) ~ 1e-8 relative on a smooth gap).
GRADIENT_TOLERANCE = 1e-3

#: Largest n checked along every coordinate axis.
COORDINATE_CHECK_MAX_DOF = 32

#: Number of pseudo-random directions checked for n > :data:`COORDINATE_CHECK_MAX_DOF`.
RANDOM_DIRECTIONS = 3


def gradient_mismatch(
    gap: Callable[[np.ndarray], np.ndarray | None],
    q0: np.ndarray,
    g0: np.ndarray,
    gradient: np.ndarray,
    at: str = "q0",
) -> str:
    """Why ``gradient`` is not the gradient of ``gap`` at ``q0``, or "" when it agrees.

    Parameters
    ----------
    gap : callable
        ``gap(q) -> (m,)`` float64 array, or None where it returns no valid value (that
        direction is then not checked).
    q0 : ndarray, shape (n,)
    g0 : ndarray, shape (m,)
        ``gap(q0)``.
    gradient : ndarray, shape (m, n)
        ``gap_gradient(q0)``.
    at : str
        The point as the message names it (``"t0, q0"`` for a rheonomic gap at fixed t0).
    """
    n = q0.shape[0]
    eps = np.finfo(float).eps
    step = math.sqrt(eps) * max(1.0, float(np.abs(q0).max()))
    if n <= COORDINATE_CHECK_MAX_DOF:
        directions = np.eye(n)
        labels = [f"coordinate {j} (column {j})" for j in range(n)]
    else:
        directions = np.random.default_rng(0).uniform(-1.0, 1.0, (RANDOM_DIRECTIONS, n))
        labels = [f"the pseudo-random direction {k}" for k in range(RANDOM_DIRECTIONS)]
    row_scale = np.abs(gradient).max(axis=1)
    point = at if "," not in at else f"({at})"
    for d, label in zip(directions, labels, strict=True):
        plus, minus = gap(q0 + step * d), gap(q0 - step * d)
        if plus is None or minus is None:
            continue
        forward, backward = (plus - g0) / step, (g0 - minus) / step
        low, high = np.minimum(forward, backward), np.maximum(forward, backward)
        slope = gradient @ d
        scale = np.maximum(row_scale * np.abs(d).sum(), np.maximum(np.abs(low), np.abs(high)))
        noise = 4.0 * eps * np.maximum(np.abs(g0), np.maximum(np.abs(plus), np.abs(minus))) / step
        excess = np.maximum(np.maximum(low - slope, slope - high), 0.0)
        bad = np.flatnonzero(excess > GRADIENT_TOLERANCE * scale + noise)
        if bad.size:
            i = int(bad[0])
            return (
                f"gap_gradient({at}) is not the gradient of gap at {point}: along {label}, row {i} "
                f"gives the slope {slope[i]:.6g}, but the differences of gap give "
                f"{forward[i]:.6g} (forward) and {backward[i]:.6g} (backward), step {step:.3g}; "
                f"check its sign, and that row {i} is grad g_{i}(q) (shape (m, n), not its "
                "transpose)"
            )
    return ""


#: Relative disagreement above which :func:`rate_mismatch` and :func:`drift_mismatch` refuse a
#: declared time derivative (central differences with the step of :func:`time_steps` are
#: accurate to about eps^(2/3) ~ 4e-11 relative on a smooth gap).
TIME_DERIVATIVE_TOLERANCE = 1e-3


def time_steps(t0: float, q0: np.ndarray) -> tuple[float, float]:
    """The steps of the central differences in time: d = cbrt(eps) max(1, |t0|, |q0|_inf) (the
    step balancing the truncation error O(d^2) and the round-off O(eps / d) of a central
    difference), and d / 8, where the truncation error is 64 times smaller (a fast obstacle,
    whose third derivative in t is large, passes there)."""
    d = np.finfo(float).eps ** (1.0 / 3.0) * max(1.0, abs(t0), float(np.abs(q0).max(initial=0.0)))
    return d, d / 8.0


def rate_mismatch(
    gap: Callable[[float], np.ndarray | None],
    t0: float,
    q0: np.ndarray,
    rate: np.ndarray,
    label: str,
) -> str:
    """Why ``rate`` is not the partial derivative in t of ``gap`` at t0, or "" when it agrees.

    The declaration passes when, at one of the :func:`time_steps` d, every row i satisfies
    |rate_i - D_i| <= :data:`TIME_DERIVATIVE_TOLERANCE` max(|rate_i|, |D_i|) plus the round-off
    of the quotient, D = (g(t0 + d) - g(t0 - d)) / (2 d).

    Parameters
    ----------
    gap : callable
        ``gap(t) -> (m,)``: the gap (or another quantity whose rate is declared) at q0 as a
        function of t, or None where it returns no valid value (then nothing is checked).
    t0 : float
    q0 : ndarray, shape (n,)
        The position, for the step's scale.
    rate : ndarray, shape (m,)
        The declared derivative at t0.
    label : str
        The declaration, as named in the message (e.g. ``"gap_rate(t0, q0)"``).
    """
    eps = np.finfo(float).eps
    found = ""
    for step in time_steps(t0, q0):
        plus, minus = gap(t0 + step), gap(t0 - step)
        if plus is None or minus is None:
            return ""
        width = (t0 + step) - (t0 - step)  # the width actually spanned, after rounding
        quotient = (plus - minus) / width
        noise = 4.0 * eps * np.maximum(np.abs(plus), np.abs(minus)) / width
        excess = np.abs(rate - quotient)
        bad = np.flatnonzero(
            excess > TIME_DERIVATIVE_TOLERANCE * np.maximum(np.abs(rate), np.abs(quotient)) + noise
        )
        if not bad.size:
            return ""
        if not found:
            i = int(bad[0])
            found = (
                f"{label} is not the derivative in t at fixed q: row {i} is {rate[i]:.6g}, "
                f"but the central difference in t gives {quotient[i]:.6g} (step {step:.3g}); "
                "check its sign and factors"
            )
    return found


def drift_mismatch(
    velocity: Callable[[float, np.ndarray], np.ndarray | None],
    rows: Callable[[float, np.ndarray], np.ndarray | None],
    t0: float,
    q0: np.ndarray,
    v0: np.ndarray,
    drift: np.ndarray,
    label: str,
) -> str:
    """Why ``drift`` is not the time part of the derivative of a relative velocity, or "".

    Along the line (t0 + s, q0 + s v0) at fixed v0 the relative velocity U(t, q) = W(t, q) v0 +
    r(t, q) has the derivative dU/ds = (dW/dq)[v0] v0 + c: a part at fixed t, that of the rows
    alone, and the declared drift c = (dW/dt) v0 + dr/dt + (dr/dq) v0 (for the normal rows W = G
    and r = dg/dt, so dr/dq = dG/dt and c = d2g/dt2 + 2 (dG/dt) v). So c = D_full - D_space with
    the central differences

        D_full = (U(t0 + d, q0 + d v0) - U(t0 - d, q0 - d v0)) / (2 d),
        D_space = (W(t0, q0 + d v0) - W(t0, q0 - d v0)) v0 / (2 d),

    and the declaration passes when, at one of the :func:`time_steps` d, every row agrees to
    :data:`TIME_DERIVATIVE_TOLERANCE` max(|c_i|, |D_full,i|, |D_space,i|) plus the round-off of
    the quotients (relative to the largest |U|, with the rounding of t0 +- d and q0 +- d v0).

    Parameters
    ----------
    velocity : callable
        ``velocity(t, q) -> (m,)``: U(t, q) = W(t, q) v0 + r(t, q), or None where not valid.
    rows : callable
        ``rows(t, q) -> (m,)``: W(t, q) v0 (the rows times v0), or None where not valid.
    t0 : float
    q0, v0 : ndarray, shape (n,)
    drift : ndarray, shape (m,)
        The declared drift at (t0, q0, v0).
    label : str
        The declaration, as named in the message (e.g. ``"gap_drift(t0, q0, v0)"``).
    """
    eps = np.finfo(float).eps
    found = ""
    for step in time_steps(t0, q0):
        values = (
            velocity(t0 + step, q0 + step * v0),
            velocity(t0 - step, q0 - step * v0),
            rows(t0, q0 + step * v0),
            rows(t0, q0 - step * v0),
        )
        if any(value is None for value in values):
            return ""
        full = (values[0] - values[1]) / (2.0 * step)
        space = (values[2] - values[3]) / (2.0 * step)
        expected = full - space
        largest = np.max(np.abs(np.array(values)), axis=0)
        scale_tq = max(1.0, abs(t0), float(np.abs(q0).max(initial=0.0)))
        noise = 8.0 * eps * scale_tq * largest / step
        scale = np.maximum(np.abs(drift), np.maximum(np.abs(full), np.abs(space)))
        bad = np.flatnonzero(np.abs(drift - expected) > TIME_DERIVATIVE_TOLERANCE * scale + noise)
        if not bad.size:
            return ""
        if not found:
            i = int(bad[0])
            found = (
                f"{label} is not the time part of the derivative of the relative velocity: "
                f"row {i} is {drift[i]:.6g}, but differences along (t0 + s, q0 + s v0) give "
                f"{expected[i]:.6g} (the whole derivative {full[i]:.6g} minus its part at fixed "
                f"t {space[i]:.6g}, step {step:.3g}); for a gap it is d2g/dt2 + 2 (dG/dt) v: "
                "check its sign and the factor 2"
            )
    return found
