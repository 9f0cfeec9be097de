"""An impact law that says what it does (issue 51, items 3 and 6): the Newton-Coulomb law's
energetic consistency, checked at each frictional impact and reported in a run's stats.

Glocker's condition (docs/friction.md): with e_N = e_T the law never creates kinetic energy,
whatever the Delassus matrix; with a decoupled one (A_NT = 0) it never does for any e_N, e_T;
with e_N != e_T and A_NT != 0 it can. The ImpactingStick (e_N = 1, e_T = 0, its contact at the
end of an inclined stick) gains energy at its first impact: the closed form of that impact
(:meth:`ImpactingStick.impact`) gives the gain every method must report.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core.friction import (
    LAW_ENERGY_TOLERANCE,
    frictional_impact,
    law_energy_change,
)
from impactbench.methods import (
    Adaptive,
    CatchingUp,
    EventDriven,
    MoreauJean,
    NonsmoothGeneralizedAlpha,
)
from impactbench.problems import ImpactingStick


def _law_change(mass, wn, wt, v, v_free, e_n, e_t, pn, pt):
    """law_energy_change on the arrays of one frictional impact (Delassus blocks from M, W)."""
    inverse = np.linalg.inv(mass)
    ann, ant, att = wn @ inverse @ wn.T, wn @ inverse @ wt.T, wt @ inverse @ wt.T
    bn = wn @ (v_free + e_n * v)
    bt = wt @ (v_free + e_t * v)
    k = len(pn)
    rows = np.arange(k)
    return law_energy_change(
        k, ann, ant, att, bn, bt, rows, np.full(k, e_n), np.full(k, e_t), -1.0, pn, pt
    )


def _random_impact(rng, k, decoupled=False):
    n = 3 if k == 1 else 4
    root = rng.normal(size=(n, n))
    mass = root @ root.T + n * np.eye(n)
    wn = rng.normal(size=(k, n))
    wt = rng.normal(size=(k, n))
    if decoupled:  # W_T M^-1 W_N^T = 0: the tangent rows M-orthogonal to the normal ones
        inverse = np.linalg.inv(mass)
        wt -= (wt @ inverse @ wn.T) @ np.linalg.solve(wn @ inverse @ wn.T, wn)
    v = rng.normal(size=n)
    v -= (np.max(wn @ v) + 1.0) * np.linalg.lstsq(wn, np.ones(k), rcond=None)[0]
    return mass, wn, wt, v


@pytest.mark.parametrize("k", [1, 2])
def test_the_change_is_the_kinetic_energy_change_of_an_impact(k):
    """For v_free = v, dT = T(v+) - T(v-) in the kinetic metric, for any (e_N, e_T)."""
    rng = np.random.default_rng(51 + k)
    for _ in range(50):
        mass, wn, wt, v = _random_impact(rng, k)
        e_n, e_t, mu = rng.uniform(size=3)
        mu *= 2.0
        v_plus, pn, pt = frictional_impact(mass, wn, wt, v, v, e_n, np.full(k, e_t), [mu] * k)
        change, scale = _law_change(mass, wn, wt, v, v, e_n, e_t, pn, pt)
        direct = 0.5 * v_plus @ mass @ v_plus - 0.5 * v @ mass @ v
        assert change == pytest.approx(direct, abs=1e-12 * max(scale, 1.0))


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("decoupled", [False, True], ids=["coupled", "decoupled"])
def test_no_energy_with_equal_restitutions_or_a_decoupled_delassus_matrix(k, decoupled):
    """Glocker's sufficient conditions: e_N = e_T with any Delassus matrix, any (e_N, e_T) with
    a decoupled one; and with e_N != e_T on a coupled one the law does create energy."""
    rng = np.random.default_rng(7 * k + decoupled)
    created = 0
    for _ in range(200):
        mass, wn, wt, v = _random_impact(rng, k, decoupled)
        e_n, e_t, mu = rng.uniform(size=3)
        mu *= 2.0
        if not decoupled:
            e_t = e_n
        v_free = v + 0.1 * rng.normal(size=v.shape)  # a time-stepper's v_free != v
        _, pn, pt = frictional_impact(mass, wn, wt, v, v_free, e_n, np.full(k, e_t), [mu] * k)
        change, scale = _law_change(mass, wn, wt, v, v_free, e_n, e_t, pn, pt)
        assert change <= LAW_ENERGY_TOLERANCE * scale
        # the same impact with e_T = 0 (e_N > 0) on a coupled matrix may create energy
        _, pn, pt = frictional_impact(mass, wn, wt, v, v, e_n, np.zeros(k), [mu] * k)
        change, scale = _law_change(mass, wn, wt, v, v, e_n, 0.0, pn, pt)
        created += change > LAW_ENERGY_TOLERANCE * scale
    if decoupled:
        assert created == 0
    else:
        assert created > 0


def _exact_gain(stick):
    """T(v+) - T(v-) at the stick's first impact, by its closed form."""
    _, q, v = stick.first_impact()
    v_plus, _ = stick.impact(q, v)
    mass = stick.mass_matrix(q)
    return 0.5 * v_plus @ mass @ v_plus - 0.5 * v @ mass @ v


#: Relative agreement of a time-stepper's reported gain with the closed form at h = 1e-4: its
#: law acts on the velocities of the step that closes the contact, O(h) from the exact
#: pre-impact ones.
STEPPER_AGREEMENT = 0.05

#: The step-size-controlled family: its accepted steps keep the record (a rejected attempt's
#: is discarded); steps near the impact at most the fixed-step runs' h.
ADAPTIVE = Adaptive(MoreauJean(), rtol=1e-4, h_max=1e-4)

#: Every family with a friction law.
FRICTION_METHODS = pytest.mark.parametrize(
    "method",
    [MoreauJean(), CatchingUp(), NonsmoothGeneralizedAlpha(), ADAPTIVE, EventDriven(rtol=1e-10)],
    ids=lambda m: m.name,
)


@pytest.mark.parametrize("mu", [0.1, 0.3], ids=["slip", "stick"])
@FRICTION_METHODS
def test_an_energy_creating_impact_is_flagged(method, mu):
    """e_N = 1, e_T = 0 on the inclined stick: the first impact creates energy (closed form)
    and the run reports it in its stats, with the gain of the closed form."""
    stick = ImpactingStick(mu=mu)
    exact = _exact_gain(stick)
    assert exact > 0.0
    run = simulate(stick, method, 0.2, h=1e-4 if method.requires_step else None)
    assert run.success
    assert run.stats["energy_creating_impacts"] >= 1
    agreement = 1e-6 if isinstance(method, EventDriven) else STEPPER_AGREEMENT
    assert run.stats["largest_impact_energy_gain"] == pytest.approx(exact, rel=agreement)


@pytest.mark.parametrize("restitution", [1.0, 0.5])
@FRICTION_METHODS
def test_a_consistent_law_is_not_flagged(method, restitution):
    """e_N = e_T: the same stick's impacts create no energy, and none is reported."""
    stick = ImpactingStick(mu=0.3, restitution=restitution, tangential_restitution=restitution)
    run = simulate(stick, method, 0.2, h=1e-4 if method.requires_step else None)
    assert run.success
    assert run.impacts.total >= 1
    assert run.stats["energy_creating_impacts"] == 0
    assert run.stats["largest_impact_energy_gain"] == 0.0
