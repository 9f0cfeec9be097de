"""The problem contract: a mechanical system with unilateral constraints and Newton impacts.

A problem describes

    M(q) v' = F(t, q, v) + G(q)^T lambda,     g(q) >= 0,  lambda >= 0,  lambda^T g(q) = 0,

with the Newton impact law in the kinetic metric of M (restitution e in [0, 1]). Methods depend on
this contract only. A user writes a new problem as a plain-Python subclass of :class:`Problem`;
built-in problems subclass :class:`CompiledProblem`, which derives the Python methods from numba
kernels so that each model's physics is written once and the time-stepping loops can be compiled.
"""

from __future__ import annotations

import functools
import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from . import _checks
from ._gradient_check import drift_mismatch, gradient_mismatch, rate_mismatch
from ._jit import kernel
from .contact import ldl_factor
from .problem_kernels import ProblemKernels
from .sampled import sample_gaps, sample_kinetic_energies
from .snapshot import Snapshot, typed
from .trajectory import SimulationError

#: Tolerance on g(q0) >= 0, relative to max(1, |q0|).
ADMISSIBILITY_TOLERANCE = 1e-10

#: The structures a problem may declare for its mass matrix (:attr:`Problem.mass_structure`).
MASS_STRUCTURES = ("dense", "diagonal")

#: Largest n for which :meth:`Problem.check` forms the dense M(q0) of a problem that declares a
#: diagonal mass matrix, to verify that its off-diagonal entries are zero (32 MiB); above it
#: only the diagonal is checked (forming M would cost the O(n^2) memory the declaration avoids).
DIAGONAL_CHECK_MAX_DOF = 2048


def valid_mass_structure(value: Any) -> str:
    """``value`` if it is one of :data:`MASS_STRUCTURES`, else ValueError naming
    ``mass_structure`` and the value."""
    if not isinstance(value, str) or value not in MASS_STRUCTURES:
        raise ValueError(f"mass_structure must be one of {MASS_STRUCTURES}, got {value!r}")
    return value


#: Power iterations of :func:`initial_frequency` (one force evaluation each).
FREQUENCY_ITERATIONS = 30


def declared_state_scale(problem: Problem) -> tuple[float, float] | None:
    """``problem.state_scale`` checked: None, or two finite positive floats (else ValueError)."""
    declared = getattr(problem, "state_scale", None)
    if declared is None:
        return None
    try:
        scale = tuple(float(value) for value in declared)
    except (TypeError, ValueError):
        scale = ()
    if len(scale) != 2 or not all(math.isfinite(s) and s > 0.0 for s in scale):
        raise ValueError(
            f"state_scale must be None or two finite positive numbers (Q, V), got {declared!r}"
        )
    return scale


def initial_frequency(problem: Problem, diagonal: np.ndarray, force: np.ndarray) -> float:
    """omega, the fastest frequency of the forces at (t0, q0, v0) (module docstring).

    2 / ``problem.stable_step`` when the problem declares it. Otherwise sqrt(rho), rho the
    spectral radius of D^-1 J, J = dF/dq at (t0, q0, v0) by forward differences and D the
    diagonal of M(q0), estimated by :data:`FREQUENCY_ITERATIONS` power iterations in the norm
    |x|_D = sqrt(x^T D x) from a fixed start; the largest ratio |D^-1 J x|_D / |x|_D is kept.
    For a symmetric J (a conservative force: J = -d^2 V / dq^2) D^-1 J is self-adjoint in that
    norm, so every ratio is at most rho: omega is never overestimated, and the bound it gives is
    never tighter than the one of the exact omega. 0 for a force that does not depend on q.

    Parameters
    ----------
    problem : Problem
        Its ``q0``, ``v0`` float64 arrays of shape (n,) (as :meth:`Problem.check` leaves them).
    diagonal : ndarray, shape (n,)
        The diagonal of M(q0), positive.
    force : ndarray, shape (n,)
        F(t0, q0, v0).

    Returns
    -------
    float
        omega >= 0 (an estimate from below where the iteration has not converged; it stops
        early at a force that is not finite at a perturbed q).
    """
    stable = declared_stable_step(problem)
    if stable is not None:
        return 2.0 / stable
    q0, v0, t0 = problem.q0, problem.v0, float(problem.t0)
    offset = math.sqrt(np.finfo(float).eps) * max(1.0, float(np.abs(q0).max()))
    x = np.random.default_rng(0).standard_normal(q0.shape[0])  # every mode, in general
    rho = 0.0
    for _ in range(FREQUENCY_ITERATIONS):
        x = x / math.sqrt(float(x @ (diagonal * x)))
        size = offset / float(np.abs(x).max())
        perturbed = np.asarray(problem.forces(t0, q0 + size * x, v0), dtype=float)
        if perturbed.shape != force.shape or not np.all(np.isfinite(perturbed)):
            break
        x = (perturbed - force) / (size * diagonal)  # D^-1 J x
        ratio = math.sqrt(float(x @ (diagonal * x)))
        rho = max(rho, ratio)
        if ratio == 0.0:
            break
    return math.sqrt(rho)


def declared_stable_step(problem: Problem) -> float | None:
    """``problem.stable_step`` checked: None, or a finite positive float (else ValueError)."""
    declared = getattr(problem, "stable_step", None)
    if declared is None:
        return None
    value = float(declared)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"stable_step must be None or finite and positive, got {declared!r}")
    return value


