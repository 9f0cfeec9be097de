"""One-call comparison of methods on one problem: observed orders with 95 % intervals, a
work-precision figure and a table (:func:`compare`, ``impactbench compare``).

::

    import impactbench as ib
    result = ib.compare(
        "BouncingBall[restitution=0.8]",          # or "wavy:WavyFloorBall[a=0.1]", or a class
        ["MoreauJean", "PaoliSchatzman", "EventDriven"],
        steps=np.geomspace(1e-3, 2e-2, 6), tolerances=[1e-4, 1e-6, 1e-8], t_end=3.0,
    )
    result.orders       # one row per method: order vs h (or rtol) and vs the cost, 95 % CI
    result.table        # one row per method and step (or tolerance): median error and costs
    result.figures      # the figure (PNG, PDF) ; result.folder holds the study report

The methodology is that of the built-in studies, by construction: the comparison is a
:class:`impactbench.bench.study.Study` run by :func:`impactbench.run_study` (same runner, run
cache, provenance, report). Each nominal step h of a time-stepping method is run at ``phases``
perturbed copies h (1 + delta_j) (phase averaging, :mod:`impactbench.analysis.fitting`), an
adaptive method once per tolerance; the error (``metric``, default the max-norm position
error) is measured against the exact solution, or, for a problem without one, against the
cached DOP853 reference run (rtol 1e-12, :func:`impactbench.reference`). Orders are the
least-squares slopes of the phase medians with their 95 % t-intervals, after the error floor
(round-off, ten times the reference's claimed accuracy) is excluded; sweeps that are flat,
growing or too short (fewer than 6 points or 1 decade) are reported as such, never as an
order. The cost is the number of force evaluations (machine-independent) and the wall time
(minimum over ``repeats`` after a warm-up; runs in parallel share the machine, so time with
``jobs=1``).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pandas as pd

from ..analysis import metrics
from ..analysis.fitting import FIT_COLUMNS, ORDER, fit_order, fit_row, phase_medians
from ..core.method import TIME_STEPPING, Method
from ..core.problem import Problem
from . import workers
from .arguments import finite_number, jobs_count, positive_int, positive_number
from .latex import Summary, thin
from .pipeline import StudyResult, run_study
from .plotting import solution_of
from .report import (
    markdown_table,
    new_figure,
    plot_fit,
    plot_medians,
    plot_methods,
    save_figure,
    shared_legend,
)
from .runner import Case, Grid, Run, expand
from .specs import method_factory, problem_factory
from .study import Section, Study, StudyReport
from .style import FORMATS, method_style, metric_unit

#: Default output folder (the study folder is created inside it).
DEFAULT_OUTPUT = Path("comparisons")
#: Runs per nominal step by default (the step itself and perturbed copies).
PHASES = 3
#: The costs of the work-precision figure and their labels.
COSTS = {"force_evaluations": "force evaluations [-]", "wall_time": "wall time [s]"}
ORDERS_FILE = "orders.csv"
SUMMARY_FILE = "summary.csv"
FIGURE_FILE = "comparison.png"
#: The report's description of the methodology.
DESCRIPTION = (
    "Each nominal step h of a time-stepping method is run at perturbed copies h (1 + delta_j) "
    "(phase averaging), an adaptive method once per tolerance; the error is measured against "
    "the exact solution, or the cached DOP853 reference run (rtol 1e-12) for a problem without "
    "one. Orders are least-squares slopes of the phase medians with 95 % t-intervals after the "
    "error floor is excluded; flat, growing or short sweeps are reported as such. Costs: force "
    "evaluations and wall time (minimum over the repeats after a warm-up).\n"
)


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` returns.

    Attributes
    ----------
    table : DataFrame
        One row per method and nominal step (time-stepping) or tolerance (adaptive): the
        median, smallest and largest error over the phase copies, the median force
        evaluations, wall time, compile time (numba's, in no wall time) and impact events, and
        the number of finished runs.
    orders : DataFrame
        One row per method and axis: ``versus`` is "h" or the tolerance (the observed order)
        or "force evaluations" (the slope p of error ~ evaluations^-p); then the fit columns
        of :data:`impactbench.analysis.fitting.FIT_COLUMNS` (``status``, ``order``, ``low``,
        ``high`` -- the 95 % interval --, ``text``...).
    figures : list of Path
        The work-precision figure (PNG, PDF).
    folder : Path
        The study folder: ``results.csv.gz`` (one row per run), provenance, ``orders.csv``,
        ``summary.csv``, the figure and ``README.md``.
    result : StudyResult
        The run of the study (runs, outcomes, failures).
    """

    table: pd.DataFrame
    orders: pd.DataFrame
    figures: list[Path]
    folder: Path
    result: StudyResult

    @property
    def figure(self) -> Path:
        """The PNG of the work-precision figure."""
        return self.figures[0]


