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
- :mod:`~impactbench.core.events.engine`: binding, running, the trajectory.

The compiled engine steps scipy-identical RK45 / DOP853 pairs (:mod:`impactbench.core.
compiled_rk`); the scipy path (:mod:`impactbench.methods.event_driven`) binds scipy's solvers as
the stepper and runs the same templates as plain Python.
"""

from .engine import simulate_compiled

__all__ = ["simulate_compiled"]
