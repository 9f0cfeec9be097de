"""The problem contract: a mechanical system with unilateral constraints and Newton impacts.

A problem describes

    M(q) v' = F(t, q, v) + G(q)^T lambda,     g(q) >= 0,  lambda >= 0,  lambda^T g(q) = 0,

with the Newton impact law in the kinetic metric of M (restitution e in [0, 1]). Methods depend on
this contract only. A user writes a new problem as a plain-Python subclass of :class:`Problem`;
built-in problems subclass :class:`CompiledProblem`, which derives the Python methods from numba
kernels so that each model's physics is written once and the time-stepping loops can be compiled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import numpy as np

from . import _checks

#: Tolerance on g(q0) >= 0, relative to max(1, |q0|).
ADMISSIBILITY_TOLERANCE = 1e-10


class ProblemKernels(NamedTuple):
    """Numba-compilable versions of a problem's functions, all writing into preallocated output.

    Each function takes the problem's parameter vector ``p`` (float64, 1-D) and writes its result
    into ``out``; none allocates. Shapes: q, v (n,); ``mass_matrix(q, p, out)`` out (n, n);
    ``forces(t, q, v, p, out)`` out (n,); ``gap(q, p, out)`` out (m,);
    ``gap_gradient(q, p, out)`` out (m, n). ``affine_gap`` declares g(q) = G q + c with constant G
    (the metric projection then needs no Newton iteration); ``constant_mass`` declares M(q) = M
    (the loops then factorise it once per run instead of once per step).

    The compiled loops pass row slices of one work buffer (so that the compiler can prove them
    disjoint): a kernel must accept non-contiguous 2-D ``out`` arrays (index them; do not
    ``reshape`` them) and must not keep references to its arguments.
    """

    mass_matrix: Callable
    forces: Callable
    gap: Callable
    gap_gradient: Callable
    affine_gap: bool = False
    constant_mass: bool = False


class Problem(ABC):
    """Base class of every problem (the contract a new model must meet).

    Attributes (set by the subclass, usually in ``__init__``)
    ---------------------------------------------------------
    name : str
        Short identifier used in tables.
    n_dof : int
        Number n of generalised coordinates.
    n_constraints : int
        Number m of unilateral constraints g_i(q) >= 0.
    restitution : float
        Newton coefficient e in [0, 1].
    t0 : float
        Initial time.
    q0, v0 : ndarray, shape (n,)
        Initial position (admissible: g(q0) >= 0) and velocity.

    Methods to implement
    --------------------
    mass_matrix(q) -> (n, n) symmetric positive definite array.
    forces(t, q, v) -> (n,) generalised non-impulsive forces F.
    gap(q) -> (m,) constraint values; the admissible set is K = {q : gap(q) >= 0}.
    gap_gradient(q) -> (m, n) array whose rows are grad g_i(q).
    potential_energy(q) -> float, so that F = -grad V + non-conservative terms.
    exact_solution(t) -> (q, v), arrays of shape (len(t), n) (optional; only where a closed form
        exists; :attr:`has_exact_solution` tells whether it is implemented).

    A plain-Python subclass runs with every method (the time-stepping schemes then run their
    uncompiled path, the same algorithm, slower). :meth:`check` validates the data; built-in
    problems call it on construction and :func:`impactbench.simulate` calls it before a run.
    """

    name: str = "problem"
    n_dof: int
    n_constraints: int
    restitution: float
    t0: float = 0.0
    q0: np.ndarray
    v0: np.ndarray

    @abstractmethod
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Mass matrix M(q), shape (n, n)."""

    @abstractmethod
    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Generalised forces F(t, q, v), shape (n,)."""

    @abstractmethod
    def gap(self, q: np.ndarray) -> np.ndarray:
        """Constraint values g(q), shape (m,)."""

    @abstractmethod
    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        """Constraint gradients, shape (m, n), row i = grad g_i(q)."""

    @abstractmethod
    def potential_energy(self, q: np.ndarray) -> float:
        """Potential energy V(q)."""

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t``, each of shape (len(t), n), where a closed form exists."""
        raise NotImplementedError(f"problem {self.name!r} has no exact solution")

    @property
    def has_exact_solution(self) -> bool:
        """True when the subclass implements :meth:`exact_solution`."""
        return type(self).exact_solution is not Problem.exact_solution

    def kernels(self) -> ProblemKernels | None:
        """Compiled kernels of this problem, or None for a plain-Python problem."""
        return None

    def kernel_parameters(self) -> np.ndarray:
        """Parameter vector passed to the kernels (empty for a plain-Python problem)."""
        return np.zeros(0)

    def kinetic_energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Kinetic energy v^T M(q) v / 2."""
        v = np.asarray(v, dtype=float)
        return 0.5 * float(v @ self.mass_matrix(q) @ v)

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Total mechanical energy (kinetic plus potential)."""
        return self.kinetic_energy(q, v) + float(self.potential_energy(q))

    def check(self) -> None:
        """Validate sizes, restitution, initial state and the mass matrix at q0.

        Raises
        ------
        ValueError
            Naming the offending attribute and its value.
        """
        n = _checks.positive_int(getattr(self, "n_dof", None), "n_dof")
        m = _checks.positive_int(getattr(self, "n_constraints", None), "n_constraints")
        self.restitution = _checks.restitution(getattr(self, "restitution", None))
        self.t0 = _checks.finite_scalar(self.t0, "t0")
        self.q0 = _checks.vector(getattr(self, "q0", None), "q0", n)
        self.v0 = _checks.vector(getattr(self, "v0", None), "v0", n)
        _checks.spd_matrix(self.mass_matrix(self.q0), "mass_matrix(q0)", n)
        g0 = np.asarray(self.gap(self.q0), dtype=float)
        if g0.shape != (m,):
            raise ValueError(f"gap(q0) must have shape ({m},), got {g0.shape}")
        grad = np.asarray(self.gap_gradient(self.q0), dtype=float)
        if grad.shape != (m, n):
            raise ValueError(f"gap_gradient(q0) must have shape ({m}, {n}), got {grad.shape}")
        tol = ADMISSIBILITY_TOLERANCE * max(1.0, float(np.abs(self.q0).max()))
        if np.any(g0 < -tol):
            raise ValueError(
                f"q0 must be admissible (gap(q0) >= 0), got q0={self.q0.tolist()} "
                f"with gap(q0)={g0.tolist()}"
            )
        f0 = np.asarray(self.forces(self.t0, self.q0, self.v0), dtype=float)
        if f0.shape != (n,):
            raise ValueError(f"forces(t0, q0, v0) must have shape ({n},), got {f0.shape}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, e={self.restitution})"


class CompiledProblem(Problem):
    """A problem whose physics is written once as numba kernels (class attribute ``KERNELS``).

    Subclasses set ``KERNELS`` (a :class:`ProblemKernels` of ``@numba.njit`` functions) and
    implement :meth:`kernel_parameters`; the Python methods of the contract are derived here by
    calling the kernels, so the compiled and plain-Python paths share one definition.
    Subclasses must call :meth:`_finish_init` at the end of ``__init__``.
    """

    KERNELS: ClassVar[ProblemKernels]

    @abstractmethod
    def kernel_parameters(self) -> np.ndarray:
        """Float64 parameter vector read by the kernels."""

    def _finish_init(self) -> None:
        self._p = np.ascontiguousarray(self.kernel_parameters(), dtype=float)
        self.check()

    def kernels(self) -> ProblemKernels:
        return self.KERNELS

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        out = np.empty((self.n_dof, self.n_dof))
        self.KERNELS.mass_matrix(np.ascontiguousarray(q, dtype=float), self._p, out)
        return out

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = np.empty(self.n_dof)
        self.KERNELS.forces(
            float(t),
            np.ascontiguousarray(q, dtype=float),
            np.ascontiguousarray(v, dtype=float),
            self._p,
            out,
        )
        return out

    def gap(self, q: np.ndarray) -> np.ndarray:
        out = np.empty(self.n_constraints)
        self.KERNELS.gap(np.ascontiguousarray(q, dtype=float), self._p, out)
        return out

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        out = np.empty((self.n_constraints, self.n_dof))
        self.KERNELS.gap_gradient(np.ascontiguousarray(q, dtype=float), self._p, out)
        return out


def python_kernels(problem: Problem) -> ProblemKernels:
    """Wrap a problem's Python methods in the kernel calling convention (uncompiled path)."""

    def mass_matrix(q, p, out):
        out[:, :] = problem.mass_matrix(q)

    def forces(t, q, v, p, out):
        out[:] = problem.forces(t, q, v)

    def gap(q, p, out):
        out[:] = problem.gap(q)

    def gap_gradient(q, p, out):
        out[:, :] = problem.gap_gradient(q)

    compiled = problem.kernels()
    return ProblemKernels(
        mass_matrix,
        forces,
        gap,
        gap_gradient,
        affine_gap=compiled.affine_gap if compiled is not None else False,
        constant_mass=compiled.constant_mass if compiled is not None else False,
    )
