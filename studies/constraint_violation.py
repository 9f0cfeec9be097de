"""Constraint violation of the time-stepping schemes: at impacts and in persistent contact.

A time-stepping scheme that never locates an impact lets the position leave K = {g >= 0}: the
step that crosses the obstacle ends inside it, by O(h v) for a scheme whose position update does
not see the impulse of its own step; in persistent contact the velocity-level law keeps the
contact at a depth O(h^2 a), a the acceleration towards the obstacle; a scheme that projects its
position onto K keeps it there to round-off. This study measures both, per scheme, with fitted
orders:

* **At impacts**: the largest penetration max(0, -min_k g(q_k)) over the steps of runs with
  isolated impacts and no persistent contact: ``BouncingBall`` (e = 0.8) up to t = 3, before
  its accumulation point, and ``ImpactingOscillator`` (e = 0.8, three impacts).
* **In persistent contact**: the largest penetration over the second half of runs that rest on
  the obstacle: the ball (e = 0.8) after its accumulation point, over [T/2, T] with
  T = ``RESTING_BALL_END``, and a column of four beads stacked at rest from the start (every
  contact closed), over [5, 10].

Each nominal step runs at ``PHASES`` phase copies (:mod:`impactbench.analysis.fitting`); the
order is fitted on the medians with its 95 % interval, penetrations below the round-off floor
(100 eps times the problem's length scale) excluded: a scheme whose penetration is at the floor
everywhere is reported as such, not given an order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import FLOOR, ORDER, error_floor, fit_order, phase_medians
from impactbench.bench.report import markdown_table, new_figure, save_figure, shared_legend
from impactbench.bench.runner import Case, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import method_style
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import BouncingBall, ColumnOfBeads, ImpactingOscillator

NAME = "constraint_violation"
IMPACTS = "at impacts"
PERSISTENT = "in persistent contact"
STEPS = {"full": np.geomspace(1e-2, 1e-4, 10).tolist(), "quick": [1e-2, 3e-3, 1e-3]}
PHASES = {"full": 3, "quick": 1}
SCHEMES = {
    "full": (
        Grid(PaoliSchatzman),
        Grid(MoreauJean, {"theta": [0.5]}),
        Grid(CatchingUp),
        Grid(NonsmoothGeneralizedAlpha),
        Grid(D1MinusLinear),
        Grid(MoreauJeanProjection),
    ),
    "quick": (Grid(PaoliSchatzman), Grid(MoreauJean, {"theta": [0.5]})),
}
#: Horizon of the ball that rests after its accumulation point t_inf = sqrt(2 q0 / g) (1 + e) /
#: (1 - e) (4.06 s for e = 0.8 from q0 = 1): the late penetration is measured over [T/2, T].
RESTING_BALL_END = 9.0
#: The beads of the resting column and their radius (the stack q_i = (2 i - 1) r).
BEADS, RADIUS = 4, 0.1
#: Length scale of each case (the round-off floor is 100 eps times it).
SCALE = {"ball": 1.0, "oscillator": 1.0, "resting ball": 1.0, "resting column": 2 * BEADS * RADIUS}
KIND = {
    "ball": IMPACTS,
    "oscillator": IMPACTS,
    "resting ball": PERSISTENT,
    "resting column": PERSISTENT,
}


def resting_column() -> ColumnOfBeads:
    """``BEADS`` beads stacked at rest on the floor, q_i = (2 i - 1) r: every contact closed."""
    stack = [(2 * i - 1) * RADIUS for i in range(1, BEADS + 1)]
    return ColumnOfBeads(n_beads=BEADS, radius=RADIUS, q0=stack)


def cases() -> list[tuple[Case, str]]:
    """The four cases with the metric of each."""
    return [
        (Case(BouncingBall, 3.0, {"restitution": 0.8}, "ball"), "max_penetration"),
        (Case(ImpactingOscillator, 10.0, {}, "oscillator"), "max_penetration"),
        (
            Case(BouncingBall, RESTING_BALL_END, {"restitution": 0.8}, "resting ball"),
            "late_penetration",
        ),
        (Case(resting_column, 10.0, {}, "resting column"), "late_penetration"),
    ]


def runs(quick: bool) -> list[Run]:
    """Every scheme on every case, by h with phase copies."""
    grid = "quick" if quick else "full"
    result = []
    for case, metric in cases():
        result += expand(
            [case],
            list(SCHEMES[grid]),
            steps=STEPS[grid],
            phases=PHASES[grid],
            metrics=(metric,),
        )
    return result


def penetration(table: pd.DataFrame) -> pd.Series:
    """The penetration of each run: max_penetration at impacts, late_penetration at rest."""
    kinds = table["problem"].map(KIND)
    return pd.Series(
        np.where(kinds == IMPACTS, table.get("max_penetration"), table.get("late_penetration")),
        index=table.index,
        dtype=float,
    )


def fits(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, scheme): the fitted order in h of the median penetration."""
    table = table.assign(penetration=penetration(table))
    medians = phase_medians(table, ["penetration"])
    rows = []
    for (problem, method), group in medians.groupby(["problem", "method"], sort=False):
        group = group.sort_values("h")
        floor = error_floor(SCALE[problem])
        fit = fit_order(group["h"], group["penetration"], floor=floor)
        text = fit.text()
        if (group["penetration"] <= floor).all():  # zero included: on K to round-off
            text = f"on K to round-off at every step (all <= {floor:.2g})"
        rows.append(
            {
                "where": KIND[problem],
                "case": problem,
                "method": method,
                "order in h [95 %]": text,
                "penetration at the finest h [m]": group["penetration"].iloc[0],
                "finest h [s]": group["h"].iloc[0],
                "status": FLOOR if (group["penetration"] <= floor).all() else fit.status,
                "order": fit.order,
            }
        )
    return pd.DataFrame(rows)


