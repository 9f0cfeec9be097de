"""User event functions and output times of :func:`impactbench.simulate`, as solve_ivp's.

``simulate(..., t_eval=times, events=functions)`` runs the method, then evaluates the run on its
continuous state: the event-driven method's dense output (``EventDriven(dense_output=True)``:
the solver's own interpolants, as accurate as the run's tolerances; a method given without it
is run with it, on its own engine) or a time-stepping run's continuous extension
(:mod:`impactbench.core.extension`: linear interpolation between steps, the impact's velocity
jump at its logged time).

Event functions
    ``event(t, q, v) -> float``, with the optional attributes of solve_ivp: ``terminal`` (False
    or 0: record only; True or a positive integer k: end the run at the k-th occurrence) and
    ``direction`` (> 0: only crossings from negative to positive, < 0: from positive to
    negative, 0 (default): both). An occurrence is a crossing of zero on the continuous state:
    on each piece (a solver step or a time step) the function is sampled at
    :data:`PROBES_PER_STEP` + 1 equally spaced times of a dense-output piece (the end times of a
    time step) and a sign change -- from < 0 to >= 0 up, from > 0 to <= 0 down -- is refined by
    Brent's method to round-off on the piece's polynomial. A value that changes sign across a
    jump of the state (an impact) is located at the jump's time. A zero at t0 is not an event;
    two crossings between consecutive samples of one piece are not seen (as in solve_ivp,
    which samples only the ends of a step). Located times are thus exact to round-off on the
    dense output, which approximates the solution to the solver's tolerance, and to the
    extension's accuracy for a time-stepping run.

Terminal events
    The method integrates to ``t_end`` (or to where it fails); the result is then cut at the
    first terminal occurrence: samples before it and the state there (with ``t_eval``: the
    times up to it), the impact log and the dense output up to it; the status is
    :attr:`impactbench.Status.TERMINATED` and the message names the event. ``stats`` still
    describe the whole integration. A run that fails after a terminal event returns the cut
    trajectory instead of raising (as solve_ivp never integrates past a terminal event).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq

from . import _checks
from .extension import sampled_extension
from .method import EVENT_DRIVEN, Method
from .problem import Problem
from .trajectory import ImpactLog, SimulationError, Status, Trajectory

#: Subintervals of a dense-output piece sampled for sign changes (a time step: its two ends).
PROBES_PER_STEP = 8

_EPS = float(np.finfo(float).eps)


@dataclass(frozen=True)
class EventFunction:
    """A validated event function: ``function(t, q, v)``, its index in ``events``, the
    occurrence that ends the run (0: never) and its direction (-1, 0 or 1)."""

    function: Callable[[float, np.ndarray, np.ndarray], float]
    index: int
    terminal: int
    direction: int

    def __call__(self, t: float, y: np.ndarray, n: int) -> float:
        """The function's value at (t, q, v) = (t, y[:n], y[n:]), checked to be a finite real."""
        value = self.function(float(t), y[:n].copy(), y[n:].copy())
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or np.ndim(value) != 0:
            raise ValueError(
                f"events[{self.index}] must return a finite real number, got {value!r} at "
                f"t={float(t)!r}"
            )
        return number


def event_functions(events: Any) -> tuple[EventFunction, ...]:
    """``events`` (a callable or a sequence of callables) validated, with their ``terminal``
    and ``direction`` attributes (ValueError naming ``events[i]``)."""
    functions = [events] if callable(events) else events
    if not isinstance(functions, Sequence) or isinstance(functions, str) or not functions:
        raise ValueError(f"events must be a callable or a sequence of callables, got {events!r}")
    parsed = []
    for i, function in enumerate(functions):
        if not callable(function):
            raise ValueError(f"events[{i}] must be a callable event(t, q, v), got {function!r}")
        terminal = getattr(function, "terminal", False)
        if isinstance(terminal, (bool, np.bool_)):
            count = int(bool(terminal))
        elif isinstance(terminal, (int, np.integer)) and terminal >= 0:
            count = int(terminal)
        else:
            raise ValueError(
                f"events[{i}].terminal must be a bool or an integer >= 0, got {terminal!r}"
            )
        direction = getattr(function, "direction", 0.0)
        try:
            sign = float(direction)
        except (TypeError, ValueError):
            sign = math.nan
        if not math.isfinite(sign):
            raise ValueError(f"events[{i}].direction must be a real number, got {direction!r}")
        parsed.append(EventFunction(function, i, count, int(np.sign(sign))))
    return tuple(parsed)


