"""The crossover of two families' cost curves (impactbench.analysis.crossover) on power laws
whose crossing is known in closed form."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from impactbench.analysis.crossover import (
    MIN_DECADES,
    _log_fronts,
    _loosest_crossings,
    crossing,
    crossover_of,
    crossover_table,
    crossovers,
    front,
    pareto_front,
)
from impactbench.analysis.timing import MIN_REPEATS
from impactbench.bench.style import metric_unit
from impactbench.studies._crossover import crossover_section

TS, ED = "time-stepping", "event-driven"


def _points(family, errors, scale, power, noise=0.0, repeats=9, seed=0):
    """Runs of cost scale * error^-power, each with ``repeats`` timed repeats scattered by a
    relative ``noise`` about it (their median exactly on the law when the noise is 0)."""
    rng = np.random.default_rng(seed)
    rows = []
    for error in errors:
        cost = scale * error**-power
        times = cost * (1 + noise * rng.standard_normal(repeats))
        rows.append(
            {
                "problem": "P",
                "family": family,
                "error": error,
                "wall_time_repeats": json.dumps(times.tolist()),
            }
        )
    return rows


def _laws(ts_scale=1e-6, ed_scale=1e-4, noise=0.0, ts_errors=None, ed_errors=None, repeats=9):
    """A first-order time-stepper (cost 1e-6 / e) against an event-driven method of cost
    1e-4 e^-0.2: they cross where 1e-6 / e = 1e-4 e^-0.2, e* = (1e-2)^(1 / 0.8) = 10^-2.5."""
    ts_errors = np.geomspace(1e-5, 1e-1, 9) if ts_errors is None else ts_errors
    ed_errors = np.geomspace(1e-9, 1e-2, 8) if ed_errors is None else ed_errors
    rows = _points(TS, ts_errors, ts_scale, 1.0, noise, repeats, seed=1)
    rows += _points(ED, ed_errors, ed_scale, 0.2, noise, repeats, seed=2)
    return pd.DataFrame(rows)


def test_pareto_front_drops_dominated_and_invalid_points():
    errors = [1e-3, 1e-2, 1e-1, 5e-2, 1e-2, 0.0, math.nan]
    costs = [4.0, 2.0, 1.0, 3.0, 2.5, 0.1, 0.1]
    assert pareto_front(errors, costs).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="errors and costs"):
        pareto_front([1.0, 2.0], [1.0])


def test_crossing_of_two_power_laws_is_the_closed_form():
    found = crossover_of("P", _laws(), "error", TS, ED)
    expected = 10**-2.5
    assert found.error == pytest.approx(expected, rel=1e-12)
    assert found.crossing.errors == pytest.approx((expected,), rel=1e-12)
    # searched: from the time-stepper's most accurate run to the event-driven's least accurate
    assert found.crossing.overlap == pytest.approx((1e-5, 1e-2))
    assert found.decades == pytest.approx(3.0)
    # cost 1e-6 / e is below 1e-4 e^-0.2 at loose errors, above it at tight ones
    assert found.family(found.crossing.cheaper_loose) == TS
    assert found.family(found.crossing.cheaper_tight) == ED
    # repeats without noise: every resample crosses at the same error
    assert found.without == 0
    assert found.low == pytest.approx(expected, rel=1e-12)
    assert found.high == pytest.approx(expected, rel=1e-12)
    assert found.text.startswith(f"{TS} vs {ED}: cross at error 0.0032 [0.0032, 0.0032]")
    assert "time-stepping cheaper above, event-driven just below" in found.text


def test_crossing_off_the_knots_is_exact_in_log_log():
    """Knots of the two fronts that do not share any error: the crossing still lies on the
    interpolated segments, exactly where the two power laws cross."""
    ts = np.array([1e-5, 7e-5, 6e-4, 5e-3, 4e-2])
    ed = np.array([3e-10, 2e-7, 9e-5, 8e-3])
    # e* = (ts_scale / ed_scale)^(1 / 0.8) with ts_scale = 2e-6, ed_scale = 1e-4
    found = crossover_of("P", _laws(ts_scale=2e-6, ts_errors=ts, ed_errors=ed), "error", TS, ED)
    assert found.error == pytest.approx((2e-2) ** 1.25, rel=1e-12)


def test_a_dominated_loose_run_extends_the_range_at_the_front_s_cost():
    """Event-driven runs of errors 1e-9, 1e-6, 5e-2 costing 3e-4, 1e-4, 2e-4: the loosest is
    dominated, so the family reaches any error up to 5e-2 at 1e-4, the cost of its run of error
    1e-6; the time-stepper's 1e-6 / e meets that flat curve at e = 1e-2."""
    rows = _points(TS, np.geomspace(1e-5, 1e-1, 9), 1e-6, 1.0, seed=1)
    for error, cost in ((1e-9, 3e-4), (1e-6, 1e-4), (5e-2, 2e-4)):
        rows += _points(ED, [error], cost, 0.0, seed=2)
    found = crossover_of("P", pd.DataFrame(rows), "error", TS, ED)
    assert found.ranges[1] == pytest.approx((1e-9, 5e-2))
    assert found.crossing.overlap == pytest.approx((1e-5, 5e-2))
    assert found.error == pytest.approx(1e-2, rel=1e-12)
    assert found.family(found.crossing.cheaper_loose) == TS


