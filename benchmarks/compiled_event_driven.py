"""The compiled event-driven engine against the scipy path of ``EventDriven``, same process.

Two runs at rtol 1e-10, atol 1e-12: the double pendulum against the wall (tip contact, the
thesis configuration) to T = 5.5 with RK45 and DOP853 (free flight and impacts), and the bouncing
ball e = 0.8 from q0 = 1 to T = 10 with DOP853 (62 impacts, the accumulation cut at t = 4.06,
then persistent contact). Each: the whole run of
:func:`impactbench.core.events.simulate_compiled` (Python wrapper and buffer
allocation included, best of 5 after a warm-up that compiles or loads the cache) against
``impactbench.simulate(problem, EventDriven(integrator=...), T)`` (best of 3), and the cost per
force evaluation against MoreauJean's cost per step on the same problem in the same process
(h = 1e-3, 10^6 steps, output every 1000th, best of 5: ``benchmarks/loops.py``'s measurement;
for the ball that run rests on the floor from t = 4 to t = 1000). Times are CPU times of this
process (``time.process_time``: the machine may be shared). Run:
``python benchmarks/compiled_event_driven.py [--no-scipy]`` (``--no-scipy``: the compiled
engine and MoreauJean only).
"""

import argparse
import math
import time
from functools import partial

import numpy as np

import impactbench as ib
from impactbench.core.events import simulate_compiled
from impactbench.methods.event_driven import EventDriven
from impactbench.methods.moreau_jean import MoreauJean
from impactbench.problems import BouncingBall, DoublePendulum

RTOL, ATOL = 1e-10, 1e-12
#: MoreauJean's run on the same problem (as benchmarks/loops.py): step, number of steps.
H, STEPS = 1e-3, 1_000_000
CASES = (
    ("double pendulum", DoublePendulum(), 5.5, "RK45"),
    ("double pendulum", DoublePendulum(), 5.5, "DOP853"),
    ("ball e=0.8", BouncingBall(restitution=0.8), 10.0, "DOP853"),
)


def best_of(function, repeats):
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best, result


def moreau_jean_ns_per_step(problem) -> float:
    """MoreauJean's best-of-5 ns per step on ``problem`` (after a warm-up)."""
    run = partial(
        ib.simulate, problem, MoreauJean(), problem.t0 + STEPS * H, h=H, output_every=1000
    )
    run()
    return 1e9 * best_of(run, 5)[0] / STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-scipy", action="store_true", help="skip the scipy path")
    args = parser.parse_args()
    step_costs = {}
    for label, problem, t_end, integrator in CASES:
        simulate_compiled(problem, t_end, RTOL, ATOL, integrator)  # compile / load the cache
        compiled_time, run = best_of(
            partial(simulate_compiled, problem, t_end, RTOL, ATOL, integrator), 5
        )
        line = (
            f"{label}, T = {t_end:g}, {integrator}: {run.status.name}, {run.stats['steps']} steps, "
            f"{run.impacts.total} impacts; compiled {1e3 * compiled_time:.2f} ms "
            f"({1e9 * compiled_time / run.stats['steps']:.0f} ns/step, "
            f"{1e9 * compiled_time / run.stats['force_evaluations']:.0f} ns per force "
            f"evaluation)"
        )
        if not args.no_scipy:
            method = EventDriven(integrator=integrator, rtol=RTOL, atol=ATOL, compiled=False)
            scipy_time, ref = best_of(partial(ib.simulate, problem, method, t_end), 3)
            difference = max(
                float(np.abs(run.q[-1] - ref.q[-1]).max()),
                float(np.abs(run.v[-1] - ref.v[-1]).max()),
            )
            line += (
                f"; scipy path ({ref.stats['steps']} steps, {ref.impacts.total} impacts) "
                f"{1e3 * scipy_time:.1f} ms, ratio {scipy_time / compiled_time:.0f}x; final "
                f"states differ by {difference:.1e}"
            )
        print(line, flush=True)
        if label not in step_costs:
            step_costs[label] = moreau_jean_ns_per_step(problem)
        per_evaluation = 1e9 * compiled_time / run.stats["force_evaluations"]
        print(
            f"  MoreauJean on the same problem {step_costs[label]:.1f} ns/step: "
            f"{per_evaluation / step_costs[label]:.1f}x per force evaluation",
            flush=True,
        )


if __name__ == "__main__":
    main()
