"""The restart at an event: impact law, accumulation (Zeno) test, closing of contacts,
projections.

Impacts and several contacts: the active set is the event's constraint, the persistent contacts
and every constraint with g_i <= tol_i and normal velocity grad g_i . v < 0; all of them are
resolved together by Newton's law in the kinetic metric (the shared
:func:`impactbench.core.contact.impulse`; one log entry per approaching constraint). The contact
tolerance is ``tol_i = 10 (atol + rtol L) |grad g_i|``, ``L = max(1, |q0|_inf)``.

Accumulation (Zeno): after the impact, a near constraint is *at rest* when its normal velocity is
at most ``rest_velocity * sqrt(2 max(|a_i|, |b_i|) |grad g_i| L)``, b_i its free normal
acceleration and a_i the one under the forces of the persistent contacts that stay closed (a
bead falling onto a bead resting on the floor has a_i = -g although b_i = 0; a held contact's own
a_i is round-off). Impacts of one constraint closer in time than ``min_impact_interval (t_end -
t0)`` also count as an accumulation. The constraints at rest close if the acceleration LCP
``0 <= lambda _|_ W lambda + b >= 0`` (the shared :func:`impactbench.core.contact.solve_lcp_warm`)
gives them a force above 1e-12 of the free normal accelerations; a contact just released is
excluded.

Projections: q onto the closed contacts and every g_i < 0 (Gauss-Newton in the metric of M, until
|g_i| <= 8 eps max(L, |q|_inf) |grad g_i|), and onto every constraint that this pushes below that
tolerance, until none is (:func:`_project_admissible`); v onto the closed contacts (one solve in
the metric of M), so that every segment starts admissible; :func:`drifted` decides the
projections of a persistent contact after an accepted step.

Moving obstacles (``RHEONOMIC``, g(t, q)): every gap and gradient is evaluated at the time of
the restart; the normal velocity is the relative one, U_i = grad g_i . v + r_i with the
obstacle's rate r_i = dg_i/dt at fixed q, in the active set, the impact law (U+ = -e U-: the
right-hand side of its LCP gains (1 + e) r, :func:`_frictionless_impulse`), the logs, the rest
test and the velocity projection (onto U_C = 0); the free normal accelerations gain the
obstacle's drift c_i = d2g_i/dt2 + 2 (dG_i/dt) v (partial derivatives in t); the law's energy
record measures the relative normal kinetic energy (:func:`_record_relative_law_energy`). A
fixed obstacle adds none of these terms (no zero is added: the scleronomic arithmetic is unchanged).

Templates: the problem's kernels and sizes are free globals bound per engine; the run's settings,
outputs and work arrays are the named tuples of :mod:`impactbench.core.events.buffers`.
"""

from __future__ import annotations

import math

import numpy as np

from impactbench.core.contact import (
    CURVATURE_FD_STEP,
    LCP_SLOT_ACCELERATION,
    delassus,
    impulse,
    ldl_factor,
    ldl_factor_mass,
    ldl_solve,
    solve_lcp_warm,
)
from impactbench.core.friction import LAW_ENERGY_TOLERANCE
from impactbench.core.status_codes import (
    COUNTER_IMPACTS,
    COUNTER_LOGGED,
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
    log_impact,
)

from .buffers import (
    INFO_CONTACT_DURATION,
    INFO_CONTACT_PHASES,
    INFO_CONTACT_TIME,
    INFO_HEAD,
    INFO_LAW_GAINS,
    INFO_LAW_LARGEST_GAIN,
    INFO_REST_SPEED,
    INFO_ZENO_BEFORE,
    INFO_ZENO_SPACED,
    INFO_ZENO_TIME,
    INFO_ZENO_VELOCITY,
    STATUS_CONTACT_LCP_FAILED,
)
from .location import CLOSES, IMPACTING, SPACED, WAS_CLOSED

_EPS = float(np.finfo(float).eps)
_PROJECTION_ITERATIONS = 20
#: A contact closes when its force is above this fraction of the free normal accelerations.
CLOSING_THRESHOLD = 1e-12

