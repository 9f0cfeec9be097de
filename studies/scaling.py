"""Scaling: cost per step and memory against the number of DOF n.

Three families of runs, one row each (figures and findings from the stored table only):

* The impacting bar (:class:`impactbench.problems.ImpactingBar`, lumped mass declared diagonal,
  one contact node), every time-stepping method, n = 321 ... 10^4 DOF over the same physical
  window, from t0 through the whole contact to the release (t_end = t1 + 2L/c), at CFL number
  0.5 or with a smaller step where that would give fewer than ``MIN_STEPS`` steps (the cost of a
  step does not depend on h; the fixed cost of a run is then negligible). Linear algebra that
  uses the diagonal makes every step O(n): p = 1 is the target (issue 14: at most 15x from n =
  10^3 to 10^4).
* The settled column of beads (:class:`impactbench.problems.ColumnOfBeads`, n beads and n
  contacts, started at rest on the floor, ``resting_column``), every time-stepping method: every
  contact closed at every step once round-off has settled it (within a small part of the
  ``COLUMN_STEPS`` steps timed), the case where the LCP of n active contacts is solved at every
  step (warm-started, banded: one factorisation per step once settled).
* The compiled event-driven engine (``EventDriven()``, DOP853, impactbench/core/events/)
  where it applies and where it does not. On the settled column (3 and 10 beads) it finds the
  persistent contact at t0 and crosses the window in a few steps of the contact dynamics (zero
  acceleration), where a time-stepping scheme takes every step: its cost per *run* is the
  comparison (``ms_per_run``). On the bar (11 to 41 DOF) it does not apply: it forms M as a
  dense matrix and factors it at every right-hand side evaluation (O(n^3)), and its explicit
  steps follow the bar's highest frequency, so their number grows like n.

The exponent p of cost ~ n^p is fitted by least squares on log-log with a 95 % Student interval
(:func:`impactbench.analysis.cost_scaling.fit_cost_exponent`). Memory: the ``work_bytes``
metric (the bytes of a time-stepping loop's work buffers; the output arrays, which grow with
the horizon and the impact log's capacity, are left out) per DOF; the event-driven engine
reports none. With two sizes a fit has no interval (NaN); ``p_last`` is the local exponent
between the two largest sizes, where a term of higher order shows first. A method whose runs
take fewer than ``MIN_FIT_STEPS`` steps (the engine on the settled column: a few steps per run)
is not fitted nor drawn: its wall time per step is the run's fixed cost, not a cost per step;
its cost per run is in the table and the findings.
benchmarks/scaling.py also measures the dense declaration and the falling column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.cost_scaling import fit_cost_exponent
from impactbench.analysis.timing import (
    FASTER,
    LONG_RUN_REPEATS,
    SLOWER,
    Timing,
    compare,
    protocol_text,
    row_timing,
    with_spreads,
)
from impactbench.bench.latex import thin
from impactbench.bench.report import (
    markdown_table,
    method_style,
    new_figure,
    save_figure,
    shared_legend,
)
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.methods import METHODS
from impactbench.problems import ColumnOfBeads, ImpactingBar

#: The registered time-stepping methods.
TIME_STEPPING = tuple(name for name, method in METHODS.items() if method.requires_step)
#: DOF n of the bars (n - 1 elements), per grid: bars of the impacting_bar study's meshes (321:
#: its finest full mesh; 11 and 41: its quick meshes): the loops are compiled per DOF count,
#: and the main job (or a quick run of every study) then compiles these once.
SIZES = {"full": (321, 1000, 3000, 10000), "quick": (11, 41)}
#: The methods run on the bar per grid: every time-stepping method (quick: the two reference
#: schemes at both sizes, the others at n = 11 only, whose loops the contract tests compile).
BAR_METHODS = {
    "full": {name: SIZES["full"] for name in TIME_STEPPING},
    "quick": {
        name: SIZES["quick"] if name in ("MoreauJean", "PaoliSchatzman") else (11,)
        for name in TIME_STEPPING
    },
}
#: Beads of the settled column per method and grid: every time-stepping method (quick: the
#: two reference schemes at 4 and 10 beads, the others at 4, whose loops the suite compiles).
COLUMN_SIZES = {"full": (10, 30, 100, 300), "quick": (4, 10)}
COLUMN_METHODS = {
    "full": {name: COLUMN_SIZES["full"] for name in TIME_STEPPING},
    "quick": {
        name: COLUMN_SIZES["quick"] if name in ("MoreauJean", "PaoliSchatzman") else (4,)
        for name in TIME_STEPPING
    },
}
#: DOF n of the bars run by the compiled event-driven engine (one engine per size).
#: Not in the quick grid: each size compiles an engine (~45 s of CPU); the report's handling of
#: its rows is tested on a table made by hand (tests/test_scaling_study.py).
EVENT_DRIVEN_SIZES = {"full": (11, 21, 41), "quick": ()}
#: Beads of the settled column run by the compiled event-driven engine (quick: the 3-bead
#: engine that tests/test_event_driven.py compiles).
EVENT_DRIVEN_COLUMN_SIZES = {"full": (3, 10), "quick": (3,)}
CFL = 0.5
MIN_STEPS = {"full": 20_000, "quick": 2_000}
COLUMN_STEP = 1e-4
COLUMN_STEPS = {"full": 20_000, "quick": 2_000}
#: Fewest steps of every run of a (problem, method) for its cost per step to be fitted or drawn
#: (below, a run's fixed cost, e.g. the engine's set-up, is not negligible).
MIN_FIT_STEPS = 20
REPEATS = LONG_RUN_REPEATS
OUTPUT_EVERY = 1_000_000
BAR = "ImpactingBar"
COLUMN = "ColumnOfBeads (settled)"
EVENT_DRIVEN = "EventDriven"


def resting_column(n_beads: int) -> ColumnOfBeads:
    """n beads of radius 0.1 stacked on the floor at rest, q_i = (2 i - 1) r, v = 0."""
    radius = 0.1
    return ColumnOfBeads(n_beads, radius=radius, q0=radius * (2.0 * np.arange(n_beads) + 1.0))


def _bar_window(bar: ImpactingBar) -> float:
    """t1 + 2L/c: the flight, the whole contact and the release."""
    return bar.contact_time + bar.contact_duration


def runs(quick: bool) -> list[Run]:
    """The bar and the settled column per time-stepping method and size, and the event-driven
    engine on the settled column and the small bars."""
    grid = "quick" if quick else "full"
    result = []
    for name, sizes in BAR_METHODS[grid].items():
        for n in sizes:
            bar = ImpactingBar(n - 1)
            t_end = _bar_window(bar)
            h = min(CFL * bar.stable_step, (t_end - bar.t0) / MIN_STEPS[grid])
            result.append(
                Run(
                    ImpactingBar,
                    METHODS[name],
                    t_end,
                    h,
                    problem_kwargs={"n_elements": n - 1},
                    output_every=OUTPUT_EVERY,
                    **REPEATS[grid],
                    metrics=("work_bytes",),
                )
            )
    # the settled column: the time-steppers (with their work bytes), then the engine (h = None)
    column = [
        (name, n, COLUMN_STEP, ("work_bytes",))
        for name, sizes in COLUMN_METHODS[grid].items()
        for n in sizes
    ]
    column += [(EVENT_DRIVEN, n, None, ()) for n in EVENT_DRIVEN_COLUMN_SIZES[grid]]
    for name, n, h, metrics in column:
        result.append(
            Run(
                resting_column,
                METHODS[name],
                COLUMN_STEPS[grid] * COLUMN_STEP,
                h,
                problem_kwargs={"n_beads": n},
                output_every=OUTPUT_EVERY,
                **REPEATS[grid],
                metrics=metrics,
                problem_name=COLUMN,
            )
        )
    for n in EVENT_DRIVEN_SIZES[grid]:
        bar = ImpactingBar(n - 1)
        result.append(
            Run(
                ImpactingBar,
                METHODS[EVENT_DRIVEN],
                _bar_window(bar),
                None,
                problem_kwargs={"n_elements": n - 1},
                output_every=OUTPUT_EVERY,
                **REPEATS[grid],
            )
        )
    return result


def costs(table: pd.DataFrame) -> pd.DataFrame:
    """ns per step and memory bytes per DOF of each finished run, with its problem and n; the
    wall time per run (minimum over the repeats), the spread of the repeats (max - min), the
    time spent in the integration loop and the repeats in ms (``ms_repeats``, a
    :class:`impactbench.analysis.timing.Timing`; :mod:`impactbench.analysis.timing`)."""
    done = table[table["status"] != FAILED]
    n = pd.Series(np.nan, index=done.index)
    if "problem.n_elements" in done:
        n = n.fillna(done["problem.n_elements"] + 1)
    if "problem.n_beads" in done:
        n = n.fillna(done["problem.n_beads"])
    memory = done["work_bytes"] if "work_bytes" in done else pd.Series(np.nan, index=done.index)
    timed = with_spreads(done)
    frame = pd.DataFrame(
        {
            "problem": done["problem"],
            "method": done["method"].str.split("[").str[0],
            "n": n.astype(int),
            "steps": done["steps"],
            "ns_per_step": 1e9 * done["wall_time"] / done["steps"],
            "ms_per_run": 1e3 * done["wall_time"],
            "ms_spread": 1e3 * timed["wall_time_spread"],
            "ms_integration": 1e3 * timed["integration_time"],
            "bytes_per_dof": memory / n,
            "ms_repeats": [
                Timing(tuple(1e3 * t for t in row_timing(row).repeats))
                for _, row in done.iterrows()
            ],
        }
    )
    return frame.sort_values(["problem", "method", "n"]).reset_index(drop=True)


def _per_step(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the (problem, method) pairs whose runs all take ``MIN_FIT_STEPS`` steps
    or more: those whose wall time per step is a cost per step."""
    fewest = frame.groupby(["problem", "method"], sort=False)["steps"].transform("min")
    return frame[fewest >= MIN_FIT_STEPS]


