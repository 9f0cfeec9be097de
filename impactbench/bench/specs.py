"""Problems and methods named on the command line: built-in names or ``MODULE:NAME`` specs.

A spec is a built-in name with optional parameters (``MoreauJean[theta=0.5]``,
``BouncingBall[restitution=0.8]``), or an object of another module with the same parameter
syntax, ``MODULE:NAME[param=value,...]`` (``wavy:WavyFloorBall[a=0.1]``): a method is a
subclass of :class:`impactbench.Method`; a problem is a subclass of
:class:`impactbench.Problem` or a module-level function returning one. MODULE is looked up in
the current directory first, as ``python -m`` does. Used by ``impactbench simulate``,
``compare`` and ``validate``, and by :func:`impactbench.compare`.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from ..core import names
from ..core.method import Method
from ..core.problem import Problem

_EXTERNAL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:\s*(\w+)\s*(\[.*\])?\s*$")


def _external(spec: str, kind: str, accept: Callable[[Any], bool], what: str) -> tuple[Any, dict]:
    """The factory and parameters of ``"module:Name[params]"`` (``kind``: "method" or
    "problem"; ``accept``: whether the object found is one; ``what``: what it must be)."""
    module_name, attribute, params = _EXTERNAL.match(spec).groups()
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{kind} module {module_name!r} cannot be imported: {error}") from None
    factory = getattr(module, attribute, None)
    if factory is None:
        public = sorted(name for name in vars(module) if not name.startswith("_"))
        close = names.did_you_mean(attribute, public)
        raise ValueError(
            f"{kind} {module_name}:{attribute}: module {module_name!r} has no attribute "
            f"{attribute!r}{close} (it defines {', '.join(public) or 'nothing public'})"
        )
    if not accept(factory):
        raise ValueError(f"{kind} {module_name}:{attribute} must be {what}, got {factory!r}")
    _, kwargs = names.parse_spec(f"{attribute}{params or ''}", {attribute: factory}, kind)
    return factory, kwargs


def _is_method_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Method)


def _is_problem_factory(value: Any) -> bool:
    if isinstance(value, type):
        return issubclass(value, Problem)
    return callable(value)


def method_factory(spec: str) -> tuple[type[Method], dict[str, Any]]:
    """The method class and parameters of ``"Name[params]"`` or ``"module:Class[params]"``.

    Raises
    ------
    ValueError
        For a malformed spec, an unknown name, a module that cannot be imported, a missing
        class or one that is not a subclass of :class:`impactbench.Method`.
    """
    from .plugins import METHODS

    if isinstance(spec, str) and _EXTERNAL.match(spec):
        return _external(spec, "method", _is_method_class, "a subclass of impactbench.Method")
    return names.parse_spec(spec, METHODS, "method")


def problem_factory(spec: str) -> tuple[Callable[..., Problem], dict[str, Any]]:
    """The problem factory and parameters of ``"Name[params]"`` or ``"module:Name[params]"``
    (a :class:`impactbench.Problem` subclass or a function returning a problem).

    Raises
    ------
    ValueError
        As :func:`method_factory`, for problems.
    """
    from .plugins import PROBLEMS

    if isinstance(spec, str) and _EXTERNAL.match(spec):
        return _external(
            spec,
            "problem",
            _is_problem_factory,
            "a subclass of impactbench.Problem or a function returning one",
        )
    return names.parse_spec(spec, PROBLEMS, "problem")


def load_method(spec: str) -> Method:
    """A method instance from ``"Name[params]"`` (built-in or plug-in) or
    ``"module:Class[params]"``.

    Raises
    ------
    ValueError
        As :func:`method_factory`, or for parameters the class rejects.
    """
    factory, kwargs = method_factory(spec)
    try:
        return factory(**kwargs)
    except TypeError as error:
        raise ValueError(f"bad parameters for method {spec!r}: {error}") from None


def load_problem(spec: str) -> Problem:
    """A problem instance from ``"Name[params]"`` (built-in) or ``"module:Name[params]"``.

    Raises
    ------
    ValueError
        As :func:`problem_factory`, for parameters the factory rejects, or a function that
        does not return an :class:`impactbench.Problem`.
    """
    factory, kwargs = problem_factory(spec)
    try:
        problem = factory(**kwargs)
    except TypeError as error:
        raise ValueError(f"bad parameters for problem {spec!r}: {error}") from None
    if not isinstance(problem, Problem):
        raise ValueError(f"problem {spec!r} must give an impactbench.Problem, got {problem!r:.100}")
    return problem