def output_times(t_eval: Any, t0: float, t_end: float) -> np.ndarray:
    """``t_eval`` as a strictly increasing float array in [t0, t_end] (ValueError naming it)."""
    try:
        times = np.array(t_eval, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"t_eval must be a 1-D array of times, got {t_eval!r}") from None
    if times.ndim != 1 or not times.size:
        raise ValueError(f"t_eval must be a non-empty 1-D array, got shape {times.shape}")
    if not np.isfinite(times).all():
        raise ValueError("t_eval must be finite")
    if np.any(np.diff(times) <= 0.0):
        raise ValueError("t_eval must be strictly increasing")
    if times[0] < t0 or times[-1] > t_end:
        raise ValueError(
            f"t_eval must lie in [t0, t_end] = [{t0!r}, {t_end!r}], got values in "
            f"[{times[0]!r}, {times[-1]!r}]"
        )
    return times


def _crosses(before: float, after: float, direction: int) -> bool:
    """A sign change from ``before`` to ``after`` in ``direction`` (see the module notes)."""
    up = before < 0.0 <= after
    down = before > 0.0 >= after
    return up if direction > 0 else down if direction < 0 else up or down


class _Recorder:
    """The occurrences of the event functions, in time order, and the terminal one."""

    def __init__(self, functions: tuple[EventFunction, ...]) -> None:
        self.functions = functions
        self.found: list[list[tuple[float, np.ndarray]]] = [[] for _ in functions]
        self.stop: tuple[float, np.ndarray, EventFunction] | None = None

    def add(self, occurrences: list[tuple[float, int, np.ndarray]]) -> bool:
        """Record ``occurrences`` (t, index, y) in time order; True at a terminal one."""
        for t, index, y in sorted(occurrences, key=lambda item: (item[0], item[1])):
            event = self.functions[index]
            self.found[index].append((t, y))
            if event.terminal and len(self.found[index]) == event.terminal:
                self.stop = (t, y, event)
                return True
        return False


def locate(functions: tuple[EventFunction, ...], extension: Any, n: int, probes: int) -> _Recorder:
    """The occurrences of ``functions`` on ``extension`` (a DenseOutput or a SampledExtension),
    piece by piece, up to the first terminal one; ``probes`` subintervals per piece."""
    recorder = _Recorder(functions)
    breaks = extension.breaks
    previous_y, previous_g = None, None
    for piece in range(breaks.shape[0] - 1):
        a, b = float(breaks[piece]), float(breaks[piece + 1])
        times = np.linspace(a, b, probes + 1)
        times[0], times[-1] = a, b
        states = extension.on_piece(piece, times)
        values = np.empty((probes + 1, len(functions)))
        for j, (t, y) in enumerate(zip(times, states, strict=True)):
            same = j == 0 and previous_y is not None and np.array_equal(y, previous_y)
            values[j] = previous_g if same else [f(t, y, n) for f in functions]
        occurrences = []
        if previous_g is not None:  # across a jump at a (no crossing where the state is equal)
            occurrences += [
                (a, f.index, states[0]) for f in functions
                if _crosses(previous_g[f.index], values[0, f.index], f.direction)
            ]  # fmt: skip
        for j in range(probes):
            for f in functions:
                if _crosses(values[j, f.index], values[j + 1, f.index], f.direction):
                    t = _root(f, extension, piece, times[j], times[j + 1], values[j + 1], n)
                    occurrences.append((t, f.index, extension.on_piece(piece, t)[0]))
        if occurrences and recorder.add(occurrences):
            return recorder
        previous_y, previous_g = states[-1], values[-1]
    return recorder


def _root(
    f: EventFunction, extension: Any, piece: int, lo: float, hi: float, at_hi: np.ndarray, n: int
) -> float:
    """The zero of ``f`` on [lo, hi] of the piece (``hi`` itself when f(hi) = 0), to round-off."""
    if at_hi[f.index] == 0.0:
        return hi
    return float(
        brentq(
            lambda s: f(s, extension.on_piece(piece, s)[0], n),
            lo,
            hi,
            xtol=np.finfo(float).tiny,
            rtol=4.0 * _EPS,
        )  # fmt: skip
    )


def _method_with_continuous_state(method: Method, output_every: int) -> Method:
    """The method to run for t_eval / events: an event-driven one with its dense output on."""
    if method.family == EVENT_DRIVEN:
        parameters = method.parameters()
        if "dense_output" not in parameters:
            raise ValueError(
                f"t_eval and events need an event-driven method's dense output, and "
                f"{method.name} has no dense_output parameter"
            )
        if parameters["dense_output"]:
            return method
        return type(method)(**{**parameters, "dense_output": True})
    if output_every != 1:
        raise ValueError(
            "output_every must be 1 with t_eval or events on a time-stepping method (its "
            f"continuous extension interpolates consecutive steps), got {output_every!r}"
        )
    if getattr(method, "t_eval", None) is not None:
        raise ValueError(
            f"{method.name} has output times of its own (its t_eval), and simulate's t_eval and "
            "events interpolate between its steps: give the times to one of them"
        )
    return method


