"""Markdown reports with figures (PNG, PDF), drawn only from the stored result tables.

``reports/<study>/README.md`` holds a study's header (what it measures, the grid, provenance),
the sections its report function returns (tables and figures), its failed runs, and its key
findings; ``reports/README.md`` indexes the studies with their findings. Every figure follows
:mod:`impactbench.bench.style` (journal column sizes, fonts, a fixed colour and marker per method,
PNG with the PDF next to it); figures use matplotlib's Agg renderer through
:class:`matplotlib.figure.Figure` (no pyplot state) and are written atomically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..analysis.fitting import ORDER, OrderFit
from ..analysis.reference import reference_archive
from ..core._files import write_atomic
from . import style
from .files import check_ours, check_study_folder, replace_group
from .latex import LatexTable, Summary, latex_table_text, with_unit
from .results import PROVENANCE_COLUMNS, TABLE_FILE, read_provenance, read_table, table_path
from .runner import FAILED
from .study import Study, StudyReport
from .style import method_style

#: Folder (in a study's report folder) of the LaTeX versions of its report tables.
LATEX_FOLDER = "tables"
#: Folder of a study's report where the references it reads are kept
#: (:func:`impactbench.analysis.reference.reference_archive`).
REFERENCES_FOLDER = "references"

#: Tables made by :func:`markdown_table` while a report is being written (LaTeX copies): the
#: values of the LaTeX copy, their significant digits, the Markdown written and the note of a
#: summary ("" for a full copy).
_tables: ContextVar[list[tuple[pd.DataFrame, int, str, str]] | None] = ContextVar(
    "_tables", default=None
)
PROVENANCE_FILE = "provenance.json"
README_FILE = "README.md"

#: The first line of the index ``<output>/README.md``.
INDEX_HEADER = "# impactbench reports\n"


def format_number(value: Any, digits: int = 3) -> str:
    """A table cell: floats with ``digits`` significant digits, NaN and None as "-"."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def count_text(count: float, capped: bool) -> str:
    """A count as printed: ``">= N"`` when it hit its buffer's capacity (a lower bound), else
    ``"N"``."""
    return f">= {count:.0f}" if capped else f"{count:.0f}"


def capped_flags(rows: pd.DataFrame) -> pd.Series:
    """Per row of a study table: whether its impact count hit the impact log's capacity
    (column ``impacts_capped``; False for a table written before the column existed)."""
    if "impacts_capped" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["impacts_capped"].astype("boolean").fillna(False).astype(bool)


def with_capped_counts(rows: pd.DataFrame, columns: Sequence[str] = ("impacts",)) -> pd.DataFrame:
    """``rows`` with each count of ``columns`` as text, ``">= N"`` where the row's count is
    capped (:func:`capped_flags`), the same in the Markdown and the LaTeX tables; unchanged
    when no row is capped (the column stays numeric)."""
    capped = capped_flags(rows)
    if not capped.any():
        return rows
    texts = {
        name: [
            "-" if pd.isna(n) else count_text(n, c) for n, c in zip(rows[name], capped, strict=True)
        ]
        for name in columns
    }
    return rows.assign(**texts)


def markdown_table(
    frame: pd.DataFrame,
    digits: int = 3,
    *,
    units: Mapping[str, str] | None = None,
    latex: Summary | None = None,
) -> str:
    """A DataFrame as a Markdown table (numbers right-aligned); "None." when it has no rows.

    Each header is followed by its unit (:func:`impactbench.bench.latex.with_unit`: the one it
    names, else the one of ``units`` or of the recurring names). While
    :func:`write_study_report` runs, the table is also kept for its LaTeX copy: ``frame``
    itself, or ``latex`` (the summary of a table longer than
    :data:`impactbench.bench.latex.MAX_ROWS`, its headers given units the same way).
    """
    if frame.empty:
        return "None.\n"
    frame = frame.rename(columns=lambda name: with_unit(str(name), units))
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    align = ["---:" if pd.api.types.is_numeric_dtype(frame[c]) else ":---" for c in frame.columns]
    lines = [header, "| " + " | ".join(align) + " |"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(format_number(v, digits) for v in row) + " |")
    text = "\n".join(lines) + "\n"
    recorded = _tables.get()
    if recorded is not None:
        copy, note = frame, ""
        if latex is not None:
            copy = latex.frame.rename(columns=lambda name: with_unit(str(name), units))
            note = latex.note
        recorded.append((copy.reset_index(drop=True).copy(), digits, text, note))
    return text


