"""Numba configuration shared by the core kernels and the compiled time-stepping loops.

Every kernel is an ordinary Python function; :data:`kernel` compiles module-level helpers (cached
on disk), and :func:`maybe_compile` compiles the closures built by the loop factories. With
``compile=False`` the same source runs as plain Python (the path for problems numba cannot
compile, and for debugging; ``NUMBA_DISABLE_JIT=1`` makes the helpers plain Python too).
"""

from __future__ import annotations

from collections.abc import Callable

import numba

#: Decorator for module-level numerical helpers and problem kernels.
kernel = numba.njit(cache=True, nogil=True)

#: Decorator for the small helpers called in every step (factorisations, solves, the impact law):
#: numba inlines them into the calling loop. Separately compiled helpers are called through an
#: opaque call that passes each array as a struct and reference-counts it, which measured here
#: costs 20-200 ns per step, more than the arithmetic of a small system.
hot_kernel = numba.njit(inline="always", nogil=True)


def maybe_compile(function: Callable, compile: bool) -> Callable:
    """Return ``function`` compiled by numba when ``compile`` is true, else unchanged."""
    return numba.njit(nogil=True)(function) if compile else function
