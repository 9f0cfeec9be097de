"""The energy gate's reductions (impactbench.core.energy._gate_figures, one compiled pass) are
numpy's: the first index of the largest energy, the least potential over the admissible
samples, and the largest magnitudes, NaN wherever numpy's reductions give NaN."""

import numpy as np
import pytest

from impactbench.core.energy import _gate_figures


def _numpy(kinetic, potential, gaps, q, v):
    total = kinetic + potential
    index = int(np.argmax(total))
    admissible = np.all(gaps >= 0.0, axis=1)
    admissible[0] = True
    return [
        index,
        potential[admissible].min(),
        np.abs(potential).max(),
        np.abs(q).max(),
        np.abs(v).max(),
        total[index],
        total[0],
    ]


@pytest.mark.parametrize("seed", range(12))
def test_the_gate_figures_are_numpys_reductions(seed):
    rng = np.random.default_rng(seed)
    samples, n, m = rng.integers(1, 9), rng.integers(1, 4), rng.integers(1, 4)
    kinetic = rng.uniform(0.0, 2.0, samples)
    potential = rng.normal(size=samples)
    gaps = rng.normal(size=(samples, m))
    q, v = rng.normal(size=(samples, n)), rng.normal(size=(samples, n))
    if seed % 3 == 1:  # ties: the first index of the largest energy
        kinetic[:] = 1.0
        potential[:] = 0.5
    if seed % 3 == 2:  # NaNs: propagated as by numpy
        for array in (kinetic, potential, gaps, q, v):
            array.flat[rng.integers(array.size)] = np.nan
    out = np.empty(7)
    _gate_figures(kinetic, potential, gaps, q, v, out)
    np.testing.assert_array_equal(out, np.array(_numpy(kinetic, potential, gaps, q, v)))
