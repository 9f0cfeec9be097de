"""Lemke's method on Glocker's LCP of the planar Newton-Coulomb law (docs/friction.md).

For k closed contacts the law is the LCP w = M z + q, 0 <= z _|_ w >= 0 of order N = 4k in
z = (P_N, P_T+, P_T-, lambda) (Stewart and Trinkle 1996, Anitescu and Potra 1997):

    w_N      =  A_NN P_N + A_NT (P_T+ - P_T-)          + b_N   (xi_N),
    w_T+     =  A_TN P_N + A_TT (P_T+ - P_T-) + lambda + b_T   (xi_T + lambda),
    w_T-     = -A_TN P_N - A_TT (P_T+ - P_T-) + lambda - b_T   (-xi_T + lambda),
    w_lambda =  mu P_N - P_T+ - P_T-,

with the Delassus blocks A and right-hand sides b of :mod:`impactbench.core.friction`
(A_TN = A_NT^T). M is copositive (z^T M z = P^T A P + lambda^T mu P_N >= 0 for z >= 0, A
positive semi-definite), and where b lies in the range of the contact rows (e_T = e_N, in
particular e = 0: b = W u for a velocity u) the LCP has a solution and Lemke's method
terminates at one (Anitescu and Potra 1997: M copositive and z^T q >= 0 for every z >= 0 with
M z >= 0 and z^T M z = 0, i.e. W^T P = 0), also where the 2k rows are dependent (a block
resting on two sticking corners, more rows than degrees of freedom): the Delassus matrix is then
singular, the impulses are not unique, the velocity M^-1 W^T P is.

:func:`lemke_friction` is Lemke's complementary pivoting with the covering vector (1, ..., 1),
in revised form (the inverse of the basis, N x N, updated by each pivot; the columns of M are
formed from the Delassus blocks when they enter) with the lexicographic ratio test (the rows of
the basis inverse break ties: no cycling on the degenerate problems of dependent rows). Where
b_N >= 0 it returns no impulse (every contact separates) without pivoting. It ends
when the artificial variable leaves the basis (a solution, refined by two steps of iterative
refinement against the basis' own columns; impulses whose velocities are below round-off of q
are set to 0) or on a ray (no pivot row: no solution,
:data:`LEMKE_RAY`). The basis inverse is held in 16 blocks of shape (>= k, >= k) and the
vectors of length N in 4 pieces of length >= k, so that a scheme's state keeps them in (m, n)
and m-vector entries (:data:`LEMKE_STATE`).
"""

from __future__ import annotations

from ._jit import kernel, scheme_function

#: :func:`lemke_friction` ended on a ray. Where b is in the range of the contact rows (module
#: docstring) the LCP then has no solution; where it is not (e_T != e_N on dependent rows) the
#: termination theorem does not apply and the method may end on a ray although a solution
#: exists.
LEMKE_RAY = -2

#: :func:`lemke_friction` did not end within this many pivots per LCP row.
LEMKE_PIVOTS_PER_ROW = 50

#: Entries of the pivot column below this fraction of its largest are taken as 0.
LEMKE_PIVOT_TOLERANCE = 1e-11

#: A row ties in the ratio test when its basic value after the pivot would be below this
#: fraction of the largest basic value (then the lexicographic rule decides).
LEMKE_TIE_TOLERANCE = 1e-12

#: An impulse whose velocities (its column of M times it) are below this fraction of max |q| is
#: round-off left by the pivots, and set to 0.
ROUND_OFF = 1e-15

#: The names and shapes of the blocks :func:`lemke_friction` works in, in a scheme's state.
LEMKE_STATE = {
    **{f"lemke_B{r}{c}": ("m", "n") for r in range(4) for c in range(4)},
    **{f"lemke_x{r}": "m" for r in range(4)},
    **{f"lemke_y{r}": "m" for r in range(4)},
    **{f"lemke_basis{r}": "m" for r in range(4)},
}


@scheme_function
def lemke_work(s):
    """The work space of :func:`lemke_friction` from a state ``s`` with :data:`LEMKE_STATE`:
    (the 16 blocks of the basis inverse, basic values, pivot column, basis)."""
    inverse = (
        s.lemke_B00, s.lemke_B01, s.lemke_B02, s.lemke_B03,
        s.lemke_B10, s.lemke_B11, s.lemke_B12, s.lemke_B13,
        s.lemke_B20, s.lemke_B21, s.lemke_B22, s.lemke_B23,
        s.lemke_B30, s.lemke_B31, s.lemke_B32, s.lemke_B33,
    )  # fmt: skip
    values = (s.lemke_x0, s.lemke_x1, s.lemke_x2, s.lemke_x3)
    column = (s.lemke_y0, s.lemke_y1, s.lemke_y2, s.lemke_y3)
    basis = (s.lemke_basis0, s.lemke_basis1, s.lemke_basis2, s.lemke_basis3)
    return inverse, values, column, basis


