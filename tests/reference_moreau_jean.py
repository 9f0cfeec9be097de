"""An independent NumPy implementation of the Moreau-Jean theta-scheme for affine gaps.

Written from the formulas of the design reference (section 5), for a constant mass matrix M,
a constant force F and affine gaps g(q) = G q + c, and sharing no code with impactbench's
contact numerics (no LDL factor, no principal pivoting):

    q_p = q_k + theta h v_k,
    A = {i : g_i(q_p) <= 0}                        (activation by position alone),
    v_{k+1} = v_k + h M^-1 F + M^-1 G_A^T P,
    0 <= P  _|_  G_A v_{k+1} + e G_A v_k >= 0,
    q_{k+1} = q_k + h ((1 - theta) v_k + theta v_{k+1}).

The LCP 0 <= P _|_ W P + b >= 0 with W = G_A M^-1 G_A^T (symmetric positive definite when the
active gradients are independent, so the solution is unique) is solved by enumerating the
subsets S of A: P_S = -W_SS^-1 b_S, P = 0 off S, accepted when P >= 0 and W P + b >= 0 up to a
relative round-off tolerance. Exponential in |A|: meant for a handful of contacts.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

#: Relative tolerance of the enumeration's sign checks (scale: max |b_i| and max W_ii P_i).
LCP_TOLERANCE = 1e-12


def solve_lcp_by_enumeration(W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The solution P of 0 <= P _|_ W P + b >= 0 for a symmetric positive definite W.

    Parameters
    ----------
    W : ndarray, shape (k, k)
    b : ndarray, shape (k,)

    Returns
    -------
    ndarray, shape (k,)
    """
    k = b.shape[0]
    scale = max(float(np.abs(b).max(initial=0.0)), np.finfo(float).tiny)
    for size in range(k + 1):
        for subset in combinations(range(k), size):
            s = list(subset)
            P = np.zeros(k)
            if s:
                P[s] = np.linalg.solve(W[np.ix_(s, s)], -b[s])
            w = W @ P + b
            tol = LCP_TOLERANCE * max(scale, float(np.abs(np.diag(W) * P).max(initial=0.0)))
            if P.min(initial=0.0) >= -tol and w.min(initial=0.0) >= -tol:
                return P
    raise RuntimeError(f"no subset solves the LCP (W not a P-matrix?): W={W}, b={b}")


@dataclass
class MoreauJeanRun:
    """Output of :func:`moreau_jean`: t (N+1,), q and v (N+1, n), the active-set sizes (N,)
    and the impulses (N, m) of each step (zero on inactive constraints)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    active_count: np.ndarray
    impulses: np.ndarray


def moreau_jean(
    mass: np.ndarray,
    force: np.ndarray,
    gap_matrix: np.ndarray,
    gap_offset: np.ndarray,
    restitution: float,
    q0: np.ndarray,
    v0: np.ndarray,
    h: float,
    n_steps: int,
    theta: float = 0.5,
    t0: float = 0.0,
) -> MoreauJeanRun:
    """Run the theta-scheme of the module docstring for ``n_steps`` steps of size ``h``.

    Parameters
    ----------
    mass : ndarray, shape (n, n)
        Constant SPD mass matrix M.
    force : ndarray, shape (n,)
        Constant force F.
    gap_matrix : ndarray, shape (m, n)
        G in g(q) = G q + c.
    gap_offset : ndarray, shape (m,)
        c.
    restitution : float
        e.
    q0, v0 : ndarray, shape (n,)
    h : float
    n_steps : int
    theta : float
        Weight of the scheme; the activation point is q_k + theta h v_k.
    t0 : float

    Returns
    -------
    MoreauJeanRun
    """
    M = np.asarray(mass, dtype=float)
    G = np.asarray(gap_matrix, dtype=float)
    c = np.asarray(gap_offset, dtype=float)
    n, m = M.shape[0], G.shape[0]
    m_inv = np.linalg.inv(M)
    free_kick = h * (m_inv @ np.asarray(force, dtype=float))
    q = np.empty((n_steps + 1, n))
    v = np.empty((n_steps + 1, n))
    active_count = np.zeros(n_steps, dtype=int)
    impulses = np.zeros((n_steps, m))
    q[0] = q0
    v[0] = v0
    for k in range(n_steps):
        qk, vk = q[k], v[k]
        qp = qk + theta * h * vk
        active = np.flatnonzero(G @ qp + c <= 0.0)
        v_new = vk + free_kick
        if active.size:
            GA = G[active]
            P = solve_lcp_by_enumeration(GA @ m_inv @ GA.T, GA @ v_new + restitution * (GA @ vk))
            v_new = v_new + m_inv @ (GA.T @ P)
            impulses[k, active] = P
        active_count[k] = active.size
        v[k + 1] = v_new
        q[k + 1] = qk + h * ((1.0 - theta) * vk + theta * v_new)
    t = t0 + h * np.arange(n_steps + 1)
    return MoreauJeanRun(t, q, v, active_count, impulses)
