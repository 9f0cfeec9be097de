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
  the next impulse never takes back, and the depth grows linearly in time without bound
  (measured: ball e = 0.9, h = 5e-3, 0.12 deep at t = 100 and 1.3 at t = 1000). Kept to study
  that trade-off (``persistent_contact`` study).

Energy (constant M and F, E = v^T M v / 2 - F^T q). For theta = 1/2 and for the catching-up
scheme's conserved quantity E - (h/2) F^T v, the change over a step is exactly

    Delta = (1/2) P^T (U_{k+1} + U_k) = ((1 - e)/2) P^T U_k      (Newton law: P_i U_{k+1,i} =
                                                                  -e P_i U_{k,i}),

so it is <= 0 on every step whose active contacts approach (U_k <= 0: every real impact), and
positive only on a step where a separating contact (U_k > 0) still sits inside K and receives an
impulse; there U_k and P are O(h |F|), so the increase is O(h^2) (measured in
tests/test_energy.py over long resting runs). With the ``"approaching"`` rule that case never
occurs and the energy never increases, at the price of the drift above.

* :class:`MoreauJean` (theta-scheme): q_p = q_k + theta h v_k, t_p = t_k + theta h,
  q_{k+1} = q_k + h ((1 - theta) v_k + theta v_{k+1}). theta = 1/2 is Moreau's midpoint
  (drift-kick-drift) scheme: second order in smooth phases when F does not depend on v, first
  order with impacts; it conserves the energy exactly for constant M and F between impacts.
* :class:`CatchingUp` (Dzonou, Monteiro Marques, Paoli, Nonlinear Dyn. 58 (2009) 361-384): the
  position-first variant, q_{k+1} = q_k + h v_k, then the velocity update with q_p = q_{k+1},
  t_p = t_{k+1}. Smooth phases are symplectic Euler (first order); for constant M and F its
  conserved discrete energy is E - (h/2) F^T v, so the mechanical energy itself oscillates by O(h).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from impactbench.core import _checks
from impactbench.core.contact import (
    DEGENERATE_GRADIENT,
    all_finite,
    factor_mass,
    impulse,
    impulse_single,
    impulse_span,
    metric_row,
    solve_mass,
)
from impactbench.core.divergence import declared_stable_step, theta_scheme_limit
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
from impactbench.core.problem import Problem, ProblemKernels
from impactbench.core.status_codes import (
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
)
from impactbench.core.timestepping import TimeStepping

# Names bound per problem by impactbench.core.driver.make_loop.
mass_matrix = forces = gap = gap_gradient = matrix_rows = None
CONSTANT_MASS = AFFINE_GAP = POSITION_FIRST = SINGLE_CONSTRAINT = APPROACHING_ONLY = False
# True for moreau_jean_projection's velocity step: the constraints flagged in the row of X after
# this scheme's rows are active whatever g_i(q_p) (that module's docstring, "Activation").
FORCED = False
N_DOF = N_CONSTRAINTS = MASS_ROWS = 0

# The scheme's rows of the driver's buffer X (impactbench.core.driver): vectors of length n or m,
# then the matrices M, its factor L (MASS_ROWS rows each), G = grad g and Y = M^-1 G^T (rows),
# then two scalars.
_Q, _V, _QP, _F, _ACC, _VFREE, _V1, _GAP = range(FIRST_SCHEME_ROW, FIRST_SCHEME_ROW + 8)
_MATRICES = FIRST_SCHEME_ROW + 8


def _rows(n: int, m: int, mass_rows: int) -> int:
    return 8 + 2 * mass_rows + 2 * m + 2


def _start(t0, h, q0, v0, p, e, mp, X, rows, ws):  # noqa: N803
    for j in range(N_DOF):
        X[_Q, j] = q0[j]
        X[_V, j] = v0[j]
    X[_MATRICES + 2 * MASS_ROWS + 2 * N_CONSTRAINTS + 1, 0] = 0.0  # the metric row is not ready
    return STATUS_OK, 0, 0


