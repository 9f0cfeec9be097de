"""Planar Coulomb friction in the event loop: stick and slip between impacts, their transitions,
the Painleve situations, frictional impacts.

Each closed contact i (g_i = 0, G_i v = 0) carries a mode (Pfeiffer & Glocker, "Multibody
Dynamics with Unilateral Contacts", 1996): *sticking* (tangential velocity W_T,i v = 0, kept by a
tangential force lambda_T,i with |lambda_T,i| <= mu_i lambda_N,i), or *sliding* with the sign
s_i of its tangential velocity (lambda_T,i = -mu_i s_i lambda_N,i; s_i = 0 when mu_i = 0).
Between events the index-1 contact dynamics hold with these forces (:func:`acceleration`):

    M a = F + W_N^T lambda_N + W_T^T lambda_T,
    W_N,i a + (dW_N,i/dt) v = 0 (closed),   W_T,i a + (dW_T,i/dt) v = 0 (sticking),

a linear system in lambda_N and the sticking lambda_T, not symmetric where a contact slides
(solved by Gaussian elimination with partial pivoting). The events of a closed contact, beside
its lift-off (lambda_N,i reaching 0, as without friction), are the zero of its *friction event
value* (:func:`friction_value`): mu_i lambda_N,i - |lambda_T,i| while it sticks (stick -> slip)
and s_i W_T,i v while it slides (slip -> stick or reversal), located as the first sign change
from > 0 to <= 0 on the step's probes, then by Brent's method.

At every restart the contacts at rest are decided by the acceleration-level contact problem
(:func:`decide_contacts`): for each contact a state, open (lambda = 0, normal acceleration
>= 0), sliding with its sign (where |W_T,i v| exceeds the velocity tolerance), or, at zero
tangential velocity, stick (tangential acceleration 0, |lambda_T| <= mu lambda_N) or slip
forwards / backwards (lambda_T = -+ mu lambda_N, tangential acceleration >= 0 / <= 0); every
combination of states is solved (a linear system of order 2k) and checked against its
inequalities (relative 1e-12, :data:`impactbench.core.friction.FRICTION_TOLERANCE`), the first
feasible one taken (open before slip before stick: where two states give the same forces, at a
lift-off or on the boundary of the friction cone, the contact opens or slips; of feasible ones
with the same motion, the first whose index-1 system has a positive determinant, see
:func:`_solve_combinations`). This is Glocker's
LCP at acceleration level, solved by enumeration so that its solutions are *counted*: none, or
two with different forces, is a Painleve situation (e.g. a rod sliding on a rough floor with mu
above the critical value, where W_N M^-1 (W_N - mu s W_T)^T < 0), reported as the failure
:data:`impactbench.core.status_codes.STATUS_PAINLEVE_INCONSISTENT` or
:data:`~impactbench.core.status_codes.STATUS_PAINLEVE_INDETERMINATE` with the contacts and
their tangential velocities, never integrated through. The rows of the closed contacts must be
independent (at most :data:`~impactbench.core.friction.MAX_FRICTION_CONTACTS` contacts at rest
together).

Impacts take the velocity-level Newton-Coulomb law (:func:`impactbench.core.friction.
planar_friction`) on the active set of the frictionless law (:func:`impact_impulse`); sticking
contacts, and sliding ones at zero tangential velocity, keep W_T v = 0 through the velocity
projections (:func:`project_velocity`: the projection at the closing of contacts is then no
frictionless impulse that sets them sliding), sticking ones through the drift test too.

Templates: the problem's kernels (``tangent_gradient``, ``friction`` among them), its sizes and
the rows of :func:`impactbench.core.events.dynamics.friction_layout` (``F_T``, ...) are free
globals bound per engine.
"""

from __future__ import annotations

import math

from impactbench.core.contact import CURVATURE_FD_STEP, ldl_factor, ldl_factor_mass, ldl_solve
from impactbench.core.friction import FRICTION_TOLERANCE, MAX_FRICTION_CONTACTS, planar_friction
from impactbench.core.status_codes import (
    STATUS_DEGENERATE_GRADIENT,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PAINLEVE_INCONSISTENT,
    STATUS_PAINLEVE_INDETERMINATE,
)

from .buffers import INFO_FAILED_VALUE, STATUS_CONTACT_LCP_FAILED
from .dynamics import SUBINTERVALS
from .location import CLOSES, STICK_SLIP

#: The mode of a sticking contact (a sliding one's is its sign s in {-1, 0, 1}).
STICK = 2.0
#: Solutions of the contact problem whose accelerations differ by less than this (relative to
#: the largest) count as one (:func:`_different_motions`).
SAME_SOLUTION = 1e-9

