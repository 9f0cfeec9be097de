"""Reference solutions: the exact solution where one exists, else a cached accurate run.

:func:`reference` returns the solution that runs are measured against (docs/design.md section 7).
For a problem with a closed form it is ``problem.exact_solution``. Otherwise it is a
high-accuracy run of the given method with dense output (typically
``impactbench.methods.reference_method()``: DOP853 event-driven at rtol 1e-12), stored on disk so
a study computes it once. The cache key is a digest of the problem (class and every attribute),
the horizon, the method's name and parameters, and the code version of the core, the problem's
module and the method's module (:mod:`impactbench.core.versioning`): editing any of them recomputes
it.

Cache location: ``$IMPACTBENCH_REFERENCE_DIR`` if set, else
``$XDG_CACHE_HOME/impactbench/references`` (default ``~/.cache/impactbench/references``).
Clear it by deleting that folder (or one ``<key>.npz`` file in it); ``use_cache=False`` bypasses
it.

Entries are data, never code (a cache folder is shared and copied between machines). An entry
``<key>.npz`` is an uncompressed NumPy archive, written atomically, read member by member
without unpickling (:func:`impactbench.core._files.read_npz`). It holds ``header``, a JSON text
(schema version, key, the description the key was hashed from, the reference's
``parameters`` and the SHA-256 ``checksum`` of the header and the arrays), and the arrays of
the dense output: ``breaks`` (k + 1,), ``values`` (k, d + 1, 2 n) and ``impacts`` (m,),
float64 (:class:`impactbench.DenseOutput`). On load the file must be a regular file (a FIFO or
a link to a device is refused unread), the checksum must match (it finds corruption and edits,
not a writer who recomputes it: docs/cache.md), the header must match the requested reference
exactly and the arrays must be finite, of these shapes, and cover [t0, t_end] with a valid
dense output; an entry that fails any check, and a pickle left by an older version
(``<key>.pkl``, never opened), is ignored with a :class:`impactbench.CacheWarning` and
recomputed. A cache that cannot be written is reported the
same way; the reference is then returned without being stored.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core._files import CacheWarning, read_npz, write_atomic
from ..core.dense import DenseOutput
from ..core.method import Method
from ..core.problem import Problem
from ..core.simulate import simulate
from ..core.trajectory import Status, Trajectory
from ..core.versioning import source_digest

State = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

#: Version of the stored form of a reference (the ``schema`` of its header).
SCHEMA_VERSION = 3

#: Members of a stored reference: the JSON header and the arrays of its dense output.
_MEMBERS = ("header", "breaks", "values", "impacts")

#: A reference run at relative tolerance rtol claims an accuracy of RUN_ACCURACY_FACTOR rtol in
#: its states: its global error is its local tolerance accumulated over the steps and impacts
#: of the horizon. For the DOP853 reference at rtol 1e-12 this is the 1e-9 that
#: tests/test_reference.py checks on the double pendulum's state at T (a 100x tighter tolerance
#: moves it by less).
RUN_ACCURACY_FACTOR = 1e3


def claimed_accuracy(method: Method) -> float:
    """The accuracy a reference run of ``method`` claims: 1e3 rtol, NaN without an rtol."""
    rtol = method.parameters().get("rtol")
    return math.nan if rtol is None else RUN_ACCURACY_FACTOR * float(rtol)


@dataclass(frozen=True)
class Reference:
    """The solution a run is compared with.

    Attributes
    ----------
    kind : str
        ``"exact"`` or the name of the reference run's method.
    state : callable
        ``state(t) -> (q, v)``, arrays of shape (len(t), n), at times ``t`` (an array).
    impact_times : ndarray or None
        Times of the reference impacts in [t0, T], increasing; None when unknown.
    parameters : dict
        How it was obtained: for a reference run the method's name and parameters, the
        horizon, its cost and the code version and cache key (empty for the exact solution).
    accuracy : float
        The absolute error it claims in its states (max norm over q and v, any time): 0 for a
        closed form (exact up to round-off); for a run of a method with a relative tolerance
        rtol, :data:`RUN_ACCURACY_FACTOR` rtol (see there); NaN when it claims nothing (a
        trajectory without tolerance, interpolated linearly). Errors of a run below ten times
        this say nothing about the run (:func:`impactbench.analysis.fitting.error_floor`).
    """

    kind: str
    state: State
    impact_times: np.ndarray | None
    parameters: dict[str, Any] = field(default_factory=dict)
    accuracy: float = 0.0

    @classmethod
    def exact(cls, problem: Problem, t_end: float) -> Reference:
        """The closed form of ``problem`` (``problem.exact_solution``).

        The impact times come from ``problem.impact_times(t_end)`` when the problem has that
        method (all built-in problems with a closed form do), else they are unknown.

        Raises
        ------
        ValueError
            If the problem has no exact solution.
        """
        if not problem.has_exact_solution:
            raise ValueError(f"problem {problem.name!r} has no exact solution")
        impact_times = getattr(problem, "impact_times", None)
        times = None if impact_times is None else np.asarray(impact_times(t_end), dtype=float)
        return cls("exact", problem.exact_solution, times)

    @classmethod
    def from_trajectory(cls, trajectory: Trajectory) -> Reference:
        """A reference run: its dense output when it has one, else linear interpolation.

        With ``trajectory.dense`` (e.g. from ``EventDriven(dense_output=True)``) the reference
        is as accurate as the run at any time, and its impact times are those of the dense
        output; it claims no accuracy (NaN: the run's tolerance is not known here). Without
        it the samples are interpolated linearly (the run must then be sampled finely enough)
        and the impact times are the distinct times of the impact log.
        """
        if trajectory.dense is not None:
            impacts = np.asarray(trajectory.dense.impacts)
            return cls(trajectory.method, trajectory.dense, impacts, accuracy=math.nan)
        t, q, v = trajectory.t, trajectory.q, trajectory.v

        def state(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            times = np.asarray(times, dtype=float)
            qs = np.column_stack([np.interp(times, t, q[:, i]) for i in range(q.shape[1])])
            vs = np.column_stack([np.interp(times, t, v[:, i]) for i in range(v.shape[1])])
            return qs, vs

        return cls(trajectory.method, state, np.unique(trajectory.impacts.t), accuracy=math.nan)


#: Environment variable naming the reference cache folder (see the module notes).
REFERENCE_DIR_VARIABLE = "IMPACTBENCH_REFERENCE_DIR"


def default_reference_dir() -> Path:
    """Folder of the reference cache (see the module docstring)."""
    if os.environ.get(REFERENCE_DIR_VARIABLE):
        return Path(os.environ[REFERENCE_DIR_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "impactbench" / "references"


@contextmanager
def reference_dir_set(folder: Path | str) -> Iterator[None]:
    """Within the block the reference cache of this process is ``folder``
    (:data:`REFERENCE_DIR_VARIABLE` set, then restored): for a worker process, which keeps the
    environment it was started with, doing work for a process whose cache may be another."""
    before = os.environ.get(REFERENCE_DIR_VARIABLE)
    os.environ[REFERENCE_DIR_VARIABLE] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ[REFERENCE_DIR_VARIABLE]
        else:
            os.environ[REFERENCE_DIR_VARIABLE] = before


def _plain(value: Any) -> Any:
    """A JSON-able, deterministic description of an attribute value."""
    if isinstance(value, np.ndarray):
        return [_plain(x) for x in value.tolist()] if value.ndim else _plain(value.item())
    if isinstance(value, (list, tuple)):
        return [_plain(x) for x in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if hasattr(value, "__dict__") and not callable(value):  # e.g. a problem's precomputed data
        cls = type(value)
        return {"class": f"{cls.__module__}.{cls.__qualname__}", "attributes": _plain(vars(value))}
    text = repr(value)
    if " at 0x" in text:  # differs between identical objects: the cache would never hit
        raise ValueError(f"cannot fingerprint {text}: its repr holds a memory address")
    return text


def problem_fingerprint(problem: Problem) -> dict[str, Any]:
    """The problem's class and attributes, in a deterministic JSON-able form."""
    cls = type(problem)
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "attributes": _plain(vars(problem))}


