"""The double pendulum compared as a chaotic system: ensembles, not single trajectories.

The double pendulum against the wall (:class:`DoublePendulum` defaults: the tip against the wall,
e = 0.8) separates trajectories exponentially: two runs that differ by round-off follow different
paths after a few tens of impacts, so an error or a decay rate measured on one trajectory says
nothing about a method. This study compares methods by what a chaotic system keeps, statistics
over an ensemble of initial conditions:

* **Ensemble.** ``MEMBERS`` members, q0 = the default q0 + ``SPREAD`` xi, xi standard normal
  (seeded: the same members on every run), v0 = 0. Every method runs every member.
* **Reference ensemble.** The compiled event-driven method (DOP853) at rtol ``REFERENCE_RTOL`` on
  the same members.
* **Statistics of a member** (computed by the runner from its trajectory, stored as the
  ``member`` artefact): the energy at the fixed times ``ENERGY_TIMES`` x T (the sample at or
  before each time; between impacts the energy is constant), the settling time (the first
  sample whose energy is below E_wall, the least energy at which the tip can touch the wall: from
  then on no impact can occur; a member not settled by T has settling time T and is counted
  as such), the number of impact events, and the shadowing horizon: the first sample time at
  which the member's positions leave the reference member's (run here at rtol
  ``REFERENCE_RTOL``, interpolated linearly between its samples) by more than
  ``SHADOW_TOLERANCE`` rad, capped at ``SHADOW_HORIZON``.
* **Distance between ensembles.** For each method, step or tolerance and statistic, the
  1-Wasserstein distance between the method's and the reference ensemble's empirical
  distributions, with a 95 % bootstrap interval (``BOOTSTRAP`` resamples of the members, the same
  members for both ensembles), and the two-sample Kolmogorov-Smirnov statistic with its p-value;
  the distance against h and rtol shows the convergence in distribution. A method is
  indistinguishable from the reference at that ensemble size where every statistic's KS p-value
  is above 0.05 / k, k the number of statistics compared (Bonferroni: at most a 5 % chance that
  an ensemble drawn from the reference's distribution is called different). The shadowing
  horizon is a property of each member's pair of trajectories, not a distribution to match (the
  reference's own horizon is the comparison horizon): it is reported on its own, never compared
  with the reference's. Where no reference member settles by T, every settling time is censored
  at T and the settling time is not compared either.

No decay rate is fitted: the pendulum's energy does not follow a closed-form law.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, stats

import impactbench
from impactbench.bench.latex import Summary, unit_of
from impactbench.bench.report import (
    format_number,
    markdown_table,
    new_figure,
    save_figure,
    shared_legend,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.style import method_style
from impactbench.core.trajectory import Trajectory
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import DoublePendulum

NAME = "pendulum_ensemble"
MEMBERS = {"full": 100, "quick": 12}
HORIZON = {"full": 200.0, "quick": 8.0}
#: The times of the energy statistics, as fractions of the horizon T.
ENERGY_TIMES = (0.05, 0.15, 0.5, 1.0)
#: Standard deviation of the perturbation of q0 [rad].
SPREAD = 1e-3
SEED = 20261206
STEPS = {"full": [1e-2, 3e-3, 1e-3, 3e-4], "quick": [1e-2, 1e-3]}
TOLERANCES = {"full": [1e-4, 1e-6, 1e-8], "quick": [1e-6]}
REFERENCE_RTOL = 1e-12
REFERENCE_ATOL = 1e-14
TIME_STEPPERS = {
    "full": (
        PaoliSchatzman,
        MoreauJean,
        CatchingUp,
        NonsmoothGeneralizedAlpha,
        D1MinusLinear,
        MoreauJeanProjection,
    ),
    "quick": (MoreauJean,),
}
#: Positions farther apart than this [rad] no longer shadow each other.
SHADOW_TOLERANCE = 1e-2
#: Horizon of the shadowing comparison [s] (the reference member is run this far, or to T).
SHADOW_HORIZON = 60.0
#: Samples kept per run (output decimation), enough to time the events to T / SAMPLES.
SAMPLES = 40_000
BOOTSTRAP = 1000
#: The KS p-value above which an ensemble is called indistinguishable from the reference.
SIGNIFICANCE = 0.05
MEMBER_ARTEFACT = "member"
SETTLING = "settling time [s]"
IMPACTS = "impacts"
SHADOW = "shadowing horizon [s]"


def _grid(quick: bool) -> str:
    return "quick" if quick else "full"


def member_q0(count: int) -> np.ndarray:
    """The members' initial positions, shape (count, 2): the default q0 perturbed (seeded)."""
    rng = np.random.default_rng(SEED)
    return np.asarray(DoublePendulum().q0) + SPREAD * rng.standard_normal((count, 2))


