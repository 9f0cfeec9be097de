"""Newton's cradle: the post-impact velocities of every method against the impact models.

A row of N touching equal balls, k of them launched at the N - k resting ones
(:class:`impactbench.problems.NewtonsCradle`): at the impact every constraint is active at once.
Three answers are known in closed form (derived in the problem's docstring):

* *physical* (e = 1): the k rightmost balls leave with v0, the others rest
  (``physical_outcome``);
* *LCP*: the velocity-level LCP with Newton's law on all N - 1 contacts at once, the impact law
  of the Moreau-type time-steppers: the collision of two rigid blocks of k and N - k balls,
  v0 (1 - (1 + e) (N - k) / N) for the launched balls, (1 + e) k v0 / N for the others
  (``lcp_outcome``);
* *sequential*: binary Newton impacts of the approaching pairs, in rounds, until none approaches
  (``sequential_outcome``; equal to the physical outcome for e = 1), the rule of the
  event-driven method.

Every method of ``METHODS`` runs each configuration through the impact (time-steppers at two
steps), and the velocities at t = 0.25 (every ball separated) are stored as a per-run artefact
(:func:`outcome_artefact`, ``cradle_outcome.artefact.csv.gz``), with the three expectations, the
impact count and the kinetic energy after / before. The report reads that file only.
``EventDriven`` runs with its default engine, the compiled event loop (one engine per number of
balls N).

Two geometries. With radius and gap 1/8 and the steps 2^-10 and 2^-8 (binary fractions) every
position is exact in floating point and the touching gaps are exactly 0, so the position
activation g_i(q_p) <= 0 of the time-steppers puts all N - 1 contacts in the impact step's
LCP. With radius 0.1 (the problem's default) the touching gaps evaluate to +-5.6e-17: a contact
with a positive round-off gap is left out of the impact step and the row splits into blocks hit
one step apart (the problem's docstring works the N = 5, k = 1 case by hand: (-1/3, 0, 0, 2/3,
2/3) v0); these runs use h = 1e-3 and 3e-3 (``simulate`` ends on t = 0.25 exactly, so the step
used is 0.25 / ceil(0.25 / h): 0.25 / 84 for 3e-3; the binary steps are used as given), where
the launched balls' positions carry round-off too and the outcome depends on the scheme and
the step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from impactbench.bench.latex import Summary
from impactbench.bench.plugins import study_methods
from impactbench.bench.report import (
    capped_flags,
    format_number,
    markdown_table,
    method_style,
    new_figure,
    save_figure,
    shared_legend,
    with_capped_counts,
)
from impactbench.bench.results import read_artefact, write_table
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.core.trajectory import Trajectory
from impactbench.problems import NewtonsCradle

ARTEFACT = "cradle_outcome"
OUTCOMES_FILE = "outcomes.csv"
T_END = 0.25
#: Radius and gap that are binary fractions: every touching gap is exactly 0 in floating point.
EXACT_GEOMETRY = {"radius": 0.125, "gap": 0.125}
#: Radius 0.1 (and gap 0.1): the touching gaps are +-5.6e-17.
ROUNDOFF_GEOMETRY = {"radius": 0.1, "gap": 0.1}
#: An outcome matches an expectation when every velocity is within this many v0 of it.
MATCH_TOLERANCE = 1e-9

#: label -> (problem parameters, steps of the full grid, steps of the quick grid). The quick grid
#: leaves out N = 3 (the compiled loops are specialised on the number of DOF: one numba
#: compilation per N and method on a cold cache).
CONFIGURATIONS: dict[str, tuple[dict[str, Any], list[float], list[float]]] = {
    "N=3, k=1": ({"n_balls": 3, "n_launched": 1, **EXACT_GEOMETRY}, [2**-10, 2**-8], []),
    "N=3, k=2": ({"n_balls": 3, "n_launched": 2, **EXACT_GEOMETRY}, [2**-10, 2**-8], []),
    "N=5, k=1": ({"n_balls": 5, "n_launched": 1, **EXACT_GEOMETRY}, [2**-10, 2**-8], [2**-8]),
    "N=5, k=2": ({"n_balls": 5, "n_launched": 2, **EXACT_GEOMETRY}, [2**-10, 2**-8], [2**-8]),
    "N=5, k=1, e=0.5": (
        {"n_balls": 5, "n_launched": 1, "restitution": 0.5, **EXACT_GEOMETRY},
        [2**-10, 2**-8],
        [2**-8],
    ),
    "N=5, k=1, r=0.1": ({"n_balls": 5, "n_launched": 1, **ROUNDOFF_GEOMETRY}, [1e-3, 3e-3], [1e-3]),
    "N=5, k=2, r=0.1": (
        {"n_balls": 5, "n_launched": 2, **ROUNDOFF_GEOMETRY},
        [1e-3, 3e-3],
        [1e-3, 3e-3],
    ),
}

EXPECTATIONS = ("physical", "lcp", "sequential")


def outcome_artefact(run: Run, problem: NewtonsCradle, trajectory: Trajectory) -> dict:
    """The final velocity of every ball with the three expected outcomes (NaN physical outcome
    for e < 1), the logged impacts and the kinetic energy after over before, one row per ball."""
    v = trajectory.v[-1]
    physical = problem.physical_outcome() if problem.restitution == 1.0 else np.full(v.size, np.nan)
    before = float(problem.v0 @ problem.v0)
    frame = pd.DataFrame(
        {
            "configuration": run.problem_name,
            "method": run.method_name,
            "h": np.nan if run.h is None else run.h,
            "h_used": np.nan if trajectory.h is None else trajectory.h,
            "ball": np.arange(1, v.size + 1),
            "velocity": v,
            "physical": physical,
            "lcp": problem.lcp_outcome(),
            "sequential": problem.sequential_outcome(),
            "impacts": int(trajectory.impacts.total),
            "energy_ratio": float(v @ v) / before,
        }
    )
    return {ARTEFACT: frame}


def runs(quick: bool) -> list[Run]:
    """Every configuration (quick: those with quick steps) by every method of ``METHODS``
    (time-steppers at each step)."""
    methods = study_methods()
    result = []
    for label, (kwargs, full_steps, quick_steps) in CONFIGURATIONS.items():
        if quick and not quick_steps:
            continue
        for method in methods.values():
            steps = (quick_steps if quick else full_steps) if method.requires_step else [None]
            for h in steps:
                result.append(
                    Run(
                        problem=NewtonsCradle,
                        method=method,
                        t_end=T_END,
                        h=h,
                        problem_kwargs=kwargs,
                        problem_name=label,
                        artefact=outcome_artefact,
                    )
                )
    return result


def _vector(values: pd.Series) -> str:
    """``(v_1, ..., v_N)`` to 4 digits, round-off below 1e-12 shown as 0."""
    rounded = np.round(values.to_numpy(dtype=float), 12) + 0.0  # (+ 0.0: no "-0")
    return "(" + ", ".join(f"{value:.4g}" for value in rounded) + ")"


def outcomes(balls: pd.DataFrame) -> pd.DataFrame:
    """One row per run: the velocities, the largest deviation from each expected outcome and
    the expectation it matches (within :data:`MATCH_TOLERANCE` v0; v0 = 1 in every
    configuration), or "none"."""
    rows = []
    for key, group in balls.groupby("key", sort=False):
        group = group.sort_values("ball")
        first = group.iloc[0]
        row = {
            "configuration": first["configuration"],
            "method": first["method"],
            "h": first["h"],
            "h used": first["h_used"],
            "velocities": _vector(group["velocity"]),
        }
        matched = []
        for name in EXPECTATIONS:
            deviation = float((group["velocity"] - group[name]).abs().max())
            row[f"deviation from {name}"] = deviation
            if deviation <= MATCH_TOLERANCE:
                matched.append(name)
        row["matches"] = ", ".join(matched) or "none"
        row["impacts"] = int(first["impacts"])
        row["energy after / before"] = float(first["energy_ratio"])
        row["key"] = key
        rows.append(row)
    return pd.DataFrame(rows)


#: Units of the outcome table: velocities in units of v0, the energy ratio dimensionless.
UNITS = {
    "velocities": "v0",
    **{f"deviation from {name}": "v0" for name in EXPECTATIONS},
    "energy after / before": "-",
}


def matches_for_paper(per_run: pd.DataFrame) -> Summary:
    """The LaTeX copy of the outcome table: one row per method and step, one column per
    configuration, each cell the expectations the run matches (:func:`outcomes`)."""
    runs = per_run.assign(step=per_run["h"].fillna(-1.0))
    wide = runs.pivot_table(
        index=["method", "step"], columns="configuration", values="matches", aggfunc="first",
        sort=False,
    ).reset_index()  # fmt: skip
    wide.columns.name = None
    configurations = [c for c in wide.columns if c not in ("method", "step")]
    wide[configurations] = wide[configurations].fillna("-")
    wide.insert(1, "h [s]", wide.pop("step").where(lambda h: h >= 0))
    return Summary(wide, "the expectations each run matches, by configuration")


def expectations(balls: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: the three expected outcomes as vectors."""
    rows = []
    for label, group in balls.groupby("configuration", sort=False):
        one_run = group[group["key"] == group["key"].iloc[0]].sort_values("ball")
        row = {"configuration": label}
        for name in EXPECTATIONS:
            values = one_run[name]
            row[name] = "-" if values.isna().all() else _vector(values)
        rows.append(row)
    return pd.DataFrame(rows)


