"""Moving obstacles in the problem contract (issue 53; /work/notes/rheonomic_plan.md, phase A).

A rheonomic problem declares a gap g(t, q) with its gradient G(t, q), its rate r = dg/dt and its
drift c = d2g/dt2 + 2 (dG/dt) v (frictional: the tangent rows W_T(t, q), the obstacle's tangential
term tau and its drift c_T). ``Problem.check`` validates the declared time terms against central
differences at (t0, q0, v0) and refuses a wrong one naming it; the Moreau-Jean family
(MoreauJean, its implicit form, CatchingUp, Adaptive over them) integrates moving obstacles
(tests/test_moving_obstacles_time_stepping.py), every other method refuses such a problem
naming itself.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from moving_floor import MovingFloorBall

from impactbench import Adaptive, Problem, simulate
from impactbench.core.kernels import kernel
from impactbench.core.problem import (
    ProblemKernels,
    RheonomicCompiledProblem,
    timed_gap,
    timed_gradient,
)
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import BouncingBall

#: The rotating line's angular speed, belt speed along it, gravity.
OMEGA, BELT, GRAVITY = 1.3, 0.4, 9.81


class RotatingLine(Problem):
    """A user's plain-Python particle q = (x, y), M = I, gravity, above the line through the
    origin at the angle omega t, which carries a belt moving along itself at the speed b.

    With n(t) = (-sin wt, cos wt) and the tangent w(t) = (cos wt, sin wt):
    g = n . q, G = n, r = n' . q = -w (cos wt x + sin wt y), d2g/dt2 = -w^2 g, dG/dt = n' =
    -w w(t), so c = -w^2 g - 2 w w(t) . v; W_T = w(t), tau = -b (the belt's velocity relative
    to the line, constant), c_T = (dW_T/dt) v = w n(t) . v. Subclasses break one declaration.
    """

    rheonomic = True

    def __init__(self, conservative: bool = False, frictional: bool = False) -> None:
        self.name = type(self).__name__
        self.restitution = 0.5
        self.t0 = 0.4
        self.q0 = np.array([0.3, 1.0])
        self.v0 = np.array([0.7, -0.2])
        self.conservative = conservative
        self.frictional = frictional
        self.check()

    def normal(self, t: float) -> np.ndarray:
        return np.array([-math.sin(OMEGA * t), math.cos(OMEGA * t)])

    def tangent(self, t: float) -> np.ndarray:
        return np.array([math.cos(OMEGA * t), math.sin(OMEGA * t)])

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([0.0, -GRAVITY])

    def potential_energy(self, q):
        return GRAVITY * float(q[1])

    def gap(self, t, q):
        return np.array([self.normal(t) @ q])

    def gap_gradient(self, t, q):
        return self.normal(t)[None, :]

    def gap_rate(self, t, q):
        return np.array([-OMEGA * (self.tangent(t) @ q)])

    def gap_drift(self, t, q, v):
        return np.array([-(OMEGA**2) * (self.normal(t) @ q) - 2.0 * OMEGA * (self.tangent(t) @ v)])

    @property
    def has_friction(self) -> bool:
        return self.frictional

    def tangent_gradient(self, t, q):
        return self.tangent(t)[None, :]

    def friction(self, q):
        return np.array([0.3]), np.array([0.0])

    def tangent_rate(self, t, q):
        return np.array([-BELT])

    def tangent_drift(self, t, q, v):
        return np.array([OMEGA * (self.normal(t) @ v)])


class WrongRate(RotatingLine):
    """r of the wrong sign."""

    def gap_rate(self, t, q):
        return -super().gap_rate(t, q)


class DriftWithoutFactorTwo(RotatingLine):
    """c = d2g/dt2 + (dG/dt) v: the factor 2 on (dG/dt) v forgotten."""

    def gap_drift(self, t, q, v):
        return np.array([-(OMEGA**2) * (self.normal(t) @ q) - OMEGA * (self.tangent(t) @ v)])


class WrongTangentDrift(RotatingLine):
    """c_T of the wrong sign."""

    def tangent_drift(self, t, q, v):
        return -super().tangent_drift(t, q, v)


class NotABool(RotatingLine):
    rheonomic = 1


@kernel
def _rate_of_wrong_sign(t, q, p, out):
    out[0] = p[3] + p[4] * t  # the floor's velocity s'(t): r = -s'(t)


@kernel
def _drift_of_wrong_sign(t, q, v, p, out):
    out[0] = p[4]  # s'': c = -s''


class FloorWithWrongRate(MovingFloorBall):
    KERNELS = MovingFloorBall.KERNELS._replace(gap_rate=_rate_of_wrong_sign)


class FloorWithWrongDrift(MovingFloorBall):
    KERNELS = MovingFloorBall.KERNELS._replace(gap_drift=_drift_of_wrong_sign)


class FloorWithoutDrift(MovingFloorBall):
    KERNELS = MovingFloorBall.KERNELS._replace(gap_drift=None)


class FloorNotDeclaredRheonomic(MovingFloorBall):
    KERNELS = MovingFloorBall.KERNELS._replace(rheonomic=False)


def test_moving_floor_passes_check_and_its_kernels_take_t_first():
    ball = MovingFloorBall(q0=1.0, v0=-0.5, t0=0.3)  # constructed: its check passed
    assert ball.rheonomic and ball.kernels().rheonomic
    t, q, v, p = 0.7, np.array([0.9]), np.array([-0.5]), ball.kernel_parameters()
    s = ball.floor(t)
    out = np.full(1, np.nan)
    ball.KERNELS.gap(t, q, p, out)
    assert out[0] == 0.9 - s
    gradient = np.full((1, 1), np.nan)
    ball.KERNELS.gap_gradient(t, q, p, gradient)
    assert gradient[0, 0] == 1.0
    ball.KERNELS.gap_rate(t, q, p, out)
    assert out[0] == -(0.5 + 2.0 * t)  # -s'(t)
    ball.KERNELS.gap_drift(t, q, v, p, out)
    assert out[0] == -2.0  # -s''
    assert ball.gap(t, q).shape == (1,) and ball.gap(t, q)[0] == 0.9 - s
    assert ball.gap_gradient(t, q).shape == (1, 1)
    assert ball.gap_rate(t, q).shape == (1,) and ball.gap_drift(t, q, v).shape == (1,)
    assert timed_gap(ball, t, q)[0] == 0.9 - s
    assert timed_gradient(ball, t, q)[0, 0] == 1.0


def test_gaps_take_the_samples_times():
    ball = MovingFloorBall()
    times = np.array([0.0, 0.25, 0.5])
    q = np.array([[1.0], [2.0], [3.0]])
    expected = np.array([[ball.gap(tk, qk)[0]] for tk, qk in zip(times, q, strict=True)])
    assert np.array_equal(ball.gaps(q, times), expected)
    line = RotatingLine()
    q2 = np.array([[0.3, 1.0], [0.1, 0.5]])
    expected = np.array([line.gap(0.1, q2[0]), line.gap(0.2, q2[1])])
    assert np.array_equal(line.gaps(q2, np.array([0.1, 0.2])), expected)
    for problem, samples in ((ball, q), (line, q2)):
        with pytest.raises(ValueError, match="t must be given for a rheonomic problem"):
            problem.gaps(samples)
        with pytest.raises(ValueError, match="t must be"):
            problem.gaps(samples, np.zeros(len(samples) + 1))


def test_scleronomic_problems_are_untimed():
    ball = BouncingBall()
    assert not ball.rheonomic and not ball.kernels().rheonomic
    assert ball.kernels().gap_rate is None and ball.kernels().gap_drift is None
    q = np.array([0.25])
    assert timed_gap(ball, 123.0, q)[0] == ball.gap(q)[0]
    assert timed_gradient(ball, 123.0, q)[0, 0] == ball.gap_gradient(q)[0, 0]
    assert np.array_equal(ball.gaps(q[None, :], np.array([5.0])), ball.gaps(q[None, :]))


def test_a_user_rheonomic_problem_passes_check():
    RotatingLine()
    RotatingLine(frictional=True)


@pytest.mark.parametrize(
    ("cls", "named"),
    [
        (WrongRate, r"gap_rate\(t0, q0\) is not the derivative in t"),
        (DriftWithoutFactorTwo, r"gap_drift\(t0, q0, v0\) is not the time part"),
        (FloorWithWrongRate, r"gap_rate\(t0, q0\) is not the derivative in t"),
        (FloorWithWrongDrift, r"gap_drift\(t0, q0, v0\) is not the time part"),
    ],
)
def test_a_wrong_rate_or_drift_is_refused_naming_it(cls, named):
    with pytest.raises(ValueError, match=named):
        cls()


def test_a_wrong_tangent_drift_is_refused_naming_it():
    WrongTangentDrift()  # frictionless: tangent_drift is not part of its contract
    with pytest.raises(ValueError, match=r"tangent_drift\(t0, q0, v0\) is not the time part"):
        WrongTangentDrift(frictional=True)


def test_the_drift_check_sees_the_factor_two_from_the_difference():
    """Without the factor 2 the drift is off by w |w(t0) . v0| (the term (dG/dt) v): the check
    must see that, and must pass the correct one."""
    line = RotatingLine()
    missing = OMEGA * abs(line.tangent(line.t0) @ line.v0)
    total = abs(line.gap_drift(line.t0, line.q0, line.v0)[0])
    assert missing > 0.1 * total  # a real defect, not round-off


def test_rheonomic_declarations_are_validated():
    with pytest.raises(ValueError, match="conservative must be False for a rheonomic problem"):
        RotatingLine(conservative=True)
    with pytest.raises(ValueError, match="rheonomic must be True or False"):
        NotABool()
    with pytest.raises(ValueError, match="needs a gap_drift kernel"):
        FloorWithoutDrift()
    with pytest.raises(ValueError, match=r"KERNELS.rheonomic must be True"):
        FloorNotDeclaredRheonomic()


def test_a_scleronomic_compiled_problem_may_not_give_time_kernels():
    class BallWithRate(BouncingBall):
        KERNELS = BouncingBall.KERNELS._replace(gap_rate=MovingFloorBall.KERNELS.gap_rate)

    with pytest.raises(ValueError, match="must not give a gap_rate kernel"):
        BallWithRate()


def test_a_rheonomic_compiled_problem_declares_the_flag():
    class Undeclared(RheonomicCompiledProblem):
        KERNELS = ProblemKernels(*MovingFloorBall.KERNELS[:4])

        def __init__(self):
            self.restitution, self.q0, self.v0 = 0.5, np.array([1.0]), np.array([0.0])
            self._finish_init()

        def kernel_parameters(self):
            return np.zeros(5)

        def potential_energy(self, q):
            return 0.0

    with pytest.raises(ValueError, match=r"Undeclared.KERNELS.rheonomic must be True"):
        Undeclared()


#: The methods that do not integrate moving obstacles (yet).
METHODS = [
    PaoliSchatzman(),
    D1MinusLinear(),
    NonsmoothGeneralizedAlpha(),
    MoreauJeanProjection(),
    Adaptive(D1MinusLinear(), rtol=1e-4),
]  # EventDriven integrates moving obstacles (tests/test_moving_obstacles_event_driven.py)

#: Those that do (tests/test_moving_obstacles_time_stepping.py).
MOVING = [
    MoreauJean(),
    MoreauJean(implicit=True),
    CatchingUp(),
    Adaptive(MoreauJean(), rtol=1e-4),
]


@pytest.mark.parametrize("method", MOVING, ids=lambda method: method.name)
def test_the_moreau_jean_family_declares_moving_obstacles(method):
    assert method.moving_obstacles


@pytest.mark.parametrize("method", METHODS, ids=lambda method: method.name)
@pytest.mark.parametrize("make_problem", [MovingFloorBall, RotatingLine])
def test_every_other_method_refuses_a_moving_obstacle_naming_itself(method, make_problem):
    problem = make_problem()
    h = 1e-3 if method.requires_step else None
    assert not method.moving_obstacles
    message = (
        rf"method {re.escape(method.name)} does not integrate moving "
        rf"obstacles .* problem {problem.name} has one"
    )
    with pytest.raises(ValueError, match=message):
        simulate(problem, method, problem.t0 + 0.1, h=h)


def _floor_functions(rate_sign: float = 1.0) -> dict:
    """The moving floor s(t) = 0.5 t + t^2 as plain functions (r = -s', c = -s'')."""
    return dict(
        mass_matrix=lambda q: np.eye(1),
        forces=lambda t, q, v: np.array([-GRAVITY]),
        gap=lambda t, q: np.array([q[0] - (0.5 * t + t * t)]),
        gap_gradient=lambda t, q: np.ones((1, 1)),
        gap_rate=lambda t, q: np.array([-rate_sign * (0.5 + 2.0 * t)]),
        gap_drift=lambda t, q, v: np.array([-2.0]),
        q0=[1.0],
        v0=[0.0],
        restitution=0.8,
        t0=0.2,
    )


def test_from_functions_declares_a_moving_obstacle():
    problem = Problem.from_functions(**_floor_functions(), rheonomic=True, name="floor")
    assert problem.rheonomic
    assert problem.gap(0.2, np.array([1.0]))[0] == 1.0 - (0.1 + 0.04)
    assert problem.gap_rate(1.0, np.array([1.0]))[0] == -2.5
    with pytest.raises(ValueError, match=r"gap_rate\(t0, q0\) is not the derivative in t"):
        Problem.from_functions(**_floor_functions(rate_sign=-1.0), rheonomic=True)
    functions = _floor_functions()
    del functions["gap_drift"]
    with pytest.raises(ValueError, match="gap_drift must be a callable"):
        Problem.from_functions(**functions, rheonomic=True)
    with pytest.raises(ValueError, match=r"gap_rate is for a moving obstacle \(rheonomic=True\)"):
        Problem.from_functions(**_floor_functions())
    with pytest.raises(ValueError, match=r"method PaoliSchatzman\[.*\] does not integrate moving"):
        simulate(problem, PaoliSchatzman(), 1.0, h=1e-3)
    # the plain-Python path integrates it: the ball lands on the floor and moves with it
    run = simulate(problem, MoreauJean(), 3.0, h=1e-3)
    assert run.success and not run.stats["compiled"] and run.impacts.total > 0
    height = 0.5 * run.t + run.t * run.t
    assert np.all(run.q[:, 0] - height > -1e-2)
