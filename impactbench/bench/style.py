"""One figure style for every study: sizes of a journal page, fonts, colours, file formats.

Sizes. A figure is one journal column wide (:data:`COLUMN_WIDTH`, 3.5 in) when it has one panel
and the text width (:data:`TEXT_WIDTH`, 7.0 in: two columns) otherwise, with at most
:data:`MAX_COLUMNS` panels per row, so that it is printed at 100 % and its 8 pt text stays
readable; a panel's height follows the aspect ratio its study asks for.

Colours and markers. Each method family has a hue family and each built-in method a fixed
colour, marker and line style (:data:`METHOD_STYLES`), the same in every figure; a method that
is not built in gets a colour and marker derived from a digest of its class name.

Axis conventions (every study): the step h or the cost on the horizontal axis, the error on the
vertical axis, both logarithmic where they span decades; work-precision charts put the cost on
the horizontal axis and the error on the vertical axis, as the thesis comparison does.

Conventions checked on saving (:func:`check_figure`): every panel with data names the unit of
each axis in brackets ("$t$ [s]", "$E / E_0$ [-]" for a dimensionless quantity; an axis of
category names needs none), and every labelled artist of a panel is in its legend or in a legend
of the figure.

Files. :func:`save` writes the PNG (:data:`PNG_DPI` dpi, linked from the Markdown reports) and
the PDF next to it (for a paper; its dense lines and scatters rasterised, :func:`rasterize_dense`),
both byte-reproducible: no creation dates.
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import matplotlib as mpl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FuncFormatter

from ..core import coordinates
from ..core._files import write_atomic
from ..core.problem import Problem

#: Width of one journal column and of the text block (two columns), inches.
COLUMN_WIDTH = 3.5
TEXT_WIDTH = 7.0
#: Most panels side by side in one row.
MAX_COLUMNS = 2
#: Resolution of the PNG files.
PNG_DPI = 200
#: The formats :func:`save` writes, the first being the one the Markdown reports link: one
#: raster and one vector format.
FORMATS = ("png", "pdf")
#: Most points an artist keeps as vector paths in the PDF; a denser line or scatter is drawn
#: as an image there (:func:`rasterize_dense`), so that no figure file grows with the data.
MAX_VECTOR_POINTS = 2000

#: matplotlib settings of every figure (applied with :func:`matplotlib.rc_context`).
RC: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 5.5,
    "legend.handlelength": 1.5,
    "legend.labelspacing": 0.25,
    "legend.frameon": False,
    "figure.titlesize": 9,
    "font.family": "serif",
    "mathtext.fontset": "cm",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.0,
    "lines.markersize": 3.5,
    "axes.linewidth": 0.6,
    "pdf.fonttype": 42,
}

#: Colour, marker and line style of each built-in method (class name): families share a hue
#: (position schemes blue, velocity schemes orange/green/brown, event-driven red).
METHOD_STYLES: dict[str, dict[str, str]] = {
    "PaoliSchatzman": {"color": "#1f77b4", "marker": "o", "linestyle": "-"},
    "MoreauJean": {"color": "#ff7f0e", "marker": "s", "linestyle": "-"},
    "CatchingUp": {"color": "#2ca02c", "marker": "^", "linestyle": "-"},
    "MoreauJeanProjection": {"color": "#bcbd22", "marker": "v", "linestyle": "--"},
    "D1MinusLinear": {"color": "#8c564b", "marker": "P", "linestyle": "-."},
    "NonsmoothGeneralizedAlpha": {"color": "#9467bd", "marker": "X", "linestyle": ":"},
    "EventDriven": {"color": "#d62728", "marker": "D", "linestyle": "-"},
}
#: How a scheme under step-size control is drawn beside the scheme at fixed steps.
ADAPTIVE_STYLE = {"linestyle": "--", "markerfacecolor": "none"}
_PALETTE = ("#17becf", "#e377c2", "#7f7f7f", "#393b79", "#637939", "#843c39")
_MARKERS = ("h", "<", ">", "*", "p", "d")


#: Parameters that make a variant of a method, and how the variant is drawn (same colour as the
#: method, another line and marker): one visual encoding per variant.
VARIANT_STYLES = {
    "compiled=False": {"linestyle": ":", "marker": "x"},  # the Python engine of a method
    "activation=approaching": {"linestyle": "--", "marker": "v", "markerfacecolor": "none"},
}


def method_style(method: str) -> dict[str, str]:
    """``color``, ``marker`` and ``linestyle`` of a method, by its class name (before "["), and
    of its variants (:data:`VARIANT_STYLES`); a scheme under step-size control
    (``Adaptive[scheme=Name...]``) in its scheme's colour and marker, :data:`ADAPTIVE_STYLE`."""
    base = method.partition("[")[0]
    scheme = re.search(r"scheme=(\w+)", method) if base == "Adaptive" else None
    if scheme is not None and scheme.group(1) in METHOD_STYLES:  # step-size control
        return {**METHOD_STYLES[scheme.group(1)], **ADAPTIVE_STYLE}
    if base in METHOD_STYLES:
        style = dict(METHOD_STYLES[base])
        for parameter, variant in VARIANT_STYLES.items():
            if parameter in method:
                style.update(variant)
        return style
    index = int(hashlib.sha256(base.encode()).hexdigest(), 16)
    return {
        "color": _PALETTE[index % len(_PALETTE)],
        "marker": _MARKERS[index % len(_MARKERS)],
        "linestyle": "-",
    }