# Names bound per engine (impactbench.core.events.engine).
mass_matrix = forces = gap = gap_gradient = tangent_gradient = friction = views = None
_free_acceleration = root = name_failed_rows = contact_acceleration = None
N_DOF = N_CONSTRAINTS = 0
F_T = F_TP = F_TM = F_MODE = F_MU = F_ET = F_LT = F_EV = F_B = F_FS = 0
F_YF = F_A = F_RY = F_RF = F_V = F_K = F_KV = F_YN = F_YT = 0


def gauss_solve(A, x, size):  # noqa: N803
    """Solve A z = x for the leading (size, size) block of ``A`` by Gaussian elimination with
    partial pivoting, in place (``x`` becomes z, ``A`` is overwritten); returns a number of the
    sign of det A (the determinant of A with each row divided by its largest entry), 0 if a row
    is zero or a pivot is below 1e-14 (a singular system).

    The rows are equilibrated first: a sliding contact's row (mu s, 1) and a normal row of
    order 1 differ in scale by mu, so that without it a pivot of order 1 / mu would be compared
    with the largest entry, mu, and a regular system read as singular for mu above ~1e7.
    """
    scale = 1.0
    for r in range(size):
        largest = 0.0
        for c in range(size):
            largest = max(largest, abs(A[r, c]))
        if not largest > 0.0:
            return 0.0
        for c in range(size):
            A[r, c] /= largest
        x[r] /= largest
    det = 1.0
    for c in range(size):
        best = c
        for r in range(c + 1, size):
            if abs(A[r, c]) > abs(A[best, c]):
                best = r
        if not abs(A[best, c]) > 1e-14 * scale:
            return 0.0
        det *= A[best, c] / scale
        if best != c:
            det = -det
            for j in range(size):
                A[c, j], A[best, j] = A[best, j], A[c, j]
            x[c], x[best] = x[best], x[c]
        for r in range(c + 1, size):
            factor = A[r, c] / A[c, c]
            if factor != 0.0:
                for j in range(c + 1, size):
                    A[r, j] -= factor * A[c, j]
                x[r] -= factor * x[c]
    for r in range(size - 1, -1, -1):
        s = x[r]
        for j in range(r + 1, size):
            s -= A[r, j] * x[j]
        x[r] = s / A[r, r]
    return det


def _tangent_rows(q, v, p, ws, d):
    """W_T at q into ws[F_T], mu and e_T into ws[F_MU], ws[F_ET]; when d > 0, W_T at q + d v
    and q - d v into ws[F_TP], ws[F_TM] (the curvature (dW_T/dt) v by central differences)."""
    n = N_DOF
    m = N_CONSTRAINTS
    tangent_gradient(q, p, ws[F_T : F_T + m])
    friction(q, p, ws[F_MU], ws[F_ET])
    if d > 0.0:
        shifted = ws[F_B]
        for j in range(n):
            shifted[j] = q[j] + d * v[j]
        tangent_gradient(shifted[:n], p, ws[F_TP : F_TP + m])
        for j in range(n):
            shifted[j] = q[j] - d * v[j]
        tangent_gradient(shifted[:n], p, ws[F_TM : F_TM + m])


def _tangent_rate(i, a, v, ws, d):
    """W_T,i a + (dW_T,i/dt) v (``d`` the difference step of :func:`_tangent_rows`, 0 when
    v = 0)."""
    s = 0.0
    for j in range(N_DOF):
        s += ws[F_T + i, j] * a[j]
        if d > 0.0:
            s += (ws[F_TP + i, j] - ws[F_TM + i, j]) * v[j] / (2.0 * d)
    return s


def _difference_step(v, length_step):
    """The central-difference step along v for the curvature terms (0 when v = 0)."""
    speed = 0.0
    for j in range(N_DOF):
        speed = max(speed, abs(v[j]))
    return length_step / speed if speed > 0.0 else 0.0


