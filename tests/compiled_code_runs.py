"""Run (wrapper, scheme) pairs on the bouncing ball in one process, in the order given, and print
a digest of each trajectory (tests/test_compiled_code_keys.py).

Usage: ``python compiled_code_runs.py plain:MoreauJean adaptive:D1MinusLinear ...``; prints one
JSON line, pair -> SHA-256 of the trajectory's times, positions, velocities and impact count.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

from impactbench import Adaptive, simulate
from impactbench.core.adaptive import _scheme_classes
from impactbench.core.trajectory import SimulationError
from impactbench.problems import BouncingBall

#: Horizon: the ball, dropped from 1 m, first meets the floor at t = 0.45.
T_END = 0.6
#: Step of the fixed-step runs.
H = 1e-3


def digest(pair: str) -> str:
    """The SHA-256 of the trajectory of ``pair`` (``wrapper:Scheme``)."""
    wrapper, name = pair.split(":")
    scheme = _scheme_classes()[name]()
    hasher = hashlib.sha256()
    try:
        if wrapper == "adaptive":
            trajectory = simulate(BouncingBall(), Adaptive(scheme, rtol=1e-4), T_END)
        else:
            trajectory = simulate(BouncingBall(), scheme, T_END, h=H)
    except SimulationError as error:  # a refusal is an outcome too: its state and reason
        for array in (np.atleast_1d(error.t), error.q, error.v):
            hasher.update(np.asarray(array, dtype=float).tobytes())
        hasher.update(str(error).encode())
        return hasher.hexdigest()
    for array in (trajectory.t, trajectory.q, trajectory.v):
        hasher.update(array.tobytes())
    hasher.update(str(trajectory.stats["impacts"]).encode())
    return hasher.hexdigest()


if __name__ == "__main__":
    print(json.dumps({pair: digest(pair) for pair in sys.argv[1:]}))
