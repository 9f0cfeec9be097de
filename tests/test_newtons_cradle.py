"""Newton's cradle: the outcome of each impact model on simultaneous contacts, and invariants.

The expected post-impact velocities are worked by hand here, independently of the problem's
closed forms: the LCP with Newton's law on every contact, 0 <= P _|_ W P + (1 + e) G v^- >= 0
with W = G M^-1 G^T, solved as the linear system W P = -(1 + e) G v^- after checking that its
solution is positive (then it is the LCP's unique solution, W being SPD); the sequence of such
LCPs on the blocks that round-off gaps leave active; and the exchange of velocities of
sequential pairwise impacts (the physical outcome for e = 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import (
    METHODS,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import PROBLEMS, NewtonsCradle

T_END = 0.5  # impact at t* = gap / v0 = 0.1; the balls then separate


def run(problem, method, h):
    return simulate(problem, method, T_END) if h is None else simulate(problem, method, T_END, h=h)


def lcp_by_hand_n3(e, v0):
    """Solve the 2 x 2 LCP of N = 3, k = 1 with both impulses positive (see the docstring)."""
    P = np.linalg.solve([[2.0, -1.0], [-1.0, 2.0]], [(1.0 + e) * v0, 0.0])
    assert np.all(P > 0)
    return np.array([v0 - P[0], P[0] - P[1], P[1]])


def lcp_all_contacts(v_minus, e, contacts):
    """Newton's law on the touching row ``contacts`` (gap indices, m = 1): W P = -(1 + e) U^-
    restricted to them, with every P_i > 0 asserted (the unique LCP solution)."""
    v_minus = np.asarray(v_minus, dtype=float)
    n = v_minus.size
    G = np.zeros((n - 1, n))
    G[np.arange(n - 1), np.arange(n - 1)] = -1.0
    G[np.arange(n - 1), np.arange(1, n)] = 1.0
    G = G[list(contacts)]
    P = np.linalg.solve(G @ G.T, -(1.0 + e) * (G @ v_minus))
    assert np.all(P > 0), P
    return v_minus + G.T @ P


#: Radius and gap that are binary fractions: the touching gaps are exactly 0 in floating point.
EXACT = {"radius": 0.125, "gap": 0.125}
DYADIC_STEPS = (2.0**-10, 2.0**-8)
TIME_STEPPERS = [method for method in METHODS.values() if method.requires_step]


def test_registered():
    assert PROBLEMS["NewtonsCradle"] is NewtonsCradle


def test_initial_state():
    p = NewtonsCradle(4, 2, radius=0.5, gap=0.25, speed=2.0)
    np.testing.assert_array_equal(p.gap(p.q0), [0.0, 0.25, 0.0])
    np.testing.assert_array_equal(p.v0, [2.0, 2.0, 0.0, 0.0])
    assert p.impact_time == 0.125
    np.testing.assert_array_equal(p.physical_outcome(), [0.0, 0.0, 2.0, 2.0])


@pytest.mark.parametrize(
    ("method", "h"),
    [
        (MoreauJean(theta=0.5), 1e-3),
        (MoreauJean(theta=0.5), 3e-3),
        (PaoliSchatzman(), 1e-3),
        (PaoliSchatzman(), 3e-3),
    ],
    ids=lambda x: getattr(x, "name", str(x)).split("[")[0],
)
def test_time_stepping_gives_the_lcp_outcome_n3(method, h):
    p = NewtonsCradle(3, 1, speed=1.5)
    expected = lcp_by_hand_n3(1.0, 1.5)
    np.testing.assert_allclose(expected, [-0.5, 1.0, 1.0], rtol=0, atol=1e-15)
    trajectory = run(p, method, h)
    np.testing.assert_allclose(trajectory.v[-1], expected, rtol=0, atol=1e-9)


def test_paoli_schatzman_gives_the_rigid_row_impact():
    for n in (4, 5, 7):
        p = NewtonsCradle(n, 1)
        trajectory = run(p, PaoliSchatzman(), 1e-3)
        expected = np.full(n, 2.0 / n)
        expected[0] = (2.0 - n) / n
        np.testing.assert_allclose(trajectory.v[-1], expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.__name__)
@pytest.mark.parametrize(("n", "k", "e"), [(5, 1, 1.0), (5, 2, 1.0), (5, 1, 0.5)])
def test_time_steppers_give_the_all_contact_lcp_on_exact_gaps(method, n, k, e):
    """Touching gaps exactly 0: all N - 1 contacts are in one LCP (two rigid blocks collide)."""
    p = NewtonsCradle(n, k, restitution=e, **EXACT)
    np.testing.assert_array_equal(p.gap(p.q0)[np.arange(n - 1) != k - 1], 0.0)
    expected = lcp_all_contacts(p.v0, e, range(n - 1))
    block = [1 - (1 + e) * (n - k) / n] * k + [(1 + e) * k / n] * (n - k)
    np.testing.assert_allclose(expected, block, rtol=0, atol=1e-15)
    np.testing.assert_allclose(p.lcp_outcome(), expected, rtol=0, atol=1e-15)
    for h in DYADIC_STEPS:
        trajectory = run(p, method(), h)
        # Paoli-Schatzman's velocity is a central difference (q^{k+1} - q^{k-1}) / (2h): the
        # round-off of q (|q| < 1) divided by 2h
        atol = 1e-12 + 64 * np.finfo(float).eps / h
        np.testing.assert_allclose(trajectory.v[-1], expected, rtol=0, atol=atol)


def test_round_off_gaps_split_the_lcp_n5():
    """r = 0.1: the touching gaps are -+5.6e-17, the position activation leaves contact 3 out
    of the impact step, and the impact is two LCPs one step apart (problem docstring)."""
    p = NewtonsCradle(5, 1)
    g = p.gap(p.q0)
    assert g[1] < 0 < g[2] and g[3] < 0 and abs(g[1:]).max() < 1e-16
    first = lcp_all_contacts(p.v0, 1.0, [0, 1])  # contacts 1, 2 (contact 4 idle)
    np.testing.assert_allclose(first, [-1 / 3, 2 / 3, 2 / 3, 0, 0], rtol=0, atol=1e-15)
    second = first.copy()
    second[1:] = lcp_all_contacts(first[1:], 1.0, [0, 1, 2])  # contacts 2, 3, 4
    np.testing.assert_allclose(second, [-1 / 3, 0, 0, 2 / 3, 2 / 3], rtol=0, atol=1e-15)
    # MoreauJean takes exactly these two steps: the first velocity change is the 3-ball LCP
    trajectory = run(p, MoreauJean(theta=0.5), 1e-3)
    changed = np.flatnonzero(np.abs(np.diff(trajectory.v, axis=0)).max(axis=1) > 1e-12)
    np.testing.assert_allclose(trajectory.v[changed[0] + 1], first, rtol=0, atol=1e-15)
    np.testing.assert_allclose(trajectory.v[changed[1] + 1], second, rtol=0, atol=1e-15)
    assert changed.size == 2
    # the position projection (PaoliSchatzman), and the projected velocity schemes, which
    # activate a contact their impulse pushes out of K and solve the step again, give the
    # all-contact LCP outcome
    projected = (PaoliSchatzman, MoreauJeanProjection, NonsmoothGeneralizedAlpha)
    for method in TIME_STEPPERS:
        for h in (1e-3, 3e-3):
            final = run(p, method(), h).v[-1]
            expected = p.lcp_outcome() if method in projected else second
            atol = 1e-12 + 64 * np.finfo(float).eps / h  # (see the test above)
            np.testing.assert_allclose(final, expected, rtol=0, atol=atol, err_msg=method.__name__)


@pytest.mark.parametrize(("n", "k"), [(3, 1), (5, 1), (5, 2), (5, 3)])
def test_event_driven_gives_the_physical_outcome(n, k):
    p = NewtonsCradle(n, k)
    trajectory = run(p, EventDriven(), None)
    np.testing.assert_allclose(trajectory.v[-1], p.physical_outcome(), rtol=0, atol=1e-9)
    # each binary impact (e = 1) swaps a pair (v0, 0) of neighbours: the k(N - k) inversions
    # of a bubble sort of the velocities
    assert trajectory.impacts.total == k * (n - k)
    np.testing.assert_allclose(p.sequential_outcome(), p.physical_outcome(), rtol=0, atol=0)


def sequential_by_hand(v, e):
    """Binary impacts of equal balls in rounds: all approaching pairs of a round at once (they
    must share no ball, asserted), until none approaches."""
    v = np.array(v, dtype=float)
    while True:
        approaching = np.flatnonzero(v[:-1] - v[1:] > 1e-15)
        if approaching.size == 0:
            return v
        assert np.all(np.diff(approaching) > 1), approaching
        left, right = v[approaching].copy(), v[approaching + 1].copy()
        v[approaching] = ((1 - e) * left + (1 + e) * right) / 2
        v[approaching + 1] = ((1 + e) * left + (1 - e) * right) / 2


@pytest.mark.parametrize(("n", "k"), [(3, 1), (5, 1), (5, 2)])
def test_event_driven_gives_the_sequential_cascade_for_e_below_one(n, k):
    """e = 1/2: at each event the event-driven method resolves the contacts that approach then,
    so it produces the cascade of binary impacts in rounds (every pair approaching at once)."""
    p = NewtonsCradle(n, k, restitution=0.5)
    expected = sequential_by_hand(p.v0, 0.5)
    np.testing.assert_allclose(p.sequential_outcome(), expected, rtol=0, atol=1e-14)
    assert np.all(np.diff(expected) >= 0) and abs(expected.sum() - k) < 1e-14
    trajectory = run(p, EventDriven(), None)
    np.testing.assert_allclose(trajectory.v[-1], expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("method", "h"),
    [(MoreauJean(theta=0.5), 2e-3), (PaoliSchatzman(), 2e-3), (EventDriven(), None)],
    ids=lambda x: getattr(x, "name", str(x)).split("[")[0],
)
@pytest.mark.parametrize("e", [1.0, 0.5])
def test_momentum_energy_admissibility(method, h, e):
    p = NewtonsCradle(5, 2, restitution=e, speed=1.0)
    trajectory = run(p, method, h)
    momentum = trajectory.v.sum(axis=1)
    np.testing.assert_allclose(momentum, 2.0, rtol=0, atol=1e-11)
    energy = 0.5 * (trajectory.v**2).sum(axis=1)
    # Paoli-Schatzman's velocity in the impact step is the step's mean velocity (the balls move
    # together at 2/5 there): compare energies outside two steps around the impact.
    away = np.abs(trajectory.t - p.impact_time) > 2.0 * (h or 1e-6)
    before = away & (trajectory.t < p.impact_time)
    after = away & (trajectory.t > p.impact_time)
    np.testing.assert_allclose(energy[before], 1.0, rtol=0, atol=1e-10)
    if e == 1.0:
        np.testing.assert_allclose(energy[after], 1.0, rtol=0, atol=1e-10)
    else:
        # dissipated, by a cascade of impacts along the row, never created
        assert energy[-1] < 1.0 - 1e-3
        assert np.all(np.diff(energy[after]) <= 1e-10)
    gaps = np.array([p.gap(q) for q in trajectory.q])
    # time-stepping schemes penetrate at most one step's travel; event-driven only round-off
    assert gaps.min() >= -(h * p.speed * (1.0 + 1e-12) if h else 1e-8)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_balls": 1}, "n_balls"),
        ({"n_balls": 2.0}, "n_balls"),
        ({"n_launched": 3}, "n_launched"),
        ({"n_launched": 0}, "n_launched"),
        ({"mass": 0.0}, "mass"),
        ({"radius": -1.0}, "radius"),
        ({"speed": float("nan")}, "speed"),
        ({"gap": 0.0}, "gap"),
        ({"restitution": 1.5}, "restitution"),
        ({"t0": float("inf")}, "t0"),
    ],
)
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        NewtonsCradle(**kwargs)
