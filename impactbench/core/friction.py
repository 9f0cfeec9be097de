"""Planar Coulomb friction at velocity level: the Newton-Coulomb impact law, solved exactly.

For k closed contacts with normal rows W_N,a (the gap gradients), tangent rows W_T,a (one per
contact: planar friction), Coulomb coefficients mu_a >= 0 and restitutions e_N, e_T,a, the
impulses P_N, P_T (k each) give the velocity

    v+ = v_free + M^-1 (W_N^T P_N + W_T^T P_T),

and with xi_N = W_N v+ + e_N W_N v, xi_T = W_T v+ + e_T W_T v, Moreau's law with friction
(docs/friction.md; Glocker's set-valued force laws) holds contact by contact:

    0 <= P_N,a  _|_  xi_N,a >= 0,
    -xi_T,a in the normal cone of [-mu_a P_N,a, mu_a P_N,a] at P_T,a,

that is: open (P_N,a = P_T,a = 0, xi_N,a >= 0), stick (P_N,a >= 0, xi_N,a = 0, xi_T,a = 0,
abs(P_T,a) <= mu_a P_N,a), or slip (P_N,a >= 0, xi_N,a = 0, P_T,a = -mu_a P_N,a sign(xi_T,a)).
In the plane the friction cone is polyhedral, and these conditions are exactly Glocker's LCP
in (P_N, P_T+, P_T-, lambda) with lambda = abs(xi_T) (:func:`complementarity_residual` measures
it). :func:`planar_friction` solves them by enumerating the 4^k states of the contacts (open,
stick, slip forwards, slip backwards): each state is a linear system of order 2k, solved by
Gaussian elimination with partial pivoting, and the first state whose solution satisfies its
inequalities (to a relative 1e-12) is taken. Exact (no iteration), for the few contacts of a
planar frictional problem (at most :data:`MAX_FRICTION_CONTACTS` closed at once). Where the law
has several solutions (a Painleve situation at velocity level: W_N M^-1 (W_N - mu sign W_T)^T
not positive), the order above chooses one. Where the 2k rows are dependent (a block resting on
two sticking corners) the state that holds has a singular system and the enumeration passes it
over: :func:`impactbench.core.friction_lemke.lemke_friction` (Lemke's method on the same LCP)
solves the law there, and :func:`friction_impulse` calls it whenever the enumeration finds no
state or more than :data:`ENUMERATED_CONTACTS` contacts are closed.

The Delassus blocks are A_NN = W_N M^-1 W_N^T, A_NT = W_N M^-1 W_T^T, A_TT = W_T M^-1 W_T^T,
and b_N = W_N (v_free + e_N v), b_T = W_T (v_free + e_T v).
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel, scheme_function
from .contact import DEGENERATE_GRADIENT, all_finite, ldl_factor, solve_mass
from .friction_lemke import LEMKE_RAY, LEMKE_STATE, lemke_friction, lemke_work
from .status_codes import (
    STATUS_CONTACT_SOLVE_FAILED,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_GAP_NOT_FINITE,
    STATUS_OK,
)

#: Most contacts closed at once that :func:`planar_friction` takes (4^k states enumerated).
MAX_FRICTION_CONTACTS = 6

#: Most contacts closed at once for which :func:`friction_impulse` enumerates the states first
#: (4^3 = 64 systems); beyond, and where no state solves the law, it takes Lemke's method.
ENUMERATED_CONTACTS = 3

#: Status of a step whose frictional contact LCP has no solution (Lemke's method ended on a
#: ray), and its message (a scheme's ``failure_reasons``).
STATUS_FRICTION_NO_SOLUTION = 120
FRICTION_FAILURE_REASONS = {
    STATUS_FRICTION_NO_SOLUTION: (
        "Lemke's method ended on a ray: the frictional contact LCP has no solution if e_T = e_N "
        "or the contact rows are independent (otherwise a solution may exist that Lemke's method "
        "misses)"
    ),
}

#: A frictional impact creates energy when the change of kinetic energy of its law
#: (:func:`law_energy_change`) exceeds this fraction of the change's scale: a solution of the
#: law holds its complementarity to the relative :data:`FRICTION_TOLERANCE`, and for an
#: energetically consistent law (e_N = e_T) the change is P . xi / (1 + e) minus a
#: non-negative term, so round-off and that tolerance give at most a few
#: FRICTION_TOLERANCE of the scale per contact.
LAW_ENERGY_TOLERANCE = 1e3 * 1e-12

#: States of a contact in :func:`planar_friction`.
OPEN, STICK, SLIP_FORWARD, SLIP_BACKWARD = 0, 1, 2, 3

#: Relative tolerance of the inequalities of a state (velocities against max |b|, impulses
#: against the largest impulse of the candidate).
FRICTION_TOLERANCE = 1e-12


@kernel
def _block_get(S00, S01, S10, S11, k, r, c):  # noqa: N803
    """Entry (r, c) of the 2k x 2k matrix held as four k x k blocks."""
    if r < k:
        return S00[r, c] if c < k else S01[r, c - k]
    return S10[r - k, c] if c < k else S11[r - k, c - k]


@kernel
def _block_set(S00, S01, S10, S11, k, r, c, value):  # noqa: N803
    """Set entry (r, c) of the 2k x 2k matrix held as four k x k blocks."""
    if r < k:
        if c < k:
            S00[r, c] = value
        else:
            S01[r, c - k] = value
    elif c < k:
        S10[r - k, c] = value
    else:
        S11[r - k, c - k] = value


@kernel
def _solve_blocks(S00, S01, S10, S11, k, x0, x1):  # noqa: N803
    """Solve the 2k system (four blocks, right-hand side x0, x1) in place by Gaussian
    elimination with partial pivoting; the solution replaces x0, x1. False if a pivot is below
    1e-14 times the largest entry (a singular state: no unique solution)."""
    size = 2 * k
    scale = 0.0
    for r in range(size):
        for c in range(size):
            scale = max(scale, abs(_block_get(S00, S01, S10, S11, k, r, c)))
    if not scale > 0.0:
        return False
    for c in range(size):
        best = c
        largest = abs(_block_get(S00, S01, S10, S11, k, c, c))
        for r in range(c + 1, size):
            value = abs(_block_get(S00, S01, S10, S11, k, r, c))
            if value > largest:
                best = r
                largest = value
        if not largest > 1e-14 * scale:
            return False
        if best != c:
            for j in range(size):
                a = _block_get(S00, S01, S10, S11, k, c, j)
                _block_set(S00, S01, S10, S11, k, c, j, _block_get(S00, S01, S10, S11, k, best, j))
                _block_set(S00, S01, S10, S11, k, best, j, a)
            a = x0[c] if c < k else x1[c - k]
            b = x0[best] if best < k else x1[best - k]
            if c < k:
                x0[c] = b
            else:
                x1[c - k] = b
            if best < k:
                x0[best] = a
            else:
                x1[best - k] = a
        pivot = _block_get(S00, S01, S10, S11, k, c, c)
        rc = x0[c] if c < k else x1[c - k]
        for r in range(c + 1, size):
            factor = _block_get(S00, S01, S10, S11, k, r, c) / pivot
            if factor != 0.0:
                for j in range(c + 1, size):
                    value = _block_get(S00, S01, S10, S11, k, r, j)
                    value -= factor * _block_get(S00, S01, S10, S11, k, c, j)
                    _block_set(S00, S01, S10, S11, k, r, j, value)
                if r < k:
                    x0[r] -= factor * rc
                else:
                    x1[r - k] -= factor * rc
    for r in range(size - 1, -1, -1):
        value = x0[r] if r < k else x1[r - k]
        for j in range(r + 1, size):
            value -= _block_get(S00, S01, S10, S11, k, r, j) * (x0[j] if j < k else x1[j - k])
        value /= _block_get(S00, S01, S10, S11, k, r, r)
        if r < k:
            x0[r] = value
        else:
            x1[r - k] = value
    return True


@kernel
def planar_friction(k, ann, ant, att, bn, bt, mu, pn, pt, S00, S01, S10, S11):  # noqa: N803
    """The impulses of the planar Newton-Coulomb law for k closed contacts (module docstring).

    Parameters
    ----------
    k : int
        Number of closed contacts, 1 <= k <= :data:`MAX_FRICTION_CONTACTS`.
    ann, ant, att : arrays (>= k, >= k)
        The Delassus blocks A_NN, A_NT, A_TT of the k contacts.
    bn, bt : arrays (>= k)
        b_N and b_T.
    mu : array (>= k)
        The Coulomb coefficient of each contact.
    pn, pt : arrays (>= k)
        Receive P_N and P_T.
    S00, S01, S10, S11 : arrays (>= k, >= k)
        Work space (the linear system of a state).

    Returns
    -------
    int
        The number of states tried (>= 1); -1 if none satisfies its inequalities (or k is out
        of range); :data:`DEGENERATE_GRADIENT` if a contact's A_NN,aa is not positive.
    """
    if k < 1 or k > MAX_FRICTION_CONTACTS:
        return -1
    for a in range(k):
        if not ann[a, a] > 0.0 or not att[a, a] > 0.0:
            return DEGENERATE_GRADIENT
    vscale = 0.0
    for a in range(k):
        vscale = max(vscale, abs(bn[a]), abs(bt[a]))
    tv = FRICTION_TOLERANCE * vscale
    states = 4**k
    for code in range(states):
        for r in range(2 * k):
            for c in range(2 * k):
                _block_set(S00, S01, S10, S11, k, r, c, 0.0)
        rest = code
        for a in range(k):
            state = rest % 4
            rest //= 4
            if state == OPEN:
                S00[a, a] = 1.0
                pn[a] = 0.0
            else:
                for c in range(k):
                    S00[a, c] = ann[a, c]
                    S01[a, c] = ant[a, c]
                pn[a] = -bn[a]
            if state == STICK:
                for c in range(k):
                    S10[a, c] = ant[c, a]
                    S11[a, c] = att[a, c]
                pt[a] = -bt[a]
            else:
                S11[a, a] = 1.0
                pt[a] = 0.0
                if state == SLIP_FORWARD:  # xi_T > 0: P_T = -mu P_N
                    S10[a, a] = mu[a]
                elif state == SLIP_BACKWARD:  # xi_T < 0: P_T = mu P_N
                    S10[a, a] = -mu[a]
        if not _solve_blocks(S00, S01, S10, S11, k, pn, pt):
            continue
        pscale = 0.0
        for a in range(k):
            pscale = max(pscale, abs(pn[a]), abs(pt[a]))
        tp = FRICTION_TOLERANCE * pscale
        feasible = True
        rest = code
        for a in range(k):
            state = rest % 4
            rest //= 4
            xi_n = bn[a]
            xi_t = bt[a]
            for c in range(k):
                xi_n += ann[a, c] * pn[c] + ant[a, c] * pt[c]
                xi_t += ant[c, a] * pn[c] + att[a, c] * pt[c]
            if state == OPEN:
                feasible = xi_n >= -tv
            elif pn[a] < -tp:
                feasible = False
            elif state == STICK:
                feasible = abs(pt[a]) <= mu[a] * pn[a] + tp
            elif state == SLIP_FORWARD:
                feasible = xi_t >= -tv
            else:
                feasible = xi_t <= tv
            if not feasible:
                break
        if feasible:
            return code + 1
    return -1


@kernel
def law_energy_change(k, ann, ant, att, bn, bt, rows, e_n, e_t, e, pn, pt):
    """The change of kinetic energy made by the Newton-Coulomb law's impulses, and its scale.

    With U- the pre-impact normal and tangent velocities of the law, b = (1 + e) U- row by row
    (b_N = W_N (v_free + e_N v), b_T = W_T (v_free + e_T v): U- = W v where v_free = v, the law
    of an impact), the impulses P = (P_N, P_T) change the kinetic energy by

        dT = P . U- + P^T A P / 2   (A the Delassus matrix of the closed contacts),

    the kinetic energy after the impact against before, in the kinetic metric:
    (v- + M^-1 W^T P)^T M (v- + M^-1 W^T P) / 2 - v-^T M v- / 2. For e_N = e_T = e,
    dT = P . xi / (1 + e) - (1 - e) P^T A P / (2 (1 + e)) <= 0 (Glocker's energetic
    consistency: P . xi <= 0 by the law); for e_N != e_T it can be positive
    (docs/friction.md).

    Parameters
    ----------
    k : int
        Number of closed contacts, whose constraints are ``rows[:k]``.
    ann, ant, att : arrays (>= k, >= k)
        The Delassus blocks of the k contacts.
    bn, bt : arrays (>= k)
        b_N and b_T of the k contacts.
    rows : int array (>= k)
    e_n, e_t : arrays (m)
        e_N,i (a negative value: ``e``) and e_T,i of each constraint i.
    e : float
    pn, pt : arrays (>= k)
        The impulses.

    Returns
    -------
    change, scale : float
        dT, and the sum of the magnitudes of its terms (>= 0).
    """
    change = 0.0
    scale = 0.0
    for a in range(k):
        i = rows[a]
        e_normal = e_n[i] if e_n[i] >= 0.0 else e
        normal = pn[a] * bn[a] / (1.0 + e_normal)
        tangent = pt[a] * bt[a] / (1.0 + e_t[i])
        un = 0.0  # (A P)_N,a and (A P)_T,a
        ut = 0.0
        for c in range(k):
            un += ann[a, c] * pn[c] + ant[a, c] * pt[c]
            ut += ant[c, a] * pn[c] + att[a, c] * pt[c]
        quadratic = 0.5 * (pn[a] * un + pt[a] * ut)
        change += normal + tangent + quadratic
        scale += abs(normal) + abs(tangent) + abs(quadratic)
    return change, scale


def complementarity_residual(
    delassus: np.ndarray,
    b: np.ndarray,
    mu: np.ndarray,
    pn: np.ndarray,
    pt: np.ndarray,
) -> float:
    """The largest violation of Glocker's LCP by (P_N, P_T), relative to the problem's scale.

    With xi = A (P_N, P_T) + b (``delassus`` A the (2k, 2k) matrix of the normal then tangent
    rows, ``b`` (2k,) (b_N, b_T)), P_T+ = max(P_T, 0), P_T- = max(-P_T, 0) and
    lambda = abs(xi_T), the LCP's pairs are (P_N, xi_N), (P_T+, xi_T + lambda),
    (P_T-, -xi_T + lambda), (lambda, mu P_N - P_T+ - P_T-); each must have both members >= 0
    and one of them 0. Returns max over the pairs of max(-z, -w, min(abs(z), abs(w))) after
    dividing the impulse members by max abs(P) and the velocity members by max(abs(b), abs(A P))
    (0 for an exact solution; round-off gives a few eps).

    Parameters
    ----------
    delassus : ndarray, shape (2k, 2k)
    b : ndarray, shape (2k,)
    mu : ndarray, shape (k,)
    pn, pt : ndarray, shape (k,)
    """
    delassus = np.asarray(delassus, dtype=float)
    k = len(pn)
    p = np.concatenate([pn, pt])
    xi = delassus @ p + b
    xi_n, xi_t = xi[:k], xi[k:]
    p_scale = max(float(np.abs(p).max()), np.finfo(float).tiny)
    v_scale = max(float(np.abs(b).max()), float(np.abs(delassus @ p).max()), np.finfo(float).tiny)
    lam = np.abs(xi_t)
    pairs = [
        (pn / p_scale, xi_n / v_scale),
        (np.maximum(pt, 0.0) / p_scale, (xi_t + lam) / v_scale),
        (np.maximum(-pt, 0.0) / p_scale, (lam - xi_t) / v_scale),
        (lam / v_scale, (mu * pn - np.abs(pt)) / p_scale),
    ]
    worst = 0.0
    for z, w in pairs:
        worst = max(worst, float(np.max(-z)), float(np.max(-w)))
        worst = max(worst, float(np.max(np.minimum(np.abs(z), np.abs(w)))))
    return worst


def frictional_impact(
    mass_matrix: np.ndarray,
    normal_rows: np.ndarray,
    tangent_rows: np.ndarray,
    v: np.ndarray,
    v_free: np.ndarray,
    restitution: float,
    tangential_restitution: np.ndarray,
    friction: np.ndarray,
    solver: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The velocity after the planar Newton-Coulomb law on k closed contacts (Python
    convenience around :func:`planar_friction` and
    :func:`impactbench.core.friction_lemke.lemke_friction`).

    Parameters
    ----------
    mass_matrix : ndarray, shape (n, n)
    normal_rows, tangent_rows : ndarray, shape (k, n)
        W_N and W_T of the closed contacts.
    v, v_free : ndarray, shape (n,)
        The velocity before, and without, the impulses.
    restitution : float
        e_N.
    tangential_restitution, friction : ndarray, shape (k,)
        e_T and mu of each contact.
    solver : {"auto", "enumeration", "lemke"}
        "auto" (default): as :func:`friction_impulse`, the enumeration for at most
        :data:`ENUMERATED_CONTACTS` contacts and Lemke's method where it finds no state;
        "enumeration" or "lemke": that solver alone.

    Returns
    -------
    v_plus : ndarray, shape (n,)
    pn, pt : ndarray, shape (k,)

    Raises
    ------
    ValueError
        If ``mass_matrix`` is not positive definite or a row vanishes.
    RuntimeError
        If the solver finds no solution of the law.
    """
    if solver not in ("auto", "enumeration", "lemke"):
        raise ValueError(f"solver must be 'auto', 'enumeration' or 'lemke', got {solver!r}")
    M = np.ascontiguousarray(mass_matrix, dtype=float)  # noqa: N806
    n = M.shape[0]
    wn = np.atleast_2d(np.asarray(normal_rows, dtype=float))
    wt = np.atleast_2d(np.asarray(tangent_rows, dtype=float))
    k = wn.shape[0]
    factor = np.empty((n, n))
    if not ldl_factor(M, n, factor):
        raise ValueError(f"mass_matrix is not positive definite: {M.tolist()}")
    yn = np.empty((k, n))
    yt = np.empty((k, n))
    for a in range(k):
        solve_mass(factor, n, np.ascontiguousarray(wn[a]), yn[a])
        solve_mass(factor, n, np.ascontiguousarray(wt[a]), yt[a])
    v = np.asarray(v, dtype=float)
    v_free = np.asarray(v_free, dtype=float)
    e_t = np.asarray(tangential_restitution, dtype=float)
    bn = wn @ (v_free + restitution * v)
    bt = wt @ v_free + e_t * (wt @ v)
    pn, pt = np.empty(k), np.empty(k)
    mu = np.ascontiguousarray(friction, dtype=float)
    ann, ant, att = wn @ yn.T, wn @ yt.T, wt @ yt.T
    used = -1
    if solver == "enumeration" or (solver == "auto" and k <= ENUMERATED_CONTACTS):
        blocks = [np.empty((k, k)) for _ in range(4)]
        used = planar_friction(k, ann, ant, att, bn, bt, mu, pn, pt, *blocks)
    if (
        used == DEGENERATE_GRADIENT
        or not (np.diag(ann) > 0.0).all()
        or not (np.diag(att) > 0.0).all()
    ):
        raise ValueError(
            f"a contact row vanishes: normal_rows={wn.tolist()}, tangent_rows={wt.tolist()}"
        )
    if used < 0 and solver != "enumeration":
        inverse = tuple(np.empty((k, k)) for _ in range(16))
        work = [tuple(np.empty(k) for _ in range(4)) for _ in range(3)]
        used = lemke_friction(k, ann, ant, att, bn, bt, mu, pn, pt, inverse, *work)
        if used == LEMKE_RAY:
            raise RuntimeError("the Newton-Coulomb law has no solution (Lemke's method: a ray)")
    if used < 0:
        raise RuntimeError(f"the {solver} solver found no solution of the Newton-Coulomb law")
    return v_free + pn @ yn + pt @ yt, pn, pt


