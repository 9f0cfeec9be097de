"""Moreau-Jean with position projection (Acary, CMAME 256 (2013) 224-250; Siconos'
MoreauJeanDirectProjectionOSI).

One step of the Moreau-Jean theta-scheme (methods/moreau_jean.py, activation by position: its
functions and buffer layout are reused as they are), then the new position is projected onto
K = {q : g(q) >= 0} in the kinetic metric; the velocity is left as the velocity step made it:

    q_p = q_k + theta h v_k,   M = M(q_p),   G = grad g(q_p),
    v_{k+1} = v_k + h M^-1 F(t_k + theta h, q_p, v_k) + M^-1 G^T P,
    0 <= P  _|_  G v_{k+1} + e G v_k >= 0      on A = {i : g_i(q_p) <= 0},
    qt = q_k + h ((1 - theta) v_k + theta v_{k+1}),
    q_{k+1} = Proj_K^M(qt) = argmin {|q - qt|_M : g(q) >= 0}
            = qt + M^-1 grad g(q_{k+1})^T mu,   0 <= mu  _|_  g(q_{k+1}) >= 0,

at every step (a no-op when qt is in K), with the shared projection
(:func:`impactbench.core.contact.make_metric_projection`: exact in one step for an affine gap, SQP
with the Hessian of the Lagrangian otherwise, to ``projection_tol``) in the metric of M(q_p),
the matrix already factored by the velocity step. This is Siconos' direct projection with the
projection on all of K (not only on the index set of the velocity step) and without its
activation tolerance: no penetration remains beyond round-off (affine gap) or the projection's
tolerance (nonlinear gap).

Activation. The velocity step activates by position, g_i(q_p) <= 0, and one rule is added: on a
step with an active constraint, a constraint free at q_p that qt leaves (g_i(qt) < 0: pushed out
of K by the impulses on the others, or by its own motion) joins the active set and the velocity
step is taken again (at most m times). On a step with no active constraint nothing changes: a
constraint whose own free motion leaves K takes its impulse at the next step, as below. Without
the rule the projection lifts a constraint that the impulses pushed out of K without touching
its velocity, the next step bounces that velocity with e, and a resting stack never settles:
the positions stay on K while the velocities cycle, with a kinetic energy that grows with h
and steeply with N. With the rule a resting column of beads with round-off gaps stays at rest
to round-off (tests/test_column_of_beads.py) and a dropped column settles. The cost: a
constraint so activated keeps its normal velocity U_k (U_k = 0 at rest), so a body may rest
above the constraint at a gap below its fall over one step, O(h^2 |M^-1 F|) (tests: the
resting column to t = 100). A problem with one constraint never meets the rule.

What the projection costs. It moves q without touching v: the position is no longer the
integral of the velocity, and the energy is not the velocity scheme's. Over an impact: a step
with no active constraint that ends inside the constraint (g(q_p) > 0 >= g(qt)) is lifted by up to
h |U_k| / 2 (U_k = G v_k), which raises the potential energy by up to |G M^-1 F| h |U_k| / (2 w)
(w = G M^-1 G^T), O(h) where the velocity scheme alone keeps E exactly for theta = 1/2; the
impulse follows on the next step. Over the whole impact (the impact step and the step before
it; constant M and F, one affine constraint, alpha = -G M^-1 F, U the normal velocity before
the impulse)

    Delta E <= -(1 - e^2) U^2 / (2 w) + alpha h |U| / (2 w),

a loss for |U| > alpha h / (1 - e^2), but for e = 1 a gain of up to alpha h |U| / (2 w) per
impact, so the energy of an elastic run grows: "energy never increases over an impact" does
not hold for this scheme at e = 1 (tests/test_moreau_jean_projection.py asserts, on the ball
and the slanted wall, the bound, the loss at e = 0.8 and the gain and growth at e = 1; the
conformance suite's check, which compares E across the impact step alone, passes). In smooth
phases nothing changes (second order for theta = 1/2 and velocity-independent F); through
impacts first order. A persistent contact is held on the constraint (depth 0 to round-off)
instead of O(h^2 |F|) inside it, also on curved sliding contacts where Moreau-Jean drifts.
Cost: one gap evaluation per step (admissibility of qt), plus the projection on steps that end
outside K.

The impact log: U_k = G v_k and G v_{k+1} for each constraint with P > 0, and for each constraint
the projection alone moved (mu > 0, no impulse), so that a contact held by the projection between
impulses is one contact, not a train of impacts.

Moving obstacles (g(t, q)): the velocity step is Moreau-Jean's with the relative normal
velocities U = G v + dg/dt (methods/moreau_jean.py), the admissibility of qt and the
re-activation test use g(t_{k+1}, .), and q_{k+1} is the projection onto K(t_{k+1}) =
{q : g(t_{k+1}, q) >= 0}; the log reports relative normal velocities.
"""