def new_figure(
    panels: int, *, width: float = 5.0, height: float = 4.0
) -> tuple[Figure, list[Axes]]:
    """A journal-sized figure with ``panels`` axes (:func:`impactbench.bench.style.new_figure`).

    ``width`` and ``height`` (inches) give the panels' aspect ratio, not the figure's size; a
    single panel asked 6 in wide or more gets the text width instead of one column.
    """
    return style.new_figure(panels, aspect=height / width, wide=width >= 6.0)


def save_figure(figure: Figure, path: Path) -> None:
    """Write ``figure`` as ``path`` (PNG) and as PDF next to it, atomically."""
    style.save(figure, path)


def plot_methods(ax: Axes, frame: pd.DataFrame, x: str, y: str, *, order: str = "") -> None:
    """One line per method (column ``method``) through the points (x, y), log-log.

    The points of a line are joined in the order of the column ``order`` (default: ``x``);
    points whose x or y is not finite and positive are left out. A y axis whose values span
    less than :data:`FLAT_SPAN` gets a decade (:func:`widen_flat_log_axis`).
    """
    shown = []
    for name, group in frame.groupby("method", sort=True):
        group = group[(group[x] > 0) & (group[y] > 0)].sort_values(order or x, kind="stable")
        if group.empty:
            continue
        ax.plot(group[x], group[y], label=str(name), **method_style(str(name)))
        shown.append(group[y].to_numpy(float))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)
    values = np.concatenate(shown) if shown else np.zeros(0)
    values = values[np.isfinite(values)]
    if values.size:
        widen_flat_log_axis(ax, float(values.min()), float(values.max()))


def plot_medians(ax: Axes, medians: pd.DataFrame, x: str, y: str) -> None:
    """Phase-averaged errors: per method the medians joined by a line, and the smallest to the
    largest error of each phase family as a vertical bar (columns ``y``, ``y_min``, ``y_max`` of
    :func:`impactbench.analysis.fitting.phase_medians`); log-log, non-positive values left out."""
    for name, group in medians.groupby("method", sort=True):
        group = group[(group[x] > 0) & (group[y] > 0)].sort_values(x, kind="stable")
        if group.empty:
            continue
        style = method_style(str(name))
        low = np.clip(group[y] - group[f"{y}_min"], 0.0, None)
        high = np.clip(group[f"{y}_max"] - group[y], 0.0, None)
        ax.errorbar(
            group[x],
            group[y],
            yerr=[low, high],
            label=str(name),
            capsize=2,
            elinewidth=0.8,
            **style,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)
    values = medians[[f"{y}_min", f"{y}_max"]].to_numpy(float).ravel()
    values = values[np.isfinite(values) & (values > 0)]
    if values.size:
        widen_flat_log_axis(ax, float(values.min()), float(values.max()))


#: A log axis whose data span less than this ratio is widened to a decade around them.
FLAT_SPAN = 3.0


def widen_flat_log_axis(ax: Axes, low: float, high: float) -> None:
    """Give a log y axis whose data ``[low, high]`` span less than :data:`FLAT_SPAN` a full
    decade around them: the ticks then show values (a flat sweep squeezed into a fraction of a
    decade carries only repeated or no tick labels)."""
    if 0.0 < low <= high < FLAT_SPAN * low:
        center = np.sqrt(low * high)
        ax.set_ylim(center / np.sqrt(10.0), center * np.sqrt(10.0))


def shared_legend(figure: Figure, axes: Sequence[Axes], columns: int = 4) -> None:
    """One legend below the panels of ``figure`` listing every labelled artist of ``axes`` once
    (the first artist of each label), so that it covers no data; nothing when none is labelled."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        figure.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncol=min(columns, len(entries)),
        )


def whole_decades(ax: Axes) -> None:
    """Widen a log x axis to the decades enclosing its data, so that at least two labelled
    powers of ten show (minor tick labels of a narrow span overlap at the text width)."""
    low, high = ax.dataLim.intervalx
    if not (np.isfinite(low) and np.isfinite(high) and 0.0 < low <= high):
        return
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    ax.set_xlim(10.0**first, 10.0 ** max(last, first + 1))


def plot_fit(
    ax: Axes, fit: OrderFit, parameter: np.ndarray, color: str, label: str | None = "fit"
) -> None:
    """A fitted order as a dashed line over the range of ``parameter`` with its 95 % band.

    Only for a fitted order (``fit.status == ORDER``); anything else draws nothing. The legend
    entry is ``label`` followed by the order and its interval; none when ``label`` is None.
    """
    if fit.status != ORDER:
        return
    parameter = np.asarray(parameter, dtype=float)
    span = np.geomspace(parameter.min(), parameter.max(), 50)
    center, low, high = fit.line(span)
    ax.fill_between(span, low, high, color=color, alpha=0.18, linewidth=0)
    entry = f"{label} {fit.text()}" if label is not None else None
    ax.plot(span, center, color=color, linewidth=0.9, linestyle="--", label=entry)


def reference_slopes(
    ax: Axes, x: Sequence[float], y: Sequence[float], slopes: Iterable[int]
) -> None:
    """Dashed grey lines of the given slopes (log-log), drawn below the data they accompany."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if not keep.any():
        return
    x, y = x[keep], y[keep]
    span = np.array([x.min(), x.max()])
    anchor = y[x == x.max()].min() / 3.0
    for slope, dash in zip(slopes, ("--", ":", "-."), strict=False):
        ax.plot(
            span,
            anchor * (span / span[1]) ** slope,
            linestyle=dash,
            color="0.4",
            linewidth=1,
            label=f"slope {slope}",
        )


