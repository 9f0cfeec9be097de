"""Moreau's velocity-based schemes: the Moreau-Jean theta-scheme and the catching-up variant.

Both integrate the measure differential inclusion at velocity level with Newton's impact law
written as a complementarity problem on the impulses (DESIGN.md section 5). With q_k, v_k known
and q_p the point where the contact and the smooth forces are evaluated:

    v_{k+1} = v_k + h M^-1 F(t_p, q_p, v_k) + M^-1 G^T P,
    0 <= P  _|_  G v_{k+1} + e G v_k >= 0      on the active set A,

with M = M(q_p), G = grad g(q_p). One constraint: closed-form P; several: the shared LCP solver
(Murty's principal pivoting, :func:`impactbench.contact.solve_lcp`).

Activation (``activation=``):

* ``"position"`` (default): constraint i is active when g_i(q_p) <= 0, whatever the sign of its
  normal velocity U_k = G_i v_k. This is the rule of the seeds (the catching-up scheme sets its
  cone V from g(q_{k+1}) <= 0 alone) and of Siconos' MoreauJeanOSI (forecast g(q_k + h/2 v_k)
  <= 0). A resting or sliding contact stays active at every step, so its penetration stays
  O(h^2 |F|) for all time: the default reproduces Siconos' own regression output for the
  bouncing ball (tests/data/siconos/BouncingBallTS.ref) to round-off.
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

from impactbench import TimeStepping, _checks
from impactbench._jit import specialize
from impactbench.contact import (
    DEGENERATE_GRADIENT,
    impulse,
    impulse_single,
    ldl_factor,
    ldl_solve,
    make_workspace,
    metric_row,
)
from impactbench.problem import ProblemKernels
from impactbench.status_codes import (
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_NOT_FINITE,
    STATUS_OK,
    log_impact,
    store_counters,
)

# Names bound per problem by impactbench._jit.specialize in make_velocity_scheme_loop.
mass_matrix = forces = gap = gap_gradient = None
CONSTANT_MASS = AFFINE_GAP = POSITION_FIRST = SINGLE_CONSTRAINT = APPROACHING_ONLY = False
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
        finite = True
        for i in range(m):
            if g[i] <= 0.0:
                closed = True
            elif not g[i] > 0.0:  # NaN is neither open nor closed: a failure, not "no contact"
                finite = False
        if not finite:
            status = STATUS_GAP_NOT_FINITE
            break
        active = 0
        if closed:
            gap_gradient(qp, p, G)
            grad_check = 0.0
            for i in range(m):
                for j in range(n):
                    grad_check += G[i, j]
            if not np.isfinite(grad_check):
                status = STATUS_GAP_NOT_FINITE
                break
            for i in range(m):
                if g[i] <= 0.0:
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
            if used == DEGENERATE_GRADIENT:
                status = STATUS_DEGENERATE_GRADIENT
                break
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
    kernels: ProblemKernels,
    n_dof: int,
    n_constraints: int,
    compile: bool,
    position_first: bool,
    activation: str,
) -> Callable:
    """Time loop of the theta-scheme (``position_first=False``) or of catching-up (True), with
    the activation rule ``"position"`` or ``"approaching"`` (see the module docstring)."""
    bindings = {
        "mass_matrix": kernels.mass_matrix,
        "forces": kernels.forces,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "CONSTANT_MASS": kernels.constant_mass,
        "AFFINE_GAP": kernels.affine_gap,
        "POSITION_FIRST": position_first,
        "APPROACHING_ONLY": activation == "approaching",
        "SINGLE_CONSTRAINT": n_constraints == 1,
        "N_DOF": n_dof,
        "N_CONSTRAINTS": n_constraints,
    }
    return specialize(_velocity_scheme_loop, bindings, compile)


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
        return make_velocity_scheme_loop(
            kernels, n_dof, n_constraints, compile, False, options["activation"]
        )

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
        return make_velocity_scheme_loop(
            kernels, n_dof, n_constraints, compile, True, options["activation"]
        )

    def _method_vector(self) -> np.ndarray:
        return np.zeros(1)
