"""Compiled right-hand side of the free flight, for the event loop run as plain Python.

Between impacts without persistent contact the event-driven method integrates the first-order
system y' = (v, M(q)^-1 F(t, q, v)) with y = (q, v). For a problem with compiled kernels this
function is compiled once per (problem class, n) from the kernels, so that the solver's many
right-hand side calls do not each go through the Python methods of the problem and a LAPACK
solve, which would be most of a run's time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from impactbench.core.contact import ldl_factor_mass
from impactbench.core.scheme import (
    ProblemKernels,
    bind_problem,
    ldl_solve,
    scheme_function,
)


@scheme_function
def free_flight(problem, n, t, y, p, M, L, a, out):
    """out = (v, M(q)^-1 F(t, q, v)) for y = (q, v); False if M(q) is not positive definite or
    out not finite. ``M``, ``L`` (n, n) and ``a`` (n,) are work arrays, ``out`` (2n,)."""
    q = y[:n]
    v = y[n:]
    problem.mass_matrix(q, p, M)
    if not ldl_factor_mass(M, n, L):
        return False
    problem.forces(t, q, v, p, a)
    ldl_solve(L, n, a, a)
    check = 0.0
    for j in range(n):
        out[j] = v[j]
        out[n + j] = a[j]
        check += v[j] + a[j]
    return np.isfinite(check)


_COMPILED: dict[tuple[ProblemKernels, int], Callable] = {}


def free_flight_rhs(kernels: ProblemKernels, n_dof: int) -> Callable:
    """``rhs(t, y, p, M, L, a, out) -> bool``, :func:`free_flight` for these kernels (compiled
    once per process and cached on disk)."""
    key = (kernels, n_dof)
    if key not in _COMPILED:
        _COMPILED[key] = bind_problem(free_flight, kernels, n_dof)
    return _COMPILED[key]
