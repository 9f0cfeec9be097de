"""Thesis comparison: the double pendulum against a wall, time-stepping against event detection.

The model problem of the Dzonou / Monteiro Marques / Paoli thesis (a double pendulum whose tip hits
a vertical wall; their velocity scheme against an impact-detection algorithm), in two
configurations: the tip against the wall (:class:`DoublePendulum` defaults, horizon
``DoublePendulum().t_end``) and both masses against the wall through the pivot (Potra et al.,
:meth:`DoublePendulum.two_contact`, T = 2.5). The time-steppers -- CatchingUp (the thesis' scheme),
MoreauJean at theta = 1/2 and PaoliSchatzman -- are swept by their step h, EventDriven (DOP853) by
its relative tolerance, and the third family, MoreauJean and CatchingUp under step-size control
(:mod:`._adaptive`), by rtol too; each nominal step h runs at ``PHASES`` perturbed copies h (1 +
delta_j) (phase averaging, :mod:`impactbench.analysis.fitting`) and the findings use the median over
the copies. Every run is measured against the cached DOP853 event-driven reference at rtol 1e-12
(:func:`._reference.event_driven_reference`): max position error and error at T, L1 and Hausdorff
velocity errors, impact-time error, isolated reference impacts found / missed and spurious impacts
(the matching rules of :mod:`impactbench.analysis.metrics`), penetration (on the nominal run of each
step only: reported, never fitted), force evaluations and wall time (repeats of at least 10 ms after
a warm-up, compared by the ratio of median times with a bootstrap interval:
:data:`impactbench.analysis.timing.PROTOCOL_TEXT`; the runs execute one at a time). Orders in h
are fitted on the medians with their 95 % intervals, errors below ten times the reference's
claimed accuracy excluded (:mod:`impactbench.analysis.fitting`).

The report writes the reference curves it plots as tables next to the run table
(``reference_curves.csv``, ``references.csv``, from the cached reference) and draws every figure
from the stored tables; its findings are computed from the numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from impactbench.analysis.fitting import fit_order, phase_medians
from impactbench.analysis.impact_events import isolated_impacts as isolated_mask
from impactbench.analysis.impact_events import matching_window
from impactbench.analysis.metrics import ERROR_GRID_TEXT, error_floor
from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    COMPARED_FAMILIES,
    PROTOCOL_TEXT,
    STUDY_REPEATS,
    TIE,
    VERDICT_TEXT,
    compare,
    comparison_families,
    crossover,
    crossover_text,
    row_timing,
    ties,
    with_spreads,
)
from impactbench.bench.latex import Summary, summarise
from impactbench.bench.report import (
    format_number,
    markdown_table,
    method_style,
    new_figure,
    plot_methods,
    save_figure,
    shared_legend,
    whole_decades,
    with_capped_counts,
)
from impactbench.bench.results import read_artefact, read_table, write_table
from impactbench.bench.runner import FAILED, Case, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.study_reference import event_driven_reference, stored_event_driven_reference
from impactbench.bench.style import coordinate_unit
from impactbench.bench.trajectory_figure import (
    stored_trajectory,
    trajectory_artefact,
    trajectory_figure,
)
from impactbench.core.method import TIME_STEPPING
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman, get_method
from impactbench.problems import DoublePendulum

from . import _adaptive
from ._crossover import crossover_section

#: Problem configurations by their label in the table: factory of the problem (its recommended
#: horizon ``t_end`` is the horizon of the runs).
CONFIGURATIONS: dict[str, Callable[[], DoublePendulum]] = {
    "DoublePendulum[tip]": DoublePendulum,
    "DoublePendulum[two-contact]": DoublePendulum.two_contact,
}

METRICS = (
    "max_position_error",
    "l1_velocity_error",
    "hausdorff_velocity_distance",
    "position_error_at_end",
    "impact_time_error",
    "missed_impacts",
    "spurious_impacts",
    "max_penetration",
)

#: Metric reported at each nominal step and never fitted: computed on the nominal run of each
#: step only (NaN on its perturbed copies).
NOMINAL_ONLY = ("max_penetration",)

#: Time-steppers (the thesis' catching-up scheme first) and their explicit parameters.
STEPPERS = (Grid(CatchingUp), Grid(MoreauJean, {"theta": [0.5]}), Grid(PaoliSchatzman))

_FULL_STEPS = np.geomspace(1e-2, 1e-5, 10)
STEPS = {"full": _FULL_STEPS, "quick": _FULL_STEPS[[0, 2, 4]]}
#: Runs per nominal step: the step itself and perturbed copies (phase averaging).
PHASES = {"full": 5, "quick": 3}
#: rtol of the event-driven method: the loose 5e-2 and 1e-2 are meant to reach the
#: time-steppers' error range (the crossover of the cost curves, :mod:`._crossover`, states
#: the overlap the runs give).
TOLERANCES = {
    "full": [5e-2, 1e-2, *(10.0**-k for k in range(3, 11))],
    "quick": [5e-2, 1e-5, 1e-8],
}
#: The file of the crossovers of the families' cost curves.
CROSSOVERS_FILE = "crossovers.csv"
REPEATS = STUDY_REPEATS
#: rtol of the step-size-controlled schemes, their largest step (the coarsest fixed step), and
#: the tolerances whose runs store their accepted steps for the h(t) figure.
ADAPTIVE_TOLERANCES = {"full": [10.0**-k for k in range(2, 8)], "quick": [1e-3, 1e-5]}
ADAPTIVE_H_MAX = 1e-2
STEP_SIZE_TOLERANCES = (1e-3, 1e-5)

#: Max position error levels of the time-to-accuracy findings.
TARGETS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-6)

#: Stored tables of the reference solutions, written by :func:`report`.
CURVES_FILE = "reference_curves.csv"
REFERENCES_FILE = "references.csv"
FIGURE_FILE = "thesis_comparison.png"
#: Samples of each reference curve (uniform in time; the impact instants are added).
CURVE_SAMPLES = 1101

#: The errors whose order in h the findings state, with their names there.
FITTED = {
    "max_position_error": "max position error",
    "l1_velocity_error": "L1 velocity error",
    "hausdorff_velocity_distance": "Hausdorff velocity distance",
}

#: A sweep whose two finest errors are within this factor has levelled off.
PLATEAU_RATIO = 2.0


def cases() -> list[Case]:
    """One case per configuration, at its recommended horizon."""
    return [
        Case(factory, factory().t_end, problem_name=name)
        for name, factory in CONFIGURATIONS.items()
    ]


def runs(quick: bool) -> list[Run]:
    """Time-steppers by h, EventDriven and the step-size-controlled schemes by rtol on both
    configurations, against the reference."""
    grid = "quick" if quick else "full"
    options = {
        "metrics": METRICS,
        **REPEATS[grid],
        "reference": event_driven_reference,
    }
    result = expand(
        cases(), list(STEPPERS), steps=STEPS[grid].tolist(), phases=PHASES[grid], **options
    )
    copies = tuple(name for name in METRICS if name not in NOMINAL_ONLY)
    result = [run if run.h == run.nominal_h else replace(run, metrics=copies) for run in result]
    adaptive = Grid(
        EventDriven, {"rtol": TOLERANCES[grid], "compiled": [True, False]}, tolerance="rtol"
    )
    result += expand(cases(), [adaptive], **options)
    finest_h, finest_rtol = min(STEPS[grid]), min(TOLERANCES[grid])
    result = [
        replace(run, artefact=trajectory_artefact)
        if (run.h == run.nominal_h == finest_h)
        or (run.method_kwargs.get("rtol") == finest_rtol and run.method_kwargs["compiled"])
        else run
        for run in result
    ]
    result += _adaptive.recorded_runs(
        cases(), ADAPTIVE_TOLERANCES[grid], ADAPTIVE_H_MAX, _stores_steps, **options
    )
    return result


def _stores_steps(run: Run) -> bool:
    """The adaptive runs whose accepted steps are stored: those at :data:`STEP_SIZE_TOLERANCES`."""
    return run.tolerance_value in STEP_SIZE_TOLERANCES


# --------------------------------------------------------------------------------------------
# Reference tables


def write_references(table: pd.DataFrame, folder: Path) -> None:
    """Write the reference of every configuration of ``table`` as two tables in ``folder``.

    ``reference_curves.csv``: problem, t, angles q1, q2 and horizontal positions x1 (mass 1),
    x2 (tip), sampled uniformly plus at the impacts. ``references.csv``: one row per
    configuration with t0, t_end, the wall line x_wall = -d, the contact points, the impact
    times (JSON list) and how the reference was computed. The reference is read from the cache
    of :func:`impactbench.reference`, where the runs put it (a report never simulates: a
    missing one is :class:`impactbench.analysis.reference.MissingReferenceError`).
    """
    curves, rows = [], []
    for name in pd.unique(table["problem"]):
        if name not in CONFIGURATIONS:
            continue
        t_end = float(table.loc[table["problem"] == name, "t_end"].iloc[0])
        problem = CONFIGURATIONS[name]()
        reference = stored_event_driven_reference(problem, t_end)
        impacts = np.asarray(reference.impact_times, dtype=float)
        t = np.union1d(np.linspace(problem.t0, t_end, CURVE_SAMPLES), impacts)
        q, _ = reference.state(t)
        x1 = problem.l1 * np.sin(q[:, 0])
        curves.append(
            pd.DataFrame(
                {
                    "problem": name,
                    "t": t,
                    "q1": q[:, 0],
                    "q2": q[:, 1],
                    "x1": x1,
                    "x2": x1 + problem.l2 * np.sin(q[:, 1]),
                }
            )
        )
        parameters = reference.parameters
        rows.append(
            {
                "problem": name,
                "t0": problem.t0,
                "t_end": t_end,
                "x_wall": 0.0 - problem.wall_distance,
                "contacts": problem.contacts,
                "restitution": problem.restitution,
                "impacts": len(impacts),
                "impact_times": json.dumps([float(x) for x in impacts]),
                "method": parameters.get("method", reference.kind),
                "steps": parameters.get("steps"),
                "status": parameters.get("status"),
                "code_version": parameters.get("code_version"),
                "key": parameters.get("key"),
            }
        )
    empty = pd.DataFrame(columns=["problem", "t", "q1", "q2", "x1", "x2"])
    write_table(pd.concat(curves, ignore_index=True) if curves else empty, folder / CURVES_FILE)
    write_table(pd.DataFrame(rows, columns=_REFERENCE_COLUMNS), folder / REFERENCES_FILE)


_REFERENCE_COLUMNS = [
    "problem",
    "t0",
    "t_end",
    "x_wall",
    "contacts",
    "restitution",
    "impacts",
    "impact_times",
    "method",
    "steps",
    "status",
    "code_version",
    "key",
]


def _impact_times(references: pd.DataFrame) -> dict[str, np.ndarray]:
    return {
        row.problem: np.array(json.loads(row.impact_times), dtype=float)
        for row in references.itertuples(index=False)
    }


def isolated_impacts(times: np.ndarray, window: float) -> int:
    """Number of reference impacts farther than 2 ``window`` from both neighbours.

    The impacts :func:`impactbench.analysis.metrics.missed_impacts` checks one by one
    (:func:`impactbench.analysis.impact_events.isolated_impacts`).
    """
    return int(np.count_nonzero(isolated_mask(np.sort(times), window)))


def _window(row: pd.Series, t0: float) -> float:
    h = row["h_used"] if row["family"] == TIME_STEPPING else None
    return matching_window(None if pd.isna(h) else h, row["t_end"] - t0)


# --------------------------------------------------------------------------------------------
# Tables and findings


#: Columns aggregated over the phase copies of a step (medians, smallest, largest).
AGGREGATED = (
    *METRICS,
    "impacts",
    "force_evaluations",
    "wall_time",
    "wall_time_spread",
    "integration_time",
)


def families(table: pd.DataFrame) -> pd.DataFrame:
    """One row per phase family (time-steppers: nominal h; EventDriven and the adaptive
    schemes: rtol) with the medians of :data:`AGGREGATED` and ``rejected_fraction`` when
    ``table`` has it (:func:`impactbench.analysis.fitting.phase_medians`; ``wall_time_spread``
    the spread of each run's repeats, :mod:`impactbench.analysis.timing`) and ``resolution``
    (the nominal h or the rtol); the adaptive schemes' family is
    :data:`impactbench.analysis.timing.ADAPTIVE_STEPPING`."""
    values = [*AGGREGATED, *(["rejected_fraction"] if "rejected_fraction" in table else [])]
    table = comparison_families(_adaptive.labelled(table))
    medians = phase_medians(with_spreads(table), values, keys=("family", "t_end"))
    return medians.assign(resolution=medians["h"].fillna(medians["tolerance"]))


def _axis(row: pd.Series | dict) -> str:
    return "h" if row["family"] == TIME_STEPPING else "rtol"


def summary(table: pd.DataFrame, references: pd.DataFrame) -> pd.DataFrame:
    """One row per run: configuration, method, h or rtol, accuracy, impacts and cost (headers
    with their units: the coordinates' for the position errors and the L1 velocity error, an
    integral over time of the velocity error)."""
    impacts = _impact_times(references)
    t0 = dict(zip(references["problem"], references["t0"], strict=True))
    q = coordinate_unit(DoublePendulum())
    rows = []
    for _, row in table.iterrows():
        found = "-"
        if row["problem"] in impacts and pd.notna(row["missed_impacts"]):
            checked = isolated_impacts(impacts[row["problem"]], _window(row, t0[row["problem"]]))
            found = f"{checked - int(row['missed_impacts'])}/{checked}"
        wall, loop = row["wall_time"], row.get("integration_time", np.nan)
        spread = row["wall_time_max"] - wall if row["repeats"] >= 2 else np.nan
        stepping = _axis(row) == "h"
        rows.append(
            {
                "configuration": row["problem"],
                "method": row["method"],
                "h [s]": row["h"] if stepping else np.nan,
                "rtol [-]": np.nan if stepping else row["tolerance"],
                f"max error q [{q}]": row["max_position_error"],
                f"error q(T) [{q}]": row["position_error_at_end"],
                f"L1 error v [{q}]": row["l1_velocity_error"],
                "Hausdorff v [-]": row["hausdorff_velocity_distance"],
                "impact time error [s]": row["impact_time_error"],
                "found": found,
                "missed [-]": row["missed_impacts"],
                "spurious [-]": row["spurious_impacts"],
                "impacts [-]": row["impacts"],
                "impacts_capped": row.get("impacts_capped", False),
                "penetration [m]": row["max_penetration"],
                "force evaluations [-]": row["force_evaluations"],
                "wall time [ms]": wall * 1e3 if pd.notna(wall) else np.nan,
                "spread [ms]": spread * 1e3 if pd.notna(spread) else np.nan,
                "integration [ms]": loop * 1e3 if pd.notna(loop) else np.nan,
                "nominal": row["h_nominal"] if stepping else row["tolerance"],
            }
        )
    shown = with_capped_counts(pd.DataFrame(rows), ("impacts [-]",))
    return shown.drop(columns=["impacts_capped", "nominal"]).assign(nominal=shown["nominal"])


def summary_for_paper(rows: pd.DataFrame) -> Summary:
    """The LaTeX copy of :func:`summary`: per configuration, method and nominal step (or rtol)
    the median over its phase copies of the accuracy and the cost, with their range
    (:func:`impactbench.bench.latex.summarise`), at most
    :data:`impactbench.bench.latex.MAX_ROWS` rows."""
    q = [c for c in rows.columns if c.startswith(("max error q [", "error q(T) ["))]
    values = [*q, "impact time error [s]", "force evaluations [-]", "wall time [ms]"]
    frame = rows.assign(axis=np.where(rows["h [s]"].notna(), "h", "rtol"))
    summarised = summarise(frame, ["configuration", "method", "axis"], "nominal", values)
    shown = summarised.frame
    stepping = shown["axis"] == "h"
    shown = shown.assign(
        **{
            "h [s]": shown["nominal"].where(stepping),
            "rtol [-]": shown["nominal"].where(~stepping),
        }
    )
    columns = ["configuration", "method", "h [s]", "rtol [-]", "runs [-]", *values]
    note = summarised.note.replace("nominal", "nominal h or rtol")
    return Summary(shown[columns], f"nominal h: phase copies h (1 + delta_j); {note}")


def _summary_table(rows: pd.DataFrame) -> str:
    """The per-run table in Markdown (its nominal setting left to the LaTeX summary)."""
    return markdown_table(rows.drop(columns="nominal"), latex=summary_for_paper(rows))


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1e3)} ms"


def _run_label(row: pd.Series | dict) -> str:
    """``"Method (h=..."`` or ``"Method (rtol=..."``, the parenthesis left open."""
    axis = _axis(row)
    value = row["h"] if axis == "h" else row["tolerance"]
    return f"{row['method']} ({axis}={format_number(value, 2)}"


def _fastest(group: pd.DataFrame, target: float) -> pd.Series | None:
    reached = group[group["max_position_error"] <= target]
    return None if reached.empty else reached.loc[reached["wall_time"].idxmin()]


def _tied_note(best: pd.Series, runs_of: pd.DataFrame, target: float) -> str:
    """``" (tied with ...)"``: the other methods of ``runs_of`` whose fastest run to ``target``
    ties with ``best`` (:func:`impactbench.analysis.timing.ties`), "" when none does."""
    reached = runs_of[
        (runs_of["max_position_error"] <= target) & (runs_of["method"] != best["method"])
    ]
    if reached.empty:
        return ""
    fastest = reached.loc[reached.groupby("method", sort=False)["wall_time"].idxmin()]
    tied = ties(best, fastest)
    if tied.empty:
        return ""
    listed = ", ".join(f"{_run_label(row)}, {_ms(row['wall_time'])})" for _, row in tied.iterrows())
    return f" (tied: the interval of the ratio of median times holds 1, with {listed})"


def _accuracy_finding(problem: str, group: pd.DataFrame) -> str | None:
    """Which run reaches each max position error target fastest, and the other family's best:
    "faster by X [a, b]" (the ratio of median times with its bootstrap interval,
    :func:`impactbench.analysis.timing.compare`; "slower" when the run of least minimum time
    has the larger median) where the interval excludes 1, a tie otherwise.

    Consecutive targets with the same answer are merged into one clause.
    """
    families = {family: group[group["family"] == family] for family in COMPARED_FAMILIES}
    texts: list[str] = []
    merged: list[list[float]] = []
    for target in TARGETS:
        best = _fastest(group, target)
        if best is None:
            continue
        text = (
            f"{_run_label(best)}, {_ms(best['wall_time'])}, "
            f"{int(best['force_evaluations'])} force evaluations)"
            + _tied_note(best, families[best["family"]], target)
        )
        for family, runs_of in families.items():
            if runs_of.empty or family == best["family"]:
                continue
            other = _fastest(runs_of, target)
            if other is None:
                closest = runs_of.loc[runs_of["max_position_error"].idxmin()]
                text += (
                    f", no {family} run gets there (smallest error "
                    f"{format_number(closest['max_position_error'])}: {_run_label(closest)}))"
                )
            elif (result := compare(row_timing(best), row_timing(other))).verdict != TIE:
                text += (
                    f", {result.text} than the fastest {family} run "
                    f"{_run_label(other)}, {_ms(other['wall_time'])})"
                    + _tied_note(other, runs_of, target)
                )
            else:
                text += (
                    f", a {result.text} with the fastest {family} run {_run_label(other)}, "
                    f"{_ms(other['wall_time'])})"
                )
        if texts and texts[-1] == text:
            merged[-1].append(target)
        else:
            texts.append(text)
            merged.append([target])
    if not texts:
        return None
    clauses = [
        f"<= {', '.join(f'{t:g}' for t in targets)}: {text}"
        for targets, text in zip(merged, texts, strict=True)
    ]
    return f"{problem}: fastest run to a max position error " + "; ".join(clauses) + "."


def _crossover_finding(problem: str, group: pd.DataFrame) -> str | None:
    """Which family is faster to each max position error target (medians over the phase
    copies; :func:`impactbench.analysis.timing.crossover`)."""
    if group["family"].nunique() < 2:
        return None
    answers = crossover(group, "max_position_error", TARGETS)
    if not answers:
        return None
    return (
        f"{problem}: faster family to a max position error ({VERDICT_TEXT}): "
        f"{crossover_text(answers)}."
    )


def _impacts_finding(problem: str, group: pd.DataFrame, reference_impacts: int) -> str:
    """Impacts found, missed and spurious, and the impact-log entries per method."""
    wrong = group[(group["missed_impacts"] > 0) | (group["spurious_impacts"] > 0)]
    if wrong.empty:
        text = (
            f"{problem}: all {len(group)} runs reproduce every isolated reference impact "
            "(none missed, none spurious)"
        )
    else:
        listed = ", ".join(
            f"{_run_label(row)}: {row['missed_impacts']:.0f} missed, "
            f"{row['spurious_impacts']:.0f} spurious)"
            for _, row in wrong.iterrows()
        )
        text = f"{problem}: {len(wrong)} of {len(group)} runs miss or add impacts: {listed}"
    counts = []
    for method, runs_of in group.groupby("method", sort=False):
        low, high = int(runs_of["impacts"].min()), int(runs_of["impacts"].max())
        counts.append(f"{method} {low}" if low == high else f"{method} {low}-{high}")
    return (
        f"{text}; impact events per run (docs/design.md section 7): {', '.join(counts)}, against "
        f"{reference_impacts} reference impacts."
    )


def _finest_finding(problem: str, group: pd.DataFrame) -> str:
    """Errors, impact-time error and penetration of each method at its finest resolution."""
    parts = []
    for _, runs_of in group.groupby("method", sort=False):
        row = runs_of.loc[runs_of["resolution"].idxmin()]
        parts.append(
            f"{_run_label(row)}) max error {format_number(row['max_position_error'])}, "
            f"at T {format_number(row['position_error_at_end'])}, impact times "
            f"{format_number(row['impact_time_error'])}, penetration (nominal step) "
            f"{format_number(row['max_penetration'])}"
        )
    return f"{problem} at the finest resolution: " + "; ".join(parts) + "."


def _floors(problem: str, t_end: float) -> dict[str, float]:
    """Floor of each fitted error on a configuration: ten times the reference's claimed
    accuracy, or round-off (:func:`impactbench.analysis.metrics.error_floor`)."""
    if problem not in CONFIGURATIONS:
        return dict.fromkeys(FITTED, 0.0)
    instance = CONFIGURATIONS[problem]()
    reference = stored_event_driven_reference(instance, t_end)
    return {metric: error_floor(metric, instance, reference, t_end) for metric in FITTED}


def orders(medians: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and time-stepper the fitted order in h of each :data:`FITTED` error,
    as table cells (value [95 % interval], or what the sweep is instead)."""
    rows = []
    steppers = medians[medians["family"] == TIME_STEPPING]
    for problem, group in steppers.groupby("problem", sort=False):
        floors = _floors(problem, float(group["t_end"].iloc[0]))
        for method, runs_of in group.groupby("method", sort=False):
            row = {"configuration": problem, "method": method, "steps": len(runs_of)}
            for metric, label in FITTED.items():
                fit = fit_order(
                    runs_of["h"].to_numpy(), runs_of[metric].to_numpy(), floor=floors[metric]
                )
                row[label] = fit.text()
            rows.append(row)
    return pd.DataFrame(rows)


def _order_finding(problem: str, fits: pd.DataFrame, group: pd.DataFrame) -> str | None:
    """Observed orders in h of the time-steppers (medians), and event-driven plateaus."""
    parts, flat = [], []
    rows = fits[fits["configuration"] == problem]
    for label in FITTED.values():
        texts = rows[label].tolist()
        if len(texts) > 1 and len(set(texts)) == 1:
            parts.append(f"{label}: every time-stepper {texts[0]}")
        elif texts:
            cells = "; ".join(f"{row['method']} {row[label]}" for _, row in rows.iterrows())
            parts.append(f"{label}: {cells}")
    adaptive = group[group["family"] != TIME_STEPPING].sort_values("resolution")
    for method, data in adaptive.groupby("method", sort=False):
        if len(data) < 2:
            continue
        finest, next_finest = data["max_position_error"].iloc[:2]
        if max(finest, next_finest) < PLATEAU_RATIO * min(finest, next_finest):
            flat.append(
                f"the max position error of {method} levels off at "
                f"{format_number(finest)} (rtol={format_number(data['resolution'].iloc[1])}"
                f" and {format_number(data['resolution'].iloc[0])}) while its error at T "
                f"goes from {format_number(data['position_error_at_end'].iloc[1])} to "
                f"{format_number(data['position_error_at_end'].iloc[0])}"
            )
    if not parts and not flat:
        return None
    text = f"{problem}: "
    if parts:
        steps = rows["steps"].max()
        text += (
            f"observed order in h [95 % interval] over {steps} nominal steps (medians over "
            "the phase copies) -- " + " -- ".join(parts)
        )
    if flat:
        text += ("; " if parts else "") + "; ".join(flat)
    return text + "."


def findings(table: pd.DataFrame, references: pd.DataFrame) -> list[str]:
    """Key findings computed from the run table and the reference table.

    Accuracy, cost and orders from the medians over the phase copies of each step; impacts
    found, missed and spurious from every run.
    """
    medians = families(table)
    fits = orders(medians)
    control = error_control(medians)
    judged = _adaptive.controlled_only(medians, control)  # the rows the verdicts use
    done = table[table["status"] != FAILED]
    counts = dict(zip(references["problem"], references["impacts"], strict=True))
    result = []
    for problem, group in medians.groupby("problem", sort=False):
        verdict_rows = judged[judged["problem"] == problem]
        for finding in (
            _accuracy_finding(problem, verdict_rows),
            _crossover_finding(problem, verdict_rows),
            _impacts_finding(problem, done[done["problem"] == problem], counts.get(problem, 0)),
            _finest_finding(problem, group),
            _order_finding(problem, fits, group),
        ):
            if finding:
                result.append(finding)
    return result + _adaptive.control_findings(control)


def error_control(medians: pd.DataFrame) -> pd.DataFrame:
    """Whether the adaptive family controls its max position error on each configuration
    (:func:`studies._adaptive.error_control`, the floor of :func:`_floors`)."""
    floors = {}
    for problem, group in medians.groupby("problem", sort=False):
        floor = _floors(str(problem), float(group["t_end"].iloc[0]))["max_position_error"]
        floors[(problem, "max_position_error")] = floor
    return _adaptive.error_control(medians, "max_position_error", floors)


# --------------------------------------------------------------------------------------------
# Figure


def _configuration(problem: str) -> str:
    """``DoublePendulum[tip]`` -> ``tip`` (the panel titles name the configuration)."""
    return problem.partition("[")[2].rstrip("]") or problem


def _figure(
    table: pd.DataFrame, curves: pd.DataFrame, references: pd.DataFrame, path: Path
) -> None:
    done = families(table)
    problems = list(pd.unique(done["problem"]))
    figure, flat = new_figure(3 * max(1, len(problems)), width=6.0, height=4.8)
    axes = [flat[3 * i : 3 * i + 3] for i in range(max(1, len(problems)))]
    info = references.set_index("problem")
    for row, problem in zip(axes, problems, strict=False):
        group = done[done["problem"] == problem]
        for ax, cost, label in (
            (row[0], "wall_time", "wall time [s]"),
            (row[1], "force_evaluations", "force evaluations [-]"),
        ):
            plot_methods(
                ax, group.astype({cost: float}), cost, "max_position_error", order="resolution"
            )
            whole_decades(ax)
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(label)
            ax.set_ylabel(r"max position error $\|q - q_{\mathrm{ref}}\|_\infty$ [rad]")
            ax.set_title(f"{_configuration(problem)}: error vs {label.split(' [')[0]}")
        ax = row[2]
        curve = curves[curves["problem"] == problem]
        if problem in info.index and not curve.empty:
            ref = info.loc[problem]
            ax.plot(curve["t"], curve["x2"], color="black", linewidth=1.2, label="tip x2")
            if ref["contacts"] == "both":
                ax.plot(curve["t"], curve["x1"], color="0.5", linewidth=1.0, label="mass 1 x1")
            ax.axhline(ref["x_wall"], color="#8c564b", linewidth=2, label="wall")
            times = json.loads(ref["impact_times"])
            ax.plot(
                times,
                np.full(len(times), ref["x_wall"]),
                linestyle="none",
                marker="x",
                color=method_style("EventDriven")["color"],
                label="reference impacts",
            )
            ax.set_title(f"{_configuration(problem)}: reference ({ref['impacts']} impacts)")
        ax.set_xlabel("$t$ [s]")
        ax.set_ylabel("horizontal position $x$ [m]")
        ax.grid(True, alpha=0.3)
    shared_legend(figure, flat, columns=4)
    figure.suptitle(
        "Double pendulum against a wall: time-stepping (by h), adaptive time-stepping and "
        "event-driven (by rtol)"
    )
    save_figure(figure, path)


# --------------------------------------------------------------------------------------------
# Report


def _references_text(references: pd.DataFrame) -> str:
    lines = []
    for row in references.itertuples(index=False):
        times = ", ".join(f"{t:.4f}" for t in json.loads(row.impact_times))
        lines.append(
            f"- {row.problem}: {row.contacts} against the wall x = {row.x_wall:g}, "
            f"e = {row.restitution:g}, t in [{row.t0:g}, {row.t_end:g}]: {row.impacts} impacts "
            f"(t = {times}); {row.method}, {row.steps} steps, status {row.status}."
        )
    return "\n".join(lines) + "\n"


def _trajectory_figures(table: pd.DataFrame, folder: Path) -> list[str]:
    """The six views of each run that stored its trajectory (the finest of each method), drawn
    from its artefacts against the stored reference; Markdown image links."""
    samples = read_artefact(table, folder, "trajectory", required=())
    log = read_artefact(table, folder, "impact_log", required=())
    links = []
    for row in table[table["key"].isin(set(samples["key"]))].itertuples(index=False):
        problem = CONFIGURATIONS[row.problem]()
        mine = samples[samples["key"] == row.key].drop(columns="key")
        method = get_method(row.method)
        h = None if pd.isna(row.h) else float(row.h)
        trajectory = stored_trajectory(mine, log[log["key"] == row.key], method, row.problem, h)
        reference = stored_event_driven_reference(problem, float(row.t_end))
        slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{row.problem}_{_base(row.method)}").strip("_")
        name = f"trajectory_{slug}.png"
        save_figure(trajectory_figure(problem, trajectory, reference), folder / name)
        setting = f"h = {row.h:g}" if row.family == TIME_STEPPING else f"rtol = {row.tolerance:g}"
        links.append(f"![{row.problem}, {row.method}, {setting}]({name})")
    return links


def rejections(medians: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and adaptive scheme, the fraction of rejected steps (rejected /
    attempted, from the stored ``control`` artefacts) at each rtol."""
    adaptive = medians[medians["family"] == ADAPTIVE_STEPPING]
    if adaptive.empty or "rejected_fraction" not in adaptive:
        return pd.DataFrame()
    rows = []
    for (problem, method), group in adaptive.groupby(["problem", "method"], sort=False):
        row = {"configuration": problem, "method": method}
        for value in group.sort_values("tolerance", ascending=False).itertuples(index=False):
            row[f"rtol {value.tolerance:g}"] = f"{value.rejected_fraction:.0%}"
        rows.append(row)
    return pd.DataFrame(rows).fillna("-")


def _step_size_figures(table: pd.DataFrame, references: pd.DataFrame, folder: Path) -> str:
    """h(t) of the adaptive schemes on each configuration (from their stored steps), the
    reference's impacts as dotted lines; Markdown links."""
    impacts = _impact_times(references)
    links = []
    for problem in CONFIGURATIONS:
        marks = [("reference impacts", float(t)) for t in impacts.get(problem, [])]
        slug = re.sub(r"[^A-Za-z0-9]+", "_", problem).strip("_")
        link = _adaptive.step_size_figure(
            table,
            folder,
            problem,
            f"{_configuration(problem)}: accepted steps of the adaptive schemes "
            "(ticks: impact-log entries)",
            f"step_sizes_{slug}.png",
            marks,
        )
        if link:
            links.append(link)
    return "\n".join(links) or "None (no adaptive run stored its steps).\n"


def _base(method: str) -> str:
    return method.partition("[")[0]


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Reference tables, the summary table, the figures and the findings."""
    folder = Path(folder)
    table = comparison_families(_adaptive.labelled(_adaptive.with_rejections(table, folder)))
    write_references(table, folder)
    curves = read_table(folder / CURVES_FILE)
    references = read_table(folder / REFERENCES_FILE)
    _figure(table, curves, references, folder / FIGURE_FILE)
    sections = [
        Section(
            "Reference solutions",
            "DOP853 event-driven runs at rtol 1e-12 with dense output, cached on disk; their "
            f"curves and impacts are stored in [{CURVES_FILE}]({CURVES_FILE}) and "
            f"[{REFERENCES_FILE}]({REFERENCES_FILE}).\n\n" + _references_text(references),
        ),
        Section(
            "Summary",
            "One row per run (every phase copy of every step). *max error q*: max over the "
            "run's samples of the position error "
            "(max norm over q1, q2, in radians); *error q(T)*: at the final time; *L1 error v*: "
            "velocity error integrated over time; *Hausdorff v*: distance between the velocity "
            "graphs (scaled units, see above); *impact time error*: largest error in the "
            "first isolated reference impact times; *found*: isolated reference impacts "
            "(farther than twice the matching window from their neighbours) with a run impact "
            "within the window, over their number; *spurious*: clusters of run impacts with no "
            "reference impact nearby; *impacts logged*: entries of the run's impact log; "
            "*penetration*: max(0, -min g) (on the nominal step's run only, - on its "
            "perturbed copies); *wall time*: minimum of the timed repeats after a "
            "warm-up (each repeat at least 10 ms, the time per simulation); *spread*: maximum "
            "minus minimum of the repeats (- for a run timed once); "
            "*integration*: the part of the wall time spent in the method's integration loop "
            "(the rest is the per-call work of `simulate`).\n\n"
            + _summary_table(summary(table, references)),
        ),
        Section(
            "Observed orders",
            "Least-squares slope of log(error) against log(h) over the nominal steps, each "
            "error the median over the phase copies of the step, with its 95 % confidence "
            "interval (t-interval of the regression slope); errors below the floor (ten times "
            "the reference's claimed accuracy, or 100 eps times the problem's scale) excluded; "
            "a sweep within a factor 2 or with an interval containing 0 is flat, fewer than 6 "
            "points or 1 decade is not resolved (impactbench.analysis.fitting). Hausdorff: "
            "distance between the velocity graphs, time in units of the horizon and velocity "
            "in units of the reference's largest speed.\n\n"
            + markdown_table(orders(families(table))),
        ),
        Section(
            "Figure",
            "Median max position error over the phase copies of each step against the median "
            "wall time and force evaluations (time-steppers "
            "joined by h, EventDriven by rtol), and the reference's horizontal positions with "
            f"the wall line and its impacts, one row per configuration.\n\n"
            f"![Double pendulum: accuracy against cost]({FIGURE_FILE})\n",
        ),
        Section(
            "Error control of the adaptive family",
            _adaptive.control_section(error_control(families(table))),
        ),
        Section(
            "Rejected steps of the adaptive schemes",
            "Rejected / attempted steps of each step-size-controlled run (each attempt costs "
            "three steps of the scheme, rejected ones included in the force evaluations).\n\n"
            + markdown_table(rejections(families(table))),
        ),
        Section(
            "Step sizes of the adaptive schemes",
            "Every accepted step h of MoreauJean and CatchingUp under step-size control "
            "against the time at its end, at two tolerances (stored with the runs), the "
            "reference's impact times dotted.\n\n" + _step_size_figures(table, references, folder),
        ),
        Section(
            "Trajectories of the finest runs",
            "The finest run of each method (smallest nominal h, tightest rtol) against the "
            "reference (dashed): positions and velocities with the run's impact-log entries as "
            "ticks, phase portrait of q1, impact map (impact time against the normal velocity "
            "before it, run and reference), gap on a symmetric-log axis (penetration where "
            "negative) and energy error E - E_ref; drawn from the runs' stored trajectories "
            "(at most 4000 samples each; Paoli-Schatzman's velocity is its central difference, "
            "which straddles each impact).\n\n"
            + "\n\n".join(_trajectory_figures(table, folder) or ["None (no run finished).\n"])
            + "\n",
        ),
    ]
    medians = families(table)
    judged = _adaptive.controlled_only(medians, error_control(medians))  # as the verdicts
    crossing, crossing_findings = crossover_section(
        judged, "max_position_error", folder, CROSSOVERS_FILE
    )
    sections.append(crossing)
    return StudyReport(
        sections,
        findings(table, references) + crossing_findings + _adaptive.rejection_findings(medians),
    )


def _description() -> str:
    tip, two = DoublePendulum(), DoublePendulum.two_contact()
    return (
        "The model problem of the Dzonou / Monteiro Marques / Paoli thesis: a double pendulum "
        "(configuration-dependent mass matrix) hitting a vertical wall. Configurations: "
        f"*DoublePendulum[tip]*, the tip against the wall x = {0.0 - tip.wall_distance:g} "
        f"(e = {tip.restitution:g}, q0 = ({tip.q0[0]:.4g}, {tip.q0[1]:.4g}), "
        f"T = {tip.t_end:g}), and *DoublePendulum[two-contact]*, both masses against the wall "
        f"x = {0.0 - two.wall_distance:g} through the pivot (Potra, Anitescu, Gavrea, Trinkle "
        "2006: "
        f"e = {two.restitution:g}, q0 = ({two.q0[0]:.4g}, {two.q0[1]:.4g}), T = {two.t_end:g}). "
        "Time-stepping -- CatchingUp (the thesis' velocity scheme), MoreauJean at theta = 1/2, "
        "PaoliSchatzman -- by step h (each nominal step with perturbed copies h (1 + delta_j), "
        "|delta_j| <= 0.1, the findings using the medians), adaptive time-stepping by "
        "relative tolerance (" + _adaptive.settings_text(ADAPTIVE_H_MAX) + "; one run per "
        "rtol) and event detection (EventDriven, DOP853) by relative tolerance, all measured "
        "against a cached DOP853 event-driven reference at rtol 1e-12 (the scipy engine with "
        "dense output): "
        "accuracy, impacts found, missed and spurious, force evaluations and wall time. "
        + PROTOCOL_TEXT
        + " The time-steppers run "
        "as numba-compiled loops and EventDriven as the compiled event loop "
        "(EventDriven[...,compiled=True], the main line: both families compiled, so the wall "
        "times compare methods); EventDriven[...,compiled=False] is the same algorithm as "
        "Python around scipy's DOP853 (dotted), shown for what the interpreter costs. The "
        "force evaluations are the cost that does not depend on the implementation. "
        + ERROR_GRID_TEXT
    )


STUDY = Study(
    name="thesis_comparison",
    title="Thesis comparison: double pendulum against a wall",
    description=_description(),
    runs=runs,
    report=report,
    max_jobs=1,
)
