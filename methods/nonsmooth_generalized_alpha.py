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
see the smooth forces F. The impulse is the shared impact law
(:func:`impactbench.core.contact.impulse`: closed form for one constraint, Murty's LCP for several),
the projection the shared metric projection
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
  stay on K while the velocities cycle, with a kinetic energy growing like h^2 and steeply with
  the number of contacts (measured, resting column of beads with round-off gaps, e = 0.9,
  t = 10, h = 1e-3: +11.7 J and |v| = 0.96 m/s for N = 50). With it that column stays at rest to
  round-off and a dropped column settles; a constraint so activated keeps its U_k (0 at rest),
  so a body may rest above the constraint at a gap O(h^2 |M^-1 F|) (tests: the resting column to
  t = 100).

Orders: second order for q and v in smooth phases (gamma = 1/2 + alpha_f - alpha_m), first order
through impacts. rho_inf = 1 is the trapezoidal rule (no numerical dissipation); rho_inf < 1 damps
the high frequencies. The half-step jump in qs is Moreau's midpoint rule for the impulsive part:
an elastic rebound is then not delayed (without it, projecting qt itself puts the body on the
constraint at t_{k+1} and delays every rebound by up to one step, always the same way:
fitted orders of the Hausdorff velocity distance 0.77-0.78; with it, phase-averaged orders of
the position error 0.97-1.01 on the ball and the slanted wall, tests).

Energy (constant M and F, the falling ball, U_k = -V < 0, q_k = d >= 0): qt = d - hV - h^2 g/2,
v_{k+1} = eV, qs = d - (1 - e) hV/2, q_{k+1} = max(0, qs), so E_{k+1} - E_k = -(1 - e^2) V^2/2
- g (d - q_{k+1}) <= 0, and = 0 for e = 1 when qs >= 0; free flight is exact. The tests
measure E at every step over the impacts of the ball and of the slanted wall (non-diagonal M);
no general discrete energy inequality is claimed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from impactbench.core import _checks
from impactbench.core.contact import (
    DEGENERATE_GRADIENT,
    affine_projection_step,
    all_finite,
    factor_mass,
    impulse,
    impulse_single,
    impulse_span,
    make_metric_projection,
    metric_row,
    solve_mass,
)
from impactbench.core.driver import (
    FIRST_SCHEME_ROW,
    IMPULSE,
    NEXT_Q,
    NEXT_V,
    NORMAL_AFTER,
    NORMAL_BEFORE,
    Scheme,
    make_loop,
)
from impactbench.core.mass import mass_bindings
from impactbench.core.problem import ProblemKernels
from impactbench.core.status_codes import (
    FAILURE_REASONS,
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
)
from impactbench.core.timestepping import TimeStepping

#: The fixed-point iteration of the smooth part did not converge within ``iteration_max``.
STATUS_ITERATION_NOT_CONVERGED = 100

# Names bound per problem by impactbench.core.driver.make_loop.
mass_matrix = forces = gap = gap_gradient = project = matrix_rows = None
CONSTANT_MASS = AFFINE_GAP = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = MASS_ROWS = 0

#: Relative size below which a change of the smooth (qt, vt) is round-off (4 eps).
_ROUND_OFF = 4.0 * float(np.finfo(float).eps)
#: Relative move of qt within which an iteration that stopped contracting is at its round-off
#: floor (1000 eps).
_STAGNATION = 1000.0 * float(np.finfo(float).eps)

# Entries of the method vector mp.
_ALPHA_M, _ALPHA_F, _GAMMA, _BETA, _ITER_TOL, _ITER_MAX, _PROJ_TOL, _PROJ_MAX = range(8)

# The scheme's rows of the driver's buffer X (impactbench.core.driver): vectors of length n or m,
# then M, its factor, G = grad g and Y = M^-1 G^T (rows), then two scalars (1 / Delassus number
# and whether it is ready).
_Q, _V, _A, _VDOT, _BASE_Q, _BASE_V, _F, _VDOT_NEW, _A_NEW, _QT, _VT, _V1, _X, _DX, _GAP = range(
    FIRST_SCHEME_ROW, FIRST_SCHEME_ROW + 15
)
_MATRICES = FIRST_SCHEME_ROW + 15


def _rows(n: int, m: int, mass_rows: int) -> int:
    return 15 + 2 * mass_rows + 2 * m + 3  # the last row: the active set's flags


def _start(t0, h, q0, v0, p, e, mp, X, rows, ws):  # noqa: N803
    """q, v from (q0, v0); a_0 = vdot_0 = M(q0)^-1 F(t0, q0, v0)."""
    n = N_DOF
    m = N_CONSTRAINTS
    r = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + r)  # noqa: N806
    L = matrix_rows(X, _MATRICES + r, _MATRICES + 2 * r)  # noqa: N806
    f = X[_F, :n]
    vdot = X[_VDOT, :n]
    X[_MATRICES + 2 * r + 2 * m + 1, 0] = 0.0  # the metric row is not ready
    for j in range(n):
        X[_Q, j] = q0[j]
        X[_V, j] = v0[j]
    mass_matrix(q0, p, M)
    if not factor_mass(M, n, L):
        return STATUS_MASS_NOT_SPD, 0, 1
    forces(t0, q0, v0, p, f)
    solve_mass(L, n, f, vdot)
    for j in range(n):
        X[_A, j] = vdot[j]
    return STATUS_OK, 0, 1