def _member_index(q0: list[float]) -> int:
    members = member_q0(max(MEMBERS.values()))
    return int(np.argmin(np.abs(members - np.asarray(q0)).sum(axis=1)))


def wall_energy(problem: DoublePendulum) -> float:
    """E_wall: the least potential energy with the tip on the wall (tip-wall problem).

    On {l1 sin q1 + l2 sin q2 = -d} with q2 on the branch cos q2 > 0 (the lower one), V is a
    function of q1 alone, minimised over the q1 for which the constraint can be met. Below this
    energy the tip cannot reach the wall.
    """
    l1, l2, d, g = problem.l1, problem.l2, problem.wall_distance, problem.gravity

    def potential(q1: float) -> float:
        s2 = (-d - l1 * math.sin(q1)) / l2
        if abs(s2) > 1.0:
            return math.inf
        return -(problem.m1 + problem.m2) * g * l1 * math.cos(q1) - problem.m2 * g * l2 * math.sqrt(
            1.0 - s2 * s2
        )

    grid = np.linspace(-math.pi / 2, math.pi / 2, 2001)
    start = grid[int(np.argmin([potential(q1) for q1 in grid]))]
    result = optimize.minimize_scalar(
        potential, bounds=(start - 0.01, start + 0.01), method="bounded", options={"xatol": 1e-12}
    )
    return float(result.fun)


def runs(quick: bool) -> list[Run]:
    """Every member with every method: time-steppers by h, EventDriven by rtol, the reference."""
    grid = _grid(quick)
    t_end = HORIZON[grid]
    result = []
    for q0 in member_q0(MEMBERS[grid]):
        kwargs = {"q0": [float(q0[0]), float(q0[1])]}
        common = {"problem_kwargs": kwargs, "artefact": member_statistics}
        for method in TIME_STEPPERS[grid]:
            for h in STEPS[grid]:
                every = max(1, int(t_end / h / SAMPLES))
                result.append(Run(DoublePendulum, method, t_end, h, output_every=every, **common))
        for rtol in [*TOLERANCES[grid], REFERENCE_RTOL]:
            method_kwargs = {"rtol": rtol}
            if rtol == REFERENCE_RTOL:
                method_kwargs["atol"] = REFERENCE_ATOL
            result.append(
                Run(
                    DoublePendulum,
                    EventDriven,
                    t_end,
                    method_kwargs=method_kwargs,
                    tolerance="rtol",
                    **common,
                )
            )
    return result


@functools.lru_cache(maxsize=4)
def _reference_member(q0: tuple[float, float], t_end: float) -> tuple[np.ndarray, np.ndarray]:
    problem = DoublePendulum(q0=q0)
    run = impactbench.simulate(
        problem, EventDriven(rtol=REFERENCE_RTOL, atol=REFERENCE_ATOL), t_end
    )
    if not run.success:
        raise RuntimeError(f"reference member failed: {run.message}")
    return run.t, run.q


def shadowing_horizon(
    t: np.ndarray, q: np.ndarray, t_ref: np.ndarray, q_ref: np.ndarray, horizon: float
) -> float:
    """The first time t_k <= horizon at which |q_k - q_ref(t_k)|_inf > SHADOW_TOLERANCE, else
    ``horizon`` (q_ref interpolated linearly between its samples)."""
    inside = t <= horizon
    t, q = t[inside], q[inside]
    deviation = np.max(
        np.abs(q - np.column_stack([np.interp(t, t_ref, q_ref[:, i]) for i in range(2)])), axis=1
    )
    away = np.flatnonzero(deviation > SHADOW_TOLERANCE)
    return float(t[away[0]]) if away.size else horizon


