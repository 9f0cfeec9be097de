"""Scaling: cost per step against the number of DOF n on the impacting bar (diagonal mass).

The bar (:class:`impactbench.problems.ImpactingBar`, lumped mass declared diagonal, one contact
node) runs the same physical window at every size, from t0 through the whole contact to the
release (t_end = t1 + 2L/c), at CFL number 0.5 or with a smaller step where that would give
fewer than ``MIN_STEPS`` steps (the cost of a step does not depend on h; the fixed cost of a run
is then negligible). The exponent p of cost ~ n^p is fitted by least squares on log-log with a
95 % Student interval (:func:`impactbench.analysis.cost_scaling.fit_cost_exponent`). Linear
algebra that uses the diagonal makes every step O(n): p = 1 is the target (issue 14: at most 15x
from n = 10^3 to 10^4). benchmarks/scaling.py measures every time-stepping method, the dense
declaration and the column of beads; this study keeps the two reference schemes so that it runs
in about a minute.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.cost_scaling import fit_cost_exponent
from impactbench.bench.report import markdown_table, method_style, new_figure, save_figure
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import METHODS
from impactbench.problems import ImpactingBar

#: DOF n of the bars (n - 1 elements), per grid. The quick sizes are bars of the quick grid of
#: the impacting_bar study (10 and 40 elements): the loops are compiled per DOF count, and a
#: quick run of every study then compiles these once.
SIZES = {"full": (300, 1000, 3000, 10000), "quick": (11, 41)}
STUDIED = ("MoreauJean", "PaoliSchatzman")
CFL = 0.5
MIN_STEPS = {"full": 20_000, "quick": 2_000}
REPEATS = {"full": 2, "quick": 1}
OUTPUT_EVERY = 1_000_000


def runs(quick: bool) -> list[Run]:
    """Each studied method on the bar at each size, over [t0, t1 + 2L/c]."""
    grid = "quick" if quick else "full"
    result = []
    for n in SIZES[grid]:
        bar = ImpactingBar(n - 1)
        t_end = bar.contact_time + bar.contact_duration
        h = min(CFL * bar.stable_step, (t_end - bar.t0) / MIN_STEPS[grid])
        for name in STUDIED:
            result.append(
                Run(
                    ImpactingBar,
                    METHODS[name],
                    t_end,
                    h,
                    problem_kwargs={"n_elements": n - 1},
                    output_every=OUTPUT_EVERY,
                    repeats=REPEATS[grid],
                )
            )
    return result


def costs(table: pd.DataFrame) -> pd.DataFrame:
    """ns per step of each finished run, with its n."""
    done = table[table["status"] != FAILED]
    frame = pd.DataFrame(
        {
            "method": done["method"],
            "n": done["problem.n_elements"].astype(int) + 1,
            "steps": done["steps"],
            "ns_per_step": 1e9 * done["wall_time"] / done["steps"],
        }
    )
    return frame.sort_values(["method", "n"]).reset_index(drop=True)


def exponents(frame: pd.DataFrame) -> pd.DataFrame:
    """Fitted p (cost ~ n^p) and its 95 % interval per method."""
    rows = []
    for method, part in frame.groupby("method", sort=False):
        if part["n"].nunique() < 2:
            continue
        fit = fit_cost_exponent(part["n"], part["ns_per_step"])
        ratio = np.nan
        by_n = dict(zip(part["n"], part["ns_per_step"], strict=True))
        if 1000 in by_n and 10000 in by_n:
            ratio = by_n[10000] / by_n[1000]
        rows.append(
            {
                "method": method,
                "p": fit.exponent,
                "p_low": fit.low,
                "p_high": fit.high,
                "sizes": fit.sizes,
                "cost(1e4) / cost(1e3)": ratio,
            }
        )
    return pd.DataFrame(rows)


def _figure(frame: pd.DataFrame, fits: pd.DataFrame, folder: Path) -> str:
    if frame.empty:
        return "None (no run finished).\n"
    figure, (ax,) = new_figure(1, width=6.0, height=4.0)
    for method, part in frame.groupby("method", sort=False):
        style = method_style(method)
        label = method
        fit = fits[fits["method"] == method]
        if not fit.empty:
            row = fit.iloc[0]
            label = f"{method}: p = {row.p:.2f} [{row.p_low:.2f}, {row.p_high:.2f}]"
        ax.loglog(
            part["n"], part["ns_per_step"], marker=style["marker"], color=style["color"],
            label=label,
        )  # fmt: skip
    n = np.array([frame["n"].min(), frame["n"].max()], dtype=float)
    start = frame.loc[frame["n"].idxmin(), "ns_per_step"]
    ax.loglog(n, start * n / n[0], color="0.6", linestyle=":", label="slope 1 (O(n))")
    ax.set_xlabel("degrees of freedom n")
    ax.set_ylabel("cost per step [ns]")
    ax.set_title("ImpactingBar, diagonal mass: cost per step against n")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save_figure(figure, folder / "scaling.png")
    return "![cost per step against n](scaling.png)\n"


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """The cost table, the fitted exponents and the log-log figure."""
    frame = costs(table)
    fits = exponents(frame)
    findings = [
        f"{row.method}: cost per step ~ n^{row.p:.2f} (95 % interval [{row.p_low:.2f}, "
        f"{row.p_high:.2f}], {row.sizes} sizes)"
        + (
            f"; n = 10^4 costs {row[-1]:.1f}x n = 10^3 per step (target <= 15x)."
            if np.isfinite(row[-1])
            else "."
        )
        for row in fits.itertuples(index=False)
    ]
    sections = [
        Section("Cost per step", markdown_table(frame)),
        Section("Fitted exponents", markdown_table(fits)),
        Section("Figure", _figure(frame, fits, folder)),
    ]
    return StudyReport(sections, findings)


STUDY = Study(
    name="scaling",
    title="Scaling: cost per step against the number of degrees of freedom",
    description=(
        "Nanoseconds per step of MoreauJean and PaoliSchatzman on the impacting bar (lumped, "
        "diagonal mass matrix, one contact node) from 300 to 10^4 DOF over the same physical "
        "window (flight, the whole contact, release), with the exponent p of cost ~ n^p fitted "
        "on log-log and its 95 % interval. Wall time is the minimum over repeats after a "
        "warm-up run; the runs execute one at a time."
    ),
    runs=runs,
    report=report,
    max_jobs=1,
)
