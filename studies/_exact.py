"""The problems with closed-form solutions shared by the accuracy studies, with their horizons.

The bouncing ball (e = 0.8) and the slanted wall (e = 0.7) run through their accumulation
points into rest and sliding; the impacting oscillator (e = 0.8) over three impacts; the forced
impact oscillator over five periods of its stable one-impact orbit; the ball with quadratic air
drag (e = 0.8) through its accumulation point, whose flights, unlike the drag-free parabolas, a
Runge-Kutta pair does not integrate exactly. The quick grid keeps the ball only.
"""

from __future__ import annotations

import pandas as pd

from impactbench.analysis.metrics import error_floor
from impactbench.analysis.reference import Reference
from impactbench.bench.runner import Case
from impactbench.problems import (
    BouncingBall,
    DragBall,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
)


def exact_cases(quick: bool) -> list[Case]:
    """The cases of the quick (``quick=True``) or the full grid."""
    ball = BouncingBall(restitution=0.8)
    cases = [Case(BouncingBall, ball.accumulation_time + 1.5, {"restitution": 0.8})]
    if quick:
        return cases
    wall = SlantedWall(restitution=0.7)
    forced = ForcedImpactOscillator(omega=2.5, sigma=0.05, restitution=0.8)
    return cases + [
        Case(ImpactingOscillator, 10.0, {"restitution": 0.8}),
        Case(
            ForcedImpactOscillator,
            forced.t0 + 5 * forced.period,
            {"omega": 2.5, "sigma": 0.05, "restitution": 0.8},
        ),
        Case(SlantedWall, wall.accumulation_time + 1.0, {"restitution": 0.7}),
        Case(DragBall, DragBall(restitution=0.8).accumulation_time + 1.0, {"restitution": 0.8}),
    ]


def exact_floors(table: pd.DataFrame, metrics: tuple[str, ...]) -> dict[tuple[str, str], float]:
    """The floor of each metric on each problem of ``table``: (problem, metric) -> floor.

    :func:`impactbench.analysis.metrics.error_floor` against the closed form, for the cases of the
    quick and the full grid (found by label and horizon); 0 for a problem of neither.
    """
    cases = {}
    for quick in (True, False):
        for case in exact_cases(quick):
            cases[(case.problem_name or case.problem.__name__, float(case.t_end))] = case
    result = {}
    for problem, t_end in table[["problem", "t_end"]].drop_duplicates().itertuples(index=False):
        case = cases.get((problem, float(t_end)))
        instance = None if case is None else case.problem(**case.problem_kwargs)
        for metric in metrics:
            result[(problem, metric)] = 0.0
            if case is not None:
                reference = Reference.exact(instance, case.t_end)
                result[(problem, metric)] = error_floor(metric, instance, reference, case.t_end)
    return result
