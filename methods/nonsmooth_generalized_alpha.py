"""The nonsmooth generalized-alpha scheme (Chen, Acary, Virlez, Bruls, IJNME 93 (2013) 1-23).

The velocity is split into a smooth part, integrated by the generalized-alpha method of Chung
and Hulbert with the pseudo-acceleration a of Arnold and Bruls, and a jump taken by the Newton
impact law at velocity level; the gap is kept at position level by a projection in the kinetic
metric, as in the position-corrected forms of Bruls, Acary, Cardona (CMAME 281 (2014) 131-161)
and Capobianco, Harsch, Eugster, Leine (IJNME 122 (2021), doi 10.1002/nme.6801). Parameters from
the spectral radius at infinity rho_inf in [0, 1]:

    alpha_m = (2 rho_inf - 1) / (rho_inf + 1),   alpha_f = rho_inf / (rho_inf + 1),
    gamma = 1/2 + alpha_f - alpha_m,             beta = (1/2 + gamma)^2 / 4.

With q_k, v_k, the smooth acceleration vdot_k = M(q_k)^-1 F(t_k, q_k, v_k) and a_k known:

    (1 - alpha_m) a_{k+1} = (1 - alpha_f) vdot_{k+1} + alpha_f vdot_k - alpha_m a_k,
    vdot_{k+1} = M(qt)^-1 F(t_{k+1}, qt, vt),
    qt = q_k + h v_k + h^2 ((1/2 - beta) a_k + beta a_{k+1}),      (smooth position)
    vt = v_k + h ((1 - gamma) a_k + gamma a_{k+1}),                (smooth velocity)

    v_{k+1} = vt + M^-1 G^T P,   0 <= P  _|_  G v_{k+1} + e G v_k >= 0   on A = {i: g_i(qt) <= 0},
    qs = qt + (h/2) (v_{k+1} - vt),                                (the jump acts from mid-step)
    A <- A + {i : g_i(qs) < 0} and the impulse solved again, until qs leaves K on A only,
    q_{k+1} = Proj_K^M(qs) = argmin {|q - qs|_M : g(q) >= 0}      (on steps with A non-empty),

with M = M(qt), G = grad g(qt). Constraint levels: position (q_{k+1} in K up to the projection's
tolerance; exact for an affine gap) and velocity (Newton's law on the active set); the
acceleration level is not enforced: contact forces of a persistent contact are represented by
the impulses P (O(h) per step), as in Moreau-Jean, so a, vdot and the smooth part only ever
see the smooth forces F. The impulse is the shared velocity impulse
(:func:`impactbench.core.scheme.velocity_impulse`: closed form for one constraint, Murty's LCP
for several), the projection the shared metric projection
(:func:`impactbench.core.contact.make_metric_projection`; closed form for one affine constraint).

Choices stated here:

* implicit smooth part, solved by fixed-point iteration on a_{k+1} from a_k: stop when
  max_j |a^{(i+1)}_j - a^{(i)}_j| <= ``iteration_tol`` max_j |a^{(i+1)}_j|, or when the
  change moves qt and vt by less than 4 eps max_j |qt_j| and 4 eps max_j |vt_j|, or when the
  iteration has reached its round-off floor: the change stopped shrinking after it shrank at
  least once, and it moves qt by less than 1000 eps max_j |qt_j| (forces computed from large
  positions carry a round-off eps |q| |dF/dq| that the relative test cannot see below: the
  impacting bar at n = 3001, CFL 0.5, or at n = 11 after a flight of 10^4 lengths, whose
  accelerations then settle at ~1e-8 |a| instead of 1e-12; a genuinely diverging iteration
  never shrinks, or moves qt far beyond that bound); at most
  ``iteration_max`` evaluations of M and F per step (else the run stops with status 100). The
  contraction factor is (1 - alpha_f)/(1 - alpha_m) (h^2 beta |d(M^-1 F)/dq| + h gamma
  |d(M^-1 F)/dv|), O(h^2) for position-dependent forces; for constant M and F (the ball, the
  slanted wall) one evaluation per step suffices (a_0 = vdot_0 makes a_k = vdot_k exact). The
  driver counts one force evaluation per step whatever the iteration count.
* the forces are evaluated at the smooth (qt, vt), before the impulse and the projection: on an
  impact step and in a persistent contact this is an O(h) change of F inside a step that is
  first order anyway;
* Newton's law uses the normal velocity at the start of the step, U_k = G v_k (not G vt), and
  the impact log records U_k and G v_{k+1} for each constraint with P > 0, at t_{k+1}.
* a constraint free at qt that the impulses on the others push out of K (g_i(qs) < 0) joins A
  and the impulse is solved again (at most m times; qt, vt unchanged; never with one
  constraint). Without it the projection lifts that constraint without touching its velocity,
  the next step bounces that velocity with e, and a resting stack never settles: the positions
  stay on K while the velocities cycle, with a kinetic energy that grows with h and steeply
  with the number of contacts. With it a resting column of beads with round-off gaps stays at
  rest to round-off (tests/test_column_of_beads.py, tests/test_nonsmooth_generalized_alpha.py)
  and a dropped column settles; a constraint so activated keeps its U_k (0 at rest),
  so a body may rest above the constraint at a gap O(h^2 |M^-1 F|) (tests: the resting column to
  t = 100). With several constraints A also starts with the constraints of the previous step's
  final A whose gap at qt is within the projection's tolerance, g_i(qt) <= ``projection_tol``
  max(1, max_j |qt_j|): a contact held on K is at g = 0 up to round-off, and taking it as
  closed spares the loop the cascade in which a resting stack would otherwise activate its
  contacts one re-solve at a time, from the floor up.

Orders: second order for q and v in smooth phases (gamma = 1/2 + alpha_f - alpha_m), first order
through impacts. rho_inf = 1 is the trapezoidal rule (no numerical dissipation); rho_inf < 1 damps
the high frequencies. The half-step jump in qs is Moreau's midpoint rule for the impulsive part:
an elastic rebound is then not delayed (without it, projecting qt itself puts the body on the
constraint at t_{k+1} and delays every rebound by up to one step, always the same way:
fitted orders of the Hausdorff velocity distance 0.77-0.78; with it, phase-averaged orders of
the position error 0.97-1.01 on the ball and the slanted wall, tests).

Friction: on a frictional problem (docs/friction.md) the jump follows the planar Newton-Coulomb
law (:func:`impactbench.core.friction.friction_impulse`: normal and tangential impulses, stick
or slip, solved exactly) in place of Newton's, on A = {i : g_i(qt) <= 0}, from vt, with U_k = G v_k
as above; qs = qt + (h/2) (v_{k+1} - vt) carries the tangential jump too, and the projection is
onto K, normal only (the tangential position is not constrained). With constant M and F this is
the midpoint rule along the contact, q_{k+1} = q_k + (h/2) (v_k + v_{k+1}) before the
projection, so a block sliding with constant acceleration is integrated to round-off (tests).
The activation loop and the held contacts are not used with friction: ``friction_impulse``
takes its active set from g(q) <= 0 alone and cannot be given forced constraints, so a
constraint free at qt that the impulses push out of K is lifted back by the projection without
its velocity corrected (the behaviour the loop removes from frictionless stacks); the library's
frictional problems have one contact, where the loop never runs. A frictionless problem runs the
frictionless loop, unchanged.

Of Capobianco, Harsch, Eugster, Leine (2021), read in their published implementation (cardillo's
solver, written to the paper's equations): this has their velocity-level law (Newton on xi_N,
Coulomb on xi_T, on the closed contacts), the tangential percussion acting on the position with
weight h/2, and the gap kept at position level (here by the metric projection, there by a
multiplier in the position update). It does not have their acceleration level: they also split
each contact reaction into a smooth force in the generalized-alpha update, with Signorini's and
Coulomb's laws enforced on it at acceleration level, and solve all levels together (semismooth
Newton or fixed point on prox equations); here persistent contact and friction forces are
impulses, O(h) per step, as in Moreau-Jean, and the generalized-alpha part sees only F.

Energy (constant M and F, the falling ball, U_k = -V < 0, q_k = d >= 0): qt = d - hV - h^2 g/2,
v_{k+1} = eV, qs = d - (1 - e) hV/2, q_{k+1} = max(0, qs), so E_{k+1} - E_k = -(1 - e^2) V^2/2
- g (d - q_{k+1}) <= 0, and = 0 for e = 1 when qs >= 0; free flight is exact. The tests
measure E at every step over the impacts of the ball and of the slanted wall (non-diagonal M);
no general discrete energy inequality is claimed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from impactbench.core.scheme import (
    IMPACT_STATE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    Parameter,
    ProjectingScheme,
    affine_projection_step,
    factor_mass,
    projection_status,
    scheme_function,
    solve_mass,
    velocity_impulse,
)

#: The fixed-point iteration of the smooth part did not converge within ``iteration_max``.
STATUS_ITERATION_NOT_CONVERGED = 100

#: Relative size below which a change of the smooth (qt, vt) is round-off (4 eps).
_ROUND_OFF = 4.0 * float(np.finfo(float).eps)
#: Relative move of qt within which an iteration that stopped contracting is at its round-off
#: floor (1000 eps).
_STAGNATION = 1000.0 * float(np.finfo(float).eps)

#: The spectral radius at infinity, in [0, 1].
RHO_INF = Parameter(0.0, 1.0)


def generalized_alpha_parameters(rho_inf: float) -> tuple[float, float, float, float]:
    """(alpha_m, alpha_f, gamma, beta) of Chung and Hulbert for the spectral radius ``rho_inf``.

    Parameters
    ----------
    rho_inf : float
        Spectral radius of the amplification matrix at h omega -> infinity, in [0, 1].

    Returns
    -------
    alpha_m, alpha_f, gamma, beta : float
        (2 rho_inf - 1)/(rho_inf + 1), rho_inf/(rho_inf + 1), 1/2 + alpha_f - alpha_m and
        (1/2 + gamma)^2 / 4.

    Raises
    ------
    ValueError
        If ``rho_inf`` is not a number in [0, 1].
    """
    rho = RHO_INF.check(rho_inf, "rho_inf")
    alpha_m = (2.0 * rho - 1.0) / (rho + 1.0)
    alpha_f = rho / (rho + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    beta = 0.25 * (0.5 + gamma) ** 2
    return alpha_m, alpha_f, gamma, beta


@scheme_function
def _smooth_part(s, problem, n, t_next, h, p, par):
    """The fixed-point iteration on a_{k+1} (module docstring) into ``s.a_new``, ``s.vdot_new``
    and the smooth (qt, vt). Returns (status, force evaluations)."""
    h2_beta = h * h * par.beta
    h_gamma = h * par.gamma
    # a_{k+1} = c_new vdot_{k+1} + c_old vdot_k - c_a a_k
    inv_1m = 1.0 / (1.0 - par.alpha_m)
    c_new = (1.0 - par.alpha_f) * inv_1m
    c_old = par.alpha_f * inv_1m
    c_a = par.alpha_m * inv_1m
    for j in range(n):
        s.base_q[j] = s.q[j] + h * s.v[j] + (0.5 - par.beta) * h * h * s.a[j]
        s.base_v[j] = s.v[j] + (1.0 - par.gamma) * h * s.a[j]
        s.a_new[j] = s.a[j]
    converged = False
    evaluated = 0
    previous = np.inf  # the last change
    shrunk = False  # the change has decreased once
    for _ in range(int(par.iteration_max)):
        for j in range(n):
            s.qt[j] = s.base_q[j] + h2_beta * s.a_new[j]
            s.vt[j] = s.base_v[j] + h_gamma * s.a_new[j]
        if not problem.constant_mass:
            problem.mass_matrix(s.qt, p, s.M)
            if not factor_mass(s.M, n, s.L):
                return STATUS_MASS_NOT_SPD, 0
        problem.forces(t_next, s.qt, s.vt, p, s.f)
        evaluated += 1
        solve_mass(s.L, n, s.f, s.vdot_new)
        change = 0.0
        size = 0.0
        q_size = 0.0
        v_size = 0.0
        for j in range(n):
            aj = c_new * s.vdot_new[j] + c_old * s.vdot[j] - c_a * s.a[j]
            change = max(change, abs(aj - s.a_new[j]))
            size = max(size, abs(aj))
            q_size = max(q_size, abs(s.qt[j]))
            v_size = max(v_size, abs(s.vt[j]))
            s.a_new[j] = aj
        # converged, or the update no longer moves (qt, vt) beyond round-off (a near 0 from
        # forces that cancel: the relative test alone would then never pass)
        if change <= par.iteration_tol * size or (
            h2_beta * change <= _ROUND_OFF * q_size and h_gamma * change <= _ROUND_OFF * v_size
        ):
            converged = True
            break
        if not change < np.inf:  # NaN or inf: the driver's finite check reports it
            converged = True
            break
        # the round-off floor: the change no longer shrinks (module docstring)
        if shrunk and change >= previous and h2_beta * change <= _STAGNATION * q_size:
            converged = True
            break
        shrunk = shrunk or change < previous
        previous = change
    if not converged:
        return STATUS_ITERATION_NOT_CONVERGED, evaluated
    for j in range(n):
        s.qt[j] = s.base_q[j] + h2_beta * s.a_new[j]
        s.vt[j] = s.base_v[j] + h_gamma * s.a_new[j]
    return STATUS_OK, evaluated


@scheme_function
def _held_contacts(s, problem, n, m, p, tol):
    """Flag in ``s.forced`` the constraints of the last step's final active set (``s.held``)
    whose gap at qt is within the projection's tolerance, ``tol`` max(1, max_j |qt_j|)."""
    held = False
    for i in range(m):
        if s.held[i] > 0.0:
            held = True
    if not held:
        return
    size = 1.0
    for j in range(n):
        size = max(size, abs(s.qt[j]))
    problem.gap(s.qt, p, s.gs)
    for i in range(m):
        if s.held[i] > 0.0 and s.gs[i] <= tol * size:
            s.forced[i] = 1.0