def test_interval_holds_the_crossing_and_widens_with_the_noise():
    expected = 10**-2.5
    quiet = crossover_of("P", _laws(noise=0.02), "error", TS, ED, resamples=400)
    loud = crossover_of("P", _laws(noise=0.3), "error", TS, ED, resamples=400)
    for found in (quiet, loud):
        assert found.resamples == 400
        assert found.low < found.error < found.high
        assert found.low < expected < found.high
    assert loud.high / loud.low > quiet.high / quiet.low
    # seeded: the same table gives the same interval
    again = crossover_of("P", _laws(noise=0.3), "error", TS, ED, resamples=400)
    assert (again.low, again.high) == (loud.low, loud.high)


def test_resamples_that_do_not_cross_bound_the_interval_at_the_overlap_s_end():
    """Time-stepping cost 2.2e-6 / e crosses the event-driven 1e-4 e^-0.2 at
    e* = 0.022^(1 / 0.8) = 0.0085, near the loose end 0.01 of the overlap: with 30 % noise some
    resamples leave the time-stepper cheaper over all of it (their crossing beyond 0.01). They
    are counted at that end, so the interval reaches it and says so (">= 0.01"), where the
    quantiles of the crossing resamples alone would end below it."""
    found = crossover_of("P", _laws(ts_scale=2.2e-6, noise=0.3), "error", TS, ED, resamples=1000)
    assert 0.5 * 0.022 ** (1 / 0.8) < found.error < 1e-2  # the noisy medians' crossing
    assert found.without > 0.025 * found.resamples  # enough censored to reach the 97.5 % point
    assert found.high == found.crossing.overlap[1] == pytest.approx(1e-2)
    assert found.low < found.error
    assert f"[{found.low:.2g}, >= 0.01]" in found.text


def test_the_text_names_the_family_just_below_the_loosest_of_two_crossings():
    """Fronts crossing twice (test below): the loose-end family is cheaper above the loosest
    crossing and the other one just below it, though the loose-end family is cheaper again at
    the accurate end."""
    second = _points(ED, [1e-4, 1e-2], 1.0, 0.0)
    first = _points(TS, [1e-4, 1e-3, 1e-2], 1.0, 0.0)
    for row, cost in zip(first, [4.0, 0.16, 0.036], strict=True):
        row["wall_time_repeats"] = json.dumps([cost] * 9)
    for row, cost in zip(second, [2.0, 0.02], strict=True):
        row["wall_time_repeats"] = json.dumps([cost] * 9)
    found = crossover_of("P", pd.DataFrame(first + second), "error", TS, ED, resamples=10)
    assert len(found.crossing.errors) == 2
    assert found.family(found.crossing.cheaper_tight) == ED
    assert f"({ED} cheaper above, {TS} just below;" in found.text


