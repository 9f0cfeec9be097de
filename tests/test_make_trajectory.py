"""impactbench.make_trajectory: a method's Trajectory and ImpactLog from plain arrays."""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench.analysis.impact_events import impact_events
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall


def test_the_built_in_runs_arrays_give_the_same_trajectory():
    """Rebuilt from a Moreau-Jean run's arrays and impact times alone, the trajectory has the
    run's impact log (constraints and normal velocities evaluated from the samples) and its
    impact events."""
    ball = BouncingBall(restitution=0.8)
    run = ib.simulate(ball, MoreauJean(theta=1.0), 2.0, h=1e-3)
    rebuilt = ib.make_trajectory(
        ball,
        MoreauJean(theta=1.0),
        run.t,
        run.q,
        run.v,
        steps=run.stats["steps"],
        force_evaluations=run.stats["force_evaluations"],
        h=run.h,
        impact_times=run.impacts.t,
    )
    assert rebuilt.method == run.method and rebuilt.problem == run.problem
    assert rebuilt.success and rebuilt.stats["impacts"] == run.impacts.total
    np.testing.assert_array_equal(rebuilt.impacts.constraint, run.impacts.constraint)
    # theta = 1: q_{k+1} = q_k + h v_{k+1}, so the velocities around an impact are the samples'
    np.testing.assert_allclose(
        rebuilt.impacts.normal_velocity_before, run.impacts.normal_velocity_before, rtol=1e-12
    )
    np.testing.assert_allclose(
        rebuilt.impacts.normal_velocity_after, run.impacts.normal_velocity_after, rtol=1e-12
    )
    assert impact_events(rebuilt).impacts == impact_events(run).impacts == 3


def test_given_impact_data_is_kept_and_one_dof_arrays_are_columns():
    ball = BouncingBall(restitution=0.5)
    t = np.linspace(0.0, 1.0, 11)
    trajectory = ib.make_trajectory(
        ball,
        MoreauJean(),
        t,
        np.ones(11),
        np.zeros(11),
        steps=10,
        force_evaluations=10,
        h=0.1,
        impact_times=[0.5],
        impact_constraints=[0],
        normal_velocity_before=[-2.0],
        normal_velocity_after=[1.0],
        stats={"note": "mine"},
    )
    assert trajectory.q.shape == (11, 1)
    assert trajectory.impacts.normal_velocity_before.tolist() == [-2.0]
    assert trajectory.stats["note"] == "mine" and trajectory.stats["steps"] == 10


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"q": np.ones((11, 2))}, "q must have shape"),
        ({"v": np.full(11, np.nan)}, "v must be finite"),
        ({"t": np.linspace(1.0, 0.0, 11)}, "t must be"),
        ({"t": np.linspace(0.1, 1.0, 11)}, "t must start at problem.t0"),
        ({"impact_times": [2.0]}, "impact_times"),
        ({"impact_times": [0.5], "impact_constraints": [3]}, "impact_constraints"),
        ({"impact_times": [0.5], "normal_velocity_before": [1.0, 2.0]}, "normal_velocity_before"),
        ({"steps": -1}, "steps"),
        ({"force_evaluations": 1.5}, "force_evaluations"),
        ({"h": 0.0}, "h must"),
    ],
)
def test_bad_arrays_are_refused_by_name(change, message):
    arguments = {
        "t": np.linspace(0.0, 1.0, 11),
        "q": np.ones(11),
        "v": np.zeros(11),
        "steps": 10,
        "force_evaluations": 10,
        "h": 0.1,
    }
    arguments.update(change)
    t, q, v = arguments.pop("t"), arguments.pop("q"), arguments.pop("v")
    with pytest.raises(ValueError, match=message):
        ib.make_trajectory(BouncingBall(), MoreauJean(), t, q, v, **arguments)