from __future__ import annotations

from typing import Any

from impactbench.core.scheme import (
    STATUS_OK,
    Problem,
    ProjectingScheme,
    gap_at,
    normal_rates,
    project_at,
    projection_status,
    relative_after,
    relative_before,
    theta_scheme_limit,
)

from .moreau_jean import THETA, VELOCITY_STATE, velocity_step


class MoreauJeanProjection(ProjectingScheme):
    """Moreau-Jean theta-scheme followed by the projection of q onto K in the kinetic metric.

    Parameters
    ----------
    theta : float
        Weight in (0, 1] of the velocity step; 1/2 (default) is Moreau's midpoint scheme.
    projection_tol, projection_max_iter
        Tolerance and iteration limit of the metric projection for a nonlinear gap (exact in
        one iteration for an affine gap).
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    The velocity step activates by position (Siconos' rule) plus the constraints that the
    impulses push out of K; see the module docstring for the equations, the activation and what
    the projection costs in energy.
    """

    #: The velocity step's state, the constraints it activates whatever g_i(q_p) (``forced``),
    #: then the point y it reaches, its projection x, and g, G where the projection works.
    state = {**VELOCITY_STATE, "forced": "m", "y": "n", "x": "n", "gy": "m", "Gy": ("m", "n")}
    moving_obstacles = True
    run_time = {"theta": THETA, **ProjectingScheme.run_time}

    def __init__(
        self,
        theta: float = 0.5,
        projection_tol: float = 1e-14,
        projection_max_iter: int = 50,
        **options: Any,
    ) -> None:
        super().__init__(
            theta=theta,
            projection_tol=projection_tol,
            projection_max_iter=projection_max_iter,
            **options,
        )

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        for i in range(m):
            s.forced[i] = 0.0
        used = 0
        evaluated = 0
        # activation (module docstring): on a step with an impulse, a constraint free at q_p
        # that qt leaves joins the active set and the velocity step is taken again (at most m
        # times)
        for _ in range(m + 1):
            status, contact, pivots, calls = velocity_step(
                s, problem, n, m, k, t, h, p, e, par.theta, False, False, s.forced
            )
            used += pivots
            evaluated += calls
            if status != STATUS_OK:
                return status, contact, used, evaluated
            for j in range(n):
                s.y[j] = s.q_next[j]
            if not contact:  # no active constraint: no impulse pushed anything
                break
            gap_at(problem, t_next, s.y, p, s.gy)
            added = False
            for i in range(m):  # s.g holds g(q_p), left by the velocity step
                if s.gy[i] < 0.0 and s.g[i] > 0.0 and not s.forced[i] > 0.0:
                    s.forced[i] = 1.0
                    added = True
            if not added:
                break
        projected = project_at(
            problem, t_next, s.y, n, m, p, par.projection_tol, int(par.projection_max_iter),
            s.M, s.L, s.x, s.gy, s.Gy, s.ws,
        )  # fmt: skip
        status = projection_status(projected)
        if status != STATUS_OK:
            return status, False, 0, evaluated
        for j in range(n):
            s.q_next[j] = s.x[j]
        if projected > 0:
            # A constraint the projection alone acted on (no impulse from the velocity step)
            # is logged like an impulse, with its multiplier and the normal velocities G v_k,
            # G v_{k+1}: otherwise a resting contact held by the projection between impulses
            # would read as a train of separate impacts. With moving obstacles the velocities are
            # relative, U = Gy v + r with the rates at x, r(t_k) before and r(t_{k+1}) after.
            normal_rates(s, problem, t, t_next, s.x, p)
            for i in range(m):
                if not contact:
                    s.impulse[i] = 0.0
                if s.multipliers[i] > 0.0 and not s.impulse[i] > 0.0:
                    s.impulse[i] = s.multipliers[i]
                    before = relative_before(s, problem, i)
                    after = relative_after(s, problem, i)
                    for j in range(n):
                        before += s.Gy[i, j] * s.v[j]
                        after += s.Gy[i, j] * s.v_next[j]
                    s.normal_before[i] = before
                    s.normal_after[i] = after
            contact = True
        return STATUS_OK, contact, used + projected, evaluated

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step / sqrt(4 theta - 1)`` for theta >= 1/2, None below
        (:func:`impactbench.core.divergence.theta_scheme_limit`)."""
        return theta_scheme_limit(problem, self.theta)
