"""Convergence: errors and observed orders of every method against the exact solutions.

Every time-stepping method of ``METHODS`` on every problem with a closed form, over step sizes
spaced geometrically (ratio 1.35, quick grid 1.48: never a power of 2) over more than 1.5
decades, and the event-driven method over its relative tolerance; orders are least-squares
slopes with their residual (DESIGN.md section 7).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.methods import METHODS
from impactbench.metrics import observed_order
from impactbench.report import (
    format_number,
    markdown_table,
    new_figure,
    plot_methods,
    reference_slopes,
    save_figure,
)
from impactbench.results import write_table
from impactbench.runner import Grid, Run, expand
from impactbench.study import Section, Study, StudyReport

from ._exact import exact_cases

METRICS = (
    "max_position_error",
    "l1_velocity_error",
    "position_error_at_end",
    "impact_time_error",
    "max_penetration",
    "missed_impacts",
    "spurious_impacts",
    "max_energy_increase",
)
#: Metrics whose observed order is fitted (never the max norm of the velocity error).
FITTED = ("max_position_error", "l1_velocity_error", "position_error_at_end", "impact_time_error")

#: Parameters given explicitly (they appear in the method names), by method class name.
PARAMETERS = {"MoreauJean": {"theta": [0.5]}}

STEPS = {"full": np.geomspace(1e-4, 5e-3, 14), "quick": np.geomspace(3e-4, 1e-2, 10)}
TOLERANCES = {"full": [10.0**-k for k in range(3, 11)], "quick": [1e-4, 1e-6, 1e-8]}

ORDERS_FILE = "orders.csv"
ORDER_COLUMNS = ["problem", "method", "metric", "axis", "points", "decades", "order", "residual"]

#: Errors below this are round-off (e.g. a ball at rest at T): they say nothing about an order.
FIT_FLOOR = 1e-13

#: A sweep whose errors stay within this factor is reported as not converging in its parameter.
FLAT_RATIO = 2.0


def runs(quick: bool) -> list[Run]:
    """Time-steppers by step, EventDriven (when available) by rtol, on the exact problems."""
    grid = "quick" if quick else "full"
    cases = exact_cases(quick)
    steppers = [
        Grid(method, PARAMETERS.get(name, {}))
        for name, method in METHODS.items()
        if method.requires_step
    ]
    result = expand(cases, steppers, steps=STEPS[grid].tolist(), metrics=METRICS)
    if "EventDriven" in METHODS:
        adaptive = Grid(METHODS["EventDriven"], {"rtol": TOLERANCES[grid]}, tolerance="rtol")
        result += expand(cases, [adaptive], metrics=METRICS)
    return result


def _axis(family: str) -> str:
    return "h" if family == "time-stepping" else "tolerance"


def fit_orders(table: pd.DataFrame) -> pd.DataFrame:
    """Observed order and fit residual per problem, method and fitted metric (long form).

    The axis is h for time-stepping methods and the tolerance for adaptive ones; failed runs
    and errors below ``FIT_FLOOR`` are left out; fewer than 3 points give NaN.
    """
    rows = []
    done = table[table["status"] != "failed"]
    for (problem, method), group in done.groupby(["problem", "method"], sort=False):
        axis = _axis(group["family"].iloc[0])
        for metric in FITTED:
            data = group[(group[axis] > 0) & (group[metric] > FIT_FLOOR)]
            order = residual = np.nan
            if len(data) >= 3:
                order, residual = observed_order(data[axis].to_numpy(), data[metric].to_numpy())
            x = data[axis]
            rows.append(
                {
                    "problem": problem,
                    "method": method,
                    "metric": metric,
                    "axis": axis,
                    "points": len(data),
                    "decades": float(np.log10(x.max() / x.min())) if len(data) else np.nan,
                    "order": order,
                    "residual": residual,
                }
            )
    return pd.DataFrame(rows, columns=ORDER_COLUMNS)


def _orders_table(orders: pd.DataFrame) -> str:
    rows = []
    keys = ["problem", "method", "axis"]
    for (problem, method, axis), group in orders.groupby(keys, sort=False):
        fits = group.set_index("metric")
        row = {"problem": problem, "method": method, "axis": axis}
        row.update(points=group["points"].max(), decades=group["decades"].max())
        for metric in FITTED:
            order, residual = fits.at[metric, "order"], fits.at[metric, "residual"]
            row[metric] = f"{format_number(order)} ({format_number(residual, 2)})"
        rows.append(row)
    return markdown_table(pd.DataFrame(rows))


def _finest(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    done = table[table["status"] != "failed"]
    for _, group in done.groupby(["problem", "method"], sort=False):
        axis = _axis(group["family"].iloc[0])
        row = group.loc[group[axis].idxmin()]
        rows.append({"problem": row["problem"], "method": row["method"], "h or tol": row[axis]})
        rows[-1].update({metric: row[metric] for metric in METRICS})
    return pd.DataFrame(rows, columns=["problem", "method", "h or tol", *METRICS])


def _figures(table: pd.DataFrame, folder: Path) -> list[str]:
    links = []
    done = table[table["status"] != "failed"]
    for problem, group in done.groupby("problem", sort=False):
        steppers = group[group["family"] == "time-stepping"]
        adaptive = group[group["family"] != "time-stepping"]
        figure, axes = new_figure(3 if len(adaptive) else 2)
        for ax, metric in zip(axes, ("max_position_error", "l1_velocity_error"), strict=False):
            plot_methods(ax, steppers, "h", metric)
            reference_slopes(ax, steppers["h"], steppers[metric], (1, 2))
            ax.set_xlabel("step h")
            ax.set_ylabel(metric.replace("_", " "))
            ax.legend(fontsize=7)
        if len(adaptive):
            plot_methods(axes[2], adaptive, "tolerance", "max_position_error")
            reference_slopes(axes[2], adaptive["tolerance"], adaptive["max_position_error"], (1,))
            axes[2].set_xlabel("relative tolerance")
            axes[2].set_ylabel("max position error")
            axes[2].legend(fontsize=7)
        figure.suptitle(f"Convergence on {problem}")
        name = f"convergence_{problem}.png"
        save_figure(figure, folder / name)
        links.append(f"![Convergence on {problem}]({name})\n")
    return links or ["None (no run finished).\n"]


def _findings(table: pd.DataFrame, orders: pd.DataFrame, finest: pd.DataFrame) -> list[str]:
    findings = []
    position = orders[(orders["metric"] == "max_position_error") & orders["order"].notna()]
    for method, group in position.groupby("method", sort=False):
        axis = "step h" if group["axis"].iloc[0] == "h" else "tolerance"
        low, high = (round(group["order"].min(), 2) + 0.0, round(group["order"].max(), 2) + 0.0)
        worst = group.loc[group["order"].idxmin(), "problem"]
        spread = f"{low:.2f}" if len(group) == 1 else f"from {low:.2f} ({worst}) to {high:.2f}"
        findings.append(
            f"{method}: observed order of the max position error in the {axis} {spread} over "
            f"{len(group)} problem(s), fit residual at most {group['residual'].max():.2f} "
            "decades."
        )
    done = table[table["status"] != "failed"]
    for (problem, method), group in done.groupby(["problem", "method"], sort=False):
        errors = group["max_position_error"]
        if len(errors) >= 3 and errors.max() < FLAT_RATIO * errors.min():
            findings.append(
                f"{method} on {problem}: the max position error stays between "
                f"{errors.min():.3g} and {errors.max():.3g} over the whole sweep; it is not "
                "controlled by the swept parameter."
            )
    wrong = finest[(finest["missed_impacts"] > 0) | (finest["spurious_impacts"] > 0)]
    if wrong.empty and not finest.empty:
        findings.append("At its finest resolution no method missed or added an isolated impact.")
    for row in wrong.itertuples(index=False):
        findings.append(
            f"{row.method} on {row.problem} at its finest resolution: "
            f"{row.missed_impacts:.0f} missed and {row.spurious_impacts:.0f} spurious impacts."
        )
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Orders table (also written as ``orders.csv``), errors at the finest resolution, figures."""
    orders = fit_orders(table)
    write_table(orders, folder / ORDERS_FILE)
    finest = _finest(table)
    sections = [
        Section(
            "Observed orders",
            "Least-squares slope of log(error) against log(h) (time-stepping) or log(rtol) "
            "(event-driven), with the root-mean-square residual of the fit in decades in "
            f"parentheses; also in [{ORDERS_FILE}]({ORDERS_FILE}).\n\n" + _orders_table(orders),
        ),
        Section("Errors at the finest resolution", markdown_table(finest)),
        Section("Figures", "\n".join(_figures(table, folder))),
    ]
    return StudyReport(sections, _findings(table, orders, finest))


STUDY = Study(
    name="convergence",
    title="Convergence against exact solutions",
    description=(
        "Every time-stepping method on every problem with a closed-form solution (bouncing ball "
        "e = 0.8 through its accumulation point, impacting oscillator, forced impact oscillator "
        "on its stable periodic orbit, slanted wall with a non-diagonal mass matrix, e = 0.7 "
        "through its accumulation point) over a geometric grid of step sizes spanning more than "
        "1.5 decades; the event-driven method over its relative tolerance. Errors are measured "
        "on each run's own samples (every step) against the exact solution; the velocity error "
        "is integrated in time (L1), never taken in the max norm."
    ),
    runs=runs,
    report=report,
)