def _method_grid(
    entry: Any, tolerance: str, steps: Sequence[float], tolerances: Sequence[float]
) -> Grid:
    """A method given as a spec string, a Method subclass or an instance, as a grid."""
    if isinstance(entry, str):
        cls, kwargs = method_factory(entry)
    elif isinstance(entry, Method):
        cls = type(entry)
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(cls.__init__).parameters.items()
        }
        kwargs = {k: v for k, v in entry.parameters().items() if defaults.get(k, object()) != v}
    elif isinstance(entry, type) and issubclass(entry, Method):
        cls, kwargs = entry, {}
    else:
        raise ValueError(
            f"methods must be names, Method subclasses or instances, got {entry!r:.100}"
        )
    _register(cls)
    if cls.requires_step:
        if not len(steps):
            raise ValueError(f"steps must be given for the time-stepping method {cls.__name__}")
        return Grid(cls, {k: [v] for k, v in kwargs.items()})
    if not len(tolerances):
        raise ValueError(f"tolerances must be given for the adaptive method {cls.__name__}")
    if tolerance not in inspect.signature(cls.__init__).parameters:
        raise ValueError(f"tolerance must name a parameter of {cls.__name__}, got {tolerance!r}")
    kwargs.pop(tolerance, None)
    values = {k: [v] for k, v in kwargs.items()}
    return Grid(cls, {**values, tolerance: [float(x) for x in tolerances]}, tolerance=tolerance)


def _register(factory: Any) -> None:
    """A factory of a user's module in the current directory (not impactbench's) is pickled by
    value, so that worker processes need not import its module."""
    name = getattr(factory, "__module__", "") or ""
    module = sys.modules.get(name)
    path = Path(getattr(module, "__file__", "") or "")
    if name.partition(".")[0] == "impactbench" or module is None or not path.is_file():
        return
    if Path.cwd().resolve() in path.resolve().parents:
        cloudpickle.register_pickle_by_value(module)


def _problem(problem: Any, problem_kwargs: Mapping[str, Any] | None) -> tuple[Callable, dict]:
    if isinstance(problem, str):
        if problem_kwargs:
            raise ValueError("problem_kwargs must be empty when problem is a spec string")
        factory, kwargs = problem_factory(problem)
    elif isinstance(problem, Problem):  # pickled into the runs (runs are rebuilt in workers)
        if problem_kwargs:
            raise ValueError("problem_kwargs must be empty when problem is an instance")
        _register(type(problem))
        factory, kwargs = workers.problem_from_pickle, workers.pickled_problem(problem)
    elif callable(problem):
        factory, kwargs = problem, dict(problem_kwargs or {})
    else:
        raise ValueError(f"problem must be a spec string or a factory, got {problem!r:.100}")
    _register(factory)
    return factory, kwargs


