"""The problem's kernels as run-time values of the compiled event loop.

The compiled engine takes the problem's kernels as first-class kernels
(:func:`impactbench.core._jit.first_class_kernel`), carried with the kernel parameters in the
run's ``p``: ``p = (parameters, kernels)``, ``kernels`` an :class:`EngineKernels`. The templates
call ``forces(t, q, v, p, out)``, ``gap(t, q, p, out)``, ``gap_gradient(t, q, p, out)`` and so on;
in a compiled engine these names are bound to the functions below, which call the kernel of
``p`` with its parameters. One compiled engine then serves every problem of its sizes and flags
(pair, n, m, constant mass, friction, moving obstacle), and a problem compiles only its
kernels' entry points.

The geometric calls take the time first for every problem: a scleronomic engine binds
:data:`CALLS`, which drop it (the kernels take none; the same machine code once inlined), a
rheonomic one :data:`TIMED_CALLS`, which pass it, with the time terms r = dg/dt
(``gap_rate``) and c = d2g/dt2 + 2 (dG/dt) v (``gap_drift``); a scleronomic engine binds
:func:`no_rate` and :func:`no_drift` in their place, called under no branch it runs (the
templates guard them with ``RHEONOMIC``).

A rheonomic problem's timed kernels ``gap(t, q, p, out)``, ``gap_gradient(t, q, p, out)`` and
``gap_rate(t, q, p, out)`` are first-class kernels of the forms ``"timed vector"`` and
``"timed matrix"`` of :func:`~impactbench.core._jit.first_class_kernel` (the time-steppers'
own: :func:`impactbench.core.scheme._first_class`), called with (t, q, p, out), ``out`` a
vector or the caller's (rows, columns) matrix.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from impactbench.core._jit import first_class_kernel

#: The first-class kernels of a problem; ``tangent_gradient`` and ``friction`` None for a
#: frictionless one, ``gap_rate`` and ``gap_drift`` None for a scleronomic one.
EngineKernels = namedtuple(
    "EngineKernels",
    "mass_matrix forces gap gap_gradient tangent_gradient friction gap_rate gap_drift",
    defaults=(None, None),
)


def engine_kernels(kernels: Any) -> EngineKernels:
    """The first-class kernels of a problem's ``kernels`` (``problem.kernels()``)."""
    frictional = kernels.tangent_gradient is not None
    if kernels.rheonomic:
        geometry = (
            first_class_kernel(kernels.gap, "timed vector"),
            first_class_kernel(kernels.gap_gradient, "timed matrix"),
        )
    else:
        geometry = (
            first_class_kernel(kernels.gap, "vector"),
            first_class_kernel(kernels.gap_gradient, "matrix"),
        )
    result = EngineKernels(
        first_class_kernel(kernels.mass_matrix, "matrix"),
        first_class_kernel(kernels.forces, "forces"),
        *geometry,
        first_class_kernel(kernels.tangent_gradient, "matrix") if frictional else None,
        first_class_kernel(kernels.friction, "pair") if frictional else None,
    )
    if not kernels.rheonomic:
        return result
    return result._replace(
        gap_rate=first_class_kernel(kernels.gap_rate, "timed vector"),
        gap_drift=first_class_kernel(kernels.gap_drift, "forces"),
    )


def mass_matrix(q, p, out):
    """M(q) into ``out`` by the kernel of ``p = (parameters, kernels)``."""
    p[1].mass_matrix(q, p[0], out)


def forces(t, q, v, p, out):
    """F(t, q, v) into ``out``."""
    p[1].forces(t, q, v, p[0], out)


def gap(t, q, p, out):
    """g(q) into ``out`` (a scleronomic problem: t unused)."""
    p[1].gap(q, p[0], out)


def gap_gradient(t, q, p, out):
    """grad g(q) into ``out`` (a scleronomic problem: t unused)."""
    p[1].gap_gradient(q, p[0], out)


def timed_gap(t, q, p, out):
    """g(t, q) into ``out`` (a rheonomic problem)."""
    p[1].gap(t, q, p[0], out)


def timed_gap_gradient(t, q, p, out):
    """G = dg/dq at (t, q) into ``out`` (a rheonomic problem)."""
    p[1].gap_gradient(t, q, p[0], out)


def gap_rate(t, q, p, out):
    """r = dg/dt at (t, q) into ``out`` (a rheonomic problem)."""
    p[1].gap_rate(t, q, p[0], out)


def gap_drift(t, q, v, p, out):
    """c = d2g/dt2 + 2 (dG/dt) v at (t, q, v) into ``out`` (a rheonomic problem)."""
    p[1].gap_drift(t, q, v, p[0], out)


def no_rate(t, q, p, out):
    """The stand-in of ``gap_rate`` in a scleronomic engine (never run: r = 0 is added
    nowhere)."""
    return


def no_drift(t, q, v, p, out):
    """The stand-in of ``gap_drift`` in a scleronomic engine (never run)."""
    return


def tangent_gradient(q, p, out):
    """The tangent rows W_T(q) into ``out``."""
    p[1].tangent_gradient(q, p[0], out)


def friction(q, p, mu, e_t):
    """The friction coefficients mu and tangential restitutions e_T into ``mu``, ``e_t``."""
    p[1].friction(q, p[0], mu, e_t)


#: The calls bound in place of the kernels of a scleronomic problem, by name.
CALLS = {
    "mass_matrix": mass_matrix,
    "forces": forces,
    "gap": gap,
    "gap_gradient": gap_gradient,
    "gap_rate": no_rate,
    "gap_drift": no_drift,
    "tangent_gradient": tangent_gradient,
    "friction": friction,
}

#: The calls of a rheonomic problem: the timed geometry and its time terms.
TIMED_CALLS = {
    **CALLS,
    "gap": timed_gap,
    "gap_gradient": timed_gap_gradient,
    "gap_rate": gap_rate,
    "gap_drift": gap_drift,
}
