"""Report tables as LaTeX that a paper takes as it is.

Each table of a study report is written as a ``table`` float with a caption (the report section
it belongs to) and a label (``tab:<study>-<k>``), booktabs rules, and its numeric columns as
siunitx ``S`` columns aligned on the decimal marker (their ``table-format`` computed from the
cells, counts printed as integers, missing values as an en dash). Column headers keep their
mathematics (``$\\max_t |q - q_{\\mathrm{ex}}|$``) and escape the rest. A table too wide for the
text is shrunk to the line width (adjustbox's ``max width``), never overfull.

A table of more than :data:`MAX_ROWS` rows does not fit a page: its LaTeX version is split, by
the groups of its first column where that gives parts of at most :data:`MAX_ROWS` rows, else in
consecutive parts, each a table of its own whose caption says which part it is (the full table
stays in ``results.csv``). The packages a document needs are
:data:`PREAMBLE`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Most body rows of one LaTeX table (a page of a journal at \small).
MAX_ROWS = 40
#: The packages the tables use.
PREAMBLE = "\\usepackage{booktabs}\n\\usepackage{siunitx}\n\\usepackage{adjustbox}\n"

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
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}
_MATH = re.compile(r"(\$[^$]+\$)")
_LOWER_BOUND = re.compile(r"^>= ?(\d+)$")
_NUMBER = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?)(\d+))?$")


@dataclass(frozen=True)
class LatexTable:
    """One report table: its values, significant digits, caption and label."""

    frame: pd.DataFrame
    digits: int
    caption: str
    label: str


def escape(text: str) -> str:
    """``text`` for LaTeX: ``$...$`` segments kept as mathematics, the rest escaped."""
    parts = _MATH.split(str(text))
    return "".join(
        part if _MATH.fullmatch(part) else "".join(_SPECIAL.get(c, c) for c in part)
        for part in parts
    )


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


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def tabular(frame: pd.DataFrame, digits: int) -> str:
    """The ``tabular`` of ``frame``: numeric columns as ``S``, the others left-aligned text."""
    specs, headers, columns = [], [], []
    for name in frame.columns:
        column = frame[name]
        header = escape(str(name).replace("_", " ") if "$" not in str(name) else str(name))
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
    """A text cell: a lower bound ``">= N"`` (a capped count) as ``$\\ge$ N``, the rest
    escaped."""
    text = _text(value)
    bound = _LOWER_BOUND.match(text)
    return f"$\\ge$ {bound.group(1)}" if bound else escape(text)


def _text(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value).replace("\n", " ")


def parts(frame: pd.DataFrame, max_rows: int = MAX_ROWS) -> list[pd.DataFrame]:
    """``frame`` in pieces of at most ``max_rows`` rows: by its first column's groups when each
    fits, else consecutively."""
    if len(frame) <= max_rows:
        return [frame]
    first = frame.columns[0]
    if not _is_numeric(frame[first]):
        groups = [group for _, group in frame.groupby(first, sort=False)]
        if all(len(group) <= max_rows for group in groups):
            pieces, current = [], frame.iloc[0:0]
            for group in groups:  # consecutive groups share a table while they fit
                if len(current) + len(group) > max_rows and len(current):
                    pieces.append(current)
                    current = frame.iloc[0:0]
                current = pd.concat([current, group])
            return [*pieces, current]
    return [frame.iloc[i : i + max_rows] for i in range(0, len(frame), max_rows)]


def latex_tables(table: LatexTable) -> list[str]:
    """``table`` as one or more LaTeX ``table`` floats (more when it exceeds :data:`MAX_ROWS`)."""
    pieces = parts(table.frame)
    out = []
    for k, piece in enumerate(pieces):
        caption = escape(table.caption)
        label = table.label
        if len(pieces) > 1:
            caption += f" (part {k + 1} of {len(pieces)}; the full table is in results.csv)"
            label += f"-{k + 1}"
        out.append(
            "\n".join(
                [
                    "\\begin{table}",
                    "\\centering",
                    "\\small",
                    f"\\caption{{{caption}}}",
                    f"\\label{{{label}}}",
                    "\\begin{adjustbox}{max width=\\linewidth}",
                    tabular(piece, table.digits),
                    "\\end{adjustbox}",
                    "\\end{table}",
                    "",
                ]
            )
        )
    return out
