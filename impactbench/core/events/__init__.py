"""The event-driven algorithm, written once for both engines of ``EventDriven``.

The smooth dynamics are integrated between events by a stepper with dense output; each accepted
step is probed for events on its dense output; at the earliest event the state is restarted
(impact law, accumulation test, contacts closed or released, projections). One concept per
module, each a set of templates run compiled by numba or as plain Python (the same source,
:func:`impactbench.core._jit.specialize`):

- :mod:`~impactbench.core.events.dynamics`: free flight and index-1 contact dynamics;
- :mod:`~impactbench.core.events.location`: crossing detection and root search (Brent);
- :mod:`~impactbench.core.events.resolution`: impact law, Zeno test, contacts, projections;
- :mod:`~impactbench.core.events.coulomb`: Coulomb friction (stick and slip, their transitions,
  Painleve situations, frictional impacts), bound in place of the frictionless templates for a
  frictional problem;
- :mod:`~impactbench.core.events.loop`: segments, restarts, drift, final state;
- :mod:`~impactbench.core.events.stepping`: the compiled Runge-Kutta stepper;
- :mod:`~impactbench.core.events.buffers`: the run's arrays as named tuples;
- :mod:`~impactbench.core.events.kernels`: the problem's kernels as run-time values of the
  compiled engine;
- :mod:`~impactbench.core.events.engine`: binding, running, the trajectory;
- :mod:`~impactbench.core.events.plain`: the loop as plain Python around a :class:`Stepper`
  (its right-hand side, probes, dense output), with the compiled free flight of
  :mod:`~impactbench.core.events.free_flight`;
- :mod:`~impactbench.core.events.method`: the base class of an event-driven method, a run on
  either engine, a failure raised.

The compiled engine steps scipy-identical RK45 / DOP853 pairs (:mod:`impactbench.core.
compiled_rk`); the scipy path of :mod:`impactbench.methods.event_driven` gives scipy's solvers
as the :class:`Stepper` of the same templates run as plain Python.

This module is everything an event-driven method imports from impactbench (at most 12 names,
``tests/test_layout.py``), as :mod:`impactbench.core.scheme` is for a scheme: the base class
:class:`EventMethod` and its :class:`Settings`, the :class:`Stepper` interface, the problem's
type (:class:`Problem`) and the argument checks a constructor calls (:func:`positive_scalar`,
:func:`in_interval`); and :func:`simulate_compiled`, a run of the compiled engine alone.
"""

from impactbench.core.checks import in_interval, positive_scalar
from impactbench.core.problem import Problem

from .engine import simulate_compiled
from .method import EventMethod, Settings
from .plain import Stepper

__all__ = [
    "EventMethod",
    "Problem",
    "Settings",
    "Stepper",
    "in_interval",
    "positive_scalar",
    "simulate_compiled",
]