def member_statistics(run: Run, problem: DoublePendulum, trajectory: Trajectory) -> dict:
    """The member's statistics (module docstring), one row."""
    row: dict[str, float] = {"member": _member_index(run.problem_kwargs["q0"])}
    # no energy from a velocity the scheme does not define (PaoliSchatzman's is reconstructed,
    # O(1) wrong at a sample straddling an impact): its energy statistics are NaN
    state = trajectory.stats.get("velocity_output", "state") == "state"
    energy = impactbench.energy(problem, trajectory) if state else None
    for fraction in ENERGY_TIMES:
        time = problem.t0 + fraction * (run.t_end - problem.t0)
        index = int(np.searchsorted(trajectory.t, time, side="right")) - 1
        row[f"E({time:g}) [J]"] = float(energy[max(index, 0)]) if state else math.nan
    below = np.flatnonzero(energy < wall_energy(problem)) if state else np.zeros(0, int)
    row[SETTLING] = (
        (float(trajectory.t[below[0]]) if below.size else float(run.t_end)) if state else math.nan
    )
    row["settled"] = float(below.size > 0) if state else math.nan
    horizon = min(SHADOW_HORIZON, run.t_end)
    t_ref, q_ref = _reference_member(tuple(problem.q0.tolist()), horizon)
    row[SHADOW] = shadowing_horizon(trajectory.t, trajectory.q, t_ref, q_ref, horizon)
    return {MEMBER_ARTEFACT: pd.DataFrame([row])}


# --------------------------------------------------------------------------------------------
# Report


def _label(row: pd.Series) -> str:
    return f"h = {row['h']:g}" if not pd.isna(row["h"]) else f"rtol = {row['tolerance']:g}"


def bootstrap_wasserstein(
    values: np.ndarray, reference: np.ndarray, resamples: int = BOOTSTRAP, seed: int = SEED
) -> tuple[float, float, float]:
    """W1(values, reference) and its 95 % percentile bootstrap interval, members resampled
    together (``values[i]`` and ``reference[i]`` are the same member)."""
    distance = stats.wasserstein_distance(values, reference)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    boot = [stats.wasserstein_distance(values[p], reference[p]) for p in picks]
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(distance), float(low), float(high)


def ensemble_distances(members: pd.DataFrame, statistics: list[str]) -> pd.DataFrame:
    """One row per (method, h or rtol, statistic): W1 with its interval, KS statistic and p."""
    is_reference = members["tolerance"] == REFERENCE_RTOL
    reference = members[is_reference].set_index("member").sort_index()
    rows = []
    for (method, label), group in members[~is_reference].groupby(["method", "setting"], sort=False):
        group = group.set_index("member").sort_index()
        common = group.index.intersection(reference.index)
        for statistic in statistics:
            x = group.loc[common, statistic].to_numpy(float)
            y = reference.loc[common, statistic].to_numpy(float)
            defined = np.isfinite(x) & np.isfinite(y)  # NaN: not defined for this method
            x, y = x[defined], y[defined]
            if len(x) < 2:
                continue
            w, low, high = bootstrap_wasserstein(x, y)
            ks = stats.ks_2samp(x, y)
            rows.append(
                {
                    "method": method,
                    "setting": label,
                    "h": group["h"].iloc[0],
                    "tolerance": group["tolerance"].iloc[0],
                    "statistic": statistic,
                    "members": len(x),
                    "W1": w,
                    "W1 low": low,
                    "W1 high": high,
                    "KS": float(ks.statistic),
                    "KS p": float(ks.pvalue),
                }
            )
    return pd.DataFrame(rows)


