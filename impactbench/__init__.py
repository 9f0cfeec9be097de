"""impactbench: comparative studies of numerical methods for mechanical systems with impacts.

The core: the :class:`Problem` contract, the :class:`Method` contract, :func:`simulate`, the
:class:`Trajectory` result and the shared contact numerics; the time-stepping loop
(:class:`TimeStepping`) and step-size control over any scheme (:class:`Adaptive`); for writing
a compiled problem, the :func:`kernel` decorator, the named parameters (:func:`parameter_indices`,
:func:`parameter_vector`) and the argument checks (:mod:`impactbench.core.checks`, also
``impactbench.checks``). Methods live in
:mod:`impactbench.methods` (name table ``METHODS``), problems in :mod:`impactbench.problems`
(name table ``PROBLEMS``).
"""

from .analysis.reference import Reference, reference
from .core import checks
from .core._files import CacheWarning
from .core.adaptive import Adaptive
from .core.building import make_trajectory
from .core.dense import DenseOutput
from .core.energy import energy, kinetic_energy, potential_energy
from .core.kernels import kernel, parameter_indices, parameter_vector
from .core.method import Method
from .core.problem import CompiledProblem, Problem, ProblemKernels
from .core.simulate import simulate
from .core.timestepping import TimeStepping
from .core.trajectory import ImpactLog, SimulationError, Status, Trajectory

# the built-in schemes, by class name, for the scheme specs of Adaptive ("CatchingUp[...]")
from . import methods as methods  # isort: skip

__version__ = "0.1.0"


def __getattr__(name: str):
    """``run_study``, ``StudyResult``, ``compare``, ``Comparison`` and ``plot`` are imported on
    first use (they load the studies and the plotting stack, which ``import impactbench`` does
    not need)."""
    if name in ("run_study", "StudyResult"):
        from .bench import pipeline

        return getattr(pipeline, name)
    if name in ("compare", "Comparison"):
        from .bench import compare

        return getattr(compare, name)
    if name == "plot":
        from .bench.plotting import plot

        return plot
    raise AttributeError(f"module 'impactbench' has no attribute {name!r}")


__all__ = [
    "Adaptive",
    "CacheWarning",
    "Comparison",
    "CompiledProblem",
    "DenseOutput",
    "ImpactLog",
    "Method",
    "Problem",
    "ProblemKernels",
    "Reference",
    "SimulationError",
    "Status",
    "StudyResult",
    "TimeStepping",
    "Trajectory",
    "checks",
    "compare",
    "energy",
    "kernel",
    "kinetic_energy",
    "make_trajectory",
    "parameter_indices",
    "parameter_vector",
    "plot",
    "potential_energy",
    "reference",
    "run_study",
    "simulate",
]
