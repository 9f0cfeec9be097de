"""Convergence: errors and observed orders of every method against the exact solutions.

Every time-stepping method of ``METHODS`` on every problem with a closed form, over nominal step
sizes spaced geometrically (ratio 1.35, quick grid 1.48: never a power of 2) over more than 1.5
decades, each run at ``PHASES`` perturbed copies h (1 + delta_j) of its nominal step (phase
averaging, :mod:`impactbench.analysis.fitting`), and the event-driven method over its relative
tolerance. Orders are fitted on the median error of each phase family, with their 95 %
t-intervals, after the floors (round-off, the reference's accuracy) are excluded; flat,
growing and unresolved sweeps are reported as such (docs/design.md section 7).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import (
    FIT_COLUMNS,
    ORDER,
    fit_order,
    fit_row,
    phase_medians,
)
from impactbench.analysis.metrics import ERROR_GRID_TEXT
from impactbench.bench.latex import Summary, summarise
from impactbench.bench.plugins import study_methods
from impactbench.bench.report import (
    format_number,
    markdown_table,
    method_style,
    new_figure,
    plot_fit,
    plot_medians,
    save_figure,
    shared_legend,
)
from impactbench.bench.results import write_table
from impactbench.bench.runner import FAILED, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import metric_unit
from impactbench.core.method import TIME_STEPPING

from ._exact import exact_cases, exact_floors

METRICS = (
    "max_position_error",
    "l1_velocity_error",
    "hausdorff_velocity_distance",
    "position_error_at_end",
    "impact_time_error",
    "max_penetration",
    "missed_impacts",
    "spurious_impacts",
    "max_energy_increase",
)
#: Metrics whose observed order is fitted (never the max norm of the velocity error).
FITTED = (
    "max_position_error",
    "l1_velocity_error",
    "hausdorff_velocity_distance",
    "position_error_at_end",
    "impact_time_error",
)
#: Short names of the fitted metrics in the report's tables.
LABELS = {
    "max_position_error": r"$\max_t |q - q_{\mathrm{ex}}|$",
    "l1_velocity_error": r"$\|v - v_{\mathrm{ex}}\|_{L^1}$",
    "hausdorff_velocity_distance": r"Hausdorff dist. of $v$ graphs",
    "position_error_at_end": r"$|q(T) - q_{\mathrm{ex}}(T)|$",
    "impact_time_error": r"impact time error [s]",
}
#: The fitted metrics drawn, one panel each (time-steppers), and the event-driven panel's.
PANELS = ("max_position_error", "l1_velocity_error", "hausdorff_velocity_distance")

#: Metrics reported at each nominal step and never fitted: computed on the nominal run of each
#: step only (NaN on its perturbed copies), which is all the report shows of them.
NOMINAL_ONLY = ("max_penetration", "max_energy_increase")

#: Parameters given explicitly (they appear in the method names), by method class name.
PARAMETERS = {"MoreauJean": {"theta": [0.5]}}

STEPS = {"full": np.geomspace(1e-4, 5e-3, 14), "quick": np.geomspace(3e-4, 1e-2, 10)}
#: Runs per nominal step: the step itself and perturbed copies (phase averaging).
PHASES = {"full": 5, "quick": 3}
TOLERANCES = {"full": [10.0**-k for k in range(3, 11)], "quick": [1e-4, 1e-6, 1e-8]}

ORDERS_FILE = "orders.csv"
ERRORS_FILE = "errors.csv"
#: Fits of the phase-averaged medians, and of the nominal steps alone (the single grid).
MEDIANS, SINGLE = "median", "single grid"
ORDER_COLUMNS = ["problem", "method", "metric", "axis", "errors", *FIT_COLUMNS]


def runs(quick: bool) -> list[Run]:
    """Time-steppers by step (phase families), EventDriven by rtol, on the exact problems."""
    methods = study_methods()
    grid = "quick" if quick else "full"
    cases = exact_cases(quick)
    steppers = [
        Grid(method, PARAMETERS.get(name, {}))
        for name, method in methods.items()
        if method.requires_step
    ]
    result = expand(
        cases, steppers, steps=STEPS[grid].tolist(), phases=PHASES[grid], metrics=METRICS
    )
    copies = tuple(name for name in METRICS if name not in NOMINAL_ONLY)
    result = [run if run.h == run.nominal_h else replace(run, metrics=copies) for run in result]
    if "EventDriven" in methods:
        adaptive = Grid(methods["EventDriven"], {"rtol": TOLERANCES[grid]}, tolerance="rtol")
        result += expand(cases, [adaptive], metrics=METRICS)
    return result


def _axis(family: str) -> str:
    return "h" if family == TIME_STEPPING else "tolerance"


def fit_orders(table: pd.DataFrame) -> pd.DataFrame:
    """The classified fit of every problem, method and fitted metric (long form).

    Axis: the nominal step h for time-stepping methods, the tolerance for adaptive ones. Rows
    with ``errors`` = "median" fit the medians of the phase families (the reported orders);
    rows with "single grid" fit the runs at the nominal steps alone (delta = 0), the fit a
    single grid gives, for comparison. Failed runs are left out.
    """
    limits = exact_floors(table, FITTED)
    rows = []
    medians = phase_medians(table, FITTED, keys=("family",))
    done = table[table["status"] != FAILED]
    single = done[(done["family"] != TIME_STEPPING) | (done["h"] == done["h_nominal"])]
    for errors, data in ((MEDIANS, medians), (SINGLE, single)):
        for (problem, method), group in data.groupby(["problem", "method"], sort=False):
            axis = _axis(group["family"].iloc[0])
            if errors == SINGLE and axis != "h":
                continue
            for metric in FITTED:
                fit = fit_order(
                    group[axis].to_numpy(),
                    group[metric].to_numpy(),
                    floor=limits[(problem, metric)],
                )
                rows.append(
                    {
                        "problem": problem,
                        "method": method,
                        "metric": metric,
                        "axis": axis,
                        "errors": errors,
                        **fit_row(fit, "h" if axis == "h" else "rtol"),
                    }
                )
    return pd.DataFrame(rows, columns=ORDER_COLUMNS)


def _orders_table(orders: pd.DataFrame, errors: str, metrics: tuple[str, ...]) -> str:
    rows = []
    selected = orders[orders["errors"] == errors]
    for (problem, method, axis), group in selected.groupby(
        ["problem", "method", "axis"], sort=False
    ):
        fits = group.set_index("metric")
        row = {"problem": problem, "method": method, "axis": axis}
        row.update({LABELS[metric]: fits.at[metric, "text"] for metric in metrics})
        rows.append(row)
    return markdown_table(pd.DataFrame(rows))


def _fits_detail(orders: pd.DataFrame) -> str:
    """Points, decades, residual and floor of every fitted order (medians)."""
    fitted = orders[(orders["errors"] == MEDIANS) & (orders["status"] == ORDER)]
    frame = pd.DataFrame(
        {
            "problem": fitted["problem"],
            "method": fitted["method"],
            "metric": fitted["metric"].map(LABELS),
            "order [95 %]": fitted["text"],
            "points": fitted["points"],
            "at floor": fitted["excluded"],
            "decades": fitted["decades"],
            "residual": fitted["residual"],
            "floor": fitted["floor"],
        }
    )
    units = {"residual": "decades", "floor": "units of the metric"}
    return markdown_table(frame, units=units, latex=_fits_summary(frame))


def _fits_summary(frame: pd.DataFrame) -> Summary:
    """The LaTeX copy of the fits' details: per problem and method, over its fitted orders
    (one per metric), the median and range of the points used and excluded, of the decades
    and of the residual (the floors, in each metric's unit, stay in the report)."""
    values = {"points": "points [-]", "at floor": "at floor [-]", "decades": "decades [-]",
              "residual": "residual [decades]"}  # fmt: skip
    return summarise(
        frame.rename(columns=values), ["problem"], "method", list(values.values()),
        counted="fitted orders",
    )  # fmt: skip


#: Units of the columns of :func:`_finest` that are the same on every problem (the step h in
#: s, the tolerance dimensionless; penetrations are distances; energies in J).
FINEST_UNITS = {"h or tol": "s or -", "penetration": "m", "energy increase": "J"}


def _finest_units(finest: pd.DataFrame) -> dict[str, str]:
    """:data:`FINEST_UNITS` and the unit of each error column
    (:func:`impactbench.bench.style.metric_unit`; the problems' units joined by ", " where they
    differ)."""
    problems = list(dict.fromkeys(finest["problem"])) if "problem" in finest else []
    units = dict(FINEST_UNITS)
    for metric in FITTED:
        found = dict.fromkeys(metric_unit(metric, str(problem)) for problem in problems)
        if found:
            units[LABELS[metric]] = ", ".join(found)
    return units


def _finest(medians: pd.DataFrame) -> pd.DataFrame:
    """Per problem and method, the phase-averaged errors at the finest resolution."""
    rows = []
    for _, group in medians.groupby(["problem", "method"], sort=False):
        axis = _axis(group["family"].iloc[0])
        row = group.loc[group[axis].idxmin()]
        entry = {"problem": row["problem"], "method": row["method"], "h or tol": row[axis]}
        entry["runs"] = row["runs"]
        for metric in (*FITTED, "max_penetration"):
            low, high = row[f"{metric}_min"], row[f"{metric}_max"]
            spread = "" if low == high else f" [{format_number(low)}, {format_number(high)}]"
            entry[LABELS.get(metric, "penetration")] = format_number(row[metric]) + spread
        entry["missed"] = row["missed_impacts_max"]
        entry["spurious"] = row["spurious_impacts_max"]
        entry["energy increase"] = row["max_energy_increase_max"]
        rows.append(entry)
    return pd.DataFrame(rows)


def _figures(medians: pd.DataFrame, limits: dict, folder: Path) -> list[str]:
    links = []
    for problem, group in medians.groupby("problem", sort=False):
        steppers = group[group["family"] == TIME_STEPPING]
        adaptive = group[group["family"] != TIME_STEPPING]
        figure, axes = new_figure(len(PANELS) + (1 if len(adaptive) else 0))
        panels = [(ax, steppers, "h", metric) for ax, metric in zip(axes, PANELS, strict=False)]
        if len(adaptive):
            panels.append((axes[-1], adaptive, "tolerance", "max_position_error"))
        for ax, data, axis, metric in panels:
            plot_medians(ax, data, axis, metric)
            for method, rows in data.groupby("method", sort=True):
                kept = rows[rows[metric] >= limits[(problem, metric)]]
                fit = fit_order(
                    rows[axis].to_numpy(), rows[metric].to_numpy(), floor=limits[(problem, metric)]
                )
                if fit.status == ORDER:
                    color = method_style(str(method))["color"]
                    plot_fit(ax, fit, kept[axis].to_numpy(), color, label=None)
            ax.set_xlabel("nominal step $h$ [s]" if axis == "h" else "relative tolerance [-]")
            ax.set_ylabel(f"{LABELS[metric]} [{metric_unit(metric, str(problem))}]")
        shared_legend(figure, axes)
        figure.suptitle(
            f"Convergence on {problem}: medians over the phase copies (bars: smallest to "
            "largest), fitted orders dashed with 95 % bands (values in the tables)"
        )
        name = f"convergence_{problem}.png"
        save_figure(figure, folder / name)
        links.append(f"![Convergence on {problem}]({name})\n")
    return links or ["None (no run finished).\n"]


def _order_list(group: pd.DataFrame) -> str:
    return "; ".join(f"{row.problem} {row.text}" for row in group.itertuples(index=False))


def _findings(orders: pd.DataFrame, finest: pd.DataFrame) -> list[str]:
    findings = []
    medians = orders[orders["errors"] == MEDIANS]
    for method, group in medians.groupby("method", sort=False):
        axis = "nominal step h" if group["axis"].iloc[0] == "h" else "tolerance"
        parts = []
        for metric in ("max_position_error", "hausdorff_velocity_distance", "l1_velocity_error"):
            fits = group[group["metric"] == metric]
            parts.append(f"{LABELS[metric]}: {_order_list(fits)}")
        findings.append(
            f"{method}, observed order in the {axis} [95 % interval] of the phase-averaged "
            f"errors -- {' -- '.join(parts)}."
        )
    if not finest.empty:
        wrong = finest[(finest["missed"] > 0) | (finest["spurious"] > 0)]
        if wrong.empty:
            findings.append(
                "At its finest resolution no run of any method missed or added an isolated impact."
            )
        for row in wrong.itertuples(index=False):
            findings.append(
                f"{row.method} on {row.problem} at its finest resolution: up to "
                f"{row.missed:.0f} missed and {row.spurious:.0f} spurious impacts."
            )
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Orders (``orders.csv``), phase-averaged errors (``errors.csv``), finest errors, figures."""
    orders = fit_orders(table)
    write_table(orders, folder / ORDERS_FILE)
    medians = phase_medians(
        table,
        (*FITTED, "max_penetration", "missed_impacts", "spurious_impacts", "max_energy_increase"),
        keys=("family",),
    )
    write_table(medians, folder / ERRORS_FILE)
    finest = _finest(medians)
    limits = exact_floors(table, FITTED)
    rules = (
        "Each cell: the least-squares slope of log(error) against log(h) (time-stepping: "
        "nominal steps, each error the median over the phase copies of the step) or log(rtol) "
        "(event-driven) with its 95 % confidence interval in brackets (the t-interval of the "
        "regression slope). Errors below the floor (100 eps times the problem's scale; the "
        "references here are closed forms) are excluded; a sweep whose errors stay within a "
        "factor 2, or whose slope interval contains 0, is *flat* (not controlled by the "
        "parameter; its median level given); one whose error grows as the parameter "
        "decreases has no order; fewer than 6 points or 1 decade left is *not resolved*. "
        "Hausdorff v: distance between the graphs of the computed and the exact velocity, time "
        "in units of the horizon T - t0 and velocity in units of max |v_exact|. All fits, with "
        f"points, decades, residuals and floors, are in [{ORDERS_FILE}]({ORDERS_FILE}); the "
        f"medians and spreads of every phase family in [{ERRORS_FILE}]({ERRORS_FILE}), every "
        "run in [results.csv.gz](results.csv.gz)."
    )
    sections = [
        Section("Observed orders", rules + "\n\n" + _orders_table(orders, MEDIANS, FITTED)),
        Section(
            "Fitted orders in detail",
            "Points used, points excluded at the floor, decades spanned, root-mean-square "
            "residual of the fit (decades) and the floor, for every fitted order.\n\n"
            + _fits_detail(orders),
        ),
        Section(
            "Single grid against phase-averaged",
            "The same fits on the runs at the nominal steps alone (delta = 0): what a single "
            "grid gives, where the grid phase of the impacts is left to chance.\n\n"
            + _orders_table(orders, SINGLE, FITTED),
        ),
        Section(
            "Errors at the finest resolution",
            "Median over the phase copies [smallest, largest]; missed and spurious impacts: "
            "the largest over the copies; penetration and the largest energy increase between "
            "consecutive samples: of the run at the nominal step (computed on it only).\n\n"
            + markdown_table(finest, units=_finest_units(finest)),
        ),
        Section("Figures", "\n".join(_figures(medians, limits, folder))),
    ]
    return StudyReport(sections, _findings(orders, finest))


STUDY = Study(
    name="convergence",
    title="Convergence against exact solutions",
    description=(
        "Every time-stepping method on every problem with a closed-form solution (bouncing ball "
        "e = 0.8 through its accumulation point, impacting oscillator, forced impact oscillator "
        "on its stable periodic orbit, slanted wall with a non-diagonal mass matrix, e = 0.7 "
        "through its accumulation point) over a geometric grid of nominal step sizes spanning "
        "more than 1.5 decades, each run at the nominal step and at perturbed copies h (1 + "
        "delta_j), |delta_j| <= 0.1 (5 per step, 3 in the quick grid: the error at one h "
        "depends on where the impacts fall on the grid); the event-driven method over its "
        "relative tolerance, against the exact solution. "
        + ERROR_GRID_TEXT
        + " The velocity error is integrated in time (L1) and measured as the Hausdorff "
        "distance between the velocity graphs, never taken in the max norm."
    ),
    runs=runs,
    report=report,
)
