"""The event loop: segments of smooth integration between located events, restarts at events.

A run starts with a restart at t0 (the initial state may be in contact); each segment steps the
stepper from a restart (or, after a drift projection, with the last step size), probes every
accepted step for events (:mod:`impactbench.core.events.location`) and cuts the step at the
earliest one, where the next restart (:mod:`impactbench.core.events.resolution`) applies the
impact law and decides the contacts. In persistent contact, an accepted step after which |g_C| or
|G_C v| exceeds the solver's error scale is followed by a projection of q and v and the stepper
resumes with its last step size (``info[INFO_PROJECTIONS]``). A state beyond the bounds of
:func:`impactbench.core.divergence.state_bounds` (``out.growth``) stops the run (status
``STATUS_DIVERGED``). Advances that no longer move t stop the run (status ``STATUS_STALLED``,
:mod:`impactbench.core.stall`). At t_end the state is projected onto
the closed contacts and must be admissible up to twice the contact tolerance.

The stepper is bound per engine: ``start_segment``, ``take_step``, ``prepare_dense``,
``dense_evaluate`` (the compiled Runge-Kutta pairs of :mod:`impactbench.core.events.stepping`, or
a :class:`~impactbench.core.events.plain.Stepper` run by :mod:`impactbench.core.events.plain`,
e.g. scipy's solvers) and ``record_piece``, told of each piece of the solution between two
states of the run (each engine keeps them as its dense output when the run has one; a full
output stops the run with ``STATUS_OUTPUT_FULL``, as a full sample buffer does).
Counters and the number of samples live in ``out.counters`` throughout, so that a run stopped by
an exception (the plain-Python path) still has its output up to there.
"""

from __future__ import annotations

import numpy as np

from impactbench.core.contact import CURVATURE_FD_STEP
from impactbench.core.divergence import GREW, POSITION, Q_BOUND, V_BOUND, VALUE, VELOCITY, WHEN
from impactbench.core.stall import STALL_STEPS, stalled_block
from impactbench.core.status_codes import (
    COUNTER_FORCE_EVALUATIONS,
    COUNTER_IMPACTS,
    COUNTER_SAMPLES,
    COUNTER_STATUS,
    COUNTER_STEPS,
    STATUS_DIVERGED,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_NOT_FINITE,
    STATUS_OK,
    STATUS_PAINLEVE_SINGULAR,
)

from .buffers import (
    COUNTER_EVENTS,
    COUNTER_SEGMENTS,
    COUNTER_STALLED,
    INFO_CONTACT_DURATION,
    INFO_FAILED_CONSTRAINT,
    INFO_FAILED_VALUE,
    INFO_HEAD,
    INFO_PROJECTIONS,
    INFO_STALL_START,
    INFO_STALL_STEPS,
    STATUS_CONTACT_MATRIX_SINGULAR,
    STATUS_NO_PROGRESS,
    STATUS_OUTPUT_FULL,
    STATUS_PENETRATION,
    STATUS_STALLED,
    STATUS_STEP_TOO_SMALL,
)
from .stepping import STEP_ACCEPTED, STEP_NOT_FINITE

# Names bound per engine (impactbench.core.events.engine).
gap = gap_gradient = views = None
N_DOF = N_CONSTRAINTS = 0
factor_constant_mass = resolve = drifted = project_position = project_velocity = None
name_failed_rows = probe_step = earliest_event = diverged = stalled = None
start_segment = take_step = prepare_dense = dense_evaluate = record_piece = None
restart = segment = advance = locate = accept = project_contacts = finish = add_sample = None


