"""What a study is: the runs of its quick and full grids, and how its report presents them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .files import check_study_name
from .runner import Run


@dataclass(frozen=True)
class Section:
    """A titled part of a study report; ``body`` is Markdown."""

    title: str
    body: str


@dataclass(frozen=True)
class StudyReport:
    """What a study's report function returns.

    Attributes
    ----------
    sections : list of Section
        The study-specific part of ``reports/<study>/README.md`` (tables, figure links).
    findings : list of str
        Key findings computed from the table, one sentence each (Markdown), repeated in the
        index ``reports/README.md``.
    """

    sections: list[Section] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Study:
    """A study definition (one module of ``studies/``, exposed as its ``STUDY``).

    Attributes
    ----------
    name : str
        Identifier used on the command line and as the report folder name: a plain identifier
        (:func:`impactbench.bench.files.check_study_name`; ValueError naming it otherwise).
    title : str
        Heading of the report.
    description : str
        What the study measures and how (Markdown paragraph).
    runs : callable
        ``runs(quick) -> list[Run]``: the quick grid (seconds; used by the tests) when ``quick``
        is true, else the full grid.
    report : callable
        ``report(table, folder) -> StudyReport``: draws the figures into ``folder`` from the
        stored table (as read back from disk) and returns the report's sections and findings.
    max_jobs : int or None
        Upper bound on parallel jobs (1 for studies whose timings would be disturbed by runs
        sharing the machine); None for no bound.
    run_timeout : float or None
        Time limit in seconds of each run (``run_timeout`` of
        :func:`impactbench.bench.runner.execute`: a run over it is stopped and recorded as
        failed); None (default) for none. ``impactbench run --run-timeout`` overrides it.
    failures_are_findings : bool
        True for a study that measures where methods fail: its failed runs are results, listed
        in its report and findings, and do not make ``impactbench run`` exit with 1 (they are
        still printed). Default False: a failed run is an error of the study.
    """

    name: str
    title: str
    description: str
    runs: Callable[[bool], list[Run]]
    report: Callable[[pd.DataFrame, Path], StudyReport]
    max_jobs: int | None = None
    run_timeout: float | None = None
    failures_are_findings: bool = False

    def __post_init__(self) -> None:
        check_study_name(self.name)
