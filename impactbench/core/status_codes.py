"""Status codes and counters of the compiled time loops, read by :class:`impactbench.TimeStepping`,
and the kernels every loop uses to report (impact log, closing counters)."""

from __future__ import annotations

from ._checks import MAX_CONDITION
from ._jit import hot_kernel

COUNTER_STATUS = 0
COUNTER_STEPS = 1
COUNTER_FORCE_EVALUATIONS = 2
COUNTER_IMPACTS = 3
COUNTER_LOGGED = 4
COUNTER_SAMPLES = 5
COUNTER_SOLVER_ITERATIONS = 6
N_COUNTERS = 8

STATUS_OK = 0
STATUS_NOT_FINITE = 1
STATUS_CONTACT_SOLVE_FAILED = 2
STATUS_PROJECTION_NOT_CONVERGED = 3
STATUS_MASS_NOT_SPD = 4
STATUS_GAP_NOT_FINITE = 5
#: A constraint in contact has a vanishing gradient: its Delassus number grad g^T M^-1 grad g is
#: not positive (the contact helpers return :data:`impactbench.core.contact.DEGENERATE_GRADIENT`).
STATUS_DEGENERATE_GRADIENT = 6
#: The state left the bounds of :mod:`impactbench.core.divergence` (a run that grows without
#: bound: an explicit scheme above its stable step, an unstable scheme or problem).
STATUS_DIVERGED = 7
#: A Painleve situation met by the event-driven method with Coulomb friction: the
#: acceleration-level contact problem of the contacts at rest has no solution (inconsistent) or
#: several (indeterminate) (:mod:`impactbench.core.events.coulomb`).
STATUS_PAINLEVE_INCONSISTENT = 8
STATUS_PAINLEVE_INDETERMINATE = 9
#: ... or, while contacts slide, the contact problem turns singular (its forces grow without
#: bound): met on the way, the run stops within the step that meets it.
STATUS_PAINLEVE_SINGULAR = 10

FAILURE_REASONS = {
    STATUS_NOT_FINITE: "non-finite state or force",
    STATUS_CONTACT_SOLVE_FAILED: "the impact LCP failed (singular Delassus matrix?)",
    STATUS_PROJECTION_NOT_CONVERGED: "the metric projection onto K did not converge",
    STATUS_MASS_NOT_SPD: (
        "mass_matrix(q) is not positive definite, or is numerically singular (an LDL^T pivot "
        f"below max |M| / {MAX_CONDITION:.0e}, impactbench.core.contact.ldl_factor_mass)"
    ),
    STATUS_GAP_NOT_FINITE: "non-finite gap or gap gradient",
    STATUS_DEGENERATE_GRADIENT: (
        "the constraint gradient vanishes in contact (gap_gradient(q) has a zero row where "
        "gap(q) <= 0): the contact direction M^-1 grad g is undefined"
    ),
    STATUS_DIVERGED: "diverged: the state grew beyond its bound",
    STATUS_PAINLEVE_INCONSISTENT: (
        "Painleve situation (inconsistent): the acceleration-level contact problem with Coulomb "
        "friction has no solution"
    ),
    STATUS_PAINLEVE_INDETERMINATE: (
        "Painleve situation (indeterminate): the acceleration-level contact problem with "
        "Coulomb friction has several solutions"
    ),
    STATUS_PAINLEVE_SINGULAR: (
        "Painleve situation (singular): within the next step the acceleration-level contact "
        "problem of the sliding contacts turns singular (det W_N M^-1 (W_N - mu s W_T)^T "
        "reaches 0, the contact force grows without bound)"
    ),
}


@hot_kernel
def log_impact(log_t, log_i, log_u, logged, t, i, before, after):
    """Write impact ``logged`` (time, constraint, normal velocity before and after) into the
    loop's impact log; returns the new count. The caller checks the log's capacity."""
    log_t[logged] = t
    log_i[logged] = i
    log_u[logged, 0] = before
    log_u[logged, 1] = after
    return logged + 1


@hot_kernel
def log_impacts(log_t, log_i, log_u, logged, impacts, t, impulse, before, after, m):
    """Count every constraint i < m with a positive ``impulse[i]`` at time t as an impact and
    log it (normal velocities ``before[i]``, ``after[i]``) while the log has room; returns the
    new (impacts, logged)."""
    capacity = log_t.shape[0]
    for i in range(m):
        if impulse[i] > 0.0:
            impacts += 1
            if logged < capacity:
                logged = log_impact(log_t, log_i, log_u, logged, t, i, before[i], after[i])
    return impacts, logged


@hot_kernel
def store_counters(counters, status, steps, force_evaluations, impacts, logged, samples, solves):
    """The loop's closing counts, read by :meth:`TimeStepping._solve_impl`."""
    counters[COUNTER_STATUS] = status
    counters[COUNTER_STEPS] = steps
    counters[COUNTER_FORCE_EVALUATIONS] = force_evaluations
    counters[COUNTER_IMPACTS] = impacts
    counters[COUNTER_LOGGED] = logged
    counters[COUNTER_SAMPLES] = samples
    counters[COUNTER_SOLVER_ITERATIONS] = solves
