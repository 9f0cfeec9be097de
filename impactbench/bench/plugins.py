"""Third-party methods, problems and studies: entry points, and study files.

A package adds to impactbench without editing it by declaring entry points in its own
``pyproject.toml``::

    [project.entry-points."impactbench.methods"]
    MyScheme = "my_package.schemes:MyScheme"          # a Method subclass
    [project.entry-points."impactbench.problems"]
    MyModel = "my_package.models:MyModel"             # a Problem subclass (or factory)
    [project.entry-points."impactbench.studies"]
    my_study = "my_package.study:STUDY"               # a Study named my_study

Once installed, each is in :data:`METHODS`, :data:`PROBLEMS` or
``impactbench.studies.STUDIES`` under its entry-point name: it is listed by ``impactbench list``
and runs by name in ``impactbench run``, ``simulate`` and ``validate``. These registries hold the
built-ins (``impactbench.methods.METHODS``, ``impactbench.problems.PROBLEMS``) and the plug-ins,
and import a plug-in only when it is asked for by name or when the whole registry is read:
``impactbench --help`` and a command that names built-ins only run no plug-in code. A plug-in
that fails to import (any exception, ``SystemExit`` included; a ``KeyboardInterrupt`` is the
user's and stops the command), is not what its group holds, or takes a name already used is left
out with a :class:`PluginWarning` that names it (the built-ins and the plug-ins found first keep
their names).

The built-in studies compare the built-in methods; the installed plug-in methods join them only
when asked (:func:`plugins_in_studies`, ``impactbench run --with-plugins``).

A study can also live in a plain file: ``impactbench run path/to/study.py`` runs the ``STUDY``
that the file defines (:func:`load_study_file`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import cloudpickle

from ..core.adaptive import Adaptive
from ..core.method import Method
from ..core.problem import Problem
from ..methods import METHODS as BUILTIN_METHODS
from ..problems import PROBLEMS as BUILTIN_PROBLEMS
from .study import Study

#: Entry-point groups read by :class:`Registry`.
GROUPS = ("impactbench.methods", "impactbench.problems", "impactbench.studies")


class PluginWarning(UserWarning):
    """A third-party plug-in was left out (the message says which and why)."""


#: The distribution whose own entry points are built-ins (the studies of ``studies/``).
DISTRIBUTION = "impactbench"


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The third-party entry points of ``group``, by name (read from the packages' metadata: no
    plug-in code runs)."""
    return sorted(
        (entry for entry in importlib.metadata.entry_points(group=group) if not _own(entry)),
        key=lambda entry: entry.name,
    )


def _own_entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """This distribution's entry points of ``group`` (its built-ins), by name."""
    own = (entry for entry in importlib.metadata.entry_points(group=group) if _own(entry))
    return {entry.name: entry for entry in sorted(own, key=lambda entry: entry.name)}


def _own(entry: importlib.metadata.EntryPoint) -> bool:
    dist = getattr(entry, "dist", None)
    return dist is not None and dist.name == DISTRIBUTION


class Registry(Mapping[str, Any]):
    """Built-ins by name, then the plug-ins of an entry-point group, each imported on first use.

    The built-ins are those given, then this distribution's own entry points of the group (the
    built-in studies): imported on first use too, and an error in one of them is raised, not
    warned about (it is a defect of impactbench, not a plug-in's). Looking a name up
    (``registry[name]``, ``name in registry``) imports at most the entries declared under that
    name; iterating (``list(registry)``, ``.items()``, ``len``) imports every entry of the
    group. :meth:`names` lists the names without importing anything. A plug-in that cannot be
    used is left out with a :class:`PluginWarning`, once per process.

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.
    builtins : dict
        The built-in entries, by name (they come first and keep their names); an entry
        registered at run time (``registry[name] = value``) joins them.
    accept : callable
        ``accept(name, value) -> bool``: whether a loaded value is what the group holds.
    what : str
        What the group holds, for the warnings (e.g. "an impactbench.Method subclass").
    """

    def __init__(
        self,
        group: str,
        builtins: dict[str, Any],
        accept: Callable[[str, Any], bool],
        what: str,
    ) -> None:
        if group not in GROUPS:
            raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
        self.group = group
        self.builtins = builtins
        self.accept = accept
        self.what = what
        self._loaded: dict[tuple[str, str], Any] = {}  # (name, value) -> plug-in, or None
        self._own_loaded: dict[str, Any] = {}  # name -> this distribution's entry, loaded
        self._shadowed: set[tuple[str, str]] = set()  # warned about: their name is taken

    def __setitem__(self, name: str, value: Any) -> None:
        """Register ``value`` under ``name`` for this process, as a built-in entry."""
        self.builtins[name] = value

    def __delitem__(self, name: str) -> None:
        del self.builtins[name]

    def _own_names(self) -> list[str]:
        return [name for name in _own_entry_points(self.group) if name not in self.builtins]

    def names(self) -> list[str]:
        """Every name, the plug-ins' as declared (none is imported, so none is checked)."""
        own = [*self.builtins, *self._own_names()]
        declared = [entry.name for entry in _entry_points(self.group)]
        return [*own, *sorted(set(declared) - set(own))]

    def _own(self, name: str) -> Any:
        """The built-in entry point ``name`` of this distribution, loaded and checked (an error
        is raised: a built-in that does not load is a defect, not a plug-in to leave out)."""
        if name not in self._own_loaded:
            entry = _own_entry_points(self.group)[name]
            value = entry.load()
            if not self.accept(name, value):
                raise TypeError(f"{_where(entry)} is not {self.what}: {value!r:.100}")
            self._own_loaded[name] = value
        return self._own_loaded[name]

    def __getitem__(self, name: str) -> Any:
        if name in self.builtins:
            return self.builtins[name]
        if name in _own_entry_points(self.group):
            return self._own(name)
        for entry in _entry_points(self.group):
            if entry.name == name:
                value = self._load(entry)
                if value is not None:
                    return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        yield from self.builtins
        for name in self._own_names():
            self._own(name)
            yield name
        yield from self._plugins()

    def __len__(self) -> int:
        return len(self.builtins) + len(self._own_names()) + len(self._plugins())

    def _plugins(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        taken = set(self.builtins) | set(_own_entry_points(self.group))
        for entry in _entry_points(self.group):
            if entry.name in taken or entry.name in found:
                if (entry.name, entry.value) not in self._shadowed:
                    self._shadowed.add((entry.name, entry.value))
                    _warn(f"{_where(entry)}: the name {entry.name!r} is already used")
                continue
            value = self._load(entry)
            if value is not None:
                found[entry.name] = value
        return found

    def _load(self, entry: importlib.metadata.EntryPoint) -> Any:
        """The plug-in of ``entry``, or None (with a warning) when it cannot be used."""
        key = (entry.name, entry.value)
        if key in self._loaded:
            return self._loaded[key]
        self._loaded[key] = None
        try:
            value = entry.load()
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - a broken plug-in must not stop impactbench
            _warn(f"{_where(entry)} could not be loaded: {_describe(error)}")
            return None
        if not self.accept(entry.name, value):
            _warn(f"{_where(entry)} is not {self.what}: {value!r:.100}")
            return None
        self._loaded[key] = value
        return value


def _where(entry: importlib.metadata.EntryPoint) -> str:
    return f"{entry.name} = {entry.value!r} (entry point of group {entry.group})"


def _describe(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r})"
    return f"{type(error).__name__}: {error}"