def _figure(table: pd.DataFrame, folder: Path) -> str:
    table = table.assign(penetration=penetration(table))
    medians = phase_medians(table, ["penetration"])
    figure, axes = new_figure(len(SCALE))
    for ax, problem in zip(axes, SCALE, strict=True):
        for method, group in medians[medians["problem"] == problem].groupby("method", sort=True):
            group = group[group["penetration"] > 0].sort_values("h")
            ax.plot(
                group["h"],
                group["penetration"],
                label=str(method),
                **method_style(str(method)),
            )
        floor = error_floor(SCALE[problem])
        ax.axhline(floor, color="0.5", lw=0.8, ls=":", label="round-off floor")
        steps = medians.loc[medians["problem"] == problem, "h"]
        if not steps.empty:  # a panel whose every penetration is 0 keeps the steps' range
            ax.set_xlim(0.8 * steps.min(), 1.25 * steps.max())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{problem} ({KIND[problem]})", fontsize="small")
        ax.set_xlabel(r"step $h$ [s]")
        ax.set_ylabel("penetration [m]")
        ax.grid(True, which="major", alpha=0.3)
    shared_legend(figure, axes, columns=3)
    name = "penetration.png"
    save_figure(figure, folder / name)
    return name


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """The table of fitted orders and the penetration against h."""
    fitted = fits(table)
    if fitted.empty:
        return StudyReport([Section("Penetration", "No finished runs.\n")], [])
    findings = []
    for where, group in fitted.groupby("where", sort=False):
        ordered = group[group["status"] == ORDER]
        floor = group[group["status"] == FLOOR]
        parts = [f"{row.method} on {row.case} {row.order:.2f}" for row in ordered.itertuples()]
        text = f"Penetration {where}: order in h " + ("; ".join(parts) if parts else "none fitted")
        if not floor.empty:
            names = sorted({f"{row.method} ({row.case})" for row in floor.itertuples()})
            text += "; at the round-off floor at every step: " + ", ".join(names)
        findings.append(text + ".")
    shown = fitted.drop(columns=["status", "order"])
    body = (
        "The largest penetration (median over the phase copies of each step) and its fitted "
        "order in h, per case and scheme (module docstring).\n\n"
        + markdown_table(shown)
        + f"\n![penetration against h]({_figure(table, folder)})\n"
    )
    return StudyReport(
        [Section("Penetration at impacts and in persistent contact", body)], findings
    )


STUDY = Study(
    name=NAME,
    title="Constraint violation: penetration at impacts and in persistent contact",
    description=(
        "The largest penetration of every time-stepping scheme at isolated impacts (the ball "
        "before its accumulation point, the impacting oscillator) and in persistent contact "
        "(a ball and a column of beads at rest), with its fitted order in h "
        "(module `studies/constraint_violation.py`)."
    ),
    runs=runs,
    report=report,
)
