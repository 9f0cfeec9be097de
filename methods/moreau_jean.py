"""Moreau's velocity-based schemes: the Moreau-Jean theta-scheme and the catching-up variant.

Both integrate the measure differential inclusion at velocity level with Newton's impact law
written as a complementarity problem on the impulses (DESIGN.md section 5). With q_k, v_k known
and q_p the point where the contact and the smooth forces are evaluated:

    v_{k+1} = v_k + h M^-1 F(t_p, q_p, v_k) + M^-1 G^T P,
    0 <= P  _|_  G v_{k+1} + e G v_k >= 0      on the active set A,

with M = M(q_p), G = grad g(q_p). A constraint is active when g_i(q_p) <= 0 and its normal
velocity G_i v_k <= 0 (Siconos' forecast rule restricted to approaching contacts). The
restriction is what makes the scheme dissipative: for constant M and F the discrete energy changes
over a step by (1 - theta (1 + e)) P^T G v_k, so with theta = 1/2 it never increases when
P^T G v_k <= 0 (test suite: tests/test_energy.py). One constraint: closed-form P; several: the
shared LCP solver (Murty's principal pivoting, :func:`impactbench.contact.solve_lcp`).

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

from impactbench import TimeStepping, _checks
from impactbench._jit import specialize
from impactbench.contact import (
    impulse,
    impulse_single,
    ldl_factor,
    ldl_solve,
    make_workspace,
    metric_row,
)
from impactbench.problem import ProblemKernels
from impactbench.timestepping import (
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_MASS_NOT_SPD,
    STATUS_NOT_FINITE,
    STATUS_OK,
    log_impact,
    store_counters,
)

# Names bound per problem by impactbench._jit.specialize in make_velocity_scheme_loop.
mass_matrix = forces = gap = gap_gradient = None
CONSTANT_MASS = AFFINE_GAP = POSITION_FIRST = SINGLE_CONSTRAINT = False
N_DOF = N_CONSTRAINTS = 0


def _velocity_scheme_loop(
    t0, h, n_steps, q0, v0, p, e, mp, every,
    out_t, out_q, out_v, log_t, log_i, log_u, counters, state,
):  # fmt: skip
    theta = mp[0]
    h_theta = h * theta
    h_rest = h - h_theta
    n = N_DOF
    m = N_CONSTRAINTS
    ws = make_workspace(n, m)  # for the LCP of several constraints
    # Every per-step array is a slice of one buffer. Numba allocates each np.empty through an
    # opaque call, so LLVM must assume that separately allocated arrays alias and reloads every
    # value after each store; slices of one buffer at constant offsets are provably disjoint:
    # values stay in registers, and what two kernels compute from the same q_p (sin q_p in the
    # forces and in the gap of the double pendulum) is computed once.
    buf = np.empty((9 + 2 * n + 2 * m, max(n, m)))
    q = buf[0, :n]
    v = buf[1, :n]
    qp = buf[2, :n]
    f = buf[3, :n]
    acc = buf[4, :n]
    vfree = buf[5, :n]
    v1 = buf[6, :n]
    g = buf[7, :m]
    impulses = buf[8, :m]
    M = buf[9 : 9 + n, :n]
    L = buf[9 + n : 9 + 2 * n, :n]
    G = buf[9 + 2 * n : 9 + 2 * n + m, :n]
    Y = buf[9 + 2 * n + m : 9 + 2 * n + 2 * m, :n]
    rows = np.empty(m, dtype=np.int64)
    for j in range(n):
        q[j] = q0[j]
        v[j] = v0[j]
    inv_w = 0.0
    metric_ready = False
    capacity = log_t.shape[0]
    out_t[0] = t0
    for j in range(n):
        out_q[0, j] = q[j]
        out_v[0, j] = v[j]
    samples = 1
    impacts = 0
    logged = 0
    pivots = 0
    status = STATUS_OK
    steps = 0
    countdown = every
    t = t0
    for k in range(n_steps):
        t = t0 + k * h
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
            if not ldl_factor(M, n, L):
                status = STATUS_MASS_NOT_SPD
                break
        forces(tp, qp, v, p, f)
        ldl_solve(L, n, f, acc)
        gap(qp, p, g)
        closed = False
        for i in range(m):
            if g[i] <= 0.0:
                closed = True
        active = 0
        if closed:
            gap_gradient(qp, p, G)
            for i in range(m):
                if g[i] <= 0.0:
                    u = 0.0
                    for j in range(n):
                        u += G[i, j] * v[j]
                    if u <= 0.0:
                        rows[active] = i
                        active += 1
        if active > 0:
            for j in range(n):
                vfree[j] = v[j] + h * acc[j]
            if SINGLE_CONSTRAINT:  # compile-time constant: no LCP compiled in
                if not (CONSTANT_MASS and AFFINE_GAP and metric_ready):
                    inv_w = metric_row(n, G, rows[0], L, Y)
                    metric_ready = True
                used = impulse_single(n, G, rows[0], vfree, v, e, Y, inv_w, impulses, v1)
            else:
                used = impulse(n, G, rows, active, vfree, v, e, L, ws, v1)
                for a in range(active):
                    impulses[a] = ws[4][a]
            if used < 0:
                status = STATUS_CONTACT_SOLVE_FAILED
                break
            pivots += used
        # Checked before the state changes, so that a failure reports the last finite state.
        check = 0.0
        for j in range(n):
            check += qp[j] + (v1[j] if active > 0 else acc[j])
        if not np.isfinite(check):
            status = STATUS_NOT_FINITE
            break
        for a in range(active):
            if impulses[a] > 0.0:
                impacts += 1
                if logged < capacity:
                    i = rows[a]
                    before = 0.0
                    after = 0.0
                    for j in range(n):
                        before += G[i, j] * v[j]
                        after += G[i, j] * v1[j]
                    t_log = t0 + (k + 1) * h
                    logged = log_impact(log_t, log_i, log_u, logged, t_log, i, before, after)
        # Without contact the new velocity stays in a register: the loop-carried chain
        # v_k -> v_{k+1} then passes through memory once per step, not three times.
        for j in range(n):
            vj = v[j]
            vn = v1[j] if active > 0 else vj + h * acc[j]
            if POSITION_FIRST:
                q[j] = qp[j]
            else:
                # q_k + h (1 - theta) v_k is ready before v_{k+1}: one multiply-add after it
                q[j] = (q[j] + h_rest * vj) + h_theta * vn
            v[j] = vn
        steps = k + 1
        countdown -= 1
        if countdown == 0 or steps == n_steps:
            countdown = every
            out_t[samples] = t0 + steps * h
            for j in range(n):
                out_q[samples, j] = q[j]
                out_v[samples, j] = v[j]
            samples += 1
    store_counters(counters, status, steps, steps, impacts, logged, samples, pivots)
    state[0] = t0 + steps * h
    for j in range(n):
        state[1 + j] = q[j]
        state[1 + n + j] = v[j]


def make_velocity_scheme_loop(
    kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, position_first: bool
) -> Callable:
    """Time loop of the theta-scheme (``position_first=False``) or of catching-up (True)."""
    bindings = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
        "POSITION_FIRST": position_first,
        "SINGLE_CONSTRAINT": n_constraints == 1,
        "N_DOF": n_dof,
        "N_CONSTRAINTS": n_constraints,
    }
    return specialize(_velocity_scheme_loop, bindings, compile)


class MoreauJean(TimeStepping):
    """Moreau-Jean theta-scheme (velocity level, Newton impact law, kinetic metric).

    Parameters
    ----------
    theta : float
        Weight in (0, 1]; 1/2 (default) is Moreau's midpoint scheme, order 2 between impacts.
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.

    Notes
    -----
    Velocity-dependent forces are evaluated at v_k (explicit), which keeps order 2 only for
    forces independent of v. See the module docstring for the activation rule and its energy
    balance.
    """

    def __init__(self, theta: float = 0.5, **options: Any) -> None:
        super().__init__(**options)
        self.theta = _checks.finite_scalar(theta, "theta")
        if not 0.0 < self.theta <= 1.0:
            raise ValueError(f"theta must lie in (0, 1], got {theta!r}")

    def parameters(self) -> dict[str, Any]:
        return {"theta": self.theta}

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
    ) -> Callable:
        return make_velocity_scheme_loop(kernels, n_dof, n_constraints, compile, False)

    def _method_vector(self) -> np.ndarray:
        return np.array([self.theta])


class CatchingUp(TimeStepping):
    """Position-first catching-up scheme of Dzonou, Monteiro Marques and Paoli (2009).

    q_{k+1} = q_k + h v_k, then v_{k+1} = -e v_k + (1 + e) Proj_{M(q_{k+1})}(V, v_k + h M^-1 F /
    (1 + e)) with V = {w : G_A w >= 0} over the active constraints (g_i(q_{k+1}) <= 0 and
    approaching) - computed in the equivalent impulse form of the module docstring.

    Parameters
    ----------
    compiled, log_capacity
        See :class:`impactbench.TimeStepping`.
    """

    def parameters(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
    ) -> Callable:
        return make_velocity_scheme_loop(kernels, n_dof, n_constraints, compile, True)

    def _method_vector(self) -> np.ndarray:
        return np.zeros(1)