# --------------------------------------------------------------------------------------------
# The law in a scheme's step (impactbench.core.scheme)

#: The state :func:`friction_impulse` works in, beside :data:`impactbench.core.scheme.IMPACT_STATE`
#: and the factor ``L`` of M: the tangent rows and M^-1 W_T^T, mu and e_T of each contact, the
#: Delassus blocks and right-hand sides of the closed contacts, their impulses, and the work space
#: of :func:`planar_friction`. Its (m, n) blocks hold (k, k) matrices: a frictional problem has
#: m <= n (:func:`check_friction_sizes`).
FRICTION_STATE = {
    "T": ("m", "n"),
    "YT": ("m", "n"),
    "mu": "m",
    "e_t": "m",
    "mu_closed": "m",
    "ann": ("m", "n"),
    "ant": ("m", "n"),
    "att": ("m", "n"),
    "bn": "m",
    "bt": "m",
    "pn": "m",
    "pt": "m",
    "S00": ("m", "n"),
    "S01": ("m", "n"),
    "S10": ("m", "n"),
    "S11": ("m", "n"),
    "tangent_impulse": "m",
    "e_n": "m",
    **LEMKE_STATE,
}


@kernel
def problem_restitution(q, p, e_n):
    """The ``normal_restitution`` of a frictional problem that declares none: -1 for each
    contact, which :func:`friction_impulse` reads as the problem's ``restitution``."""
    for i in range(e_n.shape[0]):
        e_n[i] = -1.0


