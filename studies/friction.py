"""Friction: orders, cost, limit cycles, Housner's law and Painleve's paradox (docs/friction.md).

Five parts in one table, one row per run:

* **orders** through stick-slip against the closed forms: the block launched down a gentle
  incline (it decelerates, stops and sticks) and the friction oscillator (ellipse arcs, then
  stuck for ever). Fixed-step schemes by h in phase families (the methodology of
  :mod:`.convergence`: each nominal step run at h (1 + delta_j), orders fitted on the medians
  with their 95 % intervals, errors at the round-off floor excluded) and the event-driven
  method by rtol, step-size-controlled time-stepping (:class:`impactbench.Adaptive` with
  MoreauJean, the settings of :mod:`._adaptive`, the scheme's friction law) by rtol too;
* **work-precision** on the same runs (the cost and error grid of :mod:`.work_precision`:
  wall time, the minimum over repeats of at least 10 ms after a warm-up with its spread,
  compiled integration time beside it, force evaluations; verdicts by the ratio of median
  times with its bootstrap interval, :data:`impactbench.analysis.timing.PROTOCOL_TEXT`);
* the **woodpecker**'s limit cycle: period (between the sleeve's two jams), phi_S's extremes
  and the drop per cycle against h and rtol, beside Siconos' run of the same example;
* **Housner**'s law on the rocking block: omega+ / omega- at the first impacts against
  r = 1 - (3/2) sin^2 alpha (mu above the sticking friction) and against the sliding impact's
  closed form (mu below it);
* the **Painleve** rod: what each family does (its status and message, or where the tangential
  velocity jumps and the rod leaves the floor).

Every row records the impact law's energy (columns ``energy_creating_impacts``, the impacts
whose Newton-Coulomb law created kinetic energy, and ``largest_impact_energy_gain``: the law
is energetically consistent for e_N = e_T or a decoupled Delassus matrix, docs/friction.md).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import FIT_COLUMNS, fit_order, fit_row, phase_medians
from impactbench.analysis.metrics import ERROR_GRID_TEXT, error_floor
from impactbench.analysis.reference import Reference
from impactbench.analysis.timing import (
    PROTOCOL_TEXT,
    STUDY_REPEATS,
    VERDICT_TEXT,
    comparison_families,
    crossover,
    crossover_text,
    with_spreads,
)
from impactbench.bench.latex import Summary
from impactbench.bench.plugins import study_methods
from impactbench.bench.report import (
    format_number,
    markdown_table,
    new_figure,
    plot_medians,
    plot_methods,
    save_figure,
    shared_legend,
)
from impactbench.bench.results import read_artefact, write_table
from impactbench.bench.runner import FAILED, Case, Grid, Run, expand
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import metric_unit
from impactbench.core.adaptive import Adaptive
from impactbench.core.method import TIME_STEPPING
from impactbench.core.problem import Problem
from impactbench.core.trajectory import Trajectory
from impactbench.problems import (
    FrictionOscillator,
    PainleveRod,
    RockingBlock,
    SlidingBlock,
    Woodpecker,
)

from . import _adaptive
from ._crossover import crossover_section

METRICS = ("max_position_error", "hausdorff_velocity_distance")
#: The impact law's energy record, a column of every run (docs/friction.md: the Newton-Coulomb
#: law with e_N != e_T can create energy at an impact).
LAW_ENERGY = ("energy_creating_impacts", "largest_impact_energy_gain")
LABELS = {
    "max_position_error": r"$\max_t |q - q_{\mathrm{ex}}|$",
    "hausdorff_velocity_distance": r"Hausdorff dist. of $v$ graphs",
}
#: The frictional fixed-step schemes of the orders, by class name, with their parameters.
ORDER_SCHEMES = {
    "MoreauJean": [{"theta": 0.5}, {"theta": 0.5, "implicit": True}],
    "CatchingUp": [{}],
    "NonsmoothGeneralizedAlpha": [{}],
}
#: The fixed-step schemes on the woodpecker, the rocking block and the Painleve rod (the
#: implicit MoreauJean differs from the explicit one by its linear forces, which these
#: problems do not declare), and those of the quick grid.
CASE_SCHEMES = {name: ORDER_SCHEMES[name][:1] for name in ORDER_SCHEMES}
QUICK_SCHEMES = {"MoreauJean": [{"theta": 0.5}]}
#: The schemes of the quick grid's orders (few runs: the quick run of every study is a test).
QUICK_ORDER_SCHEMES = {"MoreauJean": [{"theta": 0.5}], "CatchingUp": [{}]}
STEPS = {"full": np.geomspace(3e-4, 1e-2, 8), "quick": np.geomspace(2e-3, 1e-2, 4)}
PHASES = {"full": 5, "quick": 3}
TOLERANCES = {"full": [10.0**-k for k in range(3, 11)], "quick": [1e-4, 1e-6]}
#: The tolerances of the step-size-controlled family (:func:`_adaptive_grids`) on the orders'
#: cases, 11 over 5 decades (an order is fitted on >= 10 points); none in the quick grid (one
#: compiled loop less in the suite's quick run).
ADAPTIVE_TOLERANCES = {"full": [10.0 ** (-k / 2) for k in range(4, 15)], "quick": []}
ADAPTIVE_H_MAX = 1e-2
REPEATS = STUDY_REPEATS
#: Error targets of the work-precision comparison.
TARGETS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-6)
#: The file of the crossovers of the families' cost curves (:mod:`._crossover`).
CROSSOVERS_FILE = "crossovers.csv"

#: The convergence cases: the block launched down an incline flatter than the friction angle
#: (stops at t* = 0.700 s, then sticks), the oscillator through its arcs into the stick.
BLOCK = {"angle": 0.2, "mu": 0.5, "u0": 2.0}
ORDER_CASES = [
    Case(SlidingBlock, 1.5, BLOCK),
    Case(FrictionOscillator, 30.0),
]

#: Siconos' run of the woodpecker (MoreauJeanOSI theta = 1/2, h = 2e-5, its regression output
#: tests/data/siconos/Woodpecker10.ref sampled every 2e-4 s): the period between the sleeve's
#: two jams, phi_S's extremes over that cycle and the drop of the sleeve (tests assert these
#: against the file).
SICONOS_WOODPECKER = {"period": 0.1460, "phi_s_max": 0.11977, "phi_s_min": -0.53019,
                      "drop": 0.019476}  # fmt: skip
#: Sampling of Siconos' stored output (its period is known to this).
SICONOS_SAMPLING = 2e-4
WOODPECKER_T = 0.3
WOODPECKER_STEPS = {"full": [8e-5, 4e-5, 2e-5, 1e-5], "quick": [2e-5]}
WOODPECKER_TOLERANCES = {"full": [1e-6, 1e-8], "quick": []}
WOODPECKER_ADAPTIVE = {"full": [1e-3, 1e-5], "quick": []}

#: The rocking block released at rest from 0.1 rad, e_N = 0: mu = 1 above the sticking friction
#: 0.288 (Housner's law), mu = 0.25 below it (the new corner slides at impact).
ROCKING = [({"angle": 0.1, "mu": 1.0}, 1.2, 3), ({"angle": 0.1, "mu": 0.25}, 0.3, 1)]
ROCKING_STEPS = {"full": [1e-4, 1e-5], "quick": [1e-4]}
ROCKING_TOLERANCES = {"full": [1e-8], "quick": []}
ROCKING_IMPACTS = 3

#: The Painleve rod (mu = 1.5 > 4/3): sliding from 40 degrees into the singular point, and
#: started inconsistent at 55 degrees (an impact without collision).
PAINLEVE = [
    ("PainleveRod", {}, 0.15),
    ("PainleveRod (inconsistent start)", {"angle": math.radians(55.0), "slip": -1.0}, 0.01),
]
PAINLEVE_STEPS = {"full": [1e-4, 1e-5], "quick": [1e-4]}
PAINLEVE_TOLERANCES = {"full": [1e-8], "quick": []}
PAINLEVE_ADAPTIVE = {"full": [1e-3], "quick": []}
#: Gap above which the rod has left the floor.
LIFT_OFF = 1e-5

PART = {"orders": "orders", "woodpecker": "woodpecker", "rocking": "rocking",
        "painleve": "painleve"}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Artefacts (computed by the runner from the trajectory, stored with the run)


def cycle_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """The woodpecker's cycle (artefact ``cycle``): the times the sleeve jams (both its
    tangential velocity y' + r_M phi_M' = 0 and an edge closed, after a sample where it was
    not), the period between the first two, phi_S's extremes and the drop of y between them,
    and the beak's impact times; NaN where fewer than two jams."""
    t, q, v = trajectory.t, trajectory.q, trajectory.v
    gaps = np.array([problem.gap(qi) for qi in q])
    sleeve = v[:, 0] + problem.r_M * v[:, 1]
    stick = (np.abs(sleeve) <= 1e-9) & np.any(gaps[:, 1:] <= 1e-9, axis=1)
    onsets = np.flatnonzero(stick[1:] & ~stick[:-1]) + 1
    beak = trajectory.impacts.t[trajectory.impacts.constraint == 0]
    row = {"jams": len(onsets), "beak_impacts": len(np.unique(np.round(beak, 6)))}
    row.update(period=np.nan, phi_s_max=np.nan, phi_s_min=np.nan, drop=np.nan, first_jam=np.nan)
    if len(onsets) >= 2:
        a, b = onsets[:2]
        row.update(
            first_jam=t[a],
            period=t[b] - t[a],
            phi_s_max=q[a:b, 2].max(),
            phi_s_min=q[a:b, 2].min(),
            drop=q[a, 0] - q[b, 0],
        )
    return {"cycle": pd.DataFrame([row])}