def _step(k, t, t_next, h, p, e, mp, X, Z, rows, ws):  # noqa: N803
    n = N_DOF
    m = N_CONSTRAINTS
    h_theta = h * mp[0]
    h_rest = h - h_theta
    q = X[_Q, :n]
    v = X[_V, :n]
    qp = X[_QP, :n]
    f = X[_F, :n]
    acc = X[_ACC, :n]
    vfree = X[_VFREE, :n]
    v1 = X[_V1, :n]
    g = X[_GAP, :m]
    r = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + r)  # noqa: N806
    L = matrix_rows(X, _MATRICES + r, _MATRICES + 2 * r)  # noqa: N806
    G = matrix_rows(X, _MATRICES + 2 * r, _MATRICES + 2 * r + m)  # noqa: N806
    Y = matrix_rows(X, _MATRICES + 2 * r + m, _MATRICES + 2 * r + 2 * m)  # noqa: N806
    inv_w_row = _MATRICES + 2 * r + 2 * m
    if POSITION_FIRST:
        for j in range(n):
            qp[j] = q[j] + h * v[j]
        tp = t + h
    else:
        for j in range(n):
            qp[j] = q[j] + h_theta * v[j]
        tp = t + h_theta
    if k == 0 or not CONSTANT_MASS:
        mass_matrix(qp, p, M)
        if not factor_mass(M, n, L):
            return STATUS_MASS_NOT_SPD, False, 0, 0
    forces(tp, qp, v, p, f)
    solve_mass(L, n, f, acc)
    gap(qp, p, g)
    forced_row = _MATRICES + 2 * r + 2 * m + 2  # the first row after this scheme's (FORCED)
    closed = False
    for i in range(m):
        if g[i] <= 0.0:
            closed = True
        elif not g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
            return STATUS_GAP_NOT_FINITE, False, 0, 0
        elif FORCED and X[forced_row, i] > 0.0:  # compile-time constant: projection only
            closed = True
    active = 0
    if closed:
        gap_gradient(qp, p, G)
        if not all_finite(G, m, n):
            return STATUS_GAP_NOT_FINITE, False, 0, 0
        for i in range(m):
            if g[i] <= 0.0 or (FORCED and X[forced_row, i] > 0.0):
                if APPROACHING_ONLY:  # compile-time constant: the non-default rule
                    u = 0.0
                    for j in range(n):
                        u += G[i, j] * v[j]
                    if u <= 0.0:
                        rows[active] = i
                        active += 1
                else:
                    rows[active] = i
                    active += 1
    used = 0
    if active > 0:
        for j in range(n):
            vfree[j] = v[j] + h * acc[j]
        if SINGLE_CONSTRAINT:  # compile-time constant: no LCP compiled in
            if not (CONSTANT_MASS and AFFINE_GAP and X[inv_w_row + 1, 0] > 0.0):
                X[inv_w_row, 0] = metric_row(n, G, 0, L, Y)
                X[inv_w_row + 1, 0] = 1.0
            used = impulse_single(n, G, 0, vfree, v, e, Y, X[inv_w_row, 0], X[IMPULSE], v1)
        else:
            used = impulse(n, G, rows, active, vfree, v, e, L, ws, v1)
            for i in range(m):
                X[IMPULSE, i] = 0.0
            for a in range(active):
                X[IMPULSE, rows[a]] = ws[4][a]
        if used == DEGENERATE_GRADIENT:
            return STATUS_DEGENERATE_GRADIENT, False, 0, 0
        if used < 0:
            return STATUS_CONTACT_SOLVE_FAILED, False, 0, 0
        for a in range(active):
            i = rows[a]
            before = 0.0
            after = 0.0
            first, last = (0, n - 1) if SINGLE_CONSTRAINT else impulse_span(ws, active, a, n)
            for j in range(first, last + 1):
                before += G[i, j] * v[j]
                after += G[i, j] * v1[j]
            X[NORMAL_BEFORE, i] = before
            X[NORMAL_AFTER, i] = after
    for j in range(n):
        vj = v[j]
        vn = v1[j] if active > 0 else vj + h * acc[j]
        if POSITION_FIRST:
            Z[NEXT_Q, j] = qp[j]
        else:
            # q_k + h (1 - theta) v_k is ready before v_{k+1}: one multiply-add after it
            Z[NEXT_Q, j] = (q[j] + h_rest * vj) + h_theta * vn
        Z[NEXT_V, j] = vn
    return STATUS_OK, active > 0, used, 1


