"""Every run bounded in time (issue 51 item 2): the stall test shared by the compiled and the
scipy event-driven paths, whatever the tolerances, and a study's time limit covering the run's
compilation run.

A run that does not stop would hang the test on a regression: each such run is made in a forked
child (:func:`within`), stopped after a limit, and a run still going there fails the test.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import NamedTuple

import numpy as np
import pytest
from test_no_hang import VFloor

from impactbench import CompiledProblem, ProblemKernels, SimulationError, kernel, simulate
from impactbench.bench.runner import Run, execute
from impactbench.core import compilation, stall
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall

#: Seconds a stalling run may take before it is stopped (on a loaded machine: a compilation of
#: the event engine and a few thousand scipy steps).
LIMIT = 900.0


def _call(function, sender) -> None:
    try:
        sender.send(("ok", function()))
    except BaseException as error:  # noqa: BLE001 - reported to the test
        sender.send(("error", error))


def within(seconds: float, function):
    """``function()`` in a forked child, its result or what it raised; TimeoutError when the
    child has not finished after ``seconds``."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_call, args=(function, sender), daemon=True)
    child.start()
    try:
        if not receiver.poll(seconds):
            raise TimeoutError(f"still running after {seconds} s")
        kind, value = receiver.recv()
    finally:
        child.kill()
        child.join()
    if kind == "error":
        raise value
    return value


@kernel
def _vfloor_mass_matrix(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 1.0


@kernel
def _vfloor_forces(t, q, v, p, out):
    out[0] = 0.0
    out[1] = -p[0]


@kernel
def _vfloor_gap(q, p, out):
    out[0] = q[1] - abs(q[0])


@kernel
def _vfloor_gap_gradient(q, p, out):
    out[0, 0] = -np.sign(q[0])
    out[0, 1] = 1.0


class CompiledVFloor(CompiledProblem):
    """:class:`test_no_hang.VFloor` with kernels: a ball on the floor g = y - |x| (a kink at
    the apex), run by the compiled event engine."""

    KERNELS = ProblemKernels(_vfloor_mass_matrix, _vfloor_forces, _vfloor_gap, _vfloor_gap_gradient)

    def __init__(self) -> None:
        self.name = "CompiledVFloor"
        self.n_dof = 2
        self.n_constraints = 1
        self.restitution = 0.5
        self.t0 = 0.0
        self.q0 = np.array([0.3, 1.0])
        self.v0 = np.zeros(2)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.array([9.81])

    def potential_energy(self, q: np.ndarray) -> float:
        return 9.81 * float(q[1])


class Stop(NamedTuple):
    """What a stopped run's :class:`SimulationError` says (the error itself does not pickle)."""

    reason: str
    t: float
    q: np.ndarray
    v: np.ndarray
    text: str


def _stall_error(problem, method, t_end: float = 3.0) -> Stop:
    """The error of a run that must stall; the test fails if it ends otherwise or not."""

    def run() -> Stop | None:
        try:
            simulate(problem, method, t_end)
        except SimulationError as error:
            return Stop(error.reason, error.t, error.q, error.v, str(error))
        return None

    error = within(LIMIT, run)
    assert error is not None, "the run reached t_end"
    return error


@pytest.mark.parametrize(
    "options",
    [{"rtol": 1e-6}, {"min_impact_interval": 1e-15}],
    ids=["rtol=1e-6", "min_impact_interval=1e-15"],
)
def test_the_scipy_path_stops_when_it_stalls_whatever_its_tolerances(options):
    """The probes: at rtol 1e-6 steps of about 1e-9 s at the apex for ever, and with
    min_impact_interval 1e-15 steps of 1e-13 never counted short."""
    error = _stall_error(VFloor(), EventDriven(compiled=False, **options))
    assert f"stalled: {stall.STALL_STEPS} consecutive steps" in error.reason
    assert "constraint 0" in error.reason and "C^1" in error.reason
    assert 1.0 < error.t < 1.5 and abs(error.q[0]) < 1e-3  # at the apex
    assert f"q={error.q.tolist()}" in error.text and f"v={error.v.tolist()}" in error.text


def test_the_compiled_engine_stops_when_it_stalls():
    """The probe: the compiled engine on the V-shaped floor ran on for ever."""
    error = _stall_error(CompiledVFloor(), EventDriven())
    assert f"stalled: {stall.STALL_STEPS} consecutive steps" in error.reason
    assert "constraint 0" in error.reason and "C^1" in error.reason
    assert 1.0 < error.t < 1.5 and abs(error.q[0]) < 1e-3
    assert f"q={error.q.tolist()}" in error.text and f"v={error.v.tolist()}" in error.text


def test_a_stalled_block_is_one_whose_mean_advance_is_too_short_for_the_time_left():
    steps = stall.STALL_STEPS
    pace = stall.STALL_FRACTION
    assert stall.stalled_block(0.5, 0.5 + 0.9 * steps * pace * 0.5, 0.0, 1.0)
    assert not stall.stalled_block(0.5, 0.5 + 1.1 * steps * pace * 0.5, 0.0, 1.0)
    # an accumulation of impacts, intervals of ratio e = 0.8 from 1e-6: its sum is 5e-6
    accumulation = sum(1e-6 * 0.8**k for k in range(steps))
    assert not stall.stalled_block(0.5, 0.5 + accumulation, 0.0, 1.0)
    # far from t = 0, the spacing of floats bounds the pace from below
    late = stall.STALL_ROUNDOFF * stall.EPS * 1e6
    assert stall.stalled_block(1e6, 1e6 + 0.9 * steps * late, 1e6, 1e6 + 1e-9)


#: Seconds the compilation run of the next test sleeps (a hang, for the test).
HANG = 60.0


def test_the_run_timeout_covers_the_compilation_run(monkeypatch):
    """The probe: a hang inside the compilation run went on past a limit of 20 s."""
    monkeypatch.setattr(compilation, "_LOADED", set())

    def hanging_compilation(*args):
        time.sleep(HANG)

    monkeypatch.setattr(compilation, "compile_by_short_run", hanging_compilation)
    start = time.monotonic()
    outcome = execute(
        [Run(BouncingBall, MoreauJean, 1.0, h=0.01)], run_timeout=2.0, use_cache=False, jobs=1
    )[0]
    assert time.monotonic() - start < HANG / 2
    assert outcome.status == "failed"
    assert "time limit of 2 s (run_timeout)" in outcome.error
    assert "compilation run" in outcome.error
