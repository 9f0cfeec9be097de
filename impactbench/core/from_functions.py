"""A problem built from plain functions (``Problem.from_functions``), as solve_ivp takes ``fun``.

:class:`FunctionProblem` holds the user's callables -- M(q), F(t, q, v), g(q), grad g(q) and,
optionally, the potential energy V(q) and a closed form -- and implements the
:class:`impactbench.Problem` contract with them: no subclass to write. It runs on the
plain-Python path of every method (the callables are not compiled) and pickles with
``cloudpickle`` (lambdas included), so that it can be sent to worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .problem import Problem


def _callable(value: Any, name: str, call: str) -> Callable:
    """``value`` if it is callable, else ValueError naming the argument ``name``."""
    if not callable(value):
        raise ValueError(f"{name} must be a callable {call}, got {value!r}")
    return value


class FunctionProblem(Problem):
    """A :class:`impactbench.Problem` whose methods are the given functions.

    Built by :meth:`impactbench.Problem.from_functions` (see there for the parameters);
    validated by :meth:`impactbench.Problem.check` on construction.

    Without ``potential_energy`` the energy is unknown: :meth:`potential_energy` returns NaN,
    so that an energy figure or metric is NaN rather than a wrong number (the kinetic energy
    v^T M v / 2 is still defined).
    """

    def __init__(
        self,
        mass_matrix: Callable[[np.ndarray], np.ndarray],
        forces: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
        gap: Callable[[np.ndarray], np.ndarray],
        gap_gradient: Callable[[np.ndarray], np.ndarray],
        q0: Any,
        v0: Any,
        *,
        restitution: float,
        t0: float = 0.0,
        potential_energy: Callable[[np.ndarray], float] | None = None,
        exact_solution: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
        name: str = "from_functions",
    ) -> None:
        self._mass_matrix = _callable(mass_matrix, "mass_matrix", "M(q) -> (n, n)")
        self._forces = _callable(forces, "forces", "F(t, q, v) -> (n,)")
        self._gap = _callable(gap, "gap", "g(q) -> (m,)")
        self._gap_gradient = _callable(gap_gradient, "gap_gradient", "grad g(q) -> (m, n)")
        self._potential_energy = (
            None
            if potential_energy is None
            else _callable(potential_energy, "potential_energy", "V(q) -> float")
        )
        self._exact_solution = (
            None
            if exact_solution is None
            else _callable(exact_solution, "exact_solution", "(q, v) = f(t), each (len(t), n)")
        )
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.name = name
        self.restitution = restitution
        self.t0 = t0
        self.q0 = q0
        self.v0 = v0
        self.check()

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q), shape (n, n): the given ``mass_matrix``."""
        return self._mass_matrix(q)

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """F(t, q, v), shape (n,): the given ``forces``."""
        return self._forces(t, q, v)

    def gap(self, q: np.ndarray) -> np.ndarray:
        """g(q), shape (m,): the given ``gap``."""
        return self._gap(q)

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        """grad g(q), shape (m, n): the given ``gap_gradient``."""
        return self._gap_gradient(q)

    def potential_energy(self, q: np.ndarray) -> float:
        """V(q): the given ``potential_energy``, NaN when none was given (energy unknown)."""
        if self._potential_energy is None:
            return float("nan")
        return float(self._potential_energy(q))

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) at times ``t``, each (len(t), n): the given ``exact_solution``."""
        if self._exact_solution is None:
            raise NotImplementedError(f"problem {self.name!r} has no exact solution")
        return self._exact_solution(t)

    @property
    def has_exact_solution(self) -> bool:
        """True when an ``exact_solution`` was given."""
        return self._exact_solution is not None