def _provenance_section(table: pd.DataFrame, provenance: dict[str, Any]) -> str:
    lines = []
    for column in PROVENANCE_COLUMNS:
        if column != "key" and column in table:
            values = sorted(str(v) for v in table[column].dropna().unique())
            lines.append(f"- {column.replace('_', ' ')}: {', '.join(values) or '-'}")
    names = ("created", "grid", "jobs", "backend", "computed", "cached", "failed", "elapsed")
    study = ("study_module", "study_digest", "study_git_revision")
    for name in (*names, *study):
        if name in provenance:
            lines.append(f"- {name}: {provenance[name]}")
    machine = provenance.get("machine")
    if isinstance(machine, dict):
        lines.append(
            "- machine: " + ", ".join(f"{key.replace('_', ' ')} {machine[key]}" for key in machine)
        )
    lines.append(
        "- timings: the minimum over the repeats after a warm-up (`wall_time`), each repeat "
        "covering at least 10 ms (`inner_runs` simulations of a shorter run, the time per "
        "simulation kept); `wall_time_median` and `wall_time_max` give their spread, "
        "`wall_time_repeats` every repeat and `timed_repeats` their number (more repeats until "
        "the interval of the median is within 5 %); a worker warms "
        "up once per compiled code (`warmup_time`, NaN for the runs that needed none); "
        "`compile_time` is the time numba spent compiling or loading compiled code from its "
        "disk cache during the run, in none of the other timings; "
        "`integration_time` (min, median, max) is the part of each run spent in the method's "
        "integration loop, the rest being the per-call work of `simulate`"
    )
    return "\n".join(lines) + "\n"


def _dirty_warning(table: pd.DataFrame) -> str:
    """A visible warning when any run was computed from a modified working tree."""
    revisions = sorted(
        str(r) for r in table.get("git_revision", pd.Series(dtype=str)).dropna().unique()
    )
    dirty = [r for r in revisions if r.endswith("-dirty")]
    if not dirty:
        return ""
    return (
        f"> **Warning: generated from a modified working tree** (git revision "
        f"{', '.join(dirty)}): these numbers may not correspond to any commit.\n"
    )


def _failed_section(table: pd.DataFrame) -> str:
    failed = table[table["status"] == FAILED]
    if failed.empty:
        return "None.\n"
    columns = ["problem", "method", "h", "tolerance", "error"]
    return markdown_table(failed[columns])


def _capped_note(table: pd.DataFrame) -> list[str]:
    """A note on the runs whose impact count hit the impact log's capacity, if any."""
    capped = int(capped_flags(table).sum())
    if not capped:
        return []
    return [
        f"{capped} of {len(table)} runs filled their impact log (column impacts_capped of "
        f"[{TABLE_FILE}]({TABLE_FILE})): their impact counts are lower bounds, printed >= N "
        "in every table that shows them.\n"
    ]


