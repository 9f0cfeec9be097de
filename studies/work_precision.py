"""Work-precision: error against cost for the three families, one chart per problem.

Fixed-step time-stepping methods are swept by their step h, step-size-controlled time-stepping
(:mod:`._adaptive`: MoreauJean and CatchingUp under :class:`impactbench.Adaptive`) and the
event-driven method by their relative tolerance, one run per tolerance. Time-stepping methods
are swept by their step h, each nominal step run at ``PHASES`` perturbed
copies h (1 + delta_j) (phase averaging, :mod:`impactbench.analysis.fitting`), the event-driven
method by its relative tolerance; the cost is the wall time (repeats of at least 10 ms each,
compared by the ratio of median times with a bootstrap interval,
:data:`impactbench.analysis.timing.PROTOCOL_TEXT`; the runs execute one at a time so that they
do not compete for the machine) and the number of force evaluations, which does not depend on
the machine. A step's error and cost are the medians over its copies, so a step that happens to
put an impact at a lucky grid phase does not pass for a cheap accurate run; the slope of the
error against the force evaluations, error ~ evaluations^-p, is fitted with its 95 % interval
and the same floor and flatness rules as an order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import ORDER, OrderFit, fit_order, phase_medians
from impactbench.analysis.metrics import ERROR_GRID_TEXT
from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    PROTOCOL_TEXT,
    STUDY_REPEATS,
    VERDICT_TEXT,
    comparison_families,
    crossover,
    crossover_text,
    ties,
    with_spreads,
)
from impactbench.bench.latex import Summary
from impactbench.bench.plugins import study_methods
from impactbench.bench.report import (
    capped_flags,
    format_number,
    markdown_table,
    method_style,
    new_figure,
    plot_methods,
    save_figure,
    shared_legend,
    with_capped_counts,
)
from impactbench.bench.runner import Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import coordinate_unit, metric_unit
from impactbench.core.method import TIME_STEPPING
from impactbench.problems import BouncingBall

from . import _adaptive
from ._crossover import crossover_section
from ._exact import exact_cases, exact_floors

METRIC = "max_position_error"
#: Nominal steps: a quarter decade apart from 1e-4 to 1e-2, and half a decade apart below, to
#: 1e-5: with the loose rtol of :data:`TOLERANCES`, meant to make the time-steppers' and the
#: event-driven method's error ranges overlap over the
#: :data:`impactbench.analysis.crossover.MIN_DECADES` a crossover needs, where the event-driven
#: error depends on rtol (the report states each overlap).
STEPS = {
    "full": np.geomspace(1e-5, 1e-2, 13)[[0, 2, *range(4, 13)]],
    "quick": np.geomspace(1e-3, 1e-2, 4),
}
#: Runs per nominal step: the step itself and perturbed copies (phase averaging).
PHASES = {"full": 5, "quick": 3}
#: rtol of the event-driven method, from loose ones whose errors meet the time-steppers' (on the
#: problems whose flights the Runge-Kutta pair does not integrate exactly) to tight ones.
TOLERANCES = {
    "full": [5e-2, 1e-2, *(10.0**-k for k in range(3, 12))],
    "quick": [1e-4, 1e-6, 1e-8],
}
#: The file of the crossovers of the families' cost curves (:func:`crossover_section`).
CROSSOVERS_FILE = "crossovers.csv"
#: rtol of the step-size-controlled schemes, and their largest step (the coarsest fixed step;
#: a flight the scheme integrates exactly is taken in steps set by the controller's test of
#: the chord between steps, which misses the parabola by g h^2 / 8).
ADAPTIVE_TOLERANCES = {"full": [10.0**-k for k in range(2, 8)], "quick": [1e-3, 1e-5]}
ADAPTIVE_H_MAX = 1e-2
#: The adaptive runs whose accepted steps are stored for the h(t) figure (the ball).
STEP_SIZE_TOLERANCES = (1e-3, 1e-5)
REPEATS = STUDY_REPEATS
#: Error levels of the "cheapest run" table.
TARGETS = (1e-2, 1e-4, 1e-6, 1e-8)
COSTS = {"wall_time": "wall time [s]", "force_evaluations": "force evaluations [-]"}
UNITS = {"wall_time": "s", "force_evaluations": "evaluations"}


def runs(quick: bool) -> list[Run]:
    """Every method of ``METHODS``: time-steppers by h, EventDriven by rtol on both engines
    (compiled event loop and scipy path), and the step-size-controlled schemes by rtol
    (:mod:`._adaptive`; their accepted steps stored on the ball at
    :data:`STEP_SIZE_TOLERANCES`)."""
    methods = study_methods()
    grid = "quick" if quick else "full"
    cases = exact_cases(quick)
    options = {"metrics": [METRIC], **REPEATS[grid]}
    steppers = [Grid(method) for method in methods.values() if method.requires_step]
    result = expand(cases, steppers, steps=STEPS[grid].tolist(), phases=PHASES[grid], **options)
    if "EventDriven" in methods:
        adaptive = Grid(
            methods["EventDriven"],
            {"rtol": TOLERANCES[grid], "compiled": [True, False]},
            tolerance="rtol",
        )
        result += expand(cases, [adaptive], **options)
    result += _adaptive.recorded_runs(
        cases, ADAPTIVE_TOLERANCES[grid], ADAPTIVE_H_MAX, _stores_steps, **options
    )
    return result


def _stores_steps(run: Run) -> bool:
    """The adaptive runs whose accepted steps are stored: the ball at
    :data:`STEP_SIZE_TOLERANCES`."""
    return run.problem.__name__ == "BouncingBall" and run.tolerance_value in STEP_SIZE_TOLERANCES


def families(table: pd.DataFrame) -> pd.DataFrame:
    """One row per phase family (time-steppers: nominal h; EventDriven and the adaptive schemes:
    rtol): the median error, costs, spread of the repeats' wall times, integration time and
    (adaptive schemes: ``rejected_fraction`` when ``table`` has it) the fraction of rejected
    steps over its finished runs (:func:`impactbench.analysis.fitting.phase_medians`,
    :mod:`impactbench.analysis.timing`); the family of the adaptive schemes is
    :data:`impactbench.analysis.timing.ADAPTIVE_STEPPING`."""
    values = [METRIC, *COSTS, "wall_time_spread", "integration_time"]
    if "rejected_fraction" in table:
        values.append("rejected_fraction")
    table = comparison_families(_adaptive.labelled(table))
    medians = phase_medians(with_spreads(table), values, keys=("family",))
    return medians[medians[METRIC].notna()]


def cheapest(medians: pd.DataFrame, cost: str) -> pd.DataFrame:
    """Per problem and error target: the cheapest family whose median error is at most it.

    By wall time, the cell gives the spread of its repeats and its integration time, and lists
    the other methods' cheapest runs that tie with it (:func:`impactbench.analysis.timing.ties`:
    the bootstrap interval of the ratio of median times holds 1).
    """
    rows = []
    for problem, group in medians.groupby("problem", sort=False):
        row = {"problem": problem}
        for target in TARGETS:
            reached = group[group[METRIC] <= target]
            cell = "-"
            if not reached.empty:
                best = reached.loc[reached[cost].idxmin()]
                cell = _cell(best, cost)
                if cost == "wall_time":
                    others = reached[reached["method"] != best["method"]]
                    others = others.loc[others.groupby("method", sort=False)[cost].idxmin()]
                    tied = ties(best, others)
                    if not tied.empty:
                        listed = "; ".join(_cell(other, cost) for _, other in tied.iterrows())
                        cell = f"tie: {cell}; {listed}"
            row[f"error <= {target:g}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def cheapest_for_paper(medians: pd.DataFrame, cost: str) -> Summary:
    """The LaTeX copy of :func:`cheapest`: one row per problem and error target with the
    cheapest family's method, step or tolerance and cost (by wall time also the spread of its
    repeats, its integration time and the number of other methods tying with it), the target
    in the unit of the problem's coordinates."""
    rows = []
    for problem, group in medians.groupby("problem", sort=False):
        unit = metric_unit(METRIC, str(problem))
        for target in TARGETS:
            reached = group[group[METRIC] <= target]
            row = {"problem": problem, "error <= target": f"{target:g} {unit}", "method": "none"}
            if not reached.empty:
                best = reached.loc[reached[cost].idxmin()]
                stepping = best["family"] == TIME_STEPPING
                row.update(
                    {
                        "method": best["method"],
                        "h [s]": best["h"] if stepping else np.nan,
                        "rtol [-]": np.nan if stepping else best["tolerance"],
                        COSTS[cost]: best[cost],
                    }
                )
                if cost == "wall_time":
                    others = reached[reached["method"] != best["method"]]
                    others = others.loc[others.groupby("method", sort=False)[cost].idxmin()]
                    row["spread [s]"] = best["wall_time_spread"]
                    row["integration [s]"] = best["integration_time"]
                    row["tying methods [-]"] = len(ties(best, others))
            rows.append(row)
    columns = ["problem", "error <= target", "method", "h [s]", "rtol [-]", COSTS[cost]]
    if cost == "wall_time":
        columns += ["spread [s]", "integration [s]", "tying methods [-]"]
    frame = pd.DataFrame(rows).reindex(columns=columns)
    return Summary(frame, "the cheapest run per target; the tying runs are listed in the report")


