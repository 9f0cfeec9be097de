"""Nanoseconds per accepted step: the compiled RK45/DOP853 against scipy's Python solvers.

The forced damped oscillator of tests/test_compiled_rk.py (2 states) to T = 2000 at
rtol 1e-8, atol 1e-10; the compiled loop writes into preallocated arrays (best of 5), scipy's
solve_ivp (one run) calls a plain Python right-hand side (its own
overhead dominates; a compiled right-hand side changes little). Run:
``python benchmarks/compiled_rk.py``.
"""

import math
import time

import numpy as np
from scipy.integrate import solve_ivp

from impactbench.core._jit import kernel
from impactbench.core.compiled_rk import make_rk_integrator

PARAMETERS = np.array([4.0, 0.1, 1.0, 1.3])
Y0 = np.array([1.0, 0.0])
T_END = 2000.0
RTOL, ATOL = 1e-8, 1e-10


@kernel
def forced_oscillator(t, y, p, out, ws):
    out[0] = y[1]
    out[1] = -p[0] * y[0] - p[1] * y[1] + p[2] * math.cos(p[3] * t)


def scipy_rhs(t, y):
    return np.array([y[1], -4.0 * y[0] - 0.1 * y[1] + math.cos(1.3 * t)])


def best_of(function, repeats):
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    for method in ("RK45", "DOP853"):
        integrator = make_rk_integrator(forced_oscillator, method, compile=True)
        integrator.integrate(0.0, Y0, 1.0, RTOL, ATOL, p=PARAMETERS)  # compile / load cache
        times, states = np.empty(200_001), np.empty((200_001, 2))
        buffers = (times, states, integrator.stage_buffer(2), np.empty((4, 2)), np.zeros(0))
        compiled_time, (_, count, nfev, _) = best_of(
            lambda i=integrator, b=buffers: i.integrate_into(
                0.0, Y0, T_END, math.inf, RTOL, ATOL, PARAMETERS, *b
            ),
            5,
        )
        scipy_time, solution = best_of(
            lambda m=method: solve_ivp(scipy_rhs, (0.0, T_END), Y0, method=m, rtol=RTOL, atol=ATOL),
            1,
        )
        steps = count - 1
        print(
            f"{method}: {steps} steps ({len(solution.t) - 1} in scipy), nfev {nfev} "
            f"({solution.nfev}); compiled {1e9 * compiled_time / steps:.0f} ns/step, "
            f"scipy {1e9 * scipy_time / (len(solution.t) - 1):.0f} ns/step, "
            f"compiled {1e9 * compiled_time / nfev:.0f} ns per rhs evaluation, "
            f"ratio {scipy_time / compiled_time:.0f}x"
        )


if __name__ == "__main__":
    main()
