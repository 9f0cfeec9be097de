"""impactbench: comparative studies of numerical methods for mechanical systems with impacts.

The core: the :class:`Problem` contract, the :class:`Method` contract, :func:`simulate`, the
:class:`Trajectory` result and the shared contact numerics. Methods live in
:mod:`impactbench.methods` (name table ``METHODS``), problems in :mod:`impactbench.problems`
(name table ``PROBLEMS``).
"""

from ._files import CacheWarning
from .dense import DenseOutput
from .energy import energy, kinetic_energy, potential_energy
from .method import Method
from .problem import CompiledProblem, Problem, ProblemKernels
from .reference import Reference, reference
from .simulate import simulate
from .timestepping import TimeStepping
from .trajectory import ImpactLog, SimulationError, Status, Trajectory

__version__ = "0.1.0"


def __getattr__(name: str):
    """``run_study`` and ``StudyResult`` are imported on first use (they load the studies and
    the plotting stack, which ``import impactbench`` does not need)."""
    if name in ("run_study", "StudyResult"):
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'impactbench' has no attribute {name!r}")


__all__ = [
    "CacheWarning",
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
    "energy",
    "kinetic_energy",
    "potential_energy",
    "reference",
    "run_study",
    "simulate",
]
