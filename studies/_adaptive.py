"""Step-size-controlled time-stepping in the comparison studies (the third family).

The schemes of :data:`SCHEMES` run under :class:`impactbench.Adaptive` with gap control, swept
by rtol with atol = 1e-2 rtol and gap_tolerance = rtol (the setting under which the error
converges in rtol through impacts, tests/test_adaptive.py) and a largest step ``h_max`` given by
the study. Every adaptive run stores the controller's counts (accepted, rejected and
contact-change steps: the artefact ``control``); the runs a study draws h(t) for store their
accepted steps too (``step_sizes``: t and h of every accepted step, and the run's impact-log
times in ``step_impacts``). The tables and figures read these stored artefacts only.

Whether the family controls its error is decided from the data, per study, problem and scheme
(:func:`error_control`): its error is *controlled* when the least-squares slope of log10(error)
against log10(rtol) over the swept rtol (:func:`impactbench.analysis.fitting.fit_order`, at
least :data:`CONTROL_MIN_POINTS` tolerances, errors at the round-off floor excluded) is an
order (its 95 % interval excludes 0) of at least :data:`CONTROLLED_SLOPE` per decade with a
root-mean-square residual of at most :data:`CONTROLLED_RESIDUAL` decades, or when every error
lies at the floor. Otherwise its rows are marked :data:`NOT_CONTROLLED` and left out of every
verdict (:func:`controlled_only` filters them before the verdict functions).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import FLOOR, ORDER, OrderFit, fit_order
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.bench.report import (
    markdown_table,
    method_style,
    new_figure,
    save_figure,
    shared_legend,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import Case, Grid, Run, expand
from impactbench.core.adaptive import Adaptive
from impactbench.core.problem import Problem
from impactbench.core.trajectory import Trajectory

#: The schemes run under step-size control.
SCHEMES = ("MoreauJean", "CatchingUp")
#: atol = ATOL_RATIO rtol; gap_tolerance = rtol.
ATOL_RATIO = 1e-2

#: Bins of time of the binned h(t) record (:func:`binned_step_artefact`).
STEP_BINS = 400

_CONTROL = re.compile(r",(atol|gap_tolerance|h_max|max_samples)=[^,\]]+")


def grids(
    tolerances: list[float],
    h_max: float | None,
    schemes: tuple[str, ...] = SCHEMES,
    max_samples: int | None = None,
) -> list[Grid]:
    """One grid per rtol (atol and gap_tolerance follow it) over ``schemes``, steps at most
    ``h_max`` (None: Adaptive's default, a tenth of the horizon); ``max_samples`` (None:
    Adaptive's default) bounds the samples of a run, every accepted step when it is larger
    than their number (:func:`binned_step_artefact` needs them all)."""
    parameters = {} if max_samples is None else {"max_samples": [max_samples]}
    if h_max is not None:
        parameters["h_max"] = [h_max]
    return [
        Grid(
            Adaptive,
            {
                "scheme": list(schemes),
                "rtol": [rtol],
                "atol": [ATOL_RATIO * rtol],
                "gap_tolerance": [rtol],
                **parameters,
            },
            tolerance="rtol",
        )
        for rtol in tolerances
    ]


def recorded_runs(
    cases: list[Case],
    tolerances: list[float],
    h_max: float | None,
    stores_steps: Callable[[Run], bool],
    **options: Any,
) -> list[Run]:
    """The adaptive runs of ``cases`` (:func:`grids`; ``options`` as for
    :func:`impactbench.bench.runner.expand`), each with its controller's record: every accepted
    step where ``stores_steps(run)`` (:func:`step_size_artefact`), the step counts otherwise
    (:func:`control_artefact`)."""
    return [
        replace(run, artefact=step_size_artefact if stores_steps(run) else control_artefact)
        for run in expand(cases, grids(tolerances, h_max), **options)
    ]


def short_name(method: str) -> str:
    """``method`` without the parameters that follow rtol or the study (atol, gap_tolerance,
    h_max, max_samples): ``Adaptive[scheme=MoreauJean]``; other methods unchanged."""
    return _CONTROL.sub("", method)


def settings_text(h_max: float | str) -> str:
    """The sweep's settings, for a report's description (``h_max``: a step, or its rule)."""
    if not isinstance(h_max, str):
        h_max = f"{h_max:g}"
    return (
        f"Step-size control (impactbench.Adaptive: Studer's extrapolation estimate and the "
        f"error of the chord between steps, velocities excluded on contact-change steps, gap "
        f"control) over {', '.join(SCHEMES)}, by rtol with "
        f"atol = {ATOL_RATIO:g} rtol and gap_tolerance = rtol, steps at most h_max = {h_max}; "
        "drawn in its scheme's colour, dashed with open markers"
    )


def labelled(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the adaptive methods named by their scheme alone
    (``Adaptive[scheme=MoreauJean]``): atol, gap_tolerance and h_max follow rtol or the study,
    so that each scheme's rtol sweep is one line and one row of the tables."""
    return table.assign(method=table["method"].map(lambda name: short_name(str(name))))


def control_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """The controller's counts of an adaptive run (artefact ``control``)."""
    stats = trajectory.stats
    accepted, rejected = int(stats["steps"]), int(stats["rejected_steps"])
    frame = pd.DataFrame(
        {
            "accepted_steps": [accepted],
            "rejected_steps": [rejected],
            "contact_steps": [int(stats["contact_steps"])],
        }
    )
    return {"control": frame}


def step_size_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """:func:`control_artefact`, every accepted step (``step_sizes``: t at its end, h) and the
    run's impact-log times (``step_impacts``)."""
    if trajectory.t.size != trajectory.stats["steps"] + 1:
        raise ValueError("step_sizes needs every accepted step in the output (max_samples)")
    steps = pd.DataFrame({"t": trajectory.t[1:], "h": np.diff(trajectory.t)})
    impacts = pd.DataFrame({"t": trajectory.impacts.t})
    return {**control_artefact(run, problem, trajectory), "step_sizes": steps,
            "step_impacts": impacts}  # fmt: skip


def binned_step_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """:func:`control_artefact` and h(t) of a long run in at most :data:`STEP_BINS` equal bins
    of time (``step_sizes``: t at the bin's end, ``h`` its smallest accepted step, ``h_largest``
    its largest, ``steps`` their number; bins without a step left out), with the impact-log
    times (``step_impacts``). Needs every accepted step in the output (``max_samples``)."""
    t = trajectory.t
    if t.size != trajectory.stats["steps"] + 1:
        raise ValueError("step_sizes needs every accepted step in the output (max_samples)")
    h = np.diff(t)
    edges = np.linspace(t[0], t[-1], STEP_BINS + 1)
    index = np.clip(np.searchsorted(edges, t[1:], side="left") - 1, 0, STEP_BINS - 1)
    counts = np.bincount(index, minlength=STEP_BINS)
    smallest = np.full(STEP_BINS, np.inf)
    largest = np.zeros(STEP_BINS)
    np.minimum.at(smallest, index, h)
    np.maximum.at(largest, index, h)
    filled = counts > 0
    steps = pd.DataFrame(
        {
            "t": edges[1:][filled],
            "h": smallest[filled],
            "h_largest": largest[filled],
            "steps": counts[filled],
        }
    )
    impacts = pd.DataFrame({"t": trajectory.impacts.t})
    return {**control_artefact(run, problem, trajectory), "step_sizes": steps,
            "step_impacts": impacts}  # fmt: skip


#: Smallest fitted slope of log10(error) against log10(rtol) (per decade) of a controlled error.
CONTROLLED_SLOPE = 0.5
#: Largest root-mean-square residual of that fit, in decades, for the slope to be accepted.
CONTROLLED_RESIDUAL = 0.3
#: Fewest tolerances of a sweep whose slope is judged (n - 2 = 1 degree of freedom left for
#: the interval).
CONTROL_MIN_POINTS = 3
#: The mark of a family whose error is not controlled.
NOT_CONTROLLED = "error not controlled"
#: The mark of a family whose error is controlled.
CONTROLLED = "controlled"
#: Column of the mark in the tables.
CONTROL_COLUMN = "error control"

#: The criterion, as the reports state it.
CONTROL_TEXT = (
    f"The adaptive family's error counts as controlled on a problem when the least-squares "
    f"slope of log10(error) against log10(rtol) over the swept rtol (at least "
    f"{CONTROL_MIN_POINTS} tolerances, errors at the round-off floor excluded) has a 95 % "
    f"interval excluding 0, is at least {CONTROLLED_SLOPE:g} per decade and leaves a "
    f"root-mean-square residual of at most {CONTROLLED_RESIDUAL:g} decades (or when every error "
    f"lies at the floor); otherwise its rows are marked '{NOT_CONTROLLED}' and are left out of "
    "every verdict (fastest runs, crossovers, findings)."
)


def is_controlled(fit: OrderFit) -> bool:
    """Whether the fit of an rtol sweep shows a controlled error (module docstring)."""
    if fit.status == FLOOR:
        return True
    return (
        fit.status == ORDER
        and fit.order >= CONTROLLED_SLOPE
        and fit.residual <= CONTROLLED_RESIDUAL
    )


def error_control(
    medians: pd.DataFrame, metric: str, floors: dict[tuple[str, str], float] | None = None
) -> pd.DataFrame:
    """Per problem and adaptive method of ``medians``, the fit of ``metric`` against rtol and
    whether the error is controlled (:func:`is_controlled`).

    Parameters
    ----------
    medians : DataFrame
        One row per rtol of each adaptive method (columns ``problem``, ``method``,
        ``tolerance`` and ``metric``; rows of other methods are ignored).
    metric : str
        The error column judged.
    floors : dict or None
        The round-off floor of ``metric`` by (problem, metric) (None: no floor).

    Returns
    -------
    DataFrame
        Columns ``problem``, ``method``, ``order``, ``low``, ``high``, ``residual``,
        ``points``, ``fit`` (the fit's text), ``controlled`` (bool) and
        :data:`CONTROL_COLUMN` (:data:`CONTROLLED` or :data:`NOT_CONTROLLED`).
    """
    if metric not in medians:
        raise ValueError(f"metric {metric!r} is not a column of medians")
    columns = ["problem", "method", "order", "low", "high", "residual", "points", "fit",
               "controlled", CONTROL_COLUMN]  # fmt: skip
    adaptive = medians[is_adaptive(medians)]
    rows = []
    for (problem, method), group in adaptive.groupby(["problem", "method"], sort=False):
        floor = 0.0 if floors is None else floors[(problem, metric)]
        fit = fit_order(
            group["tolerance"].to_numpy(dtype=float),
            group[metric].to_numpy(dtype=float),
            floor=floor,
            min_points=CONTROL_MIN_POINTS,
        )
        controlled = is_controlled(fit)
        rows.append(
            {
                "problem": problem,
                "method": method,
                "order": fit.order,
                "low": fit.low,
                "high": fit.high,
                "residual": fit.residual,
                "points": fit.points,
                "fit": fit.text("rtol"),
                "controlled": controlled,
                CONTROL_COLUMN: CONTROLLED if controlled else NOT_CONTROLLED,
            }
        )
    return pd.DataFrame(rows, columns=columns)


def marked(table: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the column :data:`CONTROL_COLUMN`: the mark of :func:`error_control` on
    the adaptive rows (by problem and method), empty on the others."""
    mark = control.set_index(["problem", "method"])[CONTROL_COLUMN]
    keys = pd.MultiIndex.from_frame(table[["problem", "method"]].astype(str))
    values = mark.reindex(keys).fillna(NOT_CONTROLLED).to_numpy()
    return table.assign(**{CONTROL_COLUMN: np.where(is_adaptive(table), values, "")})


def controlled_only(table: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """``table`` without the adaptive rows whose error is not controlled (:func:`error_control`;
    an adaptive method without a judgement is left out too): the rows a verdict may use."""
    kept = marked(table, control)[CONTROL_COLUMN] != NOT_CONTROLLED
    return table[kept.to_numpy()]


def control_findings(control: pd.DataFrame) -> list[str]:
    """One finding per problem and adaptive method whose error is not controlled."""
    return [
        f"{row['problem']}, {row['method']}: {NOT_CONTROLLED} (error against rtol: "
        f"{row['fit']}); its runs are left out of the verdicts."
        for row in control.to_dict("records")
        if not row["controlled"]
    ]


def control_section(control: pd.DataFrame) -> str:
    """The criterion (:data:`CONTROL_TEXT`) and its judgement of each problem and adaptive
    method (:func:`error_control`), as a report section's text."""
    shown = control[["problem", "method", "fit", CONTROL_COLUMN]]
    return CONTROL_TEXT + "\n\n" + markdown_table(shown.rename(columns={"fit": "error vs rtol"}))


def is_adaptive(table: pd.DataFrame) -> pd.Series:
    """The rows of ``table`` run by :class:`impactbench.Adaptive`."""
    return table["method"].astype(str).str.startswith("Adaptive[")


def with_rejections(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """``table`` with ``rejected_fraction`` (rejected / attempted steps) from the stored
    ``control`` artefacts of its adaptive runs; NaN for the other runs."""
    adaptive = table[is_adaptive(table) & (table["status"] != "failed")]
    control = read_artefact(table, folder, "control", required=list(adaptive["key"]))
    if control.empty:
        return table.assign(rejected_fraction=np.nan)
    control = control.assign(
        rejected_fraction=control["rejected_steps"]
        / (control["accepted_steps"] + control["rejected_steps"])
    )
    return table.merge(control[["key", "rejected_fraction"]], on="key", how="left")


def rejection_findings(medians: pd.DataFrame) -> list[str]:
    """Per adaptive scheme, its smallest and largest fraction of rejected steps (``medians``:
    rows with ``family``, ``problem``, ``method``, ``tolerance``, ``rejected_fraction``)."""
    if "rejected_fraction" not in medians:
        return []
    adaptive = medians[medians["family"] == ADAPTIVE_STEPPING].dropna(subset=["rejected_fraction"])
    findings = []
    for method, group in adaptive.groupby("method", sort=False):
        low = group.loc[group["rejected_fraction"].idxmin()]
        high = group.loc[group["rejected_fraction"].idxmax()]
        findings.append(
            f"{method}: {low['rejected_fraction']:.0%} ({low['problem']}, "
            f"rtol={low['tolerance']:g}) to {high['rejected_fraction']:.0%} "
            f"({high['problem']}, rtol={high['tolerance']:g}) of its attempted steps rejected."
        )
    return findings


def step_size_figure(
    table: pd.DataFrame,
    folder: Path,
    problem: str,
    title: str,
    name: str,
    marks: list[tuple[str, float]] = (),
) -> str | None:
    """h(t) of the stored adaptive runs of ``problem`` (one panel per rtol), on a log axis, with
    the runs' impact-log times as ticks and ``marks`` ((label, t) pairs, e.g. the accumulation
    time) as vertical lines; a binned record (:func:`binned_step_artefact`) is drawn as its
    smallest step per bin with the band up to its largest; the Markdown link, None when no run
    of ``problem`` stored its steps."""
    rows = table[(table["problem"] == problem) & is_adaptive(table)]
    steps = read_artefact(rows, folder, "step_sizes", required=())
    if steps.empty:
        return None
    impacts = read_artefact(rows, folder, "step_impacts", required=())
    rows = labelled(rows[rows["key"].isin(set(steps["key"]))])
    tolerances = sorted(rows["tolerance"].unique(), reverse=True)
    figure, axes = new_figure(len(tolerances), width=6.0, height=3.0)
    for ax, rtol in zip(axes, tolerances, strict=True):
        for row in rows[rows["tolerance"] == rtol].itertuples(index=False):
            mine = steps[steps["key"] == row.key]
            style = method_style(row.method)
            ax.step(mine["t"], mine["h"], where="pre", color=style["color"],
                    linestyle=style["linestyle"], label=row.method)  # fmt: skip
            if "h_largest" in mine and mine["h_largest"].notna().any():
                ax.fill_between(mine["t"], mine["h"], mine["h_largest"], step="pre",
                                color=style["color"], alpha=0.2, linewidth=0)  # fmt: skip
            hits = impacts.loc[impacts["key"] == row.key, "t"]
            low = float(mine["h"].min())
            ax.plot(hits, np.full(len(hits), low), linestyle="none", marker="|",
                    color=style["color"], markersize=6)  # fmt: skip
        for label, t in marks:
            ax.axvline(t, color="0.3", linewidth=0.8, linestyle=":", label=label)
        ax.set_yscale("log")
        ax.set_xlabel("$t$ [s]")
        ax.set_ylabel("accepted step $h$ [s]")
        ax.set_title(f"rtol = {rtol:g}")
    shared_legend(figure, axes, columns=3)
    figure.suptitle(title)
    save_figure(figure, folder / name)
    return f"![{title}]({name})\n"
