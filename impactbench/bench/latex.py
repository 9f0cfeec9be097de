"""Report tables as LaTeX that a paper takes as it is.

Each table of a study report is written as one ``table`` float with a caption (the report
section it belongs to) and a label (``tab:<study>-<k>``), booktabs rules, and its numeric columns
as siunitx ``S`` columns aligned on the decimal marker (their ``table-format`` computed from the
cells, counts printed as integers, missing values as an en dash). Column headers keep their
mathematics (``$\\max_t |q - q_{\\mathrm{ex}}|$``) and escape the rest; a relation written
``<=``, ``>=``, ``<``, ``>`` or ``+/-`` is set as mathematics (``$\\le$`` ...), a method's
name (``MoreauJean[theta=0.5]``) as words (``Moreau--Jean ($\\theta = 0.5$)``, :func:`method_tex`).
A table too wide for the text is shrunk to the line width (adjustbox's ``max width``), never
overfull.

A LaTeX table has at most :data:`MAX_ROWS` body rows and is never split: a longer report table
comes with a summary (:func:`summarise`: per nominal setting, the median of the repeated or
phase-shifted rows and their range) and the full table stays in ``results.csv.gz``; a longer frame
is refused. Every numeric column names its unit in its header (``wall time [ms]``, ``impacts
[-]``), given or found by :func:`with_unit`; a numeric column without one is refused. The
packages a document needs are :data:`PREAMBLE`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Most body rows of one LaTeX table (a page of a journal at \small).
MAX_ROWS = 40
#: The packages the tables use.
PREAMBLE = "\\usepackage{booktabs}\n\\usepackage{siunitx}\n\\usepackage{adjustbox}\n"

#: Units of the column names that recur across the studies and of the result table's own
#: columns (``_`` read as a space; "-": a count or a ratio).
UNITS: dict[str, str] = {
    **dict.fromkeys(
        (
            "impacts",
            "impact",
            "beak impacts",
            "steps",
            "accepted",
            "rejected",
            "rejected steps",
            "contact steps",
            "force evaluations",
            "runs",
            "members",
            "points",
            "decades",
            "at floor",
            "missed",
            "spurious",
            "meshes",
            "sizes",
            "jams",
            "N",
            "n",
            "rtol",
            "speedup",
            "steps per impact",
            "events per step",
        ),
        "-",
    ),
    **dict.fromkeys(("h", "h used", "h nominal", "t end"), "s"),
    **dict.fromkeys(
        (
            "tolerance",
            "repeats",
            "timed repeats",
            "inner runs",
            "max repeats",
            "impact log entries",
            "contact phases",
        ),
        "-",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "wall time",
            "wall time median",
            "wall time max",
            "warmup time",
            "compile time",
            "integration time",
            "integration time median",
            "integration time max",
            "contact time",
        ),
        "s",
    ),
    "T": "s",
    "steps per s": "1/s",
}
#: Words of a column name that give its unit: a time in milliseconds or nanoseconds.
_UNIT_WORDS = ((re.compile(r"(^|\s)ms(\s|$)"), "ms"), (re.compile(r"(^|\s)ns(/|\s|$)"), "ns"))

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
#: Relations written in plain text and their mathematics.
_RELATIONS = {"<=": r"$\le$", ">=": r"$\ge$", "+/-": r"$\pm$", "<": "$<$", ">": "$>$"}
_RELATION = re.compile(r"(<=|>=|\+/-|<|>|\^\d+)")
_MATH = re.compile(r"(\$[^$]+\$)")
_UNIT = re.compile(r"\[([^\[\]]+)\]$")
_NUMBER = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?)(\d+))?$")
_FLOAT = r"-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|nan|inf"
#: A cell of :func:`interval_text`: ``median [smallest, largest]``.
_COUNT = re.compile(r"^(>= ?)?\d+$")
_INTERVAL = re.compile(rf"^({_FLOAT}) \[({_FLOAT}), ({_FLOAT})\]$")

#: Method class names as a paper writes them.
METHOD_NAMES = {
    "MoreauJean": "Moreau--Jean",
    "MoreauJeanProjection": "Moreau--Jean projection",
    "PaoliSchatzman": "Paoli--Schatzman",
    "CatchingUp": "catching-up",
    "NonsmoothGeneralizedAlpha": "nonsmooth generalized-$\\alpha$",
    "D1MinusLinear": "D1-minus-linear",
    "EventDriven": "event-driven",
    "Adaptive": "adaptive",
}
_METHOD = re.compile(r"^([A-Za-z0-9]+)(?:\[(.*)\])?$")
_GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta kappa lambda mu nu xi rho sigma tau phi "
    "chi psi omega".split()
)


@dataclass(frozen=True)
class LatexTable:
    """One report table: its values, significant digits, caption and label."""

    frame: pd.DataFrame
    digits: int
    caption: str
    label: str


@dataclass(frozen=True)
class Summary:
    """The LaTeX copy of a report table longer than :data:`MAX_ROWS`: its rows (at most
    :data:`MAX_ROWS`) and a note for the caption saying what they summarise."""

    frame: pd.DataFrame
    note: str


def unit_of(header: str) -> str | None:
    """The unit a column header names at its end (``"wall time [ms]"`` -> ``"ms"``), else
    None."""
    match = _UNIT.search(str(header).strip())
    return match.group(1) if match else None


def with_unit(header: str, units: Mapping[str, str] | None = None) -> str:
    """``header`` followed by its unit in brackets: the one it names already, else the one of
    ``units`` or :data:`UNITS` for it (``_`` read as a space), else the one its words give
    (``ms``, ``ns``); unchanged when none is known."""
    header = str(header)
    if unit_of(header) is not None:
        return header
    words = header.replace("_", " ")
    given = units or {}
    unit = given.get(header, given.get(words, UNITS.get(words)))
    if unit is None:
        unit = next((u for pattern, u in _UNIT_WORDS if pattern.search(words)), None)
    return f"{header} [{unit}]" if unit else header


def escape(text: str) -> str:
    """``text`` for LaTeX: ``$...$`` segments kept as mathematics, the relations ``<=``, ``>=``,
    ``<``, ``>``, ``+/-`` and powers ``^2`` set as mathematics, the rest escaped."""
    out = []
    for part in _MATH.split(str(text)):
        if _MATH.fullmatch(part):
            out.append(part)
            continue
        for piece in _RELATION.split(part):
            if piece in _RELATIONS:
                out.append(_RELATIONS[piece])
            elif piece.startswith("^"):  # a power: h^2
                out.append(f"$^{{{piece[1:]}}}$")
            else:
                out.append("".join(_SPECIAL.get(c, c) for c in piece))
    return "".join(out)


def _split_parameters(text: str) -> list[str]:
    """``a=1,b=X[c=2,d=3]`` -> ``["a=1", "b=X[c=2,d=3]"]`` (commas inside brackets kept)."""
    pieces, depth, current = [], 0, ""
    for c in text:
        depth += (c == "[") - (c == "]")
        if c == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += c
    return [*pieces, current] if current else pieces


def _parameter_tex(parameter: str) -> str:
    key, _, value = parameter.partition("=")
    words = escape(key.replace("_", " "))
    if value in ("True", "False"):
        return words if value == "True" else f"not {words}"
    nested = method_tex(value)
    if nested is not None:
        return f"{words} {nested}"
    try:
        number = f"{float(value):.3g}"
    except ValueError:
        return f"{words} {escape(value)}"
    if key in _GREEK:
        return f"$\\{key} = \\num{{{number}}}$"
    return f"{words} $=$ \\num{{{number}}}"


def method_tex(name: str) -> str | None:
    """A method's name (``MoreauJean[theta=0.5,implicit=True]``) as a paper writes it
    (``Moreau--Jean ($\\theta = \\num{0.5}$, implicit)``): the class by :data:`METHOD_NAMES`,
    each parameter after it in parentheses (a Greek name as its letter, a flag by its name,
    numbers by siunitx); None when ``name`` is no built-in method's."""
    match = _METHOD.match(str(name).strip())
    if match is None or match.group(1) not in METHOD_NAMES:
        return None
    text = METHOD_NAMES[match.group(1)]
    if match.group(2):
        text += " (" + ", ".join(_parameter_tex(p) for p in _split_parameters(match.group(2)))
        text += ")"
    return text


