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

The step is the explicit scheme's (``methods.moreau_jean.velocity_step``, with the factor of W
in place of that of M): this module forms W.
"""

from __future__ import annotations

from impactbench.core.scheme import (
    IMPACT_STATE,
    Problem,
    ldl_factor,
    scheme_function,
    theta_scheme_limit,
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


def step_limit(problem: Problem, theta: float) -> float | None:
    """None for a problem that declares its stiffness K (theta >= 1/2: no step is unstable on
    the linear part, which ``problem.stable_step`` is taken to describe; theta < 1/2: none is
    stable, as for the explicit scheme, and the run-time bounds guard it); otherwise the
    explicit scheme's limit (:func:`impactbench.core.divergence.theta_scheme_limit`): with no
    K declared the scheme is the explicit one."""
    if problem.stiffness_matrix() is not None:
        return None
    return theta_scheme_limit(problem, theta)
