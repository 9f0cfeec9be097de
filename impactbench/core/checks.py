"""Argument checks for the constructor of a problem or a method: each returns the value
converted (a float, an int, a float64 array) or raises a ValueError naming the argument and its
value.

Booleans are not numbers here: ``True`` for a real parameter (or inside a real vector or
matrix) is refused rather than read as 1.0.
"""

from __future__ import annotations

from ._checks import (
    finite_scalar,
    in_interval,
    positive_int,
    positive_scalar,
    restitution,
    spd_matrix,
    times,
    vector,
)

__all__ = [
    "finite_scalar",
    "in_interval",
    "positive_int",
    "positive_scalar",
    "restitution",
    "spd_matrix",
    "times",
    "vector",
]
