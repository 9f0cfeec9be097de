"""energy_decay reports a decay rate only where a law holds (issue: chaos compared as chaos)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from impactbench import Adaptive
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall
from impactbench.studies import _adaptive, energy_decay


def _reference(problem: str, t: np.ndarray, excess: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"problem": problem, "curve": "reference", "t": t, "excess": excess})


def test_a_law_is_fitted_once_on_the_reference_and_refused_when_its_residual_says_no():
    t = np.linspace(0.0, 100.0, 400)
    exponential = _reference("TightJoint2D[unforced]", t, 3.0 * np.exp(-0.02 * t))
    # a staircase that levels off (the pendulum's shape): not exponential
    staircase = _reference(energy_decay.PENDULUM, t, 19.6 * 0.5 ** np.floor(t / 5.0) + 0.03)
    laws = energy_decay.reference_laws(pd.concat([exponential, staircase]))
    rate, residual = laws["TightJoint2D[unforced]"]
    assert abs(rate - 0.02) < 1e-12 and residual < 1e-12
    rate, residual = laws[energy_decay.PENDULUM]
    assert residual > energy_decay.LAW_RESIDUAL  # fitted over the window only, still no law
    assert "the law does not hold" in energy_decay._law_sentence(
        energy_decay.PENDULUM, laws[energy_decay.PENDULUM]
    )
    assert "does not hold" not in energy_decay._law_sentence("X", (0.02, 0.0))
    # the pendulum's window: samples beyond t0 + 30 do not enter its fit
    window = energy_decay.FIT_WINDOW[energy_decay.PENDULUM]
    late = staircase.assign(excess=np.where(t > window, 1e-300, staircase["excess"]))
    assert energy_decay.reference_laws(late)[energy_decay.PENDULUM] == laws[energy_decay.PENDULUM]


def test_the_quick_cases_run_the_adaptive_family_with_every_accepted_step_kept():
    runs = energy_decay.runs(quick=True)
    for case in energy_decay.cases(quick=True):
        mine = [r for r in runs if r.problem_name == case.problem_name and r.method is Adaptive]
        if case.problem_name not in energy_decay.ADAPTIVE_CASES["quick"]:
            assert not mine
            continue
        assert sorted(r.tolerance_value for r in mine) == energy_decay.ADAPTIVE_TOLERANCES["quick"]
        # Adaptive's default largest step (a tenth of the horizon): rtol, not h_max, sets it
        assert all("h_max" not in r.method_kwargs for r in mine)
        assert all(r.method_kwargs["max_samples"] == energy_decay.ADAPTIVE_SAMPLES for r in mine)
        assert all(r.artefact is energy_decay.adaptive_artefacts for r in mine)


def test_an_adaptive_run_is_its_own_family_with_margins_in_its_largest_step():
    (run,) = [
        r
        for r in energy_decay.runs(quick=True)
        if r.problem_name == energy_decay.SPRING and r.method is Adaptive
    ]
    assert energy_decay._family(run) == ADAPTIVE_STEPPING
    steps = SimpleNamespace(t=np.array([0.0, 0.1, 0.3, 0.35]))  # every accepted step kept
    assert energy_decay._step_scale(run, steps) == pytest.approx(0.2)


def test_the_binned_step_record_keeps_every_accepted_step_in_its_bin():
    ball = BouncingBall(restitution=0.8)
    scheme = MoreauJean(compiled=False)  # the plain-Python loop: nothing to compile
    method = Adaptive(scheme, rtol=1e-3, atol=1e-5, gap_tolerance=1e-3, h_max=1e-2)
    trajectory = method.solve(ball, 2.0)
    stored = _adaptive.binned_step_artefact(None, ball, trajectory)
    steps, h = stored["step_sizes"], np.diff(trajectory.t)
    assert len(steps) <= _adaptive.STEP_BINS
    assert steps["steps"].sum() == trajectory.stats["steps"] == h.size
    assert steps["h"].min() == h.min() and steps["h_largest"].max() == h.max()
    assert np.all(steps["h"] <= steps["h_largest"])
    assert stored["control"]["accepted_steps"].iloc[0] == h.size
    thinned = Adaptive(
        scheme, rtol=1e-3, atol=1e-5, gap_tolerance=1e-3, h_max=1e-2, max_samples=10
    ).solve(ball, 2.0)
    with pytest.raises(ValueError, match="max_samples"):
        _adaptive.binned_step_artefact(None, ball, thinned)
