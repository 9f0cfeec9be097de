"""Integrity of the run cache: checksums of entries, and sampled recomputation of cached runs.

A run-cache entry carries the SHA-256 of its content and key (:func:`entry_checksum`), checked
when it is read (:meth:`impactbench.bench.runner.RunCache.load`): corruption and naive edits
are found, a writer who recomputes the checksum is not (docs/cache.md states the trust model).
:func:`verify_sample` recomputes a random sample of the runs read from the cache and reports
those whose stored results differ from their recomputation (``impactbench run --verify-cache``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

#: Relative difference below which a recomputed metric or cost equals its stored value (a cache
#: shared between machines may hold results differing in the last bits).
VERIFY_RTOL = 1e-9


def entry_checksum(entry: Mapping[str, Any]) -> str:
    """SHA-256 of a cache entry without its ``checksum`` field (canonical JSON: sorted keys,
    the key of the entry included, so an entry moved to another key's file fails too)."""
    content = {name: value for name, value in entry.items() if name != "checksum"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
) -> list[str]:
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
    list of str
        One line per differing run: the run and what differs.
    """
    from .runner import RunCache, default_cache_dir, execute

    fraction = check_fraction(fraction)
    cached = [i for i, outcome in enumerate(outcomes) if outcome.cached]
    if not cached:
        return []
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
            if outcome.status == "failed":  # never cached: the stored success goes
                cache.path(outcome.key).unlink(missing_ok=True)
            else:
                cache.store(outcome.key, run, outcome)
        outcomes[position] = outcome
    return report
