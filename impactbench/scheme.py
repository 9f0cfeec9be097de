"""The scheme API: write a fixed-step scheme on named state (:mod:`impactbench.core.scheme`).

``from impactbench.scheme import Scheme, velocity_impulse, ...``: the names a scheme needs, from
the module that defines them (see its docstring for the contract, and docs/adding-a-scheme.md
for a complete example).
"""

from .core.scheme import (
    DEGENERATE_GRADIENT,
    IMPACT_STATE,
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
    Kernels,
    Scheme,
    factor_mass,
    scheme_function,
    solve_mass,
    velocity_impulse,
)

__all__ = [
    "DEGENERATE_GRADIENT",
    "IMPACT_STATE",
    "STATUS_CONTACT_SOLVE_FAILED",
    "STATUS_DEGENERATE_GRADIENT",
    "STATUS_GAP_NOT_FINITE",
    "STATUS_MASS_NOT_SPD",
    "STATUS_OK",
    "STATUS_PROJECTION_NOT_CONVERGED",
    "Kernels",
    "Scheme",
    "factor_mass",
    "scheme_function",
    "solve_mass",
    "velocity_impulse",
]
