"""Where event-driven integration loses: accumulations and cascades, timed against time-stepping.

An event-driven method pays for every impact it resolves (a root search, the impact law, a
restart); a time-stepping scheme pays T/h steps whatever happens. This study times both families,
one run at a time, on the cases where impacts are many:

* **BouncingBall through its accumulation point** (e = 0.8, to t_inf + 1): infinitely many
  impacts before t_inf; the event-driven method resolves them until its Zeno test
  (``rest_velocity``) switches to persistent contact. Error: max position error against the
  closed form.
* **DoublePendulum settling on the wall** (``wall_distance = 0``: the hanging rest state touches
  the wall): an impact every half period with a geometrically decaying speed, for ever; the
  event-driven method resolves them until its Zeno test holds. Error: max position error against
  the cached DOP853 reference at rtol 1e-12.
* **A falling column of beads** (``ColumnOfBeads``, default start): cascades of
  near-simultaneous impacts, then a resting stack. Error: the largest distance of a bead from the
  exact resting stack q_i = (2 i - 1) r at T.

The event-driven method (compiled DOP853 at rtol ``EVENT_RTOL``) is swept over its Zeno threshold
``rest_velocity``, the time-steppers over h, and the third family, time-stepping with step-size
control (:mod:`._adaptive`: MoreauJean and CatchingUp under :class:`impactbench.Adaptive`, h_max
the coarsest fixed step), over rtol, on the same error and the same clock. Each row gives the
wall time (the fastest and the slowest of its repeats of at least 10 ms after a warm-up,
:data:`impactbench.analysis.timing.PROTOCOL_TEXT`), the impact events resolved and the error;
the report sets each event-driven run against the cheapest fixed-step run of at least its
accuracy (equal error), each adaptive run against the cheapest fixed-step and the cheapest
event-driven run of at least its accuracy, and calls one faster by the ratio of median times
where its 95 % bootstrap interval excludes 1 (:func:`impactbench.analysis.timing.compare`).
The adaptive runs store their accepted steps at :data:`STEP_SIZE_TOLERANCES` (h(t) figures) and
their rejected steps at every rtol.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    EVENT_DRIVEN,
    FASTER,
    MIN_REPEATS,
    PROTOCOL_TEXT,
    SLOWER,
    STUDY_REPEATS,
    TIE,
    TIME_STEPPING,
    compare,
    comparison_families,
    row_timing,
)
from impactbench.bench.report import (
    capped_flags,
    count_text,
    format_number,
    markdown_table,
    new_figure,
    save_figure,
    shared_legend,
    with_capped_counts,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import FAILED, Case, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import coordinate_unit, method_style
from impactbench.core.trajectory import Trajectory
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, ColumnOfBeads, DoublePendulum

from . import _adaptive
from ._reference import event_driven_reference

NAME = "event_driven_limits"
EVENT_RTOL = 1e-10
REST_VELOCITIES = {
    "full": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10],
    "quick": [1e-2, 1e-6],
}
STEPS = {"full": [1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5], "quick": [1e-2, 1e-3]}
TIME_STEPPERS = {"full": (MoreauJean, PaoliSchatzman, CatchingUp), "quick": (MoreauJean,)}
REPEATS = STUDY_REPEATS
BALL = "BouncingBall[e=0.8] through t_inf"
PENDULUM = "DoublePendulum settling on the wall"
COLUMN = "ColumnOfBeads falling"
HORIZON = {PENDULUM: {"full": 30.0, "quick": 5.0}, COLUMN: {"full": 3.0, "quick": 1.5}}
BEADS = {"full": 10, "quick": 4}
#: rtol of the step-size-controlled schemes (quick: MoreauJean alone), h_max the coarsest step.
ADAPTIVE_TOLERANCES = {"full": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6], "quick": [1e-3]}
ADAPTIVE_SCHEMES = {"full": _adaptive.SCHEMES, "quick": ("MoreauJean",)}
#: The cases the adaptive schemes run in (quick: the ball and the column).
ADAPTIVE_CASES = {"full": (BALL, PENDULUM, COLUMN), "quick": (BALL, COLUMN)}
#: The adaptive runs whose accepted steps are stored for the h(t) figures.
STEP_SIZE_TOLERANCES = (1e-3, 1e-5)
REST_ARTEFACT = "rest"
ERROR = "error"


def _ball() -> BouncingBall:
    return BouncingBall(restitution=0.8)


def _settling_pendulum() -> DoublePendulum:
    return DoublePendulum(wall_distance=0.0)


def adaptive_rest(run: Run, problem: ColumnOfBeads, trajectory: Trajectory) -> dict:
    """:func:`rest_error` and the controller's record (:func:`adaptive_record`)."""
    return {**rest_error(run, problem, trajectory), **adaptive_record(run, problem, trajectory)}