#: The folder a report keeps its references in, and the entries read there so far
#: (:func:`reference_archive`).
_ARCHIVE: ContextVar[tuple[Path, set[str]] | None] = ContextVar("reference_archive", default=None)


@contextmanager
def reference_archive(folder: Path | str) -> Iterator[set[str]]:
    """Keep the references a report reads beside it, in ``folder``.

    Within the block, every reference read with ``compute=False`` (what a report does) from the
    cache is copied into ``folder`` (its cache entry, unchanged), and one that the cache lacks
    is read from ``folder``, checked as a cache entry is (key, description and checksum): a
    study's report folder carries the references its figures and floors are drawn against, so
    that ``impactbench report`` rebuilds it from the stored files alone on a machine whose
    cache lacks them. An archived reference computed by another code version than the current
    one (the version that ran the study) is read when none of the current version is there: the
    report draws against the reference its tables were measured with. Yields the set of the file
    names of ``folder`` read so far (the caller records them; nothing is deleted here).
    """
    read: set[str] = set()
    token = _ARCHIVE.set((Path(folder), read))
    try:
        yield read
    finally:
        _ARCHIVE.reset(token)


def _archived(
    path: Path, cached: bool, expected: dict, problem: Problem, accuracy: float
) -> Reference | None:
    """With :func:`reference_archive` active: the cache entry ``path`` copied into the archive
    (when the cache has it, ``cached``: read and checked), else the archive's copy; None when
    neither has it."""
    archive = _ARCHIVE.get()
    if archive is None:
        return None
    folder, read = archive
    copy = folder / path.name
    if cached:
        data = path.read_bytes()
        if not copy.is_file() or copy.read_bytes() != data:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(copy, data)
    stored = _load(copy, expected, problem, accuracy)
    if stored is None and not copy.is_file():
        copy, stored = _archived_by_description(folder, expected, problem, accuracy)
    if stored is not None:
        read.add(copy.name)
    return stored


