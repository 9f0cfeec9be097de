"""The smooth dynamics between events: free flight and the index-1 contact dynamics.

y = (q, v), y' = (v, a). In free flight a = M(q)^-1 F(t, q, v) (LDL^T of M from
:mod:`impactbench.core.contact`); with the contacts C closed, M a = F + G_C^T lambda with
W_C lambda = -(G_C M^-1 F + kappa_C + c_C), W_C = G_C M^-1 G_C^T (the Schur complement of the
KKT system [[M, -G_C^T], [G_C, 0]]), so that d2g_C/dt2 = G_C a + kappa_C + c_C = 0. The curvature
term kappa = grad^2 g (v, v) is a central difference of ``gap_gradient`` along v at fixed t with
the step ``CURVATURE_FD_STEP L / |v|_inf``: exact up to round-off for affine and quadratic gaps,
O((s/R)^2) relative for a curvature radius R. A moving obstacle (``RHEONOMIC``) adds its declared
drift c = d2g/dt2 + 2 (dG/dt) v (partial derivatives in t, ``gap_drift``); a fixed one has none
(no zero is added).

Templates (:func:`impactbench.core._jit.specialize`): the problem's kernels ``mass_matrix``,
``forces``, ``gap_gradient(t, q, p, out)``, ``gap_drift``, the flags ``CONSTANT_MASS``,
``RHEONOMIC`` and the size ``N_DOF``, ``N_CONSTRAINTS`` are free globals bound per engine.
"""

from __future__ import annotations

import math

import numpy as np

from impactbench.core.contact import ldl_factor, ldl_factor_mass, ldl_solve

#: Sub-intervals per accepted step in the dense-output check (read by the event location).
SUBINTERVALS = 4

# Names bound per engine (impactbench.core.events.engine).
mass_matrix = forces = gap_gradient = gap_drift = contact_acceleration = None
CONSTANT_MASS = RHEONOMIC = False
N_DOF = N_CONSTRAINTS = 0


def rhs_workspace(n: int, m: int, friction: bool = False) -> np.ndarray:
    """Scratch of :func:`acceleration` and :func:`rhs`, shape (2n + 6m + 6, max(n, m, 4)); with
    ``friction`` the rows of :func:`friction_layout` follow, and rows are max(n, 2m, 4) wide.

    Rows: M (n), its LDL^T factor (n), the acceleration a, a control row (failure flag: 1 mass
    matrix not SPD, 2 singular Delassus matrix of the closed contacts; the number k of closed
    contacts; the curvature difference step ``CURVATURE_FD_STEP L``; for a constant M, factored
    once per run by :func:`factor_constant_mass`, 1 when it is not SPD), the closed constraints
    (k indices), their forces lambda (k), a shifted q (then a moving obstacle's drift c, m
    entries), then six blocks of m rows: G, G at
    q + d v, G at q - d v, Y = rows M^-1 grad g_C, the Delassus matrix W_C and its factor, and
    a last row for the right-hand side of W_C lambda.
    """
    if friction:
        rows = 2 * n + 6 * m + 6 + friction_layout(n, m)["F_END"]
        return np.zeros((rows, max(n, 2 * m, 4)))
    return np.zeros((2 * n + 6 * m + 6, max(n, m, 4)))


def friction_layout(n: int, m: int) -> dict[str, int]:
    """The rows of the friction scratch (:mod:`impactbench.core.events.coulomb`) in the
    workspace of :func:`rhs_workspace`, as the constants the templates are bound with: the
    tangent rows W_T at q, q + d v and q - d v (m each; ``F_T``, ``F_TP``, ``F_TM``); one row
    each for the mode of each constraint (``F_MODE``), its mu and e_T (``F_MU``, ``F_ET``), the
    tangential force and the friction event value of each closed contact (``F_LT``, ``F_EV``),
    a vector of 2m (``F_B``); the event values at the probes of a step (``F_FS``, one row per
    probe); blocks of 2m rows (``F_YF``, ``F_A``, ``F_RY``, ``F_RF``), four vectors (``F_V``),
    the seven (m, m) blocks and five vectors of the impact law (``F_K``, ``F_KV``), and
    M^-1 W_N^T, M^-1 W_T^T of the contacts of an impact (``F_YN``, ``F_YT``, m rows each);
    ``F_END`` the number of these rows (the others are absolute row indices).
    """
    base = 2 * n + 6 * m + 6
    sizes = (
        ("F_T", m), ("F_TP", m), ("F_TM", m), ("F_MODE", 1), ("F_MU", 1), ("F_ET", 1),
        ("F_LT", 1), ("F_EV", 1), ("F_B", 1), ("F_FS", SUBINTERVALS + 1), ("F_YF", 2 * m),
        ("F_A", 2 * m), ("F_RY", 2 * m), ("F_RF", 2 * m), ("F_V", 4), ("F_K", 7 * m),
        ("F_KV", 5), ("F_YN", m), ("F_YT", m),
    )  # fmt: skip
    layout = {}
    row = 0
    for name, size in sizes:
        layout[name] = base + row
        row += size
    layout["F_END"] = row
    return layout


