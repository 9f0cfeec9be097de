"""Figures as a reader sees them: journal sizes, one raster and one vector format, non-blank,
reproducible bytes, PNGs stored with a palette, and the run-against-reference figure of
``simulate --plot``."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread
from PIL import Image

from impactbench import simulate
from impactbench.analysis.impact_events import impact_events
from impactbench.analysis.reference import Reference
from impactbench.bench import cli, style
from impactbench.bench.cli import main
from impactbench.bench.pipeline import PNG_COLOURS, palette_figures, palette_png, run_study
from impactbench.bench.study import Section, Study, StudyReport
from impactbench.bench.trajectory_figure import REFERENCE_POINTS, trajectory_figure
from impactbench.methods import MoreauJean
from impactbench.problems import SlantedWall

from test_runner import probe_runs
from test_tables import FIGURE_SUFFIXES, MAX_FIGURE_BYTES


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


#: Methods of the figures of the palette tests: one colour each (style.METHOD_STYLES).
PALETTE_METHODS = (
    "MoreauJean",
    "PaoliSchatzman",
    "CatchingUp",
    "EventDriven",
    "D1MinusLinear",
    "NonsmoothGeneralizedAlpha",
)


def _methods_figure(path: Path, points: int = 5000) -> list[Path]:
    """Two panels of one dense decay curve per method of :data:`PALETTE_METHODS`, saved."""
    figure, axes = style.new_figure(2, aspect=0.6)
    t = np.linspace(0.0, 10.0, points)
    for ax in axes:
        for k, name in enumerate(PALETTE_METHODS):
            energy = np.exp(-0.3 * k * t) * (2.0 + np.sin(7.0 * t + k))
            ax.plot(t, energy, label=name, **style.method_style(name))
        ax.set(xlabel="$t$ [s]", ylabel="$E$ [J]", yscale="log")
        ax.legend()
    return style.save(figure, path)


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=int)


def test_a_png_is_stored_with_a_palette_keeping_the_line_colours_and_the_paper(tmp_path):
    """The palette keeps every pixel of a method's colour and of the white paper exactly; the
    antialiased blends move to a near palette colour; size, resolution and the Software text
    are kept, and the file shrinks."""
    png, _ = _methods_figure(tmp_path / "methods.png")
    truecolour = png.read_bytes()
    before = _rgb(png)
    with Image.open(png) as image:
        info = dict(image.info)
    assert palette_png(png)
    with Image.open(png) as image:
        assert image.mode == "P" and len(image.getcolors(PNG_COLOURS)) <= PNG_COLOURS
        assert image.info["dpi"] == info["dpi"] and image.info["Software"] == info["Software"]
    after = _rgb(png)
    assert after.shape == before.shape
    assert png.stat().st_size < len(truecolour) / 2
    paper = (before == 255).all(axis=-1)
    assert paper.mean() > 0.5 and (after[paper] == 255).all()
    for name in PALETTE_METHODS:
        colour = np.round(np.array(to_rgb(style.method_style(name)["color"])) * 255)
        drawn = (before == colour).all(axis=-1)
        assert drawn.sum() > 1000, name  # the line's own colour is drawn ...
        assert (after[drawn] == colour).all(), name  # ... and kept
    moved = np.abs(after - before).max(axis=-1)  # in levels of 255
    assert moved.mean() < 1.0
    assert np.mean(moved > 32) < 1e-3
    # a palette PNG is left as it is; the same figure gives the same bytes
    stored = png.read_bytes()
    assert not palette_png(png) and png.read_bytes() == stored
    again = tmp_path / "again.png"
    again.write_bytes(truecolour)
    assert palette_png(again) and again.read_bytes() == stored


def test_a_png_with_transparent_pixels_keeps_its_colours(tmp_path):
    path = tmp_path / "transparent.png"
    pixels = np.zeros((20, 30, 4), dtype=np.uint8)
    pixels[..., 0] = np.arange(30, dtype=np.uint8) * 8
    pixels[..., 3] = 255
    pixels[:5, :, 3] = 0
    Image.fromarray(pixels, "RGBA").save(path)
    data = path.read_bytes()
    assert not palette_png(path)
    assert path.read_bytes() == data


def test_palette_figures_rewrites_only_the_pngs_written_in_the_block(tmp_path):
    """A PNG of the user's in the study folder, and any PNG when the block fails, is left
    unchanged; the figures written in the block (new or replaced) get a palette."""
    users = tmp_path / "photo.png"
    Image.fromarray(np.full((8, 8, 3), (10, 200, 30), dtype=np.uint8), "RGB").save(users)
    photo = users.read_bytes()
    _methods_figure(tmp_path / "replaced.png")
    with palette_figures(tmp_path):
        _methods_figure(tmp_path / "replaced.png")
        _methods_figure(tmp_path / "new.png")
    assert users.read_bytes() == photo
    for name in ("replaced", "new"):
        with Image.open(tmp_path / f"{name}.png") as image:
            assert image.mode == "P", name
    failed = tmp_path / "failed"
    failed.mkdir()
    with pytest.raises(RuntimeError, match="report failed"), palette_figures(failed):
        _methods_figure(failed / "figure.png")
        raise RuntimeError("report failed")
    with Image.open(failed / "figure.png") as image:
        assert image.mode == "RGBA"


#: Suffixes of image files (a figure in any format).
IMAGE_SUFFIXES = {".png", ".pdf", ".svg", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff"}


def _dense_report(table: pd.DataFrame, folder: Path) -> StudyReport:
    """A probe study's report: one figure of dense curves (100000 points a method)."""
    _methods_figure(folder / "decay.png", points=100_000)
    return StudyReport([Section("Decay", "![decay](decay.png)\n")], [f"{len(table)} runs"])


def test_reports_store_each_figure_as_a_palette_png_and_a_pdf_within_the_size_limit(tmp_path):
    """`impactbench run` and `impactbench report` (the same report rebuilt from the stored
    table) leave each figure as a palette PNG and a PDF (its dense lines rasterised), each at
    most the limit the committed reports are held to, and no other figure file."""
    study = Study(
        "dense_probe",
        "Dense probe",
        "Test study.",
        lambda quick: probe_runs(tmp_path / "log", (1.0,)),
        _dense_report,
    )
    run_study(study, quick=True, jobs=1, cache_dir=tmp_path / "cache", output=tmp_path)
    folder = tmp_path / "dense_probe"
    for write in ("run", "report"):
        if write == "report":
            stored = (folder / "decay.png").read_bytes()
            cli._write_report(study, folder)
            assert (folder / "decay.png").read_bytes() == stored  # the same bytes again
        figures = sorted(p.name for p in folder.iterdir() if p.suffix in IMAGE_SUFFIXES)
        assert figures == ["decay.pdf", "decay.png"], write
        with Image.open(folder / "decay.png") as image:
            assert image.mode == "P", write
        assert b"/Subtype /Image" in (folder / "decay.pdf").read_bytes()
        for name in figures:
            assert (folder / name).stat().st_size <= MAX_FIGURE_BYTES, (write, name)
    assert {f".{fmt}" for fmt in style.FORMATS} == FIGURE_SUFFIXES


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
