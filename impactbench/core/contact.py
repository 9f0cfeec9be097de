"""Shared contact numerics: small SPD solves, the LCP, the impact law and the metric projection.

Every method calls these; none re-implements them. All array functions are numba kernels that
write into caller-provided buffers (no allocation), usable from compiled loops and from Python.

Notation: M (n, n) mass matrix, G (m, n) rows grad g_i,
W = G M^-1 G^T the Delassus matrix, P (m,) impulses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ._jit import hot_kernel, kernel, specialize

#: Relative step of the central differences of ``gap_gradient`` that stand in for the gap's
#: curvature (not part of the problem contract): eps^(1/3), which balances truncation O(s^2)
#: against round-off O(eps / s). Used by the metric projection and by the event-driven method.
CURVATURE_FD_STEP = float(np.cbrt(np.finfo(float).eps))

#: Maximal number of principal pivots in :func:`solve_lcp` before it reports failure.
LCP_MAX_PIVOTS = 1000

#: Returned (instead of a pivot or iteration count) by :func:`impulse_single`,
#: :func:`affine_projection_step`, :func:`solve_lcp_single`, :func:`solve_lcp`, :func:`impulse`
#: and the metric projection when a constraint in contact has a vanishing gradient: its Delassus
#: number w_i = grad g_i^T A^-1 grad g_i (A the metric) is not a positive number with a finite
#: reciprocal, so the contact direction A^-1 grad g_i is undefined. The general failure is -1.
DEGENERATE_GRADIENT = -2


@hot_kernel
def ldl_factor(A, n, F):  # noqa: N803
    """LDL^T factorisation of the leading (n, n) block of the SPD matrix ``A`` into ``F``.

    ``F`` receives the unit lower factor below its diagonal, the reciprocals 1/D_j on the
    diagonal and the products L_ij D_j above it (F[j, i] for i > j), so that neither the
    factorisation nor :func:`ldl_solve` divides except for the n reciprocals. Returns False if
    the block is not (numerically) positive definite.
    """
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= F[j, k] * F[k, j]
        if not d > 0.0:
            return False
        r = 1.0 / d
        F[j, j] = r
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= F[i, k] * F[k, j]
            F[j, i] = s
            F[i, j] = s * r
    return True


@hot_kernel
def ldl_solve(F, n, b, x):  # noqa: N803
    """Solve A x = b with the factor ``F`` of :func:`ldl_factor`; ``x`` may be ``b``."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= F[i, k] * x[k]
        x[i] = s
    for i in range(n):
        x[i] *= F[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= F[k, i] * x[k]
        x[i] = s


@hot_kernel
def factor_mass(M, n, F):  # noqa: N803
    """Factor the mass matrix ``M`` into ``F`` for :func:`solve_mass`, either structure.

    ``M`` is (n, n) for a dense mass matrix (:func:`ldl_factor`) or (1, n) for a diagonal one
    (row 0 holds the diagonal; ``F`` (1, n) then receives the reciprocals, O(n)). For n = 1 both
    forms coincide. Returns False if M is not (numerically) positive definite.
    """
    if M.shape[0] == 1:
        for j in range(n):
            d = M[0, j]
            if not d > 0.0:
                return False
            F[0, j] = 1.0 / d
        return True
    return ldl_factor(M, n, F)


@hot_kernel
def solve_mass(F, n, b, x):  # noqa: N803
    """Solve M x = b with the factor ``F`` of :func:`factor_mass` (O(n) when F is (1, n), the
    reciprocals of a diagonal M; :func:`ldl_solve` when F is (n, n)); ``x`` may be ``b``."""
    if F.shape[0] == 1:
        for i in range(n):
            x[i] = b[i] * F[0, i]
    else:
        ldl_solve(F, n, b, x)


@kernel
def make_workspace(n, m, factor_rows=None, hessian_size=None):
    """Buffers for :func:`solve_lcp`, :func:`impulse` and the metric projection (allocated once).

    ``factor_rows`` is n (the default) for a dense mass matrix and 1 for a diagonal one (the
    rows of its factor, :func:`factor_mass`); ``hessian_size`` the size of the Hessian of the
    Lagrangian of the metric projection: n (the default), or 1 where the projection never forms
    it (an affine gap).
    """
    if factor_rows is None:
        factor_rows = n
    if hessian_size is None:
        hessian_size = n
    return (
        np.empty((factor_rows, n)),  # 0 F: factor of M (for callers without their own)
        np.empty((m, n)),  # 1 Y: rows M^-1 grad g_i
        np.empty((m, m)),  # 2 W: Delassus matrix
        np.empty(m),  # 3 b: LCP right-hand side
        np.empty(m),  # 4 P: impulses
        np.empty(m, dtype=np.bool_),  # 5 S: LCP active set
        np.empty(m, dtype=np.int64),  # 6 idx: indices of S / active constraints
        np.empty((m, m)),  # 7 Wsub
        np.empty((m, m)),  # 8 Lsub
        np.empty(m),  # 9 xsub
        np.empty(m, dtype=np.int64),  # 10 rows: constraint index of each LCP row
        np.empty((hessian_size, hessian_size)),  # 11 H: Hessian of the Lagrangian (projection)
        np.empty((hessian_size, hessian_size)),  # 12 its factor
        np.empty((m, n)),  # 13 gap gradient at x + eps e_j
        np.empty((m, n)),  # 14 gap gradient at x - eps e_j
        np.empty(n),  # 15 shifted point / Newton step
        np.empty(n),  # 16 right-hand side
        np.empty(m),  # 17 multipliers of the previous iterate
    )


@hot_kernel
def solve_lcp_single(W, b, P):  # noqa: N803
    """Closed-form solution of the 1 x 1 LCP 0 <= P _|_ W P + b >= 0 (W > 0).

    Returns 1, or :data:`DEGENERATE_GRADIENT` when W <= 0 and b < 0 (no solution: the
    constraint is violated and its gradient vanishes); W <= 0 with b >= 0 gives P = 0.
    """
    if W[0, 0] > 0.0:
        P[0] = max(0.0, -b[0] / W[0, 0])
        return 1
    P[0] = 0.0
    return 1 if b[0] >= 0.0 else DEGENERATE_GRADIENT


@kernel
def solve_lcp(W, b, k, P, ws):  # noqa: N803
    """Solve 0 <= P _|_ W P + b >= 0 on the leading k rows and columns (W symmetric pos. definite).

    Murty's least-index principal pivoting method: finite for P-matrices (Murty 1974), exact at
    termination up to round-off; k = 1 uses the closed form. Returns the number of pivots,
    :data:`DEGENERATE_GRADIENT` if a row has W_ii <= 0 and b_i < 0 beyond the pivoting
    tolerance (a violated constraint with a vanishing gradient: no solution), or -1 if the pivot
    limit was hit or a principal block was not positive definite.
    """
    if k == 1:
        return solve_lcp_single(W, b, P)
    S = ws[5]
    idx = ws[6]
    Wsub = ws[7]
    Lsub = ws[8]
    xsub = ws[9]
    scale = 0.0
    for i in range(k):
        S[i] = False
        P[i] = 0.0
        scale = max(scale, abs(b[i]))
    tol = 1e-13 * scale
    for i in range(k):
        if not W[i, i] > 0.0 and b[i] < -tol:
            return DEGENERATE_GRADIENT
    for it in range(LCP_MAX_PIVOTS):
        s = 0
        for i in range(k):
            if S[i]:
                idx[s] = i
                s += 1
        for a in range(s):
            for c in range(s):
                Wsub[a, c] = W[idx[a], idx[c]]
            xsub[a] = -b[idx[a]]
        if s > 0:
            if not ldl_factor(Wsub, s, Lsub):
                return -1
            ldl_solve(Lsub, s, xsub, xsub)
        for i in range(k):
            P[i] = 0.0
        for a in range(s):
            P[idx[a]] = xsub[a]
        pivot = -1
        for j in range(k):
            if S[j]:
                if P[j] * W[j, j] < -tol:
                    pivot = j
                    break
            else:
                w = b[j]
                for c in range(k):
                    w += W[j, c] * P[c]
                if w < -tol:
                    pivot = j
                    break
        if pivot < 0:
            return it + 1
        S[pivot] = not S[pivot]
    return -1


@hot_kernel
def delassus(G, rows, k, F, n, Y, W):  # noqa: N803
    """Rows Y_a = A^-1 grad g_{rows[a]} and W = G_A A^-1 G_A^T for the k constraints ``rows[:k]``.

    ``F`` is the factor (:func:`factor_mass`) of the metric A: the mass matrix M for the impact
    law, the Hessian of the Lagrangian in the metric projection. Shared by :func:`impulse` and
    :func:`make_metric_projection`. The products W_ac = grad g_i . Y_c run over the columns from
    the first to the last nonzero entry of grad g_i only (the terms left out are exact zeros, so
    W is the same to the last bit for finite Y): cost O(k n^2 + k n) for a dense factor, O(k n +
    k^2 b) for a diagonal one, b the widest span of nonzeros of an active gradient (2 for
    neighbouring beads, 1 for one node of a bar).
    """
    for a in range(k):
        i = rows[a]
        for j in range(n):
            Y[a, j] = G[i, j]
        solve_mass(F, n, Y[a], Y[a])
    for a in range(k):
        i = rows[a]
        first = 0
        while first < n and G[i, first] == 0.0:
            first += 1
        last = n - 1
        while last > first and G[i, last] == 0.0:
            last -= 1
        for c in range(k):
            s = 0.0
            for j in range(first, last + 1):
                s += G[i, j] * Y[c, j]
            W[a, c] = s


@hot_kernel
def metric_row(n, G, i, L, Y):  # noqa: N803
    """Y[0] = M^-1 grad g_i for the factor ``L`` of M (:func:`factor_mass`); returns
    1 / (grad g_i^T M^-1 grad g_i).

    The loops keep both while M and grad g_i stay constant (constant mass, affine gap), so that
    :func:`impulse_single` and :func:`affine_projection_step` need neither a solve nor a division.
    Returns 0 when the Delassus number w = grad g_i^T M^-1 grad g_i is not positive or 1/w is
    not finite (a vanishing gradient): those two functions then return
    :data:`DEGENERATE_GRADIENT`.
    """
    for j in range(n):
        Y[0, j] = G[i, j]
    solve_mass(L, n, Y[0], Y[0])
    w = 0.0
    for j in range(n):
        w += G[i, j] * Y[0, j]
    if w > 0.0:
        inv_w = 1.0 / w
        if inv_w < math.inf:
            return inv_w
    return 0.0


@hot_kernel
def impulse_single(n, G, i, vfree, v, e, Y, inv_w, P, v_out):  # noqa: N803
    """:func:`impulse` for one active constraint ``i``, in closed form (inlined in the loops).

    ``Y`` (>= 1, n) holds M^-1 grad g_i and ``inv_w`` the inverse of its Delassus number
    (:func:`metric_row`); ``P`` (>= 1,) receives the impulse. It takes these arrays rather than
    the workspace tuple: passing a tuple of arrays to an inlined function reference-counts every
    array in it, which costs more than this formula. Returns 1, or :data:`DEGENERATE_GRADIENT`
    (``v_out`` unset) when ``inv_w`` is not positive (a vanishing gradient, see
    :func:`metric_row`).
    """
    if not inv_w > 0.0:
        return DEGENERATE_GRADIENT
    b = 0.0
    for j in range(n):
        b += G[i, j] * (vfree[j] + e * v[j])
    P[0] = max(0.0, -b * inv_w)
    for j in range(n):
        v_out[j] = vfree[j] + P[0] * Y[0, j]
    return 1


@hot_kernel
def affine_projection_step(n, g_y, Y, inv_w, P, dx):  # noqa: N803
    """Step dx = x - y of the projection of y onto {g >= 0} in the metric of M, one affine g.

    Closed form dx = P M^-1 grad g with P = max(0, -g(y) / (grad g^T M^-1 grad g)); ``g_y`` is
    g(y), ``Y`` and ``inv_w`` come from :func:`metric_row`, ``P`` receives the multiplier. This is
    what :func:`make_metric_projection` computes in that case; the loops call it directly because
    inlining the general projection (a Newton loop over a tuple of buffers) measured ~150 ns per
    call against ~5 ns for this formula. Returning the step rather than x keeps y off the
    dependency chain of the Paoli-Schatzman update q^{k+1} = z + (1 + e) dx. Returns 1, or
    :data:`DEGENERATE_GRADIENT` (``dx`` unset) when ``inv_w`` is not positive and y violates the
    constraint (g(y) < 0): the projection then does not exist.
    """
    if not inv_w > 0.0 and g_y < 0.0:
        return DEGENERATE_GRADIENT
    P[0] = max(0.0, -g_y * inv_w)
    for j in range(n):
        dx[j] = P[0] * Y[0, j]
    return 1


@kernel
def impulse(n, G, rows, k, vfree, v, e, L, ws, v_out):  # noqa: N803
    """Newton impact law at velocity level in the kinetic metric (``L``: factor of M, factor_mass).

    Solves v_out = vfree + M^-1 G_A^T P with 0 <= P _|_ G_A v_out + e G_A v >= 0 over the k
    constraints ``rows[:k]`` (the active set A). With vfree = v this is the impact map: the normal
    velocity is reversed and scaled by e and the tangential part (in the metric of M) is kept.
    Returns the LCP pivot count, -1 on failure, or :data:`DEGENERATE_GRADIENT` if the gradient
    of an active constraint vanishes (W_ii not positive). The impulses are left in ws[4][:k].
    """
    if k == 1:
        inv_w = metric_row(n, G, rows[0], L, ws[1])
        return impulse_single(n, G, rows[0], vfree, v, e, ws[1], inv_w, ws[4], v_out)
    Y = ws[1]
    W = ws[2]
    b = ws[3]
    P = ws[4]
    delassus(G, rows, k, L, n, Y, W)
    for a in range(k):
        if not W[a, a] > 0.0:
            return DEGENERATE_GRADIENT
    for a in range(k):
        i = rows[a]
        s = 0.0
        for j in range(n):
            s += G[i, j] * (vfree[j] + e * v[j])
        b[a] = s
    pivots = solve_lcp(W, b, k, P, ws)
    for j in range(n):
        s = vfree[j]
        for a in range(k):
            s += Y[a, j] * P[a]
        v_out[j] = s
    return pivots


def impact_velocity(
    mass_matrix: np.ndarray,
    gap_gradient: np.ndarray,
    v: np.ndarray,
    restitution: float,
    active: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Post-impact velocity by the Newton law in the kinetic metric (Python convenience).

    Parameters
    ----------
    mass_matrix : ndarray, shape (n, n)
    gap_gradient : ndarray, shape (m, n)
    v : ndarray, shape (n,)
        Pre-impact velocity.
    restitution : float
    active : ndarray of int, shape (k,)
        Indices of the constraints taking part in the impact.

    Returns
    -------
    v_plus : ndarray, shape (n,)
    impulses : ndarray, shape (k,)
    """
    n = mass_matrix.shape[0]
    m = gap_gradient.shape[0]
    ws = make_workspace(n, m)
    if not ldl_factor(np.ascontiguousarray(mass_matrix, dtype=float), n, ws[0]):
        raise ValueError(f"mass_matrix is not positive definite: {mass_matrix.tolist()}")
    rows = np.asarray(active, dtype=np.int64)
    v = np.ascontiguousarray(v, dtype=float)
    v_plus = np.empty(n)
    G = np.ascontiguousarray(gap_gradient, dtype=float)
    used = impulse(n, G, rows, rows.shape[0], v, v, float(restitution), ws[0], ws, v_plus)
    if used == DEGENERATE_GRADIENT:
        raise ValueError(
            f"gap_gradient rows {rows.tolist()} include a vanishing gradient: the impact "
            f"direction M^-1 grad g is undefined, got {G[rows].tolist()}"
        )
    if used < 0:
        raise RuntimeError("impact LCP did not converge (rank-deficient constraint gradients?)")
    return v_plus, ws[4][: rows.shape[0]].copy()


# Names bound per problem by :func:`make_metric_projection` (see impactbench.core._jit.specialize).
gap = gap_gradient = None
AFFINE_GAP = SINGLE_CONSTRAINT = DIAGONAL_MASS = False


def _metric_projection(y, n, m, p, tol, max_iter, M, L, x, gbuf, Gbuf, ws):  # noqa: N803
    """Template of the metric projection (see :func:`make_metric_projection`)."""
    gap(y, p, gbuf)
    admissible = True
    for i in range(m):
        if gbuf[i] < 0.0:
            admissible = False
    for j in range(n):
        x[j] = y[j]
    if admissible:
        return 0
    if AFFINE_GAP and SINGLE_CONSTRAINT:  # compile-time constants
        gap_gradient(y, p, Gbuf)
        inv_w = metric_row(n, Gbuf, 0, L, ws[1])
        dx = ws[15]
        if affine_projection_step(n, gbuf[0], ws[1], inv_w, ws[4], dx) < 0:
            return DEGENERATE_GRADIENT
        for j in range(n):
            x[j] = y[j] + dx[j]
        return 1
    rows = ws[10]
    for i in range(m):
        rows[i] = i
    Y = ws[1]
    W = ws[2]
    b = ws[3]
    P = ws[4]
    H = ws[11]
    HF = ws[12]
    Gp = ws[13]
    Gm = ws[14]
    d = ws[15]
    r = ws[16]
    lam = ws[17]
    for i in range(m):
        lam[i] = 0.0
    for it in range(max_iter):
        if it > 0:
            gap(x, p, gbuf)
        gap_gradient(x, p, Gbuf)
        factor = L
        if not AFFINE_GAP:  # a compile-time constant: the branch is pruned
            newton = False
            if it > 0:
                for i in range(m):
                    if lam[i] > 0.0:
                        newton = True
            if newton:
                size = 1.0
                for j in range(n):
                    size = max(size, abs(x[j]))
                eps = CURVATURE_FD_STEP * size
                for c in range(n):
                    for j in range(n):
                        d[j] = x[j]
                    d[c] = x[c] + eps
                    gap_gradient(d, p, Gp)
                    d[c] = x[c] - eps
                    gap_gradient(d, p, Gm)
                    for j in range(n):
                        if DIAGONAL_MASS:  # a compile-time constant: M is (1, n)
                            s = M[0, j] if j == c else 0.0
                        else:
                            s = M[j, c]
                        for i in range(m):
                            s -= lam[i] * (Gp[i, j] - Gm[i, j]) / (2.0 * eps)
                        H[j, c] = s
                for j in range(n):  # symmetrise the difference quotients
                    for c in range(j):
                        s = 0.5 * (H[j, c] + H[c, j])
                        H[j, c] = s
                        H[c, j] = s
                if ldl_factor(H, n, HF):
                    factor = HF
        if DIAGONAL_MASS:  # a compile-time constant: O(n) instead of O(n^2)
            for j in range(n):
                r[j] = -M[0, j] * (x[j] - y[j])
        else:
            for j in range(n):
                s = 0.0
                for c in range(n):
                    s -= M[j, c] * (x[c] - y[c])
                r[j] = s
        solve_mass(factor, n, r, r)
        delassus(Gbuf, rows, m, factor, n, Y, W)
        for a in range(m):
            s = gbuf[a]
            for j in range(n):
                s += Gbuf[a, j] * r[j]
            b[a] = s
        if SINGLE_CONSTRAINT:  # a compile-time constant: the LCP solver is not compiled in
            used = solve_lcp_single(W, b, P)
        else:
            used = solve_lcp(W, b, m, P, ws)
        if used < 0:
            return used
        step = 0.0
        size = 1.0
        for j in range(n):
            s = r[j]
            for a in range(m):
                s += Y[a, j] * P[a]
            x[j] += s
            step = max(step, abs(s))
            size = max(size, abs(x[j]))
        for i in range(m):
            lam[i] = P[i]
        if AFFINE_GAP or step <= tol * size:
            return it + 1
    return -1


def make_metric_projection(
    gap: Callable,
    gap_gradient: Callable,
    affine: bool,
    n_constraints: int,
    compile: bool,
    diagonal_mass: bool = False,
) -> Callable:
    """Build the projection onto K = {g >= 0} in the norm |x|_M^2 = x^T M x.

    The returned function ``project(y, n, m, p, tol, max_iter, M, L, x, gbuf, Gbuf, ws)`` (inlined
    into the compiled loop that calls it) writes argmin {|x - y|_M : g(x) >= 0} into ``x``
    (``M`` the mass matrix, (n, n), or (1, n) holding the diagonal when ``diagonal_mass``;
    ``L`` its factor from :func:`factor_mass`) and returns the number of iterations (0 if y is
    admissible), -1 if it did not converge or :data:`DEGENERATE_GRADIENT` if a violated
    constraint has a vanishing gradient.

    Method: Newton's method on the KKT system M (x - y) = G(x)^T lambda,
    0 <= lambda _|_ g(x) >= 0, i.e. sequential quadratic programming: each iteration solves the
    QP with the constraints linearised at x_k and the Hessian of the Lagrangian
    H = M - sum_i lambda_i grad^2 g_i(x_k) exactly through the LCP (all m constraints). The
    curvature grad^2 g is not part of the problem contract: it is taken by central differences of
    ``gap_gradient`` (step CURVATURE_FD_STEP max(1, |x|)); this changes the convergence speed
    only, not the converged point, which satisfies the exact KKT conditions. The first iteration
    uses H = M (no multipliers yet), and so does any iteration where H is not positive definite.
    An affine gap is projected exactly in one iteration. With a diagonal M an iteration costs
    O(n m^2) (the Delassus matrix of the m constraints) plus, for a nonlinear gap, the O(n^3)
    Hessian step (its workspace is (n, n)).
    """
    return specialize(
        _metric_projection,
        {
            "gap": gap,
            "gap_gradient": gap_gradient,
            "AFFINE_GAP": affine,
            "SINGLE_CONSTRAINT": n_constraints == 1,
            "DIAGONAL_MASS": diagonal_mass,
        },
        compile,
        inline=True,
    )