def housner_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """omega+ / omega- at the first impacts of the rocking block (artefact ``housner``): at
    each sign change of phi, the impact's pair of samples within 3 samples of it: the pair at
    the same time where the output has one (an event-driven run stores the states before and
    after an impact at its time), else the sample step of largest |change of omega| (a
    time-stepper's impact step); beside Housner's r and the one-corner law's ratio at the
    block's mu (RockingBlock.impact_ratio)."""
    t, phi, omega = trajectory.t, trajectory.q[:, 2], trajectory.v[:, 2]
    crossings = np.flatnonzero(np.sign(phi[1:]) != np.sign(phi[:-1]))[:ROCKING_IMPACTS]
    rows = []
    for index, k in enumerate(crossings, start=1):
        window = np.arange(max(k - 3, 0), min(k + 3, len(omega) - 1))
        same_time = window[t[window + 1] == t[window]]
        candidates = same_time if same_time.size else window
        j = candidates[np.argmax(np.abs(omega[candidates + 1] - omega[candidates]))]
        rows.append(
            {
                "impact": index,
                "t": t[j + 1],
                "omega_before": omega[j],
                "ratio": omega[j + 1] / omega[j],
                "housner": problem.housner_ratio,
                "closed_form": problem.impact_ratio(),
                "impact_speed": problem.impact_speed(),
            }
        )
    columns = ["impact", "t", "omega_before", "ratio", "housner", "closed_form", "impact_speed"]
    return {"housner": pd.DataFrame(rows, columns=columns)}


