"""Event location on the dense output of one accepted step.

Every accepted step [t_old, t_old + h] is split into :data:`SUBINTERVALS` equal sub-intervals
(:func:`probe_step`). On each, g_i and its rate dg_i/dt = grad g_i(q) . v (+ r_i = dg_i/dt at fixed
q for a moving obstacle: the relative normal velocity U_i) are evaluated at the time s of the dense
output; a crossing is a sign change of g_i - level, and a dip inside a sub-interval (g above the
level at both ends) is found as an interior minimum (rate changing sign from - to +, located by
Brent's method), whose value decides (:func:`gap_crossing`). So a grazing contact, or a gap that
closes and reopens within one step, is found without limiting the step; ``max_step`` is only needed
when a gap oscillates faster along the trajectory than the solution itself.

Re-arming: at a restart a constraint whose gap is below its contact tolerance is disarmed (event
level -tol), so the restart on g = 0 does not fire again; it is re-armed (level 0) at the first
point of the dense output where g > 0, a sub-interval end or an interior maximum of g. A closed
contact lifts off at the first sub-interval end where its force lambda_i <= 0, located as the root
of lambda_i (:func:`earliest_event`).

Roots are located by Brent's method (:func:`root`, scipy's ``brentq`` step for step, ``xtol = 4
eps max(|a|, |b|)``, ``rtol = 4 eps``). Templates: the problem's ``gap``, ``gap_gradient``,
``gap_rate`` (all t first), ``RHEONOMIC``, the
stepper's ``dense_evaluate`` and :func:`impactbench.core.events.dynamics.acceleration` are free
globals bound per engine.
"""

from __future__ import annotations

import math

import numpy as np

from .dynamics import SUBINTERVALS

_BRENT_ITERATIONS = 100
_EPS = float(np.finfo(float).eps)

#: Which function of the dense output :func:`event_value` evaluates.
GAP = 0
RATE = 1
FORCE = 2
#: The friction event value of a closed contact (:mod:`impactbench.core.events.coulomb`).
STICK_SLIP = 3

#: Flags per constraint (``w.mark``) set by the restart: closed before the event, impacting at
#: it, impacting sooner than ``min_impact_interval`` after its last impact, closed after it.
WAS_CLOSED = 1
IMPACTING = 2
SPACED = 4
CLOSES = 8

# Names bound per engine (impactbench.core.events.engine).
gap = gap_gradient = gap_rate = dense_evaluate = acceleration = event_value = root = None
gap_crossing = None
RHEONOMIC = False
views = friction_value = probe_friction = friction_event = None
N_DOF = N_CONSTRAINTS = 0


def evaluate(kind, i, level, s, t_old, h, run, work):
    """g_i(s) - level (kind GAP), dg_i/dt(s) = G_i v (+ r_i) (kind RATE), the force of the i-th
    closed contact (kind FORCE) or its friction event value (kind STICK_SLIP) on the dense output
    of the step [t_old, t_old + h] starting at ``w.y``."""
    w = views(work)
    n = N_DOF
    y = w.probe
    dense_evaluate(s, t_old, h, w.y, w.dense, y)
    if kind == FORCE or kind == STICK_SLIP:  # one call site of the inlined acceleration
        acceleration(s, y, run.p, w.rws)
        if kind == FORCE:
            return w.rws[2 * n + 3, i]
        return friction_value(i, w.rws)
    if kind == GAP:
        gap(s, y[:n], run.p, w.g)
        return w.g[i] - level
    gap_gradient(s, y[:n], run.p, w.G)
    rate = 0.0
    for j in range(n):
        rate += w.G[i, j] * y[n + j]
    if RHEONOMIC:
        gap_rate(s, y[:n], run.p, w.r)
        rate += w.r[i]
    return rate


