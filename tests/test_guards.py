"""Guards without holes (issue 51, item 5): each reproduction of the issue, refused or caught.

Each test is one finding: a parameter set on a problem after construction, an adaptive option
outside what the controller supports, ... Before the fixes each ran with status ok (or a
misleading failure); now each is refused with a ValueError naming the argument, or stops with
the failure it is.
"""

from __future__ import annotations

import pytest

from impactbench import simulate
from impactbench.core.adaptive import MAX_ORDER, Adaptive
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall, SlidingBlock

# --------------------------------------------------------------------------------------------
# A parameter set after construction is validated at the next run


def test_a_negative_mu_set_after_construction_is_refused_by_the_next_run():
    # block.mu = -3 pumped energy into the block (0.5 J to 464 J) with status ok: the check
    # validated the parameter vector of construction while the run read the new one
    block = SlidingBlock(angle=0.0, mu=0.5, u0=1.0)
    block.mu = -3.0
    with pytest.raises(ValueError, match=r"\(mu\) must be >= 0, got \[-3.0\]"):
        simulate(block, MoreauJean(), 1.0, h=1e-3)
    block.mu = 0.5  # restored: the problem runs again
    block.check()


def test_a_parameter_changed_after_construction_is_what_the_python_methods_evaluate():
    # the kernels' Python wrappers (forces, friction, ...) and the run read one vector
    block = SlidingBlock(angle=0.0, mu=0.5)
    block.mu = 0.25
    block.check()
    assert block.friction(block.q0)[0].tolist() == [0.25]


# --------------------------------------------------------------------------------------------
# Adaptive: options within what the controller supports, checked by every run


@pytest.mark.parametrize(
    ("argument", "value"),
    [("order", MAX_ORDER + 1), ("order", 100), ("rtol", 1.0), ("rtol", 2.0)],
)
def test_adaptive_refuses_options_outside_their_range(argument, value):
    # order=100 divided the error estimate by 2^100 - 1: every step was accepted at h_max and
    # the ball sank 0.139 m into the floor, status ok
    with pytest.raises(ValueError, match=argument):
        Adaptive(MoreauJean(), **{argument: value})


@pytest.mark.parametrize(
    ("argument", "value"), [("order", 100), ("rtol", 1.5), ("h_min", -1.0), ("atol", 0.0)]
)
def test_an_adaptive_option_set_after_construction_is_checked_by_the_run(argument, value):
    method = Adaptive(MoreauJean())
    setattr(method, argument, value)
    with pytest.raises(ValueError, match=argument):
        simulate(BouncingBall(), method, 1.0)


def test_adaptive_refuses_a_smallest_step_above_the_largest_step_of_the_run():
    # h_max defaults to (t_end - t0) / 10 = 0.1: no step of the run could be at least h_min
    with pytest.raises(ValueError, match="h_min must be <= the largest step 0.1"):
        simulate(BouncingBall(), Adaptive(MoreauJean(), h_min=0.5), 1.0)
