"""Integrity of the run cache: checksums of entries, and sampled recomputation of cached runs.

A run-cache entry carries the SHA-256 of its content and key
(:func:`impactbench.bench.runner.entry_checksum`), checked when it is read
(:meth:`impactbench.bench.runner.RunCache.load`): corruption and naive edits are found, a writer
who recomputes the checksum is not (docs/cache.md states the trust model). :func:`verify_sample`
recomputes a random sample of the runs read from the cache and reports those whose stored results
differ from their recomputation (``impactbench run --verify-cache``). :func:`no_patching` refuses a
study file that rebinds impactbench's own classes or functions (its results would be stored under
the built-in runs' keys, and differ with ``--jobs``)."""

from __future__ import annotations

import json
import math
import random
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core._files import CacheWarning

#: Relative difference below which a recomputed metric or cost equals its stored value (a cache
#: shared between machines may hold results differing in the last bits).
VERIFY_RTOL = 1e-9


def _same(stored: Any, computed: Any) -> bool:
    if isinstance(stored, float) or isinstance(computed, float):
        if stored is None or computed is None:
            return stored is computed
        a, b = float(stored), float(computed)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= VERIFY_RTOL * max(abs(a), abs(b))
    return stored == computed


def differences(stored: Any, computed: Any) -> list[str]:
    """What differs between a cached outcome and its recomputation: the status, each metric
    and each cost (relative difference above :data:`VERIFY_RTOL`), the artefacts; timings and
    provenance are left out. Each item is ``"name: stored -> recomputed"``."""
    found = []
    if stored.status != computed.status:
        found.append(f"status: {stored.status} -> {computed.status}")
    for part in ("metrics", "cost"):
        old, new = getattr(stored, part), getattr(computed, part)
        for name in sorted(set(old) | set(new)):
            if not _same(old.get(name), new.get(name)):
                found.append(f"{name}: {old.get(name)!r} -> {new.get(name)!r}")
    artefacts = [json.dumps(o.artefacts, sort_keys=True) for o in (stored, computed)]
    if artefacts[0] != artefacts[1]:
        found.append("artefacts differ")
    return found


def check_fraction(fraction: Any) -> float:
    """A sampling fraction in (0, 1], or ValueError naming ``verify_cache``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise ValueError(f"verify_cache must be a number in (0, 1], got {fraction!r}")
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"verify_cache must lie in (0, 1], got {fraction!r}")
    return float(fraction)


def sample(count: int, fraction: float, rng: random.Random | None = None) -> list[int]:
    """``ceil(fraction count)`` distinct positions of ``range(count)``, drawn at random, sorted."""
    chosen = (rng or random.Random()).sample(range(count), math.ceil(fraction * count))
    return sorted(chosen)


def verify_sample(
    runs: Sequence[Any],
    outcomes: list[Any],
    fraction: float,
    *,
    rng: random.Random | None = None,
    **options: Any,
) -> tuple[int, list[str]]:
    """Recompute a random ``fraction`` of the runs read from the cache and compare.

    Parameters
    ----------
    runs, outcomes : sequence
        The runs and what :func:`impactbench.bench.runner.execute` returned for them; the
        outcomes of the recomputed runs are replaced by their recomputation, and a differing
        entry is replaced in the cache.
    fraction : float
        In (0, 1]: at least one cached run is recomputed when there is any.
    rng : random.Random, optional
        Source of the sample (default: a fresh, unseeded one).
    **options
        Passed to :func:`~impactbench.bench.runner.execute` (``jobs``, ``cache_dir``, ...).

    Returns
    -------
    checked : int
        Number of runs recomputed.
    differences : list of str
        One line per differing run: the run, its cache entry and what differs.
    """
    from .runner import RunCache, default_cache_dir, execute

    fraction = check_fraction(fraction)
    cached = [i for i, outcome in enumerate(outcomes) if outcome.cached]
    if not cached:
        return 0, []
    chosen = [cached[i] for i in sample(len(cached), fraction, rng)]
    cache_dir = options.pop("cache_dir", None) or default_cache_dir()
    fresh = execute([runs[i] for i in chosen], use_cache=False, **options)
    cache = RunCache(cache_dir)
    report = []
    for position, outcome in zip(chosen, fresh, strict=True):
        found = differences(outcomes[position], outcome)
        if found:
            run = runs[position]
            report.append(
                f"{run.problem_name} {run.method_name} h={run.h} (cache entry "
                f"{cache.path(outcome.key)}): " + "; ".join(found)
            )
            try:
                if outcome.status == "failed":  # never cached: the stored success goes
                    cache.path(outcome.key).unlink(missing_ok=True)
                else:
                    cache.store(outcome.key, run, outcome)
            except OSError as error:
                warnings.warn(
                    f"run cache entry {cache.path(outcome.key)} not replaced ({error})",
                    CacheWarning,
                    stacklevel=2,
                )
        outcomes[position] = outcome
    return len(chosen), report


def _is_ours(name: str) -> bool:
    return name == "impactbench" or name.startswith("impactbench.")


def code_snapshot() -> dict[str, dict[str, int]]:
    """The identity of every global of the imported ``impactbench`` modules and of every
    attribute of the classes they define (what a monkeypatch rebinds)."""
    snapshot = {}
    for name, module in list(sys.modules.items()):
        if module is None or not _is_ours(name):
            continue
        names = vars(module)
        snapshot[name] = {k: id(v) for k, v in names.items() if not k.startswith("__")}
        for attribute, value in list(names.items()):
            if isinstance(value, type) and value.__module__ == name:
                snapshot[f"{name}.{attribute}"] = {k: id(v) for k, v in vars(value).items()}
    return snapshot


def changed_code(before: dict[str, dict[str, int]]) -> list[str]:
    """The names rebound or deleted since ``before`` (:func:`code_snapshot`): the globals of a
    module (``module.name``) and the attributes of a class (``module.Class.name``), and those
    added to a class (they override what it inherits). Globals added to a module (a lazily
    filled registry) and modules imported since are not compared."""
    after = code_snapshot()
    changed = []
    for owner, names in before.items():
        now = after.get(owner, {})
        compared = set(names) | (set(now) if owner not in sys.modules else set())
        for name in sorted(compared):
            if names.get(name) != now.get(name):
                changed.append(f"{owner}.{name}")
    return changed


@contextmanager
def no_patching(what: str) -> Iterator[None]:
    """Refuse changes to impactbench's own code within the block (ValueError naming them and
    ``what`` made them).

    A study file that rebinds a built-in class's method or a module's function would store its
    altered results under the built-in runs' cache keys, which cover the built-in sources, not
    the patch; and worker processes, which import impactbench afresh, would not see the patch,
    so that its results would depend on ``--jobs``. Subclassing is the supported way.
    """
    before = code_snapshot()
    yield
    changed = changed_code(before)
    if changed:
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        raise ValueError(
            f"{what} changed impactbench's own code ({shown}): patching built-in classes or "
            "modules is refused (their runs' cache keys would not cover the change, and worker "
            "processes would not see it); define a subclass or a new function instead"
        )
