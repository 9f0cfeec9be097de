r"""Bifurcation diagrams of the ball on a vibrating table: where each family places the period
doublings and the onset of chaos, and at what cost.

The problem: :class:`impactbench.problems.BallOnVibratingTable` (table s(t) = A sin(omega t),
omega = :data:`ANGULAR_FREQUENCY`, restitution :data:`RESTITUTION`, gravity
:data:`GRAVITY`), swept in the dimensionless acceleration Gamma = A omega^2 / g over
:data:`GAMMAS` (the amplitude A follows Gamma). Its closed forms
(:mod:`impactbench.problems.vibrating_table`): the period-1 orbit exists from
Gamma_sn = pi (1 - e)/(1 + e) and is stable up to its period doubling
Gamma_pd = [(pi (1 - e)/(1 + e))^2 + (2 (1 + e^2)/(1 + e)^2)^2]^(1/2); beyond, a cascade of
doublings leads to chaos and, at larger Gamma, to chatter and sticking on the table (the exact
impact map iterated shows it; no closed form gives the cascade's accumulation).

**Runs.** Every run starts at the apex of the period-1 orbit (t0 = (phi* + pi)/omega, v0 = 0)
raised by :data:`START_OFFSET` of the apex's height above the take-off (so that no run starts
on an unstable orbit, where leaving it would take a time set by round-off), and runs for
:data:`TRANSIENT_PERIODS` + :data:`RECORDED_PERIODS` table periods. **Transient rule**: the
impacts of the first :data:`TRANSIENT_PERIODS` periods are discarded; the impacts of the last
:data:`RECORDED_PERIODS` (at most :data:`MAX_RECORDED` of them) are recorded, each as its table
phase phi = omega t mod 2 pi and its relative take-off velocity u+ scaled by omega / g (an
impact: :func:`impactbench.analysis.impact_events.impact_events`, one definition for both
families). Methods: the event-driven method (the reference, rtol :data:`EVENT_RTOL`), each
time-stepper that integrates moving obstacles with :data:`STEPS_PER_PERIOD` steps per table
period (an integer, so that the grid is the same at every period), and the step-size-controlled
family at :data:`ADAPTIVE_TOLERANCES`. A time-stepper that does not integrate moving obstacles
(its ``moving_obstacles`` False) is not run; the report names it.

**Attractor per run.** Its period is the least p <= :data:`MAX_PERIOD` such that every
recorded impact phase returns within the resolution after p impacts (:func:`period_of`; the
resolution :data:`PHASE_RESOLUTION`, for a time-stepper at least :data:`STEP_RESOLUTION`
omega h: its impact times are known to a step); without such p it is *aperiodic* (chaos, or
chatter: many impacts of different phases per period).

**Per method and setting.** The first period doubling: the first Gamma of the sweep with a period
of 2 or more (or aperiodic) after one of period 1, stated as the midpoint of the two with half
their spacing as resolution, against the closed form Gamma_pd; the onset of aperiodicity (the
first aperiodic Gamma after the doubling) against the reference's; per Gamma, the Hausdorff
distance between its recorded impact states and the reference's (phase in rad, circular, and
scaled velocity; :func:`hausdorff_distance`), and the Gamma where its attractor's period
differs from the reference's (a *different attractor*); its cost (integration time summed over
the sweep, and its ratio to the reference's with a 95 % bootstrap interval over the Gamma
values). **Headline**: per scheme, the coarsest step at which the diagram is right to
:data:`RIGHT_TO` in the bifurcation parameter (both the doubling against the closed form and the
onset of aperiodicity against the reference, each interval within that relative distance).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from impactbench.analysis.impact_events import impact_events
from impactbench.bench.report import (
    format_number,
    markdown_table,
    new_figure,
    save_figure,
)
from impactbench.bench.results import read_artefact
from impactbench.bench.runner import FAILED, Run
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.core.adaptive import Adaptive
from impactbench.core.trajectory import Trajectory
from impactbench.methods import METHODS, EventDriven
from impactbench.problems import BallOnVibratingTable
from impactbench.problems.vibrating_table import (
    TWO_PI,
    birth_acceleration,
    period_doubling_acceleration,
)

NAME = "bifurcation"
ANGULAR_FREQUENCY = 20.0
RESTITUTION = 0.5
GRAVITY = 9.81
#: Table period 2 pi / omega (s).
PERIOD = TWO_PI / ANGULAR_FREQUENCY
#: The swept Gamma = A omega^2 / g: from inside the stable period-1 range, through the
#: doubling cascade, into chaos and chatter.
GAMMAS = {"full": np.linspace(1.2, 2.0, 401), "quick": np.linspace(1.2, 2.0, 9)}
#: Table periods whose impacts are discarded (the transient rule), then recorded.
TRANSIENT_PERIODS = {"full": 400, "quick": 100}
RECORDED_PERIODS = 64
#: Most impacts recorded per run (the first of the recorded window).
MAX_RECORDED = 128
#: The start's offset above the orbit's apex, relative to the apex's height above the take-off.
START_OFFSET = 1e-2
#: Phases closer than this (rad) count as one (:func:`phase_resolution`) ...
PHASE_RESOLUTION = 1e-3
#: ... and, for a time-stepper, closer than this many omega h.
STEP_RESOLUTION = 1.5
#: An attractor with no period up to this is aperiodic.
MAX_PERIOD = 16
#: Relative distance in Gamma within which a diagram is right (the headline).
RIGHT_TO = 1e-2
EVENT_RTOL = 1e-10
#: Time-steppers run (those that integrate moving obstacles), steps per table period.
TIME_STEPPERS = (
    "MoreauJean",
    "CatchingUp",
    "MoreauJeanProjection",
    "NonsmoothGeneralizedAlpha",
    "D1MinusLinear",
    "PaoliSchatzman",
)
STEPS_PER_PERIOD = {"full": (100, 300, 1000, 3000), "quick": (300,)}
#: rtol of the step-size-controlled family (MoreauJean under Adaptive), h_max a tenth of a period.
ADAPTIVE_TOLERANCES = {"full": (1e-3, 1e-5), "quick": (1e-3,)}
#: Name of the artefact of recorded impacts.
IMPACTS = "impacts"
REFERENCE = "EventDriven"
APERIODIC = -1


def gamma_of(amplitude: float | np.ndarray) -> float | np.ndarray:
    """Gamma = A omega^2 / g of a table amplitude A."""
    return amplitude * ANGULAR_FREQUENCY**2 / GRAVITY


def problem_kwargs(gamma: float) -> dict:
    """The problem's parameters at ``gamma``: the table's amplitude, and the start (module
    docstring) above the apex of the period-1 orbit."""
    amplitude = float(gamma) * GRAVITY / ANGULAR_FREQUENCY**2
    orbit = BallOnVibratingTable(amplitude, ANGULAR_FREQUENCY, RESTITUTION, GRAVITY)
    rise = orbit.period_orbit(1).ball_velocity ** 2 / (2.0 * GRAVITY)
    return {
        "amplitude": amplitude,
        "angular_frequency": ANGULAR_FREQUENCY,
        "restitution": RESTITUTION,
        "gravity": GRAVITY,
        "q0": float(orbit.q0[0]) + START_OFFSET * rise,
        "v0": 0.0,
        "t0": float(orbit.t0),
    }


def recorded_impacts(run: Run, problem: BallOnVibratingTable, trajectory: Trajectory) -> dict:
    """The impacts of the recorded window (module docstring): time since the window's start (s),
    table phase in [0, 2 pi) and scaled relative take-off velocity u+ omega / g.

    Raises
    ------
    RuntimeError
        When the impact log overflowed (its later entries are not known): the run fails
        rather than record a window it did not see.
    """
    log = trajectory.impacts
    if log.total > len(log.t):
        raise RuntimeError(
            f"impact log full ({len(log.t)} of {log.total} entries kept): raise log_capacity"
        )
    events = impact_events(trajectory)
    start = run.t_end - RECORDED_PERIODS * PERIOD
    chosen = events.first_entries[events.times >= start][:MAX_RECORDED]
    t = np.asarray(log.t, dtype=float)[chosen]
    after = np.asarray(log.normal_velocity_after, dtype=float)[chosen]
    frame = pd.DataFrame(
        {
            "time": t - start,
            "phase": np.mod(ANGULAR_FREQUENCY * t, TWO_PI),
            "velocity": after * ANGULAR_FREQUENCY / GRAVITY,
        }
    )
    return {IMPACTS: frame}


def moving_obstacle_steppers() -> tuple[list[str], list[str]]:
    """The time-steppers of :data:`TIME_STEPPERS` that integrate moving obstacles, and those
    that do not (not run)."""
    run = [name for name in TIME_STEPPERS if METHODS[name].moving_obstacles]
    return run, [name for name in TIME_STEPPERS if name not in run]


def runs(quick: bool) -> list[Run]:
    """Every Gamma with the reference, each time-stepper at each step, the adaptive family."""
    grid = "quick" if quick else "full"
    periods = TRANSIENT_PERIODS[grid] + RECORDED_PERIODS
    steppers, _ = moving_obstacle_steppers()
    result = []
    for gamma in GAMMAS[grid]:
        kwargs = problem_kwargs(gamma)
        t_end = kwargs["t0"] + periods * PERIOD
        common = {"problem_kwargs": kwargs, "artefact": recorded_impacts}
        result.append(
            Run(
                BallOnVibratingTable,
                EventDriven,
                t_end,
                method_kwargs={"rtol": EVENT_RTOL},
                output_every=1000,
                **common,
            )
        )
        for name in steppers:
            for steps in STEPS_PER_PERIOD[grid]:
                total = periods * steps
                result.append(
                    Run(
                        BallOnVibratingTable,
                        METHODS[name],
                        t_end,
                        PERIOD / steps,
                        method_kwargs={"log_capacity": total + 1},
                        output_every=max(1, total // 1000),
                        nominal_h=PERIOD / steps,
                        **common,
                    )
                )
        for rtol in ADAPTIVE_TOLERANCES[grid]:
            method_kwargs = {
                "scheme": "MoreauJean",
                "rtol": rtol,
                "atol": 1e-2 * rtol,
                "gap_tolerance": rtol,
                "h_max": PERIOD / 10,
            }
            result.append(
                Run(
                    BallOnVibratingTable,
                    Adaptive,
                    t_end,
                    method_kwargs=method_kwargs,
                    tolerance="rtol",
                    **common,
                )
            )
    return result


# --------------------------------------------------------------------------------------------
# Analysis of the recorded impacts


def phase_resolution(h: float | None) -> float:
    """Phases closer than this (rad) count as one: :data:`PHASE_RESOLUTION`, and for a
    time-stepper at least :data:`STEP_RESOLUTION` omega h (its impact times are known to a step:
    on a period-1 orbit its impacts may fall on either of two neighbouring steps)."""
    if h is None or not math.isfinite(h):
        return PHASE_RESOLUTION
    return max(PHASE_RESOLUTION, STEP_RESOLUTION * ANGULAR_FREQUENCY * h)


def period_of(phases: np.ndarray, resolution: float = PHASE_RESOLUTION) -> int:
    """The attractor's period from the phases of its successive impacts: the least p <=
    :data:`MAX_PERIOD` with every phi_{k+p} within ``resolution`` of phi_k (on the circle),
    :data:`APERIODIC` when there is none (or fewer than 2p impacts to tell), 0 without impacts
    (the ball at rest on the table)."""
    phases = np.asarray(phases, dtype=float)
    if phases.size == 0:
        return 0
    for p in range(1, MAX_PERIOD + 1):
        if phases.size < 2 * p:
            break
        shift = np.abs(phases[p:] - phases[:-p]) % TWO_PI
        if np.minimum(shift, TWO_PI - shift).max() <= resolution:
            return p
    return APERIODIC


def hausdorff_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Hausdorff distance between two sets of impact states (rows (phase [rad], scaled
    velocity)), the phase difference taken on the circle; NaN when a set is empty.

    Parameters
    ----------
    a, b : ndarray, shape (k, 2) and (l, 2)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    phase = np.abs(a[:, None, 0] - b[None, :, 0]) % TWO_PI
    phase = np.minimum(phase, TWO_PI - phase)
    distance = np.hypot(phase, a[:, None, 1] - b[None, :, 1])
    return float(max(distance.min(axis=1).max(), distance.min(axis=0).max()))


def first_doubling(gammas: np.ndarray, periods: np.ndarray) -> tuple[float, float]:
    """The first period doubling of a sweep: midpoint and half-spacing of the first pair of
    consecutive Gamma with period 1 then a period of 2 or more (or aperiodic); (NaN, NaN)
    when there is none."""
    for k in range(1, len(gammas)):
        if periods[k - 1] == 1 and (periods[k] >= 2 or periods[k] == APERIODIC):
            return 0.5 * (gammas[k - 1] + gammas[k]), 0.5 * (gammas[k] - gammas[k - 1])
    return math.nan, math.nan


def first_aperiodic(gammas: np.ndarray, periods: np.ndarray, after: float) -> tuple[float, float]:
    """The onset of aperiodicity: midpoint and half-spacing of the first pair of consecutive
    Gamma above ``after`` (the doubling) with a period then :data:`APERIODIC`; (NaN, NaN)
    when there is none."""
    for k in range(1, len(gammas)):
        if gammas[k - 1] > after and periods[k - 1] > 0 and periods[k] == APERIODIC:
            return 0.5 * (gammas[k - 1] + gammas[k]), 0.5 * (gammas[k] - gammas[k - 1])
    return math.nan, math.nan


def _setting(row: pd.Series) -> str:
    """A method's setting as labelled in the tables: the method, its steps per period."""
    if row["method"].startswith(REFERENCE):
        return row["method"]
    if row["method"].startswith("Adaptive"):
        return f"Adaptive {row['method.scheme']} (rtol = {row['method.rtol']:g})"
    # the log's size is no setting of the scheme
    scheme = re.sub(r"log_capacity=\d+,?", "", row["method"]).replace(",]", "]").replace("[]", "")
    return f"{scheme} (P/h = {round(PERIOD / row['h'])})"