def _cell(run: pd.Series, cost: str) -> str:
    """``Method (h=..., cost)``; by wall time with the spread and the integration time; an
    adaptive scheme's with its fraction of rejected steps."""
    axis = "h" if run["family"] == TIME_STEPPING else "rtol"
    value = run["h"] if axis == "h" else run["tolerance"]
    text = f"{run['method']} ({axis}={format_number(value, 2)}, "
    text += f"{format_number(float(run[cost]), 2)} {UNITS[cost]}"
    if cost == "wall_time":
        spread, loop = run["wall_time_spread"], run["integration_time"]
        text += " +/- " + (format_number(float(spread), 2) if pd.notna(spread) else "?")
        if pd.notna(loop):
            text += f", integration {format_number(float(loop), 2)} s"
    if run["family"] == ADAPTIVE_STEPPING and pd.notna(run.get("rejected_fraction")):
        text += f", {run['rejected_fraction']:.0%} of steps rejected"
    return text + ")"


def slopes(medians: pd.DataFrame, floors: dict[tuple[str, str], float]) -> pd.DataFrame:
    """The fitted p of error ~ evaluations^-p per problem and method (median errors and costs;
    :func:`impactbench.analysis.fitting.fit_order` on 1 / evaluations), as table cells."""
    rows = []
    for problem, group in medians.groupby("problem", sort=False):
        row = {"problem": problem}
        for method, runs_of in group.groupby("method", sort=False):
            fit = _slope(runs_of, floors[(problem, METRIC)])
            row[method] = fit.text("the cost")
        rows.append(row)
    return pd.DataFrame(rows)


