"""What the trajectory figures draw (impactbench/bench/figure_data.py, trajectory_figure.py,
plotting.py) and how coordinates and parameters are named (impactbench/core/coordinates.py):
the data of the drawn lines, their axis labels and legend entries, not pixels."""

from __future__ import annotations

import numpy as np
import pytest

import impactbench as ib
from impactbench.analysis.reference import Reference
from impactbench.bench import style
from impactbench.bench.cli import main
from impactbench.bench.figure_data import (
    OPEN,
    SLIP,
    STICK,
    contact_states,
    drawn,
    reference_label,
    run_labels,
)
from impactbench.bench.trajectory_figure import trajectory_figure
from impactbench.core import names
from impactbench.core.coordinates import UNDECLARED, coordinates
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import PROBLEMS, BouncingBall, RockingBlock, SlidingBlock


def _labels(ax) -> list[str]:
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


# --------------------------------------------------------------------------------------------
# Coordinates and parameters: declared by every built-in problem, honest for the others


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_built_in_problem_names_its_coordinates_and_parameter_units(name):
    problem = PROBLEMS[name]()
    pairs = coordinates(problem, problem.n_dof)
    assert len(pairs) == problem.n_dof
    assert all(unit in ("m", "rad") for _, unit in pairs)
    assert len({name for name, _ in pairs}) == problem.n_dof  # distinct names
    accepted = names.parameters(type(problem))
    assert accepted is not None  # no "any keyword"
    assert {p.name for p in accepted} == set(type(problem).parameter_units)


def test_a_problem_that_declares_nothing_gets_no_invented_unit():
    class Plain:
        pass

    assert coordinates(Plain(), 2) == [("q_1", UNDECLARED), ("q_2", UNDECLARED)]
    assert style.coordinate_unit("MyPlugin") == UNDECLARED
    assert style.coordinate_labels(Plain(), 1) == [
        (f"$q_{{1}}$ [{UNDECLARED}]", f"$\\dot{{q}}_{{1}}$ [{UNDECLARED}]")
    ]


def test_a_declaration_of_the_wrong_length_is_refused():
    class Wrong:
        coordinates = (("x", "m"), ("y", "m"))

    with pytest.raises(ValueError, match="each of the 3 coordinates"):
        coordinates(Wrong(), 3)


def test_mixed_units_are_named_per_coordinate():
    labels = style.coordinate_labels(RockingBlock(), 3)
    assert labels == [
        ("$x$ [m]", "$\\dot{x}$ [m/s]"),
        ("$y$ [m]", "$\\dot{y}$ [m/s]"),
        ("$\\phi$ [rad]", "$\\dot{\\phi}$ [rad/s]"),
    ]
    assert style.coordinate_unit("Woodpecker") == "m, rad"
    assert style.metric_unit("velocity_error_at_end", "RockingBlock") == "m/s, rad/s"


def test_list_shows_every_parameter_of_the_woodpecker_with_its_unit(capsys):
    assert main(["list", "Woodpecker", "RockingBlock"]) == 0
    out = capsys.readouterr().out
    assert "any keyword" not in out
    assert "r_O=0.0025 [m]" in out and "J_S=7e-07 [kg m^2]" in out and "mu=0.3 [-]" in out
    assert "omega0=0.0 [rad/s]" in out and "half_width=0.2 [m]" in out
    with pytest.raises(ValueError, match="no parameter 'r_N' .did you mean 'r_O'"):
        names.check_parameters(PROBLEMS["Woodpecker"], {"r_N": 1.0}, "Woodpecker")


# --------------------------------------------------------------------------------------------
# Runs drawn through their continuous extension


@pytest.fixture(scope="module")
def ball_runs():
    ball = BouncingBall(restitution=0.8)
    dense = ib.simulate(ball, EventDriven(compiled=False, dense_output=True), 2.0)
    plain = ib.simulate(ball, EventDriven(compiled=False), 2.0)
    return ball, dense, plain


def test_an_event_driven_run_is_drawn_through_its_dense_output(ball_runs):
    """The drawn positions are dense between the solver's steps and lie on the exact parabolas
    (the dense output is the solver's interpolant: exact for a quadratic to round-off)."""
    ball, dense, _ = ball_runs
    figure = trajectory_figure(ball, dense, Reference.exact(ball, 2.0))
    line = figure.axes[0].get_lines()[0]
    t, q = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert t.size > 20 * dense.t.size
    assert np.max(np.diff(t)) < 2.0 / 1000  # no straight chord across a solver step
    q_exact, _ = ball.exact_solution(t)
    assert np.max(np.abs(q - q_exact[:, 0])) < 1e-9
    velocity = figure.axes[1].get_lines()[0]
    v_t, v = np.asarray(velocity.get_xdata()), np.asarray(velocity.get_ydata())
    for impact in dense.impacts.t:  # the jump drawn vertical: left limit, then value after
        k = np.flatnonzero(v_t == impact)
        assert k.size == 2 and v[k[0]] < 0 < v[k[1]]


def test_drawn_run_without_dense_output_is_its_samples(ball_runs):
    _, _, plain = ball_runs
    points = drawn(plain)
    np.testing.assert_array_equal(points.t, plain.t)
    np.testing.assert_array_equal(points.q, plain.q)


def test_simulate_plot_draws_the_event_driven_run_through_its_dense_output(monkeypatch):
    from impactbench.bench import simulate_command

    drawn_runs = []
    monkeypatch.setattr(
        simulate_command, "plot", lambda problem, runs, **options: drawn_runs.extend(runs)
    )
    argv = ["simulate", "BouncingBall", "EventDriven[compiled=False]", "--t-end", "1.0"]
    assert main([*argv, "--plot", "unused.png", "--no-warmup"]) == 0
    (run,) = drawn_runs
    assert run.dense is not None and run.dense.t_end == 1.0


# --------------------------------------------------------------------------------------------
# Legends, labels, empty panels


def test_legend_entries_are_unique():
    methods = ["MoreauJean[theta=0.5]", "MoreauJean[theta=1.0]", "EventDriven[rtol=1e-10]"]
    assert run_labels(methods) == [*methods[:2], "EventDriven"]
    assert run_labels(["MoreauJean", "MoreauJean"]) == ["MoreauJean #1", "MoreauJean #2"]
    run_reference = Reference("EventDriven[rtol=1e-12]", lambda t: (t, t), None)
    assert reference_label(run_reference) == "reference run (EventDriven)"
    assert reference_label(Reference("exact", lambda t: (t, t), None)) == "exact solution"


def test_an_overlay_names_each_run_once_and_every_coordinate(ball_runs):
    block = RockingBlock()
    runs = [
        ib.simulate(block, MoreauJean(compiled=False), 0.3, h=1e-2),
        ib.simulate(block, MoreauJean(theta=1.0, compiled=False), 0.3, h=1e-2),
        ib.simulate(block, EventDriven(compiled=False, dense_output=True), 0.3),
    ]
    exact_like = Reference("EventDriven[rtol=1e-12]", runs[2].dense, None)
    figure = ib.plot(block, runs, reference=exact_like)
    legend = [text.get_text() for text in figure.legends[0].get_texts()]
    assert len(legend) == len(set(legend)) == 4
    assert "reference run (EventDriven)" in legend
    y_labels = [ax.get_ylabel() for ax in figure.axes]
    for label in ("$x$ [m]", "$y$ [m]", "$\\phi$ [rad]", "$\\dot{\\phi}$ [rad/s]"):
        assert label in y_labels
    assert any("slip velocity" in label for label in y_labels)
    states = figure.axes[-1]
    ticks = [tick.get_text() for tick in states.get_yticklabels()]
    assert ticks == [f"contact {i}: {s}" for i in (1, 2) for s in ("open", "stick", "slip")]
    style.check_figure(figure, "overlay")


def test_a_run_without_impacts_says_so_in_its_impact_map():
    block = SlidingBlock()
    run = ib.simulate(block, MoreauJean(compiled=False), 0.05, h=1e-2)
    figure = trajectory_figure(block, run)
    impact_map = figure.axes[3]
    assert [text.get_text() for text in impact_map.texts] == ["no impacts"]
    assert _labels(figure.axes[0]) == ["$x$ [m]", "$y$ [m]"]
    assert figure.axes[2].get_xlabel() == "$x$ [m]"
    assert len(figure.axes) == 8  # frictional: slip velocity and contact states


# --------------------------------------------------------------------------------------------
# Contact states against the closed form


def test_contact_states_follow_the_sliding_blocks_closed_form():
    """The block launched down a gentle incline with mu > tan(alpha) slides, decelerating, and
    sticks at t* = u0 / (g (mu cos alpha - sin alpha)); its slip velocity is x'."""
    block = SlidingBlock(angle=0.1, mu=0.5, u0=1.0)
    a, g = 0.1, 9.81
    t_stop = 1.0 / (g * (0.5 * np.cos(a) - np.sin(a)))
    t = np.linspace(0.0, 2 * t_stop, 401)
    q, v = block.exact_solution(t)
    states = contact_states(block, q, v)
    np.testing.assert_allclose(states.slip[:, 0], v[:, 0], atol=1e-15)
    assert np.all(states.state[t < 0.99 * t_stop, 0] == SLIP)
    assert np.all(states.state[t > 1.01 * t_stop, 0] == STICK)
    lifted = q.copy()
    lifted[:, 1] = 0.1  # the block lifted off the plane: the contact is open
    assert np.all(contact_states(block, lifted, v).state == OPEN)
    assert np.all(np.isnan(contact_states(block, lifted, v).slip))