@scheme_function
def _position_level(s, problem, n, m, p, par, inv_w):
    """q_{k+1} = Proj_K^M(qs) into ``s.q_next`` (``s.gs`` holds g(qs); ``inv_w``: 1 / (G M^-1
    G^T) of a single affine constraint, with ``s.Y`` holding M^-1 G^T) and v_{k+1} = ``s.v1``
    into ``s.v_next``. Returns (status, projection iterations)."""
    if problem.affine_gap and problem.single_constraint:  # closed form
        projected = 0
        if s.gs[0] < 0.0:
            projected = affine_projection_step(n, s.gs[0], s.Y, inv_w, s.multipliers, s.dx)
        else:
            for j in range(n):
                s.dx[j] = 0.0
    else:
        projected = problem.project(
            s.qs, n, m, p, par.projection_tol, int(par.projection_max_iter),
            s.M, s.L, s.x, s.gs, s.G, s.ws,
        )  # fmt: skip
        for j in range(n):
            s.dx[j] = s.x[j] - s.qs[j]
    status = projection_status(projected)
    if status != STATUS_OK:
        return status, 0
    for j in range(n):
        s.q_next[j] = s.qs[j] + s.dx[j]
        s.v_next[j] = s.v1[j]
    return STATUS_OK, projected


class NonsmoothGeneralizedAlpha(ProjectingScheme):
    """Nonsmooth generalized-alpha scheme (velocity-level impacts, position-level gap).

    Parameters
    ----------
    rho_inf : float
        Spectral radius at infinity in [0, 1]: 1 is the trapezoidal rule (no numerical
        dissipation), smaller values damp the high frequencies more (default 0.8).
    iteration_tol : float
        Relative tolerance of the fixed-point iteration on the pseudo-acceleration.
    iteration_max : int
        Evaluations of M and F per step at most; reaching it stops the run with an error.
    projection_tol, projection_max_iter
        Tolerance and iteration limit of the metric projection for a nonlinear gap (exact in
        one iteration for an affine gap).
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    See the module docstring for the equations, the constraint levels and the energy balance.
    On a frictional problem the jump follows the planar Newton-Coulomb law and the projection is
    normal only (module docstring, Friction; docs/friction.md).
    """

    #: q, v, the pseudo-acceleration a and the smooth acceleration vdot at step k and their
    #: values at k + 1, the predictor's fixed part (base_q, base_v), the forces, the smooth
    #: (qt, vt), the velocity after the impulse, qs and its projection x = qs + dx, g(qs), the
    #: constraints activated whatever g_i(qt) (``forced``), the final active set of the step
    #: (``held``), M(qt), its factor and what the shared impulse works in.
    state = {
        "q": "n",
        "v": "n",
        "a": "n",
        "vdot": "n",
        "a_new": "n",
        "vdot_new": "n",
        "base_q": "n",
        "base_v": "n",
        "f": "n",
        "qt": "n",
        "vt": "n",
        "v1": "n",
        "qs": "n",
        "x": "n",
        "dx": "n",
        "gs": "m",
        "forced": "m",
        "held": "m",
        "M": "mass",
        "L": "mass",
        **IMPACT_STATE,
    }
    #: alpha_m, alpha_f, gamma, beta from rho_inf (:func:`generalized_alpha_parameters`).
    run_time = {
        "alpha_m": float,
        "alpha_f": float,
        "gamma": float,
        "beta": float,
        "iteration_tol": Parameter(0.0, open_low=True),
        "iteration_max": Parameter(integer=True),
        **ProjectingScheme.run_time,
    }
    failure_reasons: ClassVar[dict[int, str]] = {
        **ProjectingScheme.failure_reasons,
        STATUS_ITERATION_NOT_CONVERGED: (
            "the fixed-point iteration of the smooth part did not converge within iteration_max"
            " (reduce h)"
        ),
    }

    def __init__(
        self,
        rho_inf: float = 0.8,
        iteration_tol: float = 1e-12,
        iteration_max: int = 100,
        projection_tol: float = 1e-14,
        projection_max_iter: int = 50,
        **options: Any,
    ) -> None:
        super().__init__(
            iteration_tol=iteration_tol,
            iteration_max=iteration_max,
            projection_tol=projection_tol,
            projection_max_iter=projection_max_iter,
            **options,
        )
        self.alpha_m, self.alpha_f, self.gamma, self.beta = generalized_alpha_parameters(rho_inf)
        self.rho_inf = float(rho_inf)

    @staticmethod
    def start(s, problem, options, n, m, t0, h, q0, v0, p, e, par):
        """q, v from (q0, v0); a_0 = vdot_0 = M(q0)^-1 F(t0, q0, v0)."""
        for j in range(n):
            s.q[j] = q0[j]
            s.v[j] = v0[j]
        problem.mass_matrix(q0, p, s.M)
        if not factor_mass(s.M, n, s.L):
            return STATUS_MASS_NOT_SPD, 0, 1
        problem.forces(t0, q0, v0, p, s.f)
        solve_mass(s.L, n, s.f, s.vdot)
        for j in range(n):
            s.a[j] = s.vdot[j]
        return STATUS_OK, 0, 1

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        status, evaluated = _smooth_part(s, problem, n, t_next, h, p, par)
        if status != STATUS_OK:
            return status, False, 0, 0
        for i in range(m):
            s.forced[i] = 0.0
        if not problem.single_constraint:  # the contacts held within tolerance (docstring)
            _held_contacts(s, problem, n, m, p, par.projection_tol)
        used = 0
        active = 0
        # velocity level, Newton's law on A; activation (module docstring): a constraint that
        # qs leaves joins A and the impulse is solved again (at most m times; qt and vt do not
        # change)
        for _ in range(m + 1):
            status, active, pivots = velocity_impulse(
                s, problem, n, m, s.qt, s.v, s.vt, e, s.v1, p, False, s.forced
            )
            if status != STATUS_OK:
                return status, False, 0, 0
            if active == 0:  # no constraint closed at qt
                break
            used += pivots
            # the jump acts from mid-step: qs = qt + (h/2) (v_{k+1} - vt)
            for j in range(n):
                s.qs[j] = s.qt[j] + 0.5 * h * (s.v1[j] - s.vt[j])
            problem.gap(s.qs, p, s.gs)
            added = False
            if not problem.single_constraint:  # one constraint is active already
                for i in range(m):  # s.g holds g(qt)
                    if s.gs[i] < 0.0 and s.g[i] > 0.0 and not s.forced[i] > 0.0:
                        s.forced[i] = 1.0
                        added = True
            if not added:
                break
        for i in range(m):
            s.held[i] = 0.0
        for a in range(active):
            s.held[s.rows[a]] = 1.0
        if active == 0:
            for j in range(n):
                s.q_next[j] = s.qt[j]
                s.v_next[j] = s.vt[j]
            return STATUS_OK, False, used, evaluated
        # position level: q_{k+1} = Proj_K^M(qs) (overwrites g(qs), G and the workspace)
        status, projected = _position_level(s, problem, n, m, p, par, s.inv_w[0])
        if status != STATUS_OK:
            return status, False, 0, 0
        return STATUS_OK, True, used + projected, evaluated

    @staticmethod
    def commit(s, n):
        for j in range(n):
            s.q[j] = s.q_next[j]
            s.v[j] = s.v_next[j]
            s.a[j] = s.a_new[j]
            s.vdot[j] = s.vdot_new[j]

    @staticmethod
    def frictional_step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        """The step with the planar Newton-Coulomb law in place of Newton's (module docstring,
        Friction)."""
        status, evaluated = _smooth_part(s, problem, n, t_next, h, p, par)
        if status != STATUS_OK:
            return status, False, 0, 0
        # velocity level: the Newton-Coulomb law on A = {i : g_i(qt) <= 0}, from vt
        status, active, used = velocity_impulse(
            s, problem, n, m, s.qt, s.v, s.vt, e, s.v1, p, False, None, None, s.tangent_impulse
        )
        if status != STATUS_OK:
            return status, False, 0, 0
        if active == 0:
            for j in range(n):
                s.q_next[j] = s.qt[j]
                s.v_next[j] = s.vt[j]
            return STATUS_OK, False, 0, evaluated
        # the jump, normal and tangential, acts from mid-step
        for j in range(n):
            s.qs[j] = s.qt[j] + 0.5 * h * (s.v1[j] - s.vt[j])
        problem.gap(s.qs, p, s.gs)
        # position level, normal only; 1 / (G M^-1 G^T) of a single constraint is A_NN
        status, projected = _position_level(s, problem, n, m, p, par, 1.0 / s.ann[0, 0])
        if status != STATUS_OK:
            return status, False, 0, 0
        return STATUS_OK, True, used + projected, evaluated
