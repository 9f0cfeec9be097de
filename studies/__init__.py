"""Study definitions, one per module; ``STUDIES`` maps each study's name to its definition.

A module of this package that defines ``STUDY`` (an :class:`impactbench.bench.study.Study`) is a
study: adding a file here adds a study to ``impactbench list`` and ``impactbench run``. Installed as
the subpackage ``impactbench.studies``.
"""

from __future__ import annotations

import importlib
import pkgutil

from impactbench.bench.plugins import discover
from impactbench.bench.study import Study


def _discover() -> dict[str, Study]:
    studies = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        study = getattr(module, "STUDY", None)
        if isinstance(study, Study):
            studies[study.name] = study
    return studies


#: Every study of this package, by name (alphabetical), then those of installed third-party
#: packages (entry-point group ``impactbench.studies``, :mod:`impactbench.bench.plugins`).
STUDIES: dict[str, Study] = _discover()
STUDIES.update(
    {
        study.name: study
        for study in discover(
            "impactbench.studies",
            lambda value: isinstance(value, Study) and value.name not in STUDIES,
            "an impactbench.bench.study.Study whose name is not a built-in study's",
            STUDIES,
        ).values()
    }
)

__all__ = ["STUDIES"]
