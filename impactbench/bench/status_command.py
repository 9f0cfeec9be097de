"""``impactbench status``: whether each study's stored table is at the code's current version.

A study is *current* when the ``code_digest`` of its provenance (``<output>/<study>/
provenance.json``, written by :func:`impactbench.run_study`) equals the digest of its runs
now (:func:`impactbench.bench.pipeline.code_digest`: their cache keys, which hash each run's
parameters and the source it depends on, :mod:`impactbench.core.versioning`), *stale* when it
differs or is not recorded, and *not run* without a provenance file. The runs are expanded for
the grid the table was made with (quick or full); nothing is run. ``impactbench run --stale``
reruns exactly the stale studies.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .pipeline import DEFAULT_OUTPUT, code_digest
from .plugins import study_runs
from .report import PROVENANCE_FILE
from .results import read_provenance
from .study import Study

CURRENT, STALE, NOT_RUN = "current", "stale", "not run"


def study_state(study: Study, output: Path) -> str:
    """:data:`CURRENT`, :data:`STALE` or :data:`NOT_RUN`: the state of ``study``'s stored
    table in the folder ``output`` (module docstring)."""
    provenance = read_provenance(output / study.name / PROVENANCE_FILE)
    if not provenance:
        return NOT_RUN
    stored = provenance.get("code_digest")
    runs = study_runs(study, provenance.get("grid") == "quick")
    return CURRENT if stored == code_digest(runs) else STALE


def stale_studies(studies: Mapping[str, Study], output: Path) -> dict[str, Study]:
    """The studies of ``studies`` whose table in ``output`` is stale."""
    return {name: s for name, s in studies.items() if study_state(s, output) == STALE}


def _status(
    args: argparse.Namespace, studies_of: Callable[[list[str]], Mapping[str, Study]]
) -> int:
    output = args.output or DEFAULT_OUTPUT["full"]
    studies = studies_of(args.studies)
    width = max(map(len, studies), default=0)
    for name, study in studies.items():
        state = study_state(study, output)
        print(f"{name:<{width}}  {state}")
    return 0


def add_parser(commands: Any, studies_of: Callable[[list[str]], Mapping[str, Study]]) -> None:
    """Add the ``status`` subcommand (``studies_of``: the studies named on the command line,
    every study when none is)."""
    status = commands.add_parser(
        "status",
        help="list each study's stored table as current, stale (made by other code) or not run",
        description="For each study, compare the code digest recorded in "
        "OUTPUT/STUDY/provenance.json with the digest of its runs at the code's current "
        "version (their cache keys: parameters and source digests); nothing is run. "
        "`impactbench run --stale` reruns the stale studies.",
    )
    status.add_argument(
        "studies",
        nargs="*",
        metavar="STUDY",
        help="study names, or paths of .py files defining STUDY (default: every study)",
    )
    status.add_argument(
        "--output", type=Path, default=None, help="reports folder (default: reports)"
    )
    status.set_defaults(handler=lambda args: _status(args, studies_of), parser=status)