def acceleration(t, y, p, ws):
    """The acceleration into ws[2n] under the forces of the k closed contacts listed in
    ws[2n + 2] in their modes (ws[F_MODE]): lambda_N into ws[2n + 3], lambda_T into ws[F_LT],
    the friction event values into ws[F_EV] (per closed contact); failures flagged in
    ws[2n + 1, 0] (:func:`impactbench.core.events.dynamics.acceleration`, with friction), 3 when
    a contact slides with friction and the system's determinant is not positive: a Painleve
    point (the determinant is positive for mu = 0, where the system is the Delassus matrix, and
    vanishes where the forces grow without bound)."""
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
    set), for k > 0 closed contacts at time t; a called function, compiled once (see
    :func:`impactbench.core.events.dynamics._contact_acceleration`)."""
    n = N_DOF
    m = N_CONSTRAINTS
    control = ws[2 * n + 1]
    shifted = ws[2 * n + 4]
    r0 = 2 * n + 5
    G, Gp, Gm = ws[r0 : r0 + m], ws[r0 + m : r0 + 2 * m], ws[r0 + 2 * m : r0 + 3 * m]
    gap_gradient(t, q, p, G)
    d = _difference_step(v, control[2])
    if d > 0.0:
        for j in range(n):
            shifted[j] = q[j] + d * v[j]
        gap_gradient(t, shifted[:n], p, Gp)
        for j in range(n):
            shifted[j] = q[j] - d * v[j]
        gap_gradient(t, shifted[:n], p, Gm)
    _tangent_rows(q, v, p, ws, d)
    size, sliding_friction = _contact_system(v, ws, k, d)
    det = gauss_solve(ws[F_A : F_A + 2 * m], ws[F_B], size)
    if det == 0.0:
        control[0] = 2.0
        return
    if det < 0.0 and sliding_friction:  # a Painleve point: the forces grow without bound
        control[0] = 3.0
        return
    _contact_forces(v, ws, k, size)


def _contact_system(v, ws, k, d):
    """The contact problem of :func:`acceleration` (after the free acceleration ws[2n], G and
    its shifted rows, :func:`_tangent_rows`): unknowns lambda_N of each closed contact (rows
    0..k-1), then lambda_T of each sticking one; Y = M^-1 W^T into ws[F_YF], the system matrix
    W Y into ws[F_A], minus the free normal (tangential) accelerations into ws[F_B]. Returns
    (the number of unknowns, whether a contact slides with friction)."""
    n = N_DOF
    m = N_CONSTRAINTS
    L = ws[n : 2 * n]
    a = ws[2 * n]
    closed = ws[2 * n + 2]
    r0 = 2 * n + 5
    G, Gp, Gm = ws[r0 : r0 + m], ws[r0 + m : r0 + 2 * m], ws[r0 + 2 * m : r0 + 3 * m]
    mode, mu, x = ws[F_MODE], ws[F_MU], ws[F_B]
    Y = ws[F_YF : F_YF + 2 * m]
    A = ws[F_A : F_A + 2 * m]
    size = k
    sliding_friction = False
    for c in range(k):
        i = int(closed[c])
        sliding = mode[i] != STICK
        if sliding and mu[i] * mode[i] != 0.0:
            sliding_friction = True
        s = 0.0
        for j in range(n):
            Y[c, j] = G[i, j]
            if sliding:
                Y[c, j] -= mu[i] * mode[i] * ws[F_T + i, j]
            s += G[i, j] * a[j]
            if d > 0.0:
                s += (Gp[i, j] - Gm[i, j]) * v[j] / (2.0 * d)
        ldl_solve(L, n, Y[c], Y[c])
        x[c] = -s
        if not sliding:
            for j in range(n):
                Y[size, j] = ws[F_T + i, j]
            ldl_solve(L, n, Y[size], Y[size])
            x[size] = -_tangent_rate(i, a, v, ws, d)
            size += 1
    row = k
    for c in range(k):
        i = int(closed[c])
        for r in range(size):
            s = 0.0
            for j in range(n):
                s += G[i, j] * Y[r, j]
            A[c, r] = s
        if mode[i] == STICK:
            for r in range(size):
                s = 0.0
                for j in range(n):
                    s += ws[F_T + i, j] * Y[r, j]
                A[row, r] = s
            row += 1
    return size, sliding_friction


def _contact_forces(v, ws, k, size):
    """From the solution ws[F_B] of :func:`_contact_system`: the acceleration ws[2n] += Y x,
    lambda_N into ws[2n + 3], lambda_T into ws[F_LT], the friction event values into ws[F_EV]."""
    n = N_DOF
    m = N_CONSTRAINTS
    a = ws[2 * n]
    closed = ws[2 * n + 2]
    lam = ws[2 * n + 3]
    mode, mu, lam_t, value, x = ws[F_MODE], ws[F_MU], ws[F_LT], ws[F_EV], ws[F_B]
    Y = ws[F_YF : F_YF + 2 * m]
    for j in range(n):
        s = 0.0
        for r in range(size):
            s += Y[r, j] * x[r]
        a[j] += s
    row = k
    for c in range(k):
        i = int(closed[c])
        lam[c] = x[c]
        if mode[i] == STICK:
            lam_t[c] = x[row]
            row += 1
            value[c] = mu[i] * lam[c] - abs(lam_t[c])
        else:
            lam_t[c] = -mu[i] * mode[i] * lam[c]
            u = 0.0
            for j in range(n):
                u += ws[F_T + i, j] * v[j]
            value[c] = mode[i] * u if mode[i] != 0.0 else 1.0


def friction_value(c, ws):
    """The friction event value of the closed contact c from the last :func:`acceleration`:
    mu lambda_N - |lambda_T| (sticking), s W_T v (sliding with the sign s), 1 (mu = 0)."""
    return ws[F_EV, c]


def probe_friction(k, k_closed, ws):
    """The friction event values of the closed contacts at probe k of the step."""
    for c in range(k_closed):
        ws[F_FS + k, c] = ws[F_EV, c]


def friction_event(t_old, h, k_closed, run, work):
    """The earliest stick-slip transition of the step: (time, m + the contact's constraint) at
    the first probe where a friction event value falls from > 0 to <= 0 (located by Brent's
    method); (inf, -1) if none."""
    w = views(work)
    ws = w.rws
    t_event = math.inf
    switched = -1
    for c in range(k_closed):
        for k in range(1, SUBINTERVALS + 1):
            if ws[F_FS + k - 1, c] > 0.0 and ws[F_FS + k, c] <= 0.0:
                t_hit = root(STICK_SLIP, c, 0.0, w.tau[k - 1], w.tau[k], t_old, h, run, work)
                if t_hit < t_event:
                    t_event = t_hit
                    switched = N_CONSTRAINTS + w.closed[c]
                break
    return t_event, switched


def friction_drifted(y, k_closed, run, work):
    """Whether the tangential velocity of a sticking contact left the solver's error scale
    (atol + rtol |v|_inf) |W_T|."""
    w = views(work)
    n = N_DOF
    ws = w.rws
    tangent_gradient(y[:n], run.p, ws[F_T : F_T + N_CONSTRAINTS])
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(y[n + j]))
    for c in range(k_closed):
        i = w.closed[c]
        if ws[F_MODE, i] == STICK:
            norm = 0.0
            rate = 0.0
            for j in range(n):
                norm += ws[F_T + i, j] * ws[F_T + i, j]
                rate += ws[F_T + i, j] * y[n + j]
            if abs(rate) > (run.atol + run.rtol * speed) * math.sqrt(norm):
                return True
    return False


def project_velocity(t, y, rows, k, run, work):
    """v = y[n:] moved to G_rows v = 0 and W_T,i v = 0 for the sticking contacts among
    ``rows[:k]``, and for those sliding with friction whose tangential velocity is at rest
    (:func:`_at_rest_tangentially`), in the metric of M; returns a status.

    The projection is the impulse W^T p of least kinetic energy onto these rows. Without the
    rows of the contacts at rest tangentially it would be frictionless (p_T = 0) and could set
    them sliding: at the accumulation of a rocking block's impacts the corners close with
    W_T v = 0 (the impact law left the new pivot sticking) while the block still turns, and the
    normal rows alone (G v = 0: no rotation) would leave the horizontal velocity x' = -c omega
    of the turning block as sliding, with the two corners in the modes slip +1 and -1 that the
    acceleration-level decision gives at rest (their friction forces cancel), so it would slide
    without deceleration. Keeping W_T v = 0 projects onto the rest of the contacts that the
    accumulation tends to. A tangential row dependent on the rows before it (a block resting
    flat: both corners' rows (1, 0, c)) is already kept by them and left out
    (:func:`_independent`)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    ws = w.rws
    q, v, G = y[:n], y[n:], w.G
    R, Y = ws[F_RY : F_RY + 2 * m], ws[F_YF : F_YF + 2 * m]
    W, WF, x = ws[F_A : F_A + 2 * m], ws[F_RF : F_RF + 2 * m], ws[F_B]
    gap_gradient(t, q, run.p, G)
    _tangent_rows(q, v, run.p, ws, 0.0)
    mass_matrix(q, run.p, w.M)
    if not ldl_factor_mass(w.M, n, w.F):
        return STATUS_MASS_NOT_SPD
    size = 0
    for a in range(k):
        i = rows[a]
        for j in range(n):
            R[size, j] = G[i, j]
        size = _add_row(R, Y, W, WF, size, w.F, False)
        if size < 0:
            return STATUS_DEGENERATE_GRADIENT
    for a in range(k):
        i = rows[a]
        if ws[F_MODE, i] == STICK or _at_rest_tangentially(i, v, run, ws):
            for j in range(n):
                R[size, j] = ws[F_T + i, j]
            size = _add_row(R, Y, W, WF, size, w.F, ws[F_MODE, i] != STICK)
            if size < 0:
                return STATUS_DEGENERATE_GRADIENT
    for r in range(size):
        s = 0.0
        for j in range(n):
            s += R[r, j] * v[j]
        x[r] = s
    ldl_solve(WF, size, x, x)
    for j in range(n):
        s = 0.0
        for r in range(size):
            s += Y[r, j] * x[r]
        v[j] -= s
    return STATUS_OK


#: A row whose pivot in the projection's matrix is below this fraction of its diagonal entry
#: depends on the rows before it (:func:`_add_row`).
DEPENDENT_ROW = 1e-10


def _at_rest_tangentially(i, v, run, ws):
    """Whether the closed contact i, with friction and not sticking, has a tangential velocity
    within the tolerance of a contact at rest of :func:`_rest_contacts`,
    10 (atol + rtol |v|_inf) |W_T,i| (W_T and mu from :func:`_tangent_rows`)."""
    if ws[F_MU, i] == 0.0:
        return False
    speed = 0.0
    u = 0.0
    norm = 0.0
    for j in range(N_DOF):
        speed = max(speed, abs(v[j]))
        u += ws[F_T + i, j] * v[j]
        norm += ws[F_T + i, j] * ws[F_T + i, j]
    return abs(u) <= 10.0 * (run.atol + run.rtol * speed) * math.sqrt(norm)


def _add_row(R, Y, W, WF, size, F, optional):  # noqa: N803
    """Row ``size`` of ``R`` added to the projection: Y[size] = M^-1 R[size] (``F`` the factor
    of M), the Gram matrix W = R M^-1 R^T grown by a row and a column and factored into ``WF``.
    Returns the new size; the old one if ``optional`` and the row's pivot is below
    :data:`DEPENDENT_ROW` of its diagonal entry (it depends on the rows before it), -1 if the
    factorisation fails otherwise."""
    n = N_DOF
    ldl_solve(F, n, R[size], Y[size])
    for r in range(size + 1):
        s = 0.0
        for j in range(n):
            s += R[r, j] * Y[size, j]
        W[r, size] = s
        W[size, r] = s
    if ldl_factor(W, size + 1, WF) and WF[size, size] * W[size, size] * DEPENDENT_ROW < 1.0:
        return size + 1
    if optional:
        if size > 0:
            ldl_factor(W, size, WF)
        return size
    return -1


def impact_impulse(q, v, k, run, work):
    """The planar Newton-Coulomb law (:func:`impactbench.core.friction.planar_friction`) on
    the active set ``w.rows[:k]`` at (q, v), with e_N = the restitution and each contact's
    e_T (G and the factor of M in ``w.G``, ``w.F``): the velocity after the impact into
    ``w.v_new``; returns the solver's count (< 0 on a failure, as
    :func:`impactbench.core.events.resolution._frictionless_impulse`)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    ws = w.rws
    G = w.G
    _tangent_rows(q, v, run.p, ws, 0.0)
    K = F_K
    ann, ant, att = ws[K : K + m], ws[K + m : K + 2 * m], ws[K + 2 * m : K + 3 * m]
    S00, S01 = ws[K + 3 * m : K + 4 * m], ws[K + 4 * m : K + 5 * m]
    S10, S11 = ws[K + 5 * m : K + 6 * m], ws[K + 6 * m : K + 7 * m]
    bn, bt, mu, pn, pt = ws[F_KV], ws[F_KV + 1], ws[F_KV + 2], ws[F_KV + 3], ws[F_KV + 4]
    YN, YT = ws[F_YN : F_YN + m], ws[F_YT : F_YT + m]
    if k > MAX_FRICTION_CONTACTS:
        return -1
    for a in range(k):
        i = w.rows[a]
        un = 0.0
        ut = 0.0
        for j in range(n):
            YN[a, j] = G[i, j]
            YT[a, j] = ws[F_T + i, j]
            un += G[i, j] * v[j]
            ut += ws[F_T + i, j] * v[j]
        ldl_solve(w.F, n, YN[a], YN[a])
        ldl_solve(w.F, n, YT[a], YT[a])
        bn[a] = (1.0 + run.e) * un
        bt[a] = (1.0 + ws[F_ET, i]) * ut
        mu[a] = ws[F_MU, i]
    for a in range(k):
        i = w.rows[a]
        for c in range(k):
            nn = 0.0
            nt = 0.0
            tt = 0.0
            for j in range(n):
                nn += G[i, j] * YN[c, j]
                nt += G[i, j] * YT[c, j]
                tt += ws[F_T + i, j] * YT[c, j]
            ann[a, c] = nn
            ant[a, c] = nt
            att[a, c] = tt
    used = planar_friction(k, ann, ant, att, bn, bt, mu, pn, pt, S00, S01, S10, S11)
    if used < 0:
        return used
    for j in range(n):
        s = v[j]
        for a in range(k):
            s += pn[a] * YN[a, j] + pt[a] * YT[a, j]
        w.v_new[j] = s
    return used


#: States of a contact in :func:`decide_contacts` (a sliding one's sign in a second row).
OPEN, SLIP, STUCK = 0.0, 1.0, 2.0


def _decode(code, k, kinds, state, sign):
    """The states of the k contacts in combination ``code`` (mixed radix: 4 states for a
    contact at rest, 2 for the others; ``kinds`` its sign when sliding, 2 at rest)."""
    for c in range(k):
        if kinds[c] == 2.0:
            st = code % 4
            code //= 4
            state[c] = OPEN if st == 0 else (STUCK if st == 3 else SLIP)
            sign[c] = 1.0 if st == 1 else -1.0
        else:
            st = code % 2
            code //= 2
            state[c] = OPEN if st == 0 else SLIP
            sign[c] = kinds[c]


def decide_contacts(y, rows, k, released, run, out, work):
    """The contacts at rest ``rows[:k]`` at the state ``y``, decided by the acceleration-level
    contact problem with Coulomb friction (module notes): each closes (flag CLOSES, its mode in
    ws[F_MODE]) or opens; a status, :data:`~impactbench.core.status_codes.
    STATUS_PAINLEVE_INCONSISTENT` (no solution) or ``STATUS_PAINLEVE_INDETERMINATE`` (several)
    with the contacts and their tangential velocities named in ``out.info`` and the number of
    solutions in its failed-value slot; ``STATUS_CONTACT_LCP_FAILED`` for more than
    :data:`impactbench.core.friction.MAX_FRICTION_CONTACTS` contacts at rest. The free
    accelerations are the restart's: M^-1 F in ``w.ahead[n:]``, the normal ones in ``w.x``, G
    and the factor of M in ``w.G``, ``w.F``."""
    w = views(work)
    if k == 0:
        return STATUS_OK
    if k > MAX_FRICTION_CONTACTS:
        name_failed_rows(out.info, rows, k, w.x)
        return STATUS_CONTACT_LCP_FAILED
    n = N_DOF
    ws = w.rws
    q, v = y[:n], y[n:]
    d = _difference_step(v, CURVATURE_FD_STEP * run.length)
    _tangent_rows(q, v, run.p, ws, d)
    scale, total = _rest_contacts(y, rows, k, released, run, work, d)
    _contact_couplings(rows, k, w.G, ws)
    first, solutions = _solve_combinations(k, total, FRICTION_TOLERANCE * scale, ws)
    if solutions != 1:
        name_failed_rows(out.info, rows, k, ws[F_V + 3])
        out.info[INFO_FAILED_VALUE] = solutions
        if solutions == 0:
            return STATUS_PAINLEVE_INCONSISTENT
        return STATUS_PAINLEVE_INDETERMINATE
    state, sign = ws[F_V + 1], ws[F_V + 2]
    _decode(first, k, ws[F_KV + 3], state, sign)
    for c in range(k):
        i = rows[c]
        if state[c] != OPEN:
            w.mark[i] |= CLOSES
            ws[F_MODE, i] = STICK if state[c] == STUCK else sign[c]
    return STATUS_OK


def _rest_contacts(y, rows, k, released, run, work, d):
    """The contacts at rest ``rows[:k]`` of :func:`decide_contacts`: M^-1 W_N^T, M^-1 W_T^T
    rows into ws[F_YN], ws[F_YT], the free normal and tangential accelerations into ws[F_KV],
    ws[F_KV + 1], mu into ws[F_KV + 2], each contact's kind into ws[F_KV + 3] (0 without
    friction, 2 at rest tangentially, else the sign of its sliding velocity), its tangential
    velocity into ws[F_V + 3]; returns (the largest free acceleration, the number of state
    combinations to try)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    ws = w.rws
    v, G, a = y[n:], w.G, w.ahead[n:]
    bn, bt, mu, kinds = ws[F_KV], ws[F_KV + 1], ws[F_KV + 2], ws[F_KV + 3]
    YN, YT = ws[F_YN : F_YN + m], ws[F_YT : F_YT + m]
    named = ws[F_V + 3]
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(v[j]))
    scale = 0.0
    total = 1
    for c in range(k):
        i = rows[c]
        u = 0.0
        norm = 0.0
        for j in range(n):
            YN[c, j] = G[i, j]
            YT[c, j] = ws[F_T + i, j]
            u += ws[F_T + i, j] * v[j]
            norm += ws[F_T + i, j] * ws[F_T + i, j]
        ldl_solve(w.F, n, YN[c], YN[c])
        ldl_solve(w.F, n, YT[c], YT[c])
        bn[c] = w.x[i]
        bt[c] = _tangent_rate(i, a, v, ws, d)
        scale = max(scale, abs(bn[c]), abs(bt[c]))
        mu[c] = ws[F_MU, i]
        named[i] = u
        tolerance = 10.0 * (run.atol + run.rtol * speed) * math.sqrt(norm)
        if mu[c] == 0.0:
            kinds[c] = 0.0
        elif released == m + i or abs(u) <= tolerance:
            kinds[c] = 2.0
            total *= 4
        else:
            kinds[c] = 1.0 if u > 0.0 else -1.0
        if kinds[c] != 2.0:
            total *= 2
    return scale, total