def _slope(runs_of: pd.DataFrame, floor: float) -> OrderFit:
    work = runs_of["force_evaluations"].to_numpy(dtype=float)
    return fit_order(1.0 / work, runs_of[METRIC].to_numpy(), floor=floor)


def _figures(medians: pd.DataFrame, floors: dict, folder: Path) -> list[str]:
    links = []
    resolution = medians["h"].fillna(medians["tolerance"])
    medians = medians.assign(resolution=resolution)
    for problem, group in medians.groupby("problem", sort=False):
        figure, axes = new_figure(len(COSTS))
        for ax, (cost, label) in zip(axes, COSTS.items(), strict=True):
            plot_methods(ax, group, cost, METRIC, order="resolution")
            ax.set_xlabel(label.replace(" [", " (median) [", 1))
            ax.set_ylabel(
                r"max position error $\|q - q_{\mathrm{ref}}\|_\infty$"
                f" [{coordinate_unit(str(problem))}]"
            )
        ax = axes[1]
        for method, runs_of in group.groupby("method", sort=True):
            fit = _slope(runs_of, floors[(problem, METRIC)])
            color = method_style(str(method))["color"]
            work = runs_of["force_evaluations"].to_numpy(dtype=float)
            # the fit is error = C (1 / W)^p, drawn against the work W (cost on x, error on y)
            if fit.status == ORDER:
                span = np.geomspace(work.min(), work.max(), 50)
                center, low, high = fit.line(1.0 / span)
                ax.fill_between(span, low, high, color=color, alpha=0.18, linewidth=0)
                ax.plot(span, center, color=color, linestyle="--", linewidth=0.9)
        shared_legend(figure, axes, columns=3)
        figure.suptitle(
            f"Work-precision on {problem} (dashed: fitted slopes with 95 % bands, values in "
            "the tables)"
        )
        name = f"work_precision_{problem}.png"
        save_figure(figure, folder / name)
        links.append(f"![Work-precision on {problem}]({name})\n")
    return links or ["None (no run finished).\n"]


