"""The figure of one run against its reference: the views a paper in this field shows.

Six panels (:func:`trajectory_figure`): positions and velocities against time with the exact or
reference solution dashed and the run's impact-log entries as ticks on the time axis; the phase
portrait of the first coordinate; the impact map (impact time against the normal velocity
before the impact, run and reference); the gap g_i(q(t)) on a symmetric-log axis, so that
penetration (g < 0) is visible at any depth; and the energy error E(t) - E_ref(t) (with no
reference: the energy E(t) itself). Drawn by ``impactbench simulate ... --plot``, and in study
reports from a run's stored artefacts (:func:`trajectory_artefact`, :func:`stored_trajectory`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..analysis.impact_events import impact_events
from ..analysis.reference import Reference
from ..core.coordinates import rate_unit
from ..core.energy import kinetic_energy, potential_energy
from ..core.method import Method
from ..core.problem import Problem, timed_gap, timed_gradient
from ..core.trajectory import ImpactLog, Status, Trajectory
from .figure_data import (
    OPEN,
    SLIP,
    STATE_NAMES,
    STICK,
    Drawn,
    contact_states,
    drawn,
    reference_label,
)
from .style import (
    coordinate_labels,
    coordinate_unit,
    energy_unit,
    gap_unit,
    new_figure,
    variant_label,
)

#: Points at which the reference is drawn (and evaluated for the energy error).
REFERENCE_POINTS = 2000
#: Coordinates and gaps are named in a legend up to this many (more would hide the panel).
LEGEND_ENTRIES = 6
#: Samples and impact-log entries kept in a run's trajectory artefact.
ARTEFACT_SAMPLES = 4000
ARTEFACT_IMPACTS = 2000


def trajectory_artefact(run: object, problem: Problem, trajectory: Trajectory) -> dict:
    """A run's trajectory as artefacts (``Run.artefact``) for :func:`stored_trajectory`.

    ``trajectory``: at most :data:`ARTEFACT_SAMPLES` output samples, evenly spaced in index
    (first and last included), and the sample of each constraint's deepest penetration (so that
    the gap panel drawn from them shows the true minimum the tables report), columns t,
    q1..qn, v1..vn; ``impact_log``: the first :data:`ARTEFACT_IMPACTS` entries of the impact
    log (t, constraint, normal velocities before and after).
    """
    count = trajectory.t.shape[0]
    gaps = problem.gaps(trajectory.q, trajectory.t)
    slots = max(2, ARTEFACT_SAMPLES - gaps.shape[1])  # room for the deepest samples
    evenly = np.linspace(0, count - 1, min(count, slots)).round().astype(int)
    deepest = np.argmin(gaps, axis=0) if count else np.zeros(0, int)
    keep = np.unique(np.concatenate([evenly, deepest]))
    samples = {"t": trajectory.t[keep]}
    for i in range(trajectory.q.shape[1]):
        samples[f"q{i + 1}"] = trajectory.q[keep, i]
    for i in range(trajectory.v.shape[1]):
        samples[f"v{i + 1}"] = trajectory.v[keep, i]
    log = trajectory.impacts
    first = slice(0, ARTEFACT_IMPACTS)
    entries = {
        "t": log.t[first],
        "constraint": log.constraint[first],
        "normal_velocity_before": log.normal_velocity_before[first],
        "normal_velocity_after": log.normal_velocity_after[first],
    }
    return {"trajectory": pd.DataFrame(samples), "impact_log": pd.DataFrame(entries)}


def stored_trajectory(
    samples: pd.DataFrame,
    log: pd.DataFrame,
    method: Method,
    problem: str,
    h: float | None,
) -> Trajectory:
    """The :class:`Trajectory` (samples, impact log, ``h`` and how the method outputs its
    velocity) of a run's stored :func:`trajectory_artefact`, to draw with
    :func:`trajectory_figure`."""
    q = samples.filter(regex=r"^q\d+$").to_numpy(dtype=float)
    v = samples.filter(regex=r"^v\d+$").to_numpy(dtype=float)
    impacts = ImpactLog(
        t=log["t"].to_numpy(dtype=float),
        constraint=log["constraint"].to_numpy(dtype=np.int64),
        normal_velocity_before=log["normal_velocity_before"].to_numpy(dtype=float),
        normal_velocity_after=log["normal_velocity_after"].to_numpy(dtype=float),
        total=len(log),
    )
    t = samples["t"].to_numpy(dtype=float)
    stats = {"velocity_output": getattr(method, "velocity_output", "state")}
    return Trajectory(t, q, v, impacts, Status.OK, "stored", stats, method.name, problem, h)


def _energy(problem: Problem, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return kinetic_energy(problem, q, v) + potential_energy(problem, q)


def mark_impacts(ax: Axes, times: np.ndarray, color: str = "C3") -> None:
    """Ticks at ``times`` along the bottom edge of ``ax`` (the run's impacts)."""
    if len(times):
        ax.plot(
            times,
            np.zeros(len(times)),
            "|",
            color=color,
            markersize=6,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
        )


def draw_impact_map(ax: Axes, problem: Problem, t_range: tuple[float, float]) -> None:
    """Label the impact-map panel ``ax`` (impact time, normal velocity before); say so in it
    when it holds no impact."""
    ax.set(
        xlabel="impact time $t_k$ [s]",
        ylabel=rf"normal velocity $-u^-$ [{gap_unit(problem.name)}/s]",
        title="impact map",
    )
    ax.set_xlim(*t_range)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="best")
    if not ax.has_data():
        ax.text(0.5, 0.5, "no impacts", ha="center", va="center", transform=ax.transAxes)