@kernel
def _m_entry(k, ann, ant, att, mu, i, j):
    """Entry (i, j) of the LCP matrix M of the module docstring."""
    bi, a = i // k, i % k
    bj, c = j // k, j % k
    if bi == 0:
        if bj == 0:
            return ann[a, c]
        if bj == 1:
            return ant[a, c]
        if bj == 2:
            return -ant[a, c]
        return 0.0
    if bi == 3:
        if c != a or bj == 3:
            return 0.0
        return mu[a] if bj == 0 else -1.0
    sign = 1.0 if bi == 1 else -1.0
    if bj == 0:
        return sign * ant[c, a]
    if bj == 1:
        return sign * att[a, c]
    if bj == 2:
        return -sign * att[a, c]
    return 1.0 if c == a else 0.0


@kernel
def _q_entry(k, bn, bt, i):
    """Entry i of the LCP vector q = (b_N, b_T, -b_T, 0)."""
    block, a = i // k, i % k
    if block == 0:
        return bn[a]
    if block == 1:
        return bt[a]
    if block == 2:
        return -bt[a]
    return 0.0


@kernel
def _column_entry(k, ann, ant, att, mu, variable, i):
    """Entry i of the column of ``variable`` in I w - M z - (1, ..., 1) z0 = q (variables
    0..N-1 are w, N..2N-1 z, 2N the artificial z0)."""
    size = 4 * k
    if variable < size:
        return 1.0 if i == variable else 0.0
    if variable < 2 * size:
        return -_m_entry(k, ann, ant, att, mu, i, variable - size)
    return -1.0


