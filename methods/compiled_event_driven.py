"""Compiled event-driven engine: the event loop of :mod:`event_driven` in numba.

``EventDriven(compiled=True)`` (the default) runs this engine for problems with compiled
kernels. It is one numba function compiled with ``_nrt=False`` (every buffer is allocated by the
Python wrapper :func:`simulate_compiled`; the same source runs as plain Python with
``compile=False``), each step as the scipy path's ``_Run`` does it:

* the dynamics y = (q, v), y' = (v, a): in free flight a = M(q)^-1 F(t, q, v) (LDL^T of M from
  :mod:`impactbench.core.contact`), with the contacts C closed the index-1 contact dynamics
  M a = F + G_C^T lambda, W_C lambda = -(G_C M^-1 F + (dG_C/dt) v) (the Schur complement of
  the scipy path's KKT system; the curvature term by the same central difference of
  ``gap_gradient`` along v), one right-hand side reading C from its workspace
  (:func:`rhs_workspace`); stepped by the scipy-identical RK45 / DOP853 of
  :mod:`impactbench.core.compiled_rk` (same step-size control, initial step and dense output);
* event detection on every accepted step exactly as ``_gap_crossing`` and ``scan`` of the
  Python path: ``_SUBINTERVALS`` = 4 sub-intervals, sign changes of g_i - level, interior
  minima of g_i (rate dg_i/dt = grad g_i . v changing sign) so that a grazing contact or a gap
  that closes and reopens inside one step is found, re-arming of disarmed gaps at the first
  point (or interior maximum) with g > 0; for a closed contact, lift-off at the first
  sub-interval end where lambda_i <= 0, located as the root of lambda_i on the dense output;
* root location by Brent's method (a port of scipy's ``brentq``, same tolerances
  ``xtol = 4 eps max(|a|, |b|)``, ``rtol = 4 eps``) on the dense output;
* the restart (``resolve``): Newton's law in the kinetic metric on the active set (event
  constraint, closed contacts and every near constraint approaching) through the shared
  :func:`impactbench.core.contact.impulse`; the accumulation (Zeno) test -- a near constraint
  at most at the rest speed ``rest_velocity sqrt(2 |a_i| |grad g_i| L)`` after the event (a_i
  its normal acceleration under the forces of the contacts that stay closed, from the LCP over
  them, as the scipy path), or
  impacting closer than ``min_impact_interval (t_end - t0)`` after its previous impact, is
  slow -- and the closing of the slow contacts with a positive force of the acceleration LCP
  ``0 <= lambda _|_ W lambda + b >= 0`` over all of them (the shared
  :func:`impactbench.core.contact.solve_lcp_warm`, from the last active set of this LCP;
  closing threshold 1e-12 as the scipy path; a released contact is excluded); projection of
  q onto the closed contacts and every g_i < 0 and of v onto the closed contacts
  (Gauss-Newton / one solve in the metric of M);
* drift: after an accepted step in contact, q and v are projected when |g_C| or |G_C v|
  exceed (atol + rtol L) |grad g|, (atol + rtol |v|_inf) |grad g|, and the solver resumes with
  the last step size (``stats["projections"]``); at t_end the state is projected onto the
  closed contacts and checked admissible (g_i >= -2 tol_i);
* statuses and messages as the scipy path: ``ZENO_HANDLED`` with its accumulation message
  ("accumulation of impacts on constraint(s) [...] cut at t=... : rebound normal velocity ...
  below the rest speed ..." or "impacts closer than ..."), ``OK`` with "persistent contact from
  t=..." when a contact closes without an accumulation, ``FAILED`` with the scipy path's
  ``SimulationError`` text (contact LCP failed, projection did not converge, run ended inside
  the obstacle, events repeat without progress, non-finite gap or gradient on a step's probes
  or at a restart, ...), the samples up to the failure and the impacts logged up to it (those
  of the event it stopped at included when their law was applied);
  ``stats`` has the scipy path's keys (``zeno_time``, ``contact_time``, ``rest_speed``,
  ``contact_phases``, ``contact_duration``, ``projections``, thresholds) plus ``events``,
  ``t_stop``, ``state_stop``; output decimation, the impact log and the counters of
  :mod:`impactbench.core.status_codes`.

Verified (``tests/test_compiled_event_driven.py``): the bouncing ball e = 0.8 to T = 10 through
its accumulation point into persistent contact (62 impacts on the closed form to 1e-8, the cut
at the last of them within 1e-5 of t_inf, at rest q = v = 0 after it, the same impacts, cut
and final state as the scipy path within 10 rtol, compiled = plain Python) and up to 0.1
before t_inf (normal velocities), a ball at rest from t = 0, a shaken ball whose contact force
crosses zero (lift-off at the closed-form time to 1e-9, flight and landing on the closed form
to 1e-8, as the scipy path), two floors with a non-diagonal M falling together (two-row
impact LCPs, both contacts closed at one cut) against the scipy path
(same impact sequence, times within 10 rtol, message, phases, final state), a particle
sliding inside a circle (curved contact: curvature term and drift projections; plain Python,
every sample within the drift tolerance, on the pendulum's solution to 1e-8, final state as
the scipy path's within 1e-9, measured 2e-11), the slanted wall,
the double pendulum (tip wall and two contacts, T = 5.5: the same accepted steps as the
scipy path), a grazing crossing inside one step, output decimation.

Cost: ``benchmarks/compiled_event_driven.py`` measures the engine against the scipy path and
per force evaluation; the ``performance`` study reports it. How the engine is compiled
(:func:`make_engine`): the helpers are typed with the non-literal types of their arguments (a
counter set to 0 or a constant kind would otherwise compile the restart and the root search once
more per literal); the helpers of rare paths (root search, projections, the start of a segment
with its initial step, the acceleration LCP) are called functions compiled once instead of being
inlined at every call site; the helpers with one call site (the RK step and its attempt, the
dense-output preparation, the gap-crossing test, the drift test) are copied into the loop by
numba; the restart (``_resolve``) stays inlined. The sizes are compile-time constants (one engine
per problem class, sizes and pair): read from the arrays, LLVM vectorises and unrolls every loop
over n, which made the engine both slower to compile and slower to run.

Known differences from the scipy path: the closed-contact accelerations come from the Schur
complement instead of the KKT solve and free flight from LDL^T instead of LAPACK, so results agree
to round-off, not bit for bit; where the error estimate is itself round-off (the ball's constant
acceleration) the step sequences can differ (with the same impacts), and where a drift crosses its
tolerance by round-off the projection counts can (particle sliding in a circle: the final states
agree to round-off). A contact held closed through impacts of another constraint stays closed when
its post-impact normal velocity is below its rest speed, taken (in both engines) from the larger of
|a_i| (with the held contacts' forces) and |b_i| (without): a held contact's own a_i is round-off,
and with it alone the outcome depended on round-off (the engines then differed on the corner with
offset 0.5). ``force_evaluations`` counts right-hand sides and contact force evaluations of this
engine, not ``problem.forces`` calls.

Not in this engine: dense output of the run (the error metrics rerun the scipy path for it,
:func:`impactbench.analysis.metrics.with_dense_output`), problems without kernels (the scipy
path), time-dependent gaps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from impactbench.core import _checks, compiled_rk
from impactbench.core._jit import specialize
from impactbench.core.compiled_rk import (
    METHODS,
    RTOL_FLOOR,
    STEP_ACCEPTED,
    STEP_NOT_FINITE,
    RungeKuttaIntegrator,
    make_rk_integrator,
)
from impactbench.core.contact import (
    CURVATURE_FD_STEP,
    LCP_SLOT_ACCELERATION,
    WARM_START_ENTRY,
    delassus,
    impulse,
    ldl_factor,
    ldl_solve,
    make_workspace,
    solve_lcp_warm,
)
from impactbench.core.entry import DirectCall
from impactbench.core.problem import Problem
from impactbench.core.status_codes import (
    COUNTER_FORCE_EVALUATIONS,
    COUNTER_IMPACTS,
    COUNTER_LOGGED,
    COUNTER_SAMPLES,
    COUNTER_STATUS,
    COUNTER_STEPS,
    FAILURE_REASONS,
    N_COUNTERS,
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_NOT_FINITE,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
    log_impact,
)
from impactbench.core.trajectory import IMPACT_LOG_CAPACITY, ImpactLog, Status, Trajectory

_EPS = float(np.finfo(float).eps)
#: Sub-intervals per accepted step in the dense-output check (as the Python path).
_SUBINTERVALS = 4
#: Contact tolerance in units of the solver's error scale atol + rtol L (as the Python path).
_CONTACT_TOLERANCE_FACTOR = 10.0
_PROJECTION_ITERATIONS = 20
_BRENT_ITERATIONS = 100

# Statuses of this engine beyond those of impactbench.core.status_codes.
STATUS_STEP_TOO_SMALL = 20
STATUS_NO_PROGRESS = 22
STATUS_PENETRATION = 23
STATUS_OUTPUT_FULL = 24
STATUS_CONTACT_MATRIX_SINGULAR = 25
STATUS_CONTACT_LCP_FAILED = 26
#: Counter slots of the located events (slot 6) and of the solver restarts, the start included.
COUNTER_EVENTS = 6
COUNTER_SEGMENTS = 7

# Which function of the dense output a root search evaluates.
_GAP = 0
_RATE = 1
_FORCE = 2

#: A contact closes when its force is above this fraction of the free normal accelerations.
_CLOSING_THRESHOLD = 1e-12

# Flags per constraint in _resolve.
_WAS_CLOSED = 1
_IMPACTING = 2
_SPACED = 4
_CLOSES = 8

# Slots of ``info`` (float, 11 + 3 m): failure details, the accumulation cut, contact phases;
# then three blocks of m: constraints switched at the cut (1.0), start of each constraint's
# contact phase (nan when open), values of the constraints named by a failure (nan otherwise).
INFO_FAILED_CONSTRAINT = 0
INFO_FAILED_VALUE = 1
INFO_ZENO_TIME = 2
INFO_REST_SPEED = 3
INFO_ZENO_VELOCITY = 4
INFO_ZENO_BEFORE = 5
INFO_ZENO_SPACED = 6
INFO_CONTACT_TIME = 7
INFO_CONTACT_PHASES = 8
INFO_CONTACT_DURATION = 9
INFO_PROJECTIONS = 10
INFO_HEAD = 11

# Names bound per problem by make_engine.
mass_matrix = forces = gap = gap_gradient = None
CONSTANT_MASS = False
rk_initial_step = rk_step = rk_dense_prepare = rk_dense_evaluate = None
N_DOF = N_CONSTRAINTS = N_STAGES = 0


def rhs_workspace(n: int, m: int) -> np.ndarray:
    """Scratch of :func:`_acceleration` and :func:`_rhs`, shape (2n + 6m + 6, max(n, m, 4)).

    Rows: M (n), its LDL^T factor (n), the acceleration a, a control row (failure flag: 1 mass
    matrix not SPD, 2 singular Delassus matrix of the closed contacts; the number k of closed
    contacts; the curvature difference step ``CURVATURE_FD_STEP L``; for a constant M, factored
    once per run by :func:`_factor_constant_mass`, 1 when it is not SPD), the closed constraints
    (k indices), their forces lambda (k), a shifted q, then six blocks of m rows: G, G at
    q + d v, G at q - d v, Y = rows M^-1 grad g_C, the Delassus matrix W_C and its factor, and
    a last row for the right-hand side of W_C lambda.
    """
    return np.zeros((2 * n + 6 * m + 6, max(n, m, 4)))


def _acceleration(t, y, p, ws):
    """The acceleration into ws[2n] and, for the k closed contacts listed in ws[2n + 2], their
    forces lambda into ws[2n + 3] (index-1 contact dynamics, :func:`rhs_workspace`).

    M a = F + G_C^T lambda with W_C lambda = -(G_C M^-1 F + (dG_C/dt) v), W_C = G_C M^-1 G_C^T
    (the Python path's KKT system by its Schur complement); (dG/dt) v is the central difference
    of ``gap_gradient`` along v with the step ``CURVATURE_FD_STEP L / |v|_inf``.
    """
    n = N_DOF
    m = N_CONSTRAINTS
    q = y[:n]
    v = y[n:]
    M = ws[:n]  # noqa: N806
    L = ws[n : 2 * n]  # noqa: N806
    a = ws[2 * n]
    control = ws[2 * n + 1]
    if CONSTANT_MASS:  # M and its factor L set once per run (_factor_constant_mass)
        if control[3] != 0.0:
            control[0] = 1.0
            return
    else:
        mass_matrix(q, p, M)
        if not ldl_factor(M, n, L):
            control[0] = 1.0
            return
    forces(t, q, v, p, a)
    ldl_solve(L, n, a, a)
    k = int(control[1])
    if k == 0:
        return
    closed = ws[2 * n + 2]
    lam = ws[2 * n + 3]
    shifted = ws[2 * n + 4]
    r = 2 * n + 5
    G = ws[r : r + m]  # noqa: N806
    Gp = ws[r + m : r + 2 * m]  # noqa: N806
    Gm = ws[r + 2 * m : r + 3 * m]  # noqa: N806
    Y = ws[r + 3 * m : r + 4 * m]  # noqa: N806
    W = ws[r + 4 * m : r + 5 * m]  # noqa: N806
    WF = ws[r + 5 * m : r + 6 * m]  # noqa: N806
    b = ws[r + 6 * m]
    gap_gradient(q, p, G)
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(v[j]))
    d = 1.0
    if speed > 0.0:
        d = control[2] / speed
        for j in range(n):
            shifted[j] = q[j] + d * v[j]
        gap_gradient(shifted[:n], p, Gp)
        for j in range(n):
            shifted[j] = q[j] - d * v[j]
        gap_gradient(shifted[:n], p, Gm)
    for c in range(k):
        i = int(closed[c])
        s = 0.0
        for j in range(n):
            Y[c, j] = G[i, j]
            s += G[i, j] * a[j]
            if speed > 0.0:
                s += (Gp[i, j] - Gm[i, j]) * v[j] / (2.0 * d)
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


def _factor_constant_mass(q, p, ws):
    """For a problem declaring ``constant_mass``: M into ws[:n], its LDL^T factor into
    ws[n : 2n] (the same factor :func:`_acceleration` would compute at every evaluation) and
    the flag ws[2n + 1, 3] (1 when M is not SPD)."""
    n = N_DOF
    if CONSTANT_MASS:
        mass_matrix(q, p, ws[:n])
        ws[2 * n + 1, 3] = 0.0 if ldl_factor(ws[:n], n, ws[n : 2 * n]) else 1.0


def _rhs(t, y, p, out, ws):
    """out = (v, a) with a from :func:`_acceleration` (free flight when no contact is closed);
    NaN on a failure (flagged in ``ws``)."""
    n = N_DOF
    _acceleration(t, y, p, ws)
    if ws[2 * n + 1, 0] != 0.0:
        for j in range(2 * n):
            out[j] = math.nan
        return
    a = ws[2 * n]
    for j in range(n):
        out[j] = y[n + j]
        out[n + j] = a[j]


def _event_value(kind, i, level, s, t_old, h, y_old, dense, y, p, g, G, rws):  # noqa: N803
    """g_i(s) - level (kind _GAP), dg_i/dt(s) (kind _RATE) or the force of the i-th closed
    contact (kind _FORCE) on the step's dense output."""
    n = N_DOF
    rk_dense_evaluate(s, t_old, h, y_old, dense, y)
    if kind == _FORCE:
        _acceleration(s, y, p, rws)
        return rws[2 * n + 3, i]
    if kind == _GAP:
        gap(y[:n], p, g)
        return g[i] - level
    gap_gradient(y[:n], p, G)
    rate = 0.0
    for j in range(n):
        rate += G[i, j] * y[n + j]
    return rate


def _root(kind, i, level, a, b, t_old, h, y_old, dense, y, p, g, G, rws):  # noqa: N803
    """Root in [a, b] of :func:`_event_value` (the Python path's ``_root``): brentq when the
    signs bracket, else the endpoint of smaller magnitude.

    One call site of ``_event_value`` (inlined: one copy of the dense output and the kernels)
    evaluates a, b and then each iterate."""
    fa = fb = 0.0
    xtol = rtol = 0.0
    # scipy's brentq (scipy/optimize/Zeros/brentq.c).
    x_pre = x_cur = f_pre = f_cur = 0.0
    x_blk = f_blk = s_pre = s_cur = 0.0
    x = a
    for evaluation in range(_BRENT_ITERATIONS + 2):
        f = _event_value(kind, i, level, x, t_old, h, y_old, dense, y, p, g, G, rws)
        if evaluation == 0:
            fa = f
            x = b
            continue
        if evaluation == 1:
            fb = f
            if fa == 0.0:
                return a
            if fb == 0.0 or (fa > 0.0) == (fb > 0.0):
                return b if abs(fb) <= abs(fa) else a
            xtol = 4.0 * _EPS * max(abs(a), abs(b))
            rtol = 4.0 * _EPS
            x_pre, x_cur, f_pre, f_cur = a, b, fa, fb
        else:
            f_cur = f
        if evaluation == _BRENT_ITERATIONS + 1:
            break
        if f_pre != 0.0 and f_cur != 0.0 and ((f_pre < 0.0) != (f_cur < 0.0)):
            x_blk = x_pre
            f_blk = f_pre
            s_pre = x_cur - x_pre
            s_cur = s_pre
        if abs(f_blk) < abs(f_cur):
            x_pre = x_cur
            x_cur = x_blk
            x_blk = x_pre
            f_pre = f_cur
            f_cur = f_blk
            f_blk = f_pre
        delta = 0.5 * (xtol + rtol * abs(x_cur))
        s_bis = 0.5 * (x_blk - x_cur)
        if f_cur == 0.0 or abs(s_bis) < delta:
            return x_cur
        if abs(s_pre) > delta and abs(f_cur) < abs(f_pre):
            if x_pre == x_blk:
                s_try = -f_cur * (x_cur - x_pre) / (f_cur - f_pre)
            else:
                d_pre = (f_pre - f_cur) / (x_pre - x_cur)
                d_blk = (f_blk - f_cur) / (x_blk - x_cur)
                s_try = -f_cur * (f_blk * d_blk - f_pre * d_pre) / (d_blk * d_pre * (f_blk - f_pre))
            if 2.0 * abs(s_try) < min(abs(s_pre), 3.0 * abs(s_bis) - delta):
                s_pre = s_cur
                s_cur = s_try
            else:
                s_pre = s_bis
                s_cur = s_bis
        else:
            s_pre = s_bis
            s_cur = s_bis
        x_pre = x_cur
        f_pre = f_cur
        if abs(s_cur) > delta:
            x_cur += s_cur
        else:
            x_cur += delta if s_bis > 0.0 else -delta
        x = x_cur
    return x_cur


def _start_segment(t, y, f, first_step, t_end, max_step, rtol, atol, p, K, rws):  # noqa: N803
    """f = rhs(t, y) and the first step size: the RK pair's initial step after a restart
    (``first_step`` 0), else ``first_step``; returns (h_abs, right-hand sides evaluated)."""
    _rhs(t, y, p, f, rws)
    if first_step == 0.0:
        return rk_initial_step(t, y, f, t_end, max_step, rtol, atol, p, K, rws), 2
    return first_step, 1


def _gap_crossing(i, tau, gs, rs, armed, floor, start, t_old, h, y_old, dense, y, p, g, G, rws):  # noqa: N803, E501
    """The Python path's ``_gap_crossing`` for constraint ``i``: (t_hit or nan, armed after),
    with ``gs``, ``rs`` (k + 1, m) the gaps and rates at the sub-interval ends ``tau``."""
    k_max = tau.shape[0] - 1
    for k in range(k_max):
        if not armed and tau[k] > start and gs[k, i] > 0.0:
            armed = True
        lo = tau[k]
        hi = tau[k + 1]
        g_lo = gs[k, i]
        r_lo = rs[k, i]
        if not armed and gs[k + 1, i] <= 0.0 and r_lo > 0.0 > rs[k + 1, i]:
            t_max = _root(_RATE, i, 0.0, lo, hi, t_old, h, y_old, dense, y, p, g, G, rws)
            g_max = _event_value(_GAP, i, 0.0, t_max, t_old, h, y_old, dense, y, p, g, G, rws)
            if g_max > 0.0:
                armed = True
                lo = t_max
                g_lo = g_max
                r_lo = 0.0
        level = 0.0 if armed else floor
        if g_lo > level >= gs[k + 1, i]:
            return _root(_GAP, i, level, lo, hi, t_old, h, y_old, dense, y, p, g, G, rws), armed
        if g_lo > level and gs[k + 1, i] > level and r_lo < 0.0 < rs[k + 1, i]:
            t_min = _root(_RATE, i, 0.0, lo, hi, t_old, h, y_old, dense, y, p, g, G, rws)
            if _event_value(_GAP, i, level, t_min, t_old, h, y_old, dense, y, p, g, G, rws) <= 0.0:
                t_hit = _root(_GAP, i, level, lo, t_min, t_old, h, y_old, dense, y, p, g, G, rws)
                return t_hit, armed
    if not armed and tau[k_max] > start and gs[k_max, i] > 0.0:
        armed = True
    return math.nan, armed


def _add_sample(out_t, out_q, out_v, samples, t, y):
    """Append (t, y) unless it repeats the last sample; returns the count (-1 when full)."""
    n = N_DOF
    if samples > 0 and out_t[samples - 1] == t:
        same = True
        for j in range(n):
            if out_q[samples - 1, j] != y[j] or out_v[samples - 1, j] != y[n + j]:
                same = False
        if same:
            return samples
    if samples == out_t.shape[0]:
        return -1
    out_t[samples] = t
    for j in range(n):
        out_q[samples, j] = y[j]
        out_v[samples, j] = y[n + j]
    return samples + 1


def _project_position(y, p, rows, k, length, g, G, M, F, Y, W, WF, x, cws):  # noqa: N803
    """q = y[:n] moved to g_rows(q) = 0 in the metric of M (Gauss-Newton, as the Python path's
    ``project_position``, tolerance 8 eps max(length, |q|_inf) |grad g_i|); returns a status."""
    n = N_DOF
    q = y[:n]
    for _ in range(_PROJECTION_ITERATIONS):
        gap(q, p, g)
        gap_gradient(q, p, G)
        scale = length
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
        mass_matrix(q, p, M)
        if not ldl_factor(M, n, F):
            return STATUS_MASS_NOT_SPD
        delassus(G, rows, k, F, n, Y, W, cws[19])
        if not ldl_factor(W, k, WF):
            return STATUS_DEGENERATE_GRADIENT
        for a in range(k):
            x[a] = g[rows[a]]
        ldl_solve(WF, k, x, x)
        for j in range(n):
            s = 0.0
            for a in range(k):
                s += Y[a, j] * x[a]
            q[j] -= s
    return STATUS_PROJECTION_NOT_CONVERGED


def _project_velocity(y, p, rows, k, G, M, F, Y, W, WF, x, span):  # noqa: N803
    """v = y[n:] moved to G_rows v = 0 in the metric of M (the Python path's
    ``project_velocity``); returns a status."""
    n = N_DOF
    q = y[:n]
    v = y[n:]
    gap_gradient(q, p, G)
    mass_matrix(q, p, M)
    if not ldl_factor(M, n, F):
        return STATUS_MASS_NOT_SPD
    delassus(G, rows, k, F, n, Y, W, span)
    if not ldl_factor(W, k, WF):
        return STATUS_DEGENERATE_GRADIENT
    for a in range(k):
        s = 0.0
        for j in range(n):
            s += G[rows[a], j] * v[j]
        x[a] = s
    ldl_solve(WF, k, x, x)
    for j in range(n):
        s = 0.0
        for a in range(k):
            s += Y[a, j] * x[a]
        v[j] -= s
    return STATUS_OK


def _name_failed_rows(info, rows, k, values):
    """Write ``values[rows[:k]]`` into the failure block of ``info``."""
    m = N_CONSTRAINTS
    for a in range(k):
        info[INFO_HEAD + 2 * m + rows[a]] = values[rows[a]]


def _acceleration_lcp(G, rows, k, F, x, W, cws, info):  # noqa: N803
    """The acceleration LCP 0 <= lambda _|_ W lambda + b >= 0 on the constraints ``rows[:k]``
    (W = G_R M^-1 G_R^T from the factor ``F``, b = x[rows]); lambda in ``cws[4]``, M^-1 G_R^T
    in ``cws[1]``. False (the rows named in ``info``) when the LCP fails."""
    b = cws[3]
    delassus(G, rows, k, F, N_DOF, cws[1], W, cws[19])
    for c in range(k):
        b[c] = x[rows[c]]
    if solve_lcp_warm(W, b, rows, k, cws[4], cws, LCP_SLOT_ACCELERATION) < 0:
        _name_failed_rows(info, rows, k, x)
        return False
    return True


def _resolve(
    t, y, event, released, closed, k_closed, mark, p, e, tolerance, length, rest_velocity,
    impact_interval, last_impact, log_t, log_i, log_u, logged, impacts, info, y_ahead,
    g, G, Gp, Gm, M, F, tol, u, u_after, rest, rows, v_new, W, WF, x, cws,
):  # fmt: skip
    """The Python path's ``resolve`` at an event: impact law on the active set, Zeno test,
    closing of contacts by the acceleration LCP, projections; updates ``y`` in place.

    ``event`` is the constraint whose gap event fired and ``released`` the contact whose force
    vanished (-1 if none); ``closed[:k_closed]`` the contacts closed before, overwritten by those
    closed after. Returns ``(status, logged, impacts, k_closed)``.
    """
    n = N_DOF
    m = N_CONSTRAINTS
    q = y[:n]
    v = y[n:]
    gap(q, p, g)
    gap_gradient(q, p, G)
    total = 0.0
    for i in range(m):
        total += g[i]
        for j in range(n):
            total += G[i, j]
    if not np.isfinite(total):
        return STATUS_GAP_NOT_FINITE, logged, impacts, k_closed
    for i in range(m):
        mark[i] = 0
    for c in range(k_closed):
        mark[closed[c]] = _WAS_CLOSED
    k = 0
    impacting = False
    for i in range(m):
        norm = 0.0
        speed = 0.0
        for j in range(n):
            norm += G[i, j] * G[i, j]
            speed += G[i, j] * v[j]
        tol[i] = tolerance * math.sqrt(norm)
        u[i] = speed
        u_after[i] = speed
        if (g[i] <= tol[i] and speed < 0.0) or mark[i] == _WAS_CLOSED or i == event:
            rows[k] = i
            k += 1
            if speed < 0.0 and mark[i] != _WAS_CLOSED:
                mark[i] = _IMPACTING
                impacting = True
    if impacting:
        mass_matrix(q, p, M)
        if not ldl_factor(M, n, F):
            return STATUS_MASS_NOT_SPD, logged, impacts, k_closed
        used = impulse(n, G, rows, k, v, v, e, F, cws, v_new)
        if used == -2:
            return STATUS_DEGENERATE_GRADIENT, logged, impacts, k_closed
        if used < 0:
            return STATUS_CONTACT_SOLVE_FAILED, logged, impacts, k_closed
        for j in range(n):
            v[j] = v_new[j]
        for i in range(m):
            speed = 0.0
            for j in range(n):
                speed += G[i, j] * v[j]
            u_after[i] = speed
        for i in range(m):
            if mark[i] == _IMPACTING:
                impacts += 1
                if logged < log_t.shape[0]:
                    logged = log_impact(log_t, log_i, log_u, logged, t, i, u[i], u_after[i])
                if t - last_impact[i] < impact_interval:
                    mark[i] |= _SPACED
                last_impact[i] = t
    # Free normal accelerations b_i = grad g_i . M^-1 F + (dG/dt) v at the post-impact state (M
    # and its factor F at q are those of the impact law when there was one: it changes v only).
    if not impacting:
        mass_matrix(q, p, M)
        if not ldl_factor(M, n, F):
            return STATUS_MASS_NOT_SPD, logged, impacts, k_closed
    a = y_ahead[n:]
    forces(t, q, v, p, a)
    ldl_solve(F, n, a, a)
    speed = 0.0
    d = 1.0
    for j in range(n):
        speed = max(speed, abs(v[j]))
    if speed > 0.0:
        d = CURVATURE_FD_STEP * length / speed
        for j in range(n):
            y_ahead[j] = q[j] + d * v[j]
        gap_gradient(y_ahead[:n], p, Gp)
        for j in range(n):
            y_ahead[j] = q[j] - d * v[j]
        gap_gradient(y_ahead[:n], p, Gm)
    k = 0
    for i in range(m):
        b_i = 0.0
        for j in range(n):
            b_i += G[i, j] * a[j]
            if speed > 0.0:
                b_i += (Gp[i, j] - Gm[i, j]) * v[j] / (2.0 * d)
        x[i] = b_i
        rest[i] = b_i
        if (mark[i] & _WAS_CLOSED) != 0 and i != released:
            rows[k] = i
            k += 1
    # Normal accelerations a_i = b_i + grad g_i . M^-1 G_H^T lambda_H under the forces of the
    # contacts H that stay closed (a bead falling onto a bead held by the floor: a_i = -g
    # although b_i = 0), from the LCP over H; the rest speed of the next flight uses them.
    if k > 0:
        if not _acceleration_lcp(G, rows, k, F, x, W, cws, info):
            return STATUS_CONTACT_LCP_FAILED, logged, impacts, k_closed
        Y = cws[1]  # noqa: N806
        lam = cws[4]
        for i in range(m):
            s = 0.0
            for c in range(k):
                for j in range(n):
                    s += G[i, j] * Y[c, j] * lam[c]
            rest[i] += s
    k = 0
    for i in range(m):
        # the larger of the accelerations with and without the held contacts' forces (a held
        # contact's own a_i is round-off; its b_i is what its next flight would see)
        scale = max(abs(rest[i]), abs(x[i]))
        rest[i] = rest_velocity * math.sqrt(2.0 * scale * tol[i] / tolerance * length)
        slow = (g[i] <= tol[i] and abs(u_after[i]) <= rest[i]) or (mark[i] & _SPACED) != 0
        if slow and i != released:
            rows[k] = i
            k += 1
    # Which slow contacts close: the acceleration LCP 0 <= lambda _|_ W lambda + b >= 0.
    if k > 0:
        if not _acceleration_lcp(G, rows, k, F, x, W, cws, info):
            return STATUS_CONTACT_LCP_FAILED, logged, impacts, k_closed
        lam = cws[4]
        scale = 0.0
        for c in range(k):
            scale = max(scale, abs(x[rows[c]]))
        scale *= _CLOSING_THRESHOLD
        for c in range(k):
            if lam[c] * W[c, c] > scale:
                mark[rows[c]] |= _CLOSES
    # Bookkeeping: the accumulation cut, the first contact, the contact phases.
    first = -1
    closes = False
    for i in range(m):
        if (mark[i] & _CLOSES) != 0:
            closes = True
            if (mark[i] & _IMPACTING) != 0 and first < 0:
                first = i
    if first >= 0 and e > 0.0 and math.isnan(info[INFO_ZENO_TIME]):
        info[INFO_ZENO_TIME] = t
        info[INFO_REST_SPEED] = rest[first]
        info[INFO_ZENO_VELOCITY] = u_after[first]
        info[INFO_ZENO_BEFORE] = u[first]
        spaced = (mark[first] & _SPACED) != 0 and abs(u_after[first]) > rest[first]
        info[INFO_ZENO_SPACED] = 1.0 if spaced else 0.0
        for i in range(m):
            if (mark[i] & _CLOSES) != 0 and (mark[i] & _IMPACTING) != 0:
                info[INFO_HEAD + i] = 1.0
    if closes and math.isnan(info[INFO_CONTACT_TIME]):
        info[INFO_CONTACT_TIME] = t
    for i in range(m):
        was = (mark[i] & _WAS_CLOSED) != 0
        now = (mark[i] & _CLOSES) != 0
        if now and not was:
            info[INFO_HEAD + m + i] = t
            info[INFO_CONTACT_PHASES] += 1.0
        if was and not now:
            info[INFO_CONTACT_DURATION] += t - info[INFO_HEAD + m + i]
            info[INFO_HEAD + m + i] = math.nan
    # Projections: q onto the closed contacts and every g_i < 0, v onto the closed contacts.
    k = 0
    k_closed = 0
    for i in range(m):
        if (mark[i] & _CLOSES) != 0:
            closed[k_closed] = i
            k_closed += 1
        if (mark[i] & _CLOSES) != 0 or g[i] < 0.0:
            rows[k] = i
            k += 1
    if k > 0:
        status = _project_position(y, p, rows, k, length, g, G, M, F, cws[1], W, WF, x, cws)
        if status != STATUS_OK:
            gap(q, p, g)
            _name_failed_rows(info, rows, k, g)
            return status, logged, impacts, k_closed
    if k_closed > 0:
        status = _project_velocity(y, p, closed, k_closed, G, M, F, cws[1], W, WF, x, cws[19])
        if status != STATUS_OK:
            return status, logged, impacts, k_closed
    return STATUS_OK, logged, impacts, k_closed


def _drifted(y, p, closed, k_closed, atol, rtol, length, g, G):  # noqa: N803
    """Whether g_C or G_C v left the solver's error scale (atol + rtol L) |grad g|,
    (atol + rtol |v|_inf) |grad g| (the Python path's ``drifted``)."""
    n = N_DOF
    gap(y[:n], p, g)
    gap_gradient(y[:n], p, G)
    speed = 0.0
    for j in range(n):
        speed = max(speed, abs(y[n + j]))
    for c in range(k_closed):
        i = closed[c]
        norm = 0.0
        rate = 0.0
        for j in range(n):
            norm += G[i, j] * G[i, j]
            rate += G[i, j] * y[n + j]
        norm = math.sqrt(norm)
        if abs(g[i]) > (atol + rtol * length) * norm or abs(rate) > (atol + rtol * speed) * norm:
            return True
    return False


def _event_loop(
    t0, t_end, q0, v0, p, e, rtol, atol, max_step, every,
    length, rest_velocity, impact_interval,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, state, info,
    K, Yb, dense, rws, tau, gs, rs, ls, armed, armed_next, floor, last_impact,
    closed, mark, g, G, Gp, Gm, M, F, tol, u, u_after, rest, rows, W, WF, x, cws,
):  # fmt: skip
    """The whole event-driven run (see the module docstring); writes the outputs and counters."""
    n = N_DOF
    m = N_CONSTRAINTS
    y = Yb[0]
    f = Yb[1]
    y_new = Yb[2]
    f_new = Yb[3]
    y_probe = Yb[4]
    y_ahead = Yb[5]
    v_new = Yb[6, :n]
    y_before = Yb[7]
    control = rws[2 * n + 1]
    tolerance = _CONTACT_TOLERANCE_FACTOR * (atol + rtol * length)
    control[2] = CURVATURE_FD_STEP * length
    for j in range(n):
        y[j] = q0[j]
        y[n + j] = v0[j]
    _factor_constant_mass(y[:n], p, rws)
    samples = _add_sample(out_t, out_q, out_v, 0, t0, y)
    logged = 0
    impacts = 0
    steps = 0
    evaluations = 0
    segments = 0
    events = 0
    stalled = 0
    k_closed = 0
    status = STATUS_OK
    t = t0
    event = -1
    released = -1
    first_step = 0.0  # > 0: resume after a drift projection with this step, no restart
    while True:
        if first_step == 0.0:
            # Restart: impact law at the event, contacts, re-arming.
            impacts_before = impacts
            for j in range(2 * n):
                y_before[j] = y[j]
            status, logged, impacts, k_closed = _resolve(
                t, y, event, released, closed, k_closed, mark, p, e, tolerance, length,
                rest_velocity, impact_interval, last_impact, log_t, log_i, log_u, logged,
                impacts, info, y_ahead, g, G, Gp, Gm, M, F, tol, u, u_after, rest, rows, v_new,
                W, WF, x, cws,
            )  # fmt: skip
            evaluations += 1
            if status != STATUS_OK:
                break
            if impacts > impacts_before:  # the pre-impact state, then the post-impact one
                samples = _add_sample(out_t, out_q, out_v, samples, t, y_before)
            if samples >= 0:
                samples = _add_sample(out_t, out_q, out_v, samples, t, y)
            if samples < 0:
                status = STATUS_OUTPUT_FULL
                break
            # g and G hold gap(q) and gap_gradient(q) at the restarted state: _resolve evaluates
            # them at its q and its projections again at the q they end at (v moves, q does not)
            for i in range(m):
                norm = 0.0
                for j in range(n):
                    norm += G[i, j] * G[i, j]
                tol[i] = tolerance * math.sqrt(norm)
                armed[i] = g[i] > tol[i]
                floor[i] = -tol[i]
            for c in range(k_closed):
                armed[closed[c]] = False
                rws[2 * n + 2, c] = closed[c]
            control[1] = k_closed
            start = t
            segments += 1
            if t >= t_end:
                break
        control[0] = 0.0
        h_abs, started = _start_segment(t, y, f, first_step, t_end, max_step, rtol, atol, p, K, rws)
        evaluations += started
        first_step = 0.0
        event = -1
        released = -1
        while t < t_end:
            step_status, t_new, h, h_abs, attempts = rk_step(
                t, y, f, h_abs, t_end, max_step, rtol, atol, p, K, y_new, f_new, rws
            )
            evaluations += N_STAGES * attempts
            if control[0] != 0.0:
                status = STATUS_MASS_NOT_SPD
                if control[0] == 2.0:
                    status = STATUS_CONTACT_MATRIX_SINGULAR
                break
            if step_status == STEP_NOT_FINITE:
                status = STATUS_NOT_FINITE
                break
            if step_status != STEP_ACCEPTED:
                status = STATUS_STEP_TOO_SMALL
                break
            check = 0.0
            for j in range(2 * n):
                check += y_new[j]
            if not np.isfinite(check):
                status = STATUS_NOT_FINITE
                break
            steps += 1
            evaluations += rk_dense_prepare(t, h, y, y_new, f_new, p, K, dense, rws)
            # Dense-output check on _SUBINTERVALS sub-intervals (np.linspace(t, t_new, 5)).
            for k in range(_SUBINTERVALS + 1):
                tau[k] = t + k * (h / _SUBINTERVALS)
            tau[_SUBINTERVALS] = t_new
            probes = 0.0  # non-finite when a gap or a rate is (as the Python path's checks)
            for k in range(_SUBINTERVALS + 1):
                rk_dense_evaluate(tau[k], t, h, y, dense, y_probe)
                gap(y_probe[:n], p, g)
                gap_gradient(y_probe[:n], p, G)
                for i in range(m):
                    gs[k, i] = g[i]
                    rate = 0.0
                    for j in range(n):
                        rate += G[i, j] * y_probe[n + j]
                    rs[k, i] = rate
                    probes += g[i] + rate
                if k_closed > 0:
                    _acceleration(tau[k], y_probe, p, rws)
                    evaluations += 1
                    for c in range(k_closed):
                        ls[k, c] = rws[2 * n + 3, c]
            if not np.isfinite(probes):
                status = STATUS_GAP_NOT_FINITE
                break
            t_event = math.inf
            for i in range(m):
                armed_next[i] = armed[i]
                if (mark[i] & _CLOSES) != 0:  # closed: no gap event
                    continue
                t_hit, armed_i = _gap_crossing(
                    i, tau, gs, rs, armed[i], floor[i], start, t, h, y, dense, y_probe, p, g, G,
                    rws,
                )  # fmt: skip
                armed_next[i] = armed_i
                if t_hit < t_event:  # nan compares False
                    t_event = t_hit
                    event = i
            # Lift-off: the first root of a contact force lambda_c.
            for c in range(k_closed):
                for k in range(_SUBINTERVALS + 1):
                    if ls[k, c] <= 0.0:
                        t_hit = tau[0]
                        if k > 0:
                            t_hit = _root(
                                _FORCE, c, 0.0, tau[k - 1], tau[k], t, h, y, dense, y_probe, p,
                                g, G, rws,
                            )  # fmt: skip
                        if t_hit < t_event:
                            t_event = t_hit
                            event = -1
                            released = closed[c]
                        break
            if control[0] != 0.0:
                status = STATUS_MASS_NOT_SPD
                if control[0] == 2.0:
                    status = STATUS_CONTACT_MATRIX_SINGULAR
                break
            if event >= 0 or released >= 0:
                events += 1
                stalled = stalled + 1 if t_event == t else 0
                if stalled > 2 * m + 2:
                    status = STATUS_NO_PROGRESS
                    break
                rk_dense_evaluate(t_event, t, h, y, dense, y_probe)
                for j in range(2 * n):
                    y[j] = y_probe[j]
                t = t_event
                break
            for i in range(m):
                armed[i] = armed_next[i]
            t_old = t
            t = t_new
            for j in range(2 * n):
                y[j] = y_new[j]
                f[j] = f_new[j]
            if t >= t_end:
                break
            if k_closed > 0 and _drifted(y, p, closed, k_closed, atol, rtol, length, g, G):
                status = _project_position(
                    y, p, closed, k_closed, length, g, G, M, F, cws[1], W, WF, x, cws
                )
                if status == STATUS_OK:
                    status = _project_velocity(
                        y, p, closed, k_closed, G, M, F, cws[1], W, WF, x, cws[19]
                    )
                if status != STATUS_OK:
                    gap(y[:n], p, g)
                    _name_failed_rows(info, closed, k_closed, g)
                    break
                info[INFO_PROJECTIONS] += 1.0
                first_step = min(t - t_old, t_end - t)
            if steps % every == 0:
                samples = _add_sample(out_t, out_q, out_v, samples, t, y)
                if samples < 0:
                    status = STATUS_OUTPUT_FULL
                    break
            if first_step > 0.0:
                break
        if status != STATUS_OK or (event < 0 and released < 0 and first_step == 0.0):
            break
    if status == STATUS_OK:
        # Final state: projected onto the closed contacts, admissible up to twice the contact
        # tolerance.
        for c in range(k_closed):
            i = closed[c]
            info[INFO_CONTACT_DURATION] += t - info[INFO_HEAD + m + i]
            info[INFO_HEAD + m + i] = math.nan
        if k_closed > 0:
            status = _project_position(
                y, p, closed, k_closed, length, g, G, M, F, cws[1], W, WF, x, cws
            )
            if status == STATUS_OK:
                status = _project_velocity(
                    y, p, closed, k_closed, G, M, F, cws[1], W, WF, x, cws[19]
                )
            elif status == STATUS_PROJECTION_NOT_CONVERGED:
                gap(y[:n], p, g)
                _name_failed_rows(info, closed, k_closed, g)
    if status == STATUS_OK:
        gap(y[:n], p, g)
        gap_gradient(y[:n], p, G)
        for i in range(m):
            norm = 0.0
            for j in range(n):
                norm += G[i, j] * G[i, j]
            if g[i] < -2.0 * tolerance * math.sqrt(norm):
                status = STATUS_PENETRATION
                info[INFO_FAILED_CONSTRAINT] = i
                info[INFO_FAILED_VALUE] = g[i]
        if status == STATUS_OK:
            samples = _add_sample(out_t, out_q, out_v, samples, t, y)
            if samples < 0:
                status = STATUS_OUTPUT_FULL
    counters[COUNTER_STATUS] = status
    counters[COUNTER_STEPS] = steps
    counters[COUNTER_FORCE_EVALUATIONS] = evaluations
    counters[COUNTER_IMPACTS] = impacts
    counters[COUNTER_LOGGED] = logged
    counters[COUNTER_SAMPLES] = max(samples, 0)
    counters[COUNTER_EVENTS] = events
    counters[COUNTER_SEGMENTS] = segments
    state[0] = t
    for j in range(2 * n):
        state[1 + j] = y[j]


_ENGINES: dict[tuple[Any, ...], tuple[Callable, RungeKuttaIntegrator]] = {}


def make_engine(
    problem: Problem, integrator: str, compile: bool = True
) -> tuple[Callable, RungeKuttaIntegrator]:
    """The compiled event loop for the kernels of ``problem`` and the RK pair ``integrator``.

    Returns
    -------
    loop : function
        :func:`_event_loop` with the problem's kernels, sizes and the RK pair bound (compiled
        with ``_nrt=False`` and cached on disk when ``compile``, else plain Python).
    rk : RungeKuttaIntegrator
        The pair bound to the free-flight right-hand side (its ``stage_buffer`` sizes ``K``).
    """
    kernels = problem.kernels()
    if kernels is None:
        raise ValueError(f"problem must have compiled kernels, got {problem.name!r} without")
    if integrator not in METHODS:
        raise ValueError(f"integrator must be one of {METHODS}, got {integrator!r}")
    n, m = int(problem.n_dof), int(problem.n_constraints)
    key = (kernels, n, m, integrator, compile)
    if key in _ENGINES:
        return _ENGINES[key]
    problem_bindings = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": bool(kernels.constant_mass),
        "N_DOF": n,
        "N_CONSTRAINTS": m,
    }
    acceleration = specialize(_acceleration, problem_bindings, compile, inline=True, helper=True)
    rhs = specialize(
        _rhs,
        {**problem_bindings, "_acceleration": acceleration},
        compile,
        inline=True,
        helper=True,
    )
    rk = make_rk_integrator(rhs, integrator, compile=compile)
    # The pair's templates bound here as helpers of this loop: those with one call site copied
    # into it by numba (never compiled on their own), the dense output inlined by LLVM.
    n_stages, _, pair = compiled_rk.pair_bindings(integrator)
    pair["rhs"] = rhs
    attempt = specialize(compiled_rk._attempt, pair, compile, ir_inline=True)
    rk_inlined = {
        "rk_initial_step": specialize(compiled_rk._initial_step, pair, compile, ir_inline=True),
        "rk_step": specialize(
            compiled_rk._step, {**pair, "attempt": attempt}, compile, ir_inline=True
        ),
        "rk_dense_prepare": specialize(compiled_rk._dense_prepare, pair, compile, ir_inline=True),
        "rk_dense_evaluate": specialize(
            compiled_rk._dense_evaluate, pair, compile, inline=True, helper=True
        ),
        "N_STAGES": n_stages,
    }
    bindings = {**problem_bindings, **rk_inlined}
    # The dense-output evaluation inlined into the root search (its one call site, in each
    # iteration); called by the rare re-arming tests of _gap_crossing.
    event_value = specialize(
        _event_value,
        {**bindings, "_acceleration": acceleration},
        compile,
        inline=True,
        helper=True,
    )
    root = specialize(_root, {**bindings, "_event_value": event_value}, compile, helper=True)
    helpers = {"_acceleration": acceleration, "_rhs": rhs, "_root": root}
    # (name, template, how): the helpers of every step inlined by LLVM (True) or, with one call
    # site, copied into their caller by numba ("ir"); those of rare paths (restarts, projections)
    # called (False), compiled once each.
    for name, template, inline in (
        ("_factor_constant_mass", _factor_constant_mass, False),
        ("_start_segment", _start_segment, False),
        ("_event_value", _event_value, False),
        ("_gap_crossing", _gap_crossing, "ir"),
        ("_add_sample", _add_sample, True),
        ("_name_failed_rows", _name_failed_rows, True),
        ("_project_position", _project_position, False),
        ("_project_velocity", _project_velocity, False),
        ("_acceleration_lcp", _acceleration_lcp, False),
        ("_resolve", _resolve, True),
        ("_drifted", _drifted, "ir"),
    ):
        helpers[name] = specialize(
            template,
            {**bindings, **helpers},
            compile,
            inline=inline is True,
            helper=True,
            ir_inline=inline == "ir",
        )
    loop = specialize(_event_loop, {**bindings, **helpers}, compile, nrt=False)
    _ENGINES[key] = (loop, rk)
    return loop, rk


