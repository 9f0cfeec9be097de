"""Moreau's velocity-based schemes: the Moreau-Jean theta-scheme and the catching-up variant.

Both integrate the measure differential inclusion at velocity level with Newton's impact law
written as a complementarity problem on the impulses (docs/design.md section 5). With q_k, v_k known
and q_p the point where the contact and the smooth forces are evaluated:

    v_{k+1} = v_k + h M^-1 F(t_p, q_p, v_k) + M^-1 G^T P,
    0 <= P  _|_  G v_{k+1} + e G v_k >= 0      on the active set A,

with M = M(q_p), G = grad g(q_p). One constraint: closed-form P; several: the shared LCP solver
(Murty's principal pivoting, :func:`impactbench.core.contact.solve_lcp`).

Activation (``activation=``):

* ``"position"`` (default): constraint i is active when g_i(q_p) <= 0, whatever the sign of its
  normal velocity U_k = G_i v_k. This is the rule of the seeds (the catching-up scheme sets its
  cone V from g(q_{k+1}) <= 0 alone) and of Siconos' MoreauJeanOSI (forecast g(q_k + h/2 v_k)
  <= 0). A resting or sliding contact stays active at every step, so its depth never grows: it
  keeps the depth it had when it settled. A contact that starts at rest is O(h^2 |F|) deep; one
  that closes with normal velocity U is left up to h |U| inside K by the impact step (the
  position is never corrected), which it keeps for all time with e = 0 (4.3 mm for the ball
  dropped from 1 m, h = 1e-3, |U| = 4.4 m/s) and leaves with e > 0, settling O(h^2 |F|) deep
  once the bounces have died out. A resting stack whose gaps are off by round-off settles the
  same way into its O(h^2 |F|) depths (tests/test_column_of_beads.py, to t = 100). The default
  reproduces Siconos' own regression output for the bouncing ball
  (tests/data/siconos/BouncingBallTS.ref) to round-off.
* ``"approaching"``: active only when also U_k <= 0. Not for persistent contact: a resting
  contact then alternates active and free steps, each free step lets it fall by O(h^2 |F|) that
  the next impulse never takes back, and the depth grows linearly in time without bound (the
  resting ball and the resting stack: tests/test_persistent_contact.py,
  tests/test_column_of_beads.py). Kept to study that trade-off (``persistent_contact`` study).

Energy (constant M and F, E = v^T M v / 2 - F^T q). For theta = 1/2 and for the catching-up
scheme's conserved quantity E - (h/2) F^T v, the change over a step is exactly

    Delta = (1/2) P^T (U_{k+1} + U_k) = ((1 - e)/2) P^T U_k      (Newton law: P_i U_{k+1,i} =
                                                                  -e P_i U_{k,i}),

so it is <= 0 on every step whose active contacts approach (U_k <= 0: every real impact), and
positive only on a step where a separating contact (U_k > 0) still sits inside K and receives an
impulse; there U_k and P are O(h |F|), so the increase is O(h^2): at most
(1 - e) h^2 alpha^2 / (8 (1 + e) w) for one affine constraint (alpha = -G M^-1 F,
w = G M^-1 G^T), asserted in tests/test_energy.py over long resting and sliding runs. With the
``"approaching"`` rule that case never occurs and the energy never increases, at the price of
the drift above.

Moving obstacles (a rheonomic problem, g(t, q); docs/design.md section 5): the law acts on the
relative normal velocity U = G v + r, r = dg/dt, with g, G at (t_p, q_p) and the rates at q_p,
r_- = r(t_k, q_p) and r_+ = r(t_{k+1}, q_p):

    0 <= P  _|_  U_{k+1} + e U_k = G v_{k+1} + r_+ + e (G v_k + r_-) >= 0,

Siconos' MoreauJeanOSI (hdot at t_{k+1}, e times y_k(1) at t_k); activation g_i(t_p, q_p) <= 0
(and U_k,i <= 0 with ``"approaching"``). In the frame of an obstacle translating at constant
velocity the step is the fixed-obstacle step (Galilean invariance, to round-off). For a
uniformly accelerated one (s'' = a, g = y - s(t)) the velocity update and the law are those of
the fixed obstacle under the gravity changed by a; the position update moves the body relative
to it by an extra (theta - 1/2) a h^2 per step (CatchingUp: -a h^2 / 2), so that a resting
contact keeps its depth for theta = 1/2 only, sinks for CatchingUp and is lifted off, and
chatters, for theta > 1/2; the prediction g(t_p, q_p) is the relative one minus
a theta^2 h^2 / 2 (tests/test_moving_obstacles_time_stepping.py).

Friction: on a frictional problem (docs/friction.md) the impulses follow the planar
Newton-Coulomb law (:func:`impactbench.core.scheme.velocity_impulse` with the tangential
impulses, :func:`impactbench.core.friction.friction_impulse`: normal and tangential impulses,
stick or slip, solved exactly) in place of Newton's, with the same activation and step (the
scheme's ``frictional_step``); a frictionless problem runs the frictionless loop, unchanged.

* :class:`MoreauJean` (theta-scheme): q_p = q_k + theta h v_k, t_p = t_k + theta h,
  q_{k+1} = q_k + h ((1 - theta) v_k + theta v_{k+1}). theta = 1/2 is Moreau's midpoint
  (drift-kick-drift) scheme: second order in smooth phases when F does not depend on v, first
  order with impacts; it conserves the energy exactly for constant M and F between impacts.
* ``MoreauJean(theta, implicit=True)``: the linear forces -K q - C v a problem declares taken
  implicitly, in the metric of W = M + h theta C + h^2 theta^2 K (Siconos' MoreauJeanOSI;
  module ``moreau_jean_implicit``, which states what is implicit and the energy balance).
* :class:`CatchingUp` (Dzonou, Monteiro Marques, Paoli, Nonlinear Dyn. 58 (2009) 361-384): the
  position-first variant, q_{k+1} = q_k + h v_k, then the velocity update with q_p = q_{k+1},
  t_p = t_{k+1}. Smooth phases are symplectic Euler (first order); for constant M and F its
  conserved discrete energy is E - (h/2) F^T v, so the mechanical energy itself oscillates by O(h).
"""

