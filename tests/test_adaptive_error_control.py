"""The criterion that keeps the adaptive family out of verdicts when its error is not controlled
(studies/_adaptive.py: error_control, marked, controlled_only), and the controller's test of its
continuous extension (impactbench.core.adaptive: a flight the scheme integrates exactly)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from impactbench.analysis.metrics import max_position_error
from impactbench.core.adaptive import Adaptive
from impactbench.problems import BouncingBall
from studies import _adaptive

TOLERANCES = np.geomspace(1e-2, 1e-6, 9)
CONVERGING = "Adaptive[scheme=MoreauJean]"
FLAT = "Adaptive[scheme=CatchingUp]"


def _medians(flat_errors: np.ndarray) -> pd.DataFrame:
    """A converging sweep (error = rtol, with a scatter of 10 %), a given one for CatchingUp,
    and a fixed-step family that the criterion must leave alone."""
    scatter = 1.0 + 0.1 * np.sin(np.arange(TOLERANCES.size))
    rows = [
        {"problem": "P", "method": CONVERGING, "tolerance": r, "error": r * s, "h": np.nan}
        for r, s in zip(TOLERANCES, scatter, strict=True)
    ]
    rows += [
        {"problem": "P", "method": FLAT, "tolerance": r, "error": e, "h": np.nan}
        for r, e in zip(TOLERANCES, flat_errors, strict=True)
    ]
    rows += [{"problem": "P", "method": "MoreauJean", "tolerance": np.nan, "error": 1e-3,
              "h": 1e-2}]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_converging_sweep_is_controlled_and_a_flat_one_is_not():
    flat = 3.6e-5 * (1.0 + 0.05 * np.cos(np.arange(TOLERANCES.size)))
    control = _adaptive.error_control(_medians(flat), "error").set_index("method")
    assert control.at[CONVERGING, "controlled"]
    assert control.at[CONVERGING, "order"] == pytest.approx(1.0, abs=0.05)
    assert not control.at[FLAT, "controlled"]
    assert control.at[FLAT, _adaptive.CONTROL_COLUMN] == _adaptive.NOT_CONTROLLED
    assert "flat" in control.at[FLAT, "fit"]
    assert "MoreauJean" not in control.index  # the fixed-step family is not judged


def test_a_slope_below_half_a_decade_per_decade_is_not_controlled():
    # the errors fall by a decade over four decades of rtol: an order of 0.25, resolved (its
    # interval excludes 0) and below the criterion's 0.5
    slow = 1e-2 * (TOLERANCES / TOLERANCES[0]) ** 0.25
    control = _adaptive.error_control(_medians(slow), "error").set_index("method")
    assert control.at[FLAT, "order"] == pytest.approx(0.25, abs=1e-9)
    assert control.at[FLAT, "low"] > 0.0
    assert not control.at[FLAT, "controlled"]


def test_a_scattered_sweep_is_not_controlled_even_with_a_slope_above_one_half():
    rng = np.random.default_rng(3)
    scattered = TOLERANCES * 10.0 ** rng.normal(0.0, 1.0, TOLERANCES.size)
    control = _adaptive.error_control(_medians(scattered), "error").set_index("method")
    assert control.at[FLAT, "residual"] > _adaptive.CONTROLLED_RESIDUAL
    assert not control.at[FLAT, "controlled"]


def test_errors_at_the_floor_count_as_controlled_and_two_tolerances_do_not():
    tiny = np.full(TOLERANCES.size, 1e-16)
    floors = {("P", "error"): 1e-14}
    control = _adaptive.error_control(_medians(tiny), "error", floors).set_index("method")
    assert control.at[FLAT, "controlled"]
    two = _medians(tiny).query("method != @FLAT").head(2)
    judged = _adaptive.error_control(two, "error")
    assert not judged["controlled"].any() and "not resolved" in judged["fit"].iloc[0]


def test_the_rows_of_an_uncontrolled_family_are_marked_and_left_out_of_verdicts():
    medians = _medians(np.full(TOLERANCES.size, 3.6e-5))
    control = _adaptive.error_control(medians, "error")
    marks = _adaptive.marked(medians, control).groupby("method")[_adaptive.CONTROL_COLUMN]
    assert set(marks.get_group(FLAT)) == {_adaptive.NOT_CONTROLLED}
    assert set(marks.get_group(CONVERGING)) == {_adaptive.CONTROLLED}
    assert set(marks.get_group("MoreauJean")) == {""}
    kept = _adaptive.controlled_only(medians, control)
    assert set(kept["method"]) == {CONVERGING, "MoreauJean"}
    assert len(kept) == len(medians) - TOLERANCES.size
    findings = _adaptive.control_findings(control)
    assert len(findings) == 1 and FLAT in findings[0] and _adaptive.NOT_CONTROLLED in findings[0]
    with pytest.raises(ValueError, match="metric"):
        _adaptive.error_control(medians, "max_position_error")


def test_an_adaptive_method_without_a_judgement_is_left_out():
    medians = _medians(np.full(TOLERANCES.size, 3.6e-5))
    control = _adaptive.error_control(medians[medians["method"] != FLAT], "error")
    kept = _adaptive.controlled_only(medians, control)
    assert FLAT not in set(kept["method"])


# a flight of the ball before its first impact: MoreauJean's midpoint rule integrates the
# parabola exactly at the steps, so Richardson's estimate is zero there; the run's continuous
# extension (the polyline of its steps) misses the parabola by g h^2 / 8 in mid-step
FLIGHT = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
BEFORE_IMPACT = 0.4


def test_the_polyline_of_an_exactly_integrated_flight_converges_in_rtol():
    h_max = 0.1
    errors, steps = [], []
    rtols = np.geomspace(1e-2, 1e-6, 5)
    for rtol in rtols:
        method = Adaptive("MoreauJean", rtol=rtol, atol=1e-2 * rtol, h_max=h_max)
        run = method.solve(FLIGHT, BEFORE_IMPACT)
        errors.append(max_position_error(FLIGHT, run))
        steps.append(run.stats["steps"])
    # the midpoint test bounds g h^2 / 8 by about atol + rtol |q|, |q| <= 1
    assert np.all(np.asarray(errors) <= 2.0 * (1e-2 * rtols + rtols))
    assert np.all(np.diff(steps) > 0)  # rtol, not h_max, sets the step
    assert errors[0] < 9.81 * h_max**2 / 8  # below the polyline error of steps of h_max
    frame = pd.DataFrame(
        {"problem": "ball", "method": CONVERGING, "tolerance": rtols, "error": errors}
    )
    assert _adaptive.error_control(frame, "error")["controlled"].all()
    # Richardson's estimate alone is zero on the parabola: h_max at every rtol, the polyline's
    # error g h_max^2 / 8 whatever rtol, a flat sweep the criterion does not accept
    flat, counts = [], []
    for rtol in rtols:
        method = Adaptive(
            "MoreauJean", rtol=rtol, atol=1e-2 * rtol, h_max=h_max, extension_control=False
        )
        run = method.solve(FLIGHT, BEFORE_IMPACT)
        flat.append(max_position_error(FLIGHT, run))
        counts.append(run.stats["steps"])
    assert len(set(counts)) == 1 and np.ptp(flat) <= 1e-3 * max(flat)
    assert max(flat) == pytest.approx(9.81 * h_max**2 / 8, rel=0.05)
    frame = frame.assign(error=flat)
    assert not _adaptive.error_control(frame, "error")["controlled"].any()


def test_energy_decay_judges_each_case_by_its_energy_error_at_the_end():
    from studies import energy_decay

    rtols = [1e-2, 1e-3, 1e-4, 1e-5]
    # the run table's names: the parameters but rtol (atol follows it)
    rows = [
        {"problem": problem, "method": f"Adaptive[scheme=MoreauJean,atol={1e-2 * r:g}]",
         "tolerance": r, "status": "ok", "energy_error_at_end": error(r)}
        for r in rtols
        for problem, error in ((energy_decay.SPRING, lambda r: 2.0 * r),
                               (energy_decay.FREE, lambda r: 1e-3))
    ]  # fmt: skip
    rows.append({"problem": energy_decay.SPRING, "method": "MoreauJean", "tolerance": np.nan,
                 "status": "ok", "energy_error_at_end": 1e-3})  # fmt: skip
    control = energy_decay.error_control(pd.DataFrame(rows)).set_index("problem")
    assert list(control["method"]) == ["Adaptive[scheme=MoreauJean]"] * 2
    assert control.at[energy_decay.SPRING, "controlled"]
    assert not control.at[energy_decay.FREE, "controlled"]