def painleve_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """What a run on the Painleve rod did (artefact ``painleve``): the largest change of the
    end's tangential velocity U_T between consecutive samples and its time, U_T and U_N after
    the first step, the time the end first rises LIFT_OFF above the floor (NaN: never), and
    the sliding phase's singular time (PainleveRod.sliding_phase, NaN when it ends otherwise)."""
    length, theta = problem.half_length, trajectory.q[:, 2]
    u_t = trajectory.v[:, 0] + length * np.sin(theta) * trajectory.v[:, 2]
    u_n = trajectory.v[:, 1] - length * np.cos(theta) * trajectory.v[:, 2]
    change = np.abs(np.diff(u_t))
    k = int(np.argmax(change)) if change.size else 0
    gap = problem.gaps(trajectory.q)[:, 0]
    lifted = np.flatnonzero(gap > LIFT_OFF)
    t_s, _, which = problem.sliding_phase(float(trajectory.t[-1]) + 1.0)
    row = {
        "t_end": trajectory.t[-1],
        "largest_jump": change[k] if change.size else np.nan,
        "jump_time": trajectory.t[k + 1] if change.size else np.nan,
        "u_t_after_first": u_t[1] if u_t.size > 1 else np.nan,
        "u_n_after_first": u_n[1] if u_n.size > 1 else np.nan,
        "lift_off": trajectory.t[lifted[0]] if lifted.size else np.nan,
        "singular_time": t_s if which == "singular point" else np.nan,
    }
    return {"painleve": pd.DataFrame([row])}


# --------------------------------------------------------------------------------------------
# The grid


def _scheme_grids(methods: dict, variants: dict) -> list[Grid]:
    return [
        Grid(methods[name], {key: [value] for key, value in parameters.items()})
        for name, options in variants.items()
        for parameters in options
        if name in methods
    ]


def _event_driven(methods: dict, tolerances: list[float], compiled: bool = True) -> list[Grid]:
    """EventDriven by rtol; ``compiled=False``: its plain-Python engine (the same algorithm,
    docs/friction.md), for the short runs of the woodpecker, the rocking block and the rod,
    where compiling the event loop for each problem would take minutes for a few runs."""
    if "EventDriven" not in methods or not tolerances:
        return []
    parameters = {"rtol": tolerances} if compiled else {"rtol": tolerances, "compiled": [False]}
    return [Grid(methods["EventDriven"], parameters, tolerance="rtol")]


