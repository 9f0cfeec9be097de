"""Event-driven integration of Housner's rocking block through the accumulation of its impacts
(e_N = 0, mu = 1: every impact sticks at the new pivot): after the switch to persistent contact
(``rest_velocity``) the block rests flat where its corners stuck, without sliding
(:func:`impactbench.core.events.coulomb.project_velocity` keeps the contacts at rest
tangentially at rest; :func:`impactbench.core.events.coulomb._solve_combinations` takes the
integrable one of the equivalent slip modes of the two corners); and a block sliding on a
rough horizontal floor decelerates at mu g and stops at the closed-form time and distance.
"""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench.core.events.engine import simulate_compiled
from impactbench.methods import EventDriven
from impactbench.problems import RockingBlock, SlidingBlock
from impactbench.studies.event_driven_limits import (
    _displacement,
    housner_accumulation_time,
    rest_state,
)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "plain"])
@pytest.mark.parametrize("rest_velocity", [0.1, 1e-3])
def test_the_rocking_block_comes_to_rest_flat_where_its_corners_stuck(compiled, rest_velocity):
    """Released at the default tilt, the block rocks with impacts of ratio r at phi = 0, each
    sticking at the new pivot, so that it comes to rest flat at t_inf (Housner's sum) with its
    first pivot unmoved (:func:`rest_state`). Whatever the accumulation's cut, from t_inf on
    the block must be at rest: a switch that closes both corners with the block still turning
    and only the normal velocities projected leaves x' = -c omega, a sliding that the two
    corners' opposite slip modes never decelerate."""
    block = RockingBlock()
    method = EventDriven(rest_velocity=rest_velocity, compiled=compiled)
    run = ib.simulate(block, method, 4.0)
    assert run.status is ib.Status.OK
    assert run.stats["engine"] == ("compiled" if compiled else "scipy")
    at_rest = run.t >= housner_accumulation_time(block)
    assert at_rest.sum() >= 2
    assert np.abs(run.v[at_rest]).max() <= 1e-12
    assert _displacement(block, run.q[-1]) <= 1e-9
    assert np.abs(run.q[at_rest] - rest_state(block)).max() <= 1e-9


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "plain"])
def test_a_block_sliding_on_a_rough_floor_stops_at_the_closed_form_time_and_distance(compiled):
    """On a horizontal floor (alpha = 0) with mu = 1 a block launched at u0 decelerates at
    mu g, stops at t* = u0 / (mu g) after u0^2 / (2 mu g) and sticks for ever. The stop is
    located as the zero of v = u0 - mu g t, whose round-off eps u0 moves it by eps t*: to a few
    units of round-off of t*."""
    u0, mu, g = 0.37, 1.0, 9.81
    block = SlidingBlock(angle=0.0, mu=mu, u0=u0, gravity=g)
    run = simulate_compiled(block, 1.0, 1e-10, 1e-12, compile=compiled)
    assert run.status is ib.Status.OK
    t_stop = u0 / (mu * g)
    assert block.stopping_time == pytest.approx(t_stop, rel=1e-15)
    t_event = float(run.t[np.argmin(np.abs(run.t - t_stop))])
    assert abs(t_event - t_stop) <= 16 * np.finfo(float).eps * t_stop
    sliding = run.t < t_stop
    assert run.v[sliding, 0] == pytest.approx(u0 - mu * g * run.t[sliding], abs=1e-12)
    after = run.t >= t_event
    assert np.all(run.v[after] == 0.0)
    assert run.q[-1, 0] == pytest.approx(u0**2 / (2.0 * mu * g), abs=1e-12)
    assert np.all(run.q[after, 0] == run.q[-1, 0])