def test_no_crossing_is_outside_the_range_searched():
    # ed_scale 1e-7: 1e-7 e^-0.2 < 1e-6 / e for every e < 10^(1 / 0.8): event-driven cheaper
    found = crossover_of("P", _laws(ed_scale=1e-7, noise=0.02), "error", TS, ED, resamples=200)
    assert found.crossing.errors == ()
    # some resamples may cross, yet the measured fronts do not: no interval
    assert math.isnan(found.error) and math.isnan(found.low) and math.isnan(found.high)
    assert found.family(found.crossing.cheaper_loose) == ED
    assert found.text == (
        f"{TS} vs {ED}: outside [1e-05, 0.01]: {ED} cheaper over all of it (3 decades); "
        "0 of 200 resamples cross"
    )


def test_a_narrow_or_empty_overlap_is_stated():
    narrow = crossover_of("P", _laws(ts_errors=np.geomspace(1e-3, 1e-1, 5)), "error", TS, ED)
    assert narrow.decades == pytest.approx(1.0)
    assert f"under the {MIN_DECADES:g} decades a comparison needs" in narrow.text
    apart = _laws(ts_errors=np.geomspace(1e-3, 1e-1, 5), ed_errors=np.geomspace(1e-9, 1e-6, 4))
    found = crossover_of("P", apart, "error", TS, ED)
    assert found.crossing.overlap is None and found.decades == 0.0
    assert found.text == (
        f"{TS} vs {ED}: the error ranges share no interval ({TS} [0.001, 0.1], "
        f"{ED} [1e-09, 1e-06]): no crossover located"
    )


def test_too_few_repeats_give_no_interval():
    found = crossover_of("P", _laws(noise=0.1, repeats=MIN_REPEATS - 1), "error", TS, ED)
    assert found.resamples == 0 and math.isnan(found.low)
    assert f"[no interval: fewer than {MIN_REPEATS} repeats]" in found.text


def test_fronts_crossing_twice_or_touching():
    """C2 is 2 at 1e-4 and 0.02 at 1e-2 (so 0.2 at 1e-3); C1 is 4, 0.2 c, 0.036 at 1e-4, 1e-3,
    1e-2. With c = 0.8, d = log(C1 / C2) is log 2, log 0.8, log 1.8: two sign changes, each
    where the linear d of its segment vanishes; with c = 1 the curves touch at 1e-3 without
    crossing."""
    second = front([1e-4, 1e-2], [2.0, 0.02])
    twice = crossing(front([1e-4, 1e-3, 1e-2], [4.0, 0.16, 0.036]), second)
    d = np.log([2.0, 0.8, 1.8])
    expected = (
        10 ** (-4 + d[0] / (d[0] - d[1])),
        10 ** (-3 + d[1] / (d[1] - d[2])),
    )
    assert twice.errors == pytest.approx(expected, rel=1e-12)
    assert (twice.cheaper_tight, twice.cheaper_loose) == (1, 1)
    touching = crossing(front([1e-4, 1e-3, 1e-2], [4.0, 0.2, 0.036]), second)
    assert touching.errors == ()
    # a stretch of equal costs between opposite signs crosses at its first knot
    flat = crossing(
        front([1e-4, 1e-3, 1e-2, 1e-1], [8.0, 1.0, 0.1, 0.01]),
        front([1e-4, 1e-3, 1e-2, 1e-1], [4.0, 1.0, 0.1, 0.02]),
    )
    assert flat.errors == pytest.approx((1e-3,))
    assert (flat.cheaper_tight, flat.cheaper_loose) == (1, 0)


