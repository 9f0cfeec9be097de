"""Every figure a study writes is one a paper takes as it is (``style.check_figure``, run by
``style.save``): units on the axes, every labelled variant in a legend.

The study reports run on small result tables made by hand (no simulation); ``style.save`` is
replaced by the check alone, so that no figure is rendered and the test takes seconds.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from test_cradle_study import artefact
from test_scaling_study import TABLE as SCALING_TABLE

from impactbench.analysis.reference import Reference
from impactbench.bench import plotting, style
from impactbench.bench.report import new_figure, shared_legend
from impactbench.bench.results import ARTEFACT_SUFFIX, write_table
from impactbench.bench.trajectory_figure import trajectory_figure
from impactbench.core.coordinates import UNDECLARED
from impactbench.core.trajectory import ImpactLog, Status, Trajectory
from impactbench.methods import EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall
from impactbench.studies import (
    constraint_violation,
    convergence,
    energy_decay,
    event_driven_limits,
    impacting_bar_mesh,
    newtons_cradle_outcomes,
    pendulum_ensemble,
    performance,
    persistent_contact,
    scaling,
    thesis_comparison,
    work_precision,
)

# --------------------------------------------------------------------------------------------
# The check itself


def _panel(xlabel="$t$ [s]", ylabel="$E$ [J]"):
    figure, (ax,) = style.new_figure(1)
    ax.plot([1.0, 2.0], [3.0, 4.0], label="MoreauJean")
    ax.plot([1.0, 2.0], [4.0, 5.0], label="PaoliSchatzman")
    ax.set(xlabel=xlabel, ylabel=ylabel)
    return figure, ax


@pytest.mark.parametrize(
    ("xlabel", "ylabel", "axis", "label"),
    [
        ("$t$ [s]", "energy", "y", "energy"),
        ("force evaluations", "$E$ [J]", "x", "force evaluations"),
        ("", "$E$ [J]", "x", ""),
        ("$t$ (s)", "$E$ [J]", "x", r"\$t\$ \(s\)"),
    ],
)
def test_an_axis_without_a_unit_in_brackets_is_refused_and_nothing_written(
    tmp_path, xlabel, ylabel, axis, label
):
    figure, ax = _panel(xlabel, ylabel)
    ax.legend()
    with pytest.raises(
        ValueError, match=rf"figure bad\.png: panel 1: the {axis} axis label '{label}'"
    ):
        style.save(figure, tmp_path / "bad.png")
    assert not list(tmp_path.iterdir())


def test_a_labelled_variant_missing_from_the_legend_is_refused(tmp_path):
    figure, ax = _panel()
    ax.set_title("errors")
    first = ax.get_lines()[0]
    ax.legend([first], [first.get_label()])  # PaoliSchatzman drawn, not listed
    with pytest.raises(ValueError, match=r"bad\.png: panel 1 \('errors'\).*\['PaoliSchatzman'\]"):
        style.save(figure, tmp_path / "bad.png")
    figure, _ = _panel()  # no legend at all
    with pytest.raises(ValueError, match="MoreauJean"):
        style.check_figure(figure, "none")


def test_units_legends_shared_legends_and_category_axes_pass():
    figure, ax = _panel(ylabel="$E / E_0$ [-]")
    ax.legend()
    style.check_figure(figure, "own legend")
    figure, axes = new_figure(2)
    for ax, offset in zip(axes, (0.0, 1.0), strict=True):
        ax.plot([1.0, 2.0], [offset, 2.0], label=f"method {offset:g}")
        ax.set(xlabel="$h$ [s]", ylabel="error [m]")
    shared_legend(figure, axes)
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["method 0", "method 1"]
    style.check_figure(figure, "shared legend")
    figure, (ax,) = style.new_figure(1)
    ax.plot([10.0, 20.0], [0.0, 1.0], "o")
    ax.set_yticks([0, 1], ["BouncingBall", "DoublePendulum"])  # categories: no unit
    ax.set_xlabel("cost per step [ns]")
    style.check_figure(figure, "categories")
    ax.set_yticks([0, 1], ["0", "1"])  # numbers are no categories
    with pytest.raises(ValueError, match="the y axis label ''"):
        style.check_figure(figure, "numbers")


def test_units_of_the_coordinates_gaps_and_energy():
    assert style.coordinate_unit("DoublePendulum[tip]") == "rad"
    assert style.coordinate_unit("BouncingBall[e=0.8]") == "m"
    assert style.coordinate_unit("Woodpecker") == "m, rad"
    assert style.coordinate_unit("MyPlugin") == UNDECLARED
    assert (style.gap_unit("DoublePendulum"), style.energy_unit("DoublePendulum")) == ("m", "J")
    assert (style.gap_unit("MyPlugin"), style.energy_unit("MyPlugin")) == (
        "units of g",
        "units of E",
    )


# --------------------------------------------------------------------------------------------
# Every figure of every study on hand-made tables


@pytest.fixture
def saved(monkeypatch):
    """The names of the figures saved; each is checked and none is rendered."""
    names: list[str] = []

    def check_only(figure, path, formats=style.FORMATS):
        style.check_figure(figure, path.name)
        names.append(path.name)
        return []

    monkeypatch.setattr(style, "save", check_only)
    return names


STEPS = (8e-3, 4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4)
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
STEPPERS = ("MoreauJean", "MoreauJean[activation=approaching]", "PaoliSchatzman")
ADAPTIVE = ("EventDriven[compiled=True]", "EventDriven[compiled=False]")
#: Every error column a study reads, given the same value (the sweeps' errors).
ERRORS = (
    "max_position_error",
    "l1_velocity_error",
    "position_error_at_end",
    "impact_time_error",
    "hausdorff_velocity_distance",
    "max_penetration",
    "late_penetration",
    "max_energy_increase",
    "energy_at_end",
)


def results(study, problems, steppers=STEPPERS, adaptive=ADAPTIVE, t_end=1.0, steps=STEPS):
    """A result table by hand: errors C h (time-steppers, C by method) and 10 rtol (event-driven),
    costs growing as the step or the tolerance shrinks."""
    rows = []
    for problem, (k, method) in itertools.product(problems, enumerate(steppers)):
        for h in steps:
            row = {"problem": problem, "method": method, "family": "time-stepping", "h": h}
            rows.append({**row, "tolerance": np.nan, "work": 1.0 / h, "value": (k + 1) * h})
    for problem, method in itertools.product(problems, adaptive):
        for tolerance in TOLERANCES:
            row = {"problem": problem, "method": method, "family": "event-driven", "h": np.nan}
            work = 100 * -np.log10(tolerance)
            rows.append({**row, "tolerance": tolerance, "work": work, "value": 10 * tolerance})
    frame = pd.DataFrame(rows)
    steps_taken = frame.pop("work").round().astype(int)
    wall = 1e-7 * steps_taken
    value = frame.pop("value")
    return frame.assign(
        **dict.fromkeys(ERRORS, value),
        study=study,
        h_nominal=frame["h"],
        t_end=t_end,
        output_every=1,
        repeats=5,
        status="ok",
        error="",
        steps=steps_taken,
        force_evaluations=steps_taken,
        impacts=10,
        impacts_capped=False,
        missed_impacts=0,
        spurious_impacts=0,
        contact_time=0.0,
        wall_time=wall,
        wall_time_median=1.1 * wall,
        wall_time_max=1.2 * wall,
        integration_time=0.9 * wall,
        integration_time_median=wall,
        integration_time_max=1.1 * wall,
        warmup_time=np.nan,
        key=[f"{study}-{i}" for i in range(len(frame))],
        **{"method.compiled": ~frame["method"].str.contains("compiled=False")},
    )


def test_convergence_and_work_precision_figures(saved, tmp_path):
    table = results("convergence", ["BouncingBall", "DoublePendulum"])
    convergence.report(table, tmp_path)
    work_precision.report(table.assign(study="work_precision"), tmp_path)
    assert sorted(saved) == [
        "convergence_BouncingBall.png",
        "convergence_DoublePendulum.png",
        "work_precision_BouncingBall.png",
        "work_precision_DoublePendulum.png",
    ]


def test_performance_and_scaling_figures(saved, tmp_path):
    plain = ("MoreauJean[compiled=True]", "MoreauJean[compiled=False]", "PaoliSchatzman")
    performance.report(results("performance", ["BouncingBall"], plain, ("EventDriven",)), tmp_path)
    scaling.report(SCALING_TABLE, tmp_path)
    assert saved == ["performance.png", "scaling.png"]


def test_constraint_violation_and_event_driven_limits_figures(saved, tmp_path):
    cases = list(constraint_violation.SCALE)
    constraint_violation.report(results("constraint_violation", cases, adaptive=()), tmp_path)
    labels = [event_driven_limits.BALL, event_driven_limits.PENDULUM]
    table = results("event_driven_limits", labels, adaptive=("EventDriven",))
    event_driven_limits.report(table, tmp_path)
    assert saved == [
        "penetration.png",
        "limits_BouncingBall_e_0_8_.png",
        "limits_DoublePendulum.png",
    ]


def test_persistent_contact_figures(saved, tmp_path):
    cases = list(persistent_contact.CASES)
    horizons = results(
        "persistent_contact", cases, adaptive=(), steps=(persistent_contact.STEP,), t_end=30.0
    )
    horizons = pd.concat(
        [horizons.assign(t_end=t_end) for t_end in (30.0, 100.0, 300.0)], ignore_index=True
    )
    steps = results("persistent_contact", cases, adaptive=(), t_end=persistent_contact.STEP_HORIZON)
    table = pd.concat([horizons, steps], ignore_index=True)
    table = table.assign(key=[f"k{i}" for i in range(len(table))])
    persistent_contact.report(table, tmp_path)
    assert saved == ["depth_against_t.png", "depth_against_h.png", "energy_against_t.png"]


def test_impacting_bar_figure(saved, tmp_path):
    steps = (0.05, 0.025, 0.0125)  # h = 0.5 h_e / c, c = L = 1: 10, 20, 40 elements
    table = results(
        "impacting_bar", ["ImpactingBar"], ("MoreauJean", "PaoliSchatzman"), (), 1.0, steps
    )
    n_elements = np.round(0.5 / table["h"]).astype(int)
    impacting_bar_mesh.report(table.assign(**{"problem.n_elements": n_elements}), tmp_path)
    assert saved == ["bar_mesh_refinement.png"]


def test_cradle_figure(saved, tmp_path):
    kwargs = {"n_balls": 3, "n_launched": 1, **newtons_cradle_outcomes.EXACT_GEOMETRY}
    after = [-1 / 3, 2 / 3, 2 / 3]
    balls = pd.concat(
        [
            artefact(MoreauJean, 2e-3, "N=3, k=1", kwargs, after, 4),
            artefact(MoreauJean, 1e-3, "N=3, k=1", kwargs, after, 4),
            artefact(PaoliSchatzman, 1e-3, "N=3, k=1", kwargs, after, 4),
            artefact(EventDriven, None, "N=3, k=1", kwargs, [0.0, 0.0, 1.0], 2),
        ],
        ignore_index=True,
    )
    name = newtons_cradle_outcomes.ARTEFACT
    write_table(balls, tmp_path / f"{name}{ARTEFACT_SUFFIX}", timing=False)
    table = pd.DataFrame({"key": balls["key"].unique(), "status": "ok"})
    newtons_cradle_outcomes.report(table, tmp_path)
    assert saved == ["outcomes.png"]


def test_energy_decay_figure(saved, tmp_path):
    t = np.linspace(1.0, 10.0, 20)
    rows = []
    for method, step in (("MoreauJean", 1e-2), ("MoreauJean", 1e-3), ("EventDriven", np.nan)):
        tolerance = 1e-8 if np.isnan(step) else np.nan
        excess = 1.0 / t**2 + (0.0 if np.isnan(step) else step)
        curve = {"curve": "run", "method": method, "h": step, "tolerance": tolerance}
        rows.append(pd.DataFrame({**curve, "t": t, "excess": excess}))
    for kind in ("exact", "law"):
        rows.append(pd.DataFrame({"curve": kind, "t": t, "excess": 1.0 / t**2}))
    curves = pd.concat(rows, ignore_index=True).assign(problem=energy_decay.FREE)
    energy_decay._figure(energy_decay.FREE, curves, tmp_path)
    assert saved == ["energy_TightJoint_k_0.png"]


def test_thesis_comparison_figure(saved, tmp_path):
    problem = "DoublePendulum[tip]"
    table = results("thesis_comparison", [problem], t_end=5.5)
    t = np.linspace(0.0, 5.5, 12)
    curves = pd.DataFrame({"problem": problem, "t": t, "x1": np.sin(t), "x2": 1.5 * np.sin(t)})
    reference = {"problem": problem, "x_wall": 1.2, "contacts": "both", "impacts": 2}
    references = pd.DataFrame([{**reference, "impact_times": json.dumps([1.0, 2.5])}])
    thesis_comparison._figure(table, curves, references, tmp_path / thesis_comparison.FIGURE_FILE)
    assert saved == [thesis_comparison.FIGURE_FILE]


def test_pendulum_ensemble_figures(saved, tmp_path):
    statistic = "E(1) [J]"
    rows = []
    for method, step, tolerance in (
        ("MoreauJean", 1e-3, np.nan),
        ("MoreauJean", 5e-4, np.nan),
        ("MoreauJean[activation=approaching]", 1e-3, np.nan),
        ("EventDriven", np.nan, 1e-6),
        ("EventDriven", np.nan, 1e-8),
    ):
        distance = 0.1 if np.isnan(step) else step
        run = {"method": method, "h": step, "tolerance": tolerance, "statistic": statistic}
        rows.append({**run, "W1": distance, "W1 low": 0.5 * distance, "W1 high": 2 * distance})
    null = pd.DataFrame([{"statistic": statistic, "W1": 0.01, "W1 low": 0.005, "W1 high": 0.02}])
    pendulum_ensemble._figure(pd.DataFrame(rows), null, statistic, tmp_path)
    members = pd.DataFrame(rows)[["method", "h", "tolerance"]]
    members = pd.concat([members] * 3, ignore_index=True).assign(ensemble=pendulum_ensemble.MAIN)
    settling = members.assign(
        **{pendulum_ensemble.SETTLING: np.arange(len(members), dtype=float)},
        settled=np.arange(len(members)) % 2,  # the members not settled by T are censored
    )
    pendulum_ensemble._settling_figure(settling, tmp_path)
    assert saved == ["ensemble_distance.png", "settling_time_cdf.png"]


# --------------------------------------------------------------------------------------------
# The figures of runs (``simulate --plot``, ``impactbench.plot``, the thesis report)


def _exact_run(ball: BouncingBall, method: str, t_end: float, h: float) -> Trajectory:
    """A run sampled from the ball's closed form, with its impacts (no simulation)."""
    t = np.arange(0.0, t_end, h)
    q, v = ball.exact_solution(t)
    times = ball.impact_times(t_end)
    speed = np.full(len(times), -1.0)
    log = ImpactLog(times, np.zeros(len(times), np.int64), speed, -0.8 * speed, len(times))
    return Trajectory(t, q, v, log, Status.OK, "exact", {}, method, ball.name, h)