def exponents(frame: pd.DataFrame) -> pd.DataFrame:
    """Fitted p (cost ~ n^p) and its 95 % interval (NaN for two sizes) per problem and method,
    and the local exponent ``p_last`` between the two largest sizes; pairs with two sizes or
    more whose runs all take ``MIN_FIT_STEPS`` steps or more."""
    rows = []
    for (problem, method), part in _per_step(frame).groupby(["problem", "method"], sort=False):
        if part["n"].nunique() < 2:
            continue
        fit = fit_cost_exponent(part["n"], part["ns_per_step"])
        ratio = np.nan
        by_n = dict(zip(part["n"], part["ns_per_step"], strict=True))
        if 1000 in by_n and 10000 in by_n:
            ratio = by_n[10000] / by_n[1000]
        (n1, c1), (n2, c2) = sorted(by_n.items())[-2:]
        rows.append(
            {
                "problem": problem,
                "method": method,
                "p": fit.exponent,
                "p_low": fit.low,
                "p_high": fit.high,
                "sizes": fit.sizes,
                "p_last": float(np.log(c2 / c1) / np.log(n2 / n1)),
                "cost(1e4) / cost(1e3)": ratio,
            }
        )
    columns = ["problem", "method", "p", "p_low", "p_high", "sizes", "p_last"]
    return pd.DataFrame(rows, columns=[*columns, "cost(1e4) / cost(1e3)"])


