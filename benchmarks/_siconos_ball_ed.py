"""Siconos' event-driven bouncing ball (EventDriven + LsodarOSI), run by the Python with Siconos.

Not part of impactbench: this script imports only NumPy and Siconos (Debian's python3-siconos
4.4.0 under /usr/bin/python3) and is started as a subprocess by
``benchmarks/siconos_event_driven.py`` and ``tests/test_siconos_event_driven.py``:

    /usr/bin/python3 benchmarks/_siconos_ball_ed.py --t-end 10 --output-step 5 --repeats 5 OUT.json

The model is impactbench's ``BouncingBall``: one degree of freedom q (height of a point of mass
m), M = m, the weight -m g as Siconos' constant external force (LagrangianLinearTIDS), the gap
g(q) = q (LagrangianLinearTIR with C = [1]) and NewtonImpactNSL(e). The simulation is Siconos'
own BouncingBallED example (siconos-tutorials, examples/mechanics/BouncingBallEventDriven):
EventDriven with a LsodarOSI, an LCP at velocity level for impacts (SICONOS_OSNSP_ED_IMPACT)
and an LCP at acceleration level for contacts (SICONOS_OSNSP_ED_SMOOTH_ACC), every tolerance at
Siconos' default: LSODAR rtol = 10 eps, atol = 100 eps (LsodarOSI.hpp), the event-driven
threshold TOL_ED = 1e4 eps = 2.2e-12 (EventDriven.cpp). ``--output-step`` is the step of the
TimeDiscretisation, i.e. the output grid at which LSODAR is stopped (the example uses 0.005).

Siconos' EventsManager schedules the first three grid times t0, t0 + h, t0 + 2 h without
looking at T, so the step must divide T - t0 into at least 2 parts (h = T would run to 2 T);
the script checks that the run ends at T.

Timing: ``wall_time`` is the best of ``--repeats`` runs of ``Simulation.run()`` (the C++ event
loop; its banner lines on stdout are sent to /dev/null), each on a freshly built model, building
not included. The impact times, the pre- and post-impact velocities and the final state come
from one extra run that steps the same loop from Python (advanceToEvent / processEvents) and
records each non-smooth event; its final state is checked to equal the timed runs'.

Output: a JSON object (see ``main``) written to the path given as the last argument.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import siconos
import siconos.kernel as sk

#: Event type of a non-smooth event in Siconos' EventsManager (TD events are type 1).
NS_EVENT = 2


def build(args):
    """A fresh (ball, simulation) pair for one run."""
    ball = sk.LagrangianLinearTIDS([args.q0], [args.v0], np.array([[args.mass]]))
    ball.setFExtPtr([-args.mass * args.gravity])
    floor = sk.Interaction(
        sk.NewtonImpactNSL(args.restitution), sk.LagrangianLinearTIR(np.array([[1.0]]))
    )
    nsds = sk.NonSmoothDynamicalSystem(args.t0, args.t_end)
    nsds.insertDynamicalSystem(ball)
    nsds.link(floor, ball)
    simulation = sk.EventDriven(nsds, sk.TimeDiscretisation(args.t0, args.output_step))
    simulation.insertIntegrator(sk.LsodarOSI())
    simulation.insertNonSmoothProblem(sk.LCP(), sk.SICONOS_OSNSP_ED_IMPACT)
    simulation.insertNonSmoothProblem(sk.LCP(), sk.SICONOS_OSNSP_ED_SMOOTH_ACC)
    return ball, simulation


def timed_run(args):
    """Wall time of ``Simulation.run()`` and the final (t, q, v)."""
    ball, simulation = build(args)
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # run() prints a banner through std::cout
    try:
        start = time.perf_counter()
        simulation.run()
        elapsed = time.perf_counter() - start
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return elapsed, (simulation.startingTime(), float(ball.q()[0]), float(ball.velocity()[0]))


def recorded_run(args):
    """The same loop stepped from Python, recording every event."""
    ball, simulation = build(args)
    events = simulation.eventsManager()
    q, v = ball.q(), ball.velocity()
    impacts = {"t": [], "q_before": [], "v_before": [], "v_after": []}
    n_events = 0
    while simulation.hasNextEvent():
        simulation.advanceToEvent()
        non_smooth = events.nextEvent().getType() == NS_EVENT
        q_before, v_before = float(q[0]), float(v[0])
        simulation.processEvents()
        n_events += 1
        if non_smooth:
            impacts["t"].append(simulation.startingTime())
            impacts["q_before"].append(q_before)
            impacts["v_before"].append(v_before)
            impacts["v_after"].append(float(v[0]))
    contact = len(simulation.indexSet(2).interactions()) > 0
    final = (simulation.startingTime(), float(q[0]), float(v[0]))
    return impacts, n_events, contact, final


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--q0", type=float, default=1.0)
    parser.add_argument("--v0", type=float, default=0.0)
    parser.add_argument("--gravity", type=float, default=9.81)
    parser.add_argument("--restitution", type=float, default=0.8)
    parser.add_argument("--mass", type=float, default=1.0)
    parser.add_argument("--t0", type=float, default=0.0)
    parser.add_argument("--t-end", type=float, default=10.0)
    parser.add_argument("--output-step", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("output", help="path of the JSON file to write")
    args = parser.parse_args(argv)
    steps = (args.t_end - args.t0) / args.output_step
    if not (steps >= 2.0 and abs(steps - round(steps)) <= 1e-9 * steps):
        parser.error(
            f"--output-step must divide t_end - t0 into an integer number >= 2 of steps, "
            f"got {args.output_step!r}"
        )
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats!r}")
    return args


def main(argv):
    args = parse(argv)
    impacts, n_events, contact, final = recorded_run(args)
    times = []
    for _ in range(args.repeats):
        elapsed, timed_final = timed_run(args)
        times.append(elapsed)
        if timed_final != final:
            raise RuntimeError(f"run() ended in {timed_final}, the stepped loop in {final}")
    if not math.isclose(final[0], args.t_end, rel_tol=1e-12):
        raise RuntimeError(f"the run ended at t = {final[0]!r}, not at t_end = {args.t_end!r}")
    result = {
        "siconos_version": siconos.__version__,
        "parameters": {k: v for k, v in vars(args).items() if k != "output"},
        "tolerance_ed": build(args)[1].toleranceED(),
        "wall_time": min(times),
        "wall_times": times,
        "events": n_events,
        "impacts": impacts,
        "in_contact_at_end": contact,
        "t_final": final[0],
        "q_final": final[1],
        "v_final": final[2],
    }
    with open(args.output, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main(sys.argv[1:])
