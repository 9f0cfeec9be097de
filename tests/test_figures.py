"""Figures as a reader sees them: journal sizes, three formats, non-blank, reproducible bytes,
and the run-against-reference figure of ``simulate --plot``."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.image import imread

from impactbench import simulate
from impactbench.analysis.impact_events import impact_events
from impactbench.analysis.reference import Reference
from impactbench.bench import style
from impactbench.bench.cli import main
from impactbench.bench.trajectory_figure import REFERENCE_POINTS, trajectory_figure
from impactbench.methods import MoreauJean
from impactbench.problems import SlantedWall


@pytest.mark.parametrize(
    ("panels", "width", "rows"),
    [(1, style.COLUMN_WIDTH, 1), (2, style.TEXT_WIDTH, 1), (3, 7.0, 2), (4, 7.0, 2)],
)
def test_figures_fit_journal_columns(panels, width, rows):
    figure, axes = style.new_figure(panels, aspect=0.5)
    assert len(axes) == panels
    assert figure.get_figwidth() == width
    columns = min(panels, style.MAX_COLUMNS)
    assert figure.get_figheight() == pytest.approx(rows * width / columns * 0.5 + 0.35)


@pytest.mark.parametrize("panels", [0, -1, 1.5])
def test_new_figure_refuses_bad_panel_counts(panels):
    with pytest.raises(ValueError, match="panels"):
        style.new_figure(panels)


def _drawn(tmp_path, name="figure"):
    figure, (ax,) = style.new_figure(1)
    ax.plot([1, 2, 3], [3, 1, 2], label="$E - k\\delta^2/2$")
    ax.set(xlabel="$t$ [s]", ylabel="$E - k\\delta^2/2$ [J]")
    ax.legend()
    return style.save(figure, tmp_path / f"{name}.png")


def test_one_raster_and_one_vector_format_non_trivial(tmp_path):
    png, pdf = _drawn(tmp_path)
    image = imread(png)
    height, width = image.shape[:2]
    assert width == round(style.COLUMN_WIDTH * style.PNG_DPI)
    assert height == round((style.COLUMN_WIDTH * 0.8 + 0.35) * style.PNG_DPI)
    rgb = image[..., :3]
    assert (rgb < 0.5).mean() > 0.005  # ink: axes, text, the line
    assert (rgb > 0.95).mean() > 0.5  # mostly white paper
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")


def test_dense_artists_are_rasterised_in_the_pdf(tmp_path):
    """A line of many points is an image in the PDF, so the file does not grow with the data;
    a sparse line stays a vector path."""
    n = 20 * style.MAX_VECTOR_POINTS
    t = np.linspace(0.0, 1.0, n)
    figure, (ax,) = style.new_figure(1)
    dense = ax.plot(t, np.sin(50 * t), label="dense")[0]
    sparse = ax.plot([0, 1], [0, 1], label="sparse")[0]
    ax.set(xlabel="$t$ [s]", ylabel="$q$ [m]")
    ax.legend()
    _, pdf = style.save(figure, tmp_path / "dense.png")
    assert dense.get_rasterized() and not sparse.get_rasterized()
    assert b"/Subtype /Image" in pdf.read_bytes()
    # a vector path of n points would take at least ~10 bytes a point
    assert pdf.stat().st_size < n * 10


def test_figures_are_byte_reproducible(tmp_path):
    first = [path.read_bytes() for path in _drawn(tmp_path, "a")]
    second = [path.read_bytes() for path in _drawn(tmp_path, "b")]
    assert first == second


def test_save_refuses_unknown_formats(tmp_path):
    figure, _ = style.new_figure(1)
    with pytest.raises(ValueError, match="formats"):
        style.save(figure, tmp_path / "x.png", formats=("jpg",))


def test_trajectory_figure_draws_the_exact_solution():
    wall = SlantedWall(restitution=0.7)
    t_end = wall.accumulation_time + 0.5
    run = simulate(wall, MoreauJean(), t_end, h=1e-3)
    figure = trajectory_figure(wall, run, Reference.exact(wall, t_end))
    positions = figure.axes[0]
    dashed = [line for line in positions.lines if line.get_linestyle() == "--"]
    assert len(dashed) == wall.n_dof
    t_ref = np.linspace(run.t[0], run.t[-1], REFERENCE_POINTS)
    q_exact, _ = wall.exact_solution(t_ref)
    for i, line in enumerate(dashed):
        np.testing.assert_array_equal(line.get_xdata(), t_ref)
        np.testing.assert_array_equal(line.get_ydata(), q_exact[:, i])
    impact_map = figure.axes[3]
    run_points = impact_map.lines[0]
    # one point per impact event (the first entry of its cluster), not one per resting step
    events = impact_events(run)
    assert len(run_points.get_xdata()) == events.impacts < len(run.impacts.t)
    np.testing.assert_array_equal(run_points.get_xdata(), events.times)
    first = np.searchsorted(run.impacts.t, events.times)
    np.testing.assert_array_equal(
        run_points.get_ydata(), -run.impacts.normal_velocity_before[first]
    )
    figure.savefig(io.BytesIO(), format="png")


def test_simulate_plot_against_the_exact_solution(tmp_path, capsys):
    path = tmp_path / "run.pdf"
    argv = ["simulate", "BouncingBall[restitution=0.5]", "MoreauJean", "--t-end", "2"]
    assert main([*argv, "--h", "1e-3", "--plot", str(path), "--no-warmup"]) == 0
    assert "against the exact solution" in capsys.readouterr().out
    assert path.read_bytes().startswith(b"%PDF")
    assert not path.with_suffix(".png").exists()


def test_simulate_plot_refuses_unknown_suffixes(tmp_path, capsys):
    argv = ["simulate", "BouncingBall", "MoreauJean", "--t-end", "1", "--h", "1e-3"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--plot", str(tmp_path / "run.jpg"), "--no-warmup"])
    assert exit_info.value.code == 2
    assert "--plot: must end in" in capsys.readouterr().err


def test_every_variant_of_a_method_has_its_own_encoding():
    from impactbench.bench.style import method_style

    position = method_style("MoreauJean[theta=0.5]")
    approaching = method_style("MoreauJean[theta=0.5,activation=approaching]")
    python = method_style("EventDriven[compiled=False]")
    assert approaching["color"] == position["color"]  # the same method
    assert (approaching["linestyle"], approaching["marker"]) != (
        position["linestyle"],
        position["marker"],
    )
    assert python["linestyle"] == ":" and python["color"] == method_style("EventDriven")["color"]
    # a scheme under step-size control: its scheme's colour, its own line
    adaptive = method_style("Adaptive[scheme=MoreauJean]")
    assert adaptive["color"] == position["color"] and adaptive["linestyle"] != position["linestyle"]
    assert method_style("Adaptive[scheme=CatchingUp]")["color"] != adaptive["color"]


def test_a_flat_sweep_gets_a_decade_of_log_axis_with_informative_ticks():
    import pandas as pd

    from impactbench.bench.report import new_figure, plot_medians

    values = 3.33e-13 * (1 + 1e-4 * np.arange(5))
    medians = pd.DataFrame(
        {
            "method": "EventDriven",
            "tolerance": np.geomspace(1e-11, 1e-3, 5),
            "e": values,
            "e_min": values,
            "e_max": values,
        }
    )
    figure, (ax,) = new_figure(1)
    plot_medians(ax, medians, "tolerance", "e")
    low, high = ax.get_ylim()
    assert high / low >= 9.99  # a decade
    figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert len(labels) == len(set(labels))  # no repeated tick label


def test_a_trajectory_artefact_keeps_the_deepest_penetration_of_each_constraint():
    import impactbench as ib
    from impactbench.bench.trajectory_figure import ARTEFACT_SAMPLES, trajectory_artefact
    from impactbench.methods import MoreauJean
    from impactbench.problems import BouncingBall

    ball = BouncingBall()
    count = 10 * ARTEFACT_SAMPLES + 7
    t = np.linspace(0.0, 1.0, count)
    q = np.full(count, 0.5)
    deepest = 12_345  # between two evenly spaced samples of the artefact
    q[deepest] = -3e-4
    run = ib.make_trajectory(
        ball,
        MoreauJean(),
        t,
        q,
        np.zeros(count),
        steps=count - 1,
        force_evaluations=count - 1,
        h=t[1],
    )
    stored = trajectory_artefact(None, ball, run)["trajectory"]
    assert len(stored) <= ARTEFACT_SAMPLES
    assert stored["q1"].min() == -3e-4 and t[deepest] in set(stored["t"])
