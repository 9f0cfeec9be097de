"""An independent NumPy implementation of Siconos' EulerMoreauOSI on a linear first-order system
with a scalar relay law: the discretisation of Siconos' FrictionOscillator example.

Written from Siconos' formulation (the example's FrictionOscillator.cpp, tests/data/siconos/),
sharing no code with impactbench. The system and the law:

    x' = A x + B lambda,   y = C x,   -y in N_[-1, 1](lambda)   (lambda in -Sign(y)),

the theta-method on the smooth part, the reaction r = B lambda fully implicit:

    x_{k+1} = x_k + h (theta A x_{k+1} + (1 - theta) A x_k) + h B lambda_{k+1},

that is, with W = I - h theta A,

    x_free  = x_k + W^-1 (h A x_k),
    x_{k+1} = x_free + h W^-1 B lambda_{k+1},
    y_{k+1} = C x_{k+1} = q + D lambda_{k+1},  q = C x_free,  D = h C W^-1 B > 0,

and the relay problem -y in N_[-1, 1](lambda) has the unique solution
lambda = clip(-q / D, -1, 1) (lambda = -1 with y >= 0, lambda = 1 with y <= 0, or y = 0 between:
Siconos solves it by Lemke's method, the same solution up to round-off).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RelayRun:
    """Output of :func:`euler_moreau_relay`: t (N,), x (N, 2), lambda and y (N,), the rows of
    Siconos' output (row 0 the initial state with lambda = y = 0)."""

    t: np.ndarray
    x: np.ndarray
    lam: np.ndarray
    y: np.ndarray


def euler_moreau_relay(
    A: np.ndarray,  # noqa: N803
    B: np.ndarray,  # noqa: N803
    C: np.ndarray,  # noqa: N803
    x0: np.ndarray,
    h: float,
    rows: int,
    theta: float = 0.5,
) -> RelayRun:
    """``rows`` rows (the initial state and rows - 1 steps) of the scheme of the module.

    Parameters
    ----------
    A : ndarray, shape (n, n)
    B : ndarray, shape (n,)
    C : ndarray, shape (n,)
    x0 : ndarray, shape (n,)
    h, theta : float
    rows : int
    """
    n = len(x0)
    W = np.eye(n) - h * theta * A  # noqa: N806
    WB = np.linalg.solve(W, h * B)  # noqa: N806
    D = float(C @ WB)  # noqa: N806
    x = np.empty((rows, n))
    lam = np.zeros(rows)
    y = np.zeros(rows)
    x[0] = x0
    for k in range(1, rows):
        free = x[k - 1] + np.linalg.solve(W, h * (A @ x[k - 1]))
        q = float(C @ free)
        lam[k] = min(1.0, max(-1.0, -q / D))
        x[k] = free + WB * lam[k]
        y[k] = float(C @ x[k])
    return RelayRun(h * np.arange(rows), x, lam, y)
