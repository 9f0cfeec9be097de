"""Built-in problems with closed-form exact solutions.

``PROBLEMS`` maps each class name to its class. Every problem is an
:class:`impactbench.problem.CompiledProblem` (physics written once as numba kernels) with an
``exact_solution(t)`` valid for all t >= t0 and the exact ``impact_times(t_end)``.
"""

from .bouncing_ball import BouncingBall
from .impact_oscillator import ForcedImpactOscillator, ImpactingOscillator
from .slanted_wall import SlantedWall

PROBLEMS = {
    "BouncingBall": BouncingBall,
    "ImpactingOscillator": ImpactingOscillator,
    "ForcedImpactOscillator": ForcedImpactOscillator,
    "SlantedWall": SlantedWall,
}

__all__ = [
    "PROBLEMS",
    "BouncingBall",
    "ForcedImpactOscillator",
    "ImpactingOscillator",
    "SlantedWall",
]
