"""energy_decay reports a decay rate only where a law holds (issue: chaos compared as chaos)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from impactbench.studies import energy_decay


def _reference(problem: str, t: np.ndarray, excess: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"problem": problem, "curve": "reference", "t": t, "excess": excess})


def test_a_law_is_fitted_once_on_the_reference_and_refused_when_its_residual_says_no():
    t = np.linspace(0.0, 100.0, 400)
    exponential = _reference("TightJoint2D[unforced]", t, 3.0 * np.exp(-0.02 * t))
    # a staircase that levels off (the pendulum's shape): not exponential
    staircase = _reference(energy_decay.PENDULUM, t, 19.6 * 0.5 ** np.floor(t / 5.0) + 0.03)
    laws = energy_decay.reference_laws(pd.concat([exponential, staircase]))
    rate, residual = laws["TightJoint2D[unforced]"]
    assert abs(rate - 0.02) < 1e-12 and residual < 1e-12
    rate, residual = laws[energy_decay.PENDULUM]
    assert residual > energy_decay.LAW_RESIDUAL  # fitted over the window only, still no law
    assert "the law does not hold" in energy_decay._law_sentence(
        energy_decay.PENDULUM, laws[energy_decay.PENDULUM]
    )
    assert "does not hold" not in energy_decay._law_sentence("X", (0.02, 0.0))
    # the pendulum's window: samples beyond t0 + 30 do not enter its fit
    window = energy_decay.FIT_WINDOW[energy_decay.PENDULUM]
    late = staircase.assign(excess=np.where(t > window, 1e-300, staircase["excess"]))
    assert energy_decay.reference_laws(late)[energy_decay.PENDULUM] == laws[energy_decay.PENDULUM]
