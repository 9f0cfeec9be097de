"""The cradle study's analysis: per-run outcomes classified against the three closed forms.

No simulation: the artefacts are built from velocity vectors worked by hand (the problem's
docstring), so the classification and the findings are checked on known answers.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from impactbench.bench.runner import Run
from impactbench.methods import EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import NewtonsCradle
from impactbench.studies import STUDIES
from impactbench.studies import newtons_cradle_outcomes as cradle


def artefact(method, h, label, kwargs, v_final, impacts):
    run = Run(
        problem=NewtonsCradle, method=method, t_end=cradle.T_END, h=h, problem_kwargs=kwargs,
        problem_name=label,
    )  # fmt: skip
    trajectory = SimpleNamespace(v=np.array([v_final]), h=h, impacts=SimpleNamespace(total=impacts))
    frame = cradle.outcome_artefact(run, NewtonsCradle(**kwargs), trajectory)[cradle.ARTEFACT]
    return frame.assign(key=f"{label}-{run.method_name}-{h}")


def test_registered_with_every_method():
    assert STUDIES["cradle"] is cradle.STUDY
    runs = cradle.runs(quick=False)
    assert {run.method.__name__ for run in runs} == {
        "PaoliSchatzman", "MoreauJean", "CatchingUp", "MoreauJeanProjection",
        "NonsmoothGeneralizedAlpha", "D1MinusLinear", "EventDriven",
    }  # fmt: skip
    assert {run.problem_name for run in runs} == set(cradle.CONFIGURATIONS)
    assert {run.problem_name for run in cradle.runs(quick=True)} < set(cradle.CONFIGURATIONS)


def test_outcomes_are_classified_against_the_closed_forms():
    exact = {"n_balls": 5, "n_launched": 1, **cradle.EXACT_GEOMETRY}
    roundoff = {"n_balls": 5, "n_launched": 1, **cradle.ROUNDOFF_GEOMETRY}
    balls = pd.concat(
        [
            artefact(MoreauJean, 2**-10, "N=5, k=1", exact, [-0.6, 0.4, 0.4, 0.4, 0.4], 7),
            artefact(EventDriven, None, "N=5, k=1", exact, [0, 0, 0, 0, 1.0], 4),
            artefact(
                MoreauJean, 1e-3, "N=5, k=1, r=0.1", roundoff, [-1 / 3, 0, 0, 2 / 3, 2 / 3], 6
            ),
            artefact(PaoliSchatzman, 1e-3, "N=5, k=1, r=0.1", roundoff, [-0.6] + [0.4] * 4, 9),
        ],
        ignore_index=True,
    )
    table = cradle.outcomes(balls)
    assert table["matches"].tolist() == ["lcp", "physical, sequential", "none", "lcp"]
    np.testing.assert_allclose(table["energy after / before"], 1.0, rtol=1e-15)
    assert table["velocities"].iloc[2] == "(-0.3333, 0, 0, 0.6667, 0.6667)"
    findings = " ".join(cradle._findings(table))
    assert "1 of 1 time-stepping runs give the all-contact LCP" in findings
    assert "EventDriven gives the sequential pairwise outcome in 1 of 1" in findings
    assert "1 of 2 time-stepping runs still give the all-contact LCP outcome (PaoliSchatzman)" in (
        findings
    )
    expected = cradle.expectations(balls)
    assert expected["lcp"].iloc[0] == "(-0.6, 0.4, 0.4, 0.4, 0.4)"
