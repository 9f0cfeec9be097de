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

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from impactbench import TimeStepping, _checks
from impactbench._jit import specialize
from impactbench.contact import (
    DEGENERATE_GRADIENT,
    affine_projection_step,
    ldl_factor,
    ldl_solve,
    make_metric_projection,
    make_workspace,
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
    store_counters,
)

# Names bound per problem by impactbench._jit.specialize in make_paoli_schatzman_loop.
mass_matrix = forces = gap = gap_gradient = project = None
CONSTANT_MASS = AFFINE_GAP = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = 0


def _paoli_schatzman_loop(
    t0, h, n_steps, q0, v0, p, e, mp, every,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, state,
):  # fmt: skip
    tol = mp[0]
    h2 = h * h
    inv_h = 1.0 / h  # multiplications by reciprocals: no division in the step
    half_inv_h = 0.5 * inv_h
    one_pe = 1.0 + e
    inv_1pe = 1.0 / one_pe
    two_inv_1pe = 2.0 * inv_1pe
    max_iter = int(mp[1])
    n = N_DOF
    m = N_CONSTRAINTS
    ws = make_workspace(n, m)  # for the projection onto a nonlinear or multiple-constraint K
    # Every per-step array is a slice of one buffer, so that LLVM can prove them disjoint (see
    # impactbench.methods.moreau_jean._velocity_scheme_loop).
    buf = np.empty((11 + 2 * n + 2 * m, max(n, m)))
    q_old = buf[0, :n]  # q^{k-2}
    q_prev = buf[1, :n]  # q^{k-1}
    q = buf[2, :n]  # q^k
    vt = buf[3, :n]
    f = buf[4, :n]
    acc = buf[5, :n]
    y = buf[6, :n]
    x = buf[7, :n]
    dx = buf[8, :n]
    g = buf[9, :m]
    P = buf[10, :m]
    M = buf[11 : 11 + n, :n]
    F = buf[11 + n : 11 + 2 * n, :n]
    G = buf[11 + 2 * n : 11 + 2 * n + m, :n]
    Y = buf[11 + 2 * n + m : 11 + 2 * n + 2 * m, :n]
    for j in range(n):
        q_prev[j] = q0[j]
    inv_w = 0.0
    metric_ready = False
    capacity = log_t.shape[0]
    status = STATUS_OK
    impacts = 0
    logged = 0
    iterations = 0
    steps = 0
    countdown = every
    # start: q^1 = Proj(q^0 + h v^0 + h^2/2 a^0), vt_1 = v^0 + h a^0
    mass_matrix(q0, p, M)
    ok = ldl_factor(M, n, F)
    if ok:
        forces(t0, q0, v0, p, f)
        ldl_solve(F, n, f, acc)
        for j in range(n):
            y[j] = q0[j] + h * v0[j] + 0.5 * h * h * acc[j]
            vt[j] = v0[j] + h * acc[j]
        used = project(y, n, m, p, tol, max_iter, M, F, q, g, G, ws)
        if used == DEGENERATE_GRADIENT:
            status = STATUS_DEGENERATE_GRADIENT
        elif used < 0:
            status = STATUS_PROJECTION_NOT_CONVERGED
        iterations += max(used, 0)
    else:
        status = STATUS_MASS_NOT_SPD
    out_t[0] = t0
    for j in range(n):
        out_q[0, j] = q0[j]
        out_v[0, j] = v0[j]
    samples = 1
    failed_at = 0
    for k in range(1, n_steps + 1):
        if status != STATUS_OK:
            break
        failed_at = k
        tk = t0 + k * h
        if k >= 2:
            for j in range(n):
                vt[j] = (3.0 * q[j] - 4.0 * q_prev[j] + q_old[j]) * half_inv_h
        if not CONSTANT_MASS:
            mass_matrix(q, p, M)
            if not ldl_factor(M, n, F):
                status = STATUS_MASS_NOT_SPD
                break
        forces(tk, q, vt, p, f)
        ldl_solve(F, n, f, acc)
        for j in range(n):
            # y = (z + e q^{k-1}) / (1 + e) with z = 2 q^k - q^{k-1} + h^2 M^-1 F, written so
            # that q^k (the loop-carried value) enters through one multiply-add
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
            status = STATUS_GAP_NOT_FINITE
            break
        used = 0
        if not admissible:
            if AFFINE_GAP and SINGLE_CONSTRAINT:  # compile-time constants: closed form
                if not (CONSTANT_MASS and metric_ready):
                    gap_gradient(y, p, G)
                    grad_check = 0.0
                    for j in range(n):
                        grad_check += G[0, j]
                    if not np.isfinite(grad_check):
                        status = STATUS_GAP_NOT_FINITE
                        break
                    inv_w = metric_row(n, G, 0, F, Y)
                    metric_ready = True
                used = affine_projection_step(n, g[0], Y, inv_w, P, dx)
            else:
                used = project(y, n, m, p, tol, max_iter, M, F, x, g, G, ws)
                for j in range(n):
                    dx[j] = x[j] - y[j]
                for i in range(m):
                    P[i] = ws[4][i]
            if used == DEGENERATE_GRADIENT:
                status = STATUS_DEGENERATE_GRADIENT
                break
            if used < 0:
                status = STATUS_PROJECTION_NOT_CONVERGED
                break
            iterations += used
        # Checked before the state changes, so that a failure reports the last finite state.
        check = 0.0
        for j in range(n):
            check += acc[j] + y[j] + (dx[j] if used > 0 else 0.0)
        if not np.isfinite(check):
            status = STATUS_NOT_FINITE
            break
        if used > 0:
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
        steps = k
        countdown -= 1
        if countdown == 0 or k == n_steps:
            countdown = every
            out_t[samples] = tk
            for j in range(n):
                out_q[samples, j] = q_prev[j]
                out_v[samples, j] = (q[j] - q_old[j]) * half_inv_h
            samples += 1
    store_counters(counters, status, steps, steps + 1, impacts, logged, samples, iterations)
    # state: the last completed sample, or the step where the run stopped
    if status == STATUS_OK:
        state[0] = t0 + steps * h
        for j in range(n):
            state[1 + j] = q_prev[j]
            state[1 + n + j] = (q[j] - q_old[j]) / (2.0 * h)
    elif failed_at == 0:  # the start step failed: report the initial state
        state[0] = t0
        for j in range(n):
            state[1 + j] = q0[j]
            state[1 + n + j] = v0[j]
    else:
        state[0] = t0 + failed_at * h
        for j in range(n):
            state[1 + j] = q[j]
            state[1 + n + j] = vt[j]


def make_paoli_schatzman_loop(
    kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
) -> Callable:
    """Time loop of the Paoli-Schatzman scheme for the given problem kernels."""
    bindings = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "project": make_metric_projection(
            kernels.gap, kernels.gap_gradient, kernels.affine_gap, n_constraints, compile
        ),
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
        "SINGLE_CONSTRAINT": n_constraints == 1,
        "N_DOF": n_dof,
        "N_CONSTRAINTS": n_constraints,
    }
    return specialize(_paoli_schatzman_loop, bindings, compile)


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

    def _method_vector(self) -> np.ndarray:
        return np.array([self.projection_tol, float(self.projection_max_iter)])
