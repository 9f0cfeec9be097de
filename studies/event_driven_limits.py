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
``rest_velocity``, the time-steppers over h. Each row gives the wall time (minimum of the repeats,
after a warm-up, with the largest repeat as its spread), the impact events resolved and the error;
the report sets each event-driven run against the cheapest time-stepping run of at least its
accuracy (equal error), and calls one faster only where the two timings' ranges do not overlap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.timing import FASTER, SLOWER, Timing
from impactbench.analysis.timing import verdict as timing_verdict
from impactbench.bench.report import (
    format_number,
    markdown_table,
    new_figure,
    save_figure,
    shared_legend,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import coordinate_unit, method_style
from impactbench.core.trajectory import Trajectory
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, ColumnOfBeads, DoublePendulum

from ._reference import event_driven_reference

NAME = "event_driven_limits"
EVENT_RTOL = 1e-10
REST_VELOCITIES = {
    "full": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10],
    "quick": [1e-2, 1e-6],
}
STEPS = {"full": [1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5], "quick": [1e-2, 1e-3]}
TIME_STEPPERS = {"full": (MoreauJean, PaoliSchatzman, CatchingUp), "quick": (MoreauJean,)}
REPEATS = {"full": 3, "quick": 1}
BALL = "BouncingBall[e=0.8] through t_inf"
PENDULUM = "DoublePendulum settling on the wall"
COLUMN = "ColumnOfBeads falling"
HORIZON = {PENDULUM: {"full": 30.0, "quick": 5.0}, COLUMN: {"full": 3.0, "quick": 1.5}}
BEADS = {"full": 10, "quick": 4}
REST_ARTEFACT = "rest"
ERROR = "error"


def _ball() -> BouncingBall:
    return BouncingBall(restitution=0.8)


def _settling_pendulum() -> DoublePendulum:
    return DoublePendulum(wall_distance=0.0)


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
    """Each case: the time-steppers by h, the event-driven method by its Zeno threshold."""
    grid = "quick" if quick else "full"
    result = []
    for label, factory, t_end, options in _cases(grid):
        kwargs = {"n_beads": BEADS[grid]} if factory is ColumnOfBeads else {}
        common = {
            "problem_kwargs": kwargs,
            "problem_name": label,
            "repeats": REPEATS[grid],
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
    ok["family"] = np.where(ok["h"].isna(), "event-driven", "time-stepping")
    return ok


def equal_error(frame: pd.DataFrame) -> pd.DataFrame:
    """Each event-driven run beside the cheapest time-stepping run at least as accurate.

    The verdict is the project's (:func:`impactbench.analysis.timing.verdict`): "faster" only
    where the gap exceeds the spread (slowest minus fastest repeat) of both runs, "tie"
    otherwise, and "-" where no time-stepping run of the grid
    reaches the event-driven error or where a run was timed once (no spread to compare with).
    """
    rows = []
    steppers = frame[frame["family"] == "time-stepping"]
    for _, run in frame[frame["family"] == "event-driven"].iterrows():
        accurate = steppers[steppers[ERROR] <= run[ERROR]]
        row = {
            "rest velocity": run["tolerance"],
            "impacts": run["impacts"],
            "event-driven error": run[ERROR],
            "event-driven ms": 1e3 * run["wall_time"],
            "event-driven ms max": 1e3 * run["wall_time_max"],
        }
        if accurate.empty:
            rows.append(
                {
                    **row,
                    "time-stepper": "none reaches it",
                    "time-stepper ms": np.nan,
                    "time-stepper ms max": np.nan,
                    "verdict": "-",
                }
            )
            continue
        best = accurate.loc[accurate["wall_time"].idxmin()]
        if min(run["repeats"], best["repeats"]) < 2:
            verdict = "- (one repeat: no spread)"
        else:  # the project's rule: faster only by more than the spread of both
            event, stepper = (
                Timing(row["wall_time"], row["wall_time_max"] - row["wall_time"])
                for row in (run, best)
            )
            verdict = {FASTER: "event-driven faster", SLOWER: "time-stepper faster"}.get(
                timing_verdict(event, stepper), "tie"
            )
        rows.append(
            {
                **row,
                "time-stepper": f"{best['method']} (h = {best['h']:.3g})",
                "time-stepper ms": 1e3 * best["wall_time"],
                "time-stepper ms max": 1e3 * best["wall_time_max"],
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


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
    name = "limits_" + "".join(c if c.isalnum() else "_" for c in label.split()[0]) + ".png"
    save_figure(figure, folder / name)
    return name


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Per case: the runs, the equal-error comparison and the work-precision figure."""
    frame = _with_errors(table, folder)
    sections, findings = [], []
    failed = table[(table["status"] == FAILED) & table["h"].isna()]
    for label, group in failed.groupby("problem", sort=False):
        first = str(group["error"].iloc[0]).split(": ")
        findings.append(
            f"{label}: the event-driven method fails at {len(group)} of its Zeno thresholds "
            f"({', '.join(f'{v:g}' for v in sorted(group['tolerance']))}); first error: "
            f"{first[0]}: {': '.join(first[1:])[:160]}"
        )
    for label, group in frame.groupby("problem", sort=False):
        runs_shown = group[["method", "h", "tolerance", "impacts", "status", ERROR]].assign(
            **{
                "wall time [ms]": 1e3 * group["wall_time"],
                "slowest repeat [ms]": 1e3 * group["wall_time_max"],
            }
        )
        runs_shown = runs_shown.rename(columns={"h": "h [s]", "tolerance": "rest velocity [-]"})
        compared = equal_error(group)
        body = (
            f"Every run ({ERROR}: see the module docstring; impacts are impact events).\n\n"
            + markdown_table(runs_shown)
            + "\nEach event-driven run against the cheapest time-stepping run at least as "
            "accurate (times in ms, the fastest and the slowest repeat).\n\n"
            + markdown_table(compared)
            + f"\n![work-precision]({_figure(group, str(label), folder)})\n"
        )
        sections.append(Section(str(label), body))
        events = group[group["family"] == "event-driven"].sort_values("tolerance")
        if not events.empty:
            findings.append(
                f"{label}: the event-driven method resolves {int(events['impacts'].min())} to "
                f"{int(events['impacts'].max())} impact events as its Zeno threshold goes from "
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
    return StudyReport(sections, findings)


STUDY = Study(
    name=NAME,
    title="Where event-driven integration loses: accumulations and cascades, timed",
    description=(
        "Both families timed one run at a time on accumulations of impacts (the ball through "
        "t_inf, the double pendulum settling on the wall) and cascades of near-simultaneous "
        "impacts (a falling column of beads): the event-driven method's cost and error against "
        "its Zeno threshold and the impacts it resolves, beside the time-steppers' cost at "
        "equal error (module `studies/event_driven_limits.py`)."
    ),
    runs=runs,
    report=report,
    max_jobs=1,
    failures_are_findings=True,  # the event-driven method's failures are what it measures
)