def _archived_by_description(
    folder: Path, expected: dict, problem: Problem, accuracy: float
) -> tuple[Path, Reference | None]:
    """The archive's entry of the requested reference computed by another code version (the
    one that ran the study: its tables were measured against that entry), checked as a cache
    entry is, its key the digest of its own description; (folder, None) when there is none."""
    wanted = {k: v for k, v in expected["description"].items() if k != "code_version"}
    wanted = json.loads(json.dumps(wanted))
    for candidate in sorted(folder.glob("*.npz")):
        try:
            header = json.loads(str(read_npz(candidate, _MEMBERS)["header"][()]))
            description = header["description"]
            version = description["code_version"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if {k: v for k, v in description.items() if k != "code_version"} != wanted:
            continue
        own = {**expected["description"], "code_version": version}
        key = hashlib.sha256(json.dumps(own, sort_keys=True).encode()).hexdigest()[:24]
        stored = _load(candidate, {**expected, "key": key, "description": own}, problem, accuracy)
        if stored is not None:
            return candidate, stored
    return folder, None


class MissingReferenceError(FileNotFoundError):
    """A reference asked for with ``compute=False`` is not in the cache."""


def reference(
    problem: Problem,
    t_end: float,
    method: Method | None = None,
    *,
    cache_dir: Path | str | None = None,
    use_cache: bool = True,
    compute: bool = True,
) -> Reference:
    """The reference solution of ``problem`` on [t0, t_end].

    Parameters
    ----------
    problem : Problem
    t_end : float
    method : Method, optional
        Required when the problem has no closed form: a method producing a dense output
        (``Trajectory.dense``), e.g. ``impactbench.methods.reference_method()``. Ignored when
        the problem has an exact solution.
    cache_dir : path, optional
        Cache folder (default :func:`default_reference_dir`).
    use_cache : bool
        Read and write the cache (default). False recomputes and stores nothing.
    compute : bool
        False: only read the cache (what a report does: it never simulates), and the archive
        of the report when one is active (:func:`reference_archive`); a reference stored in
        neither raises :class:`MissingReferenceError`.

    Returns
    -------
    Reference
        ``state(t) -> (q, v)`` at any t in [t0, t_end] (right-continuous at impacts), the
        impact times, ``parameters`` recording how it was computed and the ``accuracy`` it
        claims (:func:`claimed_accuracy` of the method for a reference run).

    Raises
    ------
    ValueError
        If the problem has no exact solution and ``method`` is None or gives no dense output,
        or if ``compute`` and ``use_cache`` are both False, or if a problem without one fails
        :meth:`impactbench.Problem.check` (which also sets the ``n_dof`` and ``n_constraints``
        it leaves unset, before the cache key is computed).
    MissingReferenceError
        With ``compute=False``, when the reference is not in the cache.
    """
    if not (compute or use_cache):
        raise ValueError("compute=False needs use_cache=True (the reference is read from it)")
    if problem.has_exact_solution:
        return Reference.exact(problem, t_end)
    if not isinstance(method, Method):
        raise ValueError(
            f"method must be a Method with dense output for problem {problem.name!r}, which has "
            f"no exact solution (e.g. impactbench.methods.reference_method()), got {method!r}"
        )
    problem.check()  # sets n_dof and n_constraints when the problem leaves them to q0, gap(q0)
    version = source_digest(type(problem), type(method))
    description = {
        "problem": problem_fingerprint(problem),
        "t_end": repr(float(t_end)),
        "method": method.name,
        "method_parameters": _plain(method.parameters()),
        "code_version": version,
    }
    key = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:24]
    folder = Path(cache_dir or default_reference_dir())
    path = folder / f"{key}.npz"
    expected = {"key": key, "description": description, "method": method.name, "t_end": t_end}
    if use_cache:
        accuracy = claimed_accuracy(method)
        stored = _load(path, expected, problem, accuracy)
        if not compute:
            stored = _archived(path, stored is not None, expected, problem, accuracy) or stored
        if stored is not None:
            return stored
    if not compute:
        raise MissingReferenceError(
            f"the reference of {problem.name} on [{problem.t0!r}, {t_end!r}] ({method.name}) is "
            f"not in the reference cache {folder}: rerun the study that measures against it"
        )
    trajectory = simulate(problem, method, t_end)
    if trajectory.dense is None:
        raise ValueError(f"method must produce a dense output, {method.name} gave none")
    parameters = {
        "method": method.name,
        "t_end": float(t_end),
        "status": trajectory.status.value,
        "steps": trajectory.stats.get("steps"),
        "impacts": trajectory.impacts.total,
        "code_version": version[:20],
        "key": key,
    }
    dense = trajectory.dense
    result = Reference(
        method.name, dense, np.asarray(dense.impacts), parameters, claimed_accuracy(method)
    )
    if use_cache:
        _store(path, key, description, parameters, dense)
    return result


