"""Study definitions, one per module; ``STUDIES`` maps each study's name to its definition.

A module of this package that defines ``STUDY`` (an :class:`impactbench.bench.study.Study`) is a
study: adding a file here adds a study to ``impactbench list`` and ``impactbench run``. Installed as
the subpackage ``impactbench.studies``.
"""

from __future__ import annotations

import importlib
import pkgutil

from impactbench.bench.plugins import Registry
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
#: packages (entry-point group ``impactbench.studies``, each under its entry-point name, which
#: must be its ``name``), imported on first use (:class:`impactbench.bench.plugins.Registry`).
STUDIES = Registry(
    "impactbench.studies",
    _discover(),
    lambda name, value: isinstance(value, Study) and value.name == name,
    "an impactbench.bench.study.Study named like its entry point",
)

__all__ = ["STUDIES"]
