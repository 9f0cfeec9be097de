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
* **Null ensemble.** The reference method on a second ensemble of as many members drawn from the
  disjoint seed ``NULL_SEED``: two independent samples of the reference's distribution, whose
  distance is what sampling alone gives at this ensemble size (the null row of the tables).
* **Energy of a member** E = v^T M(q) v / 2 + V(q) with the run's output velocity. For the
  two-step Paoli-Schatzman scheme that velocity is its central difference
  v_k = (q_{k+1} - q_{k-1}) / (2h), computed by the scheme at every step: the consistent velocity
  of the central-difference scheme (second order where the motion is smooth), whereas the
  one-sided (q_{k+1} - q_k) / h is first order only. A stencil that straddles an impact averages
  the velocities before and after it and is O(1) wrong, so the samples within 2h of a logged
  impact are left out of the energy statistics (between impacts the energy is constant up to
  the scheme's smooth-phase error, so the last sample before them stands for them).
* **Statistics of a member** (computed by the runner from its trajectory, stored as the
  ``member`` artefact): the energy at the fixed times ``ENERGY_TIMES`` x T (the last usable
  sample at or before each time), the settling time, the number of impact events, and the
  shadowing horizon.
* **Settling time.** After any impact E >= V(q_contact) >= E_wall, E_wall the least potential
  energy of a configuration with the tip on the wall (:func:`wall_energy`, from the model), and
  between impacts E is constant: the energy decays towards E_wall and never below it while
  impacts occur, so "E < E_wall" is no criterion. A member is settled from the first usable
  sample from which E - E_wall <= ``SETTLING_FRACTION`` (E(0) - E_wall) holds to T: the energy
  above the wall level has lost all but that fraction of its initial value, for good. A member
  not settled by T has its settling time censored at T (shown as such: ">= T").
* **Shadowing horizon** (graph distance). A time-stepper's impact happens O(h) late or early, and
  a pointwise comparison q(t) - q_ref(t) is then O(1) just after it even when the two motions
  agree: the horizon would be the first impact's timing. The deviation of a sample (t_k, q_k)
  is instead its distance to the graph of the reference, min over |s| <= ``SHADOW_WINDOW`` of
  |q_k - q_ref(t_k + s)|_inf (q_ref the cubic Hermite interpolant of the reference member's
  steps, the window a few of the largest steps of the grid, sampled at ``SHADOW_WINDOW`` /
  ``WINDOW_POINTS``):
  a shift of the impact times by up to the window does not end the horizon, a different motion
  does. The horizon is the first sample time at which the deviation exceeds
  ``SHADOW_TOLERANCE`` rad, capped at ``SHADOW_HORIZON``. The reference's own horizon, the
  same quantity between the reference run and the member re-run at the tighter rtol
  ``CHECK_RTOL``, bounds what can be measured: a member whose horizon reaches it (or the cap)
  is censored there, and a quantile of the horizons that a censored member reaches is shown as
  ">= value".
* **Distance between ensembles.** For each method, step or tolerance and statistic, the
  1-Wasserstein distance between the method's and the reference ensemble's empirical
  distributions, with a 95 % bootstrap interval (``BOOTSTRAP`` resamples of the members, the same
  members for both ensembles), the mean difference (method minus reference: the sign of a bias),
  and the two-sample Kolmogorov-Smirnov statistic with its p-value; the distance against h and
  rtol shows the convergence in distribution. The null row is W1 between the reference and the
  null ensemble (each resampled on its own for the interval); a method's distance is above the
  null where its interval lies entirely above the null's, and the ratio W1 / null W1 is
  reported. A method is indistinguishable from the reference at that ensemble size where every
  statistic's KS p-value is above 0.05 / k, k the number of statistics compared (Bonferroni: at
  most a 5 % chance that an ensemble drawn from the reference's distribution is called
  different). The shadowing horizon is a property of each member's pair of trajectories, not a
  distribution to match: it is reported on its own. Where no reference member settles by T,
  every settling time is censored at T and the settling time is not compared either.

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
#: Seed of the null ensemble (disjoint from ``SEED``'s members).
NULL_SEED = SEED + 1
STEPS = {"full": [1e-2, 3e-3, 1e-3, 3e-4, 1e-4], "quick": [1e-2, 1e-3]}
TOLERANCES = {"full": [1e-4, 1e-6, 1e-8], "quick": [1e-6]}
REFERENCE_RTOL = 1e-12
REFERENCE_ATOL = 1e-14
#: The tighter tolerance of the re-run that gives the reference's own shadowing horizon.
CHECK_RTOL = 1e-13
CHECK_ATOL = 1e-15
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
#: Half-width [s] of the time window of the graph distance: twice the largest step of the grids.
SHADOW_WINDOW = 2e-2
#: Points of the window on each side of a sample (the window sampled at SHADOW_WINDOW / this).
WINDOW_POINTS = 40
#: Spacing [s] of the grid on which the reference member is tabulated (:func:`hermite_table`).
REFERENCE_GRID = 1e-3
#: A member is settled once E - E_wall <= SETTLING_FRACTION (E(0) - E_wall).
SETTLING_FRACTION = 1e-3
#: Horizon of the shadowing comparison [s] (the reference member is run this far, or to T).
SHADOW_HORIZON = 60.0
#: Samples kept per run (output decimation), enough to time the events to T / SAMPLES.
SAMPLES = 40_000
BOOTSTRAP = 1000
#: The KS p-value above which an ensemble is called indistinguishable from the reference.
SIGNIFICANCE = 0.05
MEMBER_ARTEFACT = "member"
#: The ``ensemble`` column of a member row: the main ensemble or the null ensemble.
MAIN, NULL = "main", "independent"  # ("null" would be read back as NaN)
#: The method and setting labels of the null row.
NULL_METHOD, NULL_SETTING = "reference vs reference", "disjoint seeds"
SETTLING = "settling time [s]"
IMPACTS = "impacts"
SHADOW = "shadowing horizon [s]"


