"""The pendulum ensemble study's statistics, worked by hand (quick run: tests/quick_run.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from impactbench.problems import DoublePendulum
from impactbench.studies import STUDIES
from impactbench.studies import pendulum_ensemble as ensemble


def test_the_study_is_registered_with_at_least_100_members_in_its_full_grid():
    assert STUDIES[ensemble.NAME] is ensemble.STUDY
    assert ensemble.MEMBERS["full"] >= 100
    runs = ensemble.runs(quick=True)
    count = ensemble.MEMBERS["quick"]
    of = [ensemble._member_of(run.problem_kwargs["q0"]) for run in runs]
    main = [r for r, (name, _) in zip(runs, of, strict=True) if name == ensemble.MAIN]
    null = [r for r, (name, _) in zip(runs, of, strict=True) if name == ensemble.NULL]
    assert len({tuple(run.problem_kwargs["q0"]) for run in main}) == count
    # every member is run by every method setting, the reference included
    per_member = len(main) // count
    assert per_member * count == len(main)
    assert sum(run.tolerance_value == ensemble.REFERENCE_RTOL for run in main) == count
    # the null ensemble: as many other members, the reference method only
    assert len({tuple(run.problem_kwargs["q0"]) for run in null}) == count == len(null)
    assert all(run.tolerance_value == ensemble.REFERENCE_RTOL for run in null)


def test_members_are_seeded_perturbations_of_the_default_start():
    first, again = ensemble.member_q0(100), ensemble.member_q0(100)
    np.testing.assert_array_equal(first, again)
    deviation = first - np.asarray(DoublePendulum().q0)
    assert 0.5 * ensemble.SPREAD < deviation.std() < 2.0 * ensemble.SPREAD
    assert ensemble._member_index(list(first[37])) == 37
    null = ensemble.member_q0(100, ensemble.NULL_SEED)
    assert not np.isin(null, first).any()  # disjoint seeds: other members
    assert ensemble._member_of(list(null[5])) == (ensemble.NULL, 5)
    assert ensemble._member_of(list(first[5])) == (ensemble.MAIN, 5)


def test_wall_energy_is_the_least_energy_with_the_tip_on_the_wall():
    problem = DoublePendulum()
    level = ensemble.wall_energy(problem)
    # brute force over the wall: q2 from q1 on the lower branch, every admissible q1
    q1 = np.linspace(-1.5, 1.5, 300_001)
    s2 = (-problem.wall_distance - problem.l1 * np.sin(q1)) / problem.l2
    q1, s2 = q1[np.abs(s2) <= 1], s2[np.abs(s2) <= 1]
    v = -(problem.m1 + problem.m2) * problem.gravity * problem.l1 * np.cos(q1) - (
        problem.m2 * problem.gravity * problem.l2 * np.sqrt(1 - s2 * s2)
    )
    assert level == pytest.approx(v.min(), abs=1e-9)
    rest = -(problem.m1 + problem.m2) * problem.gravity - problem.m2 * problem.gravity
    assert rest < level  # the hanging rest state is below it: a settled pendulum exists


def test_shadowing_horizon_is_the_first_sample_beyond_the_tolerance():
    t_ref = np.linspace(0.0, 10.0, 10_001)
    q_ref = np.column_stack([np.sin(t_ref), np.cos(t_ref)])
    t = np.linspace(0.0, 10.0, 1001)
    q = np.column_stack([np.sin(t), np.cos(t)])
    q[:, 1] += np.where(t > 4.0, 0.05, 0.0)  # leaves the reference after t = 4
    horizon = ensemble.shadowing_horizon(t, q, t_ref, q_ref, 8.0)
    assert horizon == pytest.approx(4.01)
    assert (
        ensemble.shadowing_horizon(t, np.column_stack([np.sin(t), np.cos(t)]), t_ref, q_ref, 8.0)
        == 8.0
    )
    with pytest.raises(ValueError, match="window"):
        ensemble.shadowing_horizon(t, q, t_ref, q_ref, 8.0, window=-1.0)


def _bouncing(t: np.ndarray, restitution: float = 1.0) -> np.ndarray:
    """q1 = |sin 2t| (impacts on q1 = 0 at t = k pi / 2, speed 2), the amplitude times
    ``restitution`` after the first impact; q2 = 0.3 cos 1.3 t."""
    q1 = np.abs(np.sin(2.0 * t)) * np.where(t > np.pi / 2, restitution, 1.0)
    return np.column_stack([q1, 0.3 * np.cos(1.3 * t)])


def test_a_shift_of_the_impact_times_by_a_step_does_not_end_the_horizon_a_divergence_does():
    """The reference bounces at t = pi/2, pi, ...; a run whose motion is the reference's
    delayed by h = 0.01 (its impacts h late) is up to speed x h = 0.02 away pointwise, more than
    the tolerance, but on the reference's graph: the pointwise horizon ends at once, the graph
    horizon is the cap. A run whose first impact restitutes less leaves the graph soon after it."""
    h, cap = 1e-2, 10.0
    t_ref = np.arange(0.0, 12.0, ensemble.REFERENCE_GRID)
    q_ref = _bouncing(t_ref)
    t = np.arange(0.0, 10.0 + h / 2, h)
    late = _bouncing(t - h)
    assert ensemble.shadowing_horizon(t, late, t_ref, q_ref, cap, window=0.0) < np.pi / 2
    assert ensemble.shadowing_horizon(t, late, t_ref, q_ref, cap) == cap
    assert ensemble.graph_deviation(t, late, t_ref, q_ref, ensemble.SHADOW_WINDOW).max() < 1e-3
    weaker = _bouncing(t, restitution=0.8)
    horizon = ensemble.shadowing_horizon(t, weaker, t_ref, q_ref, cap)
    assert np.pi / 2 < horizon < np.pi / 2 + 0.25  # the window absorbs a lag of 0.02 s
    assert ensemble.shadowing_horizon(t - h, weaker, t_ref, q_ref, cap) < np.pi / 2 + 0.25


def test_censored_quantiles_are_lower_bounds_where_a_censored_member_reaches_them():
    horizons = np.array([1.0, 2.0, 3.0, 60.0])
    bounds = np.array([40.0, 40.0, 40.0, 40.0])  # the last member reaches its bound
    assert ensemble.censored_quantiles(horizons, bounds) == ["1", "2", "3"]
    assert ensemble.censored_quantiles(horizons, bounds, (1.0,)) == [">= 40"]
    bounds = np.array([0.5, 40.0, 40.0, 40.0])  # the first member's reference leaves at 0.5 s
    assert ensemble.censored_quantiles(horizons, bounds)[0] == ">= 0.5"
    with pytest.raises(ValueError, match="bounds"):
        ensemble.censored_quantiles(horizons, bounds[:2])


def test_wasserstein_of_a_shifted_ensemble_is_the_shift_and_its_interval_holds_it():
    reference = np.random.default_rng(1).normal(size=200)
    w, low, high = ensemble.bootstrap_wasserstein(reference + 0.3, reference)
    assert w == pytest.approx(0.3)
    assert low == pytest.approx(0.3) and high == pytest.approx(0.3)  # paired: the shift is exact
    w, low, high = ensemble.bootstrap_wasserstein(reference[::-1].copy(), reference)
    assert w == pytest.approx(0.0, abs=1e-12)
    # unpaired (two independent ensembles): resampling alone gives a positive interval
    w, low, high = ensemble.bootstrap_wasserstein(reference.copy(), reference, paired=False)
    assert w == 0.0 and 0.0 < low < high < 0.5


def test_ensemble_distances_pair_members_and_test_the_distributions():
    rng = np.random.default_rng(2)
    energy = rng.normal(size=150)
    rows = []
    for member, value in enumerate(energy):
        rows.append((member, "EventDriven[atol=1e-14]", math.nan, 1e-12, value))
        rows.append((member, "Same", 1e-3, math.nan, energy[(member + 1) % 150]))  # permuted
        rows.append((member, "Biased", 1e-3, math.nan, value + 1.0))
    members = pd.DataFrame(rows, columns=["member", "method", "h", "tolerance", "E"])
    members["setting"] = "h = 0.001"
    members["ensemble"] = ensemble.MAIN
    distances = ensemble.ensemble_distances(members, ["E"]).set_index("method")
    assert distances.loc["Same", "W1"] == pytest.approx(0.0, abs=1e-12)
    assert distances.loc["Same", "KS p"] > 0.05
    assert distances.loc["Biased", "W1"] == pytest.approx(1.0)
    assert distances.loc["Biased", "KS p"] < 1e-6
    assert "EventDriven[atol=1e-14]" not in distances.index  # the reference is not compared


def test_paoli_schatzman_energy_from_its_central_difference_leaves_out_straddling_samples():
    """PaoliSchatzman's energy uses its central-difference velocity: finite, within the
    scheme's error of the reference's at the energy times, and the samples whose stencil
    straddles an impact (O(1) wrong there) are left out."""
    import impactbench as ib
    from impactbench.bench.runner import Run
    from impactbench.methods import EventDriven, PaoliSchatzman

    q0 = [float(x) for x in ensemble.member_q0(1)[0]]
    problem = DoublePendulum(q0=q0)
    t_end, h = 2.0, 1e-3
    trajectory = ib.simulate(problem, PaoliSchatzman(), t_end, h=h)
    energy, usable = ensemble.member_energy(problem, trajectory)
    assert len(trajectory.impacts) >= 2 and not usable.all()
    for time in trajectory.impacts.t:
        assert not usable[np.abs(trajectory.t - time) <= h].any()
    # a left-out sample is O(1) off the energy of the usable samples around it
    jumps = [
        np.min(np.abs(energy[k] - energy[usable & (np.abs(trajectory.t - trajectory.t[k]) < 0.01)]))
        for k in np.flatnonzero(~usable)
    ]
    assert max(jumps) > 0.5
    run = Run(DoublePendulum, PaoliSchatzman, t_end, h, problem_kwargs={"q0": q0})
    row = ensemble.member_statistics(run, problem, trajectory)["member"].iloc[0]
    reference = ib.simulate(problem, EventDriven(rtol=1e-12, atol=1e-14), t_end)
    exact, _ = ensemble.member_energy(problem, reference)
    for fraction in ensemble.ENERGY_TIMES:
        time = fraction * t_end
        value = row[f"E({time:g}) [J]"]
        expected = exact[np.searchsorted(reference.t, time, side="right") - 1]
        assert np.isfinite(value) and abs(value - expected) < 0.1
    truncated = ib.simulate(problem, PaoliSchatzman(log_capacity=1), t_end, h=h)
    with pytest.raises(ValueError, match="truncated"):
        ensemble.member_energy(problem, truncated)


def test_the_settling_criterion_triggers_on_a_reference_member_and_not_at_the_start():
    """E - E_wall <= SETTLING_FRACTION (E(0) - E_wall): E_wall is a floor the energy decays
    towards (after every impact E >= E_wall), so the criterion can be met, and the reference
    member meets it before 200 s but not at t = 0."""
    import impactbench as ib
    from impactbench.methods import EventDriven

    problem = DoublePendulum(q0=[float(x) for x in ensemble.member_q0(1)[0]])
    t_end = 200.0
    reference = ib.simulate(problem, EventDriven(rtol=1e-12, atol=1e-14), t_end)
    energy, usable = ensemble.member_energy(problem, reference)
    e_wall = ensemble.wall_energy(problem)
    after = reference.t > reference.impacts.t[0]
    assert (energy[after] >= e_wall - 1e-9).all()  # never below the wall level after an impact
    settled_at, settled = ensemble.settling_time(reference.t, energy, usable, e_wall, t_end)
    assert settled and 0.0 < settled_at < t_end
    level = e_wall + ensemble.SETTLING_FRACTION * (energy[0] - e_wall)
    assert energy[reference.t == settled_at].min() <= level < energy[reference.t < settled_at].min()
    # the old criterion E < E_wall never triggers
    assert not (energy[after] < e_wall - 1e-9).any()
    # a member that starts below the wall level is settled from the start
    flat = np.full(5, e_wall - 1.0)
    assert ensemble.settling_time(np.arange(5.0), flat, np.ones(5, bool), e_wall, 5.0) == (0, True)
    # an energy that touches the level and rises again has not settled there (a time-stepper's
    # energy oscillates in flight): settled from the last entry below the level
    touching = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 0.0]) + e_wall
    times = np.arange(6.0)
    assert ensemble.settling_time(times, touching, np.ones(6, bool), e_wall, 6.0) == (4.0, True)
    rising = np.array([1.0, 0.0, 0.0, 1.0]) + e_wall
    assert ensemble.settling_time(times[:4], rising, np.ones(4, bool), e_wall, 4.0) == (4.0, False)


def test_the_median_settling_time_is_a_bound_when_it_falls_on_a_censored_member():
    members = pd.DataFrame(
        {ensemble.SETTLING: [10.0, 200.0, 200.0], "settled": [1.0, 0.0, 0.0], "t_end": 200.0}
    )
    assert ensemble._median_settling(members) == ">= 200"
    members["settled"] = 1.0
    assert ensemble._median_settling(members) == "200"


def test_the_null_row_exists_for_every_statistic_and_reads_each_distance():
    """Null: W1 between the reference and the null ensemble, finite and positive for every
    statistic; a method identical to the reference is within it, a biased one above it."""
    rng = np.random.default_rng(4)
    energy, null_energy = rng.normal(size=100), rng.normal(size=100)
    impacts, null_impacts = rng.poisson(90, size=100), rng.poisson(90, size=100)
    rows = []
    for member in range(100):
        ref = ensemble.REFERENCE_RTOL
        rows.append((member, ensemble.MAIN, "ref", np.nan, ref, energy[member], impacts[member]))
        rows.append((member, ensemble.NULL, "ref", np.nan, ref, null_energy[member],
                     null_impacts[member]))  # fmt: skip
        rows.append((member, ensemble.MAIN, "Same", 1e-3, np.nan, energy[member],
                     impacts[member]))  # fmt: skip
        rows.append((member, ensemble.MAIN, "Biased", 1e-3, np.nan, energy[member] + 1.0,
                     impacts[member] + 20))  # fmt: skip
    columns = ["member", "ensemble", "method", "h", "tolerance", "E(1) [J]", ensemble.IMPACTS]
    members = pd.DataFrame(rows, columns=columns).assign(setting="h = 0.001")
    statistics = ["E(1) [J]", ensemble.IMPACTS]
    null = ensemble.null_distances(members, statistics)
    assert list(null["statistic"]) == statistics
    assert (null["method"] == ensemble.NULL_METHOD).all()
    assert np.isfinite(null[["W1", "W1 low", "W1 high"]].to_numpy()).all()
    assert (null["W1"] > 0).all() and (null["W1 low"] > 0).all()
    distances = ensemble.ensemble_distances(members, statistics, null).set_index("method")
    same, biased = distances.loc["Same"], distances.loc["Biased"]
    assert not same["above null"].any() and (same["W1 / null"] == 0).all()
    assert biased["above null"].all() and (biased["W1 / null"] > 1).all()
    assert biased["mean difference"].to_numpy() == pytest.approx([1.0, 20.0])
    assert ensemble.within_null_settings(distances.reset_index()) == {
        "Same": ["h = 0.001"],
        "Biased": [],
    }
    paper = ensemble.distances_for_paper(distances.reset_index(), null).frame
    assert paper["method"].iloc[0] == ensemble.NULL_METHOD
    assert list(paper["statistics above null [-]"]) == ["-", "0", "2"]


def test_growing_distances_name_the_trend_and_read_it_against_the_null():
    rows = [
        {"method": "M", "statistic": "E", "h": h, "W1": w, "mean difference": d, "above null": a}
        for h, w, d, a in (
            (1e-2, 0.02, -0.02, True),
            (1e-3, 0.01, 0.0, False),
            (3e-4, 0.06, 0.05, True),
        )  # fmt: skip
    ]
    rows.append({"method": "N", "statistic": "E", "h": 1e-2, "W1": 0.05,
                 "mean difference": -0.05, "above null": True})  # fmt: skip
    rows.append({"method": "N", "statistic": "E", "h": 1e-3, "W1": 0.01,
                 "mean difference": 0.0, "above null": False})  # fmt: skip
    growing = ensemble.growing_distances(pd.DataFrame(rows))
    assert list(growing["method"]) == ["M"]
    row = growing.iloc[0]
    assert (row["h finest"], row["W1 finest"], row["h coarsest"]) == (3e-4, 0.06, 1e-2)
    assert row["above null"] and row["mean difference finest"] == 0.05
    assert (row["h largest"], row["W1 largest"]) == (3e-4, 0.06)
    rows.append({"method": "M", "statistic": "E", "h": 1e-4, "W1": 0.03, "mean difference": 0.02,
                 "above null": False})  # fmt: skip
    row = ensemble.growing_distances(pd.DataFrame(rows)).iloc[0]
    assert (row["h largest"], row["h finest"], row["above null"]) == (3e-4, 1e-4, False)
    without = pd.DataFrame(rows).drop(columns="above null")
    assert ensemble.growing_distances(without)["above null"].isna().all()


def test_a_method_with_the_references_distributions_is_indistinguishable():
    """The shadowing horizon is not compared with the reference's (which is the comparison
    horizon), the settling time not where no reference member settles (censored at T), and the
    k KS tests of a setting are read at 0.05 / k: an ensemble whose statistics are the
    reference's, members permuted, is indistinguishable; a biased one is not."""
    rng = np.random.default_rng(3)
    energy, impacts = rng.normal(size=120), rng.integers(80, 110, size=120).astype(float)
    rows = []
    for member in range(120):
        other = (member + 7) % 120
        rows.append((member, "ref", math.nan, ensemble.REFERENCE_RTOL, energy[member],
                     impacts[member], ensemble.SHADOW_HORIZON))  # fmt: skip
        rows.append((member, "Same", 1e-3, math.nan, energy[other], impacts[other], 4.0))
        rows.append((member, "Biased", 1e-3, math.nan, energy[member] + 0.5, impacts[member], 4.0))
    members = pd.DataFrame(
        rows, columns=["member", "method", "h", "tolerance", "E(10)", ensemble.IMPACTS,
                       ensemble.SHADOW],
    ).assign(setting="h = 0.001", settled=0.0, ensemble=ensemble.MAIN)  # fmt: skip
    members[ensemble.SETTLING] = 200.0
    statistics = ensemble._statistics(members)
    assert statistics == ["E(10)", ensemble.IMPACTS]
    distances = ensemble.ensemble_distances(members, statistics)
    passing = ensemble.indistinguishable_settings(distances)
    assert passing == {"Same": ["h = 0.001"], "Biased": []}
    members.loc[members.index[:3], "settled"] = 1.0  # some reference member settles
    assert ensemble.SETTLING in ensemble._statistics(members)