def _adaptive_grids(tolerances: list[float], h_max: float) -> list[Grid]:
    """:class:`impactbench.Adaptive` with MoreauJean by rtol (the settings of :mod:`._adaptive`:
    atol = 1e-2 rtol, gap_tolerance = rtol), which steps MoreauJean's frictional loop."""
    return [
        Grid(
            Adaptive,
            {
                "scheme": ["MoreauJean"],
                "rtol": [rtol],
                "atol": [_adaptive.ATOL_RATIO * rtol],
                "gap_tolerance": [rtol],
                "h_max": [h_max],
            },
            tolerance="rtol",
        )
        for rtol in tolerances
    ]


def runs(quick: bool) -> list[Run]:
    """The five parts' runs (module docstring). The quick grid (no run in it fails, and its
    loops are those the test suite compiles) keeps the oscillator's orders over 4 steps
    (MoreauJean and CatchingUp) with the event-driven method at 2 tolerances, and MoreauJean
    alone on the woodpecker, the rocking block (mu = 1) and the sliding Painleve rod, at one
    step each."""
    methods = study_methods()
    grid = "quick" if quick else "full"
    cases = ORDER_CASES[1:] if quick else ORDER_CASES
    others = QUICK_SCHEMES if quick else CASE_SCHEMES
    options = {"metrics": (*METRICS, *LAW_ENERGY), **REPEATS[grid]}
    law = {"metrics": LAW_ENERGY}
    result = expand(
        cases,
        _scheme_grids(methods, QUICK_ORDER_SCHEMES if quick else ORDER_SCHEMES),
        steps=STEPS[grid].tolist(),
        phases=PHASES[grid],
        **options,
    )
    result += expand(cases, _event_driven(methods, TOLERANCES[grid]), **options)
    result += expand(
        cases,
        _adaptive_grids(ADAPTIVE_TOLERANCES[grid], ADAPTIVE_H_MAX),
        artefact=_adaptive.control_artefact,
        **options,
    )
    woodpecker = [Case(Woodpecker, WOODPECKER_T)]
    wood = expand(woodpecker, _scheme_grids(methods, others), steps=WOODPECKER_STEPS[grid], **law)
    wood += expand(woodpecker, _event_driven(methods, WOODPECKER_TOLERANCES[grid], False), **law)
    wood += expand(woodpecker, _adaptive_grids(WOODPECKER_ADAPTIVE[grid], 1e-3), **law)
    result += [replace(run, artefact=cycle_artefact) for run in wood]
    rocking_cases = [
        Case(RockingBlock, t_end, kwargs, f"RockingBlock (mu={kwargs['mu']:g})")
        for kwargs, t_end, _ in (ROCKING[:1] if quick else ROCKING)
    ]
    rocking = expand(
        rocking_cases, _scheme_grids(methods, others), steps=ROCKING_STEPS[grid], **law
    )
    rocking += expand(rocking_cases, _event_driven(methods, ROCKING_TOLERANCES[grid], False), **law)
    result += [replace(run, artefact=housner_artefact) for run in rocking]
    rods = [
        Case(PainleveRod, t_end, kwargs, label)
        for label, kwargs, t_end in (PAINLEVE[:1] if quick else PAINLEVE)
    ]
    rod_runs = expand(rods, _scheme_grids(methods, others), steps=PAINLEVE_STEPS[grid], **law)
    rod_runs += expand(rods, _event_driven(methods, PAINLEVE_TOLERANCES[grid], False), **law)
    rod_runs += expand(rods, _adaptive_grids(PAINLEVE_ADAPTIVE[grid], 1e-3), **law)
    result += [replace(run, artefact=painleve_artefact) for run in rod_runs]
    return result


def part(table: pd.DataFrame) -> pd.Series:
    """Which part of the study each row belongs to (module docstring), from its problem."""
    problems = table["problem"].astype(str)
    return np.select(
        [
            problems.str.startswith("Woodpecker"),
            problems.str.startswith("RockingBlock"),
            problems.str.startswith("PainleveRod"),
        ],
        ["woodpecker", "rocking", "painleve"],
        "orders",
    )


# --------------------------------------------------------------------------------------------
# Orders and work-precision


def floors(table: pd.DataFrame) -> dict[tuple[str, str], float]:
    """The round-off floor of each metric on each convergence problem (error_floor against
    the closed form, as :func:`studies._exact.exact_floors`)."""
    cases = {case.problem.__name__: case for case in ORDER_CASES}
    result = {}
    for problem in table["problem"].unique():
        case = cases[str(problem)]
        instance = case.problem(**case.problem_kwargs)
        reference = Reference.exact(instance, case.t_end)
        for metric in METRICS:
            result[(problem, metric)] = error_floor(metric, instance, reference, case.t_end)
    return result


