"""Wall time of the bouncing ball through Zeno: Siconos' EventDriven/LsodarOSI against ours.

The ball is impactbench's ``BouncingBall()`` (point of mass 1 above the floor q = 0, q0 = 1,
v0 = 0, gravity 9.81, e = 0.8), integrated to T = 10: 0.45 s of free fall, the impacts
accumulating at t_inf = 9 sqrt(2/9.81) = 4.0637, then 5.9 s of persistent contact. Run with the
project's Python (Siconos is needed under /usr/bin/python3, or the Python given by
``--siconos-python``; without it the script says so and exits with 0):

    python benchmarks/siconos_event_driven.py [--repeats 7]

Engines (best of ``--repeats`` runs each, after one untimed run that loads caches):

- Siconos 4.4 (Debian's python3-siconos; its ``siconos.version`` string reads 4.5.0) in a
  subprocess running ``_siconos_ball_ed.py``: Siconos' own BouncingBallED set-up on our ball,
  every tolerance at Siconos' default (LSODAR rtol = 10 eps, atol = 100 eps, TOL_ED = 2.2e-12);
  the time is that of ``Simulation.run()``, the C++ loop. Two output grids (Siconos'
  TimeDiscretisation, at whose times LSODAR stops): h = T/2, the fewest the EventsManager allows
  (the comparison row), and the example's h = 0.005 (2000 extra events).
- impactbench's ``EventDriven`` (scipy's DOP853 stepped by hand, compiled right-hand side) at
  the project default rtol = 1e-10, atol = 1e-12 and at its tightest, rtol = atol = 100 eps
  (Siconos' atol; our rtol cannot go below 100 eps), timed through ``simulate``;
  and ``EventDriven(compiled=True)`` at the same two settings where that engine exists.

The table gives the wall time, the impacts, the last impact time against t_inf, |q(T)| and
|v(T)| (the exact state at T is q = v = 0) and the ratio of the wall time to Siconos' (h = T/2).

What Siconos does at the accumulation point (read in Siconos 4.4's LsodarOSI.cpp,
EventDriven.cpp and NonSmoothEvent.cpp, and measured by this script)
---------------------------------------------------------------------------------------------
Siconos does not stop: it bounces 75 times (ours: 62, its Zeno threshold is rest_velocity =
1e-6) and rests from t = 4.06371232, 4.5e-7 before t_inf, to the end, with the flights getting
too short *early*:

1. Each flight loses kinetic energy atol per unit mass. LSODAR's error weight is
   rtol |y_i| + atol with atol = 100 eps in absolute units (metres, m/s), and LSODAR is restarted
   at every impact (LsodarOSI::integrate turns istate 3 into 1). Measured over flights 15-70,
   the product v_k^+ (v_{k+1}^- + v_k^+) of the take-off speed and the speed lost in the flight
   is atol to within 5 %, i.e. (v_{k+1}^-)^2 = (v_k^+)^2 - 2 atol (with ``setTol(1, tol, tol)``,
   which sets rtol = atol = tol, the median product is tol to 1 % for tol = 1e-13, 1e-12 and
   1e-10). The relative speed error so grows like atol / v^2: 4e-13 at impact 10, 0.66 at impact
   74; the impact times leave the closed form by up to 9e-14 over the first 10 impacts, 1e-12
   over 20, 7e-10 over 50 and 2e-7 at the last (ours: 4e-14 over all 62).
2. Once (v_k^+)^2 < 2 atol (v < 2.1e-7: flight 74, v^+ = 1.0e-7, height 5e-16 m) the computed
   flight cannot come back down with speed: LSODAR's q dips below 0 near the apex. Siconos' root
   function is g = 100 TOL_ED while q <= TOL_ED and dq/dt > -TOL_ED, g = q otherwise
   (EventDriven::computeg), so the root is found where dq/dt crosses -TOL_ED, with
   q = -4.9e-16, v^- = -2.8e-12. The impact gives v^+ = 2.2e-12 <= TOL_ED with |q| <= TOL_ED, so
   NonSmoothEvent::process puts the contact in index set 2 and the acceleration LCP gives the
   contact force m g: persistent contact.
3. The contact keeps the residual v^+ = 2.2e-12 (nothing sets the normal velocity to 0 on
   closing), and the contact dynamics q'' = 0 carry it: q(T) = q + v^+ (T - t) = 1.3e-11,
   v(T) = 2.2e-12 (nothing re-checks the gap at the output events). Exact: q = v = 0.

So the Siconos run is right to about atol / v_k^2 (relative) in each flight, and its switch to
contact is set by LSODAR's absolute tolerance, not by a Zeno criterion; the run is not wrong
at T, but its state there is 1e-11 off (ours: 2e-21).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from impactbench import simulate
from impactbench.core.trajectory import Trajectory
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall

#: The script run by the Python with Siconos.
SICONOS_SCRIPT = Path(__file__).with_name("_siconos_ball_ed.py")
DEFAULT_SICONOS_PYTHON = "/usr/bin/python3"
T_END = 10.0
#: Siconos' output grids: the fewest events Siconos allows (h = T/2) and its example's h.
SICONOS_GRIDS = (T_END / 2.0, 0.005)
EPS = float(np.finfo(float).eps)
#: LSODAR's default tolerances in LsodarOSI (Siconos 4.4, LsodarOSI.hpp).
SICONOS_RTOL, SICONOS_ATOL = 10.0 * EPS, 100.0 * EPS
#: (label, rtol, atol) of our runs: the project default and the tightest the method accepts.
OUR_TOLERANCES = (("1e-10/1e-12", 1e-10, 1e-12), ("100eps/100eps", 100.0 * EPS, 100.0 * EPS))


def siconos_python(candidate: str = DEFAULT_SICONOS_PYTHON) -> str | None:
    """The interpreter ``candidate`` if it exists and imports ``siconos.kernel``, else None."""
    path = shutil.which(candidate)
    if path is None:
        return None
    probe = subprocess.run(
        [path, "-c", "import siconos.kernel"], capture_output=True, text=True, timeout=120
    )
    return path if probe.returncode == 0 else None


def run_siconos(
    python: str,
    ball: BouncingBall,
    t_end: float,
    output_step: float,
    repeats: int,
) -> dict[str, Any]:
    """Siconos' event-driven run of ``ball`` to ``t_end`` (see ``_siconos_ball_ed.py``).

    Parameters
    ----------
    python : str
        Interpreter that imports ``siconos.kernel``.
    ball : BouncingBall
        The ball (its q0, v0, gravity, restitution, mass and t0 are passed on).
    t_end : float
        Final time.
    output_step : float
        Step of Siconos' output grid; it must divide t_end - t0 into >= 2 steps.
    repeats : int
        Timed runs (best of).

    Returns
    -------
    dict
        ``wall_time`` (s), ``events``, ``impacts`` (lists ``t``, ``q_before``, ``v_before``,
        ``v_after``, one entry per impact), ``t_final``, ``q_final``, ``v_final``,
        ``in_contact_at_end``, ``tolerance_ed``, ``siconos_version``, ``parameters``.
    """
    with tempfile.TemporaryDirectory(prefix="siconos-ed-") as folder:
        output = os.path.join(folder, "result.json")
        command = [
            python,
            str(SICONOS_SCRIPT),
            f"--q0={float(ball.q0[0])!r}",
            f"--v0={float(ball.v0[0])!r}",
            f"--gravity={ball.gravity!r}",
            f"--restitution={ball.restitution!r}",
            f"--mass={ball.mass!r}",
            f"--t0={ball.t0!r}",
            f"--t-end={float(t_end)!r}",
            f"--output-step={float(output_step)!r}",
            f"--repeats={int(repeats)}",
            output,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        with open(output) as file:
            return json.load(file)


def best_of(function: Callable[[], Trajectory], repeats: int) -> tuple[float, Trajectory]:
    """Least wall time of ``repeats`` calls after one untimed call, and the last result."""
    result = function()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def our_engines() -> list[tuple[str, EventDriven]]:
    """(label, method) of our runs; the compiled engine only where ``compiled`` is accepted."""
    engines = []
    for compiled in (False, True):
        for label, rtol, atol in OUR_TOLERANCES:
            try:
                method = EventDriven(rtol=rtol, atol=atol, compiled=compiled)
            except TypeError:  # an EventDriven without the compiled engine
                if compiled:
                    continue
                method = EventDriven(rtol=rtol, atol=atol)
            name = "compiled" if compiled else "scipy DOP853"
            engines.append((f"ours, {name}, rtol/atol {label}", method))
    return engines


def impact_time_deviation(times: np.ndarray, exact: np.ndarray, counts: tuple[int, ...]) -> str:
    """max |t_k - t_k exact| over the first n impacts, for each n in ``counts``."""
    parts = []
    for n in counts:
        n = min(n, times.size, exact.size)
        parts.append(f"{n}: {np.max(np.abs(times[:n] - exact[:n])):.1e}")
    return ", ".join(parts)


def energy_loss_per_flight(impacts: dict[str, list[float]], first: int, last: int) -> np.ndarray:
    """v_k^+ (v_{k+1}^- + v_k^+) for impacts k = first..last (1-based), shape (last-first+1,)."""
    after = np.array(impacts["v_after"])
    before = np.array(impacts["v_before"])
    k = np.arange(first - 1, min(last, after.size - 1))
    return after[k] * (before[k + 1] + after[k])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per engine (min)")
    parser.add_argument("--siconos-python", default=DEFAULT_SICONOS_PYTHON)
    args = parser.parse_args(argv)
    python = siconos_python(args.siconos_python)
    if python is None:
        print(f"skipped: {args.siconos_python} is absent or cannot import siconos.kernel")
        return 0
    ball = BouncingBall()
    exact_times = ball.impact_times(T_END)
    t_inf = ball.accumulation_time
    rows = []
    siconos_runs = {}
    for step in SICONOS_GRIDS:
        run = run_siconos(python, ball, T_END, step, args.repeats)
        siconos_runs[step] = run
        rows.append(
            (
                f"Siconos EventDriven+LsodarOSI, output grid h = {step:g}",
                run["wall_time"],
                len(run["impacts"]["t"]),
                np.array(run["impacts"]["t"]),
                run["q_final"],
                run["v_final"],
            )
        )
    for label, method in our_engines():
        wall, trajectory = best_of(lambda m=method: simulate(ball, m, T_END), args.repeats)
        rows.append(
            (
                label,
                wall,
                trajectory.impacts.total,
                trajectory.impacts.t,
                float(trajectory.q[-1, 0]),
                float(trajectory.v[-1, 0]),
            )
        )
    siconos_time = rows[0][1]
    load = os.getloadavg()
    print(
        f"Bouncing ball q0 = 1, g = 9.81, e = 0.8, T = {T_END:g}: t_inf = {t_inf:.10f}, "
        f"exact q(T) = v(T) = 0. Best of {args.repeats}; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs."
    )
    header = (
        f"{'engine':<58} {'wall ms':>8} {'impacts':>7} {'t_inf - t_last':>14} "
        f"{'|q(T)|':>8} {'|v(T)|':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for label, wall, impacts, times, q_end, v_end in rows:
        print(
            f"{label:<58} {1e3 * wall:8.2f} {impacts:7d} {t_inf - times[-1]:14.2e} "
            f"{abs(q_end):8.1e} {abs(v_end):8.1e} {wall / siconos_time:6.2f}"
        )
    print("ratio: wall time / Siconos' (output grid h = T/2); > 1 is slower than Siconos.")
    print("\nmax |t_k - t_k exact| over the first n impacts (n: deviation):")
    for label, _, _, times, _, _ in rows:
        print(f"  {label:<58} {impact_time_deviation(times, exact_times, (10, 20, 50, 75))}")
    run = siconos_runs[SICONOS_GRIDS[0]]
    loss = energy_loss_per_flight(run["impacts"], 15, 70)
    print(
        f"\nSiconos, per flight k = 15..70: v_k+ (v_(k+1)- + v_k+) / atol = "
        f"{np.min(loss) / SICONOS_ATOL:.3f} .. {np.max(loss) / SICONOS_ATOL:.3f} "
        f"(atol = 100 eps); last impact: t = {run['impacts']['t'][-1]:.10f}, "
        f"q- = {run['impacts']['q_before'][-1]:.2e}, v- = {run['impacts']['v_before'][-1]:.2e}, "
        f"v+ = {run['impacts']['v_after'][-1]:.2e} (TOL_ED = {run['tolerance_ed']:.2e}); "
        f"in contact at T: {run['in_contact_at_end']}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