def _findings(fastest: pd.DataFrame, rates: pd.DataFrame, medians: pd.DataFrame) -> list[str]:
    findings = []
    for problem, group in medians.groupby("problem", sort=False):
        answers = crossover(group, METRIC, TARGETS)
        if group["family"].nunique() > 1 and answers:
            findings.append(
                f"{problem}: faster family to a max position error ({VERDICT_TEXT}): "
                f"{crossover_text(answers)}."
            )
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
    for row in rates.to_dict("records"):
        cells = "; ".join(f"{k} {v}" for k, v in row.items() if k != "problem" and v == v)
        findings.append(
            f"{row['problem']}: error ~ (force evaluations)^-p, p [95 % interval]: {cells}."
        )
    return findings


def rejections(medians: pd.DataFrame) -> pd.DataFrame:
    """Per problem and adaptive scheme, the fraction of rejected steps at each rtol (rejected /
    attempted, from the stored ``control`` artefacts)."""
    adaptive = medians[medians["family"] == ADAPTIVE_STEPPING]
    if adaptive.empty or "rejected_fraction" not in adaptive:
        return pd.DataFrame()
    rows = []
    for (problem, method), group in adaptive.groupby(["problem", "method"], sort=False):
        row = {"problem": problem, "method": method}
        for value in group.sort_values("tolerance", ascending=False).itertuples(index=False):
            row[f"rtol {value.tolerance:g}"] = f"{value.rejected_fraction:.0%}"
        rows.append(row)
    return pd.DataFrame(rows).fillna("-")


def _step_sizes(table: pd.DataFrame, folder: Path) -> str:
    ball = BouncingBall(restitution=0.8)
    link = _adaptive.step_size_figure(
        table,
        folder,
        "BouncingBall",
        "Accepted steps of the adaptive schemes on the ball (ticks: impact-log entries)",
        "step_sizes_BouncingBall.png",
        [("accumulation time t_inf", ball.accumulation_time)],
    )
    return link or "None (no adaptive run on the ball stored its steps).\n"


def restart_steps(table: pd.DataFrame) -> pd.DataFrame:
    """The event-driven runs on the bouncing ball: accepted steps, force evaluations and impacts
    against rtol, and the steps per impact (the restart cost, see :data:`RESTART_NOTE`); a
    capped impact count is printed ">= N" and its steps per impact left out."""
    rows = table[
        (table["problem"] == "BouncingBall")
        & table["method"].str.startswith("EventDriven")
        & (table["status"] != "failed")
    ]
    frame = rows[["method", "tolerance", "steps", "force_evaluations", "impacts"]].copy()
    capped = capped_flags(rows)
    # a capped count is a lower bound of the impacts: its steps per impact is not known
    frame["steps per impact"] = (frame["steps"] / frame["impacts"].clip(lower=1)).where(~capped)
    frame = with_capped_counts(frame.assign(impacts_capped=capped)).drop(columns="impacts_capped")
    return frame.rename(columns={"tolerance": "rtol"}).sort_values(["method", "rtol"])


#: Why the event-driven method needs fewer force evaluations on the ball as rtol tightens.
RESTART_NOTE = (
    "On the ball the event-driven method takes fewer steps as rtol tightens. Its flights are "
    "parabolas, which the Runge-Kutta pair integrates exactly, so the step grows by the "
    "controller's largest factor after every restart; the cost is in the restarts. At each "
    "impact the solver restarts with Hairer's initial step h0 = 0.01 d0 / d1 (scipy's, computed "
    "again by the compiled engine), d0 = ||y / s||, d1 = ||f(y) / s||, s = atol + rtol |y|: at "
    "the impact q = 0, so the position component of d1 is |v| / atol while d0 is about "
    "1 / rtol, and h0 is about 0.01 atol / rtol (times |v| / |f| terms of order one). With atol "
    "fixed at 1e-12, a loose rtol restarts every flight with a tiny step that takes several "
    "accepted steps to grow back. With atol scaled with rtol (atol = 1e-2 rtol) h0 is about "
    "1e-4 times the same terms whatever rtol, so the restarts no longer cost more at a loose "
    "rtol. It is a property of the initial-step heuristic at a restart on the obstacle, not of "
    "the accuracy reached."
)