def _failure_message(status: int, t: float, info: np.ndarray, m: int) -> str:
    """The Python path's SimulationError message for ``status``, with the time."""
    named = info[INFO_HEAD + 2 * m : INFO_HEAD + 3 * m]
    rows = np.flatnonzero(~np.isnan(named))
    reasons = {
        STATUS_STEP_TOO_SMALL: "the RK step size fell below the spacing of floats near t",
        STATUS_NO_PROGRESS: "events repeat without progress",
        STATUS_PENETRATION: (
            f"run ended inside the obstacle: gap {int(info[INFO_FAILED_CONSTRAINT])} = "
            f"{info[INFO_FAILED_VALUE]:.3g} < -2 x contact tolerance"
        ),
        STATUS_OUTPUT_FULL: "output buffer full",
        STATUS_CONTACT_MATRIX_SINGULAR: "singular contact (Delassus) matrix of the closed contacts",
        STATUS_CONTACT_LCP_FAILED: f"contact LCP failed on constraints {rows.tolist()}",
        **FAILURE_REASONS,
    }
    if status == STATUS_PROJECTION_NOT_CONVERGED:
        reasons[status] = (
            f"projection onto the contact manifold of constraints {rows.tolist()} did not "
            f"converge (gap {named[rows].tolist()})"
        )
    return f"{reasons.get(status, f'status {status}')} at t={t!r}"


