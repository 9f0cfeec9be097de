"""The studies of a reports folder that were run from a study file (``impactbench run
path/to/study.py``): ``impactbench report`` rebuilds their reports too, loading each file
that the table's ``provenance.json`` records (``study_file``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plugins import load_study_file
from .report import PROVENANCE_FILE
from .results import PLAIN_TABLE_FILE, TABLE_FILE, read_provenance


def file_studies(output: Path, usage_error: type[Exception]) -> tuple[dict[str, Any], list[str]]:
    """The studies of the tables in ``output`` that are not built-in or plug-ins, by name,
    loaded from the study file their provenance records, and a note for each table left out
    (its file not recorded, gone, or defining another study) saying how to report it.

    ``usage_error`` is raised for a recorded file that is not a valid study file.
    """
    from .plugins import STUDIES

    found: dict[str, Any] = {}
    notes: list[str] = []
    if not output.is_dir():
        return found, notes
    tables = [*output.glob(f"*/{TABLE_FILE}"), *output.glob(f"*/{PLAIN_TABLE_FILE}")]
    for folder in sorted({path.parent for path in tables}):
        if folder.name in STUDIES:
            continue
        recorded = read_provenance(folder / PROVENANCE_FILE).get("study_file")
        study = None
        if isinstance(recorded, str) and Path(recorded).is_file():
            try:
                study = load_study_file(recorded)
            except ValueError as error:
                raise usage_error(str(error)) from None
        if study is None or study.name != folder.name:
            notes.append(
                f"no report for {folder}: its study is not built-in and its study file "
                f"({recorded or 'not recorded'}) cannot be loaded; pass the file defining it: "
                f"impactbench report --output {output} path/to/study.py"
            )
            continue
        found[study.name] = study
    return found, notes
