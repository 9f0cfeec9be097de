"""The Paoli-Schatzman two-step position scheme (SIAM J. Numer. Anal. 40 (2002) 702-733, 734-768).

With q^{k-1}, q^k known (docs/design.md section 5):

    z       = 2 q^k - q^{k-1} + h^2 M(q^k)^-1 F(t_k, q^k, vt_k)
    q^{k+1} = -e q^{k-1} + (1 + e) Proj_K^{M(q^k)}( (z + e q^{k-1}) / (1 + e) )

where Proj_K^M is the projection onto K = {g >= 0} in the norm |x|_M^2 = x^T M x, computed by the
shared :func:`impactbench.core.contact.make_metric_projection` (Newton/SQP on the KKT system, the
LCP for several constraints; exact in one iteration for an affine gap). In 1-D this is
q^{k+1} = -e q^{k-1} + (1+e) max(0, (2q^k - (1-e) q^{k-1} + h^2 f^k)/(1+e)).

Choices stated here:

* start: q^1 = Proj_K^{M(q^0)}(q^0 + h v^0 + h^2/2 M^-1 F(t_0, q^0, v^0)) (second-order Taylor step
  projected onto K; the Siconos start q^0 + h v^0 is only first order);
* velocity inside F: vt_1 = v^0 + h M^-1 F(t_0, q^0, v^0), then the explicit second-order
  one-sided difference vt_k = (3 q^k - 4 q^{k-1} + q^{k-2}) / (2h) for k >= 2, so a
  velocity-dependent force keeps the smooth-phase order 2 (Stormer-Verlet when F does not depend
  on v);
* output velocity: v_k = (q^{k+1} - q^{k-1}) / (2h) (so one extra position q^{N+1} is computed);
* impact log: a step whose predictor leaves K records, for each constraint with a positive
  multiplier, the time t_k and the normal velocities (q^k - q^{k-1})/h and (q^{k+1} - q^k)/h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from impactbench.core import _checks
from impactbench.core.contact import (
    DEGENERATE_GRADIENT,
    affine_projection_step,
    factor_mass,
    make_metric_projection,
    metric_row,
    solve_mass,
)
from impactbench.core.divergence import declared_stable_step
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
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
)
from impactbench.core.timestepping import TimeStepping

# Names bound per problem by impactbench.core.driver.make_loop.
mass_matrix = forces = gap = gap_gradient = project = matrix_rows = None
CONSTANT_MASS = AFFINE_GAP = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = MASS_ROWS = 0

# The scheme's rows of the driver's buffer X (impactbench.core.driver): q^{k-2}, q^{k-1}, q^k, the
# velocity inside F, vectors of length n or m, then M, its factor, G = grad g and Y = M^-1 G^T
# (rows), then two scalars (1 / Delassus number and whether it is ready).
_Q_OLD, _Q_PREV, _Q, _VT, _F, _ACC, _Y, _X, _DX, _GAP = range(
    FIRST_SCHEME_ROW, FIRST_SCHEME_ROW + 10
)
_MATRICES = FIRST_SCHEME_ROW + 10


def _rows(n: int, m: int, mass_rows: int) -> int:
    return 10 + 2 * mass_rows + 2 * m + 2


def _start(t0, h, q0, v0, p, e, mp, X, rows, ws):  # noqa: N803
    """q^1 = Proj(q^0 + h v^0 + h^2/2 a^0), vt_1 = v^0 + h a^0."""
    n = N_DOF
    m = N_CONSTRAINTS
    q = X[_Q, :n]
    vt = X[_VT, :n]
    f = X[_F, :n]
    acc = X[_ACC, :n]
    y = X[_Y, :n]
    g = X[_GAP, :m]
    r = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + r)  # noqa: N806
    L = matrix_rows(X, _MATRICES + r, _MATRICES + 2 * r)  # noqa: N806
    G = matrix_rows(X, _MATRICES + 2 * r, _MATRICES + 2 * r + m)  # noqa: N806
    X[_MATRICES + 2 * r + 2 * m + 1, 0] = 0.0  # the metric row is not ready
    for j in range(n):
        X[_Q_PREV, j] = q0[j]
    mass_matrix(q0, p, M)
    if not factor_mass(M, n, L):
        return STATUS_MASS_NOT_SPD, 0, 1
    forces(t0, q0, v0, p, f)
    solve_mass(L, n, f, acc)
    for j in range(n):
        y[j] = q0[j] + h * v0[j] + 0.5 * h * h * acc[j]
        vt[j] = v0[j] + h * acc[j]
    used = project(y, n, m, p, mp[0], int(mp[1]), M, L, q, g, G, ws)
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT, 0, 1
    if used < 0:
        return STATUS_PROJECTION_NOT_CONVERGED, 0, 1
    return STATUS_OK, used, 1


def _step(k, t, t_next, h, p, e, mp, X, Z, rows, ws):  # noqa: N803
    """q^{k+2} from q^{k+1}, q^k (the driver's step k computes the scheme's step k + 1)."""
    n = N_DOF
    m = N_CONSTRAINTS
    h2 = h * h
    inv_h = 1.0 / h  # multiplications by reciprocals: no division in the step
    half_inv_h = 0.5 * inv_h
    one_pe = 1.0 + e
    inv_1pe = 1.0 / one_pe
    two_inv_1pe = 2.0 * inv_1pe
    q_old = X[_Q_OLD, :n]  # q^{k-2}
    q_prev = X[_Q_PREV, :n]  # q^{k-1}
    q = X[_Q, :n]  # q^k
    vt = X[_VT, :n]
    f = X[_F, :n]
    acc = X[_ACC, :n]
    y = X[_Y, :n]
    x = X[_X, :n]
    dx = X[_DX, :n]
    g = X[_GAP, :m]
    r = MASS_ROWS
    M = matrix_rows(X, _MATRICES, _MATRICES + r)  # noqa: N806
    L = matrix_rows(X, _MATRICES + r, _MATRICES + 2 * r)  # noqa: N806
    G = matrix_rows(X, _MATRICES + 2 * r, _MATRICES + 2 * r + m)  # noqa: N806
    Y = matrix_rows(X, _MATRICES + 2 * r + m, _MATRICES + 2 * r + 2 * m)  # noqa: N806
    inv_w_row = _MATRICES + 2 * r + 2 * m
    tk = t_next
    if k >= 1:
        for j in range(n):
            vt[j] = (3.0 * q[j] - 4.0 * q_prev[j] + q_old[j]) * half_inv_h
    if not CONSTANT_MASS:
        mass_matrix(q, p, M)
        if not factor_mass(M, n, L):
            return STATUS_MASS_NOT_SPD, False, 0, 0
    forces(tk, q, vt, p, f)
    solve_mass(L, n, f, acc)
    for j in range(n):
        # y = (z + e q^{k-1}) / (1 + e) with z = 2 q^k - q^{k-1} + h^2 M^-1 F, written so that
        # q^k (the loop-carried value) enters through one multiply-add
        y[j] = two_inv_1pe * q[j] + (h2 * acc[j] - (1.0 - e) * q_prev[j]) * inv_1pe
    gap(y, p, g)
    admissible = True
    for i in range(m):
        if g[i] < 0.0:
            admissible = False
        elif not g[i] >= 0.0:  # NaN is neither inside nor outside K: a failure
            return STATUS_GAP_NOT_FINITE, False, 0, 0
    used = 0
    if not admissible:
        if AFFINE_GAP and SINGLE_CONSTRAINT:  # compile-time constants: closed form
            if not (CONSTANT_MASS and X[inv_w_row + 1, 0] > 0.0):
                gap_gradient(y, p, G)
                grad_check = 0.0
                for j in range(n):
                    grad_check += G[0, j]
                if not np.isfinite(grad_check):
                    return STATUS_GAP_NOT_FINITE, False, 0, 0
                X[inv_w_row, 0] = metric_row(n, G, 0, L, Y)
                X[inv_w_row + 1, 0] = 1.0
            used = affine_projection_step(n, g[0], Y, X[inv_w_row, 0], X[IMPULSE], dx)
        else:
            used = project(y, n, m, p, mp[0], int(mp[1]), M, L, x, g, G, ws)
            for j in range(n):
                dx[j] = x[j] - y[j]
            for i in range(m):
                X[IMPULSE, i] = ws[4][i]
        if used == DEGENERATE_GRADIENT:
            return STATUS_DEGENERATE_GRADIENT, False, 0, 0
        if used < 0:
            return STATUS_PROJECTION_NOT_CONVERGED, False, 0, 0
    # q^{k+1} = -e q^{k-1} + (1 + e) x = z + (1 + e) dx (dx = x - y = 0 when y is admissible)
    for j in range(n):
        q_next = 2.0 * q[j] + (h2 * acc[j] - q_prev[j])
        if used > 0:
            q_next += one_pe * dx[j]
        Z[NEXT_Q, j] = q_next
        Z[NEXT_V, j] = (q_next - q_prev[j]) * half_inv_h  # the output velocity at t_k
    if used > 0:
        for i in range(m):
            if X[IMPULSE, i] > 0.0:
                before = 0.0
                after = 0.0
                for j in range(n):
                    before += G[i, j] * (q[j] - q_prev[j]) * inv_h
                    after += G[i, j] * (Z[NEXT_Q, j] - q[j]) * inv_h
                X[NORMAL_BEFORE, i] = before
                X[NORMAL_AFTER, i] = after
    return STATUS_OK, used > 0, used, 1


def _commit(X, Z):  # noqa: N803
    """(q^{k-2}, q^{k-1}, q^k) <- (q^{k-1}, q^k, q^{k+1})."""
    for j in range(N_DOF):
        X[_Q_OLD, j] = X[_Q_PREV, j]
        X[_Q_PREV, j] = X[_Q, j]
        X[_Q, j] = Z[NEXT_Q, j]


def _sample(X, Z, q_out, v_out):  # noqa: N803
    """q^k and the central difference (q^{k+1} - q^{k-1}) / (2h) after a commit."""
    for j in range(N_DOF):
        q_out[j] = X[_Q_PREV, j]
        v_out[j] = Z[NEXT_V, j]


def _current(X, Z, q_out, v_out):  # noqa: N803
    """At a failed step: q^k and the velocity inside F, at t_k (one step after the sample)."""
    for j in range(N_DOF):
        q_out[j] = X[_Q, j]
        v_out[j] = X[_VT, j]


#: The Paoli-Schatzman scheme as the one time loop runs it (impactbench.core.driver).
PAOLI_SCHATZMAN = Scheme(
    start=_start,
    step=_step,
    commit=_commit,
    sample=_sample,
    current=_current,
    rows=_rows,
    lead=1,
)


def make_paoli_schatzman_loop(
    kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
) -> Callable:
    """Time loop of the Paoli-Schatzman scheme for the given problem kernels."""
    mass = mass_bindings(kernels, n_dof, compile)
    bindings = {
        **mass,
        "forces": kernels.forces,
        "project": make_metric_projection(
            kernels.gap,
            kernels.gap_gradient,
            kernels.affine_gap,
            n_constraints,
            compile,
            mass["DIAGONAL_MASS"],
        ),
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
    }
    return make_loop(PAOLI_SCHATZMAN, bindings, n_dof, n_constraints, compile)


class PaoliSchatzman(TimeStepping):
    """Paoli-Schatzman two-step scheme with the projection in the kinetic metric M(q^k).

    Parameters
    ----------
    projection_tol : float
        Relative tolerance of the metric projection for a nonlinear gap (ignored for an affine
        gap, where it is exact).
    projection_max_iter : int
        Iteration limit of that projection; reaching it stops the run with an error.
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.
    """

    velocity_output: ClassVar[str] = "central difference (q^{k+1} - q^{k-1}) / (2h)"

    def __init__(
        self, projection_tol: float = 1e-14, projection_max_iter: int = 50, **options: Any
    ) -> None:
        super().__init__(**options)
        self.projection_tol = _checks.positive_scalar(projection_tol, "projection_tol")
        self.projection_max_iter = _checks.positive_int(projection_max_iter, "projection_max_iter")

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        return make_paoli_schatzman_loop(kernels, n_dof, n_constraints, compile)

    def step_limit(self, problem: Problem) -> float | None:
        """``problem.stable_step`` (2 / omega_max): the smooth part is the central difference,
        stable iff h omega_max <= 2 (:mod:`impactbench.core.divergence`)."""
        return declared_stable_step(problem)

    def _method_vector(self) -> np.ndarray:
        return np.array([self.projection_tol, float(self.projection_max_iter)])