def number_cell(value: object, digits: int) -> str | None:
    """A numeric cell as siunitx reads it, or None when the value is not a number.

    Integer values (counts) are printed in full, other finite values with ``digits`` significant
    digits, NaN as None (an en dash in the table).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.{digits}g}"
    return text.replace("e+", "e")


def table_format(cells: list[str]) -> str:
    """siunitx's ``table-format`` that holds every cell (``-1.23e-4`` style)."""
    sign = integer = fraction = exponent = 0
    exponent_sign = False
    for cell in cells:
        match = _NUMBER.match(cell)
        if match is None:
            continue
        sign |= bool(match.group(1))
        integer = max(integer, len(match.group(2)))
        fraction = max(fraction, len(match.group(3) or ""))
        if match.group(5):
            exponent = max(exponent, len(match.group(5)))
            exponent_sign |= match.group(4) == "-"
    spec = ("-" if sign else "") + str(max(integer, 1))
    if fraction:
        spec += f".{fraction}"
    if exponent:
        spec += "e" + ("-" if exponent_sign else "") + str(exponent)
    return spec


def interval_text(values: Sequence[float] | pd.Series, digits: int = 3) -> str:
    """The median of ``values`` and their range as a cell, ``median [smallest, largest]``
    (``digits`` significant digits, integer values in full; one value alone; NaN and infinite
    values left out, "-" when none is left)."""
    array = np.asarray(values, dtype=float) + 0.0  # -0.0 printed as 0
    array = array[np.isfinite(array)]
    if array.size == 0:
        return "-"
    counts = bool(np.all(array == np.round(array)) and np.all(np.abs(array) < 1e15))

    def text(x: float) -> str:  # counts in full (a median of two may end in .5)
        return f"{x:.15g}" if counts else f"{x:.{digits}g}"

    if array.size == 1 or array.min() == array.max():
        return text(array[0])
    return f"{text(float(np.median(array)))} [{text(array.min())}, {text(array.max())}]"


