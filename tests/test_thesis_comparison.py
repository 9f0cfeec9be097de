"""thesis_comparison's helpers; the study end to end (quick grid, through the command line)
is tested in test_quick_run_part1.py, on the quick run of its part."""

from __future__ import annotations

import numpy as np

from impactbench.studies.thesis_comparison import isolated_impacts


def test_isolated_impacts_ignores_close_pairs():
    times = np.array([0.5, 0.7, 1.3, 2.10, 2.13])
    assert isolated_impacts(times, 0.05) == 3
    assert isolated_impacts(times, 0.01) == 5
    assert isolated_impacts(np.array([]), 0.05) == 0