def adaptive_record(run: Run, problem: object, trajectory: Trajectory) -> dict:
    """The accepted steps of an adaptive run at :data:`STEP_SIZE_TOLERANCES`, its step counts
    at the others (:mod:`._adaptive`)."""
    if run.tolerance_value in STEP_SIZE_TOLERANCES:
        return _adaptive.step_size_artefact(run, problem, trajectory)
    return _adaptive.control_artefact(run, problem, trajectory)


def rest_error(run: Run, problem: ColumnOfBeads, trajectory: Trajectory) -> dict:
    """The largest distance of a bead from the resting stack at T, and the largest speed there."""
    rest = (2.0 * np.arange(1, problem.n_dof + 1) - 1.0) * problem.radius
    frame = pd.DataFrame(
        [
            {
                ERROR: float(np.max(np.abs(trajectory.q[-1] - rest))),
                "speed at T": float(np.max(np.abs(trajectory.v[-1]))),
            }
        ]
    )
    return {REST_ARTEFACT: frame}


def _cases(grid: str) -> list[tuple[str, object, float, dict]]:
    """(label, problem factory, horizon, run options) of each case."""
    ball_end = _ball().accumulation_time + 1.0
    metric = {"metrics": ("max_position_error",)}
    return [
        (BALL, _ball, ball_end, metric),
        (
            PENDULUM,
            _settling_pendulum,
            HORIZON[PENDULUM][grid],
            {**metric, "reference": event_driven_reference},
        ),
        (COLUMN, ColumnOfBeads, HORIZON[COLUMN][grid], {"artefact": rest_error}),
    ]


def runs(quick: bool) -> list[Run]:
    """Each case: the time-steppers by h, the event-driven method by its Zeno threshold, the
    step-size-controlled schemes by rtol."""
    grid = "quick" if quick else "full"
    result = []
    for label, factory, t_end, options in _cases(grid):
        kwargs = {"n_beads": BEADS[grid]} if factory is ColumnOfBeads else {}
        common = {
            "problem_kwargs": kwargs,
            "problem_name": label,
            **REPEATS[grid],
            **options,
        }
        for method in TIME_STEPPERS[grid]:
            for h in STEPS[grid]:
                every = max(1, int(t_end / h / 20_000))
                result.append(Run(factory, method, t_end, h, output_every=every, **common))
        for rest in REST_VELOCITIES[grid]:
            method_kwargs = {"rtol": EVENT_RTOL, "rest_velocity": rest}
            result.append(
                Run(
                    factory,
                    EventDriven,
                    t_end,
                    method_kwargs=method_kwargs,
                    tolerance="rest_velocity",
                    **common,
                )
            )
        if label not in ADAPTIVE_CASES[grid]:
            continue
        grids = _adaptive.grids(ADAPTIVE_TOLERANCES[grid], max(STEPS[grid]), ADAPTIVE_SCHEMES[grid])
        record = adaptive_rest if factory is ColumnOfBeads else adaptive_record
        adaptive = expand(
            [Case(factory, t_end, kwargs, label)],
            grids,
            metrics=options.get("metrics", ()),
            **REPEATS[grid],
            reference=options.get("reference"),
            artefact=record,
        )
        result += adaptive
    return result


# --------------------------------------------------------------------------------------------
# Report


