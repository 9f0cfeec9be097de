"""Shared fixtures: a plain-Python user problem, step-size grids for order fits, the schema
check of a study's results table, and a malicious pickle for the cache tests."""

from __future__ import annotations

import os
import pickle
import tempfile

import numpy as np
import pytest

from impactbench import Problem
from impactbench.bench.results import (
    COST_COLUMNS,
    PROVENANCE_COLUMNS,
    RUN_COLUMNS,
    STATUS_COLUMNS,
    TIMING_COLUMNS,
)


def pytest_configure(config):
    """Keep the suite's run and reference caches out of the user's cache folder."""
    folder = tempfile.mkdtemp(prefix="impactbench-tests-")
    os.environ["IMPACTBENCH_CACHE_DIR"] = os.path.join(folder, "runs")
    os.environ["IMPACTBENCH_REFERENCE_DIR"] = os.path.join(folder, "references")


#: The longest test files: each computes one part of the quick main job (minutes) in a module
#: fixture (tests/quick_run.py). Handed out first, they run at once on pytest-xdist's two workers.
FIRST_FILES = ("tests/test_quick_run_part1.py", "tests/test_quick_run_part2.py")


def files_in_order(items: list, first: tuple[str, ...] = FIRST_FILES) -> list:
    """``items`` grouped by test file: the files ``first`` in that order, then the others by
    decreasing number of tests (pytest-xdist's own order), each file's tests in their order.

    pytest-xdist's ``--dist loadfile`` hands the files to its workers in this order (pyproject's
    ``--no-loadscope-reorder``): the longest files start at the beginning of the suite, not at
    its end, where one worker would compute them while the other waits.
    """
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def weight(entry: tuple[str, list]) -> tuple[int, int]:
        name, tests = entry
        return (first.index(name) if name in first else len(first)), -len(tests)

    return [test for _, tests in sorted(files.items(), key=weight) for test in tests]


def pytest_collection_modifyitems(config, items):
    """Run the test files in the order of :func:`files_in_order`."""
    items[:] = files_in_order(items)


class PythonBall(Problem):
    """A user's plain-Python bouncing ball (no kernels): q'' = -gravity, q >= 0."""

    def __init__(self, q0=1.0, v0=0.0, gravity=9.81, restitution=0.8):
        self.name = "PythonBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.restitution = restitution
        self.t0 = 0.0
        self.q0 = np.array([q0])
        self.v0 = np.array([v0])
        self.gravity = gravity

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([-self.gravity])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.ones((1, 1))

    def potential_energy(self, q):
        return self.gravity * q[0]


@pytest.fixture
def python_ball():
    return PythonBall()


#: Central-difference step in time for checking closed forms against their ODE.
H_FD = 1e-5


def smooth_grid(t_start, t_end, impacts, n=4001, margin=3 * H_FD):
    """Grid on [t_start, t_end] without the points closer than ``margin`` to an impact."""
    t = np.linspace(t_start, t_end, n)
    impacts = np.asarray(impacts, dtype=float)
    if impacts.size:
        dist = np.min(np.abs(t[:, None] - impacts[None, :]), axis=1)
        t = t[dist > margin]
    return t


def step_grid(h_min: float, h_max: float, count: int, seed: int) -> np.ndarray:
    """``count`` step sizes from h_min to h_max, log-uniformly jittered (never powers of 2 apart).

    The end points are kept, the interior points are random: an order test must pass on any such
    grid, not on one picked to pass.
    """
    rng = np.random.default_rng(seed)
    inner = rng.uniform(np.log(h_min), np.log(h_max), count - 2)
    return np.sort(np.exp(np.concatenate([[np.log(h_min), np.log(h_max)], inner])))[::-1]


def assert_study_table(table, *columns: str) -> None:
    """A study's results table carries every column of the run-table schema
    (:mod:`impactbench.bench.results`) and ``columns``, with the timing columns last."""
    required = (*RUN_COLUMNS, *COST_COLUMNS, *STATUS_COLUMNS, *PROVENANCE_COLUMNS, *columns)
    missing = [name for name in required if name not in table.columns]
    assert not missing, missing
    assert tuple(table.columns[-len(TIMING_COLUMNS) :]) == TIMING_COLUMNS


class Payload:
    """Unpickling this runs ``exec``: it writes ``marker`` (what a planted pickle could do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('payload ran')",))


def plant_pickle(path, marker):
    """A malicious pickle at ``path``; checks first that unpickling it does run the payload."""
    data = pickle.dumps(Payload(marker))
    pickle.loads(data)
    assert marker.exists()
    marker.unlink()
    path.write_bytes(data)
