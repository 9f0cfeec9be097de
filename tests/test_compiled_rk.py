"""The compiled Runge-Kutta pairs against scipy's RK45 and DOP853 and against a closed form."""

import math

import numpy as np
import pytest
from scipy.integrate import DOP853, RK45, solve_ivp

from impactbench.core._jit import kernel
from impactbench.core.compiled_rk import make_rk_integrator

SCIPY_SOLVERS = {"RK45": RK45, "DOP853": DOP853}
# Forced damped oscillator x'' + c x' + k x = F cos(W t): p = (k, c, F, W).
PARAMETERS = np.array([4.0, 0.1, 1.0, 1.3])
Y0 = np.array([1.0, 0.0])
T_END = 20.0
NO_WORK = np.zeros(0)


@kernel
def forced_oscillator(t, y, p, out, ws):
    out[0] = y[1]
    out[1] = -p[0] * y[0] - p[1] * y[1] + p[2] * math.cos(p[3] * t)


def scipy_rhs(t, y):
    k, c, force, w = PARAMETERS
    return np.array([y[1], -k * y[0] - c * y[1] + force * math.cos(w * t)])


def exact_solution(t, p):
    """Closed form of the forced damped oscillator from Y0 at t = 0 (underdamped)."""
    k, c, force, w = p
    omega = math.sqrt(k)
    zeta = c / (2 * omega)
    omega_d = omega * math.sqrt(1 - zeta**2)
    # Particular solution a cos(W t) + b sin(W t).
    determinant = (k - w**2) ** 2 + (c * w) ** 2
    a = force * (k - w**2) / determinant
    b = force * c * w / determinant
    c1 = Y0[0] - a
    c2 = (Y0[1] - b * w + zeta * omega * c1) / omega_d
    decay = math.exp(-zeta * omega * t)
    cos_d, sin_d = math.cos(omega_d * t), math.sin(omega_d * t)
    x = decay * (c1 * cos_d + c2 * sin_d) + a * math.cos(w * t) + b * math.sin(w * t)
    v = (
        decay * (-zeta * omega) * (c1 * cos_d + c2 * sin_d)
        + decay * omega_d * (-c1 * sin_d + c2 * cos_d)
        - a * w * math.sin(w * t)
        + b * w * math.cos(w * t)
    )
    return np.array([x, v])


@pytest.fixture(scope="module", params=["RK45", "DOP853"])
def integrators(request):
    method = request.param
    return (
        method,
        make_rk_integrator(forced_oscillator, method, compile=True),
        make_rk_integrator(forced_oscillator.py_func, method, compile=False),
    )


def test_step_for_step_equals_scipy(integrators):
    """From scipy's state before each step, one controller step gives scipy's next step, the same
    rejections (forced by rtol 1e-4) and its dense output at interior points, to 1e-12 of the
    state's size.

    The next step size proposal depends on the error estimate, a sum of stages with weights
    summing to zero: it cancels, so its rounding (and scipy's, whose BLAS sums in another order)
    is amplified by max|K| / |error|; it is compared with that bound.
    """
    method, compiled, plain = integrators
    rtol, atol = 1e-4, 1e-7
    solver = SCIPY_SOLVERS[method](scipy_rhs, 0.0, Y0, T_END, rtol=rtol, atol=atol)
    n = Y0.size
    for integrator in (compiled, plain):
        total_rejected = 0
        solver = SCIPY_SOLVERS[method](scipy_rhs, 0.0, Y0, T_END, rtol=rtol, atol=atol)
        f0 = scipy_rhs(0.0, Y0)
        stages = integrator.stage_buffer(n)
        h_abs = integrator.initial_step(0.0, Y0, f0, T_END, math.inf, rtol, atol, PARAMETERS,
                                        stages, NO_WORK)  # fmt: skip
        assert h_abs == pytest.approx(solver.h_abs, rel=1e-14)
        y_new, f_new, dense, out = np.zeros(n), np.zeros(n), integrator.dense_buffer(n), np.zeros(n)
        while solver.status == "running":
            t, y, f, h_abs = solver.t, solver.y.copy(), solver.f.copy(), solver.h_abs
            nfev = solver.nfev
            status, t_new, h, h_next, attempts = integrator.step(
                t, y, f, h_abs, T_END, math.inf, (rtol, atol), PARAMETERS, stages, y_new, f_new,
                NO_WORK,
            )  # fmt: skip
            solver.step()
            assert status == 0
            assert attempts * integrator.n_stages == solver.nfev - nfev
            total_rejected += attempts - 1
            assert t_new == pytest.approx(solver.t, rel=1e-12, abs=0)
            size = np.abs(solver.y).max()
            np.testing.assert_allclose(y_new, solver.y, rtol=1e-12, atol=1e-12 * size)
            cancellation = np.abs(stages[: integrator.n_stages + 1]).max() / max(
                np.abs(stages[: integrator.n_stages + 1].T @ _error_weights(solver)).max(), 1e-300
            )
            assert h_next == pytest.approx(solver.h_abs, rel=1e-12 + 1e-14 * cancellation)
            extra = integrator.dense_prepare(
                t, h, y, y_new, f_new, PARAMETERS, stages, dense, NO_WORK
            )
            nfev = solver.nfev
            interpolant = solver.dense_output()
            assert extra == solver.nfev - nfev  # DOP853's three extra stages
            for theta in (0.1, 0.37, 0.5, 0.9):
                integrator.dense_evaluate(t + theta * h, t, h, y, dense, out)
                np.testing.assert_allclose(
                    out, interpolant(t + theta * h), rtol=1e-12, atol=1e-12 * size
                )
        assert total_rejected >= 1


