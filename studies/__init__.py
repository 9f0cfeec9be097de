"""Study definitions, one per module; ``STUDIES`` maps each study's name to its definition.

A module of this package that defines ``STUDY`` (an :class:`impactbench.study.Study`) is a study:
adding a file here adds a study to ``impactbench list`` and ``impactbench run``. Installed as
the subpackage ``impactbench.studies``.
"""

from __future__ import annotations

import importlib
import pkgutil

from impactbench.study import Study


def _discover() -> dict[str, Study]:
    studies = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        study = getattr(module, "STUDY", None)
        if isinstance(study, Study):
            studies[study.name] = study
    return studies


#: Every study of this package, by name (alphabetical).
STUDIES: dict[str, Study] = _discover()

__all__ = ["STUDIES"]