def check_friction_sizes(n_dof: int, n_constraints: int) -> None:
    """ValueError unless a frictional problem's sizes fit :data:`FRICTION_STATE`
    (n_constraints <= n_dof: more frictional contacts than degrees of freedom are redundant)."""
    if n_constraints > n_dof:
        raise ValueError(
            f"a frictional problem must have n_constraints <= n_dof (no method of impactbench "
            f"integrates more frictional contacts than degrees of freedom), got n_constraints="
            f"{n_constraints} > n_dof={n_dof}"
        )


@scheme_function
def friction_impulse(s, problem, n, m, q, v, vfree, e, v_out, p, approaching, tangent_impulse):
    """The planar Newton-Coulomb law on the contacts closed at ``q``: the frictional
    counterpart of :func:`impactbench.core.scheme.velocity_impulse`, with its contract
    (active set A = {i : g_i(q) <= 0}, with ``approaching`` only those with G_i v <= 0; the
    impulses and normal velocities the driver logs; ``v_out`` set when A is not empty), the
    law of the module docstring in place of the frictionless one: on A,

        v_out = vfree + M^-1 (G_A^T P_N + W_T,A^T P_T),
        xi_N = G_A v_out + e G_A v,  xi_T = W_T,A v_out + e_T W_T,A v,

    with Coulomb's law between P_T and xi_T (:func:`planar_friction`). An impact whose law
    creates kinetic energy (:func:`law_energy_change` above :data:`LAW_ENERGY_TOLERANCE` of its
    scale) is counted in ``s.law_gains`` and its gain kept in ``s.law_largest_gain`` when the
    largest (the driver's energy record). ``s.impulse`` receives
    P_N, ``tangent_impulse`` (m) P_T (0 off A); ``problem`` carries the kernels
    ``tangent_gradient``, ``friction`` and ``normal_restitution`` (where it writes e_N,i >= 0
    for contact i, that replaces ``e``).

    Returns
    -------
    status, active, states
        As :func:`impactbench.core.scheme.velocity_impulse`; ``states`` is the number of
        contact states :func:`planar_friction` tried, or where it found none or more than
        :data:`ENUMERATED_CONTACTS` contacts are closed, that plus Lemke's pivots
        (:func:`impactbench.core.friction_lemke.lemke_friction`);
        :data:`STATUS_FRICTION_NO_SOLUTION` when Lemke's method ends on a ray (the law has no
        solution), ``STATUS_CONTACT_SOLVE_FAILED`` when it exceeds its pivots.
    """
    g = s.g
    G = s.G
    problem.gap(q, p, g)
    closed = False
    for i in range(m):
        if g[i] <= 0.0:
            closed = True
        elif not g[i] > 0.0:  # NaN is neither open nor closed
            return STATUS_GAP_NOT_FINITE, 0, 0
    if not closed:
        return STATUS_OK, 0, 0
    problem.gap_gradient(q, p, G)
    problem.tangent_gradient(q, p, s.T)
    if not (all_finite(G, m, n) and all_finite(s.T, m, n)):
        return STATUS_GAP_NOT_FINITE, 0, 0
    problem.friction(q, p, s.mu, s.e_t)
    problem.normal_restitution(q, p, s.e_n)
    rows = s.rows
    active = 0
    for i in range(m):
        if g[i] <= 0.0:
            take = True
            if approaching:
                u = 0.0
                for j in range(n):
                    u += G[i, j] * v[j]
                take = u <= 0.0
            if take:
                rows[active] = i
                active += 1
    if active == 0:
        return STATUS_OK, 0, 0
    Y = s.Y
    YT = s.YT
    for a in range(active):
        i = rows[a]
        for j in range(n):
            Y[a, j] = G[i, j]
            YT[a, j] = s.T[i, j]
        solve_mass(s.L, n, Y[a], Y[a])
        solve_mass(s.L, n, YT[a], YT[a])
    for a in range(active):
        i = rows[a]
        bn = 0.0
        bt = 0.0
        e_i = s.e_n[i] if s.e_n[i] >= 0.0 else e
        for j in range(n):
            bn += G[i, j] * (vfree[j] + e_i * v[j])
            bt += s.T[i, j] * (vfree[j] + s.e_t[i] * v[j])
        s.bn[a] = bn
        s.bt[a] = bt
        s.mu_closed[a] = s.mu[i]
        for c in range(active):
            nn = 0.0
            nt = 0.0
            tt = 0.0
            for j in range(n):
                nn += G[i, j] * Y[c, j]
                nt += G[i, j] * YT[c, j]
                tt += s.T[i, j] * YT[c, j]
            s.ann[a, c] = nn
            s.ant[a, c] = nt
            s.att[a, c] = tt
    used = -1
    if active <= ENUMERATED_CONTACTS:
        used = planar_friction(
            active, s.ann, s.ant, s.att, s.bn, s.bt, s.mu_closed, s.pn, s.pt,
            s.S00, s.S01, s.S10, s.S11,
        )  # fmt: skip
    if used == DEGENERATE_GRADIENT:
        return STATUS_DEGENERATE_GRADIENT, 0, 0
    if used < 0:
        for a in range(active):
            if not s.ann[a, a] > 0.0 or not s.att[a, a] > 0.0:
                return STATUS_DEGENERATE_GRADIENT, 0, 0
        inverse, values, column, basis = lemke_work(s)
        pivots = lemke_friction(
            active, s.ann, s.ant, s.att, s.bn, s.bt, s.mu_closed, s.pn, s.pt,
            inverse, values, column, basis,
        )  # fmt: skip
        if pivots == LEMKE_RAY:
            return STATUS_FRICTION_NO_SOLUTION, 0, 0
        if pivots < 0:
            return STATUS_CONTACT_SOLVE_FAILED, 0, 0
        used = 4**active + pivots if active <= ENUMERATED_CONTACTS else pivots
    change, scale = law_energy_change(
        active, s.ann, s.ant, s.att, s.bn, s.bt, rows, s.e_n, s.e_t, e, s.pn, s.pt
    )
    if change > LAW_ENERGY_TOLERANCE * scale:  # the law created energy (docs/friction.md)
        s.law_gains[0] += 1.0
        s.law_largest_gain[0] = max(s.law_largest_gain[0], change)
    for j in range(n):
        v_out[j] = vfree[j]
    for a in range(active):
        for j in range(n):
            v_out[j] += s.pn[a] * Y[a, j] + s.pt[a] * YT[a, j]
    for i in range(m):
        s.impulse[i] = 0.0
        tangent_impulse[i] = 0.0
    for a in range(active):
        i = rows[a]
        s.impulse[i] = s.pn[a]
        tangent_impulse[i] = s.pt[a]
        before = 0.0
        after = 0.0
        for j in range(n):
            before += G[i, j] * v[j]
            after += G[i, j] * v_out[j]
        s.normal_before[i] = before
        s.normal_after[i] = after
    return STATUS_OK, active, used
