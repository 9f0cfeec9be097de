"""Step-size-controlled time-stepping in the comparison studies (the third family).

The schemes of :data:`SCHEMES` run under :class:`impactbench.Adaptive` with gap control, swept
by rtol with atol = 1e-2 rtol and gap_tolerance = rtol (the setting under which the error
converges in rtol through impacts, tests/test_adaptive.py) and a largest step ``h_max`` given by
the study. Every adaptive run stores the controller's counts (accepted, rejected and
contact-change steps: the artefact ``control``); the runs a study draws h(t) for store their
accepted steps too (``step_sizes``: t and h of every accepted step, and the run's impact-log
times in ``step_impacts``). The tables and figures read these stored artefacts only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.bench.report import method_style, new_figure, save_figure, shared_legend
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
    h_max: float,
    schemes: tuple[str, ...] = SCHEMES,
    max_samples: int | None = None,
) -> list[Grid]:
    """One grid per rtol (atol and gap_tolerance follow it) over ``schemes``; ``max_samples``
    (None: Adaptive's default) bounds the samples of a run, every accepted step when it is
    larger than their number (:func:`binned_step_artefact` needs them all)."""
    parameters = {} if max_samples is None else {"max_samples": [max_samples]}
    return [
        Grid(
            Adaptive,
            {
                "scheme": list(schemes),
                "rtol": [rtol],
                "atol": [ATOL_RATIO * rtol],
                "gap_tolerance": [rtol],
                "h_max": [h_max],
                **parameters,
            },
            tolerance="rtol",
        )
        for rtol in tolerances
    ]


def recorded_runs(
    cases: list[Case],
    tolerances: list[float],
    h_max: float,
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
        f"Step-size control (impactbench.Adaptive: Studer's extrapolation estimate, velocities "
        f"excluded on contact-change steps, gap control) over {', '.join(SCHEMES)}, by rtol with "
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
