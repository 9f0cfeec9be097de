"""Study runs: their specification, cache key, parallel execution and on-disk cache.

A :class:`Run` is one simulation of a study: a problem factory with its parameters, a method
class with its parameters, the horizon, the step (time-stepping) and the metrics wanted.
:func:`expand` turns a study's grid into runs, named benchopt-style
(``MoreauJean[theta=0.5]``). :func:`execute` runs them with joblib and returns one
:class:`Outcome` per run.

Cache. Each finished run is stored as one JSON file ``<cache_dir>/<key>.json``, written
atomically as soon as the run returns, so an interrupted or crashed study loses only the runs in
flight and resumes from the others; rerunning a finished study reads the cache and computes
nothing. The key hashes the run's parameters and its *code version*: the source of the core
package (except the modules that only present results), of the problem's module and of the
method's module (each with the sibling modules of its package that it imports names from), so
editing a method's source invalidates its runs and only those. Failed runs are never cached.
The default folder is ``$IMPACTBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/impactbench/runs``,
else ``~/.cache/impactbench/runs``; delete it to clear the cache. An entry is data only and is
validated against its schema when read (:meth:`RunCache.load`): one that fails (not a regular file,
larger than :data:`MAX_ENTRY_BYTES`, a checksum that does not match its content and key, wrong
shape, wrong types, a stored failure, another run's spec) is ignored with a
:class:`impactbench.CacheWarning` and the run recomputed (docs/cache.md states who may write a
shared cache: the checksum finds corruption and edits, not a writer who recomputes it). A
cache that cannot be written (e.g. a read-only folder) is reported by one CacheWarning; the
study goes on and its outcomes are returned uncached.

Failures. Whatever a run raises -- an exception, ``SystemExit``, any ``BaseException`` from the
problem's or the method's code -- becomes a failed outcome with the message, and so does a
``KeyboardInterrupt`` raised in a worker (a process or thread other than the caller of
:func:`execute`). A KeyboardInterrupt in the calling thread itself (Ctrl-C, or the run's code
when the runs execute serially in this process, which cannot be told apart) stops
:func:`execute`: the finished runs are in the cache and the next call resumes. A worker that
dies takes the runs not finished by then with it; they are failed outcomes saying so, and
``retries`` reruns the failed runs (these and the others) in further passes.

Timing. A run is first simulated once in full as a warm-up (it absorbs compilation and
first-call costs: numba compiles a helper called from plain Python only when a branch first
reaches it, e.g. at the first impact, so a shortened warm-up would not do), unless its process
has run the same compiled code before (:func:`impactbench.core.compilation.compiled_code`: a
compiled time loop or event-driven engine; the plain-Python and scipy paths are always warmed
up). Then the run is timed in repeats. A repeat simulates the run ``inner_runs`` times and
records the time per simulation (the sum of the simulations' wall times over ``inner_runs``);
it counts only when that sum covers :data:`impactbench.analysis.timing.MIN_TIMED_SECONDS`,
else it is dropped and ``inner_runs`` raised to cover it at the pace measured (starting from
one simulation; at most :data:`MAX_INNER_RUNS`), so that a repeat of a short run is not
dominated by the clock's resolution, the per-call overheads and the scheduler's slices
(``inner_runs`` records the last count: the repeats before a raise, which covered the time
too, are kept). The repeats go on until there are ``repeats``
of them and the 95 % interval of their median lies within
:data:`impactbench.analysis.timing.MEDIAN_PRECISION` of it
(:func:`impactbench.analysis.timing.median_is_precise`), and stop at ``max_repeats``
(``timed_repeats`` records how many were made). ``wall_time`` is the minimum over the repeats,
``wall_time_median`` and ``wall_time_max`` their median and maximum, ``wall_time_repeats``
every repeat (the studies' verdicts are bootstrap comparisons of these,
:func:`impactbench.analysis.timing.compare`); ``warmup_time`` the time of the warm-up, NaN
when there was none; ``compile_time`` the time numba spent compiling or loading compiled code
in the run's simulations, kept out of every other timing; ``integration_time`` (and
``_median``, ``_max``) the same per simulation for the time spent in the method's integration
loop (``Trajectory.stats["integration_time"]``: the compiled loop where one runs; NaN for a
method that does not report it), so that a table gives the method's cost next to the per-call
cost of :func:`impactbench.simulate`. The metrics are those of the last simulation (the
simulations are identical). Timed runs should have the machine to themselves: the timing
studies run one job at a time (``Study.max_jobs``), their compilation runs done before, and
time their runs interleaved (``interleave`` of :func:`execute`: all runs performed untimed
first, then timed round-robin, one repeat of each per round), so that a slow stretch of the
machine falls on all the runs compared alike.

Compilation. In parallel, one run per compiled-code group
(:func:`impactbench.core.compilation.one_per_group`) goes first and the others follow when
these are done, so that two workers never compile the same code at once (the later runs load it
from numba's disk cache). A study whose runs are timed one at a time (``jobs=1``) can still
compile in parallel: with ``compile_jobs`` > 1, :func:`execute` first performs one short run
per group of compiled code on that many workers (:func:`_compile`), which fills numba's disk
cache, then the timed runs one after the other (each process still warms up in full once per
group: loading from the disk cache and first calls are not timed either).
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import importlib.metadata
import itertools
import json
import math
import os
import platform
import re
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd

from ..analysis.fitting import perturbed_steps
from ..analysis.impact_events import impact_events
from ..analysis.metrics import GRID_METRICS, METRICS, keeping_dense_output
from ..analysis.reference import Reference, default_reference_dir, reference_dir_set
from ..analysis.timing import MIN_TIMED_SECONDS, median_is_precise
from ..core import _checks, compilation
from ..core._files import CacheWarning, read_regular, write_atomic
from ..core.method import Method
from ..core.problem import Problem
from ..core.simulate import simulate
from ..core.trajectory import Status, Trajectory
from ..core.versioning import source_digest
from . import workers
from .progress import progress_bar
from .timeout import check_run_timeout, perform_within

ProblemFactory = Callable[..., Problem]
ReferenceFactory = Callable[[Problem, float], "Trajectory | Reference"]
ArtefactFactory = Callable[["Run", Problem, Trajectory], "dict[str, pd.DataFrame]"]

#: Execution backends of :func:`execute`.
BACKENDS = ("loky", "dask")

#: Packages whose versions every outcome records.
PACKAGES = ("impactbench", "numpy", "scipy", "numba")

#: Largest run-cache entry read (bytes); an entry is a few kilobytes, with artefacts (energy
#: curves of a few hundred samples) tens of kilobytes.
MAX_ENTRY_BYTES = 4 * 1024**2

#: Largest ``retries`` of :func:`execute` (each retry is a pass over the failed runs).
MAX_RETRIES = 10

#: Largest number of local jobs per CPU (each is a process holding a Python interpreter).
MAX_JOBS_PER_CPU = 4

#: Most simulations in one timed repeat (:func:`perform`).
MAX_INNER_RUNS = 100_000

_CACHE_FORMAT = 5
_KEY_LENGTH = 20

FAILED = Status.FAILED.value

#: What an artefact name must look like (it becomes a file name, ``<name>.csv``).
ARTEFACT_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _reference_name(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _canonical(value: Any, name: str) -> Any:
    """``value`` as JSON data (tuples become lists), or ValueError naming ``name``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_canonical(item, f"{name}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _canonical(v, f"{name}.{k}") for k, v in value.items()}
    raise ValueError(
        f"{name} must be JSON data (None, bool, int, float, str, lists, dicts), got {value!r}"
    )


def _check_factory(value: Any, name: str) -> None:
    if not callable(value) or "<" in getattr(value, "__qualname__", "<"):
        raise ValueError(
            f"{name} must be a module-level class or function (it is named in the cache key "
            f"and pickled by reference), got {value!r}"
        )


@dataclass(frozen=True)
class Run:
    """One simulation of a study.

    Parameters
    ----------
    problem : callable or Problem
        Problem factory called as ``problem(**problem_kwargs)``: a module-level class or
        function (not a lambda, a local function or a partial). An instance (without
        ``problem_kwargs``) is pickled into the parameters of
        :func:`impactbench.bench.workers.problem_from_pickle`, which becomes the factory.
    method : type or Method
        :class:`impactbench.Method` subclass, called as ``method(**method_kwargs)``; an
        instance (without ``method_kwargs``) becomes its class with its parameters.
    t_end : float
        Final time.
    h : float or None
        Step; required for time-stepping methods (``method.requires_step``), None otherwise.
    problem_kwargs, method_kwargs : mapping
        Constructor parameters, JSON data (numbers, strings, booleans, lists, dicts).
    output_every : int
        Output decimation passed to :func:`impactbench.simulate`.
    metrics : sequence of str
        Names from :data:`impactbench.analysis.metrics.METRICS`.
    repeats : int
        Fewest timed repeats after the warm-up run (see the module notes: each covers at least
        :data:`impactbench.analysis.timing.MIN_TIMED_SECONDS`).
    max_repeats : int or None
        Most timed repeats: the repeats beyond ``repeats`` go on until the interval of their
        median is precise (module notes). Default: ``repeats`` (a fixed number of repeats).
    tolerance : str or None
        Name of the method parameter swept as the accuracy axis of an adaptive method (e.g.
        ``"rtol"``); it is left out of :attr:`method_name`.
    reference : callable or None
        Module-level function ``reference(problem, t_end) -> Trajectory``, the reference run
        errors are measured against; None: the problem's exact solution (metrics that need a
        reference are NaN for a problem without one).
    problem_name : str
        Label in tables; default: the factory's name.
    nominal_h : float or None
        Time-stepping only: the nominal step of the phase family the run belongs to
        (``h = nominal_h (1 + delta)``, :func:`impactbench.analysis.fitting.perturbed_steps`); a
        label (column ``h_nominal`` of the tables), not part of the cache key. Default: ``h``.
    artefact : callable or None
        Module-level function ``artefact(run, problem, trajectory) -> {name: DataFrame}``: what
        the study's report needs from the trajectory beyond the metrics (an energy curve, fitted
        laws), computed by the runner after the run and stored with its row (in the cache, and by
        :func:`impactbench.run_study` as ``<name>.csv`` next to the table), so that a report
        reads it back and never simulates. Names are lowercase identifiers; the frames hold
        numbers and strings.

    Raises
    ------
    ValueError
        For an invalid field (the message names it).
    """

    problem: ProblemFactory
    method: type[Method]
    t_end: float
    h: float | None = None
    problem_kwargs: Mapping[str, Any] = field(default_factory=dict)
    method_kwargs: Mapping[str, Any] = field(default_factory=dict)
    output_every: int = 1
    metrics: Sequence[str] = ()
    repeats: int = 1
    max_repeats: int | None = None
    tolerance: str | None = None
    reference: ReferenceFactory | None = None
    problem_name: str = ""
    nominal_h: float | None = None
    artefact: ArtefactFactory | None = None

    def __post_init__(self) -> None:
        self._instances_as_factories()
        _check_factory(self.problem, "problem")
        if not (isinstance(self.method, type) and issubclass(self.method, Method)):
            raise ValueError(f"method must be a Method subclass, got {self.method!r}")
        set_field = functools.partial(object.__setattr__, self)
        set_field("t_end", _checks.finite_scalar(self.t_end, "t_end"))
        if self.method.requires_step:
            set_field("h", _checks.positive_scalar(self.h, "h"))
            nominal = self.h if self.nominal_h is None else self.nominal_h
            set_field("nominal_h", _checks.positive_scalar(nominal, "nominal_h"))
        elif self.h is not None or self.nominal_h is not None:
            raise ValueError(
                f"{self.method.__name__} is adaptive: h and nominal_h must be None, got "
                f"{self.h!r}, {self.nominal_h!r}"
            )
        set_field("problem_kwargs", _canonical(dict(self.problem_kwargs), "problem_kwargs"))
        set_field("method_kwargs", _canonical(dict(self.method_kwargs), "method_kwargs"))
        set_field("output_every", _checks.positive_int(self.output_every, "output_every"))
        set_field("repeats", _checks.positive_int(self.repeats, "repeats"))
        most = self.repeats if self.max_repeats is None else self.max_repeats
        set_field("max_repeats", _checks.positive_int(most, "max_repeats"))
        if self.max_repeats < self.repeats:
            raise ValueError(
                f"max_repeats must be at least repeats ({self.repeats}), got {self.max_repeats!r}"
            )
        unknown = [name for name in self.metrics if name not in METRICS]
        if isinstance(self.metrics, str) or unknown:
            raise ValueError(
                f"metrics must be names from {sorted(METRICS)}, got {list(self.metrics)!r}"
            )
        set_field("metrics", tuple(self.metrics))
        if self.tolerance is not None and self.tolerance not in self.method_kwargs:
            raise ValueError(
                f"tolerance must name a method parameter, got {self.tolerance!r} "
                f"(method_kwargs {sorted(self.method_kwargs)})"
            )
        if self.reference is not None:
            _check_factory(self.reference, "reference")
        if self.artefact is not None:
            _check_factory(self.artefact, "artefact")
        set_field("problem_name", self.problem_name or self.problem.__name__)

    def _instances_as_factories(self) -> None:
        """A problem instance becomes :func:`impactbench.bench.workers.problem_from_pickle` with
        its pickle, a method instance its class with its parameters (runs are rebuilt in the
        workers from their factories and parameters)."""
        set_field = functools.partial(object.__setattr__, self)
        if isinstance(self.problem, Problem):
            if self.problem_kwargs:
                raise ValueError("problem_kwargs must be empty when problem is an instance")
            set_field("problem_name", self.problem_name or self.problem.name)
            set_field("problem_kwargs", workers.pickled_problem(self.problem))
            set_field("problem", workers.problem_from_pickle)
        if isinstance(self.method, Method):
            if self.method_kwargs:
                raise ValueError("method_kwargs must be empty when method is an instance")
            set_field("method_kwargs", self.method.parameters())
            set_field("method", type(self.method))

    @property
    def method_name(self) -> str:
        """The method and its parameters except the tolerance, e.g. ``MoreauJean[theta=0.5]``."""
        params = ",".join(f"{k}={v}" for k, v in self.method_kwargs.items() if k != self.tolerance)
        return f"{self.method.__name__}[{params}]" if params else self.method.__name__

    @property
    def tolerance_value(self) -> float | None:
        """The value of the tolerance parameter, None without one."""
        return None if self.tolerance is None else self.method_kwargs[self.tolerance]

    def spec(self) -> dict[str, Any]:
        """Everything that determines the outcome, as JSON data (labels excluded)."""
        return {
            "problem": _reference_name(self.problem),
            "problem_kwargs": self.problem_kwargs,
            "method": _reference_name(self.method),
            "method_kwargs": self.method_kwargs,
            "t_end": self.t_end,
            "h": self.h,
            "output_every": self.output_every,
            "metrics": list(self.metrics),
            "repeats": self.repeats,
            "max_repeats": self.max_repeats,
            "min_timed_seconds": MIN_TIMED_SECONDS,
            "reference": None if self.reference is None else _reference_name(self.reference),
            "artefact": None if self.artefact is None else _reference_name(self.artefact),
        }


@dataclass(frozen=True)
class Case:
    """A problem of a study grid: factory, parameters, horizon and label (see :class:`Run`)."""

    problem: ProblemFactory
    t_end: float
    problem_kwargs: Mapping[str, Any] = field(default_factory=dict)
    problem_name: str = ""


@dataclass(frozen=True)
class Grid:
    """A method and its parameter grid: every combination of the values becomes a run.

    ``parameters`` maps a parameter name to the sequence of its values; ``tolerance`` names the
    parameter that is the accuracy axis of an adaptive method (see :class:`Run`).
    """

    method: type[Method]
    parameters: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    tolerance: str | None = None


def expand(
    cases: Sequence[Case],
    grids: Sequence[Grid],
    *,
    steps: Sequence[float] = (),
    phases: int = 1,
    metrics: Sequence[str] = (),
    output_every: int = 1,
    repeats: int = 1,
    max_repeats: int | None = None,
    reference: ReferenceFactory | None = None,
    artefact: ArtefactFactory | None = None,
) -> list[Run]:
    """Expand a study grid into runs: cases x grids x parameter combinations (x steps x phases).

    Time-stepping methods (``requires_step``) get ``phases`` runs per nominal step h in
    ``steps``, at the steps h (1 + delta_j) of :func:`impactbench.analysis.fitting.perturbed_steps`
    (delta_0 = 0: with ``phases=1`` the nominal steps alone), each labelled with its nominal
    step; adaptive methods one run per parameter combination. The order is that of the loops:
    cases, grids, parameter combinations (first parameter slowest), steps, phases.

    Raises
    ------
    ValueError
        If a time-stepping method is given without steps, ``phases`` is not a positive
        integer, or a run is invalid.
    """
    family = perturbed_steps(list(steps), phases) if len(steps) else np.empty((0, phases))
    runs = []
    for case in cases:
        for grid in grids:
            if grid.method.requires_step and not steps:
                raise ValueError(f"steps must be given for {grid.method.__name__}, got none")
            names = list(grid.parameters)
            for values in itertools.product(*grid.parameters.values()):
                kwargs = dict(zip(names, values, strict=True))
                pairs = [(None, None)]
                if grid.method.requires_step:
                    pairs = [
                        (nominal, h)
                        for nominal, row in zip(steps, family, strict=True)
                        for h in row
                    ]
                for nominal, h in pairs:
                    runs.append(
                        Run(
                            problem=case.problem,
                            method=grid.method,
                            t_end=case.t_end,
                            h=None if h is None else float(h),
                            nominal_h=None if nominal is None else float(nominal),
                            problem_kwargs=case.problem_kwargs,
                            method_kwargs=kwargs,
                            output_every=output_every,
                            metrics=metrics,
                            repeats=repeats,
                            max_repeats=max_repeats,
                            tolerance=grid.tolerance,
                            reference=reference,
                            problem_name=case.problem_name,
                            artefact=artefact,
                        )
                    )
    return runs


# --------------------------------------------------------------------------------------------
# Code version and key


def code_version(run: Run) -> str:
    """Digest of the source the outcome of ``run`` depends on (see the module docstring)."""
    return source_digest(run.problem, run.method, run.reference, stored=run.artefact)[:_KEY_LENGTH]


def run_key(run: Run, version: str) -> str:
    """Cache key of ``run`` under code version ``version``."""
    payload = json.dumps({"run": run.spec(), "code_version": version}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:_KEY_LENGTH]


def package_versions() -> dict[str, str]:
    """Versions of Python and of :data:`PACKAGES` in this process (keys ``<name>_version``): a
    new dict each call, read once per process (reading the installed metadata costs more than
    many runs)."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    versions = [("python_version", platform.python_version())]
    for name in PACKAGES:
        try:
            versions.append((f"{name}_version", importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            versions.append((f"{name}_version", "unknown"))
    return tuple(versions)


def git_revision() -> str:
    """Commit of the source tree of this package (``-dirty`` if a tracked source file outside
    ``reports/`` is modified), else "unknown"."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return "unknown"
        # the generated reports are outputs, not sources: rewriting them leaves the tree clean
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!reports")
        return git("rev-parse", "--short=12", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# --------------------------------------------------------------------------------------------
# One run


@dataclass
class Outcome:
    """The result of one run (one table row without the run's own parameters).

    Attributes
    ----------
    status : str
        ``"ok"``, ``"zeno-handled"`` (:class:`impactbench.Status`) or ``"failed"``.
    error : str
        Why the run failed ("" otherwise): the exception type and message (a
        :class:`impactbench.SimulationError` message carries t, q and v).
    metrics : dict
        Metric name -> value (NaN when the run failed or no reference exists).
    cost : dict
        ``h_used`` (None for adaptive methods), ``steps``, ``force_evaluations``, ``impacts``
        (impact events, :mod:`impactbench.analysis.impact_events`), ``impact_log_entries`` (the raw
        log), ``contact_phases`` and ``contact_time`` (persistent contact), ``impacts_capped``
        (True when the impact log overflowed its capacity, ``ImpactLog.truncated``: ``impacts``,
        ``contact_phases`` and ``contact_time`` then count the stored entries only and are lower
        bounds; ``impact_log_entries`` counts every entry).
    timing : dict
        ``wall_time`` (seconds per simulation, min over the repeats), ``wall_time_median``,
        ``wall_time_max``, ``wall_time_repeats`` (the list of the repeats' times),
        ``timed_repeats`` (how many), ``inner_runs`` (simulations per repeat; module notes),
        ``warmup_time``, ``compile_time`` (numba's compilation and disk-cache loading in the
        run's warm-up and repeats, none of it in the other timings; NaN in a cache entry stored
        before it was measured) and ``integration_time`` (min), ``integration_time_median``,
        ``integration_time_max`` (NaN when the method does not report it).
    provenance : dict
        Package versions (:func:`package_versions`, from the process that ran it) and
        ``git_revision`` (of the process that launched it).
    key, code_version : str
        Cache key and code version of the run.
    artefacts : dict
        Name -> {column: list of values}: the frames of the run's ``artefact`` function as JSON
        data (empty without one, or when the run failed).
    cached : bool
        True when read from the cache by the :func:`execute` call that returned it (not stored).
    """

    status: str
    error: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    key: str = ""
    code_version: str = ""
    artefacts: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    cached: bool = False

    @classmethod
    def failure(cls, run: Run, error: str, provenance: dict[str, str]) -> Outcome:
        """A failed run: NaN metrics and costs, and the error message."""
        nan = float("nan")
        return cls(
            status=FAILED,
            error=error,
            metrics=dict.fromkeys(run.metrics, nan),
            cost=dict.fromkeys(_COST_FIELDS, nan),
            timing=dict.fromkeys(TIMING_FIELDS, nan),
            provenance=provenance,
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form (``cached`` excluded)."""
        data = asdict(self)
        del data["cached"]
        return data


def _reference(run: Run, problem: Problem) -> Reference | None:
    if not any(METRICS[name].needs_reference for name in run.metrics):
        return None
    if run.reference is not None:
        computed = run.reference(problem, run.t_end)
        if isinstance(computed, Reference):
            return computed
        return Reference.from_trajectory(computed)
    if problem.has_exact_solution:
        return Reference.exact(problem, run.t_end)
    return None


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def perform(run: Run, *, interruptible: bool = True) -> Outcome:
    """Execute one run (warm-up, timed repeats, metrics); whatever it raises becomes a failure.

    Parameters
    ----------
    run : Run
    interruptible : bool
        Let a KeyboardInterrupt through (default: in the process and thread a user can press
        Ctrl-C in). False in a worker, where one can only come from the run's own code: it
        then becomes a failed outcome like ``SystemExit`` and every other exception.

    Returns
    -------
    Outcome
        Without ``key``, ``code_version`` and ``git_revision`` (set by :func:`execute`).

    Notes
    -----
    The metrics of the error grid (:data:`impactbench.analysis.metrics.GRID_METRICS`) see the
    run through its continuous extension: a method that offers a dense output is run with it
    kept (:func:`impactbench.analysis.metrics.keeping_dense_output`), in the warm-up and the
    timed simulations alike, so that the errors, the cost and the counts are those of the timed
    run. Every simulation of the run must give the same trajectory (:func:`_fingerprint`; the
    metrics are those of the last one): one that differs fails the run.
    """
    return _perform(run, interruptible, timed=True)[0]


def _perform(run: Run, interruptible: bool, timed: bool) -> tuple[Outcome, _Repeats | None]:
    """:func:`perform`, the repeats timed there (``timed``), or left to the caller: then the
    outcome's timings are NaN but for ``warmup_time`` and ``compile_time``, its metrics are
    those of one untimed simulation, and the returned :class:`_Repeats` (None for a failed
    run) times the run (:meth:`_Execution.interleaved`)."""
    provenance = package_versions()
    repeats = None
    try:
        problem = run.problem(**run.problem_kwargs)
        method = run.method(**run.method_kwargs)
        if GRID_METRICS.intersection(run.metrics) and (
            run.reference is not None or problem.has_exact_solution
        ):  # the errors on the grid through the timed run's own dense output
            method = keeping_dense_output(method)
        options = {"h": run.h, "output_every": run.output_every}
        code = compilation.compiled_code(method, problem)
        warmup_time, compile_time = math.nan, 0.0
        if not compilation.is_loaded(code):
            warmup = simulate(problem, method, run.t_end, **options).stats
            warmup_time, compile_time = warmup["wall_time"], warmup.get("compile_time", 0.0)
            compilation.mark_loaded(code)
        repeats = _Repeats(run, problem, method, options)
        if timed:
            trajectory = repeats.attempt()
            while not repeats.done:
                trajectory = repeats.attempt()
        else:
            trajectory = simulate(problem, method, run.t_end, **options)
            compile_time += trajectory.stats.get("compile_time", 0.0)  # a patched simulate
            repeats.measured = _fingerprint(trajectory)
        if not trajectory.success:
            return Outcome.failure(run, trajectory.message, provenance), None
        reference = _reference(run, problem)
        artefacts = _artefacts(run, problem, trajectory)
        measured = trajectory
        values = {}
        for name in run.metrics:
            metric = METRICS[name]
            if metric.needs_reference and reference is None:
                values[name] = float("nan")
                continue
            try:
                values[name] = float(metric.function(problem, measured, reference))
            except Exception as error:
                raise RuntimeError(f"metric {name} failed: {_describe(error)}") from error
    except KeyboardInterrupt as error:
        if interruptible:
            raise
        return Outcome.failure(run, _describe(error), provenance), None
    except BaseException as error:  # SystemExit and the like from the run's code: a failed row
        return Outcome.failure(run, _describe(error), provenance), None
    events = impact_events(trajectory)
    timing = dict.fromkeys(TIMING_FIELDS, math.nan)
    timing.update(warmup_time=warmup_time, compile_time=compile_time)
    outcome = Outcome(
        status=trajectory.status.value,
        metrics=values,
        cost={
            "h_used": trajectory.h,
            "steps": int(trajectory.stats["steps"]),
            "force_evaluations": int(trajectory.stats["force_evaluations"]),
            "impacts": events.impacts,
            "impact_log_entries": int(trajectory.stats["impacts"]),
            "contact_phases": events.contact_phases,
            "contact_time": events.contact_time,
            "impacts_capped": trajectory.impacts.truncated,
        },
        timing=timing,
        provenance=provenance,
        artefacts=artefacts,
    )
    if not timed:
        return outcome, repeats
    repeats.record(outcome)
    return outcome, None


class _Repeats:
    """The timed repeats of one run (module notes): :meth:`attempt` one at a time until
    :attr:`done`, then :meth:`record` them in the run's outcome."""

    def __init__(self, run: Run, problem: Problem, method: Method, options: dict) -> None:
        self.run, self.problem, self.method, self.options = run, problem, method, options
        self.times: list[float] = []
        self.integration: list[float] = []
        self.inner = 1
        self.compile_time = 0.0
        #: the :func:`_fingerprint` every simulation must have (that of the first, or of the
        #: untimed simulation whose metrics the outcome reports)
        self.measured: str | None = None

    @property
    def done(self) -> bool:
        """``max_repeats`` repeats made, or ``repeats`` with a precise median."""
        made = len(self.times)
        return made >= self.run.max_repeats or (
            made >= self.run.repeats and median_is_precise(self.times)
        )

    def attempt(self) -> Trajectory:
        """One repeat of ``inner`` simulations, dropped, and ``inner`` raised, when it does not
        cover :data:`impactbench.analysis.timing.MIN_TIMED_SECONDS`; returns the last
        simulation (not kept: the interleaved runs hold no trajectory while they wait).

        Raises
        ------
        RuntimeError
            If a simulation's trajectory differs from the measured one (:func:`_fingerprint`).
        """
        wall = loop = 0.0
        for _ in range(self.inner):
            trajectory = simulate(self.problem, self.method, self.run.t_end, **self.options)
            self.compile_time += trajectory.stats.get("compile_time", 0.0)  # a patched simulate
            fingerprint = _fingerprint(trajectory)
            if self.measured is None:
                self.measured = fingerprint
            elif fingerprint != self.measured:
                raise RuntimeError(
                    "the run is not deterministic: a timed simulation gave another trajectory "
                    "than the measured one (samples, impacts, counts or dense output differ)"
                )
            wall += trajectory.stats["wall_time"]
            loop += trajectory.stats.get("integration_time", math.nan)
        if wall < MIN_TIMED_SECONDS and self.inner < MAX_INNER_RUNS:
            self.inner = _covering(self.inner, wall)  # too short to count: more simulations
        else:
            self.times.append(wall / self.inner)
            self.integration.append(loop / self.inner)
        return trajectory

    def record(self, outcome: Outcome) -> None:
        """Put the repeats' timings in ``outcome`` (its compile time increased by theirs)."""
        outcome.timing.update(
            wall_time=min(self.times),
            wall_time_median=float(np.median(self.times)),
            wall_time_max=max(self.times),
            wall_time_repeats=list(self.times),
            timed_repeats=len(self.times),
            inner_runs=self.inner,
            compile_time=outcome.timing["compile_time"] + self.compile_time,
            **_spread("integration_time", self.integration),
        )


def _fingerprint(trajectory: Trajectory) -> str:
    """A digest of what a run's outcome reports from its trajectory: status, samples, impact
    log, step and force-evaluation counts and dense output (bit for bit; not the timings)."""
    digest = hashlib.blake2b(digest_size=16)
    stats = trajectory.stats
    counts = (stats.get("steps"), stats.get("force_evaluations"), trajectory.impacts.total)
    digest.update(repr((trajectory.status.value, counts)).encode())
    arrays = [trajectory.t, trajectory.q, trajectory.v, trajectory.impacts.t]
    if trajectory.dense is not None:
        arrays += [trajectory.dense.breaks, trajectory.dense.values, trajectory.dense.impacts]
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _covering(inner: int, seconds: float) -> int:
    """The simulations per repeat after ``inner`` of them took ``seconds`` (less than
    :data:`impactbench.analysis.timing.MIN_TIMED_SECONDS`): enough to cover it at that pace,
    at least one more, at most :data:`MAX_INNER_RUNS` (twice as many when the clock did not
    advance)."""
    wanted = 2 * inner if seconds <= 0 else math.ceil(MIN_TIMED_SECONDS * inner / seconds)
    return min(MAX_INNER_RUNS, max(inner + 1, wanted))


def _spread(name: str, seconds: list[float]) -> dict[str, float]:
    """``name``, ``name_median``, ``name_max``: the minimum, median and maximum of ``seconds``
    (all NaN when one is NaN: the method did not report it)."""
    if any(math.isnan(value) for value in seconds):
        return dict.fromkeys((name, f"{name}_median", f"{name}_max"), math.nan)
    return {
        name: min(seconds),
        f"{name}_median": float(np.median(seconds)),
        f"{name}_max": max(seconds),
    }


def _artefacts(run: Run, problem: Problem, trajectory: Trajectory) -> dict[str, dict[str, list]]:
    """The run's artefacts as JSON data (see :class:`Run`); TypeError if they are not frames."""
    if run.artefact is None:
        return {}
    frames = run.artefact(run, problem, trajectory)
    if not isinstance(frames, dict) or not all(
        isinstance(name, str) and ARTEFACT_NAME.fullmatch(name) and isinstance(frame, pd.DataFrame)
        for name, frame in frames.items()
    ):
        raise TypeError(
            f"artefact {run.artefact.__name__} must return {{name: DataFrame}} with lowercase "
            f"identifier names, got {frames!r:.200}"
        )
    return {
        name: {str(column): frame[column].tolist() for column in frame.columns}
        for name, frame in frames.items()
    }


def _compile(run: Run | bytes, folders: tuple[str, ...] = (), limit: float | None = None) -> Any:
    """Compile the code of ``run`` (or load it from numba's disk cache) by a short run of it
    (:func:`impactbench.core.compilation.compile_by_short_run`); return its compiled code, or
    None when it has none or the short run failed. With a ``limit`` (seconds), the short run
    is bounded by it (:func:`_compile_within`; None when it did not finish in time).

    A problem class that compiles nothing (:func:`impactbench.core.compilation.may_compile`)
    is not even built. Whatever fails here is left to the run itself to report, when it is
    performed.
    """
    if isinstance(run, bytes):
        try:
            run = workers.receive(run, folders)
        except workers.UnshippableRun:  # the run reports it
            return None
    if not compilation.may_compile(run.problem):
        return None
    if limit is not None:
        _compile_within(run, limit)
        return None
    try:
        problem = run.problem(**run.problem_kwargs)
        method = run.method(**run.method_kwargs)
        return compilation.compile_by_short_run(problem, method, run.t_end, run.h)
    except Exception:  # the run reports it
        return None


def _task(
    key: str,
    run: Run | bytes,
    launcher: tuple[int, int],
    references: str,
    folders: tuple[str, ...] = (),
    run_timeout: float | None = None,
) -> tuple[str, Outcome | str]:
    """Perform ``run`` (or the run :func:`impactbench.bench.workers.ship` packed, unpacked here
    with ``folders`` on the path) in a worker; interruptible only in the launching process and
    thread. References are read from and stored in the launching process's reference cache
    ``references`` (a reused worker keeps the environment it was started with). A run that
    cannot be unpacked returns the reason instead of an outcome. With a ``run_timeout``, in a
    child process stopped at that limit (:func:`impactbench.bench.timeout.perform_within`),
    after the run's compiled code is loaded here (:func:`_compile_within`, within the limit):
    every child inherits it, warmed up."""
    if isinstance(run, bytes):
        try:
            run = workers.receive(run, folders)
        except workers.UnshippableRun as error:
            return key, str(error)
    here = (os.getpid(), threading.get_ident())
    start = time.monotonic()

    def failure(error: str) -> Outcome:
        return Outcome.failure(run, error, package_versions())

    budget = run_timeout
    if run_timeout is not None:
        error = _compile_within(run, run_timeout)
        if error is not None:
            return key, failure(f"{error} (in the run's compilation run)")
        budget = run_timeout - (time.monotonic() - start)
    with reference_dir_set(references):
        return key, perform_within(perform, failure, run, run_timeout, here == launcher, budget)


def _compile_within(run: Run, limit: float) -> str | None:
    """Compile the code of ``run`` here (:func:`_compile`) and mark it loaded, the compilation
    run bounded by ``limit`` seconds: it is first made in a forked child stopped at the limit
    (:func:`impactbench.bench.timeout.perform_within`), which fills numba's disk cache; only
    when it finished is it made here, loading what the child compiled. Returns the child's
    failure (the limit expired, the child died), or None."""
    if compilation.may_compile(run.problem):
        outcome = perform_within(_compile_run, str, run, limit, False)
        if isinstance(outcome, str):
            return outcome
    compilation.mark_loaded(_compile(run))
    return None


def _compile_run(run: Run, interruptible: bool) -> bool:
    """:func:`_compile` of ``run`` in the child of :func:`_compile_within`: whether there was
    code to compile (``interruptible`` is that of :func:`perform`, unused: nothing is timed)."""
    return _compile(run) is not None


# --------------------------------------------------------------------------------------------
# Cache


def entry_checksum(entry: Mapping[str, Any]) -> str:
    """SHA-256 of a cache entry without its ``checksum`` field (canonical JSON: sorted keys,
    the key of the entry included, so an entry moved to another key's file fails too)."""
    content = {name: value for name, value in entry.items() if name != "checksum"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    """Default cache folder (see the module docstring)."""
    if os.environ.get("IMPACTBENCH_CACHE_DIR"):
        return Path(os.environ["IMPACTBENCH_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "impactbench" / "runs"


class RunCache:
    """Finished runs on disk, one JSON file per key, written atomically."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        """File of the run with this key."""
        return self.directory / f"{key}.json"

    def load(self, key: str, run: Run | None = None) -> Outcome | None:
        """The stored outcome of ``key``, or None.

        None without a warning when there is no entry; None with a
        :class:`impactbench.CacheWarning` when the entry cannot be read or fails validation:
        a regular file of at most :data:`MAX_ENTRY_BYTES` (a FIFO or a link to a device is
        refused, the limit enforced while reading), a JSON object ``{"format", "key", "run",
        "stored", "outcome", "checksum"}`` of this format and key whose checksum
        (:func:`entry_checksum`) matches its content, whose
        outcome has exactly the fields of :class:`Outcome` with their types, a status
        "ok" or "zeno-handled", finite non-negative timings and non-negative integer costs;
        with ``run`` given, ``run`` must equal ``run.spec()`` and the metrics must be exactly
        ``run.metrics``.
        """
        path = self.path(key)
        try:
            data = json.loads(read_regular(path, MAX_ENTRY_BYTES).decode("utf-8"))
            return _stored_outcome(data, key, run)
        except (FileNotFoundError, NotADirectoryError):  # no entry (or no cache folder)
            return None
        except (OSError, ValueError, RecursionError) as error:
            warnings.warn(
                f"ignoring the run cache entry {path} ({_one_line(error)}); the run is recomputed",
                CacheWarning,
                stacklevel=2,
            )
            return None

    def store(self, key: str, run: Run, outcome: Outcome) -> None:
        """Store a finished run (a failed outcome is refused with ValueError).

        Raises
        ------
        OSError
            If the entry cannot be written.
        """
        if outcome.status == FAILED:
            raise ValueError(f"failed runs are never cached, got a failed outcome for {key}")
        data = {
            "format": _CACHE_FORMAT,
            "key": key,
            "run": run.spec(),
            "stored": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "outcome": outcome.to_json(),
        }
        data["checksum"] = entry_checksum(data)
        write_atomic(self.path(key), json.dumps(data, indent=1, sort_keys=True) + "\n")


_ENTRY_FIELDS = {"format", "key", "run", "stored", "outcome", "checksum"}
_OUTCOME_FIELDS = {
    "artefacts",
    "status",
    "error",
    "metrics",
    "cost",
    "timing",
    "provenance",
    "key",
    "code_version",
}
_COST_FIELDS = (
    "h_used",
    "steps",
    "force_evaluations",
    "impacts",
    "impact_log_entries",
    "contact_phases",
    "contact_time",
    "impacts_capped",
)
_COUNT_FIELDS = ("steps", "force_evaluations", "impacts", "impact_log_entries", "contact_phases")
#: The timing fields of an outcome (the last columns of a study's table, in this order).
TIMING_FIELDS = (
    "wall_time",
    "wall_time_median",
    "wall_time_max",
    "wall_time_repeats",
    "timed_repeats",
    "inner_runs",
    "warmup_time",
    "compile_time",
    "integration_time",
    "integration_time_median",
    "integration_time_max",
)
#: Timing fields that are NaN when there is nothing to time (compile_time: in an entry stored
#: before it was measured, read as NaN).
_OPTIONAL_TIMINGS = ("warmup_time", "compile_time", "integration_time",
                     "integration_time_median", "integration_time_max")  # fmt: skip


#: Timing fields that are counts, and those that are not a number of seconds.
_TIMING_COUNTS = ("timed_repeats", "inner_runs")
_TIMING_LISTS_AND_COUNTS = ("wall_time_repeats", *_TIMING_COUNTS)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_timing(name: str, value: Any) -> bool:
    """A finite non-negative number of seconds; a warm-up time may be NaN (none was done), an
    integration time too (the method does not report it)."""
    if not _is_number(value):
        return False
    if name in _OPTIONAL_TIMINGS and math.isnan(value):
        return True
    return math.isfinite(value) and value >= 0


def _stored_outcome(data: Any, key: str, run: Run | None) -> Outcome:
    """The outcome of a cache entry, or ValueError saying which check it fails."""
    if not isinstance(data, dict) or set(data) != _ENTRY_FIELDS:
        fields = ", ".join(sorted(_ENTRY_FIELDS))
        raise ValueError(f"not a run cache entry (an object with the fields {fields})")
    if data["format"] != _CACHE_FORMAT or data["key"] != key:
        raise ValueError(f"format {data['format']!r} and key {data['key']!r} are not this entry's")
    if data["checksum"] != entry_checksum(data):
        raise ValueError("checksum mismatch: the entry was modified after it was written")
    if run is not None and data["run"] != json.loads(json.dumps(run.spec())):
        raise ValueError("it stores another run's specification")
    stored = data["outcome"]
    if not isinstance(stored, dict) or set(stored) != _OUTCOME_FIELDS:
        raise ValueError(f"outcome must be an object with the fields {sorted(_OUTCOME_FIELDS)}")
    if stored["status"] not in ("ok", "zeno-handled"):
        raise ValueError(f"status must be 'ok' or 'zeno-handled', got {stored['status']!r}")
    for name in ("error", "key", "code_version"):
        if not isinstance(stored[name], str):
            raise ValueError(f"{name} must be a string, got {stored[name]!r}")
    metrics = stored["metrics"]
    names = set(METRICS) if run is None else set(run.metrics)
    if not isinstance(metrics, dict) or not set(metrics) <= names:
        raise ValueError(f"metrics must be an object with names from {sorted(names)}")
    if run is not None and set(metrics) != names:
        raise ValueError(f"metrics must be {sorted(names)}, got {sorted(metrics)}")
    if not all(_is_number(value) for value in metrics.values()):
        raise ValueError(f"metric values must be numbers, got {metrics}")
    cost = stored["cost"]
    if not isinstance(cost, dict) or set(cost) != set(_COST_FIELDS):
        raise ValueError(f"cost must be an object with the fields {list(_COST_FIELDS)}")
    h_used = cost["h_used"]
    if h_used is not None and not (_is_number(h_used) and math.isfinite(h_used) and h_used > 0):
        raise ValueError(f"h_used must be a positive number or null, got {h_used!r}")
    for name in _COUNT_FIELDS:
        value = cost[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    contact_time = cost["contact_time"]
    if not (_is_number(contact_time) and math.isfinite(contact_time) and contact_time >= 0):
        raise ValueError(f"contact_time must be a finite non-negative number, got {contact_time!r}")
    if not isinstance(cost["impacts_capped"], bool):
        raise ValueError(f"impacts_capped must be true or false, got {cost['impacts_capped']!r}")
    timing = stored["timing"]
    if isinstance(timing, dict) and set(timing) == set(TIMING_FIELDS) - {"compile_time"}:
        timing = {**timing, "compile_time": math.nan}  # stored before it was measured
    if not isinstance(timing, dict) or set(timing) != set(TIMING_FIELDS):
        raise ValueError(f"timing must be an object with the fields {list(TIMING_FIELDS)}")
    counts = {name: timing[name] for name in _TIMING_COUNTS}
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in counts.values()):
        raise ValueError(f"timed_repeats and inner_runs must be positive integers, got {counts}")
    repeats = timing["wall_time_repeats"]
    if not (
        isinstance(repeats, list)
        and len(repeats) == timing["timed_repeats"]
        and all(_is_timing("wall_time", t) for t in repeats)
    ):
        raise ValueError(
            "wall_time_repeats must be a list of timed_repeats finite non-negative numbers, "
            f"got {repeats!r:.200}"
        )
    seconds = {name: t for name, t in timing.items() if name not in _TIMING_LISTS_AND_COUNTS}
    if not all(_is_timing(name, t) for name, t in seconds.items()):
        raise ValueError(
            f"timings must be finite non-negative numbers (warmup_time and integration_time "
            f"NaN when there was none), got {seconds}"
        )
    provenance = stored["provenance"]
    if not isinstance(provenance, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in provenance.items()
    ):
        raise ValueError("provenance must be an object of strings")
    _check_artefacts(stored["artefacts"], run)
    outcome = Outcome(**stored, cached=True)
    outcome.metrics = {name: float(value) for name, value in metrics.items()}
    outcome.timing = {**{name: float(t) for name, t in seconds.items()}, **counts}
    outcome.timing["wall_time_repeats"] = [float(t) for t in repeats]
    return outcome


def _check_artefacts(artefacts: Any, run: Run | None) -> None:
    """ValueError unless ``artefacts`` is name -> {column: list of numbers, strings or null} with
    columns of equal length (and, with ``run``, empty when the run has no artefact function)."""
    if not isinstance(artefacts, dict):
        raise ValueError(f"artefacts must be an object, got {type(artefacts).__name__}")
    if run is not None and artefacts and run.artefact is None:
        raise ValueError("artefacts are stored only for runs with an artefact function")
    for name, frame in artefacts.items():
        if not (ARTEFACT_NAME.fullmatch(name) and isinstance(frame, dict)):
            raise ValueError(f"artefact {name!r} must be a lowercase name and an object")
        lengths = set()
        for column, values in frame.items():
            if not isinstance(values, list) or not all(
                value is None or isinstance(value, str) or _is_number(value) for value in values
            ):
                raise ValueError(f"artefact {name!r} column {column!r} must be a list of values")
            lengths.add(len(values))
        if len(lengths) > 1:
            raise ValueError(f"artefact {name!r} has columns of different lengths")


# --------------------------------------------------------------------------------------------
# Execution


def check_scheduler(scheduler: str) -> None:
    """Check a Dask scheduler address without connecting to it.

    The address must be ``[scheme://]location`` with a scheme Dask knows (``tcp``, ``tls``,
    ``ws``, ``inproc``, ...); for an IP transport the location must be ``host:port`` with a
    port in 1..65535. Whether a scheduler answers there is only known when connecting
    (:func:`execute` raises OSError when it does not).

    Raises
    ------
    ValueError
        If the address is malformed or the ``distributed`` package is missing.
    """
    try:
        from distributed.comm.addressing import parse_address
        from distributed.comm.registry import get_backend
    except ImportError:
        raise ValueError(
            "the dask backend needs the distributed package (pip install 'dask[distributed]')"
        ) from None
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ValueError(f"scheduler must be an address such as tcp://HOST:PORT, got {scheduler!r}")
    try:
        scheme, location = parse_address(scheduler)
        try:
            _, port = get_backend(scheme).get_address_host_port(location)
        except NotImplementedError:  # not an IP transport (inproc): nothing more to check
            return
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"scheduler must be a Dask address such as tcp://HOST:PORT, got {scheduler!r}: "
            f"{_one_line(error)}"
        ) from None
    if not 1 <= port <= 65535:
        raise ValueError(f"scheduler port must lie in 1..65535, got {scheduler!r}")


@contextmanager
def _backend_context(backend: str, scheduler: str | None) -> Iterator[tuple[type, ...]]:
    """Set up the joblib backend; yield the exceptions that mean a worker was lost."""
    if backend == "loky":
        yield (concurrent.futures.BrokenExecutor,)
        return
    from distributed import Client, KilledWorker

    try:
        client = Client(scheduler)
    except (ValueError, TypeError) as error:  # OSError (no scheduler there) goes through
        raise ValueError(f"scheduler {scheduler!r} cannot be used: {_one_line(error)}") from None
    with client, joblib.parallel_config(backend="dask"):
        yield (KilledWorker, concurrent.futures.BrokenExecutor)


def _one_line(error: BaseException, limit: int = 300) -> str:
    text = " ".join(_describe(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_jobs(jobs: Any, backend: str, name: str) -> None:
    """A number of jobs: -1 or a positive integer, at most MAX_JOBS_PER_CPU per CPU with loky."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise ValueError(f"{name} must be a positive integer or -1, got {jobs!r}")
    most_jobs = MAX_JOBS_PER_CPU * (os.cpu_count() or 1)
    if backend == "loky" and jobs > most_jobs:
        raise ValueError(
            f"{name} must be at most {MAX_JOBS_PER_CPU} per CPU ({most_jobs} here), got {jobs!r}"
        )


def _check_distributed() -> None:
    """ValueError when the ``distributed`` package, which the dask backend needs, is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ValueError(
            "backend 'dask' needs the distributed package (pip install 'impactbench[dask]')"
        ) from None


def check_options(
    *, jobs: int = 1, backend: str = "loky", scheduler: str | None = None, retries: int = 0
) -> None:
    """Check the execution options of :func:`execute` (which calls this first).

    Raises
    ------
    ValueError
        Naming the bad option: an unknown backend, the dask backend without the
        ``distributed`` package, jobs not -1 nor a positive integer (or more
        than :data:`MAX_JOBS_PER_CPU` per CPU on this machine: loky or a local Dask cluster),
        a scheduler given for loky or malformed (:func:`check_scheduler`), retries outside
        0..MAX_RETRIES.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    _check_jobs(jobs, "loky" if backend == "dask" and not scheduler else backend, "jobs")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise ValueError(f"retries must be an integer in 0..{MAX_RETRIES}, got {retries!r}")
    if backend == "dask":  # whatever the cache holds: the same options fail the same way
        _check_distributed()
    if backend == "dask" and scheduler:
        check_scheduler(scheduler)
    if backend == "loky" and scheduler:
        raise ValueError(f"scheduler is only used by the dask backend, got {scheduler!r}")


def execute(
    runs: Sequence[Run],
    *,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    cache_dir: Path | str | None = None,
    use_cache: bool = True,
    retries: int = 0,
    progress: bool | None = None,
    description: str = "runs",
    compile_jobs: int = 1,
    run_timeout: float | None = None,
    interleave: bool = False,
) -> list[Outcome]:
    """Execute ``runs`` in parallel, reading and filling the run cache.

    Parameters
    ----------
    runs : sequence of Run
        Independent runs; runs with equal keys are computed once.
    jobs : int
        Number of parallel jobs (joblib ``n_jobs``: -1 for all cores), at most
        :data:`MAX_JOBS_PER_CPU` per CPU with the loky backend. With ``jobs=1`` and the loky
        backend the runs execute in this process, one after the other.
    backend : {"loky", "dask"}
        joblib backend: local processes (loky), or a Dask distributed cluster through joblib's
        Dask integration (needs the ``distributed`` package: ``pip install
        'impactbench[dask]'``).
    scheduler : str, optional
        Address of the Dask scheduler, e.g. ``"tcp://127.0.0.1:8786"`` (dask backend only;
        checked by :func:`check_scheduler` before anything runs). Without it the dask backend
        starts a local cluster of ``jobs`` worker processes on this machine, listening on the
        loopback interface only (:func:`impactbench.bench.workers.local_cluster`), when a run
        is to compute, and stops it on return.
    cache_dir : path, optional
        Run cache folder (default :func:`default_cache_dir`).
    use_cache : bool
        False: compute every run and neither read nor write the cache.
    retries : int
        Passes (0 to :data:`MAX_RETRIES`) that rerun the runs still failed after the previous
        pass: those that raised and those lost with a crashed worker. Default 0.
    progress : bool, optional
        Show the progress with the time left: a bar on a terminal, else one line at most
        every 30 s (:func:`impactbench.bench.progress.progress_bar`); default: a bar when
        stderr is a terminal and ``$CI`` is not set, else nothing.
    description : str
        Label of the progress bar.
    compile_jobs : int
        With ``jobs=1`` and ``compile_jobs`` > 1 (or -1), the code of the runs to compute is
        first compiled on this many workers, one short run per compiled-code group (see the
        module notes), then the runs are performed one after the other. Ignored when ``jobs``
        is not 1. Checked as ``jobs``.
    run_timeout : float, optional
        Time limit in seconds of each run (its compilation run, warm-up, repeats and
        metrics): a run still going at its limit is killed and is a failed outcome whose error
        names the limit; the other runs go on (:mod:`impactbench.bench.timeout`: the run
        executes in a forked child process). Default: no limit.
    interleave : bool
        Time the runs interleaved when they execute in this process (``jobs=1``, the loky
        backend, no ``run_timeout``; ignored otherwise): each run is first performed untimed
        (warm-up, one simulation, metrics), then the runs are timed round-robin, one repeat of
        each run still timing per round (module notes), so that every run's repeats, and
        those of the runs a study compares, spread over the same stretch of the machine's
        load. The runs are cached when their repeats are done: an interruption loses the runs
        performed and not yet timed. Default False: each run timed when it is performed.

    Returns
    -------
    list of Outcome
        One per run, in the order of ``runs``. A run that raised is a failed outcome with the
        error message; when a worker process dies, the runs not finished by then are failed
        outcomes with the crash message (the finished ones are cached and kept). See the
        module notes for interruptions and cache warnings.

    Raises
    ------
    ValueError
        For a bad ``jobs``, ``backend``, ``scheduler``, ``retries`` or ``run_timeout``, also
        when the Dask
        client refuses the scheduler address.
    OSError
        When no Dask scheduler answers at ``scheduler`` (only tried when a run is to compute).
    """
    check_options(jobs=jobs, backend=backend, scheduler=scheduler, retries=retries)
    _check_jobs(compile_jobs, backend, "compile_jobs")
    run_timeout = check_run_timeout(run_timeout)
    versions = [code_version(run) for run in runs]
    keys = [run_key(run, version) for run, version in zip(runs, versions, strict=True)]
    cache = RunCache(cache_dir or default_cache_dir()) if use_cache else None
    outcomes: list[Outcome | None] = [
        cache.load(key, run) if cache else None for key, run in zip(keys, runs, strict=True)
    ]
    pending: dict[str, list[int]] = {}
    for position, (key, outcome) in enumerate(zip(keys, outcomes, strict=True)):
        if outcome is None:
            pending.setdefault(key, []).append(position)
    done = len(runs) - sum(len(positions) for positions in pending.values())
    cluster = ExitStack()  # a local Dask cluster while runs compute, when no scheduler is given
    address = scheduler
    if pending and backend == "dask" and not scheduler:
        address = cluster.enter_context(workers.local_cluster(jobs))
    with (
        cluster,
        progress_bar(len(runs), done, description, progress) as bar,
    ):
        if pending:
            execution = _Execution(runs, versions, outcomes, cache, backend, address, jobs, bar)
            execution.run_timeout = run_timeout
            execution.interleave = interleave
            if jobs == 1 and compile_jobs != 1:
                execution.compile(pending, compile_jobs)
            execution.run(pending)
            for attempt in range(1, retries + 1):
                failed = {
                    key: positions
                    for key, positions in pending.items()
                    if outcomes[positions[0]].status == FAILED
                }
                if not failed:
                    break
                bar.total += sum(len(positions) for positions in failed.values())
                bar.set_description(f"{description} (retry {attempt})")
                execution.run(failed)
    for outcome, key, version in zip(outcomes, keys, versions, strict=True):
        outcome.key = key
        outcome.code_version = version
    return outcomes


def _one_per_compiled_code(
    runs: Sequence[Run], todo: Mapping[str, list[int]]
) -> dict[str, list[int]]:
    """The entries of ``todo`` holding, for each group of runs that share their compiled code,
    its first run of fewest steps (:func:`impactbench.core.compilation.one_per_group`)."""
    first = compilation.one_per_group({key: runs[positions[0]] for key, positions in todo.items()})
    return {key: todo[key] for key in first}


class _Execution:
    """The passes of one :func:`execute` call: runs tasks, stores outcomes, handles crashes."""

    def __init__(
        self,
        runs: Sequence[Run],
        versions: list[str],
        outcomes: list[Outcome | None],
        cache: RunCache | None,
        backend: str,
        scheduler: str | None,
        jobs: int,
        bar: Any,
    ) -> None:
        self.runs, self.versions, self.outcomes, self.cache = runs, versions, outcomes, cache
        self.backend, self.scheduler, self.jobs, self.bar = backend, scheduler, jobs, bar
        self.revision = git_revision()
        self.launcher = (os.getpid(), threading.get_ident())
        self.references = str(default_reference_dir())
        self.cache_failed = False
        self.folders = workers.import_roots(runs)
        self.in_process = backend == "loky" and jobs == 1
        self.run_timeout: float | None = None
        self.interleave = False

    def _shipped(self, run: Run) -> Run | bytes:
        """``run`` as a task argument: itself in this process, else packed for a worker
        (:func:`impactbench.bench.workers.ship`)."""
        return run if self.in_process else workers.ship(run)

    def run(self, todo: Mapping[str, list[int]]) -> None:
        """Execute the runs of ``todo`` (key -> positions in ``runs``), one task per key.

        In parallel, one run per compiled-code group (:func:`_one_per_compiled_code`) goes first,
        and the others only when these are done: each piece of compiled code is then
        compiled by one worker while the others compile other pieces, and the later runs load it
        from numba's disk cache (without this, the workers that start runs of the same loop
        together all compile it).
        """
        if self.interleave and self.in_process and self.run_timeout is None:
            self.interleaved(todo)
            return
        if self.jobs == 1:
            self._pass(todo)
            return
        first = _one_per_compiled_code(self.runs, todo)
        self._pass(first)
        self._pass({key: positions for key, positions in todo.items() if key not in first})

    def interleaved(self, todo: Mapping[str, list[int]]) -> None:
        """Perform the runs of ``todo`` here, untimed, then time them round-robin (``interleave``
        of :func:`execute`); a run whose repeats raise is a failed outcome."""
        timing: dict[str, tuple[Outcome, _Repeats]] = {}
        for key, positions in todo.items():
            outcome, repeats = _perform(self.runs[positions[0]], True, timed=False)
            if repeats is None:
                self._finish(positions, key, outcome)
            else:
                timing[key] = (outcome, repeats)
        while timing:
            for key, (outcome, repeats) in list(timing.items()):
                try:
                    repeats.attempt()
                except Exception as error:  # it ran untimed: only a flaky run's code gets here
                    failure = Outcome.failure(repeats.run, _describe(error), outcome.provenance)
                    self._finish(todo[key], key, failure)
                    del timing[key]
                    continue
                if repeats.done:
                    repeats.record(outcome)
                    self._finish(todo[key], key, outcome)
                    del timing[key]

    def compile(self, todo: Mapping[str, list[int]], jobs: int) -> None:
        """Compile the code of the runs of ``todo`` on ``jobs`` workers: :func:`_compile` of one
        run per compiled-code group. A worker lost here is not a failure: the runs are
        performed next, and report what they do."""
        first = _one_per_compiled_code(self.runs, todo)
        tasks = [
            joblib.delayed(_compile)(
                workers.ship(self.runs[positions[0]]), self.folders, self.run_timeout
            )
            for positions in first.values()
        ]
        with _backend_context(self.backend, self.scheduler) as crashes:
            parallel = joblib.Parallel(
                n_jobs=jobs, backend="loky" if self.backend == "loky" else None
            )
            try:
                parallel(tasks)
            except crashes:
                pass

    def _pass(self, todo: Mapping[str, list[int]]) -> None:
        """Execute the runs of ``todo`` in one parallel pass."""
        if not todo:
            return
        left = dict(todo)
        tasks = [
            joblib.delayed(_task)(
                key,
                self._shipped(self.runs[positions[0]]),
                self.launcher,
                self.references,
                self.folders,
                self.run_timeout,
            )
            for key, positions in left.items()
        ]
        with _backend_context(self.backend, self.scheduler) as crashes:
            parallel = joblib.Parallel(
                n_jobs=self.jobs,
                backend="loky" if self.backend == "loky" else None,
                return_as="generator_unordered",
            )
            try:
                for key, outcome in parallel(tasks):
                    if isinstance(outcome, str):  # the worker could not unpack the run
                        provenance = package_versions()
                        outcome = Outcome.failure(self.runs[left[key][0]], outcome, provenance)
                    self._finish(left.pop(key), key, outcome)
            except crashes as crash:
                message = f"worker crashed before this run finished: {_one_line(crash)}"
                provenance = {**package_versions(), "git_revision": self.revision}
                for positions in left.values():
                    for position in positions:
                        self.outcomes[position] = Outcome.failure(
                            self.runs[position], message, dict(provenance)
                        )

    def _finish(self, positions: list[int], key: str, outcome: Outcome) -> None:
        outcome.provenance["git_revision"] = self.revision
        outcome.key, outcome.code_version = key, self.versions[positions[0]]
        if self.cache is not None and outcome.status != FAILED:
            try:
                self.cache.store(key, self.runs[positions[0]], outcome)
            except OSError as error:
                if not self.cache_failed:
                    warnings.warn(
                        f"run cache not written ({_one_line(error)}); the study goes on and "
                        "its runs are not cached",
                        CacheWarning,
                        stacklevel=4,
                    )
                self.cache_failed = True
        for position in positions:
            self.outcomes[position] = outcome
        self.bar.update(len(positions))
