"""Argument types of the command line: output files and numbers, checked before anything runs.

Used as argparse ``type=``: a bad value (a missing folder, NaN, an infinity, a negative step)
is a usage error naming the option (exit code 2) at parse time, not after the run it was to
receive. :class:`Parser` reads a negative number in exponent form as a value.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import style


def _output_file(text: str, suffixes: tuple[str, ...] | None = None) -> Path:
    path = Path(text)
    suffix = path.suffix.lower().lstrip(".")
    if suffixes is not None and suffix not in suffixes:
        wanted = ", ".join(f".{s}" for s in suffixes)
        raise argparse.ArgumentTypeError(f"must end in {wanted}, got {text!r}")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(
            f"the folder {str(folder)!r} of {text!r} does not exist (it is not created)"
        )
    return path


def figure_file(text: str) -> Path:
    """A figure's path: suffix one of :data:`impactbench.bench.style.FORMATS`, in an existing
    folder."""
    return _output_file(text, style.FORMATS)


def csv_file(text: str) -> Path:
    """A CSV file's path, in an existing folder."""
    return _output_file(text)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def finite_number(text: str) -> float:
    """A finite real number (NaN and infinities refused)."""
    return _number(text)


def positive_number(text: str) -> float:
    """A finite real number > 0."""
    value = _number(text)
    if value <= 0.0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def integer_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """The argparse type of an integer in low..high (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"in {low}..{high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value

    return parse


#: An integer >= 1.
positive_int = integer_in(1)


def jobs_count(text: str) -> int:
    """A number of parallel jobs: a positive integer, or -1 for all cores."""
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if jobs == 0 or jobs < -1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or -1, got {jobs}")
    return jobs


#: A string argparse takes for a value, not an option, when it follows an option that expects
#: one: a number with a sign, a decimal point or an exponent (``-1e-3``, ``-.5``, ``-inf``).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|nan)$", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """An argument parser that reads ``--h -1e-3`` as ``--h=-1e-3`` (argparse's own rule takes
    only ``-1`` and ``-0.5`` for negative numbers, and ``-1e-3`` for an unknown option), so the
    option's type reports the bad value. Its subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER
