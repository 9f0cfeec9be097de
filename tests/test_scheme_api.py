"""The scheme API (impactbench.core.scheme): declared state, run-time parameters and
compile-time options reach a scheme's functions by name, with the shapes declared, in disjoint
parts of the work buffer; bad declarations are refused with a ValueError naming them.

The probes run on the plain-Python path (compiled=False: the same generated functions, no
compilation); the compiled path is covered by the ported schemes' own tests (MoreauJean,
CatchingUp, MoreauJeanProjection) and by the tutorial (docs/adding-a-scheme.md, whose compiled
run is compared with its plain one to the last bit). What the base class does for a scheme:
check its declared parameters, pick the loop of its frictional step on a frictional problem
(with the friction law's sizes and failure reasons), its default step limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import Problem, simulate
from impactbench.core.friction import FRICTION_STATE, STATUS_FRICTION_NO_SOLUTION
from impactbench.core.scheme import (
    DEGENERATE_GRADIENT,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_OK,
    STATUS_PROJECTION_NOT_CONVERGED,
    Parameter,
    Scheme,
    frictional_scheme,
    projection_status,
)
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    PaoliSchatzman,
)
from impactbench.methods import MoreauJeanProjection as MJP
from impactbench.methods import NonsmoothGeneralizedAlpha as NGA
from impactbench.problems import (
    BouncingBall,
    ColumnOfBeads,
    FrictionOscillator,
    ImpactingBar,
)

#: Every shape a state entry may take, one entry each.
SHAPES = {
    "q": "n",
    "v": "n",
    "a": "m",
    "b": "scalar",
    "M": "mass",
    "G": ("m", "n"),
    "H": ("n", "n"),
    "c": "n",
}


def _expected(name: str, n: int, m: int, mass_rows: int) -> tuple[int, ...]:
    shape = SHAPES[name]
    return {
        "n": (n,),
        "m": (m,),
        "scalar": (1,),
        "mass": (mass_rows, n),
        ("m", "n"): (m, n),
        ("n", "n"): (n, n),
    }[shape]


class Probe(Scheme):
    """Fills each entry with its own value at the start, and checks at every step that no entry
    was overwritten through another, that shapes are those declared, and that the parameters
    and options arrive by name."""

    state = SHAPES
    run_time = ("alpha", "beta")
    compile_time = {"flag": bool, "count": int}
    seen: list = []

    def __init__(self, flag: bool = True, count: int = 3, **options) -> None:
        super().__init__(**options)
        self.alpha = 0.25
        self.beta = -4.0
        self.flag = flag
        self.count = count

    @staticmethod
    def start(s, problem, options, n, m, t0, h, q0, v0, p, e, par):
        assert s.q_next is None and s.v_next is None  # no candidate before the first step
        for number, name in enumerate(SHAPES):
            getattr(s, name)[...] = number + 1.0
        s.q[:] = q0
        s.v[:] = v0
        return STATUS_OK, 0, 0

    @staticmethod
    def step(s, problem, options, n, m, k, t, t_next, h, p, e, par):
        mass_rows = 1 if problem.diagonal_mass else n
        Probe.seen.append((par.alpha, par.beta, options.flag, options.count))
        for number, name in enumerate(SHAPES):
            entry = getattr(s, name)
            assert entry.shape == _expected(name, n, m, mass_rows), name
            if name not in ("q", "v"):
                assert np.all(entry == number + 1.0), name
        for name in ("impulse", "normal_before", "normal_after", "multipliers"):
            assert getattr(s, name).shape == (m,), name
        assert s.rows.shape == (m,) and s.q_next.shape == s.v_next.shape == (n,)
        s.q_next[:] = s.q
        s.v_next[:] = s.v
        return STATUS_OK, False, 0, 0


@pytest.mark.parametrize(
    "problem",
    [ImpactingBar(4), ColumnOfBeads(3, mass_structure="dense")],
    ids=["diagonal M, m < n", "dense M, m = n"],
)
def test_the_declared_state_arrives_by_name_with_its_shapes_in_disjoint_rows(problem):
    Probe.seen.clear()
    run = simulate(problem, Probe(flag=False, count=7, compiled=False), 3e-3, h=1e-3)
    assert run.success and len(run.t) == 4
    np.testing.assert_array_equal(run.q[-1], problem.q0)  # the probe keeps the state
    assert Probe.seen == [(0.25, -4.0, False, 7)] * 3


def test_a_compile_time_option_of_another_type_is_refused_by_name():
    with pytest.raises(ValueError, match="option count must be of type int, got 2.0"):
        simulate(ImpactingBar(4), Probe(count=2.0, compiled=False), 1e-3, h=1e-3)


@pytest.mark.parametrize(
    "state, message",
    [
        ({"q": "n", "v": "n", "x": "k"}, r"state\['x'\] must be one of"),
        ({"q": "n", "v": "n", "impulse": "m"}, "may not declare 'impulse'"),
        ({"q": "n", "x": "n"}, "must declare 'v' of shape 'n'"),
    ],
)
def test_a_bad_state_declaration_is_refused_by_name(state, message):
    bad = type("Bad", (Probe,), {"state": state})
    with pytest.raises(ValueError, match=message):
        simulate(ImpactingBar(4), bad(compiled=False), 1e-3, h=1e-3)


class Ranged(Scheme):
    """Run-time parameters declared with their ranges (checked by the base), and one the
    scheme sets itself."""

    state = {"q": "n", "v": "n"}
    run_time = {
        "theta": Parameter(0.0, 1.0, open_low=True),
        "count": Parameter(integer=True),
        "tol": Parameter(0.0, open_low=True),
        "fixed": float,
    }
    fixed = 2.0

    def __init__(self, theta: float = 0.5, count: int = 3, **options) -> None:
        super().__init__(theta=theta, count=count, **options)


def test_declared_parameters_are_checked_by_name_and_set_by_the_base():
    ranged = Ranged(theta=1, count=4, tol=1e-9)
    assert (ranged.theta, ranged.count, ranged.tol) == (1.0, 4, 1e-9)
    assert type(ranged.theta) is float and type(ranged.count) is int
    np.testing.assert_array_equal(ranged._method_vector(), [1.0, 4.0, 1e-9, 2.0])
    for options, message in [
        ({"theta": 0.0}, r"theta must lie in \(0, 1\], got 0.0"),
        ({"theta": True}, "theta must be a real number, not a boolean"),
        ({"count": 0}, "count must be an integer in 1.."),
        ({"count": 1.5}, "count must be a positive integer"),
        ({"tol": -1.0}, "tol must be > 0, got -1.0"),
    ]:
        with pytest.raises(ValueError, match=message):
            Ranged(**options)
    with pytest.raises(TypeError, match="fixed"):  # not a constructor argument
        Ranged(fixed=3.0)


def test_a_frictional_step_is_the_friction_law_and_runs_on_the_friction_state():
    assert all(scheme.friction_law for scheme in (MoreauJean, CatchingUp, NGA))
    assert not any(scheme.friction_law for scheme in (PaoliSchatzman, D1MinusLinear, MJP, Probe))
    frictional, frictionless = FrictionOscillator().kernels(), BouncingBall().kernels()
    assert NGA.loop_scheme(frictionless, {"a": 1}) == (NGA, {"a": 1})
    scheme, options = NGA.loop_scheme(frictional, {"a": 1})
    assert scheme is frictional_scheme(NGA) and options == {"a": 1}  # one class per scheme
    assert issubclass(scheme, NGA) and scheme.step is NGA.frictional_step
    assert scheme.state == {**NGA.state, **FRICTION_STATE}
    # the implicit Moreau-Jean scheme: its own step and state, frictional on friction
    options = {"implicit": True, "position_first": False, "approaching_only": False}
    implicit, taken = MoreauJean.loop_scheme(frictional, dict(options))
    assert taken == {"approaching_only": False} and implicit.linear_forces
    assert {"W", "tangent_impulse"} <= set(implicit.state)


@pytest.mark.parametrize("scheme", [MoreauJean, CatchingUp, NGA, PaoliSchatzman, D1MinusLinear])
def test_every_scheme_names_the_friction_law_failure(scheme):
    """A frictional step that fails with STATUS_FRICTION_NO_SOLUTION is explained (the
    generalized-alpha scheme's own reasons once left it out)."""
    assert STATUS_FRICTION_NO_SOLUTION in scheme.failure_reasons


class _CrowdedFriction(Problem):
    """A frictional problem with more contacts (2) than degrees of freedom (1)."""

    n_dof, n_constraints = 1, 2
    q0, v0 = np.array([0.5]), np.array([0.0])
    restitution = 0.0

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.zeros(1)

    def potential_energy(self, q):
        return 0.0

    def gap(self, q):
        return np.array([q[0], 1.0 - q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0], [-1.0]])

    def tangent_gradient(self, q):
        return np.array([[1.0], [1.0]])

    def friction(self, q):
        return np.full(2, 0.3), np.zeros(2)


@pytest.mark.parametrize("scheme", [MoreauJean, NGA], ids=["MoreauJean", "NGA"])
def test_the_frictional_loop_refuses_more_contacts_than_degrees_of_freedom(scheme):
    with pytest.raises(ValueError, match="n_constraints <= n_dof"):
        simulate(_CrowdedFriction(), scheme(compiled=False), 1e-2, h=1e-3)


def test_the_default_step_limit_is_the_declared_factor_of_the_stable_step():
    bar = ImpactingBar(4)
    for scheme in (CatchingUp(), PaoliSchatzman(), D1MinusLinear()):
        assert scheme.step_limit(bar) == bar.stable_step
    assert Probe().step_limit(bar) is None  # no factor declared


def test_a_projection_result_reads_as_a_status():
    assert projection_status(3) == projection_status(0) == STATUS_OK
    assert projection_status(DEGENERATE_GRADIENT) == STATUS_DEGENERATE_GRADIENT
    assert projection_status(-1) == STATUS_PROJECTION_NOT_CONVERGED