def _figure(frame: pd.DataFrame, fits: pd.DataFrame, folder: Path) -> str:
    frame = _per_step(frame)
    if frame.empty:
        return "None (no run finished with enough steps).\n"
    figure, (ax,) = new_figure(1, width=6.0, height=4.0)
    lines = {BAR: "-", COLUMN: "--"}
    for (problem, method), part in frame.groupby(["problem", "method"], sort=False):
        style = method_style(method)
        label = f"{method}, {problem}"
        fit = fits[(fits["problem"] == problem) & (fits["method"] == method)]
        if not fit.empty:
            row = fit.iloc[0]
            label += f": p = {row.p:.2f}"
            if np.isfinite(row.p_low):
                label += f" [{row.p_low:.2f}, {row.p_high:.2f}]"
        ax.loglog(
            part["n"], part["ns_per_step"], marker=style["marker"], color=style["color"],
            linestyle=lines.get(problem, ":"), label=label,
        )  # fmt: skip
    n = np.array([frame["n"].min(), frame["n"].max()], dtype=float)
    start = frame.loc[frame["n"].idxmin(), "ns_per_step"]
    ax.loglog(n, start * n / n[0], color="0.6", linestyle=":", label="slope 1 (O(n))")
    ax.set_xlabel("degrees of freedom $n$ [-]")
    ax.set_ylabel("cost per step [ns]")
    ax.set_title("Cost per step against n (bar: diagonal mass; column: n contacts)")
    ax.grid(True, which="both", alpha=0.3)
    shared_legend(figure, [ax], columns=2)
    save_figure(figure, folder / "scaling.png")
    return "![cost per step against n](scaling.png)\n"


def _interval(row: pd.Series) -> str:
    """The fit's 95 % interval, or "no interval" for a fit on two sizes."""
    if not np.isfinite(row.p_low):
        return "no interval"
    return f"95 % interval [{row.p_low:.2f}, {row.p_high:.2f}]"


