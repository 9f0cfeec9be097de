"""A third party's method, problem and study (see ../pyproject.toml for the entry points)."""

import numpy as np

from impactbench import Problem
from impactbench.bench.runner import Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import MoreauJean


class PluginMoreauJean(MoreauJean):
    """Moreau-Jean under a third party's name."""


class PluginFloor(Problem):
    """A plain-Python ball above the floor (sizes inferred from q0 and the gap)."""

    def __init__(self, restitution: float = 0.5):
        self.name = "PluginFloor"
        self.restitution = restitution
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([-9.81])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return 9.81 * float(q[0])


def _runs(quick: bool) -> list[Run]:
    return [Run(PluginFloor, PluginMoreauJean, 1.0, h=0.01, metrics=("max_penetration",))]


def _report(table, folder) -> StudyReport:
    return StudyReport([Section("Runs", f"{len(table)} run")], ["the plug-in study ran"])


STUDY = Study("plugin_study", "Plug-in study", "A third party's study.", _runs, _report)

#: Declared as a method entry point, but not a Method: impactbench must leave it out.
NOT_A_METHOD = 42
