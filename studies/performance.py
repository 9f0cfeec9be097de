"""Performance: ns per step of the time-stepping loops and ms per event-driven run and impact.

Each time-stepping method runs a fixed step on problems with sustained impacts (restitution 1,
or the forced oscillator on its periodic orbit), on the ball with restitution 0.8 (after its
accumulation time, about 4 s, it rests on the floor and every step applies an impulse), on the
tight joint (two constraints) and on the double pendulum (configuration-dependent mass matrix,
nonlinear gap), once compiled by numba and once as plain Python
(``compiled=False``, the path of user problems); the horizon of the plain runs is shorter. The
wall time follows :func:`impactbench.analysis.timing.protocol_text` of :data:`REPEATS`
(repeats of at least 10 ms after a warm-up run, compared by the ratio of median times with a
bootstrap interval), and the runs execute one at a time.
Output is decimated (``output_every``) so that the loops, not the output, are timed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.timing import (
    FASTER,
    LONG_RUN_REPEATS,
    Timing,
    compare,
    protocol_text,
    row_timing,
    with_spreads,
)
from impactbench.bench.latex import Summary, interval_text, summarise
from impactbench.bench.plugins import study_methods
from impactbench.bench.report import (
    capped_flags,
    format_number,
    markdown_table,
    method_style,
    new_figure,
    save_figure,
    with_capped_counts,
)
from impactbench.bench.runner import FAILED, Case, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.core.method import EVENT_DRIVEN, TIME_STEPPING
from impactbench.problems import (
    BouncingBall,
    DoublePendulum,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
    TightJoint,
)

H = 1e-3
#: Steps per run: compiled loops, plain-Python loops; horizon of the event-driven runs.
STEPS = {"full": (1_000_000, 20_000), "quick": (100_000, 2_000)}
EVENT_DRIVEN_HORIZON = {"full": 10.0, "quick": 3.0}
REPEATS = LONG_RUN_REPEATS
OUTPUT_EVERY = 1000

#: (factory, parameters, label): the label tells the two bouncing-ball cases apart in tables.
_PROBLEMS = (
    (BouncingBall, {"restitution": 1.0}, "BouncingBall[e=1]"),
    (ImpactingOscillator, {"restitution": 1.0}, "ImpactingOscillator[e=1]"),
    (
        ForcedImpactOscillator,
        {"omega": 2.5, "sigma": 0.05, "restitution": 0.8},
        "ForcedImpactOscillator",
    ),
    (SlantedWall, {"restitution": 1.0}, "SlantedWall[e=1]"),
    (BouncingBall, {"restitution": 0.8}, "BouncingBall[e=0.8,resting]"),
    (TightJoint, {}, "TightJoint"),
    (DoublePendulum, {}, "DoublePendulum"),
)


def _cases(quick: bool, duration: float) -> list[Case]:
    selected = _PROBLEMS[:1] if quick else _PROBLEMS
    return [
        Case(factory, factory(**kwargs).t0 + duration, kwargs, label)
        for factory, kwargs, label in selected
    ]


def runs(quick: bool) -> list[Run]:
    """Compiled and plain-Python time-steppers at h = 1e-3; EventDriven at its defaults."""
    methods = study_methods()
    grid = "quick" if quick else "full"
    compiled_steps, plain_steps = STEPS[grid]
    options = {**REPEATS[grid], "output_every": OUTPUT_EVERY}
    result = []
    for compiled, steps in ((True, compiled_steps), (False, plain_steps)):
        grids = [
            Grid(method, {"compiled": [compiled]})
            for method in methods.values()
            if method.requires_step
        ]
        result += expand(_cases(quick, steps * H), grids, steps=[H], **options)
    if "EventDriven" in methods:
        cases = _cases(quick, EVENT_DRIVEN_HORIZON[grid])
        result += expand(cases, [Grid(methods["EventDriven"])], **REPEATS[grid])
    return result


def _plain(table: pd.DataFrame) -> pd.Series:
    return table["method.compiled"].astype(str) == "False"


def step_costs(table: pd.DataFrame) -> pd.DataFrame:
    """Time-stepping runs: ns per step (wall time: min, median, max of the repeats; and of the
    integration loop alone, min), steps per second, the spread of the repeats (s) and the
    repeats per step (``ns_repeats``, a :class:`impactbench.analysis.timing.Timing`)."""
    done = table[(table["status"] != FAILED) & (table["family"] == TIME_STEPPING)]
    frame = done[["problem", "method", "steps", "wall_time"]].copy()
    frame["ns_per_step"] = 1e9 * frame["wall_time"] / frame["steps"]
    frame["ns_median"] = 1e9 * done["wall_time_median"] / frame["steps"]
    frame["ns_max"] = 1e9 * done["wall_time_max"] / frame["steps"]
    frame["steps_per_s"] = frame["steps"] / frame["wall_time"]
    timed = with_spreads(done)
    frame["ns_integration"] = 1e9 * timed["integration_time"] / frame["steps"]
    frame["ns_spread"] = 1e9 * timed["wall_time_spread"] / frame["steps"]
    frame["ns_repeats"] = [
        Timing(tuple(1e9 * t / int(row["steps"]) for t in row_timing(row).repeats))
        for _, row in done.iterrows()
    ]
    frame["compiled"] = ~_plain(done)
    frame["base"] = frame["method"].str.split("[").str[0]
    return frame


def _speedups(costs: pd.DataFrame) -> pd.DataFrame:
    if costs.empty:
        return pd.DataFrame()
    pivot = costs.pivot_table(
        index=["problem", "base"], columns="compiled", values="ns_per_step", sort=False
    )
    frame = pivot.reset_index().rename(
        columns={"base": "method", True: "compiled ns/step", False: "plain ns/step"}
    )
    frame.columns.name = None
    if {"compiled ns/step", "plain ns/step"} <= set(frame.columns):
        repeats = {
            (row.problem, row.base, row.compiled): row.ns_repeats
            for row in costs.itertuples(index=False)
        }
        results = [
            compare(
                *(repeats.get((problem, base, compiled), Timing(())) for compiled in (True, False))
            )
            for problem, base in zip(frame["problem"], frame["method"], strict=True)
        ]
        frame["speedup"] = [result.ratio for result in results]
        frame["verdict"] = [result.verdict for result in results]
        frame["compiled against plain"] = [result.text for result in results]
    return frame


#: Units of the performance tables' columns (the others named by :func:`with_unit`).
UNITS = {
    "wall_time": "s",
    "PaoliSchatzman": "ns/step",
    "MoreauJean": "ns/step",
    "PaoliSchatzman / MoreauJean": "-",
}


def costs_for_paper(costs: pd.DataFrame) -> Summary:
    """The LaTeX copy of the cost-per-step table: per method and compiled or plain, the median
    over the problems of the ns per step (wall time and integration loop) and of the steps per
    second, with their range (:func:`impactbench.bench.latex.summarise`)."""
    frame = costs.rename(
        columns={"base": "method", "method": "spec", "ns_per_step": "ns per step [ns]",
                 "ns_integration": "ns integration [ns]", "steps_per_s": "steps per s [1/s]"}
    )  # fmt: skip
    frame["code"] = frame["compiled"].map({True: "compiled", False: "plain Python"})
    values = ["ns per step [ns]", "ns integration [ns]", "steps per s [1/s]"]
    return summarise(frame, ["method"], "code", values, counted="problems")


def speedups_for_paper(speedups: pd.DataFrame) -> Summary:
    """The LaTeX copy of the compiled-against-plain table: per method, over the problems, the
    median speedup with its range and the number of problems where the compiled code is
    faster (the bootstrap interval of the ratio of medians above 1)."""
    if speedups.empty or "speedup" not in speedups:
        return Summary(speedups, "")
    rows = []
    for method, group in speedups.groupby("method", sort=False):
        rows.append(
            {
                "method": method,
                "problems [-]": len(group),
                "speedup [-]": interval_text(group["speedup"]),
                "compiled faster [-]": int((group["verdict"] == FASTER).sum()),
            }
        )
    return Summary(
        pd.DataFrame(rows), "per method the median over the problems [smallest, largest]"
    )


def _ratios(costs: pd.DataFrame) -> pd.DataFrame:
    """Compiled PaoliSchatzman / MoreauJean ns per step on each problem (the issue's 2x target)."""
    compiled = costs[costs["compiled"]]
    pivot = compiled.pivot_table(index="problem", columns="base", values="ns_per_step", sort=False)
    if not {"PaoliSchatzman", "MoreauJean"} <= set(pivot.columns):
        return pd.DataFrame()
    frame = pivot[["PaoliSchatzman", "MoreauJean"]].reset_index()
    frame.columns.name = None
    frame["PaoliSchatzman / MoreauJean"] = frame["PaoliSchatzman"] / frame["MoreauJean"]
    return frame


def event_costs(table: pd.DataFrame) -> pd.DataFrame:
    """Event-driven runs: ms per run (wall time, its spread over the repeats, and the
    integration loop's part) and per impact; a count that hit the impact log's capacity is
    printed ">= N" and its cost per impact left blank (the count is a lower bound)."""
    done = with_spreads(table[(table["status"] != FAILED) & (table["family"] == EVENT_DRIVEN)])
    frame = done[["problem", "method", "t_end", "steps", "impacts", "wall_time"]].copy()
    frame["ms_per_run"] = 1e3 * frame["wall_time"]
    frame["ms_spread"] = 1e3 * done["wall_time_spread"]
    frame["ms_integration"] = 1e3 * done["integration_time"]
    frame["ms_per_impact"] = frame["ms_per_run"] / frame["impacts"].astype(float)
    # a capped count is a lower bound: the cost per impact is then an upper bound, not printed
    frame.loc[capped_flags(done), "ms_per_impact"] = np.nan
    return with_capped_counts(frame.assign(impacts_capped=capped_flags(done))).drop(
        columns="impacts_capped"
    )


def _without_compiled(method: str) -> str:
    """``Name[compiled=True,x=1]`` -> ``Name[x=1]`` (the figure shows compiled by the marker)."""
    name, _, params = method.partition("[")
    kept = [p for p in params.rstrip("]").split(",") if p and not p.startswith("compiled=")]
    return f"{name}[{','.join(kept)}]" if kept else name


def _figure(costs: pd.DataFrame, folder: Path) -> str:
    if costs.empty:
        return "None (no time-stepping run finished).\n"
    problems = {problem: i for i, problem in enumerate(dict.fromkeys(costs["problem"]))}
    costs = costs.sort_values(
        ["problem", "compiled"],
        key=lambda c: c.map(problems) if c.name == "problem" else ~c,
        kind="stable",
    )
    # one row per problem, one marker per method (its plain-Python variant: the variant's marker)
    costs = costs.assign(variant=costs["method"], method=costs["method"].map(_without_compiled))
    methods = list(dict.fromkeys(costs["method"]))
    figure, (ax,) = new_figure(1, width=7.0, height=0.5 * len(problems) + 1.5)
    offsets = np.linspace(-0.3, 0.3, len(methods)) if len(methods) > 1 else np.zeros(1)
    for offset, method in zip(offsets, methods, strict=True):
        for compiled in (True, False):
            part = costs[(costs["method"] == method) & (costs["compiled"] == compiled)]
            if part.empty:
                continue
            style = method_style(str(part["variant"].iloc[0]))
            ax.plot(
                part["ns_per_step"],
                part["problem"].map(problems) + offset,
                linestyle="none",
                marker=style["marker"],
                color=style["color"],
                markerfacecolor=style.get("markerfacecolor", style["color"]),
                label=f"{method}" + ("" if compiled else " (plain Python)"),
            )
    ax.set_yticks(list(problems.values()), list(problems))
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("cost per step [ns]")
    ax.set_title("Cost per step of the time-stepping loops")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6)
    save_figure(figure, folder / "performance.png")
    return "![ns per step](performance.png)\n"