def simulate_continuous(
    problem: Problem,
    method: Method,
    t_end: float,
    h: float | None,
    output_every: int,
    t_eval: Any,
    events: Any,
) -> Trajectory:
    """:func:`impactbench.simulate` with ``t_eval`` and/or ``events`` (see the module notes;
    arguments as there, ``t_eval`` and ``events`` possibly None)."""
    functions = () if events is None else event_functions(events)
    times = None
    if t_eval is not None:
        t0 = _checks.finite_scalar(problem.t0, "t0")
        times = output_times(t_eval, t0, _checks.finite_scalar(t_end, "t_end"))
    runner = _method_with_continuous_state(method, output_every)
    failure = None
    try:
        trajectory = runner.solve(problem, t_end, h=h, output_every=output_every)
    except SimulationError as error:
        if error.trajectory is None or not any(f.terminal for f in functions):
            raise
        trajectory, failure = error.trajectory, error
    if failure is not None and (
        trajectory.dense is None if method.family == EVENT_DRIVEN else trajectory.t.shape[0] < 2
    ):
        raise failure  # nothing computed to locate a terminal event on
    extension = trajectory.dense if method.family == EVENT_DRIVEN else None
    if extension is None:
        try:
            extension = sampled_extension(trajectory)
        except ValueError:
            if failure is not None:  # report the run's failure, not the extension's
                raise failure from None
            raise
    probes = PROBES_PER_STEP if method.family == EVENT_DRIVEN else 1
    recorder = _Recorder(functions)
    if functions:
        recorder = locate(functions, extension, int(problem.n_dof), probes)
    if failure is not None and recorder.stop is None:
        raise failure
    if recorder.stop is not None:
        trajectory = _cut(trajectory, recorder.stop)
    if times is not None:
        if recorder.stop is not None:
            times = times[times <= recorder.stop[0]]
        trajectory = _resampled(trajectory, extension, times)
    if functions:
        trajectory = _with_events(trajectory, recorder, int(problem.n_dof))
    return trajectory


def _resampled(trajectory: Trajectory, extension: Any, times: np.ndarray) -> Trajectory:
    """``trajectory`` with its samples replaced by the continuous state at ``times``."""
    n = trajectory.q.shape[1]
    y = extension.state(times) if times.size else np.empty((0, 2 * n))
    return replace(trajectory, t=times.copy(), q=y[:, :n].copy(), v=y[:, n:].copy())


def _cut(trajectory: Trajectory, stop: tuple[float, np.ndarray, EventFunction]) -> Trajectory:
    """``trajectory`` ended at the terminal occurrence ``stop`` = (t, y, event)."""
    t, y, event = stop
    n = trajectory.q.shape[1]
    keep = trajectory.t < t
    log = trajectory.impacts
    logged = log.t <= t
    total = int(logged.sum()) if not logged.all() else log.total
    impacts = ImpactLog(
        log.t[logged], log.constraint[logged], log.normal_velocity_before[logged],
        log.normal_velocity_after[logged], total,
    )  # fmt: skip
    name = getattr(event.function, "__name__", type(event.function).__name__)
    return replace(
        trajectory,
        t=np.append(trajectory.t[keep], t),
        q=np.vstack((trajectory.q[keep], y[:n])),
        v=np.vstack((trajectory.v[keep], y[n:])),
        impacts=impacts,
        status=Status.TERMINATED,
        message=f"terminal event events[{event.index}] ({name}) at t={t!r}",
        dense=None if trajectory.dense is None else trajectory.dense.until(t),
    )


def _with_events(trajectory: Trajectory, recorder: _Recorder, n: int) -> Trajectory:
    """``trajectory`` with the located occurrences as ``t_events``, ``q_events``, ``v_events``."""
    t_events, q_events, v_events = [], [], []
    for found in recorder.found:
        y = np.array([state for _, state in found]).reshape(len(found), 2 * n)
        t_events.append(np.array([t for t, _ in found], dtype=float))
        q_events.append(y[:, :n].copy())
        v_events.append(y[:, n:].copy())
    return replace(trajectory, t_events=t_events, q_events=q_events, v_events=v_events)
