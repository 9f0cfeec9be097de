"""The Paoli-Schatzman two-step position scheme (SIAM J. Numer. Anal. 40 (2002) 702-733, 734-768).

With q^{k-1}, q^k known (DESIGN.md section 5):

    z       = 2 q^k - q^{k-1} + h^2 M(q^k)^-1 F(t_k, q^k, vt_k)
    q^{k+1} = -e q^{k-1} + (1 + e) Proj_K^{M(q^k)}( (z + e q^{k-1}) / (1 + e) )

where Proj_K^M is the projection onto K = {g >= 0} in the norm |x|_M^2 = x^T M x, computed by the
shared :func:`impactbench.contact.make_metric_projection` (Newton/SQP on the KKT system, the
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

from typing import Any, ClassVar

import numpy as np

from impactbench import TimeStepping, _checks
from impactbench.contact import (
    DEGENERATE_GRADIENT,
    affine_projection_step,
    ldl_factor,
    ldl_solve,
    metric_projection_template,
    metric_row,
)
from impactbench.problem import ProblemKernels
from impactbench.status_codes import (
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_NOT_FINITE,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
    log_impact,
)
from impactbench.time_loop import Scheme

# Names bound per problem by impactbench.time_loop.make_time_loop (see _paoli_schatzman_scheme).
mass_matrix = forces = gap = gap_gradient = project = None
CONSTANT_MASS = AFFINE_GAP = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = 0

# Rows of the work buffer (impactbench.time_loop): q^{k-2}, q^{k-1}, q^k, the velocity inside F,
# F, M^-1 F, the predictor y, the projection x and step dx, g, P, scalars, then the matrices.
_Q_OLD, _Q_PREV, _Q, _VT, _F, _ACC, _Y, _X, _DX, _G, _P, _SCALARS = range(12)
_MATRICES = 12  # M (n rows), its LDL^T factor (n), G (m), Y = M^-1 G^T rows (m)


def _rows(n: int, m: int) -> int:
    return _MATRICES + 2 * n + 2 * m


def _ps_start(t0, h, q0, v0, p, e, mp, buf, ws):
    """q^1 = Proj(q^0 + h v^0 + h^2/2 a^0), vt_1 = v^0 + h a^0."""
    n = N_DOF
    m = N_CONSTRAINTS
    M = buf[_MATRICES : _MATRICES + n, :n]
    F = buf[_MATRICES + n : _MATRICES + 2 * n, :n]
    G = buf[_MATRICES + 2 * n : _MATRICES + 2 * n + m, :n]
    f = buf[_F, :n]
    acc = buf[_ACC, :n]
    y = buf[_Y, :n]
    q = buf[_Q, :n]
    g = buf[_G, :m]
    buf[_SCALARS, 0] = 0.0  # 1 / (G M^-1 G^T), cached while M and an affine gap are constant
    buf[_SCALARS, 1] = 0.0  # whether that cache is filled
    for j in range(n):
        buf[_Q_PREV, j] = q0[j]
    mass_matrix(q0, p, M)
    if not ldl_factor(M, n, F):
        return STATUS_MASS_NOT_SPD, 0
    forces(t0, q0, v0, p, f)
    ldl_solve(F, n, f, acc)
    for j in range(n):
        y[j] = q0[j] + h * v0[j] + 0.5 * h * h * acc[j]
        buf[_VT, j] = v0[j] + h * acc[j]
    used = project(y, n, m, p, mp[0], int(mp[1]), M, F, q, g, G, ws)
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT, 0
    if used < 0:
        return STATUS_PROJECTION_NOT_CONVERGED, 0
    return STATUS_OK, used


def _ps_step(k, t0, h, p, e, mp, buf, ws, rows, log_t, log_i, log_u, logged):
    """From (q^{k-1}, q^k) to q^{k+1}, with k here the driver's index + 1."""
    n = N_DOF
    m = N_CONSTRAINTS
    q_old = buf[_Q_OLD, :n]  # q^{k-2}
    q_prev = buf[_Q_PREV, :n]  # q^{k-1}
    q = buf[_Q, :n]  # q^k
    vt = buf[_VT, :n]
    f = buf[_F, :n]
    acc = buf[_ACC, :n]
    y = buf[_Y, :n]
    x = buf[_X, :n]
    dx = buf[_DX, :n]
    g = buf[_G, :m]
    P = buf[_P, :m]
    scalars = buf[_SCALARS]
    M = buf[_MATRICES : _MATRICES + n, :n]
    F = buf[_MATRICES + n : _MATRICES + 2 * n, :n]
    G = buf[_MATRICES + 2 * n : _MATRICES + 2 * n + m, :n]
    Y = buf[_MATRICES + 2 * n + m : _MATRICES + 2 * n + 2 * m, :n]
    h2 = h * h
    inv_h = 1.0 / h  # multiplications by reciprocals: no division in the step
    half_inv_h = 0.5 * inv_h
    one_pe = 1.0 + e
    inv_1pe = 1.0 / one_pe
    two_inv_1pe = 2.0 * inv_1pe
    tk = t0 + (k + 1) * h
    if k >= 1:
        for j in range(n):
            vt[j] = (3.0 * q[j] - 4.0 * q_prev[j] + q_old[j]) * half_inv_h
    if not CONSTANT_MASS:
        mass_matrix(q, p, M)
        if not ldl_factor(M, n, F):
            return STATUS_MASS_NOT_SPD, 0, logged, 0
    forces(tk, q, vt, p, f)
    ldl_solve(F, n, f, acc)
    for j in range(n):
        # y = (z + e q^{k-1}) / (1 + e) with z = 2 q^k - q^{k-1} + h^2 M^-1 F, written so that
        # q^k (the loop-carried value) enters through one multiply-add
        y[j] = two_inv_1pe * q[j] + (h2 * acc[j] - (1.0 - e) * q_prev[j]) * inv_1pe
    gap(y, p, g)
    admissible = True
    finite = True
    for i in range(m):
        if g[i] < 0.0:
            admissible = False
        elif not g[i] >= 0.0:  # NaN is neither inside nor outside K: a failure
            finite = False
    if not finite:
        return STATUS_GAP_NOT_FINITE, 0, logged, 0
    used = 0
    if not admissible:
        if AFFINE_GAP and SINGLE_CONSTRAINT:  # compile-time constants: closed form
            if not (CONSTANT_MASS and scalars[1] != 0.0):
                gap_gradient(y, p, G)
                grad_check = 0.0
                for j in range(n):
                    grad_check += G[0, j]
                if not np.isfinite(grad_check):
                    return STATUS_GAP_NOT_FINITE, 0, logged, 0
                scalars[0] = metric_row(n, G, 0, F, Y)
                scalars[1] = 1.0
            used = affine_projection_step(n, g[0], Y, scalars[0], P, dx)
        else:
            used = project(y, n, m, p, mp[0], int(mp[1]), M, F, x, g, G, ws)
            for j in range(n):
                dx[j] = x[j] - y[j]
            for i in range(m):
                P[i] = ws[4][i]
        if used == DEGENERATE_GRADIENT:
            return STATUS_DEGENERATE_GRADIENT, 0, logged, 0
        if used < 0:
            return STATUS_PROJECTION_NOT_CONVERGED, 0, logged, 0
    # Checked before the state changes, so that a failure reports the last finite state.
    check = 0.0
    for j in range(n):
        check += acc[j] + y[j] + (dx[j] if used > 0 else 0.0)
    if not np.isfinite(check):
        return STATUS_NOT_FINITE, 0, logged, 0
    impacts = 0
    if used > 0:
        capacity = log_t.shape[0]
        for i in range(m):
            if P[i] > 0.0:
                impacts += 1
                if logged < capacity:
                    before = 0.0
                    after = 0.0
                    for j in range(n):
                        q_next = 2.0 * q[j] - q_prev[j] + h2 * acc[j] + one_pe * dx[j]
                        before += G[i, j] * (q[j] - q_prev[j]) * inv_h
                        after += G[i, j] * (q_next - q[j]) * inv_h
                    logged = log_impact(log_t, log_i, log_u, logged, tk, i, before, after)
    # q^{k+1} = -e q^{k-1} + (1 + e) x = z + (1 + e) dx (dx = x - y = 0 when y is admissible);
    # it goes straight into the rotation (q^{k-2}, q^{k-1}, q^k) <- (q^{k-1}, q^k, q^{k+1}),
    # so the loop-carried chain passes through memory once per step.
    for j in range(n):
        qj = q[j]
        q_last = q_prev[j]
        q_next = 2.0 * qj + (h2 * acc[j] - q_last)
        if used > 0:
            q_next += one_pe * dx[j]
        q_old[j] = q_last
        q_prev[j] = qj
        q[j] = q_next
    return STATUS_OK, impacts, logged, used


