"""Built-in problems.

``PROBLEMS`` maps each class name to its class. Every problem is an
:class:`impactbench.core.problem.CompiledProblem` (physics written once as numba kernels). Those
with a closed form (``has_exact_solution``) provide ``exact_solution(t)`` valid for all t >= t0 and
the exact ``impact_times(t_end)``: the bouncing ball (with and without quadratic air drag), the
impacting and forced impact oscillators,
the slanted wall, the undamped, unforced 1-DOF tight joint, the impacting bar (the continuous
bar's solution at the nodes), the block sliding with Coulomb friction on an incline and the
friction oscillator (frictional problems: docs/friction.md). The rocking block (frictional, two
corners) has the closed forms of its impacts (Housner's law); the woodpecker toy (frictional,
three contacts) is compared with Siconos' output of the same example, and so is the impacting
stick (whose first impact has a closed form); Painleve's rod has the closed form of its sliding
phase. Three problems have a moving obstacle (rheonomic, g(t, q)): the ball on a vibrating
table (exact on its period-n orbit; the exact impact map, thresholds and release in
:mod:`impactbench.problems.vibrating_table`), the oscillator against a harmonically moving stop
(exact on its periodic orbit, from the forced impact oscillator in the stop's frame) and the
cam-follower of Siconos' example (the cam's motion and the free flight in closed form). The
2-DOF tight joint and the double pendulum have none (references are accurate
event-driven runs), nor have the column of beads and Newton's cradle.
Installed third-party problems join them in :data:`impactbench.bench.plugins.PROBLEMS`.
"""

from .ball_on_vibrating_table import BallOnVibratingTable
from .bouncing_ball import BouncingBall
from .cam_follower import CamFollower
from .column_of_beads import ColumnOfBeads
from .double_pendulum import DoublePendulum
from .drag_ball import DragBall
from .friction_oscillator import FrictionOscillator
from .impact_oscillator import ForcedImpactOscillator, ImpactingOscillator
from .impacting_bar import ImpactingBar
from .impacting_stick import ImpactingStick
from .moving_stop import ImpactOscillatorMovingStop
from .newtons_cradle import NewtonsCradle
from .painleve_rod import PainleveRod
from .rocking_block import RockingBlock
from .slanted_wall import SlantedWall
from .sliding_block import SlidingBlock
from .tight_joint import TightJoint, TightJoint2D
from .woodpecker import Woodpecker

PROBLEMS = {
    "BouncingBall": BouncingBall,
    "DragBall": DragBall,
    "ImpactingOscillator": ImpactingOscillator,
    "ForcedImpactOscillator": ForcedImpactOscillator,
    "SlantedWall": SlantedWall,
    "TightJoint": TightJoint,
    "TightJoint2D": TightJoint2D,
    "DoublePendulum": DoublePendulum,
    "ColumnOfBeads": ColumnOfBeads,
    "NewtonsCradle": NewtonsCradle,
    "ImpactingBar": ImpactingBar,
    "SlidingBlock": SlidingBlock,
    "RockingBlock": RockingBlock,
    "Woodpecker": Woodpecker,
    "ImpactingStick": ImpactingStick,
    "PainleveRod": PainleveRod,
    "FrictionOscillator": FrictionOscillator,
    "BallOnVibratingTable": BallOnVibratingTable,
    "ImpactOscillatorMovingStop": ImpactOscillatorMovingStop,
    "CamFollower": CamFollower,
}

__all__ = [
    "PROBLEMS",
    "BallOnVibratingTable",
    "BouncingBall",
    "CamFollower",
    "ColumnOfBeads",
    "DoublePendulum",
    "DragBall",
    "ForcedImpactOscillator",
    "FrictionOscillator",
    "ImpactingBar",
    "ImpactingOscillator",
    "ImpactOscillatorMovingStop",
    "ImpactingStick",
    "NewtonsCradle",
    "PainleveRod",
    "RockingBlock",
    "SlantedWall",
    "SlidingBlock",
    "TightJoint",
    "TightJoint2D",
    "Woodpecker",
]
