"""The problem's kernels as run-time values of the compiled event loop.

The compiled engine takes the problem's kernels as first-class kernels
(:func:`impactbench.core._jit.first_class_kernel`), carried with the kernel parameters in the
run's ``p``: ``p = (parameters, kernels)``, ``kernels`` an :class:`EngineKernels`. The templates
call ``forces(t, q, v, p, out)``, ``gap(q, p, out)`` and so on as before; in a compiled engine
these names are bound to the functions below, which call the kernel of ``p`` with its
parameters. One compiled engine then serves every problem of its sizes and flags (pair, n, m,
constant mass, friction), and a problem compiles only its kernels' entry points.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from impactbench.core._jit import first_class_kernel

#: The first-class kernels of a problem; ``tangent_gradient`` and ``friction`` None for a
#: frictionless one.
EngineKernels = namedtuple(
    "EngineKernels", "mass_matrix forces gap gap_gradient tangent_gradient friction"
)


def engine_kernels(kernels: Any) -> EngineKernels:
    """The first-class kernels of a problem's ``kernels`` (``problem.kernels()``)."""
    frictional = kernels.tangent_gradient is not None
    return EngineKernels(
        first_class_kernel(kernels.mass_matrix, "matrix"),
        first_class_kernel(kernels.forces, "forces"),
        first_class_kernel(kernels.gap, "vector"),
        first_class_kernel(kernels.gap_gradient, "matrix"),
        first_class_kernel(kernels.tangent_gradient, "matrix") if frictional else None,
        first_class_kernel(kernels.friction, "pair") if frictional else None,
    )


def mass_matrix(q, p, out):
    """M(q) into ``out`` by the kernel of ``p = (parameters, kernels)``."""
    p[1].mass_matrix(q, p[0], out)


def forces(t, q, v, p, out):
    """F(t, q, v) into ``out``."""
    p[1].forces(t, q, v, p[0], out)


def gap(q, p, out):
    """g(q) into ``out``."""
    p[1].gap(q, p[0], out)


def gap_gradient(q, p, out):
    """grad g(q) into ``out``."""
    p[1].gap_gradient(q, p[0], out)


def tangent_gradient(q, p, out):
    """The tangent rows W_T(q) into ``out``."""
    p[1].tangent_gradient(q, p[0], out)


def friction(q, p, mu, e_t):
    """The friction coefficients mu and tangential restitutions e_T into ``mu``, ``e_t``."""
    p[1].friction(q, p[0], mu, e_t)


#: The calls bound in place of the kernels, by name.
CALLS = {
    "mass_matrix": mass_matrix,
    "forces": forces,
    "gap": gap,
    "gap_gradient": gap_gradient,
    "tangent_gradient": tangent_gradient,
    "friction": friction,
}