def _figure(balls: pd.DataFrame, folder: Path) -> str:
    labels = list(dict.fromkeys(balls["configuration"]))
    figure, axes = new_figure(len(labels), width=5.0, height=3.2)
    for ax, label in zip(axes, labels, strict=True):
        group = balls[balls["configuration"] == label]
        runs = group.drop_duplicates("key")[["key", "method", "h"]]
        runs = runs.assign(_step=runs["h"].fillna(np.inf)).sort_values(
            ["method", "_step"], kind="stable"
        )
        n = int(group["ball"].max())
        width = 0.84 / len(runs)
        steps = runs.groupby("method")["h"].agg(["max", "count"])
        for i, run in enumerate(runs.itertuples()):
            rows = group[group["key"] == run.key].sort_values("ball")
            offset = -0.42 + (i + 0.5) * width
            largest, count = steps.loc[run.method]
            larger_step = bool(count > 1 and run.h == largest)
            ax.bar(
                rows["ball"] + offset,
                rows["velocity"],
                width=width,
                color=method_style(run.method)["color"],
                hatch="///" if larger_step else None,
                edgecolor="white" if larger_step else None,
                linewidth=0.0,
                label=f"{run.method}, larger h" if larger_step else run.method,
            )
        first = group[group["key"] == runs["key"].iloc[0]].sort_values("ball")
        for name, line in (("physical", "-"), ("lcp", "--"), ("sequential", ":")):
            if first[name].isna().all():
                continue
            ax.hlines(
                first[name], first["ball"] - 0.45, first["ball"] + 0.45, colors="k",
                linestyles=line, linewidth=0.9, label=name,
            )  # fmt: skip
        ax.axhline(0.0, color="0.5", linewidth=0.5)
        ax.set_xticks(range(1, n + 1))
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("ball [-]")
        ax.set_ylabel("post-impact velocity / $v_0$ [-]")
    shared_legend(figure, axes, columns=3)
    name = "outcomes.png"
    save_figure(figure, folder / name)
    return f"![Post-impact velocities per ball]({name})\n"


