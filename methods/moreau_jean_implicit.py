"""The implicit Moreau-Jean theta-scheme (``MoreauJean(theta, implicit=True)``): Siconos'
MoreauJeanOSI (Acary & Brogliato 2008, ch. on the Moreau-Jean scheme).

A problem may declare the linear part of its forces, F(t, q, v) = -K q - C v + F_rest(t, q, v)
with constant symmetric K (``Problem.stiffness_matrix``) and C (``Problem.damping_matrix``).
The scheme takes that part implicitly, averaged with weight theta, and F_rest explicitly:

    M (v_{k+1} - v_k) = -h K q_theta - h C v_theta + h F_rest(t_p, q_p, v_k) + G^T P,
    q_{k+1} = q_k + h v_theta,
    q_theta = (1 - theta) q_k + theta q_{k+1},  v_theta = (1 - theta) v_k + theta v_{k+1},

with q_p = q_k + theta h v_k, t_p = t_k + theta h as in the explicit scheme. Substituting
q_{k+1} gives the step (Siconos' form, with the iteration matrix W):

    W = M + h theta C + h^2 theta^2 K,
    v_free  = v_k + h W^-1 F(t_p, q_p, v_k),       (-K q_p - C v_k + F_rest: the whole F)
    v_{k+1} = v_free + W^-1 G^T P,

and the impulse law in the metric of W: Newton's law, 0 <= P _|_ G v_{k+1} + e G v_k >= 0, or
on a frictional problem the planar Newton-Coulomb law, with the Delassus matrix G W^-1 G^T
(:func:`impactbench.core.scheme.velocity_impulse` and
:func:`impactbench.core.friction.friction_impulse`, called with the factor of W in place of
that of M). The activation is the explicit scheme's, g_i(q_p) <= 0; for an affine gap it is
Siconos' rule g(q_k) + theta h G v_k <= 0 (theta = 1/2: Siconos' default gamma = 1/2).

What is implicit: the linear part -K q - C v, exactly (a linear K and C are averaged; nothing is
iterated). What is not: F_rest, including any nonlinear stiffness and every time-dependent
force, evaluated once at (t_p, q_p, v_k) (Siconos averages an external force F(t) over t_k and
t_{k+1} instead: the same to O(h^2) per step); no Newton iteration is made on nonlinear forces.
A problem that declares neither K nor C runs the explicit scheme (W = M), to round-off.

Stability and energy. For F = -K q - C v with K, C symmetric positive semi-definite and
constant M, the step is the theta-method on the first-order system, and between impacts

    E_{k+1} - E_k = P^T G v_theta - h v_theta^T C v_theta
                    - (theta - 1/2) (|v_{k+1} - v_k|_M^2 + |q_{k+1} - q_k|_K^2),

E = v^T M v / 2 + q^T K q / 2: theta = 1/2 conserves E exactly without contact and C, theta >
1/2 dissipates it (most in the highest frequencies), and no step size is unstable
(:func:`step_limit`); an impact with Newton's law (P_i v_{k+1,i} = -e P_i v_{k,i}) adds
P^T G v_k ((1 - theta) - theta e), <= 0 for an approaching contact when e <= (1 - theta) /
theta (e = 0, or theta = 1/2 and any e).

W is formed and factored (dense LDL^T, O(n^3)) at the first step, and again whenever h changes
(a step-size controller) or, for a configuration-dependent mass, at every step (M(q_p)); each
solve costs O(n^2).
"""

from __future__ import annotations

from typing import Any

from impactbench.core.contact import ldl_factor
from impactbench.core.divergence import theta_scheme_limit
from impactbench.core.friction import FRICTION_STATE, friction_impulse
from impactbench.core.problem import Problem, ProblemKernels
from impactbench.core.scheme import (
    IMPACT_STATE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    Scheme,
    scheme_function,
    solve_mass,
    velocity_impulse,
)

#: The loop option of :class:`methods.moreau_jean.MoreauJean` that selects this scheme (present
#: only when True, so that the explicit scheme's loop and its key are unchanged).
IMPLICIT = "implicit"

#: The state of the implicit step: that of the explicit one, with ``L`` the factor of W, and W,
#: K, C and the step W was formed for.
IMPLICIT_STATE = {
    "q": "n",
    "v": "n",
    "qp": "n",
    "f": "n",
    "acc": "n",
    "vfree": "n",
    "v1": "n",
    "M": "mass",
    "W": ("n", "n"),
    "L": ("n", "n"),
    "K": ("n", "n"),
    "C": ("n", "n"),
    "h_w": "scalar",
    **IMPACT_STATE,
}

#: The state of the implicit step on a frictional problem.
FRICTIONAL_IMPLICIT_STATE = {**IMPLICIT_STATE, **FRICTION_STATE}