def _grid(quick: bool) -> str:
    return "quick" if quick else "full"


def member_q0(count: int, seed: int = SEED) -> np.ndarray:
    """The members' initial positions, shape (count, 2): the default q0 perturbed (seeded; the
    null ensemble's with ``NULL_SEED``)."""
    rng = np.random.default_rng(seed)
    return np.asarray(DoublePendulum().q0) + SPREAD * rng.standard_normal((count, 2))


def _member_of(q0: list[float]) -> tuple[str, int]:
    """The ensemble (``MAIN`` or ``NULL``) and index of the member that starts at ``q0``."""
    count = max(MEMBERS.values())
    best = (math.inf, MAIN, 0)
    for name, seed in ((MAIN, SEED), (NULL, NULL_SEED)):
        gaps = np.abs(member_q0(count, seed) - np.asarray(q0)).sum(axis=1)
        index = int(np.argmin(gaps))
        best = min(best, (float(gaps[index]), name, index))
    return best[1], best[2]


def _member_index(q0: list[float]) -> int:
    return _member_of(q0)[1]


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


def _reference_run(q0: list[float], t_end: float, common: dict) -> Run:
    method_kwargs = {"rtol": REFERENCE_RTOL, "atol": REFERENCE_ATOL}
    kwargs = {"problem_kwargs": {"q0": [float(q0[0]), float(q0[1])]}, **common}
    return Run(
        DoublePendulum, EventDriven, t_end, method_kwargs=method_kwargs, tolerance="rtol", **kwargs
    )


def runs(quick: bool) -> list[Run]:
    """Every member with every method: time-steppers by h, EventDriven by rtol, the reference;
    then the reference on every member of the null ensemble."""
    grid = _grid(quick)
    t_end = HORIZON[grid]
    common = {"artefact": member_statistics}
    result = []
    for q0 in member_q0(MEMBERS[grid]):
        kwargs = {"problem_kwargs": {"q0": [float(q0[0]), float(q0[1])]}, **common}
        for method in TIME_STEPPERS[grid]:
            for h in STEPS[grid]:
                every = max(1, int(t_end / h / SAMPLES))
                result.append(Run(DoublePendulum, method, t_end, h, output_every=every, **kwargs))
        for rtol in TOLERANCES[grid]:
            result.append(
                Run(
                    DoublePendulum,
                    EventDriven,
                    t_end,
                    method_kwargs={"rtol": rtol},
                    tolerance="rtol",
                    **kwargs,
                )
            )
        result.append(_reference_run(q0, t_end, common))
    result.extend(_reference_run(q0, t_end, common) for q0 in member_q0(MEMBERS[grid], NULL_SEED))
    return result