def draw_contacts(
    ax_slip: Axes,
    ax_state: Axes,
    problem: Problem,
    runs: Sequence[tuple[Drawn, dict[str, Any]]],
) -> None:
    """The slip velocity W_T,i v of each closed contact (``ax_slip``) and the contact states
    open / stick / slip over time (``ax_state``, contact i on the levels 3 i + state; several
    runs slightly apart) of the frictional ``problem``, for each drawn run and its line style
    (:func:`impactbench.bench.figure_data.contact_states`)."""
    m = 0
    for k, (run, line) in enumerate(runs):
        states = contact_states(problem, run.q, run.v, run.t)
        m = states.state.shape[1]
        offset = 0.3 * (k - (len(runs) - 1) / 2) / max(1, len(runs))
        for i in range(m):
            look = {"color": f"C{i}", **line}
            ax_slip.plot(run.t, states.slip[:, i], **look)
            ax_state.step(run.t, 3 * i + states.state[:, i] + offset, where="post", **look)
    ax_slip.axhline(0.0, color="black", linewidth=0.6)
    ax_slip.set(
        xlabel="$t$ [s]",
        ylabel=rf"slip velocity $W_{{T,i}} v$ [{gap_unit(problem.name)}/s]",
        title="slip velocity of the closed contacts (0: stick)",
    )
    levels = [3 * i + s for i in range(m) for s in (OPEN, STICK, SLIP)]
    names = [f"contact {i + 1}: {STATE_NAMES[s]}" for i in range(m) for s in (OPEN, STICK, SLIP)]
    ax_state.set_yticks(levels, names)
    ax_state.set(xlabel="$t$ [s]", title="contact states")


def trajectory_figure(
    problem: Problem, trajectory: Trajectory, reference: Reference | None = None
) -> Figure:
    """Six views of ``trajectory`` (see the module docstring), with ``reference`` if given;
    eight for a frictional problem (the slip velocities and the contact states).

    Parameters
    ----------
    problem : Problem
        The problem the trajectory solves.
    trajectory : Trajectory
        The run: samples t (N,), q (N, n), v (N, n) and its impact log; drawn through its
        dense output when it has one (:func:`impactbench.bench.figure_data.drawn`).
    reference : Reference, optional
        The exact solution (:meth:`Reference.exact`) or a reference run; drawn dashed. The
        energy panel then shows E - E_ref at the drawn points.

    Returns
    -------
    matplotlib.figure.Figure
    """
    run = drawn(trajectory)
    figure, axes = new_figure(8 if problem.has_friction else 6, aspect=0.75)
    ax_q, ax_v, ax_phase, ax_map, ax_gap, ax_energy = axes[:6]
    label = reference_label(reference) if reference is not None else None
    method = variant_label(trajectory.method)
    t_ref = np.linspace(run.t[0], run.t[-1], REFERENCE_POINTS)
    q_ref, v_ref = reference.state(t_ref) if reference is not None else (None, None)
    _draw_states(ax_q, ax_v, problem, run, (t_ref, q_ref, v_ref))
    impact_times = impact_events(trajectory).times
    mark_impacts(ax_q, impact_times)
    mark_impacts(ax_v, impact_times)
    ax_q.set_title(
        "positions"
        + (" (ref. dashed)" if label else "")
        + (" (ticks: impacts)" if len(impact_times) else "")
    )
    q_label, v_label = coordinate_labels(problem, run.q.shape[1])[0]
    ax_phase.plot(run.q[:, 0], run.v[:, 0], color="C0", linewidth=0.8, label=method)
    if reference is not None:
        ax_phase.plot(q_ref[:, 0], v_ref[:, 0], "k--", linewidth=0.7, label=label)
    ax_phase.set(xlabel=q_label, ylabel=v_label, title="phase portrait")
    ax_phase.legend(loc="best")
    _draw_run_impacts(ax_map, trajectory)
    if reference is not None and reference.impact_times is not None and len(reference.impact_times):
        speeds = _reference_impact_speeds(problem, reference, float(run.t[-1] - run.t[0]))
        ax_map.plot(reference.impact_times, speeds, "x", color="black", label=label)
    draw_impact_map(ax_map, problem, (run.t[0], run.t[-1]))
    _draw_gaps(ax_gap, problem, run)
    _draw_energy(ax_energy, problem, run, reference)
    if problem.has_friction:
        draw_contacts(axes[6], axes[7], problem, [(run, {})])
    figure.suptitle(f"{problem.name}: {method}" + (f" against the {label}" if label else ""))
    return figure