def test_crossovers_pairs_every_family_present_and_tables_them():
    runs = _laws()
    adaptive = pd.DataFrame(
        _points("adaptive time-stepping", np.geomspace(1e-6, 1e-2, 5), 1e-5, 0.5, seed=3)
    )
    found = crossovers(pd.concat([runs, adaptive]), "error", resamples=50)
    pairs = [(item.first, item.second) for item in found]
    assert pairs == [(TS, "adaptive time-stepping"), (TS, ED), ("adaptive time-stepping", ED)]
    table = crossover_table(found, "m")
    assert table["crossover error [m]"].iloc[1] == pytest.approx(10**-2.5)
    assert list(table["families"]) == [f"{a} vs {b}" for a, b in pairs]
    with pytest.raises(ValueError, match="resamples"):
        crossovers(runs, "error", resamples=0)
    with pytest.raises(ValueError, match="metric"):
        crossovers(runs, "missing")


def test_crossover_section_states_each_problem_and_stores_the_table(tmp_path):
    """The studies' section (studies/_crossover.py) on two problems: a crossing at 10^-2.5
    and a pair without overlap; each problem has its sentence, in the findings and the
    section, and crossovers.csv holds every pair with its statement."""
    crossing_runs = _laws(noise=0.05)
    apart = _laws(ts_errors=np.geomspace(1e-3, 1e-1, 5), ed_errors=np.geomspace(1e-9, 1e-6, 4))
    runs = pd.concat([crossing_runs, apart.assign(problem="BouncingBall")])
    runs = runs.rename(columns={"error": "max_position_error"})
    section, findings = crossover_section(runs, "max_position_error", tmp_path, "crossovers.csv")
    assert section.title == "Crossover accuracy"
    assert [finding.split(":")[0] for finding in findings] == ["P", "BouncingBall"]
    assert "cross at error 0.0032 [" in findings[0]
    assert "the error ranges share no interval" in findings[1]
    for finding in findings:
        assert f"- {finding}\n" in section.body
    stored = pd.read_csv(tmp_path / "crossovers.csv")
    assert list(stored["problem"]) == ["P", "BouncingBall"]
    # a problem without a coordinate unit and the ball (metres): one unit column per row
    assert list(stored["error unit"]) == [metric_unit("max_position_error", "P"), "m"]
    first = stored.iloc[0]
    assert first["interval low [error unit]"] < 10**-2.5 < first["interval high [error unit]"]
    assert first["interval low [error unit]"] < first["crossover error [error unit]"]
    assert stored["overlap [decades]"].tolist() == pytest.approx([3.0, 0.0])
    assert stored["statement"].iloc[0] in findings[0]
    assert stored["statement"].iloc[1] in findings[1]


def test_the_bootstrap_s_crossings_are_those_of_the_fronts_drawn_one_by_one():
    """The resamples' loosest crossings, computed for all rows at once, equal those of
    :func:`front` and :func:`crossing` row by row: random costs about two crossing laws, with
    points of equal error (two engines of one method) and dominated points."""
    rng = np.random.default_rng(7)
    first = np.geomspace(1e-5, 1e-1, 9)
    second = np.concatenate([np.geomspace(1e-9, 1e-2, 6), np.geomspace(1e-9, 1e-2, 6)])
    rows = 300
    costs = (
        1e-6 / first * np.exp(0.6 * rng.standard_normal((rows, first.size))),
        1e-4 * second**-0.2 * np.exp(0.6 * rng.standard_normal((rows, second.size))),
    )
    low, high = 1e-5, 1e-2
    grid = np.concatenate([first, second, [low, high]])
    x = np.unique(np.log(grid[(grid >= low) & (grid <= high)]))
    d = _log_fronts(first, costs[0], x) - _log_fronts(second, costs[1], x)
    at_once = _loosest_crossings(x, d)
    crossed = 0
    for k in range(rows):
        found = crossing(front(first, costs[0][k]), front(second, costs[1][k]))
        if found.errors:
            crossed += 1
            assert at_once[k] == pytest.approx(found.errors[-1], rel=1e-9)
        else:
            assert math.isnan(at_once[k])
    assert 0 < crossed < rows  # both cases met
