"""The built-in studies, one per module; ``STUDIES`` maps each study's name to its definition.

A module of this package that defines ``STUDY`` (an :class:`impactbench.bench.study.Study`) is a
study once it is declared in pyproject.toml under the entry-point group ``impactbench.studies``,
by its study's name: ``impactbench list`` and ``impactbench run`` find the built-in studies as
they find an installed package's (:data:`impactbench.bench.plugins.STUDIES`, which is
``STUDIES`` here). Installed as the subpackage ``impactbench.studies``.
"""

from __future__ import annotations

from impactbench.bench.plugins import STUDIES

__all__ = ["STUDIES"]
