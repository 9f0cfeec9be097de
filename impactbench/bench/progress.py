"""Progress of a study's runs: a bar on a terminal, lines with the time left in a log.

:func:`progress_bar` gives tqdm's bar when stderr is a terminal (it shows the time left), and
otherwise, when progress is asked for, a :class:`LineProgress`: one line at most every
:data:`LINE_INTERVAL` seconds, and one at the end, with the runs done, the time spent and the
time left (estimated from the runs finished so far in this call: the cached runs, counted at
the start, take no time).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from tqdm.auto import tqdm

#: Seconds between two progress lines in a log.
LINE_INTERVAL = 30.0


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


class LineProgress:
    """tqdm's interface as :func:`impactbench.bench.runner.execute` uses it (``update``,
    ``total``, ``set_description``, a context manager), written as lines."""

    def __init__(
        self, total: int, initial: int, desc: str, interval: float = LINE_INTERVAL, file: Any = None
    ) -> None:
        self.total, self.initial, self.done, self.desc = total, initial, initial, desc
        self.interval = interval
        self.file: TextIO = file if file is not None else sys.stderr
        self.start = self.last = time.monotonic()
        self.printed = initial

    def __enter__(self) -> LineProgress:
        if self.done < self.total:
            self._line()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.done != self.printed:
            self._line()

    def set_description(self, desc: str) -> None:
        """The label of the next lines."""
        self.desc = desc

    def update(self, n: int = 1) -> None:
        """``n`` more runs done; a line if the last is :attr:`interval` seconds old."""
        self.done += n
        if time.monotonic() - self.last >= self.interval or self.done == self.total:
            self._line()

    def _line(self) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        computed = self.done - self.initial
        left = "time left unknown until a run finishes"
        if computed > 0:
            left = f"about {_duration(elapsed / computed * (self.total - self.done))} left"
        print(
            f"{self.desc}: {self.done}/{self.total} runs, {_duration(elapsed)} spent, {left}",
            file=self.file,
            flush=True,
        )
        self.last, self.printed = now, self.done


def progress_bar(total: int, initial: int, desc: str, show: bool | None) -> Any:
    """A progress display of ``total`` runs, ``initial`` of them done already: tqdm's bar on a
    terminal; lines (:class:`LineProgress`) when ``show`` is True and stderr is not a terminal;
    nothing when ``show`` is False, or None and stderr is not a terminal or ``$CI`` is set."""
    terminal = sys.stderr.isatty()
    if show is None:
        show = terminal and not os.environ.get("CI")
    if show and not terminal:
        return LineProgress(total, initial, desc)
    return tqdm(total=total, initial=initial, desc=desc, unit="run", disable=not show)
