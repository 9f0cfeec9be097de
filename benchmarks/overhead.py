"""Per-call overhead of ``impactbench.simulate`` against the cost of the compiled loops it runs.

    python benchmarks/overhead.py [--calls 300] [--rounds 5] [--json out.json]

On the bouncing ball with e = 1 (free flights and isolated impacts), in one process:

* MoreauJean at h = 1e-3: the ns per step of a long run (10^5 steps, output every 1000th) and the
  time of one call of a 10-step run (each the minimum over ``calls`` calls);
* EventDriven (the compiled engine, DOP853, rtol 1e-10): the ns per force evaluation of a long
  run (t_end = 100, about 8600 evaluations) and the time of one call of a short run
  (t_end = 0.01, a few dozen force evaluations).

The cost per step (per evaluation) is the difference of the long and the short call over the
difference of their steps (evaluations): the marginal cost, without the per-call overhead. The
long runs take about half a millisecond, so that their minimum over many calls, like the short
calls', is that of calls the machine did not interrupt.

Each call's time is also split by ``Trajectory.stats["integration_time"]`` (the time of the
compiled loop's call inside ``simulate``): the rest is the wrapper's per-call work.

The costs are stated in MoreauJean ball steps (call time / MoreauJean's ns per step), a ratio
measured in one process and so less machine-dependent than microseconds; the targets of issue 34
are at most 2000 steps for a time-stepping call and 3000 for an event-driven call. The
measurements are interleaved over ``rounds`` rounds and each figure is the minimum over them, so
that a busy spell of the machine does not inflate one side of a ratio only.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import impactbench as ib
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall

H = 1e-3
LONG_STEPS = 100_000
SHORT_STEPS = 10
EVENT_LONG, EVENT_SHORT = 100.0, 0.01
#: Issue 34's targets, in MoreauJean ball steps per call.
TARGETS = {"MoreauJean": 2000, "EventDriven": 3000}


def _timed(run) -> tuple[float, ib.Trajectory]:
    start = time.perf_counter()
    trajectory = run()
    return time.perf_counter() - start, trajectory


def _calls(run, calls: int) -> tuple[float, float]:
    """The least wall time of ``calls`` calls, and the least wall time minus integration time
    (NaN without ``stats["integration_time"]``)."""
    walls, wrappers = [], []
    for _ in range(calls):
        elapsed, trajectory = _timed(run)
        walls.append(elapsed)
        wrappers.append(elapsed - trajectory.stats.get("integration_time", math.nan))
    return min(walls), min(wrappers, key=lambda x: math.inf if math.isnan(x) else x)


def measure(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """The figures of the module docstring (seconds, counts), minima over ``rounds`` rounds."""
    ball = BouncingBall(restitution=1.0)
    stepper, event = MoreauJean(), EventDriven()

    def long_stepper():
        return ib.simulate(ball, stepper, LONG_STEPS * H, h=H, output_every=1000)

    def short_stepper():
        return ib.simulate(ball, stepper, SHORT_STEPS * H, h=H)

    def long_event():
        return ib.simulate(ball, event, EVENT_LONG)

    def short_event():
        return ib.simulate(ball, event, EVENT_SHORT)

    for run in (long_stepper, short_stepper, long_event, short_event):  # compile or load
        run()
    assert short_event().stats["engine"] == "compiled"
    best: dict[str, float] = {}
    runs = {
        "stepper_long": long_stepper,
        "stepper_short": short_stepper,
        "event_long": long_event,
        "event_short": short_event,
    }
    for _ in range(rounds):
        for name, run in runs.items():
            call, wrapper = _calls(run, calls if "short" in name else max(1, calls // 10))
            best[name] = min(best.get(name, math.inf), call)
            if not best.get(f"{name}_wrapper", math.inf) <= wrapper:
                best[f"{name}_wrapper"] = wrapper
    step = (best["stepper_long"] - best["stepper_short"]) / (LONG_STEPS - SHORT_STEPS)
    long_evaluations = long_event().stats["force_evaluations"]
    short_evaluations = short_event().stats["force_evaluations"]
    evaluation = (best["event_long"] - best["event_short"]) / (long_evaluations - short_evaluations)
    return {
        "MoreauJean": {
            "ns_per_unit": 1e9 * step,
            "units_per_short_call": SHORT_STEPS,
            "call_us": 1e6 * best["stepper_short"],
            "wrapper_us": 1e6 * best["stepper_short_wrapper"],
            "call_in_steps": best["stepper_short"] / step,
            "overhead_in_steps": (best["stepper_short"] - SHORT_STEPS * step) / step,
        },
        "EventDriven": {
            "ns_per_unit": 1e9 * evaluation,
            "units_per_short_call": short_evaluations,
            "call_us": 1e6 * best["event_short"],
            "wrapper_us": 1e6 * best["event_short_wrapper"],
            "call_in_steps": best["event_short"] / step,
            "overhead_in_steps": (best["event_short"] - short_evaluations * evaluation) / step,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    figures = measure(args.calls, args.rounds)
    stepper, event = figures["MoreauJean"], figures["EventDriven"]
    print(f"MoreauJean on the ball: {stepper['ns_per_unit']:.3g} ns/step")
    print(
        f"EventDriven (compiled engine) on the ball: "
        f"{event['ns_per_unit']:.3g} ns per force evaluation"
    )
    print(
        f"{'run':38s} {'call [us]':>10s} {'wrapper [us]':>13s} {'call [MJ steps]':>16s} "
        f"{'overhead [MJ steps]':>20s} {'target':>7s}"
    )
    for name, row in figures.items():
        unit = "steps" if name == "MoreauJean" else "force evaluations"
        label = f"{name}, {row['units_per_short_call']} {unit}"
        wrapper = f"{row['wrapper_us']:.3g}" if math.isfinite(row["wrapper_us"]) else "-"
        print(
            f"{label:38s} {row['call_us']:10.3g} {wrapper:>13s} "
            f"{row['call_in_steps']:16.0f} {row['overhead_in_steps']:20.0f} "
            f"{TARGETS[name]:7d}"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()
