"""Calling a compiled loop without numba's per-call dispatch.

A numba dispatcher types every argument at each call to select the compiled overload, a cost
per argument: for the time loops (about 20 arguments and a tuple of 20 work arrays) and the
event loop (about 50) it is paid on every run (``benchmarks/overhead.py`` times a call).
:class:`DirectCall` selects the overload once, at its first call, and then calls the overload's
compiled entry point directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._jit import TypingError, compiled_entry
from .typing_errors import explain_typing_error


class DirectCall:
    """``function(*arguments)``, through the entry point of the compiled overload its first call
    selected when ``function`` is a numba dispatcher (a plain function is called as such).

    The caller guarantees that every call passes arguments of the first call's numba types
    (the same Python scalars; arrays of the same dtype, dimension, layout, alignment and
    writeability; tuples of such): the entry point converts its arguments by its own
    signature without checking them. The loops of :mod:`impactbench.core.driver` and
    :mod:`impactbench.core.events` build their arguments so (floats, ints, and
    float64, int64 or bool arrays they allocate or copy as C-contiguous, writeable arrays).

    Parameters
    ----------
    function : callable
        A numba dispatcher or a plain function.
    """

    def __init__(self, function: Callable) -> None:
        self.function = function
        self.entry: Callable | None = None

    def __call__(self, *arguments: Any) -> Any:
        entry = self.entry
        if entry is not None:
            return entry(*arguments)
        try:
            result = self.function(*arguments)
        except TypingError as error:  # the first call compiles: a mistake of a scheme's code
            explained = explain_typing_error(error)
            if explained is None:
                raise
            raise explained from None  # numba's message stays its __context__
        self.entry = compiled_entry(self.function, arguments)
        return result