from __future__ import annotations

from typing import Any, ClassVar

from impactbench.core.scheme import (
    IMPACT_STATE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    Parameter,
    Problem,
    ProblemKernels,
    Scheme,
    factor_mass,
    scheme_function,
    solve_mass,
    theta_scheme_limit,
    velocity_impulse,
)

from .moreau_jean_implicit import IMPLICIT, IMPLICIT_STATE, form_iteration_matrix
from .moreau_jean_implicit import step_limit as implicit_step_limit

#: The state of the velocity step: q_p and the forces there, M(q_p) and its factor, the free
#: and the post-impact velocities, and what the shared impulse works in.
VELOCITY_STATE = {
    "q": "n",
    "v": "n",
    "qp": "n",
    "f": "n",
    "acc": "n",
    "vfree": "n",
    "v1": "n",
    "M": "mass",
    "L": "mass",
    **IMPACT_STATE,
}

#: The weight theta of the theta-scheme, in (0, 1].
THETA = Parameter(0.0, 1.0, open_low=True)


@scheme_function
def velocity_step(
    s, problem, n, m, k, t, h, p, e, theta, position_first, approaching, forced,
    tangent_impulse=None, implicit=None,
):  # fmt: skip
    """The step of the module docstring into ``s.q_next``, ``s.v_next`` (``position_first``:
    catching-up; ``approaching``, ``forced``, ``tangent_impulse``: those of
    :func:`impactbench.core.scheme.velocity_impulse`, None or ``s.tangent_impulse`` on a
    frictional problem; ``implicit``: None, or ``s.W`` of the implicit scheme, whose metric is
    that of W = M + h theta C + (h theta)^2 K, ``moreau_jean_implicit``).
    Returns (status, contact, iterations, force evaluations)."""
    h_theta = h * theta
    t_p = t + h_theta
    for j in range(n):
        s.qp[j] = s.q[j] + h_theta * s.v[j]
    if implicit is not None:  # None: the branch is not compiled
        if k == 0 or not problem.constant_mass or s.h_w[0] != h:
            if not form_iteration_matrix(s, problem, n, h, theta, p):
                return STATUS_MASS_NOT_SPD, False, 0, 0
    elif k == 0 or not problem.constant_mass:
        problem.mass_matrix(s.qp, p, s.M)
        if not factor_mass(s.M, n, s.L):
            return STATUS_MASS_NOT_SPD, False, 0, 0
    problem.forces(t_p, s.qp, s.v, p, s.f)
    solve_mass(s.L, n, s.f, s.acc)
    for j in range(n):
        s.vfree[j] = s.v[j] + h * s.acc[j]
    # times: a moving obstacle's g and G at t_p, its rates at t_k and t_{k+1}
    status, active, used = velocity_impulse(
        s, problem, n, m, s.qp, s.v, s.vfree, e, s.v1, p, approaching, forced, None,
        tangent_impulse, (t_p, t, t + h),
    )  # fmt: skip
    if status != STATUS_OK:
        return status, False, 0, 0
    h_rest = h - h_theta
    for j in range(n):
        v1 = s.v1[j] if active > 0 else s.vfree[j]
        if position_first:
            s.q_next[j] = s.qp[j]
        else:  # q_k + h (1 - theta) v_k is ready before v_{k+1}: one multiply-add after it
            s.q_next[j] = (s.q[j] + h_rest * s.v[j]) + h_theta * v1
        s.v_next[j] = v1
    return STATUS_OK, active > 0, used, 1


#: The activation rules of the velocity schemes (see the module docstring).
ACTIVATION_RULES = ("position", "approaching")


def _activation(value: Any) -> str:
    if value not in ACTIVATION_RULES:
        raise ValueError(f"activation must be one of {ACTIVATION_RULES}, got {value!r}")
    return value


