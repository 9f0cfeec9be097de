"""The reference of the studies of problems without a closed form (e.g. the double pendulum).

:func:`event_driven_reference` is the module-level reference function a study passes to
:class:`impactbench.bench.runner.Run` (``reference=``): the DOP853 event-driven run at rtol 1e-12
with dense output (:func:`impactbench.methods.reference_method`), computed once per problem, horizon
and code version and cached on disk by :func:`impactbench.reference` (folder
``$IMPACTBENCH_REFERENCE_DIR``, see :mod:`impactbench.reference`). Every study uses this one
function, so they all measure against the same reference and share its cache.
"""

from __future__ import annotations

from impactbench.analysis.reference import Reference, reference
from impactbench.core.problem import Problem
from impactbench.methods import reference_method


def event_driven_reference(problem: Problem, t_end: float) -> Reference:
    """The cached DOP853 event-driven reference (rtol 1e-12, dense output) on [t0, t_end]."""
    return reference(problem, t_end, reference_method())


def stored_event_driven_reference(problem: Problem, t_end: float) -> Reference:
    """:func:`event_driven_reference` read from the cache only, for reports (which never
    simulate); :class:`impactbench.analysis.reference.MissingReferenceError` when it is not
    there."""
    return reference(problem, t_end, reference_method(), compute=False)