@kernel
def _get(blocks, k, r, c):
    """Entry (r, c) of the N x N matrix held in 4 x 4 blocks of order k."""
    return blocks[(r // k) * 4 + c // k][r % k, c % k]


@kernel
def _set(blocks, k, r, c, value):
    blocks[(r // k) * 4 + c // k][r % k, c % k] = value


@kernel
def _pivot(inverse, values, column, basis, k, row, entering):
    """Make ``entering`` basic in ``row``: the basis inverse and values updated by the pivot
    column ``column`` (the entering column times the old inverse)."""
    size = 4 * k
    pivot = column[row // k][row % k]
    for c in range(size):
        _set(inverse, k, row, c, _get(inverse, k, row, c) / pivot)
    values[row // k][row % k] /= pivot
    for i in range(size):
        if i == row:
            continue
        factor = column[i // k][i % k]
        if factor == 0.0:
            continue
        for c in range(size):
            _set(inverse, k, i, c, _get(inverse, k, i, c) - factor * _get(inverse, k, row, c))
        values[i // k][i % k] -= factor * values[row // k][row % k]
    basis[row // k][row % k] = entering


@kernel
def _lexicographically_smaller(inverse, column, k, i, r):
    """Whether row i's lexicographic ratio (row i of the inverse over its pivot entry) is below
    row r's."""
    yi = column[i // k][i % k]
    yr = column[r // k][r % k]
    for c in range(4 * k):
        a = _get(inverse, k, i, c) / yi
        b = _get(inverse, k, r, c) / yr
        if a != b:
            return a < b
    return False


@kernel
def _refine(k, ann, ant, att, bn, bt, mu, inverse, values, column, basis):
    """One step of iterative refinement of the basic values: x += B^-1 (q - B x), with B the
    basis' columns (``column`` receives the residual)."""
    size = 4 * k
    for i in range(size):
        residual = _q_entry(k, bn, bt, i)
        for r in range(size):
            variable = int(basis[r // k][r % k])
            entry = _column_entry(k, ann, ant, att, mu, variable, i)
            if entry != 0.0:
                residual -= entry * values[r // k][r % k]
        column[i // k][i % k] = residual
    for r in range(size):
        correction = 0.0
        for c in range(size):
            correction += _get(inverse, k, r, c) * column[c // k][c % k]
        values[r // k][r % k] += correction


@kernel
def lemke_friction(k, ann, ant, att, bn, bt, mu, pn, pt, inverse, values, column, basis):
    """The impulses of the planar Newton-Coulomb law by Lemke's method (module docstring).

    Parameters
    ----------
    k : int
        Number of closed contacts, >= 1.
    ann, ant, att : arrays (>= k, >= k)
        The Delassus blocks A_NN, A_NT, A_TT.
    bn, bt, mu : arrays (>= k)
        b_N, b_T and the Coulomb coefficients.
    pn, pt : arrays (>= k)
        Receive P_N and P_T.
    inverse : tuple of 16 arrays (>= k, >= k)
        Work space: the basis inverse, in blocks (row-major).
    values, column, basis : tuples of 4 arrays (>= k)
        Work space: the basic values, the pivot column and the basic variables (as floats).

    Returns
    -------
    int
        The number of pivots (0 when q >= 0: no impulse); :data:`LEMKE_RAY` when the method
        ends on a ray (no solution); -1 if k < 1 or no end within
        :data:`LEMKE_PIVOTS_PER_ROW` pivots per row.
    """
    if k < 1:
        return -1
    size = 4 * k
    artificial = 2 * size
    scale = 0.0
    row = -1
    smallest = 0.0
    for i in range(size):
        q = _q_entry(k, bn, bt, i)
        scale = max(scale, abs(q))
        if q < smallest or (q == smallest and row >= 0):  # ties: the last row (lexicographic)
            smallest = q
            row = i
    for a in range(k):
        pn[a] = 0.0
        pt[a] = 0.0
    if row < 0:  # q >= 0: z = 0
        return 0
    separating = True
    for a in range(k):
        separating = separating and bn[a] >= 0.0
    if separating:  # b_N >= 0: no impulse (z = (0, 0, 0, |b_T|)), which Lemke may miss
        return 0
    for r in range(size):
        for c in range(size):
            _set(inverse, k, r, c, 1.0 if r == c else 0.0)
        values[r // k][r % k] = _q_entry(k, bn, bt, r)
        basis[r // k][r % k] = r
        column[r // k][r % k] = -1.0
    _pivot(inverse, values, column, basis, k, row, artificial)
    entering = size + row  # the complement of w_row, which left
    pivots = 1
    limit = LEMKE_PIVOTS_PER_ROW * size
    while pivots < limit:
        largest = 0.0
        for r in range(size):
            entry = 0.0
            for c in range(size):
                value = _column_entry(k, ann, ant, att, mu, entering, c)
                if value != 0.0:
                    entry += _get(inverse, k, r, c) * value
            column[r // k][r % k] = entry
            largest = max(largest, abs(entry))
        threshold = LEMKE_PIVOT_TOLERANCE * largest
        ratio = 0.0
        row = -1
        largest_value = scale
        for r in range(size):
            largest_value = max(largest_value, abs(values[r // k][r % k]))
        for r in range(size):
            y = column[r // k][r % k]
            if y > threshold:
                candidate = max(values[r // k][r % k], 0.0) / y
                if row < 0 or candidate < ratio:
                    ratio = candidate
                    row = r
        if row < 0:
            return LEMKE_RAY
        tie = LEMKE_TIE_TOLERANCE * largest_value
        chosen = -1
        for r in range(size):
            y = column[r // k][r % k]
            if y > threshold and max(values[r // k][r % k], 0.0) - ratio * y <= tie:
                if int(basis[r // k][r % k]) == artificial:
                    chosen = r
                    break
                if chosen < 0 or _lexicographically_smaller(inverse, column, k, r, chosen):
                    chosen = r
        leaving = int(basis[chosen // k][chosen % k])
        _pivot(inverse, values, column, basis, k, chosen, entering)
        pivots += 1
        if leaving == artificial:
            for _ in range(2):
                _refine(k, ann, ant, att, bn, bt, mu, inverse, values, column, basis)
            for r in range(size):
                variable = int(basis[r // k][r % k]) - size
                if 0 <= variable < 3 * k:  # an impulse: 0 where its velocities are round-off
                    value = max(values[r // k][r % k], 0.0)
                    effect = 0.0
                    for i in range(size):
                        effect = max(effect, abs(_m_entry(k, ann, ant, att, mu, i, variable)))
                    if value * effect <= ROUND_OFF * scale:
                        value = 0.0
                    block, a = variable // k, variable % k
                    if block == 0:
                        pn[a] = value
                    elif block == 1:
                        pt[a] += value
                    elif block == 2:
                        pt[a] -= value
            return pivots
        entering = leaving + size if leaving < size else leaving - size
    return -1
