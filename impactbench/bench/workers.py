"""What worker processes need to perform a study's runs: the runs' modules, and a local cluster.

A run travels to a worker as bytes (:func:`ship`), unpickled there by :func:`receive` after the
folders its modules were imported from are on the worker's ``sys.path``
(:func:`import_roots`): a study file that imports modules sitting beside it (``wavy.py``
holding the problem, ``symeuler.py`` the method) runs in loky and Dask workers alike, although
those workers never imported the study. A module a worker still cannot import (absent on a
remote machine, deleted since) makes that run a failed outcome whose message names the module,
instead of a broken pool that says only that a task "failed to un-serialize".

A problem given as an instance (``ib.compare(WavyFloorBall(a=0.1), ...)``, a study's
``Case(problem=instance, ...)``) travels in its runs' parameters: :func:`pickled_problem` packs
it, with the digest of its class's source (editing that source changes the runs' cache keys),
and :func:`problem_from_pickle`, the runs' problem factory, unpacks it in the worker.

``--backend dask`` without a scheduler address runs on a :func:`local_cluster` of this machine.
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cloudpickle


class UnshippableRun(RuntimeError):
    """A run that a worker could not unpickle (the message names the missing module)."""


def import_root(obj: Any) -> str | None:
    """The folder that the top-level module or package of ``obj``'s module was imported from
    (the ``sys.path`` entry that finds it: ``/x`` for ``/x/wavy.py`` or ``/x/pkg/__init__.py``),
    or None when it has no source file."""
    name = getattr(obj, "__module__", None)
    top = sys.modules.get(name.partition(".")[0]) if isinstance(name, str) else None
    file = getattr(top, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    return str(path.parent.parent if path.stem == "__init__" else path.parent)


def import_roots(runs: Iterable[Any]) -> tuple[str, ...]:
    """The folders the runs' problem, method, reference and artefact functions come from
    (:func:`import_root`), sorted. A worker appends them to its path: names it can import
    already keep their meaning."""
    roots = set()
    for run in runs:
        for obj in (run.problem, run.method, run.reference, run.artefact):
            root = import_root(obj) if obj is not None else None
            if root is not None:
                roots.add(root)
    return tuple(sorted(roots))


def ship(run: Any) -> bytes:
    """``run`` pickled for a worker (cloudpickle: a study file's functions by value)."""
    return cloudpickle.dumps(run)


def receive(payload: bytes, folders: Iterable[str]) -> Any:
    """The run of :func:`ship`, unpickled after appending ``folders`` to ``sys.path``.

    Raises
    ------
    UnshippableRun
        When unpickling fails, naming the module that could not be imported, if that is why.
    """
    for folder in folders:
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return cloudpickle.loads(payload)
    except Exception as error:  # noqa: BLE001 - reported as the run's failure
        cause = f"{type(error).__name__}: {error}"
        module = getattr(error, "name", None) if isinstance(error, ImportError) else None
        if module:
            raise UnshippableRun(
                f"the worker cannot import module {module!r}, which this run needs ({cause}); "
                "a study file's own modules must sit in its folder (on the workers' path: "
                f"{', '.join(folders) or 'none'}) or be installed where the workers run"
            ) from None
        raise UnshippableRun(f"the run could not be unpickled in the worker: {cause}") from None


def pickled_problem(problem: Any) -> dict[str, str]:
    """The parameters of :func:`problem_from_pickle` that rebuild ``problem`` (an instance):
    ``pickled``, its cloudpickle bytes in base64, and ``source``, the digest of the source of
    its class's module (:func:`impactbench.core.versioning.source_digest`), so that a run's
    cache key changes with that source even when the class is pickled by reference.

    Raises
    ------
    ValueError
        When the instance cannot be pickled (the message says why).
    """
    from ..core.versioning import source_digest

    try:
        payload = cloudpickle.dumps(problem)
    except Exception as error:  # noqa: BLE001 - any pickling failure, named
        raise ValueError(
            f"problem {problem!r:.100} cannot be pickled for the workers "
            f"({type(error).__name__}: {error}): pass its class and parameters instead"
        ) from None
    return {
        "pickled": base64.b64encode(payload).decode("ascii"),
        "source": source_digest(type(problem))[:16],
    }


def problem_from_pickle(pickled: str, source: str) -> Any:
    """The problem instance packed by :func:`pickled_problem` (``source`` is only part of the
    runs' cache keys)."""
    return cloudpickle.loads(base64.b64decode(pickled))


def local_workers(jobs: int) -> int:
    """Worker processes of a local cluster for ``jobs`` (-1: one per CPU)."""
    return (os.cpu_count() or 1) if jobs == -1 else jobs


@contextmanager
def local_cluster(jobs: int) -> Iterator[str]:
    """A Dask cluster of :func:`local_workers` processes (one thread each) on this machine,
    listening on the loopback interface only, without a dashboard; yields its address."""
    try:
        from distributed import LocalCluster
    except ImportError:
        raise ValueError(
            "the dask backend needs the distributed package (pip install 'impactbench[dask]')"
        ) from None
    with LocalCluster(
        n_workers=local_workers(jobs),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        protocol="tcp",
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address