def _base(method: str) -> str:
    return method.partition("[")[0]


def _findings(table: pd.DataFrame) -> list[str]:
    findings = []
    exact = table[~table["configuration"].str.contains("r=0.1", regex=False)]
    roundoff = table[table["configuration"].str.contains("r=0.1", regex=False)]
    steppers = exact[exact["h"].notna()]
    if not steppers.empty:
        lcp = steppers["matches"].str.contains("lcp", regex=False)
        text = (
            f"Exact zero gaps: {int(lcp.sum())} of {len(steppers)} time-stepping runs give the "
            f"all-contact LCP outcome (two rigid blocks) to {MATCH_TOLERANCE:g} v0"
        )
        others = steppers[~lcp]
        if not others.empty:
            text += "; not: " + "; ".join(
                f"{row.configuration} {row.method} h = {format_number(row.h)} {row.velocities}"
                for row in others.itertuples()
            )
        findings.append(text + ".")
    events = table[table["h"].isna()]
    if not events.empty:
        sequential = events["matches"].str.contains("sequential", regex=False)
        findings.append(
            f"EventDriven gives the sequential pairwise outcome in {int(sequential.sum())} of "
            f"{len(events)} configurations (the physical one wherever e = 1), with "
            f"{int(events['impacts'].min())} to {int(events['impacts'].max())} logged binary "
            "impacts."
        )
    e1 = table[table["configuration"].map(lambda c: "e=" not in c)]
    if not e1.empty:
        ratio = e1["energy after / before"]
        findings.append(
            f"With e = 1 every run keeps the kinetic energy to "
            f"{format_number(float((ratio - 1.0).abs().max()), 2)} (relative), whichever "
            "outcome it gives: the LCP and the sequential outcomes are both energy-conserving, "
            "only the physical one is the cradle's."
        )
    if not roundoff.empty:
        stepping = roundoff[roundoff["h"].notna()]
        lcp = stepping[stepping["matches"].str.contains("lcp", regex=False)]
        schemes = sorted({_base(m) for m in lcp["method"]})
        neither = stepping[stepping["matches"] == "none"]
        distinct = neither.drop_duplicates(["configuration", "velocities"])
        text = (
            f"Round-off gaps (r = 0.1): {len(lcp)} of {len(stepping)} time-stepping runs still "
            f"give the all-contact LCP outcome ({', '.join(schemes) or 'none'}); "
            f"{len(neither)} give none of the three expectations, with {len(distinct)} "
            "different outcomes"
        )
        for label, group in distinct.groupby("configuration", sort=False):
            text += f"; {label}: " + ", ".join(sorted(set(group["velocities"])))
        findings.append(text + ".")
    return findings


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Expected outcomes, per-run outcome table (``outcomes.csv``), bar chart and findings."""
    folder = Path(folder)
    done = table[table["status"] != FAILED]
    if done.empty:
        return StudyReport([Section("Outcomes", "None (no run finished).\n")], [])
    balls = read_artefact(done, folder, ARTEFACT)
    per_run = outcomes(balls)
    write_table(per_run, folder / OUTCOMES_FILE, timing=False)
    capped = capped_flags(done).set_axis(done["key"])
    shown = with_capped_counts(
        per_run.assign(impacts_capped=per_run["key"].map(capped).fillna(False).astype(bool))
    ).drop(columns=["key", "impacts_capped"])
    sections = [
        Section(
            "Expected outcomes",
            "Velocities after the impact / v0 (the problem's docstring derives them): physical "
            "(e = 1 only), the velocity LCP with Newton's law on all contacts at once, "
            "sequential pairwise Newton impacts.\n\n" + markdown_table(expectations(balls), 4),
        ),
        Section(
            "Outcome of every run",
            f"Velocities at t = {T_END:g} (every ball separated); deviation from an "
            "expectation: the largest |v_i - expected v_i| over the balls; matches: the "
            f"expectations within {MATCH_TOLERANCE:g} v0; h used: the step ``simulate`` took "
            f"to end on t = {T_END:g}; impacts: "
            "entries of the impact log (event-driven: binary impacts located; time-steppers: "
            f"(step, contact) pairs with a positive impulse). Also in [{OUTCOMES_FILE}]"
            f"({OUTCOMES_FILE}).\n\n"
            + markdown_table(shown, 4, units=UNITS, latex=matches_for_paper(per_run)),
        ),
        Section(
            "Figure",
            "Bars: post-impact velocity of each ball per run (colour: method; hatched: the "
            "larger step of a time-stepper); black segments: physical (solid), LCP (dashed), "
            "sequential (dotted).\n\n" + _figure(balls, folder),
        ),
    ]
    return StudyReport(sections, _findings(per_run))


STUDY = Study(
    name="cradle",
    title="Newton's cradle: simultaneous impacts",
    description=(
        "The post-impact velocities of every ball of a Newton's cradle (N = 3 and 5 balls, "
        "k = 1 and 2 launched, e = 1 and one e = 0.5 case) from every method of METHODS "
        "(time-steppers at two steps, event-driven) against the three closed-form outcomes: the "
        "physical one (k balls leave), the velocity-level LCP with Newton's law on all contacts "
        "at once (two rigid blocks collide) and sequential pairwise impacts. Exact zero gaps "
        "(radius and gap 1/8, steps 2^-10 and 2^-8) and round-off gaps (radius 0.1, +-5.6e-17) "
        "side by side: the latter split the time-steppers' LCP."
    ),
    runs=runs,
    report=report,
)
