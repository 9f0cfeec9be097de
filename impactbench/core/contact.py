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

from ._checks import MAX_CONDITION
from ._jit import (
    FirstClassKernel,
    bind_kernels,
    count_arguments,
    hot_kernel,
    kernel,
    specialize,
    with_runtime_sizes,
)

#: Relative step of the central differences of ``gap_gradient`` that stand in for the gap's
#: curvature (not part of the problem contract): eps^(1/3), which balances truncation O(s^2)
#: against round-off O(eps / s). Used by the metric projection and by the event-driven method.
CURVATURE_FD_STEP = float(np.cbrt(np.finfo(float).eps))

#: Maximal number of principal pivots in :func:`solve_lcp` before it reports failure.
LCP_MAX_PIVOTS = 1000

#: Slots of the warm-start memory of :func:`solve_lcp_warm` (one per kind of LCP in a step).
LCP_SLOT_IMPULSE = 0
LCP_SLOT_PROJECTION = 1
LCP_SLOT_ACCELERATION = 2
LCP_SLOTS = 3
#: Index of the warm-start memory in the tuple of :func:`make_workspace` (zeroed when a
#: workspace is reused).
WARM_START_ENTRY = 18

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
    the block is not (numerically) positive definite. The dense case of
    :func:`ldl_factor_banded` (half-bandwidth n - 1).
    """
    return ldl_factor_banded(A, n, n - 1, F)


@hot_kernel
def ldl_factor_mass(M, n, F):  # noqa: N803
    """:func:`ldl_factor` of a mass matrix, refusing a numerically singular one: returns False
    also when a pivot D_j is below max |M| / :data:`impactbench.core._checks.MAX_CONDITION`.

    For an SPD M every pivot lies in [lambda_min, lambda_max] and max |M| = max_j M_jj <=
    lambda_max, so max |M| / min_j D_j <= cond(M): this never refuses a matrix that
    :meth:`impactbench.Problem.check` accepts at q0 (condition number at most MAX_CONDITION),
    and refuses every M whose smallest pivot says its condition exceeds it. The test of the
    plain-Python path on every call (``impactbench.core.problem.CheckedCalls``), here in the
    compiled loops too; O(n) beyond the factorisation.
    """
    if not ldl_factor(M, n, F):
        return False
    scale = 0.0
    for j in range(n):  # the largest entry of an SPD matrix is on its diagonal
        scale = max(scale, M[j, j])
    for j in range(n):  # F[j, j] = 1 / D_j
        if F[j, j] * scale > MAX_CONDITION:
            return False
    return True


@hot_kernel
def ldl_solve(F, n, b, x):  # noqa: N803
    """Solve A x = b with the factor ``F`` of :func:`ldl_factor`; ``x`` may be ``b``."""
    ldl_solve_banded(F, n, n - 1, b, x)


@hot_kernel
def ldl_factor_banded(A, n, bw, F):  # noqa: N803
    """LDL^T of the leading (n, n) block of an SPD ``A`` of half-bandwidth ``bw``, in the
    layout of :func:`ldl_factor`.

    A[i, j] = 0 for |i - j| > bw; then L has the same band, and only the entries of A and F with
    |i - j| <= bw are read and written: cost O(n bw^2) instead of O(n^3). The operations on the
    band are those of the dense algorithm (bw = n - 1, :func:`ldl_factor`) in the same order,
    less products with an exact zero, so the band of F is the same to the last bit. Returns
    False if the block is not (numerically) positive definite.
    """
    for j in range(n):
        d = A[j, j]
        for k in range(max(0, j - bw), j):
            d -= F[j, k] * F[k, j]
        if not d > 0.0:
            return False
        r = 1.0 / d
        F[j, j] = r
        for i in range(j + 1, min(n, j + bw + 1)):
            s = A[i, j]
            for k in range(max(0, i - bw), j):
                s -= F[i, k] * F[k, j]
            F[j, i] = s
            F[i, j] = s * r
    return True


@hot_kernel
def ldl_solve_banded(F, n, bw, b, x):  # noqa: N803
    """Solve A x = b with the factor ``F`` of :func:`ldl_factor_banded` (half-bandwidth ``bw``):
    O(n bw); ``x`` may be ``b``."""
    for i in range(n):
        s = b[i]
        for k in range(max(0, i - bw), i):
            s -= F[i, k] * x[k]
        x[i] = s
    for i in range(n):
        x[i] *= F[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, min(n, i + bw + 1)):
            s -= F[k, i] * x[k]
        x[i] = s


@hot_kernel
def factor_mass(M, n, F):  # noqa: N803
    """Factor the mass matrix ``M`` into ``F`` for :func:`solve_mass`, either structure.

    ``M`` is (n, n) for a dense mass matrix (:func:`ldl_factor`) or (1, n) for a diagonal one
    (row 0 holds the diagonal; ``F`` (1, n) then receives the reciprocals, O(n)). For n = 1 both
    forms coincide. Returns False if M is not (numerically) positive definite, or numerically
    singular: a pivot below max |M| / :data:`impactbench.core._checks.MAX_CONDITION`
    (:func:`ldl_factor_mass`; for a diagonal M, max / min of its diagonal above it).
    """
    if M.shape[0] == 1:
        low = math.inf
        high = 0.0
        for j in range(n):
            d = M[0, j]
            if not d > 0.0:
                return False
            F[0, j] = 1.0 / d
            low = min(low, d)
            high = max(high, d)
        return high <= MAX_CONDITION * low
    return ldl_factor_mass(M, n, F)


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
    it (an affine gap). The warm-start memory of :func:`solve_lcp_warm` (entry 18) starts empty.
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
        np.zeros((LCP_SLOTS, m), dtype=np.bool_),  # 18 last LCP active set per slot, constraint
        np.empty((7, m + 1), dtype=np.int64),  # 19 spans: gradients, Y (delassus), W (LCP)
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


@hot_kernel
@count_arguments("k")
def _principal_pivoting(W, b, k, P, ws, tol):  # noqa: N803
    """Murty's least-index principal pivoting from the active set ws[5][:k] (see
    :func:`solve_lcp`). Returns (complementary bases visited, solved)."""
    S = ws[5]
    idx = ws[6]
    Wsub = ws[7]
    Lsub = ws[8]
    xsub = ws[9]
    first = ws[19][4]
    last = ws[19][5]
    below = ws[19][6]
    for it in range(LCP_MAX_PIVOTS):
        s = 0
        for i in range(k):
            below[i] = s
            if S[i]:
                idx[s] = i
                s += 1
        below[k] = s
        # half-bandwidth of W_SS (rows in index order): the active columns of row idx[a] of W
        # from its first to its last nonzero, before and after idx[a] (the a-th active)
        bw = 0
        for a in range(s):
            i = idx[a]
            bw = max(bw, max(a - below[first[i]], below[last[i] + 1] - a - 1))
        for a in range(s):
            for c in range(max(0, a - bw), a + 1):
                Wsub[a, c] = W[idx[a], idx[c]]
            xsub[a] = -b[idx[a]]
        if s > 0:
            if not ldl_factor_banded(Wsub, s, bw, Lsub):
                return it + 1, False
            ldl_solve_banded(Lsub, s, bw, xsub, xsub)
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
                for c in range(first[j], last[j] + 1):
                    w += W[j, c] * P[c]
                if w < -tol:
                    pivot = j
                    break
        if pivot < 0:
            return it + 1, True
        S[pivot] = not S[pivot]
    return LCP_MAX_PIVOTS, False


@kernel
@count_arguments("k")
def solve_lcp(W, b, k, P, ws, warm, pattern):  # noqa: N803
    """Solve 0 <= P _|_ W P + b >= 0 on the leading k rows and columns (W symmetric pos. definite).

    Murty's least-index principal pivoting method (K. G. Murty, "Note on a Bard-type scheme for
    solving the complementarity problem", Opsearch 11 (1974) 123-130; Murty, *Linear
    Complementarity, Linear and Nonlinear Programming*, Heldermann 1988, ch. 4): a set S of
    basic impulses gives P_S = -W_SS^-1 b_S, P = 0 off S; the least index j where P_j < 0
    (j in S) or (W P + b)_j < 0 (j not in S) changes side, until there is none. For a
    P-matrix (here SPD) it ends after at most 2^k - 1 pivots from *any* starting S, not only
    from the empty set: by induction on k, the moves on the indices below k are the method on
    the LCP of order k - 1 with index k held on its side (finite by induction), index k pivots
    only at that smaller LCP's unique solution, and then onto the side the unique solution of
    the full LCP takes, which it never leaves (Murty 1974; J. Rohn, "A short proof of
    finiteness of Murty's principal pivoting algorithm", Math. Program. 46 (1990),
    doi:10.1007/BF01585743).
    The solution of an LCP with a P-matrix is unique, so where it starts changes the pivots,
    not the result (up to round-off; tests/test_contact.py compares warm and cold starts).

    ``warm``: start from the active set read from ws[5][:k] (True: e.g. the previous step's,
    see :func:`solve_lcp_warm`) instead of the empty set. If that run fails (a principal block
    it reaches is not numerically positive definite: a positive semidefinite W, redundant
    constraints, whose solution the cold start may still reach), the cold start follows. On
    return ws[5][:k] holds the final active set.

    ``pattern``: ws[19][4, a] <= a <= ws[19][5, a] already bound the columns of the nonzeros
    of row a of W (True: W as :func:`delassus` left it in this workspace); False: they are
    found by one O(k^2) scan. Each basis is factored by :func:`ldl_factor_banded` with the
    half-bandwidth of W_SS in index order that these bounds give (O(k) to find), and the
    complementarity test of a row outside S runs over them: the Delassus matrix of a chain
    (the column of beads) is tridiagonal, so a basis costs O(k) instead of O(k^3), and
    W P + b O(k) instead of O(k^2). k = 1 uses the closed form (:func:`solve_lcp_single`).

    Returns the number of complementary bases visited (pivots + 1, both runs counted after a
    failed warm start), :data:`DEGENERATE_GRADIENT` if a row has W_ii <= 0 and b_i < 0 beyond
    the pivoting tolerance (a violated constraint with a vanishing gradient: no solution), or
    -1 if the pivot limit was hit or a principal block was not positive definite.
    """
    S = ws[5]
    if k == 1:
        used = solve_lcp_single(W, b, P)
        S[0] = P[0] > 0.0
        return used
    first = ws[19][4]
    last = ws[19][5]
    scale = 0.0
    for i in range(k):
        scale = max(scale, abs(b[i]))
    tol = 1e-13 * scale
    for i in range(k):
        if not W[i, i] > 0.0 and b[i] < -tol:
            return DEGENERATE_GRADIENT
    if not pattern:
        for a in range(k):  # the nonzero span of each row, with the diagonal (vectorised)
            lo = a
            hi = a
            for c in range(k):
                nonzero = W[a, c] != 0.0
                lo = min(lo, c if nonzero else k)
                hi = max(hi, c if nonzero else 0)
            first[a] = lo
            last[a] = hi
    used = 0
    if warm:
        used, solved = _principal_pivoting(W, b, k, P, ws, tol)
        if solved:
            return used
    for i in range(k):
        S[i] = False
    cold, solved = _principal_pivoting(W, b, k, P, ws, tol)
    return used + cold if solved else -1


@kernel
@count_arguments("k")
def solve_lcp_warm(W, b, rows, k, P, ws, slot):  # noqa: N803
    """:func:`solve_lcp` warm-started from the last active set of the same ``slot``, for the
    W that :func:`delassus` has just formed in this workspace (its pattern is reused).

    The LCP's rows are the constraints ``rows[:k]``; ws[18][slot] remembers, per constraint,
    whether it was in the final active set the last time it was a row of an LCP of this slot
    (for a time-stepping scheme, mostly the previous step), and the call starts from that set
    restricted to ``rows[:k]`` (a constraint never seen starts inactive). A resting contact set
    then costs one factorisation per step and no pivot, and so does one whose contacts leave
    the active rows for a step and come back (the projection schemes, whose positions sit on
    g = 0 to round-off). The slots keep apart the LCPs a scheme solves in one step:
    :data:`LCP_SLOT_IMPULSE` (the impact law), :data:`LCP_SLOT_PROJECTION` (the metric
    projection), :data:`LCP_SLOT_ACCELERATION` (contact forces). Returns as :func:`solve_lcp`.
    """
    S = ws[5]
    memory = ws[18]
    for a in range(k):
        S[a] = memory[slot, rows[a]]
    used = solve_lcp(W, b, k, P, ws, True, True)
    if used > 0:
        for a in range(k):
            memory[slot, rows[a]] = S[a]
    return used


@hot_kernel
@count_arguments("k")
def delassus(G, rows, k, F, n, Y, W, span):  # noqa: N803
    """Rows Y_a = A^-1 grad g_{rows[a]} and W = G_A A^-1 G_A^T for the k constraints ``rows[:k]``.

    ``F`` is the factor (:func:`factor_mass`) of the metric A: the mass matrix M for the impact
    law, the Hessian of the Lagrangian in the metric projection. Shared by :func:`impulse` and
    :func:`make_metric_projection`. ``span`` (int64, (6, >= k)) receives the first and last
    column of the nonzeros of each gradient (rows 0, 1; first > last for a zero gradient), of
    each Y_a (rows 2, 3) and of each row of W, with its diagonal (rows 4, 5: the pattern
    :func:`solve_lcp` takes with ``pattern=True``).

    W_ac = grad g_{rows[a]} . Y_c runs over the columns where both spans meet only, and is 0
    where they do not meet (the terms left out are exact zeros, so W is the same to the last
    bit for finite Y). When the spans' ends are nondecreasing in a (a chain numbered in order:
    the column of beads, a bar's nodes) the c whose span meets that of row a are a range
    found by two pointers moving forward, so the pairs that do not meet are never visited:
    with a diagonal factor (Y_a has the span of grad g_a) the cost is O(k n) for Y (a copy and
    a scaling) plus O(k^2) stores of W's zeros and O(k w b) for its nonzeros, b the widest span
    of a gradient (2 for neighbouring beads, 1 for one node of a bar) and w the most spans one
    meets (3 on a chain), instead of O(k^2 b) products. Otherwise every pair is tested; a dense
    factor adds its O(k n^2) solves.
    """
    diagonal = F.shape[0] == 1
    for a in range(k):  # Y_a = A^-1 grad g, and the span of grad g's nonzeros (vectorised)
        i = rows[a]
        lo = n
        hi = -1
        for j in range(n):
            x = G[i, j]
            Y[a, j] = x * F[0, j] if diagonal else x  # solve_mass's product, for a diagonal A
            nonzero = x != 0.0
            lo = min(lo, j if nonzero else n)
            hi = max(hi, j if nonzero else -1)
        span[0, a] = lo
        span[1, a] = hi
        if diagonal:  # Y_a has the zeros of grad g
            span[2, a] = lo
            span[3, a] = hi
        else:
            solve_mass(F, n, Y[a], Y[a])
            lo = n
            hi = -1
            for j in range(n):
                nonzero = Y[a, j] != 0.0
                lo = min(lo, j if nonzero else n)
                hi = max(hi, j if nonzero else -1)
            span[2, a] = lo
            span[3, a] = hi
    ordered = True
    for a in range(k):
        if span[0, a] > span[1, a] or span[2, a] > span[3, a]:
            ordered = False
        elif a > 0:
            for r in range(4):
                if span[r, a] < span[r, a - 1]:
                    ordered = False
    low = 0
    high = -1
    for a in range(k):
        i = rows[a]
        first = span[0, a]
        last = span[1, a]
        for c in range(k):
            W[a, c] = 0.0
        if ordered:  # the Y_c meeting [first, last] are c = low .. high
            while low < k and span[3, low] < first:
                low += 1
            while high + 1 < k and span[2, high + 1] <= last:
                high += 1
            c0 = low
            c1 = high
        else:
            c0 = 0
            c1 = k - 1
        met_first = a
        met_last = a
        for c in range(c0, c1 + 1):
            j0 = max(first, span[2, c])
            j1 = min(last, span[3, c])
            if j0 <= j1:
                s = 0.0
                for j in range(j0, j1 + 1):
                    s += G[i, j] * Y[c, j]
                W[a, c] = s
                met_first = min(met_first, c)
                met_last = max(met_last, c)
        span[4, a] = met_first
        span[5, a] = met_last


@hot_kernel
def add_reactions(n, k, Y, P, span, x_free, x_out):  # noqa: N803
    """x_out = x_free + sum_a P_a Y_a for the k rows Y_a that :func:`delassus` formed (its
    spans, ``span`` rows 2, 3): the sum of each entry in the order of a, as the dense loop,
    less the terms that are exact zeros (P_a = 0 or j outside the span of Y_a), so O(n + k b)
    on a chain. ``x_out`` may be ``x_free``."""
    for j in range(n):
        x_out[j] = x_free[j]
    for a in range(k):
        if P[a] != 0.0:
            for j in range(span[2, a], span[3, a] + 1):
                x_out[j] += Y[a, j] * P[a]


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
def impulse_single(n, G, i, vfree, v, e, Y, inv_w, P, v_out, offset=None):  # noqa: N803
    """:func:`impulse` for one active constraint ``i``, in closed form (inlined in the loops).

    ``Y`` (>= 1, n) holds M^-1 grad g_i and ``inv_w`` the inverse of its Delassus number
    (:func:`metric_row`); ``P`` (>= 1,) receives the impulse; ``offset`` (a float, or None:
    no term) is the constant o_i of the law of a moving obstacle (:func:`impulse`), added to
    the right-hand side G_i (vfree + e v). It takes these arrays rather than
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
    if offset is not None:  # None: not compiled (a fixed obstacle adds no term, not a zero)
        b += offset
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
    inlining the general projection (a Newton loop over a tuple of buffers) costs far more than
    this formula. Returning the step rather than x keeps y off the
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