def _zeno_message(info: np.ndarray, m: int, settings: dict[str, float]) -> str:
    """The Python path's ``describe_zeno`` message from the slots of ``info``."""
    rows = [i for i in range(m) if info[INFO_HEAD + i] == 1.0]
    if info[INFO_ZENO_SPACED]:
        why = (
            f"impacts closer than {settings['impact_interval']:.3g} "
            f"(min_impact_interval={settings['min_impact_interval']:g} x (t_end - t0))"
        )
    else:
        why = (
            f"rebound normal velocity {info[INFO_ZENO_VELOCITY]:.3g} below the rest speed "
            f"{info[INFO_REST_SPEED]:.3g} (rest_velocity={settings['rest_velocity']:g} x "
            f"sqrt(2 |g''| |grad g| L), L={settings['length']:g})"
        )
    return (
        f"accumulation of impacts on constraint(s) {rows} cut at "
        f"t={float(info[INFO_ZENO_TIME])!r} (impact normal velocity "
        f"{info[INFO_ZENO_BEFORE]:.3g}): {why}; switched to persistent contact"
    )


class _Buffers:
    """The arrays a run of the event loop writes (every argument after ``impact_interval``),
    allocated once and handed to later runs of the same sizes (:data:`_FREE_BUFFERS`).

    The arrays a fresh run needs initialised (zeros; NaN in some slots of ``info``, -inf in
    ``last_impact``; the contact workspace's warm-start memory) are views of three flat buffers
    (float64, int64, bool), so that :meth:`fresh` sets them with three operations; the output,
    the impact log and the rest of the contact workspace are written before they are read.
    """

    def __init__(self, rk: RungeKuttaIntegrator, n: int, m: int, capacity: int) -> None:
        # The same tuple of buffers as make_workspace (numba's boxing of its 20 arrays would
        # cost twice NumPy's allocation of them), its warm-start memory a view of the bool buffer
        workspace = list(getattr(make_workspace, "py_func", make_workspace)(n, m))
        s = _SUBINTERVALS + 1
        f, i, b = np.float64, np.int64, np.bool_
        zeroed = (
            ("counters", (N_COUNTERS,), i),
            ("info", (INFO_HEAD + 3 * m,), f),
            ("K", rk.stage_buffer(2 * n).shape, f),
            ("Yb", (8, 2 * n), f),
            ("dense", rk.dense_buffer(2 * n).shape, f),
            ("rws", rhs_workspace(n, m).shape, f),
            ("tau", (s,), f),
            ("gs", (s, m), f),
            ("rs", (s, m), f),
            ("ls", (s, m), f),
            ("armed", (m,), b),
            ("armed_next", (m,), b),
            ("floor", (m,), f),
            ("last_impact", (m,), f),
            ("closed", (m,), i),
            ("mark", (m,), i),
            ("g", (m,), f),
            ("G", (m, n), f),
            ("Gp", (m, n), f),
            ("Gm", (m, n), f),
            ("M", (n, n), f),
            ("F", (n, n), f),
            ("tol", (m,), f),
            ("u", (m,), f),
            ("u_after", (m,), f),
            ("rest", (m,), f),
            ("rows", (m,), i),
            ("W", (m, m), f),
            ("WF", (m, m), f),
            ("x", (m,), f),
            ("warm_start", workspace[WARM_START_ENTRY].shape, b),  # make_workspace's entry
        )
        sizes = {f: 0, i: 0, b: 0}
        for _, shape, dtype in zeroed:
            sizes[dtype] += math.prod(shape)
        flat = {dtype: np.zeros(size, dtype=dtype) for dtype, size in sizes.items()}
        self.flat = (flat[f], flat[i], flat[b])
        offsets = dict.fromkeys(sizes, 0)
        views = {}
        for name, shape, dtype in zeroed:
            start, offsets[dtype] = offsets[dtype], offsets[dtype] + math.prod(shape)
            views[name] = flat[dtype][start : offsets[dtype]].reshape(shape)
        info = views["info"]
        info[[INFO_ZENO_TIME, INFO_CONTACT_TIME]] = math.nan
        info[INFO_HEAD + m :] = math.nan
        views["last_impact"].fill(-math.inf)
        #: the float buffer as a fresh run needs it (zeros, and the NaN and -inf above)
        self.initial = self.flat[0].copy()
        workspace[WARM_START_ENTRY] = views["warm_start"]
        output = (
            np.empty(capacity), np.empty((capacity, n)), np.empty((capacity, n)),
            np.empty(IMPACT_LOG_CAPACITY), np.empty(IMPACT_LOG_CAPACITY, dtype=np.int64),
            np.empty((IMPACT_LOG_CAPACITY, 2)),
        )  # fmt: skip
        self.arrays = (
            *output, views["counters"], np.empty(1 + 2 * n), views["info"],
            *(views[name] for name, _, _ in zeroed[2:-1]), tuple(workspace),
        )  # fmt: skip

    def fresh(self) -> tuple[Any, ...]:
        """The arguments of the event loop after ``impact_interval``, as a new run needs them."""
        floats, integers, booleans = self.flat
        floats[:] = self.initial
        integers.fill(0)
        booleans.fill(False)
        return self.arrays


