"""The scheme API (impactbench.core.scheme): declared state, run-time parameters and
compile-time options reach a scheme's functions by name, with the shapes declared, in disjoint
parts of the work buffer; bad declarations are refused with a ValueError naming them.

The probes run on the plain-Python path (compiled=False: the same generated functions, no
compilation); the compiled path is covered by the ported schemes' own tests (MoreauJean,
CatchingUp, MoreauJeanProjection) and by the tutorial (docs/adding-a-scheme.md, whose compiled
run is compared with its plain one to the last bit).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core.scheme import STATUS_OK, Scheme
from impactbench.problems import ColumnOfBeads, ImpactingBar

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
