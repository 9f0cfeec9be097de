"""Problem kernels as run-time values (impactbench.core.driver, module docstring): a compiled
loop of a scheme serves every problem of its sizes and flags, and a problem compiles only its
own kernels' entry points; ``specialised=True`` keeps the loop with the kernels inlined.

The ball and the impacting oscillator (one DOF, one affine constraint, a constant mass) share
their loops; the plain-Python loop, which calls the kernels as they are, gives the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, ImpactingOscillator


@pytest.mark.parametrize("scheme", [MoreauJean, PaoliSchatzman], ids=lambda s: s.__name__)
def test_two_problems_of_the_same_sizes_and_flags_share_one_compiled_loop(scheme):
    loops = []
    for problem in (BouncingBall(restitution=0.5), ImpactingOscillator(restitution=0.5)):
        loop = scheme().loop_for(problem)[0].loop
        before = len(loop.signatures)
        compiled = simulate(problem, scheme(), problem.t0 + 2.0, h=1e-3)
        plain = simulate(problem, scheme(compiled=False), problem.t0 + 2.0, h=1e-3)
        assert compiled.stats["compiled"] and compiled.impacts.total > 0
        np.testing.assert_allclose(compiled.q, plain.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(compiled.v, plain.v, rtol=0, atol=1e-12)
        assert compiled.impacts.total == plain.impacts.total
        loops.append((loop, len(loop.signatures) - before))
    (first, _), (second, compiled_for_second) = loops
    # the second problem compiled no loop (counted as new signatures of the one dispatcher: other
    # tests of the same process may have compiled it for other argument types before)
    assert second is first and compiled_for_second == 0


def test_the_specialised_build_inlines_the_kernels_and_takes_the_same_steps():
    ball = BouncingBall(restitution=0.5)
    default = MoreauJean().loop_for(ball)[0].loop
    specialised = MoreauJean(specialised=True).loop_for(ball)[0].loop
    assert specialised is not default
    assert MoreauJean(specialised=True).compile_options(ball) != MoreauJean().compile_options(ball)
    inlined = simulate(ball, MoreauJean(specialised=True), 2.0, h=1e-3)
    first_class = simulate(ball, MoreauJean(), 2.0, h=1e-3)
    np.testing.assert_allclose(inlined.q, first_class.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(inlined.v, first_class.v, rtol=0, atol=1e-12)
    assert inlined.impacts.total == first_class.impacts.total > 0


def test_specialised_must_be_a_bool():
    with pytest.raises(ValueError, match="specialised"):
        MoreauJean(specialised=1)