class _Velocity(Scheme):
    """The step shared by :class:`MoreauJean` and :class:`CatchingUp`."""

    moving_obstacles = True
    state = VELOCITY_STATE
    run_time = {"theta": THETA}
    compile_time = {"position_first": bool, "approaching_only": bool}
    position_first = False

    @property
    def approaching_only(self) -> bool:
        return self.activation == "approaching"

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta,
            options.position_first, options.approaching_only, None,
        )  # fmt: skip

    @staticmethod
    def frictional_step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta,
            options.position_first, options.approaching_only, None, s.tangent_impulse,
        )  # fmt: skip


class _ImplicitVelocity(Scheme):
    """The loop of ``MoreauJean(theta, implicit=True)`` (``moreau_jean_implicit``)."""

    state = IMPLICIT_STATE
    run_time = {"theta": THETA}
    compile_time = {"approaching_only": bool}
    linear_forces = True

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta,
            False, options.approaching_only, None, None, s.W,
        )  # fmt: skip

    @staticmethod
    def frictional_step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta,
            False, options.approaching_only, None, s.tangent_impulse, s.W,
        )  # fmt: skip


class MoreauJean(_Velocity):
    """Moreau-Jean theta-scheme (velocity level, Newton impact law, kinetic metric).

    Parameters
    ----------
    theta : float
        Weight in (0, 1]; 1/2 (default) is Moreau's midpoint scheme, order 2 between impacts.
    activation : {"position", "approaching"}
        Which constraints enter the impact law: g_i(q_p) <= 0 ("position", default, Siconos'
        rule), or only those that also approach, G_i v_k <= 0 ("approaching": energy never
        increases, but a resting or sliding contact sinks through the constraint linearly in
        time). See the module docstring.
    implicit : bool
        False (default): the forces at (q_p, v_k), explicit, as in the module docstring. True:
        Siconos' MoreauJeanOSI, the linear part -K q - C v that the problem declares
        (``Problem.stiffness_matrix``, ``Problem.damping_matrix``) averaged implicitly with
        weight theta, in the metric of the iteration matrix W = M + h theta C + h^2 theta^2 K
        (module ``moreau_jean_implicit``, where the rest of the forces stays explicit).
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    Velocity-dependent forces are evaluated at v_k (explicit), which keeps order 2 only for
    forces independent of v. See the module docstring for the energy balance.
    """

    name_omits: ClassVar[dict[str, Any]] = {"implicit": False}

    def __init__(
        self,
        theta: float = 0.5,
        activation: str = "position",
        implicit: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(theta=theta, **options)
        self.activation = _activation(activation)
        if not isinstance(implicit, bool):
            raise ValueError(f"implicit must be True or False, got {implicit!r}")
        self.implicit = implicit

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step / sqrt(4 theta - 1)`` for theta >= 1/2, None below
        (:func:`impactbench.core.divergence.theta_scheme_limit`); with ``implicit``, None for
        a problem that declares its stiffness (``moreau_jean_implicit.step_limit``).
        """
        if self.implicit:
            return implicit_step_limit(problem, self.theta)
        return theta_scheme_limit(problem, self.theta)

    def _loop_options(self) -> dict[str, Any]:
        options = super()._loop_options()
        if self.implicit:  # absent otherwise: the explicit loop and its key are unchanged
            options[IMPLICIT] = True
        return options

    @classmethod
    def loop_scheme(
        cls, kernels: ProblemKernels, options: dict[str, Any]
    ) -> tuple[type[Scheme], dict[str, Any]]:
        """With the option ``implicit``, the implicit scheme's functions (on a frictional
        problem, their frictional step); else this class's."""
        if options.pop(IMPLICIT, False):
            del options["position_first"]  # False: MoreauJean's, which the implicit step takes
            return _ImplicitVelocity.loop_scheme(kernels, options)
        return super().loop_scheme(kernels, options)


class CatchingUp(_Velocity):
    """Position-first catching-up scheme of Dzonou, Monteiro Marques and Paoli (2009).

    q_{k+1} = q_k + h v_k, then v_{k+1} = -e v_k + (1 + e) Proj_{M(q_{k+1})}(V, v_k + h M^-1 F /
    (1 + e)) with V = {w : G_A w >= 0} over the active constraints A (g_i(q_{k+1}) <= 0, and
    approaching with ``activation="approaching"``) - computed in the equivalent impulse form of
    the module docstring (the velocity step with theta = 1, q_{k+1} = q_p).

    Parameters
    ----------
    activation : {"position", "approaching"}
        As for :class:`MoreauJean`; "position" (default) is the published scheme.
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.
    """

    run_time = {"theta": float}  # 1, set here: not an argument
    position_first = True
    theta = 1.0
    #: The smooth part is symplectic Euler, stable iff h omega_max <= 2
    #: (:mod:`impactbench.core.divergence`): the step limit is ``problem.stable_step``.
    stable_step_factor = 1.0

    def __init__(self, activation: str = "position", **options: Any) -> None:
        super().__init__(**options)
        self.activation = _activation(activation)