def _contact_couplings(rows, k, G, ws):
    """The Delassus blocks of the contacts at rest: W_N M^-1 W_N^T, W_N M^-1 W_T^T and
    W_T M^-1 W_T^T into the rows of ws[F_K] (from ws[F_YN], ws[F_YT])."""
    n = N_DOF
    m = N_CONSTRAINTS
    K = F_K
    ann, ant, att = ws[K : K + m], ws[K + m : K + 2 * m], ws[K + 2 * m : K + 3 * m]
    YN, YT = ws[F_YN : F_YN + m], ws[F_YT : F_YT + m]
    for c in range(k):
        i = rows[c]
        for c2 in range(k):
            nn = 0.0
            nt = 0.0
            tt = 0.0
            for j in range(n):
                nn += G[i, j] * YN[c2, j]
                nt += G[i, j] * YT[c2, j]
                tt += ws[F_T + i, j] * YT[c2, j]
            ann[c, c2] = nn
            ant[c, c2] = nt
            att[c, c2] = tt


def _solve_combinations(k, total, tol_a, ws):
    """Each combination of states (open, slipping, stuck) of the k contacts at rest in turn:
    its system solved and checked (``tol_a`` the tolerance on accelerations); the first feasible
    one's forces into ws[F_V]. Returns (the first feasible combination's code, -1 if none; the
    number of distinct feasible solutions, counted up to 2).

    Feasible combinations with the same motion (:func:`_different_motions`) are one solution;
    of these the first whose system has a positive determinant is taken when the first has
    not. The determinant of the combination's system has the sign of that of the index-1
    contact dynamics in its modes (:func:`acceleration`: an open contact's rows are unit rows,
    a slipping one's lambda_T = -mu s lambda_N is eliminated on a unit diagonal pivot), which
    is integrated only where it is positive. Dependent contact rows give such duplicates: a
    block resting flat with both corners at rest tangentially slips at one corner forwards and
    at the other backwards (tangential forces that cancel), the same motion for either
    assignment of the signs, but W_N M^-1 (W_N - mu s W_T)^T has a positive determinant for the
    signs (+1, -1) of the (left, right) corners and, for the default block, a negative one for
    (-1, +1)."""
    m = N_CONSTRAINTS
    kinds, best, state, sign = ws[F_KV + 3], ws[F_V], ws[F_V + 1], ws[F_V + 2]
    S, z = ws[F_A : F_A + 2 * m], ws[F_B]
    solutions = 0
    first = -1
    first_det = 0.0
    for code in range(total):
        _decode(code, k, kinds, state, sign)
        _combination_system(k, ws)
        det = gauss_solve(S, z, 2 * k)
        if det == 0.0:
            continue
        if not _feasible(k, tol_a, ws):
            continue
        if first >= 0 and _different_motions(k, z, best, ws):
            solutions += 1
            break
        if first < 0 or (first_det < 0.0 < det):
            first = code
            first_det = det
            solutions = 1
            for r in range(2 * k):
                best[r] = z[r]
    return first, solutions