def write_study_report(study: Study, folder: Path) -> StudyReport:
    """Regenerate ``folder/README.md`` and the figures from the stored table
    (``folder/results.csv.gz``, :func:`impactbench.bench.results.table_path`).

    Returns
    -------
    StudyReport
        What the study's report function returned, with the number of failed runs as a first
        finding when there are any (the findings feed the index).

    Raises
    ------
    FileNotFoundError
        When the study has no stored table in ``folder``.
    impactbench.bench.files.StudyWriteError
        When ``folder`` or its ``tables`` folder is a symbolic link, or ``folder/README.md``
        is a file of the user's (:func:`impactbench.bench.files.check_ours`).
    """
    folder = check_study_folder(folder)
    check_ours(folder / README_FILE, report_header(study))
    table = read_table(table_path(folder))
    provenance = read_provenance(folder / PROVENANCE_FILE)
    recorded: list[tuple[pd.DataFrame, int, str, str]] = []
    token = _tables.set(recorded)
    try:
        # every artist of the study's figures in the house style; the references it reads kept
        # beside it (REFERENCES_FOLDER), so that the report is rebuilt from stored files alone
        with (
            mpl.rc_context(style.RC),
            reference_archive(folder / REFERENCES_FOLDER) as references,
        ):
            report = study.report(table, folder)
    finally:
        _tables.reset(token)
    replace_group(folder, "references", [f"{REFERENCES_FOLDER}/{name}" for name in references])
    latex = _write_latex(_captioned(study, report, recorded), folder)
    failed = int((table["status"] == FAILED).sum())
    if failed:
        report = StudyReport(
            report.sections,
            [f"{failed} of {len(table)} runs failed (listed in the report).", *report.findings],
        )
    parts = [
        report_header(study),
        *filter(None, [_dirty_warning(table)]),
        f"{study.description}\n",
        f"{len(table)} runs ({failed} failed), {provenance.get('grid', 'unknown')} grid. "
        f"Every figure and table below is generated from [{TABLE_FILE}]({TABLE_FILE}) "
        f"(one row per run) by `impactbench report`.\n",
        "## Key findings\n",
        "".join(f"- {finding}\n" for finding in report.findings) or "None.\n",
    ]
    parts += _capped_note(table)
    for section in report.sections:
        parts += [f"## {section.title}\n", section.body]
    if latex:
        parts += [
            "## Tables for a paper\n",
            "Every table above as LaTeX (booktabs and siunitx, with its caption and label; "
            "a table longer than a page as a summary of it), in order: "
            + ", ".join(f"[{name}]({LATEX_FOLDER}/{name})" for name in latex)
            + f"; the full table is [{TABLE_FILE}]({TABLE_FILE}).\n",
        ]
    parts += ["## Failed runs\n", _failed_section(table)]
    parts += ["## Provenance\n", _provenance_section(table, provenance)]
    write_atomic(folder / README_FILE, "\n".join(parts))
    return report


def _captioned(
    study: Study, report: StudyReport, recorded: list[tuple[pd.DataFrame, int, str, str]]
) -> list[LatexTable]:
    """Each recorded table with the title of the report section that shows it as caption (and,
    for a summary, what it summarises)."""
    tables = []
    for k, (frame, digits, text, note) in enumerate(recorded):
        titles = [section.title for section in report.sections if text in section.body]
        caption = f"{study.title}: {titles[0]}" if titles else study.title
        if note:
            caption += f" ({note}; every run in {TABLE_FILE})"
        tables.append(LatexTable(frame, digits, caption, f"tab:{study.name}-{k + 1}"))
    return tables


def latex_table(table: LatexTable) -> str:
    """The LaTeX of one report table: one ``table`` float
    (:func:`impactbench.bench.latex.latex_table_text`)."""
    return latex_table_text(table)


def _write_latex(tables: list[LatexTable], folder: Path) -> list[str]:
    """Write each table as ``<folder>/tables/table<k>.tex``; remove those this function wrote
    before and not now (and no other file: :func:`impactbench.bench.files.replace_group`);
    return the names written.

    Raises
    ------
    ValueError
        For a table a page does not take (:func:`impactbench.bench.latex.check`), before any
        file is written.
    """
    texts = [latex_table(table) for table in tables]
    names = [f"table{k + 1}.tex" for k in range(len(tables))]
    for name, text in zip(names, texts, strict=True):
        write_atomic(folder / LATEX_FOLDER / name, text)
    replace_group(folder, "latex", [f"{LATEX_FOLDER}/{name}" for name in names])
    return names


def report_header(study: Study) -> str:
    """The first line of a study's ``README.md`` (:func:`impactbench.bench.files.check_ours`
    recognises the project's file by it)."""
    return f"# {study.title}\n"


def write_index(output: Path, reports: Sequence[tuple[Study, StudyReport]]) -> None:
    """Write ``output/README.md``: each study with a link and its key findings (refused, with
    a :class:`impactbench.bench.files.StudyWriteError`, when a README.md of the user's is there:
    :func:`impactbench.bench.files.check_ours`)."""
    check_ours(Path(output) / README_FILE, INDEX_HEADER)
    parts = [
        INDEX_HEADER,
        "Generated by `impactbench run` / `impactbench report` from the stored result tables; "
        "do not edit by hand.\n",
    ]
    for study, report in reports:
        parts.append(f"## [{study.title}]({study.name}/{README_FILE})\n")
        parts.append("".join(f"- {finding}\n" for finding in report.findings) or "No findings.\n")
    write_atomic(Path(output) / README_FILE, "\n".join(parts))
