"""Digests of short runs of problems with fixed obstacles (scleronomic constraints), the baseline
of tests/test_scleronomic_bit_identity.py.

Moving obstacles (issue 53, /work/notes/rheonomic_plan.md) add a time-dependent gap g(t, q) to the
contract; problems whose gap does not depend on time must keep their arithmetic exactly. Each case
(problem, method) is run once and reduced to the SHA-256 of its output times, positions,
velocities, status, impact log (times, constraint indices, normal velocities before and after,
total) and counters (steps, force evaluations, impacts; those the method reports). Two runs that
differ in one bit of one of these differ in their digests.

Usage: ``python tests/scleronomic_digests.py --write`` runs every case and writes
tests/data/scleronomic_digests.json (the digests with the machine they were computed on, see
:func:`machine_tag`); ``python tests/scleronomic_digests.py`` prints them as JSON.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import impactbench
from impactbench import Adaptive, Problem, simulate
from impactbench.core.method import Method
from impactbench.core.trajectory import SimulationError
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import BouncingBall, ColumnOfBeads, DoublePendulum, SlidingBlock

#: Where the digests are stored.
DATA = Path(__file__).parent / "data" / "scleronomic_digests.json"

#: Step of the fixed-step runs.
H = 1e-3

#: The problems: name -> (constructor, horizon after t0). Each horizon covers impacts or contact:
#: the ball dropped from 1 m meets the floor at t = 0.45 and rebounds; the pendulum's tip hits the
#: wall at t = 0.733; the block slides in frictional contact on its slope; the three beads collide
#: with each other and the floor.
PROBLEMS: dict[str, tuple[Callable[[], Problem], float]] = {
    "BouncingBall": (BouncingBall, 1.0),
    "DoublePendulum": (DoublePendulum, 1.0),
    "SlidingBlock": (SlidingBlock, 0.5),
    "ColumnOfBeads": (lambda: ColumnOfBeads(n_beads=3), 0.6),
}

#: The methods: name -> constructor (each applies to every problem above, except that a
#: frictional problem runs only with the methods with a friction law, ``Method.friction_law``).
METHODS: dict[str, Callable[[], Method]] = {
    "MoreauJean": MoreauJean,
    "MoreauJean[implicit=True]": lambda: MoreauJean(implicit=True),
    "PaoliSchatzman": PaoliSchatzman,
    "CatchingUp": CatchingUp,
    "D1MinusLinear": D1MinusLinear,
    "NonsmoothGeneralizedAlpha": NonsmoothGeneralizedAlpha,
    "MoreauJeanProjection": MoreauJeanProjection,
    "Adaptive[MoreauJean,rtol=1e-4]": lambda: Adaptive(MoreauJean(), rtol=1e-4),
    "EventDriven": EventDriven,
}

#: Per case run in this process: its status, impact count and number of samples (printed by
#: ``--write``, to see that each case meets its obstacle).
SUMMARY: dict[str, str] = {}

#: The counters hashed when the method reports them.
COUNTERS = ("steps", "force_evaluations", "impacts")


def cases() -> list[str]:
    """The cases ``problem/method``: every method on every problem it applies to."""
    out = []
    for problem_name, (make_problem, _) in PROBLEMS.items():
        frictional = make_problem().has_friction
        for method_name, make_method in METHODS.items():
            if frictional and not make_method().friction_law:
                continue
            out.append(f"{problem_name}/{method_name}")
    return out


def _update(hasher: hashlib._Hash, *arrays: object) -> None:
    for array in arrays:
        hasher.update(np.ascontiguousarray(array).tobytes())


def digest(case: str) -> str:
    """The SHA-256 of the run ``case`` (``problem/method``, one of :func:`cases`)."""
    problem_name, method_name = case.split("/")
    make_problem, span = PROBLEMS[problem_name]
    problem = make_problem()
    method = METHODS[method_name]()
    h = H if method.requires_step else None
    hasher = hashlib.sha256()
    try:
        trajectory = simulate(problem, method, problem.t0 + span, h=h)
    except SimulationError as error:  # a refusal is an outcome too: its state and reason
        _update(hasher, np.atleast_1d(np.asarray(error.t, dtype=float)), error.q, error.v)
        hasher.update(str(error).encode())
        return hasher.hexdigest()
    _update(hasher, trajectory.t, trajectory.q, trajectory.v)
    hasher.update(f"{trajectory.status!s}:{trajectory.message}".encode())
    log = trajectory.impacts
    _update(hasher, log.t, log.constraint, log.normal_velocity_before, log.normal_velocity_after)
    hasher.update(str(log.total).encode())
    SUMMARY[case] = f"{trajectory.status!s} impacts={log.total} samples={trajectory.t.size}"
    for name in COUNTERS:
        if name in trajectory.stats:
            hasher.update(f"{name}={trajectory.stats[name]!r}".encode())
    return hasher.hexdigest()


def machine_tag() -> dict[str, str]:
    """What the digests depend on besides the code: the CPU (its model, and whether it has fused
    multiply-add, which LLVM uses when compiling for the host and which changes the rounding of
    a * b + c), the operating system and the versions of numpy, numba and llvmlite."""
    import llvmlite
    import numba

    model, flags = "", set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    return {
        "machine": platform.machine(),
        "system": platform.system(),
        "cpu": model or platform.processor(),
        "fma": str("fma" in flags),
        "avx2": str("avx2" in flags),
        "avx512f": str("avx512f" in flags),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "impactbench": impactbench.__version__,
    }


def compute() -> dict[str, str]:
    """Every case's digest, in the order of :func:`cases`."""
    return {case: digest(case) for case in cases()}


if __name__ == "__main__":
    digests = compute()
    if sys.argv[1:] == ["--write"]:
        DATA.parent.mkdir(exist_ok=True)
        payload = {"machine": machine_tag(), "digests": digests}
        DATA.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
        for case, summary in SUMMARY.items():
            print(case, summary, file=sys.stderr)
    else:
        print(json.dumps(digests, indent=1))
