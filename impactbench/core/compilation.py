"""What compiled code a run executes, whether this process has it, and which runs share it.

The one module that answers the compile questions of the rest of the package, so that neither
the method and problem contracts nor the study runner hold compile keys or compile scheduling
(numba's internals themselves live in :mod:`impactbench.core._jit`, beside it):

- :func:`compiled_code`: the key of the compiled code a (method, problem) pair runs, equal for
  two pairs exactly when they run the same machine code (None: plain Python or scipy).
- :func:`is_loaded` and :func:`mark_loaded`: whether this process has compiled that code, or
  loaded it from numba's disk cache, and run it (then a timed run needs no warm-up).
- :func:`compile_by_short_run`: compile (or load) a run's code by a run of a few steps.
- :func:`one_per_group`: from run specifications alone (no problem or method built), one run
  per group of runs that very likely share their compiled code, so that two workers never
  compile the same code at once; :func:`run_time_parameters` declares the constructor
  parameters of a problem class that change no compiled code.

Two declarations stay with the contracts, because only their authors know them:
:meth:`impactbench.Method.compile_options` (whether a method runs compiled code on a problem,
and which of its settings that code is compiled for) and ``ProblemKernels.sizes_at_run_time``
(a problem used at many sizes, whose loops read their sizes at run time).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from .method import Method
from .problem import CompiledProblem, Problem, ProblemKernels
from .simulate import simulate

#: Steps of a time-stepping run made by :func:`compile_by_short_run`, and the fraction of the
#: horizon of an event-driven one: enough to call the whole compiled loop, which numba compiles
#: at once.
COMPILE_STEPS = 10
COMPILE_FRACTION = 1e-3


class CompiledCode(NamedTuple):
    """The key of a piece of compiled code: what its machine code is compiled for."""

    method: type
    kernels: ProblemKernels
    n_dof: int
    n_constraints: int
    options: tuple[tuple[str, Hashable], ...]
    #: The compiled code of the methods the method holds (a wrapper's scheme), by attribute.
    parts: tuple[tuple[str, CompiledCode | None], ...] = ()


#: Attribute of a method instance under which :func:`compiled_code` keeps its last key.
_MEMO = "_compiled_code_memo"


def compiled_code(method: Method, problem: Problem) -> CompiledCode | None:
    """The compiled code a run of ``method`` on ``problem`` executes, or None when it runs none
    of its own (a plain-Python problem, a method's plain-Python or scipy path).

    The key holds the method's class, the problem's kernels, its sizes, the method's
    :meth:`~impactbench.Method.compile_options` and the keys of the methods it holds as
    attributes (a wrapper's scheme, with that scheme's class and options): two runs have equal
    keys exactly when they run the same compiled code. A key equal for two different pieces of
    code would make the study runner time a compilation; the method's options must therefore
    name every setting its machine code depends on. The last key is kept on the method and
    returned, the same object, while its inputs are equal (the time-stepping loops look their
    loop up by it).
    """
    kernels = problem.kernels()
    if kernels is None:
        return None
    options = method.compile_options(problem)
    if options is None:
        return None
    n, m = problem.n_dof, problem.n_constraints
    parts = _parts(method, problem)
    memo = method.__dict__.get(_MEMO)
    if (
        memo is not None
        and memo[0] is kernels
        and memo[1] == n
        and memo[2] == m
        and memo[3] == options
        and memo[4] == parts
    ):
        return memo[5]
    code = CompiledCode(type(method), kernels, n, m, tuple(sorted(options.items())), parts)
    method.__dict__[_MEMO] = (kernels, n, m, options, parts, code)
    return code


def _parts(method: Method, problem: Problem) -> tuple[tuple[str, CompiledCode | None], ...]:
    """The :func:`compiled_code` of each method that ``method`` holds as an attribute (the
    scheme an :class:`impactbench.Adaptive` steps), by attribute name: a wrapper's code is
    that of what it wraps, which its own options need not list."""
    held = sorted(name for name, value in vars(method).items() if isinstance(value, Method))
    return tuple((name, compiled_code(getattr(method, name), problem)) for name in held)


#: The compiled code this process has compiled, or loaded from numba's disk cache, and run.
_LOADED: set[CompiledCode] = set()


def is_loaded(code: CompiledCode | None) -> bool:
    """Whether this process has run ``code`` (:func:`mark_loaded`): a later run of it then
    compiles and loads nothing. Always False for None (plain Python and scipy, whose first
    calls still cost: numba compiles a helper called from plain Python when a branch first
    reaches it)."""
    return code is not None and code in _LOADED


def mark_loaded(code: CompiledCode | None) -> None:
    """Note that this process has run ``code`` (nothing for None)."""
    if code is not None:
        _LOADED.add(code)


def compile_by_short_run(
    problem: Problem, method: Method, t_end: float, h: float | None
) -> CompiledCode | None:
    """Compile the code of a run of ``method`` on ``problem`` up to ``t_end`` with step ``h``
    (or load it from numba's disk cache) by a short run of it, and return its
    :func:`compiled_code`; nothing is run when it is None.

    The short run makes :data:`COMPILE_STEPS` steps of ``h`` (at most the horizon), or covers
    :data:`COMPILE_FRACTION` of the horizon for an adaptive method (``h`` None). Whatever the
    run raises is raised.
    """
    code = compiled_code(method, problem)
    if code is None:
        return None
    span = t_end - problem.t0
    if h is None:
        simulate(problem, method, problem.t0 + COMPILE_FRACTION * span)
    else:
        span = min(span, COMPILE_STEPS * h)
        simulate(problem, method, problem.t0 + span, h=min(h, span))
    return code


def may_compile(problem: Callable[..., Problem]) -> bool:
    """False when the problem factory ``problem`` is a problem class that has no kernels
    (not a :class:`~impactbench.core.problem.CompiledProblem`): its runs compile nothing, and
    it need not be built to know it. True for any other factory."""
    return not (isinstance(problem, type) and not issubclass(problem, CompiledProblem))


# --------------------------------------------------------------------------------------------
# Which runs share their compiled code, from their specification alone

#: Problem class -> the constructor parameters it declares change no compiled code.
_RUN_TIME: dict[type, tuple[str, ...]] = {}

ProblemClass = TypeVar("ProblemClass", bound=type)


def run_time_parameters(*names: str) -> Callable[[ProblemClass], ProblemClass]:
    """Class decorator: the problem class's constructor parameters ``names`` are not real
    numbers yet change no compiled code (neither the sizes nor anything the kernels are compiled
    for), e.g. a cradle's launched count, which is in the initial state only.

    :func:`one_per_group` then groups runs that differ only in them (one worker compiles their
    code). A wrong declaration costs compile time only. Subclasses inherit it.

    Raises
    ------
    ValueError
        When a name is not a named parameter of the class's constructor.
    """

    def declare(cls: ProblemClass) -> ProblemClass:
        parameters = inspect.signature(cls).parameters
        unknown = [name for name in names if name not in parameters]
        if unknown:
            raise ValueError(
                f"names must be parameters of {cls.__name__}'s constructor, got {unknown!r}"
            )
        _RUN_TIME[cls] = tuple(names)
        return cls

    return declare


def declared_run_time_parameters(problem: Callable[..., Problem]) -> tuple[str, ...]:
    """The parameters :func:`run_time_parameters` declared for the problem class ``problem``
    or its nearest declaring base class (none for another factory)."""
    for cls in getattr(problem, "__mro__", ()):
        if cls in _RUN_TIME:
            return _RUN_TIME[cls]
    return ()


class RunSpec(Protocol):
    """What :func:`one_per_group` reads of a run (e.g. an :class:`impactbench.bench.runner.Run`)."""

    problem: Callable[..., Problem]
    problem_kwargs: Mapping[str, Any]
    method: Callable[..., Method]
    method_kwargs: Mapping[str, Any]
    t_end: float
    h: float | None


def code_group(run: RunSpec) -> tuple[str, ...]:
    """Runs of equal groups (very likely) run the same compiled code: the same method and
    problem factories, and the same parameters other than real numbers (the options a loop is
    compiled for are strings and booleans, the sizes of a problem integers; theta, rtol or a
    restitution are run-time values) and other than the problem's
    :func:`declared_run_time_parameters`. Computed from the specification alone: no problem or
    method is built (in the launching process, their code could fail or exit)."""

    def discrete(kwargs: Mapping[str, Any], run_time: Sequence[str] = ()) -> str:
        kept = {k: v for k, v in kwargs.items() if not isinstance(v, float) and k not in run_time}
        return json.dumps(kept, sort_keys=True)

    return (
        f"{run.method.__module__}:{run.method.__qualname__}",
        f"{run.problem.__module__}:{run.problem.__qualname__}",
        discrete(run.method_kwargs),
        discrete(run.problem_kwargs, declared_run_time_parameters(run.problem)),
    )


Key = TypeVar("Key", bound=Hashable)


def one_per_group(runs: Mapping[Key, RunSpec]) -> list[Key]:
    """The keys of ``runs`` holding, for each :func:`code_group`, its first run of fewest steps
    (of shortest horizon for an adaptive method), in the order the groups first appear."""
    chosen: dict[tuple[str, ...], tuple[float, Key]] = {}
    for key, run in runs.items():
        group = code_group(run)
        size = run.t_end / run.h if run.h else run.t_end
        if group not in chosen or size < chosen[group][0]:
            chosen[group] = (size, key)
    return [key for _, key in chosen.values()]