def brent(kind, i, level, a, b, t_old, h, run, work):
    """Root in [a, b] of :func:`evaluate` (scipy's brentq when the signs bracket, else the
    endpoint of smaller magnitude), to 4 eps relative."""
    fa = event_value(kind, i, level, a, t_old, h, run, work)
    fb = event_value(kind, i, level, b, t_old, h, run, work)
    if fa == 0.0:
        return a
    if fb == 0.0 or (fa > 0.0) == (fb > 0.0):
        return b if abs(fb) <= abs(fa) else a
    xtol = 4.0 * _EPS * max(abs(a), abs(b))
    rtol = 4.0 * _EPS
    x_pre, x_cur, f_pre, f_cur = a, b, fa, fb
    x_blk = f_blk = s_pre = s_cur = 0.0
    for _ in range(_BRENT_ITERATIONS):
        if f_pre != 0.0 and f_cur != 0.0 and ((f_pre < 0.0) != (f_cur < 0.0)):
            x_blk, f_blk = x_pre, f_pre
            s_pre = s_cur = x_cur - x_pre
        if abs(f_blk) < abs(f_cur):
            x_pre, x_cur, x_blk = x_cur, x_blk, x_cur
            f_pre, f_cur, f_blk = f_cur, f_blk, f_cur
        delta = 0.5 * (xtol + rtol * abs(x_cur))
        s_bis = 0.5 * (x_blk - x_cur)
        if f_cur == 0.0 or abs(s_bis) < delta:
            return x_cur
        s_pre, s_cur = _brent_step(x_pre, x_cur, x_blk, f_pre, f_cur, f_blk, s_pre, s_cur, delta)
        x_pre, f_pre = x_cur, f_cur
        if abs(s_cur) > delta:
            x_cur += s_cur
        else:
            x_cur += delta if s_bis > 0.0 else -delta
        f_cur = event_value(kind, i, level, x_cur, t_old, h, run, work)
    return x_cur


def _brent_step(x_pre, x_cur, x_blk, f_pre, f_cur, f_blk, s_pre, s_cur, delta):
    """Brent's next (s_pre, s_cur): interpolation when it is safe, else bisection."""
    s_bis = 0.5 * (x_blk - x_cur)
    if abs(s_pre) > delta and abs(f_cur) < abs(f_pre):
        if x_pre == x_blk:
            s_try = -f_cur * (x_cur - x_pre) / (f_cur - f_pre)
        else:
            d_pre = (f_pre - f_cur) / (x_pre - x_cur)
            d_blk = (f_blk - f_cur) / (x_blk - x_cur)
            s_try = -f_cur * (f_blk * d_blk - f_pre * d_pre) / (d_blk * d_pre * (f_blk - f_pre))
        if 2.0 * abs(s_try) < min(abs(s_pre), 3.0 * abs(s_bis) - delta):
            return s_cur, s_try
    return s_bis, s_bis


def crossing(i, start, t_old, h, run, work):
    """First time in the step where gap i reaches its event level (nan if none) and its armed
    flag after the step, from the gaps ``w.gs`` and rates ``w.rs`` at the ends ``w.tau``."""
    w = views(work)
    tau, gs, rs = w.tau, w.gs, w.rs
    armed = w.armed[i]
    k_max = tau.shape[0] - 1
    for k in range(k_max):
        if not armed and tau[k] > start and gs[k, i] > 0.0:
            armed = True
        lo, hi, g_lo, r_lo = tau[k], tau[k + 1], gs[k, i], rs[k, i]
        if not armed and gs[k + 1, i] <= 0.0 and r_lo > 0.0 > rs[k + 1, i]:
            t_max = root(RATE, i, 0.0, lo, hi, t_old, h, run, work)
            g_max = event_value(GAP, i, 0.0, t_max, t_old, h, run, work)
            if g_max > 0.0:
                armed = True
                lo, g_lo, r_lo = t_max, g_max, 0.0
        level = 0.0 if armed else w.floor[i]
        if g_lo > level >= gs[k + 1, i]:
            return root(GAP, i, level, lo, hi, t_old, h, run, work), armed
        if g_lo > level and gs[k + 1, i] > level and r_lo < 0.0 < rs[k + 1, i]:
            t_min = root(RATE, i, 0.0, lo, hi, t_old, h, run, work)
            if event_value(GAP, i, level, t_min, t_old, h, run, work) <= 0.0:
                return root(GAP, i, level, lo, t_min, t_old, h, run, work), armed
    if not armed and tau[k_max] > start and gs[k_max, i] > 0.0:
        armed = True
    return math.nan, armed


