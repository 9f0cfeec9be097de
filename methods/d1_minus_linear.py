"""The D1MinusLinear scheme (Schindler and Acary, Math. Comput. Simul. 95 (2014) 180-199).

A time-discontinuous Galerkin scheme: the velocity is piecewise linear in time on each step and
may jump at the step's end t_{k+1} (velocity level, Newton's law), the position is continuous.
It is the half-explicit acceleration-level variant of Siconos' D1MinusLinearOSI
(type ``halfexplicit_acceleration_level``): contact forces of persistent contacts are computed at
acceleration level at both ends of the step, impacts at velocity level at its end. With q_k,
v_k (the right limit v(t_k+)) known, M_k = M(q_k), G_k = grad g(q_k):

    a_k+  = M_k^-1 (F(t_k, q_k, v_k) + G_k^T lambda_k+),
    v_k1  = v_k + h a_k+,                        (the velocity at t_{k+1}- on the free path)
    q_{k+1} = q_k + (h/2) (v_k + v_k1),
    a_{k+1}- = M_{k+1}^-1 (F(t_{k+1}, q_{k+1}, v_k1) + G_{k+1}^T lambda_{k+1}-),
    v_free = v_k + (h/2) (a_k+ + a_{k+1}-),      (the left limit v(t_{k+1}-))
    v_{k+1} = v_free + M_{k+1}^-1 G_{k+1}^T P,
    0 <= P_i  _|_  G_{k+1,i} v_{k+1} + e_i G_{k+1,i} v_free >= 0      on I_1.

Index sets (of constraints i; DESIGN notation: g the gaps, G their gradients, U = G v):

* I_1 = {i : g_i(q_{k+1}) <= 0}: closed at the end of the step; the velocity-level problem
  (the impulses P) is solved on I_1 at every step.
* I_3 = {i in I_1 : g_i(q_k) > 0}: closed during the step (an impact). When I_3 is not empty the
  contact forces lambda are left out at both ends (a_k+ and a_{k+1}- are M^-1 F only): the
  impulse P carries the whole contact reaction of the step, as in Siconos.
* I_2 = {i : g_i(q) <= 0 and G_i(q) w <= tau_i}: closed with vanishing normal velocity, taken at
  (q, w) = (q_k, v_k) for lambda_k+ (I_2+), and for lambda_{k+1}- (only when I_3 is empty) at
  (q_{k+1}, v_k1) within I_2+ (I_2- = I_2+ intersected with I_2 at (q_{k+1}, v_k1); Siconos does
  not intersect: a contact separating at t_k, G_i v_k > 0, whose predictor v_k1 turns back
  would take a force over the half step while it rises, and the energy would grow by
  O(h^2 |a|^2): measured, without the intersection, +1.9e-5 in one step of the ball after its
  impacts, e = 0.8, h = 2e-3). On I_2 the forces solve the
  acceleration-level LCP

      0 <= lambda  _|_  G M^-1 (F + G^T lambda) + (d/dt G) w >= 0,

  with (d/dt G_i) w = w^T grad^2 g_i w (zero for an affine gap; otherwise central differences
  of ``gap_gradient`` along w, step CURVATURE_FD_STEP max(1, |q|) / |w|). "Vanishing" is
  decided to round-off, tau_i = 64 eps sum_j |G_ij| (|w_j| + h |a_j|) with a = M^-1 F the
  free acceleration (Siconos: an absolute 1e-8): the normal velocity left by a plastic impulse
  is zero up to the rounding of the terms it cancelled, whose size is that of v and h a.

Newton's law, restitution per constraint (the second stated choice of this variant): e_i = e for
i in I_3 (an impact: the constraint closed during the step) and e_i = 0 for i in I_1 \\ I_3 (a
contact already closed at t_k: persistent contact, plastic) that approaches (e_i = 1 for one
that separates, below). With e_i = e on all of I_1 (Siconos: its right-hand side is
(1 + e) G v_free for every i in I_1) a ball resting on the floor does not settle:
once v_k < h a/2 each step gives v_{k+1} = e (h a/2 - v_k) > 0, whose fixed
point e h a / (2 (1 + e)) is positive, so I_2 never holds at t_k and the ball sinks by
h^2 a / (2 (1 + e)) per step, linearly in time without bound (checked by running that rule: ball
e = 0.9, h = 1e-2, depth 0.31 at t = 20, 2.37 at t = 100, v_k at the fixed point 0.0232).
With the plastic rule the velocity of a persistent contact is set to zero, the contact enters
I_2 and stays at rest exactly: its depth is the O(h^2 a) reached when it settled and does not
grow (tests, to t = 1000).

A persistent contact (i in I_1 \\ I_3) that separates, u-_i = G_i v_free > 0, takes e_i = 1
(alone it takes no impulse whatever e_i). Each impulse changes the kinetic energy by
P_i (1 - e_i) u-_i / 2, a gain when P_i > 0 and u-_i > 0: a separating contact that the impulses
on the others push back. With e_i = 0 there (the plastic rule on the whole of I_1 \\ I_3) the
mixed law of a stack (e on the contact that just closed, 0 on its separating neighbour still
inside K) gains that much at every step and sends a growing wave up the stack
(measured, resting column of 50 beads with round-off gaps, e = 0.9, h = 1e-3:
+22 J, |v| = 1.65 m/s, beads moved by 0.14 m). Leaving such contacts out of the problem instead
removes the gain but lets the impulses drive them into K at any speed, to be stopped plastically
at the next step O(h |U|) deep (the falling column of four beads: depth 0.028 at h = 5e-3,
against 0.001 with e_i = 1). With e_i = 1 every term is <= 0, so the impulses never add energy.

Impact log: the normal velocities before and after are G v_free and G v_{k+1} at t_{k+1}, for
each i in I_1 with P_i > 0 (u+ = -e u- on I_3, u+ = 0 on the plastic contacts).

Orders and costs. In smooth phases with constant mass the scheme is velocity Verlet (q_{k+1} =
q_k + h v_k + h^2/2 a_k, v_{k+1} = v_k + h/2 (a_k + a_{k+1})) when F does not depend on v:
second order. Through impacts first order (the impulse acts at t_{k+1}; the position is not
corrected, so a contact closing during a step with normal velocity U ends it up to h |U| inside
K; with e > 0 it then leaves, with e = 0 it rests at that depth for all time: 2.1 mm for the
ball dropped from 1 m at h = 1e-3, U = -4.4).
Energy, for constant M and F and one affine constraint (w = G M^-1 G^T): free flight is
exact; an impact step changes E by -(1 - e^2) U_-^2 / (2 w) <= 0 (U_- = G v_free); a step of a
closed contact without forces is free flight followed by a plastic impulse, -U_-^2 / (2 w) <= 0
when it approaches; with the forces of I_2 at both ends the motion is exact on the tangent plane.
So E never increases, at any step (tests: ball and slanted wall, e = 0, 0.8, 1). With several
constraints the impulses never add energy (above); the resting column of beads is tested to
t = 100.

Against Siconos (4.4, D1MinusLinearOSI in TimeSteppingD1Minus; reference outputs and their
generator in tests/data/siconos/): the same numbers to round-off through the impacts of the
ball and of the pin in its hole (2.7e-15 and 6.7e-16), and the two stated differences in
persistent contact: Siconos' resting ball sinks at v_k = e h a / (2 (1 + e)) as computed above,
ours rests. On a curved sliding contact (the pin along the wall of its hole) nothing corrects
the position and both drift outwards linearly in time, Siconos 2.7x further (depth at t = 20,
h = 2e-3): the drift is the scheme's (the position-level constraint is never imposed), which
the projected schemes (MoreauJeanProjection, NonsmoothGeneralizedAlpha, PaoliSchatzman) do not
have. tests/test_d1_minus_linear.py checks all of this against the reference outputs.

Costs: two force evaluations per step (t_k and t_{k+1}: F^-_{k+1} is taken at v_k1, F^+_{k+1}
at v_{k+1}); the driver's force counter counts one per step. One mass factorisation per step for
a configuration-dependent M (M_{k+1} is kept for the next step), none for a constant one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from impactbench.core._jit import hot_kernel
from impactbench.core.contact import (
    CURVATURE_FD_STEP,
    DEGENERATE_GRADIENT,
    LCP_SLOT_ACCELERATION,
    LCP_SLOT_IMPULSE,
    add_reactions,
    all_finite,
    delassus,
    factor_mass,
    impulse_span,
    metric_row,
    solve_lcp_warm,
    solve_mass,
)
from impactbench.core.divergence import declared_stable_step
from impactbench.core.driver import (
    FIRST_SCHEME_ROW,
    IMPULSE,
    NEXT_Q,
    NEXT_V,
    NORMAL_AFTER,
    NORMAL_BEFORE,
    Scheme,
    make_loop,
)
from impactbench.core.mass import mass_bindings
from impactbench.core.problem import Problem, ProblemKernels
from impactbench.core.status_codes import (
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
)
from impactbench.core.timestepping import TimeStepping

#: Factor of the round-off tolerance tau_i of a vanishing normal velocity (module docstring).
VANISHING_FACTOR = 64.0 * float(np.finfo(float).eps)

# Names bound per problem by impactbench.core.driver.make_loop.
mass_matrix = forces = gap = gap_gradient = matrix_rows = None
CONSTANT_MASS = AFFINE_GAP = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = MASS_ROWS = 0

# The scheme's rows of the driver's buffer X (impactbench.core.driver): vectors of length n or m,
# then the matrices M_{k+1}, the factors of M_k and M_{k+1}, G and the gradients at the shifted
# points of the curvature differences.
(
    _Q, _V, _F, _A_FREE, _A_LEFT, _V1, _Q1, _A_RIGHT_FREE, _A_RIGHT, _V_FREE, _V_NEXT, _SHIFT,
    _GAP, _GAP_NEXT, _CURVATURE, _HELD,
) = range(FIRST_SCHEME_ROW, FIRST_SCHEME_ROW + 16)  # fmt: skip
_MATRICES = FIRST_SCHEME_ROW + 16


def _rows(n: int, m: int, mass_rows: int) -> int:
    return 16 + 3 * mass_rows + 3 * m


@hot_kernel
def complementarity_update(n, G, rows, k, x_free, L, ws, x_out, slot):  # noqa: N803
    """x_out = x_free + M^-1 G_A^T P with 0 <= P _|_ W P + b >= 0 on A = ``rows[:k]``.

    ``b`` is read from ws[3][:k] (the caller writes it), W = G_A M^-1 G_A^T is formed by the
    shared :func:`impactbench.core.contact.delassus` (``L`` the factor of M) and the LCP solved by
    the shared :func:`impactbench.core.contact.solve_lcp_warm` from the last active set of
    ``slot`` (for k = 1 the closed form with :func:`impactbench.core.contact.metric_row`); P is
    left in ws[4][:k]. Used at acceleration level (x = a, b = G a_free + curvature, slot
    LCP_SLOT_ACCELERATION) and at velocity level (x = v, b = (1 + e_i) G v_free, slot
    LCP_SLOT_IMPULSE). Returns the LCP's count of bases, -1 on failure or
    :data:`impactbench.core.contact.DEGENERATE_GRADIENT` when an active gradient vanishes.
    """
    Y = ws[1]  # noqa: N806
    W = ws[2]  # noqa: N806
    P = ws[4]  # noqa: N806
    if k == 1:  # closed form, inlined (solve_lcp_warm is a separately compiled call)
        inv_w = metric_row(n, G, rows[0], L, Y)
        if not inv_w > 0.0:
            return DEGENERATE_GRADIENT
        P[0] = max(0.0, -ws[3][0] * inv_w)
        for j in range(n):
            x_out[j] = x_free[j] + P[0] * Y[0, j]
        return 1
    delassus(G, rows, k, L, n, Y, W, ws[19])
    for a in range(k):
        if not (W[a, a] > 0.0 and 1.0 / W[a, a] < np.inf):
            return DEGENERATE_GRADIENT
    used = solve_lcp_warm(W, ws[3], rows, k, P, ws, slot)
    if used < 0:
        return used
    add_reactions(n, k, Y, P, ws[19], x_free, x_out)
    return used


def _contact_forces(q, w, p, h, G, L, a_free, a_out, X, rows, closed, ws):  # noqa: N803
    """a_out = a_free + M^-1 G^T lambda on I_2 at (q, w) (module docstring), given G = grad g(q)
    and the closed constraints in rows[:closed] (overwritten by I_2). Returns (status, active,
    pivots)."""
    n = N_DOF
    m = N_CONSTRAINTS
    active = 0
    for c in range(closed):
        i = rows[c]
        u = 0.0
        scale = 0.0
        for j in range(n):
            u += G[i, j] * w[j]
            scale += abs(G[i, j]) * (abs(w[j]) + h * abs(a_free[j]))
        if u <= VANISHING_FACTOR * scale:
            rows[active] = i
            active += 1
    if active == 0:
        for j in range(n):
            a_out[j] = a_free[j]
        return STATUS_OK, 0, 0
    b = ws[3]
    curvature = X[_CURVATURE, :m]
    if not AFFINE_GAP:  # compile-time constant: (d/dt G) w by central differences along w
        size = 1.0
        speed = 0.0
        for j in range(n):
            size = max(size, abs(q[j]))
            speed = max(speed, abs(w[j]))
        shift = X[_SHIFT, :n]
        mr = MASS_ROWS
        plus = matrix_rows(X, _MATRICES + 3 * mr + m, _MATRICES + 3 * mr + 2 * m)
        minus = matrix_rows(X, _MATRICES + 3 * mr + 2 * m, _MATRICES + 3 * mr + 3 * m)
        if speed > 0.0:
            s = CURVATURE_FD_STEP * size / speed
            for j in range(n):
                shift[j] = q[j] + s * w[j]
            gap_gradient(shift, p, plus)
            for j in range(n):
                shift[j] = q[j] - s * w[j]
            gap_gradient(shift, p, minus)
            for a in range(active):
                i = rows[a]
                c = 0.0
                for j in range(n):
                    c += (plus[i, j] - minus[i, j]) * w[j]
                curvature[a] = c / (2.0 * s)
        else:
            for a in range(active):
                curvature[a] = 0.0
    for a in range(active):
        i = rows[a]
        s = 0.0
        for j in range(n):
            s += G[i, j] * a_free[j]
        if not AFFINE_GAP:
            s += curvature[a]
        b[a] = s
    used = complementarity_update(n, G, rows, active, a_free, L, ws, a_out, LCP_SLOT_ACCELERATION)
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT, active, 0
    if used < 0:
        return STATUS_CONTACT_SOLVE_FAILED, active, 0
    return STATUS_OK, active, used


def _closed_rows(g, q, p, G, rows):  # noqa: N803
    """List the constraints with g_i <= 0 in rows[:closed]; evaluate G = grad g(q) when there
    is one. Returns (status, closed)."""
    n = N_DOF
    m = N_CONSTRAINTS
    closed = 0
    for i in range(m):
        if g[i] <= 0.0:
            rows[closed] = i
            closed += 1
        elif not g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
            return STATUS_GAP_NOT_FINITE, 0
    if closed > 0:
        gap_gradient(q, p, G)
        if not all_finite(G, m, n):
            return STATUS_GAP_NOT_FINITE, 0
    return STATUS_OK, closed


def _start(t0, h, q0, v0, p, e, mp, X, rows, ws):  # noqa: N803
    """q, v from (q0, v0); M(q0) factored; g(q0)."""
    n = N_DOF
    mr = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + mr)  # noqa: N806
    L = matrix_rows(X, _MATRICES + mr, _MATRICES + 2 * mr)  # noqa: N806
    for j in range(n):
        X[_Q, j] = q0[j]
        X[_V, j] = v0[j]
    mass_matrix(q0, p, M)
    if not factor_mass(M, n, L):
        return STATUS_MASS_NOT_SPD, 0, 0
    gap(q0, p, X[_GAP, :N_CONSTRAINTS])
    for i in range(N_CONSTRAINTS):
        if not X[_GAP, i] <= np.inf:  # NaN
            return STATUS_GAP_NOT_FINITE, 0, 0
    return STATUS_OK, 0, 0


def _step(k, t, t_next, h, p, e, mp, X, Z, rows, ws):  # noqa: N803
    n = N_DOF
    m = N_CONSTRAINTS
    half_h = 0.5 * h
    q = X[_Q, :n]
    v = X[_V, :n]
    f = X[_F, :n]
    a_free = X[_A_FREE, :n]
    a_left = X[_A_LEFT, :n]
    v1 = X[_V1, :n]
    q1 = X[_Q1, :n]
    a_right_free = X[_A_RIGHT_FREE, :n]
    a_right = X[_A_RIGHT, :n]
    v_free = X[_V_FREE, :n]
    v_next = X[_V_NEXT, :n]
    g = X[_GAP, :m]
    g1 = X[_GAP_NEXT, :m]
    mr = MASS_ROWS
    M1 = matrix_rows(X, _MATRICES, _MATRICES + mr)  # noqa: N806
    L = matrix_rows(X, _MATRICES + mr, _MATRICES + 2 * mr)  # noqa: N806
    L1 = matrix_rows(X, _MATRICES + 2 * mr, _MATRICES + 3 * mr)  # noqa: N806
    G = matrix_rows(X, _MATRICES + 3 * mr, _MATRICES + 3 * mr + m)  # noqa: N806
    used = 0
    # left end: a_k+ with the contact forces on I_2 at (q_k, v_k)
    forces(t, q, v, p, f)
    solve_mass(L, n, f, a_free)
    status, closed = _closed_rows(g, q, p, G, rows)
    if status != STATUS_OK:
        return status, False, 0, 0
    for i in range(m):
        X[_HELD, i] = 0.0
    if closed > 0:
        status, active, pivots = _contact_forces(
            q, v, p, h, G, L, a_free, a_left, X, rows, closed, ws
        )
        if status != STATUS_OK:
            return status, False, 0, 0
        used += pivots
        for c in range(active):  # I_2 at t_k
            X[_HELD, rows[c]] = 1.0
    else:
        for j in range(n):
            a_left[j] = a_free[j]
    for j in range(n):
        v1[j] = v[j] + h * a_left[j]
        q1[j] = q[j] + half_h * (v[j] + v1[j])
    # right end: M_{k+1}, F at (t_{k+1}, q_{k+1}, v_k1), the index sets at q_{k+1}
    if not CONSTANT_MASS:
        mass_matrix(q1, p, M1)
        if not factor_mass(M1, n, L1):
            return STATUS_MASS_NOT_SPD, False, 0, 0
        right = L1
    else:
        right = L
    forces(t_next, q1, v1, p, f)
    solve_mass(right, n, f, a_right_free)
    gap(q1, p, g1)
    status, closed = _closed_rows(g1, q1, p, G, rows)
    if status != STATUS_OK:
        return status, False, 0, 0
    impact = False
    for c in range(closed):
        if g[rows[c]] > 0.0:
            impact = True
    if impact:  # I_3 not empty: the impulse carries the whole contact reaction of the step
        for j in range(n):
            v_free[j] = v[j] + half_h * (a_free[j] + a_right_free[j])
    else:
        held = 0  # I_1 restricted to I_2 at t_k: a contact separating at t_k takes no force
        for c in range(closed):
            if X[_HELD, rows[c]] > 0.0:
                rows[held] = rows[c]
                held += 1
        if held > 0:
            status, active, pivots = _contact_forces(
                q1, v1, p, h, G, right, a_right_free, a_right, X, rows, held, ws
            )
            if status != STATUS_OK:
                return status, False, 0, 0
            used += pivots
            closed = 0  # rows[:closed] = I_1 again (I_2 overwrote it)
            for i in range(m):
                if g1[i] <= 0.0:
                    rows[closed] = i
                    closed += 1
        else:
            for j in range(n):
                a_right[j] = a_right_free[j]
        for j in range(n):
            v_free[j] = v[j] + half_h * (a_left[j] + a_right[j])
    # velocity level on I_1: e on I_3 (impacts), 0 on the persistent contacts that approach, 1 on
    # those that separate (G_i v_free > 0: no energy gain, module docstring)
    if closed > 0:
        b = ws[3]
        for c in range(closed):
            i = rows[c]
            u = 0.0
            for j in range(n):
                u += G[i, j] * v_free[j]
            if g[i] > 0.0:
                b[c] = (1.0 + e) * u
            elif u > 0.0:
                b[c] = 2.0 * u
            else:
                b[c] = u
        pivots = complementarity_update(
            n, G, rows, closed, v_free, right, ws, v_next, LCP_SLOT_IMPULSE
        )
        if pivots == DEGENERATE_GRADIENT:
            return STATUS_DEGENERATE_GRADIENT, False, 0, 0
        if pivots < 0:
            return STATUS_CONTACT_SOLVE_FAILED, False, 0, 0
        used += pivots
        for i in range(m):
            X[IMPULSE, i] = 0.0
        for c in range(closed):
            i = rows[c]
            X[IMPULSE, i] = ws[4][c]
            before = 0.0
            after = 0.0
            # the spans of complementarity_update's delassus (all n columns for one row)
            first, last = (0, n - 1) if SINGLE_CONSTRAINT else impulse_span(ws, closed, c, n)
            for j in range(first, last + 1):
                before += G[i, j] * v_free[j]
                after += G[i, j] * v_next[j]
            X[NORMAL_BEFORE, i] = before
            X[NORMAL_AFTER, i] = after
    for j in range(n):
        Z[NEXT_Q, j] = q1[j]
        Z[NEXT_V, j] = v_next[j] if closed > 0 else v_free[j]
    return STATUS_OK, closed > 0, used, 2


def _commit(X, Z):  # noqa: N803
    n = N_DOF
    for j in range(n):
        X[_Q, j] = Z[NEXT_Q, j]
        X[_V, j] = Z[NEXT_V, j]
    for i in range(N_CONSTRAINTS):
        X[_GAP, i] = X[_GAP_NEXT, i]
    if not CONSTANT_MASS:  # M_{k+1} is the next step's M_k
        mr = MASS_ROWS
        for r in range(mr):
            for c in range(n):
                X[_MATRICES + mr + r, c] = X[_MATRICES + 2 * mr + r, c]


def _state(X, Z, q_out, v_out):  # noqa: N803
    for j in range(N_DOF):
        q_out[j] = X[_Q, j]
        v_out[j] = X[_V, j]


#: The D1MinusLinear scheme as the one time loop runs it (impactbench.core.driver).
D1_MINUS_LINEAR_SCHEME = Scheme(
    start=_start,
    step=_step,
    commit=_commit,
    sample=_state,
    current=_state,
    rows=_rows,
    helpers=(("_closed_rows", _closed_rows), ("_contact_forces", _contact_forces)),
)


class D1MinusLinear(TimeStepping):
    """D1MinusLinear time-discontinuous Galerkin scheme (Schindler and Acary 2014).

    Half-explicit at acceleration level: contact forces of persistent contacts by an
    acceleration-level LCP at both ends of the step, impacts by Newton's law at velocity level
    at its end (plastic for contacts already closed at its start). Second order in smooth phases
    (velocity Verlet for constant M and velocity-independent F), first order through impacts.

    Parameters
    ----------
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    See the module docstring for the equations, the index sets and the one stated departure
    from Siconos' D1MinusLinearOSI (plastic restitution on persistent contacts).
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        bindings = {
            **mass_bindings(kernels, n_dof, compile),
            "forces": kernels.forces,
            "gap": kernels.gap,
            "gap_gradient": kernels.gap_gradient,
            "CONSTANT_MASS": kernels.constant_mass,
            "AFFINE_GAP": kernels.affine_gap,
        }
        return make_loop(D1_MINUS_LINEAR_SCHEME, bindings, n_dof, n_constraints, compile)

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step`` (2 / omega_max): the smooth part is velocity Verlet,
        stable iff h omega_max <= 2 (:mod:`impactbench.core.divergence`)."""
        return declared_stable_step(problem)

    def _method_vector(self) -> np.ndarray:
        return np.zeros(1)