@hot_kernel
def all_finite(A, m, n):  # noqa: N803
    """True if the leading (m, n) block of ``A`` holds no inf or NaN.

    Branch-free, so LLVM vectorises it: a running sum tested once is a chain of dependent
    additions, m n times the latency of one.
    """
    finite = True
    for i in range(m):
        for j in range(n):
            finite &= abs(A[i, j]) < math.inf
    return finite


@hot_kernel
def impulse_span(ws, k, a, n):
    """Columns (j0, j1) outside which grad g_{rows[a]} is zero, after :func:`impulse` (or a
    :func:`delassus`) over the k constraints ``rows[:k]``: the span :func:`delassus` found
    (k >= 2), all n columns for k = 1 (the closed forms form no spans). A caller takes its
    normal velocities grad g_i . v over it (O(k b) instead of O(k n)), the same sums to the
    last bit (the terms left out are exact zeros)."""
    if k > 1:
        return ws[19][0, a], ws[19][1, a]
    return 0, n - 1


@kernel
@count_arguments("k")
def impulse(n, G, rows, k, vfree, v, e, L, ws, v_out, restitution=None, offset=None):  # noqa: N803
    """Newton impact law at velocity level in the kinetic metric (``L``: factor of M, factor_mass).

    Solves v_out = vfree + M^-1 G_A^T P with 0 <= P _|_ G_A v_out + e G_A v >= 0 over the k
    constraints ``rows[:k]`` (the active set A). With vfree = v this is the impact map: the normal
    velocity is reversed and scaled by e and the tangential part (in the metric of M) is kept.
    Returns the LCP's count of bases (:func:`solve_lcp`), -1 on failure, or
    :data:`DEGENERATE_GRADIENT` if the gradient of an active constraint vanishes (W_ii not
    positive, or 1 / W_ii not finite). The impulses are left in ws[4][:k], the spans of the
    gradients' nonzeros for :func:`impulse_span`. The LCP starts from the previous call's active set
    (:func:`solve_lcp_warm`, slot :data:`LCP_SLOT_IMPULSE`), and the right-hand side and v_out
    run over the spans of the gradients and of Y only: with a diagonal M and gradients of
    width b (a chain) the whole call costs O(k b + n) plus the O(k^2) stores of W's zeros, the
    pivots each O(k) on a chain. ``restitution`` (m), when given, holds a coefficient e_i per
    constraint, used in place of e in row i (None: e in every row).

    ``offset`` (m), when given, holds constants o_i of a moving obstacle's law, whose
    relative normal velocity is U_i = G_i v + r_i (r_i = dg_i/dt): with o_i = r_i,after +
    e_i r_i,before the law 0 <= P _|_ U_after + e U_before >= 0 is
    0 <= P _|_ G_A v_out + e G_A v + o_A >= 0 (None: no term, a fixed obstacle).
    """
    if k == 1:
        if restitution is not None:
            e = restitution[rows[0]]
        inv_w = metric_row(n, G, rows[0], L, ws[1])
        if offset is not None:
            return impulse_single(
                n, G, rows[0], vfree, v, e, ws[1], inv_w, ws[4], v_out, offset[rows[0]]
            )
        return impulse_single(n, G, rows[0], vfree, v, e, ws[1], inv_w, ws[4], v_out)
    Y = ws[1]
    W = ws[2]
    b = ws[3]
    P = ws[4]
    delassus(G, rows, k, L, n, Y, W, ws[19])
    for a in range(k):
        if not (W[a, a] > 0.0 and 1.0 / W[a, a] < math.inf):
            return DEGENERATE_GRADIENT
    span = ws[19]
    for a in range(k):  # over the nonzeros of grad g_i only (delassus' spans)
        i = rows[a]
        e_i = e
        if restitution is not None:
            e_i = restitution[i]
        s = 0.0
        for j in range(span[0, a], span[1, a] + 1):
            s += G[i, j] * (vfree[j] + e_i * v[j])
        if offset is not None:
            s += offset[i]
        b[a] = s
    pivots = solve_lcp_warm(W, b, rows, k, P, ws, LCP_SLOT_IMPULSE)
    add_reactions(n, k, Y, P, span, vfree, v_out)
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
        delassus(Gbuf, rows, m, factor, n, Y, W, ws[19])
        span = ws[19]
        for a in range(m):  # over the nonzeros of grad g_a only (delassus' spans)
            s = gbuf[a]
            for j in range(span[0, a], span[1, a] + 1):
                s += Gbuf[a, j] * r[j]
            b[a] = s
        if SINGLE_CONSTRAINT:  # a compile-time constant: the LCP solver is not compiled in
            used = solve_lcp_single(W, b, P)
        else:
            used = solve_lcp_warm(W, b, rows, m, P, ws, LCP_SLOT_PROJECTION)
        if used < 0:
            return used
        add_reactions(n, m, Y, P, span, r, r)  # the step r + M^-1 G^T P
        step = 0.0
        size = 1.0
        for j in range(n):
            x[j] += r[j]
            step = max(step, abs(r[j]))
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
    flags = {
        "AFFINE_GAP": affine,
        "SINGLE_CONSTRAINT": n_constraints == 1,
        "DIAGONAL_MASS": diagonal_mass,
    }
    if isinstance(gap, FirstClassKernel):  # one compiled projection for every problem
        key = tuple(flags.values())
        if key not in _FIRST_CLASS_PROJECTIONS:
            template = with_runtime_sizes(_metric_projection, {"gap": 0, "gap_gradient": 1}, set())
            _FIRST_CLASS_PROJECTIONS[key] = specialize(template, flags, True, inline=True)
        return bind_kernels(_FIRST_CLASS_PROJECTIONS[key], (gap, gap_gradient))
    bindings = {"gap": gap, "gap_gradient": gap_gradient, **flags}
    return specialize(_metric_projection, bindings, compile, inline=True)


#: The projections of first-class kernels (the kernels a run-time argument), by their flags.
_FIRST_CLASS_PROJECTIONS: dict[tuple[bool, ...], Callable] = {}
