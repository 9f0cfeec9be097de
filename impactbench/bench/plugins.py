"""Third-party methods, problems and studies: entry points, and study files.

A package adds to impactbench without editing it by declaring entry points in its own
``pyproject.toml``::

    [project.entry-points."impactbench.methods"]
    MyScheme = "my_package.schemes:MyScheme"          # a Method subclass
    [project.entry-points."impactbench.problems"]
    MyModel = "my_package.models:MyModel"             # a Problem subclass (or factory)
    [project.entry-points."impactbench.studies"]
    my_study = "my_package.study:STUDY"               # an impactbench.bench.study.Study

Once installed, each is in ``METHODS``, ``PROBLEMS`` or ``STUDIES`` under its entry-point name (a
study under its own ``name``): it is listed by ``impactbench list`` and runs by name in
``impactbench run``, ``simulate`` and ``validate``. A plug-in that fails to load, is not what its
group holds, or takes a name already used is left out with a :class:`PluginWarning` that names
it (the built-ins and the plug-ins found first keep their names).

A study can also live in a plain file: ``impactbench run path/to/study.py`` runs the ``STUDY``
that the file defines (:func:`load_study_file`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import cloudpickle

#: Entry-point groups read by :func:`discover`.
GROUPS = ("impactbench.methods", "impactbench.problems", "impactbench.studies")


class PluginWarning(UserWarning):
    """A third-party plug-in was left out (the message says which and why)."""


def discover(
    group: str, accept: Callable[[Any], bool], what: str, taken: Mapping[str, Any]
) -> dict[str, Any]:
    """The plug-ins of an entry-point group, by name.

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.
    accept : callable
        ``accept(value) -> bool``: whether a loaded value is what the group holds.
    what : str
        What the group holds, for the warnings (e.g. "an impactbench.Method subclass").
    taken : mapping
        Names already in use (the built-ins).
    """
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    found: dict[str, Any] = {}
    for entry in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        where = f"{entry.name} = {entry.value!r} (entry point of group {group})"
        try:
            value = entry.load()
        except Exception as error:  # noqa: BLE001 - a broken plug-in must not break impactbench
            _warn(f"{where} could not be loaded: {type(error).__name__}: {error}")
            continue
        if not accept(value):
            _warn(f"{where} is not {what}: {value!r:.100}")
        elif entry.name in taken or entry.name in found:
            _warn(f"{where}: the name {entry.name!r} is already used")
        else:
            found[entry.name] = value
    return found


def _warn(message: str) -> None:
    warnings.warn(f"plug-in left out: {message}", PluginWarning, stacklevel=3)


def load_study_file(path: Path | str) -> Any:
    """The ``STUDY`` defined by a Python file (a user's study outside any package).

    The file is imported as the module named after it (its folder first on ``sys.path``, as
    pytest imports test files), so that the names in its runs' cache keys are stable, and its
    functions and classes are pickled by value for the worker processes, which cannot import it.

    Raises
    ------
    ValueError
        If ``path`` is not a ``.py`` file, or the file defines no ``STUDY`` (an
        :class:`impactbench.bench.study.Study`), or its module name is taken by another module.
    """
    from .study import Study

    path = Path(path)
    if path.suffix != ".py" or not path.is_file():
        raise ValueError(f"study file must be an existing .py file, got {str(path)!r}")
    path = path.resolve()
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() != path:
        raise ValueError(
            f"study file {str(path)!r} cannot be imported as module {name!r}: that name is "
            f"already used by {existing!r}; rename the file"
        )
    if existing is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            sys.path.remove(str(path.parent))
        cloudpickle.register_pickle_by_value(module)
    study = getattr(sys.modules[name], "STUDY", None)
    if not isinstance(study, Study):
        raise ValueError(
            f"study file {str(path)!r} must define STUDY, an impactbench.bench.study.Study, got "
            f"{study!r:.100}"
        )
    return study
