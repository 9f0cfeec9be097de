"""The D1MinusLinear scheme (Schindler and Acary, Math. Comput. Simul. 95 (2014) 180-199).

A time-discontinuous Galerkin scheme: the velocity is piecewise linear in time on each step and
may jump at the step's end t_{k+1} (velocity level, Newton's law), the position is continuous.
It is the half-explicit acceleration-level variant of Siconos' D1MinusLinearOSI
(type ``halfexplicit_acceleration_level``): contact forces of persistent contacts are computed at
acceleration level at both ends of the step, impacts at velocity level at its end. With q_k,
v_k (the right limit v(t_k+)) known, M_k = M(q_k), G_k = grad g(q_k):

    a_k+  = M_k^-1 (F(t_k, q_k, v_k) + G_k^T lambda_k+),
    v_k1  = v_k + h a_k+,                        (the velocity at t_{k+1}- on the free path)
    q_{k+1} = q_k + (h/2) (v_k + v_k1),
    a_{k+1}- = M_{k+1}^-1 (F(t_{k+1}, q_{k+1}, v_k1) + G_{k+1}^T lambda_{k+1}-),
    v_free = v_k + (h/2) (a_k+ + a_{k+1}-),      (the left limit v(t_{k+1}-))
    v_{k+1} = v_free + M_{k+1}^-1 G_{k+1}^T P,
    0 <= P_i  _|_  G_{k+1,i} v_{k+1} + e_i G_{k+1,i} v_free >= 0      on I_1.

Index sets (of constraints i; DESIGN notation: g the gaps, G their gradients, U = G v):

* I_1 = {i : g_i(q_{k+1}) <= 0}: closed at the end of the step; the velocity-level problem
  (the impulses P) is solved on I_1 at every step.
* I_3 = {i in I_1 : g_i(q_k) > 0}: closed during the step (an impact). When I_3 is not empty the
  contact forces lambda are left out at both ends (a_k+ and a_{k+1}- are M^-1 F only): the
  impulse P carries the whole contact reaction of the step, as in Siconos.
* I_2 = {i : g_i(q) <= 0 and G_i(q) w <= tau_i}: closed with vanishing normal velocity, taken at
  (q, w) = (q_k, v_k) for lambda_k+ (I_2+), and for lambda_{k+1}- (only when I_3 is empty) at
  (q_{k+1}, v_k1) within I_2+ (I_2- = I_2+ intersected with I_2 at (q_{k+1}, v_k1); Siconos does
  not intersect: a contact separating at t_k, G_i v_k > 0, whose predictor v_k1 turns back
  would take a force over the half step while it rises, and the energy would grow by
  O(h^2 |a|^2); with the intersection E never increases: tests/test_d1_minus_linear.py). On I_2
  the forces solve the acceleration-level LCP

      0 <= lambda  _|_  G M^-1 (F + G^T lambda) + (d/dt G) w >= 0,

  with (d/dt G_i) w = w^T grad^2 g_i w (zero for an affine gap; otherwise central differences
  of ``gap_gradient`` along w, step CURVATURE_FD_STEP max(1, |q|) / |w|). "Vanishing" is
  decided to round-off, tau_i = 64 eps sum_j |G_ij| (|w_j| + h |a_j|) with a = M^-1 F the
  free acceleration (Siconos: an absolute 1e-8): the normal velocity left by a plastic impulse
  is zero up to the rounding of the terms it cancelled, whose size is that of v and h a.

Newton's law, restitution per constraint (the second stated choice of this variant): e_i = e for
i in I_3 (an impact: the constraint closed during the step) and e_i = 0 for i in I_1 \\ I_3 (a
contact already closed at t_k: persistent contact, plastic) that approaches (e_i = 1 for one
that separates, below). With e_i = e on all of I_1 (Siconos: its right-hand side is
(1 + e) G v_free for every i in I_1) a ball resting on the floor does not settle:
once v_k < h a/2 each step gives v_{k+1} = e (h a/2 - v_k) > 0, whose fixed
point e h a / (2 (1 + e)) is positive, so I_2 never holds at t_k and the ball sinks by
h^2 a / (2 (1 + e)) per step, linearly in time without bound (Siconos' own output for the ball
sits at that fixed point and sinks: tests/test_d1_minus_linear.py).
With the plastic rule the velocity of a persistent contact is set to zero, the contact enters
I_2 and stays at rest exactly: its depth is the O(h^2 a) reached when it settled and does not
grow (tests, to t = 1000).

A persistent contact (i in I_1 \\ I_3) that separates, u-_i = G_i v_free > 0, takes e_i = 1
(alone it takes no impulse whatever e_i). Each impulse changes the kinetic energy by
P_i (1 - e_i) u-_i / 2, a gain when P_i > 0 and u-_i > 0: a separating contact that the impulses
on the others push back. With e_i = 0 there (the plastic rule on the whole of I_1 \\ I_3) the
mixed law of a stack (e on the contact that just closed, 0 on its separating neighbour still
inside K) gains that much at every step and sends a growing wave up the stack. Leaving such
contacts out of the problem instead removes the gain but lets the impulses drive them into K at
any speed, to be stopped plastically at the next step O(h |U|) deep. With e_i = 1 every term
is <= 0, so the impulses never add energy (a resting column of beads with round-off gaps
creates none: tests/test_column_of_beads.py).

The velocity-level problem is the shared velocity impulse
(:func:`impactbench.core.scheme.velocity_impulse`) at q_{k+1}, from v_free, with the restitution
e_i of each constraint; the acceleration-level problems are not impulses (their right-hand side
carries the curvature terms, their index set I_2 is not the impulse's) and are solved by
:func:`impactbench.core.scheme.reaction_forces` (the shared Delassus matrix and LCP solver).

Start: an impact at t_0 (a contact closed at q_0 whose normal velocity G v_0 is negative)
takes Newton's law with e at t_0, v_0 <- v_0 + M^-1 G^T P (:func:`velocity_impulse` on the
contacts closed at q_0 that approach). Without it that contact, closed at the start of the
first step, would count as persistent (e_i = 0) and be stopped plastically: a ball on the
floor moving down with e = 1 would stop and sink instead of bouncing.

Impact log: the normal velocities before and after are G v_free and G v_{k+1} at t_{k+1}, for
each i in I_1 with P_i > 0 (u+ = -e u- on I_3, u+ = 0 on the plastic contacts).

Orders and costs. In smooth phases with constant mass the scheme is velocity Verlet (q_{k+1} =
q_k + h v_k + h^2/2 a_k, v_{k+1} = v_k + h/2 (a_k + a_{k+1})) when F does not depend on v:
second order. Through impacts first order (the impulse acts at t_{k+1}; the position is not
corrected, so a contact closing during a step with normal velocity U ends it up to h |U| inside
K; with e > 0 it then leaves, with e = 0 it rests at that depth for all time: 2.1 mm for the
ball dropped from 1 m at h = 1e-3, U = -4.4).
Energy, for constant M and F and one affine constraint (w = G M^-1 G^T): free flight is
exact; an impact step changes E by -(1 - e^2) U_-^2 / (2 w) <= 0 (U_- = G v_free); a step of a
closed contact without forces is free flight followed by a plastic impulse, -U_-^2 / (2 w) <= 0
when it approaches; with the forces of I_2 at both ends the motion is exact on the tangent plane.
So E never increases, at any step (tests: ball and slanted wall, e = 0, 0.8, 1). With several
constraints the impulses never add energy (above); the resting column of beads is tested to
t = 100.

Against Siconos (4.4, D1MinusLinearOSI in TimeSteppingD1Minus; reference outputs and their
generator in tests/data/siconos/): the same numbers to round-off through the impacts of the
ball and of the pin in its hole (2.7e-15 and 6.7e-16), and the two stated differences in
persistent contact: Siconos' resting ball sinks at v_k = e h a / (2 (1 + e)) as computed above,
ours rests. On a curved sliding contact (the pin along the wall of its hole) nothing corrects
the position and both drift outwards linearly in time, Siconos 2.7x further (depth at t = 20,
h = 2e-3): the drift is the scheme's (the position-level constraint is never imposed), which
the projected schemes (MoreauJeanProjection, NonsmoothGeneralizedAlpha, PaoliSchatzman) do not
have. tests/test_d1_minus_linear.py checks all of this against the reference outputs.

Costs: two force evaluations per step (t_k and t_{k+1}: F^-_{k+1} is taken at v_k1, F^+_{k+1}
at v_{k+1}), both counted. One mass factorisation per step for a configuration-dependent M
(M_{k+1} is kept for the next step), none for a constant one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from impactbench.core.scheme import (
    CURVATURE_FD_STEP,
    IMPACT_STATE,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    Scheme,
    closed_rows,
    factor_mass,
    reaction_forces,
    scheme_function,
    solve_mass,
    velocity_impulse,
)

#: Factor of the round-off tolerance tau_i of a vanishing normal velocity (module docstring).
VANISHING_FACTOR = 64.0 * float(np.finfo(float).eps)

#: The state of the step (q_{k+1} is written straight into the candidate ``s.q_next``): F and
#: the free acceleration M^-1 F, a_k+, the predictor v_k1, a_{k+1}- without and with the contact
#: forces, v_free; g(q_k) (``s.g`` holds the gaps at the last point evaluated), the constraints
#: of I_2 at t_k, the restitution e_i of each constraint; the right-hand side of the
#: acceleration-level LCP, its curvature terms, the shifted point of their differences and the
#: gradients there; M (M_{k+1} after the step) and its factor; what the impulse works in.
D1_STATE = {
    "q": "n",
    "v": "n",
    "f": "n",
    "a_free": "n",
    "a_left": "n",
    "v1": "n",
    "a_right_free": "n",
    "a_right": "n",
    "v_free": "n",
    "g_start": "m",
    "held": "m",
    "restitution": "m",
    "b": "m",
    "curvature": "m",
    "shift": "n",
    "G_plus": ("m", "n"),
    "G_minus": ("m", "n"),
    "M": "mass",
    "L": "mass",
    **IMPACT_STATE,
}


@scheme_function
def _contact_forces(s, problem, n, m, q, w, p, h, a_free, a_out, closed):
    """a_out = a_free + M^-1 G^T lambda on I_2 at (q, w) (module docstring), given G = grad g(q)
    in ``s.G`` and the closed constraints in ``s.rows[:closed]`` (overwritten by I_2). Returns
    (status, active, pivots)."""
    G = s.G
    rows = s.rows
    active = 0
    for c in range(closed):
        i = rows[c]
        u = 0.0
        scale = 0.0
        for j in range(n):
            u += G[i, j] * w[j]
            scale += abs(G[i, j]) * (abs(w[j]) + h * abs(a_free[j]))
        if u <= VANISHING_FACTOR * scale:
            rows[active] = i
            active += 1
    if active == 0:
        for j in range(n):
            a_out[j] = a_free[j]
        return STATUS_OK, 0, 0
    if not problem.affine_gap:  # (d/dt G) w by central differences along w
        size = 1.0
        speed = 0.0
        for j in range(n):
            size = max(size, abs(q[j]))
            speed = max(speed, abs(w[j]))
        if speed > 0.0:
            shift = CURVATURE_FD_STEP * size / speed
            for j in range(n):
                s.shift[j] = q[j] + shift * w[j]
            problem.gap_gradient(s.shift, p, s.G_plus)
            for j in range(n):
                s.shift[j] = q[j] - shift * w[j]
            problem.gap_gradient(s.shift, p, s.G_minus)
            for a in range(active):
                i = rows[a]
                c = 0.0
                for j in range(n):
                    c += (s.G_plus[i, j] - s.G_minus[i, j]) * w[j]
                s.curvature[a] = c / (2.0 * shift)
        else:
            for a in range(active):
                s.curvature[a] = 0.0
    for a in range(active):
        i = rows[a]
        b = 0.0
        for j in range(n):
            b += G[i, j] * a_free[j]
        if not problem.affine_gap:
            b += s.curvature[a]
        s.b[a] = b
    status, used = reaction_forces(s, n, active, s.b, a_free, a_out)
    return status, active, used


class D1MinusLinear(Scheme):
    """D1MinusLinear time-discontinuous Galerkin scheme (Schindler and Acary 2014).

    Half-explicit at acceleration level: contact forces of persistent contacts by an
    acceleration-level LCP at both ends of the step, impacts by Newton's law at velocity level
    at its end (plastic for contacts already closed at its start). Second order in smooth phases
    (velocity Verlet for constant M and velocity-independent F), first order through impacts.

    Parameters
    ----------
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    See the module docstring for the equations, the index sets and the one stated departure
    from Siconos' D1MinusLinearOSI (plastic restitution on persistent contacts).
    """

    state = D1_STATE
    #: The smooth part is velocity Verlet, stable iff h omega_max <= 2
    #: (:mod:`impactbench.core.divergence`): the step limit is ``problem.stable_step``.
    stable_step_factor = 1.0

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)

    @staticmethod
    def start(s, problem, options, n, m, t0, h, q0, v0, p, e, par):
        """q, v from (q0, v0), with Newton's law at t_0 on the contacts closed there that
        approach (an impact at t_0: module docstring); M(q0) factored; g(q0)."""
        for j in range(n):
            s.q[j] = q0[j]
            s.v[j] = v0[j]
        problem.mass_matrix(q0, p, s.M)
        if not factor_mass(s.M, n, s.L):
            return STATUS_MASS_NOT_SPD, 0, 0
        problem.gap(q0, p, s.g)
        for i in range(m):
            if not s.g[i] <= math.inf:  # NaN
                return STATUS_GAP_NOT_FINITE, 0, 0
        # an impact at t_0: Newton's law with e on the closed contacts that approach
        status, active, pivots = velocity_impulse(
            s, problem, n, m, q0, s.v, s.v, e, s.v1, p, True, None
        )
        if status != STATUS_OK:
            return status, 0, 0
        if active > 0:
            for j in range(n):
                s.v[j] = s.v1[j]
        return STATUS_OK, pivots, 0

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        half_h = 0.5 * h
        q1 = s.q_next  # q_{k+1}
        used = 0
        # left end: a_k+ with the contact forces on I_2 at (q_k, v_k); s.g holds g(q_k), s.L
        # the factor of M_k
        problem.forces(t, s.q, s.v, p, s.f)
        solve_mass(s.L, n, s.f, s.a_free)
        status, closed = closed_rows(s, problem, n, m, s.q, p)
        if status != STATUS_OK:
            return status, False, 0, 0
        for i in range(m):
            s.held[i] = 0.0
        if closed > 0:
            status, active, pivots = _contact_forces(
                s, problem, n, m, s.q, s.v, p, h, s.a_free, s.a_left, closed
            )
            if status != STATUS_OK:
                return status, False, 0, 0
            used += pivots
            for c in range(active):  # I_2 at t_k
                s.held[s.rows[c]] = 1.0
        else:
            for j in range(n):
                s.a_left[j] = s.a_free[j]
        for j in range(n):
            s.v1[j] = s.v[j] + h * s.a_left[j]
            q1[j] = s.q[j] + half_h * (s.v[j] + s.v1[j])
        # right end: M_{k+1} (its factor replaces that of M_k, no longer needed), F at
        # (t_{k+1}, q_{k+1}, v_k1), the index sets at q_{k+1}
        if not problem.constant_mass:
            problem.mass_matrix(q1, p, s.M)
            if not factor_mass(s.M, n, s.L):
                return STATUS_MASS_NOT_SPD, False, 0, 0
        problem.forces(t_next, q1, s.v1, p, s.f)
        solve_mass(s.L, n, s.f, s.a_right_free)
        for i in range(m):
            s.g_start[i] = s.g[i]
        problem.gap(q1, p, s.g)
        status, closed = closed_rows(s, problem, n, m, q1, p)
        if status != STATUS_OK:
            return status, False, 0, 0
        impact = False
        for c in range(closed):
            if s.g_start[s.rows[c]] > 0.0:
                impact = True
        if impact:  # I_3 not empty: the impulse carries the whole contact reaction of the step
            for j in range(n):
                s.v_free[j] = s.v[j] + half_h * (s.a_free[j] + s.a_right_free[j])
        else:
            held = 0  # I_1 restricted to I_2 at t_k: a contact separating at t_k takes no force
            for c in range(closed):
                if s.held[s.rows[c]] > 0.0:
                    s.rows[held] = s.rows[c]
                    held += 1
            if held > 0:
                status, active, pivots = _contact_forces(
                    s, problem, n, m, q1, s.v1, p, h, s.a_right_free, s.a_right, held
                )
                if status != STATUS_OK:
                    return status, False, 0, 0
                used += pivots
            else:
                for j in range(n):
                    s.a_right[j] = s.a_right_free[j]
            for j in range(n):
                s.v_free[j] = s.v[j] + half_h * (s.a_left[j] + s.a_right[j])
        if closed == 0:
            for j in range(n):
                s.v_next[j] = s.v_free[j]
            return STATUS_OK, False, used, 2
        # velocity level on I_1: e on I_3 (impacts), 0 on the persistent contacts that approach,
        # 1 on those that separate (G_i v_free > 0: no energy gain, module docstring)
        for i in range(m):
            if s.g_start[i] > 0.0:
                s.restitution[i] = e
            elif s.g[i] <= 0.0:
                u = 0.0
                for j in range(n):
                    u += s.G[i, j] * s.v_free[j]
                s.restitution[i] = 1.0 if u > 0.0 else 0.0
        status, active, pivots = velocity_impulse(
            s, problem, n, m, q1, s.v_free, s.v_free, e, s.v_next, p, False, None, s.restitution
        )
        if status != STATUS_OK:
            return status, False, 0, 0
        return STATUS_OK, True, used + pivots, 2