#: Why the families' error ranges cannot overlap on some problems, whatever the sweeps.
CROSSOVER_NOTE = (
    "On the bouncing ball and the slanted wall the flights are parabolas, which the event-driven "
    "method's Runge-Kutta pair (of order above 2) integrates exactly at any rtol, its events "
    "located as roots of those parabolas: where its error is then at the rounding level "
    "whatever the tolerance, no sweep makes the families' error ranges overlap (the statements "
    "below say where they share no interval; the tables above compare the families per error "
    "target). "
)


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Cheapest-family tables (by wall time and by force evaluations), the crossovers of the
    families' cost curves (:mod:`._crossover`, ``crossovers.csv``), slopes and charts."""
    table = _adaptive.with_rejections(table, folder)
    medians = families(table)
    floors = exact_floors(table, (METRIC,))
    control = _adaptive.error_control(medians, METRIC, floors)
    medians = _adaptive.marked(medians, control)
    judged = _adaptive.controlled_only(medians, control)  # the rows the verdicts use
    by_time = cheapest(judged, "wall_time")
    by_force = cheapest(judged, "force_evaluations")
    rates = slopes(medians, floors)
    median_note = (
        "Time-steppers: each nominal step h stands for its phase copies h (1 + delta_j), with "
        "the median error and the median cost over them. "
    )
    sections = [
        Section(
            "Fastest run per error target",
            median_note + "Among the steps (tolerances) with max position error at most the "
            "target, the one with the least wall time (its step or tolerance, the time, +/- the "
            "spread of its repeats (max - min; ? for a run timed once) and the time spent in its "
            'integration loop); "tie:" lists the other methods\' fastest runs whose ratio of '
            "median times to it has a 95 % bootstrap interval holding 1.\n\n"
            + markdown_table(by_time, latex=cheapest_for_paper(judged, "wall_time")),
        ),
        Section(
            "Fewest force evaluations per error target",
            "As above with the number of force evaluations as the cost.\n\n"
            + markdown_table(by_force, latex=cheapest_for_paper(judged, "force_evaluations")),
        ),
    ]
    # after the tables above: the LaTeX copies are numbered in the order of the report
    crossing, crossing_findings = crossover_section(
        judged, METRIC, folder, CROSSOVERS_FILE, CROSSOVER_NOTE
    )
    sections += [
        crossing,
        Section(
            "Error against force evaluations",
            "The fitted p of max position error ~ (force evaluations)^-p (least squares on the "
            "medians, 95 % t-interval; errors below 100 eps times the problem's scale "
            "excluded; flat or unresolved sweeps reported as such).\n\n" + markdown_table(rates),
        ),
        Section("Figures", "\n".join(_figures(medians, floors, folder))),
        Section("Error control of the adaptive family", _adaptive.control_section(control)),
        Section(
            "Rejected steps of the adaptive schemes",
            "Rejected / attempted steps of each step-size-controlled run (each attempt costs "
            "three steps of the scheme: two of h/2 and one of h, rejected ones included in "
            "the force evaluations).\n\n" + markdown_table(rejections(medians)),
        ),
        Section(
            "Step sizes through the accumulation",
            "Every accepted step h of the adaptive schemes on the ball, against the time at its "
            "end, at two tolerances (stored with the runs); dotted: the accumulation time "
            "t_inf of the impacts.\n\n" + _step_sizes(table, folder),
        ),
    ]
    restarts = restart_steps(table)
    if not restarts.empty:
        sections.append(
            Section(
                "Event-driven steps on the ball",
                RESTART_NOTE + "\n\n" + markdown_table(restarts),
            )
        )
    findings = (
        _findings(by_time, rates, judged)
        + crossing_findings
        + _adaptive.control_findings(control)
        + _adaptive.rejection_findings(medians)
    )
    return StudyReport(sections, findings)


STUDY = Study(
    name="work_precision",
    title="Work-precision: error against cost",
    description=(
        "Max position error against wall time and against force evaluations (machine "
        "independent) on the problems with exact solutions, three families: fixed-step "
        "time-stepping methods by step h (each nominal step with perturbed copies "
        "h (1 + delta_j), |delta_j| <= 0.1, medians reported), adaptive time-stepping by "
        "relative tolerance (" + _adaptive.settings_text(ADAPTIVE_H_MAX) + "; one run per "
        "rtol), the event-driven method by relative tolerance on its two engines (the "
        "compiled event loop, compiled=True, and the same algorithm as Python around scipy, "
        "compiled=False, dotted), on one chart per problem. " + PROTOCOL_TEXT + " A run that "
        "fails is a row with its status and NaN errors, not dropped. " + ERROR_GRID_TEXT
    ),
    runs=runs,
    report=report,
    max_jobs=1,
)