# Names bound per engine (impactbench.core.events.engine).
mass_matrix = forces = gap = gap_gradient = gap_rate = gap_drift = views = None
N_DOF = N_CONSTRAINTS = 0
RHEONOMIC = False
impact_law = free_accelerations = closing = record_switch = project_closed = None
project_position = project_velocity = acceleration_lcp = name_failed_rows = None
project_admissible = _add_penetrated = None
impact_impulse = decide_contacts = friction_drifted = record_law_energy = None
record_relative_law_energy = None


def resolve(t, y, event, released, k_closed, run, out, work):
    """The restart at an event on the state ``y`` (updated in place): ``event`` the constraint
    whose gap event fired, ``released`` the contact whose force vanished (-1 if none),
    ``w.closed[:k_closed]`` the contacts closed before. Returns (status, contacts closed after,
    listed in ``w.closed``)."""
    status, impacting = impact_law(t, y, event, k_closed, run, out, work)
    if status == STATUS_OK:
        status = free_accelerations(t, y, impacting, run, work)
    if status == STATUS_OK:
        status = closing(t, y, released, run, out, work)
    if status != STATUS_OK:
        return status, k_closed
    record_switch(t, run, out, work)
    return project_closed(t, y, run, out, work)


def _impact_law(t, y, event, k_closed, run, out, work):
    """Active set and Newton's law on it at time t; logs the impacts (normal velocities U- and
    U+, relative to a moving obstacle). Returns (status, impacting)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    q, v, g, G, mark = y[:n], y[n:], w.g, w.G, w.mark
    gap(t, q, run.p, g)
    gap_gradient(t, q, run.p, G)
    if RHEONOMIC:
        gap_rate(t, q, run.p, w.r)
    total = 0.0
    for i in range(m):
        mark[i] = 0
        total += g[i]
        for j in range(n):
            total += G[i, j]
    if not np.isfinite(total):
        return STATUS_GAP_NOT_FINITE, False
    for c in range(k_closed):
        mark[w.closed[c]] = WAS_CLOSED
    k = 0
    impacting = False
    for i in range(m):
        norm = 0.0
        speed = 0.0
        for j in range(n):
            norm += G[i, j] * G[i, j]
            speed += G[i, j] * v[j]
        if RHEONOMIC:
            speed += w.r[i]
        w.tol[i] = run.tolerance * math.sqrt(norm)
        w.u[i] = speed
        w.u_after[i] = speed
        if (g[i] <= w.tol[i] and speed < 0.0) or mark[i] == WAS_CLOSED or i == event:
            w.rows[k] = i
            k += 1
            if speed < 0.0 and mark[i] != WAS_CLOSED:
                mark[i] = IMPACTING
                impacting = True
    if not impacting:
        return STATUS_OK, False
    mass_matrix(q, run.p, w.M)
    if not ldl_factor_mass(w.M, n, w.F):
        return STATUS_MASS_NOT_SPD, True
    used = impact_impulse(q, v, k, run, work)
    if used == -2:
        return STATUS_DEGENERATE_GRADIENT, True
    if used < 0:
        return STATUS_CONTACT_SOLVE_FAILED, True
    if not RHEONOMIC:
        record_law_energy(v, w.v_new, w.M, out.info)
    for j in range(n):
        v[j] = w.v_new[j]
    counters = out.counters
    for i in range(m):
        speed = 0.0
        for j in range(n):
            speed += G[i, j] * v[j]
        if RHEONOMIC:
            speed += w.r[i]
        w.u_after[i] = speed
        if mark[i] == IMPACTING:
            counters[COUNTER_IMPACTS] += 1
            if counters[COUNTER_LOGGED] < out.log_t.shape[0]:
                counters[COUNTER_LOGGED] = log_impact(
                    out.log_t, out.log_i, out.log_u, counters[COUNTER_LOGGED], t, i, w.u[i], speed
                )
            if t - w.last_impact[i] < run.impact_interval:
                mark[i] |= SPACED
            w.last_impact[i] = t
    if RHEONOMIC:
        record_relative_law_energy(k, out.info, work)
    return STATUS_OK, True


def _record_law_energy(v, v_new, M, info):  # noqa: N803
    """Count an impact whose law created kinetic energy in ``info``: the change
    dT = (v+ + v-)^T M (v+ - v-) / 2 of the impact from v- = ``v`` to v+ = ``v_new`` (M the
    mass matrix at the impact, (n, n)) above
    :data:`impactbench.core.friction.LAW_ENERGY_TOLERANCE` of T- + T+ (docs/friction.md:
    Newton's law, and the Newton-Coulomb law with e_N = e_T, never create energy)."""
    n = N_DOF
    change = 0.0
    scale = 0.0
    for j in range(n):
        for c in range(n):
            change += M[j, c] * (v_new[j] + v[j]) * (v_new[c] - v[c])
            scale += M[j, c] * (v_new[j] * v_new[c] + v[j] * v[c])
    change *= 0.5
    if change > LAW_ENERGY_TOLERANCE * 0.5 * scale:
        info[INFO_LAW_GAINS] += 1.0
        info[INFO_LAW_LARGEST_GAIN] = max(info[INFO_LAW_LARGEST_GAIN], change)


def _record_relative_law_energy(k, info, work):
    """:func:`_record_law_energy` for a moving obstacle, on the relative normal velocities:
    the change dT_rel = sum_a P_a (U+_a + U-_a) / 2 of the impulses P (``w.cws[4]``) on the
    active set ``w.rows[:k]`` (U = ``w.u``, ``w.u_after``) above LAW_ENERGY_TOLERANCE of
    sum_a P_a (|U+_a| + |U-_a|) / 2. With v+ - v- = M^-1 G^T P, the absolute change is
    dT = sum_a P_a (G_a v+ + G_a v-) / 2 = dT_rel - P . r: an obstacle moving into the body
    gives it kinetic energy (dT > 0), which the law did not create; dT_rel is the change in
    the frame of an obstacle in uniform translation, and Newton's law (U+ = -e U-,
    P (U+ + U-) / 2 = -P (1 - e) |U-| / 2) never makes it positive."""
    w = views(work)
    P = w.cws[4]
    change = 0.0
    scale = 0.0
    for a in range(k):
        i = w.rows[a]
        change += 0.5 * P[a] * (w.u_after[i] + w.u[i])
        scale += 0.5 * abs(P[a]) * (abs(w.u_after[i]) + abs(w.u[i]))
    if change > LAW_ENERGY_TOLERANCE * scale:
        info[INFO_LAW_GAINS] += 1.0
        info[INFO_LAW_LARGEST_GAIN] = max(info[INFO_LAW_LARGEST_GAIN], change)


def _frictionless_impulse(q, v, k, run, work):
    """Newton's law on the active set ``w.rows[:k]`` at (q, v) (G and the factor of M in
    ``w.G``, ``w.F``): the velocity after the impact into ``w.v_new``, the impulses P into
    ``w.cws[4]``; returns the solver's count (< 0 on a failure,
    :data:`impactbench.core.contact.DEGENERATE_GRADIENT` for a vanishing gradient).

    A moving obstacle: the law U+ = -e U- on the relative normal velocities U = G v + r
    (r = ``w.r``, the obstacle's rate at the impact, the same before and after it), i.e.
    0 <= P _|_ G_A v+ + e G_A v + (1 + e) r_A >= 0: :func:`impactbench.core.contact.impulse`
    with the offset o_i = (1 + e) r_i, held in ``w.x`` (scratch until
    :func:`_free_accelerations` writes it)."""
    w = views(work)
    if RHEONOMIC:
        for a in range(k):
            i = w.rows[a]
            w.x[i] = (1.0 + run.e) * w.r[i]
        return impulse(N_DOF, w.G, w.rows, k, v, v, run.e, w.F, w.cws, w.v_new, None, w.x)
    return impulse(N_DOF, w.G, w.rows, k, v, v, run.e, w.F, w.cws, w.v_new)


def _free_accelerations(t, y, impacting, run, work):
    """Free normal accelerations b_i = grad g_i . M^-1 F + kappa_i (+ c_i, a moving obstacle's
    drift) at the post-impact state into ``w.x`` and ``w.rest`` (M and its factor at q are the
    impact law's when there was one: it changes v only); a status."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    q, v, G, Gp, Gm = y[:n], y[n:], w.G, w.Gp, w.Gm
    if not impacting:
        mass_matrix(q, run.p, w.M)
        if not ldl_factor_mass(w.M, n, w.F):
            return STATUS_MASS_NOT_SPD
    a = w.ahead[n:]
    forces(t, q, v, run.p, a)
    ldl_solve(w.F, n, a, a)
    speed = 0.0
    d = 1.0
    for j in range(n):
        speed = max(speed, abs(v[j]))
    if speed > 0.0:
        d = CURVATURE_FD_STEP * run.length / speed
        for j in range(n):
            w.ahead[j] = q[j] + d * v[j]
        gap_gradient(t, w.ahead[:n], run.p, Gp)
        for j in range(n):
            w.ahead[j] = q[j] - d * v[j]
        gap_gradient(t, w.ahead[:n], run.p, Gm)
    if RHEONOMIC:
        gap_drift(t, q, v, run.p, w.r)
    for i in range(m):
        b_i = 0.0
        for j in range(n):
            b_i += G[i, j] * a[j]
            if speed > 0.0:
                b_i += (Gp[i, j] - Gm[i, j]) * v[j] / (2.0 * d)
        if RHEONOMIC:
            b_i += w.r[i]
        w.x[i] = b_i
        w.rest[i] = b_i
    return STATUS_OK


def _closing(t, y, released, run, out, work):
    """Rest speeds, the constraints at rest (or impacting too soon) and which of them close
    (flag CLOSES), by :func:`decide_contacts` at the state ``y`` at time t; a status."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    mark, rows, rest = w.mark, w.rows, w.rest
    k = 0
    for i in range(m):
        if (mark[i] & WAS_CLOSED) != 0 and i != released:
            rows[k] = i
            k += 1
    # Normal accelerations a_i = b_i + grad g_i . M^-1 G_H^T lambda_H under the forces of the
    # contacts H that stay closed, from the LCP over H.
    if k > 0:
        if not acceleration_lcp(rows, k, out.info, work):
            return STATUS_CONTACT_LCP_FAILED
        Y = w.cws[1]
        lam = w.cws[4]
        for i in range(m):
            s = 0.0
            for c in range(k):
                for j in range(n):
                    s += w.G[i, j] * Y[c, j] * lam[c]
            rest[i] += s
    k = 0
    for i in range(m):
        scale = max(abs(rest[i]), abs(w.x[i]))
        rest[i] = run.rest_velocity * math.sqrt(2.0 * scale * w.tol[i] / run.tolerance * run.length)
        slow = (w.g[i] <= w.tol[i] and abs(w.u_after[i]) <= rest[i]) or (mark[i] & SPACED) != 0
        if slow and i != released:
            rows[k] = i
            k += 1
    return decide_contacts(y, rows, k, released, run, out, work)


def _decide_contacts(y, rows, k, released, run, out, work):
    """Which of the constraints at rest ``rows[:k]`` close (flag CLOSES): those the
    acceleration LCP gives a force; a status. (``y`` and ``released`` serve the frictional
    decision, :func:`impactbench.core.events.coulomb.decide_contacts`.)"""
    w = views(work)
    mark = w.mark
    if k > 0:
        if not acceleration_lcp(rows, k, out.info, work):
            return STATUS_CONTACT_LCP_FAILED
        lam = w.cws[4]
        scale = 0.0
        for c in range(k):
            scale = max(scale, abs(w.x[rows[c]]))
        scale *= CLOSING_THRESHOLD
        for c in range(k):
            if lam[c] * w.W[c, c] > scale:
                mark[rows[c]] |= CLOSES
    return STATUS_OK


def _record_switch(t, run, out, work):
    """Bookkeeping in ``out.info``: the accumulation cut, the first contact, contact phases."""
    w = views(work)
    m = N_CONSTRAINTS
    mark, info = w.mark, out.info
    first = -1
    closes = False
    for i in range(m):
        if (mark[i] & CLOSES) != 0:
            closes = True
            if (mark[i] & IMPACTING) != 0 and first < 0:
                first = i
    if first >= 0 and run.e > 0.0 and math.isnan(info[INFO_ZENO_TIME]):
        info[INFO_ZENO_TIME] = t
        info[INFO_REST_SPEED] = w.rest[first]
        info[INFO_ZENO_VELOCITY] = w.u_after[first]
        info[INFO_ZENO_BEFORE] = w.u[first]
        spaced = (mark[first] & SPACED) != 0 and abs(w.u_after[first]) > w.rest[first]
        info[INFO_ZENO_SPACED] = 1.0 if spaced else 0.0
        for i in range(m):
            if (mark[i] & CLOSES) != 0 and (mark[i] & IMPACTING) != 0:
                info[INFO_HEAD + i] = 1.0
    if closes and math.isnan(info[INFO_CONTACT_TIME]):
        info[INFO_CONTACT_TIME] = t
    for i in range(m):
        was = (mark[i] & WAS_CLOSED) != 0
        now = (mark[i] & CLOSES) != 0
        if now and not was:
            info[INFO_HEAD + m + i] = t
            info[INFO_CONTACT_PHASES] += 1.0
        if was and not now:
            info[INFO_CONTACT_DURATION] += t - info[INFO_HEAD + m + i]
            info[INFO_HEAD + m + i] = math.nan


def _project_closed(t, y, run, out, work):
    """q onto the closed contacts and every g_i < 0, v onto the closed contacts, at time t;
    returns (status, number of closed contacts, listed in ``w.closed``)."""
    w = views(work)
    m = N_CONSTRAINTS
    k = 0
    k_closed = 0
    for i in range(m):
        if (w.mark[i] & CLOSES) != 0:
            w.closed[k_closed] = i
            k_closed += 1
        if (w.mark[i] & CLOSES) != 0 or w.g[i] < 0.0:
            w.rows[k] = i
            k += 1
    if k > 0:
        status, k = project_admissible(t, y, w.rows, k, run, work)
        if status != STATUS_OK:
            gap(t, y[:N_DOF], run.p, w.g)
            name_failed_rows(out.info, w.rows, k, w.g)
            return status, k_closed
    if k_closed > 0:
        return project_velocity(t, y, w.closed, k_closed, run, work), k_closed
    return STATUS_OK, k_closed


def _project_admissible(t, y, rows, k, run, work):
    """q = y[:n] onto g_rows(t, q) = 0 (:func:`_project_position`), ``rows`` grown by every other
    constraint that the projection leaves below -8 eps max(L, |q|_inf) |grad g_i| and q
    projected again, until there is none: moving q onto some contacts moves the bodies they
    push into others (a bead lifted onto the bead above it), and a gap left negative at a
    restart is below the level of its event, so the gap would never be located. Each pass adds
    a row, so at most m passes. Returns (status, rows projected onto, ``rows[:k]``)."""
    for _ in range(N_CONSTRAINTS):
        status = project_position(t, y, rows, k, run, work)
        if status != STATUS_OK:
            return status, k
        k_grown = _add_penetrated(y, rows, k, run, work)
        if k_grown == k:
            break
        k = k_grown
    return STATUS_OK, k


def _add_penetrated(y, rows, k, run, work):
    """``rows[:k]`` followed by every constraint with g_i < -8 eps max(L, |q|_inf) |grad g_i|
    at q = y[:n] (``w.g``, ``w.G`` hold g and its gradient there: the projection's last
    evaluation); the rows of ``rows[:k]`` are within that tolerance. Returns the new count."""
    w = views(work)
    scale = run.length
    for j in range(N_DOF):
        scale = max(scale, abs(y[j]))
    for i in range(N_CONSTRAINTS):
        norm = 0.0
        for j in range(N_DOF):
            norm += w.G[i, j] * w.G[i, j]
        if w.g[i] < -8.0 * _EPS * scale * math.sqrt(norm):
            rows[k] = i
            k += 1
    return k


def _project_position(t, y, rows, k, run, work):
    """q = y[:n] moved to g_rows(t, q) = 0 at fixed t in the metric of M (Gauss-Newton,
    tolerance 8 eps max(L, |q|_inf) |grad g_i|); returns a status."""
    w = views(work)
    n = N_DOF
    q, g, G, x = y[:n], w.g, w.G, w.x
    for _ in range(_PROJECTION_ITERATIONS):
        gap(t, q, run.p, g)
        gap_gradient(t, q, run.p, G)
        scale = run.length
        for j in range(n):
            scale = max(scale, abs(q[j]))
        done = True
        for a in range(k):
            i = rows[a]
            norm = 0.0
            for j in range(n):
                norm += G[i, j] * G[i, j]
            if abs(g[i]) > 8.0 * _EPS * scale * math.sqrt(norm):
                done = False
        if done:
            return STATUS_OK
        mass_matrix(q, run.p, w.M)
        if not ldl_factor_mass(w.M, n, w.F):
            return STATUS_MASS_NOT_SPD
        delassus(G, rows, k, w.F, n, w.cws[1], w.W, w.cws[19])
        if not ldl_factor(w.W, k, w.WF):
            return STATUS_DEGENERATE_GRADIENT
        for a in range(k):
            x[a] = g[rows[a]]
        ldl_solve(w.WF, k, x, x)
        _subtract_reactions(q, w.cws[1], x, k)
    return STATUS_PROJECTION_NOT_CONVERGED


def _subtract_reactions(z, Y, x, k):
    """z -= Y[:k]^T x[:k]."""
    for j in range(N_DOF):
        s = 0.0
        for a in range(k):
            s += Y[a, j] * x[a]
        z[j] -= s


def _project_velocity(t, y, rows, k, run, work):
    """v = y[n:] moved to U_rows = G_rows v (+ r_rows, a moving obstacle) = 0 at time t in the
    metric of M; returns a status."""
    w = views(work)
    n = N_DOF
    q, v, G, x = y[:n], y[n:], w.G, w.x
    gap_gradient(t, q, run.p, G)
    if RHEONOMIC:
        gap_rate(t, q, run.p, w.r)
    mass_matrix(q, run.p, w.M)
    if not ldl_factor_mass(w.M, n, w.F):
        return STATUS_MASS_NOT_SPD
    delassus(G, rows, k, w.F, n, w.cws[1], w.W, w.cws[19])
    if not ldl_factor(w.W, k, w.WF):
        return STATUS_DEGENERATE_GRADIENT
    for a in range(k):
        s = 0.0
        for j in range(n):
            s += G[rows[a], j] * v[j]
        if RHEONOMIC:
            s += w.r[rows[a]]
        x[a] = s
    ldl_solve(w.WF, k, x, x)
    _subtract_reactions(v, w.cws[1], x, k)
    return STATUS_OK


def _name_failed_rows(info, rows, k, values):
    """Write ``values[rows[:k]]`` into the failure block of ``info``."""
    m = N_CONSTRAINTS
    for a in range(k):
        info[INFO_HEAD + 2 * m + rows[a]] = values[rows[a]]


def _acceleration_lcp(rows, k, info, work):
    """The acceleration LCP 0 <= lambda _|_ W lambda + b >= 0 on the constraints ``rows[:k]``
    (W = G_R M^-1 G_R^T from the factor ``w.F``, b = ``w.x[rows]``); lambda in ``w.cws[4]``,
    M^-1 G_R^T in ``w.cws[1]``. False (the rows named in ``info``) when the LCP fails."""
    w = views(work)
    b = w.cws[3]
    delassus(w.G, rows, k, w.F, N_DOF, w.cws[1], w.W, w.cws[19])
    for c in range(k):
        b[c] = w.x[rows[c]]
    if solve_lcp_warm(w.W, b, rows, k, w.cws[4], w.cws, LCP_SLOT_ACCELERATION) < 0:
        name_failed_rows(info, rows, k, w.x)
        return False
    return True


def drifted(t, y, k_closed, run, work):
    """Whether g_C or U_C = G_C v (+ r_C, a moving obstacle) at time t left the solver's error
    scale (atol + rtol L) |grad g|, (atol + rtol |v|_inf) |grad g|."""
    w = views(work)
    n = N_DOF
    gap(t, y[:n], run.p, w.g)
    gap_gradient(t, y[:n], run.p, w.G)
    if RHEONOMIC:
        gap_rate(t, y[:n], run.p, w.r)
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(y[n + j]))
    for c in range(k_closed):
        i = w.closed[c]
        norm = 0.0
        rate = 0.0
        for j in range(n):
            norm += w.G[i, j] * w.G[i, j]
            rate += w.G[i, j] * y[n + j]
        if RHEONOMIC:
            rate += w.r[i]
        norm = math.sqrt(norm)
        if abs(w.g[i]) > (run.atol + run.rtol * run.length) * norm:
            return True
        if abs(rate) > (run.atol + run.rtol * speed) * norm:
            return True
    return friction_drifted(y, k_closed, run, work)


def no_friction_drift(y, k_closed, run, work):
    """The drift of sticking contacts in a frictionless engine: none."""
    return False