def coordinate_unit(problem: str | Problem) -> str:
    """The unit(s) of the coordinates q of ``problem`` -- a problem, or its name (parameters
    after "[" ignored) looked up among the built-in ones -- as its ``coordinates`` declare them
    (:mod:`impactbench.core.coordinates`): "m", "rad", "m, rad" (several units, in order);
    :data:`impactbench.core.coordinates.UNDECLARED` for a problem that declares none or a name
    that is not built in."""
    if isinstance(problem, str):
        from ..problems import PROBLEMS

        problem = PROBLEMS.get(problem.partition("[")[0])
    declared = getattr(problem, "coordinates", None)
    if not declared:
        return coordinates.UNDECLARED
    return coordinates.units_text([unit for _, unit in declared])


def coordinate_labels(problem: Problem, n_dof: int) -> list[tuple[str, str]]:
    """Axis labels of each coordinate of ``problem`` and of its velocity, e.g.
    ``("$\\phi$ [rad]", "$\\dot{\\phi}$ [rad/s]")`` (names and units as the problem declares
    them, :func:`impactbench.core.coordinates.coordinates`)."""
    labels = []
    for name, unit in coordinates.coordinates(problem, n_dof):
        position = f"${coordinates.math_name(name)}$ [{unit}]"
        velocity = f"${coordinates.math_name(name, dot=True)}$ [{coordinates.rate_unit(unit)}]"
        labels.append((position, velocity))
    return labels


def gap_unit(problem: str) -> str:
    """The unit of the gaps g(q) of ``problem``: "m" for a built-in problem (every built-in gap
    is a distance), "units of g" for any other."""
    from ..problems import PROBLEMS

    return "m" if problem.partition("[")[0] in PROBLEMS else "units of g"


def energy_unit(problem: str) -> str:
    """The unit of the energy of ``problem``: "J" for a built-in problem, "units of E" for any
    other."""
    from ..problems import PROBLEMS

    return "J" if problem.partition("[")[0] in PROBLEMS else "units of E"


def metric_unit(metric: str, problem: str) -> str:
    """The unit of an error metric (:data:`impactbench.analysis.metrics.METRICS`) on
    ``problem``: position errors and the L1 velocity error (an integral over time) in the
    coordinates' unit, velocity errors per second, penetrations in the gaps' unit, energies in
    the energy's, impact times in s; counts and the scaled Hausdorff distance "-"."""
    coordinate = coordinate_unit(problem)
    units = {
        "max_position_error": coordinate,
        "l1_velocity_error": coordinate,
        "position_error_at_end": coordinate,
        "velocity_error_at_end": coordinates.rate_unit(coordinate),
        "energy_error_at_end": energy_unit(problem),
        "energy_at_end": energy_unit(problem),
        "max_energy_increase": energy_unit(problem),
        "largest_impact_energy_gain": energy_unit(problem),
        "impact_time_error": "s",
        "max_penetration": gap_unit(problem),
        "late_penetration": gap_unit(problem),
        "work_bytes": "B",
    }
    return units.get(metric, "-")


def variant_label(method: str) -> str:
    """A method's legend entry: its class name and the variants of :data:`VARIANT_STYLES` it is
    (``MoreauJean[theta=0.5,activation=approaching]`` -> ``MoreauJean[activation=approaching]``):
    the entry names what :func:`method_style` draws differently, and no more."""
    base, _, parameters = method.partition("[")
    variants = [p for p in parameters.rstrip("]").split(",") if p in VARIANT_STYLES]
    return f"{base}[{','.join(variants)}]" if variants else base


