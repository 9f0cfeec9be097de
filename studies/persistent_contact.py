"""Persistent contact over long horizons: resting and sliding contacts, every time-stepping scheme.

After an accumulation of impacts a contact persists (a ball at rest, a particle sliding along a
wall, a pin resting in its clearance under a load). A time-stepping scheme never locates that
transition: its contact law alone must keep the state on K for all time. The velocity schemes
(Moreau-Jean, catching-up) do so only with the position activation rule (constraint active when
g_i(q_p) <= 0); with the "approaching" rule (also G_i v_k <= 0) a resting contact alternates
active and free steps and sinks linearly in time. Paoli-Schatzman's position projection keeps
its iterates in K by construction. This study measures, for every scheme and both rules:

* the depth below the constraint, max(0, -min g) over the second half [T/2, T] of runs of
  horizon T from 30 to 3000 (thousands of contact periods): does it grow with t?
* the same depth at T = 100 against the step h (12 steps over 1.7 decades): O(h^2)?
* the largest per-step energy increase (every step stored), against the bound
  (1 - e) h^2 alpha^2 / (8 (1 + e) w) that the position rule admits (module docstring of
  :mod:`impactbench.methods.moreau_jean`; alpha the acceleration towards the constraint,
  w = G M^-1 G^T), and the energy at T against T.

Depths are in the units of each problem's gap (the floor height, n^T q - c, delta^2 - |q|^2).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import ORDER, error_floor, fit_order, phase_medians
from impactbench.bench.latex import Summary, interval_text
from impactbench.bench.report import (
    capped_flags,
    count_text,
    format_number,
    markdown_table,
    method_style,
    new_figure,
    plot_methods,
    save_figure,
    shared_legend,
)
from impactbench.bench.runner import FAILED, Case, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.core.problem import Problem
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems.persistent_contacts import CASES

#: The case where the velocity schemes' depth is not O(h^2) but drifts (curved sliding contact).
CURVED_SLIDING = "pin sliding in hole"

METHOD_GRIDS = [
    Grid(PaoliSchatzman),
    Grid(MoreauJean, {"activation": ["position", "approaching"]}),
    Grid(CatchingUp, {"activation": ["position", "approaching"]}),
    Grid(NonsmoothGeneralizedAlpha),
    Grid(D1MinusLinear),
    Grid(MoreauJeanProjection),
]
#: The per-step energy study: Moreau-Jean, whose mechanical energy is the quantity its step
#: balances (catching-up balances E - (h/2) F^T v, and its E rises by h^2 |F|^2 / 2 per free
#: step by design; Paoli-Schatzman's velocity is a central difference, not a state).
ENERGY_GRID = METHOD_GRIDS[1]
STEP = 2e-3
HORIZONS = {"full": [30.0, 100.0, 300.0, 1000.0, 3000.0], "quick": [30.0, 100.0]}
STEPS = {"full": np.geomspace(1e-4, 5e-3, 10), "quick": np.geomspace(5e-4, 5e-3, 4)}
#: Phase family of each nominal step of the depth-against-h sweep (impactbench.analysis.fitting).
PHASES = {"full": 3, "quick": 1}
STEP_HORIZON = 100.0
ENERGY_STEPS = {"full": [1e-2, 5e-3, 2e-3], "quick": [5e-3]}
ENERGY_HORIZON = 100.0
#: At most this many stored samples per run (the metrics evaluate the gap at each sample).
MAX_SAMPLES = 20_000
METRICS = ["late_penetration", "energy_at_end"]


def _output_every(t_end: float, h: float) -> int:
    return max(1, int(np.ceil(t_end / h / MAX_SAMPLES)))


def _case(label: str, t_end: float) -> Case:
    return Case(CASES[label].factory, t_end, {}, label)


def runs(quick: bool) -> list[Run]:
    """Depth against t (h = 2e-3), depth against h (T = 100), per-step energy (every step)."""
    grid = "quick" if quick else "full"
    result = []
    for label in CASES:
        for t_end in HORIZONS[grid]:
            result += expand(
                [_case(label, t_end)], METHOD_GRIDS, steps=[STEP], metrics=METRICS,
                output_every=_output_every(t_end, STEP),
            )  # fmt: skip
        for h in STEPS[grid]:
            result += expand(
                [_case(label, STEP_HORIZON)], METHOD_GRIDS, steps=[float(h)],
                phases=PHASES[grid], metrics=["late_penetration"],
                output_every=_output_every(STEP_HORIZON, 0.9 * h),
            )  # fmt: skip
        for h in ENERGY_STEPS[grid]:
            result += expand(
                [_case(label, ENERGY_HORIZON)], [ENERGY_GRID], steps=[h],
                metrics=["max_energy_increase"], output_every=1,
            )  # fmt: skip
    return _unique(result)


def _unique(runs: list[Run]) -> list[Run]:
    """Drop repeated runs (the grids share T = 100 at h = 2e-3), keeping the first."""
    seen = set()
    kept = []
    for run in runs:
        key = repr(run.spec())
        if key not in seen:
            seen.add(key)
            kept.append(run)
    return kept


def energy_increase_bound(problem: Problem, h: float) -> float:
    """(1 - e) h^2 alpha^2 / (8 (1 + e) w) for one affine constraint with constant M and F
    (alpha = -G M^-1 F, w = G M^-1 G^T at q0); NaN for any other problem."""
    kernels = problem.kernels()
    affine = kernels is not None and kernels.affine_gap and kernels.constant_mass
    if problem.n_constraints != 1 or not affine:
        return float("nan")
    M = problem.mass_matrix(problem.q0)
    G = problem.gap_gradient(problem.q0)[0]
    F = problem.forces(problem.t0, problem.q0, problem.v0)
    if not np.allclose(F, problem.forces(problem.t0 + 1.0, problem.q0 + 1.0, problem.v0 + 1.0)):
        return float("nan")
    w = float(G @ np.linalg.solve(M, G))
    alpha = -float(G @ np.linalg.solve(M, F))
    e = problem.restitution
    return (1.0 - e) * h**2 * max(alpha, 0.0) ** 2 / (8.0 * (1.0 + e) * w)


def _ok(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["status"] != FAILED]


def depth_against_time(table: pd.DataFrame) -> pd.DataFrame:
    """Depth over [T/2, T] at h = 2e-3, one column per horizon T (problem x method rows)."""
    done = _ok(table)
    done = done[(done["h"] == STEP) & done["late_penetration"].notna()]
    done = done[done["t_end"].isin(HORIZONS["full"] + HORIZONS["quick"])]
    if done.empty:
        return pd.DataFrame(columns=["problem", "method"])
    wide = done.pivot_table(
        index=["problem", "method"], columns="t_end", values="late_penetration", sort=False
    )
    wide.columns = [f"T = {t:g}" for t in wide.columns]
    return wide.reset_index()


def depth_against_step(table: pd.DataFrame) -> pd.DataFrame:
    """Per problem and method: the order of the depth at T = 100 against h, fitted on the
    median over each phase family (:mod:`impactbench.analysis.fitting`: 95 % interval; depths below
    100 eps times the case's position scale are round-off), and the largest depth /
    (alpha h^2) over every run."""
    done = _ok(table)
    nominal = np.concatenate([STEPS["full"], STEPS["quick"]])
    done = done[(done["t_end"] == STEP_HORIZON) & done["h_nominal"].isin(nominal)]
    done = done[done["late_penetration"].notna()]
    medians = phase_medians(done, ["late_penetration"])
    rows = []
    for (problem, method), group in medians.groupby(["problem", "method"], sort=False):
        runs = done[(done["problem"] == problem) & (done["method"] == method)]
        ratio = runs["late_penetration"] / (CASES[problem].alpha * runs["h"] ** 2)
        floor = error_floor(CASES[problem].position_scale)
        fit = fit_order(group["h"], group["late_penetration"], floor=floor)
        rows.append(
            {
                "problem": problem,
                "method": method,
                "steps": len(group),
                "runs": len(runs),
                "largest depth": float(runs["late_penetration"].max()),
                "largest depth / (alpha h^2)": float(ratio.max()),
                "order [95 % interval]": fit.text("h"),
                "order": fit.order if fit.status == ORDER else float("nan"),
            }
        )
    columns = ["problem", "method", "steps", "runs", "largest depth"]
    columns += ["largest depth / (alpha h^2)", "order [95 % interval]", "order"]
    return pd.DataFrame(rows, columns=columns)


#: Units of the tables' columns: gaps in m (every built-in gap is a distance), alpha the
#: gap's acceleration, energies in J.
UNITS = {
    "contact persists after": "s",
    "alpha": "m/s^2",
    "largest depth": "m",
    "largest depth / (alpha h^2)": "-",
    "largest increase": "J",
    "bound": "J",
    "impact events": "-",
    "depth": "m",
}


def _horizon_units(by_time: pd.DataFrame) -> dict[str, str]:
    """The depth at each horizon (the columns ``T = ...`` of :func:`depth_against_time`), in m."""
    return {name: "m" for name in by_time.columns if str(name).startswith("T = ")}


def growth_for_paper(by_time: pd.DataFrame) -> Summary:
    """The LaTeX copy of the depth against the horizon: per method, over the problems, the
    depth at the longest horizon over the depth at the shortest (1 where the contact holds),
    median and range."""
    horizons = [c for c in by_time.columns if str(c).startswith("T = ")]
    rows = []
    if len(horizons) >= 2:
        ratio = by_time[horizons[-1]] / by_time[horizons[0]]
        for method, values in ratio.groupby(by_time["method"], sort=False):
            rows.append(
                {
                    "method": method,
                    "problems [-]": int(values.notna().sum()),
                    f"depth ({horizons[-1]}) / depth ({horizons[0]}) [-]": interval_text(values),
                }
            )
    note = "per method the median over the problems [smallest, largest]; the depths in the report"
    return Summary(pd.DataFrame(rows), note)


def orders_for_paper(by_step: pd.DataFrame) -> Summary:
    """The LaTeX copy of the depth against the step: per method, over the problems, the fitted
    order (where the sweep gives one) and the largest depth / (alpha h^2), median and range."""
    rows = []
    for method, group in by_step.groupby("method", sort=False):
        rows.append(
            {
                "method": method,
                "problems [-]": len(group),
                "fitted [-]": int(group["order"].notna().sum()),
                "order in h [-]": interval_text(group["order"]),
                "largest depth / (alpha h^2) [-]": interval_text(
                    group["largest depth / (alpha h^2)"]
                ),
            }
        )
    note = "per method the median over the problems [smallest, largest]; each fit in the report"
    return Summary(pd.DataFrame(rows), note)


def energy_increases(table: pd.DataFrame) -> pd.DataFrame:
    """Largest per-step energy increase (every step stored) against the position rule's bound."""
    done = _ok(table)
    done = done[(done["output_every"] == 1) & (done["t_end"] == ENERGY_HORIZON)]
    done = done[done["max_energy_increase"].notna()]
    rows = []
    for row in done.itertuples():
        bound = energy_increase_bound(CASES[row.problem].factory(), row.h)
        rows.append(
            {
                "problem": row.problem,
                "method": row.method,
                "h": row.h,
                "largest increase": row.max_energy_increase,
                "bound": bound,
            }
        )
    frame = pd.DataFrame(rows, columns=["problem", "method", "h", "largest increase", "bound"])
    return frame.drop_duplicates(["problem", "method", "h"])


#: A run chatters when its impact events exceed this fraction of its steps: impacts at the step
#: scale, where a persistent contact should give one event per contact phase.
CHATTER_FRACTION = 0.01
#: Rows of the chatter table (the runs with the most events per step).
CHATTER_ROWS = 20


def chatter(table: pd.DataFrame) -> pd.DataFrame:
    """Runs whose impact events exceed ``CHATTER_FRACTION`` of their steps, most events per step
    first, counts printed as ">= N" where the impact log overflowed."""
    done = _ok(table)
    done = done.assign(capped=capped_flags(done), per_step=done["impacts"] / done["steps"])
    rows = done[done["per_step"] > CHATTER_FRACTION].sort_values(
        ["per_step", "late_penetration"], ascending=False, na_position="last", kind="stable"
    )
    rows = rows.drop_duplicates(["problem", "method", "h", "t_end"])  # the energy runs repeat
    columns = ["problem", "method", "h", "T", "impact events", "steps", "events per step"]
    frame = pd.DataFrame(
        {
            "problem": rows["problem"],
            "method": rows["method"],
            "h": rows["h"],
            "T": rows["t_end"],
            "impact events": [
                count_text(n, c) for n, c in zip(rows["impacts"], rows["capped"], strict=True)
            ],
            "steps": rows["steps"],
            "events per step": rows["per_step"].astype(float),
            "depth": rows["late_penetration"],
        },
        columns=[*columns, "depth"],
    )
    return frame.reset_index(drop=True)


def _outlier_findings(table: pd.DataFrame, chattering: pd.DataFrame) -> list[str]:
    """Capped impact logs, chatter and the largest depth of every run, with their runs."""
    findings = []
    done = _ok(table)
    capped = done[capped_flags(done)]
    if not capped.empty:
        worst = capped.loc[capped["impact_log_entries"].idxmax()]
        findings.append(
            f"{len(capped)} of {len(done)} runs overflowed their impact log: their impact "
            "events, contact phases and contact time count the stored entries only and are "
            f"lower bounds (column impacts_capped; printed >= N), e.g. {worst['problem']}, "
            f"{worst['method']}, h = {format_number(worst['h'])}, T = {worst['t_end']:g}: "
            f"{count_text(worst['impacts'], True)} events, {worst['impact_log_entries']} log "
            "entries."
        )
    if not chattering.empty:
        worst = [
            f"{method}: {top['problem']}, h = {format_number(top['h'])}, T = {top['T']:g}, "
            f"{top['impact events']} events in {top['steps']} steps, depth "
            f"{format_number(top['depth'])}"
            for method, top in chattering.groupby("method", sort=True).first().iterrows()
        ]
        findings.append(
            f"Chatter (impact events more than {CHATTER_FRACTION:g} of the steps, all "
            f"constraints counted) in {len(chattering)} runs; the most events per step of each "
            f"method: {'; '.join(worst)}."
        )
    deep = done[done["late_penetration"].notna()]
    for method, rows in deep.groupby("method", sort=False):
        if method != "PaoliSchatzman":
            continue
        worst = rows.loc[rows["late_penetration"].idxmax()]
        findings.append(
            f"PaoliSchatzman over every run (both sweeps): largest depth over [T/2, T] "
            f"{format_number(worst['late_penetration'])} ({worst['problem']}, "
            f"h = {format_number(worst['h'])}, T = {worst['t_end']:g}, "
            f"{count_text(worst['impacts'], bool(capped_flags(rows).loc[worst.name]))} impact "
            "events)."
        )
    return findings


def _figures(table: pd.DataFrame, folder: Path) -> list[str]:
    done = _ok(table)
    labels = [label for label in CASES if label in set(done["problem"])]
    if not labels:
        return ["None (no run finished).\n"]
    links = []
    views = [
        (
            "depth_against_t",
            "t_end",
            "late_penetration",
            "horizon $T$ [s]",
            r"depth $\max_{[T/2, T]} (-g)$ [m]",
        ),
        (
            "depth_against_h",
            "h",
            "late_penetration",
            "step $h$ [s]",
            r"depth $\max_{[50, 100]} (-g)$ [m]",
        ),
        ("energy_against_t", "t_end", "energy_at_end", "horizon $T$ [s]", "energy $E(T)$ [J]"),
    ]
    for name, x, y, xlabel, ylabel in views:
        figure, axes = new_figure(len(labels), width=3.6, height=3.4)
        for ax, label in zip(axes, labels, strict=True):
            group = done[done["problem"] == label]
            if x == "t_end":
                group = group[group["h"] == STEP]
            else:
                group = group[group["t_end"] == STEP_HORIZON]
            group = group.drop_duplicates(["method", x])
            if y == "energy_at_end":
                for method, rows in group.groupby("method", sort=True):
                    rows = rows.sort_values(x)
                    ax.plot(rows[x], rows[y], label=method, **method_style(str(method)))
                ax.set_xscale("log")
            else:
                plot_methods(ax, group, x, y)
            ax.set_title(label, fontsize=9)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
        shared_legend(figure, axes, columns=3)
        save_figure(figure, folder / f"{name}.png")
        links.append(f"![{name}]({name}.png)\n")
    return links


def _findings(by_time: pd.DataFrame, by_step: pd.DataFrame, energy: pd.DataFrame) -> list[str]:
    findings = []
    horizons = [c for c in by_time.columns if c.startswith("T = ")]
    if len(horizons) >= 2:
        first, last = horizons[0], horizons[-1]
        for rule in ("activation=position", "activation=approaching"):
            rows = by_time[by_time["method"].str.contains(rule, regex=False)]
            rows = rows[rows[first].notna() & rows[last].notna()]
            curved = rows[rows["problem"] == CURVED_SLIDING]
            rows = rows[rows["problem"] != CURVED_SLIDING]
            if not curved.empty:
                findings.append(
                    f"Curved sliding contact ({CURVED_SLIDING}), `{rule}`: depth over [T/2, T] "
                    f"from {format_number(curved[first].max())} at {first} to "
                    f"{format_number(curved[last].max())} at {last} (velocity schemes)."
                )
            if rows.empty:
                continue
            growth = (rows[last] / rows[first].where(rows[first] > 0)).replace(np.inf, np.nan)
            worst = rows.loc[rows[last].idxmax()]
            findings.append(
                f"Velocity schemes with `{rule}` on the resting and flat sliding contacts: "
                f"deepest state over [T/2, T] at {last} is "
                f"{format_number(worst[last])} ({worst['problem']}, {worst['method']}); depth "
                f"at {last} over depth at {first}: {format_number(growth.min())} to "
                f"{format_number(growth.max())}."
            )
        ps = by_time[by_time["method"] == "PaoliSchatzman"]
        if ps[horizons].notna().any().any():
            findings.append(
                f"PaoliSchatzman at h = {STEP:g}: largest depth over [T/2, T] at any horizon "
                f"{format_number(float(ps[horizons].max().max()))}."
            )
    fitted = by_step[by_step["order"].notna()]
    position = fitted[fitted["method"].str.contains("activation=position", regex=False)]
    if not position.empty:
        low = position.loc[position["order"].idxmin()]
        high = position.loc[position["order"].idxmax()]
        column = "largest depth / (alpha h^2)"
        worst = position.loc[position[column].idxmax()]
        findings.append(
            f"Depth at T = 100 against h with the position rule: orders from "
            f"{low['order [95 % interval]']} ({low['problem']}, {low['method']}) to "
            f"{high['order [95 % interval]']} ({high['problem']}, {high['method']}); largest "
            f"depth / (alpha h^2) {format_number(worst[column])} ({worst['problem']})."
        )
        resting = position[position["problem"] != CURVED_SLIDING]
        if not resting.empty and CURVED_SLIDING in set(position["problem"]):
            findings.append(
                f"Without the curved sliding contact ({CURVED_SLIDING}, where the velocity "
                f"schemes drift), the largest depth / (alpha h^2) of the position rule is "
                f"{format_number(resting[column].max())}: the depth is O(alpha h^2)."
            )
    if not energy.empty:
        bounded = energy[energy["bound"].notna()]  # one affine constraint, constant M and F
        pos = bounded[bounded["method"].str.contains("activation=position", regex=False)]
        app = bounded[bounded["method"].str.contains("activation=approaching", regex=False)]
        if not pos.empty and not app.empty:
            ratio = (pos["largest increase"] / pos["bound"]).max()
            findings.append(
                f"Largest per-step energy increase of Moreau-Jean with the position rule on "
                f"{', '.join(sorted(set(pos['problem'])))}: "
                f"{format_number(pos['largest increase'].max())} (at most "
                f"{format_number(ratio)} of the O(h^2) bound); with the approaching rule: "
                f"{format_number(app['largest increase'].max())}."
            )
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Depth tables against T and h, energy-increase table, figures and findings."""
    by_time = depth_against_time(table)
    by_step = depth_against_step(table)
    energy = energy_increases(table)
    chattering = chatter(table)
    cases = pd.DataFrame(
        [
            {
                "problem": label,
                "model": case.description,
                "contact persists after": case.settled_after,
                "alpha": case.alpha,
            }
            for label, case in CASES.items()
        ]
    )
    sections = [
        Section("Problems", markdown_table(cases, units=UNITS)),
        Section(
            "Depth below the constraint against the horizon",
            f"max(0, -min g) over the second half [T/2, T] of a run of horizon T, h = {STEP:g} "
            "(gap units). A persistent contact that holds keeps the same depth for every T.\n\n"
            + markdown_table(
                by_time, units=_horizon_units(by_time), latex=growth_for_paper(by_time)
            ),
        ),
        Section(
            "Depth against the step",
            f"Depth over [50, 100] of runs to T = {STEP_HORIZON:g}, each nominal step h run "
            "at a phase family h (1 + delta_j); order = least-squares slope of the median depth "
            "per family on h in log scale with its 95 % t-interval; depths below 100 eps times "
            "the largest |q| of the case are round-off and are not fitted "
            "(impactbench.analysis.fitting).\n\n"
            + markdown_table(
                by_step.drop(columns="order"), units=UNITS, latex=orders_for_paper(by_step)
            ),
        ),
        Section(
            "Largest energy increase per step",
            f"Every step stored, T = {ENERGY_HORIZON:g}; bound = (1 - e) h^2 alpha^2 / "
            "(8 (1 + e) w), the largest increase the position rule allows for one affine "
            "constraint with constant M and F (- elsewhere). Moreau-Jean only: catching-up "
            "balances E - (h/2) F^T v (its E rises by h^2 |F|^2 / 2 per free step by design) "
            "and Paoli-Schatzman's velocity is a central difference, not a state. The pin on "
            "the clearance wall is pushed by a load that has no potential in TightJoint (its "
            "energy is the spring's): its energy changes by the load's work.\n\n"
            + markdown_table(energy, units=UNITS),
        ),
        Section(
            "Chatter and capped impact logs",
            f"Runs whose impact events (impactbench.analysis.impact_events) exceed "
            f"{CHATTER_FRACTION:g} of their steps, i.e. impacts at the step scale where a "
            f"persistent contact gives one event per contact phase; the {CHATTER_ROWS} with "
            "the most events per step ("
            f"{len(chattering)} in all). A count printed >= N comes from an impact log that "
            "overflowed its capacity (column impacts_capped of the results): a lower bound.\n\n"
            + markdown_table(chattering.head(CHATTER_ROWS), units=UNITS),
        ),
        Section("Figures", "\n".join(_figures(table, folder))),
    ]
    findings = _findings(by_time, by_step, energy) + _outlier_findings(table, chattering)
    return StudyReport(sections, findings)


STUDY = Study(
    name="persistent_contact",
    title="Persistent contact over long horizons",
    description=(
        "Resting and sliding contacts (a ball at rest, a particle sliding on the slanted wall "
        "with non-diagonal M, a column of four beads come to rest on the floor, a pin resting "
        "on one wall of its clearance with two constraints, a pin resting in and sliding "
        "along a circular hole) integrated to T = 3000 by every time-stepping scheme, the "
        "velocity schemes with both activation rules: depth below the constraint against T "
        "and against h, largest per-step energy increase against the position rule's O(h^2) "
        "bound, energy at T."
    ),
    runs=runs,
    report=report,
)
