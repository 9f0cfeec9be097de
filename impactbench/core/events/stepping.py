"""The compiled stepper of the event loop: a scipy-identical Runge-Kutta pair
(:mod:`impactbench.core.compiled_rk`) on the right-hand side of
:mod:`impactbench.core.events.dynamics`.

The loop's stepper interface (each engine binds one): ``start_segment(t, first_step, run, work)``
-> (h_abs, evaluations) from the state ``w.y`` (its slope into ``w.f``; the pair's initial step
after a restart, ``first_step`` 0); ``take_step(t, h_abs, run, work)`` -> (status, t_new, h, next
h_abs, evaluations) with ``w.y_new``, ``w.f_new`` the end of the accepted step;
``prepare_dense(t, h, run, work)`` -> evaluations; ``dense_evaluate(s, t_old, h, y_old, dense,
out)``; ``record_piece(t_old, h, t_stop, y_end, out, work)`` -> False when the output is full:
the piece [t_old, t_stop] of the accepted step [t_old, t_old + h], ending at ``y_end``, kept in
``out``'s pieces (:func:`record_piece`; nothing when the run keeps no dense output).
"""

from __future__ import annotations

from impactbench.core.compiled_rk import STEP_ACCEPTED, STEP_NOT_FINITE

from .buffers import COUNTER_PIECES

__all__ = ["STEP_ACCEPTED", "STEP_NOT_FINITE"]

# Names bound per engine (impactbench.core.events.engine).
rhs = rk_initial_step = rk_step = rk_dense_prepare = views = None
N_STAGES = 0


def start_segment(t, first_step, run, work):
    """w.f = rhs(t, w.y) and the first step size; returns (h_abs, right-hand sides)."""
    w = views(work)
    rhs(t, w.y, run.p, w.f, w.rws)
    if first_step == 0.0:
        h_abs = rk_initial_step(
            t, w.y, w.f, run.t_end, run.max_step, run.rtol, run.atol, run.p, w.K, w.rws
        )
        return h_abs, 2
    return first_step, 1


def take_step(t, h_abs, run, work):
    """One accepted step of the pair (scipy's step-size control)."""
    w = views(work)
    status, t_new, h, h_abs, attempts = rk_step(
        t, w.y, w.f, h_abs, run.t_end, run.max_step, (run.rtol, run.atol), run.p, w.K, w.y_new,
        w.f_new, w.rws,
    )  # fmt: skip
    return status, t_new, h, h_abs, N_STAGES * attempts


def prepare_dense(t, h, run, work):
    """The pair's dense output of the accepted step; returns the extra right-hand sides."""
    w = views(work)
    return rk_dense_prepare(t, h, w.y, w.y_new, w.f_new, run.p, w.K, w.dense, w.rws)


def record_piece(t_old, h, t_stop, y_end, out, work):
    """Keep the piece [t_old, t_stop] of the step [t_old, t_old + h] in ``out``'s pieces: the
    step's start state ``w.y``, ``y_end`` and the interpolant's coefficients ``w.dense``, so that
    the dense output is the interpolant the run used (none kept when ``out`` has no room for
    pieces: the run keeps no dense output; a piece of zero length is skipped). False when the
    pieces are full."""
    capacity = out.piece_t.shape[0]
    if capacity == 0 or t_stop == t_old:
        return True
    k = out.counters[COUNTER_PIECES]
    if k == capacity:
        return False
    w = views(work)
    out.piece_t[k, 0] = t_old
    out.piece_t[k, 1] = h
    out.piece_t[k, 2] = t_stop
    for j in range(w.y.shape[0]):
        out.piece_y[k, 0, j] = w.y[j]
        out.piece_y[k, 1, j] = y_end[j]
    for r in range(w.dense.shape[0]):
        for j in range(w.dense.shape[1]):
            out.piece_c[k, r, j] = w.dense[r, j]
    out.counters[COUNTER_PIECES] = k + 1
    return True