def _free_acceleration(t, q, v, p, ws):
    """a = M^-1 F into ws[2n] (M and its factor in ws[:2n]); False when M is not SPD."""
    n = N_DOF
    M = ws[:n]
    L = ws[n : 2 * n]
    a = ws[2 * n]
    if CONSTANT_MASS:  # M and its factor L set once per run (factor_constant_mass)
        if ws[2 * n + 1, 3] != 0.0:
            return False
    else:
        mass_matrix(q, p, M)
        if not ldl_factor_mass(M, n, L):
            return False
    forces(t, q, v, p, a)
    ldl_solve(L, n, a, a)
    return True


def acceleration(t, y, p, ws):
    """The acceleration into ws[2n] and, for the k closed contacts listed in ws[2n + 2], their
    forces lambda into ws[2n + 3] (:func:`rhs_workspace`); failures flagged in ws[2n + 1, 0]."""
    n = N_DOF
    q = y[:n]
    v = y[n:]
    control = ws[2 * n + 1]
    if not _free_acceleration(t, q, v, p, ws):
        control[0] = 1.0
        return
    k = int(control[1])
    if k > 0:
        contact_acceleration(t, q, v, k, p, ws)


def _contact_acceleration(t, q, v, k, p, ws):
    """The contact part of :func:`acceleration` (free acceleration ws[2n] and the factor of M
    set): the forces of the k > 0 closed contacts at time t into ws[2n + 3], added to the
    acceleration.
    A called function: the acceleration is inlined at every right-hand side of the loop, its
    contact part compiled once."""
    n = N_DOF
    m = N_CONSTRAINTS
    control = ws[2 * n + 1]
    L = ws[n : 2 * n]
    a = ws[2 * n]
    closed = ws[2 * n + 2]
    lam = ws[2 * n + 3]
    shifted = ws[2 * n + 4]
    r = 2 * n + 5
    G, Gp, Gm = ws[r : r + m], ws[r + m : r + 2 * m], ws[r + 2 * m : r + 3 * m]
    Y, W, WF = ws[r + 3 * m : r + 4 * m], ws[r + 4 * m : r + 5 * m], ws[r + 5 * m : r + 6 * m]
    b = ws[r + 6 * m]
    gap_gradient(t, q, p, G)
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(v[j]))
    d = 1.0
    if speed > 0.0:
        d = control[2] / speed
        for j in range(n):
            shifted[j] = q[j] + d * v[j]
        gap_gradient(t, shifted[:n], p, Gp)
        for j in range(n):
            shifted[j] = q[j] - d * v[j]
        gap_gradient(t, shifted[:n], p, Gm)
    if RHEONOMIC:  # the obstacle's drift c(t, q, v) in the shifted row (free now)
        gap_drift(t, q, v, p, shifted[:m])
    for c in range(k):
        i = int(closed[c])
        s = 0.0
        for j in range(n):
            Y[c, j] = G[i, j]
            s += G[i, j] * a[j]
            if speed > 0.0:
                s += (Gp[i, j] - Gm[i, j]) * v[j] / (2.0 * d)
        if RHEONOMIC:
            s += shifted[i]
        ldl_solve(L, n, Y[c], Y[c])
        b[c] = -s
    for c in range(k):
        i = int(closed[c])
        for c2 in range(k):
            s = 0.0
            for j in range(n):
                s += G[i, j] * Y[c2, j]
            W[c, c2] = s
    if not ldl_factor(W, k, WF):
        control[0] = 2.0
        return
    ldl_solve(WF, k, b, lam)
    for j in range(n):
        s = 0.0
        for c in range(k):
            s += Y[c, j] * lam[c]
        a[j] += s


def factor_constant_mass(q, p, ws):
    """For a problem declaring ``constant_mass``: M into ws[:n], its LDL^T factor into
    ws[n : 2n] and the flag ws[2n + 1, 3] (1 when M is not SPD)."""
    n = N_DOF
    if CONSTANT_MASS:
        mass_matrix(q, p, ws[:n])
        ws[2 * n + 1, 3] = 0.0 if ldl_factor_mass(ws[:n], n, ws[n : 2 * n]) else 1.0


def rhs(t, y, p, out, ws):
    """out = (v, a) with a from :func:`acceleration`; NaN on a failure (flagged in ``ws``)."""
    n = N_DOF
    acceleration(t, y, p, ws)
    if ws[2 * n + 1, 0] != 0.0:
        for j in range(2 * n):
            out[j] = math.nan
        return
    a = ws[2 * n]
    for j in range(n):
        out[j] = y[n + j]
        out[n + j] = a[j]