def _step(k, t, t_next, h, p, e, mp, X, Z, rows, ws):  # noqa: N803
    n = N_DOF
    m = N_CONSTRAINTS
    alpha_m = mp[_ALPHA_M]
    alpha_f = mp[_ALPHA_F]
    gamma = mp[_GAMMA]
    beta = mp[_BETA]
    h2_beta = h * h * beta
    h_gamma = h * gamma
    # a_{k+1} = c_new vdot_{k+1} + c_old vdot_k - c_a a_k
    inv_1m = 1.0 / (1.0 - alpha_m)
    c_new = (1.0 - alpha_f) * inv_1m
    c_old = alpha_f * inv_1m
    c_a = alpha_m * inv_1m
    q = X[_Q, :n]
    v = X[_V, :n]
    a = X[_A, :n]
    vdot = X[_VDOT, :n]
    base_q = X[_BASE_Q, :n]
    base_v = X[_BASE_V, :n]
    f = X[_F, :n]
    vdot_new = X[_VDOT_NEW, :n]
    a_new = X[_A_NEW, :n]
    qt = X[_QT, :n]
    vt = X[_VT, :n]
    v1 = X[_V1, :n]
    x = X[_X, :n]
    dx = X[_DX, :n]
    g = X[_GAP, :m]
    r = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + r)  # noqa: N806
    L = matrix_rows(X, _MATRICES + r, _MATRICES + 2 * r)  # noqa: N806
    G = matrix_rows(X, _MATRICES + 2 * r, _MATRICES + 2 * r + m)  # noqa: N806
    Y = matrix_rows(X, _MATRICES + 2 * r + m, _MATRICES + 2 * r + 2 * m)  # noqa: N806
    inv_w_row = _MATRICES + 2 * r + 2 * m
    for j in range(n):
        base_q[j] = q[j] + h * v[j] + (0.5 - beta) * h * h * a[j]
        base_v[j] = v[j] + (1.0 - gamma) * h * a[j]
        a_new[j] = a[j]
    tol = mp[_ITER_TOL]
    converged = False
    evaluated = 0  # force evaluations of the fixed point
    previous = np.inf  # the last change
    shrunk = False  # the change has decreased once
    for _ in range(int(mp[_ITER_MAX])):
        for j in range(n):
            qt[j] = base_q[j] + h2_beta * a_new[j]
            vt[j] = base_v[j] + h_gamma * a_new[j]
        if not CONSTANT_MASS:
            mass_matrix(qt, p, M)
            if not factor_mass(M, n, L):
                return STATUS_MASS_NOT_SPD, False, 0, 0
        forces(t_next, qt, vt, p, f)
        evaluated += 1
        solve_mass(L, n, f, vdot_new)
        change = 0.0
        size = 0.0
        q_size = 0.0
        v_size = 0.0
        for j in range(n):
            aj = c_new * vdot_new[j] + c_old * vdot[j] - c_a * a[j]
            change = max(change, abs(aj - a_new[j]))
            size = max(size, abs(aj))
            q_size = max(q_size, abs(qt[j]))
            v_size = max(v_size, abs(vt[j]))
            a_new[j] = aj
        # converged, or the update no longer moves (qt, vt) beyond round-off (a near 0 from
        # forces that cancel: the relative test alone would then never pass)
        if change <= tol * size or (
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
        return STATUS_ITERATION_NOT_CONVERGED, False, 0, 0
    for j in range(n):
        qt[j] = base_q[j] + h2_beta * a_new[j]
        vt[j] = base_v[j] + h_gamma * a_new[j]
    gap(qt, p, g)
    closed = False
    for i in range(m):
        if g[i] <= 0.0:
            closed = True
        elif not g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
            return STATUS_GAP_NOT_FINITE, False, 0, 0
    active = 0
    used = 0
    if closed:
        gap_gradient(qt, p, G)
        if not all_finite(G, m, n):
            return STATUS_GAP_NOT_FINITE, False, 0, 0
        flags = X[inv_w_row + 2, :m]
        for i in range(m):
            flags[i] = 1.0 if g[i] <= 0.0 else 0.0
        qs = base_q  # base_q is free now
        # activation (module docstring): a constraint that qs leaves joins the active set and
        # the impulse is solved again (at most m times; qt and vt do not change)
        for _ in range(m + 1):
            active = 0
            for i in range(m):
                if flags[i] > 0.0:
                    rows[active] = i
                    active += 1
            # velocity level: Newton's law on the active set
            if SINGLE_CONSTRAINT:  # compile-time constant: no LCP compiled in
                if not (CONSTANT_MASS and AFFINE_GAP and X[inv_w_row + 1, 0] > 0.0):
                    X[inv_w_row, 0] = metric_row(n, G, 0, L, Y)
                    X[inv_w_row + 1, 0] = 1.0
                pivots = impulse_single(n, G, 0, vt, v, e, Y, X[inv_w_row, 0], X[IMPULSE], v1)
            else:
                pivots = impulse(n, G, rows, active, vt, v, e, L, ws, v1)
                for i in range(m):
                    X[IMPULSE, i] = 0.0
                for b in range(active):
                    X[IMPULSE, rows[b]] = ws[4][b]
            if pivots == DEGENERATE_GRADIENT:
                return STATUS_DEGENERATE_GRADIENT, False, 0, 0
            if pivots < 0:
                return STATUS_CONTACT_SOLVE_FAILED, False, 0, 0
            used += pivots
            for b in range(active):
                i = rows[b]
                before = 0.0
                after = 0.0
                first, last = 0, n - 1
                # compile-time: the spans pay on long rows; on one-DOF problems the lookup alone
                # costs more than it saves
                if not SINGLE_CONSTRAINT and N_DOF >= 8:
                    first, last = impulse_span(ws, active, b, n)
                for j in range(first, last + 1):
                    before += G[i, j] * v[j]
                    after += G[i, j] * v1[j]
                X[NORMAL_BEFORE, i] = before
                X[NORMAL_AFTER, i] = after
            # the jump acts from mid-step: qs = qt + (h/2) (v_{k+1} - vt)
            for j in range(n):
                qs[j] = qt[j] + 0.5 * h * (v1[j] - vt[j])
            gap(qs, p, g)
            added = False
            if not SINGLE_CONSTRAINT:  # compile-time constant: one constraint is active already
                for i in range(m):
                    if g[i] < 0.0 and not flags[i] > 0.0:
                        flags[i] = 1.0
                        added = True
            if not added:
                break
        # position level: q_{k+1} = Proj_K^M(qs) (overwrites g, G and the workspace)
        projected = 0
        if AFFINE_GAP and SINGLE_CONSTRAINT:  # compile-time constants: closed form
            if g[0] < 0.0:
                projected = affine_projection_step(n, g[0], Y, X[inv_w_row, 0], ws[4], dx)
            else:
                for j in range(n):
                    dx[j] = 0.0
        else:
            projected = project(qs, n, m, p, mp[_PROJ_TOL], int(mp[_PROJ_MAX]), M, L, x, g, G, ws)
            for j in range(n):
                dx[j] = x[j] - qs[j]
        if projected == DEGENERATE_GRADIENT:
            return STATUS_DEGENERATE_GRADIENT, False, 0, 0
        if projected < 0:
            return STATUS_PROJECTION_NOT_CONVERGED, False, 0, 0
        used += projected
    for j in range(n):
        if active > 0:
            Z[NEXT_Q, j] = base_q[j] + dx[j]
            Z[NEXT_V, j] = v1[j]
        else:
            Z[NEXT_Q, j] = qt[j]
            Z[NEXT_V, j] = vt[j]
    return STATUS_OK, active > 0, used, evaluated


def _commit(X, Z):  # noqa: N803
    for j in range(N_DOF):
        X[_Q, j] = Z[NEXT_Q, j]
        X[_V, j] = Z[NEXT_V, j]
        X[_A, j] = X[_A_NEW, j]
        X[_VDOT, j] = X[_VDOT_NEW, j]


def _state(X, Z, q_out, v_out):  # noqa: N803
    for j in range(N_DOF):
        q_out[j] = X[_Q, j]
        v_out[j] = X[_V, j]


#: The nonsmooth generalized-alpha scheme as the one time loop runs it (impactbench.core.driver).
GENERALIZED_ALPHA_SCHEME = Scheme(
    start=_start, step=_step, commit=_commit, sample=_state, current=_state, rows=_rows
)


def _bindings(
    kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
) -> dict[str, Any]:
    """Globals of the scheme's functions for one problem."""
    mass = mass_bindings(kernels, n_dof, compile)
    return {
        **mass,
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "project": make_metric_projection(
            kernels.gap,
            kernels.gap_gradient,
            kernels.affine_gap,
            n_constraints,
            compile,
            mass["DIAGONAL_MASS"],
        ),
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
    }


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
    rho = _checks.finite_scalar(rho_inf, "rho_inf")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho_inf must lie in [0, 1], got {rho_inf!r}")
    alpha_m = (2.0 * rho - 1.0) / (rho + 1.0)
    alpha_f = rho / (rho + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    beta = 0.25 * (0.5 + gamma) ** 2
    return alpha_m, alpha_f, gamma, beta


class NonsmoothGeneralizedAlpha(TimeStepping):
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
    """

    failure_reasons: ClassVar[dict[int, str]] = {
        **FAILURE_REASONS,
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
        super().__init__(**options)
        self.alpha_m, self.alpha_f, self.gamma, self.beta = generalized_alpha_parameters(rho_inf)
        self.rho_inf = float(rho_inf)
        self.iteration_tol = _checks.positive_scalar(iteration_tol, "iteration_tol")
        self.iteration_max = _checks.positive_int(iteration_max, "iteration_max")
        self.projection_tol = _checks.positive_scalar(projection_tol, "projection_tol")
        self.projection_max_iter = _checks.positive_int(projection_max_iter, "projection_max_iter")

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        bindings = _bindings(kernels, n_dof, n_constraints, compile)
        return make_loop(GENERALIZED_ALPHA_SCHEME, bindings, n_dof, n_constraints, compile)

    def _method_vector(self) -> np.ndarray:
        return np.array(
            [
                self.alpha_m,
                self.alpha_f,
                self.gamma,
                self.beta,
                self.iteration_tol,
                float(self.iteration_max),
                self.projection_tol,
                float(self.projection_max_iter),
            ]
        )
