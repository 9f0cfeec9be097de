"""The problems with closed-form solutions shared by the accuracy studies, with their horizons.

The bouncing ball (e = 0.8) and the slanted wall (e = 0.7) run through their accumulation
points into rest and sliding; the impacting oscillator (e = 0.8) over three impacts; the forced
impact oscillator over five periods of its stable one-impact orbit. The quick grid keeps the
ball only.
"""

from __future__ import annotations

from impactbench.problems import (
    BouncingBall,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
)
from impactbench.runner import Case


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
    ]