def _with_errors(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    ok = table[table["status"] != FAILED].copy()
    ok[ERROR] = ok.get("max_position_error", np.nan)
    column = ok["problem"] == COLUMN
    if column.any():
        stored = read_artefact(table[table["problem"] == COLUMN], folder, REST_ARTEFACT)
        errors = stored.set_index("key")[ERROR]
        ok.loc[column, ERROR] = ok.loc[column, "key"].map(errors).to_numpy(float)
    return comparison_families(_adaptive.labelled(ok))


def _cheapest(run: pd.Series, others: pd.DataFrame, name: str) -> dict:
    """The cheapest run (least minimum time) of ``others`` at least as accurate as ``run``, with
    the verdict of ``run`` against it by the project's rule
    (:func:`impactbench.analysis.timing.compare`): the ratio of median times with its 95 %
    bootstrap interval (column ``ratio``: how many times ``run`` is faster or slower), "faster"
    where the interval excludes 1, "tie" where it holds 1; "-" where no run of ``others``
    reaches ``run``'s error, or where a run has too few repeats for a verdict. Columns named
    after ``name``."""
    accurate = others[others[ERROR] <= run[ERROR]]
    if accurate.empty:
        return {name: "none reaches it", f"{name} time [ms]": np.nan,
                f"{name} slowest [ms]": np.nan, "verdict": "-", "ratio": "-"}  # fmt: skip
    best = accurate.loc[accurate["wall_time"].idxmin()]
    result = compare(row_timing(run), row_timing(best))
    if not math.isfinite(result.low):
        verdict = f"- (fewer than {MIN_REPEATS} repeats)"
    else:
        verdict = {FASTER: f"{run['family']} faster", SLOWER: f"{name} faster"}.get(
            result.verdict, TIE
        )
    setting = f"h = {best['h']:.3g}" if best["h"] == best["h"] else f"{best['tolerance']:g}"
    return {
        name: f"{best['method']} ({setting})",
        f"{name} time [ms]": 1e3 * best["wall_time"],
        f"{name} slowest [ms]": 1e3 * best["wall_time_max"],
        "verdict": verdict,
        "ratio": result.text,
    }


def _is_capped(run: pd.Series) -> bool:
    """Whether the run's impact count hit the impact log's capacity (a lower bound)."""
    flag = run.get("impacts_capped", False)
    return bool(flag) if pd.notna(flag) else False


def _timed(run: pd.Series, family: str, setting: str) -> dict:
    return {
        setting: run["tolerance"],
        "impacts": run["impacts"],
        "impacts_capped": _is_capped(run),
        f"{family} error": run[ERROR],
        f"{family} time [ms]": 1e3 * run["wall_time"],
        f"{family} slowest [ms]": 1e3 * run["wall_time_max"],
    }


def equal_error(frame: pd.DataFrame) -> pd.DataFrame:
    """Each event-driven run beside the cheapest fixed-step time-stepping run at least as
    accurate, with the verdict of :func:`_cheapest`."""
    steppers = frame[frame["family"] == TIME_STEPPING]
    rows = [
        {**_timed(run, "event-driven", "rest velocity"), **_cheapest(run, steppers, "time-stepper")}
        for _, run in frame[frame["family"] == EVENT_DRIVEN].iterrows()
    ]
    return _counted(pd.DataFrame(rows))


def _counted(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with their impact counts printed ">= N" where capped
    (:func:`impactbench.bench.report.with_capped_counts`)."""
    if rows.empty:
        return rows
    return with_capped_counts(rows).drop(columns="impacts_capped")


def adaptive_equal_error(frame: pd.DataFrame) -> pd.DataFrame:
    """Each step-size-controlled run beside the cheapest fixed-step run and the cheapest
    event-driven run at least as accurate, each with the verdict of :func:`_cheapest`."""
    rows = []
    for _, run in frame[frame["family"] == ADAPTIVE_STEPPING].iterrows():
        row = {"method": run["method"], **_timed(run, "adaptive", "rtol")}
        for family, name in ((TIME_STEPPING, "fixed step"), (EVENT_DRIVEN, "event-driven")):
            against = _cheapest(run, frame[frame["family"] == family], name)
            row.update({f"{key} (vs {name})" if key in ("verdict", "ratio") else key: value
                        for key, value in against.items()})  # fmt: skip
        rows.append(row)
    return _counted(pd.DataFrame(rows))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.split()[0])


def _marks(label: str) -> list[tuple[str, float]]:
    """The accumulation time of the ball, drawn on its h(t) figure."""
    return [("t_inf", _ball().accumulation_time)] if label == BALL else []


def _figure(frame: pd.DataFrame, label: str, folder: Path) -> str:
    figure, (ax,) = new_figure(1)
    for method, group in frame.groupby("method", sort=True):
        group = group[(group[ERROR] > 0) & (group["wall_time"] > 0)]
        group = group.sort_values("h" if group["h"].notna().all() else "tolerance")
        ax.plot(
            1e3 * group["wall_time"],
            group[ERROR],
            label=str(method),
            **method_style(str(method)),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time per run [ms]")
    ax.set_ylabel(f"error [{coordinate_unit(label.split()[0])}]")
    ax.grid(True, which="major", alpha=0.3)
    shared_legend(figure, [ax], columns=2)
    name = "limits_" + _slug(label) + ".png"
    save_figure(figure, folder / name)
    return name


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Per case: the runs, the equal-error comparisons, the work-precision figure and h(t) of
    the adaptive runs."""
    frame = _with_errors(_adaptive.with_rejections(table, folder), folder)
    sections, findings = [], []
    failed = table[(table["status"] == FAILED) & table["h"].isna()]
    adaptive = _adaptive.is_adaptive(failed)
    for (label, controlled), group in failed.groupby(["problem", adaptive], sort=False):
        first = str(group["error"].iloc[0]).split(": ")
        who = "step-size control fails at" if controlled else "the event-driven method fails at"
        what = "rtol" if controlled else "Zeno thresholds"
        findings.append(
            f"{label}: {who} {len(group)} of its {what} "
            f"({', '.join(f'{v:g}' for v in sorted(group['tolerance']))}); first error: "
            f"{first[0]}: {': '.join(first[1:])[:160]}"
        )
    for label, group in frame.groupby("problem", sort=False):
        controlled_rows = _adaptive.is_adaptive(group)
        control = _adaptive.error_control(group, ERROR)
        marks = _adaptive.marked(group, control)[_adaptive.CONTROL_COLUMN]
        counted = with_capped_counts(group)
        runs_shown = pd.DataFrame(
            {
                "method": group["method"],
                "h [s]": group["h"],
                "rest velocity [m/s]": group["tolerance"].where(~controlled_rows),
                "rtol [-]": group["tolerance"].where(controlled_rows),
                "impacts": counted["impacts"],
                "status": group["status"],
                ERROR: group[ERROR],
                "rejected steps": group["rejected_fraction"],
                _adaptive.CONTROL_COLUMN: marks,
                "wall time [ms]": 1e3 * group["wall_time"],
                "slowest repeat [ms]": 1e3 * group["wall_time_max"],
            }
        )
        compared = equal_error(group)
        # the verdicts on step-size control use only the rtol sweeps that control their error
        controlled = adaptive_equal_error(_adaptive.controlled_only(group, control))
        steps = _adaptive.step_size_figure(
            table, folder, str(label), f"Accepted steps h(t): {label}",
            "steps_" + _slug(str(label)) + ".png", _marks(str(label)),
        )  # fmt: skip
        q = coordinate_unit(str(label).split()[0])
        units = {ERROR: q, "event-driven error": q, "adaptive error": q, "rest velocity": "m/s"}
        body = (
            f"Every run ({ERROR}: see the module docstring; impacts are impact events; "
            "rejected steps: the fraction of the adaptive runs' attempts).\n\n"
            + markdown_table(runs_shown, units=units)
            + "\nEach event-driven run against the cheapest fixed-step run at least as "
            "accurate (times in ms, the fastest and the slowest repeat; ratio: of the median "
            "times, with its 95 % bootstrap interval; a tie where it holds 1).\n\n"
            + markdown_table(compared, units=units)
            + "\nEach step-size-controlled run against the cheapest fixed-step and the cheapest "
            "event-driven run at least as accurate.\n\n"
            + markdown_table(controlled, units=units)
            + "\n"
            + _adaptive.control_section(control)
            + f"\n![work-precision]({_figure(group, str(label), folder)})\n"
            + (steps or "")
        )
        sections.append(Section(str(label), body))
        events = group[group["family"] == "event-driven"].sort_values("tolerance")
        if not events.empty:
            fewest, most = events["impacts"].idxmin(), events["impacts"].idxmax()
            capped = capped_flags(events)
            findings.append(
                f"{label}: the event-driven method resolves "
                f"{count_text(events.loc[fewest, 'impacts'], capped[fewest])} to "
                f"{count_text(events.loc[most, 'impacts'], capped[most])} impact events as its "
                "Zeno threshold goes from "
                f"{events['tolerance'].max():g} to {events['tolerance'].min():g}, for "
                f"{format_number(1e3 * events['wall_time'].min())} to "
                f"{format_number(1e3 * events['wall_time'].max())} ms per run."
            )
        if not compared.empty:
            counts = compared["verdict"].value_counts()
            findings.append(
                f"{label}, at equal error: "
                + ", ".join(f"{name} in {count}" for name, count in counts.items())
                + f" of {len(compared)} event-driven settings."
            )
        findings += _adaptive.control_findings(control)
        for name in ("fixed step", "event-driven"):
            if controlled.empty:
                break
            counts = controlled[f"verdict (vs {name})"].value_counts()
            findings.append(
                f"{label}, step-size control against {name} at equal error: "
                + ", ".join(f"{verdict} in {count}" for verdict, count in counts.items())
                + f" of {len(controlled)} adaptive runs."
            )
    return StudyReport(sections, findings)


STUDY = Study(
    name=NAME,
    title="Where event-driven integration loses: accumulations and cascades, timed",
    description=(
        "Both families timed one run at a time on accumulations of impacts (the ball through "
        "t_inf, the double pendulum settling on the wall) and cascades of near-simultaneous "
        "impacts (a falling column of beads): the event-driven method's cost and error against "
        "its Zeno threshold and the impacts it resolves, beside the time-steppers' cost at "
        "equal error (module `studies/event_driven_limits.py`). " + PROTOCOL_TEXT
    ),
    runs=runs,
    report=report,
    max_jobs=1,
    failures_are_findings=True,  # the event-driven method's failures are what it measures
)
