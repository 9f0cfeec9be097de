"""Code versions: digests of the source a computed result depends on.

A cached result (a study run, a reference solution) is keyed by the digest of the core's
computational modules and of the modules that define the problem, the method and any other
callable it was produced with (with the sibling modules they import from). Editing any of them
invalidates the result; editing presentation code (command line, reports, tables) does not.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path
from typing import Any

#: Modules that only analyse or present results: they do not change a computed number.
PRESENTATION_MODULES = frozenset(
    {
        "cli.py",
        "compare.py",
        "compile_command.py",
        "files.py",
        "fitting.py",
        "long_time.py",
        "machine.py",
        "pipeline.py",
        "plotting.py",
        "plugins.py",
        "progress.py",
        "report.py",
        "results.py",
        "simulate_command.py",
        "specs.py",
        "status_command.py",
        "study.py",
        "style.py",
        "testing.py",
        "trajectory_figure.py",
        "user_errors.py",
        "validate_command.py",
    }
)


@functools.cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _digest(path: Path) -> str:
    stat = path.stat()
    return _file_digest(str(path), stat.st_mtime_ns, stat.st_size)


#: The layers of the package; every module of theirs but the presentation modules counts in a
#: code version (the runner, in the benchmarking layer, computes a run's metrics and costs).
COMPUTATIONAL_LAYERS = ("core", "analysis", "bench")


def _core_sources() -> dict[str, Path]:
    root = Path(__file__).resolve().parent.parent
    return {
        f"{root.name}.{layer}.{path.stem}": path
        for layer in COMPUTATIONAL_LAYERS
        for path in sorted((root / layer).glob("*.py"))
        if path.name not in PRESENTATION_MODULES
    }


def _module_sources(obj: Any, presentation_too: bool = False) -> dict[str, Path]:
    """Source files of the module defining ``obj`` and of the modules it draws on, transitively.

    Followed: the modules that define the functions and classes a module imports, within the
    same top-level package (so a study's reference function that imports
    ``impactbench.methods.reference_method`` depends on the methods). Not followed: imported
    module objects and, unless ``presentation_too``, the presentation modules, which change no
    computed number.
    """
    root = sys.modules[obj.__module__]
    package = root.__name__.partition(".")[0]
    root_package = Path(__file__).resolve().parent.parent.name
    presentation = {
        f"{root_package}.{layer}.{Path(name).stem}"
        for layer in COMPUTATIONAL_LAYERS
        for name in PRESENTATION_MODULES
    }
    found: dict[str, Any] = {}
    stack = [root]
    while stack:
        module = stack.pop()
        if module.__name__ in found:
            continue
        found[module.__name__] = module
        for value in vars(module).values():
            if isinstance(value, type(sys)):
                continue
            origin = getattr(value, "__module__", None)
            if not isinstance(origin, str) or origin.partition(".")[0] != package:
                continue
            dependency = sys.modules.get(origin)
            if dependency is not None and (presentation_too or origin not in presentation):
                stack.append(dependency)
    return {
        name: Path(module.__file__)
        for name, module in found.items()
        if getattr(module, "__file__", None)
    }


def source_digest(*objects: Any, stored: Any = None) -> str:
    """Hex digest of the core's computational sources and of the modules defining ``objects``.

    ``objects`` are classes or functions (None entries are skipped). ``stored``: a function
    whose output is stored with the result (a run's artefact function, which may fit or thin
    with analysis helpers): its module and every module it draws on count, the presentation
    modules included.
    """
    sources = _core_sources()
    for obj in objects:
        if obj is not None:
            sources.update(_module_sources(obj))
    if stored is not None:
        sources.update(_module_sources(stored, presentation_too=True))
    hasher = hashlib.sha256()
    for name in sorted(sources):
        hasher.update(f"{name}:{_digest(sources[name])}\n".encode())
    return hasher.hexdigest()