def families(table: pd.DataFrame) -> pd.DataFrame:
    """One row per phase family of the convergence runs (fixed steps: nominal h; adaptive
    families: rtol), the three families named (:func:`comparison_families`): median errors,
    costs, the spread of the wall times and the integration time."""
    rows = table[part(table) == "orders"]
    rows = comparison_families(_adaptive.labelled(rows))
    values = [*METRICS, "wall_time", "wall_time_spread", "integration_time", "force_evaluations"]
    return phase_medians(with_spreads(rows), values, keys=("family",))


def _axis(family: str) -> str:
    return "h" if family == TIME_STEPPING else "tolerance"


def fit_orders(medians: pd.DataFrame, limits: dict) -> pd.DataFrame:
    """The fitted order of each problem, method and metric on the phase medians (axis h for
    fixed steps, rtol for the adaptive families), with its 95 % interval (long form)."""
    rows = []
    for (problem, method), group in medians.groupby(["problem", "method"], sort=False):
        family = group["family"].iloc[0]
        axis = _axis(family)
        for metric in METRICS:
            fit = fit_order(
                group[axis].to_numpy(), group[metric].to_numpy(), floor=limits[(problem, metric)]
            )
            rows.append(
                {
                    "problem": problem,
                    "method": method,
                    "family": family,
                    "metric": metric,
                    "axis": axis,
                    **fit_row(fit, "h" if axis == "h" else "rtol"),
                }  # fmt: skip
            )
    return pd.DataFrame(rows, columns=["problem", "method", "family", "metric", "axis",
                                       *FIT_COLUMNS])  # fmt: skip


def _orders_table(orders: pd.DataFrame) -> str:
    rows = []
    for (problem, method, axis), group in orders.groupby(["problem", "method", "axis"], sort=False):
        fits = group.set_index("metric")
        row = {"problem": problem, "method": method, "axis": axis}
        row.update({LABELS[metric]: fits.at[metric, "text"] for metric in METRICS})
        rows.append(row)
    return markdown_table(pd.DataFrame(rows))


