"""The scipy path's properties of tests/test_event_driven.py, run on both event-driven engines.

tests/test_event_driven.py proves the scipy path on plain-Python problems (no kernels, so the
compiled engine cannot run them). Here the same properties run on the registered problems with
kernels - BouncingBall (the same ball) and SlantedWall (non-diagonal M) - with
``EventDriven(compiled=True)`` (methods/compiled_event_driven.py) and ``compiled=False``
(scipy), against the same closed forms. Both engines are compiled for these problems by other
test files already (default DOP853 pair), so this file adds runs, not compilations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_event_driven import away_from, ball_exact, ball_impacts, impact_pairs

import impactbench as ib
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall, SlantedWall

G0 = 9.81
ENGINES = pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "scipy"])


def run(problem, t_end, compiled, **kwargs):
    output_every = kwargs.pop("output_every", 1)
    method = EventDriven(compiled=compiled, **kwargs)
    assert method.uses_compiled_engine(problem) is compiled
    return ib.simulate(problem, method, t_end, output_every=output_every)


@ENGINES
def test_initial_time_shifts_the_solution(compiled):
    reference = run(BouncingBall(restitution=0.7), 3.0, compiled)
    shifted = run(BouncingBall(restitution=0.7, t0=100.0), 103.0, compiled)
    assert shifted.t[0] == 100.0 and shifted.t[-1] == 103.0
    assert len(shifted.impacts) == len(reference.impacts) >= 10
    assert np.abs(shifted.impacts.t - 100.0 - reference.impacts.t).max() <= 1e-12
    assert shifted.stats["zeno_time"] == pytest.approx(100.0 + reference.stats["zeno_time"])
    assert abs(shifted.q[-1, 0]) <= 1e-12 and abs(shifted.v[-1, 0]) <= 1e-12


@ENGINES
def test_ball_elastic_conserves_energy(compiled):
    problem = BouncingBall(restitution=1.0)
    tr = run(problem, 10.0, compiled)
    times, _ = ball_impacts(1.0, 0.0, G0, 1.0)
    times = times[times <= 10.0]
    assert tr.status is ib.Status.OK and tr.stats["zeno_time"] is None
    assert len(tr.impacts) == len(times) >= 10
    assert np.abs(tr.impacts.t - times).max() <= 1e-8
    q, v = ball_exact(tr.t, 1.0, 0.0, G0, 1.0)
    assert np.abs(tr.q[:, 0] - q).max() <= 1e-8
    smooth = away_from(tr.t, times, 1e-6)
    assert np.abs(tr.v[smooth, 0] - v[smooth]).max() <= 1e-8
    energy = ib.energy(problem, tr)
    assert np.abs(energy - energy[0]).max() <= 1e-10 * energy[0]


@ENGINES
def test_ball_plastic_rests_after_first_impact(compiled):
    tr = run(BouncingBall(restitution=0.0), 2.0, compiled)
    t1 = math.sqrt(2.0 / G0)
    assert tr.status is ib.Status.OK
    assert tr.impacts.total == 1 and tr.impacts.t[0] == pytest.approx(t1, abs=1e-12)
    assert tr.impacts.normal_velocity_after[0] == 0.0
    assert tr.stats["contact_time"] == pytest.approx(t1, abs=1e-12)
    after = tr.t > t1 + 1e-9
    assert np.abs(tr.q[after]).max() <= 1e-12 and np.abs(tr.v[after]).max() <= 1e-12


@ENGINES
@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_energy_never_increases_across_impacts(e, compiled):
    for problem, t_end in [
        (BouncingBall(restitution=e), 3.0),
        (SlantedWall(restitution=e), 2.0),
    ]:
        tr = run(problem, t_end, compiled)
        i, j = impact_pairs(tr)
        assert len(i) >= 1
        energy = ib.energy(problem, tr)
        assert np.all(energy[j] <= energy[i] + 1e-12 * np.abs(energy).max())
        if e == 1.0:
            assert np.abs(energy - energy[0]).max() <= 1e-9 * np.abs(energy).max()


@ENGINES
def test_restart_on_the_floor_does_not_fire_again(compiled):
    # starts on g = 0 moving up, and every restart sits on g = 0 (or a round-off below)
    tr = run(BouncingBall(q0=0.0, v0=2.0, restitution=0.9), 3.0, compiled)
    times, _ = ball_impacts(0.0, 2.0, G0, 0.9)
    times = times[times <= 3.0]
    assert tr.impacts.t[0] == pytest.approx(2 * 2.0 / G0, abs=1e-12)
    assert len(tr.impacts) == len(times) >= 10
    assert np.diff(tr.impacts.t).min() > 0.1
    assert np.abs(tr.impacts.t - times).max() <= 1e-8


@ENGINES
def test_spacing_threshold_alone_cuts_the_accumulation(compiled):
    tr = run(
        BouncingBall(restitution=0.5), 2.0, compiled, rest_velocity=0.0, min_impact_interval=1e-7
    )
    assert tr.status is ib.Status.ZENO_HANDLED
    assert "impacts closer than 2e-07" in tr.message
    assert tr.stats["impact_interval"] == pytest.approx(2e-7)
    assert np.diff(tr.impacts.t)[-1] < 2e-7 <= np.diff(tr.impacts.t)[-2]
    assert abs(tr.q[-1, 0]) <= 1e-12 and abs(tr.v[-1, 0]) <= 1e-12


@ENGINES
def test_slanted_wall_impacts_reverse_the_normal_velocity_in_the_kinetic_metric(compiled):
    """Each impact of the slanted wall: u+ = -e u- for u = n . v, and the jump of v is along
    M^-1 n (the tangential part in the metric of M is kept)."""
    problem = SlantedWall(restitution=0.6)
    tr = run(problem, 1.5, compiled)
    i, j = impact_pairs(tr)
    assert len(i) >= 3
    n, M = problem.normal, problem.mass
    jumps = tr.v[j] - tr.v[i]
    direction = np.linalg.solve(M, n)
    cross = jumps[:, 0] * direction[1] - jumps[:, 1] * direction[0]
    assert np.abs(cross).max() <= 1e-12 * np.abs(jumps).max()
    np.testing.assert_allclose(tr.v[j] @ n, -0.6 * (tr.v[i] @ n), rtol=1e-12, atol=1e-14)