def new_figure(
    panels: int, *, aspect: float = 0.8, wide: bool = False
) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` axes in rows of at most :data:`MAX_COLUMNS`, journal-sized.

    Parameters
    ----------
    panels : int
        Number of axes (>= 1).
    aspect : float
        Height / width of one panel.
    wide : bool
        Give a single panel the text width (e.g. a bar chart with long labels).

    Returns
    -------
    figure, axes
        The figure (one column wide for one panel, the text width otherwise) and its axes in
        reading order; unused cells of the last row are removed.
    """
    if not (isinstance(panels, int) and panels >= 1):
        raise ValueError(f"panels must be a positive integer, got {panels!r}")
    if not (math.isfinite(aspect) and aspect > 0):
        raise ValueError(f"aspect must be a finite positive number, got {aspect!r}")
    columns = min(panels, MAX_COLUMNS)
    rows = -(-panels // columns)
    width = COLUMN_WIDTH if panels == 1 and not wide else TEXT_WIDTH
    height = rows * (width / columns) * aspect + 0.35
    with mpl.rc_context(RC):
        figure = Figure(figsize=(width, height), layout="constrained")
        grid = figure.subplots(rows, columns, squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[panels:]:
        ax.remove()
    return figure, axes[:panels]


def _wrap_suptitle(figure: Figure) -> None:
    """Break a figure title that is wider than the figure into lines (at word boundaries)."""
    title = figure._suptitle  # noqa: SLF001 - matplotlib's handle of the figure title
    if title is None or not title.get_text():
        return
    # characters of this font size that fit the width (a character is ~0.55 em wide on average)
    fitting = int(figure.get_figwidth() * 72 / (0.55 * title.get_fontsize()))
    lines = textwrap.wrap(" ".join(title.get_text().split()), max(fitting, 20))
    title.set_text("\n".join(lines))


#: A unit in brackets: "[s]", "[m/s]", "[-]" (dimensionless).
UNIT = re.compile(r"\[[^\[\]]+\]")


def _categorical(axis: Any) -> bool:
    """Whether ``axis`` is labelled by category names (tick labels set as words)."""
    formatter = axis.get_major_formatter()
    if not isinstance(formatter, FixedFormatter | FuncFormatter):
        return False
    texts = [str(formatter(loc, k)) for k, loc in enumerate(axis.get_ticklocs())]
    return any(re.search(r"[A-Za-z]", text) for text in texts)


def check_figure(figure: Figure, name: str) -> None:
    """Reject a figure a paper cannot take as it is.

    Rules, for every visible panel holding data (lines, markers, bars, bands): its x and y labels
    carry a unit in brackets (:data:`UNIT`; "[-]" for a dimensionless quantity), unless that
    axis is labelled by category names; and every artist of the panel that has a label is listed
    in the panel's legend or in a legend of the figure.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
        The figure to check.
    name : str
        How the figure is named in the error (e.g. its file name).

    Raises
    ------
    ValueError
        Naming the figure, the panel (its title or position) and the axis or the missing
        legend entries.
    """
    shared = {text.get_text() for legend in figure.legends for text in legend.get_texts()}
    for position, ax in enumerate(figure.axes, start=1):
        if not (ax.get_visible() and ax.has_data()):
            continue
        panel = f"panel {position}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        for letter, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            label = axis.get_label().get_text()
            if not (UNIT.search(label) or _categorical(axis)):
                raise ValueError(
                    f"figure {name}: {panel}: the {letter} axis label {label!r} has no unit in "
                    f"brackets (e.g. '$t$ [s]', '$E / E_0$ [-]')"
                )
        legend = ax.get_legend()
        listed = shared | ({text.get_text() for text in legend.get_texts()} if legend else set())
        missing = [label for label in ax.get_legend_handles_labels()[1] if label not in listed]
        if missing:
            raise ValueError(
                f"figure {name}: {panel}: labelled artists {missing} are in no legend of the "
                f"panel or the figure"
            )


def save(figure: Figure, path: Path | str, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write ``figure`` in each of ``formats`` (``path`` with that suffix), atomically.

    ``formats`` are among "png", "pdf" (default: both). Dense artists are rasterised in the PDF
    (:func:`rasterize_dense`). Returns the paths written,
    in the order of ``formats``. The figure must pass :func:`check_figure` (ValueError naming
    the file, the panel and the axis otherwise; nothing is written then).
    """
    path = Path(path)
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"formats must be among {FORMATS}, got {formats!r}")
    check_figure(figure, path.name)
    written = []
    metadata = {"png": {}, "pdf": {"CreationDate": None}}
    rasterize_dense(figure)
    # fontTools (embedding the fonts in the PDF) warns about the fonts' zero timestamps
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    _wrap_suptitle(figure)
    with mpl.rc_context(RC):
        for fmt in formats:
            buffer = io.BytesIO()
            figure.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=metadata[fmt])
            target = path.with_suffix(f".{fmt}")
            write_atomic(target, buffer.getvalue())
            written.append(target)
    return written


def _points(artist: Artist) -> int:
    """How many data points ``artist`` draws (0 for artists that are not lines or scatters)."""
    if isinstance(artist, Line2D):
        return len(artist.get_xdata())
    if isinstance(artist, Collection):
        return len(artist.get_offsets()) + sum(len(p.vertices) for p in artist.get_paths())
    return 0


def rasterize_dense(figure: Figure, max_points: int = MAX_VECTOR_POINTS) -> int:
    """Mark every line or collection of ``figure`` with more than ``max_points`` points as
    rasterised (drawn as an image in vector formats, at the PNG resolution); axes, text and
    sparse artists stay vectors. Returns how many artists were marked."""
    marked = 0
    for ax in figure.get_axes():
        for artist in [*ax.get_lines(), *ax.collections]:
            if _points(artist) > max_points:
                artist.set_rasterized(True)
                marked += 1
    return marked