def _draw_states(ax_q: Axes, ax_v: Axes, problem: Problem, run: Drawn, solution: tuple) -> None:
    """Every coordinate and its velocity against time, the solution (t, q, v) dashed."""
    t_ref, q_ref, v_ref = solution
    n = run.q.shape[1]
    named = n <= LEGEND_ENTRIES
    labels = coordinate_labels(problem, n)
    for i in range(n):
        color = f"C{i}"
        ax_q.plot(run.t, run.q[:, i], color=color, label=labels[i][0] if named else None)
        ax_v.plot(run.t, run.v[:, i], color=color, label=labels[i][1] if named else None)
        if q_ref is not None:
            ax_q.plot(t_ref, q_ref[:, i], color="black", linestyle="--", linewidth=0.7)
            ax_v.plot(t_ref, v_ref[:, i], color="black", linestyle="--", linewidth=0.7)
    unit = coordinate_unit(problem)
    ax_q.set(xlabel="$t$ [s]", ylabel=f"$q$ [{unit}]")
    ax_v.set(xlabel="$t$ [s]", ylabel=f"$v$ [{rate_unit(unit)}]", title="velocities")
    if named:
        ax_q.legend(loc="best")
        ax_v.legend(loc="best")


def _draw_run_impacts(ax: Axes, trajectory: Trajectory) -> None:
    """The first entry of each impact event of the run (PaoliSchatzman logs two)."""
    impacts = trajectory.impacts
    first = impact_events(trajectory).first_entries if len(impacts.t) else []
    if len(first):
        speeds = -impacts.normal_velocity_before[first]
        ax.plot(impacts.t[first], speeds, "o", color="C3", label="run")


def _reference_impact_speeds(problem: Problem, reference: Reference, span: float) -> list[float]:
    """-u^- of the closing constraint at each reference impact (just before it): u = G v, and
    G v + dg/dt relative to a moving obstacle."""
    before = reference.impact_times - 1e-9 * max(1.0, span)
    q_before, v_before = reference.state(before)
    speeds = []
    for ti, qi, vi in zip(before, q_before, v_before, strict=True):
        gaps = np.asarray(timed_gap(problem, ti, qi), dtype=float)
        velocity = np.atleast_2d(timed_gradient(problem, ti, qi)) @ vi
        if problem.rheonomic:
            velocity = velocity + np.asarray(problem.gap_rate(ti, qi), dtype=float)
        speeds.append(-float(velocity[int(np.argmin(gaps))]))
    return speeds


def _draw_gaps(ax: Axes, problem: Problem, run: Drawn) -> None:
    """Every gap g_i(q(t)) (g_i(t, q(t)) for a moving obstacle) on a symmetric-log axis
    (penetration visible at any depth)."""
    gaps = np.asarray(problem.gaps(run.q, run.t), dtype=float)
    several = 1 < gaps.shape[1] <= LEGEND_ENTRIES
    for i in range(gaps.shape[1]):
        ax.plot(run.t, gaps[:, i], label=f"$g_{{{i + 1}}}$" if several else None)
    ax.axhline(0.0, color="black", linewidth=0.6)
    scale = float(np.nanmax(np.abs(gaps))) if gaps.size else 1.0
    ax.set_yscale("symlog", linthresh=max(1e-12, 1e-6 * scale))
    ax.set(
        xlabel="$t$ [s]",
        ylabel=f"${'g(t, q)' if problem.rheonomic else 'g(q)'}$ [{gap_unit(problem.name)}]",
        title="gap (penetration where < 0)",
    )
    if several:
        ax.legend(loc="best")


def _sided_times(t: np.ndarray) -> np.ndarray:
    """``t`` (N,) with each pair of equal times (left limit, value after an impact) moved
    1e-9 (T - t0) apart, within [t0, T]: the reference is compared on the same side of its
    impact (its energy jumps there; it changes by O(1e-9) elsewhere)."""
    shifted = np.array(t, dtype=float)
    delta = 1e-9 * max(1.0, float(t[-1] - t[0])) if t.size else 0.0
    pair = np.flatnonzero(shifted[1:] == shifted[:-1])
    shifted[pair] -= delta
    shifted[pair + 1] += delta
    return np.clip(shifted, t[0], t[-1]) if t.size else shifted


def _draw_energy(ax: Axes, problem: Problem, run: Drawn, reference: Reference | None) -> None:
    """The energy error E - E_ref at the drawn points (the energy E without a reference)."""
    energy = _energy(problem, run.q, run.v)
    shown = run.energy_shown
    note = " (samples within h of an impact left out)" if not shown.all() else ""
    if reference is not None:
        q_at, v_at = reference.state(_sided_times(run.t))
        error = energy - _energy(problem, q_at, v_at)
        ax.plot(run.t[shown], error[shown], color="C0")
        ax.set(
            ylabel=rf"$E - E_{{\mathrm{{ref}}}}$ [{energy_unit(problem.name)}]",
            title="energy error" + note,
        )
    else:
        ax.plot(run.t[shown], energy[shown], color="C0")
        ax.set(ylabel=f"$E$ [{energy_unit(problem.name)}]", title="energy" + note)
    ax.set_xlabel("$t$ [s]")