def _error_weights(solver):
    return solver.E5 if isinstance(solver, DOP853) else solver.E


@pytest.mark.parametrize(
    ("t0", "t_bound", "max_step"), [(0.0, T_END, math.inf), (3.0, -5.0, math.inf), (0.0, 7.0, 0.3)]
)
def test_integrate_equals_solve_ivp(integrators, t0, t_bound, max_step):
    """The whole run, forward, backward and with max_step: the same accepted steps and nfev as
    solve_ivp (so the same rejections), compiled and plain Python alike.

    The step-for-step test checks each step to 1e-12; over a run, the step sizes drift apart by
    the rounding of the error estimate (a cancelling sum, whose rounding scipy's BLAS and this
    loop commit in different orders, amplified by max|K| / |error| up to ~1e6), so the times are
    compared to 1e-9 of the interval (measured: up to 1e-10) and the states to 1e-12 with scipy's
    solution at those times (measured: up to 3e-13).
    """
    method, compiled, plain = integrators
    options = {"method": method, "rtol": 1e-4, "atol": 1e-7, "max_step": max_step}
    reference = solve_ivp(scipy_rhs, (t0, t_bound), Y0, **options)
    solution = solve_ivp(scipy_rhs, (t0, t_bound), Y0, dense_output=True, **options).sol
    results = [
        integrator.integrate(t0, Y0, t_bound, 1e-4, 1e-7, max_step=max_step, p=PARAMETERS)
        for integrator in (compiled, plain)
    ]
    for times, states, nfev, rejected in results:
        assert times.shape == reference.t.shape
        assert nfev == reference.nfev
        if max_step == math.inf and t0 == 0.0:
            assert rejected >= 1
        np.testing.assert_allclose(times, reference.t, rtol=0, atol=1e-9 * abs(t_bound - t0))
        np.testing.assert_allclose(states, solution(times).T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize(("method", "order"), [("RK45", 5), ("DOP853", 8)])
def test_order_at_fixed_step_against_closed_form(method, order):
    """With tolerances so loose that every step is accepted, proposing h with max_step = h
    fixes the step: the global
    error at T = 10 against the closed form decays as h^order, fitted over 10 steps spanning
    1.5 decades."""
    integrator = make_rk_integrator(forced_oscillator, method, compile=True)
    p = np.array([1.0, 0.1, 1.0, 1.3])
    t_end = 10.0
    smallest = 0.01 if method == "RK45" else 0.1
    counts = np.unique(np.round(np.geomspace(t_end / (smallest * 31.6), t_end / smallest, 10)))
    errors = []
    stages, y_new, f_new = integrator.stage_buffer(2), np.zeros(2), np.zeros(2)
    for count in counts:
        h = t_end / count * (1 + 1e-9)  # the last step, clipped at t_end, shorter by 1e-9 h
        t, y = 0.0, Y0.copy()
        f = np.zeros(2)
        forced_oscillator(t, y, p, f, NO_WORK)
        steps = 0
        while t < t_end:
            status, t, _, _, attempts = integrator.step(
                t, y, f, h, t_end, h, (1e3, 1e3), p, stages, y_new, f_new, NO_WORK
            )
            assert (status, attempts) == (0, 1)
            y, f = y_new.copy(), f_new.copy()
            steps += 1
        assert steps == count
        errors.append(np.abs(y - exact_solution(t_end, p)).max())
    slope = np.polyfit(np.log(t_end / counts), np.log(errors), 1)[0]
    assert len(counts) >= 10
    assert slope == pytest.approx(order, abs=0.3)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="method"):
        make_rk_integrator(forced_oscillator, "RK23")
    integrator = make_rk_integrator(forced_oscillator.py_func, "RK45", compile=False)
    with pytest.raises(ValueError, match="rtol"):
        integrator.integrate(0.0, Y0, 1.0, 0.0, 1e-6, p=PARAMETERS)
    with pytest.raises(ValueError, match="atol"):
        integrator.integrate(0.0, Y0, 1.0, 1e-6, -1.0, p=PARAMETERS)
    with pytest.raises(ValueError, match="max_step"):
        integrator.integrate(0.0, Y0, 1.0, 1e-6, 1e-6, max_step=0.0, p=PARAMETERS)


@kernel
def blow_up(t, y, p, out, ws):
    out[0] = y[0] * y[0]


def test_step_size_too_small_as_scipy():
    """y' = y^2, y(0) = 1 blows up at t = 1: both stop there with scipy's message, after the
    same accepted steps."""
    reference = solve_ivp(lambda t, y: y * y, (0.0, 2.0), [1.0], method="RK45", rtol=1e-6)
    assert reference.status == -1
    assert "less than spacing between numbers" in reference.message
    integrator = make_rk_integrator(blow_up, "RK45", compile=True)
    with pytest.raises(RuntimeError, match="less than spacing between numbers") as failure:
        integrator.integrate(0.0, np.array([1.0]), 2.0, 1e-6, 1e-6)
    last_time = float(str(failure.value).split("t = ")[1].rstrip(")."))
    assert last_time == pytest.approx(reference.t[-1], rel=1e-12)
    assert abs(last_time - 1.0) < 1e-5
