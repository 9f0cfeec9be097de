"""Newton's cradle: the outcome of each impact model on simultaneous contacts, and invariants.

The expected post-impact velocities are the closed forms of the problem's docstring: the LCP
with Newton's law worked by hand for N = 3, k = 1 (v = (-1/3, 2/3, 2/3) v0), the elastic impact
of one ball on the rigid row for the one-shot LCP of any N, and the exchange of velocities of
sequential pairwise impacts (the physical outcome for e = 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import PROBLEMS, NewtonsCradle

T_END = 0.5  # impact at t* = gap / v0 = 0.1; the balls then separate


def run(problem, method, h):
    return simulate(problem, method, T_END) if h is None else simulate(problem, method, T_END, h=h)


def lcp_by_hand_n3(e, v0):
    """Solve the 2 x 2 LCP of N = 3, k = 1 with both impulses positive (see the docstring)."""
    P = np.linalg.solve([[2.0, -1.0], [-1.0, 2.0]], [(1.0 + e) * v0, 0.0])
    assert np.all(P > 0)
    return np.array([v0 - P[0], P[0] - P[1], P[1]])


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


def test_moreau_jean_n5_splits_the_row():
    trajectory = run(NewtonsCradle(5, 1), MoreauJean(theta=0.5), 1e-3)
    np.testing.assert_allclose(
        trajectory.v[-1], [-1 / 3, 0.0, 0.0, 2 / 3, 2 / 3], rtol=0, atol=1e-9
    )


@pytest.mark.parametrize(("n", "k"), [(3, 1), (5, 1), (5, 2), (6, 3)])
def test_event_driven_gives_the_physical_outcome(n, k):
    p = NewtonsCradle(n, k)
    trajectory = run(p, EventDriven(), None)
    np.testing.assert_allclose(trajectory.v[-1], p.physical_outcome(), rtol=0, atol=1e-9)


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
