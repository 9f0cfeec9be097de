"""The compiled event-driven engine against the scipy path of ``EventDriven``, same process.

The double pendulum against the wall (tip contact, the thesis configuration) to T = 5.5 at
rtol 1e-10, atol 1e-12, RK45 and DOP853: the whole run of
:func:`impactbench.methods.compiled_event_driven.simulate_compiled` (Python wrapper and buffer
allocation included, best of 5 after a warm-up that compiles or loads the cache) against
``impactbench.simulate(problem, EventDriven(integrator=...), T)`` (best of 3). Run:
``python benchmarks/compiled_event_driven.py``.
"""

import math
import time

import numpy as np

import impactbench as ib
from impactbench.methods.compiled_event_driven import simulate_compiled
from impactbench.methods.event_driven import EventDriven
from impactbench.problems import DoublePendulum

T_END = 5.5
RTOL, ATOL = 1e-10, 1e-12


def best_of(function, repeats):
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    problem = DoublePendulum()
    for integrator in ("RK45", "DOP853"):
        simulate_compiled(problem, T_END, RTOL, ATOL, integrator)  # compile / load the cache
        compiled_time, run = best_of(
            lambda m=integrator: simulate_compiled(problem, T_END, RTOL, ATOL, m), 5
        )
        method = EventDriven(integrator=integrator, rtol=RTOL, atol=ATOL)
        scipy_time, ref = best_of(lambda m=method: ib.simulate(problem, m, T_END), 3)
        difference = max(
            float(np.abs(run.q[-1] - ref.q[-1]).max()), float(np.abs(run.v[-1] - ref.v[-1]).max())
        )
        print(
            f"{integrator}: {run.stats['steps']} steps ({ref.stats['steps']} scipy path), "
            f"{run.impacts.total} impacts ({ref.impacts.total}); compiled "
            f"{1e3 * compiled_time:.2f} ms ({1e9 * compiled_time / run.stats['steps']:.0f} "
            f"ns/step), scipy path {1e3 * scipy_time:.1f} ms, ratio "
            f"{scipy_time / compiled_time:.0f}x; final states differ by {difference:.1e}"
        )


if __name__ == "__main__":
    main()