def _different_motions(k, z, best, ws):
    """Whether the contact forces z and best (lambda_N then lambda_T of the k contacts at rest)
    move the system differently: their accelerations M^-1 (W_N^T lambda_N + W_T^T lambda_T)
    (from the rows M^-1 W_N^T, M^-1 W_T^T in ws[F_YN], ws[F_YT]) differ by more than
    :data:`SAME_SOLUTION` of the larger. Forces that differ with the same motion (dependent
    contact rows: a particle in a rough corner, more rows than degrees of freedom) are one
    solution: the motion is determined, only the split of the forces between the contacts is
    not, which is no Painleve situation."""
    n = N_DOF
    m = N_CONSTRAINTS
    YN, YT = ws[F_YN : F_YN + m], ws[F_YT : F_YT + m]
    difference = 0.0
    size = 0.0
    for j in range(n):
        a = 0.0
        b = 0.0
        for c in range(k):
            a += YN[c, j] * z[c] + YT[c, j] * z[k + c]
            b += YN[c, j] * best[c] + YT[c, j] * best[k + c]
        difference = max(difference, abs(a - b))
        size = max(size, abs(a), abs(b))
    return difference > SAME_SOLUTION * size


def _combination_system(k, ws):
    """The system of the combination of states in ws[F_V + 1] (signs ws[F_V + 2]) for the
    forces (lambda_N, lambda_T) into ws[F_A] (matrix) and ws[F_B] (right-hand side): an open
    contact's forces vanish, a closed one's normal acceleration does, a stuck one's tangential
    acceleration does, a slipping one's lambda_T = -mu s lambda_N."""
    m = N_CONSTRAINTS
    K = F_K
    ann, ant, att = ws[K : K + m], ws[K + m : K + 2 * m], ws[K + 2 * m : K + 3 * m]
    bn, bt, mu = ws[F_KV], ws[F_KV + 1], ws[F_KV + 2]
    state, sign = ws[F_V + 1], ws[F_V + 2]
    S, z = ws[F_A : F_A + 2 * m], ws[F_B]
    for r in range(2 * k):
        for c in range(2 * k):
            S[r, c] = 0.0
    for c in range(k):
        z[c] = 0.0
        z[k + c] = 0.0
        if state[c] == OPEN:
            S[c, c] = 1.0
            S[k + c, k + c] = 1.0
            continue
        for c2 in range(k):
            S[c, c2] = ann[c, c2]
            S[c, k + c2] = ant[c, c2]
        z[c] = -bn[c]
        if state[c] == STUCK:
            for c2 in range(k):
                S[k + c, c2] = ant[c2, c]
                S[k + c, k + c2] = att[c, c2]
            z[k + c] = -bt[c]
        else:  # lambda_T = -mu s lambda_N
            S[k + c, k + c] = 1.0
            S[k + c, c] = mu[c] * sign[c]