def _sweep(values: Any, name: str) -> list[float]:
    array = np.asarray([] if values is None else values, dtype=float).reshape(-1)
    if np.any(~np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {values!r}")
    return sorted(set(array.tolist()), reverse=True)


def summarize(table: pd.DataFrame, metric: str, floor: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summary table and the fitted orders of a comparison's run table (see
    :class:`Comparison`); ``floor``: errors below it are excluded from the fits."""
    medians = phase_medians(table, [metric, *COSTS, "compile_time", "impacts"], keys=("family",))
    rows = []
    for method, group in medians.groupby("method", sort=False):
        stepper = group["family"].iloc[0] == TIME_STEPPING
        axis = "h" if stepper else "tolerance"
        name = "h" if stepper else "rtol"
        error = group[metric].to_numpy(dtype=float)
        fits = [(name, fit_order(group[axis].to_numpy(dtype=float), error, floor=floor))]
        work = group["force_evaluations"].to_numpy(dtype=float)
        if np.all(work > 0):
            fits.append(("force evaluations", fit_order(1.0 / work, error, floor=floor)))
        for versus, fit in fits:
            rows.append({"method": method, "versus": versus, **fit_row(fit, versus)})
    orders = pd.DataFrame(rows, columns=["method", "versus", *FIT_COLUMNS])
    columns = ["method", "family", "h", "tolerance", "runs", metric, f"{metric}_min"]
    columns += [f"{metric}_max", *COSTS, "compile_time", "impacts"]
    return medians[columns].reset_index(drop=True), orders


def _figure(
    medians: pd.DataFrame, metric: str, floor: float, folder: Path, title: str, problem: str
) -> None:
    steppers = medians[medians["family"] == TIME_STEPPING]
    adaptive = medians[medians["family"] != TIME_STEPPING]
    sweeps = [
        (data, axis) for data, axis in ((steppers, "h"), (adaptive, "tolerance")) if len(data)
    ]
    figure, axes = new_figure(len(sweeps) + len(COSTS))
    label = f"{metric.replace('_', ' ')} [{metric_unit(metric, problem)}]"
    for ax, (data, axis) in zip(axes, sweeps, strict=False):
        plot_medians(ax, data, axis, metric)
        for method, rows in data.groupby("method", sort=True):
            kept = rows[rows[metric] >= floor]
            fit = fit_order(rows[axis].to_numpy(), rows[metric].to_numpy(), floor=floor)
            if fit.status == ORDER:
                color = method_style(str(method))["color"]
                plot_fit(ax, fit, kept[axis].to_numpy(), color, "order")
        ax.set_xlabel("nominal step $h$ [s]" if axis == "h" else "tolerance [-]")
        ax.set_ylabel(label)
        ax.legend(loc="best")
    for ax, (cost, cost_label) in zip(axes[len(sweeps) :], COSTS.items(), strict=True):
        plot_methods(ax, medians, cost, metric)
        ax.set_xlabel(cost_label.replace(" [", " (median) [", 1))
        ax.set_ylabel(label)
        ax.set_title("work-precision")
    shared_legend(figure, axes[len(sweeps) :])
    figure.suptitle(title)
    save_figure(figure, folder / FIGURE_FILE)


def _name(factory: Callable, kwargs: Mapping[str, Any]) -> str:
    if factory is workers.problem_from_pickle:  # an instance: its class and pickle's digest
        problem = factory(**kwargs)
        digest = hashlib.sha256(kwargs["pickled"].encode()).hexdigest()[:12]
        return f"compare_{type(problem).__name__}_{digest}"
    text = factory.__name__ + "".join(f"_{k}{v}" for k, v in kwargs.items())
    return "compare_" + re.sub(r"[^A-Za-z0-9_-]+", "-", text)[:80]  # a plain study name


def compare(
    problem: str | Callable[..., Problem] | Problem,
    methods: Sequence[str | Method | type[Method]],
    *,
    t_end: float,
    steps: Sequence[float] | None = None,
    tolerances: Sequence[float] | None = None,
    problem_kwargs: Mapping[str, Any] | None = None,
    tolerance: str = "rtol",
    phases: int = PHASES,
    metric: str = "max_position_error",
    repeats: int = 1,
    output: Path | str = DEFAULT_OUTPUT,
    name: str | None = None,
    jobs: int = 1,
    cache_dir: Path | str | None = None,
    use_cache: bool = True,
) -> Comparison:
    """Run ``methods`` on ``problem`` over ``steps`` (time-stepping) and ``tolerances``
    (adaptive), fit their orders and draw the work-precision figure (module docstring).

    Parameters
    ----------
    problem : str, callable or Problem
        A spec, ``"Name[p=v,...]"`` (built-in) or ``"module:Name[p=v,...]"`` (a
        :class:`impactbench.Problem` subclass or a function returning one, in a module of the
        current directory or installed), a module-level factory called with
        ``problem_kwargs``, or an instance (pickled into the runs with cloudpickle, with the
        digest of its class's source in their cache keys).
    methods : sequence
        Spec strings (``"MoreauJean[theta=0.5]"``, ``"symeuler:SymplecticEuler"``),
        :class:`impactbench.Method` subclasses or instances (their non-default parameters
        are kept).
    t_end : float
        Final time of every run.
    steps : sequence of float, optional
        Nominal steps of the time-stepping methods (at least 6 over a decade for an order).
    tolerances : sequence of float, optional
        Values of the parameter ``tolerance`` of the adaptive methods.
    problem_kwargs : mapping, optional
        Parameters of a factory ``problem`` (JSON data).
    tolerance : str
        The adaptive methods' accuracy parameter (default "rtol").
    phases : int
        Runs per nominal step: the step and ``phases - 1`` perturbed copies.
    metric : str
        Error metric, a name of :data:`impactbench.analysis.metrics.METRICS`.
    repeats : int
        Timed repetitions of each run after its warm-up.
    output : path
        Parent folder of the comparison's folder (default ``comparisons``).
    name : str, optional
        The comparison's folder name (default from the problem and its parameters).
    jobs : int
        Parallel runs (default 1: the wall times are then not disturbed by other runs).
    cache_dir, use_cache
        The run cache, as :func:`impactbench.run_study`.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        For a bad argument (the message names it), before any run starts.
    """
    factory, kwargs = _problem(problem, problem_kwargs)
    if isinstance(methods, str) or not len(methods):
        raise ValueError(f"methods must be a non-empty sequence, got {methods!r}")
    if metric not in metrics.METRICS:
        raise ValueError(f"metric must be one of {sorted(metrics.METRICS)}, got {metric!r}")
    steps, tolerances = _sweep(steps, "steps"), _sweep(tolerances, "tolerances")
    grids = [_method_grid(entry, tolerance, steps, tolerances) for entry in methods]
    instance = factory(**kwargs)
    if not isinstance(instance, Problem):
        raise ValueError(f"problem must give an impactbench.Problem, got {instance!r:.100}")
    instance.check()
    reference = None
    if not instance.has_exact_solution:
        from .study_reference import event_driven_reference

        reference = event_driven_reference
    options = {"metrics": [metric], "repeats": repeats, "reference": reference}
    cases = [Case(factory, t_end, kwargs)]
    stepping = [grid for grid in grids if grid.method.requires_step]
    adaptive = [grid for grid in grids if not grid.method.requires_step]
    runs: list[Run] = []
    if stepping:
        runs += expand(cases, stepping, steps=steps, phases=phases, **options)
    if adaptive:
        runs += expand(cases, adaptive, **options)
    title = f"{instance.name} to t = {t_end:g}: {metric.replace('_', ' ')}"
    floor_of = _floor(instance, t_end, metric)

    def report(table: pd.DataFrame, folder: Path) -> StudyReport:
        medians, orders = summarize(table, metric, floor_of())
        orders.to_csv(folder / ORDERS_FILE, index=False)
        medians.to_csv(folder / SUMMARY_FILE, index=False)
        _figure(medians, metric, floor_of(), folder, title, instance.name)
        shown = orders[["method", "versus", "text"]].rename(columns={"text": "order [95 %]"})
        unit = metric_unit(metric, instance.name)
        units = {name: unit for name in (metric, f"{metric}_min", f"{metric}_max")}
        setting = medians.assign(setting=medians["h"].fillna(medians["tolerance"]))
        latex = thin(setting, ["method"], "setting")
        note = latex.note.replace("setting", "h or tolerance")
        latex = Summary(latex.frame.drop(columns="setting"), note)
        sections = [
            Section("Observed orders", markdown_table(shown)),
            Section("Errors and costs", markdown_table(medians, units=units, latex=latex)),
            Section("Figure", f"![comparison]({FIGURE_FILE})\n"),
        ]
        findings = [
            f"{row.method}: order vs {row.versus} {row.text}" for row in orders.itertuples()
        ]
        return StudyReport(sections, findings)

    study = Study(
        name=name or _name(factory, kwargs),
        title=f"Comparison on {instance.name}",
        description=DESCRIPTION,
        runs=lambda quick: runs,
        report=report,
    )
    result = run_study(
        study, jobs=jobs, cache_dir=cache_dir, use_cache=use_cache, output=Path(output)
    )
    medians, orders = summarize(result.table, metric, floor_of())
    figures = [result.folder / FIGURE_FILE]
    figures += [figures[0].with_suffix(f".{fmt}") for fmt in FORMATS[1:]]
    return Comparison(medians, orders, [p for p in figures if p.exists()], result.folder, result)


def _floor(problem: Problem, t_end: float, metric: str) -> Callable[[], float]:
    """The error floor of ``metric`` against the problem's solution (read once the runs have
    stored the reference)."""
    cache: dict[str, float] = {}

    def floor() -> float:
        if "value" not in cache:
            solution = solution_of(problem, t_end)
            value = metrics.error_floor(metric, problem, solution, t_end)
            cache["value"] = value if math.isfinite(value) else 0.0
        return cache["value"]

    return floor


def add_parser(commands: Any, usage_error: type[Exception]) -> None:
    """Add the ``compare`` subcommand to the ``impactbench`` parser's subcommands."""
    parser = commands.add_parser(
        "compare",
        help="compare methods on a problem: orders with 95 %% intervals, work-precision figure",
        description="Run each METHOD on PROBLEM over the steps (time-stepping, each at phase "
        "copies) and tolerances (adaptive), through the study runner and its cache; print the "
        "observed orders with 95 % intervals and the errors and costs, and write the "
        "work-precision figure and a study report into OUTPUT/NAME. PROBLEM and METHOD as for "
        "simulate (built-in names or MODULE:NAME, with [param=value,...]).",
    )
    parser.add_argument("problem", metavar="PROBLEM")
    parser.add_argument("methods", metavar="METHOD", nargs="+")
    parser.add_argument("--t-end", type=finite_number, required=True, help="final time")
    parser.add_argument(
        "--steps",
        type=positive_number,
        nargs="+",
        default=(),
        metavar="H",
        help="nominal steps of the time-stepping methods (6 or more over a decade for an order)",
    )
    parser.add_argument(
        "--tolerances",
        type=positive_number,
        nargs="+",
        default=(),
        metavar="TOL",
        help="adaptive methods",
    )
    parser.add_argument("--phases", type=positive_int, default=PHASES, help="runs per nominal step")
    parser.add_argument("--metric", default="max_position_error", help="error metric")
    parser.add_argument("--jobs", type=jobs_count, default=1, help="parallel runs (default 1)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="parent folder")
    parser.add_argument("--name", default=None, help="folder name of this comparison")
    parser.add_argument("--cache-dir", type=Path, default=None, help="run cache folder")
    parser.set_defaults(handler=lambda args: _run(args, usage_error), parser=parser)


def _run(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    try:
        result = compare(
            args.problem,
            args.methods,
            t_end=args.t_end,
            steps=args.steps,
            tolerances=args.tolerances,
            phases=args.phases,
            metric=args.metric,
            output=args.output,
            name=args.name,
            jobs=args.jobs,
            cache_dir=args.cache_dir,
        )
    except ValueError as error:
        raise usage_error(str(error)) from None
    shown = result.orders[["method", "versus", "text"]]
    print(shown.rename(columns={"text": "order [95 %]"}).to_string(index=False))
    print()
    metric = args.metric
    shown = result.table.drop(columns=["family"]).rename(
        columns={
            metric: "error",
            f"{metric}_min": "min",
            f"{metric}_max": "max",
            "force_evaluations": "evaluations",
            "wall_time": "wall [s]",
            "compile_time": "compile [s]",
        }
    )
    print(f"{metric.replace('_', ' ')}: median (min, max) over the phase copies")
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    failed = result.result.failed
    for outcome in failed[:5]:
        print(f"  failed: {outcome.error}", file=sys.stderr)
    print(f"figure: {result.figure}; report: {result.folder / 'README.md'}")
    return 1 if failed else 0