def test_trajectory_and_overlay_figures(saved, tmp_path):
    ball = BouncingBall(restitution=0.8)
    exact = Reference.exact(ball, 2.0)
    first = _exact_run(ball, "MoreauJean", 2.0, 1e-2)
    style.save(trajectory_figure(ball, first, exact), tmp_path / "one.png")
    style.save(trajectory_figure(ball, first), tmp_path / "no_reference.png")
    second = _exact_run(ball, "MoreauJean[theta=0.5,activation=approaching]", 2.0, 2e-2)
    figure = plotting.overlay_figure(ball, [first, second], exact)
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["exact solution", "MoreauJean", "MoreauJean[activation=approaching]"]
    style.save(figure, tmp_path / "overlay.png")
    assert saved == ["one.png", "no_reference.png", "overlay.png"]


def test_a_legend_entry_names_the_variant_drawn():
    assert style.variant_label("MoreauJean[theta=0.5,activation=position]") == "MoreauJean"
    name = "EventDriven[rtol=1e-08,compiled=False]"
    assert style.variant_label(name) == "EventDriven[compiled=False]"
    name = "CatchingUp[activation=approaching,tol=1e-12]"
    assert style.variant_label(name) == "CatchingUp[activation=approaching]"


def test_units_of_the_metrics():
    assert style.metric_unit("max_position_error", "DoublePendulum") == "rad"
    assert style.metric_unit("velocity_error_at_end", "BouncingBall") == "m/s"
    assert style.metric_unit("max_penetration", "DoublePendulum") == "m"
    assert style.metric_unit("max_energy_increase", "BouncingBall") == "J"
    assert style.metric_unit("impact_time_error", "MyPlugin") == "s"
    assert style.metric_unit("hausdorff_velocity_distance", "BouncingBall") == "-"
    assert style.metric_unit("missed_impacts", "BouncingBall") == "-"


def test_a_flat_work_precision_sweep_gets_a_decade():
    from impactbench.bench.report import plot_methods

    frame = pd.DataFrame(
        {"method": "MoreauJean", "h": [1e-3, 1e-2, 1e-1], "error": [2.0e-3, 2.1e-3, 2.2e-3]}
    )
    figure, (ax,) = new_figure(1)
    plot_methods(ax, frame, "h", "error")
    low, high = ax.get_ylim()
    assert high / low >= 9.99 and low <= 2.0e-3 and high >= 2.2e-3


def test_a_narrow_log_cost_axis_shows_two_powers_of_ten():
    from impactbench.bench.report import whole_decades

    figure, (ax,) = new_figure(1)
    ax.loglog([1.5e-5, 4e-4], [1.0, 2.0])
    whole_decades(ax)
    assert ax.get_xlim() == pytest.approx((1e-5, 1e-3))
    figure, (ax,) = new_figure(1)
    ax.loglog([1e-4], [1.0], "o")  # one point on a power of ten: the decade above it too
    whole_decades(ax)
    assert ax.get_xlim() == pytest.approx((1e-4, 1e-3))
