"""Kernels shared by the bodies that touch a rigid floor with Coulomb friction.

Two kinds of body, every contact with the same Coulomb coefficient mu and tangential
restitution e_T:

* a point mass m in the plane, q = (x, y), on the floor y >= 0: the gap g = y, the normal row
  W_N = (0, 1), the tangent row W_T = (1, 0), M = diag(m, m) (:class:`SlidingBlock` along its
  incline, :class:`FrictionOscillator`);
* a rigid body in the plane, q = (x, y, theta), mass m and moment of inertia J about its
  centre, under gravity g: M = diag(m, m, J), F = (0, -m g, 0) (:class:`ImpactingStick`,
  :class:`PainleveRod`, :class:`RockingBlock`; each writes its own gaps and rows).

A problem that uses these kernels starts its parameter tuple with :data:`FLOOR_PARAMETERS`
(point mass) or :data:`RIGID_BODY_PARAMETERS` (rigid body), which the kernels read by the
constants below, and adds its own parameters after them (``tests/test_problems.py`` checks the
prefix).
"""

from __future__ import annotations

from impactbench.core.kernels import kernel, parameter_indices

#: The parameters every floor-contact problem starts with, in this order.
FLOOR_PARAMETERS = ("mass", "mu", "tangential_restitution")
#: The parameters a rigid body on the floor starts with, in this order.
RIGID_BODY_PARAMETERS = ("mass", "mu", "tangential_restitution", "inertia", "gravity")
MASS, MU, TANGENTIAL_RESTITUTION, INERTIA, GRAVITY = parameter_indices(RIGID_BODY_PARAMETERS)


@kernel
def point_mass_matrix(q, p, out):
    out[0, 0] = p[MASS]
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = p[MASS]


@kernel
def floor_gap(q, p, out):
    out[0] = q[1]


@kernel
def floor_gap_gradient(q, p, out):
    out[0, 0] = 0.0
    out[0, 1] = 1.0


@kernel
def floor_tangent_gradient(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0


@kernel
def floor_friction(q, p, mu, e_t):
    for i in range(mu.shape[0]):
        mu[i] = p[MU]
        e_t[i] = p[TANGENTIAL_RESTITUTION]


@kernel
def rigid_body_mass_matrix(q, p, out):
    for i in range(3):
        for j in range(3):
            out[i, j] = 0.0
    out[0, 0] = p[MASS]
    out[1, 1] = p[MASS]
    out[2, 2] = p[INERTIA]


@kernel
def weight(t, q, v, p, out):
    out[0] = 0.0
    out[1] = -p[MASS] * p[GRAVITY]
    out[2] = 0.0
