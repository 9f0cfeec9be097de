"""Contract tests over every registered method and problem: a new entry of ``METHODS`` or
``PROBLEMS`` is tested the day it is registered (issue: one loop, many schemes).

Methods: the name is derived from the constructor and round-trips through ``get_method``; every
named constructor parameter is stored; unknown parameters are refused naming them; a run is
deterministic; ``impactbench.core.compilation.compiled_code`` identifies the code a run
executes; the compiled and plain-Python loops of a time-stepping scheme take the same steps.
Problems: the gradient is the derivative of the gap (central differences), M is symmetric
positive definite, forces are finite, q0 is admissible, the restitution is validated.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core.compilation import compiled_code
from impactbench.core.problem import timed_gap, timed_gradient
from impactbench.methods import METHODS, get_method
from impactbench.problems import PROBLEMS, SlantedWall

METHOD_CLASSES = list(METHODS.values())
TIME_STEPPING = [cls for cls in METHOD_CLASSES if cls.requires_step]


def _run(method, problem, duration=1.5):
    h = 2e-3 if method.requires_step else None
    return simulate(problem, method, problem.t0 + duration, h=h)


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_name_is_derived_from_the_constructor_and_round_trips(cls):
    method = cls()
    signature = inspect.signature(cls.__init__)
    named = [
        name
        for name, parameter in signature.parameters.items()
        if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    assert list(method.parameters()) == named
    for name, value in method.parameters().items():
        assert getattr(method, name) == value
        default = signature.parameters[name].default
        if default is not inspect.Parameter.empty:
            assert value == default, name
    again = get_method(method.name)
    assert type(again) is cls
    assert repr(again) == repr(method)
    assert eval(repr(method), {cls.__name__: cls, "inf": math.inf}).name == method.name


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_unknown_parameter_is_refused_naming_it(cls):
    with pytest.raises(ValueError, match="no_such_parameter"):
        get_method(f"{cls.__name__}[no_such_parameter=1]")


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_runs_are_deterministic(cls):
    problem = SlantedWall(restitution=0.7)
    first, second = _run(cls(), problem), _run(cls(), problem)
    np.testing.assert_array_equal(first.t, second.t)
    np.testing.assert_array_equal(first.q, second.q)
    np.testing.assert_array_equal(first.v, second.v)
    np.testing.assert_array_equal(first.impacts.t, second.impacts.t)


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_compiled_code_identifies_the_code_a_run_executes(cls):
    """Hashable, equal for two instances of equal parameters (the runner skips the warm-up of
    a run whose compiled code its process has run), None on the plain-Python path."""
    problem = SlantedWall(restitution=0.7)
    code = compiled_code(cls(), problem)
    assert hash(code) == hash(compiled_code(cls(), problem)) and code == compiled_code(
        cls(), problem
    )
    if "compiled" in cls().parameters():
        assert code is not None
        assert compiled_code(cls(compiled=False), problem) is None


@pytest.mark.parametrize("problem_name", PROBLEMS)
@pytest.mark.parametrize("cls", TIME_STEPPING, ids=lambda c: c.__name__)
def test_compiled_and_plain_python_loops_agree(cls, problem_name):
    """One source, two paths: the same steps up to round-off (the compiled code may contract
    multiply-adds), and the same impacts. A scheme without a friction law refuses a frictional
    problem on both paths, naming both, and one without moving obstacles a rheonomic problem."""
    problem = PROBLEMS[problem_name]()
    refusal = None
    if problem.has_friction and not cls.friction_law:
        refusal = "no friction law"
    elif problem.rheonomic and not cls.moving_obstacles:
        refusal = "does not integrate moving obstacles"
    if refusal:
        for compiled in (True, False):
            with pytest.raises(ValueError, match=refusal) as error:
                _run(cls(compiled=compiled), problem, 0.5)
            assert cls.__name__ in str(error.value) and problem.name in str(error.value)
        return
    compiled = _run(cls(), problem, 0.5)
    plain = _run(cls(compiled=False), problem, 0.5)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    scale = max(1.0, float(np.abs(compiled.q).max()))
    np.testing.assert_allclose(plain.q, compiled.q, rtol=0, atol=1e-9 * scale)
    assert plain.impacts.total == compiled.impacts.total


@pytest.mark.parametrize("problem_name", PROBLEMS)
def test_problem_kernels_are_consistent(problem_name):
    problem = PROBLEMS[problem_name]()
    problem.check()
    q, v = np.asarray(problem.q0, float), np.asarray(problem.v0, float)
    n, m = problem.n_dof, problem.n_constraints
    t0 = problem.t0  # a moving obstacle's gap g(t, q) is checked at fixed t0

    def gap(point):
        return timed_gap(problem, t0, point)

    assert q.shape == v.shape == (n,)
    assert gap(q).shape == (m,)
    # a published start may lie within the problem's declared initial-penetration tolerance
    depth = max(1e-12, problem.initial_penetration_tolerance or 0.0)
    assert np.all(gap(q) >= -depth)
    M = problem.mass_matrix(q)
    assert M.shape == (n, n)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-14 * np.abs(M).max())
    assert np.linalg.eigvalsh(M).min() > 0
    assert np.all(np.isfinite(problem.forces(problem.t0, q, v)))
    # the gradient is the derivative of the gap, at q0 and at a perturbed point
    rng = np.random.default_rng(0)
    for point in (q, q + 0.01 * rng.standard_normal(n)):
        gradient = timed_gradient(problem, t0, point)
        assert gradient.shape == (m, n)
        step = 1e-6 * max(1.0, float(np.abs(point).max()))
        numeric = np.empty((m, n))
        for j in range(n):
            dq = np.zeros(n)
            dq[j] = step
            numeric[:, j] = (gap(point + dq) - gap(point - dq)) / (2 * step)
        np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("problem_name", PROBLEMS)
def test_problem_restitution_is_validated(problem_name):
    factory = PROBLEMS[problem_name]
    assert "restitution" in inspect.signature(factory).parameters  # a new problem takes one too
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="restitution"):
            factory(restitution=bad)


def test_problem_registry_names_its_classes():
    for name, cls in PROBLEMS.items():
        assert cls.__name__ == name
        assert cls().name == name


@pytest.mark.parametrize(
    ("name", "per_step"),
    [("MoreauJean", 1), ("CatchingUp", 1), ("PaoliSchatzman", 1), ("D1MinusLinear", 2),
     ("MoreauJeanProjection", 1)],
)  # fmt: skip
def test_force_evaluations_count_every_call(name, per_step):
    """stats["force_evaluations"] is the number of calls of the problem's forces: counted through
    the plain-Python path (a wrapper counts the calls) and equal in the compiled loop."""
    from impactbench.problems import BouncingBall

    ball = BouncingBall(restitution=0.8)
    method = METHODS[name](compiled=False)
    calls = 0
    forces = ball.forces

    def counted(t, q, v):
        nonlocal calls
        calls += 1
        return forces(t, q, v)

    ball.forces = counted
    ball.check()  # what simulate's validation of the problem calls, outside the run
    checking = calls
    calls = 0
    run = simulate(ball, method, 2.0, h=1e-2)
    calls -= checking
    assert run.stats["force_evaluations"] == calls
    steps = run.stats["steps"]
    assert per_step * steps <= calls <= per_step * steps + 1
    compiled = simulate(BouncingBall(restitution=0.8), METHODS[name](), 2.0, h=1e-2)
    assert compiled.stats["force_evaluations"] == calls


def test_generalized_alpha_counts_each_fixed_point_iteration():
    from impactbench.problems import DoublePendulum

    pendulum = DoublePendulum()
    calls = 0
    forces = pendulum.forces

    def counted(t, q, v):
        nonlocal calls
        calls += 1
        return forces(t, q, v)

    pendulum.forces = counted
    pendulum.check()  # what simulate's validation of the problem calls, outside the run
    checking = calls
    calls = 0
    run = simulate(pendulum, METHODS["NonsmoothGeneralizedAlpha"](compiled=False), 0.5, h=1e-2)
    assert run.stats["force_evaluations"] == calls - checking > 2 * run.stats["steps"]