def _feasible(k, tol_a, ws):
    """Whether the solution ws[F_B] of :func:`_combination_system` is feasible: an open
    contact's normal acceleration >= 0, a closed one's lambda_N >= 0, a stuck one's force in the
    friction cone, a contact slipping from rest slipping in the direction of its acceleration
    (to ``tol_a`` on accelerations, a fraction of the largest force on forces)."""
    m = N_CONSTRAINTS
    K = F_K
    ann, ant, att = ws[K : K + m], ws[K + m : K + 2 * m], ws[K + 2 * m : K + 3 * m]
    bn, bt, mu, kinds = ws[F_KV], ws[F_KV + 1], ws[F_KV + 2], ws[F_KV + 3]
    state, sign = ws[F_V + 1], ws[F_V + 2]
    z = ws[F_B]
    largest = 0.0
    for r in range(2 * k):
        largest = max(largest, abs(z[r]))
    tol_f = FRICTION_TOLERANCE * largest
    feasible = True
    for c in range(k):
        a_n = bn[c]
        a_t = bt[c]
        for c2 in range(k):
            a_n += ann[c, c2] * z[c2] + ant[c, c2] * z[k + c2]
            a_t += ant[c2, c] * z[c2] + att[c, c2] * z[k + c2]
        if state[c] == OPEN:
            feasible = a_n >= -tol_a
        elif z[c] < -tol_f:
            feasible = False
        elif state[c] == STUCK:
            feasible = abs(z[k + c]) <= mu[c] * z[c] + tol_f
        elif kinds[c] == 2.0:  # slipping from rest in the direction of its acceleration
            feasible = sign[c] * a_t >= -tol_a
        if not feasible:
            break
    return feasible