def hermite_table(t: np.ndarray, q: np.ndarray, v: np.ndarray, times: np.ndarray) -> np.ndarray:
    """q at ``times`` by the cubic Hermite interpolant of the samples (t, q, v) between
    consecutive samples, right-continuous where two samples share a time (an impact: the state
    before it, then after it).

    Raises
    ------
    ValueError
        If ``times`` leaves [t[0], t[-1]].
    """
    if times.min() < t[0] or times.max() > t[-1]:
        raise ValueError(f"times must lie in [{t[0]}, {t[-1]}]")
    i = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 2)
    dt = t[i + 1] - t[i]
    width = np.where(dt > 0, dt, 1.0)[:, None]
    s = np.where(dt > 0, (times - t[i]) / np.where(dt > 0, dt, 1.0), 0.0)[:, None]
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * q[i] + h10 * width * v[i] + h01 * q[i + 1] + h11 * width * v[i + 1]


@functools.lru_cache(maxsize=4)
def _dense_member(
    q0: tuple[float, float], t_end: float, rtol: float, atol: float
) -> tuple[np.ndarray, np.ndarray]:
    """The member from ``q0`` by EventDriven at (rtol, atol), tabulated every
    ``REFERENCE_GRID`` on [0, t_end] (:func:`hermite_table` of its steps, whose ends carry the
    integrator's state q, v)."""
    problem = DoublePendulum(q0=q0)
    run = impactbench.simulate(problem, EventDriven(rtol=rtol, atol=atol), t_end)
    if not run.success:
        raise RuntimeError(f"reference member (rtol {rtol:g}) failed: {run.message}")
    t = np.linspace(problem.t0, t_end, int(round((t_end - problem.t0) / REFERENCE_GRID)) + 1)
    return t, hermite_table(run.t, run.q, run.v, t)


def graph_deviation(
    t: np.ndarray, q: np.ndarray, t_ref: np.ndarray, q_ref: np.ndarray, window: float
) -> np.ndarray:
    """Distance of each sample (t_k, q_k) to the graph of q_ref (linear between its samples):
    min over |s| <= ``window`` of |q_k - q_ref(t_k + s)|_inf, s on ``2 WINDOW_POINTS + 1``
    equally spaced points (s = 0 among them)."""
    best = np.full(len(t), np.inf)
    for shift in np.linspace(-window, window, 2 * WINDOW_POINTS + 1):
        moved = np.column_stack([np.interp(t + shift, t_ref, q_ref[:, i]) for i in range(2)])
        best = np.minimum(best, np.max(np.abs(q - moved), axis=1))
    return best


def shadowing_horizon(
    t: np.ndarray,
    q: np.ndarray,
    t_ref: np.ndarray,
    q_ref: np.ndarray,
    horizon: float,
    window: float = SHADOW_WINDOW,
) -> float:
    """The first time t_k <= horizon at which the graph deviation (:func:`graph_deviation`)
    exceeds ``SHADOW_TOLERANCE``, else ``horizon``."""
    if window < 0:
        raise ValueError(f"window must be non-negative, got {window}")
    inside = t <= horizon
    t, q = t[inside], q[inside]
    away = np.flatnonzero(graph_deviation(t, q, t_ref, q_ref, window) > SHADOW_TOLERANCE)
    return float(t[away[0]]) if away.size else horizon


