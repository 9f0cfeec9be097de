"""Reference solutions: the exact solution where one exists, else a cached accurate run.

:func:`reference` returns the solution that runs are measured against (DESIGN.md section 7).
For a problem with a closed form it is ``problem.exact_solution``. Otherwise it is a
high-accuracy run of the given method with dense output (typically
``impactbench.methods.reference_method()``: DOP853 event-driven at rtol 1e-12), stored on disk so
a study computes it once. The cache key is a digest of the problem (class and every attribute),
the horizon, the method's name and parameters, and the code version of the core, the problem's
module and the method's module (:mod:`impactbench.versioning`): editing any of them recomputes it.

Cache location: ``$IMPACTBENCH_REFERENCE_DIR`` if set, else
``$XDG_CACHE_HOME/impactbench/references`` (default ``~/.cache/impactbench/references``).
Clear it by deleting that folder (or one ``<key>.pkl`` file in it); ``use_cache=False`` bypasses
it. Entries are pickles written atomically; a corrupt or foreign file is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._files import write_atomic
from .method import Method
from .problem import Problem
from .simulate import simulate
from .trajectory import Trajectory
from .versioning import source_digest

State = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

_CACHE_FORMAT = 1

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
        this say nothing about the run (:func:`impactbench.fitting.error_floor`).
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


def default_reference_dir() -> Path:
    """Folder of the reference cache (see the module docstring)."""
    if os.environ.get("IMPACTBENCH_REFERENCE_DIR"):
        return Path(os.environ["IMPACTBENCH_REFERENCE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "impactbench" / "references"


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


def reference(
    problem: Problem,
    t_end: float,
    method: Method | None = None,
    *,
    cache_dir: Path | str | None = None,
    use_cache: bool = True,
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

    Returns
    -------
    Reference
        ``state(t) -> (q, v)`` at any t in [t0, t_end] (right-continuous at impacts), the
        impact times, ``parameters`` recording how it was computed and the ``accuracy`` it
        claims (:func:`claimed_accuracy` of the method for a reference run).

    Raises
    ------
    ValueError
        If the problem has no exact solution and ``method`` is None or gives no dense output.
    """
    if problem.has_exact_solution:
        return Reference.exact(problem, t_end)
    if not isinstance(method, Method):
        raise ValueError(
            f"method must be a Method with dense output for problem {problem.name!r}, which has "
            f"no exact solution (e.g. impactbench.methods.reference_method()), got {method!r}"
        )
    version = source_digest(type(problem), type(method))
    description = {
        "problem": problem_fingerprint(problem),
        "t_end": repr(float(t_end)),
        "method": method.name,
        "method_parameters": _plain(method.parameters()),
        "code_version": version,
    }
    key = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:24]
    path = Path(cache_dir or default_reference_dir()) / f"{key}.pkl"
    if use_cache:
        stored = _load(path, key, claimed_accuracy(method))
        if stored is not None:
            return stored
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
        payload = {
            "format": _CACHE_FORMAT,
            "key": key,
            "description": description,
            "dense": dense,
            "parameters": parameters,
        }
        write_atomic(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    return result


def _load(path: Path, key: str, accuracy: float) -> Reference | None:
    try:
        with open(path, "rb") as stream:
            payload = pickle.load(stream)
        if payload.get("format") != _CACHE_FORMAT or payload.get("key") != key:
            return None
        dense = payload["dense"]
        parameters = dict(payload["parameters"], cached=True)
        impacts = np.asarray(dense.impacts)
        return Reference(parameters["method"], dense, impacts, parameters, accuracy)
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, AttributeError, TypeError):
        return None