@scheme_function
def form_iteration_matrix(s, problem, n, h, theta, p):
    """W = M(q_p) + h theta C + (h theta)^2 K into ``s.W`` and its LDL^T factor into ``s.L``
    (M from ``s.qp``); forgets the impulse's kept metric (``s.metric_ready``). False if W is
    not positive definite."""
    problem.mass_matrix(s.qp, p, s.M)
    problem.stiffness_matrix(p, s.K)
    problem.damping_matrix(p, s.C)
    h_theta = h * theta
    h_theta2 = h_theta * h_theta
    for i in range(n):
        for j in range(n):
            mass = 0.0
            if problem.diagonal_mass:
                if i == j:
                    mass = s.M[0, i]
            else:
                mass = s.M[i, j]
            s.W[i, j] = mass + h_theta * s.C[i, j] + h_theta2 * s.K[i, j]
    s.h_w[0] = h
    s.metric_ready[0] = 0.0
    return ldl_factor(s.W, n, s.L)


@scheme_function
def implicit_velocity_step(
    s, problem, n, m, k, t, h, p, e, theta, approaching, tangent_impulse=None
):  # fmt: skip
    """The step of the module docstring into ``s.q_next``, ``s.v_next`` (``approaching``:
    :func:`impactbench.core.scheme.velocity_impulse`; ``tangent_impulse``: None, or on a
    frictional problem ``s.tangent_impulse``: the Newton-Coulomb law). Returns (status,
    contact, iterations, force evaluations)."""
    h_theta = h * theta
    for j in range(n):
        s.qp[j] = s.q[j] + h_theta * s.v[j]
    if k == 0 or not problem.constant_mass or s.h_w[0] != h:
        if not form_iteration_matrix(s, problem, n, h, theta, p):
            return STATUS_MASS_NOT_SPD, False, 0, 0
    problem.forces(t + h_theta, s.qp, s.v, p, s.f)
    solve_mass(s.L, n, s.f, s.acc)
    for j in range(n):
        s.vfree[j] = s.v[j] + h * s.acc[j]
    if tangent_impulse is not None:  # None: the branch is not compiled
        status, active, used = friction_impulse(
            s, problem, n, m, s.qp, s.v, s.vfree, e, s.v1, p, approaching, tangent_impulse
        )
    else:
        status, active, used = velocity_impulse(
            s, problem, n, m, s.qp, s.v, s.vfree, e, s.v1, p, approaching, None
        )
    if status != STATUS_OK:
        return status, False, 0, 0
    h_rest = h - h_theta
    for j in range(n):
        v1 = s.v1[j] if active > 0 else s.vfree[j]
        s.q_next[j] = (s.q[j] + h_rest * s.v[j]) + h_theta * v1
        s.v_next[j] = v1
    return STATUS_OK, active > 0, used, 1


class ImplicitVelocity(Scheme):
    """The loop of ``MoreauJean(theta, implicit=True)`` (module docstring)."""

    state = IMPLICIT_STATE
    run_time = ("theta",)
    compile_time = {"approaching_only": bool}
    linear_forces = True

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return implicit_velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta, options.approaching_only, None
        )


class FrictionalImplicitVelocity(Scheme):
    """The loop of ``MoreauJean(theta, implicit=True)`` on a frictional problem."""

    state = FRICTIONAL_IMPLICIT_STATE
    run_time = ("theta",)
    compile_time = {"approaching_only": bool}
    linear_forces = True

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        return implicit_velocity_step(
            s, problem, n, m, k, t, h, p, e, par.theta, options.approaching_only,
            s.tangent_impulse,
        )  # fmt: skip


def implicit_scheme(
    kernels: ProblemKernels, options: dict[str, Any]
) -> tuple[type[Scheme], dict[str, Any]]:
    """The scheme of the implicit loop on a problem's ``kernels`` (frictional or not) and the
    loop options it takes (``options``: MoreauJean's loop options less :data:`IMPLICIT`;
    ``position_first`` must be False)."""
    options = dict(options)
    if options.pop("position_first", False):
        raise ValueError("the implicit Moreau-Jean scheme has no position-first variant")
    if kernels.tangent_gradient is None:
        return ImplicitVelocity, options
    return FrictionalImplicitVelocity, options


def step_limit(problem: Problem, theta: float) -> float | None:
    """None for a problem that declares its stiffness K (theta >= 1/2: no step is unstable on
    the linear part, which ``problem.stable_step`` is taken to describe; theta < 1/2: none is
    stable, as for the explicit scheme, and the run-time bounds guard it); otherwise the
    explicit scheme's limit (:func:`impactbench.core.divergence.theta_scheme_limit`): with no
    K declared the scheme is the explicit one."""
    if problem.stiffness_matrix() is not None:
        return None
    return theta_scheme_limit(problem, theta)