def _evenly(count: int, keep: int) -> list[int]:
    """``keep`` indices of ``range(count)`` evenly spread, the first and the last among them."""
    return sorted({round(x) for x in np.linspace(0, count - 1, keep)})


def summarise(
    frame: pd.DataFrame,
    keys: Sequence[str],
    setting: str,
    values: Sequence[str],
    *,
    digits: int = 3,
    max_rows: int = MAX_ROWS,
    counted: str = "runs",
) -> Summary:
    """A table of at most ``max_rows`` rows from ``frame``: one row per nominal setting.

    Parameters
    ----------
    frame
        The report table (one row per run).
    keys
        The columns naming a sweep (e.g. problem and method).
    setting
        The column of the sweep's nominal setting (e.g. the nominal step or the tolerance; no
        missing values): the rows sharing ``keys`` and ``setting`` (phase copies, seeds,
        repeats) make one row of the summary.
    values
        The columns summarised: each cell the median over the setting's rows and their range,
        ``median [smallest, largest]`` (:func:`interval_text`).
    digits
        Significant digits of the cells.
    max_rows
        Most rows: when the settings are more, each sweep keeps as many of its settings as
        ``max_rows`` allows for all sweeps, evenly spread from its first to its last in sorted
        order (the note says so).
    counted
        What a row of ``frame`` is (the name of the column counting them, ``[-]``).

    Raises
    ------
    ValueError
        If a column is missing, a value column names no unit (:func:`with_unit`), ``setting``
        has missing values, or the sweeps are more than
        ``max_rows / 2`` (no two settings of each fit).
    """
    keys, values = list(keys), list(values)
    missing = [c for c in [*keys, setting, *values] if c not in frame]
    if missing:
        raise ValueError(f"summarise: frame has no column {missing}")
    unitless = [name for name in values if unit_of(with_unit(name)) is None]
    if unitless:
        raise ValueError(f"summarise: values {unitless} name no unit ('name [unit]')")
    if frame[setting].isna().any():
        raise ValueError(f"summarise: setting column {setting!r} has missing values")
    rows = []
    for key, group in frame.groupby([*keys, setting], sort=False):
        row = dict(zip([*keys, setting], key, strict=True))
        row[f"{counted} [-]"] = len(group)
        row.update({name: interval_text(group[name], digits) for name in values})
        rows.append(row)
    table = pd.DataFrame(rows, columns=[*keys, setting, f"{counted} [-]", *values])
    thinned = thin(table, keys, setting, max_rows=max_rows)
    note = f"per {setting} the median over its {counted} [smallest, largest]"
    return Summary(thinned.frame, "; ".join(filter(None, [note, thinned.note])))


def thin(
    frame: pd.DataFrame, keys: Sequence[str], setting: str, *, max_rows: int = MAX_ROWS
) -> Summary:
    """``frame`` (one row per sweep and setting) in at most ``max_rows`` rows: unchanged when
    it fits, else each sweep (the rows sharing ``keys``) keeps as many settings as fit for all
    sweeps, evenly spread from its smallest ``setting`` to its largest (the note says so; ""
    when unchanged).

    Raises
    ------
    ValueError
        If ``setting`` has missing values, or the sweeps are more than ``max_rows / 2`` (no
        two settings of each fit).
    """
    if frame[setting].isna().any():
        raise ValueError(f"thin: setting column {setting!r} has missing values")
    if len(frame) <= max_rows:
        return Summary(frame, "")
    sweeps = [group for _, group in frame.groupby(list(keys), sort=False)]
    keep = max_rows // len(sweeps)
    if keep < 2:
        raise ValueError(
            f"thin: {len(sweeps)} sweeps do not fit {max_rows} rows with two settings each"
        )
    kept = []
    for sweep in sweeps:
        ordered = sweep.sort_values(setting, kind="stable")
        kept.append(ordered.iloc[_evenly(len(ordered), min(keep, len(ordered)))])
    note = (
        f"at most {keep} settings of each sweep, evenly spread from its smallest {setting} to "
        "its largest"
    )
    return Summary(pd.concat(kept, ignore_index=True), note)


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def _is_measured(column: pd.Series) -> bool:
    """Whether a column holds measured values that need a unit: numbers, or counts as text
    (``"12"``, a capped count ``">= 100000"``, "-" for none)."""
    if _is_numeric(column):
        return True
    cells = [str(v) for v in column if not _missing(v) and str(v) != "-"]
    return bool(cells) and all(_COUNT.match(c) for c in cells)


