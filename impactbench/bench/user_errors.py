"""An exception raised during a run, told in one line: its message, the user's function that
raised it with its file and line, and where the run was (t, q) when it called that function.

The command line reports a run that failed this way as a failed run (exit code 1) and goes on
with its other runs; the full traceback is printed under ``--debug`` only.
"""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path
from types import FrameType, TracebackType

import numpy as np

#: The folders of impactbench's own packages (the methods, problems and studies included).
_OWN_PACKAGES = (
    "impactbench",
    "impactbench.methods",
    "impactbench.problems",
    "impactbench.studies",
)


def _own_folders() -> tuple[Path, ...]:
    folders = []
    for name in _OWN_PACKAGES:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if file:
            folders.append(Path(file).resolve().parent)
    return tuple(folders)


def _library_folders() -> tuple[Path, ...]:
    """Python's standard library and installed packages (numpy raising inside a user's call)."""
    paths = sysconfig.get_paths()
    return tuple(Path(paths[key]).resolve() for key in ("stdlib", "purelib", "platlib"))


def _inside(file: str, folders: tuple[Path, ...]) -> bool:
    path = Path(file).resolve()
    return any(folder == path or folder in path.parents for folder in folders)


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _state(frames: list[FrameType]) -> str:
    """``t = ..., q = [...]`` read from the first of ``frames`` that hold them (the
    plain-Python kernels keep the time of the step's force evaluation in ``step[0]``)."""
    t = q = None
    for frame in frames:
        local = frame.f_locals
        if q is None and isinstance(local.get("q"), np.ndarray):
            q = local["q"]
        if t is None and isinstance(local.get("t"), (float, int, np.floating)):
            t = float(local["t"])
        step = local.get("step")
        if t is None and isinstance(step, list) and step and isinstance(step[0], float):
            t = float(step[0])
        if t is not None and q is not None:
            break
    parts = [] if t is None else [f"t = {t!r}"]
    if q is not None:
        parts.append(f"q = {np.array2string(np.asarray(q, dtype=float), precision=6)}")
    return ", ".join(parts)


def _split(error: BaseException) -> tuple[list, list] | None:
    """The traceback of ``error`` as (impactbench's frames up to its last call out, the user's
    frames below it, libraries left out), or None when no user code raised it."""
    frames = _frames(error.__traceback__)
    own, libraries = _own_folders(), _library_folders()
    is_own = [_inside(frame.f_code.co_filename, own) for frame, _ in frames]
    if True not in is_own:
        return None
    last_own = len(is_own) - 1 - is_own[::-1].index(True)
    users = [
        (frame, line)
        for frame, line in frames[last_own + 1 :]
        if not _inside(frame.f_code.co_filename, libraries)
    ]
    return (frames[: last_own + 1], users) if users else None


def raised_by_user_code(error: BaseException) -> bool:
    """Whether ``error`` was raised in code that impactbench called from outside its packages
    (a user's problem or method), rather than by impactbench's own checks."""
    return _split(error) is not None


def describe(error: BaseException) -> str:
    """``error`` in one line: its type and message, and, when a user's code raised it
    (:func:`raised_by_user_code`), that code's function, file and line, and the run's t and q
    at the call.

    Returns
    -------
    str
        E.g. ``"RuntimeError: gap undefined (raised in gap(), wavy.py:20), called at
        t = 0.31, q = [0.49]"``.
    """
    text = f"{type(error).__name__}: {error}"
    split = _split(error)
    if split is None:
        return text
    own, users = split
    deepest, line = users[-1]
    where = f"{Path(deepest.f_code.co_filename).name}:{line}"
    state = _state([users[0][0], *(frame for frame, _ in reversed(own))])  # its arguments first
    called = f", called at {state}" if state else ""
    return f"{text} (raised in {users[0][0].f_code.co_name}(), {where}){called}"


def print_traceback(error: BaseException) -> None:
    """The full traceback of ``error`` on stderr (``--debug``)."""
    traceback.print_exception(error, file=sys.stderr)
