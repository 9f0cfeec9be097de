"""Work-precision: error against cost for both families, one chart per problem.

Time-stepping methods are swept by their step h, the event-driven method by its relative
tolerance; the cost is the wall time (min over repeats after a warm-up; the runs execute one at
a time so that they do not compete for the machine) and the number of force evaluations, which
does not depend on the machine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.methods import METHODS
from impactbench.report import format_number, markdown_table, new_figure, plot_methods, save_figure
from impactbench.runner import Grid, Run, expand
from impactbench.study import Section, Study, StudyReport

from ._exact import exact_cases

METRIC = "max_position_error"
STEPS = {"full": np.geomspace(1e-4, 1e-2, 9), "quick": np.geomspace(1e-3, 1e-2, 4)}
TOLERANCES = {"full": [10.0**-k for k in range(3, 12)], "quick": [1e-4, 1e-6, 1e-8]}
REPEATS = {"full": 3, "quick": 1}
#: Error levels of the "cheapest run" table.
TARGETS = (1e-2, 1e-4, 1e-6, 1e-8)
COSTS = {"wall_time": "wall time (s)", "force_evaluations": "force evaluations"}
UNITS = {"wall_time": "s", "force_evaluations": "evaluations"}


def runs(quick: bool) -> list[Run]:
    """Every method of ``METHODS``: time-steppers by h, EventDriven by rtol."""
    grid = "quick" if quick else "full"
    cases = exact_cases(quick)
    options = {"metrics": [METRIC], "repeats": REPEATS[grid]}
    steppers = [Grid(method) for method in METHODS.values() if method.requires_step]
    result = expand(cases, steppers, steps=STEPS[grid].tolist(), **options)
    if "EventDriven" in METHODS:
        adaptive = Grid(METHODS["EventDriven"], {"rtol": TOLERANCES[grid]}, tolerance="rtol")
        result += expand(cases, [adaptive], **options)
    return result


def cheapest(table: pd.DataFrame, cost: str) -> pd.DataFrame:
    """Per problem and error target: the cheapest run whose error is at most the target."""
    rows = []
    done = table[(table["status"] != "failed") & table[METRIC].notna()]
    for problem, group in done.groupby("problem", sort=False):
        row = {"problem": problem}
        for target in TARGETS:
            reached = group[group[METRIC] <= target]
            cell = "-"
            if not reached.empty:
                best = reached.loc[reached[cost].idxmin()]
                axis = "h" if best["family"] == "time-stepping" else "rtol"
                value = best["h"] if axis == "h" else best["tolerance"]
                cell = (
                    f"{best['method']} ({axis}={format_number(value, 2)}, "
                    f"{format_number(float(best[cost]), 2)} {UNITS[cost]})"
                )
            row[f"error <= {target:g}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def _figures(table: pd.DataFrame, folder: Path) -> list[str]:
    links = []
    done = table[table["status"] != "failed"]
    done = done.assign(resolution=done["h"].fillna(done["tolerance"]))
    for problem, group in done.groupby("problem", sort=False):
        figure, axes = new_figure(len(COSTS))
        for ax, (cost, label) in zip(axes, COSTS.items(), strict=True):
            plot_methods(ax, group, METRIC, cost, order="resolution")
            ax.set_xlabel("max position error")
            ax.set_ylabel(label)
            ax.legend(fontsize=7)
        figure.suptitle(f"Work-precision on {problem}")
        name = f"work_precision_{problem}.png"
        save_figure(figure, folder / name)
        links.append(f"![Work-precision on {problem}]({name})\n")
    return links or ["None (no run finished).\n"]


def _findings(fastest: pd.DataFrame) -> list[str]:
    findings = []
    for row in fastest.to_dict("records"):
        reached = {k: v for k, v in row.items() if k != "problem" and v != "-"}
        if not reached:
            findings.append(f"{row['problem']}: no run reached error {TARGETS[0]:g}.")
            continue
        loosest, tightest = next(iter(reached)), list(reached)[-1]
        text = f"{row['problem']}: fastest to {loosest}: {reached[loosest]}"
        if tightest != loosest:
            text += f"; to {tightest}: {reached[tightest]}"
        findings.append(text + ".")
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Cheapest-run tables (by wall time and by force evaluations) and the charts."""
    by_time = cheapest(table, "wall_time")
    by_force = cheapest(table, "force_evaluations")
    sections = [
        Section(
            "Fastest run per error target",
            "Among the runs with max position error at most the target, the one with the "
            "least wall time (its step or tolerance, and the time).\n\n" + markdown_table(by_time),
        ),
        Section(
            "Fewest force evaluations per error target",
            "As above with the number of force evaluations as the cost.\n\n"
            + markdown_table(by_force),
        ),
        Section("Figures", "\n".join(_figures(table, folder))),
    ]
    return StudyReport(sections, _findings(by_time))


STUDY = Study(
    name="work_precision",
    title="Work-precision: error against cost",
    description=(
        "Max position error against wall time and against force evaluations (machine "
        "independent) on the problems with exact solutions: time-stepping methods by step h, "
        "the event-driven method by relative tolerance, on one chart per problem. Wall time is "
        "the minimum over repeats after a warm-up run; the runs execute one at a time."
    ),
    runs=runs,
    report=report,
    max_jobs=1,
)
