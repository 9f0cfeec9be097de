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
colour and marker per method (:func:`impactbench.bench.style.method_style`): the position and
velocity of each coordinate against time (every coordinate, up to :data:`OVERLAY_COORDINATES`),
the first one's phase portrait, the impact map, the smallest gap (symmetric-log axis:
penetration visible at any depth) and the energy (the solution's dashed; a reconstructed
velocity's samples within a step of an impact left out). A frictional problem adds the slip
velocity of each closed contact and the contact states (open, stick, slip) over time.

Every run is drawn through its continuous extension
(:func:`impactbench.bench.figure_data.drawn`): its dense output where it has one (an event-driven
run with ``dense_output=True``; ``impactbench simulate --plot`` attaches it), else the polyline
of its samples. Coordinates are named and labelled with the units their problem declares
(:mod:`impactbench.core.coordinates`); each legend entry appears once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..analysis.impact_events import impact_events
from ..analysis.reference import Reference, reference
from ..core.energy import kinetic_energy, potential_energy
from ..core.problem import Problem
from ..core.trajectory import Trajectory
from . import style
from .figure_data import Drawn, drawn, reference_label, run_labels
from .trajectory_figure import (
    REFERENCE_POINTS,
    draw_contacts,
    draw_impact_map,
    mark_impacts,
    trajectory_figure,
)


def solution_of(problem: Problem, t_end: float, *, compute: bool = True) -> Reference:
    """The exact solution of ``problem`` on [t0, t_end] when it has one, else the cached
    reference run (DOP853 event-driven, rtol 1e-12, :func:`impactbench.reference`: computed
    once, then read from the reference cache; with ``compute`` False, read from the cache
    only: :class:`impactbench.analysis.reference.MissingReferenceError` when absent)."""
    if problem.has_exact_solution:
        return Reference.exact(problem, t_end)
    from ..methods import reference_method

    return reference(problem, float(t_end), reference_method(), compute=compute)


#: Runs with at most this many drawn points are drawn with their points marked.
SPARSE_SAMPLES = 200
#: Several runs overlaid: every coordinate gets its position and velocity panels up to this
#: many coordinates (more: the one asked for).
OVERLAY_COORDINATES = 3


def overlay_figure(
    problem: Problem,
    trajectories: Sequence[Trajectory],
    solution: Reference | None = None,
    coordinate: int | None = None,
) -> Figure:
    """Several runs of ``problem`` overlaid (see the module docstring); ``solution`` dashed.

    The position and velocity of every coordinate (``coordinate`` None, up to
    :data:`OVERLAY_COORDINATES` of them; else the first, or the one given) each get a panel;
    a frictional problem adds the slip velocities and contact states. Each run is drawn
    through its continuous extension (:func:`impactbench.bench.figure_data.drawn`).
    """
    n = trajectories[0].q.shape[1]
    if coordinate is None:
        shown = list(range(n)) if n <= OVERLAY_COORDINATES else [0]
    else:
        shown = [coordinate]
    panels = 2 * len(shown) + 4 + (2 if problem.has_friction else 0)
    figure, axes = style.new_figure(panels, aspect=0.75)
    state_axes = [(axes[2 * k], axes[2 * k + 1]) for k in range(len(shown))]
    ax_phase, ax_map, ax_gap, ax_energy = axes[2 * len(shown) : 2 * len(shown) + 4]
    t0 = min(float(run.t[0]) for run in trajectories)
    t_end = max(float(run.t[-1]) for run in trajectories)
    runs = [drawn(run) for run in trajectories]
    looks = [_line(run, points) for run, points in zip(trajectories, runs, strict=True)]
    labels = run_labels([run.method for run in trajectories])
    if solution is not None:
        _overlay_solution(problem, solution, (t0, t_end), shown, state_axes, ax_phase, ax_energy)
    for k, i in enumerate(shown):
        _overlay_states(state_axes[k], runs, looks, labels if k == 0 else None, i)
    for run, points, look in zip(trajectories, runs, looks, strict=True):
        ax_phase.plot(points.q[:, shown[0]], points.v[:, shown[0]], **look)
        _overlay_impacts(ax_map, state_axes[0], run, look)
        smallest = np.min(np.asarray(problem.gaps(points.q, points.t), dtype=float), axis=1)
        ax_gap.plot(points.t, smallest, **look)
        energy = kinetic_energy(problem, points.q, points.v) + potential_energy(problem, points.q)
        ax_energy.plot(points.t[points.energy_shown], energy[points.energy_shown], **look)
    if problem.has_friction:
        draw_contacts(axes[-2], axes[-1], problem, list(zip(runs, looks, strict=True)))
    labels_of = style.coordinate_labels(problem, n)
    _label_overlay(problem, labels_of, shown, state_axes, (ax_phase, ax_map, ax_gap, ax_energy))
    draw_impact_map(ax_map, problem, (t0, t_end))
    handles, names = state_axes[0][0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", ncol=min(3, len(names)))
    against = f" against the {reference_label(solution)}" if solution is not None else ""
    figure.suptitle(f"{problem.name}: {len(trajectories)} runs{against}")
    return figure


def _line(run: Trajectory, points: Drawn) -> dict[str, Any]:
    """The line style of ``run`` (:func:`impactbench.bench.style.method_style`); a run of few
    drawn points (an adaptive run without dense output) with its points marked."""
    look = style.method_style(run.method)
    line = {"color": look["color"], "linestyle": look["linestyle"], "linewidth": 0.9}
    if len(points.t) <= SPARSE_SAMPLES:
        line.update(marker=look["marker"], markersize=2.5)
    return line


def _overlay_states(
    axes: tuple[Axes, Axes],
    runs: Sequence[Drawn],
    looks: Sequence[dict[str, Any]],
    labels: Sequence[str] | None,
    i: int,
) -> None:
    """Coordinate ``i`` and its velocity of every run (``labels``: their legend entries)."""
    ax_q, ax_v = axes
    for k, (points, look) in enumerate(zip(runs, looks, strict=True)):
        ax_q.plot(points.t, points.q[:, i], label=labels[k] if labels else None, **look)
        ax_v.plot(points.t, points.v[:, i], **look)


def _overlay_impacts(
    ax_map: Axes, first_axes: tuple[Axes, Axes], run: Trajectory, look: dict[str, Any]
) -> None:
    """The run's impact events on the impact map, and as ticks under its first panels."""
    first = impact_events(run).first_entries if len(run.impacts.t) else []
    if not len(first):
        return
    marker = style.method_style(run.method)["marker"]
    ax_map.plot(
        run.impacts.t[first],
        -run.impacts.normal_velocity_before[first],
        marker,
        color=look["color"],
        markerfacecolor="none",
    )
    for ax in first_axes:
        mark_impacts(ax, run.impacts.t[first], color=look["color"])


def _overlay_solution(
    problem: Problem,
    solution: Reference,
    t_range: tuple[float, float],
    shown: Sequence[int],
    state_axes: Sequence[tuple[Axes, Axes]],
    ax_phase: Axes,
    ax_energy: Axes,
) -> None:
    """The solution dashed on the state panels, the phase portrait and the energy."""
    t_ref = np.linspace(*t_range, REFERENCE_POINTS)
    q_ref, v_ref = solution.state(t_ref)
    label = reference_label(solution)
    for k, i in enumerate(shown):
        ax_q, ax_v = state_axes[k]
        ax_q.plot(t_ref, q_ref[:, i], "k--", linewidth=0.7, label=label, zorder=3)
        ax_v.plot(t_ref, v_ref[:, i], "k--", linewidth=0.7, zorder=3)
    ax_phase.plot(q_ref[:, shown[0]], v_ref[:, shown[0]], "k--", linewidth=0.7)
    energy = kinetic_energy(problem, q_ref, v_ref) + potential_energy(problem, q_ref)
    ax_energy.plot(t_ref, energy, "k--", linewidth=0.7)


def _label_overlay(
    problem: Problem,
    labels: Sequence[tuple[str, str]],
    shown: Sequence[int],
    state_axes: Sequence[tuple[Axes, Axes]],
    others: tuple[Axes, Axes, Axes, Axes],
) -> None:
    """Axis labels and titles: each coordinate by its declared name and unit (``labels``: of
    position and velocity, per coordinate)."""
    ax_phase, _, ax_gap, ax_energy = others
    for k, i in enumerate(shown):
        q_label, v_label = labels[i]
        ax_q, ax_v = state_axes[k]
        ax_q.set(xlabel="$t$ [s]", ylabel=q_label, title=f"position {q_label.split(' [')[0]}")
        ax_v.set(xlabel="$t$ [s]", ylabel=v_label, title=f"velocity {v_label.split(' [')[0]}")
    ax_phase.set(xlabel=labels[shown[0]][0], ylabel=labels[shown[0]][1], title="phase portrait")
    ax_gap.axhline(0.0, color="black", linewidth=0.6)
    scale = max((float(np.nanmax(np.abs(line.get_ydata()))) for line in ax_gap.lines), default=1)
    ax_gap.set_yscale("symlog", linthresh=max(1e-12, 1e-6 * scale))
    gap_unit = style.gap_unit(problem.name)
    ax_gap.set(
        xlabel="$t$ [s]",
        ylabel=rf"$\min_i g_i(q)$ [{gap_unit}]",
        title="smallest gap (< 0: penetration)",
    )
    ax_energy.set(
        xlabel="$t$ [s]", ylabel=f"$E$ [{style.energy_unit(problem.name)}]", title="energy"
    )


def plot(
    problem: Problem,
    trajectories: Trajectory | Sequence[Trajectory],
    *,
    reference: Reference | str | None = "auto",
    output: Path | str | None = None,
    coordinate: int | None = None,
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
    coordinate : int, optional
        When several runs are overlaid: the coordinate whose position and velocity are drawn;
        None (default) draws every coordinate, each in its panels, up to
        :data:`OVERLAY_COORDINATES` of them (more: the first).

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
    valid = coordinate is None or (
        isinstance(coordinate, int) and not isinstance(coordinate, bool) and 0 <= coordinate < n_dof
    )
    if not valid:
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