def test_hermite_table_interpolates_to_fourth_order_and_is_right_continuous_at_an_impact():
    t = np.linspace(0.0, 2.0, 41)  # steps of 0.05, the reference's largest
    times = np.linspace(0.0, 2.0, 2001)
    q = np.column_stack([np.sin(3 * t), np.cos(t)])
    v = np.column_stack([3 * np.cos(3 * t), -np.sin(t)])
    table = ensemble.hermite_table(t, q, v, times)
    exact = np.column_stack([np.sin(3 * times), np.cos(times)])
    assert np.abs(table - exact).max() < 0.05**4 * 81 / 384 * 1.01  # h^4 max|q''''| / 384
    # an impact at t = 1: the state before it, then after it, at the same time
    t = np.array([0.0, 1.0, 1.0, 2.0])
    q = np.array([[1.0], [0.0], [0.0], [0.5]])
    v = np.array([[-1.0], [-1.0], [0.5], [0.5]])
    values = ensemble.hermite_table(t, q, v, np.array([0.5, 1.0, 1.5, 2.0]))[:, 0]
    assert values == pytest.approx([0.5, 0.0, 0.25, 0.5])
    with pytest.raises(ValueError, match="times"):
        ensemble.hermite_table(t, q, v, np.array([2.5]))


def test_without_a_null_ensemble_the_distances_have_no_null_columns():
    """Every null run failed: an empty null row, the distances without null columns."""
    members = pd.DataFrame(
        [(i, ensemble.MAIN, "ref", np.nan, ensemble.REFERENCE_RTOL, 1.0 * i) for i in range(5)]
        + [(i, ensemble.MAIN, "MJ", 1e-3, np.nan, 2.0 * i) for i in range(5)],
        columns=["member", "ensemble", "method", "h", "tolerance", "E"],
    ).assign(setting="h = 0.001")
    null = ensemble.null_distances(members, ["E"])
    assert null.empty and "statistic" in null
    distances = ensemble.ensemble_distances(members, ["E"], null)
    assert list(distances["method"]) == ["MJ"] and "above null" not in distances
    assert ensemble.distances_for_paper(distances, null).frame["method"].tolist() == ["MJ"]