def _warn(message: str) -> None:
    warnings.warn(f"plug-in left out: {message}", PluginWarning, stacklevel=4)


def _is_problem_factory(value: Any) -> bool:
    return (isinstance(value, type) and issubclass(value, Problem)) or (
        inspect.isfunction(value) and "<" not in value.__qualname__
    )


#: The built-in methods, then the installed plug-in methods (group ``impactbench.methods``).
METHODS = Registry(
    "impactbench.methods",
    BUILTIN_METHODS,
    lambda name, value: isinstance(value, type) and issubclass(value, Method),
    "an impactbench.Method subclass",
)
#: The built-in problems, then the installed plug-in problems (group ``impactbench.problems``).
PROBLEMS = Registry(
    "impactbench.problems",
    BUILTIN_PROBLEMS,
    lambda name, value: _is_problem_factory(value),
    "an impactbench.Problem subclass or a module-level function returning one",
)

#: The studies: the built-in ones (this distribution's entry points of ``impactbench.studies``,
#: declared in its pyproject.toml, one per module of ``studies/``), then the installed plug-in
#: studies (group ``impactbench.studies``), each under its entry-point name, which must be its
#: ``name``; each imported on first use.
STUDIES = Registry(
    "impactbench.studies",
    {},
    lambda name, value: isinstance(value, Study) and value.name == name,
    "an impactbench.bench.study.Study named like its entry point",
)

_PLUGINS_IN_STUDIES: ContextVar[bool] = ContextVar("plugins_in_studies", default=False)


@contextmanager
def plugins_in_studies(enabled: bool = True) -> Iterator[None]:
    """Within the block, :func:`study_methods` includes the installed plug-in methods (when
    ``enabled``): the built-in studies' runs then compare them too."""
    token = _PLUGINS_IN_STUDIES.set(bool(enabled))
    try:
        yield
    finally:
        _PLUGINS_IN_STUDIES.reset(token)


def study_methods() -> Mapping[str, type[Method]]:
    """The methods the built-in studies compare, by name: ``impactbench.methods.METHODS``, and
    the plug-in methods too within :func:`plugins_in_studies`, less ``Adaptive``: it wraps a
    scheme, so a study that compares it names the scheme and the controller's settings
    (work_precision, thesis_comparison) rather than running its defaults."""
    methods = METHODS if _PLUGINS_IN_STUDIES.get() else BUILTIN_METHODS
    return {name: method for name, method in methods.items() if method is not Adaptive}


def load_study_file(path: Path | str) -> Any:
    """The ``STUDY`` defined by a Python file (a user's study outside any package).

    The file is imported as the module named after it (its folder first on ``sys.path``, as
    pytest imports test files), so that the names in its runs' cache keys are stable, and its
    functions and classes are pickled by value for the worker processes, which cannot import it.

    Raises
    ------
    ValueError
        If ``path`` is not a ``.py`` file, or it fails to import (any exception, a
        ``SystemExit`` included: the message says which), or it defines no ``STUDY`` (an
        :class:`impactbench.bench.study.Study`), or its module name is taken by another module.
    """
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
        except KeyboardInterrupt:
            del sys.modules[name]
            raise
        except BaseException as error:  # noqa: BLE001 - SystemExit included: reported, not obeyed
            del sys.modules[name]
            raise ValueError(
                f"study file {str(path)!r} could not be loaded: {_describe(error)}"
            ) from None
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


def study_runs(study: Any, quick: bool) -> list:
    """``study.runs(quick)``, a ``sys.exit`` in it reported instead of obeyed.

    Raises
    ------
    ValueError
        If the study's ``runs`` called ``sys.exit`` (the message names the study and the code).
    """
    try:
        return study.runs(quick)
    except SystemExit as error:
        raise ValueError(
            f"study {study.name!r}: runs() called sys.exit({error.code!r}); a study must return "
            "its runs"
        ) from None