def _commit(X, Z):  # noqa: N803
    for j in range(N_DOF):
        X[_Q, j] = Z[NEXT_Q, j]
        X[_V, j] = Z[NEXT_V, j]


def _state(X, Z, q_out, v_out):  # noqa: N803
    for j in range(N_DOF):
        q_out[j] = X[_Q, j]
        v_out[j] = X[_V, j]


#: Moreau's velocity schemes as the one time loop runs them (impactbench.core.driver).
VELOCITY_SCHEME = Scheme(
    start=_start, step=_step, commit=_commit, sample=_state, current=_state, rows=_rows
)


def _bindings(
    kernels: ProblemKernels, n_dof: int, compile: bool, position_first: bool, activation: str
) -> dict[str, Any]:
    """Globals of the scheme's functions for one problem and one set of options."""
    return {
        **mass_bindings(kernels, n_dof, compile),
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
        "POSITION_FIRST": position_first,
        "APPROACHING_ONLY": activation == "approaching",
        "FORCED": False,
    }


#: The activation rules of the velocity schemes (see the module docstring).
ACTIVATION_RULES = ("position", "approaching")


def _activation(value: Any) -> str:
    if value not in ACTIVATION_RULES:
        raise ValueError(f"activation must be one of {ACTIVATION_RULES}, got {value!r}")
    return value


class MoreauJean(TimeStepping):
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
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    Velocity-dependent forces are evaluated at v_k (explicit), which keeps order 2 only for
    forces independent of v. See the module docstring for the energy balance.
    """

    def __init__(self, theta: float = 0.5, activation: str = "position", **options: Any) -> None:
        super().__init__(**options)
        self.theta = _checks.finite_scalar(theta, "theta")
        if not 0.0 < self.theta <= 1.0:
            raise ValueError(f"theta must lie in (0, 1], got {theta!r}")
        self.activation = _activation(activation)

    def _loop_options(self) -> dict[str, Any]:
        return {"activation": self.activation}

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        bindings = _bindings(kernels, n_dof, compile, False, options["activation"])
        return make_loop(VELOCITY_SCHEME, bindings, n_dof, n_constraints, compile)

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step / sqrt(4 theta - 1)`` for theta >= 1/2, None below
        (:func:`impactbench.core.divergence.theta_scheme_limit`)."""
        return theta_scheme_limit(problem, self.theta)

    def _method_vector(self) -> np.ndarray:
        return np.array([self.theta])


class CatchingUp(TimeStepping):
    """Position-first catching-up scheme of Dzonou, Monteiro Marques and Paoli (2009).

    q_{k+1} = q_k + h v_k, then v_{k+1} = -e v_k + (1 + e) Proj_{M(q_{k+1})}(V, v_k + h M^-1 F /
    (1 + e)) with V = {w : G_A w >= 0} over the active constraints A (g_i(q_{k+1}) <= 0, and
    approaching with ``activation="approaching"``) - computed in the equivalent impulse form of
    the module docstring.

    Parameters
    ----------
    activation : {"position", "approaching"}
        As for :class:`MoreauJean`; "position" (default) is the published scheme.
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.
    """

    def __init__(self, activation: str = "position", **options: Any) -> None:
        super().__init__(**options)
        self.activation = _activation(activation)

    def _loop_options(self) -> dict[str, Any]:
        return {"activation": self.activation}

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        bindings = _bindings(kernels, n_dof, compile, True, options["activation"])
        return make_loop(VELOCITY_SCHEME, bindings, n_dof, n_constraints, compile)

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step`` (2 / omega_max): the smooth part is symplectic Euler,
        stable iff h omega_max <= 2 (:mod:`impactbench.core.divergence`)."""
        return declared_stable_step(problem)

    def _method_vector(self) -> np.ndarray:
        return np.zeros(1)