def _store(path: Path, key: str, description: dict, parameters: dict, dense: DenseOutput) -> None:
    """Write the entry (see the module docstring); a failed write is a CacheWarning."""
    header = {
        "schema": SCHEMA_VERSION,
        "key": key,
        "description": description,
        "parameters": parameters,
    }
    arrays = {"breaks": dense.breaks, "values": dense.values, "impacts": dense.impacts}
    header["checksum"] = _checksum(header, arrays)
    buffer = io.BytesIO()
    np.savez(
        buffer,
        header=np.array(json.dumps(header, sort_keys=True)),
        breaks=dense.breaks,
        values=dense.values,
        impacts=dense.impacts,
    )
    try:
        write_atomic(path, buffer.getvalue())
    except OSError as error:
        warnings.warn(
            f"reference cache not written ({error}); the reference is used without being stored",
            CacheWarning,
            stacklevel=3,
        )


def _checksum(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of an entry: its header without the checksum (key included) and the bytes of
    its arrays (little-endian, C order) with their dtypes and shapes."""
    digest = hashlib.sha256()
    content = {name: value for name, value in header.items() if name != "checksum"}
    digest.update(json.dumps(content, sort_keys=True).encode())
    for name in _MEMBERS[1:]:
        array = np.asarray(arrays[name])
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        digest.update(f"{name} {array.dtype.str} {array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


#: The reference parameters a stored entry must carry, with their types.
_PARAMETER_TYPES = {
    "method": str,
    "t_end": float,
    "status": str,
    "steps": (int, type(None)),
    "impacts": int,
    "code_version": str,
    "key": str,
}


def _load(
    path: Path, expected: dict[str, Any], problem: Problem, accuracy: float
) -> Reference | None:
    """The stored reference, or None when there is none or it fails validation (warned)."""
    legacy = path.with_suffix(".pkl")
    if not path.exists():
        if legacy.exists():
            warnings.warn(
                f"ignoring {legacy}: references are stored as .npz data and a pickle is never "
                "opened; the reference is recomputed",
                CacheWarning,
                stacklevel=3,
            )
        return None
    try:
        return _validated(read_npz(path, _MEMBERS), expected, problem, accuracy)
    except (OSError, ValueError) as error:
        warnings.warn(
            f"ignoring the reference cache entry {path} ({error}); the reference is recomputed",
            CacheWarning,
            stacklevel=3,
        )
        return None


def _validated(
    arrays: dict[str, np.ndarray], expected: dict[str, Any], problem: Problem, accuracy: float
) -> Reference:
    """The Reference stored in ``arrays``, or ValueError saying what does not match."""
    header_text = arrays["header"]
    if header_text.dtype.kind != "U" or header_text.shape != ():
        raise ValueError(f"header must be one text, got {header_text.dtype} {header_text.shape}")
    try:
        header = json.loads(str(header_text[()]))
    except RecursionError:
        raise ValueError("header is nested too deeply") from None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA_VERSION:
        found = header.get("schema") if isinstance(header, dict) else header
        raise ValueError(f"schema must be {SCHEMA_VERSION}, got {found!r}")
    if header.get("key") != expected["key"]:
        raise ValueError(f"key must be {expected['key']}, got {header.get('key')!r}")
    if header.get("checksum") != _checksum(header, arrays):
        raise ValueError("checksum mismatch: the entry was modified after it was written")
    if header.get("description") != json.loads(json.dumps(expected["description"])):
        raise ValueError("its description differs from the requested reference")
    parameters = header.get("parameters")
    if not isinstance(parameters, dict) or set(parameters) != set(_PARAMETER_TYPES):
        raise ValueError(f"parameters must have the keys {sorted(_PARAMETER_TYPES)}")
    for name, kind in _PARAMETER_TYPES.items():
        value = parameters[name]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"parameter {name} has the wrong type: {value!r}")
    statuses = {status.value for status in Status}
    if (
        parameters["method"] != expected["method"]
        or parameters["t_end"] != float(expected["t_end"])
        or parameters["key"] != expected["key"]
        or parameters["status"] not in statuses
    ):
        raise ValueError(f"parameters do not describe the requested reference: {parameters}")
    breaks, values, impacts = arrays["breaks"], arrays["values"], arrays["impacts"]
    n = problem.n_dof
    for name, array, ndim in (
        ("breaks", breaks, 1),
        ("values", values, 3),
        ("impacts", impacts, 1),
    ):
        if array.dtype != np.float64 or array.ndim != ndim:
            raise ValueError(
                f"{name} must be a {ndim}-D float64 array, got {array.dtype} {array.shape}"
            )
        if not np.isfinite(array).all():
            raise ValueError(f"{name} must be finite")
    if values.shape[2:] != (2 * n,):
        raise ValueError(f"values must hold (q, v) of {n} coordinates, got shape {values.shape}")
    if breaks.size < 2 or breaks[0] != problem.t0 or breaks[-1] != float(expected["t_end"]):
        raise ValueError(f"breaks must run from t0 = {problem.t0!r} to {expected['t_end']!r}")
    dense = DenseOutput(breaks, values, impacts)
    parameters = dict(parameters, cached=True)
    return Reference(parameters["method"], dense, np.asarray(dense.impacts), parameters, accuracy)