def probe_step(t_old, h, t_new, k_closed, run, work):
    """Gaps, rates and (closed contacts) forces at the sub-interval ends of the step into
    ``w.tau``, ``w.gs``, ``w.rs``, ``w.ls``; returns (finite, force evaluations)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    y = w.probe
    for k in range(SUBINTERVALS + 1):
        w.tau[k] = t_old + k * (h / SUBINTERVALS)  # np.linspace(t_old, t_new, 5)
    w.tau[SUBINTERVALS] = t_new
    check = 0.0
    evaluations = 0
    for k in range(SUBINTERVALS + 1):
        dense_evaluate(w.tau[k], t_old, h, w.y, w.dense, y)
        gap(w.tau[k], y[:n], run.p, w.g)
        gap_gradient(w.tau[k], y[:n], run.p, w.G)
        if RHEONOMIC:
            gap_rate(w.tau[k], y[:n], run.p, w.r)
        for i in range(m):
            w.gs[k, i] = w.g[i]
            rate = 0.0
            for j in range(n):
                rate += w.G[i, j] * y[n + j]
            if RHEONOMIC:
                rate += w.r[i]
            w.rs[k, i] = rate
            check += w.g[i] + rate
        if k_closed > 0:
            acceleration(w.tau[k], y, run.p, w.rws)
            evaluations += 1
            for c in range(k_closed):
                w.ls[k, c] = w.rws[2 * n + 3, c]
            probe_friction(k, k_closed, w.rws)
    return np.isfinite(check), evaluations


def earliest_event(t_old, h, start, k_closed, run, work):
    """The earliest event of the step: (t_event, gap event i or -1, released contact or -1);
    inf when none. A stick-slip transition of the closed contact i (friction,
    :mod:`impactbench.core.events.coulomb`) is returned as the released contact m + i. The
    re-armed flags after the whole step go to ``w.armed_next``."""
    w = views(work)
    m = N_CONSTRAINTS
    t_event = math.inf
    event = -1
    released = -1
    for i in range(m):
        w.armed_next[i] = w.armed[i]
        if (w.mark[i] & CLOSES) != 0:  # closed: no gap event
            continue
        t_hit, armed = gap_crossing(i, start, t_old, h, run, work)
        w.armed_next[i] = armed
        if t_hit < t_event:  # nan compares False
            t_event = t_hit
            event = i
    for c in range(k_closed):  # lift-off: the first root of a contact force
        for k in range(SUBINTERVALS + 1):
            if w.ls[k, c] <= 0.0:
                t_hit = w.tau[0]
                if k > 0:
                    t_hit = root(FORCE, c, 0.0, w.tau[k - 1], w.tau[k], t_old, h, run, work)
                if t_hit < t_event:
                    t_event = t_hit
                    event = -1
                    released = w.closed[c]
                break
    t_hit, switched = friction_event(t_old, h, k_closed, run, work)
    if t_hit < t_event:
        t_event = t_hit
        event = -1
        released = switched
    return t_event, event, released


def no_friction_value(c, ws):
    """The friction event value of a frictionless engine: none (never called)."""
    return 1.0


def no_friction_probe(k, k_closed, ws):
    """The friction probes of a frictionless engine: none."""
    return


def no_friction_event(t_old, h, k_closed, run, work):
    """The stick-slip transitions of a frictionless engine: none."""
    return math.inf, -1
