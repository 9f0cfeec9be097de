"""Generic loops (impactbench.core.driver, module docstring): from n = GENERIC_FROM DOF one
compiled loop reads the sizes at run time and serves every size of a problem.

The threshold is lowered to the smallest n a generic loop allows (WHOLE_ROWS_FROM) so that the
plain-Python runs it is compared with stay small; the loop compiled is the one every problem of
GENERIC_FROM DOF or more runs (its cache name does not depend on the sizes).

A problem may declare ``sizes_at_run_time`` (the impacting bar and the column of beads do): its
loops are generic from WHOLE_ROWS_FROM DOF.

The bar (one constraint) and the column (m = n constraints, the LCP) each run at two sizes on
one compiled loop, compiled at most once (the second size adds no signature and no compile),
and take the steps of the plain-Python loop, which binds the sizes as constants.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.core import driver
from impactbench.methods import MoreauJean
from impactbench.problems import ColumnOfBeads, ImpactingBar, NewtonsCradle


def _bar(n: int) -> tuple[ImpactingBar, float, float]:
    bar = ImpactingBar(n - 1)
    h = 0.5 * bar.stable_step
    return bar, h, bar.contact_time + 0.5 * bar.contact_duration


def _column(n: int) -> tuple[ColumnOfBeads, float, float]:
    """The column at rest on the floor: every contact closed, one LCP per step."""
    column = ColumnOfBeads(n, radius=0.1, q0=0.1 * (2.0 * np.arange(n) + 1.0))
    return column, 1e-3, 0.2


SMALLEST = driver.WHOLE_ROWS_FROM


def _reads_sizes_at_run_time(loop) -> bool:
    """Whether the compiled loop reads n from its run-time arguments (a local read from its
    tuple ``sizes``, which also carries the problem's kernels), not as a constant global."""
    return "N_DOF" in loop.py_func.__code__.co_varnames


@pytest.mark.parametrize(
    "make, sizes",
    [(_bar, (SMALLEST, SMALLEST + 7)), (_column, (SMALLEST, SMALLEST + 4))],
    ids=["bar", "column"],
)
def test_one_generic_loop_serves_two_sizes_and_matches_the_plain_loop(make, sizes, monkeypatch):
    monkeypatch.setattr(driver, "GENERIC_FROM", SMALLEST)
    loops = []
    for n in sizes:
        problem, h, t_end = make(n)
        loop = MoreauJean().loop_for(problem)[0].loop
        compiled = simulate(problem, MoreauJean(), t_end, h=h)
        plain = simulate(problem, MoreauJean(compiled=False), t_end, h=h)
        assert compiled.stats["compiled"] and compiled.impacts.total > 0
        scale = max(1.0, float(np.abs(plain.q).max()))
        np.testing.assert_allclose(compiled.q, plain.q, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(compiled.v, plain.v, rtol=0, atol=1e-12 * scale)
        assert compiled.impacts.total == plain.impacts.total
        # compiled, or loaded from numba's disk cache: both counted per signature
        loads = sum(loop.stats.cache_misses.values()) + sum(loop.stats.cache_hits.values())
        loops.append((loop, len(loop.signatures), loads))
    (first, signatures, loads), (second, *after) = loops
    assert second is first and signatures == 1
    assert after == [1, loads]  # the second size neither compiled nor loaded a loop


def test_problems_below_the_threshold_keep_their_specialised_loop():
    # a cradle of 11 balls (no declaration): sizes bound as constants
    problem = NewtonsCradle(n_balls=11)
    assert driver.GENERIC_FROM > 11 and not problem.kernels().sizes_at_run_time
    loop = MoreauJean().loop_for(problem)[0].loop
    assert not _reads_sizes_at_run_time(loop)


def test_the_column_declares_sizes_at_run_time():
    """The scaling study runs the settled column at 10, 30, 100 and 300 beads: one generic loop
    per scheme serves them (below WHOLE_ROWS_FROM, constants)."""
    assert _column(10)[0].kernels().sizes_at_run_time
    small = MoreauJean().loop_for(_column(SMALLEST - 1)[0])[0].loop
    assert not _reads_sizes_at_run_time(small)
    loops = [MoreauJean().loop_for(_column(n)[0])[0].loop for n in (SMALLEST, 10, 30)]
    assert _reads_sizes_at_run_time(loops[0])
    assert loops[1] is loops[0] and loops[2] is loops[0]


def test_a_problem_declaring_sizes_at_run_time_shares_one_loop_from_whole_rows():
    """The impacting bar declares ``sizes_at_run_time``: from WHOLE_ROWS_FROM DOF its meshes
    share one generic loop per scheme without lowering GENERIC_FROM; below, constants."""
    assert ImpactingBar(10).kernels().sizes_at_run_time
    small = MoreauJean().loop_for(_bar(SMALLEST - 1)[0])[0].loop
    assert not _reads_sizes_at_run_time(small)
    loops = [MoreauJean().loop_for(_bar(n)[0])[0].loop for n in (SMALLEST, 11, 41)]
    assert _reads_sizes_at_run_time(loops[0])
    assert loops[1] is loops[0] and loops[2] is loops[0]