def event_loop(run, out, work):
    """The whole run from the state ``w.y`` at ``run.t0``: writes ``out`` (the status in
    ``out.counters``, the stop time and state in ``out.state``)."""
    w = views(work)
    n = N_DOF
    factor_constant_mass(w.y[:n], run.p, w.rws)
    w.rws[2 * n + 1, 2] = CURVATURE_FD_STEP * run.length
    status = STATUS_OK if add_sample(run.t0, w.y, out) else STATUS_OUTPUT_FULL
    t = run.t0
    k_closed = 0
    event = -1
    released = -1
    first_step = 0.0  # > 0: resume after a drift projection with this step, no restart
    start = t
    while status == STATUS_OK:
        if first_step == 0.0:
            status, k_closed = restart(t, event, released, k_closed, run, out, work)
            start = t
            if status != STATUS_OK or t >= run.t_end:
                break
        status, t, event, released, first_step = segment(
            t, start, k_closed, first_step, run, out, work
        )
        if event < 0 and released < 0 and first_step == 0.0:
            break
    if status == STATUS_OK:
        status = finish(t, k_closed, run, out, work)
    out.counters[COUNTER_STATUS] = status
    out.state[0] = t
    for j in range(2 * n):
        out.state[1 + j] = w.y[j]


def _restart(t, event, released, k_closed, run, out, work):
    """The restart at ``t`` (resolution, samples before and after it, event levels); returns
    (status, contacts closed after it)."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    counters = out.counters
    impacts_before = counters[COUNTER_IMPACTS]
    for j in range(2 * n):
        w.before[j] = w.y[j]
    status, k_closed = resolve(t, w.y, event, released, k_closed, run, out, work)
    counters[COUNTER_FORCE_EVALUATIONS] += 1
    if status != STATUS_OK:
        return status, k_closed
    if counters[COUNTER_IMPACTS] > impacts_before and not add_sample(t, w.before, out):
        return STATUS_OUTPUT_FULL, k_closed
    if not add_sample(t, w.y, out):
        return STATUS_OUTPUT_FULL, k_closed
    # w.g and w.G hold the gap and its gradient at the restarted q (the resolution evaluates
    # them at its q and its projections again at the q they end at)
    for i in range(m):
        norm = 0.0
        for j in range(n):
            norm += w.G[i, j] * w.G[i, j]
        w.tol[i] = run.tolerance * np.sqrt(norm)
        w.armed[i] = w.g[i] > w.tol[i]
        w.floor[i] = -w.tol[i]
    for c in range(k_closed):
        w.armed[w.closed[c]] = False
        w.rws[2 * n + 2, c] = w.closed[c]
    w.rws[2 * n + 1, 1] = k_closed
    counters[COUNTER_SEGMENTS] += 1
    return STATUS_OK, k_closed


def _segment(t, start, k_closed, first_step, run, out, work):
    """Steps from ``t`` until an event, t_end or a drift projection; returns (status, t, gap
    event or -1, released contact or -1, the step to resume with after a projection or 0)."""
    w = views(work)
    control = w.rws[2 * N_DOF + 1]
    control[0] = 0.0
    h_abs, evaluations = start_segment(t, first_step, run, work)
    out.counters[COUNTER_FORCE_EVALUATIONS] += evaluations
    while t < run.t_end:
        status, t_new, h, h_abs = advance(t, h_abs, k_closed, run, out, work)
        if status != STATUS_OK:  # t_new: where the run stopped
            return status, t_new, -1, -1, 0.0
        t_event, event, released = earliest_event(t, h, start, k_closed, run, work)
        if control[0] != 0.0:
            return _contact_status(control), t, -1, -1, 0.0
        if event >= 0 or released >= 0:
            return locate(t, t_event, h, run, out, work), t_event, event, released, 0.0
        status, first_step = accept(t, t_new, h, k_closed, run, out, work)
        t = t_new
        if status != STATUS_OK or first_step > 0.0:
            return status, t, -1, -1, first_step
    return STATUS_OK, t, -1, -1, 0.0


def _contact_status(control):
    """The status of a failed right-hand side (flag in the control row of the workspace: 1 the
    mass matrix, 2 the contact matrix, 3 a Painleve point of sliding friction)."""
    if control[0] == 3.0:
        return STATUS_PAINLEVE_SINGULAR
    return STATUS_CONTACT_MATRIX_SINGULAR if control[0] == 2.0 else STATUS_MASS_NOT_SPD


def _advance(t, h_abs, k_closed, run, out, work):
    """One accepted step from ``t``, its dense output and its probes; returns (status, t_new,
    h, next step size)."""
    w = views(work)
    counters = out.counters
    control = w.rws[2 * N_DOF + 1]
    step_status, t_new, h, h_abs, evaluations = take_step(t, h_abs, run, work)
    counters[COUNTER_FORCE_EVALUATIONS] += evaluations
    if control[0] != 0.0:
        return _contact_status(control), t, h, h_abs
    if step_status == STEP_NOT_FINITE:
        return STATUS_NOT_FINITE, t, h, h_abs
    if step_status != STEP_ACCEPTED:
        return STATUS_STEP_TOO_SMALL, t, h, h_abs
    check = 0.0
    for j in range(2 * N_DOF):
        check += w.y_new[j]
    if not np.isfinite(check):
        return STATUS_NOT_FINITE, t, h, h_abs
    if diverged(t_new, w.y_new, out):
        for j in range(2 * N_DOF):
            w.y[j] = w.y_new[j]
        return STATUS_DIVERGED, t_new, h, h_abs
    counters[COUNTER_STEPS] += 1
    counters[COUNTER_FORCE_EVALUATIONS] += prepare_dense(t, h, run, work)
    finite, evaluations = probe_step(t, h, t_new, k_closed, run, work)
    counters[COUNTER_FORCE_EVALUATIONS] += evaluations
    if not finite:  # a gap or a rate is not finite
        return STATUS_GAP_NOT_FINITE, t, h, h_abs
    return STATUS_OK, t_new, h, h_abs


def _diverged(t, y, out):
    """Whether max |q| or max |v| of ``y`` exceeds its bound in ``out.growth``
    (:func:`impactbench.core.divergence.state_bounds`); if so, what grew is recorded there."""
    n = N_DOF
    largest_q = 0.0
    largest_v = 0.0
    for j in range(n):
        largest_q = max(largest_q, abs(y[j]))
        largest_v = max(largest_v, abs(y[n + j]))
    growth = out.growth
    if largest_q <= growth[Q_BOUND] and largest_v <= growth[V_BOUND]:
        return False
    position = largest_q > growth[Q_BOUND]
    growth[GREW] = POSITION if position else VELOCITY
    growth[VALUE] = largest_q if position else largest_v
    growth[WHEN] = t
    return True


def _stalled(t_old, t_new, run, out):
    """Count the advance from ``t_old`` to ``t_new`` in the stall test's block (slots of
    ``out.info``); at the block's end, whether it stalled
    (:func:`impactbench.core.stall.stalled_block`; then the slot of its start keeps it)."""
    info = out.info
    if info[INFO_STALL_STEPS] == 0.0:
        info[INFO_STALL_START] = t_old
    info[INFO_STALL_STEPS] += 1.0
    if info[INFO_STALL_STEPS] < STALL_STEPS:
        return False
    info[INFO_STALL_STEPS] = 0.0
    return stalled_block(info[INFO_STALL_START], t_new, run.t0, run.t_end)


def _locate(t, t_event, h, run, out, work):
    """Moves ``w.y`` to the event at ``t_event`` in the step [t, t + h]; a status."""
    w = views(work)
    counters = out.counters
    counters[COUNTER_EVENTS] += 1
    counters[COUNTER_STALLED] = counters[COUNTER_STALLED] + 1 if t_event == t else 0
    if counters[COUNTER_STALLED] > 2 * N_CONSTRAINTS + 2:
        return STATUS_NO_PROGRESS
    dense_evaluate(t_event, t, h, w.y, w.dense, w.probe)
    if not record_piece(t, h, t_event, w.probe, out, work):
        return STATUS_OUTPUT_FULL
    for j in range(2 * N_DOF):
        w.y[j] = w.probe[j]
    return STATUS_STALLED if stalled(t, t_event, run, out) else STATUS_OK


def _accept(t, t_new, h, k_closed, run, out, work):
    """Moves ``w.y`` to the end of the accepted step [t, t_new] (of size ``h``), projects a
    drifted contact and samples; returns (status, the step to resume with after a projection
    or 0)."""
    w = views(work)
    n = N_DOF
    for i in range(N_CONSTRAINTS):
        w.armed[i] = w.armed_next[i]
    if not record_piece(t, h, t_new, w.y_new, out, work):
        return STATUS_OUTPUT_FULL, 0.0
    for j in range(2 * n):
        w.y[j] = w.y_new[j]
        w.f[j] = w.f_new[j]
    if t_new >= run.t_end:
        return STATUS_OK, 0.0
    if stalled(t, t_new, run, out):
        return STATUS_STALLED, 0.0
    first_step = 0.0
    if k_closed > 0 and drifted(t_new, w.y, k_closed, run, work):
        status = project_contacts(t_new, w.y, k_closed, run, out, work)
        if status != STATUS_OK:
            return status, 0.0
        out.info[INFO_PROJECTIONS] += 1.0
        first_step = min(t_new - t, run.t_end - t_new)
    if out.counters[COUNTER_STEPS] % run.every == 0 and not add_sample(t_new, w.y, out):
        return STATUS_OUTPUT_FULL, 0.0
    return STATUS_OK, first_step


def _project_contacts(t, y, k_closed, run, out, work):
    """q and v of ``y`` onto the closed contacts at time t; a status (failing rows named in
    info)."""
    w = views(work)
    status = project_position(t, y, w.closed, k_closed, run, work)
    if status == STATUS_OK:
        status = project_velocity(t, y, w.closed, k_closed, run, work)
    if status != STATUS_OK:
        gap(t, y[:N_DOF], run.p, w.g)
        name_failed_rows(out.info, w.closed, k_closed, w.g)
    return status


def _finish(t, k_closed, run, out, work):
    """The final state: projected onto the closed contacts, admissible up to twice the contact
    tolerance, sampled; a status."""
    w = views(work)
    n = N_DOF
    m = N_CONSTRAINTS
    for c in range(k_closed):
        i = w.closed[c]
        out.info[INFO_CONTACT_DURATION] += t - out.info[INFO_HEAD + m + i]
        out.info[INFO_HEAD + m + i] = np.nan
    if k_closed > 0:
        status = project_contacts(t, w.y, k_closed, run, out, work)
        if status != STATUS_OK:
            return status
    gap(t, w.y[:n], run.p, w.g)
    gap_gradient(t, w.y[:n], run.p, w.G)
    status = STATUS_OK
    for i in range(m):
        norm = 0.0
        for j in range(n):
            norm += w.G[i, j] * w.G[i, j]
        if w.g[i] < -2.0 * run.tolerance * np.sqrt(norm):
            status = STATUS_PENETRATION
            out.info[INFO_FAILED_CONSTRAINT] = i
            out.info[INFO_FAILED_VALUE] = w.g[i]
    if status == STATUS_OK and not add_sample(t, w.y, out):
        return STATUS_OUTPUT_FULL
    return status


def _add_sample(t, y, out):
    """Append (t, y) unless it repeats the last sample; False when the output is full."""
    n = N_DOF
    samples = out.counters[COUNTER_SAMPLES]
    if samples > 0 and out.t[samples - 1] == t:
        same = True
        for j in range(n):
            if out.q[samples - 1, j] != y[j] or out.v[samples - 1, j] != y[n + j]:
                same = False
        if same:
            return True
    if samples == out.t.shape[0]:
        return False
    out.t[samples] = t
    for j in range(n):
        out.q[samples, j] = y[j]
        out.v[samples, j] = y[n + j]
    out.counters[COUNTER_SAMPLES] = samples + 1
    return True