class Problem(ABC):
    """Base class of every problem (the contract a new model must meet).

    A subclass sets the attributes below, usually in ``__init__``, and implements the methods
    listed in the Notes.

    Attributes
    ----------
    name : str
        Short identifier used in tables.
    n_dof : int, optional
        Number n of generalised coordinates; when not set, :meth:`check` takes it from ``q0``
        (when set, ``q0`` and ``v0`` must have that length).
    n_constraints : int, optional
        Number m of unilateral constraints g_i(q) >= 0; when not set, :meth:`check` takes it
        from ``gap(q0)`` (when set, ``gap`` must return that many values).
    restitution : float
        Newton coefficient e in [0, 1].
    t0 : float
        Initial time.
    q0, v0 : ndarray, shape (n,)
        Initial position (admissible: g(q0) >= -tol, the tolerance below) and velocity.
    initial_penetration_tolerance : float or None
        The largest initial penetration -g_i(q0) that :meth:`check` accepts, in the units of
        the gaps, or None (default) for :data:`ADMISSIBILITY_TOLERANCE` max(1, |q0|_inf) (round-
        off). A problem whose published initial state lies slightly inside an obstacle declares
        the penetration it accepts (a class attribute); the methods then start from that state
        as they do from a penetration during a run. A larger penetration is refused.
    mass_structure : {"dense", "diagonal"}
        Structure of M(q), default "dense". Declare "diagonal" when M(q) is diagonal for every
        q (a lumped mass): the time-stepping loops then store its diagonal only and solve with
        it in O(n) (:meth:`mass_diagonal`). :meth:`check` rejects a declaration that M(q0)
        contradicts (for n <= :data:`DIAGONAL_CHECK_MAX_DOF`, where it forms M(q0)).
    stable_step : float or None
        2 / omega_max, omega_max the largest eigenfrequency of the linearised smooth dynamics
        (of M^-1 K for forces -K q), or None (default) when not declared: the stable step of
        explicit central-difference-type schemes, which refuse a larger step
        (``TimeStepping.step_limit``, :mod:`impactbench.core.divergence`).
    state_scale : (float, float) or None
        Magnitudes (Q, V) that the positions and velocities of the problem's motion stay
        within, or None (default) to take them from the initial data: a run whose max |q| or
        max |v| exceeds 1e6 times them stops as diverged (:mod:`impactbench.core.divergence`).
    coordinates : tuple of (str, str), optional
        Name and unit of each coordinate, e.g. ``(("x", "m"), ("phi", "rad"))``, or one pair
        with ``{i}`` in the name for every coordinate (``(("q_{i}", "m"),)``), as figures and
        tables label them (:mod:`impactbench.core.coordinates`); None (default): ``q_1 ...
        q_n``, unit not declared.
    parameter_units : mapping of str to str, optional
        Unit of each constructor parameter ("-" dimensionless), shown by ``impactbench list``.
    conservative : bool
        True when no part of the model adds energy: F = -grad V exactly (no damping, drag or
        forcing) and every impact law dissipates (e in [0, 1], no friction), so that the
        energy of the exact motion never exceeds its initial value. Default False. A run of a
        conservative problem passes the energy gate of
        :func:`impactbench.core.energy.check_energy_gain` (a SimulationError when its energy
        rises above the initial value by more than the gate's bound).
    rheonomic : bool
        True for a problem with moving obstacles: its gaps depend on time, g(t, q), and its
        geometric methods take t first (Notes). Default False (g(q), methods without t). A
        rheonomic problem is not conservative (a moving obstacle does work on the system).

    Notes
    -----
    The methods to implement:

    - ``mass_matrix(q)`` -> (n, n) symmetric positive definite array.
    - ``forces(t, q, v)`` -> (n,) generalised non-impulsive forces F.
    - ``gap(q)`` -> (m,) constraint values; the admissible set is K = {q : gap(q) >= 0}. Each
      g_i must be continuously differentiable (C^1) near its zero set: every method linearises
      it (impulse and projection directions M^-1 grad g_i, event location). A gap with a kink
      (a V-shaped floor, g = y - a |x|, at its apex) is outside the contract: the event-driven
      method then stalls, and stops with the stall naming the constraint whose gradient jumps
      (:mod:`impactbench.core.stall`); the time-stepping schemes detect nothing (MoreauJean and
      D1MinusLinear sink through the apex of a V-shaped floor). Write such an obstacle as two
      C^1 constraints (one per face).
    - ``gap_gradient(q)`` -> (m, n) array whose rows are grad g_i(q).
    - ``potential_energy(q)`` -> float, so that F = -grad V + non-conservative terms.
    - ``exact_solution(t)`` -> (q, v), arrays of shape (len(t), n) (optional; only where a
      closed form exists; :attr:`has_exact_solution` tells whether it is implemented).
    - ``mass_diagonal(q)`` -> (n,) the diagonal of M(q) (optional; by default taken from
      :meth:`mass_matrix`; override it for a diagonal M so that no (n, n) array is formed).
    - ``tangent_gradient(q)`` -> (m, n) and ``friction(q)`` -> (mu, e_T), each (m,)
      (optional, together: planar Coulomb friction, docs/friction.md): the tangent row
      W_T,i(q) of each contact, its Coulomb coefficient mu_i >= 0 and its tangential
      restitution e_T,i in [0, 1]. A problem that implements them is frictional
      (:attr:`has_friction`); a method without a friction law refuses it.
    - ``stiffness_matrix()`` and ``damping_matrix()`` -> (n, n) or None (optional, default
      None): the constant symmetric matrices K and C of a linear part of the forces,
      F(t, q, v) = -K q - C v + F_rest(t, q, v) (``forces`` still returns the whole F). The
      implicit Moreau-Jean scheme (``MoreauJean(theta, implicit=True)``) takes them into its
      iteration matrix M + h theta C + h^2 theta^2 K; every other method ignores them.

    Moving obstacles (``rheonomic = True``): ``gap(t, q)``, ``gap_gradient(t, q)`` (G = dg/dq
    at fixed t) and, frictional, ``tangent_gradient(t, q)`` take t first, and the problem
    declares the time terms of its relative velocities and accelerations:

    - ``gap_rate(t, q)`` -> (m,): r = dg/dt at fixed q; the relative normal velocity of contact
      i is U_i = G_i v + r_i, on which the impact law acts (Newton: U+ = -e U-).
    - ``gap_drift(t, q, v)`` -> (m,): c = d2g/dt2 + 2 (dG/dt) v (derivatives in t at fixed q),
      so that along a motion d2g/dt2 = G a + v^T (d2g/dq2) v + c. Declared, not differenced:
      the engine knows no time scale of the obstacle.
    - frictional: ``tangent_rate(t, q)`` -> (m,), the obstacle's term tau of the relative
      tangential velocity u_T = W_T v + tau, and ``tangent_drift(t, q, v)`` -> (m,),
      c_T = (dW_T/dt) v + dtau/dt + (dtau/dq) v.

    :meth:`check` compares the declared r and c (and tau's drift) with central differences at
    (t0, q0, v0) and refuses a wrong one naming it. A method integrates such a problem only if
    it declares ``moving_obstacles`` (:class:`impactbench.Method`); the others refuse it.
    :func:`impactbench.core.problem.timed_gap` and ``timed_gradient`` evaluate either kind of
    problem at (t, q); a compiled problem with moving obstacles subclasses
    :class:`impactbench.core.problem.RheonomicCompiledProblem`.

    A plain-Python subclass runs with every method (the time-stepping schemes then run their
    uncompiled path, the same algorithm, slower). :meth:`check` validates the data; built-in
    problems call it on construction and :func:`impactbench.simulate` calls it before a run.
    """

    name: str = "problem"
    n_dof: int | None = None
    n_constraints: int | None = None
    restitution: float
    t0: float = 0.0
    q0: np.ndarray
    v0: np.ndarray
    mass_structure: str = "dense"
    stable_step: float | None = None
    state_scale: tuple[float, float] | None = None
    coordinates: tuple[tuple[str, str], ...] | None = None
    parameter_units: Mapping[str, str] = MappingProxyType({})
    conservative: bool = False
    initial_penetration_tolerance: float | None = None
    rheonomic: bool = False

    @staticmethod
    def from_functions(
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
        rheonomic: bool = False,
        gap_rate: Callable[[float, np.ndarray], np.ndarray] | None = None,
        gap_drift: Callable[[float, np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> Problem:
        """A problem from plain functions, without a subclass (as solve_ivp takes ``fun``).

        Parameters
        ----------
        mass_matrix : callable
            ``mass_matrix(q)`` -> M(q), shape (n, n), symmetric positive definite.
        forces : callable
            ``forces(t, q, v)`` -> F(t, q, v), shape (n,).
        gap : callable
            ``gap(q)`` -> g(q), shape (m,); the admissible set is g(q) >= 0 (C^1 near g = 0).
        gap_gradient : callable
            ``gap_gradient(q)`` -> shape (m, n), row i = grad g_i(q).
        q0, v0 : array_like, shape (n,)
            Initial position (admissible) and velocity.
        restitution : float
            Newton coefficient e in [0, 1] (required: there is no default physics).
        t0 : float
            Initial time.
        potential_energy : callable, optional
            ``potential_energy(q)`` -> V(q); without it the energy is unknown (NaN).
        exact_solution : callable, optional
            ``exact_solution(t)`` -> (q, v), each of shape (len(t), n): a closed form, used for
            errors as a built-in problem's.
        name : str
            The problem's name in tables.
        rheonomic : bool
            True for a moving obstacle: ``gap(t, q)`` and ``gap_gradient(t, q)`` then take t
            first, and ``gap_rate`` and ``gap_drift`` are required (:class:`Problem`, Notes).
        gap_rate : callable, optional
            ``gap_rate(t, q)`` -> r = dg/dt at fixed q, shape (m,) (rheonomic only).
        gap_drift : callable, optional
            ``gap_drift(t, q, v)`` -> c = d2g/dt2 + 2 (dG/dt) v, shape (m,) (rheonomic only).

        Returns
        -------
        Problem
            A :class:`impactbench.core.problem.FunctionProblem` (rheonomic: a
            :class:`impactbench.core.problem.TimedFunctionProblem`), checked by
            :meth:`check` (a ValueError names the bad value). It runs with every method (on
            their plain-Python paths; a rheonomic one with the methods that declare
            ``moving_obstacles``) and pickles with ``cloudpickle``.
        """
        if rheonomic is True:
            return TimedFunctionProblem(
                mass_matrix, forces, gap, gap_gradient, gap_rate, gap_drift, q0, v0,
                restitution=restitution, t0=t0, potential_energy=potential_energy,
                exact_solution=exact_solution, name=name,
            )  # fmt: skip
        if rheonomic is not False:
            raise ValueError(f"rheonomic must be True or False, got {rheonomic!r}")
        for label, value in (("gap_rate", gap_rate), ("gap_drift", gap_drift)):
            if value is not None:
                raise ValueError(
                    f"{label} is for a moving obstacle (rheonomic=True), got {value!r}"
                )
        return FunctionProblem(
            mass_matrix, forces, gap, gap_gradient, q0, v0, restitution=restitution, t0=t0,
            potential_energy=potential_energy, exact_solution=exact_solution, name=name,
        )  # fmt: skip

    @abstractmethod
    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Mass matrix M(q), shape (n, n)."""

    def mass_diagonal(self, q: np.ndarray) -> np.ndarray:
        """Diagonal of M(q), shape (n,) (here taken from :meth:`mass_matrix`)."""
        return np.diagonal(np.asarray(self.mass_matrix(q), dtype=float)).copy()

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

    def tangent_gradient(self, q: np.ndarray) -> np.ndarray:
        """Tangent rows, shape (m, n): row i is W_T,i(q), the tangential velocity of contact i
        is W_T,i v (frictional problems only)."""
        raise NotImplementedError(f"problem {self.name!r} is frictionless")

    def friction(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mu, e_T), each of shape (m,): the Coulomb coefficient mu_i >= 0 and the tangential
        restitution e_T,i in [0, 1] of each contact (frictional problems only)."""
        raise NotImplementedError(f"problem {self.name!r} is frictionless")

    def normal_restitution(self, q: np.ndarray) -> np.ndarray:
        """e_N,i in [0, 1] of each contact, shape (m,) (frictional problems; default: the
        problem's ``restitution`` for every contact)."""
        if self.rheonomic:  # the gap needs a time: m is known from the check
            return np.full(self.n_constraints, float(self.restitution))
        return np.full(np.shape(self.gap(q))[0], float(self.restitution))

    def gap_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """r = dg/dt at fixed q, shape (m,) (rheonomic problems only: :attr:`rheonomic`)."""
        raise NotImplementedError(f"problem {self.name!r} has no moving obstacle")

    def gap_drift(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """c = d2g/dt2 + 2 (dG/dt) v, shape (m,) (rheonomic problems only)."""
        raise NotImplementedError(f"problem {self.name!r} has no moving obstacle")

    def tangent_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """tau, the obstacle's term of the relative tangential velocity u_T = W_T v + tau,
        shape (m,) (frictional rheonomic problems only)."""
        raise NotImplementedError(f"problem {self.name!r} has no moving obstacle")

    def tangent_drift(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """c_T = (dW_T/dt) v + dtau/dt + (dtau/dq) v, shape (m,) (frictional rheonomic
        problems only)."""
        raise NotImplementedError(f"problem {self.name!r} has no moving obstacle")

    @property
    def has_friction(self) -> bool:
        """True when the problem declares Coulomb friction (implements
        :meth:`tangent_gradient` and :meth:`friction`)."""
        return type(self).tangent_gradient is not Problem.tangent_gradient

    def stiffness_matrix(self) -> np.ndarray | None:
        """The constant stiffness K, shape (n, n), of the linear part -K q - C v of
        :meth:`forces`, or None (default) when not declared."""
        return None

    def damping_matrix(self) -> np.ndarray | None:
        """The constant damping C, shape (n, n), of the linear part -K q - C v of
        :meth:`forces`, or None (default) when not declared."""
        return None

    def kernels(self) -> ProblemKernels | None:
        """Compiled kernels of this problem, or None for a plain-Python problem."""
        return None

    def kernel_parameters(self) -> np.ndarray:
        """Parameter vector passed to the kernels (empty for a plain-Python problem)."""
        return np.zeros(0)

    def kinetic_energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Kinetic energy v^T M(q) v / 2 (O(n) for a diagonal M)."""
        v = np.asarray(v, dtype=float)
        if self.mass_structure == "diagonal":
            return 0.5 * float(np.sum(self.mass_diagonal(q) * v * v))
        return 0.5 * float(v @ self.mass_matrix(q) @ v)

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Total mechanical energy (kinetic plus potential)."""
        return self.kinetic_energy(q, v) + float(self.potential_energy(q))

    def potential_energies(self, q: np.ndarray) -> np.ndarray:
        """V at each sample: q of shape (N, n), result (N,) (one :meth:`potential_energy` call
        each; a problem may override it with an equal vectorised form)."""
        return np.array([float(self.potential_energy(qi)) for qi in np.atleast_2d(q)], dtype=float)

    def gaps(self, q: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """g at each sample: q of shape (N, n), result (N, m) (one :meth:`gap` call each).

        ``t``, shape (N,), the samples' times: required for a rheonomic problem (g(t_k, q_k));
        not read otherwise."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        m = -1 if self.n_constraints is None else self.n_constraints
        if self.rheonomic:
            t = sample_times(t, q.shape[0])
            values = [self.gap(tk, qi) for tk, qi in zip(t.tolist(), q, strict=True)]
            return np.array(values, dtype=float).reshape(len(q), m)
        return np.array([self.gap(qi) for qi in q], dtype=float).reshape(len(q), m)

    def kinetic_energies(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """v^T M(q) v / 2 at each sample: q, v of shape (N, n), result (N,) (one
        :meth:`kinetic_energy` call each)."""
        q, v = np.atleast_2d(q), np.atleast_2d(v)
        return np.array(
            [self.kinetic_energy(qi, vi) for qi, vi in zip(q, v, strict=True)], dtype=float
        )

    def check(self) -> None:
        """Validate sizes, restitution, initial state, and what the methods return at q0.

        The values returned at (t0, q0, v0) must have the contract's shapes, be real and finite,
        the mass matrix must be symmetric positive definite and well conditioned
        (:func:`impactbench.core._checks.spd_matrix`), and the gap gradient must agree with
        differences of the gap at q0 (:mod:`impactbench.core._gradient_check`: a wrong sign or
        a transposed gradient is refused). A rheonomic problem is evaluated at (t0, q0), its
        gradient checked at fixed t0, and its declared ``gap_rate`` and ``gap_drift`` (and
        frictional, ``tangent_drift``) against central differences in t
        (:func:`impactbench.core._gradient_check.rate_mismatch`, ``drift_mismatch``); it may
        not declare itself conservative. During a run the plain-Python path checks
        every returned value again (:class:`CheckedCalls`).

        Raises
        ------
        ValueError
            Naming the offending attribute and its value.
        """
        if getattr(self, "n_dof", None) is None:  # inferred from q0
            self.q0 = _checks.vector(getattr(self, "q0", None), "q0")
            self.n_dof = self.q0.shape[0]
        n = _checks.positive_int(self.n_dof, "n_dof")
        self.restitution = _checks.restitution(getattr(self, "restitution", None))
        self.t0 = _checks.finite_scalar(self.t0, "t0")
        declared_stable_step(self)
        declared_state_scale(self)
        self.q0 = _checks.vector(getattr(self, "q0", None), "q0", n)
        self.v0 = _checks.vector(getattr(self, "v0", None), "v0", n)
        diagonal, kinetic = self._check_mass(n)
        if declared_rheonomic(self):
            if self.conservative:
                raise ValueError(
                    "conservative must be False for a rheonomic problem (a moving obstacle does "
                    "work on the system: its energy may rise), got conservative=True"
                )
            m = _check_rheonomic(self, n)
        else:
            m = self._check_gap(n)
        if self.has_friction:
            _check_friction(self, n, m)
        _check_linear_forces(self, n)
        force = _valid(
            returned_array(self.forces(self.t0, self.q0, self.v0), "forces(t0, q0, v0)", (n,))
        )
        # the scales of the divergence bounds (impactbench.core.divergence.state_bounds), kept
        # so that a run does not evaluate M and F at q0 again
        frequency = initial_frequency(self, diagonal, force)
        self._initial_scales = (
            float(diagonal.min()),
            kinetic,
            float(np.abs(force).max()),
            frequency,
        )

    def _check_gap(self, n: int) -> int:
        """Check g(q0) (shape, admissibility) and G(q0) against differences of g (see
        :meth:`check`); return m."""
        if getattr(self, "n_constraints", None) is None:  # inferred from gap(q0)
            g0 = np.asarray(self.gap(self.q0))
            if g0.ndim != 1:
                raise ValueError(f"gap(q0) must have shape (m,), got shape {g0.shape}")
            self.n_constraints = g0.shape[0]
        m = _checks.positive_int(self.n_constraints, "n_constraints")
        g0 = _valid(returned_array(self.gap(self.q0), "gap(q0)", (m,)))
        G0 = _valid(returned_array(self.gap_gradient(self.q0), "gap_gradient(q0)", (m, n)))
        tol = initial_penetration_tolerance(self)
        if np.any(g0 < -tol):
            raise ValueError(
                f"q0 must be admissible (gap(q0) >= -{tol:.3g}, the initial_penetration_"
                f"tolerance), got q0={self.q0.tolist()} with gap(q0)={g0.tolist()}"
            )

        def gap_or_none(q: np.ndarray) -> np.ndarray | None:
            value, reason = returned_array(self.gap(q), "gap(q)", (m,))
            return None if reason else value

        mismatch = gradient_mismatch(gap_or_none, self.q0, g0, G0)
        if mismatch:
            raise ValueError(mismatch)
        return m

    def _check_mass(self, n: int) -> tuple[np.ndarray, float]:
        """Check the declared :attr:`mass_structure` and M(q0) (see :meth:`check`); return the
        diagonal of M(q0), shape (n,), and the kinetic energy v0^T M(q0) v0 / 2."""
        if valid_mass_structure(self.mass_structure) == "dense":
            mass = _valid(returned_array(self.mass_matrix(self.q0), "mass_matrix(q0)", (n, n)))
            _checks.spd_matrix(mass, "mass_matrix(q0)", n)
            return np.diagonal(mass).copy(), 0.5 * float(self.v0 @ mass @ self.v0)
        diagonal = _valid(returned_array(self.mass_diagonal(self.q0), "mass_diagonal(q0)", (n,)))
        if not np.all(diagonal > 0.0):
            raise ValueError(f"mass_diagonal(q0) must be positive, got {_brief(diagonal)}")
        if diagonal.max() / diagonal.min() > _checks.MAX_CONDITION:
            raise ValueError(
                f"mass_diagonal(q0) is badly conditioned (max / min = "
                f"{diagonal.max() / diagonal.min():.3g} > {_checks.MAX_CONDITION:.0e}): "
                f"{_brief(diagonal)}"
            )
        scales = diagonal, 0.5 * float(diagonal @ (self.v0 * self.v0))
        if n > DIAGONAL_CHECK_MAX_DOF:
            return scales
        mass = _valid(returned_array(self.mass_matrix(self.q0), "mass_matrix(q0)", (n, n)))
        off = mass - np.diag(np.diagonal(mass))
        if np.any(off != 0.0):
            i, j = np.unravel_index(int(np.argmax(np.abs(off))), off.shape)
            raise ValueError(
                f"mass_structure='diagonal' but mass_matrix(q0) is not diagonal: its entry "
                f"[{i}, {j}] is {float(mass[i, j])!r}"
            )
        scale = float(diagonal.max())
        worst = int(np.argmax(np.abs(np.diagonal(mass) - diagonal)))
        if abs(mass[worst, worst] - diagonal[worst]) > _checks.SYMMETRY_TOLERANCE * scale:
            raise ValueError(
                f"mass_diagonal(q0) must be the diagonal of mass_matrix(q0), got "
                f"mass_diagonal(q0)[{worst}] = {float(diagonal[worst])!r} and "
                f"mass_matrix(q0)[{worst}, {worst}] = {float(mass[worst, worst])!r}"
            )
        return scales

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, e={self.restitution})"


def declared_rheonomic(problem: Problem) -> bool:
    """``problem.rheonomic`` checked: True or False (else ValueError naming it)."""
    value = getattr(problem, "rheonomic", False)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"rheonomic must be True or False, got {value!r}")
    return bool(value)


def timed_gap(problem: Problem, t: float, q: np.ndarray) -> np.ndarray:
    """g at (t, q): ``problem.gap(t, q)`` for a rheonomic problem, ``problem.gap(q)`` (t not
    read) otherwise; for callers that serve both kinds of problem."""
    return problem.gap(t, q) if problem.rheonomic else problem.gap(q)


def timed_gradient(problem: Problem, t: float, q: np.ndarray) -> np.ndarray:
    """G = dg/dq at (t, q), shape (m, n): ``problem.gap_gradient(t, q)`` for a rheonomic
    problem, ``problem.gap_gradient(q)`` (t not read) otherwise."""
    return problem.gap_gradient(t, q) if problem.rheonomic else problem.gap_gradient(q)


def sample_times(t: Any, samples: int) -> np.ndarray:
    """The times of ``samples`` samples, a float64 array of shape (samples,) (ValueError naming
    ``t`` when it is None, not of that shape or not finite: a rheonomic problem's gaps need
    them)."""
    if t is None:
        raise ValueError("t must be given for a rheonomic problem (its gaps depend on time)")
    times = np.atleast_1d(np.asarray(t, dtype=float))
    if times.shape != (samples,) or not np.all(np.isfinite(times)):
        raise ValueError(f"t must be {samples} finite times, one per sample, got {_brief(t)}")
    return np.ascontiguousarray(times)


def _check_rheonomic(problem: Problem, n: int) -> int:
    """The gap data of a rheonomic ``problem`` at (t0, q0, v0) (see :meth:`Problem.check`):
    shapes, admissibility, G against differences in q at fixed t0, the declared rate and drift
    (and, frictional, tangent drift) against differences in t; returns m."""
    t0, q0, v0 = problem.t0, problem.q0, problem.v0
    if getattr(problem, "n_constraints", None) is None:  # inferred from gap(t0, q0)
        g0 = np.asarray(problem.gap(t0, q0))
        if g0.ndim != 1:
            raise ValueError(f"gap(t0, q0) must have shape (m,), got shape {g0.shape}")
        problem.n_constraints = g0.shape[0]
    m = _checks.positive_int(problem.n_constraints, "n_constraints")
    g0 = _valid(returned_array(problem.gap(t0, q0), "gap(t0, q0)", (m,)))
    G0 = _valid(returned_array(problem.gap_gradient(t0, q0), "gap_gradient(t0, q0)", (m, n)))
    tol = initial_penetration_tolerance(problem)
    if np.any(g0 < -tol):
        raise ValueError(
            f"q0 must be admissible (gap(t0, q0) >= -{tol:.3g}, the initial_penetration_"
            f"tolerance), got t0={t0!r}, q0={q0.tolist()} with gap(t0, q0)={g0.tolist()}"
        )

    def valid(value: Any, label: str, shape: tuple[int, ...]) -> np.ndarray | None:
        array, reason = returned_array(value, label, shape)
        return None if reason else array

    gap = functools.partial(problem.gap, t0)
    mismatch = gradient_mismatch(lambda q: valid(gap(q), "gap", (m,)), q0, g0, G0, "t0, q0")
    if mismatch:
        raise ValueError(mismatch)
    rate = _valid(returned_array(problem.gap_rate(t0, q0), "gap_rate(t0, q0)", (m,)))
    drift = _valid(returned_array(problem.gap_drift(t0, q0, v0), "gap_drift(t0, q0, v0)", (m,)))
    mismatch = rate_mismatch(
        lambda t: valid(problem.gap(t, q0), "gap", (m,)), t0, q0, rate, "gap_rate(t0, q0)"
    ) or _drift_mismatch(problem.gap_gradient, problem.gap_rate, problem, m, drift, "gap_drift")
    if not mismatch and problem.has_friction:
        _valid(returned_array(problem.tangent_rate(t0, q0), "tangent_rate(t0, q0)", (m,)))
        label = "tangent_drift(t0, q0, v0)"
        drift_t = _valid(returned_array(problem.tangent_drift(t0, q0, v0), label, (m,)))
        mismatch = _drift_mismatch(
            problem.tangent_gradient, problem.tangent_rate, problem, m, drift_t, "tangent_drift"
        )
    if mismatch:
        raise ValueError(mismatch)
    return m


def _drift_mismatch(
    rows: Callable, rate: Callable, problem: Problem, m: int, drift: np.ndarray, name: str
) -> str:
    """:func:`impactbench.core._gradient_check.drift_mismatch` of the relative velocity
    ``rows(t, q) v0 + rate(t, q)`` at (t0, q0, v0) (no check where a value is not valid)."""
    n, v0 = problem.n_dof, problem.v0

    def rows_v0(t: float, q: np.ndarray) -> np.ndarray | None:
        value, reason = returned_array(rows(t, q), "rows", (m, n))
        return None if reason else value @ v0

    def velocity(t: float, q: np.ndarray) -> np.ndarray | None:
        spatial = rows_v0(t, q)
        value, reason = returned_array(rate(t, q), "rate", (m,))
        return None if reason or spatial is None else spatial + value

    label = f"{name}(t0, q0, v0)"
    return drift_mismatch(velocity, rows_v0, problem.t0, problem.q0, v0, drift, label)


def _check_friction(problem: Problem, n: int, m: int) -> None:
    """The friction data of ``problem`` at q0: tangent rows of shape (m, n), finite and none
    zero, mu_i finite and >= 0, e_T,i and e_N,i in [0, 1] (ValueError naming the bad value)."""
    if problem.rheonomic:
        label = "tangent_gradient(t0, q0)"
        rows = problem.tangent_gradient(problem.t0, problem.q0)
    else:
        label, rows = "tangent_gradient(q0)", problem.tangent_gradient(problem.q0)
    T = _valid(returned_array(rows, label, (m, n)))
    if _has_zero_row(T):
        raise ValueError(f"{label} must have no zero row, got {_brief(T)}")
    values = problem.friction(problem.q0)
    if not isinstance(values, tuple) or len(values) != 2:
        raise ValueError(f"friction(q0) must return a pair (mu, e_T), got {_brief(values)}")
    mu = _valid(returned_array(values[0], "friction(q0)[0] (mu)", (m,)))
    e_t = _valid(returned_array(values[1], "friction(q0)[1] (e_T)", (m,)))
    if np.any(mu < 0.0):
        raise ValueError(f"friction(q0)[0] (mu) must be >= 0, got {_brief(mu)}")
    if np.any((e_t < 0.0) | (e_t > 1.0)):
        raise ValueError(f"friction(q0)[1] (e_T) must lie in [0, 1], got {_brief(e_t)}")
    e_n = _valid(
        returned_array(problem.normal_restitution(problem.q0), "normal_restitution(q0)", (m,))
    )
    if np.any((e_n < 0.0) | (e_n > 1.0)):
        raise ValueError(f"normal_restitution(q0) must lie in [0, 1], got {_brief(e_n)}")


def _check_linear_forces(problem: Problem, n: int) -> None:
    """The declared K and C of ``problem`` (:meth:`Problem.stiffness_matrix`,
    :meth:`Problem.damping_matrix`): None, or finite symmetric (n, n) arrays (ValueError naming
    the bad one); not formed above :data:`DIAGONAL_CHECK_MAX_DOF` DOF (a matrix of 32 MiB)."""
    if n > DIAGONAL_CHECK_MAX_DOF:
        return
    for name in ("stiffness_matrix", "damping_matrix"):
        value = getattr(problem, name)()
        if value is None:
            continue
        matrix = _valid(returned_array(value, f"{name}()", (n, n)))
        scale = float(np.abs(matrix).max(initial=0.0))
        if np.abs(matrix - matrix.T).max(initial=0.0) > _checks.SYMMETRY_TOLERANCE * scale:
            raise ValueError(f"{name}() must be symmetric, got {_brief(matrix)}")


class CompiledProblem(Problem):
    """A problem whose physics is written once as numba kernels (class attribute ``KERNELS``).

    Subclasses set ``KERNELS`` (a :class:`ProblemKernels` of ``@numba.njit`` functions) and
    implement :meth:`kernel_parameters`; the Python methods of the contract are derived here by
    calling the kernels, so the compiled and plain-Python paths share one definition.
    Subclasses must call :meth:`_finish_init` at the end of ``__init__``. A subclass that
    declares ``mass_structure = "diagonal"`` provides ``KERNELS.mass_diagonal`` too.
    """

    KERNELS: ClassVar[ProblemKernels]

    @abstractmethod
    def kernel_parameters(self) -> np.ndarray:
        """Float64 parameter vector read by the kernels."""

    def _finish_init(self) -> None:
        self._p = None  # taken from kernel_parameters() by the check (_refresh_parameters)
        # the count the kernel parameters are computed for, set before the check so that the
        # check's snapshot is that of the built problem (None: taken from gap(q0) by the check)
        self._built_constraints = getattr(self, "n_constraints", None)
        self.check()
        if self._built_constraints is None:
            self._built_constraints = self.n_constraints

    def check(self) -> None:
        """:meth:`Problem.check`; a diagonal declaration needs ``KERNELS.mass_diagonal``, and the
        ``gap`` kernel must write exactly ``n_constraints`` values (:meth:`_check_gap_size`).

        The values checked at q0 are the kernels' at (t0, q0, v0) with the parameter vector,
        so a check that passed holds while the contract's attributes (sizes,
        ``mass_structure``, ``restitution``, ``t0``, ``q0``, ``v0``: types, shapes and bits)
        and that vector are unchanged: it is skipped then (:func:`_contract_key`; first
        tested by the cheaper :class:`impactbench.core.snapshot.Snapshot`: no attribute changed
        at all), and run in full after any change. A subclass that overrides a method of the
        contract in Python is checked in full every time. A new instance, or one changed, whose
        contract has the values of one that passed before (with the same ``_built_constraints``)
        is not checked in full again either: it takes the scales that check found
        (:data:`_PASSED_VALUES`). After any change of an attribute,
        the vector is taken again from ``kernel_parameters()`` (what a run integrates, so a
        parameter set after construction is validated at the next check:
        :meth:`_refresh_parameters`).
        """
        passed = _PASSED.get(id(self))
        if passed is not None and passed[0]() is self:
            if passed[2] is not None and passed[2].matches(self):
                return  # no attribute changed since the check passed
            self._refresh_parameters()
            key = _contract_key(self)
            if key is not None and passed[1] == key:  # another attribute changed
                _PASSED[id(self)] = (passed[0], key, Snapshot.take(self, _CLASS_READ))
                return
        else:
            self._refresh_parameters()
        kernels = self.KERNELS
        if (kernels.tangent_gradient is None) != (kernels.friction is None):
            raise ValueError(
                f"{type(self).__name__}.KERNELS must give tangent_gradient and friction "
                f"together (a frictional problem) or neither, got "
                f"tangent_gradient={kernels.tangent_gradient!r}, friction={kernels.friction!r}"
            )
        if kernels.tangent_rows != 1:
            raise ValueError(
                f"{type(self).__name__}.KERNELS.tangent_rows must be 1 (planar friction; "
                f"spatial contacts are not implemented yet), got {kernels.tangent_rows!r}"
            )
        if kernels.normal_restitution is not None:
            if kernels.friction is None:
                raise ValueError(
                    f"{type(self).__name__}.KERNELS.normal_restitution is for frictional "
                    "problems (with tangent_gradient and friction)"
                )
            e_n = np.full(self.n_constraints, np.nan)
            kernels.normal_restitution(np.asarray(self.q0, dtype=float), self._p, e_n)
            if not np.all((e_n >= 0.0) & (e_n <= 1.0)):
                raise ValueError(f"normal_restitution(q0) must lie in [0, 1], got {e_n.tolist()}")
        _check_rheonomic_kernels(self)
        if self.mass_structure == "diagonal" and self.KERNELS.mass_diagonal is None:
            raise ValueError(
                f"mass_structure='diagonal' needs a mass_diagonal kernel in "
                f"{type(self).__name__}.KERNELS, got mass_diagonal=None"
            )
        _PASSED.pop(id(self), None)
        # a contract of the same values passed before (another instance, or this one before a
        # change): the check is a function of those values, it passes again with the same scales
        key = _contract_key(self)
        built = getattr(self, "_built_constraints", None)
        scales = None if key is None else _PASSED_VALUES.get((key, built))
        if scales is None:
            self._check_gap_size()
            super().check()
            key = _contract_key(self)
            if key is not None:
                if len(_PASSED_VALUES) >= MAX_PASSED_VALUES:
                    _PASSED_VALUES.clear()
                _PASSED_VALUES[key, built] = self._initial_scales
        else:
            self._initial_scales = scales
        if key is not None:
            forget = functools.partial(_PASSED.pop, id(self), None)
            reference = weakref.ref(self, lambda _: forget())
            _PASSED[id(self)] = (reference, key, Snapshot.take(self, _CLASS_READ))

    def _refresh_parameters(self) -> None:
        """Take ``kernel_parameters()`` again into the vector the kernels are called with.

        The loops read ``kernel_parameters()`` at every run, so a parameter set on the instance
        after construction (``block.mu = -3``) is what a run integrates: the check must validate
        that vector, not the one of construction. Called by :meth:`check` whenever an attribute
        changed; a changed vector changes :func:`_contract_key`, and the check then runs in full
        on it (a negative ``mu`` is refused there, by :func:`_check_friction`).

        Raises
        ------
        ValueError
            If the vector's length changed (the kernels were written for the length of
            construction).
        """
        built = getattr(self, "_p", None)
        if built is None:  # within _finish_init: the vector of construction
            self._p = np.ascontiguousarray(self.kernel_parameters(), dtype=float)
            return
        now = np.ascontiguousarray(self.kernel_parameters(), dtype=float)
        if now.shape != built.shape:
            raise ValueError(
                f"kernel_parameters() of this {type(self).__name__} must keep the shape "
                f"{built.shape} of construction, got shape {now.shape}: build a new problem"
            )
        if now.tobytes() != built.tobytes():  # another vector (its bits: a zero's sign too)
            self._p = now

    def _check_gap_size(self) -> None:
        """``n_constraints`` is the number of values the ``gap`` kernel writes.

        The kernels write into buffers sized from ``n_constraints`` and check no bounds, and
        the kernel parameters are computed once, in :meth:`_finish_init`. A count changed since
        then is refused (a kernel that loops over its buffer would read parameters past their
        end), and so is a count above what the kernel writes at q0 (entries of the loops'
        buffers would stay uninitialised: the kernel is called on m NaNs and must overwrite
        them all). A count below what a kernel writes cannot be caught before it writes.
        """
        m = getattr(self, "n_constraints", None)
        built = getattr(self, "_built_constraints", None)
        if built is not None and m != built:
            raise ValueError(
                f"n_constraints must be {built} (the kernel parameters of this "
                f"{type(self).__name__} were computed for it: build a new problem), got {m!r}"
            )
        q0 = np.asarray(getattr(self, "q0", None))
        sized = isinstance(m, (int, np.integer)) and not isinstance(m, bool) and 0 < m < 2**31
        if not sized or q0.dtype.kind not in "iuf" or q0.shape != (getattr(self, "n_dof", -1),):
            return  # refused by name in Problem.check
        probe = np.full(int(m), np.nan)
        q0 = np.ascontiguousarray(q0, dtype=float)
        if self.rheonomic:
            self.KERNELS.gap(float(self.t0), q0, self._p, probe)
        else:
            self.KERNELS.gap(q0, self._p, probe)
        unwritten = np.flatnonzero(np.isnan(probe))
        if unwritten.size:
            raise ValueError(
                f"n_constraints must be the number of values the gap kernel of "
                f"{type(self).__name__} writes: got n_constraints={m!r}, and at q0 it left "
                f"entries {unwritten.tolist()[:5]} unwritten"
            )

    def kernels(self) -> ProblemKernels:
        if self.KERNELS.mass_structure == self.mass_structure:
            return self.KERNELS
        return self.KERNELS._replace(mass_structure=self.mass_structure)

    def gaps(self, q: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """g at each sample, q (N, n) -> (N, m): the ``gap`` kernel over all samples in one
        compiled call (:func:`impactbench.core.sampled.sample_gaps`); ``t`` (N,), the samples'
        times, required for a rheonomic problem, not read otherwise."""
        if self.rheonomic:
            q = np.atleast_2d(np.asarray(q, dtype=float))
            times = sample_times(t, q.shape[0])
            return sample_gaps(self.KERNELS.gap, self._p, self.n_dof, self.n_constraints, q, times)
        return sample_gaps(self.KERNELS.gap, self._p, self.n_dof, self.n_constraints, q)

    def kinetic_energies(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """v^T M(q) v / 2 at each sample, q, v (N, n) -> (N,), in one compiled call
        (:func:`impactbench.core.sampled.sample_kinetic_energies`; O(n) per sample for a
        diagonal M)."""
        return sample_kinetic_energies(self.kernels(), self._p, self.n_dof, q, v)

    def mass_diagonal(self, q: np.ndarray) -> np.ndarray:
        if self.KERNELS.mass_diagonal is None:
            return super().mass_diagonal(q)
        out = np.empty(self.n_dof)
        self.KERNELS.mass_diagonal(np.ascontiguousarray(q, dtype=float), self._p, out)
        return out

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

    @property
    def has_friction(self) -> bool:
        """True when ``KERNELS`` declares friction (``tangent_gradient`` and ``friction``)."""
        return self.KERNELS.tangent_gradient is not None

    def tangent_gradient(self, q: np.ndarray) -> np.ndarray:
        if self.KERNELS.tangent_gradient is None:
            return super().tangent_gradient(q)
        out = np.empty((self.n_constraints, self.n_dof))
        self.KERNELS.tangent_gradient(np.ascontiguousarray(q, dtype=float), self._p, out)
        return out

    def friction(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.KERNELS.friction is None:
            return super().friction(q)
        mu, e_t = np.empty(self.n_constraints), np.empty(self.n_constraints)
        self.KERNELS.friction(np.ascontiguousarray(q, dtype=float), self._p, mu, e_t)
        return mu, e_t

    def normal_restitution(self, q: np.ndarray) -> np.ndarray:
        if self.KERNELS.normal_restitution is None:
            return super().normal_restitution(q)
        e_n = np.empty(self.n_constraints)
        self.KERNELS.normal_restitution(np.ascontiguousarray(q, dtype=float), self._p, e_n)
        return e_n

    def stiffness_matrix(self) -> np.ndarray | None:
        """K from the ``stiffness_matrix`` kernel of ``KERNELS`` (None when it declares none)."""
        return self._linear_matrix(self.KERNELS.stiffness_matrix)

    def damping_matrix(self) -> np.ndarray | None:
        """C from the ``damping_matrix`` kernel of ``KERNELS`` (None when it declares none)."""
        return self._linear_matrix(self.KERNELS.damping_matrix)

    def _linear_matrix(self, function: Callable | None) -> np.ndarray | None:
        if function is None:
            return None
        out = np.zeros((self.n_dof, self.n_dof))
        function(self._p, out)
        return out


class RheonomicCompiledProblem(CompiledProblem):
    """A :class:`CompiledProblem` with moving obstacles (``rheonomic = True``): its
    ``KERNELS`` declare ``rheonomic=True``, take t first in the geometric kernels and give
    ``gap_rate`` and ``gap_drift`` (frictional: ``tangent_rate`` and ``tangent_drift`` too;
    :class:`ProblemKernels`). The Python methods of the contract are derived from them, with t
    first (:class:`Problem`, Notes).
    """

    rheonomic = True

    def gap(self, t: float, q: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """g(t, q), shape (m,)."""
        return self._call(self.KERNELS.gap, t, q, (self.n_constraints,))

    def gap_gradient(self, t: float, q: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """G(t, q) = dg/dq, shape (m, n)."""
        return self._call(self.KERNELS.gap_gradient, t, q, (self.n_constraints, self.n_dof))

    def tangent_gradient(self, t: float, q: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """W_T(t, q), shape (m, n) (frictional problems)."""
        if self.KERNELS.tangent_gradient is None:
            return super().tangent_gradient(q)
        shape = (self.n_constraints, self.n_dof)
        return self._call(self.KERNELS.tangent_gradient, t, q, shape)

    def gap_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """r(t, q) = dg/dt, shape (m,)."""
        return self._call(self.KERNELS.gap_rate, t, q, (self.n_constraints,))

    def gap_drift(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """c(t, q, v) = d2g/dt2 + 2 (dG/dt) v, shape (m,)."""
        return self._call(self.KERNELS.gap_drift, t, q, (self.n_constraints,), v)

    def tangent_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """tau(t, q), shape (m,) (frictional problems)."""
        if self.KERNELS.tangent_rate is None:
            return super().tangent_rate(t, q)
        return self._call(self.KERNELS.tangent_rate, t, q, (self.n_constraints,))

    def tangent_drift(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """c_T(t, q, v), shape (m,) (frictional problems)."""
        if self.KERNELS.tangent_drift is None:
            return super().tangent_drift(t, q, v)
        return self._call(self.KERNELS.tangent_drift, t, q, (self.n_constraints,), v)

    def _call(
        self, function: Callable, t: float, q: np.ndarray, shape: tuple, v: Any = None
    ) -> np.ndarray:
        """``function(t, q, p, out)`` (``function(t, q, v, p, out)`` with ``v``) into a new
        array of ``shape``."""
        out = np.empty(shape)
        q = np.ascontiguousarray(q, dtype=float)
        if v is None:
            function(float(t), q, self._p, out)
        else:
            function(float(t), q, np.ascontiguousarray(v, dtype=float), self._p, out)
        return out


#: The kernels of a rheonomic :class:`ProblemKernels` that only it gives (the first two always,
#: the last two with friction).
_TIME_KERNELS = ("gap_rate", "gap_drift", "tangent_rate", "tangent_drift")


def _check_rheonomic_kernels(problem: CompiledProblem) -> None:
    """``KERNELS.rheonomic`` agrees with the problem's ``rheonomic`` (a
    :class:`RheonomicCompiledProblem` or not) and the time kernels are given exactly when
    declared: ``gap_rate`` and ``gap_drift``, with friction ``tangent_rate`` and
    ``tangent_drift`` too (ValueError naming the field)."""
    kernels, name = problem.KERNELS, type(problem).__name__
    declared = declared_rheonomic(problem)
    if kernels.rheonomic is not declared:
        raise ValueError(
            f"{name}.KERNELS.rheonomic must be {declared} (the problem's rheonomic; a problem "
            f"with moving obstacles subclasses RheonomicCompiledProblem), got "
            f"{kernels.rheonomic!r}"
        )
    frictional = kernels.tangent_gradient is not None
    for field in _TIME_KERNELS:
        needed = declared and (frictional or not field.startswith("tangent"))
        if (getattr(kernels, field) is not None) != needed:
            state = "needs" if needed else "must not give"
            raise ValueError(
                f"{name}.KERNELS {state} a {field} kernel (rheonomic={declared}, "
                f"frictional={frictional}), got {field}={getattr(kernels, field)!r}"
            )


#: The compiled problems whose last :meth:`CompiledProblem.check` passed, by id: a weak
#: reference to the problem (its entry removed when it is freed), the :func:`_contract_key`
#: it passed for and the :class:`impactbench.core.snapshot.Snapshot` of its attributes then, or
#: None (kept outside the instance: its attributes fingerprint it,
#: :func:`impactbench.analysis.reference.problem_fingerprint`).
_PASSED: dict[int, tuple[weakref.ref, tuple[Any, ...], Snapshot | None]] = {}

#: The contracts that passed :meth:`CompiledProblem.check`, by value: (:func:`_contract_key`,
#: ``_built_constraints``) -> the ``_initial_scales`` the check found for them.
_PASSED_VALUES: dict[tuple[Any, ...], tuple[float, float, float, float]] = {}

#: Contracts kept in :data:`_PASSED_VALUES` at most (all are forgotten beyond them).
MAX_PASSED_VALUES = 1024

#: What :func:`_contract_key` reads through the class (compared by the snapshots too).
_CLASS_READ = ("KERNELS", "mass_structure")


def checked_state(problem: Problem) -> Snapshot | None:
    """The state in which ``problem`` passed its last check, to be called right after
    ``problem.check()``: a :class:`impactbench.core.snapshot.Snapshot` of its attributes, the
    same object for as long as they do not change (a check after a change keeps a new one), so
    that what a caller derives from them can be kept under it. None when the problem is not a
    :class:`CompiledProblem` whose check is kept, or its attributes have no snapshot."""
    passed = _PASSED.get(id(problem))
    if passed is None or passed[0]() is not problem:
        return None
    return passed[2]


#: The methods :meth:`Problem.check` calls: :class:`CompiledProblem` derives them from its kernels.
_CHECKED_METHODS = (
    "mass_matrix",
    "mass_diagonal",
    "forces",
    "gap",
    "gap_gradient",
    "tangent_gradient",
    "friction",
    "stiffness_matrix",
    "damping_matrix",
    "gap_rate",
    "gap_drift",
    "tangent_rate",
    "tangent_drift",
    "check",
)


@functools.cache
def _kernels_only(cls: type) -> bool:
    """Whether the contract methods of ``cls`` are :class:`CompiledProblem`'s own (those of
    :class:`RheonomicCompiledProblem` for its subclasses; its values at q0 then depend on the
    kernels, the parameter vector and the state only)."""
    rheonomic = issubclass(cls, RheonomicCompiledProblem)
    base = RheonomicCompiledProblem if rheonomic else CompiledProblem
    return all(getattr(cls, name) is getattr(base, name) for name in _CHECKED_METHODS)


def initial_penetration_tolerance(problem: Problem) -> float:
    """The largest initial penetration ``problem`` accepts: its declared
    :attr:`Problem.initial_penetration_tolerance`, or :data:`ADMISSIBILITY_TOLERANCE`
    max(1, |q0|_inf) when it declares none.

    Raises
    ------
    ValueError
        If the declared tolerance is not a finite float >= 0 (named in the message).
    """
    declared = getattr(problem, "initial_penetration_tolerance", None)
    if declared is None:
        return ADMISSIBILITY_TOLERANCE * max(1.0, float(np.abs(problem.q0).max()))
    tolerance = _checks.finite_scalar(declared, "initial_penetration_tolerance")
    if tolerance < 0.0:
        raise ValueError(f"initial_penetration_tolerance must be >= 0, got {declared!r}")
    return tolerance


def _contract_key(problem: CompiledProblem) -> tuple[Any, ...] | None:
    """What :meth:`CompiledProblem.check` reads: the class and its kernels, the sizes,
    ``mass_structure``, ``restitution``, ``t0``, ``initial_penetration_tolerance``,
    ``stable_step`` and ``state_scale`` by their types and bits, ``q0``, ``v0`` and the
    parameter vector by shape and bytes (hashable); None when a check cannot be skipped (a
    subclass overriding a contract method, a ``q0``, ``v0`` or parameter vector that is not a
    float64 ndarray, a scalar that could change unseen)."""
    cls = type(problem)
    if not _kernels_only(cls):
        return None
    q0 = getattr(problem, "q0", None)
    v0 = getattr(problem, "v0", None)
    p = getattr(problem, "_p", None)
    for array in (q0, v0, p):
        if type(array) is not np.ndarray or array.dtype is not _FLOAT64:
            return None
    scalars = typed(
        (
            problem.n_dof,
            problem.n_constraints,
            problem.mass_structure,
            getattr(problem, "restitution", None),
            problem.t0,
            problem.initial_penetration_tolerance,
            problem.stable_step,
            problem.state_scale,
        )
    )
    if scalars is None:
        return None
    arrays = (q0.shape, q0.tobytes(), v0.shape, v0.tobytes())
    return (cls, cls.KERNELS, scalars, arrays, p.tobytes())


# --------------------------------------------------------------------------------------------
# Validation of the values a problem returns (plain-Python path)

_FLOAT64 = np.dtype(np.float64)

#: Codes of :func:`_matrix_defect`.
_NOT_FINITE, _NOT_SYMMETRIC, _NOT_POSITIVE_DEFINITE, _SINGULAR = 1, 2, 3, 4


@kernel
def _first_non_finite(a):
    """Flat index of the first non-finite entry of ``a`` (any shape and layout), -1 if none."""
    i = 0
    for x in a.flat:
        if not math.isfinite(x):
            return i
        i += 1
    return -1


@kernel
def _matrix_defect(a, tol, max_condition, work):
    """0 if the square matrix ``a`` is finite, symmetric (max |a - a^T| <= tol max |a|),
    positive definite (:func:`impactbench.core.contact.ldl_factor` succeeds, into ``work``) and not
    numerically singular, else the code of the first defect found.

    Numerically singular: a pivot d_j of the LDL^T factorisation below max |a| / max_condition.
    For an SPD matrix every pivot lies in [lambda_min, lambda_max] and max |a| <= lambda_max, so
    this never rejects a matrix of condition number <= max_condition (the rule of
    :meth:`Problem.check` at q0); it rejects a positive semi-definite matrix that round-off made
    pass the factorisation (a pivot of order eps max |a|).
    """
    n = a.shape[0]
    diff = 0.0
    scale = 0.0
    for i in range(n):
        for j in range(n):
            if not math.isfinite(a[i, j]):
                return _NOT_FINITE
            scale = max(scale, abs(a[i, j]))
            diff = max(diff, abs(a[i, j] - a[j, i]))
    if diff > tol * scale:
        return _NOT_SYMMETRIC
    if not ldl_factor(a, n, work):
        return _NOT_POSITIVE_DEFINITE
    for j in range(n):  # work[j, j] = 1 / d_j
        if work[j, j] * scale > max_condition:
            return _SINGULAR
    return 0


@kernel
def _has_zero_row(a):
    """True when a row of the 2-D array ``a`` is identically zero."""
    for i in range(a.shape[0]):
        zero = True
        for j in range(a.shape[1]):
            if a[i, j] != 0.0:
                zero = False
                break
        if zero:
            return True
    return False


def _brief(value: Any, limit: int = 200) -> str:
    """``value`` as a short string for an error message (lists for arrays, cut at ``limit``)."""
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def returned_array(value: Any, call: str, shape: tuple[int, ...]) -> tuple[np.ndarray, str]:
    """Check a value returned by a problem method: real numbers, exactly ``shape``, finite.

    Parameters
    ----------
    value : object
        What the method returned.
    call : str
        The call, e.g. ``"forces(t, q, v)"``; it starts every message.
    shape : tuple of int
        The contract's shape: (n,), (m,), (m, n) or (n, n).

    Returns
    -------
    array : ndarray
        The value as a float64 array (not copied if it is one); when ``reason`` is not empty,
        as far as it could be converted.
    reason : str
        "" if the value is valid, else what is wrong: the call, the expected and the actual
        dtype, shape or values.
    """
    if (
        type(value) is np.ndarray
        and value.dtype is _FLOAT64
        and value.shape == shape
        and _first_non_finite(value) < 0
    ):
        return value, ""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as err:  # e.g. a ragged list
        return np.zeros(
            0
        ), f"{call} must return an array of shape {shape}, got {_brief(value)}: {err}"
    if a.dtype.kind not in "iuf":
        return a, f"{call} must return real numbers, got dtype {a.dtype}: {_brief(a)}"
    if a.shape != shape:
        return a, f"{call} must return shape {shape}, got shape {a.shape}: {_brief(a)}"
    a = np.asarray(a, dtype=float)
    if _first_non_finite(a) >= 0:
        return a, f"{call} must return finite values, got {_brief(a)}"
    return a, ""


def _valid(checked: tuple[np.ndarray, str]) -> np.ndarray:
    """The array of :func:`returned_array`, or ValueError with its reason."""
    array, reason = checked
    if reason:
        raise ValueError(reason)
    return array


def _excused(array: np.ndarray, shape: tuple[int, ...], *arguments: Any) -> bool:
    """Whether a rejected value is not the problem's fault: it has the right shape and dtype but
    the arguments of the call are not finite (the method reports its non-finite state itself)."""
    if array.dtype != _FLOAT64 or array.shape != shape:
        return False
    return any(_first_non_finite(np.asarray(x, dtype=float)) >= 0 for x in arguments)


#: :class:`CheckedCalls` computes the condition number of M(q) (its eigenvalues, as
#: :meth:`Problem.check` at q0) on the first call of ``mass_matrix`` and on every this many
#: calls after it: the LDL^T pivots, checked on every call, miss a matrix whose pivots are all 1
#: and whose condition number is not (M = L L^T, L unit lower triangular with a large entry).
CONDITION_CHECK_EVERY = 16


class CheckedCalls:
    """A problem's methods with every returned value checked, for the plain-Python path.

    Each method returns the problem's value as a float64 array or raises
    :class:`impactbench.SimulationError` with the given t, q, v and a message that names the
    problem method and the expected and actual shape or value. Checked on every call: real
    numbers, exactly the contract's shape ((n,) forces, (m,) gap, (m, n) gap gradient, (n, n)
    mass matrix), finite; the mass matrix symmetric (relative
    :data:`impactbench.core._checks.SYMMETRY_TOLERANCE`), positive definite (its LDL^T
    factorisation, :func:`impactbench.core.contact.ldl_factor`, the test the loops apply) and not
    numerically singular (no pivot below max |M| / :data:`impactbench.core._checks.MAX_CONDITION`,
    which accepts every M that :meth:`Problem.check` accepts at q0), and of condition number at
    most :data:`impactbench.core._checks.MAX_CONDITION` as at q0 (on the first call and every
    :data:`CONDITION_CHECK_EVERY` calls); no row of
    the gap gradient zero where its gap is <= 0 (in contact the impulse and projection
    direction M^-1 grad g_i is then undefined). A value of the right shape is passed on
    unchecked when the arguments themselves are not finite: the method then reports its
    non-finite state, which is not the problem's fault.

    Parameters
    ----------
    problem : Problem
        A problem that passed :meth:`Problem.check`.

    Attributes
    ----------
    deferred : str
        Set by the kernels of :func:`python_kernels`: why the last mass matrix or force was
        rejected ("" if none was), for the driver to report with the state where the loop
        stopped.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.n = int(problem.n_dof)
        self.m = int(problem.n_constraints)
        self.deferred = ""
        self._factor = np.empty((self.n, self.n))
        self._mass_calls = 0

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """F(t, q, v), shape (n,)."""
        return self.accept(self.problem.forces(t, q, v), "forces(t, q, v)", (self.n,), t, q, v)

    def gap(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """g(q), shape (m,); ``t`` and ``v`` only locate an error."""
        return self.accept(self.problem.gap(q), "gap(q)", (self.m,), t, q, v)

    def gap_gradient(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad g(q), shape (m, n); ``t`` and ``v`` only locate an error."""
        value = self.problem.gap_gradient(q)
        G = self.accept(value, "gap_gradient(q)", (self.m, self.n), t, q, v)
        if _has_zero_row(G):
            g = self.gap(t, q, v)
            rows = [i for i in range(self.m) if not G[i].any() and g[i] <= 0.0]
            if rows:
                raise SimulationError(
                    f"gap_gradient(q) vanishes in contact: rows {rows} are zero where "
                    f"gap(q) = {_brief(g[rows])} <= 0, so the contact direction "
                    "M^-1 grad g is undefined",
                    t,
                    q,
                    v,
                )
        return G

    def mass_matrix_checked(self, q: np.ndarray) -> tuple[np.ndarray, str]:
        """M(q) and "" or, if it is not a finite, symmetric, positive definite and not
        numerically singular real (n, n) matrix, the reason (as :func:`returned_array`)."""
        call, shape, tol = "mass_matrix(q)", (self.n, self.n), _checks.SYMMETRY_TOLERANCE
        M = self.problem.mass_matrix(q)
        if type(M) is not np.ndarray or M.dtype is not _FLOAT64 or M.shape != shape:
            M, reason = returned_array(M, call, shape)
            if reason:
                return M, reason
        defect = _matrix_defect(M, tol, _checks.MAX_CONDITION, self._factor)
        if defect == _NOT_FINITE:
            return M, f"{call} must return finite values, got {_brief(M)}"
        if defect == _NOT_SYMMETRIC:
            diff, scale = np.abs(M - M.T).max(), np.abs(M).max()
            return M, (
                f"{call} must be symmetric, got max |M - M^T| = {diff:.3g} > {tol:g} max |M| "
                f"= {scale:.3g}: {_brief(M)}"
            )
        if defect == _NOT_POSITIVE_DEFINITE:
            what = "positive definite"
        elif defect == _SINGULAR:
            what = f"well conditioned (no LDL^T pivot below max |M| / {_checks.MAX_CONDITION:.0e})"
        else:
            self._mass_calls += 1
            if self._mass_calls % CONDITION_CHECK_EVERY != 1:
                return M, ""
            eigenvalues = np.linalg.eigvalsh(M)
            if eigenvalues[-1] <= _checks.MAX_CONDITION * eigenvalues[0]:
                return M, ""
            return M, (
                f"{call} must be well conditioned (condition number "
                f"{eigenvalues[-1] / eigenvalues[0]:.3g} > {_checks.MAX_CONDITION:.0e}, as at "
                f"q0), got eigenvalues {_brief(eigenvalues)}: {_brief(M)}"
            )
        eigenvalues = np.linalg.eigvalsh(M)
        return M, f"{call} must be {what}, got eigenvalues {_brief(eigenvalues)}: {_brief(M)}"

    def mass_diagonal_checked(self, q: np.ndarray) -> tuple[np.ndarray, str]:
        """The diagonal of M(q), shape (n,), and "" or, if it is not finite, positive and of
        ratio max / min at most :data:`impactbench.core._checks.MAX_CONDITION`, the reason."""
        call = "mass_diagonal(q)"
        d, reason = returned_array(self.problem.mass_diagonal(q), call, (self.n,))
        if reason:
            return d, reason
        if not np.all(d > 0.0):
            return d, f"{call} must be positive, got {_brief(d)}"
        if d.max() > _checks.MAX_CONDITION * d.min():
            return d, (
                f"{call} must be well conditioned (max / min <= {_checks.MAX_CONDITION:.0e}), "
                f"got {_brief(d)}"
            )
        return d, ""

    def mass_matrix(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """M(q), shape (n, n); ``t`` and ``v`` only locate an error."""
        M, reason = self.mass_matrix_checked(q)
        if reason and not _excused(M, (self.n, self.n), q):
            raise SimulationError(reason, t, q, v)
        return M

    @staticmethod
    def accept(
        value: Any, call: str, shape: tuple[int, ...], t: float, q: np.ndarray, v: np.ndarray
    ) -> np.ndarray:
        """``value``, returned by ``call``, checked by :func:`returned_array`; a rejected value
        raises SimulationError with the reason and t, q, v (unless the arguments q, v are not
        finite, see the class notes)."""
        array, reason = returned_array(value, call, shape)
        if reason and not _excused(array, shape, q, v):
            raise SimulationError(reason, t, q, v)
        return array


def python_kernels(problem: Problem, calls: CheckedCalls | None = None) -> ProblemKernels:
    """Wrap a problem's Python methods in the kernel calling convention (uncompiled path).

    Every returned value is checked (:class:`CheckedCalls`); a problem that declares a diagonal
    mass matrix is asked for :meth:`Problem.mass_diagonal` only; a problem with moving obstacles
    (``rheonomic``) gives the timed kernels ``gap(t, q, p, out)``, ``gap_gradient(t, q, p,
    out)``, ``gap_rate(t, q, p, out)`` and ``gap_drift(t, q, v, p, out)``. A bad mass matrix or
    force is reported through the loop, so that the error carries the state where the loop
    stopped and the trajectory up to there: the kernel fills ``out`` with NaN, which the loop
    rejects (its LDL^T factorisation of M, its finiteness check of the new state), and stores
    the reason, with the arguments of the call, in ``calls.deferred`` for the driver to report.
    A bad gap or gap gradient raises :class:`impactbench.SimulationError` at once (a NaN gap
    would read as "no contact"); its t and v are those of the step's force evaluation (which
    precedes the gap evaluations of a step in every loop), its q the argument of the failing
    call.

    The checks cost a fraction of a plain-Python step (``benchmarks/loops.py`` measures it).

    Parameters
    ----------
    problem : Problem
    calls : CheckedCalls, optional
        The checked calls to use (the driver passes its own to read ``deferred``).
    """
    checked = CheckedCalls(problem) if calls is None else calls
    n, m = checked.n, checked.m
    accept = checked.accept
    # time and velocity of the last force evaluation: where a gap error happened
    step = [float(problem.t0), np.array(problem.v0, dtype=float)]

    def defer(reason, call, where, out):
        checked.deferred = reason.replace(call, f"{call} for {where}", 1)
        out[...] = np.nan

    def mass_matrix(q, p, out):
        M, reason = checked.mass_matrix_checked(q)
        if reason and not _excused(M, (n, n), q):
            defer(reason, "mass_matrix(q)", f"q={_brief(np.array(q))}", out)
        else:
            out[:, :] = M

    def mass_diagonal(q, p, out):
        d, reason = checked.mass_diagonal_checked(q)
        if reason and not _excused(d, (n,), q):
            defer(reason, "mass_diagonal(q)", f"q={_brief(np.array(q))}", out)
        else:
            out[:] = d

    def forces(t, q, v, p, out):
        F, reason = returned_array(problem.forces(t, q, v), "forces(t, q, v)", (n,))
        if reason and not _excused(F, (n,), q, v):
            where = f"t={float(t)!r}, q={_brief(np.array(q))}, v={_brief(np.array(v))}"
            defer(reason, "forces(t, q, v)", where, out)
        else:
            out[:] = F
        step[0] = t
        step[1] = v.copy()

    def gap(q, p, out):
        out[:] = accept(problem.gap(q), "gap(q)", (m,), step[0], q, step[1])

    def gap_gradient(q, p, out):
        out[:, :] = checked.gap_gradient(step[0], q, step[1])

    def tangent_gradient(q, p, out):
        T = accept(problem.tangent_gradient(q), "tangent_gradient(q)", (m, n), step[0], q, step[1])
        out[:, :] = T

    def friction(q, p, mu, e_t):
        values = problem.friction(q)
        mu[:] = accept(values[0], "friction(q)[0] (mu)", (m,), step[0], q, step[1])
        e_t[:] = accept(values[1], "friction(q)[1] (e_T)", (m,), step[0], q, step[1])

    def normal_restitution(q, p, e_n):
        values = problem.normal_restitution(q)
        e_n[:] = accept(values, "normal_restitution(q)", (m,), step[0], q, step[1])

    def constant(matrix):
        if matrix is None:
            return None
        matrix = np.array(matrix, dtype=float)

        def write(p, out):
            out[:, :] = matrix

        return write

    def moving_gap(t, q, p, out):
        out[:] = accept(problem.gap(t, q), "gap(t, q)", (m,), t, q, step[1])

    def moving_gradient(t, q, p, out):
        out[:, :] = accept(problem.gap_gradient(t, q), "gap_gradient(t, q)", (m, n), t, q, step[1])

    def gap_rate(t, q, p, out):
        out[:] = accept(problem.gap_rate(t, q), "gap_rate(t, q)", (m,), t, q, step[1])

    def gap_drift(t, q, v, p, out):
        out[:] = accept(problem.gap_drift(t, q, v), "gap_drift(t, q, v)", (m,), t, q, v)

    frictional = problem.has_friction
    rheonomic = declared_rheonomic(problem)  # a moving obstacle: t first in the gap's kernels
    compiled = problem.kernels()
    return ProblemKernels(
        mass_matrix,
        forces,
        moving_gap if rheonomic else gap,
        moving_gradient if rheonomic else gap_gradient,
        affine_gap=compiled.affine_gap if compiled is not None else False,
        constant_mass=compiled.constant_mass if compiled is not None else False,
        mass_diagonal=mass_diagonal,
        mass_structure=problem.mass_structure,
        tangent_gradient=tangent_gradient if frictional else None,
        friction=friction if frictional else None,
        normal_restitution=normal_restitution if frictional else None,
        stiffness_matrix=constant(problem.stiffness_matrix()),
        damping_matrix=constant(problem.damping_matrix()),
        rheonomic=rheonomic,
        gap_rate=gap_rate if rheonomic else None,
        gap_drift=gap_drift if rheonomic else None,
    )


# -- a problem from plain functions (Problem.from_functions) ----------------------------------


def _callable(value: Any, name: str, call: str) -> Callable:
    """``value`` if it is callable, else ValueError naming the argument ``name``."""
    if not callable(value):
        raise ValueError(f"{name} must be a callable {call}, got {value!r}")
    return value


class FunctionProblem(Problem):
    """A :class:`impactbench.Problem` whose methods are the given functions.

    Built by :meth:`impactbench.Problem.from_functions` (see there for the parameters);
    validated by :meth:`impactbench.Problem.check` on construction. It runs on the
    plain-Python path of every method (the callables are not compiled) and pickles with
    ``cloudpickle`` (lambdas included), so that it can be sent to worker processes.

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
        point = "t, q" if self.rheonomic else "q"
        self._gap = _callable(gap, "gap", f"g({point}) -> (m,)")
        self._gap_gradient = _callable(gap_gradient, "gap_gradient", f"grad g({point}) -> (m, n)")
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


class TimedFunctionProblem(FunctionProblem):
    """A :class:`FunctionProblem` with a moving obstacle (``rheonomic = True``): its ``gap``
    and ``gap_gradient`` take t first, and it has the given ``gap_rate`` and ``gap_drift``.

    Built by :meth:`impactbench.Problem.from_functions` with ``rheonomic=True`` (see there for
    the parameters); validated by :meth:`impactbench.Problem.check` on construction.
    """

    rheonomic = True

    def __init__(
        self,
        mass_matrix: Callable[[np.ndarray], np.ndarray],
        forces: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
        gap: Callable[[float, np.ndarray], np.ndarray],
        gap_gradient: Callable[[float, np.ndarray], np.ndarray],
        gap_rate: Callable[[float, np.ndarray], np.ndarray] | None,
        gap_drift: Callable[[float, np.ndarray, np.ndarray], np.ndarray] | None,
        q0: Any,
        v0: Any,
        **options: Any,
    ) -> None:
        self._gap_rate = _callable(gap_rate, "gap_rate", "dg/dt(t, q) -> (m,)")
        self._gap_drift = _callable(gap_drift, "gap_drift", "c(t, q, v) -> (m,)")
        super().__init__(mass_matrix, forces, gap, gap_gradient, q0, v0, **options)

    def gap(self, t: float, q: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """g(t, q), shape (m,): the given ``gap``."""
        return self._gap(t, q)

    def gap_gradient(self, t: float, q: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """G(t, q) = dg/dq, shape (m, n): the given ``gap_gradient``."""
        return self._gap_gradient(t, q)

    def gap_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """r(t, q) = dg/dt, shape (m,): the given ``gap_rate``."""
        return self._gap_rate(t, q)

    def gap_drift(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """c(t, q, v) = d2g/dt2 + 2 (dG/dt) v, shape (m,): the given ``gap_drift``."""
        return self._gap_drift(t, q, v)
