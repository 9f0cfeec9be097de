"""The persistent contacts: problems whose impacts accumulate into a contact that lasts (a ball
at rest, a particle sliding along a wall, a stack of beads, a pin resting or sliding in its
clearance), with the time by which the contact persists and the acceleration that sets a
time-stepping scheme's O(h^2) depth there. The persistent-contact study
(``impactbench.studies.persistent_contact``) and the validation battery
(:mod:`impactbench.bench.testing`) run them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from impactbench.core.problem import Problem

from .bouncing_ball import BouncingBall
from .column_of_beads import ColumnOfBeads
from .slanted_wall import SlantedWall
from .tight_joint import TightJoint, TightJoint2D


def resting_ball() -> BouncingBall:
    """Ball dropped from 1 on the floor, e = 0.9: rests after t_inf = 8.58."""
    return BouncingBall(q0=1.0, v0=0.0, restitution=0.9)


def sliding_particle() -> SlantedWall:
    """Particle on the slanted wall (non-diagonal M), e = 0.7: slides after t_inf = 2.45."""
    return SlantedWall(restitution=0.7)


def falling_column() -> ColumnOfBeads:
    """Four beads (mass 1, radius 0.1, e = 0.9) dropped as a column onto the floor (Siconos'
    tutorial heights): simultaneous contacts close, and the stack rests (from t = 2.77 at
    h = 1e-3, t = 7.3 at h = 5e-3) with four active constraints (the floor carries the weight of
    four beads)."""
    return ColumnOfBeads(n_beads=4)


def pin_on_clearance_wall() -> TightJoint:
    """1-DOF pin, no spring, constant load -1 towards the wall x = -delta (two constraints)."""
    return TightJoint(
        stiffness=0.0, forcing_amplitude=-1.0, forcing_frequency=0.0, x0=0.0, v0=0.5,
        restitution=0.5,
    )  # fmt: skip


def pin_resting_in_hole() -> TightJoint2D:
    """Pin in a circular hole (nonlinear gap delta^2 - |q|^2) falling under a load onto its
    lowest point and resting there (the motion stays on the vertical axis)."""
    return TightJoint2D(
        stiffness=0.0, load=(0.0, -1.0), forcing_amplitude=(0.0, 0.0), restitution=0.5,
        q0=(0.0, 0.0), v0=(0.0, -0.3),
    )  # fmt: skip


def pin_sliding_in_hole() -> TightJoint2D:
    """As :func:`pin_resting_in_hole` with a tangential velocity: after the impacts accumulate
    the pin slides to and fro along the curved wall (a frictionless bead in a bowl)."""
    return TightJoint2D(
        stiffness=0.0, load=(0.0, -1.0), forcing_amplitude=(0.0, 0.0), restitution=0.5,
        q0=(0.0, 0.0), v0=(0.4, -0.3),
    )  # fmt: skip


@dataclass(frozen=True)
class ContactCase:
    """A persistent-contact problem: its factory, the time by which its contact persists, and
    the constraint acceleration alpha (gap units / s^2) that sets the O(h^2 alpha) depth (for
    the stack, the weight the floor carries over one bead's mass: n g)."""

    factory: Callable[[], Problem]
    settled_after: float
    alpha: float
    description: str
    #: Largest |q| reached by T = 100: sets the round-off floor of the depth (error_floor).
    position_scale: float = 1.0


#: The study's problems by label. ``settled_after`` is past the accumulation point of each.
CASES: dict[str, ContactCase] = {
    "resting ball": ContactCase(resting_ball, 10.0, 9.81, "BouncingBall e = 0.9, q0 = 1"),
    "sliding particle": ContactCase(
        sliding_particle, 4.0, 10.978170731707317, "SlantedWall e = 0.7, non-diagonal M", 1.1e4
    ),
    "resting stack": ContactCase(
        falling_column, 10.0, 4 * 9.81, "ColumnOfBeads, 4 beads (four constraints)", 1.75
    ),
    "pin on clearance wall": ContactCase(
        pin_on_clearance_wall, 5.0, 1.0, "TightJoint (two constraints) under a load"
    ),
    "pin resting in hole": ContactCase(
        pin_resting_in_hole, 5.0, 0.2, "TightJoint2D (nonlinear gap), radial fall"
    ),
    "pin sliding in hole": ContactCase(
        pin_sliding_in_hole, 10.0, 0.2, "TightJoint2D (curved wall), sliding"
    ),
}
