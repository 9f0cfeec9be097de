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

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..analysis.impact_events import impact_events
from ..analysis.reference import Reference
from ..core.energy import kinetic_energy, potential_energy
from ..core.method import Method
from ..core.problem import Problem
from ..core.trajectory import ImpactLog, Status, Trajectory
from .style import coordinate_unit, energy_unit, gap_unit, new_figure, variant_label

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
    gaps = problem.gaps(trajectory.q)
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


def _gaps(problem: Problem, q: np.ndarray) -> np.ndarray:
    return np.array([np.asarray(problem.gap(qi), dtype=float) for qi in q])


def _energy(problem: Problem, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return kinetic_energy(problem, q, v) + potential_energy(problem, q)


def energy_samples(trajectory: Trajectory) -> np.ndarray:
    """Which samples of ``trajectory`` carry an energy to draw: all, except for a method whose
    output velocity is reconstructed (Paoli-Schatzman's central difference straddles each
    impact: the samples within a step of an impact are no energy and are left out)."""
    t, impacts = trajectory.t, trajectory.impacts
    shown = np.ones(t.shape, dtype=bool)
    reconstructed = trajectory.stats.get("velocity_output", "state") != "state"
    if reconstructed and trajectory.h is not None and len(impacts.t):
        index = np.clip(np.searchsorted(impacts.t, t), 1, len(impacts.t) - 1)
        nearest = np.minimum(np.abs(t - impacts.t[index - 1]), np.abs(impacts.t[index] - t))
        shown = nearest > trajectory.h * (1 + 1e-9)
    return shown


def trajectory_figure(
    problem: Problem, trajectory: Trajectory, reference: Reference | None = None
) -> Figure:
    """Six views of ``trajectory`` (see the module docstring), with ``reference`` if given.

    Parameters
    ----------
    problem : Problem
        The problem the trajectory solves.
    trajectory : Trajectory
        The run: samples t (N,), q (N, n), v (N, n) and its impact log.
    reference : Reference, optional
        The exact solution (:meth:`Reference.exact`) or a reference run; drawn dashed. The
        energy panel then shows E - E_ref at the run's samples.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t, q, v = trajectory.t, trajectory.q, trajectory.v
    figure, axes = new_figure(6, aspect=0.75)
    ax_q, ax_v, ax_phase, ax_map, ax_gap, ax_energy = axes
    kind = _short(reference.kind) if reference is not None else None
    method = variant_label(trajectory.method)
    if reference is not None:
        t_ref = np.linspace(t[0], t[-1], REFERENCE_POINTS)
        q_ref, v_ref = reference.state(t_ref)
    impacts = trajectory.impacts
    unit = coordinate_unit(problem.name)
    named = q.shape[1] <= LEGEND_ENTRIES
    for i in range(q.shape[1]):
        color = f"C{i}"
        ax_q.plot(t, q[:, i], color=color, label=f"$q_{i + 1}$" if named else None)
        ax_v.plot(t, v[:, i], color=color, label=f"$v_{i + 1}$" if named else None)
        if reference is not None:
            ax_q.plot(t_ref, q_ref[:, i], color="black", linestyle="--", linewidth=0.7)
            ax_v.plot(t_ref, v_ref[:, i], color="black", linestyle="--", linewidth=0.7)
    if len(impacts.t):  # ticks along the bottom edge
        for ax in (ax_q, ax_v):
            ax.plot(
                impacts.t,
                np.zeros(len(impacts.t)),
                "|",
                color="C3",
                markersize=6,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
            )
    ax_q.set(
        xlabel="$t$ [s]",
        ylabel=f"$q$ [{unit}]",
        title="positions"
        + (" (ref. dashed)" if kind else "")
        + (" (ticks: impacts)" if len(impacts.t) else ""),
    )
    ax_v.set(xlabel="$t$ [s]", ylabel=f"$v$ [{unit}/s]", title="velocities")
    if named:
        ax_q.legend(loc="best")
        ax_v.legend(loc="best")

    ax_phase.plot(q[:, 0], v[:, 0], color="C0", linewidth=0.8, label=method)
    if reference is not None:
        ax_phase.plot(q_ref[:, 0], v_ref[:, 0], "k--", linewidth=0.7, label=str(kind))
    ax_phase.set(xlabel=f"$q_1$ [{unit}]", ylabel=f"$v_1$ [{unit}/s]", title="phase portrait")
    ax_phase.legend(loc="best")

    if len(impacts.t):  # the first entry of each impact event (PaoliSchatzman logs two)
        first = impact_events(trajectory).first_entries
        ax_map.plot(
            impacts.t[first], -impacts.normal_velocity_before[first], "o", color="C3", label="run"
        )
    if reference is not None and reference.impact_times is not None and len(reference.impact_times):
        before = reference.impact_times - 1e-9 * max(1.0, float(t[-1] - t[0]))
        q_before, v_before = reference.state(before)
        speeds = []
        for qi, vi in zip(q_before, v_before, strict=True):
            gaps = np.asarray(problem.gap(qi), dtype=float)
            rows = np.atleast_2d(problem.gap_gradient(qi))
            speeds.append(-float((rows @ vi)[int(np.argmin(gaps))]))
        ax_map.plot(reference.impact_times, speeds, "x", color="black", label=str(kind))
    ax_map.set(
        xlabel="impact time $t_k$ [s]",
        ylabel=rf"normal velocity $-u^-$ [{gap_unit(problem.name)}/s]",
        title="impact map",
    )
    ax_map.set_xlim(t[0], t[-1])
    if ax_map.has_data():
        ax_map.legend(loc="best")

    gaps = _gaps(problem, q)
    for i in range(gaps.shape[1]):
        ax_gap.plot(
            t, gaps[:, i], label=f"$g_{i + 1}$" if 1 < gaps.shape[1] <= LEGEND_ENTRIES else None
        )
    ax_gap.axhline(0.0, color="black", linewidth=0.6)
    scale = float(np.nanmax(np.abs(gaps))) if gaps.size else 1.0
    ax_gap.set_yscale("symlog", linthresh=max(1e-12, 1e-6 * scale))
    ax_gap.set(
        xlabel="$t$ [s]",
        ylabel=f"$g(q)$ [{gap_unit(problem.name)}]",
        title="gap (penetration where < 0)",
    )
    if 1 < gaps.shape[1] <= LEGEND_ENTRIES:
        ax_gap.legend(loc="best")

    energy = _energy(problem, q, v)
    shown = energy_samples(trajectory)
    note = " (samples within h of an impact left out)" if not shown.all() else ""
    if reference is not None:
        q_at, v_at = reference.state(t)
        error = energy - _energy(problem, q_at, v_at)
        ax_energy.plot(t[shown], error[shown], color="C0")
        ax_energy.set(
            ylabel=rf"$E - E_{{\mathrm{{ref}}}}$ [{energy_unit(problem.name)}]",
            title="energy error" + note,
        )
    else:
        ax_energy.plot(t[shown], energy[shown], color="C0")
        ax_energy.set(ylabel=f"$E$ [{energy_unit(problem.name)}]", title="energy" + note)
    ax_energy.set_xlabel("$t$ [s]")
    figure.suptitle(f"{problem.name}: {method}" + (f" against {kind}" if kind else ""))
    return figure


def _short(name: str) -> str:
    """A method's class name without its parameters (legends stay readable)."""
    return name.partition("[")[0]