#: The event loops' calls without numba's dispatch (the arguments of :func:`simulate_compiled`
#: have fixed types: floats, ints, and arrays it copies or allocates).
_DIRECT_CALLS: dict[Callable, DirectCall] = {}

#: The buffers of finished runs by (Runge-Kutta pair, n, m, output capacity), taken by the next
#: run of those sizes (list.pop and list.append are atomic: concurrent runs take their own set).
_FREE_BUFFERS: dict[tuple[str, int, int, int], list[_Buffers]] = {}


def simulate_compiled(
    problem: Problem,
    t_end: float,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    integrator: str = "DOP853",
    output_every: int = 1,
    max_step: float = math.inf,
    rest_velocity: float = 1e-6,
    min_impact_interval: float = 1e-12,
    compile: bool = True,
    capacity: int = 4096,
) -> Trajectory:
    """Run the compiled event-driven engine from the problem's initial state to ``t_end``.

    Parameters
    ----------
    problem : Problem
        A problem with compiled kernels (``problem.kernels()`` not None); time-independent gaps.
    t_end : float
        Final time, > ``problem.t0``.
    rtol, atol : float
        Solver tolerances (``rtol >= 100 eps``, ``atol > 0``), as ``EventDriven``.
    integrator : {"RK45", "DOP853"}
        The Runge-Kutta pair (scipy-identical, :mod:`impactbench.core.compiled_rk`).
    output_every : int
        Keep every ``output_every``-th accepted step (events and the final state always).
    max_step : float
        Largest step size (inf allowed).
    rest_velocity, min_impact_interval : float
        The accumulation (Zeno) thresholds of ``EventDriven``: rebound speed relative to
        ``sqrt(2 |g''| |grad g| L)`` and impact spacing relative to ``t_end - t0`` below which
        an accumulation is cut and continued as persistent contact.
    compile : bool
        numba (cached on disk) or the same source as plain Python.
    capacity : int
        Initial number of output samples; the run is repeated with twice the capacity when the
        output fills up.

    Returns
    -------
    Trajectory
        Samples of shape (N,), (N, n), (N, n) (as the scipy path: accepted steps, the states
        before and after each event, the final state); status ZENO_HANDLED (an accumulation
        was cut), OK or FAILED (the message says why as the scipy path's ``SimulationError``;
        the samples up to the failure are kept). ``stats`` holds the scipy path's keys
        (``steps``, ``force_evaluations``, ``impacts``, ``segments``, ``projections``, the
        thresholds, ``zeno_time``, ``contact_time``, ``contact_phases``, ``contact_duration``)
        and ``events``, ``t_stop``, ``state_stop``.
    """
    if problem.kernels() is None:
        raise ValueError(f"problem must have compiled kernels, got {problem.name!r} without")
    t0 = float(problem.t0)
    t_end = _checks.finite_scalar(t_end, "t_end")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0!r}, got {t_end!r}")
    rtol = _checks.positive_scalar(rtol, "rtol")
    if rtol < RTOL_FLOOR:
        raise ValueError(f"rtol must be >= 100 eps = {RTOL_FLOOR:.3g}, got {rtol!r}")
    atol = _checks.positive_scalar(atol, "atol")
    if not (isinstance(output_every, (int, np.integer)) and output_every >= 1):
        raise ValueError(f"output_every must be an integer >= 1, got {output_every!r}")
    if not float(max_step) > 0.0:
        raise ValueError(f"max_step must be > 0 (inf allowed), got {max_step!r}")
    rest_velocity = _checks.in_interval(rest_velocity, "rest_velocity", 0.0, 1.0)
    min_impact_interval = _checks.in_interval(min_impact_interval, "min_impact_interval", 0.0, 1.0)
    if not (isinstance(capacity, (int, np.integer)) and capacity >= 2):
        raise ValueError(f"capacity must be an integer >= 2, got {capacity!r}")
    return run_engine(
        problem, t_end, rtol, atol, integrator, int(output_every), float(max_step),
        rest_velocity, min_impact_interval, compile, int(capacity),
    )  # fmt: skip