def _event_driven_finding(frame: pd.DataFrame, problem: str) -> str | None:
    """The engine's largest run on ``problem`` against the time-stepping run nearest in n."""
    rows = frame[frame["problem"] == problem]
    event = rows[rows["method"] == EVENT_DRIVEN]
    if event.empty:
        return None
    stepping = rows[rows["method"] != EVENT_DRIVEN]
    largest = event.loc[event["n"].idxmax()]
    line = (
        f"{EVENT_DRIVEN} (compiled engine) on {problem}: {largest.steps} steps, "
        f"{largest.ns_per_step / 1e3:.3g} us per step, {largest.ms_per_run:.3g} ms per run at "
        f"n = {largest.n}"
    )
    if not stepping.empty:
        distance = np.abs(np.log(stepping["n"] / largest.n))
        near = stepping[distance == distance.min()]
        near = near.loc[near["ms_per_run"].idxmin()]
        line += (
            f"; the fastest time-stepping run at n = {near.n}, {near.method}: {near.steps} "
            f"steps, {near.ns_per_step / 1e3:.3g} us per step, {near.ms_per_run:.3g} ms per run"
        )
        result = compare(largest.ms_repeats, near.ms_repeats)
        line += {
            FASTER: f" (the engine's run is {result.text}: the ratio of median times with its "
            "95 % bootstrap interval)",
            SLOWER: f" (the engine's run is {result.text}: the ratio of median times with its "
            "95 % bootstrap interval)",
        }.get(result.verdict, f" (a {result.text})")
    if problem == BAR:
        return line + (
            ": the engine factors the dense M at every force evaluation and its explicit steps "
            "follow the bar's highest frequency, so it does not apply to large meshes."
        )
    return line + (
        ": with every contact closed the engine integrates the contact dynamics (zero "
        "acceleration) in a few steps, where a time-stepping scheme takes every step."
    )


def _findings(frame: pd.DataFrame, fits: pd.DataFrame) -> list[str]:
    findings = []
    for _, row in fits.iterrows():
        ratio = row["cost(1e4) / cost(1e3)"]
        line = (
            f"{row.method} on {row.problem}: cost per step ~ n^{row.p:.2f} ({_interval(row)}, "
            f"{row.sizes} sizes)"
        )
        if row.sizes > 2:
            line += f"; between the two largest sizes n^{row.p_last:.2f}"
        if np.isfinite(ratio):
            line += f"; n = 10^4 costs {ratio:.1f}x n = 10^3 per step"
            if row.method == "MoreauJean":
                line += " (issue 14 target: <= 15x)"
        findings.append(line + ".")
    memory = frame[frame["bytes_per_dof"].notna()]
    for (problem, method), part in memory.groupby(["problem", "method"], sort=False):
        line = (
            f"{method} on {problem}: {part['bytes_per_dof'].min():.0f}-"
            f"{part['bytes_per_dof'].max():.0f} bytes per DOF of work buffers "
            f"(n = {part['n'].min()}-{part['n'].max()})"
        )
        if part["n"].nunique() >= 2:
            total = fit_cost_exponent(part["n"], part["bytes_per_dof"] * part["n"])
            line += f", in total ~ n^{total.exponent:.2f}"
        findings.append(line + ".")
    for problem in (COLUMN, BAR):
        line = _event_driven_finding(frame, problem)
        if line is not None:
            findings.append(line)
    return findings


#: Units of the tables' columns (the others named by
#: :func:`impactbench.bench.latex.with_unit`): memory in bytes, exponents and ratios
#: dimensionless.
UNITS = {
    "bytes_per_dof": "B",
    **dict.fromkeys(("p", "p_low", "p_high", "p_last", "cost(1e4) / cost(1e3)"), "-"),
}


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """The cost and memory table, the fitted exponents and the log-log figure."""
    frame = costs(table)
    fits = exponents(frame)
    sections = [
        Section(
            "Cost per step and memory per DOF",
            "ms_per_run: minimum of the repeats' wall times; ms_spread: maximum minus minimum; "
            "ms_integration: the time spent in the integration loop (minimum).\n\n"
            + markdown_table(
                frame.drop(columns="ms_repeats"),
                units=UNITS,
                latex=thin(frame.drop(columns="ms_repeats"), ["problem", "method"], "n"),
            ),
        ),
        Section("Fitted exponents", markdown_table(fits, units=UNITS)),
        Section("Figure", _figure(frame, fits, folder)),
    ]
    return StudyReport(sections, _findings(frame, fits))


STUDY = Study(
    name="scaling",
    title="Scaling: cost per step against the number of degrees of freedom",
    description=(
        "Nanoseconds per step against the number of DOF n, with the exponent p of cost ~ n^p "
        "fitted on log-log and its 95 % interval, and the bytes per DOF of the loop's work "
        "buffers, for every time-stepping method: on the impacting bar (lumped, diagonal mass "
        "matrix, one contact node) from 321 to 10^4 DOF over the same physical window (flight, "
        "the whole contact, release) and on the settled column of beads (10 to 300 beads, "
        "every contact closed: an LCP of n contacts per step); the compiled event-driven engine"
        " on the settled column (3 and 10 beads, cost per run) and on the bar at 11 to 41 DOF, "
        "where it does not apply (a run of a few steps has a cost per run, not per step: "
        f"fitted and drawn are the pairs whose runs all take {MIN_FIT_STEPS} steps or more). "
        + protocol_text(REPEATS)
    ),
    runs=runs,
    report=report,
    max_jobs=1,
)