def _members(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    ok = table[table["status"] != FAILED]
    stored = read_artefact(table, folder, MEMBER_ARTEFACT)
    members = stored.merge(ok[["key", "method", "h", "tolerance", IMPACTS]], on="key")
    members["setting"] = members.apply(_label, axis=1)
    return members


def _statistics(members: pd.DataFrame) -> list[str]:
    """The statistics whose distributions are compared with the reference's (module
    docstring): the energies, the settling time where some reference member settles, the impact
    count."""
    energies = [c for c in members.columns if c.startswith("E(")]
    reference = members[members["tolerance"] == REFERENCE_RTOL]
    settling = [SETTLING] if (reference["settled"] > 0).any() else []
    return [*energies, *settling, IMPACTS]


def indistinguishable_settings(distances: pd.DataFrame) -> dict[str, list[str]]:
    """Method -> the settings at which every statistic's KS p-value exceeds SIGNIFICANCE / k,
    k the statistics compared at that setting (Bonferroni)."""
    passing: dict[str, list[str]] = {}
    for (method, setting), group in distances.groupby(["method", "setting"], sort=False):
        passing.setdefault(method, [])
        if group["KS p"].min() > SIGNIFICANCE / len(group):
            passing[method].append(setting)
    return passing


def _figure(distances: pd.DataFrame, statistic: str, folder: Path) -> str:
    figure, (steppers, adaptive) = new_figure(2)
    for (method, axis), group in distances[distances["statistic"] == statistic].groupby(
        ["method", distances["h"].isna()], sort=True
    ):
        x = group["tolerance"] if axis else group["h"]
        ax = adaptive if axis else steppers
        yerr = [group["W1"] - group["W1 low"], group["W1 high"] - group["W1"]]
        ax.errorbar(
            x, group["W1"], yerr=yerr, label=str(method), capsize=2, **method_style(str(method))
        )
    for ax, xlabel in ((steppers, r"step $h$ [s]"), (adaptive, r"rtol [-]")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"$W_1$ to the reference, {statistic}")
        ax.grid(True, which="major", alpha=0.3)
    shared_legend(figure, [steppers, adaptive], columns=3)
    name = "ensemble_distance.png"
    save_figure(figure, folder / name)
    return name


def _settling_figure(members: pd.DataFrame, folder: Path) -> str:
    figure, (ax,) = new_figure(1)
    for method, group in members.groupby("method", sort=True):
        setting = group["h"].min() if group["h"].notna().any() else group["tolerance"].min()
        column = "h" if group["h"].notna().any() else "tolerance"
        chosen = np.sort(group.loc[group[column] == setting, SETTLING].to_numpy(float))
        ax.step(
            chosen,
            np.arange(1, len(chosen) + 1) / len(chosen),
            where="post",
            label=f"{method} ({column} = {setting:g})",
            **method_style(str(method)),
        )
    ax.set_xlabel("settling time [s]")
    ax.set_ylabel("fraction of members settled [-]")
    ax.grid(True, alpha=0.3)
    shared_legend(figure, [ax], columns=2)
    name = "settling_time_cdf.png"
    save_figure(figure, folder / name)
    return name


def _findings(distances: pd.DataFrame, members: pd.DataFrame) -> list[str]:
    findings = []
    reference = members[members["tolerance"] == REFERENCE_RTOL]
    settled = reference["settled"].mean()
    settling = (
        f"{settled:.0%} settled below E_wall by T; median settling time "
        f"{format_number(reference[SETTLING].median())} s"
        if settled > 0
        else f"no member settled below E_wall by T = {format_number(reference[SETTLING].max())} s "
        "(every settling time is censored at T: the settling time is not compared)"
    )
    findings.append(
        f"Reference ensemble ({len(reference)} members, EventDriven rtol {REFERENCE_RTOL:g}): "
        f"{settling}; median impacts {format_number(reference[IMPACTS].median())}."
    )
    for method, passing in indistinguishable_settings(distances).items():
        compared = ", ".join(distances.loc[distances["method"] == method, "statistic"].unique())
        runs_of = members[members["method"] == method]
        horizon = runs_of.groupby("setting", sort=False)[SHADOW].median()
        finest = horizon.index[-1] if len(horizon) else "-"
        findings.append(
            f"{method}: indistinguishable from the reference ensemble (KS p > {SIGNIFICANCE:g} / k "
            f"for each of the k statistics {compared}) at "
            f"{', '.join(passing) if passing else 'no setting'}; median shadowing horizon "
            f"{format_number(horizon.iloc[-1]) if len(horizon) else '-'} s at {finest}."
        )
    return findings


#: Units of the distance table (W1 in the unit of its statistic, named in the statistic's row).
DISTANCE_UNITS = {"W1": "unit of the statistic", "KS": "-", "KS p": "-"}


def distances_for_paper(distances: pd.DataFrame) -> Summary:
    """The LaTeX copy of the distance table: one row per method and setting, the W1 distance of
    each statistic in its unit (a statistic's name carries it, "-" for a count) and the
    smallest KS p-value over the statistics."""
    wide = distances.pivot_table(
        index=["method", "setting"], columns="statistic", values="W1", sort=False
    )
    wide.columns = [
        f"W1 {name}" if unit_of(str(name)) else f"W1 {name} [-]" for name in wide.columns
    ]
    smallest = distances.groupby(["method", "setting"], sort=False)["KS p"].min()
    frame = wide.assign(**{"smallest KS p [-]": smallest}).reset_index()
    return Summary(frame, "W1 per statistic, the bootstrap intervals in the report")


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Distances between ensembles, shadowing horizons, settling-time distributions."""
    members = _members(table, folder)
    statistics = _statistics(members)
    distances = ensemble_distances(members, statistics)
    if distances.empty:
        nothing = "No finished pair of a method's run and its reference member: nothing compared.\n"
        return StudyReport(
            [Section("Distance to the reference ensemble", nothing)],
            ["No ensemble compared: no method run and reference member finished together."],
        )
    last_energy = [s for s in statistics if s.startswith("E(")][-1]
    shown = distances.assign(
        W1=[
            f"{format_number(w)} [{format_number(lo)}, {format_number(hi)}]"
            for w, lo, hi in zip(
                distances["W1"], distances["W1 low"], distances["W1 high"], strict=True
            )
        ]
    )[["method", "setting", "statistic", "members", "W1", "KS", "KS p"]]
    shadow = (
        members[members["tolerance"] != REFERENCE_RTOL]
        .groupby(["method", "setting"], sort=False)[SHADOW]
        .describe(percentiles=[0.25, 0.5, 0.75])[["count", "25%", "50%", "75%"]]
        .reset_index()
        .rename(
            columns={"count": "members", "25%": "q25 [s]", "50%": "median [s]", "75%": "q75 [s]"}
        )
    )
    sections = [
        Section(
            "Distance to the reference ensemble",
            "1-Wasserstein distance W1 [95 % bootstrap interval] between each method's ensemble "
            "and the reference ensemble, per statistic (energies in J, times in s), with the "
            "two-sample Kolmogorov-Smirnov statistic and p-value.\n\n"
            + markdown_table(
                shown, units={"W1": "unit of the statistic"}, latex=distances_for_paper(distances)
            )
            + f"\n![W1 against h and rtol]({_figure(distances, last_energy, folder)})\n",
        ),
        Section(
            "Shadowing horizon",
            f"Time until a member leaves its reference trajectory by more than "
            f"{SHADOW_TOLERANCE:g} rad (capped at the comparison horizon), over the members.\n\n"
            + markdown_table(shadow, units={"members": "-"}),
        ),
        Section(
            "Settling time",
            "Empirical distribution of the settling time at each method's finest step or "
            f"tolerance.\n\n![settling time]({_settling_figure(members, folder)})\n",
        ),
    ]
    return StudyReport(sections, _findings(distances, members))


STUDY = Study(
    name=NAME,
    title="Double pendulum as an ensemble: chaos compared as chaos",
    description=(
        "Every method runs the same ensemble of perturbed initial conditions of the double "
        "pendulum against the wall; methods are compared with the reference ensemble by the "
        "distributions of the energy at fixed times, the settling time and the impact count "
        "(Wasserstein distance with bootstrap intervals, Kolmogorov-Smirnov test), and by the "
        "shadowing horizon of each member (module `studies/pendulum_ensemble.py`)."
    ),
    runs=runs,
    report=report,
)