def member_energy(problem: DoublePendulum, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """The energy at each sample with the run's output velocity, and which samples are usable.

    Every sample of a run whose output velocity is part of its state is usable. Otherwise (the
    Paoli-Schatzman central difference, module docstring) the samples within 2h of a logged
    impact are not: their stencil may straddle it.

    Raises
    ------
    ValueError
        If such a run's impact log is truncated (the impacts to leave out are unknown).
    """
    energy = impactbench.energy(problem, trajectory)
    usable = np.ones(len(trajectory.t), bool)
    if trajectory.stats.get("velocity_output", "state") != "state":
        if trajectory.impacts.truncated:
            raise ValueError("trajectory: truncated impact log, the straddling samples unknown")
        h = float(trajectory.h)
        for time in trajectory.impacts.t:
            usable &= np.abs(trajectory.t - time) > 2.0 * h
    return energy, usable


def settling_time(
    t: np.ndarray, energy: np.ndarray, usable: np.ndarray, e_wall: float, t_end: float
) -> tuple[float, bool]:
    """The first usable sample time from which E - E_wall <= SETTLING_FRACTION (E(0) - E_wall)
    holds at every later usable sample, and whether there is one (else ``t_end``, False); E(0)
    is ``energy[0]``. A first touch of the level is not settling: a time-stepper's energy
    oscillates about its level in flight, and may touch it and rise again."""
    level = e_wall + SETTLING_FRACTION * max(energy[0] - e_wall, 0.0)
    below = usable & (energy <= level)
    above = np.flatnonzero(usable & (energy > level))
    if above.size:
        below[: above[-1] + 1] = False
    settled = np.flatnonzero(below)
    return (float(t[settled[0]]), True) if settled.size else (float(t_end), False)


def member_statistics(run: Run, problem: DoublePendulum, trajectory: Trajectory) -> dict:
    """The member's statistics (module docstring), one row."""
    ensemble, index = _member_of(run.problem_kwargs["q0"])
    row: dict[str, float | str] = {"member": index, "ensemble": ensemble}
    energy, usable = member_energy(problem, trajectory)
    for fraction in ENERGY_TIMES:
        time = problem.t0 + fraction * (run.t_end - problem.t0)
        before = np.flatnonzero(usable & (trajectory.t <= time))
        row[f"E({time:g}) [J]"] = float(energy[before[-1]]) if before.size else math.nan
    settled_at, settled = settling_time(
        trajectory.t, energy, usable, wall_energy(problem), run.t_end
    )
    row[SETTLING] = settled_at
    row["settled"] = float(settled)
    horizon = min(SHADOW_HORIZON, run.t_end)
    q0 = tuple(problem.q0.tolist())
    if ensemble == NULL:
        row[SHADOW] = math.nan  # the null ensemble is compared by its distributions only
    elif run.tolerance_value == REFERENCE_RTOL:
        # the reference's own horizon: the reference run against the tighter re-run
        t_ref, q_ref = _dense_member(q0, horizon, CHECK_RTOL, CHECK_ATOL)
        row[SHADOW] = shadowing_horizon(trajectory.t, trajectory.q, t_ref, q_ref, horizon)
    else:
        t_ref, q_ref = _dense_member(q0, horizon, REFERENCE_RTOL, REFERENCE_ATOL)
        row[SHADOW] = shadowing_horizon(trajectory.t, trajectory.q, t_ref, q_ref, horizon)
    return {MEMBER_ARTEFACT: pd.DataFrame([row])}


# --------------------------------------------------------------------------------------------
# Report


def _label(row: pd.Series) -> str:
    return f"h = {row['h']:g}" if not pd.isna(row["h"]) else f"rtol = {row['tolerance']:g}"


def bootstrap_wasserstein(
    values: np.ndarray,
    reference: np.ndarray,
    resamples: int = BOOTSTRAP,
    seed: int = SEED,
    *,
    paired: bool = True,
) -> tuple[float, float, float]:
    """W1(values, reference) and its 95 % percentile bootstrap interval.

    ``paired``: the members are resampled together (``values[i]`` and ``reference[i]`` are the
    same member); otherwise each sample is resampled on its own (two independent ensembles, the
    null row).
    """
    distance = stats.wasserstein_distance(values, reference)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    others = picks if paired else rng.integers(0, len(reference), size=(resamples, len(reference)))
    boot = [
        stats.wasserstein_distance(values[p], reference[o])
        for p, o in zip(picks, others, strict=True)
    ]
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(distance), float(low), float(high)


def _is_reference(members: pd.DataFrame) -> pd.Series:
    return (members["tolerance"] == REFERENCE_RTOL) & (members["ensemble"] == MAIN)


def null_distances(members: pd.DataFrame, statistics: list[str]) -> pd.DataFrame:
    """The null row of every statistic: W1 between the reference ensemble and the null ensemble
    (independent members, :data:`NULL_SEED`) with its unpaired bootstrap interval, KS and p."""
    reference = members[_is_reference(members)]
    null = members[members["ensemble"] == NULL]
    rows = []
    for statistic in statistics:
        x = null[statistic].to_numpy(float)
        y = reference[statistic].to_numpy(float)
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if len(x) < 2 or len(y) < 2:
            continue
        rows.append(
            {
                "method": NULL_METHOD,
                "setting": NULL_SETTING,
                "statistic": statistic,
                "members": min(len(x), len(y)),
                **_distance(x, y, paired=False),
            }
        )
    columns = ["method", "setting", "statistic", "members", "W1", "W1 low", "W1 high"]
    return pd.DataFrame(rows, columns=[*columns, "mean difference", "KS", "KS p"])


def _distance(x: np.ndarray, y: np.ndarray, paired: bool) -> dict[str, float]:
    """W1 between the samples x and y with its bootstrap interval (members resampled in pairs
    when ``paired``), the mean difference x - y, and the two-sample KS statistic and p."""
    w, low, high = bootstrap_wasserstein(x, y, paired=paired)
    ks = stats.ks_2samp(x, y)
    return {
        "W1": w,
        "W1 low": low,
        "W1 high": high,
        "mean difference": float(x.mean() - y.mean()),
        "KS": float(ks.statistic),
        "KS p": float(ks.pvalue),
    }


def ensemble_distances(
    members: pd.DataFrame, statistics: list[str], null: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per (method, h or rtol, statistic): W1 with its interval, the mean difference
    (method minus reference), KS statistic and p; with the ``null`` rows
    (:func:`null_distances`), each row's null W1, the ratio W1 / null W1 and whether the W1
    interval lies entirely above the null's ("above null")."""
    is_reference = _is_reference(members)
    reference = members[is_reference].set_index("member").sort_index()
    methods = members[~is_reference & (members["ensemble"] == MAIN)]
    floor = None if null is None or null.empty else null.set_index("statistic")
    rows = []
    for (method, label), group in methods.groupby(["method", "setting"], sort=False):
        group = group.set_index("member").sort_index()
        common = group.index.intersection(reference.index)
        for statistic in statistics:
            x = group.loc[common, statistic].to_numpy(float)
            y = reference.loc[common, statistic].to_numpy(float)
            defined = np.isfinite(x) & np.isfinite(y)  # NaN: not defined for this member
            x, y = x[defined], y[defined]
            if len(x) < 2:
                continue
            row = {
                "method": method,
                "setting": label,
                "h": group["h"].iloc[0],
                "tolerance": group["tolerance"].iloc[0],
                "statistic": statistic,
                "members": len(x),
                **_distance(x, y, paired=True),
            }
            w = row["W1"]
            if floor is not None and statistic in floor.index:
                row["null W1"] = float(floor.loc[statistic, "W1"])
                # a statistic equal on both null ensembles (a count of few events) has null 0
                zero = math.inf if w > 0 else math.nan
                row["W1 / null"] = w / row["null W1"] if row["null W1"] > 0 else zero
                row["above null"] = bool(row["W1 low"] > floor.loc[statistic, "W1 high"])
            rows.append(row)
    return pd.DataFrame(rows)


def _members(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    ok = table[table["status"] != FAILED]
    stored = read_artefact(table, folder, MEMBER_ARTEFACT)
    columns = ["key", "method", "h", "tolerance", "t_end", IMPACTS]
    members = stored.merge(ok[columns], on="key")
    members["setting"] = members.apply(_label, axis=1)
    return members


def _statistics(members: pd.DataFrame) -> list[str]:
    """The statistics whose distributions are compared with the reference's (module
    docstring): the energies, the settling time where some reference member settles, the impact
    count."""
    energies = [c for c in members.columns if c.startswith("E(")]
    reference = members[_is_reference(members)]
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


def within_null_settings(distances: pd.DataFrame) -> dict[str, list[str]]:
    """Method -> the settings at which no statistic's W1 is above the null."""
    within: dict[str, list[str]] = {}
    for (method, setting), group in distances.groupby(["method", "setting"], sort=False):
        within.setdefault(method, [])
        if not group["above null"].astype(bool).any():
            within[method].append(setting)
    return within


def censored_quantiles(
    horizons: np.ndarray, bounds: np.ndarray, quantiles: tuple[float, ...] = (0.25, 0.5, 0.75)
) -> list[str]:
    """Quantiles of shadowing horizons censored at ``bounds`` (per member: the reference's own
    horizon, or the cap), as text: min(horizon, bound) has the quantile q; it is a lower bound
    (">= q") where some member at or below it is censored (its horizon reaches its bound)."""
    horizons, bounds = np.asarray(horizons, float), np.asarray(bounds, float)
    if horizons.shape != bounds.shape:
        raise ValueError("bounds must have the shape of horizons")
    seen = np.minimum(horizons, bounds)
    censored = horizons >= bounds
    cells = []
    for fraction in quantiles:
        value = float(np.quantile(seen, fraction, method="inverted_cdf"))
        lower = bool((censored & (seen <= value)).any())
        cells.append(f"{'>= ' if lower else ''}{format_number(value)}")
    return cells


def shadow_table(members: pd.DataFrame) -> pd.DataFrame:
    """Quartiles of the shadowing horizon per method and setting, each member censored at the
    reference's own horizon for it (:func:`censored_quantiles`), and the reference's own row."""
    reference = members[_is_reference(members)].set_index("member")[SHADOW]
    cap = min(SHADOW_HORIZON, float(members["t_end"].max()))
    rows = []
    groups = [(f"reference (rtol {REFERENCE_RTOL:g} vs {CHECK_RTOL:g})", None)]
    groups += list(
        members[~_is_reference(members) & (members["ensemble"] == MAIN)].groupby(
            ["method", "setting"], sort=False
        )
    )
    for key, group in groups:
        if group is None:
            method, setting = key, "-"
            horizons = reference.to_numpy(float)
            bounds = np.full(len(horizons), cap)
        else:
            (method, setting), group = key, group.set_index("member")
            common = group.index.intersection(reference.index)
            horizons = group.loc[common, SHADOW].to_numpy(float)
            bounds = reference.loc[common].to_numpy(float)
        if len(horizons) == 0:
            continue
        q25, median, q75 = censored_quantiles(horizons, bounds)
        censored = int((horizons >= bounds).sum())
        rows.append(
            {
                "method": method,
                "setting": setting,
                "members": len(horizons),
                "censored": censored,
                "q25 [s]": q25,
                "median [s]": median,
                "q75 [s]": q75,
            }
        )
    return pd.DataFrame(rows)


def _figure(distances: pd.DataFrame, null: pd.DataFrame, statistic: str, folder: Path) -> str:
    figure, (steppers, adaptive) = new_figure(2)
    for row in null[null["statistic"] == statistic].to_dict("records"):
        for ax in (steppers, adaptive):
            ax.axhspan(row["W1 low"], row["W1 high"], color="0.85", label="null (95 %)")
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
    main = members[members["ensemble"] == MAIN]
    for method, group in main.groupby("method", sort=True):
        setting = group["h"].min() if group["h"].notna().any() else group["tolerance"].min()
        column = "h" if group["h"].notna().any() else "tolerance"
        chosen = group[group[column] == setting]
        # members not settled by T are left out of the curve, which then ends at the fraction
        # that settled (their settling time is censored at T, not a time)
        times = np.sort(chosen.loc[chosen["settled"] > 0, SETTLING].to_numpy(float))
        ax.step(
            times,
            np.arange(1, len(times) + 1) / len(chosen),
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


def growing_distances(distances: pd.DataFrame) -> pd.DataFrame:
    """The (time-stepper, statistic) pairs whose W1 at the finest step exceeds W1 at the
    coarsest: one row each, with both distances, the largest W1 and its step (a peak before
    the finest step: the distance grows, then shrinks again), whether the finest lies above the
    null, and the mean difference at both ends (a sign change: two biases of opposite sign, one
    of which takes over as h shrinks)."""
    rows = []
    steppers = distances[distances["h"].notna()]
    for (method, statistic), group in steppers.groupby(["method", "statistic"], sort=False):
        group = group.sort_values("h")
        finest, coarsest = group.iloc[0], group.iloc[-1]
        if len(group) < 2 or finest["W1"] <= coarsest["W1"]:
            continue
        largest = group.loc[group["W1"].idxmax()]
        rows.append(
            {
                "method": method,
                "statistic": statistic,
                "h coarsest": coarsest["h"],
                "W1 coarsest": coarsest["W1"],
                "mean difference coarsest": coarsest["mean difference"],
                "h largest": largest["h"],
                "W1 largest": largest["W1"],
                "h finest": finest["h"],
                "W1 finest": finest["W1"],
                "mean difference finest": finest["mean difference"],
                "above null": finest.get("above null", math.nan),  # NaN: no null row
            }
        )
    return pd.DataFrame(rows)


def _median_settling(members: pd.DataFrame) -> str:
    """The median settling time of ``members``, ">= T" when it falls on a member not settled
    by T (censored: :func:`censored_quantiles`)."""
    bounds = np.where(members["settled"] > 0, np.inf, members["t_end"].to_numpy(float))
    return censored_quantiles(members[SETTLING].to_numpy(float), bounds, (0.5,))[0]


def _findings(distances: pd.DataFrame, null: pd.DataFrame, members: pd.DataFrame) -> list[str]:
    findings = []
    reference = members[_is_reference(members)]
    settled = reference["settled"].mean()
    settling = (
        f"{settled:.0%} settled (E - E_wall <= {SETTLING_FRACTION:g} (E(0) - E_wall)) by T; "
        f"median settling time {_median_settling(reference)} s"
        if settled > 0
        else f"no member settled (E - E_wall <= {SETTLING_FRACTION:g} (E(0) - E_wall)) by T = "
        f"{format_number(reference[SETTLING].max())} s (every settling time is censored at T: "
        "the settling time is not compared)"
    )
    findings.append(
        f"Reference ensemble ({len(reference)} members, EventDriven rtol {REFERENCE_RTOL:g}): "
        f"{settling}; median impacts {format_number(reference[IMPACTS].median())}."
    )
    if not null.empty:
        floor = "; ".join(
            f"{row['statistic']} {_interval(row['W1'], row['W1 low'], row['W1 high'])}"
            for row in null.to_dict("records")
        )
        findings.append(f"Null W1 (reference vs an independent reference ensemble): {floor}.")
    within = within_null_settings(distances) if "above null" in distances else {}
    for method, passing in indistinguishable_settings(distances).items():
        compared = ", ".join(distances.loc[distances["method"] == method, "statistic"].unique())
        null_text = ""
        if method in within:
            null_text = f"; every W1 within the null at {', '.join(within[method]) or 'no setting'}"
        findings.append(
            f"{method}: indistinguishable from the reference ensemble (KS p > {SIGNIFICANCE:g} / k "
            f"for each of the k statistics {compared}) at "
            f"{', '.join(passing) if passing else 'no setting'}{null_text}."
        )
    for row in growing_distances(distances).to_dict("records"):
        if pd.isna(row["above null"]):
            verdict = "no null to read it against"
        elif row["above null"]:
            verdict = "above the null"
        else:
            verdict = "within the null: sampling, not a trend, explains it"
        findings.append(
            f"{row['method']}, {row['statistic']}: W1 grows as h shrinks "
            f"({format_number(row['W1 coarsest'])} at h = {row['h coarsest']:g}, largest "
            f"{format_number(row['W1 largest'])} at h = {row['h largest']:g}, "
            f"{format_number(row['W1 finest'])} at h = {row['h finest']:g}), {verdict}; mean "
            f"difference to the reference {format_number(row['mean difference coarsest'])} -> "
            f"{format_number(row['mean difference finest'])}."
        )
    return findings


#: Units of the distance table (W1 in the unit of its statistic, named in the statistic's row).
DISTANCE_UNITS = {
    "W1": "unit of the statistic",
    "mean difference": "unit of the statistic",
    "W1 / null": "-",
    "KS": "-",
    "KS p": "-",
}


def distances_for_paper(distances: pd.DataFrame, null: pd.DataFrame) -> Summary:
    """The LaTeX copy of the distance table: the null row, then one row per method and setting,
    the W1 distance of each statistic in its unit (a statistic's name carries it, "-" for a
    count), the number of statistics above the null and the smallest KS p-value."""
    both = pd.concat([null, distances], ignore_index=True)
    wide = both.pivot_table(
        index=["method", "setting"], columns="statistic", values="W1", sort=False
    )
    wide.columns = [
        f"W1 {name}" if unit_of(str(name)) else f"W1 {name} [-]" for name in wide.columns
    ]
    smallest = both.groupby(["method", "setting"], sort=False)["KS p"].min()
    above = (
        distances.groupby(["method", "setting"], sort=False)["above null"].sum().astype(int)
        if "above null" in distances
        else pd.Series(dtype=int)
    )
    frame = wide.assign(
        **{
            "statistics above null [-]": above.reindex(wide.index).map(
                lambda v: "-" if pd.isna(v) else str(int(v))
            ),
            "smallest KS p [-]": smallest,
        }
    ).reset_index()
    return Summary(frame, "W1 per statistic, the bootstrap intervals in the report")


def _interval(w: float, low: float, high: float) -> str:
    return f"{format_number(w)} [{format_number(low)}, {format_number(high)}]"


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """Distances between ensembles against the null, shadowing horizons, settling times."""
    members = _members(table, folder)
    statistics = _statistics(members)
    null = null_distances(members, statistics)
    distances = ensemble_distances(members, statistics, null)
    if distances.empty:
        nothing = "No finished pair of a method's run and its reference member: nothing compared.\n"
        return StudyReport(
            [Section("Distance to the reference ensemble", nothing)],
            ["No ensemble compared: no method run and reference member finished together."],
        )
    last_energy = [s for s in statistics if s.startswith("E(")][-1]
    both = pd.concat([null, distances], ignore_index=True)
    shown = both.assign(
        W1=[_interval(*w) for w in zip(both["W1"], both["W1 low"], both["W1 high"], strict=True)],
        **{
            "above null": [
                "-" if pd.isna(v) else ("yes" if v else "no")
                for v in both.get("above null", pd.Series(np.nan, index=both.index))
            ]
        },
    )
    columns = ["method", "setting", "statistic", "members", "W1", "mean difference"]
    columns += [c for c in ("W1 / null", "above null") if c in shown] + ["KS", "KS p"]
    sections = [
        Section(
            "Distance to the reference ensemble",
            "1-Wasserstein distance W1 [95 % bootstrap interval] between each method's ensemble "
            "and the reference ensemble, per statistic (energies in J, times in s), the mean "
            "difference (method minus reference), W1 over the null W1 of the statistic, whether "
            "the W1 interval lies entirely above the null's, and the two-sample "
            "Kolmogorov-Smirnov statistic and p-value. The first rows (reference vs reference) "
            "are the null: W1 between the reference ensemble and an independent one of as many "
            f"members (seed {NULL_SEED}), resampled independently.\n\n"
            + markdown_table(
                shown[columns], units=DISTANCE_UNITS, latex=distances_for_paper(distances, null)
            )
            + f"\n![W1 against h and rtol]({_figure(distances, null, last_energy, folder)})\n",
        ),
        Section(
            "Shadowing horizon",
            f"Time until a member's graph (t, q(t)) leaves its reference member's by more than "
            f"{SHADOW_TOLERANCE:g} rad, over time shifts of at most {SHADOW_WINDOW:g} s (an "
            "impact a few steps early or late does not end it), over the members. The first row "
            f"is the reference's own horizon (the reference against a re-run at rtol "
            f"{CHECK_RTOL:g}), capped at the comparison horizon; each method's member is censored "
            "at it (a method is not resolved beyond its reference), and a quartile reached by a "
            "censored member is a lower bound (>=).\n\n"
            + markdown_table(shadow_table(members), units={"members": "-", "censored": "-"}),
        ),
        Section(
            "Settling time",
            f"Settled: E - E_wall <= {SETTLING_FRACTION:g} (E(0) - E_wall), E_wall the least "
            "potential energy with the tip on the wall (below it no impact can occur; after an "
            "impact E >= E_wall, so the energy decays towards it). Empirical distribution of the "
            "settling time at each method's finest step or tolerance (members not settled by T "
            "left out: a curve ends at the fraction settled).\n\n"
            f"![settling time]({_settling_figure(members, folder)})\n",
        ),
    ]
    return StudyReport(sections, _findings(distances, null, members))


STUDY = Study(
    name=NAME,
    title="Double pendulum as an ensemble: chaos compared as chaos",
    description=(
        "Every method runs the same ensemble of perturbed initial conditions of the double "
        "pendulum against the wall; methods are compared with the reference ensemble by the "
        "distributions of the energy at fixed times, the settling time and the impact count "
        "(Wasserstein distance with bootstrap intervals, read against the null distance between "
        "two independent reference ensembles; Kolmogorov-Smirnov test), and by the shadowing "
        "horizon of each member, a distance between graphs that a shift of the impact times by "
        "a few steps does not end (module `studies/pendulum_ensemble.py`)."
    ),
    runs=runs,
    report=report,
)
