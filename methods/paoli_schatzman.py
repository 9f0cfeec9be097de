"""The Paoli-Schatzman two-step position scheme (SIAM J. Numer. Anal. 40 (2002) 702-733, 734-768).

With q^{k-1}, q^k known (docs/design.md section 5):

    z       = 2 q^k - q^{k-1} + h^2 M(q^k)^-1 F(t_k, q^k, vt_k)
    q^{k+1} = -e q^{k-1} + (1 + e) Proj_K^{M(q^k)}( (z + e q^{k-1}) / (1 + e) )

where Proj_K^M is the projection onto K = {g >= 0} in the norm |x|_M^2 = x^T M x, computed by the
shared :func:`impactbench.core.contact.make_metric_projection` (Newton/SQP on the KKT system, the
LCP for several constraints; exact in one iteration for an affine gap). In 1-D this is
q^{k+1} = -e q^{k-1} + (1+e) max(0, (2q^k - (1-e) q^{k-1} + h^2 f^k)/(1+e)).

Choices stated here:

* start: the second-order Taylor step z^1 = q^0 + h v^0 + h^2/2 M^-1 F(t_0, q^0, v^0) (the Siconos
  start q^0 + h v^0 is only first order), q^1 = z^1 when it lies in K; otherwise the scheme's
  impact law from the virtual position q^{-1} = q^0 - h v^0,
  q^1 = -e q^{-1} + (1 + e) Proj_K^{M(q^0)}((z^1 + e q^{-1}) / (1 + e)), so that an impact at
  t_0 (a closed contact approaching, G v^0 < 0) is restituted as at any later step: without it
  a ball on the floor moving down, (q^0, v^0) = (0, -1), e = 1, would be stopped plastically
  and rest. For e = 0 this is the projection Proj(z^1), and a contact at rest at t_0
  (G v^0 = 0, g(q^{-1}) = g(q^0) for an affine gap) takes no restitution;
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

from impactbench.core.scheme import (
    STATUS_GAP_NOT_FINITE,
    STATUS_MASS_NOT_SPD,
    STATUS_OK,
    ProjectingScheme,
    affine_projection_step,
    all_finite,
    factor_mass,
    metric_row,
    projection_status,
    solve_mass,
)


class PaoliSchatzman(ProjectingScheme):
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

    #: The last three positions q^{k-2}, q^{k-1}, q^k and the velocity inside F at t_k (``v``),
    #: F and M^-1 F, the point y to project, its projection x and the step dx = x - y, the
    #: gaps, M(q^k) and its factor, G = grad g and Y = M^-1 G^T (rows), 1 / (G M^-1 G^T) and
    #: whether it is kept (constant M, one affine constraint).
    state = {
        "q_old": "n",
        "q_prev": "n",
        "q": "n",
        "v": "n",
        "f": "n",
        "acc": "n",
        "y": "n",
        "x": "n",
        "dx": "n",
        "g": "m",
        "M": "mass",
        "L": "mass",
        "G": ("m", "n"),
        "Y": ("m", "n"),
        "inv_w": "scalar",
        "metric_ready": "scalar",
    }
    #: The smooth part is the central difference, stable iff h omega_max <= 2
    #: (:mod:`impactbench.core.divergence`): the step limit is ``problem.stable_step``.
    stable_step_factor = 1.0
    #: ``current`` (q^k, the velocity inside F at t_k) is one step ahead of the sample q^{k-1}.
    lead = 1

    def __init__(
        self, projection_tol: float = 1e-14, projection_max_iter: int = 50, **options: Any
    ) -> None:
        super().__init__(
            projection_tol=projection_tol, projection_max_iter=projection_max_iter, **options
        )

    @staticmethod
    def start(s, problem, options, n, m, t0, h, q0, v0, p, e, par):
        """q^1 = z^1 = q^0 + h v^0 + h^2/2 a^0 in K, else the impact law from q^{-1} = q^0 - h v^0
        (module docstring); vt_1 = v^0 + h a^0."""
        for j in range(n):
            s.q_prev[j] = q0[j]
        problem.mass_matrix(q0, p, s.M)
        if not factor_mass(s.M, n, s.L):
            return STATUS_MASS_NOT_SPD, 0, 1
        problem.forces(t0, q0, v0, p, s.f)
        solve_mass(s.L, n, s.f, s.acc)
        for j in range(n):
            s.q[j] = q0[j] + h * v0[j] + 0.5 * h * h * s.acc[j]
            s.v[j] = v0[j] + h * s.acc[j]
        problem.gap(s.q, p, s.g)
        admissible = True
        for i in range(m):
            if s.g[i] < 0.0:
                admissible = False
            elif not s.g[i] >= 0.0:  # NaN
                return STATUS_GAP_NOT_FINITE, 0, 1
        if admissible:
            return STATUS_OK, 0, 1
        one_pe = 1.0 + e
        for j in range(n):  # y = (z^1 + e q^{-1}) / (1 + e), q^{-1} = q^0 - h v^0
            s.y[j] = (s.q[j] + e * (q0[j] - h * v0[j])) / one_pe
        used = problem.project(
            s.y, n, m, p, par.projection_tol, int(par.projection_max_iter),
            s.M, s.L, s.x, s.g, s.G, s.ws,
        )  # fmt: skip
        status = projection_status(used)
        if status != STATUS_OK:
            return status, 0, 1
        for j in range(n):
            s.q[j] = -e * (q0[j] - h * v0[j]) + one_pe * s.x[j]
        return STATUS_OK, used, 1

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        """q^{k+2} from q^{k+1}, q^k (the driver's step k is the scheme's step k + 1), at
        t_next; the output velocity at t, (q^{k+2} - q^k) / (2h), into ``s.v_next``."""
        h2 = h * h
        inv_h = 1.0 / h  # multiplications by reciprocals: no division in the step
        half_inv_h = 0.5 * inv_h
        one_pe = 1.0 + e
        inv_1pe = 1.0 / one_pe
        two_inv_1pe = 2.0 * inv_1pe
        q_prev = s.q_prev
        q = s.q
        if k >= 1:
            for j in range(n):
                s.v[j] = (3.0 * q[j] - 4.0 * q_prev[j] + s.q_old[j]) * half_inv_h
        if not problem.constant_mass:
            problem.mass_matrix(q, p, s.M)
            if not factor_mass(s.M, n, s.L):
                return STATUS_MASS_NOT_SPD, False, 0, 0
        problem.forces(t_next, q, s.v, p, s.f)
        solve_mass(s.L, n, s.f, s.acc)
        for j in range(n):
            # y = (z + e q^{k-1}) / (1 + e) with z = 2 q^k - q^{k-1} + h^2 M^-1 F, written so
            # that q^k (the loop-carried value) enters through one multiply-add
            s.y[j] = two_inv_1pe * q[j] + (h2 * s.acc[j] - (1.0 - e) * q_prev[j]) * inv_1pe
        problem.gap(s.y, p, s.g)
        admissible = True
        for i in range(m):
            if s.g[i] < 0.0:
                admissible = False
            elif not s.g[i] >= 0.0:  # NaN is neither inside nor outside K: a failure
                return STATUS_GAP_NOT_FINITE, False, 0, 0
        used = 0
        if not admissible:
            if problem.affine_gap and problem.single_constraint:  # closed form
                if not (problem.constant_mass and s.metric_ready[0] > 0.0):
                    problem.gap_gradient(s.y, p, s.G)
                    if not all_finite(s.G, 1, n):
                        return STATUS_GAP_NOT_FINITE, False, 0, 0
                    s.inv_w[0] = metric_row(n, s.G, 0, s.L, s.Y)
                    s.metric_ready[0] = 1.0
                used = affine_projection_step(n, s.g[0], s.Y, s.inv_w[0], s.impulse, s.dx)
            else:
                used = problem.project(
                    s.y, n, m, p, par.projection_tol, int(par.projection_max_iter),
                    s.M, s.L, s.x, s.g, s.G, s.ws,
                )  # fmt: skip
                for j in range(n):
                    s.dx[j] = s.x[j] - s.y[j]
                for i in range(m):
                    s.impulse[i] = s.multipliers[i]
            status = projection_status(used)
            if status != STATUS_OK:
                return status, False, 0, 0
        # q^{k+1} = -e q^{k-1} + (1 + e) x = z + (1 + e) dx (dx = x - y = 0 when y is admissible)
        for j in range(n):
            q_next = 2.0 * q[j] + (h2 * s.acc[j] - q_prev[j])
            if used > 0:
                q_next += one_pe * s.dx[j]
            s.q_next[j] = q_next
            s.v_next[j] = (q_next - q_prev[j]) * half_inv_h  # the output velocity at t_k
        if used > 0:
            for i in range(m):
                if s.impulse[i] > 0.0:
                    before = 0.0
                    after = 0.0
                    for j in range(n):
                        before += s.G[i, j] * (q[j] - q_prev[j]) * inv_h
                        after += s.G[i, j] * (s.q_next[j] - q[j]) * inv_h
                    s.normal_before[i] = before
                    s.normal_after[i] = after
        return STATUS_OK, used > 0, used, 1

    @staticmethod
    def commit(s, n):
        """(q^{k-2}, q^{k-1}, q^k) <- (q^{k-1}, q^k, q^{k+1})."""
        for j in range(n):
            s.q_old[j] = s.q_prev[j]
            s.q_prev[j] = s.q[j]
            s.q[j] = s.q_next[j]

    @staticmethod
    def sample(s, n, q_out, v_out):
        """q^k and the central difference (q^{k+1} - q^{k-1}) / (2h) after a commit."""
        for j in range(n):
            q_out[j] = s.q_prev[j]
            v_out[j] = s.v_next[j]

    # current: the default, q^k and the velocity inside F at t_k (one step after the sample)
