"""Impacting elastic bar: error against the exact solution as the mesh is refined at fixed CFL.

:class:`impactbench.problems.ImpactingBar` (P1 elements, lumped mass, L = c = v0 = 1, gap 0.1,
e = 0): the bar flies onto the wall, stays in contact for 2L/c = 2 and leaves as a rigid body
at -v0. PaoliSchatzman and MoreauJean run to t = 2.6 on meshes of N elements with the step
h = CFL h_e / c (CFL = 0.5 of the explicit schemes' bound ``stable_step``), so h and the mesh
are refined together. Errors: the largest nodal displacement error over the error grid (the
schemes' piecewise-linear interpolant at the uniform times and the samples of
:func:`impactbench.analysis.metrics.error_nodes`) and the displacement error at T, against the
d'Alembert solution evaluated at the nodes. The order in
h_e is fitted over the meshes with its 95 % interval
(:func:`impactbench.analysis.fitting.fit_order`; full grid: 10 meshes from 10 to 320 elements,
1.5 decades). Two schemes represent the families of time-steppers here, PaoliSchatzman
(position level) and MoreauJean (velocity level); the other schemes are not run by this study.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import ORDER, fit_order
from impactbench.analysis.metrics import error_floor
from impactbench.analysis.reference import Reference
from impactbench.bench.report import (
    format_number,
    markdown_table,
    new_figure,
    plot_methods,
    save_figure,
    shared_legend,
)
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import METHODS
from impactbench.problems import ImpactingBar

CFL = 0.5
T_END = 2.6  # contact on [0.1, 2.1], then the rigid rebound
METRICS = ("max_position_error", "position_error_at_end")
#: Numbers of elements: 10 geometric meshes over 1.5 decades (quick: three).
MESHES = {
    "full": tuple(int(n) for n in np.unique(np.round(np.geomspace(10, 320, 10)))),
    "quick": (10, 20, 40),
}
#: The methods run (see the module docstring for why not every time-stepper).
METHOD_NAMES = ("PaoliSchatzman", "MoreauJean")


def runs(quick: bool) -> list[Run]:
    """PaoliSchatzman and MoreauJean on every mesh at CFL 0.5."""
    grid = "quick" if quick else "full"
    result = []
    for name in METHOD_NAMES:
        method = METHODS[name]
        for n in MESHES[grid]:
            result.append(
                Run(
                    problem=ImpactingBar,
                    method=method,
                    t_end=T_END,
                    h=CFL * ImpactingBar(n).stable_step,
                    problem_kwargs={"n_elements": n},
                    metrics=METRICS,
                )
            )
    return result


def _floor(n_elements: int, metric: str) -> float:
    problem = ImpactingBar(n_elements)
    return error_floor(metric, problem, Reference.exact(problem, T_END), T_END)


def orders(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and metric: meshes, the error on the finest and the order in h_e [95 %]."""
    done = table[table["status"] != FAILED]
    rows = []
    for method, group in done.groupby("method", sort=False):
        group = group.sort_values("problem.n_elements")
        n = group["problem.n_elements"].to_numpy(dtype=int)
        for metric in METRICS:
            floor = max(_floor(int(k), metric) for k in n)
            fit = fit_order(1.0 / n, group[metric].to_numpy(dtype=float), floor=floor)
            rows.append(
                {
                    "method": method,
                    "error": metric,
                    "meshes": len(n),
                    "N": f"{n.min()} to {n.max()}",
                    "error on the finest mesh": float(group[metric].iloc[-1]),
                    "order in h_e [95 %]": fit.text("h_e"),
                    "order": fit.order if fit.status == ORDER else np.nan,
                }
            )
    columns = ["method", "error", "meshes", "N", "error on the finest mesh"]
    return pd.DataFrame(rows, columns=[*columns, "order in h_e [95 %]", "order"])


def _figure(table: pd.DataFrame, folder: Path) -> str:
    done = table[table["status"] != FAILED]
    done = done.assign(element_size=1.0 / done["problem.n_elements"])
    figure, axes = new_figure(len(METRICS), width=3.6, height=3.2)
    for ax, metric in zip(axes, METRICS, strict=True):
        plot_methods(ax, done, "element_size", metric)
        ax.set_xlabel("element size $h_e$ [m] ($h = 0.5 h_e / c$)")
        ax.set_ylabel(metric.replace("_", " ") + " [m]")
    shared_legend(figure, axes)
    save_figure(figure, folder / "bar_mesh_refinement.png")
    return "![Impacting bar: error against the mesh](bar_mesh_refinement.png)\n"


#: Units of the tables' columns: the bar's displacements in m, N the number of elements.
UNITS = {
    "error on the finest mesh": "m",
    "max_position_error": "m",
    "position_error_at_end": "m",
    "N": "-",
}


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Errors per mesh, fitted orders, one figure, findings."""
    done = table[table["status"] != FAILED]
    if done.empty:
        return StudyReport([Section("Errors", "None (no run finished).\n")], [])
    fitted = orders(table)
    errors = done[["method", "problem.n_elements", "h", *METRICS]].rename(
        columns={"problem.n_elements": "N"}
    )
    sections = [
        Section(
            "Orders in the mesh",
            "Least-squares slope of log(error) on log(h_e) over the meshes, 95 % t-interval; "
            "errors below the round-off floor are not fitted.\n\n"
            + markdown_table(fitted.drop(columns="order"), units=UNITS),
        ),
        Section("Errors per mesh", markdown_table(errors, 4, units=UNITS)),
        Section("Figure", _figure(table, Path(folder))),
    ]
    findings = []
    ordered = fitted[fitted["order"].notna() & (fitted["error"] == "max_position_error")]
    if not ordered.empty:
        low, high = ordered.loc[ordered["order"].idxmin()], ordered.loc[ordered["order"].idxmax()]
        findings.append(
            "Largest displacement error at fixed CFL 0.5, order in h_e from "
            f"{low['order in h_e [95 %]']} ({low['method']}) to "
            f"{high['order in h_e [95 %]']} ({high['method']}); finest-mesh errors "
            f"{format_number(ordered['error on the finest mesh'].min())} to "
            f"{format_number(ordered['error on the finest mesh'].max())}: below order 1, the "
            "fronts (jumps in strain and velocity) are not resolved by the mesh."
        )
    elif not fitted.empty:
        finest = fitted[fitted["error"] == "max_position_error"]
        findings.append(
            "Largest displacement error at fixed CFL 0.5 on the finest mesh: "
            f"{format_number(finest['error on the finest mesh'].min())} to "
            f"{format_number(finest['error on the finest mesh'].max())}; no order fitted ("
            f"{finest['order in h_e [95 %]'].iloc[0]})."
        )
    return StudyReport(sections, findings)


STUDY = Study(
    name="impacting_bar",
    title="Impacting elastic bar: mesh refinement at fixed CFL",
    description=(
        "The impacting elastic bar (P1 elements, lumped mass, e = 0; Doyen, Ern and Piperno's "
        "benchmark) integrated by PaoliSchatzman and MoreauJean through its contact of "
        "duration 2L/c and the rebound, on meshes refined together with the step "
        "(h = 0.5 h_e / c): largest and final nodal displacement error against the exact "
        "d'Alembert solution and the fitted order in h_e with its 95 % interval (10 meshes "
        "over 1.5 decades)."
    ),
    runs=runs,
    report=report,
)
