"""Divergence: the bounds a run's state may not leave, and the stable step of explicit schemes.

A run whose state grows without bound (an explicit scheme above its stable step, a scheme that
is unstable on the problem) is a failure, never an ``ok`` row. Two guards:

* **Up front.** A problem may declare its stable step, ``Problem.stable_step`` = 2 / omega_max
  (omega_max the largest eigenfrequency of its linearised smooth dynamics M^-1 K, e.g.
  :class:`problems.impacting_bar.ImpactingBar`), and a time-stepping scheme says what it
  allows of it (``TimeStepping.step_limit``): an explicit scheme refuses a step above its limit
  with a ValueError naming both (:func:`check_step`).
* **At run time.** The time loop compares the state with two bounds (:func:`state_bounds`)
  every ``CHECK_EVERY`` steps and at the last step (the event-driven method, either engine, at
  every accepted step: ``impactbench.core.events.loop``): max_j |q_j|
  above the position bound, or max_j |v_j| above the velocity bound, stops the run with status
  ``STATUS_DIVERGED`` (:class:`DivergenceError`: t, q, v, the quantity that grew, its value and
  its bound).

The bounds. A problem may declare ``Problem.state_scale`` = (Q, V), magnitudes its positions
and velocities stay within. Otherwise they are taken from the initial data, with m the
smallest diagonal entry of M(q0) (>= the smallest eigenvalue of M for an SPD M), E0 the
initial energy, F0 = F(t0, q0, v0) and omega the fastest frequency of the forces at q0
(:func:`impactbench.core.problem.initial_frequency`: 2 / ``Problem.stable_step`` when
declared, else the square root of the spectral radius of D^-1 dF/dq, D the diagonal of M(q0)),
over the horizon T = t_end - t0:

    V = max(|v0|, sqrt(2 |E0| / m), min(T, 1 / omega) |F0| / m, 1),     Q = max(|q0|, V T, 1)

(max-norms): the speed of the whole initial energy in the lightest coordinate, or the speed the
initial force gives it over the time it acts before the stiffness turns it (1 / omega; the
whole horizon for a force that does not depend on q, such as gravity), whichever is larger;
the position that speed reaches. For a linear restoring force F = -K (q - q_e) the force term
is |K (q0 - q_e)| / (m omega), the amplitude of the velocity of an oscillation from q0 (of
order omega |q0 - q_e|), where T |F0| / m would be omega T times that: the number of radians
of the horizon, 1e7 for omega = 1e6 over 10 s, a bound that an unstable run would only cross
after growing 1e7-fold. The bounds are ``DIVERGENCE_FACTOR`` (1e6) times Q and V: a kinetic
energy 1e12 times the scale's. This is a guard against unbounded growth, not an energy
estimate: a scheme's energy error within its stated bound is measured by the energy metrics,
and a problem whose genuine motion exceeds the bounds (a force that grows with time, a
potential far below V(q0), a constant force driving a soft direction of a system with a stiff
one, for which 1 / omega is too short) declares its ``state_scale``. An unstable explicit run
grows geometrically (a factor |lambda| > 1 per step), so it crosses any such bound within a few
dozen steps of becoming visible.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .problem import Problem, declared_stable_step, declared_state_scale
from .trajectory import SimulationError

#: The bounds are this factor times the state's scale (module docstring).
DIVERGENCE_FACTOR = 1e6

#: The time loop checks the bounds every this many steps (a power of 2) and at the last step.
CHECK_EVERY = 32

#: Entries of the ``growth`` array of the time loop: the two bounds (read), and (written at a
#: divergence) the quantity that grew (``POSITION`` or ``VELOCITY``), its value and the time.
Q_BOUND = 0
V_BOUND = 1
GREW = 2
VALUE = 3
WHEN = 4
GROWTH_SIZE = 5
POSITION = 1.0
VELOCITY = 2.0

#: Relative slack of the up-front step check (a step computed as a fraction of the limit).
STEP_SLACK = 1e-12


class DivergenceError(SimulationError):
    """A run stopped because its state grew beyond its bound (status ``diverged``).

    Attributes
    ----------
    quantity : str
        ``"max |q|"`` or ``"max |v|"``: what exceeded its bound.
    value, bound : float
        Its value when it was detected and the bound.
    """

    def __init__(
        self, reason: str, t: float, q: np.ndarray, v: np.ndarray, trajectory: Any = None, *,
        quantity: str, value: float, bound: float,
    ) -> None:  # fmt: skip
        self.quantity = quantity
        self.value = float(value)
        self.bound = float(bound)
        super().__init__(reason, t, q, v, trajectory)


def state_bounds(problem: Problem, t_end: float) -> np.ndarray:
    """The ``growth`` array of a time loop: the bounds on max |q| and max |v| (module docstring).

    Parameters
    ----------
    problem : Problem
        The problem (checked here if ``problem.check()`` has not run).
    t_end : float
        End of the run, > ``problem.t0``.

    Returns
    -------
    ndarray, shape (GROWTH_SIZE,)
        ``[Q_BOUND]``, ``[V_BOUND]`` the bounds; the other entries zero (written by the loop).

    Raises
    ------
    ValueError
        If ``problem.state_scale`` is declared but not two finite positive numbers.
    """
    growth = np.zeros(GROWTH_SIZE)
    declared = declared_state_scale(problem)
    if declared is not None:
        position, velocity = declared
    else:
        if getattr(problem, "_initial_scales", None) is None:
            problem.check()
        # the smallest diagonal entry of M(q0), T(q0, v0), max |F(t0, q0, v0)| and omega, as
        # found by problem.check() (a run evaluates neither M nor F outside its loop)
        lightest, kinetic, force, frequency = problem._initial_scales
        q0, v0 = problem.q0, problem.v0  # float64 arrays after problem.check()
        span = float(t_end - problem.t0)
        acting = span if frequency * span <= 1.0 else 1.0 / frequency
        energy = abs(kinetic + float(problem.potential_energy(q0)))
        velocity = max(
            float(np.abs(v0).max()), math.sqrt(2.0 * energy / lightest), acting * force / lightest
        )
        velocity = max(velocity, 1.0) if math.isfinite(velocity) else math.inf
        position = max(float(np.abs(q0).max()), velocity * span, 1.0)
    growth[Q_BOUND] = DIVERGENCE_FACTOR * position
    growth[V_BOUND] = DIVERGENCE_FACTOR * velocity
    return growth


def divergence_error(
    prefix: str, growth: np.ndarray, t: float, q: np.ndarray, v: np.ndarray, trajectory: Any
) -> DivergenceError:
    """The error of a run stopped by the bounds: ``growth`` as the loop left it."""
    grew = "max |q|" if growth[GREW] == POSITION else "max |v|"
    bound = growth[Q_BOUND] if growth[GREW] == POSITION else growth[V_BOUND]
    reason = (
        f"{prefix}: diverged: {grew} = {growth[VALUE]:.3g} at t = {float(growth[WHEN])!r} "
        f"exceeds its bound {bound:.3g} ({DIVERGENCE_FACTOR:.0e} x the state's scale, "
        "impactbench.core.divergence)"
    )
    return DivergenceError(
        reason, t, q, v, trajectory, quantity=grew, value=growth[VALUE], bound=bound
    )


def check_step(method: Any, problem: Problem, h: float) -> None:
    """Refuse a step above the scheme's stable step on the problem (``method.step_limit``).

    Parameters
    ----------
    method : TimeStepping
    problem : Problem
    h : float
        The step the run would use.

    Raises
    ------
    ValueError
        Naming h and the limit, when h exceeds the limit by more than ``STEP_SLACK``.
    """
    limit = method.step_limit(problem)
    if limit is not None and h > limit * (1.0 + STEP_SLACK):
        raise ValueError(
            f"h must be <= the stable step {limit!r} of {method.name} on {problem.name} "
            f"(an explicit scheme grows without bound above it; problem.stable_step = "
            f"{problem.stable_step!r}), got h={h!r} ({h / limit:.3g} x the limit)"
        )


def theta_scheme_limit(problem: Problem, theta: float) -> float | None:
    """Stable step of the Moreau-Jean theta-scheme (forces at q_k + theta h v_k): for an
    oscillator of frequency omega, a = h omega, its amplification matrix on (q, h v) is
    [[1 - theta a^2, 1 - theta^2 a^2], [-a^2, 1 - theta a^2]], of determinant
    1 + (1 - 2 theta) a^2 and trace 2 - 2 theta a^2. For theta >= 1/2 it is stable iff
    a^2 (4 theta - 1) <= 4: h <= stable_step / sqrt(4 theta - 1) (stable_step = 2 / omega_max;
    the bound itself for theta = 1/2). For theta < 1/2 the determinant exceeds 1: no step is
    stable (the amplitude grows by sqrt(1 + (1 - 2 theta) a^2) per step), and None is returned
    (the run-time bounds alone guard it).
    """
    stable = declared_stable_step(problem)
    if stable is None or theta < 0.5:
        return None
    return stable / math.sqrt(4.0 * theta - 1.0)