def run_engine(
    problem: Problem,
    t_end: float,
    rtol: float,
    atol: float,
    integrator: str,
    output_every: int,
    max_step: float,
    rest_velocity: float,
    min_impact_interval: float,
    compile: bool = True,
    capacity: int = 4096,
    name: str = "",
) -> Trajectory:
    """:func:`simulate_compiled` with arguments already validated: floats (``t_end > t0``,
    ``rtol`` and ``atol`` as there, ``max_step > 0``, the thresholds in [0, 1]) and ints
    (``output_every >= 1``, ``capacity >= 2``) -- e.g. the attributes of an ``EventDriven``
    instance, which its constructor validated, and :meth:`Method.solve`'s ``t_end``; ``name``
    the trajectory's ``method`` (default: the engine and its settings)."""
    engine = PreparedEngine(
        problem, rtol, atol, integrator, max_step, rest_velocity, min_impact_interval, compile,
        name,
    )  # fmt: skip
    return engine.run(t_end, output_every, capacity)


class PreparedEngine:
    """The event loop and the arguments of its runs on one problem that do not depend on
    ``t_end`` and ``output_every``, prepared once for many runs (:func:`run_engine` describes
    the arguments; an ``EventDriven`` instance keeps one per problem state while neither
    changes, :func:`impactbench.core.snapshot.keep`).

    The copies of q0, v0 and the kernel parameters are handed to every run: the loop copies
    q0 and v0 into its state, and the kernels read the parameters only (the kernel contract).

    Raises
    ------
    ValueError
        If ``kernel_parameters()`` is not a 1-D array.
    """

    def __init__(
        self,
        problem: Problem,
        rtol: float,
        atol: float,
        integrator: str,
        max_step: float,
        rest_velocity: float,
        min_impact_interval: float,
        compile: bool = True,
        name: str = "",
    ) -> None:
        self.t0 = t0 = float(problem.t0)
        loop, self.rk = make_engine(problem, integrator, compile)
        self.n, self.m = int(problem.n_dof), int(problem.n_constraints)
        q0 = np.array(problem.q0, dtype=float)
        v0 = np.array(problem.v0, dtype=float)
        p = np.array(problem.kernel_parameters(), dtype=np.float64)
        if p.ndim != 1:
            raise ValueError(f"kernel_parameters() must be a 1-D array, got shape {p.shape}")
        self.length = length = max(1.0, *map(abs, q0.tolist()))
        self.rtol, self.atol, self.integrator = rtol, atol, integrator
        self.rest_velocity = rest_velocity
        self.min_impact_interval = min_impact_interval
        # float() keeps the types of the compiled call fixed (DirectCall)
        self.head = (t0, q0, v0, p, float(problem.restitution), float(rtol), float(atol))
        self.tail = (float(max_step), float(length), float(rest_velocity))
        self.call = _DIRECT_CALLS.get(loop) or _DIRECT_CALLS.setdefault(loop, DirectCall(loop))
        self.name = name or (
            f"CompiledEventDriven(integrator={integrator}, rtol={rtol:g}, atol={atol:g})"
        )
        self.problem = problem.name
        self.contact_tolerance = _CONTACT_TOLERANCE_FACTOR * (atol + rtol * length)

    def run(self, t_end: float, output_every: int, capacity: int = 4096) -> Trajectory:
        """A run to ``t_end`` keeping every ``output_every``-th accepted step, with room for
        ``capacity`` samples at first (see :func:`simulate_compiled`)."""
        t0, q0, v0, p, e, rtol, atol = self.head
        max_step, length, rest_velocity = self.tail
        n, m = self.n, self.m
        impact_interval = self.min_impact_interval * (t_end - t0)
        arguments = (
            t0, float(t_end), q0, v0, p, e, rtol, atol, max_step, int(output_every), length,
            rest_velocity, float(impact_interval),
        )  # fmt: skip
        integration_time = 0.0
        while True:
            free = _FREE_BUFFERS.get((self.integrator, n, m, capacity))
            if free is None:
                free = _FREE_BUFFERS.setdefault((self.integrator, n, m, capacity), [])
            try:
                buffers = free.pop()
            except IndexError:
                buffers = _Buffers(self.rk, n, m, capacity)
            arrays = buffers.fresh()
            call = self.call.entry or self.call  # the entry point once selected
            start = time.perf_counter()
            call(*arguments, *arrays)
            integration_time += time.perf_counter() - start
            counts = arrays[6].tolist()
            status = counts[COUNTER_STATUS]
            if status != STATUS_OUTPUT_FULL:
                break
            free.append(buffers)
            capacity *= 2
        out_t, out_q, out_v, log_t, log_i, log_u, _, state, info = arrays[:9]
        slots = info[:INFO_HEAD].tolist()
        count = counts[COUNTER_SAMPLES]
        logged = counts[COUNTER_LOGGED]
        t_stop = float(state[0])
        impacts = ImpactLog.from_buffers(log_t, log_i, log_u, logged, counts[COUNTER_IMPACTS])
        zeno_time = None if math.isnan(slots[INFO_ZENO_TIME]) else slots[INFO_ZENO_TIME]
        contact_time = None if math.isnan(slots[INFO_CONTACT_TIME]) else slots[INFO_CONTACT_TIME]
        if status != STATUS_OK:
            run_status = Status.FAILED
            message = _failure_message(status, t_stop, info, m)
        elif zeno_time is not None:
            run_status = Status.ZENO_HANDLED
            settings = {
                "impact_interval": impact_interval,
                "min_impact_interval": self.min_impact_interval,
                "rest_velocity": self.rest_velocity,
                "length": self.length,
            }
            message = (
                f"{_zeno_message(info, m, settings)}; reached t_end={t_stop!r} with "
                f"{impacts.total} impacts"
            )
        else:
            run_status = Status.OK
            message = f"reached t_end={t_stop!r} with {impacts.total} impacts"
            if contact_time is not None:
                message += f"; persistent contact from t={contact_time!r}"
        stats = {
            "steps": counts[COUNTER_STEPS],
            "force_evaluations": counts[COUNTER_FORCE_EVALUATIONS],
            "impacts": impacts.total,
            "segments": counts[COUNTER_SEGMENTS],
            "projections": int(slots[INFO_PROJECTIONS]),
            "rest_velocity": self.rest_velocity,
            "min_impact_interval": self.min_impact_interval,
            "rest_speed": None if zeno_time is None else slots[INFO_REST_SPEED],
            "impact_interval": impact_interval,
            "contact_tolerance": self.contact_tolerance,
            "length_scale": self.length,
            "zeno_time": zeno_time,
            "contact_time": contact_time,
            "contact_phases": int(slots[INFO_CONTACT_PHASES]),
            "contact_duration": slots[INFO_CONTACT_DURATION],
            "events": counts[COUNTER_EVENTS],
            "t_stop": t_stop,
            "state_stop": state[1:].copy(),
            "integration_time": integration_time,
        }
        # t, q, v, impacts, status, message, stats, method, problem, h (by position: faster)
        trajectory = Trajectory(
            out_t[:count].copy(), out_q[:count].copy(), out_v[:count].copy(), impacts,
            run_status, message, stats, self.name, self.problem, None,
        )  # fmt: skip
        free.append(buffers)  # every array the trajectory keeps is a copy
        return trajectory