def _header(name: object) -> str:
    text = str(name)
    return escape(text if "$" in text else text.replace("_", " "))


def tabular(frame: pd.DataFrame, digits: int) -> str:
    """The ``tabular`` of ``frame``: numeric columns as ``S``, the others left-aligned text."""
    specs, headers, columns = [], [], []
    for name in frame.columns:
        column = frame[name]
        header = _header(name)
        bare, unit = str(name), unit_of(str(name))
        if unit is not None:
            bare = bare[: bare.rindex("[")].rstrip()
        typeset = method_tex(bare)
        if typeset is not None:  # a method's column: "MoreauJean [ns/step]"
            header = typeset + (f" [{escape(unit)}]" if unit is not None else "")
        if _is_numeric(column):
            cells = [number_cell(v, digits) for v in column]
            numbers = [c for c in cells if c is not None]
            specs.append(f"S[table-format={table_format(numbers)}]")
            headers.append("{" + header + "}")
            columns.append([c if c is not None else "{--}" for c in cells])
        else:
            specs.append("l")
            headers.append(header)
            columns.append(["--" if _missing(v) else _text_cell(v) for v in column])
    rows = [" & ".join(cells) + r" \\" for cells in zip(*columns, strict=True)]
    return "\n".join(
        [
            "\\begin{tabular}{" + " ".join(specs) + "}",
            "\\toprule",
            " & ".join(headers) + r" \\",
            "\\midrule",
            *rows,
            "\\bottomrule",
            "\\end{tabular}",
        ]
    )


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _text_cell(value: object) -> str:
    """A text cell: a method's name typeset (:func:`method_tex`; also before a parenthesis,
    ``MoreauJean (h = 0.01)``), an interval's numbers by siunitx, the rest escaped (a lower
    bound ``">= N"`` of a capped count as ``$\\ge$ N``)."""
    text = _text(value)
    interval = _INTERVAL.match(text)
    if interval:
        return "\\num{{{}}} [\\num{{{}}}, \\num{{{}}}]".format(*interval.groups())
    name, _, rest = text.partition(" ")
    typeset = method_tex(name)
    if typeset is not None and (not rest or rest.startswith("(")):  # "Name[...] (h = 0.01)"
        return typeset + (" " + escape(rest) if rest else "")
    return escape(text)


def _text(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value).replace("\n", " ")


def check(table: LatexTable) -> None:
    """Refuse a table that a page does not take.

    Raises
    ------
    ValueError
        If ``table.frame`` has more than :data:`MAX_ROWS` rows (its report gives it a
        :class:`Summary`), or a column of numbers or counts names no unit in its header.
    """
    if len(table.frame) > MAX_ROWS:
        raise ValueError(
            f"table {table.label} ({table.caption}) has {len(table.frame)} rows, more than "
            f"{MAX_ROWS}: give its report table a summary (markdown_table(..., latex=Summary))"
        )
    unitless = [
        str(name)
        for name in table.frame.columns
        if _is_measured(table.frame[name]) and unit_of(str(name)) is None
    ]
    if unitless:
        raise ValueError(
            f"table {table.label} ({table.caption}): numeric columns without a unit in their "
            f"header: {unitless} (give them with markdown_table(..., units=...))"
        )


def latex_table_text(table: LatexTable) -> str:
    """``table`` as one LaTeX ``table`` float (checked by :func:`check`; headers given their
    units by :func:`with_unit`)."""
    frame = table.frame.rename(columns=lambda name: with_unit(str(name)))
    table = LatexTable(frame, table.digits, table.caption, table.label)
    check(table)
    return "\n".join(
        [
            "\\begin{table}",
            "\\centering",
            "\\small",
            f"\\caption{{{escape(table.caption)}}}",
            f"\\label{{{table.label}}}",
            "\\begin{adjustbox}{max width=\\linewidth}",
            tabular(table.frame, table.digits),
            "\\end{adjustbox}",
            "\\end{table}",
            "",
        ]
    )
