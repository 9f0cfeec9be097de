"""Cost per step of the adaptive driver against the fixed-step loop (issue 36, item 4).

    python benchmarks/adaptive_overhead.py [--calls 20]

On the bouncing ball with e = 0.8 to t = 1000 (resting after t ~ 4: the adaptive run keeps its
step at h_max, so both runs take the same number of steps), compiled MoreauJean:

* the fixed-step loop at h = h_max: ns per step;
* ``Adaptive(MoreauJean(), h_max=h_max)``: ns per accepted step, and per call of the scheme's
  step (three per attempt: two of h/2, one of h), so that the controller's own cost (saving and
  restoring the work buffer, the error norm, the gaps, the output) is the difference from the
  fixed-step loop's ns per step.

Each figure is the minimum of ``integration_time`` over ``calls`` calls (the compiled loop
only, after a warm-up call).
"""

from __future__ import annotations

import argparse

from impactbench.core.adaptive import Adaptive
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    calls = parser.parse_args().calls
    ball = BouncingBall(restitution=0.8)
    t_end, h_max = 1000.0, 0.05
    fixed = MoreauJean()
    adaptive = Adaptive(MoreauJean(), rtol=1e-4, atol=1e-6, h_max=h_max)
    fixed.solve(ball, t_end, h=h_max, output_every=1000)
    adaptive.solve(ball, t_end)
    fixed_time = adaptive_time = float("inf")
    for _ in range(calls):
        run = fixed.solve(ball, t_end, h=h_max, output_every=1000)
        fixed_time = min(fixed_time, run.stats["integration_time"])
        steps_fixed = run.stats["steps"]
        run = adaptive.solve(ball, t_end)
        adaptive_time = min(adaptive_time, run.stats["integration_time"])
        stats = run.stats
    attempts = stats["steps"] + stats["rejected_steps"]
    per_fixed = 1e9 * fixed_time / steps_fixed
    per_accepted = 1e9 * adaptive_time / stats["steps"]
    per_call = 1e9 * adaptive_time / (3 * attempts)
    print(f"fixed step: {steps_fixed} steps, {per_fixed:.1f} ns/step")
    print(
        f"adaptive: {stats['steps']} accepted, {stats['rejected_steps']} rejected, "
        f"{per_accepted:.1f} ns/accepted step, {per_call:.1f} ns per scheme step call "
        f"(output at every accepted step)"
    )
    print(f"ratio per accepted step: {per_accepted / per_fixed:.2f}")


if __name__ == "__main__":
    main()
