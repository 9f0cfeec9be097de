"""The time numba spends compiling, or loading compiled code from its disk cache, during a call,
and a one-line notice on stderr when it starts compiling.

:meth:`impactbench.Method.solve` times each run with :func:`clock`: ``stats["compile_time"]`` is
the time spent holding (or waiting for) numba's compiler lock, which numba takes to compile a
function and to load one from its disk cache, and ``stats["wall_time"]`` the rest of the call.
A loop is compiled once per machine: numba's disk cache keeps it, and later processes load it.

With notices on (:func:`notices`, which the command line turns on; the environment variable
:data:`NOTICE_VARIABLE` carries the setting to worker processes), the first compilation of a
call prints one line saying what is compiled and that it happens once per machine.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from . import _jit

#: Set to "1" while notices are on (inherited by the worker processes started meanwhile).
NOTICE_VARIABLE = "IMPACTBENCH_COMPILE_NOTICE"


class _State(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # nesting of the compiler lock in this thread
        self.start = 0.0
        self.total = 0.0  # seconds held or awaited in this thread, since it started
        # what the next compilation compiles (a callable: formatted when it is printed)
        self.pending_notice: str | Callable[[], str] | None = None


_STATE = _State()


def _lock_taken() -> None:
    if _STATE.depth == 0:
        _STATE.start = time.perf_counter()
    _STATE.depth += 1


def _lock_released() -> None:
    """Adds the time of each outermost hold of numba's compiler lock to the thread's total."""
    _STATE.depth -= 1
    if _STATE.depth == 0:
        _STATE.total += time.perf_counter() - _STATE.start


def _compiling() -> None:
    """Prints the pending notice of the thread at its first compilation (not a cache load)."""
    what = _STATE.pending_notice
    if what is not None and os.environ.get(NOTICE_VARIABLE) == "1":
        _STATE.pending_notice = None
        if callable(what):
            what = what()
        print(
            f"compiling {what} (numba; once per machine, then loaded from its disk cache)",
            file=sys.stderr,
            flush=True,
        )


_jit.watch_compilation(_lock_taken, _lock_released, _compiling)


class Clock:
    """Seconds spent compiling or loading compiled code since :func:`clock` started."""

    __slots__ = ("seconds", "_what", "_outer", "_before")

    def __init__(self, what: str | Callable[[], str]) -> None:
        self.seconds = 0.0
        self._what = what

    def __enter__(self) -> Clock:
        self._outer = _STATE.pending_notice
        _STATE.pending_notice = self._what
        self._before = _STATE.total
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = _STATE.total - self._before
        _STATE.pending_notice = self._outer


def clock(what: str | Callable[[], str]) -> Clock:
    """Time the compilation (and disk-cache loading) of the block (``with clock(what) as c``)
    in this thread, into ``c.seconds``; ``what`` names the code for the notice (e.g.
    ``"MoreauJean[theta=0.5] for BouncingBall"``), or returns that name (called only to print
    a notice)."""
    return Clock(what)


@contextmanager
def notices(on: bool = True) -> Iterator[None]:
    """Turn the compile notices on (or off) in the block, in this process and in the worker
    processes it starts meanwhile."""
    previous = os.environ.get(NOTICE_VARIABLE)
    os.environ[NOTICE_VARIABLE] = "1" if on else "0"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[NOTICE_VARIABLE]
        else:
            os.environ[NOTICE_VARIABLE] = previous
