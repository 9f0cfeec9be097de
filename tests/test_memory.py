"""The memory a time-stepping run allocates (``stats["memory_bytes"]``, of which the loop's
work buffers are ``stats["work_bytes"]``), checked by hand.

The output arrays are known by hand: each stored sample holds t, q and v (8 (2 n + 1) bytes)
and each step can log one impact per constraint (t, index, two normal velocities: 32 bytes);
the work buffers do not depend on the horizon and, for a diagonal mass matrix with one contact
node (the impacting bar), grow linearly with n. Plain-Python runs (the same driver and buffers
as the compiled loops, no compilation).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.metrics import METRICS
from impactbench.methods import MoreauJean, PaoliSchatzman
from impactbench.problems import ImpactingBar


@pytest.mark.parametrize("method", [MoreauJean, PaoliSchatzman])
def test_each_step_adds_one_sample_and_one_log_slot_per_constraint(method):
    bar = ImpactingBar(10)  # n = 11, m = 1
    h = 0.5 * bar.stable_step
    short, long = (
        simulate(bar, method(compiled=False), steps * h, h=h).stats["memory_bytes"]
        for steps in (10, 20)
    )
    assert long - short == 10 * (8 * (2 * 11 + 1) + 32)


def test_work_memory_of_the_diagonal_bar_is_linear_in_n():
    """Every work array of the diagonal bar is n long or of constant size: the work bytes are
    a n + b exactly (n = 11, 101, 1001), with a <= 30 doubles per DOF."""
    work = []
    for n in (11, 101, 1001):
        bar = ImpactingBar(n - 1)
        h = 0.5 * bar.stable_step
        run = simulate(bar, MoreauJean(compiled=False), 2 * h, h=h, output_every=2)
        output = 8 * 2 * (2 * n + 1) + 2 * 32  # two samples, two log slots
        rest = run.stats["memory_bytes"] - output  # the work buffers, counters and end state
        assert rest - run.stats["work_bytes"] == 8 * (8 + 1 + 2 * n)
        work.append(run.stats["work_bytes"])
        assert METRICS["work_bytes"].function(bar, run, None) == run.stats["work_bytes"]
    slope = (work[1] - work[0]) / 90
    assert work[2] - work[1] == 900 * slope
    assert 0 < slope <= 30 * 8


def test_a_dense_mass_matrix_costs_n_squared():
    small, large = (
        simulate(
            ImpactingBar(n - 1, mass_structure="dense"),
            MoreauJean(compiled=False),
            0.02,
            h=0.01,
            output_every=2,
        ).stats["work_bytes"]
        for n in (11, 101)
    )
    # M and its factor kept as n x n blocks: 100 times the entries for 10 times n
    assert large / small > 40
    assert np.isfinite(large)
