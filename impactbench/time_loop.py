"""The one time loop of every fixed-step scheme, and the contract of a scheme's step.

The driver :func:`_time_loop` owns what every scheme needs the same way: the work buffer, the
output samples and their decimation, the impact log's bookkeeping, the counters and the status.
A scheme supplies, as a :class:`Scheme`, four functions written against the kernel calling
convention of :class:`impactbench.ProblemKernels` (templates whose problem-specific names are
free globals, bound by :func:`impactbench._jit.specialize`) and the number of buffer rows its
state needs:

``start(t0, h, q0, v0, p, e, mp, buf, ws) -> (status, solver_iterations)``
    Initialise the scheme's state in ``buf`` (e.g. Paoli-Schatzman's q^1).
``step(k, t0, h, p, e, mp, buf, ws, rows, log_t, log_i, log_u, logged)
-> (status, impacts, logged, solver_iterations)``
    Advance the state from t_k = t0 + k h to t_{k+1}. A failure returns its status before the
    state changes (so the driver reports the last finite state); impacts are written to the log
    with :func:`impactbench.status_codes.log_impact` while ``logged < len(log_t)``.
``sample(buf, h, out_q, out_v, i)``
    Write the state after the last step (its q and v) into output row ``i``.
``end(status, steps, t0, h, buf, state)``
    Write ``state = (t, q, v)``: the end of the run, or where a step failed (``steps`` steps
    completed). If ``start`` fails the driver reports the initial state itself.

``buf`` has ``rows`` rows of ``max(n, m, 2)`` floats: a scheme carves its arrays as row slices at
constant offsets (numba allocates each ``np.empty`` through an opaque call, so LLVM must assume
that separately allocated arrays alias; slices of one buffer are provably disjoint and values stay
in registers). ``ws`` is the LCP workspace (:func:`impactbench.contact.make_workspace`) and
``rows`` an int64 array of length m for the active set. Scalars that persist from step to step go
in a buffer row too. The step functions are inlined into the driver (numba ``inline="always"``),
so the compiled loop is the same machine code as a hand-written one.

Statuses are those of :mod:`impactbench.status_codes` (``STATUS_*``); a scheme may add its own
(values >= 100) with their messages in its class's ``failure_reasons``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._jit import specialize
from .contact import make_workspace
from .status_codes import STATUS_OK, store_counters


class Scheme(NamedTuple):
    """A time-stepping scheme's step, as the driver calls it (see the module docstring).

    Attributes
    ----------
    start, step, sample, end : function
        Templates (module-level functions) whose free globals are bound to ``bindings``.
    bindings : dict
        Values of their free globals: problem kernels and compile-time constants (bools and ints
        prune branches and unroll loops in the compiled code).
    rows : int
        Rows of the work buffer the scheme's state needs.
    start_evaluations : int
        Force evaluations made by ``start`` (the driver counts one per step besides).
    """

    start: Callable
    step: Callable
    sample: Callable
    end: Callable
    bindings: dict[str, Any]
    rows: int
    start_evaluations: int = 0


# Names bound per scheme and problem by make_time_loop.
scheme_start = scheme_step = scheme_sample = scheme_end = None
N_DOF = N_CONSTRAINTS = BUFFER_ROWS = START_EVALUATIONS = 0


def _time_loop(
    t0, h, n_steps, q0, v0, p, e, mp, every,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, state,
):  # fmt: skip
    n = N_DOF
    m = N_CONSTRAINTS
    buf = np.empty((BUFFER_ROWS, max(n, m, 2)))
    ws = make_workspace(n, m)
    rows = np.empty(m, dtype=np.int64)
    out_t[0] = t0
    for j in range(n):
        out_q[0, j] = q0[j]
        out_v[0, j] = v0[j]
    samples = 1
    impacts = 0
    logged = 0
    steps = 0
    countdown = every
    status, iterations = scheme_start(t0, h, q0, v0, p, e, mp, buf, ws)
    started = status == STATUS_OK
    if started:
        for k in range(n_steps):
            status, new_impacts, logged, used = scheme_step(
                k, t0, h, p, e, mp, buf, ws, rows, log_t, log_i, log_u, logged
            )
            if status != STATUS_OK:
                break
            impacts += new_impacts
            iterations += used
            steps = k + 1
            countdown -= 1
            if countdown == 0 or steps == n_steps:
                countdown = every
                out_t[samples] = t0 + steps * h
                scheme_sample(buf, h, out_q, out_v, samples)
                samples += 1
    evaluations = steps + START_EVALUATIONS
    store_counters(counters, status, steps, evaluations, impacts, logged, samples, iterations)
    if started:
        scheme_end(status, steps, t0, h, buf, state)
    else:  # the start failed: report the initial state
        state[0] = t0
        for j in range(n):
            state[1 + j] = q0[j]
            state[1 + n + j] = v0[j]


def make_time_loop(scheme: Scheme, n_dof: int, n_constraints: int, compile: bool) -> Callable:
    """The driver specialised to ``scheme`` (compiled by numba and cached on disk if
    ``compile``), with the signature documented in :mod:`impactbench.timestepping`."""
    parts = {
        "scheme_start": scheme.start,
        "scheme_step": scheme.step,
        "scheme_sample": scheme.sample,
        "scheme_end": scheme.end,
    }
    bindings: dict[str, Any] = {
        name: specialize(template, scheme.bindings, compile, inline=True)
        for name, template in parts.items()
    }
    bindings.update(
        N_DOF=n_dof,
        N_CONSTRAINTS=n_constraints,
        BUFFER_ROWS=scheme.rows,
        START_EVALUATIONS=scheme.start_evaluations,
    )
    return specialize(_time_loop, bindings, compile)
