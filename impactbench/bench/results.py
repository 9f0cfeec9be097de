"""The tidy result table of a study: one row per run, written as a reproducible CSV.

Columns, in this order:

* the run: ``study``, ``problem``, ``method`` (name with its parameters except the tolerance,
  e.g. ``MoreauJean[theta=0.5]``), ``family``, ``h`` (requested step; NaN for adaptive methods),
  ``h_nominal`` (the nominal step of the run's phase family, :class:`impactbench.bench.runner.Run`;
  equal to ``h`` outside phase families, NaN for adaptive methods), ``tolerance`` (the swept
  tolerance of an adaptive method; NaN otherwise), ``t_end``,
  ``output_every``, ``repeats``, then ``problem.<name>`` and ``method.<name>`` for every
  constructor parameter given (lists and dicts as JSON);
* the metrics (:data:`impactbench.analysis.metrics.METRICS` order; NaN for a failed run);
* the cost: ``h_used`` (the step actually used), ``steps``, ``force_evaluations``, ``impacts``
  (impact events, one definition for every method: :mod:`impactbench.analysis.impact_events`),
  ``impact_log_entries`` (the method's raw impact log), ``contact_phases`` and ``contact_time``
  (persistent contact), ``impacts_capped`` (the impact log overflowed its capacity: ``impacts``,
  ``contact_phases`` and ``contact_time`` are lower bounds);
* ``status`` and ``error``;
* provenance: ``key``, ``code_version``, ``git_revision`` and the versions ``python``,
  ``impactbench``, ``numpy``, ``scipy``, ``numba``;
* timing, last: :data:`TIMING_COLUMNS` (``wall_time_repeats``: the time of every timed repeat,
  a JSON list; ``timed_repeats`` and ``inner_runs``: how many repeats, and simulations per
  repeat, :mod:`impactbench.bench.runner`).

Rows follow the order of the study's runs (:func:`impactbench.bench.runner.expand` order), which
does not depend on the order in which the runs finished. Floats are written with the shortest repr
that reads back exactly, so the same study run twice, serially or in parallel, gives a
byte-identical table apart from the timing columns (compare with ``timing=False``). The time the
table was written and how it was produced go in a separate provenance file
(:func:`write_provenance`).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.metrics import METRICS
from ..core._files import CacheWarning, read_regular, write_atomic
from .files import check_study_folder, read_manifest, replace_group
from .runner import FAILED, PACKAGES, TIMING_FIELDS, Outcome, Run

#: The timing columns that count (integers).
TIMING_COUNTS = ("timed_repeats", "inner_runs")

RUN_COLUMNS = (
    "study",
    "problem",
    "method",
    "family",
    "h",
    "h_nominal",
    "tolerance",
    "t_end",
    "output_every",
    "repeats",
)
COST_COLUMNS = (
    "h_used",
    "steps",
    "force_evaluations",
    "impacts",
    "impact_log_entries",
    "contact_phases",
    "contact_time",
    "impacts_capped",
)
STATUS_COLUMNS = ("status", "error")
PROVENANCE_COLUMNS = (
    "key",
    "code_version",
    "git_revision",
    "python_version",
    *(f"{name}_version" for name in PACKAGES),
)
#: Columns that change from one execution to the next; always the last ones.
TIMING_COLUMNS = TIMING_FIELDS


def _cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _number(value: Any) -> float:
    return math.nan if value is None else value


def build_table(study: str, runs: Sequence[Run], outcomes: Sequence[Outcome]) -> pd.DataFrame:
    """One row per run (see the module docstring for the columns).

    Parameters
    ----------
    study : str
        Study name (the ``study`` column).
    runs, outcomes : sequence
        The runs and what :func:`impactbench.bench.runner.execute` returned for them.
    """
    rows = []
    parameters: dict[str, None] = {}
    for run, outcome in zip(runs, outcomes, strict=True):
        row: dict[str, Any] = {
            "study": study,
            "problem": run.problem_name,
            "method": run.method_name,
            "family": run.method.family,
            "h": _number(run.h),
            "h_nominal": _number(run.nominal_h),
            "tolerance": _number(run.tolerance_value),
            "t_end": run.t_end,
            "output_every": run.output_every,
            "repeats": run.repeats,
        }
        for prefix, kwargs in (("problem", run.problem_kwargs), ("method", run.method_kwargs)):
            for name, value in kwargs.items():
                row[f"{prefix}.{name}"] = _cell(value)
                parameters.setdefault(f"{prefix}.{name}")
        row.update(outcome.metrics)
        row.update({name: _number(value) for name, value in outcome.cost.items()})
        row.update(status=outcome.status, error=outcome.error)
        row.update(key=outcome.key, code_version=outcome.code_version)
        row.update(outcome.provenance)
        row.update(outcome.timing)
        row["wall_time_repeats"] = _cell(row["wall_time_repeats"])  # a list, as JSON
        rows.append(row)
    problem_params = [name for name in parameters if name.startswith("problem.")]
    method_params = [name for name in parameters if name.startswith("method.")]
    metrics = [name for name in METRICS if any(name in run.metrics for run in runs)]
    columns = [
        *RUN_COLUMNS,
        *problem_params,
        *method_params,
        *metrics,
        *COST_COLUMNS,
        *STATUS_COLUMNS,
        *PROVENANCE_COLUMNS,
        *TIMING_COLUMNS,
    ]
    table = pd.DataFrame(rows, columns=columns)
    for name in (
        "h",
        "h_nominal",
        "tolerance",
        "h_used",
        "contact_time",
        *metrics,
        *(name for name in TIMING_COLUMNS if name not in ("wall_time_repeats", *TIMING_COUNTS)),
    ):
        table[name] = table[name].astype(float)
    counts = ("steps", "force_evaluations", "impacts", "impact_log_entries", "contact_phases")
    for name in (*counts, *TIMING_COUNTS):
        table[name] = table[name].astype("Int64")
    table["impacts_capped"] = table["impacts_capped"].astype("boolean")
    return table


def format_float(value: float) -> str:
    """The shortest text that reads back as exactly ``value`` (Python's float repr)."""
    return repr(float(value))


def table_csv(table: pd.DataFrame, *, timing: bool = True) -> str:
    """The table as CSV text (shortest exact float repr, "\\n" line ends, empty for NaN).

    With ``timing=False`` the :data:`TIMING_COLUMNS` are left out: the text is then identical
    for two executions of the same study.
    """
    if not timing:
        table = table.drop(columns=[name for name in TIMING_COLUMNS if name in table])
    return table.to_csv(index=False, float_format=format_float, lineterminator="\n", na_rep="")


#: Suffix of a table stored gzip-compressed (``pandas.read_csv`` and ``zcat`` read it as it is).
GZIP_SUFFIX = ".gz"


def write_table(table: pd.DataFrame, path: Path | str, *, timing: bool = True) -> None:
    """Write :func:`table_csv` atomically to ``path``; gzip-compressed when ``path`` ends in
    :data:`GZIP_SUFFIX` (level 9, no time stamp or file name in the header: the same table
    gives the same bytes)."""
    path = Path(path)
    text = table_csv(table, timing=timing)
    if path.name.endswith(GZIP_SUFFIX):
        write_atomic(path, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    else:
        write_atomic(path, text)


#: Largest stored table read (bytes).
MAX_TABLE_BYTES = 1 << 30

#: Name of a study's table in its folder: one row per run, gzip-compressed CSV
#: (:func:`write_table`; ``pandas.read_csv`` reads it as it is).
TABLE_FILE = "results.csv" + GZIP_SUFFIX
#: Name of the table an older version wrote uncompressed (read when there is no compressed one,
#: replaced by :func:`compress_table`).
PLAIN_TABLE_FILE = "results.csv"


def table_path(folder: Path | str) -> Path:
    """The stored table of the study folder ``folder``: :data:`TABLE_FILE`, or the
    :data:`PLAIN_TABLE_FILE` an older version wrote when there is no compressed one."""
    folder = Path(folder)
    if not (folder / TABLE_FILE).exists() and (folder / PLAIN_TABLE_FILE).is_file():
        return folder / PLAIN_TABLE_FILE
    return folder / TABLE_FILE


def compress_table(folder: Path | str) -> bool:
    """Store compressed the table an older version wrote uncompressed in the study folder
    ``folder``: ``results.csv`` is written as ``results.csv.gz`` (the same bytes, compressed as
    :func:`write_table` does) unless a compressed table is already there, then removed, so that
    a folder never holds two tables. Returns whether there was one to replace.
    """
    folder = check_study_folder(folder)
    plain = folder / PLAIN_TABLE_FILE
    if not plain.is_file() or plain.is_symlink():
        return False
    if not (folder / TABLE_FILE).exists():
        data = read_regular(plain, MAX_TABLE_BYTES)
        write_atomic(folder / TABLE_FILE, gzip.compress(data, compresslevel=9, mtime=0))
    plain.unlink()
    return True


#: Largest provenance sidecar read (bytes).
MAX_PROVENANCE_BYTES = 1 << 24


def read_table(path: Path | str) -> pd.DataFrame:
    """Read a table written by :func:`write_table`: a regular file, opened without blocking
    (:func:`impactbench.core._files.read_regular`: a FIFO or a device is refused, not read),
    decompressed when its name ends in :data:`GZIP_SUFFIX`.

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ValueError
        Naming ``path`` when it is not a regular file, is larger than :data:`MAX_TABLE_BYTES`
        (stored or decompressed) or is not valid gzip.
    """
    try:
        data = read_regular(path, MAX_TABLE_BYTES)
    except ValueError as error:
        raise ValueError(f"{path}: {error}; a study's table must be a regular file") from None
    if str(path).endswith(GZIP_SUFFIX):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                data = stream.read(MAX_TABLE_BYTES + 1)
        except (OSError, EOFError) as error:
            raise ValueError(f"{path}: not a gzip-compressed table ({error})") from None
        if len(data) > MAX_TABLE_BYTES:
            raise ValueError(
                f"{path}: larger than {MAX_TABLE_BYTES} bytes decompressed; a study's table is "
                "at most that"
            )
    return pd.read_csv(io.BytesIO(data))


def write_provenance(path: Path | str, **info: Any) -> None:
    """Write the sidecar of a table (JSON, sorted keys): when and how it was produced."""
    text = json.dumps(info, indent=2, sort_keys=True, default=str) + "\n"
    write_atomic(Path(path), text)


def read_provenance(path: Path | str) -> dict[str, Any]:
    """Read a provenance sidecar; an empty dict when there is none, or (with a
    :class:`impactbench.CacheWarning`) when it is not a JSON object or not a regular file (a
    FIFO or a device is not read: :func:`impactbench.core._files.read_regular`)."""
    try:
        info = json.loads(read_regular(path, MAX_PROVENANCE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, RecursionError) as error:
        info = error
    if not isinstance(info, dict):
        warnings.warn(
            f"ignoring {path}: not a JSON object ({info!r:.100})", CacheWarning, stacklevel=2
        )
        return {}
    return info


#: Suffix of the stored artefact tables: ``<folder>/<name>.artefact.csv.gz``, gzip-compressed
#: CSV (:func:`write_table`): the trajectories' samples they hold take a fraction of the text.
ARTEFACT_SUFFIX = ".artefact.csv" + GZIP_SUFFIX
#: Suffix of the artefact tables written uncompressed before (read when there is no compressed
#: one, replaced by :func:`compress_artefacts`).
PLAIN_ARTEFACT_SUFFIX = ".artefact.csv"


class MissingArtefactError(FileNotFoundError):
    """A report needs a run's artefact that is not stored: the run must be redone."""


def write_artefacts(outcomes: Sequence[Outcome], folder: Path | str) -> list[str]:
    """Write the runs' artefacts, one table per name ``<folder>/<name>.artefact.csv.gz``.

    Each table stacks the frames of that name of every finished run, in the order of
    ``outcomes``, after a first column ``key`` (the run's cache key, as in the study table).
    The tables this function wrote before (the folder's manifest,
    :func:`impactbench.bench.files.replace_group`) of names no run produced any more are
    removed; no other file is. Returns the names written.
    """
    folder = Path(folder)
    frames: dict[str, list[pd.DataFrame]] = {}
    for outcome in outcomes:
        if outcome.status == FAILED:
            continue
        for name, columns in outcome.artefacts.items():
            frame = pd.DataFrame(columns)
            frame.insert(0, "key", outcome.key)
            frames.setdefault(name, []).append(frame)
    check_study_folder(folder)
    for name, parts in frames.items():
        write_table(pd.concat(parts, ignore_index=True), folder / f"{name}{ARTEFACT_SUFFIX}")
    replace_group(folder, "artefacts", [f"{name}{ARTEFACT_SUFFIX}" for name in frames])
    return sorted(frames)


def read_artefact(
    table: pd.DataFrame, folder: Path | str, name: str, *, required: Sequence[str] | None = None
) -> pd.DataFrame:
    """The stored artefact ``name`` of the runs of ``table`` (rows of other keys dropped).

    Parameters
    ----------
    table : DataFrame
        The study table (columns ``key``, ``status``, ``study``, ``problem``, ``method``, ``h``).
    folder : path
        The study's folder.
    name : str
        Artefact name.
    required : sequence of str, optional
        Keys whose artefact must be present (default: every run of ``table`` not failed).

    Raises
    ------
    MissingArtefactError
        Naming the first run without it and the command that redoes it.
    """
    path = Path(folder) / f"{name}{ARTEFACT_SUFFIX}"
    if not path.exists() and (Path(folder) / f"{name}{PLAIN_ARTEFACT_SUFFIX}").exists():
        path = Path(folder) / f"{name}{PLAIN_ARTEFACT_SUFFIX}"  # written uncompressed before
    stored = read_table(path) if path.exists() else pd.DataFrame({"key": []})
    if required is None:
        required = list(table.loc[table["status"] != FAILED, "key"])
    stored_keys = set(stored["key"].tolist())
    missing = [key for key in required if key not in stored_keys]
    if missing:
        row = table[table["key"] == missing[0]].iloc[0]
        study = row.get("study", "the study")
        raise MissingArtefactError(
            f"{len(missing)} run(s) of {study} have no stored {name} in {path}, e.g. "
            f"{row['problem']} {row['method']} h={row.get('h')}: rerun `impactbench run {study}` "
            "(runs whose artefacts are in the run cache are not recomputed)"
        )
    return stored[stored["key"].isin(set(table["key"].tolist()))].reset_index(drop=True)


def compress_artefacts(folder: Path | str) -> list[str]:
    """Store compressed the artefact tables the project wrote uncompressed in ``folder``.

    Each ``<name>.artefact.csv`` of the manifest's artefact group
    (:func:`impactbench.bench.files.replace_group`) is written as ``<name>.artefact.csv.gz``,
    the same table, and the manifest then records the compressed one, which deletes the
    uncompressed one; a file of the user's (not in the manifest) is not touched. Returns the
    names compressed.
    """
    folder = check_study_folder(folder)
    recorded = read_manifest(folder).get("artefacts", [])
    plain = [
        name
        for name in recorded
        if name.endswith(PLAIN_ARTEFACT_SUFFIX) and (folder / name).is_file()
    ]
    if not plain:
        return []
    for name in plain:
        data = read_regular(folder / name, MAX_TABLE_BYTES)
        write_atomic(folder / f"{name}{GZIP_SUFFIX}", gzip.compress(data, 9, mtime=0))
    kept = [name for name in recorded if name not in plain]
    replace_group(folder, "artefacts", [*kept, *(f"{name}{GZIP_SUFFIX}" for name in plain)])
    return plain