def diagrams(table: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """One row per finished run: setting, Gamma, the attractor's period, its recorded impact
    states (column ``points``, shape (k, 2)), and its distance from the reference's at the
    same Gamma."""
    done = table[table["status"] != FAILED].copy()
    stored = read_artefact(done, folder, IMPACTS)
    groups = dict(list(stored.groupby("key")))
    points = {key: group[["phase", "velocity"]].to_numpy() for key, group in groups.items()}
    times = {key: group["time"].to_numpy() for key, group in groups.items()}
    done["setting"] = done.apply(_setting, axis=1)
    done["gamma"] = np.round(gamma_of(done["problem.amplitude"].to_numpy(float)), 12)
    done["points"] = [points.get(key, np.zeros((0, 2))) for key in done["key"]]
    done["times"] = [times.get(key, np.zeros(0)) for key in done["key"]]
    steps = done["h"] if "h" in done else pd.Series(math.nan, index=done.index)
    done["period"] = [
        period_of(p[:, 0], phase_resolution(h)) for p, h in zip(done["points"], steps, strict=True)
    ]
    reference = done[done["method"].str.startswith(REFERENCE)].set_index("gamma")
    done["distance"] = [
        hausdorff_distance(p, reference.at[g, "points"]) if g in reference.index else math.nan
        for p, g in zip(done["points"], done["gamma"], strict=True)
    ]
    done["reference period"] = done["gamma"].map(reference["period"])
    # the reference first, then the time-steppers from the coarsest step, then the adaptive runs
    family = np.where(done["method"].str.startswith(REFERENCE), 0, 1)
    family = np.where(done["method"].str.startswith("Adaptive"), 2, family)
    done = done.assign(family=family, coarse=-steps.fillna(0.0))
    done = done.sort_values(["family", "coarse", "setting", "gamma"])
    done = done.drop(columns=["family", "coarse"])
    return done.reset_index(drop=True)


def _bootstrap_ratio(cost: np.ndarray, reference: np.ndarray, seed: int = 0) -> tuple:
    """Ratio of summed costs (paired by Gamma) with its 95 % bootstrap interval over Gamma."""
    rng = np.random.default_rng(seed)
    ratio = cost.sum() / reference.sum()
    draws = rng.integers(0, len(cost), size=(2000, len(cost)))
    samples = cost[draws].sum(axis=1) / reference[draws].sum(axis=1)
    return ratio, *np.quantile(samples, [0.025, 0.975])


def placements(frame: pd.DataFrame) -> pd.DataFrame:
    """Per setting: the first doubling against the closed form, the onset of aperiodicity
    against the reference's, the distances, the different attractors and the cost."""
    closed = period_doubling_acceleration(1, RESTITUTION)
    ref = frame[frame["setting"].str.startswith(REFERENCE)]
    ref_doubling, _ = first_doubling(ref["gamma"].to_numpy(), ref["period"].to_numpy())
    ref_onset, ref_half = first_aperiodic(
        ref["gamma"].to_numpy(), ref["period"].to_numpy(), ref_doubling
    )
    ref_cost = ref.set_index("gamma")["integration_time"]
    rows = []
    for setting, group in frame.groupby("setting", sort=False):
        gammas, periods = group["gamma"].to_numpy(), group["period"].to_numpy()
        doubling, half = first_doubling(gammas, periods)
        onset, onset_half = first_aperiodic(gammas, periods, doubling)
        paired = group[group["gamma"].isin(ref_cost.index)]
        cost = paired["integration_time"].to_numpy(float)
        ratio, low, high = _bootstrap_ratio(cost, ref_cost[paired["gamma"]].to_numpy(float))
        doubling_error = doubling / closed - 1.0
        onset_error = onset / ref_onset - 1.0
        rows.append(
            {
                "setting": setting,
                "h": group["h"].iloc[0] if "h" in group else math.nan,
                "runs": len(group),
                "first doubling": doubling,
                "+-": half,
                "rel. error vs closed form": doubling_error,
                "onset of aperiodicity": onset,
                "+- ": onset_half,
                "rel. difference vs reference": onset_error,
                "median distance": float(np.nanmedian(group["distance"])),
                "max distance": float(np.nanmax(group["distance"])),
                "different attractors": int((group["period"] != group["reference period"]).sum()),
                "cost [s]": float(cost.sum()),
                "cost / reference": ratio,
                "95 % interval": f"[{format_number(low)}, {format_number(high)}]",
                "right": _right(doubling, half, closed) and _right(onset, onset_half, ref_onset),
            }
        )
    return pd.DataFrame(rows)


def _right(value: float, half: float, target: float) -> bool:
    """Whether the interval value +- half lies within :data:`RIGHT_TO` of ``target``."""
    if not all(math.isfinite(x) for x in (value, half, target)):
        return False
    return abs(value - target) + half <= RIGHT_TO * target


def headline(placed: pd.DataFrame) -> pd.DataFrame:
    """Per scheme, the coarsest step whose diagram is right (:func:`_right`), its cost and
    the reference's."""
    ref = placed[placed["setting"].str.startswith(REFERENCE)]
    rows = []
    steppers = placed[placed["setting"].str.contains(r"\(P/h", regex=True)].copy()
    steppers["scheme"] = steppers["setting"].str.split(" ").str[0]
    for scheme, group in steppers.groupby("scheme", sort=False):
        right = group[group["right"]].sort_values("h", ascending=False)
        if right.empty:
            rows.append(
                {
                    "scheme": scheme,
                    "coarsest right step": f"none of P/{int(round(PERIOD / group['h'].min()))}"
                    " and coarser",
                    "cost [s]": math.nan,
                    "cost / reference": math.nan,
                    "95 % interval": "-",
                }
            )
            continue
        best = right.iloc[0]
        rows.append(
            {
                "scheme": scheme,
                "coarsest right step": f"P/{int(round(PERIOD / best['h']))}",
                "cost [s]": best["cost [s]"],
                "cost / reference": best["cost / reference"],
                "95 % interval": best["95 % interval"],
            }
        )
    if not ref.empty:
        rows.append(
            {
                "scheme": REFERENCE,
                "coarsest right step": "-",
                "cost [s]": float(ref["cost [s]"].iloc[0]),
                "cost / reference": 1.0,
                "95 % interval": "-",
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Report


def _diagram_figure(frame: pd.DataFrame, folder: Path) -> str:
    """Impact phase against Gamma, one panel per setting, the closed-form thresholds drawn."""
    settings = list(dict.fromkeys(frame["setting"]))
    figure, axes = new_figure(len(settings), width=4.0, height=3.0)
    born = birth_acceleration(1, RESTITUTION)
    doubling = period_doubling_acceleration(1, RESTITUTION)
    for ax, setting in zip(axes, settings, strict=True):
        rows = frame[frame["setting"] == setting]
        points = list(rows["points"])
        gamma = np.concatenate(
            [np.full(len(p), g) for g, p in zip(rows["gamma"], points, strict=True)]
        )
        phase = np.concatenate([p[:, 0] for p in points])
        ax.scatter(gamma, phase, s=0.3, color="black", linewidths=0)
        for value, style in ((born, ":"), (doubling, "--")):
            if frame["gamma"].min() <= value <= frame["gamma"].max():
                ax.axvline(value, color="tab:red", linestyle=style, linewidth=0.8)
        ax.set_title(setting, fontsize="small")
        ax.set_xlabel(r"$\Gamma = A\omega^2/g$ [-]")
        ax.set_ylabel(r"impact phase $\omega t$ mod $2\pi$ [rad]")
        ax.set_ylim(0.0, TWO_PI)
    save_figure(figure, folder / "diagrams.png")
    return (
        "![Bifurcation diagrams: impact phase against Gamma per method and setting; dashed: the "
        "closed-form period doubling of the period-1 orbit](diagrams.png)\n"
    )


#: Gamma of the orbits drawn in the (t, x) plane: a stable period-1 orbit, a period-2 orbit.
ORBIT_GAMMAS = (1.3, 1.6)
#: Table periods of the recorded window drawn.
ORBIT_PERIODS = 4


def _orbit_figure(frame: pd.DataFrame, folder: Path) -> str:
    """The reference's orbit at :data:`ORBIT_GAMMAS` in the (t, x) plane with the table: from
    each recorded impact (t_k, x_k = s(t_k), u+_k) the exact flight x_k + v_k (t - t_k)
    - g (t - t_k)^2 / 2, v_k = s'(t_k) + u+_k, up to the next recorded impact."""
    reference = frame[frame["setting"].str.startswith(REFERENCE)]
    chosen = [reference.loc[(reference["gamma"] - g).abs().idxmin()] for g in ORBIT_GAMMAS]
    figure, axes = new_figure(len(chosen), width=4.0, height=3.0)
    span = ORBIT_PERIODS * PERIOD
    for ax, row in zip(axes, chosen, strict=True):
        amplitude = row["gamma"] * GRAVITY / ANGULAR_FREQUENCY**2
        t = np.linspace(0.0, span, 800)
        # times are counted from the window's start, an integer number of periods after t0
        t0 = float(row["problem.t0"])
        ax.plot(t, amplitude * np.sin(ANGULAR_FREQUENCY * (t + t0)), color="0.5", label="table")
        times, points = row["times"], row["points"]
        for k in range(len(times) - 1):
            if times[k] > span:
                break
            tau = np.linspace(0.0, times[k + 1] - times[k], 200)
            x0 = amplitude * math.sin(ANGULAR_FREQUENCY * (times[k] + t0))
            speed = amplitude * ANGULAR_FREQUENCY * math.cos(ANGULAR_FREQUENCY * (times[k] + t0))
            v0 = speed + points[k, 1] * GRAVITY / ANGULAR_FREQUENCY
            ax.plot(
                times[k] + tau,
                x0 + tau * (v0 - 0.5 * GRAVITY * tau),
                color="black",
                label="ball (event-driven)" if k == 0 else None,
            )
        ax.set_xlim(0.0, span)
        ax.set_title(f"$\\Gamma$ = {row['gamma']:.4g}", fontsize="small")
        ax.set_xlabel("time in the recorded window [s]")
        ax.set_ylabel("height $x$ [m]")
        ax.legend(fontsize="x-small", loc="upper right")
    save_figure(figure, folder / "orbits.png")
    return (
        "![The reference's orbits in the (t, x) plane with the table's motion: a period-1 "
        "orbit and a period-2 orbit](orbits.png)\n"
    )


#: Units of the report's columns.
UNITS = {
    "first doubling": "-",
    "+-": "-",
    "+- ": "-",
    "onset of aperiodicity": "-",
    "rel. error vs closed form": "-",
    "rel. difference vs reference": "-",
    "median distance": "-",
    "max distance": "-",
    "cost / reference": "-",
    "different attractors": "-",
    "runs": "-",
    "h": "s",
}


def report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """The placements per setting, the headline, the diagrams, findings."""
    folder = Path(folder)
    done = table[table["status"] != FAILED]
    if done.empty or not done["method"].str.startswith(REFERENCE).any():
        return StudyReport([Section("Diagrams", "None (no reference run finished).\n")], [])
    frame = diagrams(table, folder)
    placed = placements(frame)
    best = headline(placed)
    _, refused = moving_obstacle_steppers()
    closed = period_doubling_acceleration(1, RESTITUTION)
    not_run = (
        f"Not run (they do not integrate moving obstacles): {', '.join(refused)}.\n\n"
        if refused
        else ""
    )
    sections = [
        Section(
            "Where each method places the bifurcations",
            f"Closed-form period doubling of the period-1 orbit: Gamma_pd = {closed:.6g} "
            f"(e = {RESTITUTION}). First doubling and onset of aperiodicity as the midpoint of "
            "the two Gamma of the sweep that bracket them, +- half their spacing; distances: "
            "Hausdorff distance per Gamma between the recorded impact states (phase [rad], "
            "scaled velocity u+ omega/g) and the reference's; different attractors: Gamma where "
            "the period (least number of impacts after which every impact phase returns, to "
            f"{PHASE_RESOLUTION:g} rad or {STEP_RESOLUTION} omega h) differs from the "
            "reference's; cost: "
            "integration time summed over the sweep, its ratio to the reference's with a 95 % "
            "bootstrap interval over Gamma.\n\n"
            + not_run
            + markdown_table(placed.drop(columns=["right"]), 4, units=UNITS),
        ),
        Section(
            "The step at which the diagram is right",
            f"Per scheme, the coarsest step whose first doubling lies within {RIGHT_TO:.0%} of "
            f"the closed form and whose onset of aperiodicity lies within {RIGHT_TO:.0%} of the "
            "reference's (each interval within), against the reference's cost.\n\n"
            + markdown_table(best, 4, units=UNITS),
        ),
        Section("Diagrams", _diagram_figure(frame, folder)),
        Section("Orbits", _orbit_figure(frame, folder)),
    ]
    findings = []
    ref = placed[placed["setting"].str.startswith(REFERENCE)].iloc[0]
    findings.append(
        f"Reference (event-driven): first period doubling at Gamma = "
        f"{format_number(ref['first doubling'], 5)} +- {format_number(ref['+-'], 2)} against "
        f"the closed form {closed:.5g} (relative error "
        f"{format_number(ref['rel. error vs closed form'], 2)}); onset of aperiodicity at "
        f"{format_number(ref['onset of aperiodicity'], 5)}."
    )
    for _, row in best[best["scheme"] != REFERENCE].iterrows():
        step = row["coarsest right step"]
        if step.startswith("none"):
            findings.append(
                f"{row['scheme']}: no step of the sweep ({step.removeprefix('none of ')}) "
                f"gives a diagram right to {RIGHT_TO:.0%} in Gamma."
            )
            continue
        findings.append(
            f"{row['scheme']}: diagram right to {RIGHT_TO:.0%} in Gamma from the step {step}, "
            f"at {format_number(row['cost / reference'])} {row['95 % interval']} times the "
            "reference's cost."
        )
    return StudyReport(sections, findings)


STUDY = Study(
    name=NAME,
    title="Bifurcation diagrams of the ball on a vibrating table",
    description=(
        "Brute-force bifurcation diagrams of a ball on a sinusoidally vibrating table (a moving "
        "obstacle) swept in Gamma = A omega^2 / g through the period-doubling cascade into "
        "chaos and chatter: the event-driven reference, each time-stepper that integrates "
        "moving obstacles at several steps per period and the step-size-controlled family; "
        "per method, the first period doubling against its closed form, the onset of "
        "aperiodicity against the reference, Hausdorff distances between diagrams, different "
        "attractors and the cost, and the step at which each scheme's diagram is right to 1 %."
    ),
    runs=runs,
    report=report,
)