def cheapest(medians: pd.DataFrame) -> pd.DataFrame:
    """Per problem and error target: the run of the least wall time whose median position
    error is at most the target, with its spread and integration time."""
    rows = []
    for problem, group in medians.groupby("problem", sort=False):
        row = {"problem": problem}
        for target in TARGETS:
            reached = group[group["max_position_error"] <= target]
            cell = "-"
            if not reached.empty:
                best = reached.loc[reached["wall_time"].idxmin()]
                axis = "h" if best["family"] == TIME_STEPPING else "rtol"
                value = best["h"] if axis == "h" else best["tolerance"]
                cell = (
                    f"{best['method']} ({axis}={format_number(value, 2)}, "
                    f"{format_number(best['wall_time'], 2)} s +/- "
                    f"{format_number(best['wall_time_spread'], 2)}, integration "
                    f"{format_number(best['integration_time'], 2)} s)"
                )
            row[f"error <= {target:g}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def cheapest_for_paper(medians: pd.DataFrame) -> Summary:
    """The LaTeX copy of :func:`cheapest`: one row per problem and error target (in the unit of
    the problem's coordinates) with the fastest run's method, step or tolerance, wall time,
    spread of its repeats and integration time."""
    rows = []
    for problem, group in medians.groupby("problem", sort=False):
        unit = metric_unit("max_position_error", str(problem))
        for target in TARGETS:
            reached = group[group["max_position_error"] <= target]
            row = {"problem": problem, "error <= target": f"{target:g} {unit}", "method": "none"}
            if not reached.empty:
                best = reached.loc[reached["wall_time"].idxmin()]
                stepping = best["family"] == TIME_STEPPING
                row.update(
                    {
                        "method": best["method"],
                        "h [s]": best["h"] if stepping else np.nan,
                        "rtol [-]": np.nan if stepping else best["tolerance"],
                        "wall time [s]": best["wall_time"],
                        "spread [s]": best["wall_time_spread"],
                        "integration [s]": best["integration_time"],
                    }
                )
            rows.append(row)
    columns = ["problem", "error <= target", "method", "h [s]", "rtol [-]", "wall time [s]"]
    frame = pd.DataFrame(rows).reindex(columns=[*columns, "spread [s]", "integration [s]"])
    return Summary(frame, "the fastest run per target")


def _figures(medians: pd.DataFrame, limits: dict, folder: Path) -> list[str]:
    links = []
    for problem, group in medians.groupby("problem", sort=False):
        figure, axes = new_figure(4)
        steppers = group[group["family"] == TIME_STEPPING]
        others = group[group["family"] != TIME_STEPPING]
        for ax, metric in zip(axes[:2], METRICS, strict=True):
            plot_medians(ax, steppers, "h", metric)
            ax.set_xlabel("nominal step $h$ [s]")
            ax.set_ylabel(f"{LABELS[metric]} (median) [{metric_unit(metric, str(problem))}]")
        plot_medians(axes[2], others, "tolerance", "max_position_error")
        axes[2].set_xlabel("relative tolerance [-]")
        unit = metric_unit("max_position_error", str(problem))
        axes[2].set_ylabel(f"{LABELS['max_position_error']} [{unit}]")
        resolution = group["h"].fillna(group["tolerance"])
        plot_methods(axes[3], group.assign(resolution=resolution), "wall_time",
                     "max_position_error", order="resolution")  # fmt: skip
        axes[3].set_xlabel("wall time (median) [s]")
        axes[3].set_ylabel(f"{LABELS['max_position_error']} [{unit}]")
        shared_legend(figure, axes, columns=3)
        figure.suptitle(
            f"Friction on {problem}: errors against h, rtol and wall time (medians over the "
            "phase copies, bars: smallest to largest)"
        )
        name = f"friction_{problem}.png"
        save_figure(figure, folder / name)
        links.append(f"![Friction on {problem}]({name})\n")
    return links or ["None (no run finished).\n"]


# --------------------------------------------------------------------------------------------
# Woodpecker, Housner, Painleve


def _runs_with(table: pd.DataFrame, folder: Path, which: str, name: str) -> pd.DataFrame:
    rows = table[part(table) == which]
    done = rows[rows["status"] != FAILED]
    stored = read_artefact(done, folder, name, required=list(done["key"]))
    return rows.merge(stored, on="key", how="left", suffixes=("", f"_{name}"))


def _resolution(row: pd.Series) -> str:
    if pd.notna(row["h"]):
        return f"h={format_number(row['h'], 2)}"
    return f"rtol={format_number(row['tolerance'], 2)}"


def woodpecker(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """Per woodpecker run: period, phi_S's extremes and drop per cycle and their relative
    deviations from Siconos' run (:data:`SICONOS_WOODPECKER`); status and error if failed."""
    rows = []
    for row in _runs_with(table, folder, "woodpecker", "cycle").to_dict("records"):
        row = pd.Series(row)
        entry = {"method": row["method"], "at": _resolution(row), "status": row["status"]}
        for name, value in SICONOS_WOODPECKER.items():
            entry[name] = row.get(name, np.nan)
            entry[f"{name} vs Siconos"] = (row.get(name, np.nan) - value) / abs(value)
        entry["jams"] = row.get("jams", np.nan)
        entry["beak impacts"] = row.get("beak_impacts", np.nan)
        entry["error"] = str(row["error"]) if row["status"] == FAILED else ""
        rows.append(entry)
    return pd.DataFrame(rows)


def housner(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """Per rocking-block run and impact: the measured omega+ / omega- against Housner's r and
    the one-corner law's closed form at the block's mu."""
    rows = []
    for row in _runs_with(table, folder, "rocking", "housner").to_dict("records"):
        rows.append(
            {
                "problem": row["problem"],
                "method": row["method"],
                "at": _resolution(pd.Series(row)),
                "status": row["status"],
                "impact": row.get("impact", np.nan),
                "ratio": row.get("ratio", np.nan),
                "Housner r": row.get("housner", np.nan),
                "ratio - r": row.get("ratio", np.nan) - row.get("housner", np.nan),
                "closed form": row.get("closed_form", np.nan),
                "ratio - closed form": row.get("ratio", np.nan) - row.get("closed_form", np.nan),
                "h": row["h"],
            }
        )
    return pd.DataFrame(rows)


def painleve(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """Per run on the Painleve rod: status, the time reached and, for a failure, its message;
    else the largest jump of U_T, its time, the lift-off time and the singular time."""
    rows = []
    for row in _runs_with(table, folder, "painleve", "painleve").to_dict("records"):
        failed = row["status"] == FAILED
        rows.append(
            {
                "problem": row["problem"],
                "method": row["method"],
                "at": _resolution(pd.Series(row)),
                "status": row["status"],
                "reached t": row.get("t_end_painleve", row.get("t_end")),
                "largest U_T jump": row.get("largest_jump", np.nan),
                "at t": row.get("jump_time", np.nan),
                "U_T after step 1": row.get("u_t_after_first", np.nan),
                "leaves the floor at": row.get("lift_off", np.nan),
                "singular time": row.get("singular_time", np.nan),
                "message": str(row["error"]) if failed else "",
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Findings and report


def _findings(table, orders, medians, cycles, ratios, rods) -> list[str]:
    findings = []
    for (problem, family), group in orders.groupby(["problem", "family"], sort=False):
        cells = []
        for method, fits in group.groupby("method", sort=False):
            texts = fits.set_index("metric")["text"]
            cells.append(
                f"{method}: position {texts['max_position_error']}, Hausdorff v "
                f"{texts['hausdorff_velocity_distance']}"
            )
        axis = "h" if family == TIME_STEPPING else "rtol"
        findings.append(f"{problem}, {family}, order in {axis} [95 %]: " + "; ".join(cells) + ".")
    failed = table[(part(table) == "orders") & (table["status"] == FAILED)]
    for (problem, method), group in failed.groupby(["problem", "method"], sort=False):
        findings.append(
            f"{problem}, {method}: {len(group)} run(s) failed: {group['error'].iloc[0]}"
        )
    for problem, group in medians.groupby("problem", sort=False):
        answers = crossover(group, "max_position_error", TARGETS)
        if answers:
            findings.append(
                f"{problem}: faster family to a max position error ({VERDICT_TEXT}): "
                f"{crossover_text(answers)}."
            )
    for row in cycles.to_dict("records"):
        where = f"Woodpecker, {row['method']} at {row['at']}"
        if row["status"] == FAILED:
            findings.append(f"{where}: failed: {row['error']}")
        elif math.isnan(row["period"]):
            findings.append(
                f"{where}: {row['jams']:.0f} jams of the sleeve to t = {WOODPECKER_T} (no "
                "full cycle between two)."
            )
        else:
            findings.append(
                f"{where}: period {row['period']:.4f} s ({row['period vs Siconos']:+.2%} vs "
                f"Siconos' {SICONOS_WOODPECKER['period']} s), phi_S in "
                f"[{row['phi_s_min']:.3f}, {row['phi_s_max']:.3f}] (Siconos "
                f"[{SICONOS_WOODPECKER['phi_s_min']:.3f}, {SICONOS_WOODPECKER['phi_s_max']:.3f}]"
                f"), drop {row['drop'] * 1e3:.2f} mm per cycle."
            )
    for (problem, method, at), group in ratios.groupby(["problem", "method", "at"], sort=False):
        where = f"{problem}, {method} at {at}"
        if group["status"].iloc[0] == FAILED:
            findings.append(f"{where}: failed.")
            continue
        findings.append(
            f"{where}: omega+/omega- = "
            + ", ".join(f"{value:.4f}" for value in group["ratio"])
            + f" at its first {len(group)} impacts; Housner's r = {group['Housner r'].iloc[0]:.4f}"
            f" (largest |ratio - r| {group['ratio - r'].abs().max():.2g}), the one-corner "
            f"law's closed form at its mu {group['closed form'].iloc[0]:.4f} (largest "
            f"deviation {group['ratio - closed form'].abs().max():.2g})."
        )
    for row in rods.to_dict("records"):
        if row["status"] == FAILED:
            text = f"stops: {row['message']}"
        else:
            text = (
                f"runs to t = {row['reached t']:.4g}, U_T after its first step "
                f"{row['U_T after step 1']:.3g}, largest jump of U_T "
                f"{row['largest U_T jump']:.3g} at t = {row['at t']:.4g} (singular time "
                f"{row['singular time']:.4g}), leaves the floor at t = "
                f"{row['leaves the floor at']:.4g}"
            )
        findings.append(f"{row['problem']}, {row['method']} at {row['at']}: {text}.")
    return findings


#: Units of the columns of the woodpecker's, the rocking block's and the Painleve rod's tables
#: (relative deviations and ratios of angular velocities dimensionless).
TABLE_UNITS = {
    "period": "s",
    "phi_s_max": "rad",
    "phi_s_min": "rad",
    "drop": "m",
    **{f"{name} vs Siconos": "-" for name in SICONOS_WOODPECKER},
    **dict.fromkeys(("ratio", "Housner r", "ratio - r", "closed form", "ratio - closed form"), "-"),
    **dict.fromkeys(("reached t", "at t", "leaves the floor at", "singular time"), "s"),
    **dict.fromkeys(("largest U_T jump", "U_T after step 1"), "m/s"),
}


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Orders, work-precision, the woodpecker's cycle, Housner's ratios and the Painleve rod."""
    medians = families(table)
    limits = floors(medians)
    orders = fit_orders(medians, limits)
    control = _adaptive.error_control(medians, "max_position_error", limits)
    medians = _adaptive.marked(medians, control)
    judged = _adaptive.controlled_only(medians, control)  # the rows the verdicts use
    write_table(orders, folder / "orders.csv")
    write_table(medians, folder / "errors.csv")
    cycles, ratios = woodpecker(table, folder), housner(table, folder)
    rods = painleve(table, folder)
    rules = (
        "Each cell: the least-squares slope of log(error) against log(h) (fixed steps: the "
        "median over the phase copies of each nominal step) or log(rtol) (event-driven), "
        "with its 95 % t-interval; errors below the floor "
        "(100 eps times the problem's scale) excluded, flat and unresolved sweeps named as "
        "such (the rules of the convergence study). Fits with points, decades and residuals "
        "in [orders.csv](orders.csv), the phase medians in [errors.csv](errors.csv)."
    )
    sections = [
        Section("Observed orders through stick-slip", rules + "\n\n" + _orders_table(orders)),
        Section(
            "Fastest run per error target",
            "Median wall time (minimum over the repeats after a warm-up) with the spread of "
            "the repeats and the compiled integration time.\n\n"
            + markdown_table(cheapest(judged), latex=cheapest_for_paper(judged)),
        ),
        Section("Error control of the adaptive family", _adaptive.control_section(control)),
    ]
    # after the tables above: the LaTeX copies are numbered in the order of the report; the
    # adaptive family's rows only where its error is controlled
    crossing, crossing_findings = crossover_section(
        judged, "max_position_error", folder, CROSSOVERS_FILE
    )
    sections += [
        crossing,
        Section("Figures", "\n".join(_figures(medians, limits, folder))),
        Section(
            "The woodpecker's limit cycle",
            "Period between the sleeve's first two jams, phi_S's extremes and the sleeve's "
            "drop over that cycle, and their relative deviation from Siconos' run "
            f"({SICONOS_WOODPECKER}; its output is sampled every {SICONOS_SAMPLING:g} s, so "
            "its period is known to that).\n\n" + markdown_table(cycles, units=TABLE_UNITS),
        ),
        Section(
            "Housner's law on the rocking block",
            "omega+ / omega- at each of the first impacts (at each sign change of phi: the pair "
            "of samples at the impact's time where the output stores one, event-driven, else "
            "the sample step of largest change of omega) against Housner's r = 1 - 1.5 sin^2 alpha "
            "and against the one-corner velocity-level law's closed form at the block's mu "
            "(equal to r from the sticking friction 0.288 up).\n\n"
            + markdown_table(ratios, units=TABLE_UNITS),
        ),
        Section(
            "The Painleve rod",
            "What each family does: a failed run's status message (t, q, v included), or "
            f"the largest jump of the end's tangential velocity, the time the end rises "
            f"{LIFT_OFF:g} above the floor, and the sliding phase's singular time.\n\n"
            + markdown_table(rods, units=TABLE_UNITS),
        ),
    ]
    findings = _findings(table, orders, judged, cycles, ratios, rods) + crossing_findings
    return StudyReport(sections, findings + _adaptive.control_findings(control))


STUDY = Study(
    name="friction",
    title="Coulomb friction: orders, cost, limit cycles, Housner, Painleve",
    description=(
        "Every frictional scheme (MoreauJean theta = 1/2 explicit and implicit, CatchingUp, "
        "NonsmoothGeneralizedAlpha) by step h in phase families (|delta_j| <= 0.1) and the "
        "event-driven method by rtol, on the block launched down a gentle incline "
        "(it stops and sticks) and the friction oscillator (stick-slip into its final stick), "
        "against their closed forms: position error and Hausdorff distance of the velocity "
        "graphs, fitted orders, and the cost of each error. "
        + PROTOCOL_TEXT
        + " "
        + ERROR_GRID_TEXT
        + " The woodpecker's limit "
        "cycle against h and rtol beside Siconos' run; Housner's law on the rocking block; "
        "what each family reports on the Painleve rod; step-size-controlled time-stepping "
        "(Adaptive with MoreauJean, by rtol) on each. Failed runs are findings (their "
        "message, with t, q and v, reported)."
    ),
    runs=runs,
    report=report,
    max_jobs=1,
    failures_are_findings=True,
)
