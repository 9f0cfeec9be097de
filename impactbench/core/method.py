"""The method contract: what a new integrator must provide to run behind :func:`simulate`."""

from __future__ import annotations

import functools
import inspect
import operator
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

from . import _checks, compile_clock
from .dense import DeferredDense
from .energy import check_energy_gain, is_conservative
from .problem import Problem
from .trajectory import Trajectory

#: The two families of methods (``Method.family``; the ``family`` column of the study tables).
TIME_STEPPING = "time-stepping"
EVENT_DRIVEN = "event-driven"
FAMILIES = (TIME_STEPPING, EVENT_DRIVEN)


#: Parameter types whose values :attr:`Method.name` may keep its text for (compared by value).
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _parameter_names(cls: type) -> tuple[str, ...]:
    """The named parameters of ``cls.__init__`` (read once per class: the signature of a class's
    constructor does not change)."""
    signature = inspect.signature(cls.__init__)
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        name
        for name, parameter in signature.parameters.items()
        if name != "self" and parameter.kind in named
    )


@functools.cache
def _parameter_values(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """A function returning the tuple of an instance's :func:`_parameter_names` attributes."""
    names = _parameter_names(cls)
    if len(names) > 1:
        return operator.attrgetter(*names)
    return lambda method: tuple(getattr(method, name) for name in names)


class Method(ABC):
    """Base class of every method.

    A subclass sets ``family`` (:data:`TIME_STEPPING` or :data:`EVENT_DRIVEN`) and
    ``requires_step`` (True when the method needs a fixed step ``h``), stores each constructor
    parameter as the attribute of the same name (validating it with a ValueError that names the
    parameter; its :meth:`parameters` and :attr:`name` are derived from them), and implements
    :meth:`_solve_impl`, which integrates ``problem`` from ``problem.t0`` to ``t_end`` and returns
    a :class:`Trajectory` whose last sample is at ``t_end`` (or raises
    :class:`impactbench.SimulationError` with the time and state where it had to stop). The public
    :meth:`solve` does the bookkeeping around it: argument checks and wall time.

    A method that integrates Coulomb friction (docs/friction.md) sets ``friction_law`` True;
    :meth:`solve` refuses a frictional problem (``problem.has_friction``) to any other, with a
    ValueError naming both, rather than run it frictionless.

    A method that integrates moving obstacles (time-dependent gaps g(t, q),
    :attr:`impactbench.Problem.rheonomic`) sets ``moving_obstacles`` True; :meth:`solve`
    refuses a rheonomic problem to any other, with a ValueError naming both, rather than run it
    against obstacles frozen in time.
    """

    family: ClassVar[str]
    requires_step: ClassVar[bool]
    #: Whether the method integrates Coulomb friction (a frictional problem is refused if not).
    friction_law: ClassVar[bool] = False
    #: Whether the method integrates moving obstacles (a rheonomic problem is refused if not).
    moving_obstacles: ClassVar[bool] = False
    #: Parameters left out of :attr:`name` while they have these values (to keep names short;
    #: :meth:`parameters` and ``repr`` still list them).
    name_omits: ClassVar[dict[str, Any]] = {}

    def parameters(self) -> dict[str, Any]:
        """The method's parameters: every named parameter of its class's constructor (not the
        ``**options`` it passes on), read back from the attribute of the same name.

        Derived from the signature, so that the name, the repr and the cache keys can never
        disagree with what the constructor takes (a constructor must store each named parameter
        as an attribute of that name; the contract test checks it for every registered method).
        """
        return {name: getattr(self, name) for name in _parameter_names(type(self))}

    @property
    def name(self) -> str:
        """The class name with its parameters, e.g. ``MoreauJean[theta=0.5,activation=position]``
        (parameters at their :attr:`name_omits` value left out).

        Kept with the parameter values it was formatted from while these are all of immutable
        built-in types (str, int, float, bool, None) and unchanged, type included."""
        values = _parameter_values(type(self))(self)
        types = tuple(map(type, values))
        memo = self.__dict__.get("_name_memo")
        if memo is not None and memo[0] == types and memo[1] == values:
            return memo[2]
        omitted = self.name_omits
        names = _parameter_names(type(self))
        params = ",".join(
            f"{k}={v}"
            for k, v in zip(names, values, strict=True)
            if not (k in omitted and v == omitted[k])
        )
        name = f"{type(self).__name__}[{params}]" if params else type(self).__name__
        if _IMMUTABLE.issuperset(types):  # then memo[1] == values compares plain values
            self.__dict__["_name_memo"] = (types, values, name)
        return name

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items())
        return f"{type(self).__name__}({args})"

    def compile_options(self, problem: Problem) -> dict[str, Hashable] | None:
        """The settings of this method that its compiled code on ``problem`` is compiled for,
        or None when it runs no compiled code of its own there (plain Python, scipy; the
        default). Called for problems with kernels only.

        A declaration, because only the method knows which of its settings change its machine
        code (a Runge-Kutta pair, an activation rule) and which are run-time values (a step
        size, theta): :func:`impactbench.core.compilation.compiled_code` keys the compiled code
        on the method's class, the problem's kernels and sizes, and these options, and the study
        runner warms a process up once per key. An option left out would make two pieces of
        code share a key, and a compilation be timed.
        """
        return None

    def solve(
        self,
        problem: Problem,
        t_end: float,
        *,
        h: float | None = None,
        output_every: int = 1,
    ) -> Trajectory:
        """Integrate ``problem`` up to ``t_end`` (see :func:`impactbench.simulate`).

        Validates the problem (``problem.check()``), ``t_end`` and ``output_every``, then times
        :meth:`_solve_impl`: ``stats["compile_time"]`` is the time numba spent compiling or
        loading compiled code from its disk cache (:mod:`impactbench.core.compile_clock`),
        ``stats["wall_time"]`` the rest of the call (a dense output the method deferred,
        :class:`impactbench.core.dense.DeferredDense`, is built after it). On a conservative problem
        (``problem.conservative``) the run then passes the energy gate
        (:func:`impactbench.core.energy.check_energy_gain`: its ``stats["energy_gain"]``, and a
        SimulationError when its energy rose above the initial value by more than the gate's
        bound).
        """
        if Problem not in type(problem).__mro__ and not isinstance(problem, Problem):  # as simulate
            raise ValueError(f"problem must be an impactbench.Problem, got {problem!r}")
        problem.check()
        if not self.friction_law and problem.has_friction:
            raise ValueError(
                f"method {self.name} has no friction law, and problem {problem.name} is "
                "frictional (it declares Coulomb friction): use a method with a friction law "
                "(MoreauJean, CatchingUp, NonsmoothGeneralizedAlpha, EventDriven)"
            )
        if problem.rheonomic and not self.moving_obstacles:
            raise ValueError(
                f"method {self.name} does not integrate moving obstacles (its moving_obstacles "
                f"is False), and problem {problem.name} has one (rheonomic: its gap depends on "
                "time, g(t, q)): use a method that declares moving_obstacles"
            )
        t_end = _checks.finite_scalar(t_end, "t_end")
        if t_end <= problem.t0:
            raise ValueError(f"t_end must be > t0 = {problem.t0!r}, got {t_end!r}")
        output_every = _checks.positive_int(output_every, "output_every")
        conservative = is_conservative(problem)
        start = time.perf_counter()
        with compile_clock.clock(lambda: f"{self.name} for {problem.name}") as compiling:
            trajectory = self._solve_impl(problem, t_end, h, output_every)
        elapsed = time.perf_counter() - start
        if isinstance(trajectory.dense, DeferredDense):  # post-processing, after the clock
            trajectory.dense = trajectory.dense.build()
        trajectory.stats["compile_time"] = compiling.seconds
        trajectory.stats["wall_time"] = max(elapsed - compiling.seconds, 0.0)
        if "integration_time" in trajectory.stats:  # part of the wall time: a compilation
            # inside the loop's first call is out of it too (bounded, as it is not located)
            integration = trajectory.stats["integration_time"]
            trajectory.stats["integration_time"] = min(integration, trajectory.stats["wall_time"])
        if conservative:
            check_energy_gain(problem, trajectory, lambda: f"{self.name} on {problem.name}")
        return trajectory

    @abstractmethod
    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        """Integrate; ``t_end > problem.t0`` and ``output_every >= 1`` are already checked."""
