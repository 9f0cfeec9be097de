"""Numba configuration shared by the core kernels and the compiled time-stepping loops.

Every kernel is an ordinary Python function; :data:`kernel` compiles module-level helpers (cached
on disk). A time loop is a *template*: a module-level function whose problem-specific names
(``mass_matrix``, ``forces``, ``gap``, ``gap_gradient`` and flags such as ``CONSTANT_MASS``) are
free globals, bound per problem by :func:`specialize`. The bound copy is compiled by numba and
cached on disk under a name that carries a digest of everything compiled into it, so a loop is
compiled once per machine rather than once per process (closures over the kernels cannot be
cached: numba keys them by a pickle of the closure cells, which differs in every process). With
``compile=False`` the same template runs as plain Python (the path for problems numba cannot
compile, and for debugging; ``NUMBA_DISABLE_JIT=1`` makes the helpers plain Python too).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

import numba
from numba.core.dispatcher import Dispatcher

#: Decorator for module-level numerical helpers and problem kernels.
kernel = numba.njit(cache=True, nogil=True)

#: Decorator for the small helpers called in every step (factorisations, solves, the impact law):
#: numba inlines them into the calling loop. Separately compiled helpers are called through an
#: opaque call that passes each array as a struct and reference-counts it, which measured here
#: costs 20-200 ns per step, more than the arithmetic of a small system.
hot_kernel = numba.njit(inline="always", nogil=True)


#: Modules whose code is inlined into every compiled loop (part of each loop's cache digest).
_INLINED_MODULES = ("impactbench._jit", "impactbench.contact", "impactbench.timestepping")


def _source_digest(value: Any, hasher: Any) -> None:
    """Feed ``value`` to ``hasher``: for a function its module's source, else its repr."""
    function = getattr(value, "py_func", value)
    if isinstance(function, types.FunctionType):
        hasher.update(f"{function.__module__}.{function.__qualname__}".encode())
        module = sys.modules.get(function.__module__)
        try:
            hasher.update(inspect.getsource(module).encode() if module else b"")
        except (OSError, TypeError):
            hasher.update(function.__code__.co_code)
    else:
        hasher.update(repr(value).encode())


def _inlined(value: Any) -> Any:
    """A numba function recompiled with ``inline="always"``; any other value unchanged."""
    if not isinstance(value, Dispatcher) or value.targetoptions.get("inline") == "always":
        return value
    return numba.njit(inline="always", nogil=True)(value.py_func)


def specialize(
    template: Callable, bindings: dict[str, Any], compile: bool, inline: bool = False
) -> Callable:
    """Copy ``template`` with its free globals bound to ``bindings``; compile it if asked.

    Parameters
    ----------
    template : function
        A module-level function whose problem-specific names are globals.
    bindings : dict
        Name -> value for those globals (numba functions, or bools/ints, which numba treats as
        compile-time constants, so branches on them are pruned). Compiled as a loop (not
        ``inline``), the numba functions are inlined into it by numba itself: LLVM's own
        heuristics left some problem kernels (the double pendulum's gap) as opaque calls, which
        pass every array as a struct and hide what the kernels share (the same sin q evaluated
        by the forces and the gap). An ``inline`` helper (the metric projection, a slow path
        that calls the gap inside Newton and difference loops) keeps ordinary calls: inlining
        there only adds compile time (measured 27 s against 23 s for the Paoli-Schatzman
        pendulum loop).
    compile : bool
        False: return the plain-Python copy. True: compile it with numba, cached on disk.
    inline : bool
        Compile with ``inline="always"`` (for helpers called by other loops; not cached itself,
        it is compiled into its caller).
    """
    namespace = dict(template.__globals__)
    if compile and not inline:
        bindings = {name: _inlined(value) for name, value in bindings.items()}
    namespace.update(bindings)
    function = types.FunctionType(
        template.__code__, namespace, template.__name__, template.__defaults__
    )
    function.__module__ = template.__module__
    if not compile:
        return function
    if inline:
        return numba.njit(inline="always", nogil=True)(function)
    hasher = hashlib.sha256()
    for name in _INLINED_MODULES:
        hasher.update(inspect.getsource(sys.modules[name]).encode())
    for name in sorted(bindings):
        hasher.update(name.encode())
        _source_digest(bindings[name], hasher)
    function.__qualname__ = f"{template.__qualname__}_{hasher.hexdigest()[:20]}"
    return numba.njit(cache=True, nogil=True)(function)