def _findings(
    costs: pd.DataFrame, speedups: pd.DataFrame, ratios: pd.DataFrame, events: pd.DataFrame
) -> list[str]:
    findings = []
    for compiled, label in ((True, "Compiled"), (False, "Plain-Python")):
        part = costs[costs["compiled"] == compiled]
        if part.empty:
            continue
        best, worst = (part.loc[part["ns_per_step"].agg(f)] for f in ("idxmin", "idxmax"))
        text = f"{best['ns_per_step']:.3g} ns/step ({best['method']} on {best['problem']})"
        if len(part) > 1:
            text = (
                f"from {text} to {worst['ns_per_step']:.3g} ns/step "
                f"({worst['method']} on {worst['problem']})"
            )
        findings.append(f"{label} time-stepping loops: {text}.")
    if "speedup" in speedups and speedups["speedup"].notna().any():
        faster = speedups[speedups["verdict"] == FASTER]
        text = (
            f"Compiled loops are {faster['speedup'].min():.3g} to "
            f"{faster['speedup'].max():.3g} times faster than the same loops in plain Python "
            "(ratios of median ns per step; their 95 % bootstrap intervals exclude 1)"
            if not faster.empty
            else "No compiled loop is faster than its plain-Python loop (every 95 % bootstrap "
            "interval of the ratio of median ns per step holds 1 or lies below it)"
        )
        tied = len(speedups[speedups["speedup"].notna()]) - len(faster)
        if tied and not faster.empty:
            text += f"; {tied} pairs not faster (an interval that holds 1 or lies below)"
        findings.append(text + ".")
    if not ratios.empty:
        column = ratios["PaoliSchatzman / MoreauJean"]
        low, high = ratios.loc[column.idxmin()], ratios.loc[column.idxmax()]
        findings.append(
            f"Compiled PaoliSchatzman costs {column.min():.2f} ({low['problem']}) to "
            f"{column.max():.2f} ({high['problem']}) times MoreauJean's ns per step."
        )
    for row in events.itertuples(index=False):
        findings.append(
            f"{row.method} on {row.problem}: {row.ms_per_run:.3g} ms per run to t = "
            f"{row.t_end:.3g}, {format_number(row.ms_per_impact)} ms per impact "
            f"({row.impacts} impacts)."
        )
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Tables of ns/step, speedups and event-driven costs, and a bar chart."""
    costs = step_costs(table)
    speedups = _speedups(costs)
    ratios = _ratios(costs)
    events = event_costs(table)
    columns = [
        "problem",
        "method",
        "steps",
        "wall_time",
        "ns_per_step",
        "ns_median",
        "ns_max",
        "ns_integration",
        "steps_per_s",
    ]
    sections = [
        Section(
            "Time-stepping: cost per step",
            "ns_per_step, ns_median, ns_max: the minimum, median and maximum over the repeats "
            "of the wall time per step; ns_integration: the minimum of the time spent in the "
            "integration loop per step (the rest of the wall time is the per-call work of "
            "`simulate`).\n\n"
            + markdown_table(costs[columns], units=UNITS, latex=costs_for_paper(costs)),
        ),
        Section(
            "Compiled against plain Python",
            "speedup: plain over compiled median ns per step; compiled against plain: that "
            "ratio with its 95 % bootstrap interval, faster where the interval excludes 1, tie "
            "otherwise (impactbench.analysis.timing).\n\n"
            + markdown_table(speedups, units=UNITS, latex=speedups_for_paper(speedups)),
        ),
        Section("Compiled PaoliSchatzman against MoreauJean", markdown_table(ratios, units=UNITS)),
        Section(
            "Event-driven: cost per run and per impact",
            "ms_per_run: minimum over the repeats; ms_spread: maximum minus minimum; "
            "ms_integration: the time spent in the integration loop (minimum); impacts >= N: the "
            "impact log overflowed (a lower bound; ms_per_impact left blank).\n\n"
            + markdown_table(events, units=UNITS),
        ),
        Section("Figure", _figure(costs, folder)),
    ]
    return StudyReport(sections, _findings(costs, speedups, ratios, events))


STUDY = Study(
    name="performance",
    title="Performance: cost per step and per impact",
    description=(
        f"Nanoseconds per step and steps per second of every time-stepping method (h = {H:g}) "
        "on problems with sustained impacts, compiled by numba and as plain Python "
        "(`compiled=False`, the path of user problems); event-driven runs at their default "
        "tolerance in milliseconds per run and per impact. " + protocol_text(REPEATS)
    ),
    runs=runs,
    report=report,
    max_jobs=1,
)