def _ps_sample(buf, h, out_q, out_v, i):
    """Output: q^k and the central difference (q^{k+1} - q^{k-1}) / (2h)."""
    half_inv_h = 0.5 / h
    for j in range(N_DOF):
        out_q[i, j] = buf[_Q_PREV, j]
        out_v[i, j] = (buf[_Q, j] - buf[_Q_OLD, j]) * half_inv_h


def _ps_end(status, steps, t0, h, buf, state):
    """The last sample, or where the run stopped (q^k and the velocity inside F there)."""
    n = N_DOF
    if status == STATUS_OK:
        state[0] = t0 + steps * h
        for j in range(n):
            state[1 + j] = buf[_Q_PREV, j]
            state[1 + n + j] = (buf[_Q, j] - buf[_Q_OLD, j]) / (2.0 * h)
    else:
        state[0] = t0 + (steps + 1) * h
        for j in range(n):
            state[1 + j] = buf[_Q, j]
            state[1 + n + j] = buf[_VT, j]


def _paoli_schatzman_scheme(kernels: ProblemKernels, n_dof: int, n_constraints: int) -> Scheme:
    """The Paoli-Schatzman step for the given problem kernels."""
    bindings = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "project": metric_projection_template(
            kernels.gap, kernels.gap_gradient, kernels.affine_gap, n_constraints
        ),
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
        "SINGLE_CONSTRAINT": n_constraints == 1,
        "N_DOF": n_dof,
        "N_CONSTRAINTS": n_constraints,
    }
    return Scheme(
        _ps_start, _ps_step, _ps_sample, _ps_end, bindings, _rows(n_dof, n_constraints), 1
    )


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

    def _scheme(
        self, kernels: ProblemKernels, n_dof: int, n_constraints: int, **options: Any
    ) -> Scheme:
        return _paoli_schatzman_scheme(kernels, n_dof, n_constraints)

    def _method_vector(self) -> np.ndarray:
        return np.array([self.projection_tol, float(self.projection_max_iter)])
