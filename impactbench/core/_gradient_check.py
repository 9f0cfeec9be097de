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
                f"gap_gradient(q0) is not the gradient of gap at q0: along {label}, row {i} "
                f"gives the slope {slope[i]:.6g}, but the differences of gap give "
                f"{forward[i]:.6g} (forward) and {backward[i]:.6g} (backward), step {step:.3g}; "
                f"check its sign, and that row {i} is grad g_{i}(q) (shape (m, n), not its "
                "transpose)"
            )
    return ""
