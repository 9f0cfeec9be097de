"""Figures of runs from Python: :func:`plot` draws one or several trajectories of a problem
against its exact solution or reference, in the style of the study reports.

::

    import impactbench as ib
    from impactbench.methods import MoreauJean, PaoliSchatzman
    from impactbench.problems import BouncingBall

    ball = BouncingBall(restitution=0.8)
    runs = [ib.simulate(ball, m, 3.0, h=1e-3) for m in (MoreauJean(), PaoliSchatzman())]
    ib.plot(ball, runs, output="ball.pdf")      # the exact solution dashed

One trajectory gives the six panels of :func:`impactbench.bench.trajectory_figure.trajectory_figure`
(positions, velocities, phase portrait, impact map, gap, energy error); several are overlaid, one
colour and marker per method (:func:`impactbench.bench.style.method_style`), on six panels: one
coordinate's position and velocity against time, its phase portrait, the impact map, the
smallest gap (symmetric-log axis: penetration visible at any depth) and the energy (the
solution's dashed; a reconstructed velocity's samples within a step of an impact left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from ..analysis.impact_events import impact_events
from ..analysis.reference import Reference, reference
from ..core.energy import energy, kinetic_energy, potential_energy
from ..core.problem import Problem
from ..core.trajectory import Trajectory
from . import style
from .trajectory_figure import REFERENCE_POINTS, energy_samples, trajectory_figure


def solution_of(problem: Problem, t_end: float, *, compute: bool = True) -> Reference:
    """The exact solution of ``problem`` on [t0, t_end] when it has one, else the cached
    reference run (DOP853 event-driven, rtol 1e-12, :func:`impactbench.reference`: computed
    once, then read from the reference cache; with ``compute`` False, read from the cache
    only: :class:`impactbench.analysis.reference.MissingReferenceError` when absent)."""
    if problem.has_exact_solution:
        return Reference.exact(problem, t_end)
    from ..methods import reference_method

    return reference(problem, float(t_end), reference_method(), compute=compute)


#: Runs with at most this many samples are drawn with their points marked.
SPARSE_SAMPLES = 200


def _short(name: str) -> str:
    return name.partition("[")[0]


def overlay_figure(
    problem: Problem,
    trajectories: Sequence[Trajectory],
    solution: Reference | None = None,
    coordinate: int = 0,
) -> Figure:
    """Several runs of ``problem`` overlaid (see the module docstring); ``solution`` dashed."""
    figure, axes = style.new_figure(6, aspect=0.75)
    ax_q, ax_v, ax_phase, ax_map, ax_gap, ax_energy = axes
    i = coordinate
    t_end = max(float(run.t[-1]) for run in trajectories)
    t0 = min(float(run.t[0]) for run in trajectories)
    if solution is not None:
        t_ref = np.linspace(t0, t_end, REFERENCE_POINTS)
        q_ref, v_ref = solution.state(t_ref)
        kind = _short(solution.kind)
        for ax, values in ((ax_q, q_ref[:, i]), (ax_v, v_ref[:, i])):
            ax.plot(t_ref, values, "k--", linewidth=0.7, label=kind, zorder=3)
        ax_phase.plot(q_ref[:, i], v_ref[:, i], "k--", linewidth=0.7)
    smallest = []
    for run in trajectories:
        look = style.method_style(run.method)
        line = {"color": look["color"], "linestyle": look["linestyle"], "linewidth": 0.9}
        if len(run.t) <= SPARSE_SAMPLES:  # an adaptive run's few samples are shown as points
            line.update(marker=look["marker"], markersize=2.5)
        ax_q.plot(run.t, run.q[:, i], label=style.variant_label(run.method), **line)
        ax_v.plot(run.t, run.v[:, i], **line)
        ax_phase.plot(run.q[:, i], run.v[:, i], **line)
        if len(run.impacts.t):  # the first entry of each impact event
            first = impact_events(run).first_entries
            ax_map.plot(
                run.impacts.t[first],
                -run.impacts.normal_velocity_before[first],
                look["marker"],
                color=look["color"],
                markerfacecolor="none",
            )
        smallest.append(np.array([np.atleast_1d(problem.gap(q)) for q in run.q]).min(axis=1))
        ax_gap.plot(run.t, smallest[-1], **line)
        shown = energy_samples(run)
        ax_energy.plot(run.t[shown], energy(problem, run)[shown], **line)
    if solution is not None:
        ax_energy.plot(
            t_ref,
            kinetic_energy(problem, q_ref, v_ref) + potential_energy(problem, q_ref),
            "k--",
            linewidth=0.7,
        )
    scale = max(float(np.nanmax(np.abs(gaps))) for gaps in smallest) if smallest else 1.0
    q_label = f"$q_{i + 1}$ [{style.coordinate_unit(problem.name)}]"
    v_label = f"$v_{i + 1}$ [{style.coordinate_unit(problem.name)}/s]"
    gap_unit = style.gap_unit(problem.name)
    ax_q.set(xlabel="$t$ [s]", ylabel=q_label, title="position")
    ax_v.set(xlabel="$t$ [s]", ylabel=v_label, title="velocity")
    ax_phase.set(xlabel=q_label, ylabel=v_label, title="phase portrait")
    ax_map.set(
        xlabel="impact time $t_k$ [s]",
        ylabel=f"normal velocity $-u^-$ [{gap_unit}/s]",
        title="impact map",
    )
    ax_map.set_xlim(t0, t_end)
    ax_gap.axhline(0.0, color="black", linewidth=0.6)
    ax_gap.set_yscale("symlog", linthresh=max(1e-12, 1e-6 * scale))
    ax_gap.set(
        xlabel="$t$ [s]",
        ylabel=rf"$\min_i g_i(q)$ [{gap_unit}]",
        title="smallest gap (< 0: penetration)",
    )
    ax_energy.set(
        xlabel="$t$ [s]", ylabel=f"$E$ [{style.energy_unit(problem.name)}]", title="energy"
    )
    handles, labels = ax_q.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=min(3, len(labels)))
    against = f" against {_short(solution.kind)}" if solution is not None else ""
    figure.suptitle(f"{problem.name}: {len(trajectories)} methods{against}")
    return figure


def plot(
    problem: Problem,
    trajectories: Trajectory | Sequence[Trajectory],
    *,
    reference: Reference | str | None = "auto",
    output: Path | str | None = None,
    coordinate: int = 0,
) -> Figure:
    """Draw runs of ``problem`` against its exact solution or reference; optionally save it.

    Parameters
    ----------
    problem : Problem
        The problem the runs solve.
    trajectories : Trajectory or sequence of Trajectory
        One run (six panels of that run) or several (overlaid, one colour per method).
    reference : Reference, "auto" or None
        The solution drawn dashed: "auto" (default) the exact solution, else the cached
        reference run (:func:`solution_of`); a :class:`impactbench.Reference`; None for none.
    output : path, optional
        Write the figure there; the suffix (.png or .pdf) picks the format
        (:func:`impactbench.bench.style.save`: journal-sized, byte-reproducible).
    coordinate : int
        The coordinate whose position and velocity are drawn when several runs are overlaid.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For no trajectory, a trajectory of another problem, an unknown ``reference`` string,
        an ``output`` suffix other than .png or .pdf, or a coordinate out of range.
    """
    runs = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    if not runs or not all(isinstance(run, Trajectory) for run in runs):
        raise ValueError(f"trajectories must be one or more Trajectory, got {trajectories!r:.100}")
    others = sorted({run.problem for run in runs} - {problem.name})
    if others:
        raise ValueError(f"trajectories must be runs of {problem.name!r}, got runs of {others}")
    suffix = None
    if output is not None:
        suffix = Path(output).suffix.lower().lstrip(".")
        if suffix not in style.FORMATS:
            raise ValueError(f"output must end in .png or .pdf, got {str(output)!r}")
    n_dof = runs[0].q.shape[1]
    if isinstance(coordinate, bool) or not isinstance(coordinate, int) or coordinate >= n_dof:
        coordinate = -1
    if coordinate < 0:
        raise ValueError(f"coordinate must be an integer in 0..{n_dof - 1}, got {coordinate!r}")
    if isinstance(reference, str):
        if reference != "auto":
            raise ValueError(f"reference must be 'auto', a Reference or None, got {reference!r}")
        reference = solution_of(problem, max(float(run.t[-1]) for run in runs))
    with mpl.rc_context(style.RC):
        if len(runs) == 1:
            figure = trajectory_figure(problem, runs[0], reference)
        else:
            figure = overlay_figure(problem, runs, reference, coordinate)
        if output is not None:
            style.save(figure, output, formats=(suffix,))
    return figure
