"""The files of a study's folder: its name, what the project owns there, and write failures.

A study's folder is ``<output>/<name>``: the name must be a plain identifier
(:func:`check_study_name`), so that nothing is written outside ``<output>``. The folder must be
a real folder, not a symbolic link (:func:`check_study_folder`): the project writes and deletes
only inside ``<output>``.

Clean-up. A study folder holds files the project wrote and maybe files of its user. The project
records the files it writes by group (the runs' artefact tables, the LaTeX tables of a report)
in a manifest, ``<folder>/.impactbench-manifest.json``; when a group is written again, the
files it held before and does not hold now are deleted (:func:`replace_group`), and no other
file, ever: a ``table_summary.tex`` or ``notes.artefact.csv`` of the user stays. A manifest
that cannot be read (missing, not a regular file, malformed) owns nothing: nothing is deleted.

Files of the user. A file the project writes whole at a fixed name (the index
``<output>/README.md``, a study's ``README.md``) replaces only a file it wrote: one that starts
with the first line the project writes there (its header). A file of the user's at that name
(any other content, a link, a folder) is never overwritten: :func:`check_ours` refuses it with
a :class:`StudyWriteError` naming it, before any run of ``impactbench run``.

Write failures. A study whose files cannot be written (a full disk: ENOSPC) stops with a
:class:`StudyWriteError` naming the file and the study and saying how to resume
(:func:`naming_write_failures`); every file is written atomically, so each file is the previous
one or the new one, never a truncated one.
"""

from __future__ import annotations

import json
import os
import re
import stat
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from ..core._files import CacheWarning, FileWriteError, file_kind, read_regular, write_atomic

#: Name of the manifest of a study folder.
MANIFEST = ".impactbench-manifest.json"

#: Largest manifest read (bytes).
MAX_MANIFEST_BYTES = 1024**2

_FORMAT = 1

#: A study name: letters, digits, ``_`` and ``-``, not starting with ``-``.
STUDY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")

#: Sub-folders of a study folder the project writes into (they must not be links either).
SUBFOLDERS = ("tables",)


def check_study_name(name: Any) -> str:
    """``name`` if it is a plain identifier (:data:`STUDY_NAME`: no separator, no ``..``, not
    empty, not absolute), else ValueError naming it."""
    if not isinstance(name, str) or not STUDY_NAME.fullmatch(name):
        raise ValueError(
            f"study name must be a plain identifier (letters, digits, _ and -; no path "
            f"separator, no '..', not empty), got {name!r}"
        )
    return name


class StudyWriteError(OSError):
    """A study's files could not be written (the message names the file, the study and how to
    resume)."""


def check_study_folder(folder: Path | str) -> Path:
    """``folder`` if neither it nor its :data:`SUBFOLDERS` is a symbolic link and none of them
    holds a special file (:func:`check_no_special_files`), else :class:`StudyWriteError`
    (nothing is written or deleted through a link, nothing blocks on a FIFO)."""
    folder = Path(folder)
    for path in (folder, *(folder / name for name in SUBFOLDERS)):
        if path.is_symlink():
            raise StudyWriteError(
                f"{path} is a symbolic link: impactbench writes and deletes only inside its "
                "output folder, never through a link; remove the link or choose another --output"
            )
        check_no_special_files(path)
    return folder


def check_no_special_files(folder: Path) -> None:
    """Raise :class:`StudyWriteError` naming the first entry of ``folder`` (itself or what a
    link there points to) that is neither a regular file nor a folder: a FIFO, a device or a
    socket, which opening could block on. Nothing when ``folder`` is not a folder."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        try:
            mode = os.stat(entry.path).st_mode
        except OSError:  # a dangling link, a file removed meanwhile: nothing to open
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise StudyWriteError(
                f"{entry.path} is {file_kind(mode)}, not a regular file: impactbench reads and "
                "writes only regular files in its output folder; remove it or choose another "
                "--output"
            )


def check_ours(path: Path | str, header: str) -> Path:
    """``path`` if the project may write it: absent, or a regular file (not a link) whose text
    starts with ``header``, the first line the project writes in it; else
    :class:`StudyWriteError` naming it (a file of the user's is never overwritten).

    Parameters
    ----------
    path : Path or str
    header : str
        The file's first line as the project writes it, newline included.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return path
    start = b""
    if path.is_file() and not path.is_symlink():
        with open(path, "rb") as handle:
            start = handle.read(len(header.encode("utf-8")))
    if start != header.encode("utf-8"):
        raise StudyWriteError(
            f"{path} exists and was not written by impactbench (it does not start with "
            f"{header.strip()!r}): it is not overwritten; move it away or choose another "
            "--output"
        )
    return path


def _valid_entry(name: Any) -> bool:
    if not isinstance(name, str) or "\\" in name:
        return False
    parts = PurePosixPath(name).parts
    return bool(parts) and not PurePosixPath(name).is_absolute() and ".." not in parts


def read_manifest(folder: Path | str) -> dict[str, list[str]]:
    """The groups of files the manifest of ``folder`` records (group -> relative paths); empty
    when there is none, and with a :class:`impactbench.CacheWarning` when it is invalid."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(read_regular(path, MAX_MANIFEST_BYTES).decode("utf-8"))
        groups = (
            data["groups"] if isinstance(data, dict) and data.get("format") == _FORMAT else None
        )
        if not isinstance(groups, dict) or not all(
            isinstance(files, list) and all(_valid_entry(name) for name in files)
            for files in groups.values()
        ):
            raise ValueError("not a manifest of this format")
        return groups
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, ValueError, RecursionError) as error:
        warnings.warn(
            f"ignoring {path} ({error}): no file of this folder is deleted", CacheWarning, 2
        )
        return {}


def replace_group(folder: Path | str, group: str, written: Sequence[str]) -> None:
    """Record ``written`` (paths relative to ``folder``) as the files of ``group``, and delete
    the files the manifest recorded for ``group`` that are not in ``written`` -- those only,
    and never through a symbolic link (:func:`check_study_folder`)."""
    folder = check_study_folder(folder)
    groups = read_manifest(folder)
    keep = set(written)
    for name in groups.get(group, []):
        if name not in keep:
            _delete(folder, name)
    groups[group] = sorted(keep)
    data = {"format": _FORMAT, "groups": dict(sorted(groups.items()))}
    write_atomic(folder / MANIFEST, json.dumps(data, indent=1) + "\n")


def _delete(folder: Path, name: str) -> None:
    """Delete ``folder/name`` unless a folder on the way is a link (or it is a folder)."""
    path = folder
    for part in PurePosixPath(name).parts[:-1]:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return
    path = path / PurePosixPath(name).name
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)


@contextmanager
def naming_write_failures(study: str, resume: str) -> Iterator[None]:
    """Within the block a file that cannot be written
    (:class:`impactbench.core._files.FileWriteError`) becomes a :class:`StudyWriteError` saying
    which file of which study, and ``resume`` (what is kept and how to go on); other errors
    (a file missing when read) go through unchanged."""
    try:
        yield
    except FileWriteError as error:
        what = error.filename or "its files"
        reason = error.strerror or str(error)
        message = f"study {study}: could not write {what}: {reason}. {resume}"
        if error.errno is None:
            raise StudyWriteError(message) from error
        raise StudyWriteError(error.errno, message) from error
