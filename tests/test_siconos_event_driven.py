"""Siconos' event-driven bouncing ball (EventDriven + LsodarOSI) against our closed form.

The runs are those of benchmarks/siconos_event_driven.py (Siconos 4.4 under /usr/bin/python3,
every tolerance at Siconos' default: LSODAR rtol = 10 eps, atol = 100 eps, TOL_ED = 1e4 eps), on
``BouncingBall()`` (q0 = 1, v0 = 0, g = 9.81, e = 0.8). Skipped where that Python cannot import
Siconos.

Tolerance of the first impacts. LSODAR locates a root of its computed gap to within
HMIN = 100 eps (|t_n| + |h|) <= 100 eps 2 T (odepack's DRCHEK/DROOTS), and the computed gap is
off by a few error weights rtol |q| + atol <= 110 eps (|q| <= q0 = 1), which moves the root by
that over the impact speed (>= |v_3^-| = 2.8). Each impact time inherits the errors of the
earlier ones. With 10 error weights for the global error, impact k is within
k (200 eps T + 10 * 110 eps / 2.8); the speeds within g times that plus 10 error weights.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from impactbench.problems import BouncingBall

BENCHMARK = Path(__file__).parents[1] / "benchmarks" / "siconos_event_driven.py"
EPS = float(np.finfo(float).eps)
LSODAR_RTOL, LSODAR_ATOL = 10.0 * EPS, 100.0 * EPS
#: Before the 4th impact (t_4 = 2.214): three impacts, then flight.
T_SHORT = 2.0


def _benchmark_module():
    spec = importlib.util.spec_from_file_location("siconos_event_driven", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    module = _benchmark_module()
    python = module.siconos_python()
    if python is None:
        pytest.skip(f"{module.DEFAULT_SICONOS_PYTHON} is absent or cannot import siconos.kernel")
    return module, python


@pytest.fixture(scope="module")
def ball() -> BouncingBall:
    return BouncingBall()


def test_first_impacts_match_the_closed_form(bench, ball):
    """Three impacts to T = 2 at the exact times and speeds, exact state at T, no contact."""
    module, python = bench
    run = module.run_siconos(python, ball, T_SHORT, T_SHORT / 2.0, repeats=1)
    impacts = {key: np.array(value) for key, value in run["impacts"].items()}
    exact_times = ball.impact_times(T_SHORT)
    assert exact_times.size == impacts["t"].size == 3
    k = np.arange(1, 4)
    time_tolerance = k * (200.0 * EPS * T_SHORT + 10.0 * 110.0 * EPS / 2.8)
    assert np.all(np.abs(impacts["t"] - exact_times) <= time_tolerance)
    v1 = math.sqrt(float(ball.v0[0]) ** 2 + 2.0 * ball.gravity * float(ball.q0[0]))
    error_weights = 10.0 * (LSODAR_RTOL * v1 + LSODAR_ATOL)
    speed_tolerance = ball.gravity * time_tolerance + error_weights
    e = ball.restitution
    assert np.all(np.abs(impacts["v_before"] + v1 * e ** (k - 1.0)) <= speed_tolerance)
    assert np.all(np.abs(impacts["v_after"] - v1 * e**k) <= speed_tolerance)
    q_end, v_end = ball.exact_solution(np.array([T_SHORT]))
    assert run["t_final"] == T_SHORT
    q_tolerance = v1 * time_tolerance[-1] + 10.0 * (LSODAR_RTOL * ball.q0[0] + LSODAR_ATOL)
    assert abs(run["q_final"] - q_end[0, 0]) <= q_tolerance
    assert abs(run["v_final"] - v_end[0, 0]) <= speed_tolerance[-1]
    assert not run["in_contact_at_end"]


def test_contact_closes_when_lsodar_atol_eats_the_flight(bench, ball):
    """The documented accumulation behaviour (see the benchmark's docstring), to T = 10.

    Each flight loses atol of kinetic energy per unit mass; the first flight with
    (v^+)^2 < 2 atol does not come back with speed and the contact closes there, keeping its
    residual v^+ <= TOL_ED, which carries q linearly to T.
    """
    module, python = bench
    run = module.run_siconos(python, ball, 10.0, 5.0, repeats=1)
    impacts = {key: np.array(value) for key, value in run["impacts"].items()}
    loss = module.energy_loss_per_flight(run["impacts"], 15, 70)
    assert np.all(np.abs(loss / LSODAR_ATOL - 1.0) <= 0.1)
    v_after = impacts["v_after"]
    flights_to_contact = np.flatnonzero(v_after[:-1] ** 2 < 2.0 * LSODAR_ATOL)
    assert flights_to_contact.tolist() == [v_after.size - 2]  # only the flight before the last
    tol_ed = run["tolerance_ed"]
    assert tol_ed == pytest.approx(1e4 * EPS, rel=1e-12)
    assert 0.0 < v_after[-1] <= tol_ed < v_after[-2]
    assert abs(impacts["q_before"][-1]) <= tol_ed
    assert run["in_contact_at_end"]
    # contact from the last impact on, strictly before t_inf, with q'' = 0
    assert impacts["t"][-1] < ball.accumulation_time
    drift = impacts["q_before"][-1] + v_after[-1] * (10.0 - impacts["t"][-1])
    assert run["q_final"] == pytest.approx(drift, rel=1e-12, abs=0.0)  # q'' = 0 is exact
    assert run["v_final"] == v_after[-1]
