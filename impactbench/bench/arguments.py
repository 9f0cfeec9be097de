"""Argument types of the command line that check an output file before anything runs.

Used as argparse ``type=``: a bad value is a usage error naming the option (exit code 2) at
parse time, not after the run it was to receive.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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
